//! A replay's sessions as they go (Apiary's tallies and levels): running now
//! and the most at once since the last look, started and completed so far.
//! The console and the summary read it; the dispatch counts each session once
//! when an instance takes it and once when it hangs up, not per request.

use std::sync::atomic::{AtomicU64, Ordering};

use tank_stats::SessionCounts;

/// Live counts of a replay's sessions.
#[derive(Debug, Default)]
pub struct SessionTally {
    running: AtomicU64,
    peak: AtomicU64,
    started: AtomicU64,
    completed: AtomicU64,
}

impl SessionTally {
    /// An instance took a session.
    pub(crate) fn start(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
        let now = self.running.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// An instance hung up at a session's end.
    pub(crate) fn complete(&self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now (`peak`: since the last reading); starts a new period for the peak.
    pub fn take(&self) -> SessionCounts {
        let running = self.running.load(Ordering::Relaxed);
        SessionCounts {
            running,
            peak: self.peak.swap(running, Ordering::Relaxed).max(running),
            started: self.started.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_covers_sessions_that_already_ended() {
        let tally = SessionTally::default();
        tally.start();
        tally.start();
        tally.complete();
        let counts = tally.take();
        assert_eq!(
            counts,
            SessionCounts {
                running: 1,
                peak: 2,
                started: 2,
                completed: 1
            }
        );
        assert_eq!(tally.take().peak, 1);
    }
}
