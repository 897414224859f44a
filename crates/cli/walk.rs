//! The progress of a long walk over a plan, on a terminal.
//!
//! `tank plan` walks every shot to count them; an accepted plan of 10¹¹
//! shots takes hours at ~10 M shots/s, and used to say nothing all that
//! while. On a terminal (stderr), a walk longer than [`QUIET_FOR`] shows one
//! line, redrawn once a second: shots so far of the total, the rate, and the
//! time left at that rate. Off a terminal nothing is shown (a log gets no
//! stream of redraws), and the line is cleared when the walk ends, however it ends.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A walk this short shows nothing.
const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often the line is redrawn.
const EVERY: Duration = Duration::from_secs(1);
/// Shots between looks at the clock (a power of two).
const CHECK_EVERY: u64 = 1 << 16;

/// A walk's progress line (see the module docs).
pub struct WalkProgress {
    what: String,
    total: Option<u64>,
    started: Instant,
    next: Option<Instant>,
    drawn: bool,
}

impl WalkProgress {
    /// The walk of `what` (`[phantom]`) over `total` shots, if known; shown
    /// only when stderr is a terminal.
    pub fn new(what: String, total: Option<u64>) -> Self {
        let started = Instant::now();
        WalkProgress {
            what,
            total,
            started,
            next: std::io::stderr().is_terminal().then(|| started + QUIET_FOR),
            drawn: false,
        }
    }

    /// `done` shots walked so far: redraw if it is time (cheap between).
    pub fn at(&mut self, done: u64) {
        let Some(next) = self.next else { return };
        if done % CHECK_EVERY != 0 {
            return;
        }
        let now = Instant::now();
        if now < next {
            return;
        }
        self.next = Some(now + EVERY);
        self.drawn = true;
        err!(
            "\r{}\x1b[K",
            line(&self.what, done, self.total, now - self.started)
        );
    }
}

impl Drop for WalkProgress {
    /// The walk is over (or failed): clear its line before anything else is printed.
    fn drop(&mut self) {
        if self.drawn {
            err!("\r\x1b[K");
        }
    }
}

/// `tank plan: [phantom] 12,000,000 of 100,000,000 shots (12.0%), 10.0 M/s, 7.8 s left`.
fn line(what: &str, done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
    let mut text = format!("tank plan: {what} {} ", grouped(done));
    match total {
        Some(total) if total > 0 => {
            let share = done as f64 * 100.0 / total as f64;
            let left = total.saturating_sub(done) as f64 / rate.max(1e-9);
            text += &format!(
                "of {} shots ({share:.1}%), {:.1} M/s, {} left",
                grouped(total),
                rate / 1e6,
                human_seconds(left)
            );
        }
        _ => text += &format!("shots, {:.1} M/s", rate / 1e6),
    }
    text
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `7.8 s`, `12m5s`, `2h46m`.
fn human_seconds(seconds: f64) -> String {
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60);
    if h > 0 {
        format!("{h}h{m:02}m")
    } else {
        format!("{m}m{s:02}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_has_the_share_the_rate_and_the_time_left_at_that_rate() {
        assert_eq!(
            line(
                "[phantom]",
                12_000_000,
                Some(100_000_000),
                Duration::from_millis(1200)
            ),
            "tank plan: [phantom] 12,000,000 of 100,000,000 shots (12.0%), 10.0 M/s, 8.8 s left"
        );
        assert_eq!(
            line(
                "[q]",
                10_000_000_000,
                Some(100_000_000_000),
                Duration::from_secs(1000)
            ),
            "tank plan: [q] 10,000,000,000 of 100,000,000,000 shots (10.0%), 10.0 M/s, 2h30m left"
        );
        assert_eq!(
            line("[q]", 5_000_000, None, Duration::from_secs(1)),
            "tank plan: [q] 5,000,000 shots, 5.0 M/s"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(human_seconds(725.0), "12m05s");
    }
}
