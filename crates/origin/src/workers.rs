//! A route's capacity: `workers` serving at once, a FIFO queue before them,
//! and `queue_limit` past which requests are turned away with 503.
//!
//! A search for a target's limit needs a target whose limit is known:
//! with N workers and a mean service time S, the capacity is exactly N ÷ S
//! requests per second. To keep it exact, the workers run on a clock of
//! their own: each worker is free at some instant; a request takes the
//! worker free soonest, starts when both it and that worker are there, and
//! holds the worker for its service time (the stage's latency, sampled).
//! The answer is then sent when the service ends. A timer that wakes a
//! little late (tokio's wakes up to a millisecond late) delays that one
//! answer but never the next request's start, so late wake-ups do not add
//! up into a lower capacity, as they would with a semaphore held across a
//! sleep. The time spent waiting for a worker counts in the latency the
//! client sees, as in a real server with a thread pool.
//!
//! Only the latency is service: a stage's `cpu` work and its fault come
//! after the worker is released (CPU work is bounded by the machine's
//! cores already). A client that goes away while queued keeps its place,
//! like a server that only notices when it writes the answer.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The most workers a recipe may ask for (a worker costs 16 bytes while busy).
pub(crate) const MAX_WORKERS: usize = 1_000_000;

/// A recipe's `workers` and `queue_limit`, as parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// At most this many requests in service at once (at least 1).
    pub workers: usize,
    /// At most this many requests waiting for a worker; `None`: no limit.
    pub queue_limit: Option<usize>,
}

/// What a request arriving at a route with workers gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Served: the answer is due at this instant (start of service + service time).
    Until(Instant),
    /// The queue is at its limit: answer 503 at once.
    Full,
}

/// The live workers of one loaded recipe.
#[derive(Debug)]
pub(crate) struct Workers {
    capacity: Capacity,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When each busy worker is free; fewer entries than workers means some are idle.
    free_at: BinaryHeap<Reverse<Instant>>,
    /// The start instants of requests still waiting, in arrival order
    /// (which is also their order of start: FIFO over the worker free soonest).
    waiting: VecDeque<Instant>,
}

impl Workers {
    /// Idle workers and an empty queue.
    pub fn new(capacity: Capacity) -> Workers {
        Workers {
            capacity,
            state: Mutex::default(),
        }
    }

    /// The capacity this was built with.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// Admits a request arriving at `now` that needs `service` of a worker.
    pub fn admit(&self, now: Instant, service: Duration) -> Admission {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while state.waiting.front().is_some_and(|&start| start <= now) {
            state.waiting.pop_front();
        }
        let idle = state.free_at.len() < self.capacity.workers;
        let start = match state.free_at.peek() {
            Some(&Reverse(free)) if !idle => free.max(now),
            _ => now,
        };
        if start > now {
            if self
                .capacity
                .queue_limit
                .is_some_and(|limit| state.waiting.len() >= limit)
            {
                return Admission::Full;
            }
            state.waiting.push_back(start);
        }
        if !idle {
            state.free_at.pop();
        }
        let end = start + service;
        state.free_at.push(Reverse(end));
        Admission::Until(end)
    }

    /// Requests in service and waiting at `now`.
    pub fn load(&self, now: Instant) -> (usize, usize) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // A worker is busy until it is free: a queued request starts when the one before ends.
        let busy = state.free_at.iter().filter(|f| f.0 > now).count();
        let waiting = state.waiting.iter().filter(|&&s| s > now).count();
        (busy, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn workers(n: usize, queue_limit: Option<usize>) -> Workers {
        Workers::new(Capacity {
            workers: n,
            queue_limit,
        })
    }

    fn until(a: Admission) -> Instant {
        match a {
            Admission::Until(t) => t,
            Admission::Full => panic!("refused"),
        }
    }

    #[test]
    fn requests_beyond_the_workers_wait_in_arrival_order() {
        let w = workers(2, None);
        let t0 = Instant::now();
        let ends: Vec<_> = (0..5).map(|_| until(w.admit(t0, 10 * MS)) - t0).collect();
        assert_eq!(ends, [10, 10, 20, 20, 30].map(|ms| ms * MS));
        assert_eq!(w.load(t0), (2, 3));
        assert_eq!(w.load(t0 + 15 * MS), (2, 1));
    }

    #[test]
    fn past_the_queue_limit_a_request_is_refused_and_takes_no_place() {
        let w = workers(1, Some(1));
        let t0 = Instant::now();
        assert_eq!(until(w.admit(t0, 10 * MS)), t0 + 10 * MS);
        assert_eq!(until(w.admit(t0, 10 * MS)), t0 + 20 * MS);
        assert_eq!(w.admit(t0, 10 * MS), Admission::Full);
        // Once the waiting one is in service, there is room again.
        assert_eq!(until(w.admit(t0 + 10 * MS, 10 * MS)), t0 + 30 * MS);
    }

    #[test]
    fn a_queue_limit_of_zero_serves_only_when_a_worker_is_idle() {
        let w = workers(1, Some(0));
        let t0 = Instant::now();
        assert_eq!(until(w.admit(t0, 10 * MS)), t0 + 10 * MS);
        assert_eq!(w.admit(t0 + 5 * MS, MS), Admission::Full);
        assert_eq!(until(w.admit(t0 + 10 * MS, MS)), t0 + 11 * MS);
    }

    #[test]
    fn an_idle_worker_serves_at_once_even_after_a_long_quiet() {
        let w = workers(3, None);
        let t0 = Instant::now();
        until(w.admit(t0, 10 * MS));
        let later = t0 + Duration::from_secs(5);
        assert_eq!(until(w.admit(later, 10 * MS)), later + 10 * MS);
    }

    proptest! {
        /// Back-to-back arrivals on N workers with service S end at N / S per
        /// second exactly, and never more than N are in service at once.
        #[test]
        fn throughput_is_workers_over_service_time(
            n in 1usize..16, service_ms in 1u32..50, requests in 1usize..400,
        ) {
            let w = workers(n, None);
            let t0 = Instant::now();
            let service = service_ms * MS;
            let last = (0..requests).map(|_| until(w.admit(t0, service))).max().unwrap();
            let rounds = requests.div_ceil(n) as u32;
            prop_assert_eq!(last - t0, service * rounds);
            let (busy, _) = w.load(t0);
            prop_assert!(busy <= n);
        }

        /// Answers are due in arrival order when the service time is fixed (FIFO).
        #[test]
        fn with_a_fixed_service_answers_come_in_arrival_order(
            n in 1usize..8, gaps in proptest::collection::vec(0u32..20, 1..200),
        ) {
            let w = workers(n, None);
            let t0 = Instant::now();
            let mut now = t0;
            let mut previous = t0;
            for gap in gaps {
                now += gap * MS;
                let end = until(w.admit(now, 7 * MS));
                prop_assert!(end >= previous && end >= now + 7 * MS);
                previous = end;
            }
        }
    }
}
