//! Value conversions, as yandex-tank's INI converter and the phantom plugin do them.
//!
//! Each function takes a [`RawValue`] and returns the typed value or a message
//! saying what was expected (the caller adds file, line, section and key).
//! Strings follow the INI rules whatever the spelling, so `loop = "3"` in TOML
//! means what `loop = 3` means in INI; native values are taken as they are.
//! `Null` means "not set" and gives `None`.

use std::path::PathBuf;
use std::sync::OnceLock;

use regex::Regex;

use crate::raw::RawValue;

/// A conversion result: `Ok(None)` when the value is null (not set).
pub(crate) type Converted<T> = Result<Option<T>, String>;

/// Python's `int(s)` for base 10: surrounding whitespace, an optional sign,
/// digits with single underscores between them.
pub(crate) fn python_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = digits.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_digit() || !bytes[bytes.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut value: i64 = 0;
    let mut previous_underscore = false;
    for &b in bytes {
        if b == b'_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
            continue;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        previous_underscore = false;
        let digit = i64::from(b - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

/// yandex-tank's `to_bool`: `bool(int(s))` if `s` is an integer, else `s.lower() == "true"`.
pub(crate) fn python_bool(s: &str) -> bool {
    match python_int(s) {
        Some(i) => i != 0,
        None => s.to_lowercase() == "true",
    }
}

/// A float as its shortest decimal form, always with a fraction or exponent (`1.0`, `1.1`).
/// A comma-separated list of finite numbers (the parameters of a
/// distribution): `Err` names the first item that is not one.
pub(crate) fn finite_numbers(list: &str) -> Result<Vec<f64>, String> {
    list.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .ok_or_else(|| format!("`{}` is not a number", p.trim()))
        })
        .collect()
}

pub(crate) fn float_text(f: f64) -> String {
    let text = f.to_string();
    if f.is_finite() && !text.contains(['.', 'e', 'E']) {
        format!("{text}.0")
    } else {
        text
    }
}

fn found(value: &RawValue) -> String {
    match value {
        RawValue::Str(s) => format!("`{s}`"),
        RawValue::Int(i) => format!("`{i}`"),
        RawValue::Float(f) => format!("`{}`", float_text(*f)),
        RawValue::Bool(b) => format!("`{b}`"),
        other => other.type_name().to_owned(),
    }
}

/// A string option. Numbers become their text; booleans, lists and tables are errors.
pub(crate) fn string(value: &RawValue) -> Converted<String> {
    match value {
        RawValue::Str(s) => Ok(Some(s.clone())),
        RawValue::Int(i) => Ok(Some(i.to_string())),
        RawValue::Float(f) => Ok(Some(float_text(*f))),
        RawValue::Null => Ok(None),
        other => Err(format!("expected a string, found {}", other.type_name())),
    }
}

/// An integer option: a native integer or a string read by Python's `int()`.
pub(crate) fn integer(value: &RawValue) -> Converted<i64> {
    match value {
        RawValue::Int(i) => Ok(Some(*i)),
        RawValue::Str(s) if s.trim().is_empty() => {
            Err("empty value; expected an integer (remove the line to use the default)".into())
        }
        RawValue::Str(s) => python_int(s)
            .map(Some)
            .ok_or_else(|| format!("expected an integer, found `{s}`")),
        RawValue::Null => Ok(None),
        other => Err(format!("expected an integer, found {}", found(other))),
    }
}

/// A boolean option: native, an integer (non-zero is true), or a string by [`python_bool`].
pub(crate) fn boolean(value: &RawValue) -> Converted<bool> {
    match value {
        RawValue::Bool(b) => Ok(Some(*b)),
        RawValue::Int(i) => Ok(Some(*i != 0)),
        RawValue::Str(s) if s.is_empty() => Err(
            "empty value; expected a boolean (1, 0, true, false; remove the line to use the default)"
                .into(),
        ),
        RawValue::Str(s) => Ok(Some(python_bool(s))),
        RawValue::Null => Ok(None),
        other => Err(format!("expected a boolean, found {}", found(other))),
    }
}

/// A list option: a native list of scalars, or a string split on whitespace.
pub(crate) fn list(value: &RawValue) -> Converted<Vec<String>> {
    match value {
        RawValue::Str(s) => Ok(Some(s.split_whitespace().map(str::to_owned).collect())),
        RawValue::List(items) => items
            .iter()
            .map(|item| match string(item) {
                Ok(Some(s)) => Ok(s),
                Ok(None) => Ok(String::new()),
                Err(_) => Err(format!(
                    "expected a list of strings, found {} in it",
                    item.type_name()
                )),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        RawValue::Null => Ok(None),
        other => Err(format!(
            "expected a list of strings, found {}",
            found(other)
        )),
    }
}

/// `headers`: a string gives every `[...]` group (non-greedy, within a line);
/// a list gives its items. Each item loses `[` and `]` at both ends.
pub(crate) fn headers(value: &RawValue) -> Converted<Vec<String>> {
    static GROUP: OnceLock<Regex> = OnceLock::new();
    let items = match value {
        RawValue::Str(s) => {
            let group = GROUP.get_or_init(|| Regex::new(r"\[(.*?)\]").expect("valid regex"));
            group
                .captures_iter(s)
                .filter_map(|c| c.get(1).map(|m| m.as_str().to_owned()))
                .collect()
        }
        other => match list(other)? {
            Some(items) => items,
            None => return Ok(None),
        },
    };
    Ok(Some(
        items
            .into_iter()
            .map(|h| h.trim_matches(['[', ']']).to_owned())
            .collect(),
    ))
}

/// `[autostop] autostop`: a string gives every `name(params)` in it (regex
/// `\w+\(.+?\)`, across continuation lines); a list gives its items.
pub(crate) fn criteria(value: &RawValue) -> Converted<Vec<String>> {
    static CRITERION: OnceLock<Regex> = OnceLock::new();
    match value {
        RawValue::Str(s) => {
            let re = CRITERION.get_or_init(|| Regex::new(r"\w+\(.+?\)").expect("valid regex"));
            Ok(Some(
                re.find_iter(s).map(|m| m.as_str().to_owned()).collect(),
            ))
        }
        other => list(other),
    }
}

/// Splits on the ASCII whitespace Python's `bytes.split()` uses (space, `\t\n\r\x0b\x0c`).
pub(crate) fn split_ascii_whitespace(s: &str) -> Vec<Vec<u8>> {
    s.as_bytes()
        .split(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .filter(|piece| !piece.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Python's `os.path.expanduser` for `~` and `~/...` (using `HOME`); other paths unchanged.
pub(crate) fn expand_user(path: &str) -> PathBuf {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (path, home) {
        ("~", Some(home)) => PathBuf::from(home),
        (p, Some(home)) if p.starts_with("~/") => {
            let mut expanded = PathBuf::from(home);
            expanded.push(p[2..].trim_start_matches('/'));
            expanded
        }
        (p, _) => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> RawValue {
        RawValue::Str(text.to_owned())
    }

    #[test]
    fn python_int_accepts_sign_whitespace_and_single_underscores() {
        assert_eq!(python_int(" -12 "), Some(-12));
        assert_eq!(python_int("+7"), Some(7));
        assert_eq!(python_int("1_000"), Some(1000));
        assert_eq!(python_int("007"), Some(7));
        assert_eq!(python_int("1__0"), None);
        assert_eq!(python_int("_1"), None);
        assert_eq!(python_int("1_"), None);
        assert_eq!(python_int("1.0"), None);
        assert_eq!(python_int("- 1"), None);
        assert_eq!(python_int(""), None);
        assert_eq!(python_int("99999999999999999999"), None);
        assert_eq!(python_int("-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn python_bool_uses_int_then_true() {
        assert!(python_bool("1"));
        assert!(python_bool("-2"));
        assert!(!python_bool("0"));
        assert!(python_bool("TRUE"));
        assert!(python_bool("True"));
        assert!(!python_bool("yes"));
        assert!(!python_bool("on"));
        assert!(!python_bool("false"));
    }

    #[test]
    fn boolean_rejects_empty_and_accepts_native_values() {
        assert_eq!(boolean(&RawValue::Bool(true)), Ok(Some(true)));
        assert_eq!(boolean(&RawValue::Int(0)), Ok(Some(false)));
        assert_eq!(boolean(&s("1")), Ok(Some(true)));
        assert_eq!(boolean(&RawValue::Null), Ok(None));
        assert!(boolean(&s("")).unwrap_err().contains("empty value"));
        assert!(boolean(&RawValue::Float(1.0)).is_err());
    }

    #[test]
    fn integer_reads_strings_like_python() {
        assert_eq!(integer(&s(" 3 ")), Ok(Some(3)));
        assert_eq!(integer(&RawValue::Int(-1)), Ok(Some(-1)));
        assert_eq!(
            integer(&s("x")),
            Err("expected an integer, found `x`".into())
        );
        assert!(integer(&s("")).unwrap_err().contains("empty value"));
        assert!(integer(&RawValue::Bool(true)).is_err());
        assert!(integer(&RawValue::Float(1.5)).is_err());
    }

    #[test]
    fn float_text_is_shortest_with_a_fraction() {
        assert_eq!(float_text(1.0), "1.0");
        assert_eq!(float_text(1.1), "1.1");
        assert_eq!(float_text(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(string(&RawValue::Float(1.0)), Ok(Some("1.0".into())));
    }

    #[test]
    fn headers_string_takes_every_bracket_group_non_greedy() {
        assert_eq!(
            headers(&s("[Host: a] junk [X: [y]]\n[Z: 1]")),
            Ok(Some(vec!["Host: a".into(), "X: [y".into(), "Z: 1".into()]))
        );
        assert_eq!(headers(&s("Host: a")), Ok(Some(vec![])));
    }

    #[test]
    fn headers_list_items_lose_brackets_at_both_ends() {
        let value = RawValue::List(vec![s("[Host: a]"), s("Accept: */*"), s("[[x]]")]);
        assert_eq!(
            headers(&value),
            Ok(Some(vec![
                "Host: a".into(),
                "Accept: */*".into(),
                "x".into()
            ]))
        );
    }

    #[test]
    fn list_splits_strings_on_whitespace() {
        assert_eq!(
            list(&s(" /a\n /b\t/c ")),
            Ok(Some(vec!["/a".into(), "/b".into(), "/c".into()]))
        );
        assert_eq!(list(&s("")), Ok(Some(vec![])));
        assert!(list(&RawValue::List(vec![RawValue::Bool(true)])).is_err());
    }

    #[test]
    fn criteria_are_found_across_lines() {
        assert_eq!(
            criteria(&s("time(1s,10s)\nhttp(5xx,10%,3s) net(xx,1,5)")),
            Ok(Some(vec![
                "time(1s,10s)".into(),
                "http(5xx,10%,3s)".into(),
                "net(xx,1,5)".into()
            ]))
        );
    }

    #[test]
    fn split_ascii_whitespace_includes_vertical_tab() {
        assert_eq!(
            split_ascii_whitespace("a\x0bb  c"),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
    }

    #[test]
    fn expand_user_only_touches_a_leading_tilde() {
        let home = std::env::var("HOME").unwrap_or_default();
        if !home.is_empty() {
            assert_eq!(expand_user("~/a"), PathBuf::from(&home).join("a"));
        }
        assert_eq!(expand_user("a/~/b"), PathBuf::from("a/~/b"));
        assert_eq!(expand_user("~user/x"), PathBuf::from("~user/x"));
    }
}
