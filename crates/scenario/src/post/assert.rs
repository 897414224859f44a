//! `assert/response`: checks a reply must pass, or the run ends there.
//!
//! As Pandora's: each header named must contain its text (the header's first
//! value; names in any case), the body must contain each text, the status
//! must be `status_code`. `size` compares the body's length in bytes (after
//! de-chunking) with `val`, and tank reads `<`, `>` and `=` as they read:
//! strictly. (Pandora's `<` passes a length equal to `val`, and its `size`
//! sees an empty body unless `body` is checked too: tank departs from both.)

use crate::reply::Reply;
use crate::spec::SizeOp;

/// One check, with the reason counted when it fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    Status(u16),
    Body(String),
    Header(String, String),
    Size(SizeOp, u64),
}

impl Check {
    /// Whether `reply` passes.
    pub(crate) fn passes(&self, reply: &Reply<'_>) -> bool {
        match self {
            Check::Status(code) => reply.status == *code,
            Check::Body(text) => memchr::memmem::find(&reply.body, text.as_bytes()).is_some(),
            Check::Header(name, text) => reply
                .header(name)
                .is_some_and(|value| memchr::memmem::find(value, text.as_bytes()).is_some()),
            Check::Size(op, val) => {
                let size = reply.body.len() as u64;
                match op {
                    SizeOp::Eq => size == *val,
                    SizeOp::Lt => size < *val,
                    SizeOp::Gt => size > *val,
                }
            }
        }
    }

    /// What it checks, for people.
    pub(crate) fn describe(&self) -> String {
        match self {
            Check::Status(code) => format!("status_code {code}"),
            Check::Body(text) => format!("body contains {text:?}"),
            Check::Header(name, text) => format!("header {name} contains {text:?}"),
            Check::Size(op, val) => format!("body size {} {val}", op.symbol()),
        }
    }

    /// Whether it reads the body.
    pub(crate) fn reads_body(&self) -> bool {
        matches!(self, Check::Body(_) | Check::Size(..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply;

    #[test]
    fn checks_pass_and_fail_as_written() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"token\":\"t\"}";
        let reply = reply::read(bytes, false).unwrap();
        assert!(Check::Status(200).passes(&reply));
        assert!(!Check::Status(201).passes(&reply));
        assert!(Check::Body("token".into()).passes(&reply));
        assert!(!Check::Body("nope".into()).passes(&reply));
        assert!(Check::Header("content-type".into(), "json".into()).passes(&reply));
        assert!(!Check::Header("X-Missing".into(), "".into()).passes(&reply));
        assert!(Check::Size(SizeOp::Eq, 13).passes(&reply));
        assert!(!Check::Size(SizeOp::Lt, 13).passes(&reply));
        assert!(Check::Size(SizeOp::Gt, 12).passes(&reply));
        assert_eq!(Check::Size(SizeOp::Gt, 40).describe(), "body size > 40");
    }
}
