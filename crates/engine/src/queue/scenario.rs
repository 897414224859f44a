//! The scenario driver: an instance that runs scenarios (`ammo_type = scenario`).
//!
//! A shot is one run of a scenario, taken from the open or closed dispatch
//! like any shot, so `rps_schedule` paces the starts of runs and an
//! `instances_schedule` runs them back to back. The shot's bytes name the
//! scenario; its steps are then fired in order through the instance's
//! barrel (its connection is kept across steps and runs, as Pandora's
//! client keeps it), each step its own row:
//!
//! 1. the run's state builds the request (tank-scenario: preprocessor,
//!    templates, cookies); if a value is missing the request is not sent,
//!    and its row carries net code 902;
//! 2. the barrel fires it, capturing the reply; a network failure ends the
//!    run, its row as any shot's;
//! 3. the run's state reads the reply (cookies, postprocessors); a failed
//!    assertion (901) or extraction (903) ends the run, its row carrying the
//!    code with the reply's status kept;
//! 4. the step's sleep, then the next step; `min_waiting_time` pads the run.
//!
//! A step's row is tagged by its request: its `tag`, else its name, or, with
//! `autocases`, the marker of the request as built (as untagged ammo is).
//! The first step's row carries the shot's lag; later steps are due when
//! the step before them ends, so they have none. A run stopped by the
//! schedule's end finishes its steps (only new runs are unsent); the first
//! Ctrl-C ends a run after its request in flight (sleeps are cut short);
//! a second abandons that request, whose row then says 125, as any shot's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tank_config::QueueConfig;
use tank_scenario::{Book, Cursors, Defaults, Failure, FailureKind, Run, Scenario};
use tank_stats::{Measured, NetCode, Tag};
use tokio::time::Instant;

use super::{logged, InFlight, Shared};
use crate::dispatch::{Dispatch, Seat};
use crate::feed::Interner;
use crate::gun::measure::ShotProgress;
use crate::gun::Barrel;
use crate::sink::Answer;

/// How much of a step's request and reply the answers log keeps.
const ANSWER_CAPTURE: usize = 64 * 1024;
/// Room in the reply capture beyond phantom's limits, for a chunked body's framing.
const FRAMING_SLACK: u64 = 64 * 1024;

/// A scenario queue's run-time setup, shared by its instances.
pub(crate) struct Play {
    book: Arc<Book>,
    defaults: Defaults,
    cursors: Cursors,
    /// Each request's tag, shared by its rows.
    tags: Vec<Tag>,
    /// `autocases` for the requests without a `tag` of their own (`None`: off).
    marker: Option<tank_plan::marker::Marker>,
    tally: Arc<ScenarioTally>,
    seed: u64,
    /// The most reply bytes a step captures: what phantom's limits let through.
    capture: usize,
    /// Runs the plan holds, when known without walking it.
    planned_runs: Option<u64>,
}

impl Play {
    /// The setup of `queue`, whose plan compiled `book`; `host` is the
    /// target's host (the `Host` header's default); `shard` the slice this
    /// process fires (the sources' `[next]` turns are divided as the runs are).
    pub(crate) fn new(
        queue: &QueueConfig,
        book: Arc<Book>,
        host: &str,
        shard: tank_plan::Shard,
        planned_runs: Option<u64>,
    ) -> Result<Play, String> {
        let defaults = Defaults::new(&book, host, &queue.headers, queue.ssl)?;
        let limits = queue.reply_limits;
        let capture = limits
            .line
            .saturating_add(limits.field)
            .saturating_add(limits.entity)
            .saturating_add(FRAMING_SLACK);
        Ok(Play {
            cursors: Cursors::sharded(&book, shard.index(), shard.count()),
            tags: (0..book.request_count())
                .map(|r| Tag::from(book.request_tag(r).as_bytes()))
                .collect(),
            tally: Arc::new(ScenarioTally::new(book.reasons().len())),
            marker: (queue.autocases != tank_config::Autocases::Off)
                .then(|| tank_plan::marker::Marker::new(queue.autocases, false)),
            defaults,
            seed: queue.arrivals.seed,
            capture: usize::try_from(capture).unwrap_or(usize::MAX),
            planned_runs,
            book,
        })
    }

    /// The live counts.
    pub(crate) fn tally(&self) -> &Arc<ScenarioTally> {
        &self.tally
    }

    /// The report of the runs, once the queue is over; `counted` is the plan's
    /// run count if the feeder walked it to its end.
    pub(crate) fn report(&self, counted: Option<u64>) -> ScenarioReport {
        let counts = self.tally.take();
        let reasons = self.book.reasons();
        let failures = self
            .tally
            .failures
            .iter()
            .zip(reasons)
            .filter_map(|(count, reason)| {
                let count = count.load(Ordering::Relaxed);
                (count > 0).then(|| FailureCount {
                    request: reason.request.clone(),
                    code: net_code(reason.kind),
                    reason: reason.text.clone(),
                    count,
                })
            })
            .collect();
        ScenarioReport {
            planned_runs: self.planned_runs.or(counted),
            counts,
            failures,
        }
    }
}

/// The net code of a scenario failure's row.
pub(crate) fn net_code(kind: FailureKind) -> NetCode {
    match kind {
        FailureKind::Assertion => NetCode::ASSERTION,
        FailureKind::Unset => NetCode::UNSET,
        FailureKind::Extraction => NetCode::EXTRACTION,
    }
}

/// Live counts of a scenario queue's runs, and of its failures by reason.
#[derive(Debug)]
pub struct ScenarioTally {
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    broken: AtomicU64,
    stopped: AtomicU64,
    /// Per reason of the book (its index).
    failures: Box<[AtomicU64]>,
}

/// A reading of a [`ScenarioTally`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScenarioCounts {
    /// Runs started (an instance took the shot).
    pub started: u64,
    /// Runs that went through every step.
    pub completed: u64,
    /// Runs a scenario failure ended (an assertion, a missing value, an extraction).
    pub failed: u64,
    /// Runs a network failure ended (a request's net code was not 0).
    pub broken: u64,
    /// Runs cut short by the end of the test (Ctrl-C, autostop).
    pub stopped: u64,
}

impl ScenarioTally {
    fn new(reasons: usize) -> ScenarioTally {
        ScenarioTally {
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            broken: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            failures: (0..reasons).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The counts now.
    pub fn take(&self) -> ScenarioCounts {
        let read = |n: &AtomicU64| n.load(Ordering::Relaxed);
        ScenarioCounts {
            started: read(&self.started),
            completed: read(&self.completed),
            failed: read(&self.failed),
            broken: read(&self.broken),
            stopped: read(&self.stopped),
        }
    }

    fn ended(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Completed => &self.completed,
            Outcome::Failed(failure) => {
                if let Some(count) = self.failures.get(failure.reason) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                &self.failed
            }
            Outcome::Broken => &self.broken,
            Outcome::Stopped => &self.stopped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a scenario queue's runs went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioReport {
    /// Runs the plan held (`None`: not known, as a closed model's stopped early).
    pub planned_runs: Option<u64>,
    /// The runs' outcomes.
    pub counts: ScenarioCounts,
    /// Failures by request and reason, in the file's order (only those that happened).
    pub failures: Vec<FailureCount>,
}

/// How often one request failed for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureCount {
    /// The request's name.
    pub request: String,
    /// The net code its rows carry (901, 902 or 903).
    pub code: NetCode,
    /// What failed.
    pub reason: String,
    /// How many runs it ended.
    pub count: u64,
}

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Completed,
    Failed(Failure),
    Broken,
    Stopped,
}

/// One instance's buffers and run state, kept from run to run.
struct Own<'p> {
    run: Run<'p>,
    rng: SmallRng,
    request: Vec<u8>,
    reply: Vec<u8>,
    /// `autocases`' marker, its output, and the tags it made, shared row to row.
    marker: Option<tank_plan::marker::Marker>,
    marked: Vec<u8>,
    tags: Interner,
}

/// Distinct `autocases` tags an instance keeps one copy of, and their bytes at most.
const INTERNED_TAGS: usize = 1024;
const INTERNED_TAG_BYTES: usize = 256 * 1024;

impl Own<'_> {
    /// The tag of request `request`'s row, just built into `self.request`.
    fn tag(&mut self, play: &Play, request: usize) -> Tag {
        let fixed = &play.tags[request];
        match &mut self.marker {
            Some(marker) if !play.book.request_tagged(request) => {
                match marker.mark(&self.request, &mut self.marked) {
                    Ok(()) => self.tags.get(&self.marked),
                    Err(_) => Arc::clone(fixed),
                }
            }
            _ => Arc::clone(fixed),
        }
    }
}

/// A scenario queue's instance: takes a shot (a run) at a time from the
/// dispatch and plays it through `barrel`. `instance` is its number in the
/// run (its random numbers' seed).
pub(crate) async fn scenario_instance<B: Barrel>(
    shared: Arc<Shared>,
    dispatch: Arc<Dispatch>,
    play: Arc<Play>,
    mut barrel: B,
    seat: Seat,
    instance: usize,
) {
    let mut own = Own {
        run: Run::new(&play.book, &play.defaults),
        rng: SmallRng::seed_from_u64(
            play.seed ^ (instance as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ),
        request: Vec::new(),
        reply: Vec::with_capacity(play.capture),
        marker: play.marker.clone(),
        marked: Vec::new(),
        tags: Interner::new(INTERNED_TAGS, INTERNED_TAG_BYTES),
    };
    let progress = barrel.progress();
    while let Some((shot, start)) = dispatch.next(seat).await {
        if shared
            .deadline
            .is_some_and(|deadline| Instant::from_std(start) >= deadline)
        {
            // The schedule is over: this run and the rest are unsent.
            if let Some(count_rest) = &shared.count_rest {
                count_rest.store(true, Ordering::Release);
            }
            dispatch.halt();
            return;
        }
        // The plan draws names from this book: a name it lacks cannot come.
        let Some(scenario) = play.book.scenario_named(&shot.request) else {
            continue;
        };
        play.tally.started.fetch_add(1, Ordering::Relaxed);
        // A run the instance is aborted in (a second Ctrl-C) ends cut short.
        let mut running = Running {
            tally: &play.tally,
            outcome: Outcome::Stopped,
        };
        running.outcome = play_run(
            &shared,
            &play,
            &mut barrel,
            &progress,
            &mut own,
            scenario,
            shot.due,
        )
        .await;
    }
}

/// A run started on its instance: when dropped (ended, or its instance
/// aborted mid-run), it is counted by its outcome.
struct Running<'a> {
    tally: &'a ScenarioTally,
    outcome: Outcome,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.tally.ended(self.outcome);
    }
}

/// One run of `scenario`, due at `due`.
async fn play_run<B: Barrel>(
    shared: &Shared,
    play: &Play,
    barrel: &mut B,
    progress: &ShotProgress,
    own: &mut Own<'_>,
    scenario: &Scenario,
    due: Option<Duration>,
) -> Outcome {
    let begun = Instant::now();
    own.run.start();
    for (i, step) in scenario.steps.iter().enumerate() {
        if i > 0 && shared.stop.is_cancelled() {
            return Outcome::Stopped;
        }
        // Later steps are due when the one before them ends: no lag.
        let due = if i == 0 { due } else { None };
        let built = own
            .run
            .request(step.request, &play.cursors, &mut own.rng, &mut own.request);
        if let Err(failure) = built {
            unsent_row(shared, due, &play.tags[step.request], failure);
            return Outcome::Failed(failure);
        }
        let tag = own.tag(play, step.request);
        let start = Instant::now();
        let since_start = start.saturating_duration_since(shared.clock.start);
        let in_flight = InFlight::enter(shared, start, since_start, due, &tag).watching(progress);
        let mut measured = barrel.fire(&own.request, start, Some(&mut own.reply)).await;
        let verdict = if measured.net_code == NetCode::OK {
            own.run.reply(step.request, &own.reply).map_err(Some)
        } else {
            Err(None)
        };
        if let Err(Some(failure)) = verdict {
            measured.net_code = net_code(failure.kind);
        }
        if let Some(sample) = in_flight.land(measured) {
            if let Some((answers, level)) = &shared.answers {
                if logged(*level, sample.measured.net_code, sample.measured.proto_code) {
                    answers.send(Answer {
                        sample: sample.clone(),
                        request: Arc::from(&own.request[..own.request.len().min(ANSWER_CAPTURE)]),
                        reply: own.reply[..own.reply.len().min(ANSWER_CAPTURE)].to_vec(),
                    });
                }
            }
            shared.samples.send(sample);
        }
        match verdict {
            Ok(()) => {}
            Err(Some(failure)) => return Outcome::Failed(failure),
            Err(None) => return Outcome::Broken,
        }
        if !pause(shared, step.sleep).await {
            return Outcome::Stopped;
        }
    }
    let spent = begun.elapsed();
    if scenario.min_waiting > spent && !pause(shared, scenario.min_waiting - spent).await {
        return Outcome::Stopped;
    }
    Outcome::Completed
}

/// The row of a step whose request was never sent: no time, no bytes, the failure's code.
fn unsent_row(shared: &Shared, due: Option<Duration>, tag: &Tag, failure: Failure) {
    let start = Instant::now();
    let since_start = start.saturating_duration_since(shared.clock.start);
    let in_flight = InFlight::enter(shared, start, since_start, due, tag);
    let measured = Measured {
        net_code: net_code(failure.kind),
        ..Measured::default()
    };
    if let Some(sample) = in_flight.land(measured) {
        shared.samples.send(sample);
    }
}

/// Sleep `duration`, unless the run is stopped first: `false` then.
async fn pause(shared: &Shared, duration: Duration) -> bool {
    if duration.is_zero() {
        return true;
    }
    // The instance holds its run while it sleeps: it counts as busy, as
    // while a step is in flight (the steps and the sleeps never overlap).
    // A guard, so that an instance aborted mid-sleep leaves too.
    struct Busy<'a>(&'a crate::active::Active);
    impl Drop for Busy<'_> {
        fn drop(&mut self) {
            self.0.leave();
        }
    }
    shared.active.enter();
    let _busy = Busy(&shared.active);
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        () = shared.stop.cancelled() => false,
    }
}
