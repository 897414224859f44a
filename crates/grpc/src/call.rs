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
use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde::Deserialize;

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
    /// Read one line; the error says what was expected.
    pub fn parse(line: &[u8]) -> Result<CallLine, String> {
        serde_json::from_slice(line).map_err(|e| {
            format!(
                "{}: expected a JSON object {{\"tag\", \"call\", \"metadata\", \"payload\"}}",
                json_error(&e)
            )
        })
    }
}

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
}

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
        let message = DynamicMessage::deserialize_with_options(input.clone(), payload, &options)
            .map_err(|e| format!("{call}: payload: {}", payload_error(&e.to_string(), &input)))?;
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
        for (name, value) in &line.metadata {
            let value = metadata_value(call, name, value)?;
            let _ = write!(head, "{}: {value}\r\n", name.to_ascii_lowercase());
        }
        let _ = write!(head, "content-length: {}\r\n\r\n", 5 + body.len());
        let mut request = head.into_bytes();
        request.push(0);
        request.extend_from_slice(&length.to_be_bytes());
        request.extend_from_slice(&body);
        Ok(Compiled {
            request,
            tag: line.tag.as_deref().unwrap_or(call).as_bytes().to_vec(),
        })
    }
}

/// prost-reflect's message for a payload the request cannot hold; an
/// unknown field is named with the fields the request has.
fn payload_error(message: &str, input: &prost_reflect::MessageDescriptor) -> String {
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
        None => message.to_owned(),
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
    Ok(text)
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
message HelloRequest { string name = 1; int64 times = 2; Mood mood = 3; }
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
             (tankbar.HelloRequest has: name, times, mood)"
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
