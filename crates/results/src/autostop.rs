//! Autostop as a sink: the `[autostop]` criteria judge each finished second,
//! the same way over a live run's seconds and over a merge's. What happens when
//! one fires is the owner's to decide (the live run stops; a merge reports the
//! verdict one generator would have reached), so the sink only remembers it.

use std::time::{Duration, Instant};

use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::SecondStats;

use crate::sink::{SecondSink, SinkError, SoFar};

/// What `limit(…)`-style criteria count as the time since the start.
#[derive(Debug, Clone, Copy)]
pub enum Elapsed {
    /// The wall clock since this moment (a live run).
    Since(Instant),
    /// Whole seconds from this unix second to the end of the judged one (data
    /// read back, where the wall clock is long past).
    FromSecond(u64),
}

/// The criteria, judging every finished second.
#[derive(Debug)]
pub struct AutostopSink {
    autostop: Autostop,
    elapsed: Elapsed,
    /// Fired since [`AutostopSink::take_fired`] was last called.
    fired: Option<StopReason>,
}

impl AutostopSink {
    /// Judge with `autostop`, counting time as `elapsed` says.
    pub fn new(autostop: Autostop, elapsed: Elapsed) -> AutostopSink {
        AutostopSink {
            autostop,
            elapsed,
            fired: None,
        }
    }

    /// The criteria (for their state on the console, or to judge monitoring).
    pub fn autostop(&self) -> &Autostop {
        &self.autostop
    }

    /// The criteria, to judge a monitoring second; a reason it returns is the
    /// caller's to act on, as [`AutostopSink::take_fired`]'s is.
    pub fn autostop_mut(&mut self) -> &mut Autostop {
        &mut self.autostop
    }

    /// The reason a criterion fired since the last call, once.
    pub fn take_fired(&mut self) -> Option<StopReason> {
        self.fired.take()
    }

    /// The reason the criteria stopped the run (or would have), if one fired.
    pub fn stopped(&self) -> Option<&StopReason> {
        self.autostop.stopped()
    }
}

impl SecondSink for AutostopSink {
    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        let elapsed = match self.elapsed {
            Elapsed::Since(start) => start.elapsed(),
            Elapsed::FromSecond(first) => {
                Duration::from_secs(second.ts.saturating_sub(first).saturating_add(1))
            }
        };
        if let Some(reason) = self.autostop.observe(second, elapsed) {
            self.fired.get_or_insert(reason);
        }
        Ok(())
    }
}
