//! Values a run holds and templates print: a source's data (borrowed from the
//! loaded book, never copied), text (a header, a function's result) and JSON
//! (what JSONPath extracted, XPath's matches).
//!
//! Printed, a string is its text, a number as JSON writes it, and a list or a
//! mapping (a CSV row included) compact JSON: a value extracted from one
//! reply goes into the next request as it came. (Go's templates print
//! `[a b]` and `map[k:v]`, and floats as `1e+06`; Pandora inherits that,
//! and tank departs from it: docs/scenarios.md.)

use std::fmt::Write as _;

use crate::source::CsvTable;

/// A value, borrowed from the book or from a run's variables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ValueRef<'a> {
    /// Text.
    Str(&'a str),
    /// JSON.
    Json(&'a serde_json::Value),
    /// A CSV source's row (source `source`).
    Row {
        source: usize,
        table: &'a CsvTable,
        row: usize,
    },
    /// A CSV source's rows, all of them.
    Table { source: usize, table: &'a CsvTable },
}

/// A value a run keeps (a preprocessor's or a postprocessor's variable).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stored<'b> {
    /// Text made by the run.
    Text(String),
    /// JSON made by the run.
    Json(serde_json::Value),
    /// Part of a source, borrowed from the book for the whole run.
    Source(ValueRef<'b>),
}

impl<'b> Stored<'b> {
    /// The value, to read.
    pub(crate) fn view(&self) -> ValueRef<'_> {
        match self {
            Stored::Text(text) => ValueRef::Str(text),
            Stored::Json(value) => ValueRef::Json(value),
            Stored::Source(value) => *value,
        }
    }
}

impl<'a> ValueRef<'a> {
    /// A copy a run can keep; `tables` gives back a source's table for the
    /// book's lifetime (a row is kept as a reference to it, not copied).
    pub(crate) fn to_stored<'b>(
        self,
        tables: impl Fn(usize) -> Option<&'b CsvTable>,
    ) -> Stored<'b> {
        match self {
            ValueRef::Str(text) => Stored::Text(text.to_owned()),
            ValueRef::Json(value) => Stored::Json(value.clone()),
            ValueRef::Row { source, row, table } => match tables(source) {
                Some(table) => Stored::Source(ValueRef::Row { source, table, row }),
                None => Stored::Json(row_json(table, row)),
            },
            ValueRef::Table { source, table } => match tables(source) {
                Some(table) => Stored::Source(ValueRef::Table { source, table }),
                None => Stored::Json(serde_json::Value::Array(
                    (0..table.rows()).map(|r| row_json(table, r)).collect(),
                )),
            },
        }
    }

    /// How many items a list has (`None`: not a list).
    pub(crate) fn items(&self) -> Option<usize> {
        match self {
            ValueRef::Json(serde_json::Value::Array(items)) => Some(items.len()),
            ValueRef::Table { table, .. } => Some(table.rows()),
            _ => None,
        }
    }

    /// The list's item `index` (in range).
    pub(crate) fn item(&self, index: usize) -> Option<ValueRef<'a>> {
        match *self {
            ValueRef::Json(serde_json::Value::Array(items)) => items.get(index).map(ValueRef::Json),
            ValueRef::Table { source, table } => (index < table.rows()).then_some(ValueRef::Row {
                source,
                table,
                row: index,
            }),
            _ => None,
        }
    }

    /// The mapping's value under `key` (a row's field by name).
    pub(crate) fn key(&self, key: &str) -> Option<ValueRef<'a>> {
        match *self {
            ValueRef::Json(serde_json::Value::Object(map)) => map.get(key).map(ValueRef::Json),
            ValueRef::Row { table, row, .. } => table
                .column(key)
                .map(|column| ValueRef::Str(table.get(row, column))),
            _ => None,
        }
    }

    /// A row's field by column.
    pub(crate) fn column(&self, column: usize) -> Option<ValueRef<'a>> {
        match *self {
            ValueRef::Row { table, row, .. } if column < table.fields().len() => {
                Some(ValueRef::Str(table.get(row, column)))
            }
            _ => None,
        }
    }

    /// Print the value onto `out` (see the module docs).
    pub(crate) fn print(&self, out: &mut String) {
        match self {
            ValueRef::Str(text) => out.push_str(text),
            ValueRef::Json(serde_json::Value::String(text)) => out.push_str(text),
            ValueRef::Json(value) => {
                let _ = write!(out, "{value}");
            }
            ValueRef::Row { table, row, .. } => {
                let _ = write!(out, "{}", row_json(table, *row));
            }
            ValueRef::Table { table, .. } => {
                out.push('[');
                for row in 0..table.rows() {
                    if row > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{}", row_json(table, row));
                }
                out.push(']');
            }
        }
    }
}

/// A CSV row as a JSON object.
fn row_json(table: &CsvTable, row: usize) -> serde_json::Value {
    serde_json::Value::Object(
        table
            .fields()
            .iter()
            .enumerate()
            .map(|(column, name)| {
                (
                    name.clone(),
                    serde_json::Value::String(table.get(row, column).to_owned()),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printed(value: ValueRef<'_>) -> String {
        let mut out = String::new();
        value.print(&mut out);
        out
    }

    #[test]
    fn strings_print_bare_and_the_rest_as_json() {
        assert_eq!(printed(ValueRef::Str("a b")), "a b");
        assert_eq!(printed(ValueRef::Json(&json!("tok"))), "tok");
        assert_eq!(printed(ValueRef::Json(&json!(1234567))), "1234567");
        assert_eq!(printed(ValueRef::Json(&json!(1.5))), "1.5");
        assert_eq!(printed(ValueRef::Json(&json!([1, "a"]))), r#"[1,"a"]"#);
        assert_eq!(
            printed(ValueRef::Json(&json!({"k": null}))),
            r#"{"k":null}"#
        );
    }

    #[test]
    fn lists_index_and_mappings_key() {
        let value = json!({"items": [10, 20], "n": "7"});
        let root = ValueRef::Json(&value);
        let items = root.key("items").unwrap();
        assert_eq!(items.items(), Some(2));
        assert_eq!(items.item(1), Some(ValueRef::Json(&json!(20))));
        assert_eq!(items.item(2), None);
        assert_eq!(root.key("none"), None);
        assert_eq!(ValueRef::Str("x").items(), None);
    }
}
