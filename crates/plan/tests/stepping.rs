//! The stepper end to end: a tiny config and ammo in, exact shots out.

use std::path::Path;

use proptest::prelude::*;
use tank_config::{load_str, ConfigFormat, QueueConfig};
use tank_plan::{stpd, Plan, PlanError};

/// A temp dir holding `ammo` (bytes) and a config whose [phantom] has `options`.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(ammo: &[u8]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("ammo"), ammo).expect("write ammo");
        Case { dir }
    }

    fn queue(&self, options: &str) -> QueueConfig {
        let ammo = self.dir.path().join("ammo");
        let text = format!(
            "[phantom]\naddress = 127.0.0.1:80\nammofile = {}\n{options}\n",
            ammo.display()
        );
        let config =
            load_str(&text, ConfigFormat::Ini, Path::new("test.ini"), &[]).expect("valid config");
        config.queues.into_iter().next().expect("one queue")
    }

    /// (due, marker, missile) of every shot.
    fn shots(&self, options: &str) -> Result<Vec<(i64, String, String)>, PlanError> {
        shots_of(&self.queue(options))
    }
}

fn shots_of(queue: &QueueConfig) -> Result<Vec<(i64, String, String)>, PlanError> {
    let mut plan = Plan::new(queue)?;
    let mut out = Vec::new();
    while let Some(shot) = plan.next_shot()? {
        out.push((
            shot.due_ms,
            String::from_utf8_lossy(shot.marker).into_owned(),
            String::from_utf8_lossy(shot.missile).into_owned(),
        ));
    }
    Ok(out)
}

fn stpd_of(queue: &QueueConfig) -> Vec<u8> {
    let mut plan = Plan::new(queue).expect("plan");
    let mut out = Vec::new();
    while let Some(shot) = plan.next_shot().expect("shot") {
        stpd::push_record(&mut out, shot.due_ms, shot.marker, shot.missile);
    }
    out
}

const TWO_CHUNKS: &[u8] = b"5 a\nGET 1\n\r\n5\nGET 2\n";

#[test]
fn phantom_chunks_are_sent_verbatim_with_their_tags() {
    let case = Case::new(TWO_CHUNKS);
    let stpd = stpd_of(&case.queue("rps_schedule = const(2,1s)"));
    assert_eq!(stpd, b"5 0 a\nGET 1\n5 500 \nGET 2\n");
}

#[test]
fn ammo_limit_gives_exactly_that_many_shots() {
    let case = Case::new(TWO_CHUNKS);
    assert_eq!(
        case.shots("rps_schedule = const(10,1s)\nammo_limit = 3")
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn ammo_limit_zero_is_an_error_as_in_the_reference() {
    // The config already refuses it, naming the line; a queue built by hand is refused too.
    let case = Case::new(TWO_CHUNKS);
    let mut queue = case.queue("rps_schedule = const(10,1s)");
    queue.ammo_limit = 0;
    let error = shots_of(&queue).unwrap_err().to_string();
    assert!(error.contains("ammo_limit = 0"), "{error}");
}

#[test]
fn blank_schedule_fires_one_pass_at_zero_like_the_reference() {
    let case = Case::new(TWO_CHUNKS);
    let shots = case.shots("rps_schedule =").unwrap();
    let dues: Vec<i64> = shots.iter().map(|s| s.0).collect();
    assert_eq!(dues, [0, 0]);
}

#[test]
fn loop_limits_passes_under_an_rps_schedule() {
    let case = Case::new(TWO_CHUNKS);
    assert_eq!(
        case.shots("rps_schedule = const(100,1s)\nloop = 2")
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn instances_schedule_reads_the_ammo_once_by_default() {
    let case = Case::new(TWO_CHUNKS);
    let shots = case.shots("instances_schedule = ramp(3, 2s)").unwrap();
    let dues: Vec<i64> = shots.iter().map(|s| s.0).collect();
    assert_eq!(dues, [0, 1000]);
    let looped = case
        .shots("instances_schedule = ramp(3, 2s)\nloop = 3")
        .unwrap();
    let dues: Vec<i64> = looped.iter().map(|s| s.0).collect();
    assert_eq!(dues, [0, 1000, 2000, 0, 0, 0]);
}

#[test]
fn instances_schedule_without_an_end_is_an_error() {
    let case = Case::new(TWO_CHUNKS);
    let error = case
        .shots("instances_schedule = ramp(3, 2s)\nloop = 0")
        .unwrap_err();
    assert!(error.to_string().contains("no end"), "{error}");
}

#[test]
fn zero_size_chunk_starts_the_next_pass() {
    let case = Case::new(b"5 a\nGET 1\n0\n5 b\nGET 2\n");
    let tags: Vec<String> = case
        .shots("rps_schedule = const(3,1s)")
        .unwrap()
        .into_iter()
        .map(|s| s.1)
        .collect();
    assert_eq!(tags, ["a", "a", "a"]);
}

#[test]
fn negative_size_takes_the_rest_of_the_file() {
    let case = Case::new(b"3 a\nGET\n-1 rest\nGET 1\n\n");
    let shots = case.shots("rps_schedule = const(3,1s)").unwrap();
    let chunks: Vec<(&str, &str)> = shots.iter().map(|s| (s.1.as_str(), s.2.as_str())).collect();
    assert_eq!(chunks, [("a", "GET"), ("rest", "GET 1\n\n"), ("a", "GET")]);
}

#[test]
fn truncated_chunk_names_file_and_offset() {
    let case = Case::new(b"50 a\nGET /\n");
    let error = case
        .shots("rps_schedule = const(1,1s)")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("ammo: byte 11") && error.contains("read 6 bytes instead of 50"),
        "{error}"
    );
}

#[test]
fn non_numeric_size_is_an_error_with_the_header() {
    let case = Case::new(b"5 a\nGET 1\nfive b\n");
    let error = case
        .shots("rps_schedule = const(5,1s)")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`five b`") && error.contains("<size> [tag]"),
        "{error}"
    );
}

#[test]
fn phantom_ammo_not_starting_with_a_digit_is_read_as_uri() {
    let case = Case::new(b"/a tag1\n/b\n");
    let shots = case.shots("rps_schedule = const(2,1s)").unwrap();
    assert_eq!(
        shots[0],
        (0, "tag1".into(), "GET /a HTTP/1.0\r\n\r\n".into())
    );
    assert_eq!(
        shots[1],
        (500, String::new(), "GET /b HTTP/1.0\r\n\r\n".into())
    );
}

#[test]
fn empty_phantom_file_is_an_error() {
    let case = Case::new(b"");
    assert!(case
        .shots("rps_schedule = const(2,1s)")
        .unwrap_err()
        .to_string()
        .contains("empty"));
}

#[test]
fn uri_headers_persist_across_loops_and_config_headers_come_first() {
    let case = Case::new(b"/a\n[X-Late: 1]\n/b\n");
    let shots = case
        .shots("rps_schedule = const(3,1s)\nheaders = [Host: h]\nheader_http = 1.1")
        .unwrap();
    let missiles: Vec<&str> = shots.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(
        missiles,
        [
            "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /b HTTP/1.1\r\nHost: h\r\nX-Late: 1\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: h\r\nX-Late: 1\r\n\r\n",
        ]
    );
}

#[test]
fn uri_file_with_only_headers_is_an_error() {
    let case = Case::new(b"[Host: a]\n\n");
    let error = case
        .shots("rps_schedule = const(2,1s)\nammo_type = uri")
        .unwrap_err()
        .to_string();
    assert!(error.contains("no requests"), "{error}");
}

#[test]
fn uripost_builds_posts_with_content_length() {
    let case = Case::new(b"[Host: a]\n5 /p post\nhello\n0 /empty\n");
    let shots = case
        .shots("rps_schedule = const(2,1s)\nammo_type = uripost")
        .unwrap();
    assert_eq!(shots[0].1, "post");
    assert_eq!(
        shots[0].2,
        "POST /p HTTP/1.0\r\nContent-Length: 5\r\nHost: a\r\n\r\nhello"
    );
    assert_eq!(shots[1].2, "POST /empty HTTP/1.0\r\nHost: a\r\n\r\n");
}

#[test]
fn access_log_replays_get_lines_with_their_version() {
    let log = b"h - - [t] \"GET /a HTTP/1.1\" 200 1\nh - - [t] \"POST /b HTTP/1.1\" 200 1\nh - - [t] \"GET /c HTTP/1.0\" 200 1\n";
    let case = Case::new(log);
    let shots = case
        .shots("rps_schedule = const(3,1s)\nammo_type = access\nheaders = [Host: a]")
        .unwrap();
    let missiles: Vec<&str> = shots.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(
        missiles,
        [
            "GET /a HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /c HTTP/1.0\r\nHost: a\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
        ]
    );
}

#[test]
fn access_log_without_usable_lines_is_an_error_not_a_hang() {
    let case = Case::new(b"nothing here\n");
    let error = case
        .shots("rps_schedule = const(3,1s)\nammo_type = access")
        .unwrap_err()
        .to_string();
    assert!(error.contains("gave no requests"), "{error}");
}

#[test]
fn autocases_and_enum_mark_untagged_missiles_only() {
    let case = Case::new(b"/x/y/z\n/q tagged\n");
    let tags: Vec<String> = case
        .shots("rps_schedule = const(4,1s)\nautocases = 1\nenum_ammo = 1")
        .unwrap()
        .into_iter()
        .map(|s| s.1)
        .collect();
    assert_eq!(tags, ["_x#0", "tagged", "_x#1", "tagged"]);
}

#[test]
fn chosen_cases_filter_before_pairing() {
    let case = Case::new(b"/a one\n/b two\n/c one\n");
    let shots = case
        .shots("rps_schedule = const(3,1s)\nchosen_cases = one")
        .unwrap();
    let uris: Vec<(i64, &str)> = shots.iter().map(|s| (s.0, &s.2[4..6])).collect();
    assert_eq!(uris, [(0, "/a"), (333, "/c"), (666, "/a")]);
}

#[test]
fn chosen_cases_matching_nothing_is_an_error_not_a_hang() {
    let case = Case::new(b"5 a\nGET 1\n");
    let error = case
        .shots("rps_schedule = const(3,1s)\nchosen_cases = zzz")
        .unwrap_err()
        .to_string();
    assert!(error.contains("chosen_cases"), "{error}");
    // With a loop limit the reference simply ends: no shots, no error.
    assert_eq!(
        case.shots("rps_schedule = const(3,1s)\nchosen_cases = zzz\nloop = 2")
            .unwrap()
            .len(),
        0
    );
}

/// `options`' shots over `ammo`, on a thread of their own: a plan that does not
/// end within 20 s fails the test instead of hanging the test run.
fn shots_within_20s(ammo: &[u8], options: &str) -> Result<Vec<(i64, String, String)>, PlanError> {
    let case = Case::new(ammo);
    let queue = case.queue(options);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(shots_of(&queue));
        drop(case);
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("the plan of `{options}` did not end within 20 s"))
}

#[test]
fn a_pass_with_no_requests_under_the_largest_loop_ends_the_plan_at_once() {
    // The reference reads all 10^11 passes before it ends with nothing.
    let huge_loop = "loop = 100000000000";
    for (ammo, ammo_type) in [
        (&b"no request here\n"[..], "access"),
        (b"0\n5\nGET 1\n", "phantom"),
    ] {
        let options = format!("rps_schedule = const(3,1s)\nammo_type = {ammo_type}\n{huge_loop}");
        assert_eq!(
            shots_within_20s(ammo, &options).unwrap().len(),
            0,
            "{ammo_type}"
        );
        let options =
            format!("instances_schedule = const(2,1s)\nammo_type = {ammo_type}\n{huge_loop}");
        assert_eq!(
            shots_within_20s(ammo, &options).unwrap().len(),
            0,
            "{ammo_type}"
        );
    }
}

#[test]
fn chosen_cases_matching_nothing_under_the_largest_loop_end_the_plan_at_once() {
    let shots = shots_within_20s(
        b"5 a\nGET 1\n",
        "rps_schedule = const(3,1s)\nchosen_cases = zzz\nloop = 100000000000",
    );
    assert_eq!(shots.unwrap().len(), 0);
}

#[test]
fn an_enumerated_chosen_case_out_of_reach_is_an_error_not_a_hang() {
    // `#5` comes in the sixth pass over a one-request file.
    let found = shots_within_20s(
        b"5\nGET 1\n",
        "rps_schedule = const(1,1s)\nenum_ammo = 1\nchosen_cases = #5",
    );
    assert_eq!(found.unwrap()[0].1, "#5");
    // `#N` 10^11 requests or more away is never waited for.
    for far in ["#200000000000", "#18446744073709551615"] {
        let error = shots_within_20s(
            b"5\nGET 1\n",
            &format!("rps_schedule = const(1,1s)\nenum_ammo = 1\nchosen_cases = {far}"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("chosen_cases"), "{far}: {error}");
    }
}

#[test]
fn uris_cycle_with_verbatim_headers() {
    let case = Case::new(b"");
    let text = "[phantom]\naddress = a:1\nrps_schedule = const(3,1s)\nuris = /1\n  /2\nheaders = [Host:x]\n";
    let config = load_str(text, ConfigFormat::Ini, Path::new("u.ini"), &[]).unwrap();
    let shots = shots_of(&config.queues[0]).unwrap();
    let missiles: Vec<&str> = shots.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(
        missiles,
        [
            "GET /1 HTTP/1.0\r\nHost:x\r\n\r\n",
            "GET /2 HTTP/1.0\r\nHost:x\r\n\r\n",
            "GET /1 HTTP/1.0\r\nHost:x\r\n\r\n"
        ]
    );
    drop(case);
}

#[test]
fn gzip_ammo_is_detected_by_content() {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(TWO_CHUNKS).unwrap();
    let case = Case::new(&encoder.finish().unwrap());
    let plain = Case::new(TWO_CHUNKS);
    assert_eq!(
        stpd_of(&case.queue("rps_schedule = const(5,1s)")),
        stpd_of(&plain.queue("rps_schedule = const(5,1s)"))
    );
}

#[test]
fn stpd_file_is_played_as_written() {
    let source = Case::new(TWO_CHUNKS);
    let stepped = stpd_of(&source.queue("rps_schedule = const(4,1s)"));
    let replay = Case::new(&stepped);
    let ammo = replay.dir.path().join("ammo");
    let text = format!("[phantom]\naddress = a:1\nstpd_file = {}\n", ammo.display());
    let config = load_str(&text, ConfigFormat::Ini, Path::new("s.ini"), &[]).unwrap();
    assert_eq!(stpd_of(&config.queues[0]), stepped);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn phantom_round_trip(chunks in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 1..40), "[a-z]{0,6}"), 1..8)) {
        let mut ammo = Vec::new();
        for (missile, tag) in &chunks {
            ammo.extend_from_slice(format!("{} {}\n", missile.len(), tag).as_bytes());
            ammo.extend_from_slice(missile);
            ammo.push(b'\n');
        }
        let case = Case::new(&ammo);
        let queue = case.queue(&format!("rps_schedule = const({},1s)\nloop = 1", chunks.len()));
        let mut plan = Plan::new(&queue).unwrap();
        for (missile, tag) in &chunks {
            let shot = plan.next_shot().unwrap().unwrap();
            prop_assert_eq!(shot.missile, missile.as_slice());
            prop_assert_eq!(shot.marker, tag.as_bytes());
        }
        prop_assert!(plan.next_shot().unwrap().is_none());
    }

    #[test]
    fn arbitrary_ammo_never_panics(ammo in proptest::collection::vec(any::<u8>(), 0..200), kind in 0usize..4) {
        let case = Case::new(&ammo);
        let ammo_type = ["phantom", "uri", "uripost", "access"][kind];
        let queue = case.queue(&format!("rps_schedule = const(50,1s)\nammo_type = {ammo_type}\nautocases = 2"));
        if let Ok(mut plan) = Plan::new(&queue) {
            let mut count = 0;
            while let Ok(Some(_)) = plan.next_shot() {
                count += 1;
            }
            prop_assert!(count <= 50);
        }
    }
}

#[test]
fn drawn_arrivals_with_a_seed_give_the_same_stpd_bytes_and_another_seed_others() {
    let case = Case::new(TWO_CHUNKS);
    let seeded = |seed: u64| {
        case.queue(&format!(
            "rps_schedule = const(2000,2s) line(2000,100,2s)\narrivals = poisson\narrivals_seed = {seed}"
        ))
    };
    let one = stpd_of(&seeded(7));
    assert_eq!(one, stpd_of(&seeded(7)));
    assert_ne!(one, stpd_of(&seeded(8)));
    // The same shots as evenly spaced ones, in the same order: only their times differ.
    let uniform = case
        .shots("rps_schedule = const(2000,2s) line(2000,100,2s)")
        .unwrap();
    let drawn = shots_of(&seeded(7)).unwrap();
    assert_eq!(drawn.len(), uniform.len());
    assert!(drawn
        .iter()
        .zip(&uniform)
        .all(|(d, u)| d.1 == u.1 && d.2 == u.2));
    assert_ne!(drawn, uniform);
}

#[test]
fn drawn_due_times_keep_the_ns_and_the_ms_is_their_truncation() {
    let case = Case::new(TWO_CHUNKS);
    let queue = case.queue("rps_schedule = const(10000,1s)\narrivals = poisson\narrivals_seed = 1");
    let mut plan = Plan::new(&queue).unwrap();
    let mut sub_ms = 0;
    while let Some(timed) = plan.next_timed().unwrap() {
        let due = timed.due.expect("an rps plan times every shot");
        assert_eq!(due.as_millis() as i64, timed.shot.due_ms);
        assert_eq!(due.as_nanos() as i64, timed.shot.due_ns);
        sub_ms += u64::from(due.subsec_nanos() % 1_000_000 != 0);
    }
    assert!(
        sub_ms > 9_000,
        "{sub_ms} of 10,000 due times are finer than a ms"
    );
}

#[test]
fn drawn_planned_counts_are_the_shots_the_plan_fires_each_second() {
    let case = Case::new(TWO_CHUNKS);
    let queue = case.queue(
        "rps_schedule = line(100,5000,3s) const(300,2s)\narrivals = fb_ia\narrivals_seed = 3",
    );
    let plan = Plan::new(&queue).unwrap();
    let count = plan.planned_count().expect("known in closed form").clone();
    let due: Vec<i64> = shots_of(&queue).unwrap().into_iter().map(|s| s.0).collect();
    assert_eq!(count.total(), due.len() as u64);
    for second in 0..6 {
        let (from, to) = (second * 1000 + 270, second * 1000 + 1270);
        let fired = due.iter().filter(|ms| (from..to).contains(*ms)).count() as u64;
        assert_eq!(count.between_ms(from, to), fired, "{from}..{to} ms");
    }
}
