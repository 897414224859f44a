//! The open discipline (rps schedules): a free instance takes the first shot
//! once it is due. Nobody holds a shot while it waits: every I/O thread with
//! an idle instance arms its timer for the first shot's due time, and the
//! first thread to run takes the shots due, so a thread that is late to run
//! leaves its share to the others instead of making it late.

use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use super::seats::ThreadState;
use super::Shot;

/// Whether a free instance can take a shot now: the first one is `is_due`.
pub(super) fn available(shots: &VecDeque<Shot>, is_due: impl FnOnce(&Shot) -> bool) -> bool {
    shots.front().is_some_and(is_due)
}

/// When this thread's timer should fire: the first shot's due time, while it
/// is still ahead and an instance here is idle to take it.
pub(super) fn wanted(
    here: &ThreadState,
    first_due: Option<Duration>,
    now: Option<Duration>,
) -> Option<Duration> {
    first_due.filter(|due| !here.idle.is_empty() && now.is_none_or(|now| now < *due))
}

/// The timer task to wake, when an instance here is idle and the timer must
/// be armed sooner for the next shot (due at `next_due`).
pub(super) fn rearm_for_idle(here: &mut ThreadState, next_due: Option<Duration>) -> Option<Waker> {
    if here.idle.is_empty() {
        return None;
    }
    next_due.and_then(|due| here.rearm_for(due))
}
