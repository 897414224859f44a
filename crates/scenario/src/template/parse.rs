//! Parsing Go's text/template syntax, the part of it scenario templates use:
//! text and `{{ actions }}`, each a pipeline of commands (`a | f b`), whose
//! operands are fields (`.request.auth.postprocessor.token`, also with
//! Pandora's indexes, `.source.users[next].id`), literals (`"text"`,
//! `` `raw` ``, `42`, `1.5`, `true`) and parenthesised pipelines; comments
//! (`{{/* ... */}}`) and trim markers (`{{-`, `-}}`). Control structures
//! (`if`, `range`, `with`, ...) and template variables (`$x`) are refused
//! with a message that says so, never half-read.

use crate::path::{self, PathText};

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ast {
    pub pieces: Vec<AstPiece>,
}

/// Text, or an action with its source text (for messages).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AstPiece {
    Text(String),
    Action { pipeline: Pipeline, text: String },
}

/// `command | command | ...`: each command's result is the next one's last argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pipeline {
    pub commands: Vec<Command>,
}

/// A function and its arguments, or a single operand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Command {
    pub operands: Vec<Operand>,
}

/// An operand of a command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Field(PathText),
    /// A function's name.
    Ident(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Sub(Pipeline),
}

/// What Go's templates have that tank's do not, and why a template using it is refused.
const UNSUPPORTED: &[&str] = &[
    "if", "else", "end", "range", "with", "define", "template", "block", "break", "continue",
];

/// Deepest nesting of parenthesised pipelines.
const MAX_DEPTH: usize = 16;

/// Parse `text`. An error says what was expected, and at which character.
pub(crate) fn parse(text: &str) -> Result<Ast, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    let mut consumed = 0;
    let mut trim_next = false;
    while !rest.is_empty() {
        let Some(open) = rest.find("{{") else {
            push_text(&mut pieces, rest, trim_next, false);
            break;
        };
        let after = &rest[open + 2..];
        let trim_left = after.starts_with("- ")
            || after.starts_with("-\t")
            || after.starts_with("-\n")
            || after.starts_with("-\r");
        push_text(&mut pieces, &rest[..open], trim_next, trim_left);
        let body_start = open + 2 + if trim_left { 2 } else { 0 };
        let at = consumed + open;
        let mut lexer = Lexer {
            text: rest,
            pos: body_start,
            base: consumed,
        };
        lexer.skip_space();
        if lexer.rest().starts_with("/*") {
            let Some(close) = lexer.rest().find("*/") else {
                return Err(format!("an unclosed comment at character {}", at + 1));
            };
            lexer.pos += close + 2;
            lexer.skip_space();
            let (end, trim_right) = lexer.close().ok_or_else(|| {
                format!("a comment at character {} must end with `*/}}}}`", at + 1)
            })?;
            trim_next = trim_right;
            consumed += end;
            rest = &rest[end..];
            continue;
        }
        let pipeline = lexer.pipeline(0)?;
        let (end, trim_right) = lexer.close().ok_or_else(|| {
            format!(
                "the action at character {} does not end with `}}}}` where expected (at character {})",
                at + 1,
                lexer.base + lexer.pos + 1
            )
        })?;
        pieces.push(AstPiece::Action {
            pipeline,
            text: rest[open..end].to_owned(),
        });
        trim_next = trim_right;
        consumed += end;
        rest = &rest[end..];
    }
    Ok(Ast { pieces })
}

fn push_text(pieces: &mut Vec<AstPiece>, text: &str, trim_start: bool, trim_end: bool) {
    let mut text = text;
    if trim_start {
        text = text.trim_start();
    }
    if trim_end {
        text = text.trim_end();
    }
    if text.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(AstPiece::Text(last)) => last.push_str(text),
        _ => pieces.push(AstPiece::Text(text.to_owned())),
    }
}

struct Lexer<'t> {
    /// The text from the action's piece on.
    text: &'t str,
    pos: usize,
    /// Where `text` starts in the whole template.
    base: usize,
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn error(&self, message: &str) -> String {
        format!("{message} (at character {})", self.base + self.pos + 1)
    }

    /// At the action's end: the offset after `}}` and whether it trims what follows.
    fn close(&mut self) -> Option<(usize, bool)> {
        let rest = self.rest();
        if let Some(after) = rest.strip_prefix("-}}") {
            let _ = after;
            return Some((self.pos + 3, true));
        }
        rest.starts_with("}}").then_some((self.pos + 2, false))
    }

    fn at_close(&self) -> bool {
        let rest = self.rest();
        rest.starts_with("}}") || rest.starts_with("-}}") || rest.is_empty()
    }

    fn pipeline(&mut self, depth: usize) -> Result<Pipeline, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("parentheses nested too deeply"));
        }
        let mut commands = vec![self.command(depth)?];
        loop {
            self.skip_space();
            if self.rest().starts_with('|') {
                self.pos += 1;
                commands.push(self.command(depth)?);
            } else {
                return Ok(Pipeline { commands });
            }
        }
    }

    fn command(&mut self, depth: usize) -> Result<Command, String> {
        let mut operands = Vec::new();
        loop {
            self.skip_space();
            let rest = self.rest();
            if self.at_close() || rest.starts_with('|') || rest.starts_with(')') {
                break;
            }
            operands.push(self.operand(depth)?);
        }
        if operands.is_empty() {
            return Err(self.error("an empty command: expected a field, a value or a function"));
        }
        Ok(Command { operands })
    }

    fn operand(&mut self, depth: usize) -> Result<Operand, String> {
        let text = self.text;
        let rest = &text[self.pos..];
        let first = rest.chars().next().unwrap_or(' ');
        match first {
            '.' => self.field(),
            '$' => {
                if rest.starts_with("$.") {
                    self.pos += 1;
                    self.field()
                } else {
                    Err(self.error(
                        "template variables (`$x`, `$`) are not supported: name the value \
                         with a field (`.source...`, `.request...`)",
                    ))
                }
            }
            '"' => self.quoted().map(Operand::Str),
            '`' => {
                let Some(close) = rest[1..].find('`') else {
                    return Err(self.error("an unclosed raw string"));
                };
                let text = rest[1..1 + close].to_owned();
                self.pos += close + 2;
                Ok(Operand::Str(text))
            }
            '(' => {
                self.pos += 1;
                let inner = self.pipeline(depth + 1)?;
                self.skip_space();
                if !self.rest().starts_with(')') {
                    return Err(self.error("expected `)`"));
                }
                self.pos += 1;
                Ok(Operand::Sub(inner))
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' => self.number(),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let word = &rest[..len];
                self.pos += len;
                match word {
                    "true" => Ok(Operand::Bool(true)),
                    "false" => Ok(Operand::Bool(false)),
                    "nil" => Err(self.error("`nil` is not a value a request can hold")),
                    w if UNSUPPORTED.contains(&w) => Err(self.error(&format!(
                        "`{w}` is not supported: tank's templates print values and call \
                         functions; they have no control structures"
                    ))),
                    w => Ok(Operand::Ident(w.to_owned())),
                }
            }
            ':' | '=' => Err(self.error("assignments (`:=`, `=`) are not supported")),
            '\'' => Err(self.error("character constants are not supported: use a string")),
            other => Err(self.error(&format!("unexpected `{other}`"))),
        }
    }

    fn field(&mut self) -> Result<Operand, String> {
        let rest = self.rest();
        let mut len = 0;
        let mut in_brackets = false;
        for c in rest.chars() {
            let part = match c {
                '[' if !in_brackets => {
                    in_brackets = true;
                    true
                }
                ']' if in_brackets => {
                    in_brackets = false;
                    true
                }
                '.' => true,
                c => path::is_name_char(c) || (in_brackets && c != '}' && !c.is_whitespace()),
            };
            if !part {
                break;
            }
            len += c.len_utf8();
        }
        let text = &rest[..len];
        if text == "." {
            return Err(self.error(
                "`.` alone prints all the data: name a value (`.source...`, `.request...`)",
            ));
        }
        let parsed = path::parse(text).map_err(|m| self.error(&m))?;
        self.pos += len;
        Ok(Operand::Field(parsed))
    }

    fn quoted(&mut self) -> Result<String, String> {
        let rest = self.rest();
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\n' => break,
                '\\' => {
                    let Some((_, escaped)) = chars.next() else {
                        break;
                    };
                    match escaped {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '\'' => out.push('\''),
                        'a' => out.push('\u{7}'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'v' => out.push('\u{b}'),
                        'x' | 'u' | 'U' => {
                            let digits = match escaped {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let hex: String = chars.by_ref().take(digits).map(|(_, c)| c).collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .ok()
                                .filter(|_| hex.len() == digits)
                                .and_then(char::from_u32)
                                .ok_or_else(|| {
                                    self.error(&format!("a bad escape `\\{escaped}{hex}`"))
                                })?;
                            out.push(code);
                        }
                        other => return Err(self.error(&format!("a bad escape `\\{other}`"))),
                    }
                }
                c => out.push(c),
            }
        }
        Err(self.error("an unclosed string"))
    }

    fn number(&mut self) -> Result<Operand, String> {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_alphanumeric()
                    || c == '.'
                    || c == '_'
                    || ((c == '-' || c == '+')
                        && (i == 0 || matches!(rest.as_bytes()[i - 1], b'e' | b'E'))))
            })
            .map_or(rest.len(), |(i, _)| i);
        let word = &rest[..len];
        let clean = word.replace('_', "");
        let (negative, digits) = match clean.strip_prefix('-') {
            Some(d) => (true, d.to_owned()),
            None => (false, clean.trim_start_matches('+').to_owned()),
        };
        let int = if let Some(hex) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            i64::from_str_radix(hex, 16).ok()
        } else {
            digits.parse::<i64>().ok()
        };
        let operand = match int {
            Some(n) => Operand::Int(if negative { -n } else { n }),
            None => match clean.parse::<f64>() {
                Ok(f) if f.is_finite() => Operand::Float(f),
                _ => return Err(self.error(&format!("`{word}` is not a number"))),
            },
        };
        self.pos += len;
        Ok(operand)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field(text: &str) -> Operand {
        Operand::Field(path::parse(text).unwrap())
    }

    fn single(ast: &Ast) -> &Pipeline {
        match &ast.pieces[..] {
            [AstPiece::Action { pipeline, .. }] => pipeline,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn text_and_fields() {
        let ast = parse("Bearer {{.request.auth.postprocessor.token}}!").unwrap();
        assert_eq!(ast.pieces.len(), 3);
        assert_eq!(ast.pieces[0], AstPiece::Text("Bearer ".into()));
        let AstPiece::Action { pipeline, text } = &ast.pieces[1] else {
            panic!()
        };
        assert_eq!(text, "{{.request.auth.postprocessor.token}}");
        assert_eq!(
            pipeline.commands[0].operands,
            [field("request.auth.postprocessor.token")]
        );
    }

    #[test]
    fn functions_literals_pipes_and_parentheses() {
        let ast = parse(r#"{{ randInt 200 .source.global.max }}"#).unwrap();
        assert_eq!(
            single(&ast).commands[0].operands,
            [
                Operand::Ident("randInt".into()),
                Operand::Int(200),
                field("source.global.max")
            ]
        );
        let ast = parse(r#"{{ "a b" | urlquery }}{{(len .source.u) }}{{ -3 }}{{ 0x1F }}{{ 2.5 }}"#)
            .unwrap();
        assert_eq!(ast.pieces.len(), 5);
        let AstPiece::Action { pipeline, .. } = &ast.pieces[0] else {
            panic!()
        };
        assert_eq!(pipeline.commands.len(), 2);
        assert_eq!(pipeline.commands[0].operands, [Operand::Str("a b".into())]);
        let AstPiece::Action { pipeline, .. } = &ast.pieces[2] else {
            panic!()
        };
        assert_eq!(pipeline.commands[0].operands, [Operand::Int(-3)]);
        let AstPiece::Action { pipeline, .. } = &ast.pieces[3] else {
            panic!()
        };
        assert_eq!(pipeline.commands[0].operands, [Operand::Int(31)]);
    }

    #[test]
    fn strings_unescape_and_braces_inside_strings_do_not_close() {
        let ast = parse(r#"{{ "a\"}}\n\u00e9" }}"#).unwrap();
        assert_eq!(
            single(&ast).commands[0].operands,
            [Operand::Str("a\"}}\né".into())]
        );
        let ast = parse("{{ `raw\\n` }}").unwrap();
        assert_eq!(
            single(&ast).commands[0].operands,
            [Operand::Str("raw\\n".into())]
        );
    }

    #[test]
    fn trim_markers_and_comments() {
        let ast = parse("a  {{- .source.x -}}  b {{/* gone */}}c{{- /* also */ -}} d").unwrap();
        let texts: Vec<&str> = ast
            .pieces
            .iter()
            .filter_map(|p| match p {
                AstPiece::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        // Text around a comment is one piece.
        assert_eq!(texts, ["a", "b cd"]);
    }

    #[test]
    fn what_is_not_supported_is_refused_with_a_reason() {
        for (text, says) in [
            ("{{if .source.x}}a{{end}}", "control structures"),
            ("{{range .source.x}}{{end}}", "control structures"),
            ("{{$x := 1}}", "template variables"),
            ("{{.}}", "`.` alone"),
            ("{{nil}}", "nil"),
            ("{{ .source.x ", "does not end"),
            ("{{ \"abc }}", "unclosed string"),
            ("{{/* never closed }}", "unclosed comment"),
            ("{{}}", "empty command"),
            ("{{ 'a' }}", "character constants"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn plain_text_is_one_piece() {
        assert_eq!(
            parse("no actions } here").unwrap().pieces,
            [AstPiece::Text("no actions } here".into())]
        );
        assert_eq!(parse("").unwrap().pieces, []);
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,60}") {
            let _ = parse(&text);
        }

        #[test]
        fn text_without_braces_is_kept_whole(text in "[^{}]{1,60}") {
            prop_assert_eq!(parse(&text).unwrap().pieces, vec![AstPiece::Text(text.clone())]);
        }

        #[test]
        fn actions_between_texts_keep_the_texts(a in "[a-z ]{0,10}", b in "[a-z ]{0,10}", key in "[a-z]{1,8}") {
            let text = format!("{a}{{{{.source.{key}}}}}{b}");
            let ast = parse(&text).unwrap();
            let mut printed = String::new();
            for piece in &ast.pieces {
                match piece {
                    AstPiece::Text(t) => printed.push_str(t),
                    AstPiece::Action { text, .. } => printed.push_str(text),
                }
            }
            prop_assert_eq!(printed, text);
        }
    }
}
