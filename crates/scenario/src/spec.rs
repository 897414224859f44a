//! The scenario file's structure, decoded from its tree ([`crate::doc`]):
//! names, types and required keys checked, every unknown key an error, every
//! item with its line. Nothing is resolved here (which request a scenario
//! names, what a template refers to): that is `compile`'s.

use crate::doc::{Entry, Fields, Format, Kind, Node};
use crate::error::Fault;

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    pub sources: Vec<SourceSpec>,
    pub requests: Vec<RequestSpec>,
    pub scenarios: Vec<ScenarioSpec>,
}

/// A `variable_source`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceSpec {
    pub name: String,
    pub line: usize,
    pub kind: SourceKind,
}

/// What a source reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SourceKind {
    /// `file/csv`.
    Csv {
        file: String,
        fields: Option<Vec<String>>,
        ignore_first_line: bool,
        delimiter: u8,
    },
    /// `file/json`.
    Json { file: String },
    /// `variables`: the values as written (function calls evaluated at load).
    Variables(Node),
}

/// A `request`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestSpec {
    pub name: String,
    pub line: usize,
    pub method: String,
    pub uri: Entry,
    pub headers: Vec<Entry>,
    pub tag: Option<String>,
    pub body: Option<Entry>,
    pub templater: Templater,
    pub preprocessor: Vec<Entry>,
    pub postprocessors: Vec<PostSpec>,
}

/// How a request's templates escape what they insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Templater {
    /// `text` (Pandora's default): values inserted as they are.
    Text,
    /// `html`: values HTML-escaped (`<`, `>`, `&`, `'`, `"`).
    Html,
}

/// A postprocessor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PostSpec {
    /// `var/jsonpath`: variable → JSONPath.
    JsonPath { line: usize, mapping: Vec<Entry> },
    /// `var/xpath`: variable → XPath.
    XPath { line: usize, mapping: Vec<Entry> },
    /// `var/header`: variable → `Header|modifier|...`.
    Header { line: usize, mapping: Vec<Entry> },
    /// `assert/response`.
    Assert(AssertSpec),
}

/// `assert/response`: every check must hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssertSpec {
    pub line: usize,
    /// Header name → a substring its value must contain.
    pub headers: Vec<Entry>,
    /// Substrings the body must contain.
    pub body: Vec<String>,
    pub status_code: Option<u16>,
    pub size: Option<(SizeOp, u64)>,
}

/// How `size { op = ... }` compares the body's length with `val`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SizeOp {
    /// `eq` / `=`.
    Eq,
    /// `lt` / `<`.
    Lt,
    /// `gt` / `>`.
    Gt,
}

impl SizeOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            SizeOp::Eq => "=",
            SizeOp::Lt => "<",
            SizeOp::Gt => ">",
        }
    }
}

/// A `scenario`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScenarioSpec {
    pub name: String,
    pub line: usize,
    pub weight: u64,
    pub min_waiting_time_ms: u64,
    /// `name`, `name(count)`, `name(count, sleep_ms)` or `sleep(ms)`, each with its line.
    pub requests: Vec<Entry>,
}

const TOP_KEYS: &[&str] = &["locals", "variable_sources", "requests", "scenarios"];
const SOURCE_KEYS: &[&str] = &[
    "name",
    "type",
    "file",
    "fields",
    "ignore_first_line",
    "delimiter",
    "variables",
];
const REQUEST_KEYS: &[&str] = &[
    "name",
    "method",
    "uri",
    "headers",
    "tag",
    "body",
    "templater",
    "preprocessor",
    "postprocessors",
];
const SCENARIO_KEYS: &[&str] = &["name", "weight", "min_waiting_time", "requests"];
/// The most a weight may be, so that a round of the draw stays small.
pub(crate) const MAX_WEIGHT: u64 = 1_000_000;

/// Decode a scenario file's tree.
pub(crate) fn decode(root: &Node, format: Format) -> Result<Spec, Fault> {
    let mut top = root.fields("the scenario file")?;
    if let Some(calls) = top.take("calls") {
        return Err(Fault::new(
            calls.line,
            "`calls` are Pandora's gRPC scenarios: tank runs HTTP scenarios (`requests`)",
        ));
    }
    // `locals` serve YAML anchors (and HCL's `local.`); nothing else reads them.
    top.take("locals");
    let items = |top: &mut Fields<'_>, key: &str| -> Result<Vec<Node>, Fault> {
        match top.take(key) {
            None => Ok(Vec::new()),
            Some(Node {
                kind: Kind::Null, ..
            }) => Ok(Vec::new()),
            Some(node) => Ok(node.list(&format!("`{key}`"))?.to_vec()),
        }
    };
    let sources = items(&mut top, "variable_sources")?
        .iter()
        .map(|node| source(node, format))
        .collect::<Result<_, _>>()?;
    let requests = items(&mut top, "requests")?
        .iter()
        .map(|node| request(node, format))
        .collect::<Result<_, _>>()?;
    let scenarios = items(&mut top, "scenarios")?
        .iter()
        .map(|node| scenario(node, format))
        .collect::<Result<_, _>>()?;
    top.finish(TOP_KEYS)?;
    Ok(Spec {
        sources,
        requests,
        scenarios,
    })
}

/// The keys `allowed` in a block, as `format` spells them for a message: in
/// HCL, `labels` are the block's labels (`request "name"`), not attributes,
/// and `postprocessors` are `postprocessor "type"` blocks.
fn spelled(allowed: &[&'static str], labels: &[&str], format: Format) -> Vec<&'static str> {
    if format != Format::Hcl {
        return allowed.to_vec();
    }
    allowed
        .iter()
        .filter(|key| !labels.contains(key))
        .map(|key| match *key {
            "postprocessors" => "postprocessor \"type\" { ... }",
            key => key,
        })
        .collect()
}

/// A name: letters, digits, `_` and `-` (it is a path segment in templates).
fn name(node: &Node, what: &str) -> Result<String, Fault> {
    let name = node.text(what)?;
    let good = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !good {
        return Err(Fault::new(
            node.line,
            format!("{what} `{name}`: expected letters, digits, `_` or `-`"),
        ));
    }
    Ok(name)
}

fn source(node: &Node, format: Format) -> Result<SourceSpec, Fault> {
    let mut fields = node.fields("a variable_source")?;
    let name = name(fields.require("name")?, "a variable_source's name")?;
    let what = format!("variable_source `{name}`");
    let kind_node = fields.require("type")?;
    let kind = match kind_node.text(&format!("{what}: type"))?.as_str() {
        "file/csv" => {
            let file = fields.require("file")?.text(&format!("{what}: file"))?;
            let names = match fields.take("fields") {
                None => None,
                Some(node) => Some(node.texts(&format!("{what}: fields"))?),
            };
            let ignore_first_line = match fields.take("ignore_first_line") {
                None => false,
                Some(node) => node.boolean(&format!("{what}: ignore_first_line"))?,
            };
            let delimiter = match fields.take("delimiter") {
                None => b',',
                Some(node) => {
                    let text = node.text(&format!("{what}: delimiter"))?;
                    match text.as_bytes() {
                        [byte] if *byte != b'"' && *byte != b'\n' && *byte != b'\r' => *byte,
                        _ => {
                            return Err(Fault::new(
                                node.line,
                                format!(
                                    "{what}: delimiter `{text}`: expected one ASCII character \
                                     (not a quote or a line break)"
                                ),
                            ))
                        }
                    }
                }
            };
            SourceKind::Csv {
                file,
                fields: names,
                ignore_first_line,
                delimiter,
            }
        }
        "file/json" => SourceKind::Json {
            file: fields.require("file")?.text(&format!("{what}: file"))?,
        },
        "variables" => SourceKind::Variables(fields.require("variables")?.clone()),
        other => {
            return Err(Fault::new(
                kind_node.line,
                format!("{what}: type `{other}`: expected `file/csv`, `file/json` or `variables`"),
            ))
        }
    };
    fields.finish(&spelled(SOURCE_KEYS, &["name", "type"], format))?;
    Ok(SourceSpec {
        name,
        line: node.line,
        kind,
    })
}

fn entry(node: &Node, key: &str, what: &str) -> Result<Entry, Fault> {
    Ok(Entry {
        key: key.to_owned(),
        value: node.text(&format!("{what}: {key}"))?,
        line: node.line,
    })
}

fn request(node: &Node, format: Format) -> Result<RequestSpec, Fault> {
    let mut fields = node.fields("a request")?;
    let name = name(fields.require("name")?, "a request's name")?;
    let what = format!("request `{name}`");
    let method = match fields.take("method") {
        None => "GET".to_owned(),
        Some(node) => {
            let method = node.text(&format!("{what}: method"))?;
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(Fault::new(
                    node.line,
                    format!("{what}: method `{method}`: expected a word such as GET or POST"),
                ));
            }
            method
        }
    };
    let uri = entry(fields.require("uri")?, "uri", &what)?;
    let headers = match fields.take("headers") {
        None => Vec::new(),
        Some(node) => node.text_map(&format!("{what}: headers"))?,
    };
    for header in &headers {
        let good = !header.key.is_empty()
            && header
                .key
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b':');
        if !good {
            return Err(Fault::new(
                header.line,
                format!(
                    "{what}: header name `{}`: expected a token (no spaces or `:`)",
                    header.key
                ),
            ));
        }
    }
    let tag = fields
        .take("tag")
        .map(|node| node.text(&format!("{what}: tag")))
        .transpose()?;
    let body = match fields.take("body") {
        None
        | Some(Node {
            kind: Kind::Null, ..
        }) => None,
        Some(node) => Some(entry(node, "body", &what)?),
    };
    let templater = match fields.take("templater") {
        None => Templater::Text,
        Some(node) => templater(node, &what)?,
    };
    let preprocessor = match fields.take("preprocessor") {
        None => Vec::new(),
        Some(node) => {
            let mut pre = node.fields(&format!("{what}: preprocessor"))?;
            let mapping = pre
                .require("mapping")?
                .text_map(&format!("{what}: preprocessor mapping"))?;
            pre.finish(&["mapping"])?;
            mapping
        }
    };
    let postprocessors = match fields.take("postprocessors") {
        None => Vec::new(),
        Some(node) => node
            .list(&format!("{what}: postprocessors"))?
            .iter()
            .map(|node| postprocessor(node, &what))
            .collect::<Result<_, _>>()?,
    };
    fields.finish(&spelled(REQUEST_KEYS, &["name"], format))?;
    Ok(RequestSpec {
        name,
        line: node.line,
        method,
        uri,
        headers,
        tag,
        body,
        templater,
        preprocessor,
        postprocessors,
    })
}

fn templater(node: &Node, what: &str) -> Result<Templater, Fault> {
    let mut fields = node.fields(&format!("{what}: templater"))?;
    let templater = match fields.take("type") {
        None => Templater::Text,
        Some(kind) => match kind.text(&format!("{what}: templater type"))?.as_str() {
            "text" => Templater::Text,
            "html" => Templater::Html,
            other => {
                return Err(Fault::new(
                    kind.line,
                    format!("{what}: templater type `{other}`: expected `text` or `html`"),
                ))
            }
        },
    };
    fields.finish(&["type"])?;
    Ok(templater)
}

fn postprocessor(node: &Node, what: &str) -> Result<PostSpec, Fault> {
    let mut fields = node.fields(&format!("{what}: a postprocessor"))?;
    let kind_node = fields.require("type")?;
    let kind = kind_node.text(&format!("{what}: postprocessor type"))?;
    let what = format!("{what}: postprocessor `{kind}`");
    let line = node.line;
    let mapping = |fields: &mut Fields<'_>| -> Result<Vec<Entry>, Fault> {
        let mapping = fields
            .require("mapping")?
            .text_map(&format!("{what}: mapping"))?;
        if mapping.is_empty() {
            return Err(Fault::new(line, format!("{what}: `mapping` is empty")));
        }
        Ok(mapping)
    };
    let post = match kind.as_str() {
        "var/jsonpath" => PostSpec::JsonPath {
            line,
            mapping: mapping(&mut fields)?,
        },
        "var/xpath" => PostSpec::XPath {
            line,
            mapping: mapping(&mut fields)?,
        },
        "var/header" => PostSpec::Header {
            line,
            mapping: mapping(&mut fields)?,
        },
        "assert/response" => PostSpec::Assert(assert(&mut fields, line, &what)?),
        other => {
            return Err(Fault::new(
                kind_node.line,
                format!(
                    "{what}: unknown postprocessor type `{other}`: expected `var/jsonpath`, \
                     `var/xpath`, `var/header` or `assert/response`"
                ),
            ))
        }
    };
    let allowed: &[&str] = match post {
        PostSpec::Assert(_) => &["type", "headers", "body", "status_code", "size"],
        _ => &["type", "mapping"],
    };
    fields.finish(allowed)?;
    Ok(post)
}

fn assert(fields: &mut Fields<'_>, line: usize, what: &str) -> Result<AssertSpec, Fault> {
    let headers = match fields.take("headers") {
        None => Vec::new(),
        Some(node) => node.text_map(&format!("{what}: headers"))?,
    };
    let body = match fields.take("body") {
        None => Vec::new(),
        Some(node) => node.texts(&format!("{what}: body"))?,
    };
    let status_code = match fields.take("status_code") {
        None => None,
        Some(node) => {
            let code = node.int(&format!("{what}: status_code"))?;
            Some(
                u16::try_from(code)
                    .ok()
                    .filter(|c| (100..=999).contains(c))
                    .ok_or_else(|| {
                        Fault::new(
                            node.line,
                            format!("{what}: status_code {code}: expected 100 to 999"),
                        )
                    })?,
            )
        }
    };
    let size = match fields.take("size") {
        None => None,
        Some(node) => {
            let mut size = node.fields(&format!("{what}: size"))?;
            let val_node = size.require("val")?;
            let val = u64::try_from(val_node.int(&format!("{what}: size val"))?).map_err(|_| {
                Fault::new(
                    val_node.line,
                    format!("{what}: size val: expected 0 or more"),
                )
            })?;
            let op_node = size.require("op")?;
            let op = match op_node.text(&format!("{what}: size op"))?.as_str() {
                "eq" | "=" => SizeOp::Eq,
                "lt" | "<" => SizeOp::Lt,
                "gt" | ">" => SizeOp::Gt,
                other => {
                    return Err(Fault::new(
                        op_node.line,
                        format!(
                            "{what}: size op `{other}`: expected `=`, `<` or `>` (or eq, lt, gt)"
                        ),
                    ))
                }
            };
            size.finish(&["val", "op"])?;
            Some((op, val))
        }
    };
    if headers.is_empty() && body.is_empty() && status_code.is_none() && size.is_none() {
        return Err(Fault::new(
            line,
            format!("{what}: checks nothing: expected headers, body, status_code or size"),
        ));
    }
    Ok(AssertSpec {
        line,
        headers,
        body,
        status_code,
        size,
    })
}

fn scenario(node: &Node, format: Format) -> Result<ScenarioSpec, Fault> {
    let mut fields = node.fields("a scenario")?;
    let name = name(fields.require("name")?, "a scenario's name")?;
    let what = format!("scenario `{name}`");
    let weight = match fields.take("weight") {
        None => 1,
        Some(node) => {
            let weight = node.int(&format!("{what}: weight"))?;
            u64::try_from(weight)
                .ok()
                .filter(|w| (1..=MAX_WEIGHT).contains(w))
                .ok_or_else(|| {
                    Fault::new(
                        node.line,
                        format!("{what}: weight {weight}: expected 1 to {MAX_WEIGHT}"),
                    )
                })?
        }
    };
    let min_waiting_time_ms = match fields.take("min_waiting_time") {
        None => 0,
        Some(node) => {
            let ms = node.int(&format!("{what}: min_waiting_time"))?;
            u64::try_from(ms).map_err(|_| {
                Fault::new(
                    node.line,
                    format!("{what}: min_waiting_time {ms}: expected milliseconds, 0 or more"),
                )
            })?
        }
    };
    let list = fields.require("requests")?;
    let requests = list
        .list(&format!("{what}: requests"))?
        .iter()
        .map(|item| entry(item, "requests", &what))
        .collect::<Result<Vec<_>, _>>()?;
    if requests.is_empty() {
        return Err(Fault::new(
            list.line,
            format!("{what}: `requests` is empty"),
        ));
    }
    fields.finish(&spelled(SCENARIO_KEYS, &["name"], format))?;
    Ok(ScenarioSpec {
        name,
        line: node.line,
        weight,
        min_waiting_time_ms,
        requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{self, Format};

    fn yaml(text: &str) -> Result<Spec, Fault> {
        decode(&doc::read(Format::Yaml, text)?, Format::Yaml)
    }

    #[test]
    fn pandoras_yaml_example_decodes() {
        let spec = yaml(
            r#"
locals:
  my-headers: &global-headers
    Content-Type: application/json
    Useragent: Yandex
variable_sources:
  - type: "file/csv"
    name: "source_name"
    ignore_first_line: true
    delimiter: ","
    file: "file.csv"
    fields: [ "id", "name" ]
requests:
  - name: "request_name"
    uri: '/uri'
    method: POST
    headers:
      <<: *global-headers
    tag: tag
    body: '<body/>'
    preprocessor:
      mapping:
        new_var: source.source_name[next].id
    templater:
      type: text
    postprocessors:
      - type: var/jsonpath
        mapping:
          token: "$.auth_key"
scenarios:
  - name: scenario_name
    weight: 1
    min_waiting_time: 1000
    requests: [
      request_name
    ]
"#,
        )
        .unwrap();
        assert_eq!(spec.sources.len(), 1);
        let request = &spec.requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(
            request
                .headers
                .iter()
                .map(|h| h.key.as_str())
                .collect::<Vec<_>>(),
            ["Content-Type", "Useragent"]
        );
        assert_eq!(request.preprocessor[0].value, "source.source_name[next].id");
        assert!(matches!(
            request.postprocessors[0],
            PostSpec::JsonPath { .. }
        ));
        let scenario = &spec.scenarios[0];
        assert_eq!((scenario.weight, scenario.min_waiting_time_ms), (1, 1000));
        assert_eq!(scenario.requests[0].value, "request_name");
    }

    #[test]
    fn mistakes_are_errors_at_their_line() {
        let e = yaml("requests:\n  - name: a\n    uri: /\n    methd: GET\n").unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("unknown key `methd`"), "{}", e.message);
        let e = yaml("requests:\n  - name: a\n    uri: /\n    postprocessors:\n      - type: var/regex\n        mapping: {a: b}\n").unwrap_err();
        assert_eq!(e.line, 5);
        assert!(
            e.message.contains("unknown postprocessor type `var/regex`"),
            "{}",
            e.message
        );
        let e = yaml("scenarios:\n  - name: s\n    weight: 0\n    requests: [a]\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = yaml("requests:\n  - name: 'a b'\n    uri: /\n").unwrap_err();
        assert!(e.message.contains("expected letters"), "{}", e.message);
        let e = yaml("requests:\n  - name: a\n    uri: /\n    postprocessors:\n      - type: assert/response\n").unwrap_err();
        assert!(e.message.contains("checks nothing"), "{}", e.message);
        let e = yaml("requests:\n  - name: a\n    uri: /\n    postprocessors:\n      - type: assert/response\n        size: {val: 3, op: '>='}\n").unwrap_err();
        assert!(e.message.contains("size op `>=`"), "{}", e.message);
        let e = yaml("variable_sources:\n  - name: u\n    type: file/csv\n    file: a.csv\n    delimiter: ',,'\n").unwrap_err();
        assert_eq!(e.line, 5);
        let e = yaml("requests: []\nscenarios: []\n\ncalls:\n  - name: c\n").unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("gRPC"), "{}", e.message);
    }

    #[test]
    fn an_unknown_key_lists_the_keys_as_the_file_spells_them() {
        let hcl = |text: &str| decode(&doc::read(Format::Hcl, text)?, Format::Hcl);
        let e = hcl("request \"a\" {\n  uri = \"/\"\n  bogus = 1\n}\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(
            e.message,
            "a request: unknown key `bogus`; expected one of `method`, `uri`, `headers`, `tag`, \
             `body`, `templater`, `preprocessor`, `postprocessor \"type\" { ... }`"
        );
        let e = yaml("requests:\n  - name: a\n    uri: /\n    bogus: 1\n").unwrap_err();
        assert!(e.message.contains("`name`, `method`"), "{}", e.message);
        assert!(e.message.ends_with("`postprocessors`"), "{}", e.message);
    }

    #[test]
    fn an_assertion_reads_all_its_checks() {
        let spec = yaml(
            "requests:\n  - name: a\n    uri: /\n    postprocessors:\n      - type: assert/response\n        \
             headers: {Content-Type: json}\n        body: [token]\n        status_code: 200\n        \
             size: {val: 10, op: gt}\n",
        )
        .unwrap();
        let PostSpec::Assert(assert) = &spec.requests[0].postprocessors[0] else {
            panic!()
        };
        assert_eq!(assert.status_code, Some(200));
        assert_eq!(assert.size, Some((SizeOp::Gt, 10)));
        assert_eq!(assert.body, ["token"]);
        assert_eq!(assert.headers[0].value, "json");
    }
}
