//! Every criterion on synthetic second streams: fires, does not, resets, %, tag, exit code.

use super::*;
use crate::aggregate::Aggregator;
use crate::phout::parse_line;

/// One response: (interval_real µs, net code, HTTP code, tag).
type R = (u64, u16, u16, &'static str);

/// A finished second holding `responses`, with `instances` active.
fn second(ts: u64, responses: &[R], instances: u64) -> SecondStats {
    let mut agg = Aggregator::new(0);
    for (us, net, proto, tag) in responses {
        // send_ts chosen so the response ends inside `ts`.
        let line = format!("{ts}.000\t{tag}\t{us}\t0\t0\t{us}\t0\t{us}\t1\t1\t{net}\t{proto}");
        let mut record = parse_line(line.as_bytes()).unwrap();
        record.measured.interval_real_us = (*us).min(999_000);
        agg.add_record(&record);
    }
    agg.note_instances(ts, instances);
    agg.finish();
    agg.pop_ready().unwrap()
}

fn ok(n: usize) -> Vec<R> {
    vec![(1000, 0, 200, ""); n]
}

fn mixed(good: usize, bad: usize, bad_code: u16) -> Vec<R> {
    let mut r = ok(good);
    r.extend(vec![(1000, 0, bad_code, ""); bad]);
    r
}

/// Feed seconds (ts = 1, 2, ...) and return the 1-based second that fired and the reason.
fn run(criterion: &str, seconds: &[Vec<R>]) -> Option<(usize, StopReason)> {
    run_with(criterion, seconds, &[], 0)
}

fn run_with(
    criterion: &str,
    seconds: &[Vec<R>],
    instances: &[u64],
    limit: u64,
) -> Option<(usize, StopReason)> {
    let mut autostop = Autostop::new(&[criterion], limit).unwrap();
    for (i, responses) in seconds.iter().enumerate() {
        let s = second(
            i as u64 + 1,
            responses,
            instances.get(i).copied().unwrap_or(0),
        );
        if let Some(reason) = autostop.observe(&s, Duration::from_secs(i as u64 + 1)) {
            return Some((i + 1, reason));
        }
    }
    None
}

fn fired_at(criterion: &str, seconds: &[Vec<R>]) -> Option<usize> {
    run(criterion, seconds).map(|(at, _)| at)
}

#[test]
fn time_fires_after_consecutive_slow_seconds_and_resets() {
    let slow = vec![(600_000, 0, 200, ""); 3];
    let fast = ok(3);
    assert_eq!(
        fired_at(
            "time(500,2s)",
            &[slow.clone(), fast.clone(), slow.clone(), slow.clone()]
        ),
        Some(4)
    );
    assert_eq!(
        fired_at(
            "time(500,2s)",
            &[slow.clone(), fast.clone(), slow.clone(), fast]
        ),
        None
    );
    let (_, reason) = run("time(500ms,1)", &[slow]).unwrap();
    assert_eq!(reason.code, 21);
    assert!(
        reason.explanation.contains("600.0 ms"),
        "{}",
        reason.explanation
    );
}

#[test]
fn time_is_strictly_above_the_limit() {
    assert_eq!(fired_at("time(1,1)", &[ok(2)]), None);
}

#[test]
fn http_counts_absolute_and_percent_with_masks() {
    let bad = mixed(8, 2, 503);
    assert_eq!(
        fired_at("http(5xx,2,2s)", &[bad.clone(), bad.clone()]),
        Some(2)
    );
    assert_eq!(
        fired_at("http(5xx,3,2s)", &[bad.clone(), bad.clone()]),
        None
    );
    assert_eq!(
        fired_at("http(5xx,20%,1s)", std::slice::from_ref(&bad)),
        Some(1)
    );
    assert_eq!(
        fired_at("http(5xx,21%,1s)", std::slice::from_ref(&bad)),
        None
    );
    assert_eq!(
        fired_at("http(50x,20%,1s)", std::slice::from_ref(&bad)),
        Some(1)
    );
    assert_eq!(fired_at("http(4xx,1,1s)", &[bad]), None);
    let (_, reason) = run("http(5xx,10%,1s)", &[mixed(1, 1, 500)]).unwrap();
    assert_eq!(reason.code, 22);
    assert_eq!(reason.criterion, "http(5xx,10%,1s)");
}

#[test]
fn http_resets_on_a_clean_second() {
    let bad = mixed(0, 5, 500);
    assert_eq!(
        fired_at(
            "http(5xx,1,3s)",
            &[bad.clone(), bad.clone(), ok(5), bad.clone(), bad.clone()]
        ),
        None
    );
}

#[test]
fn http_with_a_tag_looks_at_that_tag_only() {
    let mut s = ok(5);
    s.push((1000, 0, 500, "search#3"));
    assert_eq!(
        fired_at("http(5xx,1,1s,search)", std::slice::from_ref(&s)),
        Some(1)
    );
    assert_eq!(
        fired_at("http(5xx,1,1s,other)", std::slice::from_ref(&s)),
        None
    );
    assert_eq!(fired_at("http(5xx,100%,1s,search)", &[s]), Some(1));
}

#[test]
fn net_ignores_success_and_fires_on_errors() {
    let s = vec![(1000, 110, 0, ""), (1000, 0, 200, "")];
    assert_eq!(fired_at("net(xx,2,1s)", std::slice::from_ref(&s)), None);
    assert_eq!(
        fired_at("net(xxx,50%,1s)", std::slice::from_ref(&s)),
        Some(1)
    );
    assert_eq!(fired_at("net(0,1,1s)", std::slice::from_ref(&s)), None);
    assert_eq!(run("net(110,1,1s)", &[s]).unwrap().1.code, 23);
}

#[test]
fn quantile_fires_above_the_limit() {
    let s: Vec<R> = (1..=100).map(|i| (i * 10_000, 0, 200, "")).collect();
    // p95 of 10..1000 ms is 950.5 ms.
    assert_eq!(
        fired_at("quantile(95,950,2s)", &[s.clone(), s.clone()]),
        Some(2)
    );
    assert_eq!(
        fired_at("quantile(95,951,1s)", std::slice::from_ref(&s)),
        None
    );
    assert_eq!(
        fired_at("quantile(99.5,990,1s)", std::slice::from_ref(&s)),
        Some(1)
    );
    assert_eq!(run("quantile(50,10ms,1)", &[s]).unwrap().1.code, 21);
}

#[test]
fn limit_fires_once_the_run_is_longer() {
    let seconds = vec![ok(1); 5];
    assert_eq!(fired_at("limit(3)", &seconds), Some(4));
    assert_eq!(run("limit(3s)", &seconds).unwrap().1.code, 21);
}

#[test]
fn instances_absolute_and_percent_of_the_limit() {
    let seconds = vec![ok(1); 4];
    let busy = [50, 95, 95, 95];
    assert_eq!(
        run_with("instances(90,2s)", &seconds, &busy, 0).map(|r| r.0),
        Some(3)
    );
    assert_eq!(
        run_with("instances(90%,3s)", &seconds, &busy, 100).map(|r| (r.0, r.1.code)),
        Some((4, 24))
    );
    assert_eq!(run_with("instances(95%,1s)", &seconds, &busy, 100), None);
    assert!(Autostop::new(&["instances(90%,3s)"], 0).is_err());
}

#[test]
fn total_time_waits_for_a_full_window() {
    let slow = vec![(400_000, 0, 200, ""); 8];
    let mut mostly = slow.clone();
    mostly.extend(ok(2));
    assert_eq!(
        fired_at(
            "total_time(300ms,70%,3s)",
            &[mostly.clone(), mostly.clone(), mostly.clone()]
        ),
        Some(3)
    );
    assert_eq!(
        fired_at(
            "total_time(300ms,81%,3s)",
            &[mostly.clone(), mostly.clone(), mostly.clone()]
        ),
        None
    );
    assert_eq!(
        fired_at(
            "total_time(300ms,70%,3s)",
            &[mostly.clone(), mostly.clone()]
        ),
        None
    );
    assert_eq!(run("total_time(300ms,50%,1s)", &[slow]).unwrap().1.code, 25);
    assert_eq!(fired_at("total_time(300ms,50%,1s,api)", &[mostly]), None);
}

#[test]
fn total_http_sums_counts_or_averages_percents_over_the_window() {
    let s = mixed(9, 1, 502);
    assert_eq!(
        fired_at("total_http(5xx,3,3s)", &[s.clone(), s.clone(), s.clone()]),
        Some(3)
    );
    assert_eq!(
        fired_at(
            "total_http(5xx,4,3s)",
            &[s.clone(), s.clone(), s.clone(), s.clone()]
        ),
        None
    );
    assert_eq!(
        fired_at("total_http(5xx,10%,2s)", &[s.clone(), s.clone()]),
        Some(2)
    );
    assert_eq!(
        fired_at("total_http(5xx,11%,2s)", &[s.clone(), s.clone()]),
        None
    );
    assert_eq!(run("total_http(5xx,1,1s)", &[s]).unwrap().1.code, 26);
}

#[test]
fn total_net_counts_errors_but_not_success() {
    let s = vec![(1000, 104, 0, ""), (1000, 0, 200, "")];
    assert_eq!(
        fired_at("total_net(xxx,2,2s)", &[s.clone(), s.clone()]),
        Some(2)
    );
    assert_eq!(
        fired_at("total_net(0,1,1s)", std::slice::from_ref(&s)),
        None
    );
    assert_eq!(run("total_net(104,50%,1s)", &[s]).unwrap().1.code, 27);
}

#[test]
fn negative_http_counts_what_does_not_match() {
    let s = mixed(8, 2, 500);
    assert_eq!(
        fired_at("negative_http(2xx,20%,2s)", &[s.clone(), s.clone()]),
        Some(2)
    );
    assert_eq!(
        fired_at("negative_http(2xx,25%,2s)", &[s.clone(), s.clone()]),
        None
    );
    assert_eq!(
        fired_at("negative_http(2xx,4,2s)", &[s.clone(), s.clone()]),
        Some(2)
    );
    assert_eq!(run("negative_http(2xx,1,1s)", &[s]).unwrap().1.code, 28);
    assert_eq!(
        fired_at("negative_http(2xx,1,1s,nothere)", &[mixed(0, 3, 500)]),
        None
    );
}

#[test]
fn negative_net_counts_responses_without_the_code() {
    let s = vec![(1000, 110, 0, ""), (1000, 0, 200, "")];
    // Net code 0 is never "matching", so success counts as "not 110" too.
    assert_eq!(
        fired_at("negative_net(110,50%,1s)", std::slice::from_ref(&s)),
        Some(1)
    );
    assert_eq!(
        fired_at("negative_net(110,51%,1s)", std::slice::from_ref(&s)),
        None
    );
    assert_eq!(run("negative_net(110,1,1s)", &[s]).unwrap().1.code, 29);
}

#[test]
fn http_trend_fires_when_matching_codes_keep_falling() {
    let seconds: Vec<Vec<R>> = [100, 100, 80, 60, 40].iter().map(|n| ok(*n)).collect();
    assert_eq!(fired_at("http_trend(2xx,2s)", &seconds), Some(4));
    let flat = vec![ok(50); 5];
    assert_eq!(fired_at("http_trend(2xx,3s)", &flat), None);
    assert_eq!(run("http_trend(2xx,2s)", &seconds).unwrap().1.code, 30);
}

#[test]
fn steady_cumulative_fires_when_quantiles_stop_moving() {
    let mut autostop = Autostop::new(&["steady_cumulative(2s)"], 0).unwrap();
    let mut agg = Aggregator::new(0);
    let mut fired = None;
    for ts in 1..=5u64 {
        // The same response every second: from the second second on, nothing moves.
        let line = format!("{ts}.000\t\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200");
        agg.add_record(&parse_line(line.as_bytes()).unwrap());
        agg.advance(ts + 1);
        let s = agg.pop_ready().unwrap();
        if let Some(reason) = autostop.observe(&s, Duration::ZERO) {
            fired = Some((ts, reason.code));
            break;
        }
    }
    assert_eq!(fired, Some((3, 33)));
}

#[test]
fn the_first_criterion_in_order_wins_and_fires_once() {
    let bad = mixed(0, 5, 500);
    let mut autostop = Autostop::new(&["http(5xx,1,1s)", "negative_http(2xx,1,1s)"], 0).unwrap();
    let reason = autostop
        .observe(&second(1, &bad, 0), Duration::ZERO)
        .unwrap();
    assert_eq!(reason.code, 22);
    assert!(autostop
        .observe(&second(2, &bad, 0), Duration::ZERO)
        .is_none());
    assert_eq!(autostop.stopped().map(|r| r.code), Some(22));
    assert_eq!(reason.report_text().lines().next(), Some("http(5xx,1,1s)"));
}

#[test]
fn counting_criteria_are_listed_for_the_console() {
    let mut autostop = Autostop::new(&["http(5xx,1,3s)", "time(1s,5s)"], 0).unwrap();
    autostop.observe(&second(1, &mixed(1, 1, 500), 0), Duration::ZERO);
    assert_eq!(
        autostop.counting(),
        vec!["HTTP codes 5xx ≥ 1 for 1/3 s".to_string()]
    );
}

#[test]
fn empty_seconds_are_skipped_except_by_limit_and_instances() {
    let empty: Vec<R> = Vec::new();
    let bad = mixed(0, 1, 500);
    assert_eq!(
        fired_at("http(5xx,1,2s)", &[bad.clone(), empty.clone(), bad]),
        Some(3)
    );
    assert_eq!(fired_at("limit(1)", &[empty.clone(), empty]), Some(2));
}

#[test]
fn rcassert_maps_codes_like_yandex_tank() {
    assert_eq!(rcassert(22, &[], 10), 22);
    assert_eq!(rcassert(22, &[21, 22], 10), 0);
    assert_eq!(rcassert(23, &[21, 22], 10), 10);
    assert_eq!(rcassert(0, &[21], 7), 7);
    assert_eq!(rcassert(0, &[0], 7), 0);
}

#[test]
fn metric_criteria_judge_monitoring_seconds_with_yandex_tank_codes() {
    let mut autostop = Autostop::new(
        &[
            "metric_higher(web*, cpu-cpu-total_usage_user, 90, 2s)",
            "metric_lower(db, Memory_free, 100, 1s)",
        ],
        0,
    )
    .unwrap();
    assert!(autostop.watches_monitoring());
    let busy: std::collections::BTreeMap<String, f64> =
        [("custom:cpu-cpu-total_usage_user".to_string(), 95.0)].into();
    let calm: std::collections::BTreeMap<String, f64> =
        [("custom:cpu-cpu-total_usage_user".to_string(), 10.0)].into();
    // Load seconds never move them.
    assert!(autostop
        .observe(&second(1, &ok(1), 0), Duration::ZERO)
        .is_none());
    assert!(autostop.observe_monitoring(1, "web1", &busy).is_none());
    assert!(autostop.observe_monitoring(2, "web1", &calm).is_none());
    assert!(autostop.observe_monitoring(3, "other", &busy).is_none());
    assert!(autostop.observe_monitoring(3, "web1", &busy).is_none());
    let reason = autostop.observe_monitoring(4, "web1", &busy).unwrap();
    assert_eq!((reason.code, reason.ts), (codes::METRIC_HIGHER, 4));
    assert!(reason.explanation.contains("higher than 90"), "{reason:?}");

    let mut lower = Autostop::new(&["metric_lower(db, Memory_free, 100, 1s)"], 0).unwrap();
    // A missing metric counts as 0, as in the reference.
    let reason = lower
        .observe_monitoring(9, "db", &std::collections::BTreeMap::new())
        .unwrap();
    assert_eq!(reason.code, codes::METRIC_LOWER);
}
