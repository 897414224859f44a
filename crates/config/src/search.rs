//! `[search]`: tank's own section, the settings of `tank search` and
//! `tank scan` written down, so that CI can run a search from a config
//! (`tank search --config load.ini`). A flag given on the command line
//! overrides the section; what neither sets takes the command's default.
//!
//! The values are read here with the commands' own parsers, so a bad value is
//! an error naming its line before any probe runs.

use std::time::Duration;

use crate::arrivals::ArrivalProcess;
use crate::convert;
use crate::error::ConfigError;
use crate::queue::entry_error;
use crate::raw::RawSection;

/// `[search]`: every setting is optional (`None`: not in the section).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchConfig {
    /// `quantile`: the quantile judged, percent (above 0, at most 100).
    pub quantile: Option<f64>,
    /// `under`: its bound, from the intended start.
    pub under: Option<Duration>,
    /// `from`: search's lowest rate.
    pub from: Option<u64>,
    /// `to`: search's highest rate.
    pub to: Option<u64>,
    /// `precision`: search stops when the bracket is narrower than this share.
    pub precision: Option<f64>,
    /// `peak_connections`: connections of search's peak probe (when no `to`).
    pub peak_connections: Option<u32>,
    /// `rate`: scan's rates, `lo:hi:step`.
    pub rate: Option<(u64, u64, u64)>,
    /// `probe`: how long each probe is measured.
    pub probe: Option<Duration>,
    /// `warmup`: how long each probe runs before it is measured.
    pub warmup: Option<Duration>,
    /// `instances`: the most connections a probe may open.
    pub instances: Option<u32>,
    /// `max_errors`: the most errors a passing probe may have, percent.
    pub max_errors: Option<f64>,
    /// `max_lag`: a probe whose generator lag p99 is over this is invalid.
    pub max_lag: Option<Duration>,
    /// `arrivals`: how each probe spaces its shots.
    pub arrivals: Option<ArrivalProcess>,
}

/// Reads an enabled `[search]` section (its keys were checked against the table).
pub(crate) fn read(section: &RawSection) -> Result<SearchConfig, ConfigError> {
    let mut config = SearchConfig::default();
    for entry in &section.entries {
        let fail = |message: String| entry_error(&section.name, entry, message);
        let text = convert::string(&entry.value)
            .map_err(|m| entry_error(&section.name, entry, m))?
            .unwrap_or_default();
        let text = text.trim();
        let whole = |low: u64| {
            text.parse::<u64>()
                .ok()
                .filter(|n| *n >= low)
                .ok_or_else(|| {
                    fail(format!(
                        "expected a whole number of at least {low}, found `{text}`"
                    ))
                })
        };
        let count = || {
            whole(1).and_then(|n| {
                u32::try_from(n).map_err(|_| {
                    fail(format!(
                        "`{text}` is too large: expected at most {}",
                        u32::MAX
                    ))
                })
            })
        };
        let duration = || parse_duration(text).map_err(fail);
        match entry.key.as_str() {
            "quantile" => config.quantile = Some(parse_quantile(text).map_err(fail)?),
            "under" => config.under = Some(duration()?),
            "from" => config.from = Some(whole(1)?),
            "to" => config.to = Some(whole(1)?),
            "precision" => config.precision = Some(parse_share(text).map_err(fail)?),
            "peak_connections" => config.peak_connections = Some(count()?),
            "rate" => config.rate = Some(parse_rates(text).map_err(fail)?),
            "probe" => config.probe = Some(duration()?),
            "warmup" => config.warmup = Some(duration()?),
            "instances" => config.instances = Some(count()?),
            "max_errors" => config.max_errors = Some(parse_percent(text).map_err(fail)?),
            "max_lag" => config.max_lag = Some(duration()?),
            "arrivals" => config.arrivals = Some(ArrivalProcess::parse(text).map_err(fail)?),
            // Checked against the table before: `enabled`.
            _ => {}
        }
    }
    if let (Some(from), Some(to), Some(entry)) = (config.from, config.to, section.get("to")) {
        if to <= from {
            return Err(entry_error(
                &section.name,
                entry,
                format!("`to` {to} must be above `from` {from}"),
            ));
        }
    }
    Ok(config)
}

/// A duration of the commands that run probes and of `[search]`: `10s`,
/// `500ms`, `2m`, `1h`, or bare seconds; above 0 and at most a week.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => t.split_at(at),
        None => (t, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}`: expected a duration like 10s, 500ms or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "`{text}`: expected a duration like 10s, 500ms or 2m"
            ))
        }
    };
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 7.0 * 86_400.0 {
        return Err(format!(
            "`{text}`: expected a duration above 0 and at most a week"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A quantile in percent: above 0, at most 100.
pub fn parse_quantile(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(q) if q > 0.0 && q <= 100.0 => Ok(q),
        _ => Err(format!(
            "`{text}`: expected a quantile in percent, above 0 and at most 100 (e.g. 99)"
        )),
    }
}

/// A percent from 0 to 100 (`1`, `0.5`; a `%` may follow).
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    match t.strip_suffix('%').unwrap_or(t).trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("`{text}`: expected a percent from 0 to 100")),
    }
}

/// A share: `2%` or `0.02`, above 0 and under 100%.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}`: expected a share like 2% or 0.02"))?;
    if !(value > 0.0 && value < 1.0) {
        return Err(format!("`{text}`: expected a share above 0 and under 100%"));
    }
    Ok(value)
}

/// Scan's rates: `lo:hi:step`, with 1 ≤ lo ≤ hi, step ≥ 1, at most 1000 steps.
pub fn parse_rates(text: &str) -> Result<(u64, u64, u64), String> {
    let parts: Vec<&str> = text.split(':').collect();
    let expected = || {
        format!("`{text}`: expected lo:hi:step, e.g. 100:1000:100, with 1 ≤ lo ≤ hi and step ≥ 1")
    };
    let [lo, hi, step] = parts[..] else {
        return Err(expected());
    };
    let n = |s: &str| s.trim().parse::<u64>().map_err(|_| expected());
    let (lo, hi, step) = (n(lo)?, n(hi)?, n(step)?);
    if lo == 0 || hi < lo || step == 0 || (hi - lo) / step >= 1000 {
        return Err(expected());
    }
    Ok((lo, hi, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("10x")
            .unwrap_err()
            .contains("expected a duration"));
    }

    #[test]
    fn shares_rates_quantiles_and_percents_parse() {
        assert_eq!(parse_share("2%"), Ok(0.02));
        assert_eq!(parse_share("0.05"), Ok(0.05));
        assert!(parse_share("0").is_err());
        assert_eq!(parse_rates("100:1000:100"), Ok((100, 1000, 100)));
        assert!(parse_rates("100:50:10").is_err());
        assert!(parse_rates("1:2")
            .unwrap_err()
            .contains("expected lo:hi:step"));
        assert_eq!(parse_quantile("99.9"), Ok(99.9));
        assert!(parse_quantile("0").is_err());
        assert!(parse_quantile("101").is_err());
        assert_eq!(parse_percent("1%"), Ok(1.0));
        assert!(parse_percent("-1").is_err());
    }
}
