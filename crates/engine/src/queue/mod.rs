//! One queue's instances: tasks that take the queue's shots in order, wait
//! until each is due, fire it and report a sample, as phantom's instances do.
//!
//! Open model: `instances` tasks; when all are busy, shots go late, and the
//! lag is measured, never hidden. At the schedule's end the queue stops: shots
//! not started by then are unsent, not fired afterwards.
//! Closed model: as many tasks as the schedule's final instance count; the
//! first shots are due at the instances' start times and the rest at 0, so
//! each instance starts on time and then fires back to back.
//!
//! Replay: `pool` tasks, each taking a session at a time from the
//! [`SessionDispatch`], firing its requests over one connection (the barrel's)
//! and hanging up at its end; with `per_request`, every request is a session.
//!
//! Scenarios (`ammo_type = scenario`): the open or closed dispatch's shots,
//! each a run of a scenario whose steps [`scenario`] plays in order.
//!
//! Every shot fired gets exactly one sample (one phout row), also when the run
//! is stopped at once: a shot then in flight is recorded as abandoned, with net
//! code 125 (ECANCELED), by [`InFlight`]'s drop.

pub(crate) mod scenario;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tank_config::WriteLog;
use tank_stats::{micros, Measured, NetCode, QueueIndex, Sample, Tag};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::active::Active;
use crate::dispatch::sessions::{SessionDispatch, Turn};
use crate::dispatch::{Dispatch, Seat};
use crate::feed::Shot;
use crate::gun::measure::ShotProgress;
use crate::gun::{Barrel, Gun, Guns, Placement};
use crate::io_threads::Spawner;
use crate::sink::{Answer, AnswerSink, SampleSink};
use crate::started::StartedShots;
use crate::Clock;

/// How much of a reply the answers log keeps.
const ANSWER_CAPTURE: usize = 64 * 1024;

/// Everything the instances of one queue share.
pub(crate) struct Shared {
    /// The queue's place in the config, carried by each of its samples.
    pub queue: QueueIndex,
    pub clock: Clock,
    /// Hands the feeder's shots (or a replay's sessions) to free instances when they are due.
    pub handoff: Handoff,
    /// The open model's end (schedule duration from the start); none for the closed model.
    pub deadline: Option<Instant>,
    pub samples: SampleSink,
    pub answers: Option<(AnswerSink, WriteLog)>,
    pub stop: CancellationToken,
    pub abort: CancellationToken,
    pub active: Arc<Active>,
    /// Shots fired so far (each has its sample), by the second they started.
    pub started: Arc<StartedShots>,
    /// Set when the schedule's end stopped the queue, for the feeder to count
    /// the plan's rest; `None` when the plan's length is known without that.
    pub count_rest: Option<Arc<AtomicBool>>,
}

/// Where a queue's instances get their shots: the shots' dispatch (open and
/// closed models), or a replay's sessions'.
pub(crate) enum Handoff {
    Shots(Arc<Dispatch>),
    Sessions(Arc<SessionDispatch>),
    /// A scenario queue: its shots (runs) from the dispatch, played by `Play`.
    Scenarios(Arc<Dispatch>, Arc<scenario::Play>),
}

impl Handoff {
    /// Stop handing out: see [`Dispatch::halt`]; the count of shots dropped.
    pub fn halt(&self) -> usize {
        match self {
            Handoff::Shots(dispatch) | Handoff::Scenarios(dispatch, _) => dispatch.halt(),
            Handoff::Sessions(sessions) => sessions.halt(),
        }
    }

    fn start_timers(&self, io: &Spawner) -> JoinSet<()> {
        match self {
            Handoff::Shots(dispatch) | Handoff::Scenarios(dispatch, _) => dispatch.start_timers(io),
            Handoff::Sessions(sessions) => sessions.start_timers(io),
        }
    }
}

/// Run `pool` instances firing through `guns` until the feed ends, the
/// schedule ends, or the run stops. They are the run's instances
/// `first..first + pool`, for spreading over the I/O threads.
pub(crate) async fn run(shared: Arc<Shared>, guns: Guns, first: usize, pool: usize, io: Spawner) {
    match guns {
        Guns::Wire(gun) => run_with(shared, gun, first, pool, io).await,
        Guns::Mysql(gun) => run_with(shared, gun, first, pool, io).await,
        Guns::H2(gun) => run_with(shared, gun, first, pool, io).await,
    }
}

async fn run_with<G: Gun>(
    shared: Arc<Shared>,
    gun: Arc<G>,
    first: usize,
    pool: usize,
    io: Spawner,
) {
    let mut instances = JoinSet::new();
    let threads = io.threads().count().max(1);
    for index in 0..pool {
        let thread = io.thread_for(first + index);
        let placement = Placement {
            instance: first + index,
            thread,
            threads,
        };
        let barrel = gun.barrel(index, placement);
        match &shared.handoff {
            Handoff::Shots(dispatch) => {
                let seat = dispatch.seat(thread);
                let task = instance(Arc::clone(&shared), Arc::clone(dispatch), barrel, seat);
                io.spawn(&mut instances, thread, task);
            }
            Handoff::Sessions(sessions) => {
                let seat = sessions.seat(thread);
                let task =
                    session_instance(Arc::clone(&shared), Arc::clone(sessions), barrel, seat);
                io.spawn(&mut instances, thread, task);
            }
            Handoff::Scenarios(dispatch, play) => {
                let seat = dispatch.seat(thread);
                let task = scenario::scenario_instance(
                    Arc::clone(&shared),
                    Arc::clone(dispatch),
                    Arc::clone(play),
                    barrel,
                    seat,
                    first + index,
                );
                io.spawn(&mut instances, thread, task);
            }
        }
    }
    // They end when the dispatch halts: at the latest when this function returns.
    let _timers = shared.handoff.start_timers(&io);
    let stop = async {
        shared.stop.cancelled().await;
        // Instances waiting for a shot get none; shots in flight finish.
        shared.handoff.halt();
        std::future::pending::<()>().await
    };
    tokio::select! {
        _ = async { while instances.join_next().await.is_some() {} } => return,
        () = stop => return,
        _ = shared.abort.cancelled() => {}
    }
    // A second Ctrl-C: shots in flight are abandoned. Each instance's drop writes
    // the row of the shot it was firing; wait until every one has been dropped.
    shared.handoff.halt();
    instances.abort_all();
    while instances.join_next().await.is_some() {}
}

async fn instance<B: Barrel>(
    shared: Arc<Shared>,
    dispatch: Arc<Dispatch>,
    mut barrel: B,
    seat: Seat,
) {
    let mut reply = shared
        .answers
        .as_ref()
        .map(|_| Vec::with_capacity(ANSWER_CAPTURE));
    let progress = barrel.progress();
    // None: the plan ended, or the queue halted.
    while let Some((shot, start)) = dispatch.next(seat).await {
        let start = Instant::from_std(start);
        if shared.deadline.is_some_and(|deadline| start >= deadline) {
            // The schedule is over: this shot and the rest are unsent.
            if let Some(count_rest) = &shared.count_rest {
                count_rest.store(true, Ordering::Release);
            }
            dispatch.halt();
            return;
        }
        shoot(
            &shared,
            &mut barrel,
            &progress,
            &shot,
            start,
            reply.as_mut(),
        )
        .await;
    }
}

/// A replay's instance: takes a session at a time, fires its requests over
/// the barrel's connection as they come due (each only after the one before
/// has its reply: a request due meanwhile starts late, and its lag says by
/// how much), and hangs up at the session's end.
async fn session_instance<B: Barrel>(
    shared: Arc<Shared>,
    sessions: Arc<SessionDispatch>,
    mut barrel: B,
    seat: Seat,
) {
    let mut reply = shared
        .answers
        .as_ref()
        .map(|_| Vec::with_capacity(ANSWER_CAPTURE));
    let progress = barrel.progress();
    while let Some(turn) = sessions.next(seat).await {
        let shot = match turn {
            Turn::Fire(shot) => shot,
            Turn::HangUp => {
                barrel.hang_up();
                continue;
            }
        };
        let start = Instant::now();
        shoot(
            &shared,
            &mut barrel,
            &progress,
            &shot,
            start,
            reply.as_mut(),
        )
        .await;
    }
}

/// Fire `shot`, which starts now (`start`), and send its sample (and its
/// answers-log entry, when `reply` is kept for one).
async fn shoot<B: Barrel>(
    shared: &Shared,
    barrel: &mut B,
    progress: &ShotProgress,
    shot: &Shot,
    start: Instant,
    mut reply: Option<&mut Vec<u8>>,
) {
    let since_start = start.saturating_duration_since(shared.clock.start);
    let in_flight =
        InFlight::enter(shared, start, since_start, shot.due, &shot.tag).watching(progress);
    let measured = barrel
        .fire(&shot.request, start, reply.as_deref_mut())
        .await;
    let Some(sample) = in_flight.land(measured) else {
        return;
    };
    if let (Some((answers, level)), Some(reply)) = (&shared.answers, reply) {
        if logged(*level, sample.measured.net_code, sample.measured.proto_code) {
            answers.send(Answer {
                sample: sample.clone(),
                request: Arc::clone(&shot.request),
                reply: std::mem::take(reply),
            });
            reply.reserve(ANSWER_CAPTURE);
        }
    }
    shared.samples.send(sample);
}

/// A shot between its start and its sample. Dropped before [`InFlight::land`]
/// (the instance was aborted mid-shot), it still counts the shot as fired and
/// sends its sample: abandoned, net code 125, timed to the abort, as phantom
/// writes an interrupted shot, its phases as far as its barrel's
/// [`ShotProgress`] saw them go.
pub(super) struct InFlight<'a> {
    shared: &'a Shared,
    start: Instant,
    /// The sample so far; `None` once landed.
    sample: Option<Sample>,
    /// Where the barrel firing it has got to, when one is.
    progress: Option<&'a ShotProgress>,
}

impl<'a> InFlight<'a> {
    /// A shot (due at `due`, tagged `tag`) starting now, at `start`.
    pub(super) fn enter(
        shared: &'a Shared,
        start: Instant,
        since_start: Duration,
        due: Option<Duration>,
        tag: &Tag,
    ) -> Self {
        shared.active.enter();
        let start_unix_us = shared.clock.unix_us(since_start);
        shared.started.note(start_unix_us);
        InFlight {
            shared,
            start,
            progress: None,
            sample: Some(Sample {
                start_unix_us,
                // A shot due "at once" is never late.
                lag_us: due.map_or(0, |due| micros(since_start.saturating_sub(due))),
                tag: Arc::clone(tag),
                measured: Measured {
                    queue: shared.queue,
                    ..Measured::default()
                },
            }),
        }
    }

    /// The shot is fired through the barrel whose progress this is: it
    /// starts from nothing, and an abandoned shot's row says how far it went.
    pub(super) fn watching(mut self, progress: &'a ShotProgress) -> Self {
        progress.begin();
        self.progress = Some(progress);
        self
    }

    /// The shot ended with `measured`: its sample, to send (`None` only if it
    /// was already taken, which one `enter` and one `land` never do).
    pub(super) fn land(mut self, measured: Measured) -> Option<Sample> {
        let mut sample = self.sample.take()?;
        self.shared.active.leave();
        sample.measured = Measured {
            queue: self.shared.queue,
            ..measured
        };
        Some(sample)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(mut sample) = self.sample.take() else {
            return;
        };
        self.shared.active.leave();
        let elapsed = micros(self.start.elapsed());
        // Without a barrel's progress the phase is not known: the time then
        // counts as connecting (phantom's fill rule), so the parts add up.
        let measured = self.progress.map_or_else(
            || ShotProgress::default().abandoned(elapsed),
            |p| p.abandoned(elapsed),
        );
        sample.measured = Measured {
            interval_event_us: elapsed,
            queue: self.shared.queue,
            ..measured
        };
        self.shared.samples.send(sample);
    }
}

/// Whether `writelog` wants this shot in the answers log.
pub(super) fn logged(level: WriteLog, net: NetCode, proto: u16) -> bool {
    match level {
        WriteLog::Off => false,
        WriteLog::All => true,
        WriteLog::ProtoWarning => net != NetCode::OK || proto >= 400,
        WriteLog::ProtoError => net != NetCode::OK || proto >= 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writelog_levels() {
        assert!(!logged(WriteLog::Off, NetCode(110), 0));
        assert!(logged(WriteLog::All, NetCode::OK, 200));
        assert!(logged(WriteLog::ProtoWarning, NetCode::OK, 404));
        assert!(!logged(WriteLog::ProtoError, NetCode::OK, 404));
        assert!(logged(WriteLog::ProtoError, NetCode(111), 0));
    }
}
