//! `var/header`: a variable from a reply header's value, through a chain of
//! modifiers (`Authorization|lower|replace(=,)|substr(6)`): `lower`, `upper`,
//! `substr(start[, end])` and `replace(from, to)`.
//!
//! `substr` follows Pandora's code (its docs say "length", its code and tests
//! an end index): `start` and `end` count characters, a negative `start` or
//! an `end` of 0 or less counts from the end, `end` past the end is the end,
//! and `start` after `end` swaps them. A header the reply lacks leaves the
//! variable unset, as in Pandora (a template that needs it then fails).

use crate::reply::Reply;

/// One modifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Modifier {
    Lower,
    Upper,
    Substr(i64, i64),
    Replace(String, String),
}

/// A header and its modifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderValue {
    pub name: String,
    pub modifiers: Vec<Modifier>,
}

/// Parse `Header|modifier|...`.
pub(crate) fn parse(text: &str) -> Result<HeaderValue, String> {
    let mut parts = text.split('|');
    let name = parts.next().unwrap_or_default().trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(format!(
            "`{text}`: expected a header name, then `|modifier`s"
        ));
    }
    let modifiers = parts.map(modifier).collect::<Result<_, _>>()?;
    Ok(HeaderValue {
        name: name.to_owned(),
        modifiers,
    })
}

fn modifier(text: &str) -> Result<Modifier, String> {
    let call = crate::call::split(text).map_err(|m| format!("modifier {m}"))?;
    let (name, args) = (call.name, call.args);
    let number = |arg: &str| {
        arg.parse::<i64>()
            .map_err(|_| format!("modifier `{text}`: `{arg}` is not a whole number"))
    };
    match (name, args.len()) {
        ("lower", 0) => Ok(Modifier::Lower),
        ("upper", 0) => Ok(Modifier::Upper),
        ("substr", 1) => Ok(Modifier::Substr(number(args[0])?, 0)),
        ("substr", 2) => Ok(Modifier::Substr(number(args[0])?, number(args[1])?)),
        ("replace", 2) => Ok(Modifier::Replace(args[0].to_owned(), args[1].to_owned())),
        ("lower" | "upper" | "substr" | "replace", _) => Err(format!(
            "modifier `{text}`: expected lower, upper, substr(start[, end]) or replace(from, to)"
        )),
        _ => Err(format!(
            "unknown modifier `{name}`: expected lower, upper, substr or replace"
        )),
    }
}

impl HeaderValue {
    /// The modified value of the header in `reply`, if it has the header.
    pub(crate) fn extract(&self, reply: &Reply<'_>) -> Option<String> {
        let value = String::from_utf8_lossy(reply.header(&self.name)?).into_owned();
        if value.is_empty() {
            return None;
        }
        Some(
            self.modifiers
                .iter()
                .fold(value, |value, m| apply(m, value)),
        )
    }
}

fn apply(modifier: &Modifier, value: String) -> String {
    match modifier {
        Modifier::Lower => value.to_lowercase(),
        Modifier::Upper => value.to_uppercase(),
        Modifier::Replace(from, to) if !from.is_empty() => value.replace(from.as_str(), to),
        Modifier::Replace(..) => value,
        Modifier::Substr(start, end) => {
            let chars: Vec<char> = value.chars().collect();
            let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
            let mut start = if *start < 0 { len + start } else { *start };
            let mut end = if *end <= 0 { len + end } else { *end };
            end = end.min(len);
            if start > end {
                std::mem::swap(&mut start, &mut end);
            }
            let (start, end) = (start.clamp(0, len) as usize, end.clamp(0, len) as usize);
            chars[start..end].iter().collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(spec: &str, value: &str) -> String {
        let header = parse(&format!("X|{spec}")).unwrap();
        header
            .modifiers
            .iter()
            .fold(value.to_owned(), |v, m| apply(m, v))
    }

    #[test]
    fn modifiers_chain_as_pandoras() {
        assert_eq!(
            run("lower|replace(=,)|substr(6)", "Basic Ym9zY236Ym9zY28="),
            "ym9zy236ym9zy28"
        );
        assert_eq!(run("substr(1,3)", "abcdefgh"), "bc");
        assert_eq!(run("substr(-2,4)", "abcdefgh"), "ef");
        assert_eq!(run("substr(5,3)", "abcdefgh"), "de");
        assert_eq!(run("substr(2,100)", "abcdefgh"), "cdefgh");
        assert_eq!(run("upper", "ab"), "AB");
        assert_eq!(
            run("lower|replace(-, /)|substr(0, 16)", "aPPliCation-JSONbro"),
            "application/json"
        );
    }

    #[test]
    fn bad_modifiers_are_errors() {
        for bad in [
            "X|substr(abc)",
            "X|substr()",
            "X|trim",
            "X|replace(a)",
            "|lower",
            "X|substr(1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn substr_never_panics(start in -20i64..20, end in -20i64..20, value in "\\PC{0,12}") {
            let _ = apply(&Modifier::Substr(start, end), value);
        }
    }
}
