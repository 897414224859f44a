//! Wall-clock times as `--start-at` takes them and the artifacts write them:
//! RFC 3339 (`2025-06-01T12:00:00Z`, `…+03:00`, with a fraction or not) or unix
//! seconds (`1748779200`, `1748779200.5`). The calendar is jiff's: UTC
//! offsets only, no time zones by name.

/// `text` as µs since the Unix epoch.
pub fn parse_time(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let expected = || {
        format!(
            "`{text}` is not a time: expected RFC 3339 like 2025-06-01T12:00:00Z \
             (or with an offset, +03:00) or unix seconds like 1748779200"
        )
    };
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !text.is_empty() {
        return unix_seconds(text).ok_or_else(expected);
    }
    rfc3339(text).ok_or_else(expected)
}

fn unix_seconds(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let seconds: u64 = whole.parse().ok()?;
    seconds
        .checked_mul(1_000_000)?
        .checked_add(fraction_us(fraction)?)
}

/// Digits after a decimal point as µs (beyond µs truncated).
fn fraction_us(digits: &str) -> Option<u64> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut us = 0u64;
    for digit in digits.bytes().chain(std::iter::repeat(b'0')).take(6) {
        us = us * 10 + u64::from(digit - b'0');
    }
    Some(us)
}

/// RFC 3339 with an offset (`Z`, `+03:00`), as jiff reads it, at or after the epoch.
fn rfc3339(text: &str) -> Option<u64> {
    let at: jiff::Timestamp = text.parse().ok()?;
    u64::try_from(at.as_microsecond()).ok()
}

/// `unix_us` as RFC 3339 in UTC with µs: `2025-06-01T12:00:00.000000Z`; past
/// the year 9999, where RFC 3339 ends, as unix seconds (which [`parse_time`] reads too).
pub fn format_rfc3339(unix_us: u64) -> String {
    match i64::try_from(unix_us)
        .ok()
        .and_then(|us| jiff::Timestamp::from_microsecond(us).ok())
    {
        Some(at) => format!("{at:.6}"),
        None => format!("{}.{:06}", unix_us / 1_000_000, unix_us % 1_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_rfc3339_and_unix_seconds() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            parse_time("2025-06-01T12:00:00Z"),
            Ok(1_748_779_200_000_000)
        );
        assert_eq!(
            parse_time("2025-06-01T15:00:00.25+03:00"),
            Ok(1_748_779_200_250_000)
        );
        assert_eq!(parse_time("1748779200"), Ok(1_748_779_200_000_000));
        assert_eq!(parse_time("1748779200.5"), Ok(1_748_779_200_500_000));
        assert_eq!(
            parse_time("2024-02-29 23:59:59z"),
            Ok(1_709_251_199_000_000)
        );
    }

    #[test]
    fn rejects_what_is_not_a_time() {
        for bad in [
            "",
            "soon",
            "2025-06-01",
            "2025-02-30T00:00:00Z",
            "2025-06-01T24:00:00Z",
            "2025-06-01T12:00:00",
            "2025-06-01T12:00:00+3",
            "2025-06-01T12:00:00.Z",
            "1.2.3",
        ] {
            let error = parse_time(bad).unwrap_err();
            assert!(error.contains("expected RFC 3339"), "{bad}: {error}");
        }
    }

    proptest! {
        /// Formatting and reading back gives the same µs, past the year 9999 too.
        #[test]
        fn round_trips(unix_us in prop_oneof![0u64..8_000_000_000_000_000, any::<u64>()]) {
            prop_assert_eq!(parse_time(&format_rfc3339(unix_us)), Ok(unix_us));
        }

        /// Reading never panics, whatever the text.
        #[test]
        fn never_panics(text in "\\PC{0,40}") {
            let _ = parse_time(&text);
        }
    }
}
