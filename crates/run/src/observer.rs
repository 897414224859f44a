//! What a caller sees of a run while it goes: finished seconds and notices.
//!
//! The run prints nothing itself. `tank -c` shows a console through an
//! [`Observer`]; a search that runs dozens of probes shows its own progress, or
//! nothing ([`Silent`]).
//!
//! Contract: the observer is called from the run's results thread, in order;
//! it MUST return quickly (it delays the next second's data, never a shot).

use std::path::Path;
use std::time::Duration;

use tank_results::{SecondSink, SoFar};
use tank_stats::aggregate::SecondStats;
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::{Sample, SessionCounts};

/// The live state an observer may read beside the finished seconds.
pub struct LiveState<'a> {
    /// The run so far (its totals are computed on demand).
    pub so_far: SoFar<'a>,
    /// The autostop criteria, with how long each has been counting.
    pub autostop: &'a Autostop,
    /// Since the run started.
    pub elapsed: Duration,
    /// The last seconds, after the shooting ended: not to be drawn on a screen
    /// that the summary is about to replace.
    pub last: bool,
    /// The latest monitoring second of each monitored host (empty without monitoring).
    pub monitoring: &'a [tank_monitor::HostSecond],
    /// A replay's sessions over its queues, as of the last wall-clock second
    /// (`peak`: in that second; `None` without a replay).
    pub sessions: Option<&'a SessionCounts>,
}

/// Something worth telling the user the moment it happens.
#[derive(Debug)]
pub enum Notice<'a> {
    /// A warning about how the run is set up (the origin simulator's admin API
    /// reachable beyond loopback, say); the run goes on.
    Warning(&'a str),
    /// An autostop criterion fired: the run stops.
    Autostop(&'a StopReason),
    /// An artifact could not be written: the run stops.
    WriteFailed {
        /// The file.
        file: &'a Path,
        /// Why.
        error: &'a std::io::Error,
    },
    /// A fact about the run to show before it starts (a generated
    /// workload's seed, say); the run goes on.
    Info(&'a str),
}

/// What is known of a run once it is set up, before its first shot.
#[derive(Debug)]
pub struct Started<'a> {
    /// Instances over all queues.
    pub instances: u64,
    /// The longest open-model schedule, if any.
    pub longest_schedule: Option<Duration>,
    /// Whether each second's planned count is whole: every queue plans its
    /// shots ahead (a scenario plans runs, whose requests are not known, and
    /// a plan over ammo that runs out is counted only at its end).
    pub planned_known: bool,
    /// The artifacts directory.
    pub artifacts: &'a Path,
    /// When the schedules start (offset 0), µs since the Unix epoch.
    pub start_unix_us: u64,
}

/// Receives a run's progress.
pub trait Observer: Send {
    /// The run is set up and about to fire (called once, before any second).
    fn started(&mut self, started: &Started<'_>) {
        let _ = started;
    }

    /// More consumers of the run's results (a live web dashboard, say): sinks
    /// the run's results pipeline hands every finished second to, with its
    /// own sinks and before this observer's [`Observer::seconds`]. Asked once,
    /// after [`Observer::started`]; the default adds none.
    fn sinks(&mut self) -> Vec<Box<dyn SecondSink + Send>> {
        Vec::new()
    }

    /// One shot's sample, as it reaches the results thread (in completion
    /// order). For a caller that measures a window of the run itself, as a
    /// search's probe does; it MUST be cheap: it runs once per shot.
    fn sample(&mut self, sample: &Sample) {
        let _ = sample;
    }

    /// Seconds that just became final, in order (at least one).
    fn seconds(&mut self, seconds: &[SecondStats], state: &LiveState<'_>);

    /// Something happened that the user must see now (most stop the run).
    fn notice(&mut self, notice: &Notice<'_>);

    /// An interval of Apiary's view ended (`--apiary`): its statistics, and
    /// the interval before (for the changes).
    fn apiary(
        &mut self,
        interval: &tank_report::apiary::Interval,
        before: Option<&tank_report::apiary::Interval>,
    ) {
        let _ = (interval, before);
    }

    /// `[memcached] preload` of queue `queue` has set `done` of `total` records.
    fn preload(&mut self, queue: &str, done: u64, total: u64) {
        let _ = (queue, done, total);
    }
}

/// An observer that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {
    fn seconds(&mut self, _: &[SecondStats], _: &LiveState<'_>) {}
    fn notice(&mut self, _: &Notice<'_>) {}
}
