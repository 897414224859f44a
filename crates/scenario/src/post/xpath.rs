//! `var/xpath`: variables from an XML or HTML body, by XPath 1.0.
//!
//! The body is read as XML when it is well-formed XML (roxmltree), else as
//! HTML the way browsers read it (html5ever, through scraper); either tree
//! becomes an sxd-document, which sxd-xpath (a complete XPath 1.0) queries.
//! Elements are named by their local names, without namespaces, so
//! `//item` finds `<ns:item>` and `<item xmlns="...">` alike (Pandora reads
//! every body as HTML, which has no namespaces either).
//!
//! One match gives its string value (an element's text, an attribute's
//! value); several give the list of them; none fails the run. An expression
//! that is not a node-set (`count(//a)`) gives its value.
//!
//! An expression is compiled, and sxd-xpath's evaluation context (its core
//! functions registered) made, once per thread rather than per reply: the
//! two cost some 50,000 instructions together, more than the evaluation
//! itself. They are kept per thread because sxd-xpath's compiled
//! expressions and contexts hold trait objects without `Send`, so the
//! book, shared by every I/O thread, cannot hold them; each thread compiles
//! an expression the first time it evaluates it (it was checked at load).

use std::cell::RefCell;
use std::collections::HashMap;

use sxd_document::dom::Element;
use sxd_document::Package;
use sxd_xpath::{Context, Factory, Value, XPath};

/// The deepest element nesting read; a deeper body fails the extraction
/// (XPath's evaluation recurses through the tree).
const MAX_DEPTH: usize = 256;

/// Check `text` as an XPath expression.
pub(crate) fn check(text: &str) -> Result<(), String> {
    match Factory::new().build(text) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!("XPath `{text}` is empty")),
        Err(e) => Err(format!(
            "XPath `{text}`: {}: expected an XPath 1.0 expression, as //div[@class='user']",
            said(&e)
        )),
    }
}

/// What a parse error says, in words: sxd-xpath prints its errors' names
/// (`EmptyPredicate`, `tokenizer error: ExpectedQuote`), split here.
fn said(error: &sxd_xpath::ParserError) -> String {
    let text = error.to_string();
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous = ' ';
    for c in text.chars() {
        if c.is_ascii_uppercase() {
            if previous.is_ascii_alphanumeric() {
                out.push(' ');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        previous = c;
    }
    out
}

/// A thread's compiled expressions (by their text) and evaluation context.
struct Compiled {
    context: Context<'static>,
    expressions: HashMap<Box<str>, XPath>,
}

thread_local! {
    static COMPILED: RefCell<Compiled> = RefCell::new(Compiled {
        context: Context::new(),
        expressions: HashMap::new(),
    });
}

/// Compile `xpath`.
fn compile(xpath: &str) -> Result<XPath, String> {
    Factory::new()
        .build(xpath)
        .map_err(|e| said(&e))?
        .ok_or_else(|| "an empty XPath".to_owned())
}

/// A body read into a document, for any number of queries.
pub(crate) struct Markup {
    package: Package,
}

impl Markup {
    /// Read `body` as XML, else as HTML.
    pub(crate) fn read(body: &[u8]) -> Result<Markup, String> {
        let text =
            std::str::from_utf8(body).map_err(|_| "the body is not UTF-8 text".to_owned())?;
        let package = Package::new();
        {
            let document = package.as_document();
            let root = document.root();
            match roxmltree::Document::parse(text) {
                Ok(xml) => xml_into(&xml, &document, root)?,
                Err(_) => html_into(text, &document, root)?,
            }
        }
        Ok(Markup { package })
    }

    /// What `xpath` finds: a string, a list of strings, or a number or a
    /// boolean; `None` when it finds no node.
    pub(crate) fn extract(&self, xpath: &str) -> Result<Option<serde_json::Value>, String> {
        let document = self.package.as_document();
        let value = COMPILED.with_borrow_mut(
            |Compiled {
                 context,
                 expressions,
             }| {
                let evaluate = |expression: &XPath| {
                    expression
                        .evaluate(context, document.root())
                        .map_err(|e| e.to_string())
                };
                if let Some(expression) = expressions.get(xpath) {
                    return evaluate(expression);
                }
                let expression = compile(xpath)?;
                let value = evaluate(&expression);
                expressions.insert(xpath.into(), expression);
                value
            },
        )?;
        Ok(match value {
            Value::Nodeset(nodes) => {
                let mut texts: Vec<serde_json::Value> = nodes
                    .document_order()
                    .iter()
                    .map(|node| serde_json::Value::String(node.string_value()))
                    .collect();
                match texts.len() {
                    0 => None,
                    1 => texts.pop(),
                    _ => Some(serde_json::Value::Array(texts)),
                }
            }
            Value::String(text) => Some(serde_json::Value::String(text)),
            Value::Number(n) => Some(
                serde_json::Number::from_f64(n)
                    .map_or(serde_json::Value::Null, serde_json::Value::Number),
            ),
            Value::Boolean(b) => Some(serde_json::Value::Bool(b)),
        })
    }
}

/// Copy the XML tree `xml` into `document`, under `root`.
fn xml_into<'d>(
    xml: &roxmltree::Document<'_>,
    document: &sxd_document::dom::Document<'d>,
    root: sxd_document::dom::Root<'d>,
) -> Result<(), String> {
    let element = |node: roxmltree::Node<'_, '_>| {
        let created = document.create_element(node.tag_name().name());
        for attribute in node.attributes() {
            created.set_attribute_value(attribute.name(), attribute.value());
        }
        created
    };
    let top = element(xml.root_element());
    root.append_child(top);
    let mut stack = vec![(xml.root_element().children(), top)];
    while let Some((children, parent)) = stack.last_mut() {
        let parent = *parent;
        match children.next() {
            None => {
                stack.pop();
            }
            Some(child) if child.is_element() => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("the body nests deeper than {MAX_DEPTH}"));
                }
                let created = element(child);
                parent.append_child(created);
                stack.push((child.children(), created));
            }
            Some(child) => {
                if let Some(text) = child.text().filter(|_| child.is_text()) {
                    parent.append_child(document.create_text(text));
                }
            }
        }
    }
    Ok(())
}

/// Read `text` as HTML into `document`, under `root`.
fn html_into<'d>(
    text: &str,
    document: &sxd_document::dom::Document<'d>,
    root: sxd_document::dom::Root<'d>,
) -> Result<(), String> {
    let html = scraper::Html::parse_document(text);
    let mut open: Vec<Element<'d>> = Vec::new();
    for edge in html.tree.root().traverse() {
        match edge {
            ego_tree::iter::Edge::Open(node) => match node.value() {
                scraper::Node::Element(element) => {
                    if open.len() >= MAX_DEPTH {
                        return Err(format!("the body nests deeper than {MAX_DEPTH}"));
                    }
                    let created = document.create_element(element.name());
                    for (name, value) in element.attrs() {
                        if !name.is_empty() {
                            created.set_attribute_value(name, value);
                        }
                    }
                    match open.last() {
                        Some(parent) => parent.append_child(created),
                        None => root.append_child(created),
                    }
                    open.push(created);
                }
                scraper::Node::Text(text) => {
                    if let Some(parent) = open.last() {
                        parent.append_child(document.create_text(text));
                    }
                }
                _ => {}
            },
            ego_tree::iter::Edge::Close(node) => {
                if node.value().is_element() {
                    open.pop();
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn extract(body: &str, xpath: &str) -> Option<serde_json::Value> {
        Markup::read(body.as_bytes())
            .unwrap()
            .extract(xpath)
            .unwrap()
    }

    #[test]
    fn xml_with_namespaces_is_queried_by_local_names() {
        let body = r#"<?xml version="1.0"?><r xmlns="urn:x"><item id="1">a</item><item id="2">b<i>c</i></item></r>"#;
        assert_eq!(extract(body, "//item[@id='2']"), Some(json!("bc")));
        assert_eq!(extract(body, "//item/@id"), Some(json!(["1", "2"])));
        assert_eq!(extract(body, "count(//item)"), Some(json!(2.0)));
        assert_eq!(extract(body, "//none"), None);
    }

    #[test]
    fn html_is_read_as_browsers_read_it() {
        let body = "<!DOCTYPE html><html><body><div class='data'>x<br>y</div><p>unclosed<div class=\"data\">z</div>";
        assert_eq!(
            extract(body, "//div[@class='data']"),
            Some(json!(["xy", "z"]))
        );
        assert_eq!(
            extract(body, "//div[@class='data'][1]/text()"),
            Some(json!(["x", "y"]))
        );
    }

    #[test]
    fn an_expression_compiled_once_reads_each_body_afresh() {
        let xpath = "//div[@class='user']";
        assert_eq!(
            extract("<div class='user'>a</div>", xpath),
            Some(json!("a"))
        );
        assert_eq!(
            extract("<p><div class='user'>b</div></p>", xpath),
            Some(json!("b"))
        );
        assert_eq!(extract("<p>none</p>", xpath), None);
        let markup = Markup::read(b"<a/>").unwrap();
        assert!(markup.extract("//a[").is_err());
        assert!(
            markup.extract("//a[").is_err(),
            "a bad expression is not kept"
        );
        assert_eq!(markup.extract("count(//a)").unwrap(), Some(json!(1.0)));
    }

    #[test]
    fn bad_expressions_and_bodies_are_errors() {
        assert!(check("//div[").is_err());
        assert_eq!(
            check("//div[@"),
            Err(
                "XPath `//div[@`: empty predicate: expected an XPath 1.0 expression, as \
                 //div[@class='user']"
                    .to_owned()
            )
        );
        for bad in ["//div[@class='x]", "//div]", "//a/", "1 +", "//*[@a=1"] {
            let error = check(bad).unwrap_err();
            let said = error.split(": ").nth(1).unwrap_or_default();
            // Words, not the parser's names of its errors.
            assert!(!said.contains(|c: char| c.is_ascii_uppercase()), "{error}");
        }
        assert!(check("//div").is_ok());
        assert!(Markup::read(&[0xff, 0xfe]).is_err());
        let deep = "<div>".repeat(MAX_DEPTH + 5);
        assert!(Markup::read(deep.as_bytes()).is_err());
        let deep_xml = format!(
            "{}{}",
            "<a>".repeat(MAX_DEPTH + 5),
            "</a>".repeat(MAX_DEPTH + 5)
        );
        assert!(Markup::read(deep_xml.as_bytes()).is_err());
    }
}
