//! A test run in process, through the library the CLI calls (`tank_run::run`):
//! the origin simulator, the engine and the results thread in this process,
//! no binary spawned, no output polled.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tank_run::{Handle, LiveState, Notice, Observer, Silent, Spec, Started, Verdict};
use tank_stats::aggregate::SecondStats;

/// A config at `dir/load.ini` whose queue shoots tank's own origin simulator.
fn spec(dir: &Path, schedule: &str) -> Spec {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin/steady.json");
    let path = dir.join("load.ini");
    std::fs::write(
        &path,
        format!(
            "[phantom]\naddress = origin\nuris = /\nrps_schedule = {schedule}\n\
             [origin]\nrecipe = {}\n[tank]\nartifacts_base_dir = {}\n",
            recipe.display(),
            dir.join("logs").display()
        ),
    )
    .unwrap();
    Spec::new(tank_config::load(&path, &[]).unwrap())
}

/// Records what the run showed it.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<(u64, Vec<u64>, usize)>>);

impl Observer for Seen {
    fn started(&mut self, started: &Started<'_>) {
        self.0.lock().unwrap().0 = started.instances;
    }

    fn seconds(&mut self, seconds: &[SecondStats], _: &LiveState<'_>) {
        let mut seen = self.0.lock().unwrap();
        seen.1.extend(seconds.iter().map(|s| s.sent));
    }

    fn notice(&mut self, _: &Notice<'_>) {
        self.0.lock().unwrap().2 += 1;
    }
}

#[test]
fn a_test_runs_in_process_and_says_how_it_went() {
    let dir = tempfile::tempdir().unwrap();
    // Idle seconds after the shots: a starved machine still sends every one.
    let spec = spec(dir.path(), "const(50,1s) const(0,2s)");
    let seen = Seen::default();
    let outcome = tank_run::run(&spec, Box::new(seen.clone()), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    assert_eq!(outcome.exit_code, 0);
    let shots = &outcome.summary.shots;
    assert_eq!(
        (shots.planned, shots.sent, shots.unsent),
        (Some(50), Some(50), Some(0))
    );
    assert_eq!(outcome.summary.proto_codes.get("200"), Some(&50));
    assert!(outcome.summary.warnings.is_empty());
    let phout = std::fs::read_to_string(outcome.artifacts.join("phout.log")).unwrap();
    assert_eq!(phout.lines().count(), 50);
    assert!(outcome.text.contains("shots planned 50, sent 50, unsent 0"));
    let (instances, sent, notices) = seen.0.lock().unwrap().clone();
    assert_eq!(instances, 1000);
    assert_eq!(sent.iter().sum::<u64>(), 50);
    assert_eq!(notices, 0);
    // The reported target is the endpoint shot, not the word `origin`.
    let target = &outcome.summary.meta.facts[0];
    assert_eq!(target.0, "[phantom] target");
    assert!(target.1.starts_with("127.0.0.1:"), "{target:?}");
}

/// Says when the first shot's sample arrives.
struct FirstSample(Option<std::sync::mpsc::Sender<()>>);

impl Observer for FirstSample {
    fn sample(&mut self, _: &tank_stats::Sample) {
        if let Some(fired) = self.0.take() {
            let _ = fired.send(());
        }
    }
    fn seconds(&mut self, _: &[SecondStats], _: &LiveState<'_>) {}
    fn notice(&mut self, _: &Notice<'_>) {}
}

#[test]
fn a_handle_stops_a_run_from_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "const(100,60s)");
    let handle = Handle::default();
    let (fired, first) = std::sync::mpsc::channel();
    let stopper = {
        let handle = handle.clone();
        std::thread::spawn(move || {
            // Once it fires, however long a busy machine takes to start it.
            let _ = first.recv_timeout(Duration::from_secs(60));
            handle.stop();
        })
    };
    let outcome = tank_run::run(&spec, Box::new(FirstSample(Some(fired))), &handle).unwrap();
    stopper.join().unwrap();
    assert_eq!(outcome.verdict, Verdict::Interrupted);
    assert_eq!(outcome.exit_code, 1);
    let shots = &outcome.summary.shots;
    let sent = shots.sent.unwrap();
    // Stopped long before the plan's end (how many it fired depends on the machine).
    assert!((1..6000).contains(&sent), "{sent} shots");
    assert_eq!(shots.planned, Some(6000));
    assert_eq!(shots.unsent, Some(6000 - sent));
}

#[test]
fn bad_autostop_criteria_fail_before_the_artifacts_exist() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), "const(1,1s)");
    spec.config.autostop.criteria = vec!["http(5xx,oops,3s)".into()];
    let error = tank_run::run(&spec, Box::new(Silent), &Handle::default()).unwrap_err();
    assert!(error.to_string().contains("[autostop]"), "{error}");
    assert!(!dir.path().join("logs").exists());
}

#[test]
fn several_queues_are_shown_each_as_its_own_group() {
    let dir = tempfile::tempdir().unwrap();
    // Two idle seconds after the shots: a shot a starved machine starts
    // after its schedule's end would be unsent, and these counts exact.
    let mut spec = spec(dir.path(), "const(30,1s) const(0,2s)");
    let path = spec.config.path.clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(
        "[origin]",
        "[phantom-2]\nuris = /other\nrps_schedule = const(20,1s) const(0,2s)\n[origin]",
    );
    std::fs::write(&path, text).unwrap();
    spec.config = tank_config::load(&path, &[]).unwrap();
    let outcome = tank_run::run(&spec, Box::new(Silent), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    let queues: Vec<_> = outcome
        .summary
        .queues
        .iter()
        .map(|q| (q.queue.as_str(), q.count))
        .collect();
    assert_eq!(queues, vec![("phantom", 30), ("phantom-2", 20)]);
    let json = std::fs::read_to_string(outcome.artifacts.join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["queues"][1]["queue"], "phantom-2");
    assert_eq!(json["queues"][1]["count"], 20);
    let text = std::fs::read_to_string(outcome.artifacts.join("summary.txt")).unwrap();
    assert!(text.contains("\nphantom-2 "), "{text}");
    // Untagged shots of both queues: still one "(no tag)" row, beside the queue rows.
    assert_eq!(outcome.summary.tags.len(), 1);
    // report.html draws the queue table (Chromium as the report tests find it).
    if let Some(browser) = crate::report::chromium() {
        let page = outcome.artifacts.join("report.html");
        let (dom, log) = crate::report::render(&browser, &page);
        crate::report::assert_rendered("report.html", &dom, &log, 1);
        assert!(dom.contains("Per queue"), "report.html lacks `Per queue`");
        assert!(
            dom.contains("phantom-2"),
            "report.html lacks the second queue"
        );
    }
}

#[test]
fn a_measuring_queue_is_reported_apart_from_the_load() {
    let dir = tempfile::tempdir().unwrap();
    // Idle seconds after the shots, as above: the counts are exact.
    let mut spec = spec(dir.path(), "const(30,1s) const(0,2s)");
    let path = spec.config.path.clone();
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(
        "[origin]",
        "[phantom-probe]\nuris = /probe\nrps_schedule = const(5,1s) const(0,2s)\nmeasure = 1\n[origin]",
    );
    std::fs::write(&path, text).unwrap();
    spec.config = tank_config::load(&path, &[]).unwrap();
    let outcome = tank_run::run(&spec, Box::new(Silent), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    let rows = |rows: &[tank_report::summary::QueueRow]| -> Vec<(String, u64)> {
        rows.iter().map(|q| (q.queue.clone(), q.count)).collect()
    };
    assert_eq!(rows(&outcome.summary.queues), vec![("phantom".into(), 30)]);
    assert_eq!(
        rows(&outcome.summary.measuring),
        vec![("phantom-probe".into(), 5)]
    );
    assert_eq!(outcome.summary.shots.responses, 35);
    let json = std::fs::read_to_string(outcome.artifacts.join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["measuring"][0]["queue"], "phantom-probe");
    assert_eq!(
        json["measuring"][0]["quantiles_ms"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let text = std::fs::read_to_string(outcome.artifacts.join("summary.txt")).unwrap();
    assert!(text.contains("\nmeasuring (measure = 1) "), "{text}");
    assert!(text.contains("\nphantom-probe "), "{text}");
    if let Some(browser) = crate::report::chromium() {
        let page = outcome.artifacts.join("report.html");
        let (dom, log) = crate::report::render(&browser, &page);
        crate::report::assert_rendered("report.html", &dom, &log, 1);
        assert!(
            dom.contains("Measuring queues"),
            "report.html lacks the measuring queues"
        );
    }
}
