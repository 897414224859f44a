//! The dispatch: a queue's shots, handed to its free instances.
//!
//! The feeder appends shots in plan order. How instances take them depends
//! on the queue's [`Discipline`]:
//!
//! - **Open** (rps schedules): a free instance takes the first shot once it
//!   is due. Nobody holds a shot while it waits: every I/O thread that has
//!   free instances arms its timer for the first shot's due time, and the
//!   first thread to run takes the shots due. A thread that is late to run
//!   (its CPU busy with the target, or its vCPU not yet scheduled by the
//!   host) leaves its share to the others instead of making it late. (This
//!   departs from phantom, where each instance holds the next shot until it
//!   is due; shots still go in order, each at its due time, at most
//!   `instances` at once. docs/architecture.md records the decision.)
//!   `open.rs` has its rules.
//! - **Closed** (instances schedules, ready stpd files), as phantom: a free
//!   instance takes the next shot at once and holds it until it is due. So an
//!   instance starts at its start time, then fires back to back. `closed.rs`
//!   has its rules; `seats.rs` the per-thread idle stack both use.
//! - **Sessions** (a replay) is a dispatch of its own, [`sessions::SessionDispatch`]:
//!   instances take sessions, then their session's requests, each when due.
//!   `sessions.rs` has its rules and contract, and why it is separate.
//!
//! Either way, each thread wakes its most recently idle instance first, so
//! the fewest instances carry the load and keep their connections warm:
//! `instances` caps concurrency, and connections are opened as concurrency
//! needs them. In first-come order, at 30k rps all of the default 1000
//! instances connected within the first second, and that storm made the first
//! second's p99 lag 56 ms. An instance that takes a shot wakes the next idle
//! one on its thread when another can be taken, so a thread wakes once per due
//! time however many shots fall due then.
//!
//! # Contract
//!
//! - A shot is owned by exactly one of: the feeder's batch (until
//!   [`Dispatch::offer`] takes it), the buffer (`State::shots`), a seat's
//!   `held` (closed discipline only), or the instance that [`Dispatch::next`]
//!   returned it to. No shot is ever in two of them or lost between them.
//! - Under Open, `next` MUST NOT return a shot before it is due; under Closed
//!   it MAY hand one out early, but the instance then holds it and `next`
//!   resolves only once it is due.
//! - Shots are taken from the buffer in plan order (each thread sees its own
//!   in that order).
//! - [`Dispatch::halt`] MUST return the count of shots it dropped (buffered
//!   and held), so that they are counted unsent; after it, `next` returns
//!   `None` and `offer` takes nothing.
//! - Every instance waiting in `next` is eventually woken: by a shot, by the
//!   end of the shots ([`Dispatch::close`]), or by `halt`. A lost wake-up
//!   would hang the queue; the tests fail after 10 s if one does.
//! - The timer tasks ([`Dispatch::start_timers`]) end when the dispatch halts.

mod closed;
mod open;
mod seats;
pub(crate) mod sessions;
#[cfg(test)]
mod tests;
mod timer_task;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::feed::Shot;
use crate::io_threads::{IoThread, Spawner};

use seats::{SeatState, ThreadState};
use timer_task::Timed;

/// Shots buffered ahead of the instances.
pub(crate) const AHEAD: usize = 4096;

/// When an instance takes a shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discipline {
    /// Once it is due (shots without a due time at once): see `open.rs`.
    Open,
    /// At once, holding it until it is due: see `closed.rs`.
    Closed,
}

/// The three places the disciplines differ; each is answered by its own file.
impl Discipline {
    /// Whether a free instance can take a shot now.
    fn available(self, shots: &VecDeque<Shot>, now: Option<Duration>) -> bool {
        match self {
            Discipline::Open => open::available(shots, now),
            Discipline::Closed => closed::available(shots),
        }
    }

    /// The due time a thread's timer should fire at, if any.
    fn wanted(
        self,
        here: &ThreadState,
        first_due: Option<Duration>,
        now: Option<Duration>,
    ) -> Option<Duration> {
        match self {
            Discipline::Open => open::wanted(here, first_due, now),
            Discipline::Closed => closed::wanted(here),
        }
    }

    /// The timer task to wake when an idle instance here waits for a shot due
    /// at `next_due` (closed instances wait by holding one instead).
    fn rearm_for_idle(self, here: &mut ThreadState, next_due: Option<Duration>) -> Option<Waker> {
        match self {
            Discipline::Open => open::rearm_for_idle(here, next_due),
            Discipline::Closed => None,
        }
    }

    /// Whether a shot just taken is held until due instead of fired.
    fn holds(self, shot: &Shot, now: Option<Duration>) -> bool {
        self == Discipline::Closed && !is_due(shot, now)
    }
}

/// One queue's shots on their way to its instances; shared by the feeder, the
/// instances and one timer task per I/O thread.
pub(crate) struct Dispatch {
    /// Due times count from here.
    start: Instant,
    discipline: Discipline,
    state: Mutex<State>,
}

pub(super) struct State {
    /// Shots not yet taken, in plan order.
    shots: VecDeque<Shot>,
    /// No more shots will come: instances end once these are taken.
    closed: bool,
    /// The queue stopped: instances end now, and nothing more is taken in.
    halted: bool,
    threads: Vec<ThreadState>,
}

/// An instance's place in a [`Dispatch`]: its I/O thread and its seat there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Seat {
    thread: usize,
    slot: usize,
}

/// What [`Dispatch::offer`] did with the shots it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// It took them all.
    All,
    /// The buffer is full: the rest are left in the batch.
    Full,
    /// The queue halted: nothing will be taken again.
    Halted,
}

impl Dispatch {
    /// A dispatch whose due times count from `start`; instances take their
    /// seats with [`Dispatch::seat`].
    pub fn new(start: Instant, discipline: Discipline) -> Dispatch {
        Dispatch {
            start,
            discipline,
            state: Mutex::new(State {
                shots: VecDeque::new(),
                closed: false,
                halted: false,
                threads: Vec::new(),
            }),
        }
    }

    /// A seat for an instance that runs on `thread`.
    pub fn seat(&self, thread: IoThread) -> Seat {
        let mut state = self.lock();
        let threads = &mut state.threads;
        if threads.len() <= thread.index() {
            threads.resize_with(thread.index() + 1, ThreadState::default);
        }
        let seats = &mut threads[thread.index()].seats;
        seats.push(SeatState::default());
        Seat {
            thread: thread.index(),
            slot: seats.len() - 1,
        }
    }

    /// Start the timer task of every thread that has seats, into the returned
    /// set; they end when the dispatch halts.
    pub fn start_timers(self: &Arc<Self>, io: &Spawner) -> JoinSet<()> {
        timer_task::start_timers(self, io)
    }

    /// The next shot for the instance in `seat`, once it is due; `None` when
    /// there will be none (the shots ran out, or the queue halted).
    pub fn next(&self, seat: Seat) -> Next<'_> {
        Next {
            dispatch: self,
            seat,
        }
    }

    /// Take shots from the front of `batch`, in order, while there is room.
    pub fn offer(&self, batch: &mut VecDeque<Shot>) -> Offered {
        let mut wake = Vec::new();
        let offered = {
            let mut guard = self.lock();
            let state = &mut *guard;
            if state.halted {
                return Offered::Halted;
            }
            let was_empty = state.shots.is_empty();
            let room = AHEAD.saturating_sub(state.shots.len());
            let taken = room.min(batch.len());
            state.shots.extend(batch.drain(..taken));
            // Shots where there were none: threads with idle instances look again.
            if was_empty && taken > 0 {
                wake.extend(
                    state
                        .threads
                        .iter_mut()
                        .filter(|thread| !thread.idle.is_empty())
                        .filter_map(|thread| thread.timer_task.take()),
                );
            }
            if batch.is_empty() {
                Offered::All
            } else {
                Offered::Full
            }
        };
        wake.into_iter().for_each(Waker::wake);
        offered
    }

    /// Whether the buffer is over half full.
    pub fn over_half_full(&self) -> bool {
        self.lock().shots.len() * 2 > AHEAD
    }

    /// No more shots will come: instances end once the buffered ones are taken.
    pub fn close(&self) {
        let wake = {
            let mut state = self.lock();
            state.closed = true;
            if state.shots.is_empty() {
                state.start_ending()
            } else {
                Vec::new()
            }
        };
        wake.into_iter().for_each(Waker::wake);
    }

    /// Stop: every instance waiting (for a shot, or with one) gets `None`, and
    /// so does every later call; offers are refused. Returns how many shots it
    /// dropped unsent, held ones included.
    pub fn halt(&self) -> usize {
        let (wake, dropped) = {
            let mut guard = self.lock();
            let state = &mut *guard;
            state.halted = true;
            let mut dropped = state.shots.len();
            state.shots.clear();
            let mut wake = state.drain_idle();
            for thread in &mut state.threads {
                thread.holding.clear();
                for seat in &mut thread.seats {
                    seat.in_holding = false;
                    if seat.held.take().is_some() {
                        dropped += 1;
                        wake.extend(seat.waker.take());
                    }
                }
                wake.extend(thread.timer_task.take());
            }
            (wake, dropped)
        };
        wake.into_iter().for_each(Waker::wake);
        dropped
    }

    /// Time since the start; `None` before it (the start may lie ahead, so the
    /// run's threads are ready when the first shots are due).
    fn now(&self) -> Option<Duration> {
        Instant::now().checked_duration_since(self.start)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the buffer half-changed in a way that matters: go on.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    /// The closed queue is empty: wake the most recently idle instance of each
    /// thread, to end and wake the next (see [`Next`]). Waking every idle
    /// instance at once here would delay the last shots of the run, whose
    /// instances do this just before they fire.
    fn start_ending(&mut self) -> Vec<Waker> {
        self.threads
            .iter_mut()
            .filter_map(ThreadState::wake_top)
            .collect()
    }

    /// Every idle instance's waker; none is idle afterwards.
    fn drain_idle(&mut self) -> Vec<Waker> {
        let mut wake = Vec::new();
        for thread in &mut self.threads {
            while let Some(waker) = thread.wake_top() {
                wake.push(waker);
            }
        }
        wake
    }
}

/// A shot's due time; shots without one are due at once.
fn due(shot: &Shot) -> Duration {
    shot.due.unwrap_or_default()
}

fn is_due(shot: &Shot, now: Option<Duration>) -> bool {
    now.is_some_and(|now| now >= due(shot))
}

/// The future of [`Dispatch::next`].
pub(crate) struct Next<'a> {
    dispatch: &'a Dispatch,
    seat: Seat,
}

impl Future for Next<'_> {
    type Output = Option<Shot>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Shot>> {
        let Seat { thread, slot } = self.seat;
        let dispatch = self.dispatch;
        let now = dispatch.now();
        let mut guard = dispatch.lock();
        let state = &mut *guard;
        if state.halted {
            state.threads[thread].unpark(slot);
            return Poll::Ready(None);
        }
        // The next idle instance, this thread's timer task; each thread's, after the last shot.
        let mut wake: Option<Waker> = None;
        let mut rearm: Option<Waker> = None;
        let mut wake_all = Vec::new();
        // Closed discipline: a shot taken earlier, still to fire.
        let mut taken = state.threads[thread].seats[slot].held.take();
        let discipline = dispatch.discipline;
        if taken.is_none() && discipline.available(&state.shots, now) {
            taken = state.shots.pop_front();
            state.threads[thread].unpark(slot);
            let another = discipline.available(&state.shots, now);
            let next_due = state.shots.front().map(due);
            if another {
                // Another can be taken: the next idle instance here takes it.
                wake = state.threads[thread].wake_top();
            } else if state.closed && next_due.is_none() {
                // That was the last shot: everyone waiting for one is done.
                wake_all = state.start_ending();
            } else {
                // If someone here waits for the next shot, the timer should be armed for it.
                rearm = discipline.rearm_for_idle(&mut state.threads[thread], next_due);
            }
        }
        let outcome = match taken {
            Some(shot) if discipline.holds(&shot, now) => {
                rearm = closed::hold(&mut state.threads[thread], slot, shot, cx.waker());
                Poll::Pending
            }
            Some(shot) => {
                state.threads[thread].seats[slot].in_holding = false;
                Poll::Ready(Some(shot))
            }
            None if state.closed && state.shots.is_empty() => {
                // Done, and so is the next idle instance here.
                let here = &mut state.threads[thread];
                here.unpark(slot);
                wake = here.wake_top();
                Poll::Ready(None)
            }
            None => {
                let first_due = state.shots.front().map(due);
                let here = &mut state.threads[thread];
                here.park(slot, cx.waker());
                rearm = discipline.rearm_for_idle(here, first_due);
                Poll::Pending
            }
        };
        drop(guard);
        wake.into_iter()
            .chain(rearm)
            .chain(wake_all)
            .for_each(Waker::wake);
        outcome
    }
}

impl Timed for Dispatch {
    type State = State;
    /// The first shot's due time.
    type Look = Option<Duration>;

    fn start(&self) -> Instant {
        self.start
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        Dispatch::lock(self)
    }

    fn threads(state: &mut State) -> &mut [ThreadState] {
        &mut state.threads
    }

    fn look(&self, state: &State, now: Option<Duration>) -> Option<(Self::Look, bool)> {
        (!state.halted).then(|| {
            (
                state.shots.front().map(due),
                self.discipline.available(&state.shots, now),
            )
        })
    }

    /// The open discipline's first due shot while an instance here is idle;
    /// the closed one's soonest held shot.
    fn wanted(
        &self,
        here: &ThreadState,
        first_due: Option<Duration>,
        now: Option<Duration>,
    ) -> Option<Duration> {
        self.discipline.wanted(here, first_due, now)
    }
}
