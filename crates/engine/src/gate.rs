//! The time gate: instances wait here until their shot is due.
//!
//! tokio's timer wheel has 1 ms resolution and wakes a sleep at the next tick
//! after its deadline, so per-shot sleeps start shots up to a millisecond or
//! more late. Due times are whole milliseconds anyway (the stpd's), so one
//! thread sleeping precisely (a futex timeout) until the next millisecond
//! anyone waits for, then waking everyone due by then, releases all shots of
//! a tick together: on time, and with one wake-up per millisecond however
//! high the rate.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Waiting {
    /// Due time (µs from the start) → tasks waiting for it.
    by_due: BTreeMap<u64, Vec<Waker>>,
    closed: bool,
}

struct Shared {
    start: Instant,
    waiting: Mutex<Waiting>,
    changed: Condvar,
}

impl Shared {
    /// µs since the start; `None` before it (the start may lie ahead, so the
    /// run's threads are ready when the first shots are due).
    fn now_us(&self) -> Option<u64> {
        Instant::now()
            .checked_duration_since(self.start)
            .map(micros)
    }

    fn release_all(&self) {
        self.lock().closed = true;
        self.changed.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A panic elsewhere cannot leave the map half-changed in a way that matters: keep going.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Precise release of due shots; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
}

/// Keeps the gate's thread running; dropping it stops the thread.
pub struct GateThread {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    realtime: Result<(), String>,
}

impl Gate {
    /// Start the gate's thread, with due times counted from `start`.
    pub fn start(start: Instant) -> std::io::Result<(Gate, GateThread)> {
        let shared = Arc::new(Shared {
            start,
            waiting: Mutex::default(),
            changed: Condvar::new(),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("tank-gate".into())
                .spawn(move || run(&shared))?
        };
        let realtime = crate::priority::realtime(&thread).map_err(|e| e.to_string());
        Ok((
            Gate {
                shared: Arc::clone(&shared),
            },
            GateThread {
                shared,
                thread: Some(thread),
                realtime,
            },
        ))
    }

    /// Release every waiter now and from now on (the run is stopping).
    pub fn release_all(&self) {
        self.shared.release_all();
    }

    /// Resolves when `due` (from the start) has come, or the gate is released.
    pub fn until(&self, due: Duration) -> Until {
        Until {
            shared: Arc::clone(&self.shared),
            due_us: micros(due),
        }
    }
}

impl GateThread {
    /// Whether the thread runs at real-time priority, or why not.
    pub fn realtime(&self) -> Result<(), &str> {
        self.realtime.as_ref().map(|_| ()).map_err(String::as_str)
    }
}

impl Drop for GateThread {
    fn drop(&mut self) {
        self.shared.release_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The future of [`Gate::until`].
pub struct Until {
    shared: Arc<Shared>,
    due_us: u64,
}

impl Future for Until {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self
            .shared
            .now_us()
            .is_some_and(|now_us| now_us >= self.due_us)
        {
            return Poll::Ready(());
        }
        let mut waiting = self.shared.lock();
        if waiting.closed {
            return Poll::Ready(());
        }
        let earliest = waiting.by_due.keys().next().copied();
        waiting
            .by_due
            .entry(self.due_us)
            .or_default()
            .push(cx.waker().clone());
        drop(waiting);
        if earliest.is_none_or(|first| self.due_us < first) {
            // The thread sleeps toward a later time: make it look again.
            self.shared.changed.notify_one();
        }
        Poll::Pending
    }
}

fn run(shared: &Shared) {
    precise_timers();
    let mut waiting = shared.lock();
    loop {
        if waiting.closed {
            // Release everyone so no task waits on a gate that is gone.
            for wakers in std::mem::take(&mut waiting.by_due).into_values() {
                wakers.into_iter().for_each(Waker::wake);
            }
            return;
        }
        let Some(&first) = waiting.by_due.keys().next() else {
            waiting = shared
                .changed
                .wait(waiting)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        };
        let now = Instant::now();
        let first_at = shared.start + Duration::from_micros(first);
        if first_at > now {
            let (guard, _) = shared
                .changed
                .wait_timeout(waiting, first_at - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waiting = guard;
            continue;
        }
        // Everyone due by now goes at once.
        let now_us = micros(now.saturating_duration_since(shared.start));
        let later = waiting.by_due.split_off(&(now_us + 1));
        let due = std::mem::replace(&mut waiting.by_due, later);
        drop(waiting);
        for wakers in due.into_values() {
            wakers.into_iter().for_each(Waker::wake);
        }
        waiting = shared.lock();
    }
}

/// By default Linux lets a sleeping thread's timer fire up to 50 µs late
/// (timer slack, to batch wake-ups); the gate's wake-ups are the shots' timing,
/// so its thread asks for none.
fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches only this thread's
    // timer slack; a failure leaves the default, which is still correct.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn releases_in_due_order_and_never_early() {
        let start = Instant::now();
        let (gate, _thread) = Gate::start(start).unwrap();
        let mut tasks = Vec::new();
        for due_ms in [30u64, 10, 20, 10, 0] {
            let gate = gate.clone();
            tasks.push(tokio::spawn(async move {
                gate.until(Duration::from_millis(due_ms)).await;
                (due_ms, start.elapsed())
            }));
        }
        for task in tasks {
            let (due_ms, at) = task.await.unwrap();
            assert!(
                at >= Duration::from_millis(due_ms),
                "released at {at:?}, due {due_ms} ms"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_start_ahead_holds_even_shots_due_at_zero() {
        let start = Instant::now() + Duration::from_millis(40);
        let (gate, _thread) = Gate::start(start).unwrap();
        gate.until(Duration::ZERO).await;
        assert!(Instant::now() >= start);
    }

    #[tokio::test]
    async fn release_all_lets_waiters_and_later_callers_through() {
        let (gate, _thread) = Gate::start(Instant::now()).unwrap();
        let waiter = tokio::spawn(gate.until(Duration::from_secs(3600)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        gate.release_all();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        tokio::time::timeout(
            Duration::from_secs(5),
            gate.until(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn dropping_the_thread_releases_waiters() {
        let (gate, thread) = Gate::start(Instant::now()).unwrap();
        let waiter = tokio::spawn(gate.until(Duration::from_secs(3600)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(thread);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }
}
