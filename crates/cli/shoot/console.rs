//! The live console of `tank -c`: a full screen redrawn each second on a
//! terminal, or one plain line per second (piped, `--quiet`, `[console]
//! short_only`). It is the run's observer; the run itself prints nothing.
//! With `--apiary`, Apiary's view follows: printed as each interval ends in
//! lines, kept below the screen (the latest interval) on a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use tank_report::console::{self, LiveView};
use tank_report::names::ProtoCodes;
use tank_run::{LiveState, Notice, Observer, Started};
use tank_stats::aggregate::SecondStats;
use tank_stats::SessionCounts;

/// How often the memcached preload's progress gets a line of its own when
/// stderr is not a terminal (a file, a CI log): there it cannot be redrawn.
const PRELOAD_LINE_EVERY: Duration = Duration::from_secs(5);

/// The run's console: its view, and when the preload's progress was last shown.
pub struct Console {
    view: View,
    preload_shown: Option<Instant>,
    /// The latest interval of Apiary's view, as printed (the screen redraws it).
    apiary: Option<String>,
    /// A replay's sessions started as of the last line (for its per-second rate).
    sessions_started: u64,
}

/// How the console shows the run.
enum View {
    /// The full screen, redrawn each second.
    Screen {
        /// The job's headline and the config file.
        title: String,
        /// The job's description, if any.
        subtitle: Option<String>,
        /// The run's instances (known once it is set up).
        instances_limit: u64,
        /// The longest schedule (likewise).
        planned_duration: Option<Duration>,
        /// When the schedules start, µs since the Unix epoch (likewise).
        start_unix_us: u64,
        /// What the proto codes are, from the queues' protocols.
        codes: ProtoCodes,
        /// Whether the seconds' planned counts are whole (likewise).
        planned_known: bool,
    },
    /// One plain line per second.
    Lines {
        /// When the schedules start, µs since the Unix epoch: each line is
        /// labelled with its second's offset from it.
        start_unix_us: u64,
        /// Whether the seconds' planned counts are whole (known once the run is set up).
        planned_known: bool,
    },
}

impl Console {
    /// The screen when stdout is a terminal and lines were not asked for;
    /// its header names the config file and its job.
    pub fn choose(lines: bool, config: &tank_config::TestConfig) -> Self {
        let view = if !lines && std::io::stdout().is_terminal() {
            let (path, job) = (config.path.display(), &config.job);
            View::Screen {
                title: match job.headline() {
                    Some(headline) => format!("{headline} ({path})"),
                    None => path.to_string(),
                },
                subtitle: job.job_dsc.clone().filter(|d| !d.trim().is_empty()),
                instances_limit: 0,
                planned_duration: None,
                start_unix_us: 0,
                codes: ProtoCodes::of_protocols(config.queues.iter().map(|q| q.tank_type))
                    .unwrap_or(ProtoCodes::Http),
                planned_known: true,
            }
        } else {
            View::Lines {
                start_unix_us: 0,
                planned_known: true,
            }
        };
        Console {
            view,
            preload_shown: None,
            apiary: None,
            sessions_started: 0,
        }
    }

    /// One plain line per second.
    pub fn lines() -> Self {
        Console {
            view: View::Lines {
                start_unix_us: 0,
                planned_known: true,
            },
            preload_shown: None,
            apiary: None,
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
        match &mut self.view {
            View::Screen {
                instances_limit,
                planned_duration,
                start_unix_us,
                planned_known,
                ..
            } => {
                *instances_limit = started.instances;
                *planned_duration = started.longest_schedule;
                *start_unix_us = started.start_unix_us;
                *planned_known = started.planned_known;
            }
            View::Lines {
                start_unix_us,
                planned_known,
            } => {
                *start_unix_us = started.start_unix_us;
                *planned_known = started.planned_known;
            }
        }
    }

    fn seconds(&mut self, seconds: &[SecondStats], state: &LiveState<'_>) {
        let before = self.sessions_started;
        if let Some(sessions) = state.sessions {
            self.sessions_started = sessions.started;
        }
        match &mut self.view {
            View::Lines {
                start_unix_us,
                planned_known,
            } => {
                for second in seconds {
                    let offset = console::second_offset(second.ts, *start_unix_us);
                    outln!("{}", console::render_line(second, offset, *planned_known));
                }
                if let (Some(sessions), false) = (state.sessions, seconds.is_empty()) {
                    outln!("{}", sessions_line(sessions, before));
                }
            }
            // The last seconds are not drawn: the summary replaces the screen.
            View::Screen { .. } if state.last => {}
            View::Screen {
                title,
                subtitle,
                instances_limit,
                planned_duration,
                start_unix_us,
                codes,
                planned_known,
            } => {
                let Some(second) = seconds.last() else {
                    return;
                };
                let totals = state.so_far.totals();
                let counting = state.autostop.counting();
                let view = LiveView {
                    title,
                    subtitle: subtitle.as_deref(),
                    second,
                    second_offset: console::second_offset(second.ts, *start_unix_us),
                    totals: &totals,
                    elapsed: state.elapsed,
                    planned_duration: *planned_duration,
                    instances_limit: *instances_limit,
                    autostop: &counting,
                    monitoring: state.monitoring,
                    codes: *codes,
                    planned_known: *planned_known,
                };
                out!("{}{}", console::CLEAR, console::render_screen(&view));
                if let Some(sessions) = state.sessions {
                    outln!("{}", sessions_line(sessions, before));
                }
                if let Some(apiary) = &self.apiary {
                    out!("\n{apiary}");
                }
            }
        }
    }

    fn notice(&mut self, notice: &Notice<'_>) {
        match notice {
            Notice::Autostop(reason) => outln!(
                "tank: autostop: {} — {}",
                reason.criterion,
                reason.explanation
            ),
            Notice::Warning(text) => {
                for line in text.lines() {
                    errln!("tank: warning: {line}");
                }
            }
            Notice::WriteFailed { file, error } => {
                errln!("tank: stopping: cannot write {}: {error}", file.display());
            }
            Notice::Info(text) => errln!("tank: {text}"),
        }
    }

    fn apiary(
        &mut self,
        interval: &tank_report::apiary::Interval,
        before: Option<&tank_report::apiary::Interval>,
    ) {
        let text = tank_report::apiary::render(interval, before);
        match self.view {
            View::Lines { .. } => outln!("{text}"),
            View::Screen { .. } => self.apiary = Some(text),
        }
    }

    fn preload(&mut self, queue: &str, done: u64, total: u64) {
        let line = format!("tank: [{queue}] preload: {done} of {total} records set");
        if std::io::stderr().is_terminal() {
            // One line, rewritten in place, ended when the preload is.
            let end = if done == total { "\n" } else { "" };
            err!("\r{line}{end}");
            return;
        }
        let now = Instant::now();
        let due = self
            .preload_shown
            .is_none_or(|at| now.duration_since(at) >= PRELOAD_LINE_EVERY);
        if done == total || due {
            errln!("{line}");
            self.preload_shown = Some(now);
        }
    }
}
