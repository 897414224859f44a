//! The HCL spelling, read as Pandora reads it: `locals` blocks first become
//! the `local` object (a later block sees the earlier ones, and an attribute
//! the ones before it), then every other block's attributes are evaluated
//! with `local` and the functions of `hcl_funcs` (`merge()`, ...). `${...}`
//! interpolation is HCL's and happens here, once; `{{...}}` is the Go
//! template syntax the requests use at run time, and HCL leaves it alone.
//!
//! hcl-edit parses, keeping each block's and attribute's byte span (so every
//! node gets its line); hcl-rs evaluates the expressions.
//!
//! Blocks become the tree Pandora's YAML spelling has: `variable_source
//! "name" "type"` an item of `variable_sources` with `name` and `type`,
//! `request "name"` an item of `requests`, `scenario "name"` an item of
//! `scenarios`; inside a request, `postprocessor "type"` blocks the items of
//! `postprocessors`, and an unlabelled block (`templater`, `preprocessor`,
//! `size`) a mapping under its name.

use hcl::edit::structure::{Block, Structure};
use hcl::edit::Span;
use hcl::eval::{Context, Evaluate};
use hcl::Value;

use super::{hcl_funcs, Kind, Node};
use crate::error::{line_of, Fault};

/// Read an HCL scenario file.
pub(crate) fn read(text: &str) -> Result<Node, Fault> {
    let body = hcl::edit::parser::parse_body(text)
        .map_err(|e| Fault::new(e.location().line(), format!("invalid HCL: {}", e.message())))?;
    let mut ctx = Context::new();
    hcl_funcs::declare(&mut ctx);
    let mut locals = hcl::Map::new();
    let mut lists: [(&str, Vec<Node>); 3] = [
        ("variable_sources", Vec::new()),
        ("requests", Vec::new()),
        ("scenarios", Vec::new()),
    ];
    let reader = Reader { text };
    for structure in body.iter() {
        let block = match structure {
            Structure::Block(block) => block,
            Structure::Attribute(attribute) => {
                return Err(Fault::new(
                    reader.line(attribute.span()),
                    format!(
                        "`{} = ...` at the top: expected blocks (locals, variable_source, \
                         request, scenario)",
                        attribute.key.as_str()
                    ),
                ))
            }
        };
        let line = reader.line(block.span());
        let (list, labels): (usize, &[&str]) = match block.ident.as_str() {
            "locals" => {
                reader.locals(block, &mut ctx, &mut locals)?;
                continue;
            }
            "variable_source" => (0, &["name", "type"]),
            "request" => (1, &["name"]),
            "scenario" => (2, &["name"]),
            "call" => {
                return Err(Fault::new(
                    line,
                    "`call` blocks are Pandora's gRPC scenarios: tank runs HTTP scenarios \
                     (`request` blocks)",
                ))
            }
            other => {
                return Err(Fault::new(
                    line,
                    format!(
                        "unknown block `{other}`: expected locals, variable_source, request \
                         or scenario"
                    ),
                ))
            }
        };
        let node = reader.block(block, labels, &ctx, 0)?;
        lists[list].1.push(node);
    }
    let pairs = lists
        .into_iter()
        .map(|(key, items)| (key.to_owned(), Node::new(1, Kind::List(items))))
        .collect();
    Ok(Node::new(1, Kind::Map(pairs)))
}

/// Deepest nesting of blocks inside a top-level block (a postprocessor's `size` is 2).
const MAX_BLOCK_DEPTH: usize = 4;

struct Reader<'t> {
    text: &'t str,
}

impl Reader<'_> {
    fn line(&self, span: Option<std::ops::Range<usize>>) -> usize {
        span.map_or(1, |span| line_of(self.text, span.start))
    }

    /// Add a `locals` block's attributes to `local`, in order.
    fn locals(
        &self,
        block: &Block,
        ctx: &mut Context<'_>,
        locals: &mut hcl::Map<String, Value>,
    ) -> Result<(), Fault> {
        if let Some(label) = block.labels.first() {
            return Err(Fault::new(
                self.line(block.span()),
                format!("`locals` takes no label, found `{}`", label.as_str()),
            ));
        }
        for structure in block.body.iter() {
            let Structure::Attribute(attribute) = structure else {
                return Err(Fault::new(
                    self.line(structure.span()),
                    "`locals` holds attributes (`name = value`), not blocks",
                ));
            };
            let value = self.evaluate(&attribute.value, self.line(attribute.span()), ctx)?;
            locals.insert(attribute.key.as_str().to_owned(), value);
            ctx.declare_var("local", Value::Object(locals.clone()));
        }
        Ok(())
    }

    fn evaluate(
        &self,
        expression: &hcl::edit::expr::Expression,
        line: usize,
        ctx: &Context<'_>,
    ) -> Result<Value, Fault> {
        hcl::Expression::from(expression.clone())
            .evaluate(ctx)
            .map_err(|e| Fault::new(line, format!("cannot evaluate: {e}")))
    }

    /// A block as a mapping: its labels under `labels`' names, then its
    /// attributes, then its nested blocks.
    fn block(
        &self,
        block: &Block,
        labels: &[&str],
        ctx: &Context<'_>,
        depth: usize,
    ) -> Result<Node, Fault> {
        let line = self.line(block.span());
        let ident = block.ident.as_str();
        if block.labels.len() != labels.len() {
            let expected = if labels.is_empty() {
                "no label".to_owned()
            } else {
                labels
                    .iter()
                    .map(|l| format!("\"{l}\""))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return Err(Fault::new(
                line,
                format!(
                    "`{ident}` takes {expected}, found {} label(s)",
                    block.labels.len()
                ),
            ));
        }
        if depth > MAX_BLOCK_DEPTH {
            return Err(Fault::new(line, "blocks nested too deeply"));
        }
        let mut pairs: Vec<(String, Node)> = labels
            .iter()
            .zip(&block.labels)
            .map(|(name, label)| {
                (
                    (*name).to_owned(),
                    Node::new(line, Kind::Str(label.as_str().to_owned())),
                )
            })
            .collect();
        self.body(block, ctx, depth, &mut pairs)?;
        Ok(Node::new(line, Kind::Map(pairs)))
    }

    /// `block`'s body into `pairs`, which hold its labels.
    fn body(
        &self,
        block: &Block,
        ctx: &Context<'_>,
        depth: usize,
        pairs: &mut Vec<(String, Node)>,
    ) -> Result<(), Fault> {
        for structure in block.body.iter() {
            match structure {
                Structure::Attribute(attribute) => {
                    let line = self.line(attribute.span());
                    let key = attribute.key.as_str();
                    let labels = &pairs[..block.labels.len().min(pairs.len())];
                    if labels.iter().any(|(k, _)| k == key) {
                        // `name = ...` in `request "a"`: the label names it.
                        return Err(Fault::new(
                            line,
                            format!(
                                "`{key}` is the label of `{} \"{}\"` in HCL: expected no `{key}` \
                                 attribute",
                                block.ident.as_str(),
                                block
                                    .labels
                                    .iter()
                                    .map(|l| l.as_str())
                                    .collect::<Vec<_>>()
                                    .join("\" \"")
                            ),
                        ));
                    }
                    if pairs.iter().any(|(k, _)| k == key) {
                        return Err(Fault::new(line, format!("`{key}` is set twice")));
                    }
                    let value = self.evaluate(&attribute.value, line, ctx)?;
                    pairs.push((key.to_owned(), node(&value, line)));
                }
                Structure::Block(inner) => {
                    let line = self.line(inner.span());
                    let ident = inner.ident.as_str();
                    if inner.labels.is_empty() {
                        if pairs.iter().any(|(k, _)| k == ident) {
                            return Err(Fault::new(
                                line,
                                format!("only one `{ident}` block is allowed here"),
                            ));
                        }
                        let node = self.block(inner, &[], ctx, depth + 1)?;
                        pairs.push((ident.to_owned(), node));
                    } else {
                        // Labelled blocks (`postprocessor "var/jsonpath"`) are a list's items.
                        let node = self.block(inner, &["type"], ctx, depth + 1)?;
                        let list = format!("{ident}s");
                        match pairs.iter_mut().find(|(k, _)| *k == list) {
                            Some((
                                _,
                                Node {
                                    kind: Kind::List(items),
                                    ..
                                },
                            )) => items.push(node),
                            Some(_) => {
                                return Err(Fault::new(
                                    line,
                                    format!("`{list}` is set both as an attribute and as blocks"),
                                ))
                            }
                            None => pairs.push((list, Node::new(line, Kind::List(vec![node])))),
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// An evaluated value as a node, every part of it at `line`.
fn node(value: &Value, line: usize) -> Node {
    let kind = match value {
        Value::Null => Kind::Null,
        Value::Bool(b) => Kind::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) if !n.is_f64() => Kind::Int(i),
            _ => Kind::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Kind::Str(s.clone()),
        Value::Array(items) => Kind::List(items.iter().map(|v| node(v, line)).collect()),
        Value::Object(object) => Kind::Map(
            object
                .iter()
                .map(|(k, v)| (k.clone(), node(v, line)))
                .collect(),
        ),
    };
    Node::new(line, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(node: &Node) -> &[(String, Node)] {
        match &node.kind {
            Kind::Map(pairs) => pairs,
            other => panic!("not a map: {other:?}"),
        }
    }

    fn get<'a>(node: &'a Node, key: &str) -> &'a Node {
        &pairs(node).iter().find(|(k, _)| k == key).unwrap().1
    }

    #[test]
    fn locals_merge_and_blocks_become_pandoras_yaml_shape() {
        let text = r#"
locals {
  common = { Content-Type = "application/json" }
  next = "next"
}
locals {
  auth = merge(local.common, { Authorization = "Bearer {{.request.a.postprocessor.t}}" })
}
request "a" {
  method  = "POST"
  uri     = "/a"
  headers = local.auth
  preprocessor {
    mapping = { u = "source.users[${local.next}].id" }
  }
  postprocessor "var/jsonpath" {
    mapping = { t = "$.token" }
  }
  postprocessor "assert/response" {
    size {
      val = 4
      op  = ">"
    }
  }
}
scenario "s" {
  requests = ["a"]
}
"#;
        let root = read(text).unwrap();
        let Kind::List(requests) = &get(&root, "requests").kind else {
            panic!()
        };
        let a = &requests[0];
        assert_eq!(a.line, 9);
        assert_eq!(get(a, "name").kind, Kind::Str("a".into()));
        let headers = get(a, "headers");
        assert_eq!(
            get(headers, "Authorization").kind,
            Kind::Str("Bearer {{.request.a.postprocessor.t}}".into())
        );
        assert_eq!(get(headers, "Content-Type").line, 12);
        let mapping = get(get(a, "preprocessor"), "mapping");
        assert_eq!(
            get(mapping, "u").kind,
            Kind::Str("source.users[next].id".into())
        );
        let Kind::List(post) = &get(a, "postprocessors").kind else {
            panic!()
        };
        assert_eq!(post.len(), 2);
        assert_eq!(
            get(&post[1], "type").kind,
            Kind::Str("assert/response".into())
        );
        assert_eq!(get(get(&post[1], "size"), "val").kind, Kind::Int(4));
    }

    #[test]
    fn errors_name_their_line() {
        let e = read("request \"a\" {\n  uri = local.nope\n}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.starts_with("cannot evaluate"), "{}", e.message);
        let e = read("x = 1\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = read("request \"a\" {\n  uri = \n").unwrap_err();
        assert!(e.message.starts_with("invalid HCL"), "{}", e.message);
        let e = read("\n\nwidget \"a\" {}\n").unwrap_err();
        assert_eq!((e.line, e.message.contains("unknown block")), (3, true));
        let e = read("request \"a\" {\n  name = \"zz\"\n}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(
            e.message,
            "`name` is the label of `request \"a\"` in HCL: expected no `name` attribute"
        );
        let e = read("request \"a\" \"b\" {}\n").unwrap_err();
        assert!(e.message.contains("takes \"name\""), "{}", e.message);
    }
}
