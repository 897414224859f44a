//! Python `bytes`/`str` splitting and stripping rules the readers depend on.

/// Python's ASCII whitespace for `bytes.split()` / `bytes.strip()` (includes `\x0b`).
pub(super) fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Python `str.isspace()` for one character (Unicode whitespace plus the
/// separators `\x1c`..`\x1f`, which Python treats as whitespace).
pub(super) fn is_str_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python `bytes.split()`: runs of whitespace separate fields; no empty fields.
pub(super) fn split_fields(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| is_space(*b))
        .filter(|field| !field.is_empty())
}

/// Python `bytes.strip(chars)`.
pub(super) fn strip_set<'a>(bytes: &'a [u8], chars: &[u8]) -> &'a [u8] {
    let start = bytes
        .iter()
        .position(|b| !chars.contains(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !chars.contains(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// Python `bytes.strip()`.
pub(super) fn strip_space(bytes: &[u8]) -> &[u8] {
    strip_set(bytes, b" \t\n\r\x0b\x0c")
}

/// Show bytes in a message as they read in the file, so that the text can be
/// searched for there: lossy UTF-8 without the line end, quotes and
/// backslashes as they are, control and invisible characters escaped (`\t`,
/// `\r`, `\u{feff}`, `\u{a0}`), cut at 80 characters.
pub(crate) fn show(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let mut text = String::new();
    for c in String::from_utf8_lossy(bytes).chars() {
        match c {
            '"' | '\'' | '\\' => text.push(c),
            _ => text.extend(c.escape_debug()),
        }
    }
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_strip_like_python() {
        let fields: Vec<&[u8]> = split_fields(b" 12\x0btag  x\r\n").collect();
        assert_eq!(fields, [&b"12"[..], b"tag", b"x"]);
        assert_eq!(strip_set(b"[Host: x]\r\n", b"\r\n[]\t "), b"Host: x");
        assert_eq!(strip_set(b"\r\n", b"\r\n"), b"");
        assert_eq!(show(b"a\tb"), "a\\tb");
    }

    #[test]
    fn shown_text_reads_as_in_the_file() {
        // Quotes and backslashes as written, so the text can be searched for.
        assert_eq!(show(br#"card"}}"#), r#"card"}}"#);
        assert_eq!(show(br#"{\"a\": 'b'}"#), r#"{\"a\": 'b'}"#);
        // No line end.
        assert_eq!(show(b"[start]\n"), "[start]");
        assert_eq!(show(b"[start]\r\n"), "[start]");
        // Control and invisible characters escaped, inside the text too.
        assert_eq!(show(b"a\rb\x00\n"), "a\\rb\\0");
        assert_eq!(show("\u{feff}[Host: x]".as_bytes()), "\\u{feff}[Host: x]");
        assert_eq!(show("120\u{a0}put".as_bytes()), "120\\u{a0}put");
        assert_eq!(show("１２０".as_bytes()), "１２０");
        // Not UTF-8: shown lossily; long text is cut.
        assert_eq!(show(b"\xffx"), "\u{fffd}x");
        assert_eq!(show(&[b'a'; 100]), format!("{}…", "a".repeat(80)));
    }
}
