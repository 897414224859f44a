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
//!   departs from phantom, and from ARCHITECTURE.md's first decision, where
//!   each instance holds the next shot until it is due; shots still go in
//!   order, each at its due time, at most `instances` at once.)
//! - **Closed** (instances schedules, ready stpd files), as phantom: a free
//!   instance takes the next shot at once and holds it until it is due. So an
//!   instance starts at its start time, then fires back to back.
//!
//! Either way, each thread wakes its most recently idle instance first, so
//! the fewest instances carry the load and keep their connections warm:
//! `instances` caps concurrency, and connections are opened as concurrency
//! needs them. In first-come order, at 30k rps all of the default 1000
//! instances connected within the first second, and that storm made the first
//! second's p99 lag 56 ms. An instance that takes a shot wakes the next idle
//! one on its thread when another can be taken, so a thread wakes once per due
//! time however many shots fall due then.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::feed::Shot;
use crate::io_threads::{IoThread, Spawner};
use crate::timer::Timer;

/// Shots buffered ahead of the instances.
pub(crate) const AHEAD: usize = 4096;

/// When an instance takes a shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discipline {
    /// Once it is due (shots without a due time at once).
    Open,
    /// At once, holding it until it is due.
    Closed,
}

/// One queue's shots on their way to its instances; shared by the feeder, the
/// instances and one timer task per I/O thread.
pub(crate) struct Dispatch {
    /// Due times count from here.
    start: Instant,
    discipline: Discipline,
    state: Mutex<State>,
}

struct State {
    /// Shots not yet taken, in plan order.
    shots: VecDeque<Shot>,
    /// No more shots will come: instances end once these are taken.
    closed: bool,
    /// The queue stopped: instances end now, and nothing more is taken in.
    halted: bool,
    threads: Vec<ThreadState>,
}

/// The instances of one I/O thread, and its timer.
#[derive(Default)]
struct ThreadState {
    /// Idle seats; the last one is woken first.
    idle: Vec<usize>,
    /// Closed discipline: seats holding a shot not yet due, soonest first.
    /// An entry whose seat no longer holds that shot is skipped.
    holding: BinaryHeap<Reverse<(Duration, usize)>>,
    seats: Vec<SeatState>,
    /// The due time the timer is armed for.
    armed: Option<Duration>,
    /// The timer task, to wake when its arming should change.
    timer_task: Option<Waker>,
}

#[derive(Default)]
struct SeatState {
    waker: Option<Waker>,
    /// In the idle list.
    idle: bool,
    /// Closed discipline: the shot it took and waits for, and whether it is in `holding`.
    held: Option<Shot>,
    in_holding: bool,
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
        let mut timers = JoinSet::new();
        let seated: Vec<bool> = self
            .lock()
            .threads
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
                run_timer(Arc::clone(self), thread.index(), io.clone()),
            );
        }
        timers
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

    /// Whether a free instance can take a shot now.
    fn available(&self, state: &State, now: Option<Duration>) -> bool {
        match self.discipline {
            Discipline::Open => state.shots.front().is_some_and(|shot| is_due(shot, now)),
            Discipline::Closed => !state.shots.is_empty(),
        }
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

impl ThreadState {
    /// Put `slot` on top of the idle list (where it stays if already there).
    fn park(&mut self, slot: usize, waker: &Waker) {
        let seat = &mut self.seats[slot];
        seat.set_waker(waker);
        if !seat.idle {
            seat.idle = true;
            self.idle.push(slot);
        }
    }

    /// Take `slot` off the idle list, if it is there (polled before its turn).
    fn unpark(&mut self, slot: usize) {
        if std::mem::take(&mut self.seats[slot].idle) {
            self.idle.retain(|idle| *idle != slot);
        }
    }

    /// The waker of the most recently idle instance, taken off the list.
    fn wake_top(&mut self) -> Option<Waker> {
        loop {
            let slot = self.idle.pop()?;
            let seat = &mut self.seats[slot];
            seat.idle = false;
            if let Some(waker) = seat.waker.take() {
                return Some(waker);
            }
        }
    }

    /// Closed discipline: the wakers of the seats whose held shot is due.
    fn due_holders(&mut self, now: Option<Duration>, wake: &mut Vec<Waker>) {
        while let Some(Reverse((due, slot))) = self.holding.peek().copied() {
            if now.is_none_or(|now| now < due) {
                break;
            }
            self.holding.pop();
            let seat = &mut self.seats[slot];
            if std::mem::take(&mut seat.in_holding) {
                wake.extend(seat.waker.take());
            }
        }
    }

    /// The due time this thread's timer should fire at, if any: the first
    /// shot's when it is not yet due and an instance here is idle (open), or
    /// the soonest held shot's (closed).
    fn wanted(
        &self,
        discipline: Discipline,
        first_due: Option<Duration>,
        now: Option<Duration>,
    ) -> Option<Duration> {
        match discipline {
            Discipline::Open => {
                first_due.filter(|due| !self.idle.is_empty() && now.is_none_or(|now| now < *due))
            }
            Discipline::Closed => self.holding.peek().map(|Reverse((due, _))| *due),
        }
    }

    /// The timer task's waker, if the timer should be armed sooner for `due`.
    fn rearm_for(&mut self, due: Duration) -> Option<Waker> {
        if self.armed.is_none_or(|armed| due < armed) {
            self.timer_task.take()
        } else {
            None
        }
    }
}

impl SeatState {
    fn set_waker(&mut self, waker: &Waker) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.waker = Some(waker.clone());
        }
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
        if taken.is_none() && dispatch.available(state, now) {
            taken = state.shots.pop_front();
            state.threads[thread].unpark(slot);
            let another = dispatch.available(state, now);
            let next_due = state.shots.front().map(due);
            if another {
                // Another can be taken: the next idle instance here takes it.
                wake = state.threads[thread].wake_top();
            } else if state.closed && next_due.is_none() {
                // That was the last shot: everyone waiting for one is done.
                wake_all = state.start_ending();
            } else if dispatch.discipline == Discipline::Open {
                // If someone here waits for the next shot, the timer should be armed for it.
                let here = &mut state.threads[thread];
                if !here.idle.is_empty() {
                    rearm = next_due.and_then(|due| here.rearm_for(due));
                }
            }
        }
        let outcome = match taken {
            Some(shot) if dispatch.discipline == Discipline::Closed && !is_due(&shot, now) => {
                // Held until due.
                let due = due(&shot);
                let here = &mut state.threads[thread];
                let seat = &mut here.seats[slot];
                seat.held = Some(shot);
                seat.set_waker(cx.waker());
                if !seat.in_holding {
                    seat.in_holding = true;
                    here.holding.push(Reverse((due, slot)));
                }
                rearm = here.rearm_for(due);
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
                if dispatch.discipline == Discipline::Open {
                    rearm = first_due.and_then(|due| here.rearm_for(due));
                }
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

/// The timer task of one thread: arms the timer for the soonest due time its
/// instances wait for, and wakes them when it comes (the open discipline's
/// most recently idle instance, when a shot is due; the closed one's holders
/// of due shots). Ends when the dispatch halts.
async fn run_timer(dispatch: Arc<Dispatch>, thread: usize, io: Spawner) {
    let (mut timer, fell_back) = Timer::new();
    if let Some(why) = fell_back {
        io.note_timer_fallback(&why);
    }
    poll_fn(|cx| loop {
        // A firing is taken first, so that one firing wakes one instance.
        let fired = timer.poll_fired(cx).is_ready();
        let now = dispatch.now();
        let mut guard = dispatch.lock();
        let state = &mut *guard;
        if state.halted {
            return Poll::Ready(());
        }
        let available = dispatch.available(state, now);
        let first_due = state.shots.front().map(due);
        let here = &mut state.threads[thread];
        if fired {
            here.armed = None;
        }
        // Holders of due shots (closed discipline), and the instance to take the first shot.
        let mut wake = Vec::new();
        here.due_holders(now, &mut wake);
        let top = if available { here.wake_top() } else { None };
        let mut armed = false;
        let wanted = here.wanted(dispatch.discipline, first_due, now);
        if let Some(due) = wanted.filter(|due| here.armed != Some(*due)) {
            timer.arm(dispatch.start + due);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io_threads::IoThreads;
    use proptest::collection::vec;
    use proptest::option;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::num::NonZeroUsize;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const BOTH: [Discipline; 2] = [Discipline::Open, Discipline::Closed];

    fn io(threads: usize) -> IoThreads {
        IoThreads::start(NonZeroUsize::new(threads).unwrap(), || {}).unwrap()
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// Shot `id`, due at `due_ms` (or at once).
    fn shot(id: usize, due_ms: Option<u64>) -> Shot {
        Shot {
            due: due_ms.map(Duration::from_millis),
            tag: Arc::from(&b""[..]),
            request: Arc::from(id.to_string().as_bytes()),
        }
    }

    fn id(shot: &Shot) -> usize {
        std::str::from_utf8(&shot.request).unwrap().parse().unwrap()
    }

    /// A shot as an instance got it.
    #[derive(Debug, Clone, Copy)]
    struct Taken {
        id: usize,
        seat: Seat,
        /// Its place in the order shots were handed out.
        order: usize,
        /// When it was handed out, from the start; `None` before it.
        at: Option<Duration>,
        due: Option<Duration>,
    }

    /// Instances taking shots until there are none; each "fires" at once.
    struct Run {
        dispatch: Arc<Dispatch>,
        instances: JoinSet<Vec<Taken>>,
        _timers: JoinSet<()>,
    }

    /// `per_thread` instances on each of `io`'s threads.
    fn run(io: &IoThreads, start: Instant, per_thread: usize, discipline: Discipline) -> Run {
        let spawner = io.spawner();
        let threads = spawner.threads().count();
        let dispatch = Arc::new(Dispatch::new(start, discipline));
        let order = Arc::new(AtomicUsize::new(0));
        let mut instances = JoinSet::new();
        for index in 0..threads * per_thread {
            let thread = spawner.thread_for(index);
            let seat = dispatch.seat(thread);
            let dispatch = Arc::clone(&dispatch);
            let order = Arc::clone(&order);
            spawner.spawn(&mut instances, thread, async move {
                let mut taken = Vec::new();
                while let Some(shot) = dispatch.next(seat).await {
                    taken.push(Taken {
                        id: id(&shot),
                        seat,
                        order: order.fetch_add(1, Ordering::SeqCst),
                        at: Instant::now().checked_duration_since(start),
                        due: shot.due,
                    });
                }
                taken
            });
        }
        let timers = dispatch.start_timers(&spawner);
        Run {
            dispatch,
            instances,
            _timers: timers,
        }
    }

    impl Run {
        fn offer_all(&self, shots: impl IntoIterator<Item = Shot>) {
            let mut batch: VecDeque<Shot> = shots.into_iter().collect();
            assert_eq!(self.dispatch.offer(&mut batch), Offered::All);
        }

        /// Everything handed out, in that order.
        fn finish(mut self) -> Vec<Taken> {
            let mut taken = block_on(async {
                let mut taken = Vec::new();
                while let Some(joined) =
                    tokio::time::timeout(Duration::from_secs(10), self.instances.join_next())
                        .await
                        .expect("instances did not end")
                {
                    taken.extend(joined.unwrap());
                }
                taken
            });
            taken.sort_by_key(|t| t.order);
            taken
        }
    }

    #[test]
    fn shots_go_once_each_in_order_and_never_early() {
        for (discipline, threads) in [
            (Discipline::Open, 1),
            (Discipline::Open, 2),
            (Discipline::Closed, 2),
        ] {
            let io = io(threads);
            let run = run(&io, Instant::now(), 3, discipline);
            let dues = [0, 3, 10, 10, 10, 20, 30, 30];
            run.offer_all(dues.iter().enumerate().map(|(i, due)| shot(i, Some(*due))));
            run.dispatch.close();
            let taken = run.finish();
            let all: Vec<usize> = (0..dues.len()).collect();
            let mut ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
            match (discipline, threads) {
                // One thread takes and records each shot in one go: the record is
                // the order they were taken in.
                (Discipline::Open, 1) => assert_eq!(ids, all),
                // Two threads may record theirs in either order; each thread's own
                // record is in the order it took them.
                (Discipline::Open, _) => {
                    for thread in 0..threads {
                        let mine = taken.iter().filter(|t| t.seat.thread == thread);
                        assert!(mine.map(|t| t.id).is_sorted(), "{taken:?}");
                    }
                }
                // Held shots due together may fire in any order.
                (Discipline::Closed, _) => {}
            }
            ids.sort_unstable();
            assert_eq!(ids, all, "{discipline:?} on {threads} threads: once each");
            for t in &taken {
                assert!(t.at >= t.due, "{discipline:?}: {t:?} went early");
            }
        }
    }

    #[test]
    fn the_most_recently_idle_instance_takes_the_next_shot() {
        let io = io(1);
        let run = run(&io, Instant::now(), 8, Discipline::Open);
        // Due from 100 ms (by then every instance is idle), 5 ms apart.
        run.offer_all((0..10).map(|i| shot(i, Some(100 + 5 * i as u64))));
        run.dispatch.close();
        let taken = run.finish();
        assert_eq!(taken.len(), 10);
        // Each shot ends before the next is due, so one instance carries them
        // all; a thread that runs late finds several due at once and wakes a
        // second one for them, which may then be the most recently idle. First
        // come, all eight would take their turn.
        let seats: HashSet<Seat> = taken.iter().map(|t| t.seat).collect();
        assert!(seats.len() <= 3, "{taken:?}");
    }

    #[test]
    fn a_thread_that_cannot_run_leaves_its_shots_to_the_other() {
        let io = io(2);
        let spawner = io.spawner();
        let start = Instant::now();
        let run = run(&io, start, 2, Discipline::Open);
        // Shots due from 100 ms on, offered while both threads have idle instances.
        let from = start.elapsed().as_millis() as u64 + 100;
        run.offer_all((0..10).map(|i| shot(i, Some(from + 5 * i as u64))));
        // Then thread 0 stops running for 500 ms, as a busy CPU or an unscheduled vCPU would.
        std::thread::sleep(Duration::from_millis(10));
        let (held, holding) = std::sync::mpsc::channel();
        let mut blocker = JoinSet::new();
        spawner.spawn(&mut blocker, spawner.thread_for(0), async move {
            held.send(start.elapsed()).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        });
        let blocked_at = holding.recv().unwrap();
        assert!(
            blocked_at < Duration::from_millis(from),
            "the test started too late"
        );
        run.dispatch.close();
        let taken = run.finish();
        assert_eq!(taken.len(), 10);
        // No shot waited for thread 0 (taking it there before it stopped, say).
        for t in &taken {
            assert_eq!(t.seat.thread, 1, "{t:?} waited for the stopped thread");
        }
    }

    #[test]
    fn closed_instances_start_at_their_time_then_fire_back_to_back() {
        let io = io(1);
        let run = run(&io, Instant::now(), 2, Discipline::Closed);
        // The closed model's shape: two start times, then shots due at once.
        let mut shots = vec![shot(0, Some(0)), shot(1, Some(200))];
        shots.extend((2..20).map(|i| shot(i, None)));
        run.offer_all(shots);
        run.dispatch.close();
        let taken = run.finish();
        let ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
        let mut expected = vec![0];
        expected.extend(2..20);
        expected.push(1);
        assert_eq!(ids, expected);
        // One instance ran until the second start time: whichever held that shot
        // fired nothing else before it.
        let second = taken[19];
        assert!(second.at >= Some(Duration::from_millis(200)), "{second:?}");
        let back_to_back: HashSet<Seat> = taken[1..19].iter().map(|t| t.seat).collect();
        assert_eq!(back_to_back.len(), 1, "{taken:?}");
    }

    #[test]
    fn idle_instances_wake_for_shots_offered_after_they_waited() {
        for discipline in BOTH {
            let io = io(2);
            let run = run(&io, Instant::now(), 2, discipline);
            std::thread::sleep(Duration::from_millis(20));
            run.offer_all((0..3).map(|i| shot(i, None)));
            std::thread::sleep(Duration::from_millis(20));
            run.offer_all((3..6).map(|i| shot(i, Some(0))));
            run.dispatch.close();
            assert_eq!(run.finish().len(), 6, "{discipline:?}");
        }
    }

    #[test]
    fn a_start_ahead_holds_even_shots_due_at_zero() {
        for discipline in BOTH {
            let io = io(1);
            let start = Instant::now() + Duration::from_millis(40);
            let run = run(&io, start, 1, discipline);
            run.offer_all([shot(0, Some(0))]);
            run.dispatch.close();
            let taken = run.finish();
            assert_eq!(taken.len(), 1);
            assert!(
                taken[0].at.is_some(),
                "{discipline:?}: taken before the start"
            );
        }
    }

    #[test]
    fn halting_ends_every_instance_and_refuses_more_shots() {
        for discipline in BOTH {
            let io = io(2);
            let run = run(&io, Instant::now(), 2, discipline);
            run.offer_all([shot(0, Some(3_600_000)), shot(1, None)]);
            if discipline == Discipline::Closed {
                // Both taken at once: wait until the buffer is empty.
                let waited = Instant::now();
                while !run.dispatch.lock().shots.is_empty() {
                    assert!(waited.elapsed() < Duration::from_secs(10), "never taken");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            // Open: both wait behind the one due in an hour. Closed: that one is
            // held, and the other has gone.
            let dropped = run.dispatch.halt();
            let mut late = VecDeque::from([shot(2, None)]);
            assert_eq!(run.dispatch.offer(&mut late), Offered::Halted);
            let taken = run.finish();
            let ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
            match discipline {
                Discipline::Open => assert_eq!((dropped, ids), (2, vec![])),
                Discipline::Closed => assert_eq!((dropped, ids), (1, vec![1])),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Any mix of dated and undated shots, any number of instances and threads:
        /// every shot is handed out once, never before it is due, and nobody is left
        /// waiting (a lost wake-up would hang `finish`, which fails after 10 s). The
        /// open discipline hands them out in plan order.
        #[test]
        fn every_shot_goes_once_and_never_early(
            dues in vec(option::weighted(0.8, 0u64..40), 0..60),
            threads in 1usize..=3,
            per_thread in 1usize..=4,
            closed in any::<bool>(),
            sorted in any::<bool>(),
        ) {
            let discipline = if closed { Discipline::Closed } else { Discipline::Open };
            let mut dues = dues;
            if sorted {
                // As schedules make them: dated ones in order.
                dues.sort_by_key(|due| due.unwrap_or(0));
            }
            let io = io(threads);
            let run = run(&io, Instant::now(), per_thread, discipline);
            run.offer_all(dues.iter().enumerate().map(|(i, due)| shot(i, *due)));
            run.dispatch.close();
            let taken = run.finish();
            if discipline == Discipline::Open {
                // A thread takes and records a shot in one go, so each thread's
                // record is in the order it took them.
                for thread in 0..threads {
                    let mine: Vec<usize> = taken
                        .iter()
                        .filter(|t| t.seat.thread == thread)
                        .map(|t| t.id)
                        .collect();
                    prop_assert!(mine.is_sorted(), "thread {} took {:?}", thread, mine);
                }
            }
            let mut ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..dues.len()).collect::<Vec<_>>());
            for t in &taken {
                prop_assert!(t.at >= t.due.or(Some(Duration::ZERO)), "{:?} went early", t);
            }
        }
    }

    #[test]
    fn the_buffer_takes_up_to_its_bound() {
        let dispatch = Dispatch::new(Instant::now(), Discipline::Open);
        let mut batch: VecDeque<Shot> = (0..AHEAD + 1).map(|i| shot(i, None)).collect();
        assert!(!dispatch.over_half_full());
        assert_eq!(dispatch.offer(&mut batch), Offered::Full);
        assert_eq!(batch.len(), 1);
        assert_eq!(id(&batch[0]), AHEAD);
        assert!(dispatch.over_half_full());
    }
}
