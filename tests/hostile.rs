//! Hostile input end to end: configs whose numbers make no sense are refused
//! before anything starts, with the file, line, section and key and what was
//! expected, and `tank plan` ends on every one of them.
//!
//! `tests/corpus/plan-hangs/` holds the configs on which `tank plan` used to run
//! without end (see its README.md); each must now fail at once with the exact
//! message in its `expected_error.txt`.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Behaviour, Server};
use crate::support::tank;

/// The longest a refusal may take: it comes before any ammo is read, in milliseconds,
/// so this only leaves room for a busy machine.
const LIMIT: Duration = Duration::from_secs(10);

/// Run `command` in `dir` at most [`LIMIT`]; a run that goes on is killed and fails the test.
fn bounded(mut command: Command, dir: &Path) -> Output {
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tank");
    let started = Instant::now();
    while child.try_wait().expect("wait for tank").is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("tank output");
            panic!(
                "tank ran longer than {LIMIT:?} in {}\nstderr:\n{}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("tank output")
}

#[test]
fn every_config_that_made_tank_plan_run_forever_is_now_a_located_error() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/plan-hangs");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus)
        .expect("tests/corpus/plan-hangs")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 15, "the 15 regression configs");
    for case in cases {
        let config = ["load.ini", "load.yaml"]
            .into_iter()
            .find(|name| case.join(name).is_file())
            .unwrap_or_else(|| panic!("{}: no load.ini or load.yaml", case.display()));
        let expected = std::fs::read_to_string(case.join("expected_error.txt"))
            .unwrap_or_else(|e| panic!("{}: expected_error.txt: {e}", case.display()));
        let mut command = tank();
        command.args(["plan", "-c", config]);
        let out = bounded(command, &case);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", case.display());
        assert_eq!(stderr, expected, "{}", case.display());
        assert!(out.stdout.is_empty(), "{}: no plan printed", case.display());
    }
}

#[test]
fn a_negative_rate_fires_nothing() {
    // yandex-tank reads const(-9999999999,1s) as ten billion shots a second.
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(2,1s)\n  const(-9999999999,1s)\nuris = /s\n",
        server.addr()
    );
    std::fs::write(dir.path().join("load.ini"), config).expect("write load.ini");
    let mut command = tank();
    command.args(["-c", "load.ini"]);
    let out = bounded(command, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "load.ini:3: [phantom] rps_schedule: step `const(-9999999999,1s)`: \
             `-9999999999` is negative: expected a number of 0 or more"
        ),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "no shot was fired");
}

#[test]
fn an_override_past_a_bound_is_an_error_naming_the_override() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = "[phantom]\naddress = localhost:80\nrps_schedule = const(1,1s)\nuris = /s\n";
    std::fs::write(dir.path().join("load.ini"), config).expect("write load.ini");
    let plan = |schedule: &str| {
        let mut command = tank();
        command.args(["plan", "-c", "load.ini", "-o", schedule]);
        bounded(command, dir.path())
    };
    // The highest rate, for a millisecond: 10,000 shots.
    let at_bound = plan("phantom.rps_schedule=const(10000000,0.001s)");
    assert!(
        at_bound.status.success(),
        "{}",
        String::from_utf8_lossy(&at_bound.stderr)
    );
    assert!(
        String::from_utf8_lossy(&at_bound.stdout).contains("shots          10000,"),
        "{}",
        String::from_utf8_lossy(&at_bound.stdout)
    );
    let past = plan("phantom.rps_schedule=const(10000001,1s)");
    assert_eq!(past.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&past.stderr),
        "tank: error: load.ini: -o phantom.rps_schedule: step `const(10000001,1s)`: rate `10000001` \
         is too high: expected at most 10,000,000 shots a second in one queue (spread a larger load \
         over several queues)\n"
    );
}
