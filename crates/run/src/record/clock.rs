//! What a shard knows about its clock, for its artifacts: shards started "at the
//! same time" are only as together as their clocks are, so each says which
//! clock source its kernel reads, whether the kernel calls it synchronised, and
//! what chrony (or ntpd) reports as its offset when one answers.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How long an NTP daemon's client may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// A shard's clock, as recorded in `shard.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// The kernel's clock source (`tsc`, `kvm-clock`, …), or `unknown`.
    pub source: String,
    /// Whether the kernel considers the clock synchronised (adjtimex: no `STA_UNSYNC`).
    pub kernel_synchronised: bool,
    /// The kernel's maximum error estimate, µs.
    pub kernel_max_error_us: i64,
    /// Who reported the offset: `chrony`, `ntpd`, or `none` when neither answered.
    pub daemon: String,
    /// The daemon's offset of this clock from true time, µs (positive: ahead).
    pub offset_us: Option<i64>,
}

impl ClockInfo {
    /// The clock source and the kernel's sync state, without asking a time
    /// daemon (no process is started): for a run that shares its start with
    /// no one.
    pub fn read_local() -> ClockInfo {
        let (kernel_synchronised, kernel_max_error_us) = kernel_sync();
        ClockInfo {
            source: clock_source(),
            kernel_synchronised,
            kernel_max_error_us,
            daemon: "not asked".to_owned(),
            offset_us: None,
        }
    }

    /// Look now (runs `chronyc` or `ntpq` when installed; at most a few seconds).
    pub fn read() -> ClockInfo {
        let source = clock_source();
        let (kernel_synchronised, kernel_max_error_us) = kernel_sync();
        let (daemon, offset_us) = match chrony_offset() {
            Some(offset) => ("chrony", Some(offset)),
            None => match ntpd_offset() {
                Some(offset) => ("ntpd", Some(offset)),
                None => ("none", None),
            },
        };
        ClockInfo {
            source,
            kernel_synchronised,
            kernel_max_error_us,
            daemon: daemon.to_owned(),
            offset_us,
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let offset = match self.offset_us {
            Some(us) => format!("{} offset {us} µs", self.daemon),
            None => "no NTP daemon answered".to_owned(),
        };
        format!(
            "clock source {}, kernel {} (max error {} µs), {offset}",
            self.source,
            if self.kernel_synchronised {
                "synchronised"
            } else {
                "unsynchronised"
            },
            self.kernel_max_error_us
        )
    }
}

/// adjtimex(2) in read-only mode: (synchronised, max error µs).
fn kernel_sync() -> (bool, i64) {
    // SAFETY: a zeroed timex with modes 0 only reads the kernel's state into it.
    let mut timex: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut timex) };
    if state < 0 {
        return (false, -1);
    }
    (
        state != libc::TIME_ERROR && timex.status & libc::STA_UNSYNC == 0,
        timex.maxerror,
    )
}

/// `chronyc -c tracking`: the fifth field is the system clock's offset in
/// seconds, positive when it is fast.
fn chrony_offset() -> Option<i64> {
    let out = ask("chronyc", &["-c", "tracking"])?;
    let seconds: f64 = out.split(',').nth(4)?.trim().parse().ok()?;
    Some((seconds * 1e6).round() as i64)
}

/// `ntpq -c "rv 0 offset"`: `offset=0.123` in ms.
fn ntpd_offset() -> Option<i64> {
    let out = ask("ntpq", &["-c", "rv 0 offset"])?;
    let ms: f64 = out.trim().strip_prefix("offset=")?.parse().ok()?;
    Some((ms * 1e3).round() as i64)
}

/// The kernel's clock source (`tsc`, `kvm-clock`, ...).
fn clock_source() -> String {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned())
}

/// Run `program` with a time limit; its stdout when it succeeded.
fn ask(program: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + ASK_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernel_and_names_a_source() {
        let clock = ClockInfo::read();
        assert!(!clock.source.is_empty());
        assert!(["chrony", "ntpd", "none"].contains(&clock.daemon.as_str()));
        assert_eq!(clock.daemon == "none", clock.offset_us.is_none());
        assert!(clock.describe().starts_with("clock source "));
    }
}
