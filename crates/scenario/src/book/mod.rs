//! The book: a scenario file read, checked and compiled, ready to run.
//!
//! Loading does everything that can fail on the file before a shot: read it
//! (any spelling), decode it, read its sources, compile every template,
//! path and postprocessor, and check each scenario in order — a request it
//! names must exist, and a template must not read a variable that no request
//! before it in that scenario sets (it could never have a value). Every
//! error names the file and line. The book is then shared, read-only, by the
//! instances of the queue; what changes as the test runs (variables, cookies,
//! `[next]` cursors) lives in [`crate::run`].

mod refs;
mod request;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::doc::{self, Format};
use crate::error::{Fault, ScenarioError};
use crate::failure::{Reason, Reasons};
use crate::source::{self, Source};
use crate::spec::{self, ScenarioSpec, Spec};

pub(crate) use refs::{Cursor, RefStep, Reference, Root};
pub(crate) use request::{PreArg, PreValue, Request};

use refs::Namespace;

/// The most steps a scenario may have (requests, repetitions counted).
pub const MAX_STEPS: usize = 10_000;

/// A scenario file, compiled.
#[derive(Debug)]
pub struct Book {
    path: PathBuf,
    format: Format,
    pub(crate) sources: Vec<Source>,
    pub(crate) requests: Vec<Request>,
    scenarios: Vec<Scenario>,
    pub(crate) refs: Vec<Reference>,
    pub(crate) slots: usize,
    reasons: Vec<Reason>,
    pub(crate) shared_cursors: usize,
    pub(crate) run_cursors: usize,
}

/// A scenario: its requests in order, and how often it is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Its name (each run's shot carries it).
    pub name: String,
    /// Its weight in the draw.
    pub weight: u64,
    /// `min_waiting_time`: a run lasts at least this long (a sleep at its end makes it up).
    pub min_waiting: Duration,
    /// Its steps, repetitions unrolled.
    pub steps: Vec<Step>,
    /// Where it is written.
    pub line: usize,
}

/// One request of a scenario, and the sleep after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The request's index (see [`Book::request_name`]).
    pub request: usize,
    /// `sleep(ms)` or `req(n, ms)`: the pause after it.
    pub sleep: Duration,
}

impl Scenario {
    /// The sleeps of one run, added up.
    pub fn sleeps(&self) -> Duration {
        self.steps.iter().map(|s| s.sleep).sum()
    }

    /// The shortest a run can take: its sleeps, or `min_waiting_time` if longer.
    pub fn min_duration(&self) -> Duration {
        self.sleeps().max(self.min_waiting)
    }
}

/// Read, check and compile the scenario file at `path`. `seed` draws the
/// random values of `variables` sources.
pub fn load(path: &Path, seed: u64) -> Result<Book, ScenarioError> {
    let format = Format::of(path).ok_or_else(|| {
        Fault::new(
            0,
            "a scenario file is named .hcl, .yaml, .yml or .json (its spelling is told by its \
             extension)",
        )
        .in_file(path)
    })?;
    let bytes = std::fs::read(path)
        .map_err(|e| Fault::new(0, format!("cannot read the scenario file: {e}")).in_file(path))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = crate::error::line_of(&String::from_utf8_lossy(&e.into_bytes()[..valid]), valid);
        Fault::new(line, "the scenario file is not valid UTF-8").in_file(path)
    })?;
    compile_text(path, format, &text, seed)
}

/// Compile `text`, the contents of the scenario file `path`.
pub(crate) fn compile_text(
    path: &Path,
    format: Format,
    text: &str,
    seed: u64,
) -> Result<Book, ScenarioError> {
    let at = |fault: Fault| fault.in_file(path);
    let tree = doc::read(format, text).map_err(at)?;
    let spec = spec::decode(&tree, format).map_err(at)?;
    if spec.scenarios.is_empty() {
        return Err(Fault::new(
            0,
            "no scenario: expected at least one `scenario` (a name and its requests)",
        )
        .in_file(path));
    }
    duplicates(&spec).map_err(at)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let sources = spec
        .sources
        .iter()
        .map(|s| source::load(s, path, &mut rng))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = Namespace {
        sources: &sources,
        requests: spec
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.clone(), i))
            .collect(),
        slots: HashMap::new(),
        shared_cursors: HashMap::new(),
        run_cursors: HashMap::new(),
    };
    let mut first_slots = Vec::with_capacity(spec.requests.len());
    for (index, request) in spec.requests.iter().enumerate() {
        first_slots.push(names.slots.len());
        for (stage, variable) in request::variables(request) {
            let slot = names.slots.len();
            names.slots.insert((index, stage, variable), slot);
        }
    }
    let slots = names.slots.len();
    let mut refs = Vec::new();
    let mut reasons = Reasons::default();
    let mut tables = request::Tables {
        names: &mut names,
        refs: &mut refs,
        reasons: &mut reasons,
    };
    let requests = spec
        .requests
        .iter()
        .zip(&first_slots)
        .map(|(r, first)| request::compile(r, *first, &mut tables))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|(line, message)| Fault::new(line, message).in_file(path))?;
    through_variables(&spec, &requests, &refs, &names).map_err(at)?;
    let (shared_cursors, run_cursors) = (names.shared_cursors.len(), names.run_cursors.len());
    let request_index: HashMap<&str, usize> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let scenarios = spec
        .scenarios
        .iter()
        .map(|s| scenario(s, &request_index))
        .collect::<Result<Vec<_>, _>>()
        .map_err(at)?;
    let book = Book {
        path: path.to_path_buf(),
        format,
        sources,
        requests,
        scenarios,
        refs,
        slots,
        reasons: reasons.list,
        shared_cursors,
        run_cursors,
    };
    for (scenario, spec) in book.scenarios.iter().zip(&spec.scenarios) {
        book.check_order(scenario, spec).map_err(at)?;
    }
    Ok(book)
}

/// Check each path that reads under a preprocessor variable holding a
/// source's value (`user = "source.users[next]"`, then
/// `{{.request.auth.preprocessor.user.name}}`) against that source, as a path
/// that names the source itself is checked: the variable's value is known
/// now, so a missing CSV field or JSON key need not wait for a run's 902.
fn through_variables(
    spec: &Spec,
    requests: &[Request],
    refs: &[Reference],
    names: &Namespace<'_>,
) -> Result<(), Fault> {
    // Per slot, the path a preprocessor variable holds and its name (the
    // last mapping entry of a name wins, as at run time); a call's result is
    // text, a postprocessor's is known only from a reply.
    let mut held: Vec<Option<(usize, String)>> = vec![None; names.slots.len()];
    for (request, written) in requests.iter().zip(&spec.requests) {
        for (var, entry) in request.pre.iter().zip(&written.preprocessor) {
            held[var.slot] = match var.value {
                PreValue::Ref(id) => Some((
                    id,
                    format!("request.{}.preprocessor.{}", request.name, entry.key),
                )),
                PreValue::Call(..) => None,
            };
        }
    }
    for request in requests {
        let pre = request.pre_reads.iter().map(|id| (*id, false));
        let templates = request.template_reads.iter().map(|id| (*id, true));
        for (id, in_template) in pre.chain(templates) {
            let reference = &refs[id];
            let mut root = reference.root;
            let mut steps = reference.steps.clone();
            let mut via = Vec::new();
            // A variable may hold another's value; a cycle ends after as many turns as slots.
            for _ in 0..held.len() {
                let Root::Slot(slot) = root else { break };
                let Some((inner, name)) = held.get(slot).and_then(Option::as_ref) else {
                    break;
                };
                let inner = &refs[*inner];
                via.push(format!("`{name}` is `{}`", inner.text));
                steps.splice(0..0, inner.steps.iter().cloned());
                root = inner.root;
            }
            let Root::Source(source) = root else { continue };
            if via.is_empty() || reference.steps.is_empty() {
                continue;
            }
            refs::check_source(&names.sources[source], steps).map_err(|m| {
                // A template's place does not name its request; a preprocessor's does.
                let place = if in_template {
                    format!("request `{}`: {}", request.name, reference.place)
                } else {
                    reference.place.clone()
                };
                Fault::new(
                    reference.line,
                    format!("{place}: `{}`: {}, and {m}", reference.text, via.join(", ")),
                )
            })?;
        }
    }
    Ok(())
}

/// Names must be unique among sources, requests and scenarios.
fn duplicates(spec: &Spec) -> Result<(), Fault> {
    fn first_repeat<'a>(items: impl Iterator<Item = (&'a str, usize)>) -> Option<(&'a str, usize)> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (name, line) in items {
            if seen.insert(name, line).is_some() {
                return Some((name, line));
            }
        }
        None
    }
    let checks = [
        (
            "variable_source",
            first_repeat(spec.sources.iter().map(|s| (s.name.as_str(), s.line))),
        ),
        (
            "request",
            first_repeat(spec.requests.iter().map(|r| (r.name.as_str(), r.line))),
        ),
        (
            "scenario",
            first_repeat(spec.scenarios.iter().map(|s| (s.name.as_str(), s.line))),
        ),
    ];
    for (what, repeat) in checks {
        if let Some((name, line)) = repeat {
            return Err(Fault::new(line, format!("a second {what} named `{name}`")));
        }
    }
    Ok(())
}

/// A scenario's steps from its `requests` list: `name`, `name(count)`,
/// `name(count, sleep_ms)` and `sleep(ms)` (added to the step before it).
fn scenario(spec: &ScenarioSpec, requests: &HashMap<&str, usize>) -> Result<Scenario, Fault> {
    let mut out: Vec<Step> = Vec::new();
    for entry in &spec.requests {
        let what = format!("scenario `{}`: `{}`", spec.name, entry.value);
        let parsed = spec_step::parse(&entry.value)
            .map_err(|m| Fault::new(entry.line, format!("{what}: {m}")))?;
        match parsed {
            spec_step::Parsed::Sleep(ms) => match out.last_mut() {
                Some(last) => last.sleep += Duration::from_millis(ms),
                None => {
                    return Err(Fault::new(
                        entry.line,
                        format!("{what}: a sleep comes after a request (it pauses after it)"),
                    ))
                }
            },
            spec_step::Parsed::Request {
                name,
                count,
                sleep_ms,
            } => {
                let request = *requests.get(name.as_str()).ok_or_else(|| {
                    let mut known: Vec<&str> = requests.keys().copied().collect();
                    known.sort_unstable();
                    Fault::new(
                        entry.line,
                        format!(
                            "{what}: no request `{name}` (there are: {})",
                            known.join(", ")
                        ),
                    )
                })?;
                if out.len() + count as usize > MAX_STEPS {
                    return Err(Fault::new(
                        entry.line,
                        format!("{what}: a scenario has at most {MAX_STEPS} steps"),
                    ));
                }
                for _ in 0..count {
                    out.push(Step {
                        request,
                        sleep: Duration::from_millis(sleep_ms),
                    });
                }
            }
        }
    }
    Ok(Scenario {
        name: spec.name.clone(),
        weight: spec.weight,
        min_waiting: Duration::from_millis(spec.min_waiting_time_ms),
        steps: out,
        line: spec.line,
    })
}

/// Parsing one item of a scenario's `requests`.
mod spec_step {
    /// What an item says.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(super) enum Parsed {
        Request {
            name: String,
            count: u64,
            sleep_ms: u64,
        },
        Sleep(u64),
    }

    /// Most repetitions of one request, and the longest sleep (a day).
    const MAX_COUNT: u64 = super::MAX_STEPS as u64;
    const MAX_SLEEP_MS: u64 = 86_400_000;

    pub(super) fn parse(text: &str) -> Result<Parsed, String> {
        let call = crate::call::split(text)?;
        let name = call.name;
        let args = call
            .args
            .iter()
            .map(|a| {
                a.parse::<u64>()
                    .map_err(|_| format!("`{a}` is not a whole number of 0 or more"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if name.is_empty() {
            return Err("expected a request's name".into());
        }
        let ms = |ms: u64| {
            if ms > MAX_SLEEP_MS {
                Err(format!(
                    "a sleep of {ms} ms: at most {MAX_SLEEP_MS} (a day)"
                ))
            } else {
                Ok(ms)
            }
        };
        if name == "sleep" {
            return match args[..] {
                [duration] => Ok(Parsed::Sleep(ms(duration)?)),
                _ => Err("expected sleep(milliseconds)".into()),
            };
        }
        let (count, sleep_ms) = match args[..] {
            [] => (1, 0),
            [count] => (count, 0),
            [count, sleep] => (count, ms(sleep)?),
            _ => return Err("expected name, name(count) or name(count, sleep_ms)".into()),
        };
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(format!("a count of {count}: expected 1 to {MAX_COUNT}"));
        }
        Ok(Parsed::Request {
            name: name.to_owned(),
            count,
            sleep_ms,
        })
    }
}

impl Book {
    /// Check that every variable a request of `scenario` reads is set by a
    /// step before it (its own preprocessor's, for its templates).
    fn check_order(&self, scenario: &Scenario, spec: &ScenarioSpec) -> Result<(), Fault> {
        let mut set = vec![false; self.slots];
        for step in &scenario.steps {
            let request = &self.requests[step.request];
            // A request's variables are cleared when it starts, as Pandora clears them.
            set[request.slots.clone()].fill(false);
            let pre_end = request.slots.start + request.post_slots;
            let check = |set: &[bool], reads: &[usize]| -> Result<(), Fault> {
                for id in reads {
                    let reference = &self.refs[*id];
                    if let Root::Slot(slot) = reference.root {
                        if !set[slot] {
                            let owner = self
                                .requests
                                .iter()
                                .find(|r| r.slots.contains(&slot))
                                .map_or("?", |r| r.name.as_str());
                            let why = if owner == request.name {
                                format!("`{owner}`'s own variables are cleared when it starts")
                            } else {
                                format!("no `{owner}` runs before `{}`", request.name)
                            };
                            return Err(Fault::new(
                                reference.line,
                                format!(
                                    "request `{}`, {}: `{}` is never set by then in scenario `{}` \
                                     (line {}): {why}",
                                    request.name,
                                    reference.place,
                                    reference.text,
                                    spec.name,
                                    spec.line
                                ),
                            ));
                        }
                    }
                }
                Ok(())
            };
            check(&set, &request.pre_reads)?;
            set[request.slots.start..pre_end].fill(true);
            check(&set, &request.template_reads)?;
            set[pre_end..request.slots.end].fill(true);
        }
        Ok(())
    }

    /// The scenario file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its spelling.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The scenarios, in file order.
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// The scenario named `name`.
    pub fn scenario_named(&self, name: &[u8]) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name.as_bytes() == name)
    }

    /// The sources, in file order.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// How many requests the file defines.
    pub fn request_count(&self) -> usize {
        self.requests.len()
    }

    /// Request `request`'s name.
    pub fn request_name(&self, request: usize) -> &str {
        self.requests.get(request).map_or("", |r| r.name.as_str())
    }

    /// The tag of request `request`'s rows: its `tag`, or its name.
    pub fn request_tag(&self, request: usize) -> &str {
        self.requests.get(request).map_or("", |r| r.tag.as_str())
    }

    /// Whether request `request` has a `tag` of its own (else its rows take
    /// its name, or `autocases`' marker of each request built).
    pub fn request_tagged(&self, request: usize) -> bool {
        self.requests.get(request).is_some_and(|r| r.tagged)
    }

    /// Whether request `request` is a HEAD (its reply has no body).
    pub fn request_is_head(&self, request: usize) -> bool {
        self.requests.get(request).is_some_and(|r| r.head)
    }

    /// Whether any request reads a reply's body (else the heads suffice).
    pub fn reads_bodies(&self) -> bool {
        self.requests.iter().any(|r| r.reads_body)
    }

    /// Every way a request can fail, known now (a run counts each by index).
    pub fn reasons(&self) -> &[Reason] {
        &self.reasons
    }
}

#[cfg(test)]
mod tests;
