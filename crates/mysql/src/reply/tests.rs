use super::*;
use crate::build;
use crate::packet;
use proptest::prelude::*;

/// `payloads` as the server sends them, numbered from 1.
fn stream(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut seq = 1u8;
    for payload in payloads {
        seq = packet::write(&mut out, seq, payload);
    }
    out
}

/// Feed `bytes` in pieces of `cut`: where the reply ended (bytes taken) and
/// what it said (the EOF mode it ended in left out: see the learning test).
fn read(command: Command, options: Options, bytes: &[u8], cut: usize) -> (usize, Progress) {
    let (used, progress) = read_learning(command, options, bytes, cut);
    match progress {
        Progress::Whole(outcome) => (
            used,
            Progress::Whole(Outcome {
                deprecate_eof: None,
                ..outcome
            }),
        ),
        other => (used, other),
    }
}

fn read_learning(
    command: Command,
    options: Options,
    bytes: &[u8],
    cut: usize,
) -> (usize, Progress) {
    let mut reader = ReplyReader::new(command, options, 1);
    let mut used = 0;
    for piece in bytes.chunks(cut.max(1)) {
        let (took, progress) = reader.feed(piece);
        used += took;
        if progress != Progress::More {
            return (used, progress);
        }
    }
    (used, Progress::More)
}

#[test]
fn an_unknown_eof_mode_is_learnt_from_the_first_reply_that_tells() {
    let unknown = Options {
        deprecate_eof: None,
        ..LEGACY
    };
    for deprecate_eof in [false, true] {
        let rows = vec![vec![Some(&b"x"[..])]];
        let bytes = stream(&build::result_set(&["a"], &rows, 2, deprecate_eof));
        let (used, progress) = read_learning(Command::Query, unknown, &bytes, 3);
        assert_eq!(used, bytes.len());
        assert!(
            matches!(progress, Progress::Whole(o) if o.deprecate_eof == Some(deprecate_eof)),
            "{deprecate_eof}: {progress:?}"
        );
        let mut packets = vec![build::prepare_ok(3, 1, 1), build::column("?")];
        if !deprecate_eof {
            packets.push(build::eof(2));
        }
        packets.push(build::column("a"));
        if !deprecate_eof {
            packets.push(build::eof(2));
        }
        let bytes = stream(&packets);
        let (used, progress) = read_learning(Command::StmtPrepare, unknown, &bytes, 100);
        assert_eq!(used, bytes.len(), "{deprecate_eof}");
        assert!(matches!(progress, Progress::Whole(o) if o.deprecate_eof == Some(deprecate_eof)));
    }
}

const LEGACY: Options = Options {
    deprecate_eof: Some(false),
    cache_metadata: false,
    local_infile: false,
};
const DEPRECATED: Options = Options {
    deprecate_eof: Some(true),
    cache_metadata: false,
    local_infile: false,
};

fn whole(outcome: Outcome) -> Progress {
    Progress::Whole(outcome)
}

#[test]
fn a_result_set_ends_at_its_terminator_with_or_without_deprecate_eof() {
    let rows = vec![
        vec![Some(&b"1"[..]), None],
        vec![Some(&b"\xfe"[..]), Some(&b"x"[..])],
    ];
    for options in [LEGACY, DEPRECATED] {
        let packets = build::result_set(
            &["id", "name"],
            &rows,
            2,
            options.deprecate_eof == Some(true),
        );
        let mut bytes = stream(&packets);
        let end = bytes.len();
        bytes.extend_from_slice(b"next reply");
        for cut in [1, 3, 1000] {
            assert_eq!(
                read(Command::Query, options, &bytes, cut),
                (end, whole(Outcome::default())),
                "{options:?} cut {cut}"
            );
        }
    }
}

#[test]
fn more_results_are_followed_and_an_error_ends_them() {
    let mut packets = build::result_set(&["a"], &[], crate::flags::MORE_RESULTS_EXISTS, false);
    packets.push(build::ok(0, 1, crate::flags::MORE_RESULTS_EXISTS));
    packets.push(build::err(
        1146,
        b"42S02",
        "Table 'shop.nope' doesn't exist",
    ));
    let bytes = stream(&packets);
    let (used, progress) = read(Command::Query, LEGACY, &bytes, 7);
    assert_eq!(used, bytes.len());
    assert_eq!(
        progress,
        whole(Outcome {
            error: Some(1146),
            ..Outcome::default()
        })
    );
}

#[test]
fn one_packet_replies_and_no_reply_commands() {
    let bytes = stream(&[build::ok(0, 0, 2)]);
    assert_eq!(
        read(Command::Ping, LEGACY, &bytes, 2),
        (bytes.len(), whole(Outcome::default()))
    );
    let stats = stream(&[b"Uptime: 10  Threads: 1".to_vec()]);
    assert_eq!(
        read(Command::Statistics, LEGACY, &stats, 100).1,
        whole(Outcome::default())
    );
    let reader = ReplyReader::new(Command::StmtClose, LEGACY, 1);
    assert_eq!(reader.whole_unread(), Some(Outcome::default()));
    assert_eq!(
        ReplyReader::new(Command::Query, LEGACY, 1).whole_unread(),
        None
    );
}

#[test]
fn a_prepared_statement_gives_its_id_and_skips_its_definitions() {
    for options in [LEGACY, DEPRECATED] {
        let mut packets = vec![build::prepare_ok(7, 2, 1), build::column("?")];
        if options.deprecate_eof == Some(false) {
            packets.push(build::eof(2));
        }
        packets.extend([build::column("id"), build::column("name")]);
        if options.deprecate_eof == Some(false) {
            packets.push(build::eof(2));
        }
        let bytes = stream(&packets);
        let expected = Outcome {
            prepared: Some(Prepared {
                statement: 7,
                params: 1,
                columns: 2,
            }),
            ..Outcome::default()
        };
        assert_eq!(
            read(Command::StmtPrepare, options, &bytes, 5),
            (bytes.len(), whole(expected)),
            "{options:?}"
        );
    }
    let none = stream(&[build::prepare_ok(1, 0, 0)]);
    assert!(matches!(
        read(Command::StmtPrepare, LEGACY, &none, 100).1,
        Progress::Whole(Outcome {
            prepared: Some(_),
            ..
        })
    ));
}

#[test]
fn an_execute_with_cached_metadata_has_no_column_definitions() {
    let options = Options {
        cache_metadata: true,
        ..DEPRECATED
    };
    // Column count 1, "metadata follows" 0: rows come at once.
    let packets = vec![vec![1, 0], vec![0, 0, 1], build::ok(0xFE, 0, 2)];
    let bytes = stream(&packets);
    assert_eq!(
        read(Command::StmtExecute, options, &bytes, 100),
        (bytes.len(), whole(Outcome::default()))
    );
}

#[test]
fn a_cursor_ends_the_execute_after_its_columns() {
    let packets = vec![
        vec![1],
        build::column("id"),
        build::eof(crate::flags::CURSOR_EXISTS),
    ];
    let bytes = stream(&packets);
    assert_eq!(
        read(Command::StmtExecute, LEGACY, &bytes, 100).1,
        whole(Outcome::default())
    );
    let fetch = stream(&[vec![0, 0, 1], build::eof(0)]);
    assert_eq!(
        read(Command::StmtFetch, LEGACY, &fetch, 100),
        (fetch.len(), whole(Outcome::default()))
    );
}

#[test]
fn progress_reports_are_skipped() {
    let mut progress = vec![0xFF, 0xFF, 0xFF];
    progress.extend_from_slice(b"\x01\x01\x00\x10\x00\x00\x00stage");
    let bytes = stream(&[progress, build::ok(0, 3, 2)]);
    assert_eq!(
        read(Command::Query, LEGACY, &bytes, 100).1,
        whole(Outcome::default())
    );
}

#[test]
fn a_local_file_request_is_followed_only_when_offered() {
    let ask = stream(&[b"\xfbdata.csv".to_vec()]);
    assert_eq!(
        read(Command::Query, LEGACY, &ask, 100).1,
        Progress::Broken("the server asked for a local file, which was not offered")
    );
    let options = Options {
        local_infile: true,
        ..LEGACY
    };
    let mut reader = ReplyReader::new(Command::Query, options, 1);
    assert_eq!(reader.feed(&ask).1, Progress::More);
    // The client sent its file as packets 2 and 3; the server's OK is packet 4.
    let mut end = Vec::new();
    packet::write(&mut end, 4, &build::ok(0, 10, 2));
    assert_eq!(
        reader.feed(&end),
        (
            end.len(),
            whole(Outcome {
                local_infile: true,
                deprecate_eof: Some(false),
                ..Outcome::default()
            })
        )
    );
}

#[test]
fn broken_replies_say_why() {
    let mut bytes = Vec::new();
    packet::write(&mut bytes, 2, &build::ok(0, 0, 2));
    assert_eq!(
        read(Command::Ping, LEGACY, &bytes, 100).1,
        Progress::Broken("a packet out of sequence")
    );
    let zero_columns = stream(&[vec![0xFC, 0, 0]]);
    assert_eq!(
        read(Command::Query, LEGACY, &zero_columns, 100).1,
        Progress::Broken("a result set of no columns")
    );
    let no_eof = stream(&[vec![1], build::column("a"), vec![1, b'x']]);
    assert_eq!(
        read(Command::Query, LEGACY, &no_eof, 100).1,
        Progress::Broken("expected an EOF after the columns")
    );
}

proptest! {
    #[test]
    fn any_result_set_ends_exactly_at_its_end_however_cut(
        columns in 1usize..5,
        rows in proptest::collection::vec(proptest::collection::vec(
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)), 4), 0..12),
        deprecate_eof in any::<bool>(),
        cut in 1usize..50,
    ) {
        let names: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let rows: Vec<Vec<Option<&[u8]>>> = rows
            .iter()
            .map(|row| row[..columns.min(row.len())].iter().map(|v| v.as_deref()).collect())
            .collect();
        let options = Options { deprecate_eof: Some(deprecate_eof), ..LEGACY };
        let mut bytes = stream(&build::result_set(&names, &rows, 2, deprecate_eof));
        let end = bytes.len();
        bytes.extend_from_slice(&[0xAA; 10]);
        prop_assert_eq!(read(Command::Query, options, &bytes, cut), (end, whole(Outcome::default())));
    }

    #[test]
    fn any_bytes_end_a_reply_break_it_or_ask_for_more_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        command in proptest::sample::select(vec![
            Command::Query, Command::StmtPrepare, Command::StmtExecute, Command::FieldList,
            Command::StmtFetch, Command::Ping,
        ]),
        deprecate_eof in any::<bool>(),
    ) {
        let options = Options { deprecate_eof: deprecate_eof.then_some(true), cache_metadata: true, local_infile: true };
        let (used, _) = read(command, options, &bytes, 13);
        prop_assert!(used <= bytes.len());
    }
}
