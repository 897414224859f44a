//! The INI reader: Python's `configparser.RawConfigParser(strict=False)`, rule for rule.
//!
//! yandex-tank reads `load.ini` with that parser, and users' files depend on its
//! quirks, so they are kept:
//! * a full-line comment is a line whose stripped text starts with `#` or `;`;
//!   there are no inline comments (`a = b ; c` is `b ; c`);
//! * an option line splits at the first `=` or `:`; key and value are stripped,
//!   the key lower-cased;
//! * a non-empty line indented deeper than its option line continues the value
//!   (lines joined with `\n`); empty lines inside a value are kept, a comment
//!   line is skipped without ending the value, trailing empty lines are dropped;
//! * `[name]` is matched greedily on the stripped line (`[a]b]` is section `a]b`,
//!   `[a] x` is section `a`);
//! * duplicate sections merge, a duplicate key replaces the earlier value;
//! * keys set in `[DEFAULT]` are removed from every section (yandex-tank's
//!   converter drops them instead of inheriting them).
//!
//! Section names are lower-cased here, as yandex-tank does before using them.

use crate::error::{ConfigError, Place};
use crate::raw::{RawConfig, RawEntry, RawValue};

/// One option while its continuation lines are still being read.
struct Pending {
    key: String,
    lines: Vec<String>,
    line: usize,
}

/// A section while it is being read.
struct Section {
    name: String,
    line: usize,
    options: Vec<Pending>,
}

impl Section {
    /// Index of the option `key`, replacing its value (last wins, keeps its position).
    fn start_option(&mut self, key: String, value: String, line: usize) -> usize {
        match self.options.iter().position(|p| p.key == key) {
            Some(i) => {
                self.options[i] = Pending {
                    key,
                    lines: vec![value],
                    line,
                };
                i
            }
            None => {
                self.options.push(Pending {
                    key,
                    lines: vec![value],
                    line,
                });
                self.options.len() - 1
            }
        }
    }
}

/// Reads INI text into the raw form. All malformed lines are reported together.
pub(crate) fn read(text: &str) -> Result<RawConfig, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Index 0 is [DEFAULT]; real sections follow.
    let mut sections = vec![Section {
        name: "DEFAULT".to_owned(),
        line: 0,
        options: Vec::new(),
    }];
    let mut current: Option<usize> = None;
    let mut option: Option<usize> = None;
    let mut indent_level = 0usize;
    let mut bad_lines: Vec<(usize, String)> = Vec::new();

    for (i, line) in split_lines(text).enumerate() {
        let lineno = i + 1;
        let stripped = line.trim();
        let is_comment = stripped.starts_with('#') || stripped.starts_with(';');
        if is_comment || stripped.is_empty() {
            // An empty line belongs to the value being read; a comment is skipped.
            if !is_comment {
                if let (Some(s), Some(o)) = (current, option) {
                    sections[s].options[o].lines.push(String::new());
                }
            }
            continue;
        }
        let indent = line.chars().take_while(|c| c.is_whitespace()).count();
        if let (Some(s), Some(o), true) = (current, option, indent > indent_level) {
            sections[s].options[o].lines.push(stripped.to_owned());
            continue;
        }
        indent_level = indent;
        if let Some(header) = section_header(stripped) {
            let index = if header == "DEFAULT" {
                0
            } else {
                let name = header.to_lowercase();
                match sections.iter().skip(1).position(|s| s.name == name) {
                    Some(p) => p + 1,
                    None => {
                        sections.push(Section {
                            name,
                            line: lineno,
                            options: Vec::new(),
                        });
                        sections.len() - 1
                    }
                }
            };
            current = Some(index);
            option = None;
            continue;
        }
        let Some(s) = current else {
            let message = format!(
                "`{stripped}` comes before any [section] header; \
                 options belong in a section such as [phantom]"
            );
            return Err(ConfigError::new(message).at(Place::Line(lineno)));
        };
        match split_option(stripped) {
            Some((key, value)) if !key.is_empty() => {
                let key = key.to_lowercase();
                option = Some(sections[s].start_option(key, value.to_owned(), lineno));
            }
            _ => bad_lines.push((lineno, stripped.to_owned())),
        }
    }

    if let Some((first, text)) = bad_lines.first() {
        let mut message = format!(
            "cannot parse `{text}`: expected `key = value`, `key: value` or a [section] header"
        );
        if bad_lines.len() > 1 {
            let others: Vec<String> = bad_lines[1..].iter().map(|(l, _)| l.to_string()).collect();
            message.push_str(&format!(" (also lines {})", others.join(", ")));
        }
        return Err(ConfigError::new(message).at(Place::Line(*first)));
    }

    let defaults: Vec<String> = sections[0].options.iter().map(|p| p.key.clone()).collect();
    let mut raw = RawConfig::default();
    for section in sections.into_iter().skip(1) {
        let target = raw.section_mut(&section.name, Place::Line(section.line));
        for pending in section.options {
            if defaults.contains(&pending.key) {
                continue;
            }
            let value = pending.lines.join("\n").trim_end().to_owned();
            target.set(RawEntry {
                key: pending.key,
                value: RawValue::Str(value),
                place: Place::Line(pending.line),
            });
        }
    }
    Ok(raw)
}

/// Splits text into lines as Python's text mode does (`\n`, `\r\n` and `\r` all end a line).
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.find(['\n', '\r']) {
            Some(end) => {
                let line = &rest[..end];
                let skip = if rest[end..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = &rest[end + skip..];
                Some(line)
            }
            None => {
                let line = rest;
                rest = "";
                Some(line)
            }
        }
    })
}

/// `[name]` on a stripped line, matched greedily: the name runs to the last `]`.
fn section_header(stripped: &str) -> Option<&str> {
    let inner = stripped.strip_prefix('[')?;
    let end = inner.rfind(']')?;
    (end > 0).then(|| &inner[..end])
}

/// Splits an option line at its first `=` or `:`; key and value stripped.
fn split_option(stripped: &str) -> Option<(&str, &str)> {
    let at = stripped.find(['=', ':'])?;
    Some((stripped[..at].trim(), stripped[at + 1..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(raw: &RawConfig, section: &str, key: &str) -> Option<String> {
        match &raw.section(section)?.get(key)?.value {
            RawValue::Str(s) => Some(s.clone()),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn key_splits_at_first_delimiter_and_is_lower_cased() {
        let raw = read("[phantom]\nAddress = host:80\nheaders: [A: b]\n").unwrap();
        assert_eq!(
            value(&raw, "phantom", "address").as_deref(),
            Some("host:80")
        );
        assert_eq!(value(&raw, "phantom", "headers").as_deref(), Some("[A: b]"));
    }

    #[test]
    fn colon_before_equals_is_the_delimiter() {
        let raw = read("[s]\na:b=c\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("b=c"));
    }

    #[test]
    fn there_are_no_inline_comments() {
        let raw = read("[s]\na = b ; c # d\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("b ; c # d"));
    }

    #[test]
    fn continuation_lines_join_with_newline_and_keep_inner_empty_lines() {
        let raw = read("[s]\na = one\n  two\n\n    three\n\n\nb = x\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("one\ntwo\n\nthree"));
        assert_eq!(value(&raw, "s", "b").as_deref(), Some("x"));
    }

    #[test]
    fn a_comment_inside_a_value_is_skipped_without_ending_it() {
        let raw = read("[s]\na = one\n# note\n  ; note\n  two\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("one\ntwo"));
    }

    #[test]
    fn indented_option_line_under_an_indented_option_is_a_new_option() {
        let raw = read("[s]\n  a = 1\n  b = 2\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("1"));
        assert_eq!(value(&raw, "s", "b").as_deref(), Some("2"));
    }

    #[test]
    fn an_indented_line_after_an_empty_line_still_continues() {
        let raw = read("[s]\na = 1\n\n  b = 2\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("1\n\nb = 2"));
        assert_eq!(value(&raw, "s", "b"), None);
    }

    #[test]
    fn section_header_is_greedy_and_lower_cased() {
        let raw = read("[A]b]\nk = v\n[Phantom] trailing\nx = 1\n").unwrap();
        assert_eq!(value(&raw, "a]b", "k").as_deref(), Some("v"));
        assert_eq!(value(&raw, "phantom", "x").as_deref(), Some("1"));
    }

    #[test]
    fn duplicate_sections_merge_and_last_key_wins() {
        let raw = read("[s]\na = 1\nb = 2\n[t]\n[s]\na = 3\n").unwrap();
        assert_eq!(raw.sections.len(), 2);
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("3"));
        assert_eq!(value(&raw, "s", "b").as_deref(), Some("2"));
    }

    #[test]
    fn default_keys_are_removed_from_every_section() {
        let raw = read("[DEFAULT]\na = 1\n[s]\na = 2\nb = 3\n").unwrap();
        assert_eq!(value(&raw, "s", "a"), None);
        assert_eq!(value(&raw, "s", "b").as_deref(), Some("3"));
        assert!(raw.section("default").is_none());
    }

    #[test]
    fn line_numbers_are_those_of_the_option_line() {
        let raw = read("# c\n[s]\n\na = 1\n  2\n").unwrap();
        let entry = raw.section("s").unwrap().get("a").unwrap();
        assert_eq!(entry.place, Place::Line(4));
        assert_eq!(raw.section("s").unwrap().place, Place::Line(2));
    }

    #[test]
    fn crlf_and_cr_line_endings_are_lines() {
        let raw = read("[s]\r\na = 1\rb = 2\r\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some("1"));
        assert_eq!(value(&raw, "s", "b").as_deref(), Some("2"));
    }

    #[test]
    fn an_option_before_any_section_is_an_error() {
        let e = read("\na = 1\n[s]\n").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(
            e.message().contains("before any [section]"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn every_bad_line_is_reported() {
        let e = read("[s]\nfoo\na = 1\nbar\n= x\n").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.message().contains("also lines 4, 5"), "{}", e.message());
    }

    #[test]
    fn empty_value_is_an_empty_string() {
        let raw = read("[s]\na =\n").unwrap();
        assert_eq!(value(&raw, "s", "a").as_deref(), Some(""));
    }
}
