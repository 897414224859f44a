//! The summary built from hand-made phout lines and samples: counts, codes,
//! tags, queues, JSON round trips and the text form.

use super::*;
use tank_stats::phout::parse_line;
use tank_stats::Aggregator;

pub(crate) fn sample_summary() -> Summary {
    let mut agg = Aggregator::new(0);
    let mut timeline = Timeline::default();
    for (i, line) in [
        "100.000\tsearch#1\t1500\t100\t20\t1300\t80\t1400\t74\t230\t0\t200",
        "100.200\t\t2500\t100\t20\t2300\t80\t2400\t74\t0\t110\t0",
        "101.000\tsearch\t3500\t100\t20\t3300\t80\t3400\t74\t230\t0\t503",
    ]
    .iter()
    .enumerate()
    {
        agg.add_record(&parse_line(line.as_bytes()).unwrap());
        agg.note_planned(100 + i as u64 / 2, 2);
    }
    agg.finish();
    while let Some(second) = agg.pop_ready() {
        timeline.push(&second);
    }
    let meta = Meta {
        title: "t".into(),
        ..Meta::default()
    };
    Summary::build(meta, &agg.totals(), timeline, None, None, None)
}

#[test]
fn summary_counts_codes_tags_and_quantiles() {
    let s = sample_summary();
    assert_eq!((s.duration_s, s.shots.responses), (2, 3));
    // From the first start (100.000) to the last end (101.000 + 3.5 ms).
    assert!((s.active_s - 1.0035).abs() < 1e-9, "{}", s.active_s);
    assert_eq!(s.shots.planned, None);
    assert!((s.rps.actual - 3.0 / 1.0035).abs() < 1e-9);
    assert_eq!(s.rps.max, 2);
    assert_eq!(s.proto_codes.get("503"), Some(&1));
    assert_eq!(s.net_codes.get("110"), Some(&1));
    assert_eq!(
        s.tags
            .iter()
            .map(|t| (t.tag.as_str(), t.count, t.errors))
            .collect::<Vec<_>>(),
        vec![("", 1, 1), ("search", 2, 1)]
    );
    assert_eq!(s.quantiles.last().map(|r| r.service_ms), Some(3.5));
    assert_eq!(s.quantiles[0].intended_ms, None);
}

#[test]
fn summary_json_round_trips_and_text_names_codes() {
    let s = sample_summary();
    assert_eq!(Summary::from_json(&s.to_json()).unwrap(), s);
    let text = s.to_text();
    assert!(text.contains("503 Service Unavailable"), "{text}");
    assert!(text.contains("110 timed out"), "{text}");
    assert!(text.contains("search"), "{text}");
}

#[test]
fn the_job_is_in_json_and_on_top_of_the_text_and_absent_when_not_given() {
    let mut s = sample_summary();
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert!(json["meta"].get("job").is_none(), "{json}");
    s.meta.job = tank_config::Job {
        job_name: Some("checkout".into()),
        job_dsc: Some("the steady part".into()),
        operator: Some("alice".into()),
        ..Default::default()
    };
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["meta"]["job"]["job_name"], "checkout");
    assert_eq!(json["meta"]["job"]["operator"], "alice");
    assert!(json["meta"]["job"].get("ver").is_none(), "{json}");
    assert_eq!(Summary::from_json(&s.to_json()).unwrap(), s);
    let text = s.to_text();
    let lines: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        lines,
        ["t", "job: checkout — operator alice", "the steady part"],
        "{text}"
    );
}

#[test]
fn a_summary_from_before_the_active_time_reads_with_whole_seconds() {
    let s = sample_summary();
    let mut json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    json.as_object_mut().unwrap().remove("active_s");
    let old = Summary::from_json(&json.to_string()).unwrap();
    assert_eq!((old.active_s, old.active_or_whole_s()), (0.0, 2.0));
    assert!(
        old.to_text().contains("duration 2.0 s"),
        "{}",
        old.to_text()
    );
    assert!((s.active_or_whole_s() - 1.0035).abs() < 1e-9);
}

#[test]
fn retries_are_counted_for_a_run_and_unknown_for_a_phout() {
    let mut agg = Aggregator::new(0);
    for sends in [2, 1, 2] {
        agg.add_sample(&tank_stats::Sample {
            start_unix_us: 100_000_000,
            lag_us: 0,
            tag: b"".as_slice().into(),
            measured: tank_stats::Measured {
                interval_real_us: 1000,
                sends,
                ..tank_stats::Measured::default()
            },
        });
    }
    agg.finish();
    let counts = RunCounts {
        planned: Some(3),
        sent: 3,
        planned_rps: None,
        dropped: 0,
        answers_dropped: 0,
        stop: None,
        instances: None,
        proto_kind: None,
    };
    let run = Summary::build(
        Meta::default(),
        &agg.totals(),
        Timeline::default(),
        Some(&counts),
        None,
        Some(0),
    );
    assert_eq!(run.shots.retries, Some(2));
    assert!(run.to_text().contains("\nretries 2 ("), "{}", run.to_text());
    let phout = sample_summary();
    assert_eq!(phout.shots.retries, None);
    assert!(!phout.to_text().contains("retries"));
    // A summary.json written before retries were counted still reads.
    let mut json: serde_json::Value = serde_json::from_str(&run.to_json()).unwrap();
    json["shots"].as_object_mut().unwrap().remove("retries");
    assert_eq!(
        Summary::from_json(&json.to_string()).unwrap().shots.retries,
        None
    );
}

#[test]
fn several_queues_get_a_row_each_in_json_and_text() {
    let names = vec!["api".to_owned(), "static".to_owned()];
    let mut agg = Aggregator::new(0).with_queues(names);
    for (queue, code) in [(0, 200), (1, 200), (1, 502)] {
        agg.add_sample(&tank_stats::Sample {
            start_unix_us: 100_000_000,
            lag_us: 0,
            tag: b"".as_slice().into(),
            measured: tank_stats::Measured {
                interval_real_us: 1000,
                proto_code: code,
                queue,
                ..tank_stats::Measured::default()
            },
        });
    }
    agg.finish();
    let s = Summary::build(
        Meta::default(),
        &agg.totals(),
        Timeline::default(),
        None,
        None,
        None,
    );
    let rows: Vec<_> = s
        .queues
        .iter()
        .map(|q| (q.queue.as_str(), q.count, q.errors))
        .collect();
    assert_eq!(rows, vec![("api", 1, 0), ("static", 2, 1)]);
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["queues"][1]["queue"], "static");
    let text = s.to_text();
    assert!(text.contains("\nqueue "), "{text}");
    assert!(text.contains("\nstatic "), "{text}");
    // One queue: no queue rows, and no `queues` key in summary.json.
    let one = sample_summary();
    assert!(one.queues.is_empty());
    assert!(!one.to_json().contains("\"queues\""));
    assert!(!one.to_text().contains("\nqueue "));
}

#[test]
fn a_summary_from_before_the_renames_reads_its_replay_and_measuring_rows() {
    let mut s = sample_summary();
    s.replay = Some(ReplayRow {
        sessions: tank_stats::SessionCounts {
            running: 0,
            peak: 3,
            started: 5,
            completed: 5,
        },
        pool: 3,
    });
    let round = Summary::from_json(&s.to_json()).unwrap();
    assert_eq!(round.replay, s.replay);
    let mut json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    json["replay"] = serde_json::json!({"sessions_started": 5, "sessions_completed": 5,
        "peak_running": 3, "pool": 3});
    json["probes"] = serde_json::json!([{"queue": "probe", "count": 1, "percent": 100.0,
        "errors": 0, "avg_ms": 1.0, "quantiles_ms": []}]);
    let old = Summary::from_json(&json.to_string()).unwrap();
    assert_eq!(old.replay, s.replay);
    assert_eq!(old.measuring.len(), 1);
}

#[test]
fn summary_text_shows_monitoring_the_influx_line_and_a_stop() {
    let mut s = sample_summary();
    s.influx = Some(InfluxRow {
        written: 3,
        dropped: 1,
        unconfirmed: 2,
        first_error: Some("timed out".into()),
    });
    s.monitoring = vec![crate::monitoring::HostSeries {
        host: "web".into(),
        comment: String::new(),
        metrics: [
            (
                "custom:cpu-cpu0_busy".to_string(),
                vec![Some(10.0), Some(30.0)],
            ),
            ("System_la1".to_string(), vec![Some(1.0), None]),
        ]
        .into_iter()
        .collect(),
    }];
    s.stopped = Some(Stop {
        cause: StopCause::Interrupted,
        after_s: Some(4.9),
        due: Some(980),
    });
    let text = s.to_text();
    assert!(
        text.contains(
            "\ninflux: 3 points written, 1 dropped, 2 unconfirmed (sent, never answered: \
             InfluxDB may have them) (first error: timed out)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  web: load 1.00 / 1.00\n    cores busy: cpu0 20% / 30%"),
        "{text}"
    );
    assert!(
        text.contains(
            "\ninterrupted (Ctrl-C or SIGTERM) after 4.9 s; the plan had 980 shots due by 3.9 s, \
             a second before the stop\n"
        ),
        "{text}"
    );
    assert_eq!(Summary::from_json(&s.to_json()).unwrap(), s);
}

#[test]
fn the_rates_say_what_each_is() {
    // 3 responses in 1.0035 s: an average of 3.0 a second, above the busiest second's 2.
    let text = sample_summary().to_text();
    assert!(
        text.contains("\nrps: actual 3.0 over the 1.0 s active, busiest second 2\n"),
        "{text}"
    );
}

#[test]
fn code_tables_keep_their_columns_with_long_names_and_name_the_protocol() {
    let mut s = sample_summary();
    s.net_codes.insert("1200".into(), 1);
    let text = s.to_text();
    let count_at = |code: &str| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(code))
            .unwrap_or_else(|| panic!("no {code} in {text}"));
        line.find(" 1 ").map(|at| at + 1)
    };
    // "HTTP/2 connection lost with the stream in flight" is longer than the old 24 columns.
    assert_eq!(count_at("1200"), count_at("503"), "{text}");
    assert!(text.contains("\nHTTP codes:\n"), "{text}");
    // A MySQL run: the server's error numbers, not HTTP's statuses.
    s.proto_codes = [("1045".to_string(), 3)].into_iter().collect();
    s.net_codes = [("0".to_string(), 3)].into_iter().collect();
    let text = s.to_text();
    assert!(
        text.contains(
            "\nMySQL codes (200: OK; else the server's error number):\n   1045 access denied"
        ),
        "{text}"
    );
    // Framed TCP: a reply has no code.
    s.proto_codes = [("0".to_string(), 3)].into_iter().collect();
    let text = s.to_text();
    assert!(
        text.contains(
            "\nproto codes (the protocol has none: 0 for every reply):\n      0 no code "
        ),
        "{text}"
    );
    assert!(!text.contains("no response"), "{text}");
}

#[test]
fn a_summary_of_no_responses_shows_no_quantiles() {
    let s = Summary::build(
        Meta::default(),
        &Aggregator::new(0).totals(),
        Timeline::default(),
        None,
        None,
        None,
    );
    let text = s.to_text();
    assert!(
        text.contains("no responses: no quantiles, times or sizes"),
        "{text}"
    );
    assert!(!text.contains("0.000"), "{text}");
}

#[test]
fn a_mysql_run_whose_every_command_succeeded_is_headed_by_mysql_codes() {
    // All 200s read as HTTP from the codes alone; the run's protocol says MySQL.
    let mut agg = Aggregator::new(0);
    for _ in 0..3 {
        agg.add_sample(&tank_stats::Sample {
            start_unix_us: 100_000_000,
            lag_us: 0,
            tag: b"SELECT items".as_slice().into(),
            measured: tank_stats::Measured {
                interval_real_us: 1000,
                proto_code: 200,
                ..tank_stats::Measured::default()
            },
        });
    }
    agg.finish();
    let counts = |proto_kind| RunCounts {
        planned: Some(3),
        sent: 3,
        planned_rps: None,
        dropped: 0,
        answers_dropped: 0,
        stop: None,
        instances: None,
        proto_kind,
    };
    let build = |counts: Option<&RunCounts>| {
        Summary::build(
            Meta::default(),
            &agg.totals(),
            Timeline::default(),
            counts,
            None,
            Some(0),
        )
    };
    let mysql = build(Some(&counts(Some(ProtoCodes::Mysql))));
    let text = mysql.to_text();
    assert!(text.contains("\nMySQL codes"), "{text}");
    assert!(!text.contains("HTTP codes"), "{text}");
    // The kind survives summary.json, and a phout's summary still reads its codes.
    let json = mysql.to_json();
    assert!(json.contains("\"proto_kind\": \"mysql\""), "{json}");
    assert_eq!(
        Summary::from_json(&json).unwrap().codes(),
        ProtoCodes::Mysql
    );
    let phout = build(None);
    assert_eq!(phout.proto_kind, None);
    assert!(phout.to_text().contains("\nHTTP codes"));
}
