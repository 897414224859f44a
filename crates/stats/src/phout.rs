//! The phout log: one line per shot, 12 tab-separated fields, `\n` ended,
//! exactly as phantom writes it (see docs/reference.md), in the order of
//! [`crate::columns`]' table. `send_ts` is unix seconds with exactly three decimals (milliseconds,
//! truncated); every other field is an integer (µs or bytes or a code).

use tank_digits::Backwards;

use crate::columns::COLUMNS;
use crate::sample::{case_of, Measured, NetCode, Sample};

/// Append one phout line for `sample` to `out`, without allocating.
///
/// Tabs and line breaks in a tag would break the columns, so they are written
/// as `_` (file tags cannot contain them; a computed URI tag could).
pub fn push_line(out: &mut Vec<u8>, sample: &Sample) {
    let mut head = Backwards::<LINE_ROOM>::default();
    head.byte(b'\t');
    let millis = sample.start_unix_us / 1000 % 1000;
    head.byte(b'0' + (millis % 10) as u8);
    head.pair(millis / 10);
    head.byte(b'.');
    head.number(sample.start_unix_us / 1_000_000);
    out.extend_from_slice(head.as_bytes());
    out.extend(sample.tag.iter().map(|&byte| {
        if matches!(byte, b'\t' | b'\n' | b'\r') {
            b'_'
        } else {
            byte
        }
    }));
    let m = &sample.measured;
    let codes = [u64::from(m.net_code.0), u64::from(m.proto_code)];
    let mut tail = Backwards::<LINE_ROOM>::default();
    tail.byte(b'\n');
    for value in m.fields().into_iter().chain(codes).rev() {
        tail.number(value);
        tail.byte(b'\t');
    }
    out.extend_from_slice(tail.as_bytes());
}

/// Room for eleven 20-digit numbers, each with its tab, and the line's end.
const LINE_ROOM: usize = 11 * 21 + 1;

/// One phout line as read back: tank's, phantom's or pandora's.
#[derive(Debug, Clone, PartialEq)]
pub struct Record<'a> {
    /// `send_ts`, ms since the Unix epoch (the log keeps milliseconds).
    pub send_ms: u64,
    /// The tag as written (readers that group by case cut it at the last `#`).
    pub tag: &'a [u8],
    /// The other ten columns.
    pub measured: Measured,
}

impl Record<'_> {
    /// The second this shot is counted in, as yandex-tank counts it:
    /// `int(send_ts + interval_real / 1e6)`, the second its response ended.
    pub fn receive_second(&self) -> u64 {
        self.end_us() / 1_000_000
    }

    /// When the response ended, µs since the Unix epoch (saturating: a row
    /// from year 500,000,000 does not wrap round to 1970).
    pub fn end_us(&self) -> u64 {
        self.send_ms
            .saturating_mul(1000)
            .saturating_add(self.measured.interval_real_us)
    }

    /// The tag with a trailing `#N` (from `enum_ammo`) cut off, as yandex-tank's readers do.
    pub fn case(&self) -> &[u8] {
        case_of(self.tag)
    }
}

/// Why a phout line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("phout field {field} ({name}): {problem}")]
pub struct ParseError {
    /// 1-based field number.
    pub field: usize,
    /// The field's name.
    pub name: &'static str,
    /// What was wrong and what was expected.
    pub problem: String,
}

/// The name of phout column `index` (0-based), as yandex-tank spells it.
fn column_name(index: usize) -> &'static str {
    COLUMNS[index.min(COLUMNS.len() - 1)]
}

/// Read one phout line (without its `\n`; a trailing `\r` is tolerated).
pub fn parse_line(line: &[u8]) -> Result<Record<'_>, ParseError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut fields = line.split(|b| *b == b'\t');
    let mut next = |index: usize| {
        fields.next().ok_or_else(|| ParseError {
            field: index + 1,
            name: column_name(index),
            problem: format!(
                "missing: a phout line has 12 tab-separated fields, this one has {index}"
            ),
        })
    };
    let send_ms = parse_seconds(next(0)?)?;
    let tag = next(1)?;
    let mut numbers = [0u64; 10];
    for (i, slot) in numbers.iter_mut().enumerate() {
        let index = i + 2;
        let text = next(index)?;
        *slot = parse_u64(text).ok_or_else(|| ParseError {
            field: index + 1,
            name: column_name(index),
            problem: format!(
                "`{}` is not a non-negative integer{}",
                String::from_utf8_lossy(text),
                // All digits: then too large.
                if !text.is_empty() && text.iter().all(u8::is_ascii_digit) {
                    " up to 18446744073709551615"
                } else {
                    ""
                }
            ),
        })?;
    }
    let code = |value: u64, index: usize| {
        u16::try_from(value).map_err(|_| ParseError {
            field: index + 1,
            name: column_name(index),
            problem: format!("{value} is not a code (0..=65535)"),
        })
    };
    let [fields @ .., net, proto] = numbers;
    let measured = Measured::from_fields(fields, NetCode(code(net, 10)?), code(proto, 11)?);
    Ok(Record {
        send_ms,
        tag,
        measured,
    })
}

/// When a line's shot was sent, ms since the Unix epoch, from its first field
/// alone (without reading the rest: a quick pass over a file); `None` when that
/// field does not read.
pub fn send_ms(line: &[u8]) -> Option<u64> {
    let end = line.iter().position(|b| *b == b'\t')?;
    parse_seconds(&line[..end]).ok()
}

fn parse_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    // Checked: tank writes u64::MAX (20 digits), and reads it back.
    text.iter().try_fold(0u64, |n, b| {
        b.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
            .flatten()
    })
}

/// `1700000000.123` → ms. Fewer decimals are accepted (`.5` is 500 ms); more are truncated.
fn parse_seconds(text: &[u8]) -> Result<u64, ParseError> {
    let bad = || ParseError {
        field: 1,
        name: column_name(0),
        problem: format!(
            "`{}` is not unix seconds like 1700000000.123",
            String::from_utf8_lossy(text)
        ),
    };
    let (whole, fraction) = match text.iter().position(|b| *b == b'.') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, &b""[..]),
    };
    let seconds = parse_u64(whole).ok_or_else(bad)?;
    if !fraction.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let mut millis = 0u64;
    for i in 0..3 {
        millis = millis * 10 + fraction.get(i).map_or(0, |d| u64::from(d - b'0'));
    }
    seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(millis))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(tag: &[u8]) -> Sample {
        Sample {
            start_unix_us: 1_700_000_000_123_456,
            lag_us: 7,
            tag: tag.into(),
            measured: Measured {
                interval_real_us: 1500,
                connect_us: 100,
                send_us: 20,
                latency_us: 1300,
                receive_us: 80,
                interval_event_us: 1400,
                size_out: 74,
                size_in: 230,
                net_code: NetCode::OK,
                proto_code: 200,
                sends: 1,
                queue: 0,
            },
        }
    }

    #[test]
    fn line_has_phantoms_twelve_columns() {
        let mut out = Vec::new();
        push_line(&mut out, &sample(b"search"));
        assert_eq!(
            out,
            b"1700000000.123\tsearch\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200\n"
        );
    }

    #[test]
    fn milliseconds_keep_leading_zeros_and_tabs_in_tags_are_replaced() {
        let mut s = sample(b"a\tb");
        s.start_unix_us = 1_700_000_000_004_999;
        let mut out = Vec::new();
        push_line(&mut out, &s);
        assert!(
            out.starts_with(b"1700000000.004\ta_b\t"),
            "{}",
            String::from_utf8_lossy(&out)
        );
    }

    #[test]
    fn reading_gives_back_what_was_written() {
        let mut out = Vec::new();
        push_line(&mut out, &sample(b"case#12"));
        let record = parse_line(out.strip_suffix(b"\n").unwrap()).unwrap();
        assert_eq!(record.send_ms, 1_700_000_000_123);
        assert_eq!(record.case(), b"case");
        assert_eq!(record.receive_second(), 1_700_000_000);
        assert_eq!(
            (
                record.measured.interval_real_us,
                record.measured.size_in,
                record.measured.proto_code
            ),
            (1500, 230, 200)
        );
    }

    #[test]
    fn short_or_bad_lines_name_the_field() {
        let error = parse_line(b"1700000000.123\ttag\t1").unwrap_err();
        assert_eq!((error.field, error.name), (4, "connect_time"));
        let error = parse_line(b"x\ttag\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10").unwrap_err();
        assert_eq!(error.field, 1);
        let error = parse_line(b"1.0\ttag\t1\t2\t3\t-4\t5\t6\t7\t8\t9\t10").unwrap_err();
        assert_eq!(error.name, "latency");
    }

    /// The line as `format!` writes it, to hold the hand-written digits to.
    fn formatted(s: &Sample) -> String {
        let m = &s.measured;
        let mut line = format!(
            "{}.{:03}\t{}",
            s.start_unix_us / 1_000_000,
            s.start_unix_us / 1000 % 1000,
            String::from_utf8_lossy(&s.tag)
        );
        for value in m.fields() {
            line += &format!("\t{value}");
        }
        line + &format!("\t{}\t{}\n", m.net_code.0, m.proto_code)
    }

    #[test]
    fn the_largest_numbers_fit() {
        let mut s = sample(b"t");
        s.start_unix_us = u64::MAX;
        let m = &mut s.measured;
        [m.interval_real_us, m.connect_us, m.send_us, m.latency_us] = [u64::MAX; 4];
        [m.receive_us, m.interval_event_us, m.size_out, m.size_in] = [u64::MAX; 4];
        (m.net_code, m.proto_code) = (NetCode(u16::MAX), u16::MAX);
        let mut out = b"before\n".to_vec();
        push_line(&mut out, &s);
        assert_eq!(out, format!("before\n{}", formatted(&s)).into_bytes());
        // And read back: a phout tank writes, tank reads.
        let line = &out[b"before\n".len()..out.len() - 1];
        let record = parse_line(line).unwrap();
        assert_eq!(record.measured.size_in, u64::MAX);
        // One more is too large, and said so.
        let over = String::from_utf8_lossy(line).replacen(
            "18446744073709551615",
            "18446744073709551616",
            2,
        );
        let error = parse_line(over.as_bytes()).unwrap_err();
        assert_eq!(error.field, 3);
        assert!(
            error.problem.ends_with("up to 18446744073709551615"),
            "{}",
            error.problem
        );
    }

    proptest! {
        #[test]
        fn numbers_of_every_width_are_written_as_format_writes_them(
            start in any::<u64>(),
            shifts in proptest::array::uniform8(0u32..64),
            raw in proptest::array::uniform8(any::<u64>()),
            codes in any::<(u16, u16)>(),
        ) {
            // Values of every width, from 1 to 20 digits.
            let width = |i: usize| raw[i] >> shifts[i];
            let mut s = sample(b"w");
            s.start_unix_us = start;
            let m = &mut s.measured;
            [m.interval_real_us, m.connect_us, m.send_us, m.latency_us] = [width(0), width(1), width(2), width(3)];
            [m.receive_us, m.interval_event_us, m.size_out, m.size_in] = [width(4), width(5), width(6), width(7)];
            (m.net_code, m.proto_code) = (NetCode(codes.0), codes.1);
            let mut out = Vec::new();
            push_line(&mut out, &s);
            prop_assert_eq!(String::from_utf8(out).unwrap(), formatted(&s));
        }

        #[test]
        fn round_trip(start in 0u64..4_000_000_000_000_000, parts in proptest::array::uniform4(0u64..10_000_000), sizes in proptest::array::uniform2(0u64..1 << 40), net in 0u16..200, proto in 0u16..600, tag in "[a-z_#0-9]{0,12}") {
            let mut s = sample(tag.as_bytes());
            s.start_unix_us = start;
            [s.measured.connect_us, s.measured.send_us, s.measured.latency_us, s.measured.receive_us] = parts;
            s.measured.interval_real_us = parts.iter().sum();
            [s.measured.size_out, s.measured.size_in] = sizes;
            s.measured.net_code = NetCode(net);
            s.measured.proto_code = proto;
            let mut out = Vec::new();
            push_line(&mut out, &s);
            let record = parse_line(&out[..out.len() - 1]).unwrap();
            prop_assert_eq!(record.send_ms, start / 1000);
            prop_assert_eq!(record.tag, tag.as_bytes());
            prop_assert_eq!(record.measured.connect_us + record.measured.send_us + record.measured.latency_us + record.measured.receive_us, record.measured.interval_real_us);
            prop_assert_eq!((record.measured.size_out, record.measured.size_in, record.measured.net_code, record.measured.proto_code), (s.measured.size_out, s.measured.size_in, s.measured.net_code, s.measured.proto_code));
        }

        #[test]
        fn any_bytes_parse_or_fail_at_the_first_bad_field(line in proptest::collection::vec(any::<u8>(), 0..120)) {
            check_first_bad_field(&line)?;
        }

        #[test]
        fn mutated_lines_parse_or_fail_at_the_first_bad_field(
            seed in proptest::sample::select(&SEEDS[..]),
            edits in proptest::collection::vec(field_edit(), 0..4),
        ) {
            let mut fields: Vec<Vec<u8>> = seed.split('\t').map(|f| f.as_bytes().to_vec()).collect();
            for edit in &edits {
                edit.apply(&mut fields);
            }
            check_first_bad_field(&fields.join(&b'\t'))?;
        }
    }

    /// Phout lines as tank, phantom (timeout, empty tag) and pandora (one decimal, CRLF) write them.
    const SEEDS: [&str; 3] = [
        "1700000000.123\tsearch\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
        "1700000000.004\t\t11000000\t0\t0\t0\t0\t11000000\t74\t0\t110\t0",
        "1700000001.5\tcase#12\t1\t0\t0\t1\t0\t1\t1\t1\t0\t404\r",
    ];

    /// Field values at the edges of what a column takes.
    const VALUES: [&str; 14] = [
        "",
        "0",
        "-1",
        "1.5",
        "+5",
        " 5",
        "x",
        "\r",
        "65535",
        "65536",
        "9999999999999999999",
        "99999999999999999999",
        "18446744073709551615",
        "18446744073709551.999",
    ];

    /// One edit of a line's fields: (which field, as a fraction of their count).
    #[derive(Debug, Clone)]
    enum FieldEdit {
        Replace(f64, &'static str),
        Remove(f64),
        Double(f64),
        Byte(f64, u8),
    }

    impl FieldEdit {
        fn apply(&self, fields: &mut Vec<Vec<u8>>) {
            let at = |f: f64, fields: &Vec<Vec<u8>>| {
                ((fields.len() as f64 * f) as usize).min(fields.len().saturating_sub(1))
            };
            match *self {
                _ if fields.is_empty() => {}
                FieldEdit::Replace(f, value) => {
                    let i = at(f, fields);
                    fields[i] = value.as_bytes().to_vec();
                }
                FieldEdit::Remove(f) => {
                    let i = at(f, fields);
                    fields.remove(i);
                }
                FieldEdit::Double(f) => {
                    let i = at(f, fields);
                    fields.insert(i, fields[i].clone());
                }
                FieldEdit::Byte(f, byte) => {
                    let i = at(f, fields);
                    fields[i].push(byte);
                }
            }
        }
    }

    fn field_edit() -> impl Strategy<Value = FieldEdit> {
        let at = || 0.0..1.0f64;
        prop_oneof![
            3 => (at(), proptest::sample::select(&VALUES[..])).prop_map(|(f, v)| FieldEdit::Replace(f, v)),
            1 => at().prop_map(FieldEdit::Remove),
            1 => at().prop_map(FieldEdit::Double),
            1 => (at(), any::<u8>()).prop_map(|(f, b)| FieldEdit::Byte(f, b)),
        ]
    }

    /// The phout grammar, field by field: the 1-based field a reader must
    /// report for `line`, or `None` when the line is good.
    fn first_bad_field(line: &[u8]) -> Option<usize> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let fields: Vec<&[u8]> = line.split(|b| *b == b'\t').collect();
        let number = |f: &[u8]| {
            !f.is_empty()
                && f.iter().all(u8::is_ascii_digit)
                && std::str::from_utf8(f).is_ok_and(|t| t.parse::<u64>().is_ok())
        };
        let (whole, fraction) = match fields[0].iter().position(|b| *b == b'.') {
            Some(at) => (&fields[0][..at], &fields[0][at + 1..]),
            None => (fields[0], &b""[..]),
        };
        let millis = (0..3).fold(0, |ms, i| {
            ms * 10
                + fraction
                    .get(i)
                    .map_or(0, |d| u64::from(d.wrapping_sub(b'0')))
        });
        let seconds_fit = number(whole)
            && fraction.iter().all(u8::is_ascii_digit)
            && std::str::from_utf8(whole)
                .ok()
                .and_then(|w| w.parse::<u64>().ok())
                .and_then(|s| s.checked_mul(1000))
                .and_then(|ms| ms.checked_add(millis))
                .is_some();
        if !seconds_fit {
            return Some(1);
        }
        if fields.len() < 2 {
            return Some(2);
        }
        for field in 3..=12 {
            if fields.len() < field || !number(fields[field - 1]) {
                return Some(field);
            }
        }
        (11..=12).find(|field| {
            std::str::from_utf8(fields[field - 1])
                .ok()
                .and_then(|f| f.parse::<u64>().ok())
                .is_none_or(|code| code > 65535)
        })
    }

    /// `parse_line` agrees with the grammar, and an error names its field by number and name.
    fn check_first_bad_field(line: &[u8]) -> Result<(), TestCaseError> {
        let parsed = parse_line(line);
        prop_assert_eq!(
            parsed.as_ref().err().map(|e| e.field),
            first_bad_field(line),
            "{:?}",
            String::from_utf8_lossy(line)
        );
        if let Err(error) = parsed {
            prop_assert_eq!(error.name, column_name(error.field - 1));
            let prefix = format!("phout field {} ({}): ", error.field, error.name);
            prop_assert!(error.to_string().starts_with(&prefix), "{}", error);
        }
        Ok(())
    }
}
