//! Durations and sizes as recipes write them.
//!
//! Recipes come from people editing JSON by hand and from OriginSimulator's
//! examples, so both spellings of a duration are accepted: a JSON number (or a
//! string of digits) is milliseconds, as OriginSimulator's `"latency": 100`
//! means, and a string may name its unit (`"4s"`, `"100ms"`, `"1.5s"`, `"2m"`).
//! Sizes use binary units as OriginSimulator's `"428kb"` does: `kb` is 1024
//! bytes, `mb` 1024 kb; a bare number is bytes.

use std::time::Duration;

use serde_json::Value;

/// The longest duration a recipe may name (a day): long enough for any test,
/// short enough that arithmetic on it never overflows.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// The largest body a recipe may ask for, in bytes (256 MiB).
pub(crate) const MAX_SIZE: usize = 256 << 20;

/// Parses a duration: `"100ms"`, `"4s"`, `"1.5s"`, `"2m"`, `"250us"`, or a bare
/// number of milliseconds (`"100"`, `"0"`). Surrounding whitespace is ignored.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale_ms = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return Err(duration_expected(text)),
    };
    let value: f64 = number.parse().map_err(|_| duration_expected(text))?;
    duration_from_ms(value * scale_ms).ok_or_else(|| too_long(text))
}

/// A duration from a JSON value: a number of milliseconds or a duration string.
pub(crate) fn duration_value(value: &Value) -> Result<Duration, String> {
    match value {
        Value::Number(n) => {
            let ms = n
                .as_f64()
                .filter(|ms| *ms >= 0.0)
                .ok_or_else(|| format!("expected a non-negative duration, found {n}"))?;
            duration_from_ms(ms).ok_or_else(|| too_long(&n.to_string()))
        }
        Value::String(s) => parse_duration(s),
        other => Err(format!(
            "expected a duration (milliseconds, or a string like \"100ms\" or \"4s\"), found {other}"
        )),
    }
}

/// `ms` milliseconds as a [`Duration`], if finite, non-negative and at most [`MAX_DURATION`].
pub(crate) fn duration_from_ms(ms: f64) -> Option<Duration> {
    if !ms.is_finite() || ms < 0.0 || ms > MAX_DURATION.as_secs_f64() * 1_000.0 {
        return None;
    }
    Some(Duration::from_secs_f64(ms / 1_000.0))
}

/// Parses a size: `"428kb"`, `"100b"`, `"1mb"`, `"1.5kb"` or bare bytes (`"100"`),
/// case-insensitive, at most [`MAX_SIZE`].
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    parse_bytes(text, MAX_SIZE)
}

/// Parses a size as [`parse_size`] does, also in `gb`, at most `max` bytes.
pub(crate) fn parse_bytes(text: &str, max: usize) -> Result<usize, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "b" => 1.0,
        "kb" | "k" => 1024.0,
        "mb" | "m" => 1024.0 * 1024.0,
        "gb" | "g" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(size_expected(text)),
    };
    let value: f64 = number.parse().map_err(|_| size_expected(text))?;
    let bytes = value * scale;
    if !bytes.is_finite() || bytes > max as f64 {
        return Err(format!(
            "size `{text}` is too large (at most {})",
            human(max)
        ));
    }
    // Truncation is the intent: "1.5b" is one byte.
    Ok(bytes as usize)
}

/// `bytes` in the largest unit that writes it exactly: `256mb`, `1536kb`, `100b`.
pub(crate) fn human(bytes: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb")];
    UNITS
        .iter()
        .find(|(size, _)| bytes >= *size && bytes % size == 0)
        .map_or_else(
            || format!("{bytes}b"),
            |(size, unit)| format!("{}{unit}", bytes / size),
        )
}

fn duration_expected(text: &str) -> String {
    format!(
        "expected a duration like \"100ms\", \"4s\", \"2m\" or a number of milliseconds, found `{text}`"
    )
}

fn size_expected(text: &str) -> String {
    format!("expected a size like \"428kb\", \"100b\", \"1mb\", found `{text}`")
}

fn too_long(text: &str) -> String {
    format!("duration `{text}` is too long (at most 24h)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_take_ms_s_m_and_bare_milliseconds() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("100ms"), Ok(ms(100)));
        assert_eq!(parse_duration("4s"), Ok(ms(4_000)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1_500)));
        assert_eq!(parse_duration("2m"), Ok(ms(120_000)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration(" 0 "), Ok(ms(0)));
        assert_eq!(parse_duration("0ms"), Ok(ms(0)));
        assert_eq!(parse_duration("100"), Ok(ms(100)));
    }

    #[test]
    fn bad_durations_say_what_was_expected() {
        for bad in ["", "ms", "4 sec", "-1s", "1..2", "1.2.3s"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.starts_with("expected a duration"), "{bad}: {e}");
        }
        assert_eq!(
            parse_duration("25h").unwrap_err(),
            "duration `25h` is too long (at most 24h)"
        );
    }

    #[test]
    fn json_numbers_are_milliseconds() {
        assert_eq!(
            duration_value(&json!(4000)),
            Ok(Duration::from_millis(4000))
        );
        assert_eq!(duration_value(&json!(0.5)), Ok(Duration::from_micros(500)));
        assert_eq!(duration_value(&json!("4s")), Ok(Duration::from_secs(4)));
        assert!(duration_value(&json!(-1)).is_err());
        assert!(duration_value(&json!(true)).is_err());
    }

    #[test]
    fn sizes_are_binary_units() {
        assert_eq!(parse_size("428kb"), Ok(428 * 1024));
        assert_eq!(parse_size("428KB"), Ok(428 * 1024));
        assert_eq!(parse_size("100b"), Ok(100));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("1mb"), Ok(1 << 20));
        assert_eq!(parse_size("1.5kb"), Ok(1536));
        assert!(parse_size("1gb").is_err());
        assert!(parse_size("kb").is_err());
        assert_eq!(
            parse_size("300mb").unwrap_err(),
            "size `300mb` is too large (at most 256mb)"
        );
    }

    #[test]
    fn larger_limits_take_gigabytes() {
        assert_eq!(parse_bytes("2gb", 4 << 30), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5G", 4 << 30), Ok(3 << 29));
        assert_eq!(
            parse_bytes("5gb", 4 << 30).unwrap_err(),
            "size `5gb` is too large (at most 4gb)"
        );
    }

    #[test]
    fn human_sizes_are_exact() {
        assert_eq!(human(256 << 20), "256mb");
        assert_eq!(human(1536), "1536b");
        assert_eq!(human(3072), "3kb");
        assert_eq!(human(3 << 29), "1536mb");
        assert_eq!(human(100), "100b");
        assert_eq!(human(0), "0b");
        assert_eq!(human(2 << 30), "2gb");
    }
}
