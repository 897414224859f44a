//! tank-run: one run of a test, as a library — the driver above the
//! pipeline (config → plan → engine → stats → results → report), as ripgrep's core sits
//! above its searcher and printer.
//!
//! A run goes through four phases, each a type only the one before can make:
//! - [`Prepared::new`] checks every input (captures, plans, ammo, guns' options,
//!   the origin recipe, autostop, shards) with no side effects; `tank plan` is
//!   this plus printing;
//! - [`Prepared::start`] sets up what has side effects: the origin simulator,
//!   the targets, the artifacts, the I/O threads, monitoring, exports and the
//!   results thread ([`Running`]);
//! - [`Running::fire`] fires every queue until its plan ends or the run is
//!   stopped ([`Fired`]);
//! - [`Fired::finish`] builds the summary and the reports and decides the
//!   exit code ([`Outcome`]).
//!
//! [`run`] does all four, which is what `tank -c load.ini` does between
//! reading the config and printing the summary. The CLI parses arguments,
//! shows a console and forwards signals to a [`Handle`]; later commands (a
//! search, a sweep, shards) call [`run`] many times in one process, and the
//! tests call it in process. The only things flowing back are the
//! [`Handle`]'s stop and abort.

#![warn(missing_docs)]

mod answers;
mod artifacts;
mod captures;
mod collector;
mod observer;
mod outcome;
mod phases;
mod preload;
mod prepare;
mod record;
mod rlimit;
mod start;
mod watch;

use tank_config::{ConfigError, Override, TestConfig};
use tank_engine::{Control, Engine, EngineError};
use tank_plan::Shard;

pub use artifacts::dir_name;
pub use observer::{LiveState, Notice, Observer, Silent, Started};
pub use outcome::{Outcome, Verdict};
pub use phases::{Fired, Running};
pub use prepare::{Note, Prepared};
pub use record::clock::ClockInfo;
pub use record::{time, QueuePlan, ShardRecord, SHARD_JSON};

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The loaded config.
    pub config: TestConfig,
    /// The command line's `-o` overrides, noted in the config copy.
    pub overrides: Vec<Override>,
    /// Exit with [`Verdict::Warnings`]'s code instead of 0 when the run ends with
    /// warnings (also set by `[tank] fail_on_warnings`).
    pub fail_on_warnings: bool,
    /// The slice of every queue's plan this run fires ([`Shard::WHOLE`]: all of it).
    pub shard: Shard,
    /// A common wall-clock start, µs since the Unix epoch: the run waits for it
    /// and starts its schedule there (`None`: a moment after it is ready). A
    /// start already past is an error, never a late start.
    pub start_at: Option<u64>,
    /// Apiary's statistics view every this often (`None`: off): on the
    /// observer's console and in summary.json (`tank_report::apiary`).
    pub apiary: Option<std::time::Duration>,
}

impl Spec {
    /// Run `config` as it is: the whole plan, starting when ready.
    pub fn new(config: TestConfig) -> Spec {
        Spec {
            config,
            overrides: Vec::new(),
            fail_on_warnings: false,
            shard: Shard::WHOLE,
            start_at: None,
            apiary: None,
        }
    }
}

/// Steers one run from outside: a Ctrl-C handler, a search's time limit.
/// A handle serves one run; once stopped it stays stopped.
#[derive(Debug, Clone, Default)]
pub struct Handle {
    control: Control,
}

impl Handle {
    /// Stop firing; shots in flight finish (within `timeout`) and are recorded.
    pub fn stop(&self) {
        self.control.stop.cancel();
    }

    /// Stop at once; shots in flight are recorded as abandoned (net code 125).
    pub fn abort(&self) {
        self.control.stop.cancel();
        self.control.abort.cancel();
    }
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A queue's plan, ammo or options.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The `[autostop]` criteria, located where they were written.
    #[error("{0}")]
    Autostop(ConfigError),
    /// The `[origin]` simulator.
    #[error("[origin] {0}")]
    Origin(String),
    /// `[memcached] preload` failed.
    #[error("{0}")]
    Preload(String),
    /// The machine cannot hold the run (open files).
    #[error("{0}")]
    OpenFiles(String),
    /// An I/O step of setting up or finishing the run.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// Why it failed (shown in the message, so not also a source: an
        /// error chain would say it twice).
        error: std::io::Error,
    },
    /// A thread of the run panicked.
    #[error("the {0} thread failed")]
    Thread(&'static str),
    /// The shards of a test would plan different shots.
    #[error("{0}")]
    Shard(String),
    /// The common start (`--start-at`) cannot be kept.
    #[error("{0}")]
    Start(String),
    /// A replay's capture could not be imported, located at its `ammofile`.
    #[error("{0}")]
    Import(ConfigError),
    /// The artifacts directory asked for holds an earlier run.
    #[error("{0}")]
    Artifacts(String),
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |error| RunError::Io {
        what: what.to_owned(),
        error,
    }
}

/// Set the records of each queue's `[memcached]` workload at its target
/// (`targets`, in queue order): those that ask for `preload`, or all of them
/// when `all`. Each workload's line (with its seed) is shown first. Returns
/// the records set.
fn preload_workloads(
    config: &TestConfig,
    targets: &[std::net::SocketAddr],
    observer: &mut dyn Observer,
    all: bool,
) -> Result<u64, RunError> {
    let mut set = 0;
    for (queue, target) in config.queues.iter().zip(targets) {
        if let Some(tank_config::AmmoSource::Memcached(workload)) = &queue.ammo {
            observer.notice(&Notice::Info(&tank_plan::ammo::memcached::describe(
                workload,
            )));
            if workload.preload || all {
                set += preload::run(
                    &queue.name,
                    *target,
                    workload,
                    queue.timeout,
                    |done, total| observer.preload(&queue.name, done, total),
                )?;
            }
        }
    }
    Ok(set)
}

/// `tank --loadonly`, as mcperf's: set every record of each queue's
/// `[memcached]` workload, as `preload = 1` does before a run, and fire
/// nothing else. Returns the records set; a config with no such queue is an
/// error.
pub fn load_only(spec: &Spec, observer: Box<dyn Observer>) -> Result<u64, RunError> {
    let config = &spec.config;
    if !config
        .queues
        .iter()
        .any(|q| matches!(q.ammo, Some(tank_config::AmmoSource::Memcached(_))))
    {
        return Err(RunError::Preload(format!(
            "{}: nothing to load: no queue has `tank_type = memcached` and a [memcached] workload",
            config.path.display()
        )));
    }
    let engine = Engine::prepare(config, None)?;
    let targets: Vec<_> = engine.queues().iter().map(|q| q.target()).collect();
    let mut observer = observer;
    preload_workloads(config, &targets, &mut *observer, true)
}

/// Run `spec`: check it, fire every queue, record and judge every shot,
/// write the artifacts, and say how it went. `observer` sees each finished
/// second; `handle` stops the run from outside.
pub fn run(spec: &Spec, observer: Box<dyn Observer>, handle: &Handle) -> Result<Outcome, RunError> {
    Ok(Prepared::stoppable(spec, handle)?
        .start(observer, handle)?
        .fire()?
        .finish())
}
