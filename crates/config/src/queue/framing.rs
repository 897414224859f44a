//! `reply_delimiter` and `reply_length_prefix` (tank's own): where a reply
//! of a plain TCP protocol ends, so that a request/response protocol over raw
//! TCP (Apiary's CountDB: JSON messages ended by a NUL byte) is shot over
//! kept connections instead of one connection per request.

use crate::model::{ReplyFraming, TankType, MAX_DELIMITER};

use super::{entry_error, Layered};
use crate::convert;
use crate::error::ConfigError;

/// The queue's reply framing; either option only with `tank_type = none`,
/// and not both.
pub(super) fn read(q: &Layered<'_>, tank_type: TankType) -> Result<ReplyFraming, ConfigError> {
    let delimiter = q.entry("reply_delimiter");
    let prefix = q.entry("reply_length_prefix");
    let Some((section, entry)) = delimiter.or(prefix) else {
        return Ok(ReplyFraming::Close);
    };
    if tank_type != TankType::None {
        return Err(entry_error(
            section,
            entry,
            "reply framing is for plain TCP: it applies only to `tank_type = none` (the other \
             protocols frame their replies themselves)",
        ));
    }
    if let (Some(_), Some((section, entry))) = (delimiter, prefix) {
        return Err(entry_error(
            section,
            entry,
            "set `reply_delimiter` or `reply_length_prefix`, not both",
        ));
    }
    let text = convert::string(&entry.value)
        .map_err(|m| entry_error(section, entry, m))?
        .unwrap_or_default();
    let framing = if entry.key == "reply_delimiter" {
        unescape(&text).map(ReplyFraming::Delimiter)
    } else {
        ReplyFraming::parse(&format!("length:{}", text.trim()))
    };
    framing.map_err(|m| entry_error(section, entry, m))
}

impl ReplyFraming {
    /// A framing as `tank import --framing` writes it: `delimiter:BYTES`
    /// (escapes as `reply_delimiter`'s) or `length:N` (1, 2, 4 or 8).
    pub fn parse(spec: &str) -> Result<ReplyFraming, String> {
        match spec.split_once(':') {
            Some(("delimiter", bytes)) => unescape(bytes).map(ReplyFraming::Delimiter),
            Some(("length", width)) => match width.trim() {
                "1" => Ok(ReplyFraming::LengthPrefix(1)),
                "2" => Ok(ReplyFraming::LengthPrefix(2)),
                "4" => Ok(ReplyFraming::LengthPrefix(4)),
                "8" => Ok(ReplyFraming::LengthPrefix(8)),
                other => Err(format!(
                    "expected the length prefix's size in bytes: 1, 2, 4 or 8, found `{other}`"
                )),
            },
            _ => Err(format!(
                "expected `delimiter:BYTES` (e.g. `delimiter:\\0`) or `length:N` (N = 1, 2, 4 \
                 or 8, big-endian), found `{spec}`"
            )),
        }
    }
}

/// A delimiter as written, its escapes (`\0`, `\n`, `\r`, `\t`, `\\`,
/// `\xHH`) resolved: 1 to [`MAX_DELIMITER`] bytes.
pub(crate) fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let escaped = match bytes.next() {
            Some(b'0') => 0,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'\\') => b'\\',
            Some(b'x') => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                std::str::from_utf8(&hex)
                    .ok()
                    .filter(|h| h.len() == 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("`\\x` needs two hex digits in `{text}`"))?
            }
            other => {
                return Err(format!(
                    "unknown escape `\\{}` in `{text}`: expected \\0, \\n, \\r, \\t, \\\\ or \\xHH",
                    other.map(char::from).unwrap_or(' ')
                ))
            }
        };
        out.push(escaped);
    }
    if out.is_empty() || out.len() > MAX_DELIMITER {
        return Err(format!(
            "expected a delimiter of 1 to {MAX_DELIMITER} bytes (escapes: \\0, \\n, \\r, \\t, \\\\, \\xHH), found `{text}`"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_framings_are_parsed() {
        assert_eq!(
            ReplyFraming::parse("delimiter:\\0"),
            Ok(ReplyFraming::Delimiter(vec![0]))
        );
        assert_eq!(
            ReplyFraming::parse("length:2"),
            Ok(ReplyFraming::LengthPrefix(2))
        );
        assert!(ReplyFraming::parse("length:3").is_err());
        assert!(ReplyFraming::parse("nul")
            .unwrap_err()
            .contains("`delimiter:BYTES`"));
    }

    #[test]
    fn delimiters_are_unescaped() {
        assert_eq!(unescape("\\0"), Ok(vec![0]));
        assert_eq!(unescape("\\r\\n"), Ok(b"\r\n".to_vec()));
        assert_eq!(unescape("END\\x00"), Ok(b"END\0".to_vec()));
        assert_eq!(unescape("\0"), Ok(vec![0]));
        assert!(unescape("").is_err());
        assert!(unescape("\\q")
            .unwrap_err()
            .contains("unknown escape `\\q`"));
        assert!(unescape("\\x1").is_err());
        assert!(unescape("123456789").is_err());
    }
}
