//! A statement's tag: its kind and the first table it names, `SELECT items`,
//! `INSERT orders`, `UPDATE stock`, so results group by query type as
//! autocases groups HTTP requests by path. Read from the text as the server's
//! lexer would skip over it (comments, quoted strings and identifiers), not
//! parsed: a kind the rules below do not know is tagged by its first word
//! alone (`SET`, `BEGIN`, `SHOW`).
//!
//! - `SELECT`: the first table after a `FROM` (none for `SELECT 1`).
//! - `INSERT`, `REPLACE`: the table after the modifiers and `INTO`.
//! - `UPDATE`: the table after the modifiers.
//! - `DELETE`: the table after `FROM` (or the first named, multi-table).
//! - `WITH`: the kind and table of the statement after the common table expressions.
//! - `CALL`: the procedure.
//! - `CREATE`, `ALTER`, `DROP`, `TRUNCATE` … `TABLE`: the table.
//!
//! A qualified name keeps its schema (`shop.items`) unless it is the
//! session's own ([`statement_in`]): in schema `shop`, `shop.items` is the
//! `items` the server reads, and one table gets one tag. Quotes are dropped.
//!
//! A main statement that reads a common table expression is tagged by the
//! table that expression reads: `WITH r AS (SELECT … FROM orders) SELECT …
//! FROM r` is `SELECT orders`, the table the load falls on.
//!
//! Tagging is on the importer's path for every command, so the text is lexed
//! only as far as the tag needs (a `SELECT`'s tokens up to its first table;
//! the string literals after it are never looked at), and a token borrows
//! its text unless a quoted part must be unescaped.

use std::borrow::Cow;
use std::iter::Peekable;

/// The longest tag written (a table name is at most 64 characters; a
/// qualified one twice that).
const MAX_TAG: usize = 160;
/// Tokens read at most: a table named further in is not looked for.
const MAX_TOKENS: usize = 4096;

/// A token of the statement's text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    /// A bare word or a quoted identifier, qualified parts joined by `.`.
    Name { text: Cow<'a, [u8]>, quoted: bool },
    /// `(`.
    Open,
    /// `)`.
    Close,
    /// Anything else (a string, a number, an operator).
    Other,
}

/// The tokens of `sql`, lazily.
struct Lexer<'a> {
    sql: &'a [u8],
    at: usize,
}

impl<'a> Lexer<'a> {
    fn skip_space_and_comments(&mut self) {
        loop {
            let rest = &self.sql[self.at..];
            match rest {
                [b, ..] if b.is_ascii_whitespace() => self.at += 1,
                [b'/', b'*', ..] => {
                    self.at += 2;
                    match find(&self.sql[self.at..], b"*/") {
                        Some(end) => self.at += end + 2,
                        None => self.at = self.sql.len(),
                    }
                }
                [b'-', b'-', b' ' | b'\t' | b'\n' | b'\r', ..] | [b'#', ..] => {
                    match self.sql[self.at..].iter().position(|&b| b == b'\n') {
                        Some(end) => self.at += end + 1,
                        None => self.at = self.sql.len(),
                    }
                }
                _ => return,
            }
        }
    }

    /// A quoted run starting at `self.at` (its quote doubled inside, or
    /// backslash-escaped in strings): its contents go to `text`, when given.
    fn quoted(&mut self, quote: u8, mut text: Option<&mut Vec<u8>>) {
        let mut keep = |b: u8| {
            if let Some(text) = text.as_deref_mut() {
                text.push(b);
            }
        };
        self.at += 1;
        while let Some(&b) = self.sql.get(self.at) {
            self.at += 1;
            if b == b'\\' && quote != b'`' {
                if let Some(&next) = self.sql.get(self.at) {
                    keep(next);
                    self.at += 1;
                }
            } else if b == quote {
                if self.sql.get(self.at) == Some(&quote) {
                    keep(quote);
                    self.at += 1;
                } else {
                    break;
                }
            } else {
                keep(b);
            }
        }
    }

    /// A name: bare words and backquoted identifiers joined by `.`; its
    /// text borrowed from the statement unless a part was quoted.
    fn name(&mut self) -> Token<'a> {
        let sql = self.sql;
        let start = self.at;
        // Built once a quoted part is met: what came before, then each part.
        let mut owned: Option<Vec<u8>> = None;
        loop {
            let part = self.at;
            match sql.get(self.at) {
                Some(b'`') => {
                    let text = owned.get_or_insert_with(|| sql[start..part].to_vec());
                    self.quoted(b'`', Some(text));
                }
                Some(&b) if is_word(b) => {
                    while sql.get(self.at).is_some_and(|b| is_word(*b)) {
                        self.at += 1;
                    }
                    if let Some(text) = owned.as_mut() {
                        text.extend_from_slice(&sql[part..self.at]);
                    }
                }
                _ => break,
            }
            if sql.get(self.at) == Some(&b'.') {
                self.at += 1;
                if let Some(text) = owned.as_mut() {
                    text.push(b'.');
                }
            } else {
                break;
            }
        }
        match owned {
            Some(text) => Token::Name {
                text: Cow::Owned(text),
                quoted: true,
            },
            None => Token::Name {
                text: Cow::Borrowed(&sql[start..self.at]),
                quoted: false,
            },
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        self.skip_space_and_comments();
        let b = *self.sql.get(self.at)?;
        Some(match b {
            b'(' => {
                self.at += 1;
                Token::Open
            }
            b')' => {
                self.at += 1;
                Token::Close
            }
            b'\'' | b'"' => {
                self.quoted(b, None);
                Token::Other
            }
            b'`' => self.name(),
            b if is_word(b) => self.name(),
            _ => {
                self.at += 1;
                Token::Other
            }
        })
    }
}

/// Whether a byte is part of a bare word: ASCII letters and digits, `_`,
/// `$`, and any byte of a multibyte character (a table, as every byte of a
/// word is asked).
const WORD: [bool; 256] = {
    let mut word = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        word[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
        b += 1;
    }
    word
};

fn is_word(b: u8) -> bool {
    WORD[usize::from(b)]
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Whether a token is the keyword `word` (uppercase), in any case; a quoted name is none.
fn is(token: &Token<'_>, word: &[u8]) -> bool {
    matches!(token, Token::Name { text, quoted: false } if text.eq_ignore_ascii_case(word))
}

/// Whether a token is one of the keywords `words`.
fn is_any(token: &Token<'_>, words: &[&[u8]]) -> bool {
    words.iter().any(|word| is(token, word))
}

/// The keyword a token is, uppercased (`None` for a quoted name or another token).
fn keyword(token: &Token<'_>) -> Option<Vec<u8>> {
    match token {
        Token::Name {
            text,
            quoted: false,
        } => Some(text.to_ascii_uppercase()),
        _ => None,
    }
}

/// The name a token is (a table), quoted or not.
fn table(token: Option<Token<'_>>) -> Option<Cow<'_, [u8]>> {
    match token? {
        Token::Name { text, .. } if !text.is_empty() => Some(text),
        _ => None,
    }
}

/// The tokens after the kind, read as far as asked.
type Rest<'a> = Peekable<std::iter::Take<Lexer<'a>>>;

/// The tag of the statement `sql` run in `schema` (the session's current
/// one; empty for none): [`statement`]'s, without the table's schema when
/// it is that one.
pub fn statement_in(sql: &[u8], schema: &[u8]) -> Vec<u8> {
    let mut tag = statement(sql);
    if schema.is_empty() {
        return tag;
    }
    if let Some(space) = tag.iter().position(|&b| b == b' ') {
        let table = &tag[space + 1..];
        if table.len() > schema.len() + 1
            && table.starts_with(schema)
            && table[schema.len()] == b'.'
        {
            tag.drain(space + 1..space + 2 + schema.len());
        }
    }
    tag
}

/// The schema a `USE` statement switches to (`None` for any other statement).
pub fn used_schema(sql: &[u8]) -> Option<Vec<u8>> {
    let mut tokens = Lexer { sql, at: 0 };
    if !is(&tokens.next()?, b"USE") {
        return None;
    }
    match tokens.next()? {
        Token::Name { text, .. } if !text.is_empty() => Some(text.into_owned()),
        _ => None,
    }
}

/// The tag of the statement `sql` (see the module docs).
pub fn statement(sql: &[u8]) -> Vec<u8> {
    statement_at(sql, CTE_DEPTH)
}

/// [`statement`], reading common table expressions `depth` deep at most
/// (nested `WITH`s and expressions read through others alike).
fn statement_at(sql: &[u8], depth: u8) -> Vec<u8> {
    let mut tokens: Rest<'_> = Lexer { sql, at: 0 }.take(MAX_TOKENS).peekable();
    // `(SELECT …) UNION …`: the kind is the first word inside.
    while tokens.next_if_eq(&Token::Open).is_some() {}
    let Some(kind) = tokens.next().as_ref().and_then(keyword) else {
        return b"QUERY".to_vec();
    };
    let name = match &kind[..] {
        b"WITH" => match depth.checked_sub(1) {
            Some(depth) => return with(tokens.collect(), depth),
            None => None,
        },
        b"SELECT" => after_keyword(tokens, b"FROM"),
        b"INSERT" | b"REPLACE" => {
            skip_words(
                &mut tokens,
                &[
                    b"LOW_PRIORITY",
                    b"DELAYED",
                    b"HIGH_PRIORITY",
                    b"IGNORE",
                    b"INTO",
                ],
            );
            table(tokens.next())
        }
        b"UPDATE" => {
            skip_words(&mut tokens, &[b"LOW_PRIORITY", b"IGNORE"]);
            table(tokens.next())
        }
        b"DELETE" => {
            skip_words(&mut tokens, &[b"LOW_PRIORITY", b"QUICK", b"IGNORE"]);
            match tokens.next() {
                Some(first) if is(&first, b"FROM") => table(tokens.next()),
                first => table(first),
            }
        }
        b"CALL" => table(tokens.next()),
        b"CREATE" | b"ALTER" | b"DROP" | b"TRUNCATE" => {
            skip_words(
                &mut tokens,
                &[
                    b"TEMPORARY",
                    b"ONLINE",
                    b"IGNORE",
                    b"UNIQUE",
                    b"FULLTEXT",
                    b"SPATIAL",
                ],
            );
            match tokens.next() {
                Some(first) if is(&first, b"TABLE") => {
                    skip_words(&mut tokens, &[b"IF", b"NOT", b"EXISTS"]);
                    table(tokens.next())
                }
                // An index's table follows its `ON`.
                Some(first) if is(&first, b"INDEX") => after_keyword(tokens, b"ON"),
                first if kind == b"TRUNCATE" => table(first),
                _ => None,
            }
        }
        _ => None,
    };
    finish(kind, name.as_deref())
}

/// How many common table expressions deep a table is looked for (one reading
/// another, or nested): a recursive one reads itself.
const CTE_DEPTH: u8 = 8;

/// The tag of a `WITH` statement, `rest` its tokens after `WITH`: the main
/// statement's, with the table a common table expression reads for the
/// expression's name, `depth` more deep at most.
fn with(rest: Vec<Token<'_>>, depth: u8) -> Vec<u8> {
    // The expressions' names and bodies, and the main statement after them (at depth 0).
    let mut ctes: Vec<(&[u8], std::ops::Range<usize>)> = Vec::new();
    let mut level = 0i32;
    let mut name: Option<&[u8]> = None;
    let mut body_start = None;
    let mut main = None;
    for (i, token) in rest.iter().enumerate() {
        match token {
            Token::Open => {
                level += 1;
                // `name AS (` opens the body (`name (a, b) AS (` a column list first).
                if level == 1 && i > 0 && is(&rest[i - 1], b"AS") {
                    body_start = Some(i + 1);
                }
            }
            Token::Close => {
                level -= 1;
                // A body's end (a column list's leaves the name for the body).
                if let (0, Some(start)) = (level, body_start) {
                    if let Some(name) = name.take() {
                        ctes.push((name, start..i));
                    }
                    body_start = None;
                }
            }
            Token::Name { text, .. } if level == 0 => {
                if is_any(
                    token,
                    &[b"SELECT", b"INSERT", b"UPDATE", b"DELETE", b"REPLACE"],
                ) {
                    main = Some(i);
                    break;
                }
                if !is_any(token, &[b"RECURSIVE", b"AS"]) {
                    name = Some(text);
                }
            }
            _ => {}
        }
    }
    let Some(main) = main else {
        return b"WITH".to_vec();
    };
    let tag = statement_from(&rest[main..], depth);
    let Some(space) = tag.iter().position(|&b| b == b' ') else {
        return tag;
    };
    let table = read_by(&tag[space + 1..], &ctes, &rest, depth);
    finish(tag[..space].to_vec(), table.as_deref())
}

/// The table that reading `name` falls on: `name` itself, or, when it is one
/// of the `ctes` (bodies in `tokens`), the table its body reads, looked up
/// `depth` times at most (`None`: a recursive one, or one reading no table).
fn read_by(
    name: &[u8],
    ctes: &[(&[u8], std::ops::Range<usize>)],
    tokens: &[Token<'_>],
    depth: u8,
) -> Option<Vec<u8>> {
    let Some((_, body)) = ctes.iter().find(|(cte, _)| cte.eq_ignore_ascii_case(name)) else {
        return Some(name.to_vec());
    };
    let depth = depth.checked_sub(1)?;
    let tag = statement_from(&tokens[body.clone()], depth);
    let space = tag.iter().position(|&b| b == b' ')?;
    read_by(&tag[space + 1..], ctes, tokens, depth)
}

/// The tag of the tokens of a statement (the main one of a `WITH`, or an
/// expression's body), reading expressions `depth` deep at most.
fn statement_from(tokens: &[Token<'_>], depth: u8) -> Vec<u8> {
    let mut sql = Vec::new();
    // Rebuilt only far enough to tag: kinds and names, in order.
    for token in tokens {
        match token {
            Token::Name { text, quoted } => {
                if *quoted {
                    sql.push(b'`');
                    for &b in text.iter() {
                        sql.push(b);
                        if b == b'`' {
                            sql.push(b'`');
                        }
                    }
                    sql.push(b'`');
                } else {
                    sql.extend_from_slice(text);
                }
            }
            Token::Open => sql.push(b'('),
            Token::Close => sql.push(b')'),
            Token::Other => sql.push(b'+'),
        }
        sql.push(b' ');
    }
    statement_at(&sql, depth)
}

/// The table after the first `word` that is followed by one.
fn after_keyword<'a>(tokens: Rest<'a>, word: &[u8]) -> Option<Cow<'a, [u8]>> {
    let mut after_word = false;
    for token in tokens {
        if after_word && matches!(&token, Token::Name { text, .. } if !text.is_empty()) {
            return table(Some(token));
        }
        after_word = is(&token, word);
    }
    None
}

/// Skip any leading `words`.
fn skip_words(tokens: &mut Rest<'_>, words: &[&[u8]]) {
    while tokens.next_if(|t| is_any(t, words)).is_some() {}
}

fn finish(kind: Vec<u8>, name: Option<&[u8]>) -> Vec<u8> {
    let mut tag = kind;
    if let Some(name) = name {
        tag.push(b' ');
        tag.extend(name.iter().map(|&b| {
            if b.is_ascii_control() || b == b' ' {
                b'_'
            } else {
                b
            }
        }));
    }
    tag.truncate(MAX_TAG);
    tag
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tag(sql: &str) -> String {
        String::from_utf8(statement(sql.as_bytes())).unwrap()
    }

    #[test]
    fn statements_are_tagged_by_kind_and_first_table() {
        let cases = [
            ("SELECT * FROM items WHERE id = 1", "SELECT items"),
            (
                "select name from `shop`.`items` i join stock s",
                "SELECT shop.items",
            ),
            ("  /* app:list */ SELECT 1", "SELECT"),
            ("SELECT a FROM (SELECT b FROM inner_t) x", "SELECT inner_t"),
            ("(SELECT a FROM t1) UNION (SELECT a FROM t2)", "SELECT t1"),
            ("SELECT 'FROM nope' FROM real_t", "SELECT real_t"),
            ("insert into orders (a) values (1)", "INSERT orders"),
            ("INSERT IGNORE INTO `order``s` VALUES (1)", "INSERT order`s"),
            ("REPLACE LOW_PRIORITY stock SET n = 1", "REPLACE stock"),
            ("UPDATE LOW_PRIORITY stock SET n = n - 1", "UPDATE stock"),
            ("DELETE FROM carts WHERE id = 3", "DELETE carts"),
            ("DELETE t1 FROM t1 JOIN t2", "DELETE t1"),
            ("WITH x AS (SELECT * FROM a) SELECT * FROM x", "SELECT a"),
            (
                "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
                "SELECT",
            ),
            (
                "with a as (select * from `shop`.orders), b as (select * from a) select * from b",
                "SELECT shop.orders",
            ),
            ("WITH a AS (SELECT 1) SELECT * FROM items", "SELECT items"),
            (
                "WITH a AS (WITH b AS (SELECT * FROM t) SELECT * FROM b) SELECT * FROM a",
                "SELECT t",
            ),
            ("CALL refresh_totals(1)", "CALL refresh_totals"),
            ("CREATE TABLE IF NOT EXISTS log (id int)", "CREATE log"),
            ("DROP TEMPORARY TABLE tmp", "DROP tmp"),
            ("TRUNCATE sessions", "TRUNCATE sessions"),
            ("CREATE INDEX i ON t (a)", "CREATE t"),
            ("create unique index k_1 on sbtest1 (k)", "CREATE sbtest1"),
            ("DROP INDEX i ON `shop`.orders", "DROP shop.orders"),
            ("CREATE INDEX dangling", "CREATE"),
            ("set autocommit=0", "SET"),
            ("BEGIN", "BEGIN"),
            ("-- a comment\nCOMMIT", "COMMIT"),
            ("# mysql comment\nshow tables", "SHOW"),
            ("", "QUERY"),
            ("'just a string'", "QUERY"),
            (
                "SELECT c FROM items WHERE note = 'an unclosed",
                "SELECT items",
            ),
            ("SELECT `a``b`.`c` FROM `` JOIN `s`.t", "SELECT"),
            ("SELECT 1 FROM `s`.`it``em` x", "SELECT s.it`em"),
            ("SELECT x FROM ( SELECT 1 ) FROM late", "SELECT late"),
            ("select 1 from shop.items", "SELECT shop.items"),
            (
                "WITH a AS (SELECT 1) UPDATE IGNORE `x`.y SET v = 1",
                "UPDATE x.y",
            ),
            ("WITH nothing", "WITH"),
            ("DELETE QUICK FROM", "DELETE"),
            ("truncate table if exists t", "TRUNCATE t"),
        ];
        for (sql, expected) in cases {
            assert_eq!(tag(sql), expected, "{sql}");
        }
    }

    #[test]
    fn expressions_are_read_through_only_so_deep() {
        // Each expression a WITH of its own, a hundred deep: bounded, not a stack overflow.
        let mut sql = "SELECT * FROM t".to_owned();
        for _ in 0..100 {
            sql = format!("WITH a AS ({sql}) SELECT * FROM a");
        }
        assert_eq!(tag(&sql), "SELECT");
        // A thousand deep: the main statement is past the tokens read.
        for _ in 0..900 {
            sql = format!("WITH a AS ({sql}) SELECT * FROM a");
        }
        assert_eq!(tag(&sql), "WITH");
        let mut sql = "SELECT * FROM t".to_owned();
        for _ in 0..3 {
            sql = format!("WITH a AS ({sql}) SELECT * FROM a");
        }
        assert_eq!(tag(&sql), "SELECT t");
    }

    #[test]
    fn the_sessions_own_schema_is_left_out_of_the_tag() {
        let tag = |sql: &str, schema: &str| {
            String::from_utf8(statement_in(sql.as_bytes(), schema.as_bytes())).unwrap()
        };
        assert_eq!(tag("SELECT * FROM shop.items", "shop"), "SELECT items");
        assert_eq!(tag("SELECT * FROM `shop`.`items`", "shop"), "SELECT items");
        assert_eq!(tag("SELECT * FROM items", "shop"), "SELECT items");
        assert_eq!(
            tag("SELECT * FROM other.items", "shop"),
            "SELECT other.items"
        );
        assert_eq!(
            tag("SELECT * FROM shopping.items", "shop"),
            "SELECT shopping.items"
        );
        assert_eq!(tag("SELECT * FROM shop.items", ""), "SELECT shop.items");
        assert_eq!(tag("SELECT 1", "shop"), "SELECT");
        assert_eq!(used_schema(b"use `shop`"), Some(b"shop".to_vec()));
        assert_eq!(used_schema(b"USE shop; "), Some(b"shop".to_vec()));
        assert_eq!(used_schema(b"SELECT 1"), None);
        assert_eq!(used_schema(b"USE"), None);
    }

    proptest! {
        #[test]
        fn any_text_gets_a_one_line_tag_without_panicking(sql in proptest::collection::vec(any::<u8>(), 0..200)) {
            let tag = statement(&sql);
            prop_assert!(!tag.is_empty());
            prop_assert!(tag.len() <= MAX_TAG);
            prop_assert!(!tag.contains(&b'\n') && !tag.contains(&b'\r'));
        }

        #[test]
        fn any_with_statement_gets_a_tag_without_panicking(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("a"), Just("b"), Just("AS"), Just("("), Just(")"), Just(","),
                    Just("SELECT"), Just("FROM"), Just("WITH"), Just("RECURSIVE"), Just("t"),
                ],
                0..40,
            ),
        ) {
            // Expressions reading each other, in any order, nested or unclosed.
            let sql = format!("WITH {}", words.join(" "));
            let tag = statement(sql.as_bytes());
            prop_assert!(!tag.is_empty() && tag.len() <= MAX_TAG);
        }

        #[test]
        fn what_follows_the_table_does_not_change_the_tag(
            table in "[a-z_]{1,12}",
            rest in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            // The lexer stops at the table: the rest is never read, so it cannot matter.
            let mut sql = format!("SELECT a, 'b' FROM {table} ").into_bytes();
            prop_assert_eq!(statement(&sql), format!("SELECT {table}").into_bytes());
            sql.extend_from_slice(&rest);
            prop_assert_eq!(statement(&sql), format!("SELECT {table}").into_bytes());
        }
    }
}
