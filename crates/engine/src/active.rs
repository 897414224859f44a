//! Instances busy with a shot: now, and the most since the last look. The
//! console and the `instances` autostop criterion read it once a second; a
//! reading of "now" alone would mostly miss short shots.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A live count of busy instances.
#[derive(Debug, Default)]
pub struct Active {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Active {
    /// An instance starts a shot.
    #[inline]
    pub fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        // Mostly the peak is already higher: a load, not a compare-and-swap loop.
        if now > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// An instance finished its shot.
    pub fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    /// The most busy at once since the last call (at least those busy now); starts a new period.
    pub fn take_peak(&self) -> usize {
        let now = self.now.load(Ordering::Relaxed);
        self.peak.swap(now, Ordering::Relaxed).max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_covers_shots_that_already_ended() {
        let active = Active::default();
        active.enter();
        active.enter();
        active.leave();
        active.leave();
        assert_eq!(active.take_peak(), 2);
        assert_eq!(active.take_peak(), 0);
        active.enter();
        assert_eq!(active.take_peak(), 1);
        assert_eq!(active.take_peak(), 1);
    }
}
