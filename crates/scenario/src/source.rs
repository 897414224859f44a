//! Variable sources: the data a scenario draws from, read once when the file
//! is loaded and shared, read-only, by every instance.
//!
//! - `file/csv`: rows of named fields. The names are `fields` when given;
//!   otherwise the first line's (spaces become `_`, as Pandora does), or,
//!   with `ignore_first_line` and no `fields`, the columns' numbers `0`, `1`,
//!   .... Every row must have as many fields as the first (Go's CSV reader
//!   demands the same). The rows are kept in one string with their field
//!   ends, not as a map per row: a million-row file costs little beyond its
//!   own bytes.
//! - `file/json`: any JSON value.
//! - `variables`: the values written in the scenario file; a value that is a
//!   call of `randInt`, `randString` or `uuid` is drawn once, here.
//!
//! File paths are relative to the working directory, as Pandora (and tank's
//! own `ammofile`) resolve them.

use std::path::{Path, PathBuf};

use rand::Rng;

use crate::doc::{Kind, Node};
use crate::error::{Fault, ScenarioError};
use crate::funcs;
use crate::spec::{SourceKind, SourceSpec};

/// A CSV source's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvTable {
    fields: Vec<String>,
    /// Every field of every row, one after another.
    text: String,
    /// Where each field ends in `text` (rows × fields of them).
    ends: Vec<usize>,
}

impl CsvTable {
    /// The field names, in column order.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// How many rows.
    pub fn rows(&self) -> usize {
        match self.fields.len() {
            0 => 0,
            n => self.ends.len() / n,
        }
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f == name)
    }

    /// Row `row`'s field in `column` (both in range).
    pub fn get(&self, row: usize, column: usize) -> &str {
        let at = row * self.fields.len() + column;
        let start = if at == 0 { 0 } else { self.ends[at - 1] };
        self.text.get(start..self.ends[at]).unwrap_or_default()
    }
}

/// What a source holds.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceData {
    /// `file/csv`: a list of rows.
    Csv(CsvTable),
    /// `file/json` and `variables`: a JSON value.
    Json(serde_json::Value),
}

/// A loaded source.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// Its name (`source.<name>` in paths).
    pub name: String,
    /// What it read: `file/csv`, `file/json` or `variables`.
    pub kind: &'static str,
    /// The file it read, if any.
    pub file: Option<PathBuf>,
    /// Its data.
    pub data: SourceData,
}

impl Source {
    /// How many rows (a CSV), items (a JSON list) or keys (a mapping) it has.
    pub fn len(&self) -> usize {
        match &self.data {
            SourceData::Csv(table) => table.rows(),
            SourceData::Json(serde_json::Value::Array(items)) => items.len(),
            SourceData::Json(serde_json::Value::Object(map)) => map.len(),
            SourceData::Json(_) => 1,
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Load the source `spec` declares; `scenario` is the scenario file (for
/// errors in what it wrote), `rng` draws the `variables`' random values.
pub(crate) fn load(
    spec: &SourceSpec,
    scenario: &Path,
    rng: &mut impl Rng,
) -> Result<Source, ScenarioError> {
    let (data, file, kind) = match &spec.kind {
        SourceKind::Csv {
            file,
            fields,
            ignore_first_line,
            delimiter,
        } => {
            let path = PathBuf::from(file);
            let table = read_csv(&path, fields.as_deref(), *ignore_first_line, *delimiter)?;
            (SourceData::Csv(table), Some(path), "file/csv")
        }
        SourceKind::Json { file } => {
            let path = PathBuf::from(file);
            let text = read_file(&path, spec, scenario)?;
            let value = serde_json::from_str(&text).map_err(|e| ScenarioError {
                path: path.clone(),
                line: Some(e.line()),
                message: format!("invalid JSON: {e}"),
            })?;
            (SourceData::Json(value), Some(path), "file/json")
        }
        SourceKind::Variables(node) => {
            let value = variables(node, rng).map_err(|f| f.in_file(scenario))?;
            (SourceData::Json(value), None, "variables")
        }
    };
    Ok(Source {
        name: spec.name.clone(),
        kind,
        file,
        data,
    })
}

fn read_file(path: &Path, spec: &SourceSpec, scenario: &Path) -> Result<String, ScenarioError> {
    std::fs::read_to_string(path).map_err(|e| {
        Fault::new(
            spec.line,
            format!(
                "variable_source `{}`: cannot read {} ({e}; a relative path is taken from the \
                 working directory, as Pandora takes it)",
                spec.name,
                path.display()
            ),
        )
        .in_file(scenario)
    })
}

/// The `variables` of a source as JSON, with function calls drawn.
fn variables(node: &Node, rng: &mut impl Rng) -> Result<serde_json::Value, Fault> {
    match &node.kind {
        Kind::Map(_) => draw(node, rng),
        _ => Err(Fault::new(
            node.line,
            format!("`variables`: expected a mapping, found {}", node.describe()),
        )),
    }
}

fn draw(node: &Node, rng: &mut impl Rng) -> Result<serde_json::Value, Fault> {
    Ok(match &node.kind {
        Kind::Str(text) => match funcs::parse_call(text) {
            None => serde_json::Value::String(text.clone()),
            Some(call) => {
                let (func, args) = call.map_err(|m| Fault::new(node.line, m))?;
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut out = String::new();
                func.call(&args, rng, &mut out)
                    .map_err(|m| Fault::new(node.line, m))?;
                serde_json::Value::String(out)
            }
        },
        Kind::List(items) => serde_json::Value::Array(
            items
                .iter()
                .map(|item| draw(item, rng))
                .collect::<Result<_, _>>()?,
        ),
        Kind::Map(pairs) => serde_json::Value::Object(
            pairs
                .iter()
                .map(|(key, value)| Ok((key.clone(), draw(value, rng)?)))
                .collect::<Result<_, Fault>>()?,
        ),
        _ => node.to_json(),
    })
}

/// Read a CSV file into a table.
pub(crate) fn read_csv(
    path: &Path,
    fields: Option<&[String]>,
    ignore_first_line: bool,
    delimiter: u8,
) -> Result<CsvTable, ScenarioError> {
    let error = |line: Option<usize>, message: String| ScenarioError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| {
        error(
            None,
            format!(
                "cannot read the CSV source ({e}; a relative path is taken from the working \
                 directory, as Pandora takes it)"
            ),
        )
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(std::io::BufReader::new(file));
    let mut table = CsvTable {
        fields: fields
            .map(|names| names.iter().map(|n| n.replace(' ', "_")).collect())
            .unwrap_or_default(),
        text: String::new(),
        ends: Vec::new(),
    };
    let mut record = csv::StringRecord::new();
    let mut first = true;
    loop {
        let read = reader.read_record(&mut record).map_err(|e| {
            let line = e.position().map(|p| p.line() as usize);
            let message = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!(
                    "a row of {len} fields where the first had {expected_len}: every row needs \
                     the same fields"
                ),
                csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".to_owned(),
                _ => e.to_string(),
            };
            error(line, message)
        })?;
        if !read {
            break;
        }
        let line = record.position().map_or(0, |p| p.line() as usize);
        if first {
            first = false;
            if table.fields.is_empty() {
                table.fields = if ignore_first_line {
                    (0..record.len()).map(|i| i.to_string()).collect()
                } else {
                    record.iter().map(|name| name.replace(' ', "_")).collect()
                };
                if let Some(duplicate) = duplicate(&table.fields) {
                    return Err(error(
                        Some(line),
                        format!("the field `{duplicate}` is named twice"),
                    ));
                }
                if !ignore_first_line {
                    continue;
                }
            }
            if ignore_first_line {
                continue;
            }
        }
        if record.len() != table.fields.len() {
            return Err(error(
                Some(line),
                format!(
                    "a row of {} fields, and the source names {} ({}): expected as many",
                    record.len(),
                    table.fields.len(),
                    table.fields.join(", ")
                ),
            ));
        }
        for field in record.iter() {
            table.text.push_str(field);
            table.ends.push(table.text.len());
        }
    }
    if table.fields.is_empty() {
        return Err(error(
            None,
            "the CSV source is empty: expected rows".to_owned(),
        ));
    }
    Ok(table)
}

fn duplicate(names: &[String]) -> Option<&str> {
    names
        .iter()
        .enumerate()
        .find(|(i, name)| names[..*i].contains(name))
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn csv_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn rows(table: &CsvTable) -> Vec<Vec<&str>> {
        (0..table.rows())
            .map(|r| (0..table.fields().len()).map(|c| table.get(r, c)).collect())
            .collect()
    }

    #[test]
    fn a_header_line_names_the_fields() {
        let file = csv_file("user id,pass\n1,\"a,b\"\n2,x\n");
        let table = read_csv(file.path(), None, false, b',').unwrap();
        assert_eq!(table.fields(), ["user_id", "pass"]);
        assert_eq!(rows(&table), [["1", "a,b"], ["2", "x"]]);
        assert_eq!(table.column("pass"), Some(1));
    }

    #[test]
    fn fields_given_and_a_first_line_skipped() {
        let file = csv_file("id;name\n7;ann\n");
        let fields = ["id".to_owned(), "name".to_owned()];
        let table = read_csv(file.path(), Some(&fields), true, b';').unwrap();
        assert_eq!(rows(&table), [["7", "ann"]]);
        let kept = read_csv(file.path(), Some(&fields), false, b';').unwrap();
        assert_eq!(kept.rows(), 2);
    }

    #[test]
    fn an_ignored_first_line_without_fields_numbers_the_columns() {
        let file = csv_file("a,b\n1,2\n");
        let table = read_csv(file.path(), None, true, b',').unwrap();
        assert_eq!(table.fields(), ["0", "1"]);
        assert_eq!(rows(&table), [["1", "2"]]);
    }

    #[test]
    fn a_short_row_is_an_error_at_its_line() {
        let file = csv_file("a,b\n1,2\n3\n");
        let error = read_csv(file.path(), None, false, b',').unwrap_err();
        assert_eq!(error.line, Some(3), "{error}");
        let fields = ["a".to_owned()];
        let error = read_csv(csv_file("1,2\n").path(), Some(&fields), false, b',').unwrap_err();
        assert!(error.message.contains("names 1 (a)"), "{error}");
        let error = read_csv(csv_file("").path(), None, false, b',').unwrap_err();
        assert!(error.message.contains("empty"), "{error}");
        let error = read_csv(csv_file("a,a\n").path(), None, false, b',').unwrap_err();
        assert!(error.message.contains("named twice"), "{error}");
    }
}
