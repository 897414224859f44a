//! One queue's instances: tasks that take the queue's shots in order, wait
//! until each is due, fire it and report a sample, as phantom's instances do.
//!
//! Open model: `instances` tasks; when all are busy, shots go late, and the
//! lag is measured, never hidden. At the schedule's end the queue stops: shots
//! not started by then are counted as unsent, not fired afterwards.
//! Closed model: as many tasks as the schedule's final instance count; the
//! first shots are due at the instances' start times and the rest at 0, so
//! each instance starts on time and then fires back to back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tank_config::WriteLog;
use tank_stats::{NetCode, Sample};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::active::Active;
use crate::dispatch::{Dispatch, Seat};
use crate::gun::{Barrel, Gun};
use crate::io_threads::Spawner;
use crate::sink::{Answer, AnswerSink, SampleSink};
use crate::Clock;

/// How much of a reply the answers log keeps.
const ANSWER_CAPTURE: usize = 64 * 1024;

/// Everything the instances of one queue share.
pub(crate) struct Shared {
    pub clock: Clock,
    /// Hands the feeder's shots to free instances when they are due.
    pub dispatch: Arc<Dispatch>,
    pub gun: Arc<Gun>,
    /// The open model's end (schedule duration from the start); none for the closed model.
    pub deadline: Option<Instant>,
    pub samples: SampleSink,
    pub answers: Option<(AnswerSink, WriteLog)>,
    pub stop: CancellationToken,
    pub abort: CancellationToken,
    pub active: Arc<Active>,
    pub fired: AtomicU64,
    pub unsent: AtomicU64,
    /// Set when the schedule's end stopped the queue: the feeder then counts the rest as unsent.
    pub count_rest: Arc<AtomicBool>,
}

/// Run `pool` instances until the feed ends, the schedule ends, or the run stops.
/// They are the run's instances `first..first + pool`, for spreading over the I/O threads.
pub(crate) async fn run(shared: Arc<Shared>, first: usize, pool: usize, io: Spawner) {
    let mut instances = JoinSet::new();
    for index in 0..pool {
        let barrel = shared.gun.instance(index);
        let thread = io.thread_for(first + index);
        let seat = shared.dispatch.seat(thread);
        io.spawn(
            &mut instances,
            thread,
            instance(Arc::clone(&shared), barrel, seat),
        );
    }
    // They end when the dispatch halts: at the latest when this function returns.
    let _timers = shared.dispatch.start_timers(&io);
    let stop = async {
        shared.stop.cancelled().await;
        // Instances waiting for a shot get none; shots in flight finish.
        let dropped = shared.dispatch.halt();
        shared.unsent.fetch_add(dropped as u64, Ordering::Relaxed);
        std::future::pending::<()>().await
    };
    tokio::select! {
        _ = async { while instances.join_next().await.is_some() {} } => {}
        () = stop => {}
        // A second Ctrl-C: shots in flight are dropped, not logged.
        _ = shared.abort.cancelled() => instances.abort_all(),
    }
}

async fn instance(shared: Arc<Shared>, mut barrel: Barrel, seat: Seat) {
    let mut capture = shared
        .answers
        .as_ref()
        .map(|_| Vec::with_capacity(ANSWER_CAPTURE));
    // None: the plan ended, or the queue halted.
    while let Some(shot) = shared.dispatch.next(seat).await {
        let start = Instant::now();
        if shared.deadline.is_some_and(|deadline| start >= deadline) {
            // The schedule is over: this shot and the rest are unsent.
            shared.unsent.fetch_add(1, Ordering::Relaxed);
            shared.count_rest.store(true, Ordering::Release);
            shared.dispatch.halt();
            return;
        }
        let since_start = start.saturating_duration_since(shared.clock.start);
        shared.active.enter();
        let measured = barrel.fire(&shot.request, start, capture.as_mut()).await;
        shared.active.leave();
        shared.fired.fetch_add(1, Ordering::Relaxed);
        let sample = Sample {
            start_unix_us: shared.clock.unix_us(since_start),
            // A shot due "at once" is never late.
            lag_us: shot
                .due
                .map_or(0, |due| micros(since_start.saturating_sub(due))),
            tag: Arc::clone(&shot.tag),
            measured,
        };
        if let (Some((answers, level)), Some(reply)) = (&shared.answers, capture.as_mut()) {
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
}

/// Whether `writelog` wants this shot in the answers log.
fn logged(level: WriteLog, net: NetCode, proto: u16) -> bool {
    match level {
        WriteLog::Off => false,
        WriteLog::All => true,
        WriteLog::ProtoWarning => net != NetCode::OK || proto >= 400,
        WriteLog::ProtoError => net != NetCode::OK || proto >= 500,
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
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
