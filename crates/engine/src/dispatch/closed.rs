//! The closed discipline (instances schedules, ready stpd files), as phantom
//! does it: a free instance takes the next shot at once and holds it until it
//! is due. So each instance starts at its start time, then fires back to
//! back. The thread's timer fires at the soonest held shot's due time and
//! wakes the holders of every shot due by then.

use std::cmp::Reverse;
use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use super::seats::ThreadState;
use super::{due, Shot};

/// Whether a free instance can take a shot now: there is one.
pub(super) fn available(shots: &VecDeque<Shot>) -> bool {
    !shots.is_empty()
}

/// When this thread's timer should fire: the soonest held shot's due time.
pub(super) fn wanted(here: &ThreadState) -> Option<Duration> {
    here.holding.peek().map(|Reverse((due, _))| *due)
}

/// The instance in `slot` took `shot`, not yet due: it holds it until it is,
/// woken through `waker`. Returns the timer task to wake, when the timer must
/// be armed sooner for it.
pub(super) fn hold(
    here: &mut ThreadState,
    slot: usize,
    shot: Shot,
    waker: &Waker,
) -> Option<Waker> {
    let due = due(&shot);
    let seat = &mut here.seats[slot];
    seat.held = Some(shot);
    seat.set_waker(waker);
    if !seat.in_holding {
        seat.in_holding = true;
        here.holding.push(Reverse((due, slot)));
    }
    here.rearm_for(due)
}

/// The wakers of the seats whose held shot is due by `now`, into `wake`.
pub(super) fn due_holders(here: &mut ThreadState, now: Option<Duration>, wake: &mut Vec<Waker>) {
    while let Some(Reverse((due, slot))) = here.holding.peek().copied() {
        if now.is_none_or(|now| now < due) {
            break;
        }
        here.holding.pop();
        let seat = &mut here.seats[slot];
        if std::mem::take(&mut seat.in_holding) {
            wake.extend(seat.waker.take());
        }
    }
}
