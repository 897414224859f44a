//! One host's collection thread: every `interval`, on the wall clock's
//! boundaries, take a [`Reading`] from each of the host's sources, derive the
//! interval's metrics from the previous one, and hand them over.
//!
//! Each source (the system metrics, each `<Prometheus>` endpoint, each
//! `<Custom>` command, the processes) fails on its own: the first failure is a
//! warning, its metrics are missing (a gap) until it answers again, and the
//! recovery is noted. Every request has a deadline shorter than the interval,
//! and the hand-over never blocks (see [`crate::Monitor`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tank_config::{HostSource, MonitoredHost};

use crate::http;
use crate::reading::{derive, Reading};
use crate::{custom, node, procfs, prom, Event, HostSecond};

/// The largest page a scrape reads.
const MAX_PAGE: usize = 32 << 20;
/// How often a waiting thread looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(50);
/// The shortest span a row covers: at 100 ticks a second, 10 per core.
const MIN_SPAN: Duration = Duration::from_millis(100);

/// What a host thread owns.
pub(crate) struct Task {
    pub host: MonitoredHost,
    pub events: SyncSender<Event>,
    pub stop: Arc<AtomicBool>,
    pub dropped: Arc<AtomicU64>,
    /// The thread's HTTP client (scrapes).
    pub client: http::Client,
}

/// One of a host's sources, with whether it is failing now.
struct Part {
    name: String,
    failing: bool,
    /// Whether it answered at least once.
    answered: bool,
    /// Why it failed first, if it did.
    first_error: Option<String>,
}

impl Part {
    fn new(name: String) -> Part {
        Part {
            name,
            failing: false,
            answered: false,
            first_error: None,
        }
    }
}

impl Task {
    fn send(&self, event: Event) {
        match self.events.try_send(event) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends the row of the span from `opened` (a reading and its second) to `now`.
    fn emit(&self, opened: Option<(Reading, u64)>, now: &Reading) {
        let Some((before, ts)) = opened else {
            return;
        };
        let metrics = derive(&before, now, self.host.groups.percpu);
        if !metrics.is_empty() {
            self.send(Event::Second(HostSecond {
                ts,
                host: self.host.address.clone(),
                comment: self.host.comment.clone(),
                metrics,
            }));
        }
    }

    /// Notes a part's outcome; warns on its first failure and on its recovery.
    fn outcome(&self, part: &mut Part, result: Result<(), String>) {
        let address = &self.host.address;
        part.answered |= result.is_ok();
        if let Err(e) = &result {
            part.first_error.get_or_insert_with(|| e.clone());
        }
        match result {
            Ok(()) if part.failing => {
                part.failing = false;
                self.send(Event::Warning(format!(
                    "monitoring {address}: {} answers again",
                    part.name
                )));
            }
            Ok(()) => {}
            Err(e) if !part.failing => {
                part.failing = true;
                self.send(Event::Warning(format!(
                    "monitoring {address}: {}: {e}; its metrics have a gap until it answers",
                    part.name
                )));
            }
            Err(_) => {}
        }
    }

    /// At the end: a source that failed every time it was asked is more than
    /// a gap, so it is said once more, for the run's warnings.
    fn report_silent(&self, parts: &[Part]) {
        for part in parts.iter().filter(|p| !p.answered) {
            if let Some(error) = &part.first_error {
                self.send(Event::Silent(format!(
                    "monitoring {}: {} never answered during the run ({error}): \
                     its metrics are missing from monitoring.log and the reports",
                    self.host.address, part.name
                )));
            }
        }
    }
}

/// The thread's body.
pub(crate) fn run(task: Task) {
    let host = &task.host;
    let interval = Duration::from_millis(host.interval_ms);
    // A request may take most of an interval, never more than 2 s.
    let timeout = (interval * 4 / 5).clamp(Duration::from_millis(100), Duration::from_secs(2));
    let min_span = (interval / 2).min(MIN_SPAN);
    let mut parts = parts(host);
    // The row of the second the monitor starts in opens now and closes at the
    // first boundary at least `min_span` away: a span of a few ms holds no CPU
    // tick, so a row that short would have no CPU at all. When the start falls
    // just before a boundary, this row overlaps the next one.
    let mut first = collect(&task, &mut parts, timeout).map(|r| (r, unix_now().as_secs()));
    let mut previous: Option<(Reading, u64)> = None;
    loop {
        let stopping = !wait_for_boundary(&task.stop, interval);
        if stopping {
            // The last row is cut by the stop: give it `min_span` too.
            let opened = previous.as_ref().or(first.as_ref()).map(|(r, _)| r.at);
            if let Some(opened) = opened {
                std::thread::sleep(min_span.saturating_sub(opened.elapsed()));
            }
        }
        let ts = unix_now().as_secs();
        let reading = collect(&task, &mut parts, timeout);
        if let Some(now) = &reading {
            let long_enough = |(before, _): &(Reading, u64)| {
                stopping || now.at.saturating_duration_since(before.at) >= min_span
            };
            if first.as_ref().is_some_and(long_enough) {
                task.emit(first.take(), now);
            }
            task.emit(previous.take(), now);
        }
        previous = reading.map(|r| (r, ts));
        if stopping {
            task.report_silent(&parts);
            return;
        }
    }
}

fn parts(host: &MonitoredHost) -> Vec<Part> {
    let mut parts = vec![Part::new(match &host.source {
        HostSource::NodeExporter { url } => url.clone(),
        HostSource::Local => "/proc".into(),
        HostSource::None => "system metrics".into(),
    })];
    parts.extend(host.prometheus.iter().map(|p| Part::new(p.url.clone())));
    parts.extend(
        host.custom
            .iter()
            .map(|c| Part::new(format!("<Custom label=\"{}\">", c.label))),
    );
    parts.push(Part::new("<Process>".into()));
    parts
}

/// One reading from every part; `None` when none of them answered.
fn collect(task: &Task, parts: &mut [Part], timeout: Duration) -> Option<Reading> {
    let host = &task.host;
    let mut reading = Reading::new(Instant::now());
    let mut any = false;
    let mut note = |part: &mut Part, result: Result<(), String>| {
        any |= result.is_ok();
        task.outcome(part, result);
    };
    let (system, rest) = parts.split_first_mut()?;
    let result = match &host.source {
        HostSource::NodeExporter { url } => scrape(&task.client, url, timeout).and_then(|text| {
            let page = prom::parse(&text).map_err(|e| format!("not a metrics page: {e}"))?;
            node::read(&page, &host.groups, &mut reading);
            Ok(())
        }),
        HostSource::Local => procfs::machine(&host.groups, &mut reading),
        HostSource::None => Ok(()),
    };
    note(system, result);
    let (endpoints, rest) = rest.split_at_mut(host.prometheus.len());
    for (scrape_config, part) in host.prometheus.iter().zip(endpoints) {
        let result = scrape(&task.client, &scrape_config.url, timeout).and_then(|text| {
            let page = prom::parse(&text).map_err(|e| format!("not a metrics page: {e}"))?;
            for name in &scrape_config.metrics {
                let total: f64 = page
                    .samples
                    .iter()
                    .filter(|s| s.name == name)
                    .map(|s| s.value)
                    .sum();
                if page.is_counter(name) {
                    reading.counter(format!("custom:{name}"), total);
                } else {
                    reading.gauge(format!("custom:{name}"), total);
                }
            }
            Ok(())
        });
        note(part, result);
    }
    let (commands, rest) = rest.split_at_mut(host.custom.len());
    for (command, part) in host.custom.iter().zip(commands) {
        note(part, custom::run(command, timeout, &mut reading));
    }
    if let Some(part) = rest.first_mut() {
        if !host.processes.is_empty() {
            note(part, procfs::processes(&host.processes, &mut reading));
        }
    }
    any.then_some(reading)
}

fn scrape(client: &http::Client, url: &str, timeout: Duration) -> Result<String, String> {
    let url = http::http_url(url)?;
    let response = client.get(&url, timeout, MAX_PAGE)?;
    if response.status != 200 {
        return Err(format!("HTTP {}", response.status));
    }
    String::from_utf8(response.body).map_err(|_| "the page is not UTF-8 text".into())
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Sleeps until the wall clock reaches the next multiple of `interval`; false
/// when `stop` was set meanwhile (then it returns at once).
fn wait_for_boundary(stop: &AtomicBool, interval: Duration) -> bool {
    let period = interval.as_millis().max(1) as u64;
    let now_ms = unix_now().as_millis() as u64;
    let next = (now_ms / period + 1) * period;
    let deadline = Instant::now() + Duration::from_millis(next - now_ms);
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(STOP_CHECK));
    }
}
