//! The reference path language: how a preprocessor mapping or a template
//! names a value. `source.users[next].user_id`, `request.list.postprocessor.items[0]`:
//! segments separated by `.`, each a name, optionally with one index in
//! brackets: a number (negative counts from the end; past the end wraps, as
//! Pandora does), `next` (the next item in turn), `last` or `rand`.
//!
//! This module parses the text; `compile` resolves its root (which source,
//! which request's variable) and checks what can be checked before a shot.

use std::fmt;

/// A parsed path: its segments in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathText {
    pub segments: Vec<Segment>,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// A key of a mapping (a source, a request, a CSV field, a JSON key).
    Key(String),
    /// An item of a list.
    Index(IndexKind),
}

/// Which item of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexKind {
    /// The item at this index (negative from the end; wrapping past either end).
    At(i64),
    /// The next item in turn: the first time the first, then the second, ...
    Next,
    /// The last item.
    Last,
    /// A random item.
    Rand,
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexKind::At(i) => write!(f, "{i}"),
            IndexKind::Next => f.write_str("next"),
            IndexKind::Last => f.write_str("last"),
            IndexKind::Rand => f.write_str("rand"),
        }
    }
}

impl fmt::Display for PathText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(key) if i == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Whether `c` may be part of a path's name.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Parse `text` (a leading `.` is allowed, as templates write it).
pub(crate) fn parse(text: &str) -> Result<PathText, String> {
    let body = text.trim();
    let body = body.strip_prefix('.').unwrap_or(body);
    if body.is_empty() {
        return Err("an empty path: expected e.g. source.users[next].name".into());
    }
    let mut segments = Vec::new();
    for piece in body.split('.') {
        let (name, index) = match piece.find('[') {
            None => (piece, None),
            Some(open) => {
                let Some(inner) = piece[open + 1..].strip_suffix(']') else {
                    return Err(format!(
                        "`{piece}` in `{text}`: expected `name[index]` with the `]` last"
                    ));
                };
                (&piece[..open], Some(index(inner, text)?))
            }
        };
        if name.is_empty() || !name.chars().all(is_name_char) {
            return Err(format!(
                "`{piece}` in `{text}`: expected a name of letters, digits, `_` or `-`"
            ));
        }
        segments.push(Segment::Key(name.to_owned()));
        if let Some(index) = index {
            segments.push(Segment::Index(index));
        }
    }
    Ok(PathText { segments })
}

fn index(inner: &str, text: &str) -> Result<IndexKind, String> {
    let inner = inner.trim();
    match inner.to_ascii_lowercase().as_str() {
        "next" => Ok(IndexKind::Next),
        "last" => Ok(IndexKind::Last),
        "rand" => Ok(IndexKind::Rand),
        number => number.parse().map(IndexKind::At).map_err(|_| {
            format!("`[{inner}]` in `{text}`: expected a number, `next`, `last` or `rand`")
        }),
    }
}

/// The item `index` picks of `len` items, for the fixed kinds (`next` and
/// `rand` are the caller's); `None` when the list is empty.
pub(crate) fn fixed_item(index: IndexKind, len: usize) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    match index {
        IndexKind::At(i) => usize::try_from(i.rem_euclid(len_i)).ok(),
        IndexKind::Last => Some(len - 1),
        IndexKind::Next | IndexKind::Rand => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paths_parse_into_keys_and_indexes() {
        let path = parse(".source.users[next].user_id").unwrap();
        assert_eq!(
            path.segments,
            vec![
                Segment::Key("source".into()),
                Segment::Key("users".into()),
                Segment::Index(IndexKind::Next),
                Segment::Key("user_id".into()),
            ]
        );
        assert_eq!(path.to_string(), "source.users[next].user_id");
        assert_eq!(
            parse("request.a.postprocessor.items[-1]").unwrap().segments[4],
            Segment::Index(IndexKind::At(-1))
        );
        assert_eq!(
            parse("source.u[RAND].0").unwrap().segments[2],
            Segment::Index(IndexKind::Rand)
        );
    }

    #[test]
    fn bad_paths_say_what_was_expected() {
        for bad in [
            "",
            ".",
            "source..a",
            "source.a[x]",
            "source.a[1",
            "a b",
            "source.a]",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("source.a[x]")
            .unwrap_err()
            .contains("expected a number"));
    }

    #[test]
    fn fixed_indexes_wrap_as_pandoras_do() {
        assert_eq!(fixed_item(IndexKind::At(0), 3), Some(0));
        assert_eq!(fixed_item(IndexKind::At(4), 3), Some(1));
        assert_eq!(fixed_item(IndexKind::At(-1), 3), Some(2));
        assert_eq!(fixed_item(IndexKind::Last, 3), Some(2));
        assert_eq!(fixed_item(IndexKind::At(0), 0), None);
    }

    proptest! {
        #[test]
        fn a_printed_path_parses_back_to_itself(
            keys in proptest::collection::vec("[a-z0-9_-]{1,6}", 1..5),
            indexes in proptest::collection::vec(proptest::option::of(-5i64..5), 1..5),
        ) {
            let mut text = String::new();
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    text.push('.');
                }
                text.push_str(key);
                if let Some(Some(index)) = indexes.get(i) {
                    text.push_str(&format!("[{index}]"));
                }
            }
            let path = parse(&text).unwrap();
            prop_assert_eq!(path.to_string(), text);
        }

        #[test]
        fn parsing_never_panics(text in "\\PC{0,40}") {
            let _ = parse(&text);
        }

        #[test]
        fn a_fixed_index_is_always_in_range(index in any::<i64>(), len in 1usize..1000) {
            let item = fixed_item(IndexKind::At(index), len).unwrap();
            prop_assert!(item < len);
        }
    }
}
