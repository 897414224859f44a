//! The results thread: the live source of tank-results' pipeline.
//!
//! It takes samples off the shooters and, once a wall-clock second, tells the
//! pipeline what the engine knows of the seconds just past: shots planned (the
//! plan in closed form), started (the engine's per-second counters, final when
//! the second ends, however late the replies), busy instances, a replay's
//! sessions, and monitoring. Each second that becomes final goes to the sinks:
//! phout and `test_data.log`, the report's timeline, autostop (which stops the
//! run when a criterion fires), the exporters, memcached's mcperf table,
//! Apiary's view (`--apiary`), and the run's [`Observer`]. Memory stays flat: seconds are folded into totals.
//!
//! A write to an artifact that fails (a full disk, say) stops the run at once:
//! the shots fired from then on could not be recorded. The thread keeps taking
//! samples, so the counts stay true, and says which file failed and why.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tank_config::TestConfig;
use tank_engine::{Active, Control, Engine, SessionTally, StartedSeconds};
use tank_report::apiary::{ApiaryRow, ApiaryView};
use tank_report::memcached::McperfLines;
use tank_report::stream::files::JSON_LINES;
use tank_results::{
    AutostopSink, Elapsed, JsonLines, PhoutFile, Pipeline, Planned, Response, SecondSink,
    SinkError, SoFar, Timeline,
};
use tank_stats::autostop::{Autostop, StopReason};
use tank_stats::{Aggregator, Sample, SecondStats, SessionCounts, TotalStats};

use crate::artifacts::Artifacts;
use crate::observer::{LiveState, Notice, Observer};
use crate::watch::{Watch, Watched};
use crate::RunError;

/// The phout's name in the artifacts directory.
pub const PHOUT: &str = "phout.log";

/// The thread drains the samples this often instead of sleeping on the channel:
/// a sleeping receiver makes every send a futex wake-up (a system call and a
/// context switch per shot); a polling one costs the shooters nothing.
const POLL: Duration = Duration::from_millis(5);

/// What the thread needs besides the samples.
pub struct Live {
    /// The per-second aggregation.
    pub pipeline: Pipeline,
    /// `phout.log`.
    pub phout: PhoutFile,
    /// `test_data.log`.
    pub json: JsonLines,
    /// The `[autostop]` criteria.
    pub autostop: AutostopSink,
    /// Where the run is stopped when a criterion fires or a write fails.
    pub control: Control,
    /// `autostop_report.txt`.
    pub autostop_report: PathBuf,
    /// Each queue's count of instances firing.
    pub active: Vec<Arc<Active>>,
    /// The queues' shots started per second (the sent counts).
    pub started_shots: StartedSeconds,
    /// Seconds a sent count waits after its second's end (for a shot started in
    /// its last moment to be noted): 1, or 0 when seconds are final at once.
    pub sent_grace: u64,
    /// Each replay queue's sessions (empty without a replay).
    pub sessions: Vec<Arc<SessionTally>>,
    /// Shots planned per unix second.
    pub planned: Planned,
    /// Whether `planned` holds every queue's plan (else no count of the shots
    /// due by a moment is known).
    pub planned_whole: bool,
    /// The schedules' start, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// Shown each finished second, and told what stops the run.
    pub observer: Box<dyn Observer>,
    /// When the run started (its clock's start).
    pub started: Instant,
    /// `[telegraf]` / `[monitoring]`, when configured.
    pub watch: Option<Watch>,
    /// `[influx]` and `[prometheus]`, when configured.
    pub exports: Exports,
    /// mcperf's lines, for a run with a memcached queue.
    pub mcperf: Option<McperfLines>,
    /// Apiary's statistics view, when asked for (`--apiary`).
    pub apiary: Option<ApiaryView>,
    /// The observer's own sinks ([`Observer::sinks`]: a live dashboard, say).
    pub added: Vec<Box<dyn SecondSink + Send>>,
}

/// What [`Live::new`] builds the thread's state from.
pub(crate) struct Parts<'a> {
    pub config: &'a TestConfig,
    pub engine: &'a Engine,
    pub artifacts: &'a Artifacts,
    /// The schedules' start, µs since the Unix epoch.
    pub start_unix_us: u64,
    pub autostop: Autostop,
    pub control: Control,
    pub observer: Box<dyn Observer>,
    pub watch: Option<Watch>,
    pub exports: Exports,
    pub apiary: Option<ApiaryView>,
}

impl Live {
    /// The thread's state for a run of `parts.engine`: its files created in
    /// the artifacts directory, its counters taken from the engine's queues.
    pub(crate) fn new(parts: Parts<'_>) -> Result<Live, RunError> {
        let Parts {
            config,
            engine,
            artifacts,
            start_unix_us,
            ..
        } = parts;
        let queues = engine.queues();
        let buffered = config.run.buffered_seconds;
        let aggregator = Aggregator::new(buffered).with_measuring(
            config.queues.iter().map(|q| q.name.clone()).collect(),
            config.queues.iter().map(|q| q.measure).collect(),
        );
        let create = |name: &str| {
            let path = artifacts.file(name);
            move |error| RunError::Io {
                what: format!("creating {}", path.display()),
                error,
            }
        };
        let mut observer = parts.observer;
        let added = observer.sinks();
        let memcached = config
            .queues
            .iter()
            .any(|q| q.tank_type == tank_config::TankType::Memcached);
        Ok(Live {
            pipeline: Pipeline::new(aggregator),
            phout: PhoutFile::create(&artifacts.file(PHOUT)).map_err(create(PHOUT))?,
            json: JsonLines::create(&artifacts.file(JSON_LINES)).map_err(create(JSON_LINES))?,
            autostop: AutostopSink::new(parts.autostop, Elapsed::Since(Instant::now())),
            control: parts.control,
            autostop_report: artifacts.file(&config.autostop.report_file),
            active: queues.iter().map(|q| q.active()).collect(),
            started_shots: StartedSeconds::new(
                queues.iter().map(|q| q.started()).collect(),
                start_unix_us / 1_000_000,
            ),
            sent_grace: u64::from(buffered.min(1)),
            sessions: queues.iter().filter_map(|q| q.sessions()).collect(),
            planned: Planned::new(
                queues.iter().filter_map(|q| q.planned().cloned()).collect(),
                start_unix_us,
            ),
            planned_whole: queues.iter().all(|q| q.planned().is_some()),
            start_unix_us,
            observer,
            started: Instant::now(),
            watch: parts.watch,
            exports: parts.exports,
            mcperf: memcached.then(McperfLines::default),
            apiary: parts.apiary,
            added,
        })
    }
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
    /// `[prometheus]`'s endpoint, still serving the final totals (dropping
    /// it closes it).
    pub prometheus: Option<tank_export::prometheus::Endpoint>,
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
    /// When the run was first told to stop (Ctrl-C, autostop, a failed
    /// write), as the thread saw it (within [`POLL`]).
    pub stop_seen: Option<StopSeen>,
    /// The first artifact write that failed (it stopped the run), if one did.
    pub write_failed: Option<SinkError>,
    /// What monitoring collected, when configured.
    pub watched: Option<Watched>,
    /// What the exporters did.
    pub exported: Exported,
    /// A replay's sessions at the end (`peak`: over the whole run).
    pub sessions: Option<SessionCounts>,
    /// mcperf's lines, for a run with a memcached queue.
    pub mcperf: Option<McperfLines>,
    /// Apiary's view over the run, when asked for.
    pub apiary: Option<ApiaryRow>,
}

/// The moment the run was told to stop, and what was due by then.
#[derive(Debug, Clone, Copy)]
pub struct StopSeen {
    /// Seconds after the schedules' start.
    pub after_s: f64,
    /// Shots the plans had due over a second before it
    /// ([`Planned::due_well_before`]): those the run was behind on (`None`: a
    /// plan has no closed form).
    pub due: Option<u64>,
}

/// Start the results thread.
pub fn spawn(samples: Receiver<Sample>, live: Live) -> std::io::Result<JoinHandle<Collected>> {
    std::thread::Builder::new()
        .name("results".into())
        .spawn(move || Collector::new(live).collect(samples))
}

/// The observer as a sink: the seconds of one wall-clock tick, shown together
/// with the live state once the other sinks have had them.
struct ObserverSink {
    observer: Box<dyn Observer>,
    batch: Vec<SecondStats>,
}

impl SecondSink for ObserverSink {
    fn response(&mut self, response: Response<'_>) {
        if let Response::Sample(sample) = response {
            self.observer.sample(sample);
        }
    }

    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        self.batch.push(second.clone());
        Ok(())
    }
}

/// Apiary's view as a sink: each response counted, each finished second
/// sampled with the replay's sessions as the results thread last read them.
struct ApiarySink {
    view: ApiaryView,
    /// A replay's sessions by the second they were read for: the most running
    /// in it, and completed by its end. Seconds reach the view a few seconds
    /// late (once final), so the view takes each second's own reading.
    sessions: std::collections::BTreeMap<u64, (u64, u64)>,
}

impl ApiarySink {
    /// The sessions of `second`: its reading, else the latest before it (a
    /// second without one: the results thread did not tick in it); readings
    /// before it are let go.
    fn sessions_of(&mut self, second: u64) -> Option<(u64, u64)> {
        let reading = self.sessions.range(..=second).next_back().map(|(_, r)| *r);
        while let Some(entry) = self.sessions.first_entry() {
            if *entry.key() >= second {
                break;
            }
            entry.remove();
        }
        reading
    }
}

impl SecondSink for ApiarySink {
    fn response(&mut self, response: Response<'_>) {
        self.view.response(response.measured());
    }

    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        let sessions = self.sessions_of(second.ts);
        self.view.second(second, sessions);
        Ok(())
    }
}

/// The sinks a caller added, as one sink (each is handed every response and
/// every second; the first failure of them is the one returned).
struct Added(Vec<Box<dyn SecondSink + Send>>);

impl SecondSink for Added {
    fn response(&mut self, response: Response<'_>) {
        for sink in &mut self.0 {
            sink.response(response);
        }
    }

    fn second(&mut self, second: &SecondStats, so_far: SoFar<'_>) -> Result<(), SinkError> {
        let mut result = Ok(());
        for sink in &mut self.0 {
            let done = sink.second(second, so_far);
            if result.is_ok() {
                result = done;
            }
        }
        result
    }

    fn finish(&mut self, totals: &TotalStats) -> Result<(), SinkError> {
        let mut result = Ok(());
        for sink in &mut self.0 {
            let done = sink.finish(totals);
            if result.is_ok() {
                result = done;
            }
        }
        result
    }
}

/// Every sink of the live run.
struct Sinks {
    phout: PhoutFile,
    json: JsonLines,
    timeline: Timeline,
    autostop: AutostopSink,
    mcperf: Option<McperfLines>,
    influx: Option<tank_export::influx::Influx>,
    prometheus: Option<tank_export::prometheus::Endpoint>,
    apiary: Option<ApiarySink>,
    added: Added,
    observer: ObserverSink,
}

impl Sinks {
    /// The sinks that look at single responses.
    fn of_responses(&mut self) -> [&mut dyn SecondSink; 4] {
        [
            &mut self.phout,
            &mut self.mcperf,
            &mut self.apiary,
            &mut self.observer,
        ]
    }

    /// Every sink, in the order each second reaches them (the observer last:
    /// it shows what the others did, autostop's verdict included).
    fn all(&mut self) -> [&mut dyn SecondSink; 10] {
        [
            &mut self.phout,
            &mut self.json,
            &mut self.timeline,
            &mut self.influx,
            &mut self.prometheus,
            &mut self.mcperf,
            &mut self.apiary,
            &mut self.autostop,
            &mut self.added,
            &mut self.observer,
        ]
    }
}

/// The thread's state.
struct Collector {
    pipeline: Pipeline,
    sinks: Sinks,
    control: Control,
    autostop_report: PathBuf,
    active: Vec<Arc<Active>>,
    started_shots: StartedSeconds,
    sent_grace: u64,
    session_tallies: Vec<Arc<SessionTally>>,
    /// The replay's sessions as of the last second, and their peak over the run.
    sessions: Option<(SessionCounts, u64)>,
    planned: Planned,
    planned_whole: bool,
    start_unix_us: u64,
    started: Instant,
    watch: Option<Watch>,
    failed: Option<SinkError>,
    stop_seen_unix_us: Option<u64>,
}

impl Collector {
    fn new(live: Live) -> Collector {
        Collector {
            pipeline: live.pipeline,
            sinks: Sinks {
                phout: live.phout,
                json: live.json,
                timeline: Timeline::default(),
                autostop: live.autostop,
                mcperf: live.mcperf,
                influx: live.exports.influx,
                prometheus: live.exports.prometheus,
                apiary: live.apiary.map(|view| ApiarySink {
                    view,
                    sessions: std::collections::BTreeMap::new(),
                }),
                added: Added(live.added),
                observer: ObserverSink {
                    observer: live.observer,
                    batch: Vec::new(),
                },
            },
            control: live.control,
            autostop_report: live.autostop_report,
            active: live.active,
            started_shots: live.started_shots,
            sent_grace: live.sent_grace,
            session_tallies: live.sessions,
            sessions: None,
            planned: live.planned,
            planned_whole: live.planned_whole,
            start_unix_us: live.start_unix_us,
            started: live.started,
            watch: live.watch,
            failed: None,
            stop_seen_unix_us: None,
        }
    }

    fn collect(mut self, samples: Receiver<Sample>) -> Collected {
        let mut last_tick = 0;
        let mut open = true;
        while open {
            loop {
                match samples.try_recv() {
                    Ok(sample) => self
                        .pipeline
                        .response(Response::Sample(&sample), &mut self.sinks.of_responses()),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        open = false;
                        break;
                    }
                }
            }
            if self.stop_seen_unix_us.is_none() && self.control.stop.is_cancelled() {
                self.stop_seen_unix_us = Some(unix_us());
            }
            let now = unix_us() / 1_000_000;
            if now != last_tick {
                last_tick = now;
                self.tick(now);
            }
            if open {
                std::thread::sleep(POLL);
            }
        }
        self.end()
    }

    /// A new wall-clock second: note what the engine knows, finish what is final.
    fn tick(&mut self, now: u64) {
        if let Err(error) = self.sinks.phout.flush() {
            self.fail(error);
        }
        self.generator_counts(now, now.saturating_sub(1 + self.sent_grace));
        // The peaks since the last tick are the second that just ended's (at
        // the first tick, the run's first moments: its first second's).
        // A tick before the start (it may be set a moment ahead) notes
        // nothing before the start's second: no second of the run is empty
        // because the clock ticked before it began.
        let start_second = self.start_unix_us / 1_000_000;
        let ended = now
            .checked_sub(1)
            .filter(|&second| second >= start_second)
            .unwrap_or(now)
            .max(start_second);
        self.note_peaks(ended);
        self.pipeline.advance(now);
        self.watch(false);
        self.publish(false);
    }

    /// The peaks of instances busy and sessions running since the last look,
    /// as `second`'s.
    fn note_peaks(&mut self, second: u64) {
        let instances: usize = self.active.iter().map(|a| a.take_peak()).sum();
        self.pipeline.instances(second, instances as u64);
        self.count_sessions(second);
    }

    /// The shooting is over (every sample taken): everything is final.
    fn end(mut self) -> Collected {
        let now = unix_us() / 1_000_000;
        self.generator_counts(now, now);
        // The part of this second since the last tick.
        self.note_peaks(now);
        self.watch(true);
        self.pipeline.close();
        self.publish(true);
        let (totals, failures) = self.pipeline.finish(&mut self.sinks.all());
        for error in failures {
            self.fail(error);
        }
        // The last interval, however short, is shown as the others were: the
        // console's totals then end where the summary's do.
        let apiary = self.sinks.apiary.take().map(|mut sink| {
            let now = self.started.elapsed();
            if let Some((last, before)) = sink.view.close_last(now, unix_us() / 1_000_000) {
                self.sinks.observer.observer.apiary(last, before);
            }
            sink.view.finish()
        });
        Collected {
            totals,
            timeline: std::mem::take(&mut self.sinks.timeline),
            stopped: self.sinks.autostop.stopped().cloned(),
            stop_seen: self.stop_seen_unix_us.map(|at| StopSeen {
                after_s: at.saturating_sub(self.start_unix_us) as f64 / 1e6,
                due: self.planned_whole.then(|| self.planned.due_well_before(at)),
            }),
            write_failed: self.failed,
            watched: self.watch.take().map(Watch::finish),
            exported: Exported {
                prometheus: self.sinks.prometheus.take(),
                influx: self.sinks.influx.take().map(|i| i.finish()),
            },
            sessions: self
                .sessions
                .map(|(now, peak)| SessionCounts { peak, ..now }),
            mcperf: self.sinks.mcperf.take(),
            apiary,
        }
    }

    /// The plans' shots due up to `planned_until`, and the shots started up to
    /// `sent_until` (seconds already over).
    fn generator_counts(&mut self, planned_until: u64, sent_until: u64) {
        for (second, shots) in self.planned.take_until(planned_until) {
            self.pipeline.planned(second, shots);
        }
        for (second, shots) in self.started_shots.take_until(sent_until) {
            self.pipeline.sent(second, shots);
        }
    }

    /// Note the first failure and stop the run: what is fired from now on could not be recorded.
    fn fail(&mut self, error: SinkError) {
        if self.failed.is_none() {
            self.sinks.observer.observer.notice(&Notice::WriteFailed {
                file: &error.file,
                error: &error.error,
            });
            self.failed = Some(error);
            self.control.stop.cancel();
        }
    }

    /// Read the replay's session tallies (once a wall-clock second, and at
    /// the end), their peak as `second`'s.
    fn count_sessions(&mut self, second: u64) {
        if self.session_tallies.is_empty() {
            return;
        }
        let mut now = SessionCounts::default();
        for tally in &self.session_tallies {
            now.add(&tally.take());
        }
        let peak = self.sessions.map_or(0, |(_, peak)| peak);
        self.sessions = Some((now, peak.max(now.peak)));
        if let Some(apiary) = self.sinks.apiary.as_mut() {
            let reading = apiary.sessions.entry(second).or_default();
            *reading = (reading.0.max(now.peak), now.completed);
        }
    }

    /// Take what monitoring collected: warnings to the observer, seconds to
    /// `monitoring.log`, to the exporters and to autostop's metric criteria.
    fn watch(&mut self, last: bool) {
        let Some(watch) = self.watch.as_mut() else {
            return;
        };
        let (taken, failed) = watch.take(last);
        let file = watch.log_path.clone();
        if let Some(error) = failed {
            self.fail(SinkError { file, error });
        }
        for warning in &taken.warnings {
            self.sinks
                .observer
                .observer
                .notice(&Notice::Warning(warning));
        }
        if let Some(influx) = &self.sinks.influx {
            influx.monitoring(&taken.seconds);
        }
        for second in &taken.seconds {
            let autostop = self.sinks.autostop.autostop_mut();
            if let Some(reason) =
                autostop.observe_monitoring(second.ts, &second.host, &second.metrics)
            {
                self.stop_for(&reason);
            }
        }
    }

    /// Hand every finished second to the sinks; act on what they found; show
    /// the seconds. `last`: after the shooting ended.
    fn publish(&mut self, last: bool) {
        for error in self.pipeline.publish(&mut self.sinks.all()) {
            self.fail(error);
        }
        if let Some(reason) = self.sinks.autostop.take_fired() {
            self.stop_for(&reason);
        }
        if let Some(apiary) = self.sinks.apiary.as_mut() {
            let now = self.started.elapsed();
            if let Some((interval, before)) = apiary.view.tick(now, unix_us() / 1_000_000) {
                self.sinks.observer.observer.apiary(interval, before);
            }
        }
        let batch = std::mem::take(&mut self.sinks.observer.batch);
        if batch.is_empty() {
            return;
        }
        let sessions = self.sessions.as_ref().map(|(now, _)| now);
        let state = LiveState {
            so_far: self.pipeline.so_far(),
            autostop: self.sinks.autostop.autostop(),
            elapsed: self.started.elapsed(),
            last,
            monitoring: self.watch.as_ref().map_or(&[], |w| w.latest.as_slice()),
            sessions,
        };
        self.sinks.observer.observer.seconds(&batch, &state);
    }

    /// A criterion fired: say so, write the report, stop the run.
    fn stop_for(&mut self, reason: &StopReason) {
        self.sinks
            .observer
            .observer
            .notice(&Notice::Autostop(reason));
        if let Err(error) = std::fs::write(&self.autostop_report, reason.report_text()) {
            let file = self.autostop_report.clone();
            self.fail(SinkError { file, error });
        }
        self.control.stop.cancel();
    }
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
