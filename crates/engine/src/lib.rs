//! tank-engine: fires each queue of a test on time and measures every shot.
//!
//! [`CheckedQueue::check`] does everything that can fail on bad input with
//! no side effect (opening plans and ammo, TLS files, the gun's options:
//! tank-run's prepare stage calls it for every queue); [`Engine::new`] then
//! resolves the targets, and [`Engine::prepare`] does both at once for a
//! caller with nothing to check in between. [`Engine::run`] runs every queue
//! side by side, its instances
//! spread over the [`IoThreads`]. Each queue has a feeder thread running its
//! plan (`feed`), a `dispatch` that hands its shots to free instances when
//! they are due, and a pool of instances (`queue`) firing through the gun its
//! `tank_type` asks for (`gun`: one module per protocol, behind one contract).
//! Samples leave through a [`SampleSink`]; the only thing flowing back in is
//! [`Control`]: stop (finish shots in flight) and abort (drop them).

#![warn(missing_docs)]

mod active;
mod dispatch;
mod feed;
pub mod gun;
pub mod http;
mod io_threads;
pub mod netcode;
pub mod priority;
mod queue;
mod sink;
mod started;
mod tally;
pub mod target;
mod timer;
pub mod tls;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tank_config::{ConfigError, QueueConfig, TestConfig, WriteLog};
use tank_plan::{Plan, PlanError, PlannedCount, Shard};
use tank_stats::{micros, QueueIndex};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use active::Active;
pub use io_threads::IoThreads;
pub use queue::scenario::{FailureCount, ScenarioCounts, ScenarioReport, ScenarioTally};
pub use sink::{Answer, AnswerSink, SampleSink};
pub use started::{StartedSeconds, StartedShots};
pub use tally::SessionTally;

/// Why a test cannot start, or a queue failed. Every message names the config
/// file, line, section and option it is about.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A queue's plan or ammo.
    #[error("{0}")]
    Plan(PlanError),
    /// A queue option the engine acts on (a target, a certificate).
    #[error("{0}")]
    Option(ConfigError),
    /// A queue failed for a reason no option is to blame for.
    #[error("[{queue}] {message}")]
    Queue {
        /// The queue.
        queue: String,
        /// What went wrong.
        message: String,
    },
}

/// The run's time origin, in both clocks, so every sample's start converts to
/// unix time the same way.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The test's start (monotonic).
    pub start: Instant,
    /// The same moment, µs since the Unix epoch.
    pub start_unix_us: u64,
}

impl Clock {
    /// Now.
    pub fn now() -> Self {
        let start_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, micros);
        Clock {
            start: Instant::now(),
            start_unix_us,
        }
    }

    /// A start `lead` from now: the run's threads and instances get going
    /// before the first shots are due, instead of making them late.
    pub fn starting_in(lead: Duration) -> Self {
        let now = Clock::now();
        Clock {
            start: now.start + lead,
            start_unix_us: now.start_unix_us.saturating_add(micros(lead)),
        }
    }

    /// The moment `since_start` after the start, as µs since the Unix epoch.
    pub fn unix_us(&self, since_start: Duration) -> u64 {
        self.start_unix_us.saturating_add(micros(since_start))
    }
}

/// How the caller steers a run.
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Stop firing; shots in flight finish (within `timeout`) and are logged.
    pub stop: CancellationToken,
    /// Stop at once; shots in flight are dropped, not logged.
    pub abort: CancellationToken,
}

/// A queue ready to run.
pub struct PreparedQueue {
    name: String,
    plan: Plan,
    gun: gun::Guns,
    pool: usize,
    schedule_ms: Option<u64>,
    planned: Option<PlannedCount>,
    writelog: WriteLog,
    active: Arc<Active>,
    /// Shots started, per second (the sent counts).
    started: Arc<StartedShots>,
    /// A replay's sessions as they go (`None` for other models).
    sessions: Option<Arc<SessionTally>>,
    /// A scenario queue's setup (`None` for other ammo).
    scenario: Option<Arc<queue::scenario::Play>>,
}

impl PreparedQueue {
    /// The section name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The endpoint its shots go to: the resolved address, with `port` applied.
    pub fn target(&self) -> SocketAddr {
        self.gun.endpoint()
    }

    /// Instances this queue runs.
    pub fn pool(&self) -> usize {
        self.pool
    }

    /// The open model's schedule length (the queue ends there), if any.
    pub fn schedule_duration(&self) -> Option<Duration> {
        self.schedule_ms.map(Duration::from_millis)
    }

    /// The plan's shots as a function of time, when known without walking the
    /// plan (an rps schedule over ammo that never runs out); `None` otherwise:
    /// then the count is known only once the feeder reaches the plan's end.
    pub fn planned(&self) -> Option<&PlannedCount> {
        self.planned.as_ref()
    }

    /// Instances firing right now (a live counter for the console and autostop).
    pub fn active(&self) -> Arc<Active> {
        Arc::clone(&self.active)
    }

    /// Shots started, per second: each second's sent count, final once the
    /// second is over (read with [`StartedSeconds`]).
    pub fn started(&self) -> Arc<StartedShots> {
        Arc::clone(&self.started)
    }

    /// A replay's sessions running, started and completed (`None` for other models).
    pub fn sessions(&self) -> Option<Arc<SessionTally>> {
        self.sessions.clone()
    }

    /// A scenario queue's runs as they go (`None` for other ammo).
    pub fn scenarios(&self) -> Option<Arc<ScenarioTally>> {
        self.scenario.as_ref().map(|play| Arc::clone(play.tally()))
    }

    /// A replay's span: when its last request is due, from the start (`None`
    /// for other models, and for a replay whose count was not walked).
    pub fn replay_span(&self) -> Option<Duration> {
        self.sessions.as_ref()?;
        let last_ms = self.planned.as_ref()?.last_due_ms()?;
        Some(Duration::from_millis(u64::try_from(last_ms).unwrap_or(0)))
    }
}

/// Every queue of a test, prepared.
pub struct Engine {
    queues: Vec<PreparedQueue>,
    io_threads: IoThreadCount,
}

/// How many I/O threads run the instances, and where the number came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoThreadCount {
    /// The count.
    pub count: NonZeroUsize,
    /// Whether the config's `threads` set it (else the default).
    pub configured: bool,
}

impl IoThreadCount {
    /// `threads` when set, else phantom's default: half the cores (as the
    /// process may use them) plus one.
    pub fn choose(threads: Option<u32>) -> IoThreadCount {
        match threads.and_then(|n| NonZeroUsize::new(usize::try_from(n).ok()?)) {
            Some(count) => IoThreadCount {
                count,
                configured: true,
            },
            None => {
                let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
                IoThreadCount {
                    count: NonZeroUsize::MIN.saturating_add(cores / 2),
                    configured: false,
                }
            }
        }
    }
}

/// How one queue went.
#[derive(Debug)]
pub struct QueueReport {
    /// The section name.
    pub name: String,
    /// Shots the plan holds: known in closed form (an rps schedule over ammo that
    /// never runs out), or counted when the plan was read to its end; `None` when
    /// neither (a closed model stopped before its ammo ended has no planned count).
    pub planned: Option<u64>,
    /// Shots fired: each one has a row in phout.
    pub fired: u64,
    /// A plan or ammo error met during the run (the queue stopped there).
    pub error: Option<EngineError>,
    /// What the gun met that no row explains (a MySQL login it cannot
    /// complete: its rows have net code 71), to be said once.
    pub problem: Option<String>,
    /// A scenario queue's runs (`None` for other ammo). Its `planned` and
    /// `fired` count requests (rows); the runs are counted here.
    pub scenario: Option<ScenarioReport>,
    /// A `tank_type = grpc` queue's replies by `grpc-status` (code, count;
    /// codes with none left out): what phout's proto code cannot tell apart
    /// (ABORTED and ALREADY_EXISTS are both 409). Empty for other queues.
    pub grpc_statuses: Vec<(tank_grpc::Status, u64)>,
}

impl QueueReport {
    /// Shots the plan held that were not fired (late at the schedule's end, or the
    /// run stopped): `planned - fired`, when the planned count is known.
    pub fn unsent(&self) -> Option<u64> {
        self.planned
            .map(|planned| planned.saturating_sub(self.fired))
    }
}

/// How the run went.
#[derive(Debug)]
pub struct RunReport {
    /// Per queue, in config order.
    pub queues: Vec<QueueReport>,
    /// From the first shot's start to the last shot's end.
    pub elapsed: Duration,
    /// Samples the results thread could not take in time (dropped, counted).
    pub samples_dropped: u64,
}

impl Engine {
    /// Prepare every queue of `config`. Queues whose address is `origin` shoot
    /// at `origin` (the in-process simulator's address).
    pub fn prepare(config: &TestConfig, origin: Option<SocketAddr>) -> Result<Engine, EngineError> {
        Engine::prepare_shard(config, origin, Shard::WHOLE)
    }

    /// Prepare `shard`'s slice of every queue of `config`: each plan's shots
    /// `k ≡ I (mod N)`, and the instances divided among the shards (a closed
    /// model's pool too), so that N shards together run the whole test.
    pub fn prepare_shard(
        config: &TestConfig,
        origin: Option<SocketAddr>,
        shard: Shard,
    ) -> Result<Engine, EngineError> {
        let queues = config
            .queues
            .iter()
            .map(|queue| CheckedQueue::check(queue, origin.is_some(), shard))
            .collect::<Result<_, _>>()?;
        Engine::new(queues, origin, config.run.threads)
    }

    /// The engine for `queues`, checked before: each gun's target resolved
    /// now (`origin` is the in-process simulator's address, for `address =
    /// origin`), `threads` I/O threads (`None`: phantom's default).
    pub fn new(
        queues: Vec<CheckedQueue>,
        origin: Option<SocketAddr>,
        threads: Option<u32>,
    ) -> Result<Engine, EngineError> {
        let queues = queues
            .into_iter()
            .map(|checked| checked.prepare(origin))
            .collect::<Result<_, _>>()?;
        Ok(Engine {
            queues,
            io_threads: IoThreadCount::choose(threads),
        })
    }

    /// How many I/O threads the run wants ([`IoThreads::start`] starts them).
    pub fn io_threads(&self) -> IoThreadCount {
        self.io_threads
    }

    /// The queues, in config order.
    pub fn queues(&self) -> &[PreparedQueue] {
        &self.queues
    }

    /// Instances over all queues (each holds a connection: a file descriptor).
    pub fn total_instances(&self) -> usize {
        self.queues.iter().map(|q| q.pool).sum()
    }

    /// Run every queue side by side until each has ended, or `control` stops the run.
    pub async fn run(
        self,
        clock: Clock,
        samples: SampleSink,
        answers: Option<AnswerSink>,
        control: Control,
        io: &IoThreads,
    ) -> RunReport {
        let mut tasks = tokio::task::JoinSet::new();
        let io_spawner = io.spawner();
        let shortest_timeout = self.queues.iter().map(|q| q.gun.timeout()).min();
        let _anchors = io_spawner
            .anchor_timers(shortest_timeout.map_or(TIMER_ANCHOR, |t| t.min(TIMER_ANCHOR)));
        let mut feeding = Vec::new();
        let mut first = 0;
        for (index, queue) in self.queues.into_iter().enumerate() {
            let along = Along {
                // Configs do not hold 65536 queues; were one to, the rest would share a group.
                queue: QueueIndex::try_from(index).unwrap_or(QueueIndex::MAX),
                clock,
                samples: &samples,
                answers: answers.as_ref(),
                control: &control,
            };
            let (started, instances) = queue.start(along);
            if let Some((shared, gun, pool)) = instances {
                // Queues continue each other's spread, so small queues share the threads too.
                tasks.spawn(queue::run(shared, gun, first, pool, io_spawner.clone()));
                first += pool;
            }
            feeding.push(started);
        }
        while tasks.join_next().await.is_some() {}
        let elapsed = clock.start.elapsed();
        let samples_dropped = samples.dropped();
        drop(samples);
        let mut reports = Vec::new();
        for feed in feeding {
            reports.push(feed.finish().await);
        }
        RunReport {
            queues: reports,
            elapsed,
            samples_dropped,
        }
    }
}

/// What every queue of a run is started with.
struct Along<'a> {
    queue: QueueIndex,
    clock: Clock,
    samples: &'a SampleSink,
    answers: Option<&'a AnswerSink>,
    control: &'a Control,
}

/// A queue's instances, ready to spawn: what they share, their gun and their count.
type Instances = (Arc<queue::Shared>, gun::Guns, usize);

/// A queue's feeder as the run goes: running beside the queue's instances, or
/// one that could not start (the queue then fires nothing).
enum Feeding {
    Running {
        name: String,
        feeder: feed::Feeder,
        shared: Arc<queue::Shared>,
        /// The planned count, when known without walking the plan.
        known: Option<u64>,
        /// The queue's gun (shared with its instances), asked at the end
        /// what it met.
        gun: gun::Guns,
        /// A scenario queue's setup: its plan counts runs, not rows.
        scenario: Option<Arc<queue::scenario::Play>>,
        /// A gRPC queue's statuses as its gun counts them.
        statuses: Option<Arc<gun::h2::StatusTally>>,
    },
    Failed {
        name: String,
        message: String,
    },
}

impl PreparedQueue {
    /// Start the queue's feeder; its instances, to spawn, unless the feeder failed to start.
    fn start(self, along: Along<'_>) -> (Feeding, Option<Instances>) {
        // A plan whose length is known is not walked to count what was left.
        let known = self.planned.as_ref().map(PlannedCount::total);
        let count_rest = Arc::new(AtomicBool::new(false));
        let tally = self.sessions.clone().unwrap_or_default();
        let handoff = feed::handoff(
            self.plan.model(),
            along.clock.start.into_std(),
            &tally,
            self.scenario.clone(),
        );
        let spawned = match &handoff {
            queue::Handoff::Shots(dispatch) | queue::Handoff::Scenarios(dispatch, _) => {
                feed::spawn(
                    self.plan,
                    self.name.clone(),
                    Arc::clone(&count_rest),
                    Arc::clone(dispatch),
                )
            }
            queue::Handoff::Sessions(sessions) => feed::spawn_replay(
                self.plan,
                self.name.clone(),
                Arc::clone(&count_rest),
                Arc::clone(sessions),
            ),
        };
        let feeder = match spawned {
            Ok(started) => started,
            Err(error) => {
                let failed = Feeding::Failed {
                    name: self.name,
                    message: error.to_string(),
                };
                return (failed, None);
            }
        };
        let shared = Arc::new(queue::Shared {
            queue: along.queue,
            clock: along.clock,
            handoff,
            deadline: self
                .schedule_ms
                .map(|ms| along.clock.start + Duration::from_millis(ms)),
            samples: along.samples.clone(),
            answers: along
                .answers
                .cloned()
                .map(|sink| (sink, self.writelog))
                .filter(|(_, level)| *level != WriteLog::Off),
            stop: along.control.stop.clone(),
            abort: along.control.abort.clone(),
            active: self.active,
            started: self.started,
            count_rest: known.is_none().then_some(count_rest),
        });
        let running = Feeding::Running {
            name: self.name,
            feeder,
            shared: Arc::clone(&shared),
            known,
            gun: self.gun.clone(),
            scenario: self.scenario,
            statuses: self.gun.grpc_statuses(),
        };
        (running, Some((shared, self.gun, self.pool)))
    }
}

impl Feeding {
    /// The queue's report, once its instances have ended: its feeder halted
    /// and joined, the plan's rest counted when the count was not known.
    async fn finish(self) -> QueueReport {
        let (name, feeder, shared, known, gun, scenario, statuses) = match self {
            Feeding::Failed { name, message } => {
                return QueueReport {
                    name: name.clone(),
                    planned: None,
                    fired: 0,
                    error: Some(EngineError::Queue {
                        queue: name,
                        message,
                    }),
                    problem: None,
                    scenario: None,
                    grpc_statuses: Vec::new(),
                }
            }
            Feeding::Running {
                name,
                feeder,
                shared,
                known,
                gun,
                scenario,
                statuses,
            } => (name, feeder, shared, known, gun, scenario, statuses),
        };
        // Halting lets a feeder waiting for room see the end.
        shared.handoff.halt();
        let fired = shared.started.total();
        let feed = tokio::task::spawn_blocking(move || feeder.join()).await;
        let (counted, error) = match feed {
            Ok(Ok(Ok(report))) => (report.complete.then_some(report.planned), None),
            Ok(Ok(Err(error))) => (None, Some(EngineError::Plan(error))),
            _ => (
                None,
                Some(EngineError::Queue {
                    queue: name.clone(),
                    message: "the feeder thread failed".into(),
                }),
            ),
        };
        let problem = gun.problem();
        let grpc_statuses = statuses.map_or_else(Vec::new, |tally| tally.counts());
        match scenario {
            // The plan counts runs; the rows they made are `fired`.
            Some(play) => QueueReport {
                name,
                planned: None,
                fired,
                error,
                problem,
                scenario: Some(play.report(counted)),
                grpc_statuses,
            },
            None => QueueReport {
                name,
                planned: known.or(counted),
                fired,
                error,
                problem,
                scenario: None,
                grpc_statuses,
            },
        }
    }
}

/// A queue whose input is checked — its plan opened, its gun's options read
/// — with nothing resolved or connected yet: what `tank plan` checks, and
/// what a run turns into a [`PreparedQueue`] once its target resolves.
pub struct CheckedQueue {
    name: String,
    plan: Plan,
    gun: gun::GunSpec,
    writelog: WriteLog,
    /// A scenario queue's setup (`None` for other ammo).
    scenario: Option<Arc<queue::scenario::Play>>,
}

impl CheckedQueue {
    /// Check `shard`'s slice of `queue`: its plan and gun options (see
    /// [`gun::GunSpec::check`]); `has_origin` says whether the config starts
    /// the origin simulator. No network.
    pub fn check(
        queue: &QueueConfig,
        has_origin: bool,
        shard: Shard,
    ) -> Result<CheckedQueue, EngineError> {
        let plan = Plan::sharded(queue, shard).map_err(EngineError::Plan)?;
        let gun = gun::GunSpec::check(queue, has_origin)?;
        let scenario = match plan.scenarios() {
            None => None,
            Some(book) => {
                let runs = plan.planned_count().map(PlannedCount::total);
                let play =
                    queue::scenario::Play::new(queue, Arc::clone(book), &gun.host(), shard, runs)
                        .map_err(|m| EngineError::Option(queue.places.of("headers").error(m)))?;
                Some(Arc::new(play))
            }
        };
        Ok(CheckedQueue {
            name: queue.name.clone(),
            plan,
            gun,
            writelog: queue.writelog,
            scenario,
        })
    }

    /// The section name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plan, unwalked.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The plan, to walk (`tank plan`); a queue walked is not fired.
    pub fn plan_mut(&mut self) -> &mut Plan {
        &mut self.plan
    }

    /// The target as it resolves here and now (a host name is looked up); an
    /// error names where `address` was written.
    pub fn resolve_target(&self, origin: Option<SocketAddr>) -> Result<SocketAddr, EngineError> {
        self.gun.target(origin).map(|target| target.addr)
    }

    /// Whether what the gun reads from the environment at the run's start
    /// (a MySQL `password_env`) is there here; an error names the option.
    pub fn check_environment(&self) -> Result<(), EngineError> {
        self.gun.environment()
    }

    fn prepare(self, origin: Option<SocketAddr>) -> Result<PreparedQueue, EngineError> {
        let plan = self.plan;
        let sessions = matches!(plan.model(), tank_plan::Model::Sessions { .. }).then(Arc::default);
        Ok(PreparedQueue {
            name: self.name,
            pool: plan.model().instances(),
            schedule_ms: plan
                .model()
                .deadline()
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            // A scenario plan counts runs; the rows a run makes are not known ahead.
            planned: plan
                .planned_count()
                .filter(|_| self.scenario.is_none())
                .cloned(),
            plan,
            gun: self.gun.resolve(origin)?,
            writelog: self.writelog,
            active: Arc::default(),
            started: Arc::default(),
            sessions,
            scenario: self.scenario,
        })
    }
}

/// The config with the schema of each `tank_type = grpc` queue that names no
/// `proto` filled in, by asking its server's reflection service (v1, then
/// v1alpha), once per target, each within the queue's `timeout`; `None`
/// when no queue needs it. It connects to the targets (and not otherwise):
/// the step before a gRPC plan can be read. `origin` is the in-process
/// simulator's address, for `address = origin`. `stop` ends a wait at once
/// (a Ctrl-C before the first shot). Blocking: call it outside any async
/// runtime.
pub fn reflect_schemas(
    config: &TestConfig,
    origin: Option<SocketAddr>,
    stop: &CancellationToken,
) -> Result<Option<TestConfig>, EngineError> {
    let needs = |q: &QueueConfig| {
        q.grpc
            .as_ref()
            .is_some_and(|g| g.schema == tank_config::GrpcSchema::Reflection)
    };
    if !config.queues.iter().any(needs) {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EngineError::Queue {
            queue: config.queues[0].name.clone(),
            message: format!("cannot start a runtime to ask for the gRPC schema: {e}"),
        })?;
    let mut resolved = config.clone();
    let mut asked: Vec<(SocketAddr, Arc<[u8]>)> = Vec::new();
    for queue in resolved.queues.iter_mut().filter(|q| needs(q)) {
        let spec = gun::GunSpec::check(queue, origin.is_some())?;
        let gun::Guns::H2(gun) = spec.resolve(origin)? else {
            continue;
        };
        let Some(grpc) = queue.grpc.as_mut() else {
            continue;
        };
        let endpoint = gun.endpoint();
        let bytes = match asked.iter().find(|(at, _)| *at == endpoint) {
            Some((_, bytes)) => Arc::clone(bytes),
            None => {
                let asking = async {
                    tokio::select! {
                        answer = tokio::time::timeout(queue.timeout, gun.reflect()) => {
                            answer.unwrap_or_else(|_| Err(format!(
                                "no answer within the timeout ({:?})",
                                queue.timeout
                            )))
                        }
                        () = stop.cancelled() => {
                            Err("stopped (Ctrl-C or SIGTERM) before it answered".to_owned())
                        }
                    }
                };
                let bytes: Arc<[u8]> = runtime
                    .block_on(asking)
                    .map_err(|message| {
                        EngineError::Option(grpc.place.error(format!(
                            "no `proto` is given, so the schema comes from the server's \
                             reflection service at {endpoint}: {message}"
                        )))
                    })?
                    .into();
                asked.push((endpoint, Arc::clone(&bytes)));
                bytes
            }
        };
        grpc.schema = tank_config::GrpcSchema::Descriptors(bytes);
    }
    Ok(Some(resolved))
}

/// The warning for a `grpc` queue whose calls carry connection-specific
/// metadata, which its compiled calls leave out (HTTP/2 has no such headers).
fn grpc_dropped_metadata(queue: &QueueConfig) -> Result<Option<String>, EngineError> {
    let Some(tank_config::AmmoSource::File { path, .. }) = &queue.ammo else {
        return Ok(None);
    };
    let dropped = tank_plan::ammo::grpc::dropped_metadata(path).map_err(EngineError::Plan)?;
    if dropped.is_empty() {
        return Ok(None);
    }
    let listed: Vec<String> = dropped
        .iter()
        .map(|(name, lines)| format!("{name} ({})", tank_plan::words::count(*lines, "line")))
        .collect();
    Ok(Some(format!(
        "[{}] HTTP/2 has no connection-specific headers: left out of the calls' metadata: {}",
        queue.name,
        listed.join(", ")
    )))
}

/// Check that every request of an `http2` queue can go out as HTTP/2, by
/// reading its ammo through once (each distinct request converted once):
/// what `tank plan` and the run check before the first shot. `Ok` holds the
/// warning about connection-specific headers HTTP/2 drops, if any were
/// found (for a `grpc` queue, the metadata its calls leave out); other
/// queues have nothing to check here.
pub fn check_http2_ammo(queue: &QueueConfig) -> Result<Option<String>, EngineError> {
    // A scenario's shots name runs; its requests are built as HTTP/1.1 as it goes.
    let scenario = matches!(
        queue.ammo,
        Some(tank_config::AmmoSource::File {
            ammo_type: tank_config::AmmoType::Scenario,
            ..
        })
    );
    if queue.tank_type == tank_config::TankType::Grpc {
        return grpc_dropped_metadata(queue);
    }
    if queue.tank_type != tank_config::TankType::Http2 || scenario {
        return Ok(None);
    }
    let mut plan = Plan::new(queue).map_err(EngineError::Plan)?;
    let mut seen = foldhash::HashSet::<Vec<u8>>::default();
    let mut dropped: Vec<(String, u64)> = Vec::new();
    let mut number = 0u64;
    while plan.passes() == 0 {
        let Some(shot) = plan.next_shot().map_err(EngineError::Plan)? else {
            break;
        };
        number += 1;
        // Distinct requests only, as far as memory allows a set of them.
        if seen.len() < 100_000 && !seen.insert(shot.missile.to_vec()) {
            continue;
        }
        let names = gun::h2::check_request(shot.missile).map_err(|message| {
            let key = if queue.places.is_written("uris") {
                "uris"
            } else {
                "ammofile"
            };
            EngineError::Option(queue.places.of(key).error(format!(
                "request {number} (tag `{}`) cannot be sent as HTTP/2: {message}",
                String::from_utf8_lossy(shot.marker)
            )))
        })?;
        for name in names {
            match dropped
                .iter_mut()
                .find(|(n, _)| n.eq_ignore_ascii_case(&name))
            {
                Some((_, count)) => *count += 1,
                None => dropped.push((name, 1)),
            }
        }
    }
    if dropped.is_empty() {
        return Ok(None);
    }
    let listed: Vec<String> = dropped
        .iter()
        .map(|(name, count)| {
            format!(
                "{name} ({})",
                tank_plan::words::count(*count, "distinct request")
            )
        })
        .collect();
    Ok(Some(format!(
        "[{}] HTTP/2 has no connection-specific headers: dropped from the requests: {}",
        queue.name,
        listed.join(", ")
    )))
}

/// The longest period of the I/O threads' timer anchors (see [`io_threads`]).
const TIMER_ANCHOR: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_threads_are_the_configured_count_else_half_the_cores_plus_one() {
        let set = IoThreadCount::choose(Some(3));
        assert_eq!((set.count.get(), set.configured), (3, true));
        let cores = std::thread::available_parallelism().unwrap().get();
        let default = IoThreadCount::choose(None);
        assert_eq!(
            (default.count.get(), default.configured),
            (cores / 2 + 1, false)
        );
    }
}
