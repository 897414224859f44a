//! Autostop end to end: tank shoots at its in-process origin simulator, the
//! recipe turns bad mid-run, and tank must stop itself within the criterion's
//! period + 2 s, with the criterion's exit code and explanation.

use std::time::{Duration, Instant};

use crate::support::{artifacts, shoot};

/// When the recipe turns bad, s from the start.
const SWITCH_S: f64 = 2.0;

fn run(
    recipe: &str,
    criterion: &str,
    extra: &str,
) -> (
    std::process::Output,
    Duration,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = origin\nrps_schedule = const(40,40s)\nuris = /\nheader_http = 1.1\ntimeout = 2s\n\n\
         [origin]\nrecipe_json = {recipe}\n\n[autostop]\nautostop = {criterion}\n{extra}"
    );
    let started = Instant::now();
    let out = shoot(dir.path(), &config, Duration::from_secs(40));
    let elapsed = started.elapsed();
    let run = artifacts(dir.path());
    (out, elapsed, run, dir)
}

fn assert_stopped(
    out: &std::process::Output,
    elapsed: Duration,
    run: &std::path::Path,
    code: i32,
    period_s: f64,
    criterion: &str,
) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("tank: autostop: {criterion}")),
        "{stdout}"
    );
    let report = std::fs::read_to_string(run.join("autostop_report.txt")).unwrap();
    assert!(report.starts_with(criterion), "{report}");
    // Stop within the period + 2 s of the switch, plus start-up (the process, the
    // simulator) and one-second ticks: 2 s of slack, so a busy test machine does not
    // fail it while a stop that comes seconds late still does.
    let limit = Duration::from_secs_f64(SWITCH_S + period_s + 2.0 + 2.0);
    assert!(
        elapsed <= limit,
        "stopped after {elapsed:?}, limit {limit:?}"
    );
    let summary = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert!(
        summary.contains(&format!("\"exit_code\": {code}"))
            || summary.contains(&format!("\"exit_code\":{code}")),
        "{summary}"
    );
}

#[test]
fn http_errors_stop_the_run_with_code_22() {
    let recipe = r#"{"stages": [{"at": 0, "status": 200}, {"at": "2s", "status": 503}]}"#;
    let (out, elapsed, run, _dir) = run(recipe, "http(5xx,50%,2s)", "");
    assert_stopped(&out, elapsed, &run, 22, 2.0, "http(5xx,50%,2s)");
}

#[test]
fn slow_responses_stop_the_run_with_code_21() {
    let recipe = r#"{"stages": [{"at": 0, "status": 200}, {"at": "2s", "status": 200, "latency": "300ms"}]}"#;
    let (out, elapsed, run, _dir) = run(recipe, "time(100ms,2s)", "");
    assert_stopped(&out, elapsed, &run, 21, 2.0, "time(100ms,2s)");
}

#[test]
fn resets_stop_the_run_with_code_23() {
    let recipe = r#"{"stages": [{"at": 0, "status": 200}, {"at": "2s", "fault": "reset"}]}"#;
    let (out, elapsed, run, _dir) = run(recipe, "net(104,50%,2s)", "");
    assert_stopped(&out, elapsed, &run, 23, 2.0, "net(104,50%,2s)");
}

#[test]
fn rcassert_turns_a_listed_code_into_success() {
    let recipe = r#"{"stages": [{"at": 0, "status": 200}, {"at": "2s", "status": 503}]}"#;
    let (out, _, run, _dir) = run(recipe, "http(5xx,50%,2s)", "\n[rcassert]\npass = 22\n");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(run.join("autostop_report.txt").exists());
}

#[test]
fn a_healthy_run_ends_with_its_schedule_and_code_0() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[phantom]\naddress = origin\nrps_schedule = const(20,3s)\nuris = /\n\n\
                  [origin]\nrecipe_json = {\"stages\": [{\"at\": 0, \"status\": 200}]}\n\n\
                  [autostop]\nautostop = http(5xx,10%,1s) time(1s,1s)\n";
    let out = shoot(dir.path(), config, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = artifacts(dir.path());
    assert!(!run.join("autostop_report.txt").exists());
    for file in ["summary.json", "report.html", "test_data.log", "phout.log"] {
        assert!(run.join(file).exists(), "{file}");
    }
    // One JSON line per second with responses, in yandex-tank's shape.
    let lines = std::fs::read_to_string(run.join("test_data.log")).unwrap();
    assert!((3..=8).contains(&lines.lines().count()), "{lines}");
    assert!(
        lines.lines().all(|l| l.starts_with("{\"data\":{\"ts\":")),
        "{lines}"
    );
}

#[test]
fn a_bad_criterion_is_a_config_error_before_any_shot() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[phantom]\naddress = 127.0.0.1:1\nrps_schedule = const(1,1s)\nuris = /\n\n[autostop]\nautostop = quantile(42,100ms,2s)\n";
    let out = shoot(dir.path(), config, Duration::from_secs(10));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[autostop]") && stderr.contains("quantile(42"),
        "{stderr}"
    );
}
