//! A shot's budget, kept by one timer per barrel.
//!
//! Every wait of a shot (connect, write, each read) ends at the shot's
//! deadline. Wrapping each wait in `timeout_at` made a tokio timer per wait:
//! a wheel entry filed on the wait's first pending poll (under the time
//! driver's lock) and taken out again when the wait ended, which on a kept
//! connection was every read, about 500 instructions a shot. A barrel instead
//! keeps one sleep for its whole life and moves it to each shot's deadline.
//! Shots of a barrel start one after another, so each deadline is later than
//! the last, and tokio moves a registered timer later without touching the
//! wheel (one compare-and-swap); the wheel re-files it only when its old tick
//! comes round, once per timeout period at most.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Poll;

use tokio::time::{Instant, Sleep};

/// The deadline of the shot a barrel is firing.
pub(super) struct Budget {
    sleep: Pin<Box<Sleep>>,
}

impl Budget {
    /// A budget ending at `deadline`. Make it on the runtime that polls the
    /// waits (the barrel's I/O thread): its timer belongs to that runtime.
    pub(super) fn new(deadline: Instant) -> Budget {
        Budget {
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    /// The next shot's budget, ending at `deadline`.
    pub(super) fn reset(&mut self, deadline: Instant) {
        self.sleep.as_mut().reset(deadline);
    }

    /// `wait`'s output, or `None` when the deadline passes first. `wait` is
    /// polled before the timer, so one that is ready at once never waits for
    /// the timer, even when the deadline has passed.
    pub(super) async fn within<F: Future>(&mut self, wait: F) -> Option<F::Output> {
        let mut wait = pin!(wait);
        let sleep = &mut self.sleep;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = wait.as_mut().poll(cx) {
                return Poll::Ready(Some(output));
            }
            sleep.as_mut().poll(cx).map(|()| None)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn a_wait_past_the_deadline_ends_there_and_a_reset_moves_it() {
        block_on(async {
            let start = Instant::now();
            let mut budget = Budget::new(start + Duration::from_millis(20));
            let never = std::future::pending::<()>();
            assert_eq!(budget.within(never).await, None);
            assert!(start.elapsed() >= Duration::from_millis(20));
            // A ready wait wins, even with the deadline passed.
            assert_eq!(budget.within(async { 7 }).await, Some(7));
            // Moved later: a wait shorter than the new budget ends on its own.
            let moved = Instant::now();
            budget.reset(moved + Duration::from_secs(3600));
            let short = tokio::time::sleep(Duration::from_millis(10));
            assert_eq!(budget.within(short).await, Some(()));
            // And moved again, to a deadline that the next wait outlives.
            budget.reset(Instant::now() + Duration::from_millis(10));
            assert_eq!(budget.within(std::future::pending::<()>()).await, None);
            assert!(moved.elapsed() < Duration::from_secs(3600));
        });
    }
}
