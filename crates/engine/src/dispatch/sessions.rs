//! The sessions discipline (a replay, `ammo_type = sessions`): sessions, not
//! shots, go to free instances, and each session's requests then go to the
//! one instance that took it, in order, each at its due time.
//!
//! Why a third discipline and not shots that carry their session: under the
//! open and closed ones any free instance may take any shot, and the buffer
//! is one queue in plan order. A session's requests must all go over one
//! connection, in order, each only once the one before has its reply; a
//! shared queue would have its head blocked by a session whose instance is
//! still waiting for a reply, and every instance would scan it for its own.
//! Here every session has its own lane (its requests, in order), the shared
//! queue holds only sessions waiting for an instance, and the open and closed
//! paths are not touched: they pay nothing for replays.
//!
//! - **A session begins** (its first request is due): an idle instance takes
//!   it, as the open discipline takes a shot: every I/O thread with an idle
//!   instance arms its timer for the first waiting session's due time, and
//!   the first to run takes it. When the pool is exhausted the session waits
//!   in `waiting`, and its requests' lag grows (measured, not hidden).
//! - **Its requests**: the instance holding the session takes the front of
//!   its lane once it is due, as the closed discipline holds a shot: its
//!   thread's timer fires at the soonest due time among its holders. A
//!   request that is due while the one before is still in flight waits for
//!   the instance; its lag is its actual start minus its due time.
//! - **It ends** (the feeder saw its end, and its lane is empty): the
//!   instance is told to hang up, and is free for the next session.
//!
//! # Contract
//!
//! - A request is owned by exactly one of: the feeder's batch (until
//!   [`SessionDispatch::offer`] takes it), its session's lane, or the instance
//!   that [`SessionDispatch::next`] returned it to.
//! - A session is taken by at most one instance, and only once its first
//!   request is due; `next` MUST NOT return a request before it is due, and
//!   returns a session's requests in the feeder's order.
//! - The feeder offers a session's `Begin` before its requests and its `End`
//!   after them; steps of sessions it never began are dropped.
//! - [`SessionDispatch::halt`] returns the count of requests it dropped (in
//!   lanes), so that they are counted unsent; after it, `next` returns
//!   `None` and `offer` takes nothing.
//! - Every instance waiting in `next` is eventually woken: by a due session or
//!   request, by a step for its session, by the end of the feed
//!   ([`SessionDispatch::close`]), or by `halt`.
//! - The timer tasks ([`SessionDispatch::start_timers`]) end when the dispatch halts.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use tank_plan::replay::SessionKey;

use super::seats::{SeatState, ThreadState};
use super::timer_task::Timed;
use super::Seat;
use crate::feed::Shot;
use crate::io_threads::{IoThread, Spawner};
use crate::tally::SessionTally;

/// One step of a replay as the feeder hands it over.
#[derive(Debug)]
pub(crate) enum Handed {
    /// A session begins; its first request is due then.
    Begin(SessionKey, Duration),
    /// A request of the session (its `due` is always set).
    Request(SessionKey, Shot),
    /// The session has no more requests.
    End(SessionKey),
}

/// What an instance is to do next.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Fire this request of its session (on the session's connection).
    Fire(Shot),
    /// Its session is over: close the connection; the instance is free.
    HangUp,
}

/// A session's requests not yet fired.
#[derive(Default)]
struct Lane {
    requests: VecDeque<Shot>,
    /// The feeder saw its end.
    ended: bool,
    /// The instance that took it.
    seat: Option<Seat>,
}

/// A replay's sessions on their way to its instances.
pub(crate) struct SessionDispatch {
    /// Due times count from here.
    start: Instant,
    state: Mutex<State>,
    /// Sessions taken and ended, for the console and the summary.
    tally: Arc<SessionTally>,
}

pub(super) struct State {
    /// Looked up twice per request (offered, taken): the keys are the plan's
    /// own numbers, so a fast hasher is safe.
    lanes: foldhash::HashMap<SessionKey, Lane>,
    /// Sessions begun and not yet taken, in order, with their first due time.
    waiting: VecDeque<(SessionKey, Duration)>,
    /// Requests in lanes.
    buffered: usize,
    closed: bool,
    halted: bool,
    threads: Vec<ThreadState>,
    /// Per thread, per seat: the session its instance holds.
    sessions: Vec<Vec<Option<SessionKey>>>,
}

impl SessionDispatch {
    /// A dispatch whose due times count from `start`, counting sessions in `tally`.
    pub fn new(start: Instant, tally: Arc<SessionTally>) -> SessionDispatch {
        SessionDispatch {
            start,
            tally,
            state: Mutex::new(State {
                lanes: foldhash::HashMap::default(),
                waiting: VecDeque::new(),
                buffered: 0,
                closed: false,
                halted: false,
                threads: Vec::new(),
                sessions: Vec::new(),
            }),
        }
    }

    /// When the replay's due times count from.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// A seat for an instance that runs on `thread`.
    pub fn seat(&self, thread: IoThread) -> Seat {
        let mut guard = self.lock();
        let state = &mut *guard;
        let at = thread.index();
        if state.threads.len() <= at {
            state.threads.resize_with(at + 1, ThreadState::default);
            state.sessions.resize_with(at + 1, Vec::new);
        }
        state.threads[at].seats.push(SeatState::default());
        state.sessions[at].push(None);
        Seat {
            thread: at,
            slot: state.threads[at].seats.len() - 1,
        }
    }

    /// Start the timer task of every thread that has seats; they end when
    /// the dispatch halts.
    pub fn start_timers(self: &Arc<Self>, io: &Spawner) -> JoinSet<()> {
        super::timer_task::start_timers(self, io)
    }

    /// What the instance in `seat` does next, once it is due; `None` when
    /// there is nothing more (the feed ended and no session waits, or halt).
    pub fn next(&self, seat: Seat) -> NextTurn<'_> {
        NextTurn {
            dispatch: self,
            seat,
        }
    }

    /// Take every step of `batch`, in order (`false`: halted, nothing taken).
    pub fn offer(&self, batch: &mut Vec<Handed>) -> bool {
        let mut wake = Vec::new();
        {
            let mut guard = self.lock();
            let state = &mut *guard;
            if state.halted {
                return false;
            }
            for step in batch.drain(..) {
                match step {
                    Handed::Begin(session, due) => {
                        state.lanes.insert(session, Lane::default());
                        if state.waiting.is_empty() {
                            // Threads with idle instances arm their timers for it.
                            wake.extend(
                                state
                                    .threads
                                    .iter_mut()
                                    .filter(|thread| !thread.idle.is_empty())
                                    .filter_map(|thread| thread.timer_task.take()),
                            );
                        }
                        state.waiting.push_back((session, due));
                    }
                    Handed::Request(session, shot) => {
                        let Some(lane) = state.lanes.get_mut(&session) else {
                            continue;
                        };
                        let due = super::due(&shot);
                        lane.requests.push_back(shot);
                        state.buffered += 1;
                        if let (1, Some(seat)) = (lane.requests.len(), lane.seat) {
                            // Its instance may be waiting for this step: hold it on
                            // its thread's timer until due instead of waking it now
                            // (the feeder runs ahead: a wake per request, in bursts,
                            // would delay the requests due meanwhile).
                            let here = &mut state.threads[seat.thread];
                            let held = &mut here.seats[seat.slot];
                            if !held.in_holding {
                                held.in_holding = true;
                                here.holding.push(std::cmp::Reverse((due, seat.slot)));
                            }
                            wake.extend(here.rearm_for(due));
                        }
                    }
                    Handed::End(session) => {
                        let Some(lane) = state.lanes.get_mut(&session) else {
                            continue;
                        };
                        lane.ended = true;
                        if lane.requests.is_empty() {
                            wake.extend(seat_waker(&mut state.threads, lane.seat));
                        }
                    }
                }
            }
        }
        wake.into_iter().for_each(Waker::wake);
        true
    }

    /// Whether the replay halted.
    pub fn halted(&self) -> bool {
        self.lock().halted
    }

    /// No more steps will come: idle instances end once no session waits.
    pub fn close(&self) {
        let wake = {
            let mut state = self.lock();
            state.closed = true;
            if state.waiting.is_empty() {
                state.start_ending()
            } else {
                Vec::new()
            }
        };
        wake.into_iter().for_each(Waker::wake);
    }

    /// Stop: every instance waiting gets `None`, and so does every later
    /// call; offers are refused. Returns how many requests it dropped unsent.
    pub fn halt(&self) -> usize {
        let (wake, dropped) = {
            let mut guard = self.lock();
            let state = &mut *guard;
            state.halted = true;
            let dropped = state.buffered;
            state.buffered = 0;
            state.lanes.clear();
            state.waiting.clear();
            let mut wake = state.wake_idle();
            for thread in &mut state.threads {
                thread.holding.clear();
                for seat in &mut thread.seats {
                    seat.in_holding = false;
                    wake.extend(seat.waker.take());
                }
                wake.extend(thread.timer_task.take());
            }
            (wake, dropped)
        };
        wake.into_iter().for_each(Waker::wake);
        dropped
    }

    /// Time since the start; `None` before it.
    fn now(&self) -> Option<Duration> {
        Instant::now().checked_duration_since(self.start)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The waker of the instance in `seat`, if it waits.
fn seat_waker(threads: &mut [ThreadState], seat: Option<Seat>) -> Option<Waker> {
    let Seat { thread, slot } = seat?;
    threads[thread].seats[slot].waker.take()
}

impl State {
    /// Every idle instance's waker; none is idle afterwards.
    fn wake_idle(&mut self) -> Vec<Waker> {
        let mut wake = Vec::new();
        for thread in &mut self.threads {
            while let Some(waker) = thread.wake_top() {
                wake.push(waker);
            }
        }
        wake
    }

    /// The feed is closed and no session waits: wake the most recently idle
    /// instance of each thread, to end and wake the next (see [`NextTurn`]).
    fn start_ending(&mut self) -> Vec<Waker> {
        self.threads
            .iter_mut()
            .filter_map(ThreadState::wake_top)
            .collect()
    }

    /// Whether a free instance can take a session now: the first waiting one is due.
    fn session_due(&self, now: Option<Duration>) -> bool {
        self.waiting
            .front()
            .is_some_and(|(_, due)| now.is_some_and(|now| now >= *due))
    }
}

/// The future of [`SessionDispatch::next`].
pub(crate) struct NextTurn<'a> {
    dispatch: &'a SessionDispatch,
    seat: Seat,
}

impl Future for NextTurn<'_> {
    type Output = Option<Turn>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Turn>> {
        let Seat { thread, slot } = self.seat;
        let dispatch = self.dispatch;
        let now = dispatch.now();
        let mut guard = dispatch.lock();
        let state = &mut *guard;
        // The next idle instance or the timer task, for a session taken here;
        // the timer task again, for a request held here.
        let mut wake: Option<Waker> = None;
        let mut rearm: Option<Waker> = None;
        let mut ending = Vec::new();
        let outcome = loop {
            if state.halted {
                state.threads[thread].unpark(slot);
                break Poll::Ready(None);
            }
            let Some(session) = state.sessions[thread][slot] else {
                // Free: take the first waiting session once it is due.
                if state.session_due(now) {
                    let Some((session, _)) = state.waiting.pop_front() else {
                        continue;
                    };
                    state.threads[thread].unpark(slot);
                    state.sessions[thread][slot] = Some(session);
                    dispatch.tally.start();
                    if let Some(lane) = state.lanes.get_mut(&session) {
                        lane.seat = Some(self.seat);
                    }
                    let another = state.session_due(now);
                    let next_due = state.waiting.front().map(|(_, due)| *due);
                    if state.closed && next_due.is_none() {
                        // That was the last session: idle instances are done.
                        ending = state.start_ending();
                    }
                    let here = &mut state.threads[thread];
                    wake = if another {
                        // Another is due: the next idle instance here takes it.
                        here.wake_top()
                    } else {
                        // If someone here waits for the next session, the timer is armed for it.
                        super::open::rearm_for_idle(here, next_due)
                    };
                    continue;
                }
                if state.closed && state.waiting.is_empty() {
                    let here = &mut state.threads[thread];
                    here.unpark(slot);
                    wake = here.wake_top();
                    break Poll::Ready(None);
                }
                let first_due = state.waiting.front().map(|(_, due)| *due);
                let here = &mut state.threads[thread];
                here.park(slot, cx.waker());
                rearm = first_due.and_then(|due| here.rearm_for(due));
                break Poll::Pending;
            };
            let Some(lane) = state.lanes.get_mut(&session) else {
                // Its lane is gone (halted): nothing more for this session.
                state.sessions[thread][slot] = None;
                dispatch.tally.complete();
                break Poll::Ready(Some(Turn::HangUp));
            };
            let here = &mut state.threads[thread];
            // A request without a due time (none of a replay's) is due at once.
            match lane.requests.front().map(super::due) {
                Some(due) if now.is_some_and(|now| now >= due) => {
                    let shot = lane.requests.pop_front();
                    here.seats[slot].in_holding = false;
                    state.buffered -= 1;
                    break Poll::Ready(shot.map(Turn::Fire));
                }
                Some(due) => {
                    // Hold until due: this thread's timer fires for it.
                    let seat = &mut here.seats[slot];
                    seat.set_waker(cx.waker());
                    if !seat.in_holding {
                        seat.in_holding = true;
                        here.holding.push(std::cmp::Reverse((due, slot)));
                    }
                    rearm = here.rearm_for(due);
                    break Poll::Pending;
                }
                None if lane.ended => {
                    state.lanes.remove(&session);
                    state.sessions[thread][slot] = None;
                    dispatch.tally.complete();
                    break Poll::Ready(Some(Turn::HangUp));
                }
                None => {
                    // Its next step has not come yet: the feeder's offer holds it
                    // on this thread's timer until that step is due (or, for its
                    // end, wakes it).
                    here.seats[slot].set_waker(cx.waker());
                    break Poll::Pending;
                }
            }
        };
        drop(guard);
        wake.into_iter()
            .chain(rearm)
            .chain(ending)
            .for_each(Waker::wake);
        outcome
    }
}

impl Timed for SessionDispatch {
    type State = State;
    /// The first waiting session's due time.
    type Look = Option<Duration>;

    fn start(&self) -> Instant {
        self.start
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        SessionDispatch::lock(self)
    }

    fn threads(state: &mut State) -> &mut [ThreadState] {
        &mut state.threads
    }

    fn look(&self, state: &State, now: Option<Duration>) -> Option<(Self::Look, bool)> {
        (!state.halted).then(|| {
            (
                state.waiting.front().map(|(_, due)| *due),
                state.session_due(now),
            )
        })
    }

    /// The soonest held request here, or the first waiting session while an
    /// instance here is idle.
    fn wanted(
        &self,
        here: &ThreadState,
        first_waiting: Option<Duration>,
        now: Option<Duration>,
    ) -> Option<Duration> {
        let holding = here.holding.peek().map(|std::cmp::Reverse((due, _))| *due);
        let session = super::open::wanted(here, first_waiting, now);
        match (holding, session) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests;
