//! One child shard: started to die with its parent, and how it ended.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};

use super::console::Tail;

/// The exit code that says "completed, with warnings" under `fail_on_warnings`:
/// the end of a run, not a stop.
const WARNINGS: i32 = tank_stats::autostop::codes::WARNINGS;

/// One child shard.
pub(super) struct Shard {
    pub index: u32,
    pub dir: PathBuf,
    pub child: Child,
    pub ended: Option<Ended>,
    /// Its test_data.log, as it grows.
    pub tail: Tail,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl Ended {
    pub(super) fn of(status: ExitStatus) -> Ended {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Code(code),
            (None, Some(signal)) => Ended::Signal(signal),
            // Neither a code nor a signal: not a Unix child; count it as failed.
            (None, None) => Ended::Code(1),
        }
    }

    /// The exit code it stands for (a killed shard: 1, as an interrupted run).
    pub(super) fn code(self) -> i32 {
        match self {
            Ended::Code(code) => code,
            Ended::Signal(_) => 1,
        }
    }

    /// Whether it ended before its plan did (a stop, a failure, a kill): then
    /// the others are stopped. A run's end, with or without warnings, is not.
    pub(super) fn stopped(self) -> bool {
        !matches!(self, Ended::Code(0 | WARNINGS))
    }

    /// `exit code 22`, `killed by signal 9 (SIGKILL)`.
    pub(super) fn describe(self) -> String {
        match self {
            Ended::Code(code) => format!("exit code {code}"),
            Ended::Signal(signal) => format!("killed by signal {signal} ({})", signal_name(signal)),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        _ => "a signal",
    }
}

/// Start `command` so that it dies with this process: when the parent dies,
/// however (SIGKILL, the OOM killer, a CI job's kill), the kernel sends the
/// child SIGTERM, which stops its firing at once (its shots in flight finish
/// and are recorded). The thread that calls this must live as long as the
/// children: the kernel ties the signal to it.
pub(super) fn spawn_bound(command: &mut Command) -> io::Result<Child> {
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid), allocating nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between the fork and the prctl.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
    command.spawn()
}

/// SIGINT to each child still running: the first stops its firing, a second stops it at once.
pub(super) fn interrupt<'a>(shards: impl Iterator<Item = &'a Shard>) {
    for shard in shards.filter(|s| s.ended.is_none()) {
        if let Ok(pid) = libc::pid_t::try_from(shard.child.id()) {
            // SAFETY: kill(2) on our own child's pid, not yet reaped (it has not ended).
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_are_named_and_only_stops_stop_the_others() {
        assert_eq!(Ended::Signal(9).describe(), "killed by signal 9 (SIGKILL)");
        assert_eq!(Ended::Code(22).describe(), "exit code 22");
        assert!(!Ended::Code(0).stopped());
        assert!(!Ended::Code(WARNINGS).stopped());
        assert!(Ended::Code(1).stopped() && Ended::Signal(9).stopped());
        assert_eq!(Ended::Signal(15).code(), 1);
    }

    #[test]
    fn a_bound_child_runs_and_its_status_is_read() {
        let mut child = spawn_bound(Command::new("sh").args(["-c", "exit 3"])).unwrap();
        assert_eq!(Ended::of(child.wait().unwrap()), Ended::Code(3));
        let mut child = spawn_bound(Command::new("sh").args(["-c", "kill -9 $$"])).unwrap();
        assert_eq!(Ended::of(child.wait().unwrap()), Ended::Signal(9));
    }
}
