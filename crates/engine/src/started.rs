//! Shots started, by the unix second they started in.
//!
//! A second's sent count is final when the second ends; only its answers wait
//! for late replies. The results thread cannot learn it from the shots'
//! samples, which arrive only when each reply lands (a 4 s reply, seconds after
//! its second was final), so each instance notes a shot's start here as it
//! starts, and the results thread reads each second's count once the second is
//! over. One relaxed atomic add per shot, into a slot chosen by its start
//! second: no channel send, no wake-up, and it replaces the "fired" counter the
//! shot bumped before, so the hot path does no more than it did.
//!
//! The slots hold running totals per second modulo [`SLOTS`], so a reader that
//! looks at least every [`SLOTS`] seconds (the results thread looks every
//! second) gets each second's count as the difference since its last look.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Seconds the slots cover: a reader this far behind merges seconds.
pub const SLOTS: usize = 16;

/// One queue's shots started, per second (see the module docs).
#[derive(Debug, Default)]
pub struct StartedShots {
    slots: [AtomicU64; SLOTS],
}

impl StartedShots {
    /// A shot started at `start_unix_us` (µs since the Unix epoch).
    #[inline]
    pub(crate) fn note(&self, start_unix_us: u64) {
        let slot = (start_unix_us / 1_000_000) as usize % SLOTS;
        self.slots[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Shots started so far.
    pub fn total(&self) -> u64 {
        self.slots.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

/// Reads [`StartedShots`] second by second.
#[derive(Debug)]
pub struct StartedSeconds {
    shots: Vec<Arc<StartedShots>>,
    /// Each slot's total (over the queues) at the last look.
    seen: [u64; SLOTS],
    /// The next second to read.
    next: u64,
}

impl StartedSeconds {
    /// Read `shots` (a run's queues, summed) from unix second `first` on.
    pub fn new(shots: Vec<Arc<StartedShots>>, first: u64) -> StartedSeconds {
        StartedSeconds {
            shots,
            seen: [0; SLOTS],
            next: first,
        }
    }

    /// The counts of the seconds up to `last` (inclusive) not yet read, with
    /// starts (seconds with none are left out). Call it once `last` is over,
    /// and for a shot started just before a second's end to have been noted, a
    /// moment after that. A reader more than [`SLOTS`] seconds behind has the
    /// skipped seconds' shots counted in the later seconds of their slots.
    pub fn take_until(&mut self, last: u64) -> Vec<(u64, u64)> {
        let mut counts = Vec::new();
        if last < self.next {
            return counts;
        }
        let from = self.next.max(last.saturating_sub(SLOTS as u64 - 1));
        for second in from..=last {
            let slot = second as usize % SLOTS;
            let total: u64 = self
                .shots
                .iter()
                .map(|s| s.slots[slot].load(Ordering::Relaxed))
                .sum();
            let started = total - self.seen[slot];
            self.seen[slot] = total;
            if started > 0 {
                counts.push((second, started));
            }
        }
        self.next = last.saturating_add(1);
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_second_is_counted_once_and_queues_add_up() {
        let (a, b) = (
            Arc::new(StartedShots::default()),
            Arc::new(StartedShots::default()),
        );
        let mut seconds = StartedSeconds::new(vec![Arc::clone(&a), Arc::clone(&b)], 100);
        for us in [100_000_000, 100_999_999, 101_000_000] {
            a.note(us);
        }
        b.note(100_500_000);
        assert_eq!(seconds.take_until(100), vec![(100, 3)]);
        assert_eq!(seconds.take_until(100), vec![]);
        // Sixteen seconds on, second 100's slot is reused: still counted apart.
        a.note(116_000_000);
        assert_eq!(seconds.take_until(116), vec![(101, 1), (116, 1)]);
        assert_eq!(a.total() + b.total(), 5);
    }

    #[test]
    fn a_reader_far_behind_folds_the_skipped_seconds_into_their_slots() {
        let shots = Arc::new(StartedShots::default());
        let mut seconds = StartedSeconds::new(vec![Arc::clone(&shots)], 0);
        shots.note(1_000_000);
        shots.note(40_000_000);
        let counts = seconds.take_until(40);
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 2, "{counts:?}");
        assert!(counts.iter().all(|(s, _)| *s > 40 - SLOTS as u64));
    }
}
