//! A scenario run as it goes: what changes while the test runs, kept apart
//! from the read-only [`Book`].
//!
//! - [`Cursors`]: the `[next]` cursors over sources, one per path, shared by
//!   every instance of the queue (atomics: a source is walked in order across
//!   all of them, each row once per round).
//! - [`Run`]: one instance's state for the run it is in: the requests'
//!   variables, the run's own `[next]` cursors and its cookie jar, all
//!   cleared when a run starts, their memory kept for the next.
//!
//! The engine drives it: [`Run::request`] builds a step's request bytes
//! (preprocessor, templates, cookies) or says why it cannot; after the
//! barrel fired them, [`Run::reply`] reads the reply (cookies,
//! postprocessors) or says why the run ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rand::Rng;

use crate::book::{Book, Cursor, PreArg, PreValue, RefStep, Root};
use crate::failure::{Failure, FailureKind};
use crate::jar::{self, Jar};
use crate::path::{self, IndexKind};
use crate::reply;
use crate::source::SourceData;
use crate::template::{RefId, Scope};
use crate::value::{Stored, ValueRef};

/// The `[next]` cursors over sources, shared by a queue's instances.
#[derive(Debug)]
pub struct Cursors {
    turns: Box<[AtomicU64]>,
    /// The first turn this process takes, and the turns between two of its
    /// own: a shard `I` of `N` takes turns `I`, `I + N`, ..., so that shards
    /// together walk a source once, without taking the same row.
    first: u64,
    stride: u64,
}

impl Cursors {
    /// `book`'s cursors, for the whole test.
    pub fn new(book: &Book) -> Cursors {
        Cursors::sharded(book, 0, 1)
    }

    /// `book`'s cursors for shard `index` of `count`.
    pub fn sharded(book: &Book, index: u64, count: u64) -> Cursors {
        Cursors {
            turns: (0..book.shared_cursors)
                .map(|_| AtomicU64::new(0))
                .collect(),
            first: index,
            stride: count.max(1),
        }
    }

    fn next(&self, cursor: usize) -> u64 {
        let taken = self
            .turns
            .get(cursor)
            .map_or(0, |t| t.fetch_add(1, Ordering::Relaxed));
        self.first.wrapping_add(taken.wrapping_mul(self.stride))
    }
}

/// What every request of a queue gets besides its own: `Host` (the
/// target's, unless the request or the queue's `headers` set one) and the
/// queue's `headers`, each unless the request sets the same header.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// Per request: its default header lines, ready to copy.
    blocks: Vec<Vec<u8>>,
    tls: bool,
}

impl Defaults {
    /// The defaults of `book`'s requests: `host` for `Host`, `headers` as
    /// `Name: value`, `tls` whether the target is reached over TLS (a
    /// `Secure` cookie goes only there).
    pub fn new(book: &Book, host: &str, headers: &[String], tls: bool) -> Result<Defaults, String> {
        let mut pairs: Vec<(String, String)> = Vec::with_capacity(headers.len());
        for header in headers {
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| format!("headers: `{header}`: expected `Name: value`"))?;
            let (name, value) = (name.trim(), value.trim());
            if name.is_empty() || value.contains(['\r', '\n']) {
                return Err(format!(
                    "headers: `{header}`: expected `Name: value` on one line"
                ));
            }
            pairs.push((name.to_owned(), value.to_owned()));
        }
        if !pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            pairs.insert(0, ("Host".to_owned(), host.to_owned()));
        }
        let blocks = book
            .requests
            .iter()
            .map(|request| {
                let mut block = Vec::new();
                for (name, value) in &pairs {
                    if !request.own_headers.contains(&name.to_ascii_lowercase()) {
                        block.extend_from_slice(name.as_bytes());
                        block.extend_from_slice(b": ");
                        block.extend_from_slice(value.as_bytes());
                        block.extend_from_slice(b"\r\n");
                    }
                }
                block
            })
            .collect();
        Ok(Defaults { blocks, tls })
    }
}

/// One instance's state for its current run.
pub struct Run<'b> {
    book: &'b Book,
    defaults: &'b Defaults,
    vars: Vec<Option<Stored<'b>>>,
    turns: Vec<u64>,
    jar: Jar,
    /// The last request's path (its cookies' default path).
    path: String,
    text: String,
    pending: Vec<(usize, Stored<'b>)>,
}

impl<'b> Run<'b> {
    /// An instance's run state over `book`.
    pub fn new(book: &'b Book, defaults: &'b Defaults) -> Run<'b> {
        Run {
            book,
            defaults,
            vars: vec![None; book.slots],
            turns: vec![0; book.run_cursors],
            jar: Jar::default(),
            path: String::new(),
            text: String::new(),
            pending: Vec::new(),
        }
    }

    /// Start a new run: no variables, cursors at the start, no cookies.
    pub fn start(&mut self) {
        self.vars.iter_mut().for_each(|v| *v = None);
        self.turns.iter_mut().for_each(|t| *t = 0);
        self.jar.clear();
    }

    /// Build request `request`'s bytes into `out`: its preprocessor, its
    /// templates, its defaults, the run's cookies. On a failure nothing is
    /// to be sent.
    pub fn request(
        &mut self,
        request: usize,
        cursors: &Cursors,
        rng: &mut impl Rng,
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        let book = self.book;
        let Some(spec) = book.requests.get(request) else {
            return Ok(());
        };
        let unset = |reason| Failure {
            kind: FailureKind::Unset,
            reason,
        };
        for slot in spec.slots.clone() {
            self.vars[slot] = None;
        }
        self.pending.clear();
        for var in &spec.pre {
            let mut scope = RunScope {
                book,
                vars: &self.vars,
                turns: &mut self.turns,
                cursors,
                rng: &mut *rng,
            };
            let value = match &var.value {
                PreValue::Ref(id) => scope.stored(*id).ok_or(var.reason),
                PreValue::Call(func, args, refused) => {
                    scope.call(*func, args).map_err(|called| match called {
                        Called::Unset => var.reason,
                        Called::Refused => *refused,
                    })
                }
            };
            self.pending.push((var.slot, value.map_err(unset)?));
        }
        for (slot, value) in self.pending.drain(..) {
            self.vars[slot] = Some(value);
        }
        let mut scope = RunScope {
            book,
            vars: &self.vars,
            turns: &mut self.turns,
            cursors,
            rng,
        };
        let text = &mut self.text;
        out.clear();
        text.clear();
        spec.uri
            .render(&mut scope, spec.html, text)
            .map_err(unset)?;
        if text.is_empty() || text.contains([' ', '\r', '\n', '\t']) {
            return Err(unset(spec.uri_broken));
        }
        self.path.clear();
        self.path.push_str(jar::request_path(text));
        out.extend_from_slice(spec.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        if let Some(block) = self.defaults.blocks.get(request) {
            out.extend_from_slice(block);
        }
        for header in &spec.headers {
            text.clear();
            header
                .value
                .render(&mut scope, spec.html, text)
                .map_err(unset)?;
            if text.contains(['\r', '\n']) {
                return Err(unset(header.broken));
            }
            out.extend_from_slice(header.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let own = |name: &str| spec.own_headers.iter().any(|h| h == name);
        if !own("cookie") {
            self.jar
                .write_header(&self.path, self.defaults.tls, Instant::now(), out);
        }
        text.clear();
        if let Some(body) = &spec.body {
            body.render(&mut scope, spec.html, text).map_err(unset)?;
            if !own("content-length") && !own("transfer-encoding") {
                out.extend_from_slice(b"Content-Length: ");
                out.extend_from_slice(itoa::Buffer::new().format(text.len()).as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    /// Read request `request`'s reply (`bytes`, as captured): store its
    /// cookies, run its postprocessors. A failure ends the run.
    pub fn reply(&mut self, request: usize, bytes: &[u8]) -> Result<(), Failure> {
        let Some(spec) = self.book.requests.get(request) else {
            return Ok(());
        };
        let reply = reply::read(bytes, spec.head).map_err(|_| Failure {
            kind: FailureKind::Extraction,
            reason: spec.unreadable,
        })?;
        let now = Instant::now();
        for cookie in reply.headers_named("set-cookie") {
            self.jar.store(cookie, &self.path, now);
        }
        self.pending.clear();
        for post in &spec.post {
            post.apply(&reply, &mut self.pending)?;
        }
        for (slot, value) in self.pending.drain(..) {
            self.vars[slot] = Some(value);
        }
        Ok(())
    }
}

/// Why a preprocessor's function call has no result.
enum Called {
    /// An argument has no value.
    Unset,
    /// The function cannot take the arguments' values.
    Refused,
}

/// A run's values as a template or a preprocessor reads them.
struct RunScope<'r, 'b, R> {
    book: &'b Book,
    vars: &'r [Option<Stored<'b>>],
    turns: &'r mut [u64],
    cursors: &'r Cursors,
    rng: &'r mut R,
}

impl<'r, 'b: 'r, R: Rng> RunScope<'r, 'b, R> {
    /// The value of a source, for the whole test.
    fn source(book: &'b Book, index: usize) -> Option<ValueRef<'b>> {
        Some(match &book.sources.get(index)?.data {
            SourceData::Csv(table) => ValueRef::Table {
                source: index,
                table,
            },
            SourceData::Json(value) => ValueRef::Json(value),
        })
    }

    /// Walk `steps` from `start`.
    fn walk<'a>(&mut self, start: ValueRef<'a>, steps: &[RefStep]) -> Option<ValueRef<'a>> {
        let mut value = start;
        for step in steps {
            value = match step {
                RefStep::Key(key) => value.key(key)?,
                RefStep::Column(column) => value.column(*column)?,
                RefStep::Index(kind, cursor) => {
                    let len = value.items()?;
                    if len == 0 {
                        return None;
                    }
                    let at = match (kind, cursor) {
                        (IndexKind::Rand, _) => self.rng.random_range(0..len),
                        (IndexKind::Next, Some(Cursor::Shared(i))) => {
                            usize::try_from(self.cursors.next(*i) % len as u64).ok()?
                        }
                        (IndexKind::Next, Some(Cursor::Run(i))) => {
                            let turn = self.turns.get_mut(*i)?;
                            let at = usize::try_from(*turn % len as u64).ok()?;
                            *turn += 1;
                            at
                        }
                        (kind, _) => path::fixed_item(*kind, len)?,
                    };
                    value.item(at)?
                }
            };
        }
        Some(value)
    }

    /// Reference `id`'s value, for a run to keep (a source's data borrowed,
    /// a run's own copied).
    fn stored(&mut self, id: RefId) -> Option<Stored<'b>> {
        let book = self.book;
        let reference = book.refs.get(id)?;
        match reference.root {
            Root::Source(index) => {
                let start = Self::source(book, index)?;
                self.walk(start, &reference.steps).map(Stored::Source)
            }
            Root::Slot(_) => {
                let tables = |source: usize| match &book.sources.get(source)?.data {
                    SourceData::Csv(table) => Some(table),
                    SourceData::Json(_) => None,
                };
                let value = self.resolve(id)?;
                Some(value.to_stored(tables))
            }
        }
    }

    /// A preprocessor's function call.
    fn call(&mut self, func: crate::funcs::Func, args: &[PreArg]) -> Result<Stored<'b>, Called> {
        let mut texts = Vec::with_capacity(args.len());
        for arg in args {
            texts.push(match arg {
                PreArg::Text(text) => text.clone(),
                PreArg::Ref(id) => {
                    let mut text = String::new();
                    self.resolve(*id).ok_or(Called::Unset)?.print(&mut text);
                    text
                }
            });
        }
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut out = String::new();
        func.call(&texts, self.rng, &mut out)
            .map_err(|_| Called::Refused)?;
        Ok(Stored::Text(out))
    }
}

impl<'r, 'b: 'r, R: Rng> Scope<'r> for RunScope<'r, 'b, R> {
    fn resolve(&mut self, id: RefId) -> Option<ValueRef<'r>> {
        let (book, vars) = (self.book, self.vars);
        let reference = book.refs.get(id)?;
        let start = match reference.root {
            Root::Source(index) => Self::source(book, index)?,
            Root::Slot(slot) => vars.get(slot)?.as_ref()?.view(),
        };
        self.walk(start, &reference.steps)
    }

    fn rng(&mut self) -> &mut impl Rng {
        &mut *self.rng
    }
}
