//! The I/O threads instances run on: one single-threaded tokio runtime each.
//!
//! A work-stealing runtime wakes an idle worker whenever the busy one has more
//! than one task ready, so that it can steal; at a steady 10k rps that woke a
//! thread for most responses (an eventfd write and a context switch each), and
//! cost a fifth of tank's CPU. Instances never need stealing: every thread's
//! free instances take shots from the queue's one dispatch, so whichever
//! thread runs first fires the next shot. So each thread runs its own runtime
//! and its share of the instances, and wakes only for their sockets and its
//! shot timer.

use std::future::Future;
use std::io;
use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinSet};

/// Running I/O threads; dropping this stops and joins them (tasks still on
/// them are dropped).
pub struct IoThreads {
    handles: Arc<[Handle]>,
    threads: Vec<(oneshot::Sender<()>, JoinHandle<()>)>,
    timer_fallback: Arc<OnceLock<String>>,
}

impl IoThreads {
    /// Start `count` threads named `tank-io-N`; each calls `on_start` first
    /// (to set its scheduling, say).
    pub fn start(
        count: NonZeroUsize,
        on_start: impl Fn() + Send + Sync + 'static,
    ) -> io::Result<IoThreads> {
        let on_start = Arc::new(on_start);
        let mut handles = Vec::with_capacity(count.get());
        let mut threads = Vec::with_capacity(count.get());
        for index in 0..count.get() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(runtime.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            let on_start = Arc::clone(&on_start);
            let thread = std::thread::Builder::new()
                .name(format!("tank-io-{index}"))
                .spawn(move || {
                    on_start();
                    // Runs the spawned instances until told to stop (or the sender is gone).
                    let _ = runtime.block_on(stopped);
                })?;
            threads.push((stop, thread));
        }
        Ok(IoThreads {
            handles: handles.into(),
            threads,
            timer_fallback: Arc::default(),
        })
    }

    /// Where to spawn tasks: cheap to clone, outlives nothing it should not.
    pub(crate) fn spawner(&self) -> Spawner {
        Spawner {
            handles: Arc::clone(&self.handles),
            timer_fallback: Arc::clone(&self.timer_fallback),
        }
    }

    /// Why a shot timer on these threads fell back to tokio's (up to 1 ms
    /// late), if one did: the first reason, for the caller to report once.
    pub fn timer_fallback(&self) -> Option<&str> {
        self.timer_fallback.get().map(String::as_str)
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        for (stop, thread) in self.threads.drain(..) {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}

/// Spreads tasks over the I/O threads.
#[derive(Clone)]
pub(crate) struct Spawner {
    handles: Arc<[Handle]>,
    timer_fallback: Arc<OnceLock<String>>,
}

/// One of the I/O threads. The one place that maps a task to a thread is
/// [`Spawner::thread_for`], so a task and anything kept per thread for it (its
/// seat in the dispatch) cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IoThread(usize);

impl IoThread {
    /// Its position, from 0.
    pub fn index(self) -> usize {
        self.0
    }
}

impl Spawner {
    /// Note that a shot timer fell back to tokio's, and why (the first reason is kept).
    pub fn note_timer_fallback(&self, why: &std::io::Error) {
        let _ = self.timer_fallback.set(why.to_string());
    }

    /// Every thread, in order.
    pub fn threads(&self) -> impl Iterator<Item = IoThread> {
        (0..self.handles.len()).map(IoThread)
    }

    /// The thread for the `index`th task: round robin.
    pub fn thread_for(&self, index: usize) -> IoThread {
        IoThread(index % self.handles.len())
    }

    /// Spawn `task` into `set` on `thread`.
    pub fn spawn<F>(&self, set: &mut JoinSet<F::Output>, thread: IoThread, task: F) -> AbortHandle
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        set.spawn_on(task, &self.handles[thread.0])
    }

    /// Keep a timer due within `period` on every thread while the returned set
    /// lives; `period` should not exceed the shortest response timeout.
    ///
    /// tokio's timer wakes its parked thread (an eventfd write, and a spurious
    /// return from epoll) whenever a new timer is due before every timer it
    /// holds; with no timer at all, that is every new timer. Between shots an
    /// instance holds none, so at moderate rates nearly every shot's response
    /// timeout cost that wake-up. A timer that is always due sooner than any
    /// new timeout spares it, for one wake-up per `period`.
    pub fn anchor_timers(&self, period: Duration) -> JoinSet<()> {
        let mut anchors = JoinSet::new();
        for handle in self.handles.iter() {
            anchors.spawn_on(
                async move {
                    let mut ticks = tokio::time::interval(period);
                    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        ticks.tick().await;
                    }
                },
                handle,
            );
        }
        anchors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn tasks_spread_over_the_threads_and_on_start_runs_on_each() {
        let started = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&started);
        let threads = IoThreads::start(NonZeroUsize::new(3).unwrap(), move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let spawner = threads.spawner();
        assert_eq!(spawner.threads().count(), 3);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let names = runtime.block_on(async {
            let mut set = JoinSet::new();
            for index in 0..6 {
                spawner.spawn(&mut set, spawner.thread_for(index), async move {
                    (
                        index,
                        std::thread::current().name().unwrap_or("").to_string(),
                    )
                });
            }
            let mut names = Vec::new();
            while let Some(joined) = set.join_next().await {
                names.push(joined.unwrap());
            }
            names
        });
        for (index, name) in &names {
            assert_eq!(name, &format!("tank-io-{}", index % 3));
        }
        let distinct: HashSet<_> = names.iter().map(|(_, name)| name).collect();
        assert_eq!(distinct.len(), 3);
        assert_eq!(started.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn timer_anchors_run_on_every_thread_while_their_set_lives() {
        let threads = IoThreads::start(NonZeroUsize::new(2).unwrap(), || {}).unwrap();
        let mut anchors = threads.spawner().anchor_timers(Duration::from_millis(1));
        assert_eq!(anchors.len(), 2);
        // Ticking many times over, and still running.
        std::thread::sleep(Duration::from_millis(30));
        assert!(anchors.try_join_next().is_none());
        drop(anchors);
        // Dropping the set aborts them: nothing keeps the threads from stopping.
        drop(threads);
    }

    #[test]
    fn dropping_stops_the_threads_with_tasks_still_pending() {
        let threads = IoThreads::start(NonZeroUsize::new(2).unwrap(), || {}).unwrap();
        let spawner = threads.spawner();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut set = JoinSet::new();
        runtime.block_on(async {
            spawner.spawn(
                &mut set,
                spawner.thread_for(0),
                std::future::pending::<()>(),
            );
        });
        // Joins both threads; a pending task must not keep one alive.
        drop(threads);
        let joined = runtime.block_on(set.join_next()).unwrap();
        assert!(joined.unwrap_err().is_cancelled());
    }
}
