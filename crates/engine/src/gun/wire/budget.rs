//! A shot's budget, kept by one timer per barrel.
//!
//! Every wait of a shot (connect, write, each read) ends at the shot's
//! deadline. Wrapping each wait in `timeout_at` made a tokio timer per wait:
//! a wheel entry filed on the wait's first pending poll (under the time
//! driver's lock) and taken out again when the wait ended, which on a kept
//! connection was every read, about 500 instructions a shot. Moving one kept
//! sleep to each shot's deadline still cost 170 a shot (tokio converts the
//! deadline to its ticks under a few checks), and polling it beside each read
//! another 120 (tokio registers the waker and spends the task's budget).
//!
//! So a barrel keeps one sleep for its whole life and lets it lag behind:
//! a shot only notes its deadline. The sleep stays armed for an earlier
//! shot's deadline, which is never later than the current one (a barrel's
//! shots start one after another, and each has the same budget); when it
//! fires, the wait looks at the clock, and the shot's budget has either run
//! out or the sleep is moved to the shot's deadline. That happens at most
//! once per timeout period of a busy barrel. And the sleep is polled (to
//! learn the task to wake) only when it was armed anew or the task changed:
//! it wakes the barrel's task when it fires whether or not it was polled
//! since.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use tokio::time::{Instant, Sleep};

/// The deadline of the shot a barrel is firing.
pub(in crate::gun) struct Budget {
    /// Armed for a deadline no later than `deadline`.
    sleep: Pin<Box<Sleep>>,
    /// The current shot's deadline.
    deadline: Instant,
    /// The task the sleep wakes when it fires, once polled since it was armed.
    wakes: Option<Waker>,
}

impl Budget {
    /// A budget ending at `deadline`. Make it on the runtime that polls the
    /// waits (the barrel's I/O thread): its timer belongs to that runtime.
    pub(in crate::gun) fn new(deadline: Instant) -> Budget {
        Budget {
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            deadline,
            wakes: None,
        }
    }

    /// A barrel's timer `kept`, taken for a shot ending at `deadline` and to
    /// be put back after it (a barrel dropped mid-shot drops its timer with
    /// it); made at the barrel's first shot, on its I/O thread.
    pub(in crate::gun) fn take(kept: &mut Option<Budget>, deadline: Instant) -> Budget {
        match kept.take() {
            Some(mut budget) => {
                budget.reset(deadline);
                budget
            }
            None => Budget::new(deadline),
        }
    }

    /// The next shot's budget, ending at `deadline`.
    fn reset(&mut self, deadline: Instant) {
        if deadline < self.sleep.deadline() {
            // Sooner than the sleep (a shorter budget, or a clock that went
            // back): the sleep must not be late.
            self.arm(deadline);
        }
        self.deadline = deadline;
    }

    /// `wait`'s output, or `None` when the deadline passes first. `wait` is
    /// polled before the timer, so one that is ready at once never waits for
    /// the timer, even when the deadline has passed.
    pub(in crate::gun) async fn within<F: Future>(&mut self, wait: F) -> Option<F::Output> {
        let mut wait = pin!(wait);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = wait.as_mut().poll(cx) {
                return Poll::Ready(Some(output));
            }
            if self.expired(cx) {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Whether the deadline has passed; otherwise the sleep wakes the task
    /// of `cx` by the deadline.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.sleep.is_elapsed() {
                if Instant::now() >= self.deadline {
                    return true;
                }
                // Fired for an earlier shot's deadline: on to this one's.
                let deadline = self.deadline;
                self.arm(deadline);
            }
            if self
                .wakes
                .as_ref()
                .is_some_and(|wakes| wakes.will_wake(cx.waker()))
            {
                return false;
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                self.wakes = Some(cx.waker().clone());
                return false;
            }
            // Fired as it was polled: look at the clock again.
        }
    }

    /// Arm the sleep for `deadline`; it has not been polled since.
    fn arm(&mut self, deadline: Instant) {
        self.sleep.as_mut().reset(deadline);
        self.wakes = None;
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
            // And moved sooner, to a deadline that the next wait outlives.
            budget.reset(Instant::now() + Duration::from_millis(10));
            assert_eq!(budget.within(std::future::pending::<()>()).await, None);
            assert!(moved.elapsed() < Duration::from_secs(3600));
        });
    }

    #[test]
    fn a_sleep_armed_for_an_earlier_shot_does_not_end_a_later_one() {
        block_on(async {
            let start = Instant::now();
            let mut budget = Budget::new(start + Duration::from_millis(30));
            // The next shot's budget runs to 80 ms: the sleep, still armed for
            // 30 ms, fires during the wait, which goes on to its end at 60 ms.
            budget.reset(start + Duration::from_millis(80));
            let wait = tokio::time::sleep_until(start + Duration::from_millis(60));
            assert_eq!(budget.within(wait).await, Some(()));
            assert!(start.elapsed() >= Duration::from_millis(60));
            // A wait that outlives the budget ends at the budget's end, not before.
            assert_eq!(budget.within(std::future::pending::<()>()).await, None);
            assert!(start.elapsed() >= Duration::from_millis(80));
            // After a long idle time (the sleep fired meanwhile), a new budget holds.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let later = Instant::now();
            budget.reset(later + Duration::from_millis(40));
            let wait = tokio::time::sleep_until(later + Duration::from_millis(20));
            assert_eq!(budget.within(wait).await, Some(()));
        });
    }
}
