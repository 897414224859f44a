//! Wall-clock times as `--start-at` takes them and the artifacts write them:
//! RFC 3339 (`2025-06-01T12:00:00Z`, `…+03:00`, with a fraction or not) or unix
//! seconds (`1748779200`, `1748779200.5`). Kept to the few lines needed rather
//! than a date library: UTC offsets only, no time zones by name.

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

fn rfc3339(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<i64> {
        let part = text.get(from..from + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = 0;
    if let Some(after) = rest.strip_prefix('.') {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        fraction = fraction_us(&after[..digits])?;
        rest = &after[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (hours, minutes) = rest[1..].split_once(':')?;
            if hours.len() != 2 || minutes.len() != 2 {
                return None;
            }
            let (hours, minutes): (i64, i64) = (hours.parse().ok()?, minutes.parse().ok()?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    u64::try_from(seconds)
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(fraction)
}

/// `unix_us` as RFC 3339 in UTC with µs: `2025-06-01T12:00:00.000000Z`.
pub fn format_rfc3339(unix_us: u64) -> String {
    let seconds = (unix_us / 1_000_000) as i64;
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        unix_us % 1_000_000
    )
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
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
        /// Formatting and reading back gives the same µs.
        #[test]
        fn round_trips(unix_us in 0u64..8_000_000_000_000_000) {
            prop_assert_eq!(parse_time(&format_rfc3339(unix_us)), Ok(unix_us));
        }

        /// Reading never panics, whatever the text.
        #[test]
        fn never_panics(text in "\\PC{0,40}") {
            let _ = parse_time(&text);
        }
    }
}
