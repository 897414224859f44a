//! The shot timer of one I/O thread: fires at an instant, precisely.
//!
//! tokio's timer wheel has 1 ms resolution and wakes a sleep at the next tick
//! after its deadline, so it would start shots up to a millisecond or more
//! late. On Linux the timer is a timerfd on CLOCK_MONOTONIC (std's `Instant`
//! clock), which has no timer slack, read through the thread's tokio reactor.
//! Elsewhere, or when a timerfd cannot be had, it is tokio's timer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// A one-shot timer, re-armed at will; poll it only from the thread that made it.
pub(crate) enum Timer {
    #[cfg(target_os = "linux")]
    Precise(precise::Timer),
    Coarse(Coarse),
}

impl Timer {
    /// A precise timer where the system has one, else tokio's; the error says
    /// why it fell back. Call it on the runtime that will poll the timer.
    pub fn new() -> (Timer, Option<io::Error>) {
        #[cfg(target_os = "linux")]
        match precise::Timer::new() {
            Ok(timer) => (Timer::Precise(timer), None),
            Err(error) => (Timer::Coarse(Coarse::new()), Some(error)),
        }
        #[cfg(not(target_os = "linux"))]
        (Timer::Coarse(Coarse::new()), None)
    }

    /// Fire at `at` (at once if it has passed), replacing any earlier arming.
    pub fn arm(&mut self, at: Instant) {
        match self {
            #[cfg(target_os = "linux")]
            Timer::Precise(timer) => timer.arm(at),
            Timer::Coarse(timer) => timer.arm(at),
        }
    }

    /// Ready once after each firing.
    pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            #[cfg(target_os = "linux")]
            Timer::Precise(timer) => timer.poll_fired(cx),
            Timer::Coarse(timer) => timer.poll_fired(cx),
        }
    }
}

/// tokio's timer: up to a millisecond late.
pub(crate) struct Coarse {
    sleep: Pin<Box<tokio::time::Sleep>>,
    armed: bool,
}

impl Coarse {
    fn new() -> Coarse {
        Coarse {
            sleep: Box::pin(tokio::time::sleep(std::time::Duration::ZERO)),
            armed: false,
        }
    }

    fn arm(&mut self, at: Instant) {
        self.sleep.as_mut().reset(at.into());
        self.armed = true;
    }

    fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
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

#[cfg(target_os = "linux")]
mod precise {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::task::{Context, Poll};
    use std::time::Instant;

    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    pub(crate) struct Timer {
        fd: AsyncFd<OwnedFd>,
    }

    impl Timer {
        pub fn new() -> io::Result<Timer> {
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
            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: an OwnedFd stays open, and names the same descriptor, until
            // dropped, and the AsyncFd owns it for its whole life.
            let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }?;
            Ok(Timer { fd })
        }

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::time::Duration;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn fires_not_before_the_instant_and_a_rearm_replaces_the_arming() {
        block_on(async {
            let (mut timer, fell_back) = Timer::new();
            #[cfg(target_os = "linux")]
            assert!(fell_back.is_none(), "{fell_back:?}");
            let _ = fell_back;
            let start = Instant::now();
            timer.arm(start + Duration::from_secs(3600));
            // Re-armed sooner: the hour-long arming is gone.
            timer.arm(start + Duration::from_millis(20));
            tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| timer.poll_fired(cx)))
                .await
                .expect("the re-armed timer did not fire");
            assert!(start.elapsed() >= Duration::from_millis(20));
            // An instant already past fires at once.
            timer.arm(start);
            tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| timer.poll_fired(cx)))
                .await
                .expect("a past instant did not fire");
        });
    }

    #[test]
    fn the_coarse_timer_fires_too() {
        block_on(async {
            let mut timer = Coarse::new();
            let start = Instant::now();
            timer.arm(start + Duration::from_millis(5));
            tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| timer.poll_fired(cx)))
                .await
                .unwrap();
            assert!(start.elapsed() >= Duration::from_millis(5));
        });
    }
}
