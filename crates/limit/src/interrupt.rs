//! Ctrl-C in a command made of probes (`bench`, `sweep`, `search`, `scan`).
//!
//! The command's signal handler calls [`Interrupt::signal`]; each probe
//! registers its run while it lasts. The first signal stops the probe that is
//! running (its shots in flight finish and are recorded, as `tank -c` does on
//! its first Ctrl-C) and every probe after it before it fires, so the command
//! ends with what it measured; the second aborts the probe (shots in flight are
//! recorded as abandoned, net code 125).

use std::sync::{Arc, Mutex, PoisonError};

use tank_run::Handle;

/// A command's Ctrl-Cs, shared by its signal handler and its probes.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Signals seen so far.
    count: usize,
    /// When the first came, µs since the Unix epoch.
    first_us: Option<u64>,
    /// The probe running, if one is.
    running: Option<Handle>,
}

impl Interrupt {
    /// Another Ctrl-C (or SIGTERM): stop the running probe at the first,
    /// abort it at the second.
    pub fn signal(&self) {
        let mut state = self.lock();
        state.count += 1;
        if state.first_us.is_none() {
            state.first_us = Some(unix_us());
        }
        if let Some(handle) = &state.running {
            steer(handle, state.count);
        }
    }

    /// Whether a signal came: the command stops after the probe it stopped.
    pub fn interrupted(&self) -> bool {
        self.lock().count > 0
    }

    /// When the first signal came, µs since the Unix epoch.
    pub(crate) fn first_us(&self) -> Option<u64> {
        self.lock().first_us
    }

    /// `handle`'s run is the probe running now: a signal steers it (one that
    /// came before it started stops it at once).
    pub(crate) fn attach(&self, handle: &Handle) {
        let mut state = self.lock();
        steer(handle, state.count);
        state.running = Some(handle.clone());
    }

    /// The probe's run ended.
    pub(crate) fn detach(&self) {
        self.lock().running = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What `count` signals ask of a run.
fn steer(handle: &Handle, count: usize) {
    match count {
        0 => {}
        1 => handle.stop(),
        _ => handle.abort(),
    }
}

/// Now, µs since the Unix epoch.
pub(crate) fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_signal_leaves_the_command_running() {
        let interrupt = Interrupt::default();
        interrupt.attach(&Handle::default());
        assert!(!interrupt.interrupted());
        assert_eq!(interrupt.first_us(), None);
    }

    #[test]
    fn a_signal_is_remembered_with_the_time_of_the_first() {
        let interrupt = Interrupt::default();
        let before = unix_us();
        interrupt.signal();
        let first = interrupt.first_us().unwrap();
        interrupt.signal();
        assert!(interrupt.interrupted());
        assert!(first >= before);
        assert_eq!(interrupt.first_us(), Some(first));
    }
}
