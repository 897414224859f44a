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
//! A qualified name keeps its schema (`shop.items`); quotes are dropped.

/// The longest tag written (a table name is at most 64 characters; a
/// qualified one twice that).
const MAX_TAG: usize = 160;

/// A token of the statement's text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word or a quoted identifier, qualified parts joined by `.`.
    Name { text: Vec<u8>, quoted: bool },
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
    /// backslash-escaped in strings); its contents.
    fn quoted(&mut self, quote: u8) -> Vec<u8> {
        let mut text = Vec::new();
        self.at += 1;
        while let Some(&b) = self.sql.get(self.at) {
            self.at += 1;
            if b == b'\\' && quote != b'`' {
                if let Some(&next) = self.sql.get(self.at) {
                    text.push(next);
                    self.at += 1;
                }
            } else if b == quote {
                if self.sql.get(self.at) == Some(&quote) {
                    text.push(quote);
                    self.at += 1;
                } else {
                    break;
                }
            } else {
                text.push(b);
            }
        }
        text
    }

    /// One part of a name: a bare word or a backquoted identifier.
    fn name_part(&mut self) -> Option<(Vec<u8>, bool)> {
        match self.sql.get(self.at)? {
            b'`' => Some((self.quoted(b'`'), true)),
            b if is_word(*b) => {
                let start = self.at;
                while self.sql.get(self.at).is_some_and(|b| is_word(*b)) {
                    self.at += 1;
                }
                Some((self.sql[start..self.at].to_vec(), false))
            }
            _ => None,
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
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
                self.quoted(b);
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

impl Lexer<'_> {
    fn name(&mut self) -> Token {
        let mut text = Vec::new();
        let mut quoted = false;
        while let Some((part, was_quoted)) = self.name_part() {
            text.extend_from_slice(&part);
            quoted |= was_quoted;
            if self.sql.get(self.at) == Some(&b'.') {
                self.at += 1;
                text.push(b'.');
            } else {
                break;
            }
        }
        Token::Name { text, quoted }
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The keyword a token is, uppercased (`None` for a quoted name or another token).
fn keyword(token: &Token) -> Option<Vec<u8>> {
    match token {
        Token::Name {
            text,
            quoted: false,
        } => Some(text.to_ascii_uppercase()),
        _ => None,
    }
}

/// The name a token is (a table), quoted or not.
fn table(token: Option<&Token>) -> Option<Vec<u8>> {
    match token? {
        Token::Name { text, .. } if !text.is_empty() => Some(text.clone()),
        _ => None,
    }
}

/// The tag of the statement `sql` (see the module docs).
pub fn statement(sql: &[u8]) -> Vec<u8> {
    let tokens: Vec<Token> = Lexer { sql, at: 0 }.take(4096).collect();
    // `(SELECT …) UNION …`: the kind is the first word inside.
    let mut at = tokens.iter().take_while(|t| **t == Token::Open).count();
    let Some(mut kind) = tokens.get(at).and_then(keyword) else {
        return b"QUERY".to_vec();
    };
    if kind == b"WITH" {
        // The statement after the common table expressions (at depth 0).
        let mut depth = 0i32;
        let main = tokens[at..].iter().skip(1).position(|token| {
            match token {
                Token::Open => depth += 1,
                Token::Close => depth -= 1,
                _ => {}
            }
            depth == 0
                && keyword(token).is_some_and(|k| {
                    matches!(
                        &k[..],
                        b"SELECT" | b"INSERT" | b"UPDATE" | b"DELETE" | b"REPLACE"
                    )
                })
        });
        if let Some(main) = main {
            return statement_from(&tokens[at + main + 1..]);
        }
        kind = b"WITH".to_vec();
    }
    at += 1;
    let name = match &kind[..] {
        b"SELECT" => after_keyword(&tokens[at..], b"FROM"),
        b"INSERT" | b"REPLACE" => {
            let rest = skip_words(
                &tokens[at..],
                &[
                    b"LOW_PRIORITY",
                    b"DELAYED",
                    b"HIGH_PRIORITY",
                    b"IGNORE",
                    b"INTO",
                ],
            );
            table(rest.first())
        }
        b"UPDATE" => table(skip_words(&tokens[at..], &[b"LOW_PRIORITY", b"IGNORE"]).first()),
        b"DELETE" => {
            let rest = skip_words(&tokens[at..], &[b"LOW_PRIORITY", b"QUICK", b"IGNORE"]);
            match rest.first().and_then(keyword).as_deref() {
                Some(b"FROM") => table(rest.get(1)),
                _ => table(rest.first()),
            }
        }
        b"CALL" => table(tokens.get(at)),
        b"CREATE" | b"ALTER" | b"DROP" | b"TRUNCATE" => {
            let rest = skip_words(&tokens[at..], &[b"TEMPORARY", b"ONLINE", b"IGNORE"]);
            match rest.first().and_then(keyword).as_deref() {
                Some(b"TABLE") => {
                    table(skip_words(&rest[1..], &[b"IF", b"NOT", b"EXISTS"]).first())
                }
                _ if kind == b"TRUNCATE" => table(rest.first()),
                _ => None,
            }
        }
        _ => None,
    };
    finish(kind, name)
}

/// The tag of the tokens of a statement (the main one of a `WITH`).
fn statement_from(tokens: &[Token]) -> Vec<u8> {
    let mut sql = Vec::new();
    // Rebuilt only far enough to tag: kinds and names, in order.
    for token in tokens {
        match token {
            Token::Name { text, quoted } => {
                if *quoted {
                    sql.push(b'`');
                    sql.extend(text.iter().flat_map(|&b| {
                        if b == b'`' {
                            vec![b'`', b'`']
                        } else {
                            vec![b]
                        }
                    }));
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
    statement(&sql)
}

/// The table after the first `keyword` that is followed by one.
fn after_keyword(tokens: &[Token], word: &[u8]) -> Option<Vec<u8>> {
    tokens
        .windows(2)
        .find(|pair| keyword(&pair[0]).as_deref() == Some(word) && table(Some(&pair[1])).is_some())
        .and_then(|pair| table(Some(&pair[1])))
}

/// `tokens` after any leading `words`.
fn skip_words<'t>(tokens: &'t [Token], words: &[&[u8]]) -> &'t [Token] {
    let skip = tokens
        .iter()
        .take_while(|t| keyword(t).is_some_and(|k| words.contains(&&k[..])))
        .count();
    &tokens[skip..]
}

fn finish(kind: Vec<u8>, name: Option<Vec<u8>>) -> Vec<u8> {
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
            ("WITH x AS (SELECT * FROM a) SELECT * FROM x", "SELECT x"),
            ("CALL refresh_totals(1)", "CALL refresh_totals"),
            ("CREATE TABLE IF NOT EXISTS log (id int)", "CREATE log"),
            ("DROP TEMPORARY TABLE tmp", "DROP tmp"),
            ("TRUNCATE sessions", "TRUNCATE sessions"),
            ("CREATE INDEX i ON t (a)", "CREATE"),
            ("set autocommit=0", "SET"),
            ("BEGIN", "BEGIN"),
            ("-- a comment\nCOMMIT", "COMMIT"),
            ("# mysql comment\nshow tables", "SHOW"),
            ("", "QUERY"),
            ("'just a string'", "QUERY"),
        ];
        for (sql, expected) in cases {
            assert_eq!(tag(sql), expected, "{sql}");
        }
    }

    proptest! {
        #[test]
        fn any_text_gets_a_one_line_tag_without_panicking(sql in proptest::collection::vec(any::<u8>(), 0..200)) {
            let tag = statement(&sql);
            prop_assert!(!tag.is_empty());
            prop_assert!(tag.len() <= MAX_TAG);
            prop_assert!(!tag.contains(&b'\n') && !tag.contains(&b'\r'));
        }
    }
}
