//! tank-engine: fires each queue of a test on time and measures every shot.
//!
//! [`Engine::prepare`] does everything that can fail on bad input before a
//! shot is fired (resolving targets, opening plans and ammo, TLS files,
//! limits); [`Engine::run`] then runs every queue side by side, its instances
//! spread over the [`IoThreads`]. Each queue has a feeder thread running its
//! plan (`feed`), a `dispatch` that hands its shots to free instances when
//! they are due, and a pool of instances (`queue`) firing through a [`gun::Gun`].
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

use tank_config::{ConfigError, QueueConfig, TankType, TestConfig, WriteLog, ORIGIN_ADDRESS};
use tank_plan::{Plan, PlanError, PlannedCount, Shard};
use tank_stats::{micros, QueueIndex};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use active::Active;
pub use io_threads::IoThreads;
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
    gun: Arc<gun::Gun>,
    pool: usize,
    schedule_ms: Option<u64>,
    planned: Option<PlannedCount>,
    writelog: WriteLog,
    active: Arc<Active>,
    /// Shots started, per second (the sent counts).
    started: Arc<StartedShots>,
    /// A replay's sessions as they go (`None` for other models).
    sessions: Option<Arc<SessionTally>>,
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
            .map(|queue| prepare_queue(queue, origin, shard))
            .collect::<Result<_, _>>()?;
        Ok(Engine {
            queues,
            io_threads: IoThreadCount::choose(config.queues.first().and_then(|q| q.threads)),
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
        let mut feeders = Vec::new();
        let io_spawner = io.spawner();
        let shortest_timeout = self.queues.iter().map(|q| q.gun.timeout()).min();
        let _anchors = io_spawner
            .anchor_timers(shortest_timeout.map_or(TIMER_ANCHOR, |t| t.min(TIMER_ANCHOR)));
        let mut first = 0;
        for (index, queue) in self.queues.into_iter().enumerate() {
            // A plan whose length is known is not walked to count what was left.
            let known = queue.planned.as_ref().map(PlannedCount::total);
            let count_rest = Arc::new(AtomicBool::new(false));
            let tally = queue.sessions.clone().unwrap_or_default();
            let handoff = feed::handoff(queue.plan.model(), clock.start.into_std(), &tally);
            let spawned = match &handoff {
                queue::Handoff::Shots(dispatch) => feed::spawn(
                    queue.plan,
                    queue.name.clone(),
                    Arc::clone(&count_rest),
                    Arc::clone(dispatch),
                ),
                queue::Handoff::Sessions(sessions) => feed::spawn_replay(
                    queue.plan,
                    queue.name.clone(),
                    Arc::clone(&count_rest),
                    Arc::clone(sessions),
                ),
            };
            let feeder = match spawned {
                Ok(started) => started,
                Err(error) => {
                    feeders.push((queue.name.clone(), None, Some(error.to_string()), None));
                    continue;
                }
            };
            let shared = Arc::new(queue::Shared {
                // Configs do not hold 65536 queues; were one to, the rest would share a group.
                queue: QueueIndex::try_from(index).unwrap_or(QueueIndex::MAX),
                clock,
                handoff,
                gun: queue.gun,
                deadline: queue
                    .schedule_ms
                    .map(|ms| clock.start + Duration::from_millis(ms)),
                samples: samples.clone(),
                answers: answers
                    .clone()
                    .map(|sink| (sink, queue.writelog))
                    .filter(|(_, level)| *level != WriteLog::Off),
                stop: control.stop.clone(),
                abort: control.abort.clone(),
                active: queue.active,
                started: queue.started,
                count_rest: known.is_none().then_some(count_rest),
            });
            feeders.push((
                queue.name.clone(),
                Some((feeder, Arc::clone(&shared))),
                None,
                known,
            ));
            // Queues continue each other's spread, so small queues share the threads too.
            tasks.spawn(queue::run(shared, first, queue.pool, io_spawner.clone()));
            first += queue.pool;
        }
        while tasks.join_next().await.is_some() {}
        let elapsed = clock.start.elapsed();
        let samples_dropped = samples.dropped();
        drop(samples);
        let mut reports = Vec::new();
        for (name, running, start_error, known) in feeders {
            let Some((feeder, shared)) = running else {
                let message = start_error.unwrap_or_default();
                reports.push(QueueReport {
                    name: name.clone(),
                    planned: None,
                    fired: 0,
                    error: Some(EngineError::Queue {
                        queue: name,
                        message,
                    }),
                });
                continue;
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
            reports.push(QueueReport {
                name,
                planned: known.or(counted),
                fired,
                error,
            });
        }
        RunReport {
            queues: reports,
            elapsed,
            samples_dropped,
        }
    }
}

fn prepare_queue(
    queue: &QueueConfig,
    origin: Option<SocketAddr>,
    shard: Shard,
) -> Result<PreparedQueue, EngineError> {
    let plan = Plan::sharded(queue, shard).map_err(EngineError::Plan)?;
    let gun = gun_for(queue, origin)?;
    let sessions = matches!(plan.model(), tank_plan::Model::Sessions { .. }).then(Arc::default);
    Ok(PreparedQueue {
        name: queue.name.clone(),
        pool: plan.model().instances(),
        schedule_ms: plan
            .model()
            .deadline()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        planned: plan.planned_count().cloned(),
        plan,
        gun: Arc::new(gun),
        writelog: queue.writelog,
        active: Arc::default(),
        started: Arc::default(),
        sessions,
    })
}

/// Check what the engine would reject in `queue` besides its plan (the
/// target, TLS files and suites), without firing: what `tank plan` checks.
/// `has_origin` says whether the config starts the origin simulator.
pub fn check_queue(queue: &QueueConfig, has_origin: bool) -> Result<(), EngineError> {
    let stand_in = has_origin.then(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    gun_for(queue, stand_in).map(drop)
}

/// The gun `queue` asks for: its target resolved, its TLS set up.
fn gun_for(queue: &QueueConfig, origin: Option<SocketAddr>) -> Result<gun::Gun, EngineError> {
    let at = |key: &str, message: String| EngineError::Option(queue.places.of(key).error(message));
    let target = if queue.address.trim() == ORIGIN_ADDRESS {
        let addr = origin.ok_or_else(|| {
            at(
                "address",
                "`origin` is the origin simulator: it needs an [origin] section".into(),
            )
        })?;
        target::Target {
            addr,
            host: addr.ip().to_string(),
        }
    } else {
        // memcached's own port when the address names none.
        let port = queue.port.or_else(|| {
            let bare = target::split_address(&queue.address).is_ok_and(|(_, port)| port.is_none());
            (queue.tank_type == TankType::Memcached && bare).then_some(MEMCACHED_PORT)
        });
        target::resolve(&queue.address, port, queue.ssl).map_err(|m| at("address", m))?
    };
    let tls = if queue.ssl {
        let options = tls::TlsOptions {
            verify: queue.ssl_verify,
            client_certificate: queue.client_certificate.clone(),
            client_key: queue.client_key.clone(),
            cipher_suites: queue.client_cipher_suites.clone(),
        };
        Some(tls::client_config(&options).map_err(|e| at(e.key, e.message))?)
    } else {
        None
    };
    let protocol = match queue.tank_type {
        TankType::Http => gun::Protocol::Http(http::Limits::from(queue.reply_limits)),
        TankType::None => gun::Protocol::Tcp,
        TankType::Memcached => gun::Protocol::Memcached,
    };
    Ok(gun::Gun::new(
        target,
        tls,
        protocol,
        queue.timeout,
        queue.gatling_ip.clone(),
    )
    .with_depth(queue.depth as usize))
}

/// memcached's port, for a `tank_type = memcached` address without one.
const MEMCACHED_PORT: u16 = 11211;

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
