//! A YAML document as a tree whose every node keeps its line.
//!
//! yaml-rust2's document loader drops positions, so this module builds its own
//! small tree from the parser's marked events: errors found later (a config
//! option, a scenario file's request) can point at the line. Plain scalars get
//! YAML 1.2 core types (`3` is an integer, `true` a boolean, `~` null), quoted
//! ones stay strings. Aliases are expanded and merge keys (`<<: *anchor`)
//! applied, as YAML 1.1's merge type says (the mapping's own keys win, then the
//! merged mappings in order), with a cap on the total size so a crafted file
//! cannot blow up.
//!
//! The config reader (`load.yaml`) and the scenario reader (tank-scenario) both
//! read their YAML through it.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::Yaml;

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 64;
/// Most nodes a document may expand to (aliases included).
const MAX_NODES: usize = 1_000_000;
/// The key whose value is merged into its mapping.
const MERGE_KEY: &str = "<<";

/// A YAML node with the line (1-based) it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The line the node starts on.
    pub line: usize,
    /// What it holds.
    pub kind: Kind,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A scalar, typed by the YAML core schema.
    Scalar(Scalar),
    /// A sequence, in order.
    Seq(Vec<Node>),
    /// A mapping's key/value pairs, in file order (merged pairs after the mapping's own).
    Map(Vec<(Node, Node)>),
}

/// A scalar: a quoted one is always a string; a plain one is typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float (`.inf` and `.nan` included).
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// `null`, `~` or nothing.
    Null,
}

impl Scalar {
    /// The scalar as text, as a key or a string option reads it (`3`, `true`,
    /// `1.5`); `None` for null.
    pub fn text(&self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s.clone()),
            Scalar::Int(i) => Some(i.to_string()),
            Scalar::Float(f) => Some(f.to_string()),
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Null => None,
        }
    }
}

/// A document that could not be read: the line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// The line (1-based).
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

/// Read `text` into its tree: `None` for an empty document (only comments, say).
pub fn parse(text: &str) -> Result<Option<Node>, YamlError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut builder, false).map_err(|e| YamlError {
        // At the end of a text without a final newline the parser counts one line more.
        line: e.marker().line().min(text.split('\n').count()),
        message: format!("invalid YAML: {}", e.info()),
    })?;
    match builder.error {
        Some(error) => Err(error),
        None => Ok(builder.root),
    }
}

/// Builds [`Node`]s from parser events.
#[derive(Default)]
struct Builder {
    /// Open collections: the node, its anchor id, and a pending map key.
    stack: Vec<(Node, usize, Option<Node>)>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    error: Option<YamlError>,
}

impl Builder {
    fn fail(&mut self, message: &str, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(YamlError {
                line: mark.line(),
                message: message.to_owned(),
            });
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

/// Apply a mapping's merge keys: each merged mapping's pairs go where its
/// `<<` was written, except the keys the mapping sets itself (its own win)
/// or an earlier merge already brought. A merge key's value must be a
/// mapping or a sequence of mappings.
fn merged(pairs: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, YamlError> {
    let is_merge = |key: &Node| matches!(&key.kind, Kind::Scalar(Scalar::Str(s)) if s == MERGE_KEY);
    if !pairs.iter().any(|(key, _)| is_merge(key)) {
        return Ok(pairs);
    }
    let key_text = |key: &Node| match &key.kind {
        Kind::Scalar(scalar) => scalar.text(),
        _ => None,
    };
    let own: Vec<Option<String>> = pairs
        .iter()
        .filter(|(key, _)| !is_merge(key))
        .map(|(key, _)| key_text(key))
        .collect();
    let not_a_mapping = |line| YamlError {
        line,
        message: "a merge key (`<<`) takes a mapping or a list of mappings".into(),
    };
    let mut out: Vec<(Node, Node)> = Vec::with_capacity(pairs.len());
    let mut brought: Vec<Option<String>> = Vec::new();
    for (key, value) in pairs {
        if !is_merge(&key) {
            out.push((key, value));
            continue;
        }
        let sources = match value.kind {
            Kind::Map(pairs) => vec![pairs],
            Kind::Seq(items) => items
                .into_iter()
                .map(|item| match item.kind {
                    Kind::Map(pairs) => Ok(pairs),
                    _ => Err(not_a_mapping(item.line)),
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(not_a_mapping(value.line)),
        };
        for pairs in sources {
            for (key, value) in pairs {
                let text = key_text(&key);
                if text.is_none() || (!own.contains(&text) && !brought.contains(&text)) {
                    brought.push(text);
                    out.push((key, value));
                }
            }
        }
    }
    Ok(out)
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
                if let Some((mut node, anchor, _)) = self.stack.pop() {
                    if let Kind::Map(pairs) = node.kind {
                        match merged(pairs) {
                            Ok(pairs) => node.kind = Kind::Map(pairs),
                            Err(error) => {
                                self.error = Some(error);
                                return;
                            }
                        }
                    }
                    self.finish(node, anchor, mark);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_str_tagged = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let value = if style != TScalarStyle::Plain || is_str_tagged {
                    Scalar::Str(text)
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
fn typed_scalar(text: &str) -> Scalar {
    match Yaml::from_str(text) {
        Yaml::Integer(i) => Scalar::Int(i),
        Yaml::Real(r) => match r.parse::<f64>() {
            Ok(f) => Scalar::Float(f),
            Err(_) => match r
                .trim_start_matches(['+', '-'])
                .to_ascii_lowercase()
                .as_str()
            {
                ".inf" => Scalar::Float(if r.starts_with('-') {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }),
                ".nan" => Scalar::Float(f64::NAN),
                _ => Scalar::Str(r),
            },
        },
        Yaml::Boolean(b) => Scalar::Bool(b),
        Yaml::Null => Scalar::Null,
        _ => Scalar::Str(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(node: &Node) -> Vec<(String, &Node)> {
        let Kind::Map(pairs) = &node.kind else {
            panic!("not a map: {node:?}")
        };
        pairs
            .iter()
            .map(|(k, v)| {
                let Kind::Scalar(key) = &k.kind else {
                    panic!("not a scalar key")
                };
                (key.text().unwrap(), v)
            })
            .collect()
    }

    #[test]
    fn merge_keys_bring_in_the_anchored_pairs_where_written_and_own_keys_win() {
        let root = parse("base: &b\n  a: 1\n  b: 2\nuse:\n  <<: *b\n  b: 3\n  c: 4\n")
            .unwrap()
            .unwrap();
        let top = map(&root);
        let used = map(top[1].1);
        let pairs: Vec<(String, Scalar)> = used
            .iter()
            .map(|(k, v)| {
                let Kind::Scalar(s) = &v.kind else { panic!() };
                (k.clone(), s.clone())
            })
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("a".into(), Scalar::Int(1)),
                ("b".into(), Scalar::Int(3)),
                ("c".into(), Scalar::Int(4)),
            ]
        );
    }

    #[test]
    fn a_list_of_merges_takes_the_earlier_first() {
        let root = parse("x: &x {k: 1}\ny: &y {k: 2, j: 5}\nz:\n  <<: [*x, *y]\n")
            .unwrap()
            .unwrap();
        let z = map(map(&root)[2].1);
        let keys: Vec<_> = z.iter().map(|(k, v)| (k.clone(), v.kind.clone())).collect();
        assert_eq!(
            keys,
            vec![
                ("k".into(), Kind::Scalar(Scalar::Int(1))),
                ("j".into(), Kind::Scalar(Scalar::Int(5))),
            ]
        );
    }

    #[test]
    fn a_merge_of_a_scalar_is_an_error_at_its_line() {
        let error = parse("a:\n  <<: 3\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert!(error.message.contains("merge key"), "{}", error.message);
    }

    #[test]
    fn nodes_keep_their_lines() {
        let root = parse("a: 1\nb:\n  - x\n  - y\n").unwrap().unwrap();
        let top = map(&root);
        assert_eq!(top[1].1.line, 3);
        let Kind::Seq(items) = &top[1].1.kind else {
            panic!()
        };
        assert_eq!(items[1].line, 4);
    }
}
