//! The live console of `tank -c`: a full screen redrawn each second on a
//! terminal, or one plain line per second (piped, `--quiet`, `[console]
//! short_only`). It is the run's observer; the run itself prints nothing.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use tank_report::console::{self, LiveView};
use tank_run::{LiveState, Notice, Observer, Started};
use tank_stats::aggregate::SecondStats;
use tank_stats::SessionCounts;

/// The live console: how it shows the run, and what it remembers between seconds.
pub struct Console {
    mode: Mode,
    /// A replay's sessions started as of the last line (for its per-second rate).
    sessions_started: u64,
}

/// How the console shows the run.
enum Mode {
    /// The full screen, redrawn each second.
    Screen {
        /// The config file.
        title: String,
        /// The run's instances (known once it is set up).
        instances_limit: u64,
        /// The longest schedule (likewise).
        planned_duration: Option<Duration>,
    },
    /// One plain line per second.
    Lines,
}

impl Console {
    /// The screen when stdout is a terminal and lines were not asked for.
    pub fn choose(lines: bool, title: String) -> Self {
        let mode = if !lines && std::io::stdout().is_terminal() {
            Mode::Screen {
                title,
                instances_limit: 0,
                planned_duration: None,
            }
        } else {
            Mode::Lines
        };
        Console {
            mode,
            sessions_started: 0,
        }
    }

    /// One plain line per second.
    pub fn lines() -> Self {
        Console {
            mode: Mode::Lines,
            sessions_started: 0,
        }
    }
}

/// A replay's sessions, as Apiary shows its tallies and levels; `before`:
/// the sessions started as of the previous line.
fn sessions_line(sessions: &SessionCounts, before: u64) -> String {
    format!(
        "sessions: {} running (most {} in the last second), {} started (+{}/s), {} completed",
        sessions.running,
        sessions.peak,
        sessions.started,
        sessions.started.saturating_sub(before),
        sessions.completed
    )
}

impl Observer for Console {
    fn started(&mut self, started: &Started<'_>) {
        if let Mode::Screen {
            instances_limit,
            planned_duration,
            ..
        } = &mut self.mode
        {
            *instances_limit = started.instances;
            *planned_duration = started.longest_schedule;
        }
    }

    fn seconds(&mut self, seconds: &[SecondStats], state: &LiveState<'_>) {
        let before = self.sessions_started;
        if let Some(sessions) = state.sessions {
            self.sessions_started = sessions.started;
        }
        match &mut self.mode {
            Mode::Lines => {
                for second in seconds {
                    println!("{}", console::render_line(second, state.elapsed));
                }
                if let (Some(sessions), false) = (state.sessions, seconds.is_empty()) {
                    println!("{}", sessions_line(sessions, before));
                }
            }
            // The last seconds are not drawn: the summary replaces the screen.
            Mode::Screen { .. } if state.last => {}
            Mode::Screen {
                title,
                instances_limit,
                planned_duration,
            } => {
                let Some(second) = seconds.last() else {
                    return;
                };
                let totals = state.so_far.totals();
                let counting = state.autostop.counting();
                let view = LiveView {
                    title,
                    second,
                    totals: &totals,
                    elapsed: state.elapsed,
                    planned_duration: *planned_duration,
                    instances_limit: *instances_limit,
                    autostop: &counting,
                    monitoring: state.monitoring,
                };
                print!("{}{}", console::CLEAR, console::render_screen(&view));
                if let Some(sessions) = state.sessions {
                    println!("{}", sessions_line(sessions, before));
                }
                let _ = std::io::stdout().flush();
            }
        }
    }

    fn notice(&mut self, notice: &Notice<'_>) {
        match notice {
            Notice::Autostop(reason) => println!(
                "tank: autostop: {} — {}",
                reason.criterion, reason.explanation
            ),
            Notice::Warning(text) => {
                for line in text.lines() {
                    eprintln!("tank: warning: {line}");
                }
            }
            Notice::WriteFailed { file, error } => {
                eprintln!("tank: stopping: cannot write {}: {error}", file.display());
            }
            Notice::Info(text) => eprintln!("tank: {text}"),
        }
    }

    fn preload(&mut self, queue: &str, done: u64, total: u64) {
        // One line, rewritten in place, ended when the preload is.
        let end = if done == total { "\n" } else { "" };
        eprint!("\rtank: [{queue}] preload: {done} of {total} records set{end}");
    }
}
