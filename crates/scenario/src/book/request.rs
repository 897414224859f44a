//! A request compiled: its templates, its preprocessor's mapping and its
//! postprocessors, every path resolved and every reason of failure named.

use crate::failure::{FailureKind, Reasons};
use crate::funcs::{self, Func};
use crate::path;
use crate::post::{self, Check, Post, Query};
use crate::spec::{PostSpec, RequestSpec, Templater};
use crate::template::{Names, ReasonId, RefId, Template};

use super::refs::{Namespace, Reference, Stage};

/// A compiled request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub name: String,
    /// Its rows' tag: `tag`, or the name.
    pub tag: String,
    /// Whether `tag` is written (else an untagged request, which `autocases` may tag).
    pub tagged: bool,
    pub method: String,
    /// Whether its method is HEAD (its reply has no body).
    pub head: bool,
    pub uri: Template,
    /// Counted when the uri renders with a space or a line break.
    pub uri_broken: ReasonId,
    pub headers: Vec<Header>,
    pub body: Option<Template>,
    pub html: bool,
    /// Header names it sets itself, lower-cased (`host`, `cookie`, ...).
    pub own_headers: Vec<String>,
    pub pre: Vec<PreVar>,
    pub post: Vec<Post>,
    /// Its variables' slots, preprocessor's then postprocessors'.
    pub slots: std::ops::Range<usize>,
    /// Where its postprocessors' slots start within `slots`.
    pub post_slots: usize,
    /// What its preprocessor reads, then what its templates read.
    pub pre_reads: Vec<RefId>,
    pub template_reads: Vec<RefId>,
    /// Whether a postprocessor reads the body.
    pub reads_body: bool,
    /// Counted when the reply cannot be read (cut short by the capture, say).
    pub unreadable: ReasonId,
}

/// A header whose value is a template.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub name: String,
    pub value: Template,
    /// Counted when the value renders with a line break.
    pub broken: ReasonId,
}

/// A preprocessor variable.
#[derive(Debug, Clone)]
pub(crate) struct PreVar {
    pub slot: usize,
    pub value: PreValue,
    pub reason: ReasonId,
}

/// What a preprocessor variable is.
#[derive(Debug, Clone)]
pub(crate) enum PreValue {
    /// The value at a path.
    Ref(RefId),
    /// A random function's result; the reason is counted when the function
    /// refuses its arguments' values (text where it takes a number).
    Call(Func, Vec<PreArg>, ReasonId),
}

/// An argument of a preprocessor's function call.
#[derive(Debug, Clone)]
pub(crate) enum PreArg {
    Ref(RefId),
    Text(String),
}

/// The compiler's tables that every request adds to.
pub(crate) struct Tables<'n, 's> {
    pub names: &'n mut Namespace<'s>,
    pub refs: &'n mut Vec<Reference>,
    pub reasons: &'n mut Reasons,
}

/// The [`Names`] a request's template resolves through.
struct TemplateNames<'t, 'n, 's> {
    tables: &'t mut Tables<'n, 's>,
    request: &'t str,
    place: String,
    line: usize,
}

impl Names for TemplateNames<'_, '_, '_> {
    fn reference(&mut self, path: &path::PathText) -> Result<RefId, String> {
        let reference = self.tables.names.resolve(path, self.line, &self.place)?;
        self.tables.refs.push(reference);
        Ok(self.tables.refs.len() - 1)
    }

    fn reason(&mut self, text: &str) -> ReasonId {
        self.tables.reasons.add(
            self.request,
            FailureKind::Unset,
            format!("{text} in {} has no value", self.place),
        )
    }
}

/// Compile request `spec`, whose slots start at `first_slot` (in the order
/// of [`variables`]).
pub(crate) fn compile(
    spec: &RequestSpec,
    first_slot: usize,
    tables: &mut Tables<'_, '_>,
) -> Result<Request, (usize, String)> {
    let name = spec.name.as_str();
    let vars = variables(spec);
    // Every name a mapping sets is in `vars`, which was made of the same mappings.
    let slot_of = |stage: Stage, variable: &str| {
        vars.iter()
            .position(|(s, n)| *s == stage && n == variable)
            .map_or(first_slot, |at| first_slot + at)
    };
    let refs_before = tables.refs.len();
    let mut pre = Vec::with_capacity(spec.preprocessor.len());
    for entry in &spec.preprocessor {
        let place = format!("preprocessor `{}`", entry.key);
        let value = match funcs::parse_call(&entry.value) {
            Some(call) => {
                let (func, args) =
                    call.map_err(|m| (entry.line, format!("request `{name}`: {place}: {m}")))?;
                let args = args
                    .iter()
                    .map(|arg| {
                        if looks_like_path(arg) {
                            let parsed = path::parse(arg).map_err(|m| (entry.line, m))?;
                            let reference = tables
                                .names
                                .resolve(&parsed, entry.line, &format!("request `{name}`, {place}"))
                                .map_err(|m| {
                                    (entry.line, format!("request `{name}`: {place}: {m}"))
                                })?;
                            tables.refs.push(reference);
                            Ok(PreArg::Ref(tables.refs.len() - 1))
                        } else {
                            Ok(PreArg::Text(arg.clone()))
                        }
                    })
                    .collect::<Result<_, _>>()?;
                let refused = tables.reasons.add(
                    name,
                    FailureKind::Unset,
                    format!(
                        "{place} `{}`: {} cannot take its arguments' values (expected {})",
                        entry.value,
                        func.name(),
                        func.takes()
                    ),
                );
                PreValue::Call(func, args, refused)
            }
            None => {
                let parsed = path::parse(&entry.value).map_err(|m| {
                    (
                        entry.line,
                        format!(
                            "request `{name}`: {place}: {m} (a mapping's value is a path, as \
                             source.users[next].id, or a call of randInt, randString or uuid)"
                        ),
                    )
                })?;
                let reference = tables
                    .names
                    .resolve(&parsed, entry.line, &format!("request `{name}`, {place}"))
                    .map_err(|m| (entry.line, format!("request `{name}`: {place}: {m}")))?;
                tables.refs.push(reference);
                PreValue::Ref(tables.refs.len() - 1)
            }
        };
        let reason = tables.reasons.add(
            name,
            FailureKind::Unset,
            format!("{place} `{}` has no value", entry.value),
        );
        pre.push(PreVar {
            slot: slot_of(Stage::Pre, &entry.key),
            value,
            reason,
        });
    }
    let pre_reads: Vec<RefId> = (refs_before..tables.refs.len()).collect();
    let refs_before = tables.refs.len();
    let template = |tables: &mut Tables<'_, '_>, text: &str, place: String, line: usize| {
        let mut names = TemplateNames {
            tables,
            request: name,
            place: place.clone(),
            line,
        };
        Template::compile(text, &mut names)
            .map_err(|m| (line, format!("request `{name}`: {place}: {m}")))
    };
    let uri = template(tables, &spec.uri.value, "uri".into(), spec.uri.line)?;
    let uri_broken = tables.reasons.add(
        name,
        FailureKind::Unset,
        "the uri renders with a space or a line break".into(),
    );
    let mut headers = Vec::with_capacity(spec.headers.len());
    for header in &spec.headers {
        let value = template(
            tables,
            &header.value,
            format!("header {}", header.key),
            header.line,
        )?;
        let broken = tables.reasons.add(
            name,
            FailureKind::Unset,
            format!("header {} renders with a line break", header.key),
        );
        headers.push(Header {
            name: header.key.clone(),
            value,
            broken,
        });
    }
    let body = spec
        .body
        .as_ref()
        .map(|body| template(tables, &body.value, "body".into(), body.line))
        .transpose()?;
    let template_reads: Vec<RefId> = (refs_before..tables.refs.len()).collect();
    let post = spec
        .postprocessors
        .iter()
        .map(|p| postprocessor(p, name, &slot_of, tables))
        .collect::<Result<Vec<_>, _>>()?;
    let post_slots = vars.iter().filter(|(s, _)| *s == Stage::Pre).count();
    let unreadable = tables.reasons.add(
        name,
        FailureKind::Extraction,
        "the reply cannot be read as HTTP".into(),
    );
    Ok(Request {
        name: name.to_owned(),
        tag: spec.tag.clone().unwrap_or_else(|| name.to_owned()),
        tagged: spec.tag.is_some(),
        head: spec.method.eq_ignore_ascii_case("HEAD"),
        method: spec.method.clone(),
        uri,
        uri_broken,
        own_headers: spec
            .headers
            .iter()
            .map(|h| h.key.to_ascii_lowercase())
            .collect(),
        headers,
        body,
        html: spec.templater == Templater::Html,
        reads_body: post.iter().any(Post::reads_body),
        pre,
        post,
        slots: first_slot..first_slot + vars.len(),
        post_slots,
        pre_reads,
        template_reads,
        unreadable,
    })
}

/// Whether a function argument names a value rather than being a literal.
fn looks_like_path(arg: &str) -> bool {
    let arg = arg.strip_prefix('.').unwrap_or(arg);
    arg.starts_with("source.") || arg.starts_with("request.")
}

fn postprocessor(
    spec: &PostSpec,
    request: &str,
    slot_of: &impl Fn(Stage, &str) -> usize,
    tables: &mut Tables<'_, '_>,
) -> Result<Post, (usize, String)> {
    let slot = |_: &Tables<'_, '_>, variable: &str| slot_of(Stage::Post, variable);
    let at = |line: usize| move |m: String| (line, format!("request `{request}`: {m}"));
    Ok(match spec {
        PostSpec::JsonPath { mapping, .. } => {
            let not_json = tables.reasons.add(
                request,
                FailureKind::Extraction,
                "var/jsonpath: the body is not JSON".into(),
            );
            let vars = mapping
                .iter()
                .map(|entry| {
                    let query = Query::parse(&entry.value).map_err(at(entry.line))?;
                    let reason = tables.reasons.add(
                        request,
                        FailureKind::Extraction,
                        format!("var/jsonpath `{}` matched nothing", entry.value),
                    );
                    Ok((slot(tables, &entry.key), query, reason))
                })
                .collect::<Result<_, _>>()?;
            Post::JsonPath { not_json, vars }
        }
        PostSpec::XPath { mapping, .. } => {
            let unreadable = tables.reasons.add(
                request,
                FailureKind::Extraction,
                "var/xpath: the body is not XML or HTML text".into(),
            );
            let vars = mapping
                .iter()
                .map(|entry| {
                    post::check_xpath(&entry.value).map_err(at(entry.line))?;
                    let reason = tables.reasons.add(
                        request,
                        FailureKind::Extraction,
                        format!("var/xpath `{}` matched nothing", entry.value),
                    );
                    Ok((slot(tables, &entry.key), entry.value.clone(), reason))
                })
                .collect::<Result<_, _>>()?;
            Post::XPath { unreadable, vars }
        }
        PostSpec::Header { mapping, .. } => Post::Header(
            mapping
                .iter()
                .map(|entry| {
                    let header = post::parse_header(&entry.value).map_err(at(entry.line))?;
                    Ok((slot(tables, &entry.key), header))
                })
                .collect::<Result<_, _>>()?,
        ),
        PostSpec::Assert(assert) => {
            let mut checks = Vec::new();
            if let Some(code) = assert.status_code {
                checks.push(Check::Status(code));
            }
            checks.extend(
                assert
                    .headers
                    .iter()
                    .map(|h| Check::Header(h.key.clone(), h.value.clone())),
            );
            checks.extend(assert.body.iter().cloned().map(Check::Body));
            if let Some((op, val)) = assert.size {
                checks.push(Check::Size(op, val));
            }
            Post::Assert(
                checks
                    .into_iter()
                    .map(|check| {
                        let reason = tables.reasons.add(
                            request,
                            FailureKind::Assertion,
                            format!("assert/response: {}", check.describe()),
                        );
                        (check, reason)
                    })
                    .collect(),
            )
        }
    })
}

/// The variables request `spec` sets: its preprocessor's, then its postprocessors'.
pub(crate) fn variables(spec: &RequestSpec) -> Vec<(Stage, String)> {
    let mut out: Vec<(Stage, String)> = Vec::new();
    for entry in &spec.preprocessor {
        if !out.iter().any(|(s, n)| *s == Stage::Pre && *n == entry.key) {
            out.push((Stage::Pre, entry.key.clone()));
        }
    }
    for post in &spec.postprocessors {
        let mapping = match post {
            PostSpec::JsonPath { mapping, .. }
            | PostSpec::XPath { mapping, .. }
            | PostSpec::Header { mapping, .. } => mapping,
            PostSpec::Assert(_) => continue,
        };
        for entry in mapping {
            if !out
                .iter()
                .any(|(s, n)| *s == Stage::Post && *n == entry.key)
            {
                out.push((Stage::Post, entry.key.clone()));
            }
        }
    }
    out
}
