//! Each I/O thread's timer task, the one both dispatches run: it arms the
//! thread's precise timer for the soonest due time its instances wait for,
//! and when that time comes wakes the instances holding work now due and the
//! most recently idle one, if an idle instance can take work. A dispatch says
//! only what differs ([`Timed`]): what is available and when its thread
//! wants to wake.

use std::future::poll_fn;
use std::sync::{Arc, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::closed;
use super::seats::ThreadState;
use crate::io_threads::Spawner;
use crate::timer::Timer;

/// A dispatch whose I/O threads each run a timer task.
pub(super) trait Timed: Send + Sync + Sized + 'static {
    /// The dispatch's state, behind its lock.
    type State;
    /// What a turn learns from the whole state before it looks at its thread.
    type Look: Copy;

    /// Due times count from here.
    fn start(&self) -> Instant;

    /// The state, locked.
    fn lock(&self) -> MutexGuard<'_, Self::State>;

    /// The state of each I/O thread's instances.
    fn threads(state: &mut Self::State) -> &mut [ThreadState];

    /// `None` once the dispatch halted (the task ends); else what the turn
    /// needs from the whole state, and whether an idle instance can take work
    /// now.
    fn look(&self, state: &Self::State, now: Option<Duration>) -> Option<(Self::Look, bool)>;

    /// The due time `here`'s timer should fire at, its due holders woken.
    fn wanted(
        &self,
        here: &ThreadState,
        look: Self::Look,
        now: Option<Duration>,
    ) -> Option<Duration>;
}

/// Start the timer task of every thread that has instances of `dispatch`;
/// they end when it halts.
pub(super) fn start_timers<D: Timed>(dispatch: &Arc<D>, io: &Spawner) -> JoinSet<()> {
    let mut timers = JoinSet::new();
    let seated: Vec<bool> = D::threads(&mut dispatch.lock())
        .iter()
        .map(|thread| !thread.seats.is_empty())
        .collect();
    for thread in io
        .threads()
        .filter(|t| seated.get(t.index()) == Some(&true))
    {
        io.spawn(
            &mut timers,
            thread,
            run_timer(Arc::clone(dispatch), thread.index(), io.clone()),
        );
    }
    timers
}

/// The timer task of `thread`: see the module docs. Ends when the dispatch halts.
async fn run_timer<D: Timed>(dispatch: Arc<D>, thread: usize, io: Spawner) {
    let (mut timer, fell_back) = Timer::new();
    if let Some(why) = fell_back {
        io.note_timer_fallback(&why);
    }
    let start = dispatch.start();
    poll_fn(|cx| loop {
        // A firing is taken first, so that one firing wakes one instance.
        let fired = timer.poll_fired(cx).is_ready();
        let now = Instant::now().checked_duration_since(start);
        let mut guard = dispatch.lock();
        let Some((look, available)) = dispatch.look(&guard, now) else {
            return Poll::Ready(());
        };
        let here = &mut D::threads(&mut guard)[thread];
        if fired {
            here.armed = None;
        }
        // Holders of work now due, and the instance to take the first work available.
        let mut wake = Vec::new();
        closed::due_holders(here, now, &mut wake);
        let top = if available { here.wake_top() } else { None };
        let mut armed = false;
        if let Some(due) = dispatch
            .wanted(here, look, now)
            .filter(|due| here.armed != Some(*due))
        {
            timer.arm(start + due);
            here.armed = Some(due);
            armed = true;
        }
        if !here
            .timer_task
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            here.timer_task = Some(cx.waker().clone());
        }
        drop(guard);
        wake.into_iter().chain(top).for_each(Waker::wake);
        if !armed {
            // The timer is watched (not fired), or disarmed until it is armed again here.
            return Poll::Pending;
        }
        // Armed just now: poll it, to watch it (or see that the time has passed).
    })
    .await;
}
