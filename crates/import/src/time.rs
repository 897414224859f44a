//! The timestamps logs write, as µs since the Unix epoch: the access log's
//! `[10/Oct/2000:13:55:36 -0700]` and HAR's ISO 8601
//! `2023-04-01T12:00:00.123+02:00`. Small enough not to need a date crate.

/// Days from 1970-01-01 to `year-month-day` (proleptic Gregorian; H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// µs since the epoch of a UTC date and time, with an offset east of UTC in seconds.
fn epoch_us(date: (i64, u32, u32), time: (u32, u32, u32), micros: u32, east_s: i64) -> Option<u64> {
    let (year, month, day) = date;
    let (hour, minute, second) = time;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second)
        - east_s;
    let micros = seconds
        .checked_mul(1_000_000)?
        .checked_add(i64::from(micros))?;
    u64::try_from(micros).ok()
}

/// A `+hhmm`, `-hh:mm` or `Z` offset in seconds east of UTC.
fn zone(text: &str) -> Option<i64> {
    if text == "Z" || text == "z" {
        return Some(0);
    }
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 {
        return None;
    }
    let hours = i64::from(number(&digits[..2])?);
    let minutes = i64::from(number(&digits[2..])?);
    Some(sign * (hours * 3600 + minutes * 60))
}

/// `10/Oct/2000:13:55:36 -0700` (nginx's and Apache's `$time_local`).
pub fn parse_clf(text: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (stamp, tz) = text.split_once(' ')?;
    let mut parts = stamp.splitn(4, [':', '/']);
    let day = number(parts.next()?)?;
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|m| *m == month_name)? as u32 + 1;
    let year = number(parts.next()?)?;
    let mut clock = parts.next()?.split(':');
    let (hour, minute, second) = (
        number(clock.next()?)?,
        number(clock.next()?)?,
        number(clock.next()?)?,
    );
    if clock.next().is_some() {
        return None;
    }
    epoch_us(
        (i64::from(year), month, day),
        (hour, minute, second),
        0,
        zone(tz.trim())?,
    )
}

/// ISO 8601 / RFC 3339 `2023-04-01T12:00:00.123+02:00` (fraction and zone
/// optional; no zone is UTC).
pub fn parse_iso8601(text: &str) -> Option<u64> {
    let text = text.trim();
    let (date, rest) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.split('-');
    let (year, month, day) = (
        number(ymd.next()?)?,
        number(ymd.next()?)?,
        number(ymd.next()?)?,
    );
    if ymd.next().is_some() {
        return None;
    }
    let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (clock, tz) = rest.split_at(zone_at);
    let east = if tz.is_empty() { 0 } else { zone(tz)? };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms = hms.split(':');
    let (hour, minute, second) = (
        number(hms.next()?)?,
        number(hms.next()?)?,
        number(hms.next()?)?,
    );
    if hms.next().is_some() || (!fraction.is_empty() && number(fraction).is_none()) {
        return None;
    }
    let micros: String = fraction.chars().chain("000000".chars()).take(6).collect();
    epoch_us(
        (i64::from(year), month, day),
        (hour, minute, second),
        number(&micros)?,
        east,
    )
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
    }
}
