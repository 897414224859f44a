//! A run after its input is checked, in three phases, each a type that only
//! the one before can make: [`Prepared::start`] sets up everything that has a
//! side effect (the origin simulator, the engine's targets, the artifacts,
//! the I/O threads, monitoring, exports and the results thread) and returns a
//! [`Running`]; [`Running::fire`] runs the engine until the plan ends or the
//! run is stopped and returns a [`Fired`]; [`Fired::finish`] builds the
//! summary and the reports and decides the exit code.

use std::fs::File;
use std::thread::JoinHandle;

use tank_config::{TestConfig, WriteLog};
use tank_engine::{priority, AnswerSink, Clock, Control, Engine, IoThreads, SampleSink};

use crate::artifacts::Artifacts;
use crate::captures::Captures;
use crate::collector::{self, Collected};
use crate::observer::{Notice, Observer, Started};
use crate::outcome::{self, Facts, Notes, Outcome};
use crate::prepare::{OriginSetup, Prepared};
use crate::record::clock::ClockInfo;
use crate::record::{time, ShardRecord, SHARD_JSON};
use crate::{answers, io, preload_workloads, rlimit, start, watch, Handle, RunError, Spec};

/// Samples buffered between the shooters and the results thread.
const SAMPLE_QUEUE: usize = 1 << 18;
/// The schedule starts this long after the clock is read, so that threads,
/// instances and the first shots are ready when they are due.
const START_LEAD: std::time::Duration = std::time::Duration::from_millis(50);
/// The same for a common start (`start_at`): the run waits anyway, so it wakes
/// this much before it, to have its threads, instances and first shots ready on a
/// busy machine too; shards' first shots then leave within a timer tick of it.
const COMMON_START_LEAD: std::time::Duration = std::time::Duration::from_secs(1);

/// A run that is set up and about to fire.
pub struct Running {
    spec: Spec,
    /// The imported sessions files, removed when the run is over.
    _captures: Option<Captures>,
    runtime: tokio::runtime::Runtime,
    origin: Option<tank_origin::Server>,
    engine: Engine,
    io_threads: IoThreads,
    artifacts: Artifacts,
    /// Held until the shooting is over; the kernel drops it when tank exits, however it exits.
    cpus_awake: Option<std::io::Result<priority::CpusAwake>>,
    clock: Clock,
    record: ShardRecord,
    facts: Facts,
    control: Control,
    samples: SampleSink,
    collector: JoinHandle<Collected>,
    answers: Option<Answers>,
}

/// The answers log's sink and the thread writing it (its entries written).
type Answers = (AnswerSink, JoinHandle<std::io::Result<u64>>);

/// A run that has fired: what the engine and the results thread measured.
pub struct Fired {
    spec: Spec,
    _captures: Option<Captures>,
    artifacts: Artifacts,
    facts: Facts,
    report: tank_engine::RunReport,
    collected: Collected,
    stopped_early: bool,
    notes: Notes,
}

impl Prepared {
    /// Set the run up: see the module docs. `observer` sees the notes, each
    /// finished second and what stops the run; `handle` may stop it already
    /// while it waits for a common start.
    pub fn start(self, observer: Box<dyn Observer>, handle: &Handle) -> Result<Running, RunError> {
        let mut observer = observer;
        for note in self.notes() {
            observer.notice(&note.notice());
        }
        let Prepared {
            spec,
            captures,
            queues,
            autostop,
            origin,
            ..
        } = self;
        let config = &spec.config;
        // Asked on this thread first, to learn (and log) whether the kernel takes it;
        // then by every I/O thread, where the instances wake. Threads started from
        // here on (results, feeders) inherit it.
        let short_slice = priority::short_slice();
        // This thread's runtime runs the queues' bookkeeping and the embedded origin
        // simulator; the instances run on the I/O threads started below.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("starting the runtime"))?;
        let origin = start_origin(origin, &runtime, &mut *observer)?;
        let engine = Engine::new(
            queues,
            origin.as_ref().map(tank_origin::Server::local_addr),
            config.run.threads,
        )?;
        // `[memcached] preload`: every record set before the measured run.
        let targets: Vec<_> = engine.queues().iter().map(|q| q.target()).collect();
        preload_workloads(config, &targets, &mut *observer, false)?;
        rlimit::raise_file_limit(engine.total_instances() as u64)?;
        let io_threads = start_io_threads(engine.io_threads().count, short_slice.is_ok())?;
        let artifacts = Artifacts::create(config, &spec.overrides)?;
        log_setup(&artifacts, config, &engine, &short_slice);
        let cpus_awake = keep_cpus_awake(config, &artifacts);
        let (clock, record) = start_clock(&spec, &engine, &artifacts, &runtime, handle)?;
        let facts = Facts::of(config, &engine);
        observer.started(&Started {
            instances: engine.total_instances() as u64,
            longest_schedule: facts.longest_schedule(),
            planned_known: engine.queues().iter().all(|q| q.planned().is_some()),
            artifacts: artifacts.dir(),
            start_unix_us: clock.start_unix_us,
        });
        let (samples, collector) = start_results(
            &spec,
            &engine,
            &artifacts,
            clock.start_unix_us,
            autostop,
            handle.control.clone(),
            observer,
        )?;
        let answers = start_answers(config, &artifacts)?;
        if let Some(origin) = &origin {
            artifacts.log(&format!("origin simulator on {}", origin.local_addr()));
        }
        Ok(Running {
            spec,
            _captures: captures,
            runtime,
            origin,
            engine,
            io_threads,
            artifacts,
            cpus_awake,
            clock,
            record,
            facts,
            control: handle.control.clone(),
            samples,
            collector,
            answers,
        })
    }
}

/// The I/O threads the instances run on; each asks for the short time slice when this
/// thread was granted it.
fn start_io_threads(
    count: std::num::NonZeroUsize,
    ask_short_slice: bool,
) -> Result<IoThreads, RunError> {
    IoThreads::start(count, move || {
        if ask_short_slice {
            // Granted to this thread a moment ago: a refusal now changes nothing that matters.
            let _ = priority::short_slice();
        }
    })
    .map_err(io("starting the I/O threads"))
}

impl Running {
    /// Fire every queue until its plan ends or the run is stopped, then wait
    /// for the results and answers threads to write what they were given.
    pub fn fire(self) -> Result<Fired, RunError> {
        let Running {
            spec,
            _captures,
            runtime,
            origin,
            engine,
            io_threads,
            artifacts,
            cpus_awake,
            clock,
            record,
            facts,
            control,
            samples,
            collector,
            answers,
        } = self;
        let answer_sink = answers.as_ref().map(|(sink, _)| sink.clone());
        let report = runtime.block_on(async {
            let report = engine
                .run(clock, samples, answer_sink, control.clone(), &io_threads)
                .await;
            if let Some(origin) = origin {
                origin.shutdown().await;
            }
            report
        });
        drop(cpus_awake);
        let collected = collector.join().map_err(|_| RunError::Thread("results"))?;
        let mut notes = Notes {
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
        Ok(Fired {
            spec,
            _captures,
            artifacts,
            facts,
            report,
            collected,
            stopped_early: control.stop.is_cancelled(),
            notes,
        })
    }
}

impl Fired {
    /// Build the summary, write the reports, decide the exit code.
    pub fn finish(self) -> Outcome {
        outcome::finish(
            &self.spec,
            self.facts,
            self.report,
            self.collected,
            self.stopped_early,
            self.notes,
            &self.artifacts,
        )
    }
}

/// Start the `[origin]` simulator, if the config has one; a warning when its
/// admin API is reachable beyond loopback.
fn start_origin(
    origin: Option<OriginSetup>,
    runtime: &tokio::runtime::Runtime,
    observer: &mut dyn Observer,
) -> Result<Option<tank_origin::Server>, RunError> {
    let Some(OriginSetup {
        listen,
        recipes,
        options,
    }) = origin
    else {
        return Ok(None);
    };
    let server = runtime
        .block_on(tank_origin::Server::start_with(listen, recipes, options))
        .map_err(|e| RunError::Origin(format!("cannot start the simulator on {listen}: {e}")))?;
    if let Some(warning) = server.exposure_warning() {
        observer.notice(&Notice::Warning(&warning));
    }
    Ok(Some(server))
}

/// Ask the kernel to keep idle CPUs polling while the run shoots (unless
/// `keep_cpus_awake = 0`), and say in tank.log whether it was granted.
fn keep_cpus_awake(
    config: &TestConfig,
    artifacts: &Artifacts,
) -> Option<std::io::Result<priority::CpusAwake>> {
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
    cpus_awake
}

/// The run's time origin — a moment from now, or the common start waited
/// for — and `shard.json`, written with it.
fn start_clock(
    spec: &Spec,
    engine: &Engine,
    artifacts: &Artifacts,
    runtime: &tokio::runtime::Runtime,
    handle: &Handle,
) -> Result<(Clock, ShardRecord), RunError> {
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
            start::wait_for(at, COMMON_START_LEAD, runtime, &handle.control)?
        }
        None => Clock::starting_in(START_LEAD),
    };
    let record = start::record(spec, engine, clock.start_unix_us, clock_info);
    record.write(artifacts.dir()).map_err(io(SHARD_JSON))?;
    Ok((clock, record))
}

/// Start the results thread: it takes the samples off the shooters (the sink
/// returned) and drives the results pipeline: phout and `test_data.log`,
/// autostop (stopping the run through `control`), monitoring, the exports,
/// Apiary's view (`--apiary`), and each finished second shown to `observer`.
fn start_results(
    spec: &Spec,
    engine: &Engine,
    artifacts: &Artifacts,
    start_unix_us: u64,
    autostop: tank_stats::autostop::Autostop,
    control: Control,
    mut observer: Box<dyn Observer>,
) -> Result<(SampleSink, JoinHandle<Collected>), RunError> {
    let config = &spec.config;
    let apiary = spec.apiary.map(|interval| {
        let codes = config
            .queues
            .iter()
            .map(|queue| match queue.tank_type {
                tank_config::TankType::Mysql => tank_report::apiary::Codes::Mysql,
                tank_config::TankType::None => tank_report::apiary::Codes::None,
                tank_config::TankType::Http
                | tank_config::TankType::Http2
                | tank_config::TankType::Grpc
                | tank_config::TankType::Memcached => tank_report::apiary::Codes::Http,
            })
            .collect();
        tank_report::apiary::ApiaryView::new(interval, codes, std::time::Duration::ZERO)
    });
    let live = collector::Live::new(collector::Parts {
        config,
        engine,
        artifacts,
        start_unix_us,
        autostop,
        control,
        watch: start_watch(config, artifacts, &mut *observer)?,
        exports: start_exports(config, artifacts, spec.shard)?,
        observer,
        apiary,
    })?;
    let (samples, sample_rx) = SampleSink::new(SAMPLE_QUEUE);
    let collector = collector::spawn(sample_rx, live).map_err(io("starting the results thread"))?;
    Ok((samples, collector))
}

/// Start watching the monitored hosts (`[telegraf]`), if the config has any.
fn start_watch(
    config: &TestConfig,
    artifacts: &Artifacts,
    observer: &mut dyn Observer,
) -> Result<Option<watch::Watch>, RunError> {
    let Some(monitoring) = &config.monitoring else {
        return Ok(None);
    };
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
    Ok(Some(watch))
}

/// Start the `[influx]` writer and the `[prometheus]` endpoint the config asks for.
fn start_exports(
    config: &TestConfig,
    artifacts: &Artifacts,
    shard: tank_plan::Shard,
) -> Result<collector::Exports, RunError> {
    let mut exports = collector::Exports::default();
    let run = tank_export::RunTags {
        shard: shard.to_string(),
        job: config
            .job
            .fields()
            .filter(|(key, _)| *key != "job_dsc")
            .map(|(key, value)| {
                let known = tank_config::job::JOB_KEYS.contains(&key);
                let name = if known {
                    key.to_owned()
                } else {
                    format!("meta.{key}")
                };
                (name, value.to_owned())
            })
            .collect(),
    };
    if let Some(influx) = &config.influx {
        let uuid = uuid::Uuid::new_v4().simple().to_string();
        exports.influx = Some(
            tank_export::influx::Influx::start(influx, &uuid, &run)
                .map_err(io("starting the InfluxDB writer"))?,
        );
        artifacts.log(&format!(
            "influx: writing to {}:{} (uuid {uuid})",
            influx.address, influx.port
        ));
    }
    if let Some(prometheus) = &config.prometheus {
        let endpoint =
            tank_export::prometheus::Endpoint::start(prometheus.listen, &run).map_err(|error| {
                RunError::Io {
                    what: format!("[prometheus] listen {}", prometheus.listen),
                    error,
                }
            })?;
        artifacts.log(&format!(
            "prometheus: serving http://{}/metrics",
            endpoint.local_addr()
        ));
        exports.prometheus = Some(endpoint);
    }
    Ok(exports)
}

/// Start the answers thread (`answ.log`) when a queue's `writelog` asks for one.
fn start_answers(config: &TestConfig, artifacts: &Artifacts) -> Result<Option<Answers>, RunError> {
    if config.queues.iter().all(|q| q.writelog == WriteLog::Off) {
        return Ok(None);
    }
    let (sink, rx) = AnswerSink::new(4096);
    let file: File = artifacts.create_file("answ.log")?;
    let thread = answers::spawn(rx, file).map_err(io("starting the answers thread"))?;
    Ok(Some((sink, thread)))
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
    for warning in &config.warnings {
        artifacts.log(&format!("warning: {warning}"));
    }
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
            "I/O threads (and the run's other threads): {} µs scheduler slice, so instances run soon after they wake",
            priority::SHORT_SLICE_NS / 1000
        ),
        Err(why) => format!("I/O threads: the default scheduler slice ({why})"),
    });
}
