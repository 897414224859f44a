//! Reading one criterion, `name(param, param, ...)`, with yandex-tank's syntax.
//!
//! The name is case-insensitive; the parameters are the text up to the first `)`, split on
//! `,` and trimmed. Times are groups of `<digits><unit>` (`ms s m h d w`, no fractions);
//! a bare number is ms for response times and s for durations, and results are truncated
//! to whole units (`1500ms` as a duration is 1 s), as the reference does. Code masks are
//! digits and `x` (any digit) and match a code of the same length. Levels are a count or a
//! percentage (`10%`). The reference reads some malformed values silently (`1.5s` as `1` and
//! `5s`); tank rejects them with an error that names the criterion and what was expected.

use std::fmt;

use crate::quantile::{percent, QUANTILES};

/// A parsed criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// The criterion as written (it goes into the autostop report).
    pub text: String,
    /// What it checks.
    pub kind: Kind,
    /// Look only at this tag's responses (`None`: all responses).
    pub tag: Option<String>,
}

/// A level: an absolute count, or a percentage of the responses (or of the instance limit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// At least / more than this many.
    Count(u64),
    /// This percentage, as written (`10%` is `10.0`).
    Percent(f64),
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Count(n) => write!(f, "{n}"),
            Level::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// A code mask like `5xx`, `404` or `2x0`: digits, with `x` for any digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeMask(String);

impl CodeMask {
    /// Does `code`, written in decimal, match the mask (same length, digit by digit)?
    pub fn matches(&self, code: u16) -> bool {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(code).as_bytes();
        digits.len() == self.0.len()
            && digits
                .iter()
                .zip(self.0.bytes())
                .all(|(d, m)| m == b'x' || m == *d)
    }
}

impl fmt::Display for CodeMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a criterion checks (see docs/reference.md, section 7).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `time(rt, dur)`: average response time above `rt_ms` for `dur_s` seconds in a row.
    Time {
        /// Response-time threshold, ms.
        rt_ms: u64,
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `http(mask, level, dur)`: matching HTTP codes at or above `level` for `dur_s` seconds in a row.
    Http {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `net(mask, level, dur)`: as `http` on net codes other than 0.
    Net {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `quantile(q, rt, dur)`: the per-second quantile above `rt_ms` for `dur_s` seconds in a row.
    Quantile {
        /// The quantile in per mille (990 is the 99th percentile).
        per_mille: u16,
        /// Response-time threshold, ms.
        rt_ms: u64,
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `limit(dur)`: the run has lasted longer than `dur_s`.
    Limit {
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `instances(level, dur)`: active instances above `level` for `dur_s` seconds in a row.
    Instances {
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `total_time(rt, ratio%, window)`: the share of responses slower than `rt_ms` over the
    /// last `window_s` seconds reaches `ratio` (a fraction).
    TotalTime {
        /// Response-time threshold, ms.
        rt_ms: u64,
        /// The share, from 0 to 1.
        ratio: f64,
        /// The window, s.
        window_s: u64,
    },
    /// `total_http(mask, level, window)`: matching HTTP codes over the window reach `level`.
    TotalHttp {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// The window, s.
        window_s: u64,
    },
    /// `total_net(mask, level, window)`: as `total_http` on net codes other than 0.
    TotalNet {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// The window, s.
        window_s: u64,
    },
    /// `negative_http(mask, level, window)`: HTTP codes NOT matching reach `level` over the window.
    NegativeHttp {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// The window, s.
        window_s: u64,
    },
    /// `negative_net(mask, level, window)`: responses without a matching net code reach `level`.
    NegativeNet {
        /// Which codes count.
        mask: CodeMask,
        /// How many: a count, or a share of the second's responses.
        level: Level,
        /// The window, s.
        window_s: u64,
    },
    /// `http_trend(mask, window)`: the count of matching codes is falling over the window.
    HttpTrend {
        /// Which codes count.
        mask: CodeMask,
        /// The window, s.
        window_s: u64,
    },
    /// `steady_cumulative(dur)`: the cumulative quantiles have not moved for `dur_s` seconds.
    SteadyCumulative {
        /// Seconds in a row it must hold (for `limit`: the run's length), s.
        dur_s: u64,
    },
    /// `metric_higher(host, metric, value, dur)`: a monitoring metric above `limit`
    /// for `dur_s` monitoring seconds in a row.
    MetricHigher(MetricLimit),
    /// `metric_lower(host, metric, value, dur)`: a monitoring metric below `limit`.
    MetricLower(MetricLimit),
}

/// The parameters of `metric_higher` / `metric_lower`, as yandex-tank reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricLimit {
    /// The host, a shell pattern (`*`, `?`) matched against monitored host names.
    pub host: String,
    /// The metric (`custom:` may be left out, as in yandex-tank).
    pub metric: String,
    /// The limit.
    pub limit: f64,
    /// Monitoring seconds in a row it must hold, s.
    pub dur_s: u64,
}

/// A criterion that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("autostop criterion `{criterion}`: {problem}")]
pub struct CriterionError {
    /// The criterion as written.
    pub criterion: String,
    /// What was wrong and what was expected.
    pub problem: String,
}

/// The names tank knows, for error messages.
const NAMES: &str = "time, http, net, quantile, limit, instances, total_time, total_http, \
                     total_net, negative_http, negative_net, http_trend, steady_cumulative, \
                     metric_higher, metric_lower";

/// Read one criterion.
pub fn parse(text: &str) -> Result<Criterion, CriterionError> {
    let fail = |problem: String| CriterionError {
        criterion: text.to_string(),
        problem,
    };
    let Some((name, rest)) = text.split_once('(') else {
        return Err(fail(
            "expected `name(parameters)`, e.g. `http(5xx,10%,3s)`".into(),
        ));
    };
    let Some((inside, _)) = rest.split_once(')') else {
        return Err(fail("missing `)` after the parameters".into()));
    };
    let name = name.trim().to_ascii_lowercase();
    let params: Vec<&str> = inside.split(',').map(str::trim).collect();
    let usage = usage(&name)
        .ok_or_else(|| fail(format!("unknown criterion `{name}`; tank knows {NAMES}")))?;
    let (required, optional_tag) = usage.1;
    let count_ok = params.len() == required || (optional_tag && params.len() == required + 1);
    if !count_ok {
        return Err(fail(format!(
            "expected {}, found {} parameter(s)",
            usage.0,
            params.len()
        )));
    }
    let tag = (optional_tag && params.len() == required + 1).then(|| params[required].to_string());
    let at = |i: usize, what: &str, value: Result<u64, String>| {
        value.map_err(|problem| {
            fail(format!(
                "parameter {} ({what}): {problem}; expected {}",
                i + 1,
                usage.0
            ))
        })
    };
    let ms = |i: usize, what: &str| at(i, what, time_ms(params[i]));
    let secs = |i: usize, what: &str| at(i, what, seconds(params[i]));
    let level = |i: usize| {
        parse_level(params[i]).map_err(|problem| {
            fail(format!(
                "parameter {} (level): {problem}; expected {}",
                i + 1,
                usage.0
            ))
        })
    };
    let mask = |i: usize| {
        parse_mask(params[i]).map_err(|problem| {
            fail(format!(
                "parameter {} (code mask): {problem}; expected {}",
                i + 1,
                usage.0
            ))
        })
    };
    let kind = match name.as_str() {
        "time" => Kind::Time {
            rt_ms: ms(0, "response time")?,
            dur_s: secs(1, "duration")?,
        },
        "http" => Kind::Http {
            mask: mask(0)?,
            level: level(1)?,
            dur_s: secs(2, "duration")?,
        },
        "net" => Kind::Net {
            mask: mask(0)?,
            level: level(1)?,
            dur_s: secs(2, "duration")?,
        },
        "quantile" => {
            let per_mille = parse_quantile(params[0]).ok_or_else(|| {
                let known: Vec<String> =
                    QUANTILES.iter().map(|q| percent(*q).to_string()).collect();
                fail(format!(
                    "parameter 1 (quantile): `{}` is not one of {}",
                    params[0],
                    known.join(", ")
                ))
            })?;
            Kind::Quantile {
                per_mille,
                rt_ms: ms(1, "response time")?,
                dur_s: secs(2, "duration")?,
            }
        }
        "limit" => Kind::Limit {
            dur_s: secs(0, "duration")?,
        },
        "instances" => Kind::Instances {
            level: level(0)?,
            dur_s: secs(1, "duration")?,
        },
        "total_time" => {
            let ratio = match parse_level(params[1]) {
                Ok(Level::Percent(p)) => p / 100.0,
                _ => {
                    return Err(fail(format!(
                        "parameter 2 (ratio): `{}` is not a percentage like 70%",
                        params[1]
                    )))
                }
            };
            Kind::TotalTime {
                rt_ms: ms(0, "response time")?,
                ratio,
                window_s: secs(2, "window")?,
            }
        }
        "total_http" => Kind::TotalHttp {
            mask: mask(0)?,
            level: level(1)?,
            window_s: secs(2, "window")?,
        },
        "total_net" => Kind::TotalNet {
            mask: mask(0)?,
            level: level(1)?,
            window_s: secs(2, "window")?,
        },
        "negative_http" => Kind::NegativeHttp {
            mask: mask(0)?,
            level: level(1)?,
            window_s: secs(2, "window")?,
        },
        "negative_net" => Kind::NegativeNet {
            mask: mask(0)?,
            level: level(1)?,
            window_s: secs(2, "window")?,
        },
        "http_trend" => Kind::HttpTrend {
            mask: mask(0)?,
            window_s: secs(1, "window")?,
        },
        "steady_cumulative" => Kind::SteadyCumulative {
            dur_s: secs(0, "duration")?,
        },
        "metric_higher" | "metric_lower" => {
            if params[0].is_empty() || params[1].is_empty() {
                return Err(fail(format!(
                    "the host and the metric must not be empty; expected {}",
                    usage.0
                )));
            }
            let limit = params[2]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    fail(format!(
                        "parameter 3 (value): expected a number, found `{}`; expected {}",
                        params[2], usage.0
                    ))
                })?;
            let limit = MetricLimit {
                host: params[0].to_string(),
                metric: params[1].to_string(),
                limit,
                dur_s: secs(3, "duration")?,
            };
            if name == "metric_higher" {
                Kind::MetricHigher(limit)
            } else {
                Kind::MetricLower(limit)
            }
        }
        _ => unreachable!("usage() knows exactly these names"),
    };
    Ok(Criterion {
        text: text.trim().to_string(),
        kind,
        tag,
    })
}

/// (How to write it, (required parameters, whether a tag may follow)).
fn usage(name: &str) -> Option<(&'static str, (usize, bool))> {
    Some(match name {
        "time" => (
            "time(RESPONSE_TIME, DURATION[, TAG]), e.g. time(1s,10s)",
            (2, true),
        ),
        "http" => (
            "http(MASK, LEVEL, DURATION[, TAG]), e.g. http(5xx,10%,3s)",
            (3, true),
        ),
        "net" => (
            "net(MASK, LEVEL, DURATION[, TAG]), e.g. net(xx,5,3s)",
            (3, true),
        ),
        "quantile" => (
            "quantile(Q, RESPONSE_TIME, DURATION[, TAG]), e.g. quantile(95,500ms,5s)",
            (3, true),
        ),
        "limit" => ("limit(DURATION), e.g. limit(10m)", (1, false)),
        "instances" => (
            "instances(LEVEL, DURATION), e.g. instances(80%,10s)",
            (2, false),
        ),
        "total_time" => (
            "total_time(RESPONSE_TIME, RATIO%, WINDOW[, TAG]), e.g. total_time(300ms,70%,3s)",
            (3, true),
        ),
        "total_http" => (
            "total_http(MASK, LEVEL, WINDOW[, TAG]), e.g. total_http(5xx,10%,10s)",
            (3, true),
        ),
        "total_net" => (
            "total_net(MASK, LEVEL, WINDOW[, TAG]), e.g. total_net(1xx,10%,10s)",
            (3, true),
        ),
        "negative_http" => (
            "negative_http(MASK, LEVEL, WINDOW[, TAG]), e.g. negative_http(2xx,10%,10s)",
            (3, true),
        ),
        "negative_net" => (
            "negative_net(MASK, LEVEL, WINDOW[, TAG]), e.g. negative_net(0,10%,10s)",
            (3, true),
        ),
        "http_trend" => (
            "http_trend(MASK, WINDOW[, TAG]), e.g. http_trend(2xx,10s)",
            (2, true),
        ),
        "steady_cumulative" => (
            "steady_cumulative(DURATION), e.g. steady_cumulative(30s)",
            (1, false),
        ),
        "metric_higher" => (
            "metric_higher(HOST, METRIC, VALUE, DURATION), e.g. \
             metric_higher(localhost, cpu-cpu-total_usage_user, 90, 10s)",
            (4, false),
        ),
        "metric_lower" => (
            "metric_lower(HOST, METRIC, VALUE, DURATION), e.g. \
             metric_lower(db*, Memory_free, 1e9, 30s)",
            (4, false),
        ),
        _ => return None,
    })
}

/// A time in ms; a bare number is ms.
fn time_ms(text: &str) -> Result<u64, String> {
    expand(text, "ms")
}

/// A duration in whole seconds (truncated); a bare number is seconds.
fn seconds(text: &str) -> Result<u64, String> {
    expand(text, "s").map(|ms| ms / 1000)
}

/// `1m30s` → ms. Groups of digits and a unit (ms s m h d w, any case); `default` for none.
fn expand(text: &str, default: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("`{text}` {why}; expected a time like 500ms, 10s, 1m30s");
    let mut rest = text.as_bytes();
    if rest.is_empty() {
        return Err(bad("is empty"));
    }
    let mut total = 0u64;
    while !rest.is_empty() {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(bad("is not a time"));
        }
        let letters = rest[digits..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        let value: u64 = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| bad("is too large"))?;
        let unit = String::from_utf8_lossy(&rest[digits..digits + letters]).to_ascii_lowercase();
        let unit = if unit.is_empty() {
            default
        } else {
            unit.as_str()
        };
        let ms_per = match unit {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            other => return Err(bad(&format!("has the unknown unit `{other}`"))),
        };
        total = value
            .checked_mul(ms_per)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| bad("is too large"))?;
        rest = &rest[digits + letters..];
    }
    Ok(total)
}

fn parse_level(text: &str) -> Result<Level, String> {
    if let Some(number) = text.strip_suffix('%') {
        return match number.trim().parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Ok(Level::Percent(p)),
            _ => Err(format!("`{text}` is not a percentage like 10%")),
        };
    }
    text.parse::<u64>()
        .map(Level::Count)
        .map_err(|_| format!("`{text}` is neither a count like 5 nor a percentage like 10%"))
}

fn parse_mask(text: &str) -> Result<CodeMask, String> {
    let mask = text.to_ascii_lowercase();
    if mask.is_empty() || mask.len() > 5 || !mask.bytes().all(|b| b.is_ascii_digit() || b == b'x') {
        return Err(format!("`{text}` is not a code mask like 5xx, 404 or 2x0"));
    }
    Ok(CodeMask(mask))
}

fn parse_quantile(text: &str) -> Option<u16> {
    let value: f64 = text.parse().ok()?;
    QUANTILES
        .iter()
        .copied()
        .find(|q| (percent(*q) - value).abs() < 1e-9)
}

#[cfg(test)]
mod tests;
