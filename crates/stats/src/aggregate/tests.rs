//! The aggregator against hand-made phout lines and samples, and against
//! groups fed directly.

use super::*;
use crate::group::record as record_histogram;
use crate::group::GroupStats;
use crate::phout::parse_line;
use crate::sample::Measured;
use crate::sample::NetCode;

fn record(agg: &mut Aggregator, line: &str) {
    agg.add_record(&parse_line(line.as_bytes()).unwrap());
}

fn drain(agg: &mut Aggregator) -> Vec<SecondStats> {
    std::iter::from_fn(|| agg.pop_ready()).collect()
}

#[test]
fn responses_count_in_the_second_they_ended_and_tags_are_cut_at_the_last_hash() {
    let mut agg = Aggregator::new(2);
    record(
        &mut agg,
        "100.900\ta#1\t200000\t0\t0\t0\t0\t0\t1\t2\t0\t200",
    );
    record(
        &mut agg,
        "100.100\ta#b#2\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t404",
    );
    agg.finish();
    let seconds = drain(&mut agg);
    assert_eq!(
        seconds.iter().map(|s| s.ts).collect::<Vec<_>>(),
        vec![100, 101]
    );
    assert_eq!(seconds[0].tagged.keys().collect::<Vec<_>>(), vec!["a#b"]);
    assert_eq!(seconds[1].tagged.keys().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(seconds[1].overall.len(), 1);
}

#[test]
fn a_second_is_final_only_after_buffered_seconds() {
    let mut agg = Aggregator::new(2);
    record(&mut agg, "10.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
    record(&mut agg, "12.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
    assert!(
        agg.pop_ready().is_none(),
        "second 10 must wait until 13 begins"
    );
    record(&mut agg, "13.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
    assert_eq!(agg.pop_ready().map(|s| s.ts), Some(10));
    assert!(agg.pop_ready().is_none());
    agg.advance(20);
    assert_eq!(
        drain(&mut agg).iter().map(|s| s.ts).collect::<Vec<_>>(),
        vec![12, 13]
    );
}

#[test]
fn late_responses_go_to_totals_only() {
    let mut agg = Aggregator::new(0);
    record(&mut agg, "10.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
    record(&mut agg, "12.000\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t200");
    record(&mut agg, "10.500\t\t1000\t0\t0\t0\t0\t0\t1\t2\t0\t500");
    agg.finish();
    let seconds = drain(&mut agg);
    assert_eq!(seconds.iter().map(|s| s.overall.len()).sum::<u64>(), 2);
    let totals = agg.totals();
    assert_eq!((totals.overall.len(), totals.late), (3, 1));
    assert_eq!(totals.overall.proto_codes.get(500), 1);
    assert_eq!(totals.span, Some((10, 12)));
    // Active from the first start to the last end, whatever the arrival order.
    assert_eq!(totals.active_us, Some((10_000_000, 12_001_000)));
    assert!((totals.active_s() - 2.001).abs() < 1e-9);
}

#[test]
fn engine_notes_and_lag_reach_the_second_and_the_totals() {
    let mut agg = Aggregator::new(1);
    agg.note_planned(50, 10);
    agg.note_sent(50, 9);
    agg.note_instances(50, 3);
    agg.note_instances(50, 7);
    agg.note_lag(50, 2000);
    agg.add_sample(&Sample {
        start_unix_us: 50_100_000,
        lag_us: 2000,
        tag: b"t#3".as_slice().into(),
        measured: Measured {
            interval_real_us: 5000,
            connect_us: 1000,
            send_us: 1000,
            latency_us: 2000,
            receive_us: 1000,
            interval_event_us: 5000,
            size_out: 10,
            size_in: 20,
            net_code: NetCode::OK,
            proto_code: 200,
            sends: 1,
            queue: 0,
        },
    });
    agg.advance(52);
    let second = agg.pop_ready().unwrap();
    assert_eq!(
        (second.ts, second.planned, second.sent, second.instances),
        (50, 10, 9, 7)
    );
    assert_eq!(second.lag.get(1000), Some(2000.0));
    let intended = second.intended.get(500).unwrap();
    assert!((intended - 7000.0).abs() <= 7.0, "{intended}");
    assert_eq!(second.cumulative.get(1000), Some(5000.0));
    assert!(second.tagged.contains_key("t"));
    let totals = agg.totals();
    assert_eq!(
        (totals.planned, totals.sent, totals.max_instances),
        (10, 9, 7)
    );
    assert_eq!(totals.intended.count, 1);
}

#[test]
fn seconds_without_responses_but_with_notes_are_handed_out() {
    let mut agg = Aggregator::new(0);
    agg.note_instances(7, 100);
    agg.advance(9);
    let second = agg.pop_ready().unwrap();
    assert_eq!(
        (second.ts, second.overall.len(), second.instances),
        (7, 0, 100)
    );
}

proptest::proptest! {
    /// A second's overall group is its tag groups merged, and the run's lag is the
    /// seconds' lags merged: the same numbers as adding every response and lag directly.
    #[test]
    fn merged_groups_equal_groups_fed_directly(
        shots in proptest::collection::vec(
            (0u64..4, 0u64..3_000_000, 0u64..2_000_000, 0u16..3, 0u64..50_000),
            1..60,
        ),
    ) {
        // Buffered long enough that no response is late.
        let mut agg = Aggregator::new(10);
        let mut direct: BTreeMap<u64, GroupAcc> = BTreeMap::new();
        let mut lags = new_histogram();
        for &(second, offset_us, took_us, tag, lag_us) in &shots {
            let measured = Measured {
                interval_real_us: took_us,
                latency_us: took_us,
                proto_code: 200 + tag,
                ..Measured::default()
            };
            let sample = Sample {
                start_unix_us: 1_000_000_000 + second * 1_000_000 + offset_us,
                lag_us,
                tag: format!("t{tag}").as_bytes().into(),
                measured,
            };
            let start_second = sample.start_unix_us / 1_000_000;
            agg.note_lag(start_second, lag_us);
            record_histogram(&mut lags, lag_us);
            agg.add_sample(&sample);
            direct
                .entry(sample.end_unix_us() / 1_000_000)
                .or_insert_with(GroupAcc::new)
                .add(&sample.measured);
        }
        agg.finish();
        let seconds = drain(&mut agg);
        let totals = agg.totals();
        proptest::prop_assert_eq!(totals.late, 0);
        let mut from_seconds = 0;
        for second in &seconds {
            let expected = direct.get(&second.ts).map(GroupAcc::stats).unwrap_or_default();
            proptest::prop_assert_eq!(&second.overall, &expected);
            from_seconds += second.overall.len();
        }
        proptest::prop_assert_eq!(from_seconds, shots.len() as u64);
        let mut all = GroupAcc::new();
        for group in direct.values() {
            all.merge(group);
        }
        proptest::prop_assert_eq!(&totals.overall, &all.stats());
        proptest::prop_assert_eq!(totals.lag, Quantiles::of(&lags));
    }
}

#[test]
fn retries_count_in_the_second_of_the_response_and_in_the_totals() {
    let mut agg = Aggregator::new(0);
    let shot = |start_unix_us: u64, sends: u8| Sample {
        start_unix_us,
        lag_us: 0,
        tag: b"".as_slice().into(),
        measured: Measured {
            interval_real_us: 1000,
            sends,
            ..Measured::default()
        },
    };
    agg.add_sample(&shot(10_000_000, 2));
    agg.add_sample(&shot(10_500_000, 1));
    agg.add_sample(&shot(11_000_000, 0));
    agg.add_sample(&shot(12_000_000, 2));
    // Second 10 is final by now: this retry counts in the totals only.
    agg.add_sample(&shot(10_900_000, 2));
    agg.finish();
    let seconds = drain(&mut agg);
    assert_eq!(
        seconds
            .iter()
            .map(|s| (s.ts, s.retries))
            .collect::<Vec<_>>(),
        vec![(10, 1), (11, 0), (12, 1)]
    );
    let totals = agg.totals();
    assert_eq!((totals.retries, totals.late), (3, 1));
}

fn shot_of(queue: u16, start_unix_us: u64, proto_code: u16) -> Sample {
    Sample {
        start_unix_us,
        lag_us: 0,
        tag: b"".as_slice().into(),
        measured: Measured {
            interval_real_us: 1000,
            proto_code,
            queue,
            ..Measured::default()
        },
    }
}

#[test]
fn several_queues_are_counted_each_in_its_group() {
    let names = vec!["api".to_owned(), "static".to_owned(), "idle".to_owned()];
    let mut agg = Aggregator::new(0).with_queues(names);
    agg.add_sample(&shot_of(0, 10_000_000, 200));
    agg.add_sample(&shot_of(1, 10_100_000, 503));
    agg.add_sample(&shot_of(1, 10_200_000, 200));
    agg.add_sample(&shot_of(0, 11_000_000, 200));
    agg.finish();
    let seconds = drain(&mut agg);
    let counts = |groups: &[(String, GroupStats)]| {
        groups
            .iter()
            .map(|(name, g)| (name.clone(), g.len(), g.errors()))
            .collect::<Vec<_>>()
    };
    let named = |list: [(&str, u64, u64); 3]| list.map(|(n, c, e)| (n.to_owned(), c, e)).to_vec();
    assert_eq!(
        counts(&seconds[0].queues),
        named([("api", 1, 0), ("static", 2, 1), ("idle", 0, 0)])
    );
    assert_eq!(
        counts(&agg.totals().queues),
        named([("api", 2, 0), ("static", 2, 1), ("idle", 0, 0)])
    );
    // The overall group is every queue's responses, counted once.
    assert_eq!(agg.totals().overall.len(), 4);
}

#[test]
fn one_queue_has_no_queue_groups() {
    let mut agg = Aggregator::new(0).with_queues(vec!["only".to_owned()]);
    agg.add_sample(&shot_of(0, 10_000_000, 200));
    agg.finish();
    assert!(drain(&mut agg)[0].queues.is_empty());
    assert!(agg.totals().queues.is_empty());
}

#[test]
fn measuring_queues_are_counted_apart_from_the_load_queues() {
    let names = vec!["load".to_owned(), "probe".to_owned()];
    let mut agg = Aggregator::new(0).with_measuring(names, vec![false, true]);
    agg.add_sample(&shot_of(0, 10_000_000, 200));
    agg.add_sample(&shot_of(0, 10_100_000, 503));
    agg.add_sample(&shot_of(1, 10_200_000, 200));
    agg.finish();
    let seconds = drain(&mut agg);
    let only = |groups: &[(String, GroupStats)]| {
        assert_eq!(groups.len(), 1, "{groups:?}");
        (groups[0].0.clone(), groups[0].1.len())
    };
    assert_eq!(only(&seconds[0].queues), ("load".to_owned(), 2));
    assert_eq!(only(&seconds[0].measuring), ("probe".to_owned(), 1));
    let totals = agg.totals();
    assert_eq!(only(&totals.measuring), ("probe".to_owned(), 1));
    assert_eq!(totals.overall.len(), 3);
}

#[test]
fn a_measuring_queue_alone_is_still_reported_apart() {
    let mut agg = Aggregator::new(0).with_measuring(vec!["probe".to_owned()], vec![true]);
    agg.add_sample(&shot_of(0, 10_000_000, 200));
    agg.finish();
    assert_eq!(drain(&mut agg)[0].measuring.len(), 1);
    assert!(agg.totals().queues.is_empty());
    assert_eq!(agg.totals().measuring[0].1.len(), 1);
}
