//! One probe: a run of the target at one load, measured over its own window.
//!
//! A probe is a whole `tank_run::run` (its own artifacts: phout, summary,
//! report). Its first seconds are a warm-up (connections opening, caches
//! filling) and are left out: the [`Window`] observer takes each shot's
//! sample as it arrives and counts only those started in the window after
//! the warm-up, into histograms of its own, so the window is exact to the
//! microsecond, not to the second.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;
use tank_run::{Handle, LiveState, Notice, Observer, Started};
use tank_stats::aggregate::SecondStats;
use tank_stats::Sample;

use crate::target::{Load, Target};
use crate::LimitError;

/// What a probe measured in its window.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Shots started in the window.
    pub responses: u64,
    /// Of them, failed: a net error, or an HTTP status of 400 and up.
    pub errors: u64,
    /// Responses per second over the window.
    pub achieved_rps: f64,
    /// Open model: the shots the plan has due in the window. With drawn
    /// arrivals that is not the rate × the window, and the probe is judged
    /// against it (see [`crate::search::Probe::judge`]).
    pub planned: Option<u64>,
    /// Latency quantiles, ms, at [`QUANTILES_PCT`]: from the intended start
    /// (lag + service time) in the open model, the service time in the closed one.
    pub latency_ms: Vec<f64>,
    /// Latency mean, standard deviation and maximum, ms.
    pub mean_ms: f64,
    /// Standard deviation, ms.
    pub stdev_ms: f64,
    /// The share of latencies within one standard deviation of the mean, percent.
    pub within_stdev_pct: f64,
    /// Bytes received by the window's shots.
    pub bytes_in: u64,
    /// The window's length, s.
    pub seconds: f64,
    /// The latency at the judged quantile ([`Timing::quantile`]), ms.
    pub quantile_ms: f64,
    /// The generator's lag behind the plan, p99, ms (0 in the closed model).
    pub lag_p99_ms: f64,
    /// Shots the plan held that were never fired, over the whole run.
    pub unsent: u64,
    /// Every instance was busy at some second: the target held them all.
    pub pool_exhausted: bool,
    /// The probe's artifacts directory.
    pub artifacts: std::path::PathBuf,
}

/// The latency quantiles a measurement keeps, percent.
pub const QUANTILES_PCT: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

impl Measurement {
    /// Errors, percent of the window's responses.
    pub fn error_pct(&self) -> f64 {
        if self.responses == 0 {
            0.0
        } else {
            self.errors as f64 * 100.0 / self.responses as f64
        }
    }
}

/// How long a probe runs, and which quantile it judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Left out at the start.
    pub warmup: Duration,
    /// Measured after the warm-up.
    pub measure: Duration,
    /// The quantile a search judges, percent; kept beside [`QUANTILES_PCT`].
    pub quantile: f64,
}

/// Runs one probe of `target` at `load`, its artifacts in `dir`.
pub fn run_probe(
    target: &Target,
    load: &Load,
    timing: &Timing,
    dir: &Path,
) -> Result<Measurement, LimitError> {
    let total = timing.warmup + timing.measure;
    let load = match *load {
        Load::Open {
            rate,
            instances,
            arrivals,
            ..
        } => Load::Open {
            rate,
            duration: total,
            instances,
            arrivals,
        },
        closed @ Load::Closed { .. } => closed,
    };
    let open = matches!(load, Load::Open { .. });
    let spec = target.spec(&load, dir)?;
    let planned = if open {
        planned_in_window(&spec, timing)
    } else {
        None
    };
    let pool = match load {
        Load::Open { instances, .. } => u64::from(instances),
        Load::Closed { concurrency } => u64::from(concurrency),
    };
    let handle = Handle::default();
    // A closed model has no end of its own: the window stops it when its time is up.
    let stop = (!open).then(|| (handle.clone(), total));
    let window = Window::new(timing, open, pool, stop);
    let shared = Arc::clone(&window.shared);
    let outcome = tank_run::run(&spec, Box::new(window), &handle);
    let outcome = outcome?;
    let errors = outcome.queue_errors();
    if !errors.is_empty() {
        return Err(LimitError::Target(errors.join("; ")));
    }
    let stats = shared.lock().unwrap_or_else(PoisonError::into_inner);
    let seconds = timing.measure.as_secs_f64();
    let latency = if open {
        &stats.intended
    } else {
        &stats.service
    };
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q / 100.0) as f64 / 1000.0;
    Ok(Measurement {
        responses: stats.responses,
        errors: stats.errors,
        achieved_rps: stats.responses as f64 / seconds,
        planned,
        latency_ms: QUANTILES_PCT.iter().map(|&q| ms(latency, q)).collect(),
        quantile_ms: ms(latency, timing.quantile),
        mean_ms: latency.mean() / 1000.0,
        stdev_ms: latency.stdev() / 1000.0,
        within_stdev_pct: within_stdev(latency),
        bytes_in: stats.bytes_in,
        seconds,
        lag_p99_ms: if open { ms(&stats.lag, 99.0) } else { 0.0 },
        unsent: if open {
            outcome.summary.shots.unsent.unwrap_or(0)
        } else {
            0
        },
        pool_exhausted: stats.pool_exhausted,
        artifacts: outcome.artifacts,
    })
}

/// The shots `spec`'s plan has due from `timing`'s warm-up to the end of its
/// measurement, in closed form (`None` when the plan cannot say).
fn planned_in_window(spec: &tank_run::Spec, timing: &Timing) -> Option<u64> {
    let plan = tank_plan::Plan::new(spec.config.queues.first()?).ok()?;
    let from = i64::try_from(timing.warmup.as_millis()).ok()?;
    let to = from.checked_add(i64::try_from(timing.measure.as_millis()).ok()?)?;
    Some(plan.planned_count()?.between_ms(from, to))
}

/// The window's counts and histograms (µs).
#[derive(Debug)]
struct Stats {
    responses: u64,
    errors: u64,
    bytes_in: u64,
    service: Histogram<u64>,
    intended: Histogram<u64>,
    lag: Histogram<u64>,
    pool_exhausted: bool,
}

/// Counts the shots started in `[start + warmup, start + warmup + measure)`.
struct Window {
    warmup_us: u64,
    measure_us: u64,
    /// Judge by the intended start (open model) or the actual one (closed).
    open: bool,
    pool: u64,
    from_us: u64,
    to_us: u64,
    shared: Arc<Mutex<Stats>>,
    /// The closed model's stop: this handle, this long after the start.
    stop: Option<(Handle, Duration)>,
}

impl Window {
    fn new(timing: &Timing, open: bool, pool: u64, stop: Option<(Handle, Duration)>) -> Window {
        let histogram = || {
            // 3 significant digits is within hdrhistogram's limits: this cannot fail.
            let mut h = Histogram::new(3).expect("3 significant digits is valid");
            h.auto(true);
            h
        };
        Window {
            warmup_us: timing.warmup.as_micros() as u64,
            measure_us: timing.measure.as_micros() as u64,
            open,
            pool,
            from_us: u64::MAX,
            to_us: u64::MAX,
            shared: Arc::new(Mutex::new(Stats {
                responses: 0,
                errors: 0,
                bytes_in: 0,
                service: histogram(),
                intended: histogram(),
                lag: histogram(),
                pool_exhausted: false,
            })),
            stop,
        }
    }
}

impl Observer for Window {
    fn started(&mut self, started: &Started<'_>) {
        self.from_us = started.start_unix_us + self.warmup_us;
        self.to_us = self.from_us + self.measure_us;
        if let Some((handle, after)) = self.stop.take() {
            let until = Duration::from_micros(self.to_us.saturating_sub(unix_us())).min(after);
            // If the thread cannot start, the run goes on until Ctrl-C: say so rather than hang.
            if std::thread::Builder::new()
                .name("probe-stop".into())
                .spawn(move || {
                    std::thread::sleep(until);
                    handle.stop();
                })
                .is_err()
            {
                eprintln!(
                    "tank: cannot start the thread that ends this probe; stop it with Ctrl-C"
                );
            }
        }
    }

    fn sample(&mut self, sample: &Sample) {
        let at = if self.open {
            sample.start_unix_us.saturating_sub(sample.lag_us)
        } else {
            sample.start_unix_us
        };
        if at < self.from_us || at >= self.to_us {
            return;
        }
        let m = &sample.measured;
        let mut stats = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        stats.responses += 1;
        stats.bytes_in += m.size_in;
        if m.net_code.0 != 0 || m.proto_code >= 400 {
            stats.errors += 1;
        }
        // With auto-resize on, recording only fails past u64's range: clamp instead.
        let _ = stats.service.record(m.interval_real_us);
        let _ = stats
            .intended
            .record(m.interval_real_us.saturating_add(sample.lag_us));
        let _ = stats.lag.record(sample.lag_us);
    }

    fn seconds(&mut self, seconds: &[SecondStats], _: &LiveState<'_>) {
        let from_s = self.from_us / 1_000_000;
        let to_s = self.to_us / 1_000_000;
        if seconds
            .iter()
            .any(|s| s.ts >= from_s && s.ts <= to_s && s.instances >= self.pool)
        {
            self.shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pool_exhausted = true;
        }
    }

    fn notice(&mut self, _: &Notice<'_>) {}
}

/// The share of values within one standard deviation of the mean, percent (wrk's `+/- Stdev`).
fn within_stdev(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let (mean, sd) = (h.mean(), h.stdev());
    let low = (mean - sd).max(0.0) as u64;
    let high = (mean + sd) as u64;
    let within: u64 = h
        .iter_recorded()
        .filter(|v| (low..=high).contains(&v.value_iterated_to()))
        .map(|v| v.count_at_value())
        .sum();
    within as f64 * 100.0 / h.len() as f64
}

/// Now, µs since the Unix epoch.
fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_share_is_of_the_windows_responses() {
        let m = Measurement {
            planned: None,
            responses: 10,
            errors: 1,
            achieved_rps: 5.0,
            latency_ms: vec![1.0, 2.0, 3.0, 4.0, 5.0],
            quantile_ms: 3.0,
            mean_ms: 2.0,
            stdev_ms: 1.0,
            within_stdev_pct: 70.0,
            bytes_in: 100,
            seconds: 2.0,
            lag_p99_ms: 0.0,
            unsent: 0,
            pool_exhausted: false,
            artifacts: "x".into(),
        };
        assert_eq!(m.error_pct(), 10.0);
        assert_eq!(Measurement { responses: 0, ..m }.error_pct(), 0.0);
    }
}
