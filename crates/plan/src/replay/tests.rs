//! The replay stream and the capture's statistics against brute force.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::sessions::SessionsWriter;

/// A capture: per session, its requests' offsets (nondecreasing, at least one).
type Capture = Vec<Vec<u64>>;

/// Write `capture` as a sessions file: session `i` has id `100 + i`, request
/// `j` of it the bytes `s{i}r{j}` and the tag `t{i}`.
fn write(path: &Path, capture: &Capture) {
    // (offset, phase: S 0 / R 1 / E 2, session, request)
    let mut records = Vec::new();
    for (i, requests) in capture.iter().enumerate() {
        records.push((requests[0], 0, i, 0));
        for (j, offset) in requests.iter().enumerate() {
            records.push((*offset, 1, i, j));
        }
        records.push((*requests.last().unwrap(), 2, i, 0));
    }
    records.sort_unstable();
    let file = std::fs::File::create(path).unwrap();
    let mut out = SessionsWriter::new(std::io::BufWriter::new(file)).unwrap();
    for (offset, phase, i, j) in records {
        let id = 100 + i as u64;
        match phase {
            0 => out.begin(id, offset, "client").unwrap(),
            1 => out
                .request(
                    id,
                    offset,
                    format!("t{i}").as_bytes(),
                    format!("s{i}r{j}").as_bytes(),
                )
                .unwrap(),
            _ => out.end(id, offset).unwrap(),
        }
    }
    use std::io::Write;
    out.finish().unwrap().flush().unwrap();
}

fn settings(capture: &Capture, replay: Replay, shard: Shard) -> ReplaySettings {
    ReplaySettings {
        replay,
        shard,
        passes: Some(1),
        limit: None,
        period_us: 0,
        per_pass: capture.len() as u64,
        marking: (tank_config::Autocases::Off, false),
    }
}

/// Every request of a replay: (session, due, bytes), with its Begin and End checked.
fn fire(path: &Path, settings: ReplaySettings) -> Vec<(SessionKey, Duration, String)> {
    let mut stream = ReplayStream::open(path, settings).unwrap();
    let mut open = BTreeMap::new();
    let mut fired = Vec::new();
    while let Some(step) = stream.next_step().unwrap() {
        match step {
            Step::Begin { session, due } => {
                assert!(
                    open.insert(session, due).is_none(),
                    "{session} begins twice"
                );
            }
            Step::Request {
                session,
                due,
                bytes,
                ..
            } => {
                let begun = open.get(&session).expect("a request of an open session");
                assert!(*begun <= due);
                fired.push((session, due, String::from_utf8(bytes.to_vec()).unwrap()));
            }
            Step::End { session } => {
                assert!(open.remove(&session).is_some(), "{session} ends unopened");
            }
        }
    }
    assert!(open.is_empty(), "sessions left open: {open:?}");
    fired
}

fn captures() -> impl Strategy<Value = Capture> {
    proptest::collection::vec(
        (
            0u64..2_000_000,
            proptest::collection::vec(0u64..300_000, 1..5),
        )
            .prop_map(|(start, gaps)| {
                let mut at = start;
                gaps.iter()
                    .map(|gap| {
                        at += gap;
                        at
                    })
                    .collect()
            }),
        1..25,
    )
}

#[test]
fn requests_keep_their_sessions_order_and_bytes_and_the_capture_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    let capture = vec![vec![0, 1_000, 5_000], vec![500, 500], vec![2_000_000]];
    write(&path, &capture);
    let fired = fire(&path, settings(&capture, Replay::default(), Shard::WHOLE));
    let bytes: Vec<&str> = fired.iter().map(|(_, _, b)| b.as_str()).collect();
    assert_eq!(bytes, ["s0r0", "s1r0", "s1r1", "s0r1", "s0r2", "s2r0"]);
    assert_eq!(fired[5].1, Duration::from_secs(2));
    let stats = CaptureStats::walk(&path, Selection::ALL, 1.0).unwrap().0;
    assert_eq!((stats.sessions, stats.requests), (3, 6));
    assert_eq!(stats.duration, Duration::from_secs(2));
    assert_eq!(stats.peak_sessions, 2);
    assert_eq!(stats.largest_gap, Duration::from_micros(1_995_000));
    assert_eq!(stats.per_second.first, vec![5, 0, 1]);
    let profile = &stats.per_second;
    assert_eq!((profile.seconds, profile.min, profile.max), (3, 0, 5));
}

#[test]
fn a_capture_of_the_longest_span_is_walked_in_memory_independent_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    let last = crate::sessions::MAX_OFFSET_US;
    write(&path, &vec![vec![0, 2], vec![last]]);
    let stats = CaptureStats::walk(&path, Selection::ALL, 1.0).unwrap().0;
    assert_eq!(stats.duration, Duration::from_micros(last));
    let profile = &stats.per_second;
    let mut first = vec![0; RateProfile::SHOWN];
    first[0] = 2;
    assert_eq!(profile.first, first);
    assert_eq!(profile.seconds, last / 1_000_000 + 1);
    assert_eq!((profile.min, profile.max), (0, 2));
}

#[test]
fn per_request_makes_each_request_a_session_and_loops_shift_by_the_period() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    let capture = vec![vec![0, 1_000], vec![2_000]];
    write(&path, &capture);
    let replay = Replay {
        connections: ReplayConnections::PerRequest,
        ..Replay::default()
    };
    let mut looped = settings(&capture, replay, Shard::WHOLE);
    looped.per_pass = 3;
    looped.passes = Some(2);
    looped.period_us = 3_000;
    let fired = fire(&path, looped);
    let sessions: Vec<SessionKey> = fired.iter().map(|f| f.0).collect();
    assert_eq!(sessions, [0, 1, 2, 3, 4, 5]);
    let due: Vec<u64> = fired.iter().map(|f| f.1.as_micros() as u64).collect();
    assert_eq!(due, [0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    looped.limit = Some(4);
    assert_eq!(fire(&path, looped).len(), 4);
}

#[test]
fn a_limit_ends_the_sessions_it_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    let capture = vec![vec![0, 10, 20], vec![5, 15]];
    write(&path, &capture);
    let mut limited = settings(&capture, Replay::default(), Shard::WHOLE);
    limited.limit = Some(3);
    let bytes: Vec<String> = fire(&path, limited).into_iter().map(|f| f.2).collect();
    assert_eq!(bytes, ["s0r0", "s1r0", "s0r1"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Each kept session goes to exactly one shard, whole and in order; the
    /// shards' requests add up to the plan's; skip/offset keep one in N.
    #[test]
    fn shards_split_by_session_and_add_up(
        capture in captures(), skip in 1u64..4, offset_seed in 0u64..4, shards in 1u64..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sessions");
        write(&path, &capture);
        let replay = Replay { skip, offset: offset_seed % skip, ..Replay::default() };
        // Sessions begin in the order of their first request (ties: by index).
        let mut order: Vec<usize> = (0..capture.len()).collect();
        order.sort_by_key(|i| (capture[*i][0], *i));
        let expected: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(k, _)| *k as u64 % skip == replay.offset)
            .map(|(_, i)| *i)
            .collect();
        let mut seen: BTreeMap<SessionKey, Vec<String>> = BTreeMap::new();
        let mut total = 0;
        for index in 0..shards {
            let shard = Shard::new(index, shards).unwrap();
            for (session, _, bytes) in fire(&path, settings(&capture, replay, shard)) {
                total += 1;
                seen.entry(session).or_default().push(bytes);
            }
        }
        let whole = fire(&path, settings(&capture, replay, Shard::WHOLE));
        prop_assert_eq!(total, whole.len());
        prop_assert_eq!(seen.len(), expected.len());
        for (session, i) in seen.values().zip(&expected) {
            let requests: Vec<String> =
                (0..capture[*i].len()).map(|j| format!("s{i}r{j}")).collect();
            prop_assert_eq!(session, &requests);
        }
    }

    /// A request is due at its offset ÷ speed, to the ns.
    #[test]
    fn due_is_the_offset_over_the_speed(capture in captures(), speed in 0.1f64..20.0) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sessions");
        write(&path, &capture);
        let replay = Replay { speed, ..Replay::default() };
        let mut offsets: Vec<u64> = capture.iter().flatten().copied().collect();
        offsets.sort_unstable();
        let due: Vec<Duration> = fire(&path, settings(&capture, replay, Shard::WHOLE))
            .into_iter()
            .map(|f| f.1)
            .collect();
        let expected: Vec<Duration> = offsets
            .iter()
            .map(|us| Duration::from_nanos((*us as f64 * 1000.0 / speed).round() as u64))
            .collect();
        prop_assert_eq!(due, expected);
    }

    /// The statistics walk counts the first pass as the stream fires it: each
    /// due ms, and the kept requests `ammo_limit` counts (every shard's).
    #[test]
    fn the_statistics_walk_counts_the_first_pass_as_fired(
        capture in captures(), skip in 1u64..4, offset_seed in 0u64..4,
        (shards, index_seed) in (1u64..4, 0u64..4), speed in 0.1f64..20.0, per_request: bool,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sessions");
        write(&path, &capture);
        let connections = if per_request {
            ReplayConnections::PerRequest
        } else {
            ReplayConnections::Captured
        };
        let replay = Replay { skip, offset: offset_seed % skip, speed, connections };
        let shard = Shard::new(index_seed % shards, shards).unwrap();
        let mut settings = settings(&capture, replay, shard);
        if per_request {
            settings.per_pass = capture.iter().map(|r| r.len() as u64).sum();
        }
        let (_, first) = CaptureStats::walk(&path, settings.selection(), speed).unwrap();
        let due_ms = fire(&path, settings).into_iter().map(|f| f.1.as_millis() as u64);
        let expected = crate::planned::DueHistogram::from_due_ms(due_ms).unwrap();
        prop_assert_eq!(first.due.map(|due| due.finish()), Some(expected));
        let whole = fire(&path, ReplaySettings { shard: Shard::WHOLE, ..settings });
        prop_assert_eq!(first.kept_requests, whole.len() as u64);
    }

    /// The peak of open sessions is the brute-force maximum, over every
    /// session's start, of the sessions open then (both ends included).
    #[test]
    fn peak_concurrency_is_the_brute_force_count(capture in captures()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sessions");
        write(&path, &capture);
        let spans: Vec<(u64, u64)> =
            capture.iter().map(|r| (r[0], *r.last().unwrap())).collect();
        let brute = spans
            .iter()
            .map(|(at, _)| spans.iter().filter(|(s, e)| s <= at && at <= e).count() as u64)
            .max()
            .unwrap_or(0);
        let stats = CaptureStats::walk(&path, Selection::ALL, 1.0).unwrap().0;
        prop_assert_eq!(stats.peak_sessions, brute);
        prop_assert_eq!(stats.peak_selected, brute);
        prop_assert_eq!(stats.sessions, capture.len() as u64);
    }
}

/// A replay queue over `capture` with `options` (INI lines).
fn queue(dir: &Path, capture: &Capture, options: &str) -> tank_config::QueueConfig {
    let path = dir.join("c.sessions");
    write(&path, capture);
    let text = format!(
        "[phantom]\naddress = 127.0.0.1:80\nammo_type = sessions\nammofile = {}\n{options}\n",
        path.display()
    );
    let config = tank_config::load_str(
        &text,
        tank_config::ConfigFormat::Ini,
        Path::new("t.ini"),
        &[],
    )
    .unwrap();
    config.queues.into_iter().next().unwrap()
}

#[test]
fn a_replay_plan_states_its_model_and_counts_its_due_times() {
    let dir = tempfile::tempdir().unwrap();
    let capture = vec![vec![0, 1_500_000], vec![10, 20], vec![2_000_000]];
    let q = queue(dir.path(), &capture, "replay_speed = 2");
    let mut plan = crate::Plan::new(&q).unwrap();
    assert_eq!(
        plan.model(),
        &crate::Model::Sessions {
            pool: 2,
            speed: 2.0,
            connections: ReplayConnections::Captured
        }
    );
    let count = plan.planned_count().unwrap().clone();
    assert_eq!(count.total(), 5);
    assert_eq!(count.between_ms(0, 1), 3);
    assert_eq!(count.between_ms(750, 751), 1);
    assert_eq!(count.last_due_ms(), Some(1000));
    let mut due = Vec::new();
    while let Some(shot) = plan.next_timed().unwrap() {
        due.push(shot.due.unwrap().as_micros() as u64);
    }
    assert_eq!(due, [0, 5, 10, 750_000, 1_000_000]);
    assert_eq!(plan.capture().unwrap().peak_sessions, 2);
    // A limit that cuts the pass, and a second pass, are counted by walking.
    for (options, total) in [
        ("ammo_limit = 2", 2),
        ("ammo_limit = 5", 5),
        ("loop = 2", 10),
    ] {
        let q = queue(dir.path(), &capture, options);
        let count = crate::Plan::new(&q)
            .unwrap()
            .planned_count()
            .unwrap()
            .total();
        assert_eq!(count, total, "{options}");
    }
    // Written instances are the pool; a shard has its own sessions' peak.
    let q = queue(dir.path(), &capture, "instances = 7");
    assert_eq!(crate::Plan::new(&q).unwrap().model().instances(), 7);
    let q = queue(dir.path(), &capture, "");
    let shard = crate::Plan::sharded(&q, Shard::new(1, 2).unwrap()).unwrap();
    assert_eq!(shard.model().instances(), 1);
    assert_eq!(shard.planned_count().unwrap().total(), 2);
    let resharded = crate::Plan::new(&q)
        .unwrap()
        .shard(Shard::new(1, 2).unwrap());
    assert_eq!(resharded.model(), shard.model());
    assert_eq!(resharded.planned_count(), shard.planned_count());
}

#[test]
fn the_selection_counts_its_own_requests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    write(&path, &vec![vec![0, 1], vec![2], vec![3, 4, 5]]);
    let kept = Selection {
        skip: 2,
        ..Selection::ALL
    };
    assert_eq!(
        CaptureStats::walk(&path, kept, 1.0)
            .unwrap()
            .0
            .requests_selected,
        5
    );
    let per_request = Selection {
        per_request: true,
        ..kept
    };
    assert_eq!(
        CaptureStats::walk(&path, per_request, 1.0)
            .unwrap()
            .0
            .requests_selected,
        3
    );
}

#[test]
fn autocases_and_enum_ammo_tag_the_requests_instead_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sessions");
    let mut out = SessionsWriter::new(Vec::new()).unwrap();
    out.begin(1, 0, "").unwrap();
    out.request(1, 0, b"/a/b", b"GET /a/b?x=1 HTTP/1.1\r\n\r\n")
        .unwrap();
    out.request(1, 5, b"/c", b"GET /c HTTP/1.1\r\n\r\n")
        .unwrap();
    out.end(1, 5).unwrap();
    std::fs::write(&path, out.finish().unwrap()).unwrap();
    let capture = vec![vec![0, 5]];
    let tags = |marking| {
        let mut stream = ReplayStream::open(
            &path,
            ReplaySettings {
                marking,
                ..settings(&capture, Replay::default(), Shard::WHOLE)
            },
        )
        .unwrap();
        let mut tags = Vec::new();
        while let Some(step) = stream.next_step().unwrap() {
            if let Step::Request { tag, .. } = step {
                tags.push(String::from_utf8(tag.to_vec()).unwrap());
            }
        }
        tags
    };
    assert_eq!(tags((tank_config::Autocases::Off, false)), ["/a/b", "/c"]);
    assert_eq!(tags((tank_config::Autocases::Uri, false)), ["_a_b", "_c"]);
    assert_eq!(tags((tank_config::Autocases::Off, true)), ["#0", "#1"]);
}
