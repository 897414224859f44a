//! tank-run: one run of a test, as a library.
//!
//! [`run`] does everything `tank -c load.ini` does between reading the config
//! and printing the summary: start the `[origin]` simulator if asked, prepare
//! the engine (every input error before a shot and before the artifacts
//! directory exists), create the artifacts, fire every queue while the results
//! thread writes phout and `test_data.log`, judges autostop and feeds an
//! [`Observer`], then build the summary and the reports and decide the exit
//! code. The CLI parses arguments, shows a console and forwards signals to a
//! [`Handle`]; later commands (a search, a sweep, shards) call [`run`] many
//! times in one process, and the tests call it in process.
//!
//! Data flows one way: config → plan → engine → stats → report. The only
//! things flowing back are the [`Handle`]'s stop and abort.

#![warn(missing_docs)]

mod answers;
mod artifacts;
mod captures;
mod collector;
mod observer;
mod origin;
mod outcome;
mod preload;
mod record;
mod rlimit;
mod start;
mod watch;

use std::time::Duration;

use tank_config::{ConfigError, Override, TestConfig, WriteLog};
use tank_engine::{priority, AnswerSink, Control, Engine, EngineError, IoThreads, SampleSink};
use tank_plan::Shard;
use tank_stats::autostop::Autostop;

use artifacts::Artifacts;

pub use artifacts::dir_name;
pub use captures::{import_captures, Captures};
pub use observer::{LiveState, Notice, Observer, Silent, Started};
pub use outcome::{Outcome, Verdict};
pub use record::clock::ClockInfo;
pub use record::{time, QueuePlan, ShardRecord, SHARD_JSON};

/// Samples buffered between the shooters and the results thread.
const SAMPLE_QUEUE: usize = 1 << 18;
/// The schedule starts this long after the clock is read, so that threads,
/// instances and the first shots are ready when they are due.
const START_LEAD: Duration = Duration::from_millis(50);
/// The same for a common start (`start_at`): the run waits anyway, so it wakes
/// this much before it, to have its threads, instances and first shots ready on a
/// busy machine too; shards' first shots then leave within a timer tick of it.
const COMMON_START_LEAD: Duration = Duration::from_secs(1);

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
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
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
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        what: what.to_owned(),
        source,
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
                set += preload::run(&queue.name, *target, workload, |done, total| {
                    observer.preload(&queue.name, done, total)
                })?;
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

/// Run `spec`: fire every queue, record and judge every shot, write the
/// artifacts, and say how it went. `observer` sees each finished second;
/// `handle` stops the run from outside.
pub fn run(spec: &Spec, observer: Box<dyn Observer>, handle: &Handle) -> Result<Outcome, RunError> {
    let mut observer = observer;
    // Held to the end of the run: the sessions files imported captures became.
    let captures = import_captures(&spec.config, &mut |notice| observer.notice(&notice))?;
    let with_sessions;
    let spec = match &captures {
        Some(captures) => {
            with_sessions = Spec {
                config: captures.config().clone(),
                ..spec.clone()
            };
            &with_sessions
        }
        None => spec,
    };
    let config = &spec.config;
    if let Some(at) = spec.start_at {
        start::check_ahead(at, Duration::ZERO)?;
    }
    // Asked on this thread first, to learn (and log) whether the kernel takes it;
    // then by every I/O thread, where the instances wake.
    let short_slice = priority::short_slice();
    let io_threads_ask = short_slice.is_ok();
    // This thread's runtime runs the queues' bookkeeping and the embedded origin
    // simulator; the instances run on the I/O threads started below.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("starting the runtime"))?;
    for warning in &config.warnings {
        observer.notice(&Notice::Warning(warning));
    }
    // A closed model that nothing but its ammo ends, said before it starts.
    for queue in config
        .queues
        .iter()
        .filter(|q| q.loop_count == -1 && q.ammo_limit == -1)
    {
        if let Some(end) = tank_plan::Plan::closed_model_end(queue) {
            observer.notice(&Notice::Warning(&format!(
                "[{}] the test {end}",
                queue.name
            )));
        }
    }
    // What drawn plans draw from, said so that the run can be repeated; the
    // shards of a test must draw the same plan, so they need a set seed.
    for queue in &config.queues {
        let Some(note) = tank_plan::Plan::seed_note(queue) else {
            continue;
        };
        if !spec.shard.is_whole() && queue.arrivals.seed_chosen {
            return Err(RunError::Shard(format!(
                "[{}] the plan is drawn ({note}), and each shard would draw its own: \
                 expected `arrivals_seed` set, so every shard plans the same shots",
                queue.name
            )));
        }
        observer.notice(&Notice::Info(&format!("[{}] {note}", queue.name)));
    }
    let origin = match &config.origin {
        Some(origin) => {
            let (server, warning) = runtime.block_on(origin::start(origin))?;
            if let Some(warning) = &warning {
                observer.notice(&Notice::Warning(warning));
            }
            Some(server)
        }
        None => None,
    };
    let engine = Engine::prepare_shard(
        config,
        origin.as_ref().map(tank_origin::Server::local_addr),
        spec.shard,
    )?;
    // Bad ammo found mid-run would stop a test already under way.
    for queue in &config.queues {
        tank_plan::Plan::check_ammo(queue).map_err(|e| RunError::Engine(EngineError::Plan(e)))?;
    }
    // `[memcached] preload`: every record set before the measured run.
    let targets: Vec<_> = engine.queues().iter().map(|q| q.target()).collect();
    preload_workloads(config, &targets, &mut *observer, false)?;
    let instances_limit = engine.total_instances() as u64;
    // Checked before the artifacts directory exists: bad input leaves nothing behind.
    let autostop = autostop_for(config, instances_limit).map_err(RunError::Autostop)?;
    rlimit::raise_file_limit(instances_limit)?;
    let io_threads = IoThreads::start(engine.io_threads().count, move || {
        if io_threads_ask {
            // Granted to this thread a moment ago: a refusal now changes nothing that matters.
            let _ = priority::short_slice();
        }
    })
    .map_err(io("starting the I/O threads"))?;
    let artifacts = Artifacts::create(config, &spec.overrides)?;
    log_setup(&artifacts, config, &engine, &short_slice);
    for warning in &config.warnings {
        artifacts.log(&format!("warning: {warning}"));
    }
    // Held until the run is over; the kernel drops it when tank exits, however it exits.
    let cpus_awake = config.core.keep_cpus_awake.then(priority::keep_cpus_awake);
    artifacts.log(&match &cpus_awake {
        Some(Ok(_)) => "CPUs kept awake while shooting (keep_cpus_awake)".to_owned(),
        Some(Err(why)) => format!(
            "CPUs may sleep: cannot write {} ({why}; it needs root). Shots due while a \
             CPU wakes up go late",
            priority::CPU_LATENCY_DEVICE
        ),
        None => "CPUs may sleep: keep_cpus_awake = 0".to_owned(),
    });

    // A time daemon is asked only when the start is shared with other shards.
    let clock_info = if spec.shard.is_whole() && spec.start_at.is_none() {
        ClockInfo::read_local()
    } else {
        ClockInfo::read()
    };
    artifacts.log(&clock_info.describe());
    let clock = match spec.start_at {
        Some(at) => {
            artifacts.log(&format!(
                "shard {}: waiting for the common start {}",
                spec.shard,
                time::format_rfc3339(at)
            ));
            start::wait_for(at, COMMON_START_LEAD, &runtime, &handle.control)?
        }
        None => tank_engine::Clock::starting_in(START_LEAD),
    };
    let record = start::record(spec, &engine, clock.start_unix_us, clock_info);
    record.write(artifacts.dir()).map_err(io(SHARD_JSON))?;
    let facts = outcome::Facts::of(config, &engine);
    observer.started(&Started {
        instances: instances_limit,
        longest_schedule: facts.longest_schedule(),
        artifacts: artifacts.dir(),
        start_unix_us: clock.start_unix_us,
    });
    let control = handle.control.clone();
    let watch = match &config.monitoring {
        Some(monitoring) => {
            for warning in &monitoring.warnings {
                observer.notice(&Notice::Warning(warning));
                artifacts.log(&format!("monitoring: {warning}"));
            }
            let log = artifacts.create_file(watch::MONITORING_LOG)?;
            let watch = watch::Watch::start(monitoring, log, artifacts.file(watch::MONITORING_LOG))
                .map_err(io("starting the monitoring threads"))?;
            artifacts.log(&format!(
                "monitoring {} host(s) into {}",
                monitoring.hosts.len(),
                watch::MONITORING_LOG
            ));
            Some(watch)
        }
        None => None,
    };
    let mut exports = collector::Exports::default();
    if let Some(influx) = &config.influx {
        let uuid = uuid::Uuid::new_v4().simple().to_string();
        exports.influx = Some(
            tank_export::influx::Influx::start(influx, &uuid)
                .map_err(io("starting the InfluxDB writer"))?,
        );
        artifacts.log(&format!(
            "influx: writing to {}:{} (uuid {uuid})",
            influx.address, influx.port
        ));
    }
    if let Some(prometheus) = &config.prometheus {
        let endpoint =
            tank_export::prometheus::Endpoint::start(prometheus.listen).map_err(|e| {
                RunError::Io {
                    what: format!("[prometheus] listen {}", prometheus.listen),
                    source: e,
                }
            })?;
        artifacts.log(&format!(
            "prometheus: serving http://{}/metrics",
            endpoint.local_addr()
        ));
        exports.prometheus = Some(endpoint);
    }
    let live = collector::Live::new(collector::Parts {
        config,
        engine: &engine,
        artifacts: &artifacts,
        start_unix_us: clock.start_unix_us,
        autostop,
        control: control.clone(),
        observer,
        watch,
        exports,
    })?;
    let (samples, sample_rx) = SampleSink::new(SAMPLE_QUEUE);
    let collector = collector::spawn(sample_rx, live).map_err(io("starting the results thread"))?;
    let answers = if config.queues.iter().any(|q| q.writelog != WriteLog::Off) {
        let (sink, rx) = AnswerSink::new(4096);
        let file = artifacts.create_file("answ.log")?;
        let thread = answers::spawn(rx, file).map_err(io("starting the answers thread"))?;
        Some((sink, thread))
    } else {
        None
    };
    if let Some(origin) = &origin {
        artifacts.log(&format!("origin simulator on {}", origin.local_addr()));
    }
    let report = runtime.block_on(async {
        let report = engine
            .run(
                clock,
                samples,
                answers.as_ref().map(|(sink, _)| sink.clone()),
                control.clone(),
                &io_threads,
            )
            .await;
        if let Some(origin) = origin {
            origin.shutdown().await;
        }
        report
    });
    drop(cpus_awake);
    let collected = collector.join().map_err(|_| RunError::Thread("results"))?;
    let mut notes = outcome::Notes {
        record,
        answers_dropped: 0,
        timer_fallback: io_threads.timer_fallback().map(str::to_owned),
    };
    if let Some((sink, thread)) = answers {
        notes.answers_dropped = sink.dropped();
        drop(sink);
        let written = thread
            .join()
            .map_err(|_| RunError::Thread("answers"))?
            .map_err(io("writing answ.log"))?;
        artifacts.log(&format!("answ.log: {written} entries"));
    }
    Ok(outcome::finish(
        spec,
        facts,
        report,
        collected,
        control.stop.is_cancelled(),
        notes,
        &artifacts,
    ))
}

/// The `[autostop]` criteria of `config`, checked; errors name where they were written.
pub fn autostop_for(config: &TestConfig, instances_limit: u64) -> Result<Autostop, ConfigError> {
    let at = || match &config.autostop.criteria_at {
        Some(place) => place.clone(),
        None => tank_config::OptionPlace::unwritten(&config.path, "autostop", "autostop"),
    };
    let autostop = Autostop::new(&config.autostop.criteria, instances_limit)
        .map_err(|e| at().error(e.to_string()))?;
    if autostop.watches_monitoring() && config.monitoring.is_none() {
        return Err(at().error(
            "metric_higher / metric_lower judge monitoring, which is off: add a \
             [telegraf] section naming the hosts to watch",
        ));
    }
    Ok(autostop)
}

/// What tank.log says about how the run is set up.
fn log_setup(
    artifacts: &Artifacts,
    config: &TestConfig,
    engine: &Engine,
    short_slice: &Result<(), std::io::Error>,
) {
    artifacts.log(&format!(
        "config {} with {} queue(s)",
        config.path.display(),
        engine.queues().len()
    ));
    for queue in engine.queues() {
        artifacts.log(&format!(
            "[{}] {} instances, target {}",
            queue.name(),
            queue.pool(),
            queue.target()
        ));
    }
    for queue in &config.queues {
        if let Some(note) = tank_plan::Plan::seed_note(queue) {
            artifacts.log(&format!("[{}] {note}", queue.name));
        }
    }
    let threads = engine.io_threads();
    artifacts.log(&format!(
        "{} I/O threads ({})",
        threads.count,
        if threads.configured {
            "threads"
        } else {
            "default: cores/2 + 1; set with threads"
        }
    ));
    artifacts.log(&match short_slice {
        Ok(()) => format!(
            "I/O threads: {} µs scheduler slice, so instances run soon after they wake",
            priority::SHORT_SLICE_NS / 1000
        ),
        Err(why) => format!("I/O threads: the default scheduler slice ({why})"),
    });
}
