//! HAR 1.2 (browser and proxy exports) becomes sessions.
//!
//! Entries are read one at a time as the JSON is parsed (`log.entries[]`
//! is never held whole). Each becomes a request at its `startedDateTime`:
//!
//! - the request line is the method, the URL's path and query (no fragment)
//!   and `HTTP/1.0` if recorded so, else `HTTP/1.1` (HTTP/2 and HTTP/3
//!   exchanges are replayed over HTTP/1.1);
//! - the headers as recorded, in order, except HTTP/2 pseudo-headers
//!   (`:authority` becomes `Host` when there is no `Host`), `Content-Length`
//!   and `Transfer-Encoding` (the body is sent whole);
//! - no `Host` at all: the URL's authority;
//! - the body is `postData.text` (base64-decoded when `postData.encoding` is
//!   `base64`), with `Content-Length` set to its real length; POST, PUT and
//!   PATCH without a body get `Content-Length: 0`. A `postData` of `params`
//!   alone (as Firebug and older exporters write a form) is the form's
//!   urlencoded body; a multipart form's params cannot be made into its body
//!   (the files are not in the HAR), so it goes empty, with a warning;
//! - a WebSocket handshake (an `Upgrade: websocket` request) is replayed as
//!   the request it is, and a warning says its messages are not.
//!
//! A UTF-8 byte-order mark before the JSON (Fiddler writes one) is skipped.
//!
//! A session is one `connection` id (`--session-by connection`, the default);
//! entries with no connection id fall back to their page, and entries with
//! neither are a session each. With `--session-by page` a session is one
//! `pageref` (entries with none are a session each).

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, Read};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::ImportError;
use crate::order::{Kind, Sorter};
use crate::span::Span;
use crate::{Labels, Options, SessionBy, Warnings};

/// One HAR entry (only the fields a replay needs).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    request: HarRequest,
    #[serde(default)]
    connection: Option<String>,
    #[serde(default)]
    pageref: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HarRequest {
    method: String,
    url: String,
    #[serde(rename = "httpVersion", default)]
    http_version: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(rename = "postData", default)]
    post_data: Option<PostData>,
}

#[derive(Debug, Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Debug, Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    #[serde(default)]
    params: Vec<Param>,
}

/// A form field of a `postData` written as params.
#[derive(Debug, Deserialize)]
struct Param {
    name: String,
    #[serde(default)]
    value: String,
}

/// What was made of an entry that a warning should say.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Said {
    /// Its body was a multipart form's params: sent empty.
    multipart_params: bool,
    /// It opens a WebSocket: its messages are not replayed.
    websocket: bool,
}

/// A session so far.
struct Session {
    id: u64,
    last_at_us: u64,
}

/// An entry's number, as the span check names it.
#[derive(Debug, Clone, Copy)]
struct EntryNo(u64);

impl fmt::Display for EntryNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entry {}", self.0)
    }
}

/// Import a HAR file (see the module docs); returns each session's label,
/// which the sorted requests do not carry (a connection's first entry need
/// not be its earliest).
pub(crate) fn import(
    input: impl Read,
    path: &str,
    options: &Options,
    sorter: &mut Sorter,
    warnings: &mut Warnings,
) -> Result<Labels, ImportError> {
    let by_page = options.session_by == Some(SessionBy::Page);
    // Entries to warn of, by what: (first entry, count).
    let mut multipart = (0, 0u64);
    let mut websockets = (0, 0u64);
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut span = Span::new();
    let mut index = 0u64;
    let mut each = |entry: Entry| -> Result<(), String> {
        index += 1;
        let at_us = crate::time::parse_iso8601(&entry.started).ok_or_else(|| {
            format!(
                "entry {index}: startedDateTime `{}` is not ISO 8601 (like 2023-04-01T12:00:00.123+02:00)",
                entry.started
            )
        })?;
        span.check(at_us, &EntryNo(index))
            .map_err(|why| format!("entry {index}: startedDateTime `{}`: {why}", entry.started))?;
        let key = match (&entry.connection, &entry.pageref) {
            (Some(connection), _) if !by_page && !connection.is_empty() => {
                format!("connection {connection}")
            }
            (_, Some(page)) if !page.is_empty() => format!("page {page}"),
            _ => format!("entry {index}"),
        };
        let (bytes, said) = build(&entry.request).map_err(|why| format!("entry {index}: {why}"))?;
        for (yes, tally) in [
            (said.multipart_params, &mut multipart),
            (said.websocket, &mut websockets),
        ] {
            if yes {
                if tally.1 == 0 {
                    tally.0 = index;
                }
                tally.1 += 1;
            }
        }
        let tag = crate::tag(options.tag_by, &bytes);
        let next = sessions.len() as u64;
        let session = sessions.entry(key).or_insert(Session {
            id: next,
            last_at_us: 0,
        });
        session.last_at_us = session.last_at_us.max(at_us);
        let (label, bytes) = (None, bytes.into());
        sorter
            .push(at_us, session.id, Kind::Request { label, tag, bytes })
            .map_err(|e| e.to_string())
    };
    // serde_json reads a byte at a time: buffer it.
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    let head = input
        .fill_buf()
        .map_err(|e| ImportError::io(path, "reading", e))?;
    if head.starts_with(b"\xef\xbb\xbf") {
        input.consume(3);
    }
    let mut json = serde_json::Deserializer::from_reader(input);
    let found = Root { each: &mut each }
        .deserialize(&mut json)
        .and_then(|found| json.end().map(|()| found))
        .map_err(|e| {
            ImportError::line(
                path,
                e.line() as u64,
                format!("column {}: {e}; expected a HAR 1.2 file", e.column()),
            )
        })?;
    if !found {
        return Err(ImportError::line(
            path,
            1,
            "no `log.entries`: expected a HAR 1.2 file".into(),
        ));
    }
    if multipart.1 > 0 {
        warnings.warn(format!(
            "{path}: {} from entry {} on: a multipart form given as its params, whose body \
             (its files) the HAR does not hold: sent with an empty body",
            tank_plan::words::count(multipart.1, "request"),
            multipart.0
        ));
    }
    if websockets.1 > 0 {
        warnings.warn(format!(
            "{path}: {} from entry {} on: a WebSocket's opening handshake, replayed as that \
             request; the messages that followed it are not replayed",
            tank_plan::words::count(websockets.1, "request"),
            websockets.0
        ));
    }
    let mut ends: Vec<&Session> = sessions.values().collect();
    ends.sort_unstable_by_key(|s| s.id);
    for session in ends {
        sorter
            .push(session.last_at_us, session.id, Kind::End)
            .map_err(|e| e.at(path))?;
    }
    Ok(sessions
        .into_iter()
        .map(|(key, session)| (session.id, key.replace(['\r', '\n'], " ")))
        .collect())
}

/// The request bytes of a HAR request (see the module docs), and what a
/// warning should say of it.
fn build(request: &HarRequest) -> Result<(Vec<u8>, Said), String> {
    let mut said = Said::default();
    let (authority, target) = split_url(&request.url);
    if request.method.is_empty() || request.method.bytes().any(|b| b.is_ascii_whitespace()) {
        return Err(format!("method `{}` is not a method", request.method));
    }
    let body = match &request.post_data {
        Some(PostData {
            text: Some(text),
            encoding,
            ..
        }) if encoding.as_deref() == Some("base64") => {
            base64(text).ok_or("postData.text is not base64 though its encoding says so")?
        }
        Some(PostData {
            text: Some(text), ..
        }) => text.as_bytes().to_vec(),
        Some(PostData {
            text: None,
            params,
            mime_type,
            ..
        }) if !params.is_empty() => {
            if mime_type.to_ascii_lowercase().starts_with("multipart/") {
                said.multipart_params = true;
                Vec::new()
            } else {
                form_body(params)
            }
        }
        _ => Vec::new(),
    };
    said.websocket = request.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("upgrade") && h.value.eq_ignore_ascii_case("websocket")
    });
    let version = if request.http_version.eq_ignore_ascii_case("HTTP/1.0") {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    };
    let mut out = Vec::with_capacity(256 + body.len());
    out.extend_from_slice(request.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.push(b' ');
    out.extend_from_slice(version.as_bytes());
    out.extend_from_slice(b"\r\n");
    let has_host = request
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("host"));
    let mut host_written = has_host;
    for header in &request.headers {
        if header.name.contains(['\r', '\n']) || header.value.contains(['\r', '\n']) {
            return Err(format!("header `{}` holds a line break", header.name));
        }
        let name = header.name.as_str();
        if name.eq_ignore_ascii_case(":authority") && !host_written {
            push_header(&mut out, "Host", &header.value);
            host_written = true;
        } else if !(name.starts_with(':')
            || name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding"))
        {
            push_header(&mut out, name, &header.value);
        }
    }
    if !host_written && !authority.is_empty() {
        push_header(&mut out, "Host", authority);
    }
    if !body.is_empty() || matches!(request.method.as_str(), "POST" | "PUT" | "PATCH") {
        push_header(
            &mut out,
            "Content-Length",
            itoa::Buffer::new().format(body.len()),
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    Ok((out, said))
}

/// A form's fields as `application/x-www-form-urlencoded`, as a browser
/// sends them: `name=value` joined by `&`, each byte outside
/// `A-Za-z0-9*-._` percent-encoded and a space as `+`.
fn form_body(params: &[Param]) -> Vec<u8> {
    fn encode(out: &mut Vec<u8>, text: &str) {
        for &b in text.as_bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b),
                b' ' => out.push(b'+'),
                _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
            }
        }
    }
    let mut out = Vec::new();
    for (i, param) in params.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        encode(&mut out, &param.name);
        out.push(b'=');
        encode(&mut out, &param.value);
    }
    out
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A URL's authority and its origin-form target (path and query, no
/// fragment; an empty path is `/`).
fn split_url(url: &str) -> (&str, String) {
    let url = url.split('#').next().unwrap_or_default();
    let Some((_, rest)) = url.split_once("://") else {
        return (
            "",
            if url.is_empty() {
                "/".into()
            } else {
                url.into()
            },
        );
    };
    match rest.find(['/', '?']) {
        Some(at) if rest.as_bytes()[at] == b'/' => (&rest[..at], rest[at..].into()),
        Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
        None => (rest, "/".into()),
    }
}

/// Standard base64 (padding optional, whitespace ignored).
fn base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b if b.is_ascii_whitespace() => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The top-level object: finds `log`; says whether `log.entries` was there.
struct Root<'a, F> {
    each: &'a mut F,
}

impl<'de, F: FnMut(Entry) -> Result<(), String>> DeserializeSeed<'de> for Root<'_, F> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(Fields {
            each: self.each,
            wanted: "log",
            expecting: "a HAR file: an object with `log`",
        })
    }
}

/// An object in which the key `wanted` is descended into (`log`, then `entries`).
struct Fields<'a, F> {
    each: &'a mut F,
    wanted: &'static str,
    expecting: &'static str,
}

impl<'de, F: FnMut(Entry) -> Result<(), String>> Visitor<'de> for Fields<'_, F> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key != self.wanted {
                map.next_value::<IgnoredAny>()?;
            } else if self.wanted == "log" {
                found |= map.next_value_seed(Nested {
                    each: &mut *self.each,
                })?;
            } else {
                map.next_value_seed(Entries {
                    each: &mut *self.each,
                })?;
                found = true;
            }
        }
        Ok(found)
    }
}

/// The `log` object.
struct Nested<'a, F> {
    each: &'a mut F,
}

impl<'de, F: FnMut(Entry) -> Result<(), String>> DeserializeSeed<'de> for Nested<'_, F> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(Fields {
            each: self.each,
            wanted: "entries",
            expecting: "the HAR `log` object",
        })
    }
}

/// The `entries` array, each entry handed on as it is parsed.
struct Entries<'a, F> {
    each: &'a mut F,
}

impl<'de, F: FnMut(Entry) -> Result<(), String>> DeserializeSeed<'de> for Entries<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(Entry) -> Result<(), String>> Visitor<'de> for Entries<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the HAR `log.entries` array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<Entry>()? {
            (self.each)(entry).map_err(serde::de::Error::custom)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(har: &str, options: &Options) -> Result<Vec<crate::order::Item>, ImportError> {
        items_said(
            har.as_bytes(),
            options,
            &mut Warnings::new(0, Box::new(|_| {})),
        )
    }

    fn items_said(
        har: &[u8],
        options: &Options,
        warnings: &mut Warnings,
    ) -> Result<Vec<crate::order::Item>, ImportError> {
        let mut sorter = Sorter::new(1 << 20);
        import(har, "x.har", options, &mut sorter, warnings)?;
        let mut out = Vec::new();
        sorter
            .finish(&mut |item| {
                out.push(item);
                Ok(())
            })
            .unwrap();
        Ok(out)
    }

    const HAR: &str = r#"{"log": {"version": "1.2", "creator": {"name": "x"}, "pages": [],
      "entries": [
        {"startedDateTime": "2024-01-01T00:00:01.500Z", "connection": "7", "pageref": "p1",
         "request": {"method": "POST", "url": "https://h.example/api/x?q=1#frag", "httpVersion": "h2",
           "headers": [{"name": ":authority", "value": "h.example"}, {"name": ":method", "value": "POST"},
                       {"name": "content-type", "value": "text/plain"}, {"name": "content-length", "value": "99"}],
           "postData": {"mimeType": "text/plain", "text": "aGVsbG8=", "encoding": "base64"}},
         "response": {"status": 200}},
        {"startedDateTime": "2024-01-01T01:00:00.000+01:00", "connection": "7",
         "request": {"method": "GET", "url": "http://h.example", "httpVersion": "HTTP/1.0", "headers": []}},
        {"startedDateTime": "2024-01-01T00:00:02Z", "pageref": "p1",
         "request": {"method": "GET", "url": "http://o.example/p", "httpVersion": "HTTP/1.1",
           "headers": [{"name": "Host", "value": "o.example"}]}}
      ]}}"#;

    #[test]
    fn entries_become_requests_in_time_order_by_connection() {
        let out = items(HAR, &Options::default()).unwrap();
        let summary: Vec<(u64, u64, String)> = out
            .iter()
            .map(|i| match &i.kind {
                Kind::Request { bytes, .. } => (
                    i.at_us,
                    i.session,
                    String::from_utf8(bytes.head.clone()).unwrap(),
                ),
                Kind::End => (i.at_us, i.session, "END".into()),
            })
            .collect();
        let t0 = 1_704_067_200_000_000;
        assert_eq!(
            summary,
            [
                (t0, 0, "GET / HTTP/1.0\r\nHost: h.example\r\n\r\n".into()),
                (t0 + 1_500_000, 0, "POST /api/x?q=1 HTTP/1.1\r\nHost: h.example\r\ncontent-type: text/plain\r\nContent-Length: 5\r\n\r\nhello".into()),
                (t0 + 1_500_000, 0, "END".into()),
                (t0 + 2_000_000, 1, "GET /p HTTP/1.1\r\nHost: o.example\r\n\r\n".into()),
                (t0 + 2_000_000, 1, "END".into()),
            ]
        );
        let by_page = Options {
            session_by: Some(SessionBy::Page),
            ..Options::default()
        };
        let sessions: Vec<u64> = items(HAR, &by_page)
            .unwrap()
            .iter()
            .filter(|i| i.kind != Kind::End)
            .map(|i| i.session)
            .collect();
        assert_eq!(sessions, [1, 0, 0]);
    }

    /// The requests of `har` as text, and the warnings said.
    fn requests_and_warnings(har: &[u8]) -> (Vec<String>, Vec<String>) {
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = said.clone();
        let mut warnings =
            Warnings::new(10, Box::new(move |w| sink.lock().unwrap().push(w.into())));
        let requests = items_said(har, &Options::default(), &mut warnings)
            .unwrap()
            .into_iter()
            .filter_map(|i| match i.kind {
                Kind::Request { bytes, .. } => Some(
                    String::from_utf8([bytes.head.clone(), bytes.tail.clone()].concat()).unwrap(),
                ),
                Kind::End => None,
            })
            .collect();
        let said = said.lock().unwrap().clone();
        (requests, said)
    }

    #[test]
    fn a_form_given_as_params_is_its_urlencoded_body_and_a_bom_is_skipped() {
        let har = br#"{"log": {"entries": [
          {"startedDateTime": "2024-01-01T00:00:00Z", "request": {"method": "POST",
           "url": "http://h/f", "httpVersion": "HTTP/1.1", "headers": [],
           "postData": {"mimeType": "application/x-www-form-urlencoded",
             "params": [{"name": "date", "value": "Tue, 28 Sep 2010"}, {"name": "a&b", "value": "~x"}]}}},
          {"startedDateTime": "2024-01-01T00:00:01Z", "request": {"method": "POST",
           "url": "http://h/up", "httpVersion": "HTTP/1.1", "headers": [],
           "postData": {"mimeType": "multipart/form-data; boundary=x", "params": [{"name": "f", "fileName": "a.txt"}]}}},
          {"startedDateTime": "2024-01-01T00:00:02Z", "request": {"method": "GET",
           "url": "http://h/ws", "httpVersion": "HTTP/1.1",
           "headers": [{"name": "Upgrade", "value": "websocket"}]}}
        ]}}"#;
        // Fiddler writes a UTF-8 byte-order mark before the JSON.
        let with_bom = [&b"\xef\xbb\xbf"[..], har].concat();
        let (requests, said) = requests_and_warnings(&with_bom);
        assert_eq!(
            requests[0],
            "POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 34\r\n\r\ndate=Tue%2C+28+Sep+2010&a%26b=%7Ex"
        );
        assert!(
            requests[1].ends_with("Content-Length: 0\r\n\r\n"),
            "{}",
            requests[1]
        );
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("1 request from entry 2 on: a multipart form given as its params"),
            "{said:?}"
        );
        assert!(
            said[1].contains("1 request from entry 3 on: a WebSocket's opening handshake"),
            "{said:?}"
        );
    }

    #[test]
    fn a_file_that_is_not_har_names_the_line() {
        let err = items(
            "{\"log\": {\"entries\": [\n{\"x\": 1}]}}",
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(err.at, Some(crate::error::Location::Line(2)));
        assert!(err.to_string().contains("startedDateTime"), "{err}");
        assert!(items("{\"log\": {}}", &Options::default()).is_err());
        assert!(items("[1, 2]", &Options::default()).is_err());
    }

    #[test]
    fn urls_split_into_authority_and_target() {
        let split = |url| {
            let (authority, target) = split_url(url);
            (authority, target.to_string())
        };
        assert_eq!(
            split("https://a.b:8080/x/y?z#f"),
            ("a.b:8080", "/x/y?z".into())
        );
        assert_eq!(split("http://a.b?q"), ("a.b", "/?q".into()));
        assert_eq!(split("http://a.b"), ("a.b", "/".into()));
        assert_eq!(split("/rel"), ("", "/rel".into()));
        assert_eq!(base64("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(base64("a!"), None);
    }
}
