//! Apiary's statistics view, beside tank's own: every `--interval` (15 s by
//! default, as Apiary), three kinds of statistic, each with how it changed
//! since the interval before.
//!
//! - **Tallies** count up: errors by kind (the server's error number for
//!   MySQL, the status for HTTP from 400 up, the net code for a failure to
//!   talk at all), sessions completed (Apiary's jobs) and requests completed.
//!   Each shows the interval's count, the run's total and the interval's rate.
//! - **Levels** go up and down: sessions running and requests running. Each
//!   shows the latest value and the min, max, median, mean and standard
//!   deviation of the values sampled in the interval, one per finished second
//!   (requests running: the most in flight in that second; sessions running:
//!   those running as the second was read).
//! - **Series** are measurements: request duration (ms). The latest value,
//!   and the min, max, median (to 3 significant digits), mean and standard
//!   deviation of the interval's.
//!
//! Tallies and series count responses as they reach the results thread (as
//! Apiary counts what its workers report), levels the seconds finished in the
//! interval. The view is fed by the run (each response, each finished second)
//! and is cheap: a histogram record and a few additions per response.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tank_stats::aggregate::SecondStats;
use tank_stats::{Measured, NetCode};

use crate::names::{http_reason, net_reason};

/// Apiary's interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);

/// What a queue's proto codes are, for telling its errors apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codes {
    /// HTTP statuses (and HTTP-shaped ones: memcached's): 400 and up are errors.
    Http,
    /// 200 or a MySQL server's error number: any other than 200 is an error.
    Mysql,
    /// None (plain TCP): only net codes tell.
    None,
}

/// A count that only grows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// What it counts.
    pub name: String,
    /// In this interval.
    pub current: u64,
    /// Over the run so far.
    pub total: u64,
    /// This interval's, per second.
    pub rate: f64,
}

/// A value that goes up and down, as sampled in the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// What it is.
    pub name: String,
    /// The latest sample.
    pub current: u64,
    /// The samples' least.
    pub min: u64,
    /// Their most.
    pub max: u64,
    /// Their median.
    pub median: f64,
    /// Their mean.
    pub mean: f64,
    /// Their standard deviation.
    pub stdev: f64,
    /// How many samples (finished seconds) the interval had.
    pub samples: u64,
}

/// Measurements of the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What is measured, with its unit.
    pub name: String,
    /// The latest value.
    pub current: f64,
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
    /// The median.
    pub median: f64,
    /// The mean.
    pub mean: f64,
    /// The standard deviation.
    pub stdev: f64,
    /// How many values.
    pub count: u64,
}

/// One interval of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// When it ended, unix seconds.
    pub end_unix_s: u64,
    /// How long it lasted, s (the last one of a run may be shorter).
    pub seconds: f64,
    /// Errors by kind, then sessions and requests completed.
    pub tallies: Vec<Tally>,
    /// Sessions and requests running.
    pub levels: Vec<Level>,
    /// Request duration.
    pub series: Vec<Series>,
}

/// The view over a whole run, for summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiaryRow {
    /// The interval, s.
    pub interval_s: f64,
    /// Every interval, in order.
    pub intervals: Vec<Interval>,
}

/// Names of what the view shows.
const SESSIONS_COMPLETED: &str = "Sessions Completed";
const REQUESTS_COMPLETED: &str = "Requests Completed";
const SESSIONS_RUNNING: &str = "Sessions Running";
const REQUESTS_RUNNING: &str = "Requests Running";
const REQUEST_DURATION: &str = "Request Duration (ms)";

/// What an interval gathers as it goes.
struct Open {
    tallies: BTreeMap<String, u64>,
    durations_us: Histogram<u64>,
    /// Exact, where the histogram keeps 3 digits.
    min_us: Option<u64>,
    max_us: u64,
    sum_ms: f64,
    sum_sq_ms: f64,
    last_ms: Option<f64>,
    requests_running: Vec<u64>,
    sessions_running: Vec<u64>,
}

/// The longest duration the series tells apart (longer ones count as it): an hour, µs.
const MAX_DURATION_US: u64 = 3_600_000_000;

impl Open {
    fn new() -> Open {
        Open {
            tallies: BTreeMap::new(),
            // 3 significant digits, the report's precision; constant bounds that are valid.
            durations_us: Histogram::new_with_bounds(1, MAX_DURATION_US, 3)
                .expect("1 µs to an hour at 3 digits is a valid histogram"),
            min_us: None,
            max_us: 0,
            sum_ms: 0.0,
            sum_sq_ms: 0.0,
            last_ms: None,
            requests_running: Vec::new(),
            sessions_running: Vec::new(),
        }
    }
}

/// The view (see the module docs).
pub struct ApiaryView {
    interval: Duration,
    codes: Vec<Codes>,
    open: Open,
    opened_at: Duration,
    totals: BTreeMap<String, u64>,
    sessions_completed: Option<u64>,
    sessions_seen: bool,
    intervals: Vec<Interval>,
}

impl ApiaryView {
    /// A view of `interval`s, the queues' proto codes read as `codes` says
    /// (by queue index), its clock starting at `now` (time since any fixed
    /// origin: the run's start).
    pub fn new(interval: Duration, codes: Vec<Codes>, now: Duration) -> ApiaryView {
        ApiaryView {
            interval: interval.max(Duration::from_secs(1)),
            codes,
            open: Open::new(),
            opened_at: now,
            totals: BTreeMap::new(),
            sessions_completed: None,
            sessions_seen: false,
            intervals: Vec::new(),
        }
    }

    /// One response, as it reaches the results thread.
    pub fn response(&mut self, measured: &Measured) {
        let open = &mut self.open;
        *open.tallies.entry(REQUESTS_COMPLETED.into()).or_default() += 1;
        let codes = self
            .codes
            .get(usize::from(measured.queue))
            .copied()
            .unwrap_or(Codes::Http);
        if let Some(kind) = error_kind(codes, measured.net_code, measured.proto_code) {
            *open.tallies.entry(kind).or_default() += 1;
        }
        let us = measured.interval_real_us;
        open.durations_us
            .saturating_record(us.clamp(1, MAX_DURATION_US));
        open.min_us = Some(open.min_us.map_or(us, |min| min.min(us)));
        open.max_us = open.max_us.max(us);
        let ms = us as f64 / 1000.0;
        open.sum_ms += ms;
        open.sum_sq_ms += ms * ms;
        open.last_ms = Some(ms);
    }

    /// A finished second, with the replay's sessions as of it (running,
    /// completed so far), when the run is a replay.
    pub fn second(&mut self, second: &SecondStats, sessions: Option<(u64, u64)>) {
        self.open.requests_running.push(second.instances);
        if let Some((running, completed)) = sessions {
            self.sessions_seen = true;
            self.open.sessions_running.push(running);
            let before = self.sessions_completed.replace(completed).unwrap_or(0);
            *self
                .open
                .tallies
                .entry(SESSIONS_COMPLETED.into())
                .or_default() += completed.saturating_sub(before);
        }
    }

    /// The clock says `now`: when an interval has passed, it is closed and
    /// returned (with the one before, for the changes).
    pub fn tick(&mut self, now: Duration, unix_s: u64) -> Option<(&Interval, Option<&Interval>)> {
        if now.saturating_sub(self.opened_at) < self.interval {
            return None;
        }
        self.close(now, unix_s);
        let (last, before) = match self.intervals.as_slice() {
            [.., before, last] => (last, Some(before)),
            [last] => (last, None),
            [] => return None,
        };
        Some((last, before))
    }

    /// The run ended at `now`: the interval open is closed when it has
    /// anything, and returned as [`Self::tick`] returns one, to be shown.
    pub fn close_last(
        &mut self,
        now: Duration,
        unix_s: u64,
    ) -> Option<(&Interval, Option<&Interval>)> {
        let partial = now.saturating_sub(self.opened_at);
        let something = !self.open.tallies.is_empty() || !self.open.requests_running.is_empty();
        if !something || partial == Duration::ZERO {
            return None;
        }
        self.close(now, unix_s);
        match self.intervals.as_slice() {
            [.., before, last] => Some((last, Some(before))),
            [last] => Some((last, None)),
            [] => None,
        }
    }

    /// The whole view (after [`Self::close_last`], with the run's end).
    pub fn finish(self) -> ApiaryRow {
        ApiaryRow {
            interval_s: self.interval.as_secs_f64(),
            intervals: self.intervals,
        }
    }

    fn close(&mut self, now: Duration, unix_s: u64) {
        let open = std::mem::replace(&mut self.open, Open::new());
        let seconds = now.saturating_sub(self.opened_at).as_secs_f64().max(1e-3);
        self.opened_at = now;
        for (name, n) in &open.tallies {
            *self.totals.entry(name.clone()).or_default() += n;
        }
        // Errors first (by name), then sessions, then requests, as Apiary lists them.
        let rank = |name: &str| match name {
            SESSIONS_COMPLETED => 1,
            REQUESTS_COMPLETED => 2,
            _ => 0,
        };
        let mut names: Vec<&String> = self.totals.keys().collect();
        names.sort_by_key(|name| (rank(name), name.as_str()));
        let mut tallies: Vec<Tally> = names
            .into_iter()
            .map(|name| {
                let current = open.tallies.get(name).copied().unwrap_or(0);
                Tally {
                    name: name.clone(),
                    current,
                    total: self.totals[name],
                    rate: current as f64 / seconds,
                }
            })
            .collect();
        if !tallies.iter().any(|t| t.name == REQUESTS_COMPLETED) {
            tallies.push(Tally {
                name: REQUESTS_COMPLETED.into(),
                current: 0,
                total: 0,
                rate: 0.0,
            });
        }
        let mut levels = Vec::new();
        if self.sessions_seen {
            levels.push(level(SESSIONS_RUNNING, &open.sessions_running));
        }
        levels.push(level(REQUESTS_RUNNING, &open.requests_running));
        let count = open.durations_us.len();
        let series = vec![Series {
            name: REQUEST_DURATION.into(),
            current: open.last_ms.unwrap_or(0.0),
            min: open.min_us.unwrap_or(0) as f64 / 1000.0,
            max: open.max_us as f64 / 1000.0,
            median: {
                let median = open.durations_us.value_at_quantile(0.5);
                open.durations_us.lowest_equivalent(median) as f64 / 1000.0
            },
            mean: mean(open.sum_ms, count),
            stdev: stdev(open.sum_ms, open.sum_sq_ms, count),
            count,
        }];
        self.intervals.push(Interval {
            end_unix_s: unix_s,
            seconds,
            tallies,
            levels,
            series,
        });
    }
}

/// The tally an error counts in, `None` for a response that is no error.
fn error_kind(codes: Codes, net: NetCode, proto: u16) -> Option<String> {
    if net != NetCode::OK {
        let reason = net_reason(net.0);
        return Some(format!("net {} ({reason})", net.0));
    }
    match codes {
        Codes::Http if proto >= 400 => {
            let reason = http_reason(proto);
            Some(if reason.is_empty() {
                format!("HTTP {proto}")
            } else {
                format!("HTTP {proto} ({reason})")
            })
        }
        Codes::Mysql if proto != 200 && proto != 0 => {
            let name = tank_mysql::errors::name(proto);
            Some(if name.is_empty() {
                format!("ERR {proto}")
            } else {
                format!("ERR {proto} ({name})")
            })
        }
        _ => None,
    }
}

fn level(name: &str, samples: &[u64]) -> Level {
    let count = samples.len() as u64;
    let sum: f64 = samples.iter().map(|&v| v as f64).sum();
    let sum_sq: f64 = samples.iter().map(|&v| (v as f64) * (v as f64)).sum();
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let median = match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    };
    Level {
        name: name.into(),
        current: samples.last().copied().unwrap_or(0),
        min: sorted.first().copied().unwrap_or(0),
        max: sorted.last().copied().unwrap_or(0),
        median,
        mean: mean(sum, count),
        stdev: stdev(sum, sum_sq, count),
        samples: count,
    }
}

fn mean(sum: f64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

/// The population standard deviation from a sum and a sum of squares.
fn stdev(sum: f64, sum_sq: f64, count: u64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let n = count as f64;
    let mean = sum / n;
    (sum_sq / n - mean * mean).max(0.0).sqrt()
}

/// The interval as Apiary prints it: a dated heading, then one line per
/// statistic, each value followed by its change since `before` when it changed.
pub fn render(interval: &Interval, before: Option<&Interval>) -> String {
    let mut out = String::new();
    // Whole seconds, as the intervals run; the run's last, cut short by its
    // end, may be under one.
    let seconds = if interval.seconds >= 1.0 {
        format!("{:.0}", interval.seconds)
    } else {
        significant(interval.seconds)
    };
    let heading = format!("{} (Apiary view, {seconds} s)", date(interval.end_unix_s));
    let _ = writeln!(out, "{heading}\n{}", "=".repeat(heading.chars().count()));
    let width = interval
        .tallies
        .iter()
        .map(|t| t.name.chars().count())
        .chain(interval.levels.iter().map(|l| l.name.chars().count()))
        .chain(interval.series.iter().map(|s| s.name.chars().count()))
        .max()
        .unwrap_or(0);
    for tally in &interval.tallies {
        let was = before.and_then(|b| b.tallies.iter().find(|t| t.name == tally.name));
        let fields = [
            (
                "current",
                count_field(tally.current, was.map(|w| w.current)),
            ),
            ("total", count_field(tally.total, was.map(|w| w.total))),
            ("rate", float_field(tally.rate, was.map(|w| w.rate))),
        ];
        line(&mut out, &tally.name, width, &fields);
    }
    for level in &interval.levels {
        if level.samples == 0 {
            let name = &level.name;
            let _ = writeln!(out, "{name:>width$}:  no second finished in this interval");
            continue;
        }
        let was = before.and_then(|b| b.levels.iter().find(|l| l.name == level.name));
        let fields = [
            (
                "current",
                count_field(level.current, was.map(|w| w.current)),
            ),
            ("min", count_field(level.min, was.map(|w| w.min))),
            ("max", count_field(level.max, was.map(|w| w.max))),
            ("median", float_field(level.median, was.map(|w| w.median))),
            ("mean", float_field(level.mean, was.map(|w| w.mean))),
            ("stdev", float_field(level.stdev, was.map(|w| w.stdev))),
        ];
        line(&mut out, &level.name, width, &fields);
    }
    for series in &interval.series {
        let was = before.and_then(|b| b.series.iter().find(|s| s.name == series.name));
        let fields = [
            (
                "current",
                float_field(series.current, was.map(|w| w.current)),
            ),
            ("min", float_field(series.min, was.map(|w| w.min))),
            ("max", float_field(series.max, was.map(|w| w.max))),
            ("median", float_field(series.median, was.map(|w| w.median))),
            ("mean", float_field(series.mean, was.map(|w| w.mean))),
            ("stdev", float_field(series.stdev, was.map(|w| w.stdev))),
        ];
        line(&mut out, &series.name, width, &fields);
    }
    out
}

fn line(out: &mut String, name: &str, width: usize, fields: &[(&str, String)]) {
    let _ = write!(out, "{name:>width$}:");
    for (label, value) in fields {
        let _ = write!(out, "  {label}: {value:<15}");
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('\n');
}

/// A count and its change (none when unchanged or new).
fn count_field(value: u64, was: Option<u64>) -> String {
    match was {
        Some(was) if was != value => {
            let change = value as i128 - was as i128;
            format!("{value} ({change:+})")
        }
        _ => value.to_string(),
    }
}

/// A measurement (3 significant digits) and its change.
fn float_field(value: f64, was: Option<f64>) -> String {
    let shown = significant(value);
    match was {
        Some(was) if significant(was) != shown => {
            let change = value - was;
            let sign = if change >= 0.0 { "+" } else { "-" };
            format!("{shown} ({sign}{})", significant(change.abs()))
        }
        _ => shown,
    }
}

/// `value` to 3 significant digits (at least one decimal below 100).
fn significant(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".into();
    }
    let digits = value.abs().log10().floor() as i32;
    let decimals = (2 - digits).clamp(0, 6) as usize;
    format!("{value:.decimals$}")
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS` UTC.
fn date(unix_s: u64) -> String {
    let at = i64::try_from(unix_s)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

#[cfg(test)]
mod tests;
