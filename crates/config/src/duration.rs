//! The stepper's duration syntax: `3h2m3s`, `0.3s`, `5` (seconds), `1d`.
//!
//! Every `[0-9.]+[dhms]?` token in the text is converted on its own to
//! `int(value * unit * 1000)` ms and the tokens are summed, as the reference
//! does; anything between tokens is ignored. The truncation happens per token,
//! so `0.0005s0.0005s` is 0 ms, not 1.

use std::sync::OnceLock;

use regex::Regex;

use crate::pynum::{py_float, py_trunc};

fn token_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"([0-9.]+)([dhms]?)").expect("static regex"))
}

/// Parse a duration into whole milliseconds, exactly as the reference stepper.
///
/// Errors name the token that is not a number (`1.2.3s`) or overflows.
pub fn parse_duration_ms(text: &str) -> Result<i64, String> {
    let mut total: i64 = 0;
    for caps in token_re().captures_iter(text) {
        let number = &caps[1];
        let multiplier = match &caps[2] {
            "d" => 86_400.0,
            "h" => 3_600.0,
            "m" => 60.0,
            _ => 1.0,
        };
        let value = py_float(number)
            .ok_or_else(|| format!("`{number}` in duration `{text}` is not a number"))?;
        // Same operation order as the reference: value * unit, then * 1000.
        let ms = py_trunc(value * multiplier * 1000.0)
            .ok_or_else(|| format!("duration `{text}` is too large"))?;
        total = total
            .checked_add(ms)
            .ok_or_else(|| format!("duration `{text}` is too large"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units_add_up() {
        assert_eq!(parse_duration_ms("3h2m3s"), Ok(10_923_000));
        assert_eq!(parse_duration_ms("1m5s"), Ok(65_000));
        assert_eq!(parse_duration_ms("1d"), Ok(86_400_000));
    }

    #[test]
    fn fractions_truncate_per_token() {
        assert_eq!(parse_duration_ms("0.3s"), Ok(300));
        assert_eq!(parse_duration_ms("0.5m"), Ok(30_000));
        assert_eq!(parse_duration_ms("0.0005s0.0005s"), Ok(0));
    }

    #[test]
    fn bare_number_is_seconds_and_empty_is_zero() {
        assert_eq!(parse_duration_ms("3"), Ok(3000));
        assert_eq!(parse_duration_ms(""), Ok(0));
    }

    #[test]
    fn malformed_number_is_an_error() {
        assert!(parse_duration_ms("1.2.3s").is_err());
        assert!(parse_duration_ms(".s").is_err());
    }

    proptest! {
        #[test]
        fn whole_seconds_are_exact(s in 0u32..1_000_000) {
            prop_assert_eq!(parse_duration_ms(&format!("{s}s")), Ok(i64::from(s) * 1000));
            prop_assert_eq!(parse_duration_ms(&format!("{s}")), Ok(i64::from(s) * 1000));
        }

        #[test]
        fn never_panics(text in ".{0,40}") {
            let _ = parse_duration_ms(&text);
        }
    }
}
