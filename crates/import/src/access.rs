//! nginx and Apache access logs (`common` and `combined`) become sessions.
//!
//! ```text
//! $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent ["$http_referer" "$http_user_agent"] [$msec | $request_time ...]
//! ```
//!
//! A log line is written when its request *ends*. Its time is `$msec`
//! (seconds since the epoch with ms, a number above 10⁸) when the line has it,
//! else `[$time_local]` (whole seconds); with `$request_time` (a smaller
//! decimal number) the request started that much earlier. A session is one
//! client: its address, or its address and user agent (`--session-by`).
//!
//! Both clocks are checked: a `$msec` more than [`MSEC_DRIFT_US`] from the
//! line's own `[$time_local]`, a negative or malformed one, or a
//! `$request_time` longer than the time since the epoch is a bad line (a
//! warning, or an error under `--strict`), and the log as a whole spans at
//! most 366 days ([`crate::span`]).
//!
//! Requests are rebuilt as yandex-tank's `access` ammo builds them (the
//! request line's method, URI and HTTP version, then the given headers,
//! sorted; [`HeaderSet`]), with one difference: the method is kept, whatever
//! it is. Logs have no bodies, so POST, PUT and PATCH requests get
//! `Content-Length: 0`.
//!
//! A line that is not a log line (or whose request is not `METHOD URI
//! HTTP/x.y`, such as the `"-"` of a connection that sent nothing) is a
//! warning with its line number, or an error under `--strict`; never skipped
//! silently.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

use tank_plan::ammo::request::HeaderSet;

use crate::error::ImportError;
use crate::order::{Kind, Sorter};
use crate::span::Span;
use crate::warnings::Warnings;
use crate::{Labels, Options, SessionBy};

/// How far a line's `$msec` may be from its `[$time_local]` (both are the
/// time the line was written; the second is whole seconds): a day, far more
/// than any clock step, far less than a corrupt number.
pub(crate) const MSEC_DRIFT_US: u64 = 86_400_000_000;

/// One client so far.
struct Client {
    session: u64,
    last_at_us: u64,
}

/// A log line's parts that make a request.
#[derive(Debug, PartialEq, Eq)]
struct Line<'a> {
    addr: &'a str,
    /// The line began with the virtual host (`host:port`) before the address.
    vhost: bool,
    at_us: u64,
    method: &'a str,
    uri: &'a str,
    version: &'a str,
    user_agent: &'a str,
}

/// A line number, as the span check names it.
#[derive(Debug, Clone, Copy)]
struct LineNo(u64);

impl std::fmt::Display for LineNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}", self.0)
    }
}

/// Import an access log (see the module docs); returns each session's label
/// (its client), which the sorted requests do not carry: a client's first
/// line need not hold its earliest request.
pub(crate) fn import(
    input: impl Read,
    path: &str,
    options: &Options,
    sorter: &mut Sorter,
    warnings: &mut Warnings,
) -> Result<Labels, ImportError> {
    let write_error = |e: crate::order::SortError| e.at(path);
    let mut headers: Vec<String> = options.host.iter().map(|h| format!("Host: {h}")).collect();
    headers.extend(options.headers.iter().cloned());
    let no_host = !headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("host:"));
    let plain = HeaderSet::new(headers.iter().map(|h| h.as_bytes().to_vec()));
    headers.push("Content-Length: 0".into());
    let with_length = HeaderSet::new(headers.iter().map(|h| h.as_bytes().to_vec()));
    let by_agent = options.session_by == Some(SessionBy::AddrUa);

    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut span = Span::new();
    // Lines read as requests. Until the first, bad lines are held back: a
    // file that is not a log at all is one error, not a run of warnings.
    let mut requests = 0u64;
    // Requests logged as HTTP/2 or HTTP/3, rebuilt as HTTP/1.1.
    let mut upgraded = 0u64;
    // Lines whose first field is `host:port` (Apache's vhost_combined): the
    // client's address is the field after it.
    let mut vhost_lines = 0u64;
    let mut held_back: Vec<(u64, String)> = Vec::new();
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut raw = Vec::new();
    let mut number = 0u64;
    loop {
        raw.clear();
        let read = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| ImportError::io(path, "reading", e))?;
        if read == 0 {
            break;
        }
        number += 1;
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let line = match parse(text) {
            Ok(line) => line,
            Err(why) if options.strict => {
                return Err(ImportError::line(path, number, format!("{why} (--strict)")))
            }
            Err(why) if requests > 0 => {
                warnings.warn(format!("{path}:{number}: {why}; line skipped"));
                continue;
            }
            Err(why) => {
                held_back.push((number, why));
                if held_back.len() == NOT_A_LOG_AFTER {
                    return Err(not_a_log(path, held_back));
                }
                continue;
            }
        };
        if requests == 0 {
            if no_host {
                warnings.warn(format!(
                    "{path}: no --host and no Host header: the requests have none (HTTP/1.1 servers answer 400)"
                ));
            }
            for (line, why) in held_back.drain(..) {
                warnings.warn(format!("{path}:{line}: {why}; line skipped"));
            }
        }
        requests += 1;
        vhost_lines += u64::from(line.vhost);
        span.check(line.at_us, &LineNo(number))
            .map_err(|why| ImportError::line(path, number, why))?;
        let mut key = line.addr.to_string();
        if by_agent {
            key.push(' ');
            key.push_str(&line.user_agent.replace(['\r', '\n'], " "));
        }
        let next = clients.len() as u64;
        let client = clients.entry(key).or_insert(Client {
            session: next,
            last_at_us: 0,
        });
        client.last_at_us = client.last_at_us.max(line.at_us);
        let headers = if matches!(line.method, "POST" | "PUT" | "PATCH") {
            &with_length
        } else {
            &plain
        };
        // A request logged as HTTP/2 or HTTP/3 is replayed over HTTP/1.1, as
        // a HAR's is: its request line cannot say a version it is not sent in.
        let version = match line.version.split('.').next() {
            Some("2" | "3") => {
                upgraded += 1;
                "1.1"
            }
            _ => line.version,
        };
        let mut bytes = Vec::with_capacity(128);
        headers.write_request(
            &mut bytes,
            line.method.as_bytes(),
            line.uri.as_bytes(),
            version.as_bytes(),
            b"",
        );
        let tag = crate::tag(options.tag_by, &bytes);
        sorter
            .push(
                line.at_us,
                client.session,
                Kind::Request {
                    label: None,
                    tag,
                    bytes: bytes.into(),
                },
            )
            .map_err(write_error)?;
    }
    if !held_back.is_empty() {
        return Err(not_a_log(path, held_back));
    }
    if upgraded > 0 {
        warnings.warn(format!(
            "{path}: {} logged as HTTP/2 or HTTP/3 replayed over HTTP/1.1 (tank speaks them \
             apart: tank_type = http2 sends any ammo as HTTP/2)",
            tank_plan::words::count(upgraded, "request")
        ));
    }
    if vhost_lines > 0 {
        warnings.warn(format!(
            "{path}: {} begin with the virtual host (`host:port`, Apache's vhost_combined): \
             the client is the address after it",
            tank_plan::words::count(vhost_lines, "line")
        ));
    }
    // Every client's session ends after its last request.
    let mut ends: Vec<&Client> = clients.values().collect();
    ends.sort_unstable_by_key(|c| c.session);
    for client in ends {
        sorter
            .push(client.last_at_us, client.session, Kind::End)
            .map_err(write_error)?;
    }
    Ok(clients
        .into_iter()
        .map(|(key, client)| (client.session, key))
        .collect())
}

/// Whether `field` is Apache's `%v:%p`: a host name and a port.
fn is_vhost(field: &str) -> bool {
    field.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    })
}

/// Whether `field` is an IP address (a client's `%h` without name lookups).
fn is_address(field: &str) -> bool {
    field.parse::<std::net::IpAddr>().is_ok()
}

/// Bad lines before the first request that make a file not an access log.
pub(crate) const NOT_A_LOG_AFTER: usize = 100;

/// The error of a file with no access-log line among its first bad ones.
fn not_a_log(path: &str, bad: Vec<(u64, String)>) -> ImportError {
    let count = bad.len();
    let (line, why) = bad.into_iter().next().unwrap_or_default();
    let which = if count == NOT_A_LOG_AFTER {
        format!("none of its first {count} lines")
    } else {
        "none of its lines".to_string()
    };
    ImportError::line(
        path,
        line,
        format!(
            "{why}; {which} is an access-log line: expected {}",
            crate::detect::EXPECTED
        ),
    )
}

/// A quoted field starting at `text[0] == '"'`: its contents and the rest
/// after the closing quote (`\"` and `\\` are Apache's escapes).
fn quoted(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((&body[..i], &body[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

fn parse(text: &str) -> Result<Line<'_>, String> {
    let expected = "expected `ADDR - USER [TIME] \"METHOD URI HTTP/x.y\" STATUS BYTES ...`";
    let (first, rest) = text
        .split_once(' ')
        .ok_or_else(|| format!("not an access log line; {expected}"))?;
    // Apache's vhost_combined (`%v:%p %h %l %u %t …`, Debian's default for
    // other_vhosts_access.log) puts `host:port` first: the client is next.
    let (addr, rest, vhost) = match rest.split_once(' ') {
        Some((second, after)) if is_vhost(first) && is_address(second) => (second, after, true),
        _ => (first, rest, false),
    };
    let open = rest
        .find('[')
        .ok_or_else(|| format!("no [time]; {expected}"))?;
    let close = rest[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or_else(|| format!("no [time]; {expected}"))?;
    let time_local = &rest[open + 1..close];
    let logged_us = crate::time::parse_clf(time_local)
        .ok_or_else(|| format!("time `{time_local}` is not like `10/Oct/2000:13:55:36 -0700`"))?;
    let after_time = rest[close + 1..].trim_start();
    let (request, mut rest) = quoted(after_time).ok_or_else(|| {
        match after_time.split(' ').next().filter(|f| !f.is_empty()) {
            // A format with a field between the time and the request.
            Some(field) if after_time.contains('"') => format!(
                "expected the quoted request right after [time], found `{field}` first (a log \
                 format with a field there, such as $scheme, is not read); {expected}"
            ),
            _ => format!("no quoted request; {expected}"),
        }
    })?;
    let mut fields = request.split(' ').filter(|f| !f.is_empty());
    let (method, uri, proto) = match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(m), Some(u), Some(p), None) => (m, u, p),
        _ => return Err(format!("request `{request}` is not `METHOD URI HTTP/x.y`")),
    };
    let version = proto
        .strip_prefix("HTTP/")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .ok_or_else(|| format!("request `{request}` is not `METHOD URI HTTP/x.y`"))?;
    if !method
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
    {
        return Err(format!("request `{request}` has no method"));
    }
    // Status and size, then the optional quoted referer and user agent,
    // then any trailing numbers ($msec, $request_time).
    let mut plain = 0;
    let mut quotes = Vec::new();
    let mut numbers = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        if rest.starts_with('"') {
            let Some((field, after)) = quoted(rest) else {
                // A field cut short at the line's end (a user agent the
                // server truncated) after the request, status and size:
                // the request is whole, so it is kept, with what is there.
                if plain >= 2 {
                    quotes.push(&rest[1..]);
                    break;
                }
                return Err("a quoted field is not closed".to_string());
            };
            quotes.push(field);
            rest = after;
            continue;
        }
        let end = rest.find(' ').unwrap_or(rest.len());
        let field = &rest[..end];
        if plain < 2 {
            if !(field == "-" || field.bytes().all(|b| b.is_ascii_digit())) {
                return Err(format!("status or size `{field}` is not a number"));
            }
        } else {
            numbers.push(field);
        }
        plain += 1;
        rest = &rest[end..];
    }
    if plain < 2 {
        return Err(format!("no status and size; {expected}"));
    }
    let (msec, request_time) = times(&numbers)?;
    let end_us = match msec {
        Some((field, us)) if us.abs_diff(logged_us) > MSEC_DRIFT_US => {
            return Err(format!(
                "`$msec` {field} is {} from the line's [{time_local}]: expected the time the line \
                 was written, as [time] is",
                tank_plan::sessions::human_span(us.abs_diff(logged_us))
            ))
        }
        Some((_, us)) => us,
        None => logged_us,
    };
    let at_us = match request_time {
        Some((field, us)) => end_us.checked_sub(us).ok_or_else(|| {
            format!("`$request_time` {field} s is longer than the time since 1970 at its end")
        })?,
        None => end_us,
    };
    Ok(Line {
        addr,
        vhost,
        at_us,
        method,
        uri,
        version,
        user_agent: quotes.get(1).copied().unwrap_or_default(),
    })
}

/// Of the trailing fields, the first `$msec` (a decimal of 10⁸ s or more)
/// and the first `$request_time` (a smaller one), each as written and in µs.
/// A field that is not a decimal number (an address, a name) is another
/// variable of the log format and passes; a negative decimal, or a run of
/// nine or more digits with a dot that is not one, is a corrupt time.
#[allow(clippy::type_complexity)]
fn times<'a>(
    fields: &[&'a str],
) -> Result<(Option<(&'a str, u64)>, Option<(&'a str, u64)>), String> {
    let mut msec = None;
    let mut request_time = None;
    for &field in fields {
        if !field.contains('.') {
            continue;
        }
        let Some(seconds) = decimal(field) else {
            let digits = field.bytes().take_while(u8::is_ascii_digit).count();
            let negative = field.strip_prefix('-').and_then(decimal).is_some();
            if negative || (digits >= 9 && field.as_bytes().get(digits) == Some(&b'.')) {
                return Err(format!(
                    "`{field}` is not a time in seconds (expected `$msec` like 1699999980.123, \
                     or `$request_time` like 0.015)"
                ));
            }
            continue;
        };
        // A decimal of at most 20 digits: its µs fit in a u64 up to year ~586,000.
        let us = (seconds * 1e6).round();
        let us = if us < u64::MAX as f64 {
            us as u64
        } else {
            u64::MAX
        };
        if seconds >= 1e8 {
            msec.get_or_insert((field, us));
        } else {
            request_time.get_or_insert((field, us));
        }
    }
    Ok((msec, request_time))
}

/// `field` as seconds when it is `digits.digits`, nothing else.
fn decimal(field: &str) -> Option<f64> {
    let (whole, fraction) = field.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(whole) && digits(fraction))
        .then(|| field.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMBINED: &str = "10.0.0.1 - bob [10/Oct/2000:13:55:36 -0700] \"GET /a/b?x=1 HTTP/1.1\" 200 2326 \"http://r/\" \"curl/8.0\"";

    #[test]
    fn combined_line_takes_whole_seconds_from_time_local() {
        let line = parse(COMBINED).unwrap();
        assert_eq!(
            line,
            Line {
                addr: "10.0.0.1",
                vhost: false,
                at_us: 971_211_336_000_000,
                method: "GET",
                uri: "/a/b?x=1",
                version: "1.1",
                user_agent: "curl/8.0",
            }
        );
    }

    #[test]
    fn a_vhost_first_field_is_passed_over_for_the_client_address() {
        let text = format!("localhost:443 {COMBINED}");
        let line = parse(&text).unwrap();
        assert_eq!(
            (line.addr, line.vhost, line.method),
            ("10.0.0.1", true, "GET")
        );
        // A name where the address goes: not vhost_combined, the first
        // field is the client, as in any log.
        let text = format!("www.example.com:80 client.example {}", &COMBINED[9..]);
        let line = parse(&text).unwrap();
        assert_eq!((line.addr, line.vhost), ("www.example.com:80", false));
        let err =
            parse("h - - [10/Oct/2000:13:55:36 +0000] https \"GET / HTTP/1.1\" 200 1").unwrap_err();
        assert!(
            err.starts_with("expected the quoted request right after [time], found `https` first"),
            "{err}"
        );
    }

    #[test]
    fn msec_gives_sub_second_time_and_request_time_moves_to_the_start() {
        let at = |tail: &str| parse(&format!("{COMBINED} {tail}")).unwrap().at_us;
        assert_eq!(at("971211336.250"), 971_211_336_250_000);
        assert_eq!(at("971211336.250 0.050"), 971_211_336_200_000);
        assert_eq!(at("1.500"), 971_211_334_500_000);
    }

    #[test]
    fn a_time_that_disagrees_with_the_line_or_is_not_a_number_is_refused() {
        let why = |tail: &str| parse(&format!("{COMBINED} {tail}")).unwrap_err();
        assert!(
            why("99999999999999999999.000 0.001").contains("years from the line's [10/Oct/2000"),
            "{}",
            why("99999999999999999999.000 0.001")
        );
        assert!(why("971298000.000").contains("1.0 days from"));
        for bad in ["-971211336.250", "971211336..250", "971211336.2.5"] {
            assert!(why(bad).contains("is not a time in seconds"), "{bad}");
        }
        let early = "h - - [01/Jan/1970:00:00:01 +0000] \"GET / HTTP/1.1\" 200 1 5.0";
        assert!(parse(early)
            .unwrap_err()
            .contains("`$request_time` 5.0 s is longer"));
        // Other variables of a log format pass: an address, a host name.
        let text = format!("{COMBINED} 10.0.0.2 a.example 971211336.250");
        assert_eq!(parse(&text).unwrap().at_us, 971_211_336_250_000);
    }

    #[test]
    fn common_format_and_escaped_quotes() {
        let line =
            parse("::1 - - [10/Oct/2000:13:55:36 +0000] \"POST /p HTTP/1.0\" 201 -").unwrap();
        assert_eq!(
            (line.addr, line.method, line.user_agent),
            ("::1", "POST", "")
        );
        let line = parse(
            "h - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"a \\\"b\\\"\"",
        )
        .unwrap();
        assert_eq!(line.user_agent, "a \\\"b\\\"");
    }

    #[test]
    fn lines_that_are_not_requests_say_why() {
        for bad in [
            "garbage",
            "h - - [10/Oct/2000:13:55:36 +0000] \"-\" 400 0",
            "h - - [10/Oct/2000:13:55:36 +0000] \"\\x16\\x03\\x01\" 400 0",
            "h - - [99/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1\" 200 1",
            "h - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1\" OK 1",
            "h - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    fn import_log(log: &str, options: &Options) -> (Vec<crate::order::Item>, u64) {
        let mut sorter = Sorter::new(1 << 20);
        let mut warnings = Warnings::new(0, Box::new(|_| {}));
        import(log.as_bytes(), "log", options, &mut sorter, &mut warnings).unwrap();
        let mut out = Vec::new();
        sorter
            .finish(&mut |item| {
                out.push(item);
                Ok(())
            })
            .unwrap();
        (out, warnings.total())
    }

    #[test]
    fn requests_are_rebuilt_like_access_ammo_and_posts_get_an_empty_body() {
        let options = Options {
            host: Some("example.com".into()),
            headers: vec!["X-A: 1".into()],
            ..Options::default()
        };
        let log = format!(
            "{COMBINED}\nbad line\n10.0.0.2 - - [10/Oct/2000:13:55:35 -0700] \"POST /p HTTP/1.0\" 200 1\n"
        );
        let (items, warnings) = import_log(&log, &options);
        assert_eq!(warnings, 1);
        let requests: Vec<(u64, &[u8], &[u8])> = items
            .iter()
            .filter_map(|i| match &i.kind {
                Kind::Request { tag, bytes, .. } => Some((i.session, &tag[..], &bytes.head[..])),
                Kind::End => None,
            })
            .collect();
        assert_eq!(
            requests,
            [
                (
                    1,
                    &b"/p"[..],
                    &b"POST /p HTTP/1.0\r\nContent-Length: 0\r\nHost: example.com\r\nX-A: 1\r\n\r\n"[..]
                ),
                (
                    0,
                    b"/a/b",
                    b"GET /a/b?x=1 HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\n\r\n"
                ),
            ]
        );
        assert_eq!(items.iter().filter(|i| i.kind == Kind::End).count(), 2);
    }

    #[test]
    fn a_user_agent_cut_short_at_the_line_end_keeps_its_request() {
        let line = parse(
            "h - - [10/Oct/2000:13:55:36 +0000] \"GET /x HTTP/1.1\" 200 1 \"-\" \"Mozilla/5.0 (cut",
        )
        .unwrap();
        assert_eq!((line.uri, line.user_agent), ("/x", "Mozilla/5.0 (cut"));
        // Before the status and size, an unclosed quote is still a bad line.
        assert!(parse("h - - [10/Oct/2000:13:55:36 +0000] \"GET /x HTTP/1.1\" \"200 1").is_err());
    }

    #[test]
    fn a_request_logged_as_http2_is_rebuilt_as_http11_and_said() {
        let options = Options {
            host: Some("h".into()),
            ..Options::default()
        };
        let log = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /x HTTP/2.0\" 200 1\n";
        let (items, warnings) = import_log(log, &options);
        assert_eq!(warnings, 1);
        let Kind::Request { bytes, .. } = &items[0].kind else {
            panic!("{items:?}");
        };
        assert_eq!(&bytes.head[..], b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn strict_makes_a_bad_line_an_error_with_its_number() {
        let options = Options {
            strict: true,
            host: Some("h".into()),
            ..Options::default()
        };
        let mut sorter = Sorter::new(1 << 20);
        let mut warnings = Warnings::new(0, Box::new(|_| {}));
        let log = format!("{COMBINED}\n\nbad\n");
        let err = import(log.as_bytes(), "log", &options, &mut sorter, &mut warnings).unwrap_err();
        assert_eq!(err.at, Some(crate::error::Location::Line(3)));
    }
}
