//! One criterion's running state over the stream of finished seconds.
//!
//! "In a row" criteria (time, http, net, quantile, instances, steady_cumulative) count
//! consecutive seconds that meet the condition and reset on one that does not. Window
//! criteria (total_*, negative_*) keep the last `window` seconds and fire only once the window
//! is full. http_trend keeps the last `window` per-second changes of the matching count.

use std::collections::VecDeque;
use std::time::Duration;

use crate::aggregate::SecondStats;
use crate::columns::Field;
use crate::group::{CodeCounts, GroupStats};
use crate::quantile::percent;

use super::parse::{CodeMask, Criterion, Kind, Level, MetricLimit};
use std::collections::BTreeMap;

/// A criterion and what it has seen so far.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) criterion: Criterion,
    /// Consecutive seconds meeting the condition.
    count: u64,
    /// Window criteria: per-second (value, responses); http_trend: the changes.
    window: VecDeque<(f64, f64)>,
    /// http_trend: the previous second's matching count.
    last: f64,
    /// steady_cumulative: the previous second's cumulative quantiles.
    previous: Option<Vec<f64>>,
    /// What the console shows while this criterion is counting.
    status: Option<String>,
}

impl Check {
    pub(crate) fn new(criterion: Criterion) -> Check {
        let window = match criterion.kind {
            // The reference starts the trend with one zero change.
            Kind::HttpTrend { .. } => VecDeque::from([(0.0, 0.0)]),
            _ => VecDeque::new(),
        };
        Check {
            criterion,
            count: 0,
            window,
            last: 0.0,
            previous: None,
            status: None,
        }
    }

    pub(crate) fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Look at one more second; `Some(explanation)` when the criterion fires.
    ///
    /// Seconds without responses are skipped (yandex-tank never sees them) except by `limit`
    /// and `instances`, which do not depend on responses.
    pub(crate) fn observe(
        &mut self,
        second: &SecondStats,
        elapsed: Duration,
        instances_limit: u64,
    ) -> Option<String> {
        let tag = self.criterion.tag.clone();
        let for_tag = match &tag {
            Some(tag) => format!(" for tag `{tag}`"),
            None => String::new(),
        };
        let group = match &tag {
            Some(tag) => second.tagged.get(tag),
            None => Some(&second.overall),
        };
        let responses = group.map_or(second.overall.len(), GroupStats::len) as f64;
        let kind = self.criterion.kind.clone();
        if second.overall.is_empty() && !matches!(kind, Kind::Limit { .. } | Kind::Instances { .. })
        {
            return None;
        }
        match kind {
            // Judged on monitoring seconds (`observe_metric`).
            Kind::MetricHigher(_) | Kind::MetricLower(_) => None,
            Kind::Time { rt_ms, dur_s } => {
                let avg_ms = group.map_or(0.0, |g| g.field(Field::IntervalReal).mean() / 1000.0);
                let met = avg_ms > rt_ms as f64;
                self.in_a_row(met, dur_s, || format!("avg time > {rt_ms} ms"))
                    .then(|| format!("average response time {avg_ms:.1} ms was above {rt_ms} ms for {dur_s} s in a row{for_tag}"))
            }
            Kind::Http { mask, level, dur_s } | Kind::Net { mask, level, dur_s } => {
                let net = matches!(self.criterion.kind, Kind::Net { .. });
                let matched = group.map_or(0, |g| matching(codes(g, net), &mask, net)) as f64;
                let (value, limit, shown) = match level {
                    Level::Count(n) => (matched, n as f64, format!("{matched}")),
                    Level::Percent(p) => {
                        let share = if responses > 0.0 {
                            matched / responses
                        } else {
                            0.0
                        };
                        (share, p / 100.0, format!("{:.1}%", share * 100.0))
                    }
                };
                let what = if net { "net codes" } else { "HTTP codes" };
                self.in_a_row(value >= limit, dur_s, || format!("{what} {mask} ≥ {level}"))
                    .then(|| format!("{what} {mask} were {shown} (at least {level}) for {dur_s} s in a row{for_tag}"))
            }
            Kind::Quantile {
                per_mille,
                rt_ms,
                dur_s,
            } => {
                let q_ms = group
                    .and_then(|g| g.quantile_us(per_mille))
                    .map(|us| us / 1000.0);
                let met = q_ms.is_some_and(|q| q > rt_ms as f64);
                let q = percent(per_mille);
                self.in_a_row(met, dur_s, || format!("q{q} > {rt_ms} ms"))
                    .then(|| format!("{q}% quantile {:.1} ms was above {rt_ms} ms for {dur_s} s in a row{for_tag}", q_ms.unwrap_or(0.0)))
            }
            Kind::Limit { dur_s } => (elapsed.as_secs_f64() > dur_s as f64).then(|| {
                format!(
                    "the run lasted {:.0} s, longer than the limit of {dur_s} s",
                    elapsed.as_secs_f64()
                )
            }),
            Kind::Instances { level, dur_s } => {
                let active = second.instances as f64;
                let met = match level {
                    Level::Count(n) => active > n as f64,
                    Level::Percent(p) => {
                        instances_limit > 0 && active / instances_limit as f64 > p / 100.0
                    }
                };
                self.in_a_row(met, dur_s, || format!("instances > {level}"))
                    .then(|| {
                        format!(
                            "{active} active instances (more than {level}) for {dur_s} s in a row"
                        )
                    })
            }
            Kind::TotalTime {
                rt_ms,
                ratio,
                window_s,
            } => {
                let slow = group.map_or(0, |g| slower_than(g, rt_ms * 1000)) as f64;
                self.push(slow, responses, window_s);
                let (slow, total) = self.sums();
                let share = if total > 0.0 { slow / total } else { 0.0 };
                self.status = Some(format!(
                    "{:.1}% slower than {rt_ms} ms over {}/{window_s} s",
                    share * 100.0,
                    self.window.len()
                ));
                (self.full(window_s) && share >= ratio).then(|| {
                    format!("{:.2}% of responses were slower than {rt_ms} ms over {window_s} s (limit {}%){for_tag}", share * 100.0, ratio * 100.0)
                })
            }
            Kind::TotalHttp {
                mask,
                level,
                window_s,
            }
            | Kind::TotalNet {
                mask,
                level,
                window_s,
            }
            | Kind::NegativeHttp {
                mask,
                level,
                window_s,
            }
            | Kind::NegativeNet {
                mask,
                level,
                window_s,
            } => {
                let net = matches!(
                    self.criterion.kind,
                    Kind::TotalNet { .. } | Kind::NegativeNet { .. }
                );
                let negative = matches!(
                    self.criterion.kind,
                    Kind::NegativeHttp { .. } | Kind::NegativeNet { .. }
                );
                let value = match group {
                    // A second without the tag matches nothing, either way.
                    None => 0.0,
                    Some(g) => {
                        let matched = matching(codes(g, net), &mask, net) as f64;
                        let counted = if negative {
                            responses - matched
                        } else {
                            matched
                        };
                        match level {
                            Level::Count(_) => counted,
                            // As the reference: a second with no responses counts as 1%.
                            Level::Percent(_) if responses == 0.0 => 1.0,
                            Level::Percent(_) => counted / responses * 100.0,
                        }
                    }
                };
                self.push(value, responses, window_s);
                let (sum, _) = self.sums();
                let (measure, limit, shown) = match level {
                    Level::Count(n) => (sum, n as f64, format!("{sum}")),
                    Level::Percent(p) => {
                        let mean = sum / self.window.len() as f64;
                        (mean, p, format!("{mean:.2}%"))
                    }
                };
                let what = match (negative, net) {
                    (false, false) => format!("HTTP codes {mask}"),
                    (false, true) => format!("net codes {mask}"),
                    (true, false) => format!("HTTP codes other than {mask}"),
                    (true, true) => format!("responses without net code {mask}"),
                };
                self.status = Some(format!(
                    "{what}: {shown} of {level} over {}/{window_s} s",
                    self.window.len()
                ));
                (self.full(window_s) && measure >= limit).then(|| {
                    format!("{what} reached {shown} (limit {level}) over {window_s} s{for_tag}")
                })
            }
            Kind::HttpTrend { mask, window_s } => {
                let matched = group.map_or(0, |g| matching(&g.proto_codes, &mask, false)) as f64;
                self.window.push_back((matched - self.last, 0.0));
                self.last = matched;
                while self.window.len() as u64 > window_s.max(1) {
                    self.window.pop_front();
                }
                let n = self.window.len() as f64;
                let mean = self.window.iter().map(|(k, _)| k).sum::<f64>() / n;
                let error = if n < 2.0 {
                    0.0
                } else {
                    let squares: f64 = self.window.iter().map(|(k, _)| (k - mean).powi(2)).sum();
                    (squares / (n * (n - 1.0))).sqrt()
                };
                self.status = Some(format!("HTTP {mask} trend {mean:+.2} ± {error:.2}/s"));
                (mean + error < 0.0).then(|| {
                    format!("HTTP codes {mask} fell by {:.2} ± {error:.2} per second over {window_s} s{for_tag}", -mean)
                })
            }
            Kind::SteadyCumulative { dur_s } => {
                let now = second.cumulative.values_us.to_vec();
                let steady = self.previous.as_ref() == Some(&now);
                self.previous = Some(now);
                self.in_a_row(steady, dur_s, || "cumulative quantiles steady".to_string())
                    .then(|| format!("the cumulative quantiles did not change for {dur_s} s"))
            }
        }
    }

    /// Look at one host's monitoring second; `Some(explanation)` when a metric criterion
    /// fires. Other criteria and other hosts are untouched. As the reference: a metric
    /// missing from the second counts as 0, and `custom:` may be left out of its name.
    pub(crate) fn observe_metric(
        &mut self,
        host: &str,
        metrics: &BTreeMap<String, f64>,
    ) -> Option<String> {
        let (limit, higher) = match &self.criterion.kind {
            Kind::MetricHigher(limit) => (limit.clone(), true),
            Kind::MetricLower(limit) => (limit.clone(), false),
            _ => return None,
        };
        let MetricLimit {
            host: pattern,
            metric,
            limit,
            dur_s,
        } = limit;
        if !glob(&pattern, host) {
            return None;
        }
        let value = metrics
            .get(&metric)
            .or_else(|| metrics.get(&format!("custom:{metric}")))
            .copied()
            .unwrap_or(0.0);
        let met = if higher { value > limit } else { value < limit };
        let sign = if higher { ">" } else { "<" };
        let word = if higher { "higher" } else { "lower" };
        self.in_a_row(met, dur_s, || format!("{host}/{metric} {sign} {limit}"))
            .then(|| {
                format!("{host}/{metric} was {value} ({word} than {limit}) for {dur_s} s in a row")
            })
    }

    /// Count a second in a row; true once `dur_s` seconds have met the condition.
    fn in_a_row(&mut self, met: bool, dur_s: u64, what: impl FnOnce() -> String) -> bool {
        if met {
            self.count += 1;
            self.status = Some(format!("{} for {}/{dur_s} s", what(), self.count));
            self.count >= dur_s
        } else {
            self.count = 0;
            self.status = None;
            false
        }
    }

    fn push(&mut self, value: f64, responses: f64, window_s: u64) {
        self.window.push_back((value, responses));
        while self.window.len() as u64 > window_s {
            self.window.pop_front();
        }
    }

    fn sums(&self) -> (f64, f64) {
        self.window
            .iter()
            .fold((0.0, 0.0), |(a, b), (v, r)| (a + v, b + r))
    }

    fn full(&self, window_s: u64) -> bool {
        self.window.len() as u64 >= window_s
    }
}

/// Shell-style matching as Python's `fnmatch` for `*` and `?` (other characters literal).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn codes(group: &GroupStats, net: bool) -> &CodeCounts {
    if net {
        &group.net_codes
    } else {
        &group.proto_codes
    }
}

/// Responses whose code matches `mask`; net code 0 (success) never counts.
fn matching(codes: &CodeCounts, mask: &CodeMask, net: bool) -> u64 {
    codes
        .iter()
        .filter(|(code, _)| !(net && *code == 0) && mask.matches(*code))
        .map(|(_, n)| n)
        .sum()
}

/// Responses of at least `limit_us`, from the yandex-tank histogram (so the limit is rounded
/// to a bin edge, as in the reference): everything but the bins that end at or below it.
fn slower_than(group: &GroupStats, limit_us: u64) -> u64 {
    let fast: u64 = group
        .hist
        .iter()
        .filter(|(edge, _)| *edge <= limit_us)
        .map(|(_, n)| n)
        .sum();
    group.len() - fast
}

#[cfg(test)]
mod glob_tests {
    use super::glob;

    #[test]
    fn globs_match_as_fnmatch() {
        assert!(glob("*", "anything"));
        assert!(glob("db*", "db1.example"));
        assert!(glob("h?st", "host"));
        assert!(!glob("h?st", "hoost"));
        assert!(glob("localhost", "localhost"));
        assert!(!glob("local", "localhost"));
        assert!(glob("*.tld", "a.b.tld"));
    }

    proptest::proptest! {
        #[test]
        fn a_name_matches_itself_and_star(name in "[a-z0-9.]{0,20}") {
            proptest::prop_assert!(glob(&name, &name));
            proptest::prop_assert!(glob("*", &name));
        }
    }
}
