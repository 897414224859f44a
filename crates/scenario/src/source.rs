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
            let bytes = read_file(&path, spec, scenario)?;
            let table = parse_csv(
                &path,
                &bytes,
                fields.as_deref(),
                *ignore_first_line,
                *delimiter,
            )?;
            (SourceData::Csv(table), Some(path), "file/csv")
        }
        SourceKind::Json { file } => {
            let path = PathBuf::from(file);
            let bytes = read_file(&path, spec, scenario)?;
            let value = serde_json::from_slice(&bytes).map_err(|e| ScenarioError {
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

/// A source's file; one that cannot be read is an error at the source's line
/// in the scenario file, which names it.
fn read_file(path: &Path, spec: &SourceSpec, scenario: &Path) -> Result<Vec<u8>, ScenarioError> {
    std::fs::read(path).map_err(|e| {
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

/// Parse `bytes`, the CSV file at `path`, into a table.
pub(crate) fn parse_csv(
    path: &Path,
    bytes: &[u8],
    fields: Option<&[String]>,
    ignore_first_line: bool,
    delimiter: u8,
) -> Result<CsvTable, ScenarioError> {
    let error = |line: Option<usize>, message: String| ScenarioError {
        path: path.to_path_buf(),
        line,
        message,
    };
    // A spreadsheet's UTF-8 byte order mark is not part of the first field.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    check_quotes(bytes, delimiter).map_err(|(line, message)| error(Some(line), message))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(bytes);
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

/// Check the quoting of `bytes` against RFC 4180, as Go's CSV reader
/// (Pandora's) does: the csv crate reads an unclosed quote as a field that
/// runs to the end of the file, and a stray quote as text, so a broken file
/// would load as rows that are not the file's. The error is at a line.
fn check_quotes(bytes: &[u8], delimiter: u8) -> Result<(), (usize, String)> {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        /// Just after a quote inside a quoted field: its end, or the first of `""`.
        Closed,
    }
    let mut state = State::FieldStart;
    let (mut line, mut opened) = (1, 1);
    for &byte in bytes {
        state = match (state, byte) {
            (State::Quoted, b'"') => State::Closed,
            (State::Quoted, _) => State::Quoted,
            (State::Closed, b'"') => State::Quoted,
            (State::FieldStart, b'"') => {
                opened = line;
                State::Quoted
            }
            (_, b'\n' | b'\r') => State::FieldStart,
            (_, byte) if byte == delimiter => State::FieldStart,
            (State::Closed, _) => {
                return Err((
                    line,
                    "text after a quoted field's closing `\"`: expected the delimiter or the \
                     line's end (a quote inside a quoted field is written `\"\"`, RFC 4180)"
                        .to_owned(),
                ))
            }
            (_, b'"') => {
                return Err((
                    line,
                    "a `\"` inside an unquoted field: expected the whole field in quotes, \
                     with each quote in it doubled (RFC 4180)"
                        .to_owned(),
                ))
            }
            (_, _) => State::Unquoted,
        };
        if byte == b'\n' {
            line += 1;
        }
    }
    if state == State::Quoted {
        return Err((
            opened,
            "a quoted field opens on this line and is never closed: expected a closing `\"` \
             (RFC 4180)"
                .to_owned(),
        ));
    }
    Ok(())
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

    /// The file's table, as `load` reads it.
    fn parse(
        path: &Path,
        fields: Option<&[String]>,
        ignore_first_line: bool,
        delimiter: u8,
    ) -> Result<CsvTable, ScenarioError> {
        let bytes = std::fs::read(path).unwrap();
        parse_csv(path, &bytes, fields, ignore_first_line, delimiter)
    }

    fn rows(table: &CsvTable) -> Vec<Vec<&str>> {
        (0..table.rows())
            .map(|r| (0..table.fields().len()).map(|c| table.get(r, c)).collect())
            .collect()
    }

    #[test]
    fn a_header_line_names_the_fields() {
        let file = csv_file("user id,pass\n1,\"a,b\"\n2,x\n");
        let table = parse(file.path(), None, false, b',').unwrap();
        assert_eq!(table.fields(), ["user_id", "pass"]);
        assert_eq!(rows(&table), [["1", "a,b"], ["2", "x"]]);
        assert_eq!(table.column("pass"), Some(1));
    }

    #[test]
    fn fields_given_and_a_first_line_skipped() {
        let file = csv_file("id;name\n7;ann\n");
        let fields = ["id".to_owned(), "name".to_owned()];
        let table = parse(file.path(), Some(&fields), true, b';').unwrap();
        assert_eq!(rows(&table), [["7", "ann"]]);
        let kept = parse(file.path(), Some(&fields), false, b';').unwrap();
        assert_eq!(kept.rows(), 2);
    }

    #[test]
    fn an_ignored_first_line_without_fields_numbers_the_columns() {
        let file = csv_file("a,b\n1,2\n");
        let table = parse(file.path(), None, true, b',').unwrap();
        assert_eq!(table.fields(), ["0", "1"]);
        assert_eq!(rows(&table), [["1", "2"]]);
    }

    #[test]
    fn a_short_row_is_an_error_at_its_line() {
        let file = csv_file("a,b\n1,2\n3\n");
        let error = parse(file.path(), None, false, b',').unwrap_err();
        assert_eq!(error.line, Some(3), "{error}");
        let fields = ["a".to_owned()];
        let error = parse(csv_file("1,2\n").path(), Some(&fields), false, b',').unwrap_err();
        assert!(error.message.contains("names 1 (a)"), "{error}");
        let error = parse(csv_file("").path(), None, false, b',').unwrap_err();
        assert!(error.message.contains("empty"), "{error}");
        let error = parse(csv_file("a,a\n").path(), None, false, b',').unwrap_err();
        assert!(error.message.contains("named twice"), "{error}");
    }

    #[test]
    fn quoting_that_breaks_rfc_4180_is_an_error_at_its_line() {
        let error = |text: &str| {
            parse_csv(Path::new("q.csv"), text.as_bytes(), None, false, b',').unwrap_err()
        };
        let e = error("id,name\n1,\"ann\n");
        assert_eq!(e.to_string(), "q.csv:2: a quoted field opens on this line and is never closed: expected a closing `\"` (RFC 4180)");
        let e = error("id,name\n1,\"ann\nbob\n2,cid\n");
        assert_eq!(e.line, Some(2), "{e}");
        let e = error("id,name\n1,\"ann\"x\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("after a quoted field's closing"), "{e}");
        let e = error("id,name\n1,a\"b\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("inside an unquoted field"), "{e}");
        // Quotes doubled in a field, a line break in one, CRLF line ends: all RFC 4180.
        let text = "id,name\r\n1,\"a \"\"b\"\"\r\nc\"\r\n\"2\",\"\"\r\n";
        let table = parse_csv(Path::new("q.csv"), text.as_bytes(), None, false, b',').unwrap();
        assert_eq!(rows(&table), [["1", "a \"b\"\r\nc"], ["2", ""]]);
        // A byte order mark before a quoted first field is no stray byte.
        let text = "\u{feff}\"id\",name\n1,ann\n";
        let table = parse_csv(Path::new("q.csv"), text.as_bytes(), None, false, b',').unwrap();
        assert_eq!(table.fields(), ["id", "name"]);
    }

    #[test]
    fn a_missing_file_is_named_at_its_sources_line() {
        let spec = SourceSpec {
            name: "u".into(),
            line: 4,
            kind: SourceKind::Csv {
                file: "/nonexistent/u.csv".into(),
                fields: None,
                ignore_first_line: false,
                delimiter: b',',
            },
        };
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1);
        let e = load(&spec, Path::new("x.hcl"), &mut rng).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("x.hcl:4: variable_source `u`: cannot read /nonexistent/u.csv ("),
            "{e}"
        );
    }

    proptest::proptest! {
        #[test]
        fn rows_written_by_rfc_4180_read_back(
            table in proptest::collection::vec(
                proptest::collection::vec("[a-z\",\r\n ]{0,6}", 2),
                1..6,
            ),
        ) {
            let mut writer = csv::Writer::from_writer(Vec::new());
            for row in &table {
                writer.write_record(row).unwrap();
            }
            let bytes = writer.into_inner().unwrap();
            let fields = ["a".to_owned(), "b".to_owned()];
            let read = parse_csv(Path::new("p.csv"), &bytes, Some(&fields), false, b',').unwrap();
            proptest::prop_assert_eq!(rows(&read), table);
        }

        #[test]
        fn an_odd_number_of_quotes_is_never_valid(text in "[a\",\n]{0,20}") {
            if text.matches('"').count() % 2 == 1 {
                proptest::prop_assert!(check_quotes(text.as_bytes(), b',').is_err());
            }
        }
    }
}
