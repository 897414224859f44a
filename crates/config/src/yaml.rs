//! The YAML reader: yandex-tank 2's `load.yaml`.
//!
//! The text is read into [`yaml_tree`]'s marked tree (every node keeps its
//! line, so errors can point at it; aliases and merge keys are expanded), and
//! that tree into the raw form.
//!
//! The document must be a mapping of sections (`phantom:`, `autostop:`, ...),
//! each a mapping of options (or null).

use crate::error::{ConfigError, Place};
use crate::raw::{RawConfig, RawEntry, RawValue};
use crate::yaml_tree::{self, Kind, Node, Scalar};

/// Reads YAML text into the raw form.
pub(crate) fn read(text: &str) -> Result<RawConfig, ConfigError> {
    let root =
        yaml_tree::parse(text).map_err(|e| ConfigError::new(e.message).at(Place::Line(e.line)))?;
    let mut raw = RawConfig::default();
    let Some(root) = root else {
        return Ok(raw);
    };
    let pairs = match root.kind {
        Kind::Map(pairs) => pairs,
        Kind::Scalar(Scalar::Null) => return Ok(raw),
        _ => {
            return Err(ConfigError::new(
                "expected a mapping of sections (phantom:, autostop:, core:, ...)",
            )
            .at(Place::Line(root.line)))
        }
    };
    for (key, value) in pairs {
        let name = key_text(&key)?;
        let place = Place::Line(key.line);
        // yandex-tank 2's schema allows a top-level `version: N`; it names the
        // config format, not a plugin.
        if name == "version" && matches!(value.kind, Kind::Scalar(_)) {
            continue;
        }
        let options = match value.kind {
            Kind::Map(options) => options,
            Kind::Scalar(Scalar::Null) => Vec::new(),
            _ => {
                let message = "expected a mapping of options".to_owned();
                return Err(ConfigError::new(message).at(place).in_section(&name));
            }
        };
        // PyYAML keeps the last of a mapping's repeated keys: a section
        // written twice is the last one alone (INI's sections merge instead).
        if let Some(earlier) = raw.drop_section(&name) {
            let line = match earlier.place {
                Place::Line(line) => format!(" on line {line}"),
                _ => String::new(),
            };
            raw.notes.push(
                ConfigError::new(format!(
                    "`{name}:` is written twice: as in yandex-tank (PyYAML keeps a mapping's last \
                     value), this one replaces the one{line}, whose options are not read"
                ))
                .at(place)
                .in_section(&name),
            );
        }
        let section = raw.section_mut(&name, place);
        for (key, value) in options {
            let key_name = key_text(&key)?;
            let place = Place::Line(key.line);
            section.set_flattened(key_name, to_raw(value), place);
        }
    }
    Ok(raw)
}

/// A mapping key as text (scalars only).
fn key_text(node: &Node) -> Result<String, ConfigError> {
    match &node.kind {
        Kind::Scalar(scalar) if *scalar != Scalar::Null => Ok(scalar.text().unwrap_or_default()),
        _ => Err(ConfigError::new("expected a plain key").at(Place::Line(node.line))),
    }
}

fn to_raw(node: Node) -> RawValue {
    match node.kind {
        Kind::Scalar(scalar) => match scalar {
            Scalar::Str(s) => RawValue::Str(s),
            Scalar::Int(i) => RawValue::Int(i),
            Scalar::Float(f) => RawValue::Float(f),
            Scalar::Bool(b) => RawValue::Bool(b),
            Scalar::Null => RawValue::Null,
        },
        Kind::Seq(items) => RawValue::List(items.into_iter().map(to_raw).collect()),
        Kind::Map(pairs) => RawValue::Table(
            pairs
                .into_iter()
                .map(|(k, v)| RawEntry {
                    key: key_text(&k).unwrap_or_default(),
                    place: Place::Line(k.line),
                    value: to_raw(v),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_at_the_end_names_the_last_line() {
        let e = read("[a").unwrap_err();
        assert_eq!(e.line(), Some(1), "{e}");
        let e = read("phantom:\n  a: [b").unwrap_err();
        assert_eq!(e.line(), Some(2), "{e}");
    }

    #[test]
    fn plain_scalars_are_typed_and_quoted_ones_are_strings() {
        let raw = read(
            "phantom:\n  loop: 3\n  ssl: true\n  header_http: 1.1\n  port: '80'\n  \
             cache_dir: ~\n  address: h:1\n",
        )
        .unwrap();
        let p = raw.section("phantom").unwrap();
        assert_eq!(p.get("loop").unwrap().value, RawValue::Int(3));
        assert_eq!(p.get("loop").unwrap().place, Place::Line(2));
        assert_eq!(p.get("ssl").unwrap().value, RawValue::Bool(true));
        assert_eq!(p.get("header_http").unwrap().value, RawValue::Float(1.1));
        assert_eq!(p.get("port").unwrap().value, RawValue::Str("80".into()));
        assert_eq!(p.get("cache_dir").unwrap().value, RawValue::Null);
        assert_eq!(p.get("address").unwrap().value, RawValue::Str("h:1".into()));
    }

    #[test]
    fn nested_maps_flatten_and_lists_of_maps_stay_tables() {
        let raw = read(
            "phantom:\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  multi:\n    - address: x\n",
        )
        .unwrap();
        let p = raw.section("phantom").unwrap();
        assert_eq!(
            p.get("load_profile.load_type").unwrap().value,
            RawValue::Str("rps".into())
        );
        let RawValue::List(items) = &p.get("multi").unwrap().value else {
            panic!("multi is not a list")
        };
        assert!(matches!(items[0], RawValue::Table(_)));
    }

    #[test]
    fn aliases_expand() {
        let raw = read("a: &x {k: 1}\nb: *x\n").unwrap();
        assert_eq!(
            raw.section("b").unwrap().get("k").unwrap().value,
            RawValue::Int(1)
        );
    }

    #[test]
    fn a_non_mapping_document_is_an_error() {
        let e = read("- a\n- b\n").unwrap_err();
        assert!(
            e.message().contains("mapping of sections"),
            "{}",
            e.message()
        );
        let e = read("phantom: 3\n").unwrap_err();
        assert_eq!(e.section(), Some("phantom"));
    }

    #[test]
    fn a_syntax_error_has_a_line() {
        let e = read("phantom:\n  a: 1\n b: [\n").unwrap_err();
        assert!(e.line().is_some());
        assert!(e.message().starts_with("invalid YAML"), "{}", e.message());
    }

    #[test]
    fn empty_document_is_empty() {
        assert_eq!(read("").unwrap(), RawConfig::default());
        assert_eq!(read("# only a comment\n").unwrap(), RawConfig::default());
    }
}
