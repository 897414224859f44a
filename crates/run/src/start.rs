//! The run's start: a moment after it is ready, or a wall-clock time shared by
//! every shard of a test (`--start-at`), waited for and kept to the µs of the
//! local clock; and the record of it (`shard.json`) that `tank merge` reads.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::record::clock::ClockInfo;
use crate::record::time::format_rfc3339;
use crate::record::{QueuePlan, ShardRecord};
use tank_config::LoadProfile;
use tank_engine::{Clock, Control, Engine};

use crate::{RunError, Spec};

fn now_unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Fail unless `at` is at least `lead` from now.
pub(crate) fn check_ahead(at: u64, lead: Duration) -> Result<(), RunError> {
    let now = now_unix_us();
    let lead_us = u64::try_from(lead.as_micros()).unwrap_or(u64::MAX);
    if at < now.saturating_add(lead_us) {
        return Err(RunError::Start(format!(
            "the start time {} is {:.3} s ago: expected a time to come (start every shard \
             before it; with --start-at, allow for the setup)",
            format_rfc3339(at),
            now.saturating_sub(at) as f64 / 1e6
        )));
    }
    Ok(())
}

/// Sleep until `lead` before `at` (a stop ends the wait early), then return the
/// clock whose start is exactly `at`.
pub(crate) fn wait_for(
    at: u64,
    lead: Duration,
    runtime: &tokio::runtime::Runtime,
    control: &Control,
) -> Result<Clock, RunError> {
    check_ahead(at, Duration::ZERO)?;
    let wait_us = at.saturating_sub(now_unix_us());
    let wait = Duration::from_micros(wait_us).saturating_sub(lead);
    runtime.block_on(async {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = control.stop.cancelled() => {}
        }
    });
    // Both clocks read back to back: the monotonic start is `at` in wall-clock time.
    let now = Clock::now();
    let ahead_us = i128::from(at) - i128::from(now.start_unix_us);
    if ahead_us < 0 && !control.stop.is_cancelled() {
        return Err(RunError::Start(format!(
            "woke {:.3} ms after the start time {}: the machine is too busy to keep it",
            -ahead_us as f64 / 1000.0,
            format_rfc3339(at)
        )));
    }
    let ahead = Duration::from_micros(u64::try_from(ahead_us.max(0)).unwrap_or(0));
    Ok(Clock {
        start: now.start + ahead,
        start_unix_us: at,
    })
}

/// What `shard.json` says at the start.
pub(crate) fn record(
    spec: &Spec,
    engine: &Engine,
    start_unix_us: u64,
    clock: ClockInfo,
) -> ShardRecord {
    let queues = engine
        .queues()
        .iter()
        .zip(&spec.config.queues)
        .map(|(prepared, queue)| {
            let count = prepared.planned();
            QueuePlan {
                name: prepared.name().to_owned(),
                rps_schedule: match &queue.load_profile {
                    LoadProfile::Rps(text) => Some(text.clone()),
                    _ => None,
                },
                arrivals: queue.arrivals.process.to_string(),
                arrivals_seed: queue.arrivals.seed,
                whole_len: count.map(|c| c.whole_len()),
                planned: count.map(|c| c.total()),
                first_due_ms: count.and_then(|c| c.first_due_ms()),
            }
        })
        .collect();
    ShardRecord {
        index: spec.shard.index(),
        count: spec.shard.count(),
        start_unix_us,
        start: format_rfc3339(start_unix_us),
        common_start: spec.start_at.is_some(),
        clock,
        instances: engine.total_instances() as u64,
        autostop: spec.config.autostop.criteria.clone(),
        queues,
        first_shot_unix_us: None,
        fired: None,
        max_rss_kib: None,
        exit_code: None,
        stopped: None,
    }
}
