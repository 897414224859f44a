//! What a probe measured in its window, and how each shot is counted.
//!
//! One shot is one of three things, and the commands need all three apart:
//! a **good answer** (a reply with no net error and a status under 400: what
//! a sweep's throughput counts), an **answer** (any reply: what wrk counts as
//! a request, so a 404 is one), or a **socket error** (no reply at all: what
//! wrk counts as connect, read, write or timeout errors, and never as a
//! request). A refused target thus has no requests, as in wrk, rather than
//! a rate of refusals.

use hdrhistogram::Histogram;
use tank_stats::{Measured, NetCode};

/// The latency quantiles a summary keeps, percent (wrk's 50/75/90/99, then 99.9 and max).
pub const QUANTILES_PCT: [f64; 6] = [50.0, 75.0, 90.0, 99.0, 99.9, 100.0];

/// Latencies of a set of shots, ms.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySummary {
    /// At [`QUANTILES_PCT`]; all 0 for no shots.
    pub quantiles_ms: Vec<f64>,
    /// The mean.
    pub mean_ms: f64,
    /// The standard deviation.
    pub stdev_ms: f64,
    /// The share of latencies within one standard deviation of the mean, percent (wrk's `+/- Stdev`).
    pub within_stdev_pct: f64,
}

impl LatencySummary {
    /// The summary of `h` (µs).
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        LatencySummary {
            quantiles_ms: QUANTILES_PCT.iter().map(|&q| quantile_ms(h, q)).collect(),
            mean_ms: h.mean() / 1000.0,
            stdev_ms: h.stdev() / 1000.0,
            within_stdev_pct: within_stdev(h),
        }
    }

    /// The latency at `q` percent, one of [`QUANTILES_PCT`] (0 for another).
    pub fn at(&self, q: f64) -> f64 {
        QUANTILES_PCT
            .iter()
            .position(|&p| p == q)
            .and_then(|i| self.quantiles_ms.get(i))
            .copied()
            .unwrap_or_default()
    }
}

/// `h`'s value at `q` percent, ms.
pub(crate) fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q / 100.0) as f64 / 1000.0
}

/// The share of values within one standard deviation of the mean, percent.
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

/// Shots that got no reply, by the phase that failed, as wrk's `Socket errors:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SocketErrors {
    /// Never connected: refused, unreachable, a failed TLS handshake, no address.
    pub connect: u64,
    /// Connected, but the request did not go out whole (EPIPE, a reset while writing).
    pub write: u64,
    /// The request went out; the reply never came whole (a reset, a close, a broken reply: 71).
    pub read: u64,
    /// The shot's budget ran out (net code 110).
    pub timeout: u64,
}

impl SocketErrors {
    /// Counts `m` when it failed at the network level.
    ///
    /// The phase comes from the shot's timings, which the gun fills so that
    /// phases never reached end at the shot's end: a shot that spent its whole
    /// time connecting and sent nothing failed on connect; one whose request
    /// never finished going out has no time waiting for a reply (nor bytes of
    /// one) and failed on write; the rest failed on read.
    pub fn add(&mut self, m: &Measured) {
        match m.net_code {
            NetCode::OK => {}
            NetCode::TIMED_OUT => self.timeout += 1,
            _ if m.size_out == 0 && m.connect_us == m.interval_real_us => self.connect += 1,
            _ if m.size_in > 0 || m.latency_us > 0 || m.receive_us > 0 => self.read += 1,
            _ => self.write += 1,
        }
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.connect + self.write + self.read + self.timeout
    }
}

/// What a probe measured in its window.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Shots started in the window, whatever became of them (each has a phout row).
    pub responses: u64,
    /// Of them, errors: a net error, or an HTTP status of 400 and up.
    pub errors: u64,
    /// Of them, answered: a reply came (no net error), whatever its status.
    pub answered: u64,
    /// Of the answered, statuses of 400 and up (wrk's `Non-2xx or 3xx responses`).
    pub non_2xx_3xx: u64,
    /// The shots without a reply, by phase.
    pub socket_errors: SocketErrors,
    /// Open model: the shots the plan has due in the window. With drawn
    /// arrivals that is not the rate × the window, and the probe is judged
    /// against it (see [`crate::search::Probe::judge`]).
    pub planned: Option<u64>,
    /// Latency of every shot in the window (a failure counts with its time):
    /// from the intended start (lag + service time) in the open model, the
    /// service time in the closed one.
    pub latency: LatencySummary,
    /// The same, of the answered shots only (what wrk's latency is of).
    pub answered_latency: LatencySummary,
    /// Answered shots that ended in each whole second of the window, in order
    /// (wrk's `Req/Sec` samples, before dividing by the threads).
    pub answered_by_second: Vec<u64>,
    /// Bytes received by the window's shots.
    pub bytes_in: u64,
    /// The window's length, s.
    pub seconds: f64,
    /// The latency at the judged quantile ([`crate::Timing::quantile`]), ms, of every shot.
    pub quantile_ms: f64,
    /// The generator's lag behind the plan, p99, ms (0 in the closed model).
    pub lag_p99_ms: f64,
    /// Shots the plan held that were never fired, over the whole run.
    pub unsent: u64,
    /// Every instance was busy at some second: the target held them all.
    pub pool_exhausted: bool,
    /// The run's own warnings (its summary's), over the whole run.
    pub warnings: Vec<String>,
    /// The run's warnings about how it is set up, given before its first
    /// shot (an option that does nothing here, headers HTTP/2 drops, ...):
    /// the same for every probe of one target.
    pub setup_warnings: Vec<String>,
    /// A signal (Ctrl-C, SIGTERM) stopped the probe within its window:
    /// [`Self::seconds`] is the part of the window before it.
    pub interrupted: bool,
    /// The probe's artifacts directory.
    pub artifacts: std::path::PathBuf,
}

impl Measurement {
    /// Errors, percent of the window's shots.
    pub fn error_pct(&self) -> f64 {
        percent(self.errors, self.responses)
    }

    /// Shots that were neither a net error nor a status of 400 and up.
    pub fn good(&self) -> u64 {
        self.responses - self.errors.min(self.responses)
    }

    /// `count` per second of the window.
    pub fn per_second(&self, count: u64) -> f64 {
        if self.seconds > 0.0 {
            count as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// What became of the window's failed shots, in wrk's terms: `133656
    /// shots: socket errors connect 133656, read 0, write 0, timeout 0; 0
    /// non-2xx or 3xx responses`.
    pub fn failures(&self) -> String {
        let e = &self.socket_errors;
        format!(
            "{} shots: socket errors connect {}, read {}, write {}, timeout {}; {} non-2xx or 3xx responses",
            self.responses, e.connect, e.read, e.write, e.timeout, self.non_2xx_3xx
        )
    }

    /// Shots started per second of the window (each has a row): what the generator achieved.
    pub fn achieved_rps(&self) -> f64 {
        self.per_second(self.responses)
    }
}

/// `part` of `whole`, percent (0 of nothing).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A measurement of `responses` good shots at `rate`/s over 1 s, every latency `p99`-ish.
    pub(crate) fn measured(rate: f64, p99: f64) -> Measurement {
        let latency = LatencySummary {
            quantiles_ms: vec![p99 / 2.0, p99 / 1.8, p99 / 1.5, p99, p99, p99],
            mean_ms: p99 / 2.0,
            stdev_ms: 1.0,
            within_stdev_pct: 70.0,
        };
        Measurement {
            planned: None,
            responses: rate as u64,
            errors: 0,
            answered: rate as u64,
            non_2xx_3xx: 0,
            socket_errors: SocketErrors::default(),
            latency: latency.clone(),
            answered_latency: latency,
            answered_by_second: vec![rate as u64],
            quantile_ms: p99,
            bytes_in: 0,
            seconds: 1.0,
            lag_p99_ms: 0.1,
            unsent: 0,
            pool_exhausted: false,
            warnings: Vec::new(),
            setup_warnings: Vec::new(),
            interrupted: false,
            artifacts: "logs/x".into(),
        }
    }

    #[test]
    fn the_error_share_is_of_the_windows_shots() {
        let mut m = measured(10.0, 3.0);
        m.errors = 1;
        assert_eq!(m.error_pct(), 10.0);
        assert_eq!(m.good(), 9);
        assert_eq!(
            Measurement {
                responses: 0,
                errors: 0,
                ..m
            }
            .error_pct(),
            0.0
        );
    }

    /// A failed shot as the gun leaves it: phases never reached end at `end`.
    fn failed(
        net: u16,
        connected: u64,
        sent: Option<u64>,
        first: Option<u64>,
        end: u64,
    ) -> Measured {
        let sent_at = sent.unwrap_or(end).max(connected);
        let first_at = first.unwrap_or(end).max(sent_at);
        Measured {
            interval_real_us: end,
            connect_us: connected,
            send_us: sent_at - connected,
            latency_us: first_at - sent_at,
            receive_us: end - first_at,
            size_out: if sent.is_some() || connected < end {
                80
            } else {
                0
            },
            size_in: u64::from(first.is_some()) * 17,
            net_code: NetCode(net),
            ..Measured::default()
        }
    }

    #[test]
    fn socket_errors_are_split_by_the_phase_that_failed() {
        let mut errors = SocketErrors::default();
        // Refused, and unreachable: the whole shot was the connect.
        errors.add(&failed(111, 40, None, None, 40));
        errors.add(&failed(113, 900, None, None, 900));
        // A broken pipe while the request went out.
        let mut pipe = failed(32, 30, None, None, 50);
        pipe.size_out = 4096;
        errors.add(&pipe);
        // A reset while waiting for the reply, a broken reply (71), a close mid-body.
        errors.add(&failed(104, 30, Some(35), None, 300));
        errors.add(&failed(71, 0, Some(5), Some(90), 91));
        errors.add(&failed(71, 0, Some(5), Some(90), 400));
        // The budget ran out, wherever it was.
        errors.add(&failed(110, 11_000_000, None, None, 11_000_000));
        // A reply is no socket error, whatever its status.
        errors.add(&Measured {
            proto_code: 503,
            ..failed(0, 0, Some(5), Some(9), 10)
        });
        assert_eq!(
            errors,
            SocketErrors {
                connect: 2,
                write: 1,
                read: 3,
                timeout: 1
            }
        );
        assert_eq!(errors.total(), 7);
    }

    #[test]
    fn quantiles_are_looked_up_by_percent() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let s = LatencySummary::of(&h);
        assert!((s.at(75.0) - 750.0).abs() < 1.0, "{s:?}");
        assert!((s.at(100.0) - 1000.0).abs() < 1.0, "{s:?}");
        assert_eq!(s.at(42.0), 0.0);
        assert_eq!(
            LatencySummary::of(&Histogram::new(3).unwrap()).at(99.0),
            0.0
        );
    }
}
