//! The run's side of monitoring: start tank-monitor's host threads with the
//! run, and on the results thread take what they collected once a second:
//! write it to `monitoring.log` (yandex-tank's JSON lines), let autostop's
//! metric criteria judge it, keep it for the report and the console, and pass
//! it to the exporters.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use tank_config::MonitoringConfig;
use tank_monitor::{Event, HostSecond, Monitor};
use tank_report::monitoring::Recorder;

/// The artifact monitoring writes.
pub const MONITORING_LOG: &str = "monitoring.log";

/// Monitoring while the run goes.
pub struct Watch {
    monitor: Option<Monitor>,
    log: Option<BufWriter<File>>,
    /// Where the log is.
    pub log_path: PathBuf,
    /// The latest second of each host, for the console.
    pub latest: Vec<HostSecond>,
    /// Every second, for the report.
    pub recorder: Recorder,
    /// The sources' warnings, in order.
    pub warnings: Vec<String>,
    /// The sources that never answered during the run.
    silent: Vec<String>,
    /// Monitoring seconds written.
    pub seconds: u64,
    dropped: u64,
}

/// What the results thread keeps of monitoring once the run is over.
pub struct Watched {
    /// Every second, for the report.
    pub recorder: Recorder,
    /// The sources' warnings.
    pub warnings: Vec<String>,
    /// The sources that never answered during the run: warnings of the run.
    pub silent: Vec<String>,
    /// Monitoring seconds written.
    pub seconds: u64,
    /// Events lost because the results thread was late taking them.
    pub dropped: u64,
}

/// What one take found.
#[derive(Default)]
pub struct Taken {
    /// New seconds.
    pub seconds: Vec<HostSecond>,
    /// New warnings.
    pub warnings: Vec<String>,
}

impl Watch {
    /// Starts the host threads; `log` is `monitoring.log`.
    pub fn start(
        config: &MonitoringConfig,
        log: File,
        log_path: PathBuf,
    ) -> std::io::Result<Watch> {
        Ok(Watch {
            monitor: Some(Monitor::start(config)?),
            log: Some(BufWriter::new(log)),
            log_path,
            latest: Vec::new(),
            recorder: Recorder::default(),
            warnings: Vec::new(),
            silent: Vec::new(),
            seconds: 0,
            dropped: 0,
        })
    }

    /// Takes what arrived (`last`: stop the threads first, after their last
    /// reading). A failed write of the log is returned; the log is then dropped.
    pub fn take(&mut self, last: bool) -> (Taken, Option<std::io::Error>) {
        let events = match (last, self.monitor.take()) {
            (true, Some(monitor)) => {
                let mut events = monitor.poll();
                events.extend(monitor.stop_keeping_count(&mut self.dropped));
                let dropped = self.dropped;
                if dropped > 0 {
                    events.push(Event::Warning(format!(
                        "monitoring: {dropped} readings dropped (the results thread was late)"
                    )));
                }
                events
            }
            (false, Some(monitor)) => {
                let events = monitor.poll();
                self.monitor = Some(monitor);
                events
            }
            (_, None) => Vec::new(),
        };
        let mut taken = Taken::default();
        for event in events {
            match event {
                Event::Second(second) => taken.seconds.push(second),
                Event::Warning(warning) => taken.warnings.push(warning),
                Event::Silent(warning) => {
                    taken.warnings.push(warning.clone());
                    self.silent.push(warning);
                }
            }
        }
        self.warnings.extend(taken.warnings.iter().cloned());
        let mut failed = None;
        if !taken.seconds.is_empty() {
            taken.seconds.sort_by_key(|s| s.ts);
            if let Some(log) = self.log.as_mut() {
                let line = tank_monitor::log_line(&taken.seconds);
                if let Err(e) = writeln!(log, "{line}").and_then(|()| log.flush()) {
                    self.log = None;
                    failed = Some(e);
                }
            }
            for second in &taken.seconds {
                self.seconds += 1;
                self.recorder.push(second);
                match self.latest.iter_mut().find(|s| s.host == second.host) {
                    Some(slot) if slot.ts <= second.ts => *slot = second.clone(),
                    Some(_) => {}
                    None => self.latest.push(second.clone()),
                }
            }
        }
        (taken, failed)
    }

    /// What is kept once the threads are stopped.
    pub fn finish(self) -> Watched {
        Watched {
            dropped: self.monitor.as_ref().map_or(self.dropped, Monitor::dropped),
            recorder: self.recorder,
            warnings: self.warnings,
            silent: self.silent,
            seconds: self.seconds,
        }
    }
}
