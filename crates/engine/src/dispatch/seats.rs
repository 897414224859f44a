//! The instances of one I/O thread as the dispatch sees them: a seat each,
//! and a stack of the idle ones, so that the most recently idle instance is
//! woken first (the fewest instances carry the load and keep their
//! connections warm), plus the thread's timer arming.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::task::Waker;
use std::time::Duration;

use crate::feed::Shot;

/// The instances of one I/O thread, and its timer.
#[derive(Default)]
pub(super) struct ThreadState {
    /// Idle seats; the last one is woken first.
    pub idle: Vec<usize>,
    /// Closed discipline: seats holding a shot not yet due, soonest first.
    /// An entry whose seat no longer holds that shot is skipped.
    pub holding: BinaryHeap<Reverse<(Duration, usize)>>,
    pub seats: Vec<SeatState>,
    /// The due time the timer is armed for.
    pub armed: Option<Duration>,
    /// The timer task, to wake when its arming should change.
    pub timer_task: Option<Waker>,
}

/// One instance's seat.
#[derive(Default)]
pub(super) struct SeatState {
    pub waker: Option<Waker>,
    /// In the idle list.
    pub idle: bool,
    /// Closed discipline: the shot it took and waits for, and whether it is in `holding`.
    pub held: Option<Shot>,
    pub in_holding: bool,
}

impl ThreadState {
    /// Put `slot` on top of the idle list (where it stays if already there).
    pub fn park(&mut self, slot: usize, waker: &Waker) {
        let seat = &mut self.seats[slot];
        seat.set_waker(waker);
        if !seat.idle {
            seat.idle = true;
            self.idle.push(slot);
        }
    }

    /// Take `slot` off the idle list, if it is there (polled before its turn).
    pub fn unpark(&mut self, slot: usize) {
        if std::mem::take(&mut self.seats[slot].idle) {
            self.idle.retain(|idle| *idle != slot);
        }
    }

    /// The waker of the most recently idle instance, taken off the list.
    pub fn wake_top(&mut self) -> Option<Waker> {
        loop {
            let slot = self.idle.pop()?;
            let seat = &mut self.seats[slot];
            seat.idle = false;
            if let Some(waker) = seat.waker.take() {
                return Some(waker);
            }
        }
    }

    /// The timer task's waker, if the timer should be armed sooner for `due`.
    pub fn rearm_for(&mut self, due: Duration) -> Option<Waker> {
        if self.armed.is_none_or(|armed| due < armed) {
            self.timer_task.take()
        } else {
            None
        }
    }
}

impl SeatState {
    /// Keep `waker` to wake this seat (a clone only when it changed).
    pub fn set_waker(&mut self, waker: &Waker) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.waker = Some(waker.clone());
        }
    }
}
