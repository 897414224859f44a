//! Resolving a path (`source.users[next].id`, `request.auth.postprocessor.token`)
//! to what it reads, once, when the file is read: a source's data (checked
//! against it: a CSV field must exist, a JSON key must be in every item a
//! `[next]` can reach) or a request's variable (which must be one its
//! preprocessor or postprocessors set). Each `[next]` gets its cursor: one
//! shared by the whole test for a source (so a source is walked in order
//! across every instance), one per run for a run's own list.

use std::collections::HashMap;

use crate::path::{IndexKind, PathText, Segment};
use crate::source::{Source, SourceData};

/// A resolved path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reference {
    pub root: Root,
    pub steps: Vec<RefStep>,
    /// The path as written, for messages.
    pub text: String,
    /// Where it is written.
    pub line: usize,
    /// What reads it (`request `order`, header Authorization`).
    pub place: String,
}

/// Where a path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// A source's data.
    Source(usize),
    /// A request's variable.
    Slot(usize),
}

/// A step from there.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RefStep {
    /// A mapping's key (a row's field by name, when not known at load).
    Key(String),
    /// A CSV row's field, by column.
    Column(usize),
    /// A list's item.
    Index(IndexKind, Option<Cursor>),
}

/// Whose turn a `[next]` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cursor {
    /// The whole test's, across instances (a source).
    Shared(usize),
    /// The run's own (a list a request of the run extracted).
    Run(usize),
}

/// Which of a request's variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Pre,
    Post,
}

impl Stage {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Stage::Pre => "preprocessor",
            Stage::Post => "postprocessor",
        }
    }
}

/// Everything a path may name, and the cursors handed out so far.
pub(crate) struct Namespace<'s> {
    pub sources: &'s [Source],
    /// Request name → index.
    pub requests: HashMap<String, usize>,
    /// (request, stage, variable) → slot.
    pub slots: HashMap<(usize, Stage, String), usize>,
    pub shared_cursors: HashMap<String, usize>,
    pub run_cursors: HashMap<String, usize>,
}

/// How many items of a source's JSON list are checked for a `[next]` path.
const MAX_CHECKED: usize = 1 << 20;

impl Namespace<'_> {
    /// Resolve `path`, read at `line` by `place`.
    pub(crate) fn resolve(
        &mut self,
        path: &PathText,
        line: usize,
        place: &str,
    ) -> Result<Reference, String> {
        let text = path.to_string();
        let key = |i: usize| match path.segments.get(i) {
            Some(Segment::Key(key)) => Some(key.as_str()),
            _ => None,
        };
        let (root, rest, prefix) = match key(0) {
            Some("source") => {
                let name = key(1).ok_or_else(|| format!("`{text}`: expected source.<name>..."))?;
                let index = self
                    .sources
                    .iter()
                    .position(|s| s.name == name)
                    .ok_or_else(|| {
                        format!(
                            "`{text}`: no variable_source `{name}`{}",
                            listed(self.sources.iter().map(|s| s.name.as_str()))
                        )
                    })?;
                (
                    Root::Source(index),
                    &path.segments[2..],
                    format!("source.{name}"),
                )
            }
            Some("request") => {
                let (Some(request), Some(stage), Some(variable)) = (key(1), key(2), key(3)) else {
                    return Err(format!(
                        "`{text}`: expected request.<name>.preprocessor.<variable> or \
                         request.<name>.postprocessor.<variable>"
                    ));
                };
                let stage = match stage {
                    "preprocessor" => Stage::Pre,
                    "postprocessor" => Stage::Post,
                    other => {
                        return Err(format!(
                            "`{text}`: `{other}`: expected preprocessor or postprocessor"
                        ))
                    }
                };
                let index = *self.requests.get(request).ok_or_else(|| {
                    format!(
                        "`{text}`: no request `{request}`{}",
                        listed(self.requests.keys().map(String::as_str))
                    )
                })?;
                let slot = *self
                    .slots
                    .get(&(index, stage, variable.to_owned()))
                    .ok_or_else(|| {
                        let names = self
                            .slots
                            .keys()
                            .filter(|(r, s, _)| *r == index && *s == stage)
                            .map(|(_, _, n)| n.as_str());
                        format!(
                            "`{text}`: request `{request}`'s {} sets no variable `{variable}`{}",
                            stage.word(),
                            listed(names)
                        )
                    })?;
                (
                    Root::Slot(slot),
                    &path.segments[4..],
                    format!("request.{request}.{}.{variable}", stage.word()),
                )
            }
            _ => {
                return Err(format!(
                    "`{text}`: a path starts with `source.` (a variable_source) or `request.` \
                     (a request's variable)"
                ))
            }
        };
        let shared = matches!(root, Root::Source(_));
        let mut steps = Vec::with_capacity(rest.len());
        let mut prefix = prefix;
        for segment in rest {
            steps.push(match segment {
                Segment::Key(key) => {
                    prefix.push('.');
                    prefix.push_str(key);
                    RefStep::Key(key.clone())
                }
                Segment::Index(kind) => {
                    prefix.push_str(&format!("[{kind}]"));
                    let cursor = (*kind == IndexKind::Next).then(|| {
                        let (map, wrap): (_, fn(usize) -> Cursor) = if shared {
                            (&mut self.shared_cursors, Cursor::Shared)
                        } else {
                            (&mut self.run_cursors, Cursor::Run)
                        };
                        let next = map.len();
                        wrap(*map.entry(prefix.clone()).or_insert(next))
                    });
                    RefStep::Index(*kind, cursor)
                }
            });
        }
        if let Root::Source(index) = root {
            steps =
                check_source(&self.sources[index], steps).map_err(|m| format!("`{text}`: {m}"))?;
        }
        Ok(Reference {
            root,
            steps,
            text,
            line,
            place: place.to_owned(),
        })
    }
}

/// `: the file has a, b` (or nothing, for none).
fn listed<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (there are: {})", names.join(", "))
    }
}

/// Check `steps` against a source's data, turning a CSV field's name into its column.
pub(super) fn check_source(source: &Source, steps: Vec<RefStep>) -> Result<Vec<RefStep>, String> {
    match &source.data {
        SourceData::Csv(table) => {
            let mut row = false;
            let mut scalar = false;
            steps
                .into_iter()
                .map(|step| {
                    if scalar {
                        return Err("a CSV field is text: nothing is under it".to_owned());
                    }
                    Ok(match step {
                        RefStep::Index(kind, cursor) if !row => {
                            if table.rows() == 0 {
                                return Err(format!("`{}` has no rows", source.name));
                            }
                            row = true;
                            RefStep::Index(kind, cursor)
                        }
                        RefStep::Index(..) => {
                            return Err("a CSV row is not a list: name a field".to_owned())
                        }
                        RefStep::Key(key) if row => {
                            scalar = true;
                            RefStep::Column(table.column(&key).ok_or_else(|| {
                                format!(
                                    "`{}` has no field `{key}` (its fields: {})",
                                    source.name,
                                    table.fields().join(", ")
                                )
                            })?)
                        }
                        RefStep::Key(key) => {
                            return Err(format!(
                                "`{}` is a list of rows: pick one first, as in {}[next].{key}",
                                source.name, source.name
                            ))
                        }
                        // A field already picked (a variable's path, continued).
                        column @ RefStep::Column(_) => {
                            scalar = true;
                            column
                        }
                    })
                })
                .collect()
        }
        SourceData::Json(root) => {
            let mut values = vec![root];
            for step in &steps {
                let mut next = Vec::new();
                for value in &values {
                    match step {
                        RefStep::Key(_) | RefStep::Column(_) if !value.is_object() => {
                            return Err(format!(
                                "`{}` is not a mapping, so it has no `{}`",
                                short(value),
                                key_of(step)
                            ));
                        }
                        RefStep::Key(key) => match value.get(key) {
                            Some(inner) => next.push(inner),
                            None => return Err(format!("`{}` has no key `{key}`", short(value))),
                        },
                        RefStep::Column(_) => {}
                        RefStep::Index(kind, _) => {
                            let Some(items) = value.as_array() else {
                                return Err(format!("`{}` is not a list", short(value)));
                            };
                            if items.is_empty() {
                                return Err("the list is empty".to_owned());
                            }
                            match crate::path::fixed_item(*kind, items.len()) {
                                Some(at) => next.push(&items[at]),
                                None => next.extend(items.iter()),
                            }
                        }
                    }
                }
                if next.len() > MAX_CHECKED {
                    // So large a source is checked up to here; the run checks the rest.
                    return Ok(steps);
                }
                values = next;
            }
            Ok(steps)
        }
    }
}

fn key_of(step: &RefStep) -> String {
    match step {
        RefStep::Key(key) => key.clone(),
        RefStep::Column(column) => column.to_string(),
        RefStep::Index(kind, _) => format!("[{kind}]"),
    }
}

/// A value, cut short for a message.
fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}
