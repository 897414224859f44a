//! The timestamps logs write, as µs since the Unix epoch: the access log's
//! `[10/Oct/2000:13:55:36 -0700]` and HAR's ISO 8601
//! `2023-04-01T12:00:00.123+02:00`. The calendar is jiff's.

use jiff::{civil::DateTime, tz::Offset, Timestamp};

/// µs since the epoch, for an instant at or after it.
fn unix_us(at: Timestamp) -> Option<u64> {
    u64::try_from(at.as_microsecond()).ok()
}

/// `10/Oct/2000:13:55:36 -0700` (nginx's and Apache's `$time_local`).
pub(crate) fn parse_clf(text: &str) -> Option<u64> {
    let at = jiff::fmt::strtime::parse("%d/%b/%Y:%H:%M:%S %z", text.trim()).ok()?;
    unix_us(at.to_timestamp().ok()?)
}

/// ISO 8601 / RFC 3339 `2023-04-01T12:00:00.123+02:00` (fraction and zone
/// optional; no zone is UTC; a date alone is not a time).
pub(crate) fn parse_iso8601(text: &str) -> Option<u64> {
    let text = text.trim();
    if !text.contains(['T', 't', ' ']) {
        return None;
    }
    if let Ok(at) = text.parse::<Timestamp>() {
        return unix_us(at);
    }
    // No zone: a civil time, in UTC. (One with a zone failed above for a reason.)
    if text.ends_with(['Z', 'z']) || text.rsplit(['T', 't', ' ']).next()?.contains(['+', '-']) {
        return None;
    }
    let civil: DateTime = text.parse().ok()?;
    unix_us(Offset::UTC.to_timestamp(civil).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_times_with_their_zone() {
        // 2000-10-10T20:55:36Z
        assert_eq!(
            parse_clf("10/Oct/2000:13:55:36 -0700"),
            Some(971_211_336_000_000)
        );
        assert_eq!(parse_clf("01/Jan/1970:00:00:01 +0000"), Some(1_000_000));
        assert_eq!(
            parse_clf("29/Feb/2024:00:00:00 +0100"),
            Some(1_709_161_200_000_000)
        );
        assert_eq!(parse_clf("10/Foo/2000:13:55:36 -0700"), None);
        assert_eq!(parse_clf("10/Oct/2000:13:55 -0700"), None);
        assert_eq!(parse_clf("31/Feb/2000:13:55:00 -0700"), None);
    }

    #[test]
    fn iso8601_with_fraction_and_zone() {
        assert_eq!(
            parse_iso8601("2000-10-10T20:55:36.123Z"),
            Some(971_211_336_123_000)
        );
        assert_eq!(
            parse_iso8601("2000-10-10T22:55:36.1234567+02:00"),
            Some(971_211_336_123_456)
        );
        assert_eq!(
            parse_iso8601("2000-10-10T13:55:36-0700"),
            Some(971_211_336_000_000)
        );
        assert_eq!(parse_iso8601("2000-10-10"), None);
        assert_eq!(parse_iso8601("2000-13-10T00:00:00Z"), None);
        assert_eq!(
            parse_iso8601("2000-10-10T20:55:36"),
            Some(971_211_336_000_000)
        );
        assert_eq!(parse_iso8601("2000-02-30T00:00:00Z"), None);
        assert_eq!(parse_iso8601("1969-12-31T23:59:59Z"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_reads_or_fails_without_panicking(text in "\\PC{0,40}") {
            let _ = parse_clf(&text);
            let _ = parse_iso8601(&text);
        }

        #[test]
        fn both_forms_of_one_instant_read_the_same(
            seconds in 0i64..253_000_000_000,
            east_min in -720i32..840,
        ) {
            let offset = Offset::from_seconds(east_min * 60).unwrap();
            let zoned = Timestamp::from_second(seconds)
                .unwrap()
                .to_zoned(jiff::tz::TimeZone::fixed(offset));
            let iso = zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string();
            let clf = zoned.strftime("%d/%b/%Y:%H:%M:%S %z").to_string();
            let expected = Some(seconds as u64 * 1_000_000);
            proptest::prop_assert_eq!(parse_iso8601(&iso), expected, "{}", iso);
            proptest::prop_assert_eq!(parse_clf(&clf), expected, "{}", clf);
        }
    }
}
