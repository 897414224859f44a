//! Values with units that the engine acts on: `timeout` and phantom's reply
//! size limits. Read here, so a bad value is an error naming its line before
//! anything starts, and the engine gets a `Duration` and byte counts.

use std::time::Duration;

use crate::duration::parse_duration_ms;

/// `timeout`: the stepper's duration syntax (`11s`, `1m30s`, `5`), plus `ms`.
/// yandex-tank reads `500ms` as 500 minutes (the stepper has no `ms`); tank
/// departs from that on purpose, since no one means it. It must be positive.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let expected = || format!("`{text}` is not a duration like 500ms, 11s or 1m30s");
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Err(expected());
    }
    // The stepper's syntax sums the numbers it finds and skips what is
    // between them: `1e3s` would be 1 s + 3 s. No one means that.
    if has_exponent(text) {
        return Err(format!(
            "{}: exponents are not read (the stepper's syntax would add up the numbers \
             on either side of the `e`)",
            expected()
        ));
    }
    let ms = match text.strip_suffix("ms") {
        Some(millis)
            if !millis.is_empty() && millis.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            millis
                .parse::<f64>()
                .ok()
                .filter(|ms| ms.is_finite())
                .map(|ms| ms as i64)
                .ok_or_else(expected)?
        }
        _ => parse_duration_ms(text)?,
    };
    match u64::try_from(ms) {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!("`{text}`: expected a positive duration like 11s")),
    }
}

/// Whether `text` holds a number in exponent notation: a digit (or a dot),
/// `e` or `E`, an optional sign, a digit.
fn has_exponent(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, b)| {
        let before = at
            .checked_sub(1)
            .and_then(|i| bytes.get(i))
            .is_some_and(|c| c.is_ascii_digit() || *c == b'.');
        let mut next = at + 1;
        if matches!(bytes.get(next), Some(b'+' | b'-')) {
            next += 1;
        }
        matches!(b, b'e' | b'E') && before && bytes.get(next).is_some_and(u8::is_ascii_digit)
    })
}

/// phantom's sizes: `512`, `8K`, `8M`, `1G` (binary multiples,
/// case-insensitive, an optional `b`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let expected = || format!("`{text}`: expected a size like 512, 8K or 8M");
    let lower = text.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let multiplier: u64 = match unit.trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(expected()),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn timeouts_accept_milliseconds() {
        let ms = |n| Ok(Duration::from_millis(n));
        assert_eq!(parse_timeout("500ms"), ms(500));
        assert_eq!(parse_timeout("11s"), ms(11_000));
        assert_eq!(parse_timeout("1m30s"), ms(90_000));
        assert_eq!(parse_timeout("5"), ms(5000));
        assert!(parse_timeout("xms").is_err());
        assert!(parse_timeout("0s").unwrap_err().contains("positive"));
        assert!(parse_timeout("0.1ms").is_err());
    }

    #[test]
    fn a_timeout_in_exponent_notation_is_refused() {
        for text in ["1e3s", "1.5e1", "2E-1s", "1e+2ms", "5.e1"] {
            let error = parse_timeout(text).unwrap_err();
            assert!(error.contains("exponents are not read"), "{text}: {error}");
        }
        // A space or a unit between numbers is the stepper's syntax, as before.
        assert_eq!(parse_timeout("1m 30s"), Ok(Duration::from_millis(90_000)));
        assert_eq!(parse_timeout("1d"), Ok(Duration::from_millis(86_400_000)));
    }

    #[test]
    fn sizes_use_binary_multiples() {
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("8m"), Ok(8 << 20));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("2kb"), Ok(2048));
        assert!(parse_size("K").is_err());
        assert!(parse_size("5x").unwrap_err().contains("expected a size"));
        assert!(parse_size("99999999999999999999G").is_err());
    }

    proptest! {
        #[test]
        fn any_text_is_a_value_or_an_error_that_quotes_it(text in "\\PC{0,12}") {
            if let Err(message) = parse_size(&text) {
                let quoted = format!("`{text}`");
                prop_assert!(message.contains(&quoted));
            }
            if let Err(message) = parse_timeout(&text) {
                prop_assert!(message.contains('`'));
            }
        }
    }
}
