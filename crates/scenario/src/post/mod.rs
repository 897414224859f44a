//! Postprocessors: what a request does with its reply. `var/jsonpath`,
//! `var/xpath` and `var/header` set the request's variables; `assert/response`
//! checks the reply. They run in the order written; the first that fails
//! ends the run with its reason.

mod assert;
mod header;
mod jsonpath;
mod xpath;

use crate::failure::{Failure, FailureKind};
use crate::reply::Reply;
use crate::value::Stored;

pub(crate) use assert::Check;
pub(crate) use header::HeaderValue;
pub(crate) use jsonpath::Query;

/// A variable slot's index.
pub(crate) type SlotId = usize;

/// A compiled postprocessor.
#[derive(Debug, Clone)]
pub(crate) enum Post {
    /// `var/jsonpath`, with the reason counted when the body is not JSON.
    JsonPath {
        not_json: usize,
        vars: Vec<(SlotId, Query, usize)>,
    },
    /// `var/xpath`, with the reason counted when the body cannot be read.
    XPath {
        unreadable: usize,
        vars: Vec<(SlotId, String, usize)>,
    },
    /// `var/header`.
    Header(Vec<(SlotId, HeaderValue)>),
    /// `assert/response`: its checks, each with its reason.
    Assert(Vec<(Check, usize)>),
}

pub(crate) use header::parse as parse_header;
pub(crate) use xpath::check as check_xpath;

impl Post {
    /// Whether it reads the body (the others need only the head).
    pub(crate) fn reads_body(&self) -> bool {
        match self {
            Post::JsonPath { .. } | Post::XPath { .. } => true,
            Post::Header(_) => false,
            Post::Assert(checks) => checks.iter().any(|(check, _)| check.reads_body()),
        }
    }

    /// Run it on `reply`, adding the variables it sets to `set`.
    pub(crate) fn apply<'b>(
        &self,
        reply: &Reply<'_>,
        set: &mut Vec<(SlotId, Stored<'b>)>,
    ) -> Result<(), Failure> {
        let fail = |kind, reason| Failure { kind, reason };
        match self {
            Post::JsonPath { not_json, vars } => {
                let document: serde_json::Value = serde_json::from_slice(&reply.body)
                    .map_err(|_| fail(FailureKind::Extraction, *not_json))?;
                for (slot, query, reason) in vars {
                    let value = query
                        .extract(&document)
                        .ok_or_else(|| fail(FailureKind::Extraction, *reason))?;
                    set.push((*slot, Stored::Json(value)));
                }
            }
            Post::XPath { unreadable, vars } => {
                let markup = xpath::Markup::read(&reply.body)
                    .map_err(|_| fail(FailureKind::Extraction, *unreadable))?;
                for (slot, expression, reason) in vars {
                    let value = markup
                        .extract(expression)
                        .ok()
                        .flatten()
                        .ok_or_else(|| fail(FailureKind::Extraction, *reason))?;
                    set.push((*slot, Stored::Json(value)));
                }
            }
            Post::Header(vars) => {
                for (slot, header) in vars {
                    if let Some(value) = header.extract(reply) {
                        set.push((*slot, Stored::Text(value)));
                    }
                }
            }
            Post::Assert(checks) => {
                for (check, reason) in checks {
                    if !check.passes(reply) {
                        return Err(fail(FailureKind::Assertion, *reason));
                    }
                }
            }
        }
        Ok(())
    }
}
