//! `--processes N`: the parent supervises its shards as one run would be: it
//! passes `--fail-on-warnings` on, its children die with it, a shard killed by a
//! signal is named, a Ctrl-C is said to be one in the merged summary, and
//! `[prometheus]` gets a port per shard. Against a scripted server on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::server::{Behaviour, Server};
use crate::support::tank;

/// How long anything here may take: far more than it needs on a busy machine.
const LIMIT: Duration = Duration::from_secs(60);

/// A child process killed when dropped (if it still runs).
struct Running(Option<Child>);

impl Running {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Start `tank -c load.ini -q --processes 2` (and `args`) in `dir` with `config`,
/// its artifacts in `dir/run`.
fn start(dir: &Path, config: &str, args: &[&str]) -> Running {
    std::fs::write(dir.join("load.ini"), config).unwrap();
    let child = tank()
        .args(["-c", "load.ini", "-q", "--processes", "2"])
        .args(args)
        .arg("-o")
        .arg(format!("tank.artifacts_dir={}", dir.join("run").display()))
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tank --processes 2");
    Running(Some(child))
}

/// Wait for `running` to end (at most [`LIMIT`]); its output.
fn finish(mut running: Running) -> Output {
    let began = Instant::now();
    loop {
        let child = running.0.as_mut().expect("a child");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            began.elapsed() < LIMIT,
            "tank --processes ran over {LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let child = running.0.take().expect("a child");
    child.wait_with_output().unwrap()
}

/// The pids of `parent`'s children, with their command lines.
fn children_of(parent: u32) -> Vec<(i32, String)> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the comm may hold spaces; the ppid follows its `)`.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            children.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    children
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Wait until both shards of `parent` run and have written phout rows (at most [`LIMIT`]).
fn wait_for_firing(parent: u32, run: &Path) -> Vec<(i32, String)> {
    let began = Instant::now();
    loop {
        let children = children_of(parent);
        let firing = (0..2).all(|i| {
            std::fs::metadata(run.join(format!("shard-{i}/phout.log"))).is_ok_and(|m| m.len() > 0)
        });
        if children.len() == 2 && firing {
            return children;
        }
        assert!(
            began.elapsed() < LIMIT,
            "the shards did not fire: {children:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn long_run(server: &Server) -> String {
    format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,60s)\nuris = /\ninstances = 10\n",
        server.addr()
    )
}

#[test]
fn fail_on_warnings_reaches_every_shard_and_exits_35_as_one_process_would() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = 127.0.0.1:{port}\nrps_schedule = const(20,2s)\nuris = /\n\
         instances = 10\ntimeout = 1s\n"
    );
    let out = finish(start(dir.path(), &config, &["--fail-on-warnings"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(35), "{stdout}");
    assert!(
        stdout.contains("every shot failed at the network level"),
        "{stdout}"
    );
}

#[test]
fn the_shards_warnings_and_exports_reach_the_merged_run_and_its_exit_code() {
    // The shards answer, but their [influx] exporter has nothing to talk to:
    // a warning no phout row shows, which the merged run must still say.
    let server = Server::start(Behaviour::KeepAlive);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let influx = closed.local_addr().unwrap().port();
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,2s)\nuris = /\ninstances = 10\n\
         [influx]\naddress = 127.0.0.1\nport = {influx}\n\
         [telegraf]\nconfig = <Monitoring><Host address=\"localhost\"/></Monitoring>\n",
        server.addr()
    );
    let out = finish(start(dir.path(), &config, &["--fail-on-warnings"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(35), "{stdout}");
    let summary = json(&dir.path().join("run/summary.json"));
    assert_eq!(summary["exit_code"], 35, "{summary}");
    let warnings: Vec<&str> = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("shards 0/2, 1/2: influx: no point was written")),
        "{warnings:?}"
    );
    assert!(
        summary["influx"]["dropped"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert_eq!(summary["influx"]["written"], 0, "{summary}");
    assert!(stdout.contains("shards 0/2, 1/2: influx:"), "{stdout}");
    // The test's planned rate: each shard's share of const(20,2s), summed.
    assert_eq!(summary["rps"]["planned"], 20.0, "{}", summary["rps"]);
    // Every shard watched this machine: the merged run shows one shard's view.
    let hosts = summary["monitoring"].as_array().unwrap();
    assert_eq!(hosts.len(), 1, "{summary}");
    assert_eq!(hosts[0]["host"], "localhost");
    assert_eq!(hosts[0]["comment"], "(shard 0/2's view)");
    let seconds = summary["timeline"]["ts"].as_array().unwrap().len();
    for values in hosts[0]["metrics"].as_object().unwrap().values() {
        assert_eq!(values.as_array().unwrap().len(), seconds, "{values}");
    }
}

#[test]
fn an_autostop_that_stopped_a_shard_is_the_merged_runs_and_names_its_criterion() {
    // Two uris, alternated over two shards: shard 1 fires every /status/503,
    // so its criterion fires though the merged rows are half 503s.
    let server = Server::start(Behaviour::StatusFromPath);
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(40,20s)\nuris = /status/200\n  /status/503\n\
         instances = 10\n[autostop]\nautostop = http(5xx,60%,2s)\n",
        server.addr()
    );
    let out = finish(start(dir.path(), &config, &[]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = json(&dir.path().join("run/summary.json"));
    let code = out.status.code().unwrap();
    assert!((21..=33).contains(&code), "exit {code}: {stdout}");
    // One story: the exit code, summary.json's and its autostop row agree.
    assert_eq!(summary["exit_code"], code, "{summary}");
    assert_eq!(summary["autostop"]["code"], code, "{summary}");
    assert_eq!(
        summary["autostop"]["criterion"], "http(5xx,60%,2s)",
        "{summary}"
    );
    assert!(
        summary["autostop"]["explanation"]
            .as_str()
            .unwrap()
            .ends_with("(in shard 1/2)"),
        "{summary}"
    );
}

#[test]
fn shards_that_cannot_start_say_why_and_a_past_start_is_refused_first() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    // Drawn arrivals without a seed: every shard refuses to plan its share.
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,2s)\nuris = /\narrivals = poisson\n",
        server.addr()
    );
    let out = finish(start(dir.path(), &config, &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("each shard would draw its own: expected `arrivals_seed` set"),
        "{stderr}"
    );
    assert!(!dir.path().join("run").exists(), "refused before any shard");
    // A shard that fails at its start (a [prometheus] port taken for shard
    // 1, the port + 1): its own error, not a merge's.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port() - 1;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,2s)\nuris = /\n\
         [prometheus]\nlisten = 127.0.0.1:{port}\n",
        server.addr()
    );
    let out = finish(start(dir.path(), &config, &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("shard 1 did not start: "), "{stderr}");
    assert!(!stderr.contains("merging the shards"), "{stderr}");
    drop(taken);
    // A start already past: refused before any shard or artifact.
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,2s)\nuris = /\n",
        server.addr()
    );
    let out = finish(start(
        dir.path(),
        &config,
        &["--start-at", "2001-01-01T00:00:00Z"],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the time is past"), "{stderr}");
    assert!(!dir.path().join("run").exists());
}

#[test]
fn the_children_die_with_the_parent() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let parent = start(dir.path(), &long_run(&server), &[]);
    let run = dir.path().join("run");
    let children = wait_for_firing(parent.id(), &run);
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(parent.id() as i32, libc::SIGKILL) }, 0);
    let began = Instant::now();
    while !children.iter().all(|(pid, _)| gone(*pid)) {
        assert!(
            began.elapsed() < LIMIT,
            "the shards outlived their parent: {children:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // They stopped as on a Ctrl-C: their records have an end, their plans were not fired.
    for i in 0..2 {
        let record = json(&run.join(format!("shard-{i}/shard.json")));
        assert_eq!(record["exit_code"], 1, "{record}");
        assert_eq!(record["stopped"]["cause"], "interrupted", "{record}");
    }
    drop(parent);
}

#[test]
fn a_shard_killed_by_a_signal_is_named_and_the_merged_run_says_it_stopped() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let parent = start(dir.path(), &long_run(&server), &[]);
    let run = dir.path().join("run");
    let children = wait_for_firing(parent.id(), &run);
    let (victim, _) = children
        .iter()
        .find(|(_, cmdline)| cmdline.contains("--shard 1/2"))
        .unwrap_or_else(|| panic!("shard 1 among {children:?}"));
    // SAFETY: signalling a process this test started (through its parent).
    assert_eq!(unsafe { libc::kill(*victim, libc::SIGKILL) }, 0);
    let out = finish(parent);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr
            .contains("tank: shard 1 stopped (killed by signal 9 (SIGKILL)): stopping the others"),
        "{stderr}"
    );
    assert!(
        stdout
            .contains("shard 1 was killed by signal 9 (SIGKILL): the rows it had not yet written"),
        "{stdout}"
    );
    // Its first shot's start is not in its record: read from its phout, to the ms.
    assert!(stdout.contains(" ms (±0.5, phout)"), "{stdout}");
    let summary = json(&run.join("summary.json"));
    assert_eq!(summary["stopped"]["cause"], "shard_lost", "{summary}");
    // The killed shard wrote no summary; the planned rate comes from the plans.
    assert!(summary["rps"]["planned"].is_number(), "{}", summary["rps"]);
    assert!(
        stdout
            .contains("\nstopped: a shard was lost (it died, or had not ended when merged) after "),
        "{stdout}"
    );
}

#[test]
fn ctrl_c_is_said_to_be_one_in_the_merged_summary() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let parent = start(dir.path(), &long_run(&server), &[]);
    let run = dir.path().join("run");
    wait_for_firing(parent.id(), &run);
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(parent.id() as i32, libc::SIGINT) }, 0);
    let out = finish(parent);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let summary = json(&run.join("summary.json"));
    assert_eq!(summary["stopped"]["cause"], "interrupted", "{summary}");
    let text = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    assert!(
        text.contains("\ninterrupted (Ctrl-C or SIGTERM) after "),
        "{text}"
    );
    // The shots due after the stop were never meant to be sent yet: no blame for them.
    assert!(!text.contains("were not sent"), "{text}");
    assert!(!stdout.contains("were not sent"), "{stdout}");
}

/// Two free loopback ports in a row.
fn two_free_ports() -> u16 {
    loop {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

#[test]
fn prometheus_is_served_by_each_shard_on_a_port_of_its_own() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let port = two_free_ports();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,2s)\nuris = /\n\
         [prometheus]\nlisten = 127.0.0.1:{port}\n",
        server.addr()
    );
    let out = finish(start(dir.path(), &config, &[]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: PathBuf = dir.path().join("run");
    for (i, port) in [(0, port), (1, port + 1)] {
        let log = std::fs::read_to_string(run.join(format!("shard-{i}/tank.log"))).unwrap();
        assert!(
            log.contains(&format!(
                "prometheus: serving http://127.0.0.1:{port}/metrics"
            )),
            "shard {i}: {log}"
        );
    }
    assert_eq!(json(&run.join("summary.json"))["shots"]["sent"], 40);
}
