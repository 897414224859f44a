//! What every gun shares when it times a shot: the phases' marks and
//! phantom's fill rule, so a shot's parts sum to its whole whatever the
//! protocol and wherever it failed.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use tank_stats::{Measured, NetCode};

/// Timestamps of one attempt, µs from the shot's start; `None` for a phase
/// the attempt never reached.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Marks {
    /// The connection was open (0 on a kept one).
    pub connected: Option<u64>,
    /// The request was written whole.
    pub sent: Option<u64>,
    /// The first byte (HTTP/1), or the reply's head (HTTP/2), arrived.
    pub first_byte: Option<u64>,
}

/// phantom's fill rule: phases never reached end at the shot's end, so the
/// parts always sum to the whole. `timeout_us` is the shot's budget.
pub(crate) fn fill(measured: &mut Measured, marks: &Marks, end_us: u64, timeout_us: u64) {
    let connected = marks.connected.unwrap_or(end_us).min(end_us);
    let sent = marks.sent.unwrap_or(end_us).clamp(connected, end_us);
    let first = marks.first_byte.unwrap_or(end_us).clamp(sent, end_us);
    measured.interval_real_us = end_us;
    measured.connect_us = connected;
    measured.send_us = sent - connected;
    measured.latency_us = first - sent;
    measured.receive_us = end_us - first;
    // The time spent waiting within the budget: the budget itself on a timeout.
    measured.interval_event_us = end_us.min(timeout_us);
}

/// A phase not reached yet.
const NOT_YET: u64 = u64::MAX;

/// The marks and sizes of the shot in flight, where its instance can read
/// them if the shot is abandoned (a second Ctrl-C drops the gun's future,
/// and the [`Marks`] it keeps with it): its row then says where the time
/// went. One per barrel, written by the barrel's task only (relaxed atomics,
/// as the row is read by the same task's drop).
#[derive(Debug)]
pub(crate) struct ShotProgress {
    connected: AtomicU64,
    sent: AtomicU64,
    first_byte: AtomicU64,
    size_out: AtomicU64,
    size_in: AtomicU64,
}

impl Default for ShotProgress {
    fn default() -> Self {
        ShotProgress {
            connected: AtomicU64::new(NOT_YET),
            sent: AtomicU64::new(NOT_YET),
            first_byte: AtomicU64::new(NOT_YET),
            size_out: AtomicU64::new(0),
            size_in: AtomicU64::new(0),
        }
    }
}

impl ShotProgress {
    /// A new shot (or a new attempt of one): no phase reached, nothing moved.
    pub(crate) fn begin(&self) {
        self.connected.store(NOT_YET, Relaxed);
        self.sent.store(NOT_YET, Relaxed);
        self.first_byte.store(NOT_YET, Relaxed);
        self.size_out.store(0, Relaxed);
        self.size_in.store(0, Relaxed);
    }

    /// The connection is open, `us` into the shot (0 on a kept one).
    pub(crate) fn connected(&self, us: u64) {
        self.connected.store(us, Relaxed);
    }

    /// The request went out whole, `bytes` of it, `us` into the shot.
    pub(crate) fn sent(&self, us: u64, bytes: u64) {
        self.sent.store(us, Relaxed);
        self.size_out.store(bytes, Relaxed);
    }

    /// When the request was marked sent, µs into the shot (`None`: not yet).
    pub(crate) fn sent_us(&self) -> Option<u64> {
        Some(self.sent.load(Relaxed)).filter(|&us| us != NOT_YET)
    }

    /// `total` bytes of the reply have come, the last `us` into the shot.
    pub(crate) fn received(&self, us: u64, total: u64) {
        if self.first_byte.load(Relaxed) == NOT_YET {
            self.first_byte.store(us, Relaxed);
        }
        self.size_in.store(total, Relaxed);
    }

    /// The row of the shot abandoned `end_us` into it: its phases as far as
    /// they went (phantom's fill rule after that), net code 125.
    pub(crate) fn abandoned(&self, end_us: u64) -> Measured {
        let mark = |at: &AtomicU64| Some(at.load(Relaxed)).filter(|&us| us != NOT_YET);
        let marks = Marks {
            connected: mark(&self.connected),
            sent: mark(&self.sent),
            first_byte: mark(&self.first_byte),
        };
        let mut measured = Measured {
            net_code: NetCode::CANCELED,
            size_out: self.size_out.load(Relaxed),
            size_in: self.size_in.load(Relaxed),
            ..Measured::default()
        };
        fill(&mut measured, &marks, end_us, u64::MAX);
        measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abandoned_shot_is_timed_by_the_phases_it_reached() {
        let progress = ShotProgress::default();
        // Nothing reached: connecting all along, as phantom fills it.
        assert_eq!(progress.abandoned(700).connect_us, 700);
        progress.connected(0);
        progress.sent(40, 120);
        let row = progress.abandoned(2_448_478);
        assert_eq!(
            (row.connect_us, row.send_us, row.latency_us, row.receive_us),
            (0, 40, 2_448_438, 0)
        );
        assert_eq!((row.size_out, row.net_code), (120, NetCode::CANCELED));
        assert_eq!(row.interval_real_us, 2_448_478);
        progress.received(100, 10);
        progress.received(150, 30);
        let row = progress.abandoned(200);
        assert_eq!((row.latency_us, row.receive_us, row.size_in), (60, 100, 30));
        // The next shot starts from nothing.
        progress.begin();
        assert_eq!(progress.abandoned(5).size_out, 0);
        assert_eq!(progress.abandoned(5).connect_us, 5);
    }

    #[test]
    fn fill_rule_makes_parts_sum_to_the_whole() {
        let mut measured = Measured {
            net_code: NetCode::RESET,
            ..Measured::default()
        };
        let marks = Marks {
            connected: Some(100),
            sent: Some(150),
            first_byte: None,
        };
        fill(&mut measured, &marks, 900, 11_000_000);
        assert_eq!(
            (
                measured.connect_us,
                measured.send_us,
                measured.latency_us,
                measured.receive_us
            ),
            (100, 50, 750, 0)
        );
        let mut timed_out = Measured {
            net_code: NetCode::TIMED_OUT,
            ..Measured::default()
        };
        fill(&mut timed_out, &Marks::default(), 1_000_450, 1_000_000);
        assert_eq!(
            (timed_out.connect_us, timed_out.interval_event_us),
            (1_000_450, 1_000_000)
        );
    }
}
