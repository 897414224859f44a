//! Python's number parsing and truncation, where the stepper's exact bytes depend on it.

/// Python `int(bytes_or_str)` for base 10: optional surrounding ASCII whitespace,
/// an optional sign, ASCII digits with single `_` between digits. `None` when
/// Python would raise `ValueError`, or when the value does not fit in an `i64`
/// (Python would fail later, reading or allocating that many bytes).
pub fn py_int(text: &[u8]) -> Option<i64> {
    // Fast path: plain digits that surely fit (the usual chunk size).
    if !text.is_empty() && text.len() <= 18 && text.iter().all(u8::is_ascii_digit) {
        return Some(text.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')));
    }
    let text = text.trim_ascii();
    let (negative, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits[0] == b'_' || digits[digits.len() - 1] == b'_' {
        return None;
    }
    let mut value: i64 = 0;
    let mut previous_underscore = false;
    for &byte in digits {
        match byte {
            b'0'..=b'9' => {
                let digit = i64::from(byte - b'0');
                value = value.checked_mul(10)?;
                value = if negative {
                    value.checked_sub(digit)?
                } else {
                    value.checked_add(digit)?
                };
                previous_underscore = false;
            }
            b'_' if !previous_underscore => previous_underscore = true,
            _ => return None,
        }
    }
    Some(value)
}

/// Python `float(s)` for the stepper's `[0-9.]+` tokens: `None` where Python
/// raises (`.`, `1.2.3`) and for values that overflow to infinity (Python's
/// later `int()` of them raises `OverflowError`).
pub fn py_float(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    value.is_finite().then_some(value)
}

/// Python `int(x)` of a float: truncation toward zero. `None` for values an
/// `i64` cannot hold (Python has big ints, but no plan that large can be run).
pub fn py_trunc(value: f64) -> Option<i64> {
    // 2^63 as f64 is exact; anything at or beyond it does not fit.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if value.is_nan() || !(-LIMIT..LIMIT).contains(&value) {
        return None;
    }
    Some(value.trunc() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py_int_accepts_what_python_accepts() {
        assert_eq!(py_int(b"12"), Some(12));
        assert_eq!(py_int(b" 12\t"), Some(12));
        assert_eq!(py_int(b"+7"), Some(7));
        assert_eq!(py_int(b"-5"), Some(-5));
        assert_eq!(py_int(b"1_000"), Some(1000));
        assert_eq!(py_int(b"007"), Some(7));
    }

    #[test]
    fn py_int_rejects_what_python_rejects() {
        for bad in [
            &b""[..],
            b"-",
            b"1__0",
            b"_1",
            b"1_",
            b"0x10",
            b"1.0",
            b"12a",
            b"1 2",
        ] {
            assert_eq!(py_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(py_int(b"99999999999999999999"), None);
    }

    #[test]
    fn py_float_and_trunc() {
        assert_eq!(py_float("1."), Some(1.0));
        assert_eq!(py_float(".5"), Some(0.5));
        assert_eq!(py_float("."), None);
        assert_eq!(py_float("1.2.3"), None);
        assert_eq!(py_float(&"9".repeat(400)), None);
        assert_eq!(py_trunc(-0.7), Some(0));
        assert_eq!(py_trunc(2.9), Some(2));
        assert_eq!(py_trunc(f64::INFINITY), None);
    }
}
