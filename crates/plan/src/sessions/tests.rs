use super::*;
use proptest::prelude::*;

/// A record as owned data, to compare what was written with what was read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Begin(u64, u64, String),
    Request(u64, u64, Vec<u8>, Vec<u8>),
    End(u64, u64),
}

fn write(records: &[Owned]) -> Vec<u8> {
    let mut writer = SessionsWriter::new(Vec::new()).unwrap();
    writer.comment("imported from test\nsecond line").unwrap();
    for record in records {
        match record {
            Owned::Begin(id, at, label) => writer.begin(*id, *at, label),
            Owned::Request(id, at, tag, bytes) => writer.request(*id, *at, tag, bytes),
            Owned::End(id, at) => writer.end(*id, *at),
        }
        .unwrap();
    }
    writer.finish().unwrap()
}

fn read(bytes: &[u8]) -> Result<Vec<Owned>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    std::fs::write(&path, bytes).unwrap();
    let mut reader = SessionsReader::open(&path)?;
    let mut out = Vec::new();
    while let Some(record) = reader.next_record()? {
        out.push(match record {
            Record::Begin {
                id,
                offset_us,
                label,
            } => Owned::Begin(id, offset_us, label.to_owned()),
            Record::Request {
                id,
                offset_us,
                tag,
                bytes,
            } => Owned::Request(id, offset_us, tag.to_vec(), bytes.to_vec()),
            Record::End { id, offset_us } => Owned::End(id, offset_us),
        });
    }
    Ok(out)
}

#[test]
fn a_session_is_written_as_documented() {
    let bytes = write(&[
        Owned::Begin(0, 0, "10.0.0.1:5000>10.0.0.2:80".into()),
        Owned::Request(0, 0, b"/a".to_vec(), b"GET /a HTTP/1.1\r\n\r\n".to_vec()),
        Owned::Request(0, 1500, Vec::new(), b"x\ny".to_vec()),
        Owned::End(0, 1500),
    ]);
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "tank-sessions 1\n# imported from test\n# second line\n\
         S 0 0 10.0.0.1:5000>10.0.0.2:80\n\
         R 19 0 0 /a\nGET /a HTTP/1.1\r\n\r\n\n\
         R 3 1500 0 \nx\ny\n\
         E 0 1500\n"
    );
}

#[test]
fn the_magic_is_checked_and_a_capture_is_pointed_to_tank_import() {
    let error = read(b"\xd4\xc3\xb2\xa1rest").unwrap_err().to_string();
    assert!(
        error.contains("byte 0: expected a sessions file"),
        "{error}"
    );
    assert!(error.contains("tank import"), "{error}");
    assert!(is_sessions(b"tank-sessions 1\r\n"));
    assert!(!is_sessions(b"tank-sessionsX 1\n"));
}

#[test]
fn another_version_is_a_sessions_file_refused_by_its_version_not_read_as_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    for (first, version) in [
        ("tank-sessions 2 mysql\n", "`2`"),
        ("tank-sessions 10\n", "`10`"),
    ] {
        std::fs::write(&path, format!("{first}S 0 0 a\n")).unwrap();
        assert!(is_sessions_file(&path).unwrap(), "{first}");
        let error = SessionsReader::open(&path).err().unwrap().to_string();
        assert!(
            error.contains(&format!(
                "byte 0: sessions file version {version} is not supported: this tank reads \
                 version 1 (a first line `tank-sessions 1[ <protocol>]`)"
            )),
            "{error}"
        );
    }
    std::fs::write(&path, "tank-sessions\n").unwrap();
    let error = SessionsReader::open(&path).err().unwrap().to_string();
    assert!(
        error.contains("a sessions file without its version"),
        "{error}"
    );
}

#[test]
fn a_file_cut_inside_its_last_record_says_it_may_be_cut_short() {
    // `E 1 50` cut to `E 1 5`: read as an earlier offset, and said to be cut.
    let text = "tank-sessions 1\nS 1 10 a\nR 2 40 1 t\nab\nE 1 4";
    let error = read(text.as_bytes()).unwrap_err().to_string();
    assert!(
        error.contains(
            "offset 4 µs is earlier than the record before it (40 µs): records must be in time \
             order (the file ends inside this record, without its line end: is it cut short?)"
        ),
        "{error}"
    );
    // A whole last line says nothing of the kind.
    let error = read(format!("{text}\n").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(!error.contains("cut short"), "{error}");
}

#[test]
fn errors_name_the_byte_where_the_record_starts() {
    let head = "tank-sessions 1\nS 1 5 a\n";
    let cases: [(&str, &str); 7] = [
        (
            "R 2 4 1 t\nab\n",
            "offset 4 µs is earlier than the record before it (5 µs)",
        ),
        (
            "R 2 5 2 t\nab\n",
            "a request of session 2, which is not open",
        ),
        (
            "E 1 5\nR 2 5 1 t\nab\n",
            "a request of session 1, which is not open",
        ),
        ("S 1 6 b\n", "session 1 begins again before its end"),
        ("R 5 5 1 t\nab\n", "the request has 3 of its 5 bytes"),
        ("Q 1\n", "bad record `Q 1`"),
        (
            "R 1 18000000000000000000 1 t\na\n",
            "offset 18000000000000000000 µs is 570386 years into the capture",
        ),
    ];
    for (tail, expected) in cases {
        let text = format!("{head}{tail}");
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(error.contains(expected), "{tail:?}: {error}");
        let at = if tail.starts_with("E 1 5\n") {
            head.len() + 6
        } else {
            head.len()
        };
        assert!(error.contains(&format!("byte {at}:")), "{tail:?}: {error}");
    }
    let error = read(b"tank-sessions 1\nS 1 5 a\nR 1 5 1 t\nab\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("expected a line feed after the request's 1 bytes"),
        "{error}"
    );
    let error = read(b"tank-sessions 1\nS x 5 a\n").unwrap_err().to_string();
    assert!(
        error.contains("expected the session id (an unsigned integer), found `x`"),
        "{error}"
    );
}

#[test]
fn the_writer_refuses_what_would_not_read_back() {
    let mut writer = SessionsWriter::new(Vec::new()).unwrap();
    writer.begin(0, 10, "").unwrap();
    assert!(writer.request(0, 9, b"", b"x").is_err());
    assert!(writer.request(0, 10, b"a\nb", b"x").is_err());
    assert!(writer.begin(1, 10, "a\rb").is_err());
    writer.request_start(0, 10, b"t", 4).unwrap();
    writer.request_part(b"ab").unwrap();
    assert!(writer.end(0, 10).is_err());
    assert!(writer.request_part(b"cde").is_err());
    writer.request_part(b"cd").unwrap();
    writer.request_end().unwrap();
    writer.request_start(0, 10, b"t", 4).unwrap();
    assert!(writer.request_end().is_err());
}

#[test]
fn a_session_left_open_at_the_end_is_not_an_error() {
    let records = vec![
        Owned::Begin(3, 0, String::new()),
        Owned::Request(3, 0, b"t".to_vec(), b"GET".to_vec()),
    ];
    assert_eq!(read(&write(&records)).unwrap(), records);
}

/// Valid files: sessions begun in order, their requests interleaved, each
/// ended or left open, with arbitrary tags, labels and bytes.
fn sessions() -> impl Strategy<Value = Vec<Owned>> {
    let session = (
        "[a-z0-9:.>]{0,12}",
        proptest::collection::vec(
            (
                0u64..5_000,
                "[ -~]{0,8}",
                proptest::collection::vec(any::<u8>(), 0..40),
            ),
            1..5,
        ),
        any::<bool>(),
    );
    (proptest::collection::vec((0u64..3_000, session), 0..8)).prop_map(|sessions| {
        // Each event gets a time; a stable sort by time keeps S first and E last.
        let mut events: Vec<(u64, u8, Owned)> = Vec::new();
        for (id, (start, (label, requests, ends))) in sessions.into_iter().enumerate() {
            let id = id as u64;
            let mut at = start;
            events.push((at, 0, Owned::Begin(id, at, label)));
            for (gap, tag, bytes) in requests {
                events.push((at, 1, Owned::Request(id, at, tag.into_bytes(), bytes)));
                at += gap;
            }
            let last = match events.last() {
                Some((t, ..)) => *t,
                None => at,
            };
            if ends {
                events.push((last, 2, Owned::End(id, last)));
            }
        }
        events.sort_by_key(|(at, _, _)| *at);
        events.into_iter().map(|(_, _, record)| record).collect()
    })
}

proptest! {
    #[test]
    fn the_reader_gives_back_what_the_writer_wrote(records in sessions()) {
        prop_assert_eq!(read(&write(&records)).unwrap(), records);
    }

    #[test]
    fn fuzzed_sessions_read_to_an_end_or_a_located_error(
        bytes in crate::ammo::fuzzing::ammo(&SEEDS),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.sessions");
        std::fs::write(&path, &bytes).unwrap();
        let outcome = SessionsReader::open(&path).and_then(|mut reader| {
            let mut records = 0usize;
            while reader.next_record()?.is_some() {
                records += 1;
                // Each record takes at least a line of its own.
                assert!(records <= bytes.len());
            }
            Ok(())
        });
        if let Err(error) = outcome {
            crate::ammo::fuzzing::check_refusal(&error, &path, &bytes)?;
        }
    }
}

const SEEDS: [&[u8]; 2] = [
    b"tank-sessions 1\n# c\nS 0 0 a>b\nR 3 0 0 /\nGET\nS 1 7 c\nR 1 7 1 \nx\nE 0 0\nE 1 7\n",
    b"tank-sessions 1\nS 5 0 \nR 5 10 5 t\na\nb\nc\nR 0 11 5 t\n\n",
];

#[test]
fn the_first_line_names_the_protocol_and_http_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    let mut writer = SessionsWriter::with_protocol(Vec::new(), Protocol::Mysql).unwrap();
    writer.begin(0, 0, "c").unwrap();
    let bytes = writer.finish().unwrap();
    assert!(bytes.starts_with(b"tank-sessions 1 mysql\nS 0 0 c\n"));
    for (text, protocol) in [
        (&bytes[..], Protocol::Mysql),
        (b"tank-sessions 1\n", Protocol::Http),
        (b"tank-sessions 1 http\r\n", Protocol::Http),
        (b"tank-sessions 1 tcp\n", Protocol::Tcp),
    ] {
        assert!(is_sessions(text));
        std::fs::write(&path, text).unwrap();
        assert_eq!(SessionsReader::open(&path).unwrap().protocol(), protocol);
    }
    std::fs::write(&path, b"tank-sessions 1 smtp\n").unwrap();
    let error = SessionsReader::open(&path).err().unwrap().to_string();
    assert!(
        error.contains("byte 0: a sessions file of protocol `smtp`"),
        "{error}"
    );
}

#[test]
fn a_mysql_request_that_is_no_command_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    let head = "tank-sessions 1 mysql\nS 0 0 c\nR 9 0 0 SELECT\n\x03SELECT 1\n";
    for (tail, expected) in [
        (
            "R 2 0 0 x\n\x11u\n",
            "command 0x11 (COM_CHANGE_USER) is not one a replay can follow",
        ),
        ("R 0 0 0 x\n\n", "an empty request"),
    ] {
        std::fs::write(&path, format!("{head}{tail}")).unwrap();
        let mut reader = SessionsReader::open(&path).unwrap();
        let error = loop {
            match reader.next_record() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{tail:?} read to the end"),
                Err(error) => break error.to_string(),
            }
        };
        assert!(error.contains(expected), "{error}");
        assert!(error.contains(&format!("byte {}:", head.len())), "{error}");
    }
}

proptest! {
    /// A field is a number exactly when Rust's own parser, given only digits, says so.
    #[test]
    fn a_decimal_field_reads_as_str_parse_does(field in "[0-9+ a-]{0,22}") {
        let digits = !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit());
        let expected = digits.then(|| field.parse::<u64>().ok()).flatten();
        prop_assert_eq!(decimal(field.as_bytes()), expected);
    }

    /// Reading the first field as a number in one pass is splitting at the
    /// space and reading the field.
    #[test]
    fn a_leading_decimal_is_the_first_field_read(text in "[0-9 a]{0,30}") {
        let (field, rest) = split_field(text.as_bytes());
        let expected = decimal(field).map(|n| (n, rest));
        prop_assert_eq!(leading_decimal(text.as_bytes()), expected);
    }
}

#[test]
fn a_decimal_field_stops_at_u64() {
    assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
    assert_eq!(decimal(b"18446744073709551616"), None);
    assert_eq!(decimal(b"007"), Some(7));
    assert_eq!(decimal(b""), None);
}
