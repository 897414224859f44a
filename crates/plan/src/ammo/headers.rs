//! Headers of uri and uripost ammo: one map keyed by header name (case
//! sensitive, as written), filled from the config and then from `[Name: value]`
//! lines in the file. It is never reset, so headers defined late in the file
//! also apply to the top of the file once it loops, as in the reference.

use super::pybytes::{show, strip_set, strip_space};
use super::request::HeaderSet;

/// Header name → value, in first-seen order.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderMap {
    entries: Vec<(String, String)>,
    built: Option<HeaderSet>,
}

impl HeaderMap {
    /// Start from the config's `headers` (each `Name: value`, split at the first `:`).
    pub(crate) fn from_config(headers: &[String]) -> Result<Self, String> {
        let mut map = HeaderMap::default();
        for header in headers {
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| format!("headers: `{header}` has no `:`; expected `Name: value`"))?;
            map.insert(name.trim().to_string(), value.trim().to_string());
        }
        Ok(map)
    }

    /// Apply a `[Name: value]` line from the file (the whole line, as read).
    pub(crate) fn apply_line(&mut self, line: &[u8]) -> Result<(), String> {
        let inner = strip_set(line, b"\r\n[]\t ");
        let colon = inner.iter().position(|b| *b == b':').ok_or_else(|| {
            format!(
                "header line `{}` has no `:`; expected `[Name: value]`",
                show(line)
            )
        })?;
        let text = |bytes: &[u8]| {
            std::str::from_utf8(strip_space(bytes))
                .map(str::to_string)
                .map_err(|_| format!("header line `{}` is not valid UTF-8", show(line)))
        };
        let (name, value) = (text(&inner[..colon])?, text(&inner[colon + 1..])?);
        self.insert(name, value);
        Ok(())
    }

    fn insert(&mut self, name: String, value: String) {
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) if entry.1 == value => return,
            Some(entry) => entry.1 = value,
            None => self.entries.push((name, value)),
        }
        self.built = None;
    }

    /// The current headers as a request header set (rebuilt only after a change).
    pub(crate) fn set(&mut self) -> &HeaderSet {
        let entries = &self.entries;
        self.built.get_or_insert_with(|| {
            HeaderSet::new(
                entries
                    .iter()
                    .map(|(n, v)| format!("{n}: {v}").into_bytes()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_entries_replace_by_exact_name() {
        let mut map = HeaderMap::from_config(&["Host: a".into(), " X-A :1".into()]).unwrap();
        map.apply_line(b"[Host:b]\r\n").unwrap();
        map.apply_line(b"[host: c]\n").unwrap();
        let mut out = Vec::new();
        map.set().write_request(&mut out, b"GET", b"/", b"1.0", b"");
        assert_eq!(
            out,
            b"GET / HTTP/1.0\r\nHost: b\r\nX-A: 1\r\nhost: c\r\n\r\n"
        );
    }

    #[test]
    fn header_without_colon_is_an_error() {
        assert!(HeaderMap::from_config(&["Host".into()]).is_err());
        assert!(HeaderMap::default().apply_line(b"[Host]\n").is_err());
    }
}
