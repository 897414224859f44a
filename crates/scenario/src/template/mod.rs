//! Templates: a request's uri, header values and body, written in Go's
//! text/template syntax as Pandora's are (`{{.request.auth.postprocessor.token}}`).
//!
//! A small engine of tank's own rather than a template crate: Rust's template
//! engines (tera, minijinja, handlebars) speak other syntaxes, and none
//! resolves a field to a slot at load time. Here a template is compiled once,
//! when the scenario file is read: its text is kept, each field is resolved
//! to a source or a request's variable (and checked) by the caller's
//! [`Names`], each function looked up. Rendering then walks the pieces and
//! appends to one buffer: no parsing, no map lookups by name, no allocation
//! beyond the output's growth.
//!
//! Functions: Pandora's `randInt`, `randString`, `uuid`, and Go's `print`,
//! `len`, `index`, `urlquery`, `html` and `js`.

mod parse;

use rand::Rng;

use crate::funcs::Func;
use crate::path::PathText;
use crate::value::ValueRef;

pub(crate) use parse::parse;

/// A reference's index in the book's table of references.
pub(crate) type RefId = usize;
/// A failure reason's index in the book's table of reasons.
pub(crate) type ReasonId = usize;

/// What a template needs resolved while it is compiled.
pub(crate) trait Names {
    /// The reference `path` names, resolved and checked.
    fn reference(&mut self, path: &PathText) -> Result<RefId, String>;
    /// The reason counted when the action `text` cannot be evaluated.
    fn reason(&mut self, text: &str) -> ReasonId;
}

/// What a template needs while it renders.
pub(crate) trait Scope<'a> {
    /// The value of reference `id`, if it has one now.
    fn resolve(&mut self, id: RefId) -> Option<ValueRef<'a>>;
    /// The run's random numbers.
    fn rng(&mut self) -> &mut impl Rng;
}

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Action { op: Op, reason: ReasonId },
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Ref(RefId),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Call(TFunc, Vec<Op>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TFunc {
    Random(Func),
    Print,
    Len,
    Index,
    UrlQuery,
    Html,
    Js,
}

impl TFunc {
    fn named(name: &str) -> Option<TFunc> {
        Some(match name {
            "print" => TFunc::Print,
            "len" => TFunc::Len,
            "index" => TFunc::Index,
            "urlquery" => TFunc::UrlQuery,
            "html" => TFunc::Html,
            "js" => TFunc::Js,
            other => TFunc::Random(Func::named(other)?),
        })
    }

    /// The least and most arguments it takes.
    fn arity(self) -> (usize, usize) {
        match self {
            TFunc::Random(func) => (0, func.max_args()),
            TFunc::Len => (1, 1),
            TFunc::Index => (1, usize::MAX),
            TFunc::Print | TFunc::UrlQuery | TFunc::Html | TFunc::Js => (0, usize::MAX),
        }
    }
}

const FUNCTIONS: &str = "randInt, randString, uuid, print, len, index, urlquery, html, js";

/// A value while an action is evaluated.
#[derive(Debug, Clone)]
enum Val<'a> {
    Ref(ValueRef<'a>),
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Val<'_> {
    fn print(&self, out: &mut String) {
        match self {
            Val::Ref(value) => value.print(out),
            Val::Text(text) => out.push_str(text),
            Val::Int(n) => out.push_str(itoa::Buffer::new().format(*n)),
            Val::Float(f) => {
                use std::fmt::Write as _;
                let _ = write!(out, "{f}");
            }
            Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.print(&mut out);
        out
    }

    fn is_string(&self) -> bool {
        matches!(
            self,
            Val::Text(_)
                | Val::Ref(ValueRef::Str(_))
                | Val::Ref(ValueRef::Json(serde_json::Value::String(_)))
        )
    }
}

impl Template {
    /// Compile `text`, resolving its fields through `names`.
    pub(crate) fn compile(text: &str, names: &mut impl Names) -> Result<Template, String> {
        let ast = parse(text)?;
        let mut pieces = Vec::with_capacity(ast.pieces.len());
        for piece in ast.pieces {
            pieces.push(match piece {
                parse::AstPiece::Text(text) => Piece::Text(text),
                parse::AstPiece::Action { pipeline, text } => Piece::Action {
                    op: pipeline_op(&pipeline, names).map_err(|m| format!("`{text}`: {m}"))?,
                    reason: names.reason(&text),
                },
            });
        }
        Ok(Template { pieces })
    }

    /// Append the rendering to `out`, values HTML-escaped when `html`; on a
    /// value that cannot be had, the reason of the action that failed.
    pub(crate) fn render<'a>(
        &self,
        scope: &mut impl Scope<'a>,
        html: bool,
        out: &mut String,
    ) -> Result<(), ReasonId> {
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Action { op, reason } => {
                    let value = eval(op, scope).ok_or(*reason)?;
                    if html {
                        html_escape(&value.text(), out);
                    } else {
                        value.print(out);
                    }
                }
            }
        }
        Ok(())
    }
}

fn pipeline_op(pipeline: &parse::Pipeline, names: &mut impl Names) -> Result<Op, String> {
    let mut input: Option<Op> = None;
    for command in &pipeline.commands {
        input = Some(command_op(command, input.take(), names)?);
    }
    input.ok_or_else(|| "an empty pipeline".to_owned())
}

fn command_op(
    command: &parse::Command,
    input: Option<Op>,
    names: &mut impl Names,
) -> Result<Op, String> {
    let (first, rest) = command
        .operands
        .split_first()
        .ok_or_else(|| "an empty command".to_owned())?;
    if let parse::Operand::Ident(name) = first {
        let func = TFunc::named(name)
            .ok_or_else(|| format!("no function `{name}`: tank's templates have {FUNCTIONS}"))?;
        let mut args = rest
            .iter()
            .map(|operand| operand_op(operand, names))
            .collect::<Result<Vec<_>, _>>()?;
        args.extend(input);
        let (least, most) = func.arity();
        if args.len() < least || args.len() > most {
            return Err(format!(
                "`{name}` takes {} argument(s), given {}",
                if least == most {
                    least.to_string()
                } else if most == usize::MAX {
                    format!("at least {least}")
                } else {
                    format!("{least} to {most}")
                },
                args.len()
            ));
        }
        return Ok(Op::Call(func, args));
    }
    if !rest.is_empty() || input.is_some() {
        return Err("only a function takes arguments".to_owned());
    }
    operand_op(first, names)
}

fn operand_op(operand: &parse::Operand, names: &mut impl Names) -> Result<Op, String> {
    Ok(match operand {
        parse::Operand::Field(path) => Op::Ref(names.reference(path)?),
        parse::Operand::Ident(name) => {
            let func = TFunc::named(name).ok_or_else(|| {
                format!(
                    "no function `{name}` (a word is a function's name: quote a string, \
                     \"{name}\"; tank's templates have {FUNCTIONS})"
                )
            })?;
            if func.arity().0 > 0 {
                return Err(format!(
                    "`{name}` needs arguments: put it in parentheses with them"
                ));
            }
            Op::Call(func, Vec::new())
        }
        parse::Operand::Str(text) => Op::Str(text.clone()),
        parse::Operand::Int(n) => Op::Int(*n),
        parse::Operand::Float(f) => Op::Float(*f),
        parse::Operand::Bool(b) => Op::Bool(*b),
        parse::Operand::Sub(pipeline) => pipeline_op(pipeline, names)?,
    })
}

fn eval<'a>(op: &Op, scope: &mut impl Scope<'a>) -> Option<Val<'a>> {
    Some(match op {
        Op::Ref(id) => Val::Ref(scope.resolve(*id)?),
        Op::Str(text) => Val::Text(text.clone()),
        Op::Int(n) => Val::Int(*n),
        Op::Float(f) => Val::Float(*f),
        Op::Bool(b) => Val::Bool(*b),
        Op::Call(func, args) => {
            let args = args
                .iter()
                .map(|arg| eval(arg, scope))
                .collect::<Option<Vec<_>>>()?;
            call(*func, &args, scope)?
        }
    })
}

fn call<'a>(func: TFunc, args: &[Val<'a>], scope: &mut impl Scope<'a>) -> Option<Val<'a>> {
    Some(match func {
        TFunc::Random(func) => {
            let texts: Vec<String> = args.iter().map(Val::text).collect();
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let mut out = String::new();
            func.call(&texts, scope.rng(), &mut out).ok()?;
            Val::Text(out)
        }
        TFunc::Print => Val::Text(sprint(args)),
        TFunc::Len => Val::Int(i64::try_from(length(&args[0])?).ok()?),
        TFunc::Index => {
            let mut value = match &args[0] {
                Val::Ref(value) => *value,
                _ => return None,
            };
            for key in &args[1..] {
                value = match key {
                    Val::Int(i) => value.item(usize::try_from(*i).ok()?)?,
                    other => value.key(&other.text())?,
                };
            }
            Val::Ref(value)
        }
        TFunc::UrlQuery => Val::Text(query_escape(&sprint(args))),
        TFunc::Html => {
            let mut out = String::new();
            html_escape(&sprint(args), &mut out);
            Val::Text(out)
        }
        TFunc::Js => Val::Text(js_escape(&sprint(args))),
    })
}

/// Go's `fmt.Sprint`: operands printed one after another, a space between
/// two when neither is a string.
fn sprint(args: &[Val<'_>]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 && !arg.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        arg.print(&mut out);
    }
    out
}

fn length(value: &Val<'_>) -> Option<usize> {
    match value {
        Val::Text(text) => Some(text.len()),
        Val::Ref(ValueRef::Str(text)) => Some(text.len()),
        Val::Ref(ValueRef::Json(serde_json::Value::String(text))) => Some(text.len()),
        Val::Ref(ValueRef::Json(serde_json::Value::Object(map))) => Some(map.len()),
        Val::Ref(ValueRef::Row { table, .. }) => Some(table.fields().len()),
        Val::Ref(value) => value.items(),
        _ => None,
    }
}

/// Go's `html.EscapeString` as text/template's `html` applies it.
pub(crate) fn html_escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// Go's `url.QueryEscape`: unreserved bytes kept, space as `+`, the rest `%XX`.
fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => {
                out.push('%');
                out.push(char::from(b"0123456789ABCDEF"[usize::from(other >> 4)]));
                out.push(char::from(b"0123456789ABCDEF"[usize::from(other & 15)]));
            }
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
fn js_escape(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' | '>' | '&' | '=' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c if (c as u32) < 0x20 || c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Segment;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use serde_json::json;

    /// Names that resolve `source.<key>` to the `values`' index of that key.
    struct TestNames(Vec<&'static str>, Vec<String>);

    impl Names for TestNames {
        fn reference(&mut self, path: &PathText) -> Result<RefId, String> {
            match &path.segments[..] {
                [Segment::Key(root), Segment::Key(key)] if root == "source" => self
                    .0
                    .iter()
                    .position(|k| k == key)
                    .ok_or_else(|| format!("no source value `{key}`")),
                _ => Err(format!("unknown `{path}`")),
            }
        }

        fn reason(&mut self, text: &str) -> ReasonId {
            self.1.push(text.to_owned());
            self.1.len() - 1
        }
    }

    struct TestScope<'a>(&'a [serde_json::Value], SmallRng);

    impl<'a> Scope<'a> for TestScope<'a> {
        fn resolve(&mut self, id: RefId) -> Option<ValueRef<'a>> {
            self.0.get(id).filter(|v| !v.is_null()).map(ValueRef::Json)
        }
        fn rng(&mut self) -> &mut impl Rng {
            &mut self.1
        }
    }

    fn render(text: &str, values: &[serde_json::Value]) -> Result<String, String> {
        let mut names = TestNames(vec!["token", "list", "n", "unset", "odd"], Vec::new());
        let template = Template::compile(text, &mut names)?;
        let mut out = String::new();
        template
            .render(
                &mut TestScope(values, SmallRng::seed_from_u64(3)),
                false,
                &mut out,
            )
            .map_err(|reason| format!("failed: {}", names.1[reason]))?;
        Ok(out)
    }

    fn values() -> Vec<serde_json::Value> {
        vec![
            json!("abc"),
            json!([1, 2, 3]),
            json!(5),
            serde_json::Value::Null,
            json!("a b&c"),
        ]
    }

    #[test]
    fn fields_print_and_functions_run() {
        let v = values();
        assert_eq!(
            render("Bearer {{.source.token}}", &v).unwrap(),
            "Bearer abc"
        );
        assert_eq!(render("{{.source.list}}", &v).unwrap(), "[1,2,3]");
        assert_eq!(render("{{len .source.list}}", &v).unwrap(), "3");
        assert_eq!(render("{{index .source.list 1}}", &v).unwrap(), "2");
        assert_eq!(render("{{.source.odd | urlquery}}", &v).unwrap(), "a+b%26c");
        assert_eq!(render("{{html .source.odd}}", &v).unwrap(), "a b&amp;c");
        assert_eq!(render("{{js \"a'<\"}}", &v).unwrap(), "a\\'\\u003C");
        assert_eq!(render("{{print 1 2 \"x\" 3}}", &v).unwrap(), "1 2x3");
        let n: i64 = render("{{randInt 10 .source.n}}", &v)
            .unwrap()
            .parse()
            .unwrap();
        assert!((5..10).contains(&n));
        assert_eq!(render("{{randString 4 \"z\"}}", &v).unwrap(), "zzzz");
        assert_eq!(render("{{uuid}}", &v).unwrap().len(), 36);
        assert_eq!(render("{{ (randString 3 \"q\") | len }}", &v).unwrap(), "3");
    }

    #[test]
    fn a_value_not_set_fails_with_its_actions_reason() {
        let v = values();
        assert_eq!(
            render("a {{.source.unset}}", &v).unwrap_err(),
            "failed: {{.source.unset}}"
        );
        assert_eq!(
            render("{{index .source.list 9}}", &v).unwrap_err(),
            "failed: {{index .source.list 9}}"
        );
        assert!(render("{{randInt .source.token}}", &v).is_err());
    }

    #[test]
    fn compile_errors_name_the_action() {
        let v = values();
        for (text, says) in [
            ("{{.source.nope}}", "no source value `nope`"),
            ("{{printf \"%d\" 1}}", "no function `printf`"),
            ("{{randString 10 abcde}}", "quote a string"),
            ("{{len}}", "`len` takes 1 argument"),
            ("{{uuid 1}}", "`uuid` takes 0 argument"),
            ("{{\"a\" 1}}", "only a function takes arguments"),
            (
                "{{.source.token | .source.n}}",
                "only a function takes arguments",
            ),
        ] {
            let error = render(text, &v).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn html_templates_escape_values_not_text() {
        let mut names = TestNames(vec!["token", "list", "n", "unset", "odd"], Vec::new());
        let template = Template::compile("<b>{{.source.odd}}</b>", &mut names).unwrap();
        let v = values();
        let mut out = String::new();
        template
            .render(
                &mut TestScope(&v, SmallRng::seed_from_u64(1)),
                true,
                &mut out,
            )
            .unwrap();
        assert_eq!(out, "<b>a b&amp;c</b>");
    }
}
