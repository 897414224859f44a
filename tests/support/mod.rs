//! Helpers shared by the integration tests.

pub mod component;
pub mod h2server;
pub mod mariadb;
pub mod memcached;
pub mod server;
pub mod shop;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The tank binary under test.
pub fn tank() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tank"))
}

/// Run `tank -c config.ini` in `dir`, at most `limit` long; returns its output.
pub fn shoot(dir: &Path, config: &str, limit: Duration) -> Output {
    shoot_with(dir, config, &[], limit)
}

/// [`shoot`] with more arguments after `-c load.ini` (`--apiary`, say).
pub fn shoot_with(dir: &Path, config: &str, args: &[&str], limit: Duration) -> Output {
    std::fs::write(dir.join("load.ini"), config).expect("write load.ini");
    let mut child = tank()
        .args(["-c", "load.ini"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tank");
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait for tank") {
            Some(_) => return child.wait_with_output().expect("tank output"),
            None if started.elapsed() > limit => {
                let _ = child.kill();
                let output = child.wait_with_output().expect("tank output");
                panic!(
                    "tank ran longer than {limit:?}\nstderr:\n{}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Start `tank -c load.ini -q` on `config` in `dir`, wait until `firing()`
/// says it fires (a busy machine may take long to start a debug build, so no
/// fixed sleep), then send `signals` 300 ms apart: its output, and how long it
/// took to exit after the last signal.
#[cfg(unix)]
pub fn interrupted(
    dir: &Path,
    config: &str,
    firing: impl Fn() -> bool,
    signals: &[i32],
) -> (Output, Duration) {
    std::fs::write(dir.join("load.ini"), config).expect("write load.ini");
    let mut child = tank()
        .args(["-c", "load.ini", "-q"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tank");
    let started = Instant::now();
    while !firing() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let output = child.wait_with_output().expect("tank output");
            panic!(
                "tank did not fire within a minute\nstderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (i, signal) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, *signal) }, 0);
    }
    let signalled = Instant::now();
    let out = child.wait_with_output().expect("tank output");
    (out, signalled.elapsed())
}

/// Fail with tank's stderr unless it exited 0.
pub fn assert_ran(out: &Output) {
    assert!(
        out.status.success(),
        "tank failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The single artifacts directory tank created under `dir/logs`.
pub fn artifacts(dir: &Path) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .expect("logs/ exists")
        .map(|entry| entry.expect("dir entry").path())
        .collect();
    assert_eq!(runs.len(), 1, "expected one run in {}", dir.display());
    runs.remove(0)
}

/// One phout row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub tag: String,
    pub interval_real: u64,
    pub connect: u64,
    pub send: u64,
    pub latency: u64,
    pub receive: u64,
    pub interval_event: u64,
    pub size_out: u64,
    pub size_in: u64,
    pub net_code: u16,
    pub proto_code: u16,
}

/// Read phout.log of a run, checking every row's shape and invariants.
pub fn phout(run: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(run.join("phout.log")).expect("phout.log");
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 12, "phout line `{line}`");
            let (secs, millis) = fields[0].split_once('.').expect("send_ts has decimals");
            assert!(
                secs.parse::<u64>().is_ok() && millis.len() == 3,
                "send_ts `{}`",
                fields[0]
            );
            let n = |i: usize| {
                fields[i]
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("field {} of `{line}`", i + 1))
            };
            let row = Row {
                tag: fields[1].to_string(),
                interval_real: n(2),
                connect: n(3),
                send: n(4),
                latency: n(5),
                receive: n(6),
                interval_event: n(7),
                size_out: n(8),
                size_in: n(9),
                net_code: n(10) as u16,
                proto_code: n(11) as u16,
            };
            assert_eq!(
                row.connect + row.send + row.latency + row.receive,
                row.interval_real,
                "parts of `{line}`"
            );
            assert!(
                row.interval_event <= row.interval_real,
                "interval_event of `{line}`"
            );
            row
        })
        .collect()
}

/// The reference Python (yandex-tank 2.0.11), from `TANK_REFERENCE_PYTHON`.
/// Missing, it fails the calling test with set-up instructions, unless
/// `TANK_SKIP_REFERENCE=1` says to skip (then `None`).
pub fn reference_python() -> Option<PathBuf> {
    match std::env::var_os("TANK_REFERENCE_PYTHON") {
        Some(python) if !python.is_empty() => Some(PathBuf::from(python)),
        _ if std::env::var("TANK_SKIP_REFERENCE").as_deref() == Ok("1") => {
            eprintln!("SKIPPED: TANK_SKIP_REFERENCE=1");
            None
        }
        _ => panic!(
            "this test needs yandex-tank 2.0.11: run `export TANK_REFERENCE_PYTHON=$(scripts/reference-venv.sh)` \
             (scripts/test.sh does it), or set TANK_SKIP_REFERENCE=1 to skip"
        ),
    }
}
