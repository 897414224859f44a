//! One stage of a recipe: from time `at` on, answer with this status, latency, CPU work or fault.
//!
//! OriginSimulator's stages have `at`, `status` and `latency`. tank adds
//! `cpu` (busy work per request, for a CPU-bound handler) and `fault`, the
//! failures a load generator must classify rather than just time out on:
//! a reset connection, a close without a response, a malformed response, a
//! body trickled at N bytes/s, and a connection that stalls forever.

use std::fmt;
use std::time::Duration;

use hyper::StatusCode;
use serde_json::{Map, Value};

use crate::latency::Latency;
use crate::units;

/// What a stage does instead of (or to) a normal response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `"reset"`: abort the connection (TCP RST); the client's read fails with ECONNRESET.
    Reset,
    /// `"close"`: close the connection (FIN) without sending a byte.
    Close,
    /// `"malformed"`: send a line that is not an HTTP status line, then close.
    Malformed,
    /// `"trickle(1kb/s)"`: a normal response whose body is sent at this many bytes per second.
    Trickle {
        /// Body bytes per second (at least 1).
        bytes_per_second: usize,
    },
    /// `"stall"`: accept the request and never answer.
    Stall,
}

impl Fault {
    fn parse(text: &str) -> Result<Fault, String> {
        let t = text.trim();
        match t {
            "reset" => return Ok(Fault::Reset),
            "close" => return Ok(Fault::Close),
            "malformed" => return Ok(Fault::Malformed),
            "stall" => return Ok(Fault::Stall),
            _ => {}
        }
        let rate = t
            .strip_prefix("trickle(")
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| {
                format!(
                    "expected a fault: \"reset\", \"close\", \"malformed\", \"stall\" \
                     or \"trickle(100b/s)\", found `{t}`"
                )
            })?;
        let size = rate.trim().strip_suffix("/s").ok_or_else(|| {
            format!("expected a rate like \"trickle(100b/s)\" or \"trickle(1kb/s)\", found `{t}`")
        })?;
        let bytes_per_second = units::parse_size(size)?;
        if bytes_per_second == 0 {
            return Err(format!(
                "a trickle needs at least 1 byte per second, found `{t}`"
            ));
        }
        Ok(Fault::Trickle { bytes_per_second })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Reset => f.write_str("reset"),
            Fault::Close => f.write_str("close"),
            Fault::Malformed => f.write_str("malformed"),
            Fault::Trickle { bytes_per_second } => write!(f, "trickle({bytes_per_second}b/s)"),
            Fault::Stall => f.write_str("stall"),
        }
    }
}

/// One stage of a recipe.
#[derive(Debug, Clone)]
pub struct Stage {
    /// When the stage starts, counted from when the recipe was posted.
    pub at: Duration,
    /// The response status (default 200).
    pub status: StatusCode,
    /// The wait before answering (default none).
    pub latency: Latency,
    /// Busy CPU time spent on each request (default none).
    pub cpu: Duration,
    /// A fault instead of (or, for a trickle, applied to) the response.
    pub fault: Option<Fault>,
}

const KEYS: &[&str] = &["at", "cpu", "fault", "latency", "status"];

impl Stage {
    /// Reads one stage object; errors are `(key, message)`.
    pub(crate) fn from_object(object: &Map<String, Value>) -> Result<Stage, (String, String)> {
        for key in object.keys() {
            if !KEYS.contains(&key.as_str()) {
                let message = format!("unknown key (expected one of: {})", KEYS.join(", "));
                return Err((key.clone(), message));
            }
        }
        let field = |key: &str| object.get(key).filter(|v| !v.is_null());
        let at = match field("at") {
            Some(v) => units::duration_value(v).map_err(|m| ("at".to_owned(), m))?,
            None => Duration::ZERO,
        };
        let status = match field("status") {
            Some(v) => status(v).map_err(|m| ("status".to_owned(), m))?,
            None => StatusCode::OK,
        };
        let latency = match field("latency") {
            Some(v) => Latency::from_value(v).map_err(|m| ("latency".to_owned(), m))?,
            None => Latency::zero(),
        };
        let cpu = match field("cpu") {
            Some(v) => units::duration_value(v).map_err(|m| ("cpu".to_owned(), m))?,
            None => Duration::ZERO,
        };
        let fault = match field("fault") {
            Some(Value::String(s)) => Some(Fault::parse(s).map_err(|m| ("fault".to_owned(), m))?),
            Some(other) => {
                return Err((
                    "fault".into(),
                    format!("expected a string like \"reset\", found {other}"),
                ))
            }
            None => None,
        };
        Ok(Stage {
            at,
            status,
            latency,
            cpu,
            fault,
        })
    }
}

fn status(value: &Value) -> Result<StatusCode, String> {
    let code = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    code.filter(|c| (200..=599).contains(c))
        .and_then(|c| u16::try_from(c).ok())
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| format!("expected an HTTP status from 200 to 599, found {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stage(value: Value) -> Result<Stage, (String, String)> {
        let Value::Object(object) = value else {
            panic!("test stages are objects")
        };
        Stage::from_object(&object)
    }

    #[test]
    fn a_stage_defaults_to_200_at_once_without_latency() {
        let s = stage(json!({})).unwrap();
        assert_eq!(
            (s.at, s.status, s.cpu),
            (Duration::ZERO, StatusCode::OK, Duration::ZERO)
        );
        assert!(s.latency.is_zero() && s.fault.is_none());
    }

    #[test]
    fn at_takes_milliseconds_or_a_duration() {
        assert_eq!(
            stage(json!({"at": 4000})).unwrap().at,
            Duration::from_secs(4)
        );
        assert_eq!(
            stage(json!({"at": "4s"})).unwrap().at,
            Duration::from_secs(4)
        );
    }

    #[test]
    fn every_fault_spelling() {
        let fault = |f: &str| stage(json!({ "fault": f })).unwrap().fault.unwrap();
        assert_eq!(fault("reset"), Fault::Reset);
        assert_eq!(fault("close"), Fault::Close);
        assert_eq!(fault("malformed"), Fault::Malformed);
        assert_eq!(fault("stall"), Fault::Stall);
        assert_eq!(
            fault("trickle(1kb/s)"),
            Fault::Trickle {
                bytes_per_second: 1024
            }
        );
        assert_eq!(fault("trickle(1kb/s)").to_string(), "trickle(1024b/s)");
    }

    #[test]
    fn errors_name_the_key() {
        let (key, message) = stage(json!({"latncy": 1})).unwrap_err();
        assert_eq!(key, "latncy");
        assert_eq!(
            message,
            "unknown key (expected one of: at, cpu, fault, latency, status)"
        );
        let (key, message) = stage(json!({"status": 99})).unwrap_err();
        assert_eq!(key, "status");
        assert_eq!(message, "expected an HTTP status from 200 to 599, found 99");
        let (key, message) = stage(json!({"fault": "trickle(100b)"})).unwrap_err();
        assert_eq!(key, "fault");
        assert!(message.contains("trickle(100b/s)"), "{message}");
        assert_eq!(stage(json!({"fault": "explode"})).unwrap_err().0, "fault");
        assert_eq!(
            stage(json!({"fault": "trickle(0b/s)"})).unwrap_err().0,
            "fault"
        );
    }
}
