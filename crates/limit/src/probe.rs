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
use tank_stats::{NetCode, Sample};

use crate::interrupt::{unix_us, Interrupt};
use crate::measure::{quantile_ms, LatencySummary, Measurement, SocketErrors};
use crate::target::{Load, Target};
use crate::LimitError;

/// How long a probe runs, and which quantile it judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Left out at the start.
    pub warmup: Duration,
    /// Measured after the warm-up.
    pub measure: Duration,
    /// The quantile a search judges, percent.
    pub quantile: f64,
}

/// Runs one probe of `target` at `load`, its artifacts in `dir`.
pub fn run_probe(
    target: &Target,
    load: &Load,
    timing: &Timing,
    dir: &Path,
) -> Result<Measurement, LimitError> {
    run_probe_shown(
        target,
        load,
        timing,
        dir,
        &|window| window,
        &Interrupt::default(),
    )
}

/// [`run_probe`], the run also shown by the observer `show` makes around the
/// probe's own (a live dashboard, say), and stopped by `interrupt`'s signals:
/// a probe stopped early is measured over the part of its window before the
/// first signal ([`Measurement::interrupted`]).
pub fn run_probe_shown(
    target: &Target,
    load: &Load,
    timing: &Timing,
    dir: &Path,
    show: &dyn Fn(Box<dyn tank_run::Observer>) -> Box<dyn tank_run::Observer>,
    interrupt: &Interrupt,
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
    let pool = match load {
        Load::Open { instances, .. } => u64::from(instances),
        Load::Closed { concurrency } => u64::from(concurrency),
    };
    let handle = Handle::default();
    // A closed model has no end of its own: the window stops it when its time is up.
    let stop = (!open).then(|| (handle.clone(), total));
    let window = Window::new(timing, open, pool, stop);
    let shared = Arc::clone(&window.shared);
    interrupt.attach(&handle);
    let outcome = tank_run::run(&spec, show(Box::new(window)), &handle);
    interrupt.detach();
    let outcome = outcome?;
    let errors = outcome.queue_errors();
    if !errors.is_empty() {
        return Err(LimitError::Target(errors.join("; ")));
    }
    let mut stats = shared.lock().unwrap_or_else(PoisonError::into_inner);
    // Stopped by a signal within the window: measured up to it (a shot started
    // before it still finished and counts), rates over that part only.
    let measured = match (interrupt.first_us(), stats.from_us) {
        (Some(signal), Some(from)) if signal < from + timing.measure.as_micros() as u64 => {
            Duration::from_micros(signal.saturating_sub(from))
        }
        _ => timing.measure,
    };
    let interrupted = measured < timing.measure;
    stats
        .answered_by_second
        .truncate(measured.as_secs() as usize);
    let planned = if open {
        planned_in_window(
            &spec,
            &Timing {
                measure: measured,
                ..*timing
            },
        )
    } else {
        None
    };
    let seconds = measured.as_secs_f64();
    Ok(Measurement {
        responses: stats.responses,
        errors: stats.errors,
        answered: stats.answered,
        non_2xx_3xx: stats.non_2xx_3xx,
        socket_errors: stats.socket_errors,
        planned,
        latency: LatencySummary::of(&stats.latency),
        answered_latency: LatencySummary::of(&stats.answered_latency),
        answered_by_second: stats.answered_by_second.clone(),
        quantile_ms: quantile_ms(&stats.latency, timing.quantile),
        bytes_in: stats.bytes_in,
        seconds,
        lag_p99_ms: if open {
            quantile_ms(&stats.lag, 99.0)
        } else {
            0.0
        },
        unsent: if open {
            outcome.summary.shots.unsent.unwrap_or(0)
        } else {
            0
        },
        pool_exhausted: stats.pool_exhausted,
        warnings: outcome.summary.warnings.clone(),
        setup_warnings: std::mem::take(&mut stats.setup_warnings),
        interrupted,
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
    answered: u64,
    non_2xx_3xx: u64,
    socket_errors: SocketErrors,
    bytes_in: u64,
    /// Every shot's latency: from the intended start (open model) or the actual one (closed).
    latency: Histogram<u64>,
    /// The answered shots' latency, likewise.
    answered_latency: Histogram<u64>,
    lag: Histogram<u64>,
    /// Answered shots by the whole second of the window they ended in.
    answered_by_second: Vec<u64>,
    pool_exhausted: bool,
    /// Where the window starts, µs since the Unix epoch, once the run started.
    from_us: Option<u64>,
    /// The run's warnings about how it is set up, each once, as given.
    setup_warnings: Vec<String>,
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
                answered: 0,
                non_2xx_3xx: 0,
                socket_errors: SocketErrors::default(),
                bytes_in: 0,
                latency: histogram(),
                answered_latency: histogram(),
                lag: histogram(),
                // Whole seconds only: a partial last one would read as a slow second.
                answered_by_second: vec![0; timing.measure.as_secs() as usize],
                pool_exhausted: false,
                from_us: None,
                setup_warnings: Vec::new(),
            })),
            stop,
        }
    }
}

impl Observer for Window {
    fn started(&mut self, started: &Started<'_>) {
        self.from_us = started.start_unix_us + self.warmup_us;
        self.to_us = self.from_us + self.measure_us;
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .from_us = Some(self.from_us);
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
        if m.net_code != NetCode::OK || m.proto_code >= 400 {
            stats.errors += 1;
        }
        stats.socket_errors.add(m);
        // With auto-resize on, recording only fails past u64's range: clamp instead.
        let latency = if self.open {
            m.interval_real_us.saturating_add(sample.lag_us)
        } else {
            m.interval_real_us
        };
        let _ = stats.latency.record(latency);
        let _ = stats.lag.record(sample.lag_us);
        if m.net_code == NetCode::OK {
            stats.answered += 1;
            if m.proto_code >= 400 {
                stats.non_2xx_3xx += 1;
            }
            let _ = stats.answered_latency.record(latency);
            let end_us = sample.start_unix_us.saturating_add(m.interval_real_us);
            let second = end_us.saturating_sub(self.from_us) / 1_000_000;
            if let Some(count) = usize::try_from(second)
                .ok()
                .and_then(|s| stats.answered_by_second.get_mut(s))
            {
                *count += 1;
            }
        }
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

    fn notice(&mut self, notice: &Notice<'_>) {
        // Kept for the command to show: the probe itself prints nothing.
        if let Notice::Warning(text) = notice {
            let mut stats = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            if !stats.setup_warnings.iter().any(|w| w == text) {
                stats.setup_warnings.push((*text).to_owned());
            }
        }
    }
}
