//! The results thread: takes samples off the shooters, writes phout through a
//! big buffer, and once a second turns what arrived into finished seconds
//! (tank-stats' aggregator): written as yandex-tank's JSON lines, shown on
//! the console, and judged by autostop, which stops the run when a
//! criterion fires. Memory stays flat: seconds are folded into totals.
//!
//! A write to an artifact that fails (a full disk, say) stops the run at once:
//! the shots fired from then on could not be recorded. The thread keeps taking
//! samples, so the counts stay true, and says which file failed and why.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tank_engine::{Active, Control};
use tank_plan::PlannedCount;
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
    /// `test_data.log`: one JSON line per finished second (taken by the thread).
    pub json: Option<File>,
    /// Where `json` is.
    pub json_path: PathBuf,
    /// `autostop_report.txt`.
    pub autostop_report: PathBuf,
    /// Each queue's count of instances firing.
    pub active: Vec<Arc<Active>>,
    /// Shots planned per unix second.
    pub planned: Planned,
    /// The console.
    pub console: Console,
    /// When the run started.
    pub started: Instant,
}

/// The queues' planned shots, counted per unix second in closed form as each
/// second begins: the same time base as the shots sent (by their start) and the
/// responses (by their end), whatever fraction of a second the run starts at.
pub struct Planned {
    counts: Vec<PlannedCount>,
    start_unix_us: u64,
    /// The next second to count.
    next: u64,
    /// The last second any plan has a shot in.
    last: u64,
}

impl Planned {
    /// The open-model queues' plans, started at `start_unix_us`.
    pub fn new(counts: Vec<PlannedCount>, start_unix_us: u64) -> Planned {
        let end_us = counts
            .iter()
            .map(|count| {
                let last_due_ms = count.last_due_ms().unwrap_or(0);
                start_unix_us.saturating_add(u64::try_from(last_due_ms).unwrap_or(0) * 1000)
            })
            .max()
            .unwrap_or(start_unix_us);
        Planned {
            counts,
            start_unix_us,
            next: start_unix_us / 1_000_000,
            last: end_us / 1_000_000,
        }
    }

    /// Shots planned in unix second `second`.
    pub fn in_second(&self, second: u64) -> u64 {
        let from = self.ms_before(second.saturating_mul(1_000_000));
        let to = self.ms_before(second.saturating_add(1).saturating_mul(1_000_000));
        self.counts.iter().map(|c| c.between_ms(from, to)).sum()
    }

    /// The smallest whole ms offset whose shot is due at or after `unix_us`:
    /// a shot at offset `ms` is due before `unix_us` exactly when `ms` is below it.
    fn ms_before(&self, unix_us: u64) -> i64 {
        let since_us = i128::from(unix_us) - i128::from(self.start_unix_us);
        // ceil(since_us / 1000), for either sign.
        let ms = -((-since_us).div_euclid(1000));
        i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
    }

    /// Seconds up to `now` not yet counted, with their counts (empty ones skipped).
    fn take_until(&mut self, now: u64) -> Vec<(u64, u64)> {
        let mut due = Vec::new();
        while self.next <= now.min(self.last) {
            let shots = self.in_second(self.next);
            if shots > 0 {
                due.push((self.next, shots));
            }
            self.next += 1;
        }
        due
    }
}

/// What the run measured.
pub struct Outcome {
    /// The run's totals.
    pub totals: TotalStats,
    /// Every second, for the reports.
    pub timeline: Timeline,
    /// Why autostop stopped the run, if it did.
    pub stopped: Option<StopReason>,
    /// The first artifact write that failed (it stopped the run), if one did.
    pub write_failed: Option<WriteFailure>,
}

/// An artifact that could not be written.
#[derive(Debug)]
pub struct WriteFailure {
    /// The file.
    pub file: PathBuf,
    /// Why.
    pub error: std::io::Error,
}

impl std::fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.file.display(), self.error)
    }
}

/// Start the results thread writing phout to `phout` (at `phout_path`).
pub fn spawn(
    samples: Receiver<Sample>,
    phout: File,
    phout_path: PathBuf,
    live: Live,
) -> std::io::Result<JoinHandle<Outcome>> {
    std::thread::Builder::new()
        .name("results".into())
        .spawn(move || collect(samples, phout, phout_path, live))
}

/// The artifacts the thread writes, each dropped at its first failed write.
struct Files {
    phout: Option<BufWriter<File>>,
    phout_path: PathBuf,
    json: Option<BufWriter<File>>,
    json_path: PathBuf,
    failed: Option<WriteFailure>,
}

impl Files {
    /// Note the first failure and stop the run: what is fired from now on could not be recorded.
    fn fail(&mut self, file: PathBuf, error: std::io::Error, control: &Control) {
        if self.failed.is_none() {
            eprintln!("tank: stopping: cannot write {}: {error}", file.display());
            self.failed = Some(WriteFailure { file, error });
            control.stop.cancel();
        }
    }

    fn phout(&mut self, line: &[u8], control: &Control) {
        if let Some(out) = self.phout.as_mut() {
            if let Err(error) = out.write_all(line) {
                self.phout = None;
                self.fail(self.phout_path.clone(), error, control);
            }
        }
    }

    fn json(&mut self, second: &SecondStats, control: &Control) {
        if let Some(out) = self.json.as_mut() {
            if let Err(error) = json::write_second(out, second).and_then(|()| out.flush()) {
                self.json = None;
                self.fail(self.json_path.clone(), error, control);
            }
        }
    }

    /// Push phout's buffer to the file: once a second, so a failing disk is
    /// found within a second and a reader of the file (`tail -f`) is at most a
    /// second behind, and at the end.
    fn flush_phout(&mut self, control: &Control) {
        if let Some(out) = self.phout.as_mut() {
            if let Err(error) = out.flush() {
                self.phout = None;
                self.fail(self.phout_path.clone(), error, control);
            }
        }
    }
}

fn collect(samples: Receiver<Sample>, phout: File, phout_path: PathBuf, mut live: Live) -> Outcome {
    let json_path = live.json_path.clone();
    let mut files = Files {
        phout: Some(BufWriter::with_capacity(PHOUT_BUFFER, phout)),
        phout_path,
        json: live.json.take().map(BufWriter::new),
        json_path,
        failed: None,
    };
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
                    files.phout(&line, &live.control);
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
            tick(&mut live, now, &mut files, &mut timeline);
        }
        if open {
            std::thread::sleep(POLL);
        }
    }
    files.flush_phout(&live.control);
    live.aggregator.finish();
    feed_planned(&mut live, unix_second());
    // The last seconds: printed as lines too (the full screen gives way to the summary).
    let lines = matches!(live.console, Console::Lines);
    publish(&mut live, &mut files, &mut timeline, lines);
    Outcome {
        totals: live.aggregator.totals(),
        timeline,
        stopped: live.autostop.stopped().cloned(),
        write_failed: files.failed,
    }
}

/// A new wall-clock second: note what the engine knows, finish what is final.
fn tick(live: &mut Live, now: u64, files: &mut Files, timeline: &mut Timeline) {
    files.flush_phout(&live.control);
    feed_planned(live, now);
    let instances: usize = live.active.iter().map(|a| a.take_peak()).sum();
    live.aggregator.note_instances(now, instances as u64);
    live.aggregator.advance(now);
    publish(live, files, timeline, true);
}

fn feed_planned(live: &mut Live, now: u64) {
    for (second, shots) in live.planned.take_until(now) {
        live.aggregator.note_planned(second, shots);
    }
}

/// Write, show and judge every finished second.
fn publish(live: &mut Live, files: &mut Files, timeline: &mut Timeline, show: bool) {
    let mut last: Option<SecondStats> = None;
    while let Some(second) = live.aggregator.pop_ready() {
        files.json(&second, &live.control);
        timeline.push(&second);
        if let Some(reason) = live.autostop.observe(&second, live.started.elapsed()) {
            println!(
                "tank: autostop: {} — {}",
                reason.criterion, reason.explanation
            );
            if let Err(error) = std::fs::write(&live.autostop_report, reason.report_text()) {
                files.fail(live.autostop_report.clone(), error, &live.control);
            }
            live.control.stop.cancel();
        }
        if show && matches!(live.console, Console::Lines) {
            println!("{}", console::render_line(&second, live.started.elapsed()));
        }
        last = Some(second);
    }
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
}

fn unix_second() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
