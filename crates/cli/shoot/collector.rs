//! The results thread: takes samples off the shooters, writes phout through a
//! big buffer, and once a second turns what arrived into finished seconds
//! (tank-stats' aggregator): written as yandex-tank's JSON lines, shown on
//! the console, and judged by autostop, which stops the run when a
//! criterion fires. Memory stays flat: seconds are folded into totals.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tank_engine::{Active, Control};
use tank_report::console::{self, LiveView};
use tank_report::Timeline;
use tank_stats::aggregate::{Aggregator, SecondStats, TotalStats};
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::{json, phout, Sample};

const PHOUT_BUFFER: usize = 1 << 20;
/// The thread drains the samples this often instead of sleeping on the channel:
/// a sleeping receiver makes every send a futex wake-up (a system call and a
/// context switch per shot); a polling one costs the shooters nothing.
const POLL: Duration = Duration::from_millis(5);

/// How the console shows the run.
pub enum Console {
    /// The full screen, redrawn each second (stdout is a terminal).
    Screen {
        /// The config file.
        title: String,
        /// The configured instances.
        instances_limit: u64,
        /// The longest schedule.
        planned_duration: Option<Duration>,
    },
    /// One plain line per second.
    Lines,
}

impl Console {
    /// The screen on a terminal unless `short_only`, else lines.
    pub fn choose(
        short_only: bool,
        title: String,
        instances_limit: u64,
        planned_duration: Option<Duration>,
    ) -> Self {
        if !short_only && std::io::stdout().is_terminal() {
            Console::Screen {
                title,
                instances_limit,
                planned_duration,
            }
        } else {
            Console::Lines
        }
    }
}

/// What the thread needs besides the samples.
pub struct Live {
    /// Per-second aggregation.
    pub aggregator: Aggregator,
    /// The `[autostop]` criteria.
    pub autostop: Autostop,
    /// Where the run is stopped when a criterion fires.
    pub control: Control,
    /// `test_data.log`: one JSON line per finished second.
    pub json: File,
    /// `autostop_report.txt`.
    pub autostop_report: PathBuf,
    /// Each queue's count of instances firing.
    pub active: Vec<Arc<Active>>,
    /// Shots planned per unix second.
    pub planned: BTreeMap<u64, u64>,
    /// The console.
    pub console: Console,
    /// When the run started.
    pub started: Instant,
}

/// What the run measured.
pub struct Outcome {
    /// The run's totals.
    pub totals: TotalStats,
    /// Every second, for the reports.
    pub timeline: Timeline,
    /// Why autostop stopped the run, if it did.
    pub stopped: Option<StopReason>,
}

/// Start the results thread writing phout to `phout`.
pub fn spawn(
    samples: Receiver<Sample>,
    phout: File,
    live: Live,
) -> std::io::Result<JoinHandle<std::io::Result<Outcome>>> {
    std::thread::Builder::new()
        .name("results".into())
        .spawn(move || collect(samples, phout, live))
}

fn collect(samples: Receiver<Sample>, phout: File, mut live: Live) -> std::io::Result<Outcome> {
    let mut out = BufWriter::with_capacity(PHOUT_BUFFER, phout);
    let mut json = BufWriter::new(live.json.try_clone()?);
    let mut line = Vec::with_capacity(256);
    let mut timeline = Timeline::default();
    let mut last_tick = 0;
    let mut open = true;
    while open {
        loop {
            match samples.try_recv() {
                Ok(sample) => {
                    line.clear();
                    phout::push_line(&mut line, &sample);
                    out.write_all(&line)?;
                    let sent = sample.start_unix_us / 1_000_000;
                    live.aggregator.note_sent(sent, 1);
                    live.aggregator.note_lag(sent, sample.lag_us);
                    live.aggregator.add_sample(&sample);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let now = unix_second();
        if now != last_tick {
            last_tick = now;
            tick(&mut live, now, &mut json, &mut timeline)?;
        }
        if open {
            std::thread::sleep(POLL);
        }
    }
    out.flush()?;
    live.aggregator.finish();
    let now = unix_second();
    feed_planned(&mut live, now);
    // The last seconds: printed as lines too (the full screen gives way to the summary).
    let lines = matches!(live.console, Console::Lines);
    publish(&mut live, &mut json, &mut timeline, lines)?;
    json.flush()?;
    Ok(Outcome {
        totals: live.aggregator.totals(),
        timeline,
        stopped: live.autostop.stopped().cloned(),
    })
}

/// A new wall-clock second: note what the engine knows, finish what is final.
fn tick(
    live: &mut Live,
    now: u64,
    json: &mut impl Write,
    timeline: &mut Timeline,
) -> std::io::Result<()> {
    feed_planned(live, now);
    let instances: usize = live.active.iter().map(|a| a.take_peak()).sum();
    live.aggregator.note_instances(now, instances as u64);
    live.aggregator.advance(now);
    publish(live, json, timeline, true)
}

fn feed_planned(live: &mut Live, now: u64) {
    let later = live.planned.split_off(&(now + 1));
    for (second, shots) in std::mem::replace(&mut live.planned, later) {
        live.aggregator.note_planned(second, shots);
    }
}

/// Write, show and judge every finished second.
fn publish(
    live: &mut Live,
    json: &mut impl Write,
    timeline: &mut Timeline,
    show: bool,
) -> std::io::Result<()> {
    let mut last: Option<SecondStats> = None;
    while let Some(second) = live.aggregator.pop_ready() {
        json::write_second(json, &second)?;
        timeline.push(&second);
        if let Some(reason) = live.autostop.observe(&second, live.started.elapsed()) {
            println!(
                "tank: autostop: {} — {}",
                reason.criterion, reason.explanation
            );
            std::fs::write(&live.autostop_report, reason.report_text())?;
            live.control.stop.cancel();
        }
        if show && matches!(live.console, Console::Lines) {
            println!("{}", console::render_line(&second, live.started.elapsed()));
        }
        last = Some(second);
    }
    json.flush()?;
    if let (
        true,
        Some(second),
        Console::Screen {
            title,
            instances_limit,
            planned_duration,
        },
    ) = (show, &last, &live.console)
    {
        let totals = live.aggregator.totals();
        let counting = live.autostop.counting();
        let view = LiveView {
            title,
            second,
            totals: &totals,
            elapsed: live.started.elapsed(),
            planned_duration: *planned_duration,
            instances_limit: *instances_limit,
            autostop: &counting,
        };
        print!("{}{}", console::CLEAR, console::render_screen(&view));
        let _ = std::io::stdout().flush();
    }
    Ok(())
}

fn unix_second() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
