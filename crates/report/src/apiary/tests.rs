use super::*;

fn measured(queue: u16, ms: u64, net: u16, proto: u16) -> Measured {
    Measured {
        queue,
        interval_real_us: ms * 1000,
        net_code: NetCode(net),
        proto_code: proto,
        ..Measured::default()
    }
}

fn second(instances: u64) -> SecondStats {
    SecondStats {
        instances,
        ..SecondStats::default()
    }
}

const S: Duration = Duration::from_secs(1);

#[test]
fn an_interval_tallies_errors_by_kind_and_measures_levels_and_durations() {
    let mut view = ApiaryView::new(15 * S, vec![Codes::Mysql, Codes::Http], Duration::ZERO);
    for (queue, ms, net, proto) in [
        (0, 1, 0, 200),
        (0, 3, 0, 1064),
        (0, 2, 0, 200),
        (1, 4, 0, 503),
        (1, 6, 110, 0),
    ] {
        view.response(&measured(queue, ms, net, proto));
    }
    for (instances, running, completed) in [(2, 3, 0), (4, 5, 1), (0, 1, 4)] {
        view.second(&second(instances), Some((running, completed)));
    }
    assert!(view.tick(14 * S, 1_000).is_none(), "not yet");
    let (interval, before) = view.tick(15 * S, 1_015).unwrap();
    assert!(before.is_none());
    let tallies: Vec<(&str, u64, u64)> = interval
        .tallies
        .iter()
        .map(|t| (t.name.as_str(), t.current, t.total))
        .collect();
    assert_eq!(
        tallies,
        [
            ("ERR 1064 (SQL syntax error)", 1, 1),
            ("HTTP 503 (Service Unavailable)", 1, 1),
            ("net 110 (timed out)", 1, 1),
            ("Sessions Completed", 4, 4),
            ("Requests Completed", 5, 5),
        ]
    );
    assert!((interval.tallies[4].rate - 5.0 / 15.0).abs() < 1e-9);
    let requests = &interval.levels[1];
    assert_eq!((requests.current, requests.min, requests.max), (0, 0, 4));
    assert_eq!((requests.median, requests.mean), (2.0, 2.0));
    assert!((requests.stdev - (8.0f64 / 3.0).sqrt()).abs() < 1e-9);
    assert_eq!(interval.levels[0].name, "Sessions Running");
    let durations = &interval.series[0];
    assert_eq!(
        (durations.current, durations.min, durations.max),
        (6.0, 1.0, 6.0)
    );
    assert_eq!(
        (durations.median, durations.mean, durations.count),
        (3.0, 3.2, 5)
    );
}

#[test]
fn the_next_interval_keeps_totals_and_shows_changes() {
    let mut view = ApiaryView::new(10 * S, vec![Codes::Mysql], Duration::ZERO);
    view.response(&measured(0, 1, 0, 1146));
    view.second(&second(1), None);
    view.tick(10 * S, 10);
    view.response(&measured(0, 2, 0, 200));
    view.response(&measured(0, 2, 0, 200));
    view.second(&second(3), None);
    let (interval, before) = view.tick(20 * S, 20).unwrap();
    let text = render(interval, before);
    assert!(
        text.starts_with("1970-01-01 00:00:20 UTC (Apiary view, 10 s)\n====="),
        "{text}"
    );
    // An error kind seen before shows with 0 now, and how it changed.
    assert!(
        text.contains("ERR 1146 (no such table):  current: 0 (-1)"),
        "{text}"
    );
    assert!(text.contains("total: 1 "), "{text}");
    assert!(
        text.contains("Requests Completed:  current: 2 (+1)"),
        "{text}"
    );
    assert!(
        text.contains("Requests Running:  current: 3 (+2)"),
        "{text}"
    );
    assert!(!text.contains("Sessions"), "no replay, no sessions: {text}");
    assert!(
        view.close_last(25 * S, 25).is_none(),
        "nothing since: nothing to show"
    );
    let row = view.finish();
    assert_eq!(row.intervals.len(), 2, "nothing since: no third interval");
    assert_eq!(row.interval_s, 10.0);
}

#[test]
fn the_runs_last_partial_interval_is_kept_and_shown() {
    let mut view = ApiaryView::new(15 * S, vec![Codes::None], Duration::ZERO);
    view.response(&measured(0, 5, 0, 0));
    // Returned to be shown, as an interval that ended on the clock is.
    let (shown, before) = view.close_last(4 * S, 4).unwrap();
    assert!(before.is_none());
    let shown = render(shown, before);
    let row = view.finish();
    let text = render(&row.intervals[0], None);
    assert_eq!(shown, text);
    assert!(text.contains("(Apiary view, 4 s)"), "{text}");
    // A last interval under a second says so, not `0 s`.
    let mut short = ApiaryView::new(15 * S, vec![Codes::None], Duration::ZERO);
    short.response(&measured(0, 5, 0, 0));
    let (interval, _) = short.close_last(Duration::from_millis(350), 0).unwrap();
    assert!(
        render(interval, None).contains("(Apiary view, 0.350 s)"),
        "{}",
        render(interval, None)
    );
    assert!(
        text.contains("Requests Running:  no second finished in this interval"),
        "{text}"
    );
    assert_eq!(row.intervals.len(), 1);
    assert_eq!(row.intervals[0].seconds, 4.0);
    assert_eq!(row.intervals[0].tallies[0].name, "Requests Completed");
}

#[test]
fn measurements_keep_three_significant_digits() {
    assert_eq!(significant(0.428915), "0.429");
    assert_eq!(significant(77.0881), "77.1");
    assert_eq!(significant(12937.0), "12937");
    assert_eq!(float_field(0.46, Some(0.45)), "0.460 (+0.0100)");
    assert_eq!(count_field(5, Some(5)), "5");
}
