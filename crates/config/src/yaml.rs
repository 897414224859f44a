//! The YAML reader: yandex-tank 2's `load.yaml`.
//!
//! yaml-rust2's document loader drops positions, so this module builds its own
//! small tree from the parser's marked events: every node keeps its line, and
//! errors can point at it. Plain scalars get YAML 1.2 core types (`3` is an
//! integer, `true` a boolean, `~` null), quoted ones stay strings. Aliases are
//! expanded, with a cap on the total size so a crafted file cannot blow up.
//!
//! The document must be a mapping of sections (`phantom:`, `autostop:`, ...),
//! each a mapping of options (or null).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::Yaml;

use crate::error::{ConfigError, Place};
use crate::raw::{RawConfig, RawEntry, RawValue};

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 64;
/// Most nodes a document may expand to (aliases included).
const MAX_NODES: usize = 1_000_000;

/// A YAML node with the line it starts on.
#[derive(Debug, Clone)]
struct Node {
    line: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Scalar(RawValue),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// Builds [`Node`]s from parser events.
#[derive(Default)]
struct Builder {
    /// Open collections: the node, its anchor id, and a pending map key.
    stack: Vec<(Node, usize, Option<Node>)>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    error: Option<ConfigError>,
}

impl Builder {
    fn fail(&mut self, message: &str, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(ConfigError::new(message).at(Place::Line(mark.line())));
        }
    }

    fn size(node: &Node) -> usize {
        match &node.kind {
            Kind::Scalar(_) => 1,
            Kind::Seq(items) => 1 + items.iter().map(Self::size).sum::<usize>(),
            Kind::Map(pairs) => {
                1 + pairs
                    .iter()
                    .map(|(k, v)| Self::size(k) + Self::size(v))
                    .sum::<usize>()
            }
        }
    }

    /// Adds a finished node to its parent (or makes it the root).
    fn finish(&mut self, node: Node, anchor: usize, mark: Marker) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some((parent, _, pending_key)) => match &mut parent.kind {
                Kind::Seq(items) => items.push(node),
                Kind::Map(pairs) => match pending_key.take() {
                    None => *pending_key = Some(node),
                    Some(key) => pairs.push((key, node)),
                },
                Kind::Scalar(_) => self.fail("internal: scalar parent", mark),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.fail("document is too large", mark);
            return;
        }
        let line = mark.line();
        match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    self.fail("nested too deeply", mark);
                    return;
                }
                let kind = if matches!(event, Event::SequenceStart(..)) {
                    Kind::Seq(Vec::new())
                } else {
                    Kind::Map(Vec::new())
                };
                self.stack.push((Node { line, kind }, anchor, None));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, anchor, _)) = self.stack.pop() {
                    self.finish(node, anchor, mark);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_str_tagged = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let value = if style != TScalarStyle::Plain || is_str_tagged {
                    RawValue::Str(text)
                } else {
                    typed_scalar(&text)
                };
                let node = Node {
                    line,
                    kind: Kind::Scalar(value),
                };
                self.finish(node, anchor, mark);
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(node) => {
                    self.nodes += Self::size(&node);
                    if self.nodes > MAX_NODES {
                        self.fail("document is too large (aliases)", mark);
                        return;
                    }
                    self.finish(node, 0, mark);
                }
                None => self.fail("alias to an unknown anchor", mark),
            },
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

/// A plain scalar typed by the YAML core schema.
fn typed_scalar(text: &str) -> RawValue {
    match Yaml::from_str(text) {
        Yaml::Integer(i) => RawValue::Int(i),
        Yaml::Real(r) => match r.parse::<f64>() {
            Ok(f) => RawValue::Float(f),
            Err(_) => match r
                .trim_start_matches(['+', '-'])
                .to_ascii_lowercase()
                .as_str()
            {
                ".inf" => RawValue::Float(if r.starts_with('-') {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }),
                ".nan" => RawValue::Float(f64::NAN),
                _ => RawValue::Str(r),
            },
        },
        Yaml::Boolean(b) => RawValue::Bool(b),
        Yaml::Null => RawValue::Null,
        _ => RawValue::Str(text.to_owned()),
    }
}

/// Reads YAML text into the raw form.
pub(crate) fn read(text: &str) -> Result<RawConfig, ConfigError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut builder, false).map_err(|e| {
        // At the end of a text without a final newline the parser counts one line more.
        let line = e.marker().line().min(text.split('\n').count());
        ConfigError::new(format!("invalid YAML: {}", e.info())).at(Place::Line(line))
    })?;
    if let Some(error) = builder.error {
        return Err(error);
    }
    let mut raw = RawConfig::default();
    let Some(root) = builder.root else {
        return Ok(raw);
    };
    let pairs = match root.kind {
        Kind::Map(pairs) => pairs,
        Kind::Scalar(RawValue::Null) => return Ok(raw),
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
            Kind::Scalar(RawValue::Null) => Vec::new(),
            _ => {
                let message = "expected a mapping of options".to_owned();
                return Err(ConfigError::new(message).at(place).in_section(&name));
            }
        };
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
        Kind::Scalar(RawValue::Str(s)) => Ok(s.clone()),
        Kind::Scalar(RawValue::Int(i)) => Ok(i.to_string()),
        Kind::Scalar(RawValue::Bool(b)) => Ok(b.to_string()),
        Kind::Scalar(RawValue::Float(f)) => Ok(f.to_string()),
        _ => Err(ConfigError::new("expected a plain key").at(Place::Line(node.line))),
    }
}

fn to_raw(node: Node) -> RawValue {
    match node.kind {
        Kind::Scalar(value) => value,
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
