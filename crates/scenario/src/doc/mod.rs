//! A scenario file as one tree, whatever it was written in.
//!
//! Pandora's format has three spellings of one structure: HCL blocks, YAML
//! and JSON. Each reader (`hcl.rs`, `yaml.rs`, `json.rs`) turns its file into
//! the same [`Node`] tree, shaped as Pandora's YAML (`variable_sources`,
//! `requests`, `scenarios` lists of mappings), with the line every node was
//! written on; the decoder (`crate::spec`) then reads that one tree, so a
//! mistake gets the same message, at its line, in every spelling.

mod hcl;
mod hcl_funcs;
mod json;
mod yaml;

use std::path::Path;

use crate::error::Fault;

/// A value with the line it was written on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// 1-based.
    pub line: usize,
    pub kind: Kind,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    /// Key/value pairs in file order.
    Map(Vec<(String, Node)>),
}

/// Which spelling a scenario file is in, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.hcl`.
    Hcl,
    /// `.yaml` / `.yml`.
    Yaml,
    /// `.json`.
    Json,
}

impl Format {
    /// The spelling of `path`, by its extension (any case).
    pub fn of(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "hcl" => Some(Format::Hcl),
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// Read `text`, written in `format`, into its tree.
pub(crate) fn read(format: Format, text: &str) -> Result<Node, Fault> {
    match format {
        Format::Hcl => hcl::read(text),
        Format::Yaml => yaml::read(text),
        Format::Json => json::read(text),
    }
}

impl Node {
    pub(crate) fn new(line: usize, kind: Kind) -> Node {
        Node { line, kind }
    }

    /// What kind of value it is, for messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::List(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }

    fn expected(&self, what: &str, expected: &str) -> Fault {
        Fault::new(
            self.line,
            format!("{what}: expected {expected}, found {}", self.describe()),
        )
    }

    /// A scalar as text (`3`, `true`, `1.5` as written); null and collections are errors.
    pub(crate) fn text(&self, what: &str) -> Result<String, Fault> {
        match &self.kind {
            Kind::Str(s) => Ok(s.clone()),
            Kind::Int(i) => Ok(i.to_string()),
            Kind::Float(f) => Ok(f.to_string()),
            Kind::Bool(b) => Ok(b.to_string()),
            _ => Err(self.expected(what, "a string")),
        }
    }

    /// A whole number (a string of digits too, as YAML and HCL users write both).
    pub(crate) fn int(&self, what: &str) -> Result<i64, Fault> {
        match &self.kind {
            Kind::Int(i) => Ok(*i),
            Kind::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(*f as i64),
            Kind::Str(s) => s
                .trim()
                .parse()
                .map_err(|_| self.expected(what, "a whole number")),
            _ => Err(self.expected(what, "a whole number")),
        }
    }

    /// A boolean (`true`/`false`, also as a string).
    pub(crate) fn boolean(&self, what: &str) -> Result<bool, Fault> {
        match &self.kind {
            Kind::Bool(b) => Ok(*b),
            Kind::Str(s) if s.trim() == "true" => Ok(true),
            Kind::Str(s) if s.trim() == "false" => Ok(false),
            _ => Err(self.expected(what, "true or false")),
        }
    }

    /// A list's items.
    pub(crate) fn list(&self, what: &str) -> Result<&[Node], Fault> {
        match &self.kind {
            Kind::List(items) => Ok(items),
            _ => Err(self.expected(what, "a list")),
        }
    }

    /// A list of scalars as texts.
    pub(crate) fn texts(&self, what: &str) -> Result<Vec<String>, Fault> {
        self.list(what)?
            .iter()
            .map(|item| item.text(&format!("an item of {what}")))
            .collect()
    }

    /// A mapping's fields, to be taken one by one and checked for unknown keys.
    pub(crate) fn fields(&self, what: &str) -> Result<Fields<'_>, Fault> {
        match &self.kind {
            Kind::Map(pairs) => Ok(Fields {
                line: self.line,
                what: what.to_owned(),
                pairs,
                used: vec![false; pairs.len()],
            }),
            _ => Err(self.expected(what, "a mapping")),
        }
    }

    /// A mapping of scalars (header values, a mapping's expressions), in
    /// file order, each with its line.
    pub(crate) fn text_map(&self, what: &str) -> Result<Vec<Entry>, Fault> {
        match &self.kind {
            Kind::Map(pairs) => pairs
                .iter()
                .map(|(key, value)| {
                    Ok(Entry {
                        key: key.clone(),
                        value: value.text(&format!("{what}.{key}"))?,
                        line: value.line,
                    })
                })
                .collect(),
            Kind::Null => Ok(Vec::new()),
            _ => Err(self.expected(what, "a mapping of names to strings")),
        }
    }

    /// The value as JSON (a `variables` source keeps its values so).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => Value::from(*i),
            Kind::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::List(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// One `key = "text"` of a mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A mapping's fields being read: each key taken at most once, and the ones
/// left at the end are errors (a misspelt key is never silently ignored).
pub(crate) struct Fields<'a> {
    pub line: usize,
    what: String,
    pairs: &'a [(String, Node)],
    used: Vec<bool>,
}

impl<'a> Fields<'a> {
    /// The value of `key`, if written.
    pub(crate) fn take(&mut self, key: &str) -> Option<&'a Node> {
        let at = self.pairs.iter().position(|(k, _)| k == key)?;
        self.used[at] = true;
        Some(&self.pairs[at].1)
    }

    /// The value of `key`, which must be written.
    pub(crate) fn require(&mut self, key: &str) -> Result<&'a Node, Fault> {
        let line = self.line;
        let what = self.what.clone();
        self.take(key)
            .ok_or_else(|| Fault::new(line, format!("{what}: `{key}` is required")))
    }

    /// Fail on any key not taken, naming the ones `allowed`.
    pub(crate) fn finish(self, allowed: &[&str]) -> Result<(), Fault> {
        let unknown = self.pairs.iter().zip(&self.used).find(|(_, used)| !**used);
        match unknown {
            None => Ok(()),
            Some(((key, value), _)) => Err(Fault::new(
                value.line,
                format!(
                    "{}: unknown key `{key}`; expected one of {}",
                    self.what,
                    allowed
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_told_by_the_extension() {
        assert_eq!(Format::of(Path::new("a/s.HCL")), Some(Format::Hcl));
        assert_eq!(Format::of(Path::new("s.yml")), Some(Format::Yaml));
        assert_eq!(Format::of(Path::new("s.json")), Some(Format::Json));
        assert_eq!(Format::of(Path::new("s.txt")), None);
        assert_eq!(Format::of(Path::new("scenario")), None);
    }

    #[test]
    fn an_unknown_key_is_an_error_at_its_line() {
        let node = yaml::read("a: 1\nmethd: GET\n").unwrap();
        let mut fields = node.fields("request `x`").unwrap();
        assert!(fields.take("a").is_some());
        let error = fields.finish(&["a", "method"]).unwrap_err();
        assert_eq!(error.line, 2);
        assert_eq!(
            error.message,
            "request `x`: unknown key `methd`; expected one of `a`, `method`"
        );
    }
}
