//! The results thread: takes samples off the shooters, writes phout through a
//! big buffer, and once a second turns what arrived into finished seconds
//! (tank-stats' aggregator): written as yandex-tank's JSON lines, judged by
//! autostop, which stops the run when a criterion fires, and handed to the
//! run's [`Observer`]. Memory stays flat: seconds are folded into totals.
//!
//! A write to an artifact that fails (a full disk, say) stops the run at once:
//! the shots fired from then on could not be recorded. The thread keeps taking
//! samples, so the counts stay true, and says which file failed and why.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tank_engine::{Active, Control, SessionTally};
use tank_report::Timeline;
use tank_stats::aggregate::{Aggregator, SecondStats, TotalStats};
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::{json, phout, Sample, SessionCounts};

use crate::observer::{LiveState, Notice, Observer};
use crate::watch::{Watch, Watched};
use tank_results::Planned;

const PHOUT_BUFFER: usize = 1 << 20;
/// The thread drains the samples this often instead of sleeping on the channel:
/// a sleeping receiver makes every send a futex wake-up (a system call and a
/// context switch per shot); a polling one costs the shooters nothing.
const POLL: Duration = Duration::from_millis(5);

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
    /// Each replay queue's sessions (empty without a replay).
    pub sessions: Vec<Arc<SessionTally>>,
    /// The replay's sessions as of the last second, and their peak over the run.
    pub replay: Option<(SessionCounts, u64)>,
    /// Shots planned per unix second.
    pub planned: Planned,
    /// Shown each finished second, and told what stops the run.
    pub observer: Box<dyn Observer>,
    /// When the run started.
    pub started: Instant,
    /// `[telegraf]` / `[monitoring]`, when configured.
    pub watch: Option<Watch>,
    /// `[influx]` and `[prometheus]`, when configured.
    pub exports: Exports,
}

/// Where finished seconds are sent besides the artifacts.
#[derive(Default)]
pub struct Exports {
    /// `[influx]`.
    pub influx: Option<tank_export::influx::Influx>,
    /// `[prometheus]`.
    pub prometheus: Option<tank_export::prometheus::Endpoint>,
}

/// What the exporters did, for the summary.
pub struct Exported {
    /// `[influx]`'s counts.
    pub influx: Option<tank_export::influx::InfluxReport>,
}

/// What the results thread collected over the run (not to be confused with
/// `tank_stats::Measured`, one shot's phases).
pub struct Collected {
    /// The run's totals.
    pub totals: TotalStats,
    /// Every second, for the reports.
    pub timeline: Timeline,
    /// Why autostop stopped the run, if it did.
    pub stopped: Option<StopReason>,
    /// The first artifact write that failed (it stopped the run), if one did.
    pub write_failed: Option<WriteFailure>,
    /// What monitoring collected, when configured.
    pub watched: Option<Watched>,
    /// What the exporters did.
    pub exported: Exported,
    /// A replay's sessions at the end (`peak`: over the whole run).
    pub sessions: Option<SessionCounts>,
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
) -> std::io::Result<JoinHandle<Collected>> {
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
    fn fail(&mut self, file: PathBuf, error: std::io::Error, live: &mut Live) {
        if self.failed.is_none() {
            live.observer.notice(&Notice::WriteFailed {
                file: &file,
                error: &error,
            });
            self.failed = Some(WriteFailure { file, error });
            live.control.stop.cancel();
        }
    }

    fn phout(&mut self, line: &[u8], live: &mut Live) {
        if let Some(out) = self.phout.as_mut() {
            if let Err(error) = out.write_all(line) {
                self.phout = None;
                self.fail(self.phout_path.clone(), error, live);
            }
        }
    }

    fn json(&mut self, second: &SecondStats, live: &mut Live) {
        if let Some(out) = self.json.as_mut() {
            if let Err(error) = json::write_second(out, second).and_then(|()| out.flush()) {
                self.json = None;
                self.fail(self.json_path.clone(), error, live);
            }
        }
    }

    /// Push phout's buffer to the file: once a second, so a failing disk is
    /// found within a second and a reader of the file (`tail -f`) is at most a
    /// second behind, and at the end.
    fn flush_phout(&mut self, live: &mut Live) {
        if let Some(out) = self.phout.as_mut() {
            if let Err(error) = out.flush() {
                self.phout = None;
                self.fail(self.phout_path.clone(), error, live);
            }
        }
    }
}

fn collect(
    samples: Receiver<Sample>,
    phout: File,
    phout_path: PathBuf,
    mut live: Live,
) -> Collected {
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
                    files.phout(&line, &mut live);
                    let sent = sample.start_unix_us / 1_000_000;
                    live.aggregator.note_sent(sent, 1);
                    live.aggregator.note_lag(sent, sample.lag_us);
                    live.aggregator.add_sample(&sample);
                    live.observer.sample(&sample);
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
    files.flush_phout(&mut live);
    live.aggregator.finish();
    feed_planned(&mut live, unix_second());
    watch(&mut live, &mut files, true);
    publish(&mut live, &mut files, &mut timeline, true);
    if let Some(endpoint) = live.exports.prometheus.take() {
        endpoint.finish();
    }
    Collected {
        totals: live.aggregator.totals(),
        timeline,
        stopped: live.autostop.stopped().cloned(),
        write_failed: files.failed,
        watched: live.watch.take().map(Watch::finish),
        exported: Exported {
            influx: live.exports.influx.take().map(|i| i.finish()),
        },
        sessions: {
            count_sessions(&mut live);
            live.replay.map(|(now, peak)| SessionCounts { peak, ..now })
        },
    }
}

/// A new wall-clock second: note what the engine knows, finish what is final.
fn tick(live: &mut Live, now: u64, files: &mut Files, timeline: &mut Timeline) {
    files.flush_phout(live);
    feed_planned(live, now);
    let instances: usize = live.active.iter().map(|a| a.take_peak()).sum();
    live.aggregator.note_instances(now, instances as u64);
    count_sessions(live);
    live.aggregator.advance(now);
    watch(live, files, false);
    publish(live, files, timeline, false);
}

/// Read the replay's session tallies (once a wall-clock second, and at the end).
fn count_sessions(live: &mut Live) {
    if live.sessions.is_empty() {
        return;
    }
    let mut now = SessionCounts::default();
    for tally in &live.sessions {
        now.add(&tally.take());
    }
    let peak = live.replay.map_or(0, |(_, peak)| peak);
    live.replay = Some((now, peak.max(now.peak)));
}

/// Take what monitoring collected: warnings to the observer, seconds to
/// `monitoring.log` and to autostop's metric criteria.
fn watch(live: &mut Live, files: &mut Files, last: bool) {
    let Some(watch) = live.watch.as_mut() else {
        return;
    };
    let (taken, failed) = watch.take(last);
    let log_path = watch.log_path.clone();
    if let Some(error) = failed {
        files.fail(log_path, error, live);
    }
    for warning in &taken.warnings {
        live.observer.notice(&Notice::Warning(warning));
    }
    if let Some(influx) = &live.exports.influx {
        influx.monitoring(&taken.seconds);
    }
    for second in &taken.seconds {
        if let Some(reason) =
            live.autostop
                .observe_monitoring(second.ts, &second.host, &second.metrics)
        {
            stop_for(live, files, &reason);
        }
    }
}

/// A criterion fired: say so, write the report, stop the run.
fn stop_for(live: &mut Live, files: &mut Files, reason: &StopReason) {
    live.observer.notice(&Notice::Autostop(reason));
    if let Err(error) = std::fs::write(&live.autostop_report, reason.report_text()) {
        let file = live.autostop_report.clone();
        files.fail(file, error, live);
    }
    live.control.stop.cancel();
}

fn feed_planned(live: &mut Live, now: u64) {
    for (second, shots) in live.planned.take_until(now) {
        live.aggregator.note_planned(second, shots);
    }
}

/// Write, judge and show every finished second; `last` after the shooting ended.
fn publish(live: &mut Live, files: &mut Files, timeline: &mut Timeline, last: bool) {
    let mut finished = Vec::new();
    while let Some(second) = live.aggregator.pop_ready() {
        files.json(&second, live);
        timeline.push(&second);
        if let Some(influx) = &live.exports.influx {
            influx.second(&second);
        }
        if let Some(endpoint) = live.exports.prometheus.as_mut() {
            endpoint.second(&second);
        }
        if let Some(reason) = live.autostop.observe(&second, live.started.elapsed()) {
            stop_for(live, files, &reason);
        }
        finished.push(second);
    }
    if !finished.is_empty() {
        let state = LiveState {
            aggregator: &live.aggregator,
            autostop: &live.autostop,
            elapsed: live.started.elapsed(),
            last,
            monitoring: live.watch.as_ref().map_or(&[], |w| w.latest.as_slice()),
            sessions: live.replay.as_ref().map(|(now, _)| now),
        };
        live.observer.seconds(&finished, &state);
    }
}

fn unix_second() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
