//! The live console, as pure functions of the run's state: the caller decides when and where
//! to print (the full screen once a second on a TTY, after clearing it; one plain line per
//! second otherwise, or with `--quiet` / `[console] short_only`).
//!
//! A second is shown once it is final, which is `buffered_seconds` after it ends (late
//! replies still count in it until then). So every number is labelled with the second it is
//! of, by its own offset from the start, never the wall clock: what the run has *sent* so far
//! is ahead of what it has *answered* in finished seconds, and the screen says which is which
//! rather than let the difference read as requests in flight.

use std::fmt::Write as _;
use std::time::Duration;

use tank_stats::quantile::percent;
use tank_stats::{Field, GroupStats, SecondStats, TotalStats, QUANTILES};

use crate::names::{net_reason, ProtoCodes};

/// Everything the full screen shows.
#[derive(Debug, Clone, Copy)]
pub struct LiveView<'a> {
    /// A title (the job's headline and the config file).
    pub title: &'a str,
    /// A line under it (the job's description), if any.
    pub subtitle: Option<&'a str>,
    /// The last finished second.
    pub second: &'a SecondStats,
    /// Its offset from the run's start ([`second_offset`]).
    pub second_offset: Duration,
    /// The run so far.
    pub totals: &'a TotalStats,
    /// Wall time since the start.
    pub elapsed: Duration,
    /// How long the schedule lasts, when known.
    pub planned_duration: Option<Duration>,
    /// The configured `instances` limit.
    pub instances_limit: u64,
    /// Autostop criteria that are counting (from `Autostop::counting`).
    pub autostop: &'a [String],
    /// The latest monitoring second of each monitored host (empty without monitoring).
    pub monitoring: &'a [tank_monitor::HostSecond],
    /// What the proto codes are (HTTP statuses, MySQL error numbers, ...).
    pub codes: ProtoCodes,
    /// Whether the seconds' planned counts are whole (`false`: shown as `–`).
    pub planned_known: bool,
}

/// ANSI: move home and clear the screen; print before [`render_screen`]'s text on a TTY.
pub const CLEAR: &str = "\x1b[H\x1b[2J";

fn ms(us: f64) -> f64 {
    us / 1000.0
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The offset of the second `ts` (unix seconds) from the run's start second: 0 for the
/// second the run started in, then one more for each second, whenever it is shown.
pub fn second_offset(ts: u64, start_unix_us: u64) -> Duration {
    Duration::from_secs(ts.saturating_sub(start_unix_us / 1_000_000))
}

/// The full screen: progress, rates, instances, lag, quantiles, codes, tags, autostop.
pub fn render_screen(view: &LiveView<'_>) -> String {
    let s = view.second;
    let t = view.totals;
    let mut out = String::new();
    let _ = writeln!(out, "tank — {}", view.title);
    if let Some(subtitle) = view.subtitle {
        let _ = writeln!(out, "{subtitle}");
    }
    // Progress and ETA.
    match view.planned_duration {
        Some(total) if !total.is_zero() => {
            let done = (view.elapsed.as_secs_f64() / total.as_secs_f64()).min(1.0);
            let bar = 30;
            let filled = (done * bar as f64) as usize;
            let _ = writeln!(
                out,
                "[{}{}] {:>3.0}%  elapsed {}  of {}  ETA {}",
                "#".repeat(filled),
                ".".repeat(bar - filled),
                done * 100.0,
                clock(view.elapsed),
                clock(total),
                clock(total.saturating_sub(view.elapsed)),
            );
        }
        _ => {
            let _ = writeln!(out, "elapsed {}", clock(view.elapsed));
        }
    }
    // The last finished second: rates, instances, accuracy and lag.
    let accuracy = if s.planned > 0 && view.planned_known {
        format!("{:.1}%", s.sent as f64 * 100.0 / s.planned as f64)
    } else {
        "n/a".into()
    };
    let planned = |n: u64| planned_or_dash(n, view.planned_known);
    let _ = writeln!(
        out,
        "second {}: planned {}  sent {}  responses {}  accuracy {}",
        clock(view.second_offset),
        planned(s.planned),
        s.sent,
        s.overall.len(),
        accuracy
    );
    let _ = writeln!(
        out,
        "instances: {} busy of {}   lag: p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        s.instances,
        view.instances_limit,
        ms(s.lag.get(500).unwrap_or(0.0)),
        ms(s.lag.get(990).unwrap_or(0.0)),
        ms(s.lag.get(1000).unwrap_or(0.0)),
    );
    let _ = writeln!(
        out,
        "shots: planned {}  sent {} (so far)   responses {} (in finished seconds, through second {})",
        planned(t.planned),
        t.sent,
        t.overall.len(),
        clock(view.second_offset)
    );
    if t.retries > 0 {
        let _ = writeln!(
            out,
            "retries: {} last second, {} in all (requests sent again after a kept connection was found closed)",
            s.retries, t.retries
        );
    }
    quantile_table(&mut out, s, t);
    // Times and sizes.
    let avg = |f: Field| ms(s.overall.field(f).mean());
    let _ = writeln!(
        out,
        "\naverage ms (last second): total {:.1}  connect {:.1}  send {:.1}  latency {:.1}  receive {:.1}",
        avg(Field::IntervalReal),
        avg(Field::Connect),
        avg(Field::Send),
        avg(Field::Latency),
        avg(Field::Receive)
    );
    let _ = writeln!(
        out,
        "average bytes (last second): out {:.0}  in {:.0}",
        s.overall.field(Field::SizeOut).mean(),
        s.overall.field(Field::SizeIn).mean()
    );
    // Codes of the last second.
    let all = s.overall.len().max(1) as f64;
    let codes = view.codes;
    code_lines(
        &mut out,
        &format!("\n{}", codes.short()),
        &s.overall.proto_codes,
        all,
        |code| codes.reason(code),
    );
    code_lines(&mut out, "net codes", &s.overall.net_codes, all, net_reason);
    // Per-tag table, cumulative.
    if t.tagged.len() > 1 || t.tagged.keys().any(|k| !k.is_empty()) {
        let _ = writeln!(
            out,
            "\n  {:<24} {:>10} {:>7} {:>8} {:>9} {:>8}",
            "tag", "count", "%", "errors", "avg ms", "last rps"
        );
        let every = t.overall.len().max(1) as f64;
        for (tag, group) in &t.tagged {
            let name = if tag.is_empty() {
                "(no tag)"
            } else {
                tag.as_str()
            };
            let last = s.tagged.get(tag).map_or(0, |g| g.len());
            let _ = writeln!(
                out,
                "  {:<24} {:>10} {:>7.2} {:>8} {:>9.1} {:>8}",
                name,
                group.len(),
                group.len() as f64 * 100.0 / every,
                group.errors(),
                ms(group.field(Field::IntervalReal).mean()),
                last
            );
        }
    }
    // Per-queue table, cumulative (a run of several queues).
    if !t.queues.is_empty() {
        let _ = writeln!(
            out,
            "\n  {:<24} {:>10} {:>7} {:>8} {:>9} {:>8}",
            "queue", "count", "%", "errors", "avg ms", "last rps"
        );
        let every = t.overall.len().max(1) as f64;
        for (index, (name, group)) in t.queues.iter().enumerate() {
            let last = s.queues.get(index).map_or(0, |(_, g)| g.len());
            let _ = writeln!(
                out,
                "  {:<24} {:>10} {:>7.2} {:>8} {:>9.1} {:>8}",
                name,
                group.len(),
                group.len() as f64 * 100.0 / every,
                group.errors(),
                ms(group.field(Field::IntervalReal).mean()),
                last
            );
        }
    }
    // The measuring queues (`measure = 1`): their latency apart from the load's.
    if !t.measuring.is_empty() {
        let _ = writeln!(
            out,
            "\n  {:<24} {:>10} {:>8} {:>9} {:>9} {:>12}",
            "measuring (measure = 1)", "count", "errors", "avg ms", "p99 ms", "last p99 ms"
        );
        for (index, (name, group)) in t.measuring.iter().enumerate() {
            let p99 = |g: &GroupStats| ms(g.quantile_us(990).unwrap_or(0.0));
            let last = s.measuring.get(index).map_or(0.0, |(_, g)| p99(g));
            let _ = writeln!(
                out,
                "  {:<24} {:>10} {:>8} {:>9.1} {:>9.1} {:>12.1}",
                name,
                group.len(),
                group.errors(),
                ms(group.field(Field::IntervalReal).mean()),
                p99(group),
                last
            );
        }
    }
    crate::monitoring::render_panel(&mut out, view.monitoring);
    if !view.autostop.is_empty() {
        let _ = writeln!(out, "\nautostop:");
        for line in view.autostop {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// The quantiles of the last second and of the whole run so far, each as service time and
/// from the intended start (`-` where the lag is unknown).
fn quantile_table(out: &mut String, s: &SecondStats, t: &TotalStats) {
    let _ = writeln!(
        out,
        "\n{:>10}  {:^26}  {:^26}\n{:>10}  {:>12}  {:>12}  {:>12}  {:>12}",
        "",
        "last second",
        "whole run",
        "quantile",
        "service ms",
        "intended ms",
        "service ms",
        "intended ms"
    );
    let intended = |q: &tank_stats::Quantiles, i: usize| {
        if q.count > 0 {
            format!("{:>12.1}", ms(q.values_us[i]))
        } else {
            format!("{:>12}", "-")
        }
    };
    for (i, q) in QUANTILES.iter().enumerate().rev() {
        let _ = writeln!(
            out,
            "{:>9}%  {:>12.1}  {}  {:>12.1}  {}",
            percent(*q),
            ms(s.overall.quantiles_us[i]),
            intended(&s.intended, i),
            ms(s.cumulative.values_us[i]),
            intended(&t.intended, i),
        );
    }
    let _ = writeln!(
        out,
        "(intended: from the intended start, lag + service time, as wrk2 measures)"
    );
}

/// One plain line for a finished second (non-TTY output, `--quiet`, `short_only`), labelled
/// with the second's own offset from the start ([`second_offset`]).
pub fn render_line(second: &SecondStats, offset: Duration, planned_known: bool) -> String {
    let s = second;
    let errors = s.overall.errors();
    let mut line = format!(
        "{} ts={} rps={} planned={} sent={} instances={} p50={:.1}ms p99={:.1}ms max={:.1}ms errors={}",
        clock(offset),
        s.ts,
        s.overall.len(),
        planned_or_dash(s.planned, planned_known),
        s.sent,
        s.instances,
        ms(s.overall.quantile_us(500).unwrap_or(0.0)),
        ms(s.overall.quantile_us(990).unwrap_or(0.0)),
        ms(s.overall.quantile_us(1000).unwrap_or(0.0)),
        errors
    );
    if s.lag.count > 0 {
        let _ = write!(line, " lag_p99={:.1}ms", ms(s.lag.get(990).unwrap_or(0.0)));
    }
    if s.retries > 0 {
        let _ = write!(line, " retries={}", s.retries);
    }
    let codes: Vec<String> = s
        .overall
        .proto_codes
        .iter()
        .map(|(c, n)| format!("{c}:{n}"))
        .chain(
            s.overall
                .net_codes
                .iter()
                .filter(|(c, _)| *c != 0)
                .map(|(c, n)| format!("net{c}:{n}")),
        )
        .collect();
    if !codes.is_empty() {
        let _ = write!(line, " codes={}", codes.join(","));
    }
    line
}

/// A planned count, or `–` when the plan does not say it (a scenario's
/// requests; a plan counted only at its end).
fn planned_or_dash(planned: u64, known: bool) -> String {
    if known {
        planned.to_string()
    } else {
        "–".to_string()
    }
}

/// One code table of the screen: count, share of `all`, code and its reason.
fn code_lines(
    out: &mut String,
    title: &str,
    counts: &tank_stats::CodeCounts,
    all: f64,
    reason: impl Fn(u16) -> &'static str,
) {
    let _ = writeln!(out, "{title} (last second):");
    for (code, n) in counts.iter() {
        let _ = writeln!(
            out,
            "  {n:>8} {:>6.2}%  {code} {}",
            n as f64 * 100.0 / all,
            reason(code)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    fn state() -> (SecondStats, TotalStats) {
        let mut agg = Aggregator::new(0);
        for line in [
            "100.000\tsearch\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
            "100.200\t\t2500\t100\t20\t2300\t80\t2400\t74\t0\t110\t0",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.note_planned(100, 2);
        agg.note_sent(100, 2);
        agg.note_instances(100, 4);
        agg.note_lag(100, 1500);
        agg.finish();
        (agg.pop_ready().unwrap(), agg.totals())
    }

    /// The screen of `second` in a run of `totals`, one second in, with no
    /// progress bar, autostop or monitoring.
    fn plain_screen(second: &SecondStats, totals: &TotalStats) -> String {
        render_screen(&LiveView {
            title: "load.ini",
            subtitle: None,
            second,
            second_offset: Duration::ZERO,
            totals,
            elapsed: Duration::from_secs(1),
            planned_duration: None,
            instances_limit: 10,
            autostop: &[],
            monitoring: &[],
            codes: ProtoCodes::Http,
            planned_known: true,
        })
    }

    #[test]
    fn the_job_heads_the_screen_with_its_description_under_it() {
        let (second, totals) = state();
        let screen = render_screen(&LiveView {
            title: "checkout — ver 1.2 (load.ini)",
            subtitle: Some("hold 40 rps and look"),
            ..LiveView {
                title: "",
                subtitle: None,
                second: &second,
                second_offset: Duration::ZERO,
                totals: &totals,
                elapsed: Duration::from_secs(1),
                planned_duration: None,
                instances_limit: 10,
                autostop: &[],
                monitoring: &[],
                codes: ProtoCodes::Http,
                planned_known: true,
            }
        });
        let head: Vec<&str> = screen.lines().take(2).collect();
        assert_eq!(
            head,
            [
                "tank — checkout — ver 1.2 (load.ini)",
                "hold 40 rps and look"
            ]
        );
        assert!(!plain_screen(&second, &totals)
            .lines()
            .nth(1)
            .unwrap()
            .contains("hold"));
    }

    #[test]
    fn screen_shows_progress_rates_quantiles_codes_tags_and_autostop() {
        let (second, totals) = state();
        let counting = vec!["HTTP codes 5xx ≥ 1 for 1/3 s".to_string()];
        assert!(!render_line(&second, Duration::ZERO, true).contains("retries"));
        let screen = render_screen(&LiveView {
            title: "load.ini",
            subtitle: None,
            second: &second,
            second_offset: Duration::from_secs(29),
            totals: &totals,
            elapsed: Duration::from_secs(30),
            planned_duration: Some(Duration::from_secs(120)),
            instances_limit: 1000,
            autostop: &counting,
            monitoring: &[],
            codes: ProtoCodes::Http,
            planned_known: true,
        });
        for needle in [
            "25%",
            "ETA 00:01:30",
            "second 00:00:29: planned 2  sent 2  responses 2  accuracy 100.0%",
            "instances: 4 busy of 1000",
            "responses 2 (in finished seconds, through second 00:00:29)",
            "p99 1.5 ms",
            "99.5%",
            "110 timed out",
            "200 OK",
            "search",
            "(no tag)",
            "5xx ≥ 1 for 1/3 s",
        ] {
            assert!(screen.contains(needle), "missing `{needle}` in\n{screen}");
        }
    }

    #[test]
    fn measuring_queues_get_a_table_apart_from_the_queues() {
        let mut agg = Aggregator::new(0)
            .with_measuring(vec!["load".into(), "probe".into()], vec![false, true]);
        for (queue, real) in [(0, 1000), (0, 1000), (1, 7000)] {
            agg.add_sample(&tank_stats::Sample {
                start_unix_us: 100_000_000,
                lag_us: 0,
                tag: b"".as_slice().into(),
                measured: tank_stats::Measured {
                    interval_real_us: real,
                    proto_code: 200,
                    queue,
                    ..tank_stats::Measured::default()
                },
            });
        }
        agg.finish();
        let (second, totals) = (agg.pop_ready().unwrap(), agg.totals());
        let screen = plain_screen(&second, &totals);
        let rows: Vec<&str> = screen
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("measuring (measure = 1)"))
            .take(2)
            .collect();
        assert_eq!(rows.len(), 2, "{screen}");
        // The probe's own latency (7 ms), not the load's (1 ms).
        let probe: Vec<&str> = rows[1].split_whitespace().collect();
        assert_eq!(probe[..3], ["probe", "1", "0"], "{screen}");
        assert!(probe[3].starts_with("7."), "{screen}");
        // The queue table lists the load queue only.
        let queues: Vec<&str> = screen
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("queue "))
            .skip(1)
            .take_while(|line| !line.is_empty())
            .collect();
        assert_eq!(queues.len(), 1, "{screen}");
        assert!(queues[0].trim_start().starts_with("load "), "{screen}");
    }

    #[test]
    fn several_queues_get_a_table_of_their_own() {
        let mut agg = Aggregator::new(0).with_queues(vec!["api".into(), "static".into()]);
        for (queue, start) in [(0, 100_000_000), (1, 100_100_000), (1, 100_200_000)] {
            agg.add_sample(&tank_stats::Sample {
                start_unix_us: start,
                lag_us: 0,
                tag: b"".as_slice().into(),
                measured: tank_stats::Measured {
                    interval_real_us: 1000,
                    proto_code: 200,
                    queue,
                    ..tank_stats::Measured::default()
                },
            });
        }
        agg.finish();
        let (second, totals) = (agg.pop_ready().unwrap(), agg.totals());
        let screen = plain_screen(&second, &totals);
        let rows: Vec<&str> = screen
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("queue "))
            .take(3)
            .collect();
        assert_eq!(rows.len(), 3, "{screen}");
        assert!(rows[1].trim_start().starts_with("api "), "{screen}");
        assert!(rows[2].trim_start().starts_with("static "), "{screen}");
        assert!(
            rows[2].trim_end().ends_with(" 2"),
            "last second's count: {screen}"
        );
        // One queue: no queue table.
        let (second, totals) = state();
        let one = plain_screen(&second, &totals);
        assert!(!one.contains("  queue "), "{one}");
    }

    #[test]
    fn quantile_columns_are_last_second_then_whole_run_each_service_then_intended() {
        let (mut second, mut totals) = state();
        // A second whose intended latency is known, in a run that knows it too.
        second.intended = second.cumulative;
        totals.intended = second.cumulative;
        let screen = plain_screen(&second, &totals);
        let lines: Vec<&str> = screen.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.trim_start().starts_with("quantile"))
            .expect("a quantile header");
        let groups = lines[header - 1];
        assert!(
            groups.find("last second") < groups.find("whole run"),
            "{screen}"
        );
        let columns: Vec<&str> = lines[header].split_whitespace().collect();
        assert_eq!(
            columns,
            ["quantile", "service", "ms", "intended", "ms", "service", "ms", "intended", "ms"]
        );
        // The max row: this second's 2.5 ms in all four columns.
        let max: Vec<&str> = lines[header + 1].split_whitespace().collect();
        assert_eq!(max, ["100%", "2.5", "2.5", "2.5", "2.5"], "{screen}");
        // Without lag, the intended columns say so.
        let (second, totals) = state();
        let screen = plain_screen(&second, &totals);
        let max = screen
            .lines()
            .find(|l| l.trim_start().starts_with("100%"))
            .unwrap();
        assert_eq!(
            max.split_whitespace().collect::<Vec<_>>(),
            ["100%", "2.5", "-", "2.5", "-"]
        );
    }

    #[test]
    fn a_second_is_labelled_by_its_own_offset_from_the_start() {
        // A run that started at 99.7 s: its seconds are 99, 100, 101 … shown
        // two seconds late, and the last ones all at once at the end.
        let start_us = 99_700_000;
        assert_eq!(second_offset(99, start_us), Duration::ZERO);
        assert_eq!(second_offset(101, start_us), Duration::from_secs(2));
        let (second, _) = state();
        let line = render_line(&second, second_offset(second.ts, start_us), true);
        assert!(line.starts_with("00:00:01 ts=100 "), "{line}");
    }

    #[test]
    fn plain_line_is_one_line_with_the_essentials() {
        let (second, _) = state();
        let line = render_line(&second, Duration::from_secs(61), true);
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with("00:01:01 ts=100 rps=2 planned=2 sent=2 instances=4 p50=2.0ms"),
            "{line}"
        );
        assert!(line.contains("codes=0:1,200:1,net110:1"), "{line}");
        assert!(line.contains("errors=1"), "{line}");
        // A plan that does not count its requests (a scenario's) shows none, not 0.
        let line = render_line(&second, Duration::from_secs(61), false);
        assert!(line.contains(" planned=– sent=2 "), "{line}");
        let (_, totals) = state();
        let screen = render_screen(&LiveView {
            planned_known: false,
            ..LiveView {
                title: "scenario.ini",
                subtitle: None,
                second: &second,
                second_offset: Duration::ZERO,
                totals: &totals,
                elapsed: Duration::from_secs(1),
                planned_duration: None,
                instances_limit: 10,
                autostop: &[],
                monitoring: &[],
                codes: ProtoCodes::Http,
                planned_known: true,
            }
        });
        assert!(
            screen.contains(": planned –  sent 2  responses 2  accuracy n/a"),
            "{screen}"
        );
        assert!(screen.contains("shots: planned –  sent "), "{screen}");
    }

    #[test]
    fn a_mysql_runs_screen_heads_its_codes_as_mysql_codes() {
        let (second, totals) = state();
        let screen = render_screen(&LiveView {
            codes: ProtoCodes::Mysql,
            ..LiveView {
                title: "replay.ini",
                subtitle: None,
                second: &second,
                second_offset: Duration::ZERO,
                totals: &totals,
                elapsed: Duration::from_secs(1),
                planned_duration: None,
                instances_limit: 10,
                autostop: &[],
                monitoring: &[],
                codes: ProtoCodes::Http,
                planned_known: true,
            }
        });
        assert!(screen.contains("\nMySQL codes (last second):"), "{screen}");
        assert!(!screen.contains("HTTP codes"), "{screen}");
    }

    #[test]
    fn retries_show_once_there_are_any() {
        let (mut second, mut totals) = state();
        let view = |second: &SecondStats, totals: &TotalStats| {
            render_screen(&LiveView {
                title: "load.ini",
                subtitle: None,
                second,
                second_offset: Duration::from_secs(1),
                totals,
                elapsed: Duration::from_secs(3),
                planned_duration: None,
                instances_limit: 1,
                autostop: &[],
                monitoring: &[],
                codes: ProtoCodes::Http,
                planned_known: true,
            })
        };
        assert!(!view(&second, &totals).contains("retries"));
        (second.retries, totals.retries) = (2, 5);
        let screen = view(&second, &totals);
        assert!(
            screen.contains("retries: 2 last second, 5 in all"),
            "{screen}"
        );
        let line = render_line(&second, Duration::from_secs(3), true);
        assert!(line.contains(" retries=2"), "{line}");
    }
}
