//! Pandora's `grpc/json` ammo: one JSON object a line,
//! `{"tag": "/hello", "call": "pkg.Service.Method", "metadata": {...}, "payload": {...}}`,
//! compiled against the schema into the request the HTTP/2 gun sends.
//!
//! The request is written as HTTP/1 text, the one form every tank gun reads:
//!
//! ```text
//! POST /pkg.Service/Method HTTP/1.1
//! Host: <[grpc] authority>            (only when set; else the target's)
//! content-type: application/grpc
//! te: trailers
//! grpc-timeout: <timeout>m
//! <metadata, one header each>
//! content-length: <5 + message>
//!
//! <the gRPC frame: 0 (not compressed), the message's length (4 bytes, big
//!  endian), the message as protobuf>
//! ```
//!
//! The HTTP/2 gun turns it into HEADERS and DATA like any other request (Host
//! becomes `:authority`), once per distinct request; what is gRPC about a
//! call after that is only how its reply is read (`grpc-status`). The payload
//! is read by the proto3 JSON mapping (64-bit integers as numbers or strings,
//! enums by name or number, bytes in base64, well-known types in their JSON
//! forms); a field the message does not have is an error, as is a value of
//! the wrong type.

use std::fmt::Write as _;
use std::time::Duration;

use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, Kind, MessageDescriptor};
use serde::Deserialize;
use serde_json::Value;

use crate::schema::Schema;

/// One ammo line as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallLine {
    /// `tag`: the row's tag (none: the call's name).
    #[serde(default)]
    pub tag: Option<String>,
    /// `call`: `package.Service.Method`.
    pub call: String,
    /// `metadata`: sent as headers, in the order written.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `payload`: the request message in proto3 JSON (none: the empty message).
    #[serde(default)]
    pub payload: Option<serde_json::Value>,
}

impl CallLine {
    /// Read one line; the error says what was expected. A UTF-8 byte order
    /// mark before it (an editor's, at the start of the file) is skipped.
    pub fn parse(line: &[u8]) -> Result<CallLine, String> {
        let line = line.strip_prefix(BOM).unwrap_or(line);
        serde_json::from_slice(line).map_err(|e| {
            format!(
                "{}: expected a JSON object {{\"tag\", \"call\", \"metadata\", \"payload\"}}",
                json_error(&e)
            )
        })
    }
}

/// UTF-8's byte order mark, which some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// serde_json's message without its own ` at line 1 column N` (the caller
/// names the line), keeping the column.
fn json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => format!("{} (column {})", &text[..at], error.column()),
        None => text,
    }
}

/// A call ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The request, HTTP/1-shaped (see the module docs).
    pub request: Vec<u8>,
    /// The row's tag: the line's `tag`, else the call as written.
    pub tag: Vec<u8>,
    /// The metadata names left out, as written: HTTP/2 has no
    /// connection-specific headers (see [`CONNECTION_SPECIFIC`]).
    pub dropped: Vec<String>,
}

/// Headers HTTP/2 does not carry (RFC 9113 §8.2.2), dropped from the
/// metadata as the HTTP/2 gun drops them from any request (`te` is gRPC's
/// own, and refused). Kept in the request, `transfer-encoding: chunked`
/// would make the HTTP/2 gun read the gRPC frame as chunks, and fail.
pub const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Compiles ammo lines against a schema.
#[derive(Debug, Clone)]
pub struct Compiler {
    schema: Schema,
    authority: Option<String>,
    timeout: Duration,
}

impl Compiler {
    /// Calls of `schema`, to `authority` (`None`: the target's), each with
    /// the deadline `timeout`.
    pub fn new(schema: Schema, authority: Option<String>, timeout: Duration) -> Compiler {
        Compiler {
            schema,
            authority,
            timeout,
        }
    }

    /// The request `line` asks for. The error starts with the call's name
    /// when it is about the call (`pkg.Svc.Method: unknown field `nmae`...`).
    pub fn compile(&self, line: &CallLine) -> Result<Compiled, String> {
        let method = self.schema.method(&line.call)?;
        let call = &line.call;
        if method.is_client_streaming() {
            return Err(format!(
                "{call}: a client-streaming call: tank sends one message a call (unary and \
                 server-streaming calls)"
            ));
        }
        let options = DeserializeOptions::new().deny_unknown_fields(true);
        let payload = line
            .payload
            .clone()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        let input = method.input();
        let message =
            DynamicMessage::deserialize_with_options(input.clone(), payload.clone(), &options)
                .map_err(|e| {
                    let message = payload_error(&e.to_string(), &input, &payload);
                    format!("{call}: payload: {message}")
                })?;
        let body = message.encode_to_vec();
        let length =
            u32::try_from(body.len()).map_err(|_| format!("{call}: the message is over 4 GiB"))?;
        let mut head = format!(
            "POST /{}/{} HTTP/1.1\r\n",
            method.parent_service().full_name(),
            method.name()
        );
        if let Some(authority) = &self.authority {
            let _ = write!(head, "Host: {authority}\r\n");
        }
        head.push_str("content-type: application/grpc\r\nte: trailers\r\n");
        let _ = write!(head, "grpc-timeout: {}\r\n", grpc_timeout(self.timeout));
        let mut dropped = Vec::new();
        for (name, value) in &line.metadata {
            let value = metadata_value(call, name, value)?;
            let lower = name.to_ascii_lowercase();
            if CONNECTION_SPECIFIC.contains(&lower.as_str()) {
                dropped.push(name.clone());
                continue;
            }
            let _ = write!(head, "{lower}: {value}\r\n");
        }
        let _ = write!(head, "content-length: {}\r\n\r\n", 5 + body.len());
        let mut request = head.into_bytes();
        request.push(0);
        request.extend_from_slice(&length.to_be_bytes());
        request.extend_from_slice(&body);
        Ok(Compiled {
            request,
            tag: line.tag.as_deref().unwrap_or(call).as_bytes().to_vec(),
            dropped,
        })
    }
}

/// prost-reflect's message for a payload the request cannot hold, said for
/// a person: an unknown field is named with the fields the request has, a
/// value of the wrong type with its field's path and the type expected
/// (prost-reflect's own message names neither).
fn payload_error(message: &str, input: &MessageDescriptor, payload: &Value) -> String {
    let unknown = message
        .strip_prefix("unrecognized field name '")
        .and_then(|rest| rest.split_once('\''));
    match unknown {
        Some((name, _)) => {
            let fields: Vec<String> = input.fields().map(|f| f.json_name().to_owned()).collect();
            format!(
                "field \"{name}\" does not exist ({} has: {})",
                input.full_name(),
                fields.join(", ")
            )
        }
        None => wrong_value(input, payload, "").unwrap_or_else(|| message.to_owned()),
    }
}

/// prost-reflect's error for `value` as a message of `input`, if any.
fn rejects(input: &MessageDescriptor, value: Value) -> Option<String> {
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    DynamicMessage::deserialize_with_options(input.clone(), value, &options)
        .err()
        .map(|e| e.to_string())
}

/// The first field of `object` (a message of `input`, at `path`) whose value
/// the message cannot hold, followed into messages, lists and maps: each
/// field is tried alone, so the one at fault is found whatever the order.
fn wrong_value(input: &MessageDescriptor, object: &Value, path: &str) -> Option<String> {
    let object = object.as_object()?;
    for (key, value) in object {
        let single = |value: Value| Value::Object([(key.clone(), value)].into_iter().collect());
        let Some(detail) = rejects(input, single(value.clone())) else {
            continue;
        };
        let field = input
            .get_field_by_json_name(key)
            .or_else(|| input.get_field_by_name(key))?;
        let at = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let kind = field.kind();
        if field.is_map() {
            let entry = kind.as_message()?;
            let (key_kind, value_kind) = (
                entry.map_entry_key_field().kind(),
                entry.map_entry_value_field().kind(),
            );
            let Some(map) = value.as_object() else {
                return Some(format!(
                    "field \"{at}\": expected an object (a map: keys {}, values {}), found {}",
                    key_form(&key_kind),
                    expected(&value_kind),
                    found(value)
                ));
            };
            for (map_key, item) in map {
                let entry = Value::Object([(map_key.clone(), item.clone())].into_iter().collect());
                let Some(detail) = rejects(input, single(entry)) else {
                    continue;
                };
                if !map_key_fits(&key_kind, map_key) {
                    return Some(format!(
                        "field \"{at}\": key \"{map_key}\": expected {}",
                        key_form(&key_kind)
                    ));
                }
                return Some(value_error(
                    &value_kind,
                    item,
                    &format!("{at}[\"{map_key}\"]"),
                    &detail,
                ));
            }
        } else if field.is_list() {
            let Some(items) = value.as_array() else {
                return Some(format!(
                    "field \"{at}\": expected a list (each {}), found {}",
                    expected(&kind),
                    found(value)
                ));
            };
            for (i, item) in items.iter().enumerate() {
                if let Some(detail) = rejects(input, single(Value::Array(vec![item.clone()]))) {
                    return Some(value_error(&kind, item, &format!("{at}[{i}]"), &detail));
                }
            }
        }
        return Some(value_error(&kind, value, &at, &detail));
    }
    None
}

/// A value of `kind` at `at` that does not fit: within a message, the field
/// inside it that does not; else what was expected and found, with
/// prost-reflect's detail where it adds to that (base64, a well-known type's
/// form, a number out of range).
fn value_error(kind: &Kind, value: &Value, at: &str, detail: &str) -> String {
    if let Some(message) = kind.as_message().filter(|m| !is_well_known(m)) {
        if let Some(inner) = wrong_value(message, value, at) {
            return inner;
        }
    }
    let out_of_range = ["range", "too large", "too small"]
        .iter()
        .any(|words| detail.contains(words));
    let detail = match kind {
        Kind::Bytes | Kind::Message(_) => format!(": {detail}"),
        _ if out_of_range => ", out of range".to_owned(),
        _ => String::new(),
    };
    format!(
        "field \"{at}\": expected {}, found {}{detail}",
        expected(kind),
        found(value)
    )
}

/// Google's well-known types, which have JSON forms of their own
/// (`"1.5s"`, an RFC 3339 time, any JSON for `Value`).
fn is_well_known(message: &MessageDescriptor) -> bool {
    message.package_name() == "google.protobuf"
}

/// Whether `key` is a map key of `kind` in proto3 JSON (keys are strings).
fn map_key_fits(kind: &Kind, key: &str) -> bool {
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => key.parse::<i32>().is_ok(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => key.parse::<i64>().is_ok(),
        Kind::Uint32 | Kind::Fixed32 => key.parse::<u32>().is_ok(),
        Kind::Uint64 | Kind::Fixed64 => key.parse::<u64>().is_ok(),
        Kind::Bool => key == "true" || key == "false",
        _ => true,
    }
}

/// What a map key of `kind` is written as: JSON's keys are strings.
fn key_form(kind: &Kind) -> String {
    match kind {
        Kind::String => "strings".into(),
        kind => format!("{} as a string", expected(kind)),
    }
}

/// What a value of `kind` is written as, in proto3 JSON.
fn expected(kind: &Kind) -> String {
    match kind {
        Kind::Double | Kind::Float => "a number".into(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => "an integer (int32)".into(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            "an integer (int64, a number or a string)".into()
        }
        Kind::Uint32 | Kind::Fixed32 => "a non-negative integer (uint32)".into(),
        Kind::Uint64 | Kind::Fixed64 => {
            "a non-negative integer (uint64, a number or a string)".into()
        }
        Kind::Bool => "true or false".into(),
        Kind::String => "a string".into(),
        Kind::Bytes => "bytes in base64 (a string)".into(),
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
            format!("{} by name ({}) or number", e.full_name(), names.join(", "))
        }
        Kind::Message(m) if is_well_known(m) => format!("{} in its JSON form", m.full_name()),
        Kind::Message(m) => format!("an object ({})", m.full_name()),
    }
}

/// A JSON value as written, cut short when long.
fn found(value: &Value) -> String {
    const MOST: usize = 40;
    let text = value.to_string();
    match text.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// A metadata entry's value, checked: a header name gRPC allows (not a
/// pseudo-header, not one of gRPC's own), a string value a header can carry.
fn metadata_value<'a>(
    call: &str,
    name: &str,
    value: &'a serde_json::Value,
) -> Result<&'a str, String> {
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !valid_name {
        return Err(format!(
            "{call}: metadata `{name}`: expected a header name (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("grpc-") || lower == "content-type" || lower == "te" {
        return Err(format!(
            "{call}: metadata `{name}` is gRPC's own header: tank sets it"
        ));
    }
    let Some(text) = value.as_str() else {
        return Err(format!(
            "{call}: metadata `{name}`: expected a string value, found {value}"
        ));
    };
    if text.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!(
            "{call}: metadata `{name}`: a value cannot hold a line break or NUL"
        ));
    }
    // A server decodes a `-bin` value, and fails every call it cannot decode.
    if lower.ends_with("-bin") {
        base64(text).map_err(|why| {
            format!(
                "{call}: metadata `{name}`: a `-bin` key's value is base64: {why}, found `{}`",
                found(value).trim_matches('"')
            )
        })?;
    }
    Ok(text)
}

/// Checks `text` is base64 as gRPC reads a `-bin` value: the standard
/// alphabet, padded or not (gRPC accepts both).
fn base64(text: &str) -> Result<(), String> {
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    let symbol = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    if let Some(at) = body.bytes().position(|b| !symbol(b)) {
        let c = body[at..].chars().next().unwrap_or_default();
        return Err(format!("`{c}` (at {at}) is not a base64 symbol"));
    }
    if body.len() % 4 == 1 || padding > 2 || (padding > 0 && text.len() % 4 != 0) {
        return Err(format!(
            "{} symbols and {padding} `=` cannot end a base64 text",
            body.len()
        ));
    }
    Ok(())
}

/// gRPC's `grpc-timeout`: at most 8 digits, in milliseconds when they fit.
fn grpc_timeout(timeout: Duration) -> String {
    let ms = timeout.as_millis().max(1);
    if ms <= 99_999_999 {
        format!("{ms}m")
    } else {
        format!("{}S", (timeout.as_secs()).min(99_999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compiler() -> (tempfile::TempDir, Compiler) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("greeter.proto");
        std::fs::write(
            &file,
            r#"syntax = "proto3";
package tankbar;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}
import "google/protobuf/timestamp.proto";
message HelloRequest {
  string name = 1; int64 times = 2; Mood mood = 3; repeated int32 r = 4;
  map<string, int32> m = 5; map<int32, string> im = 6; bytes b = 7; Inner inner = 8;
  google.protobuf.Timestamp at = 9;
}
message Inner { repeated int64 ids = 1; }
enum Mood { CALM = 0; HAPPY = 1; }
message HelloReply { string message = 1; }
"#,
        )
        .unwrap();
        let schema = Schema::compile(&[file], &[]).unwrap();
        (dir, Compiler::new(schema, None, Duration::from_secs(11)))
    }

    fn compile(compiler: &Compiler, line: &str) -> Result<Compiled, String> {
        compiler.compile(&CallLine::parse(line.as_bytes())?)
    }

    #[test]
    fn a_unary_call_becomes_an_http1_shaped_grpc_request() {
        let (_dir, compiler) = compiler();
        let compiled = compile(
            &compiler,
            r#"{"tag": "/hello", "call": "tankbar.Greeter.SayHello",
                "metadata": {"Authorization": "Bearer x"},
                "payload": {"name": "tank", "times": "3", "mood": "HAPPY"}}"#,
        )
        .unwrap();
        // name = "tank" (field 1), times = 3 (field 2), mood = 1 (field 3).
        let message = b"\x0a\x04tank\x10\x03\x18\x01";
        let mut expected = format!(
            "POST /tankbar.Greeter/SayHello HTTP/1.1\r\ncontent-type: application/grpc\r\n\
             te: trailers\r\ngrpc-timeout: 11000m\r\nauthorization: Bearer x\r\n\
             content-length: {}\r\n\r\n",
            5 + message.len()
        )
        .into_bytes();
        expected.extend_from_slice(&[0, 0, 0, 0, message.len() as u8]);
        expected.extend_from_slice(message);
        assert_eq!(compiled.request, expected);
        assert_eq!(compiled.tag, b"/hello");
    }

    #[test]
    fn the_authority_is_the_host_and_the_call_the_default_tag() {
        let (_dir, compiler) = compiler();
        let compiler = Compiler {
            authority: Some("api.example:443".into()),
            ..compiler
        };
        let compiled = compile(&compiler, r#"{"call": "tankbar.Greeter/SayHello"}"#).unwrap();
        let text = String::from_utf8_lossy(&compiled.request);
        assert!(text.contains("\r\nHost: api.example:443\r\n"), "{text}");
        assert!(
            text.ends_with("content-length: 5\r\n\r\n\0\0\0\0\0"),
            "{text}"
        );
        assert_eq!(compiled.tag, b"tankbar.Greeter/SayHello");
    }

    #[test]
    fn wrong_fields_and_calls_are_named() {
        let (_dir, compiler) = compiler();
        let error = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "payload": {"nmae": "x"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            error,
            "tankbar.Greeter.SayHello: payload: field \"nmae\" does not exist \
             (tankbar.HelloRequest has: name, times, mood, r, m, im, b, inner, at)"
        );
        let error = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "payload": {"times": "many"}}"#,
        )
        .unwrap_err();
        assert!(
            error.starts_with("tankbar.Greeter.SayHello: payload: "),
            "{error}"
        );
        let error = compile(&compiler, r#"{"call": "tankbar.Greeter.Chat"}"#).unwrap_err();
        assert!(error.contains("client-streaming"), "{error}");
        let error = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "metadata": {"grpc-timeout": "1S"}}"#,
        )
        .unwrap_err();
        assert!(error.contains("gRPC's own header"), "{error}");
        let error = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "metadata": {"a": 1}}"#,
        )
        .unwrap_err();
        assert!(error.contains("expected a string value"), "{error}");
    }

    #[test]
    fn a_wrong_value_is_named_by_its_field_path_and_the_type_expected() {
        let (_dir, compiler) = compiler();
        let int64 = "an integer (int64, a number or a string)";
        let cases = [
            (r#"{"name": 5}"#, r#"field "name": expected a string, found 5"#.to_owned()),
            (
                r#"{"name": "ok", "times": "abc"}"#,
                format!(r#"field "times": expected {int64}, found "abc""#),
            ),
            (r#"{"times": 1.5}"#, format!(r#"field "times": expected {int64}, found 1.5"#)),
            (
                r#"{"times": 99999999999999999999}"#,
                format!(r#"field "times": expected {int64}, found 1e+20, out of range"#),
            ),
            (
                r#"{"r": [1, "z"]}"#,
                r#"field "r[1]": expected an integer (int32), found "z""#.to_owned(),
            ),
            (
                r#"{"r": 1}"#,
                r#"field "r": expected a list (each an integer (int32)), found 1"#.to_owned(),
            ),
            (
                r#"{"m": {"k": 1, "l": "v"}}"#,
                r#"field "m["l"]": expected an integer (int32), found "v""#.to_owned(),
            ),
            (
                r#"{"m": [1]}"#,
                r#"field "m": expected an object (a map: keys strings, values an integer (int32)), found [1]"#
                    .to_owned(),
            ),
            (
                r#"{"im": {"x": "v"}}"#,
                r#"field "im": key "x": expected an integer (int32) as a string"#.to_owned(),
            ),
            (
                r#"{"inner": {"ids": ["1", "q"]}}"#,
                format!(r#"field "inner.ids[1]": expected {int64}, found "q""#),
            ),
            (
                r#"{"mood": "SAD"}"#,
                r#"field "mood": expected tankbar.Mood by name (CALM, HAPPY) or number, found "SAD""#
                    .to_owned(),
            ),
            (
                r#"{"at": "yesterday"}"#,
                r#"field "at": expected google.protobuf.Timestamp in its JSON form, found "yesterday": invalid rfc3339 timestamp: invalid date"#
                    .to_owned(),
            ),
        ];
        for (payload, expected) in cases {
            let line = format!(r#"{{"call": "tankbar.Greeter.SayHello", "payload": {payload}}}"#);
            let error = compile(&compiler, &line).unwrap_err();
            assert_eq!(
                error,
                format!("tankbar.Greeter.SayHello: payload: {expected}")
            );
        }
        let error = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "payload": {"b": "!!"}}"#,
        )
        .unwrap_err();
        assert!(
            error.starts_with(
                "tankbar.Greeter.SayHello: payload: field \"b\": expected bytes in base64 \
                 (a string), found \"!!\": invalid base64"
            ),
            "{error}"
        );
    }

    #[test]
    fn connection_specific_metadata_is_dropped_and_named() {
        let (_dir, compiler) = compiler();
        let compiled = compile(
            &compiler,
            r#"{"call": "tankbar.Greeter.SayHello", "metadata": {"Connection": "close",
                "transfer-encoding": "chunked", "x-a": "1", "upgrade": "h2c"}}"#,
        )
        .unwrap();
        let text = String::from_utf8_lossy(&compiled.request).to_ascii_lowercase();
        assert!(text.contains("\r\nx-a: 1\r\n"), "{text}");
        for name in ["connection", "transfer-encoding", "upgrade"] {
            assert!(!text.contains(name), "{text}");
        }
        let mut dropped = compiled.dropped;
        dropped.sort();
        assert_eq!(dropped, ["Connection", "transfer-encoding", "upgrade"]);
    }

    #[test]
    fn a_bin_value_must_be_base64() {
        let (_dir, compiler) = compiler();
        let line = |value: &str| {
            format!(r#"{{"call": "tankbar.Greeter.SayHello", "metadata": {{"x-bin": "{value}"}}}}"#)
        };
        assert_eq!(
            compile(&compiler, &line("!!!")).unwrap_err(),
            "tankbar.Greeter.SayHello: metadata `x-bin`: a `-bin` key's value is base64: `!` \
             (at 0) is not a base64 symbol, found `!!!`"
        );
        assert!(compile(&compiler, &line("QUI=")).is_ok());
        assert!(compile(&compiler, &line("QUI")).is_ok());
        assert!(compile(&compiler, &line("QUJDR")).is_err());
        assert!(compile(&compiler, &line("QU=I")).is_err());
        // Only `-bin` keys are base64.
        let plain = r#"{"call": "tankbar.Greeter.SayHello", "metadata": {"x-a": "!!!"}}"#;
        assert!(compile(&compiler, plain).is_ok());
    }

    #[test]
    fn a_byte_order_mark_before_a_line_is_skipped() {
        let line = CallLine::parse(b"\xEF\xBB\xBF{\"call\": \"a.B.C\"}").unwrap();
        assert_eq!(line.call, "a.B.C");
    }

    /// Standard base64, padded or not, as a test's reference.
    fn encode(bytes: &[u8], pad: bool) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n =
                chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
            if pad {
                out.push_str(&"=="[..3 - chunk.len()]);
            }
        }
        out
    }

    #[test]
    fn lines_that_are_not_the_format_say_so() {
        assert_eq!(
            CallLine::parse(br#"{"call": "a.B.C", "paylod": {}}"#).unwrap_err(),
            "unknown field `paylod`, expected one of `tag`, `call`, `metadata`, `payload` \
             (column 26): expected a JSON object {\"tag\", \"call\", \"metadata\", \"payload\"}"
        );
        assert!(CallLine::parse(b"not json").is_err());
        assert!(CallLine::parse(br#"{"tag": "x"}"#).is_err());
    }

    #[test]
    fn grpc_timeouts_fit_eight_digits() {
        assert_eq!(grpc_timeout(Duration::from_millis(1500)), "1500m");
        assert_eq!(grpc_timeout(Duration::ZERO), "1m");
        assert_eq!(grpc_timeout(Duration::from_secs(200_000)), "200000S");
    }

    proptest! {
        #[test]
        fn any_line_parses_or_errs_without_panicking(
            line in proptest::collection::vec(any::<u8>(), 0..200)
        ) {
            let _ = CallLine::parse(&line);
        }

        #[test]
        fn base64_of_any_bytes_is_accepted_padded_or_not(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            pad in any::<bool>(),
        ) {
            prop_assert_eq!(base64(&encode(&bytes, pad)), Ok(()));
        }

        #[test]
        fn a_text_with_a_symbol_outside_base64_is_refused(
            prefix in "[A-Za-z0-9+/]{0,8}",
            bad in "[^A-Za-z0-9+/=]",
        ) {
            let text = format!("{prefix}{bad}");
            prop_assert!(base64(&text).is_err());
        }

        #[test]
        fn a_wrong_value_is_blamed_on_a_field_written(
            key in prop::sample::select(vec!["name", "times", "mood", "r", "m", "b", "at"]),
            value in prop_oneof![
                any::<i64>().prop_map(serde_json::Value::from),
                any::<f64>().prop_map(serde_json::Value::from),
                any::<bool>().prop_map(serde_json::Value::from),
                "\\PC{0,8}".prop_map(serde_json::Value::from),
                proptest::collection::vec("[a-z0-9]{0,3}", 0..3).prop_map(serde_json::Value::from),
            ],
        ) {
            let (_dir, compiler) = compiler();
            let line = CallLine {
                tag: None,
                call: "tankbar.Greeter.SayHello".into(),
                metadata: Default::default(),
                payload: Some(serde_json::json!({ key: value })),
            };
            if let Err(error) = compiler.compile(&line) {
                let named = format!("tankbar.Greeter.SayHello: payload: field \"{key}");
                prop_assert!(error.starts_with(&named), "{}", error);
                prop_assert!(error.contains(": expected "), "{}", error);
            }
        }

        #[test]
        fn any_name_compiles_to_a_frame_of_its_length(name in "\\PC{0,300}") {
            let (_dir, compiler) = compiler();
            let line = CallLine {
                tag: None,
                call: "tankbar.Greeter.SayHello".into(),
                metadata: Default::default(),
                payload: Some(serde_json::json!({ "name": name })),
            };
            let compiled = compiler.compile(&line).unwrap();
            let body_at = compiled.request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let frame = &compiled.request[body_at..];
            let length = u32::from_be_bytes(frame[1..5].try_into().unwrap()) as usize;
            prop_assert_eq!(frame.len(), 5 + length);
        }
    }
}
