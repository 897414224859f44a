//! The time gate: instances wait here until their shot is due.
//!
//! tokio's timer wheel has 1 ms resolution and wakes a sleep at the next tick
//! after its deadline, so per-shot sleeps would start shots up to a
//! millisecond or more late. Instead each I/O thread has its own gate: a
//! precise kernel timer (a timerfd, which has no timer slack) armed for the
//! earliest due time its instances wait for, polled by one task on that
//! thread. When it fires, that task wakes everyone due by then: on time, with
//! one wake-up per thread per due time however high the rate, and with no
//! other thread in between (a shared timing thread cost a futex wake-up per
//! due time plus an eventfd write per woken instance, a fifth of tank's CPU at
//! 10k rps).

use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::io_threads::{IoThread, Spawner};

/// Precise release of due shots, one gate per I/O thread; cheap to clone.
#[derive(Clone)]
pub(crate) struct Gate {
    threads: Arc<[Arc<ThreadGate>]>,
}

/// The gate of one I/O thread: only tasks on that thread should wait on it
/// (others would be woken from it, which works, but costs a cross-thread wake).
pub(crate) struct ThreadGate {
    start: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Due time (µs from the start) → tasks waiting for it.
    by_due: BTreeMap<u64, Vec<Waker>>,
    /// The due time the timer is armed for.
    armed: Option<u64>,
    /// The timer task, to wake when an earlier due time arrives.
    timer_task: Option<Waker>,
    closed: bool,
}

impl Gate {
    /// One gate per I/O thread of `io`, with due times counted from `start`;
    /// each gate's timer task is spawned on its thread into the returned set,
    /// which ends when the gate is released.
    pub fn start(start: Instant, io: &Spawner) -> std::io::Result<(Gate, JoinSet<()>)> {
        // Created here, where a failure (out of descriptors, say) can be reported.
        let timers = io
            .threads()
            .map(|thread| Ok((thread, timer::Unregistered::create()?)))
            .collect::<std::io::Result<Vec<_>>>()?;
        let mut tasks = JoinSet::new();
        let threads: Arc<[Arc<ThreadGate>]> = timers
            .into_iter()
            .map(|(thread, timer)| {
                let gate = Arc::new(ThreadGate {
                    start,
                    state: Mutex::default(),
                });
                io.spawn(&mut tasks, thread, run_timer(Arc::clone(&gate), timer));
                gate
            })
            .collect();
        Ok((Gate { threads }, tasks))
    }

    /// The gate of `thread`, for the tasks spawned there.
    pub fn for_thread(&self, thread: IoThread) -> Arc<ThreadGate> {
        Arc::clone(&self.threads[thread.index()])
    }

    /// Release every waiter now and from now on (the run is stopping).
    pub fn release_all(&self) {
        self.threads.iter().for_each(|gate| gate.release());
    }
}

impl ThreadGate {
    /// Resolves when `due` (from the start) has come, or the gate is released.
    pub fn until(self: &Arc<Self>, due: Duration) -> Until {
        Until {
            gate: Arc::clone(self),
            due_us: micros(due),
        }
    }

    fn release(&self) {
        let (waiting, timer_task) = {
            let mut state = self.lock();
            state.closed = true;
            (std::mem::take(&mut state.by_due), state.timer_task.take())
        };
        waiting.into_values().flatten().for_each(Waker::wake);
        timer_task.into_iter().for_each(Waker::wake);
    }

    /// µs since the start; `None` before it (the start may lie ahead, so the
    /// run's threads are ready when the first shots are due).
    fn now_us(&self) -> Option<u64> {
        Instant::now()
            .checked_duration_since(self.start)
            .map(micros)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the map half-changed in a way that matters: keep going.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The future of [`ThreadGate::until`].
pub(crate) struct Until {
    gate: Arc<ThreadGate>,
    due_us: u64,
}

impl Future for Until {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.gate.now_us().is_some_and(|now| now >= self.due_us) {
            return Poll::Ready(());
        }
        let mut state = self.gate.lock();
        if state.closed {
            return Poll::Ready(());
        }
        state
            .by_due
            .entry(self.due_us)
            .or_default()
            .push(cx.waker().clone());
        // The timer is armed later (or not at all): the timer task re-arms it.
        let rearm = state.armed.is_none_or(|armed| self.due_us < armed);
        let timer_task = if rearm { state.timer_task.take() } else { None };
        drop(state);
        timer_task.into_iter().for_each(Waker::wake);
        Poll::Pending
    }
}

/// The timer task of one thread's gate: arms the timer for the earliest due
/// time, and when it fires wakes everyone due by then. Ends on release.
async fn run_timer(gate: Arc<ThreadGate>, timer: timer::Unregistered) {
    let mut timer = match timer.register() {
        Ok(timer) => timer,
        Err(error) => {
            // Without its timer nobody here could be released on time: let shots
            // go at once (their lag is recorded) rather than never.
            eprintln!("tank: cannot watch a timer ({error}); shots are not held until due");
            gate.release();
            return;
        }
    };
    poll_fn(|cx| loop {
        let mut state = gate.lock();
        if state.closed {
            return Poll::Ready(());
        }
        if let Some(now) = gate.now_us() {
            let later = state.by_due.split_off(&(now + 1));
            let due = std::mem::replace(&mut state.by_due, later);
            if !due.is_empty() {
                drop(state);
                due.into_values().flatten().for_each(Waker::wake);
                continue;
            }
        }
        let first = state.by_due.keys().next().copied();
        if first != state.armed {
            state.armed = first;
            if let Some(first) = first {
                timer.arm(gate.start + Duration::from_micros(first));
            }
        }
        if !state
            .timer_task
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            state.timer_task = Some(cx.waker().clone());
        }
        drop(state);
        match timer.poll_fired(cx) {
            // Fired (and so disarmed): release whoever is due now, then re-arm.
            Poll::Ready(()) => gate.lock().armed = None,
            Poll::Pending => return Poll::Pending,
        }
    })
    .await;
}

#[cfg(target_os = "linux")]
mod timer {
    //! A timerfd on CLOCK_MONOTONIC (std's `Instant` clock), read through tokio.

    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::task::{Context, Poll};
    use std::time::Instant;

    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// A timerfd not yet watched by a runtime.
    pub(super) struct Unregistered(OwnedFd);

    impl Unregistered {
        pub fn create() -> io::Result<Unregistered> {
            // SAFETY: timerfd_create takes integer flags and returns a new descriptor or -1.
            let raw = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a descriptor we just created and own.
            Ok(Unregistered(unsafe { OwnedFd::from_raw_fd(raw) }))
        }

        /// Watch it from the current runtime (the thread that will poll it).
        pub fn register(self) -> io::Result<Timer> {
            // SAFETY: an OwnedFd stays open, and names the same descriptor, until
            // dropped, and the AsyncFd owns it for its whole life.
            let fd = unsafe { AsyncFd::register_with_interest(self.0, Interest::READABLE) }?;
            Ok(Timer { fd })
        }
    }

    pub(super) struct Timer {
        fd: AsyncFd<OwnedFd>,
    }

    impl Timer {
        /// Fire at `at` (at once if it has passed), replacing any earlier arming.
        pub fn arm(&mut self, at: Instant) {
            // Relative to now: std does not expose an Instant's clock reading, and
            // the few ns between these two lines are far below the ms of a due time.
            let wait = at.saturating_duration_since(Instant::now());
            let mut value = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: libc::time_t::try_from(wait.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_nsec: wait.subsec_nanos() as libc::c_long,
                },
            };
            if wait.is_zero() {
                // Zero would disarm the timer: fire in a nanosecond instead.
                value.it_value.tv_nsec = 1;
            }
            // SAFETY: a valid timerfd and a fully initialised itimerspec; the old
            // value is not asked for. It cannot fail with these arguments.
            unsafe {
                libc::timerfd_settime(self.fd.as_raw_fd(), 0, &value, std::ptr::null_mut());
            }
        }

        /// Ready once after each firing.
        pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                let mut ready = match self.fd.poll_read_ready(cx) {
                    Poll::Ready(Ok(ready)) => ready,
                    // Readiness of a timerfd cannot fail; if it did, report a firing
                    // so the caller looks at the clock rather than waiting forever.
                    Poll::Ready(Err(_)) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                };
                let mut expirations = [0u8; 8];
                // SAFETY: reading 8 bytes into an 8-byte buffer from our timerfd.
                let read = unsafe {
                    libc::read(
                        ready.get_inner().as_raw_fd(),
                        expirations.as_mut_ptr().cast(),
                        expirations.len(),
                    )
                };
                if read == 8 {
                    return Poll::Ready(());
                }
                // Not fired yet (EAGAIN): wait for the next readiness.
                ready.clear_ready();
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timer {
    //! Elsewhere: tokio's timer (up to a millisecond late).

    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Instant;

    pub(super) struct Unregistered;

    impl Unregistered {
        pub fn create() -> io::Result<Unregistered> {
            Ok(Unregistered)
        }

        pub fn register(self) -> io::Result<Timer> {
            Ok(Timer {
                sleep: Box::pin(tokio::time::sleep(std::time::Duration::ZERO)),
                armed: false,
            })
        }
    }

    pub(super) struct Timer {
        sleep: Pin<Box<tokio::time::Sleep>>,
        armed: bool,
    }

    impl Timer {
        pub fn arm(&mut self, at: Instant) {
            self.sleep.as_mut().reset(at.into());
            self.armed = true;
        }

        pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
            if !self.armed {
                return Poll::Pending;
            }
            let fired = self.sleep.as_mut().poll(cx);
            if fired.is_ready() {
                self.armed = false;
            }
            fired
        }
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io_threads::IoThreads;
    use std::num::NonZeroUsize;

    fn io(threads: usize) -> IoThreads {
        IoThreads::start(NonZeroUsize::new(threads).unwrap(), || {}).unwrap()
    }

    /// Drive `future` on this (test) thread; the gates' tasks run on the I/O threads.
    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn releases_in_due_order_and_never_early() {
        let io = io(2);
        let spawner = io.spawner();
        let start = Instant::now();
        let (gate, _timers) = Gate::start(start, &spawner).unwrap();
        let mut tasks = JoinSet::new();
        for (index, due_ms) in [30u64, 10, 20, 10, 0, 3].into_iter().enumerate() {
            let thread = spawner.thread_for(index);
            let gate = gate.for_thread(thread);
            spawner.spawn(&mut tasks, thread, async move {
                gate.until(Duration::from_millis(due_ms)).await;
                (due_ms, start.elapsed())
            });
        }
        let released = block_on(async {
            let mut released = Vec::new();
            while let Some(joined) = tasks.join_next().await {
                released.push(joined.unwrap());
            }
            released
        });
        assert_eq!(released.len(), 6);
        for (due_ms, at) in released {
            assert!(
                at >= Duration::from_millis(due_ms),
                "released at {at:?}, due {due_ms} ms"
            );
            // Generous: a shared machine may stall a thread, but not for seconds.
            assert!(at < Duration::from_millis(due_ms + 2000), "{at:?}");
        }
    }

    #[test]
    fn an_earlier_due_time_rearms_the_timer() {
        let io = io(1);
        let spawner = io.spawner();
        let start = Instant::now();
        let (gate, _timers) = Gate::start(start, &spawner).unwrap();
        let mut tasks = JoinSet::new();
        let late = gate.for_thread(spawner.thread_for(0));
        spawner.spawn(&mut tasks, spawner.thread_for(0), async move {
            late.until(Duration::from_secs(3600)).await;
        });
        let early = gate.for_thread(spawner.thread_for(0));
        block_on(async {
            // The timer is armed an hour ahead by now; a 30 ms waiter must not wait for it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let mut early_task = JoinSet::new();
            spawner.spawn(&mut early_task, spawner.thread_for(0), async move {
                early.until(Duration::from_millis(30)).await;
                start.elapsed()
            });
            let at = tokio::time::timeout(Duration::from_secs(5), early_task.join_next())
                .await
                .expect("the early waiter waited for the late one")
                .unwrap()
                .unwrap();
            assert!(at >= Duration::from_millis(30), "{at:?}");
            assert!(
                tasks.try_join_next().is_none(),
                "the late waiter went early"
            );
        });
    }

    #[test]
    fn a_start_ahead_holds_even_shots_due_at_zero() {
        let io = io(1);
        let spawner = io.spawner();
        let start = Instant::now() + Duration::from_millis(40);
        let (gate, _timers) = Gate::start(start, &spawner).unwrap();
        let mut tasks = JoinSet::new();
        let gate = gate.for_thread(spawner.thread_for(0));
        spawner.spawn(&mut tasks, spawner.thread_for(0), async move {
            gate.until(Duration::ZERO).await;
            Instant::now()
        });
        let at = block_on(tasks.join_next()).unwrap().unwrap();
        assert!(at >= start);
    }

    #[test]
    fn release_all_lets_waiters_and_later_callers_through() {
        let io = io(2);
        let spawner = io.spawner();
        let (gate, mut timers) = Gate::start(Instant::now(), &spawner).unwrap();
        let mut tasks = JoinSet::new();
        for index in 0..2 {
            let thread = spawner.thread_for(index);
            let waiter = gate.for_thread(thread);
            spawner.spawn(&mut tasks, thread, async move {
                waiter.until(Duration::from_secs(3600)).await;
            });
        }
        block_on(async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(tasks.len(), 2);
            assert!(tasks.try_join_next().is_none());
            gate.release_all();
            let bounded = Duration::from_secs(5);
            for _ in 0..2 {
                tokio::time::timeout(bounded, tasks.join_next())
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap();
            }
            // Later callers pass at once, and the timer tasks end.
            tokio::time::timeout(
                bounded,
                gate.for_thread(spawner.thread_for(0))
                    .until(Duration::from_secs(3600)),
            )
            .await
            .unwrap();
            while let Some(ended) = tokio::time::timeout(bounded, timers.join_next())
                .await
                .unwrap()
            {
                ended.unwrap();
            }
        });
    }
}
