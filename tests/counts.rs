//! The counts a user reads (planned, sent, unsent, responses) agree in every
//! place they are shown, and failures that cost data are loud: docs/results.md
//! defines them. Against scripted servers on 127.0.0.1 that record every request.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::support::server::{Behaviour, Server};
use crate::support::{artifacts, interrupted, phout, shoot, tank};

const LIMIT: Duration = Duration::from_secs(60);

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each second of test_data.log: (ts, planned, sent).
fn seconds(run: &Path) -> Vec<(u64, u64, u64)> {
    std::fs::read_to_string(run.join("test_data.log"))
        .expect("test_data.log")
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            (
                v["data"]["ts"].as_u64().expect("ts"),
                v["stats"]["metrics"]["reqps"].as_u64().expect("reqps"),
                v["tank"]["sent"].as_u64().expect("sent"),
            )
        })
        .collect()
}

/// The summary the HTML report carries.
fn report_summary(run: &Path) -> Value {
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    let start = html.find("id=\"tank-data\">").expect("the data element") + 15;
    let end = start + html[start..].find("</script>").expect("its end");
    let data: Value = serde_json::from_str(&html[start..end].replace("<\\/", "</")).expect("JSON");
    data["summary"].clone()
}

/// Sleep until the wall clock is `fraction` of the way through a second.
fn wait_for_fraction(fraction: f64) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into = now.subsec_nanos() as f64 / 1e9;
    let wait = (fraction - into).rem_euclid(1.0);
    std::thread::sleep(Duration::from_secs_f64(wait));
}

#[test]
fn every_count_agrees_when_the_run_starts_at_an_odd_fraction_of_a_second() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    // Started ~.3 s into a second: the plan's seconds from the start straddle unix seconds.
    wait_for_fraction(0.25);
    let out = shoot(
        dir.path(),
        &format!(
            "[phantom]\naddress = {}\nrps_schedule = line(10,200,4s) const(100,1s)\nuris = /\n\
             [console]\nshort_only = 1\n",
            server.addr()
        ),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let summary = json(&run.join("summary.json"));
    let shots = &summary["shots"];
    // line(10,200,4s) plans int(105 × 4) = 420 shots, const(100,1s) 100.
    assert_eq!(shots["planned"], 520);
    assert_eq!(shots["sent"].as_u64(), Some(rows.len() as u64));
    assert_eq!(
        shots["unsent"].as_u64(),
        Some(520 - rows.len() as u64),
        "{shots}"
    );
    assert_eq!(server.requests().len(), rows.len());
    assert_eq!(summary["rps"]["planned"], 104.0);

    // Per second: test_data.log, the console's lines and summary.json's timeline agree,
    // and planned and sent are binned alike (both by unix second), so they match closely.
    let per_second = seconds(&run);
    assert_eq!(
        per_second.iter().map(|s| s.1).sum::<u64>(),
        520,
        "{per_second:?}"
    );
    assert_eq!(
        per_second.iter().map(|s| s.2).sum::<u64>(),
        rows.len() as u64
    );
    // A shot starts when it is due or later, never earlier: up to any second's
    // end, no more are sent than planned, and the shortfall is at most the shots
    // due within the largest lag before that end (a late shot lands in the
    // next second). Binning planned shots by seconds from the start instead of
    // by unix second breaks this by a fraction of a second's shots.
    let lag_max_s = summary["quantiles"]
        .as_array()
        .and_then(|rows| rows.last())
        .and_then(|row| row["lag_ms"].as_f64())
        .expect("the lag's 100% quantile")
        / 1000.0;
    let busiest = per_second.iter().map(|s| s.1).max().unwrap_or(0) as f64;
    let slack = 2.0 + busiest * (lag_max_s + 0.002);
    let (mut planned_so_far, mut sent_so_far) = (0u64, 0u64);
    for (ts, planned, sent) in &per_second {
        planned_so_far += planned;
        sent_so_far += sent;
        assert!(
            sent_so_far <= planned_so_far && (planned_so_far - sent_so_far) as f64 <= slack,
            "by the end of {ts}: planned {planned_so_far}, sent {sent_so_far} \
             (lag up to {lag_max_s} s): {per_second:?}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (ts, planned, sent) in &per_second {
        let needle = format!("ts={ts} ");
        let line = stdout
            .lines()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("no console line for {ts} in\n{stdout}"));
        assert!(
            line.contains(&format!(" planned={planned} sent={sent} ")),
            "{line} vs test_data.log's planned {planned}, sent {sent}"
        );
    }
    let timeline = &summary["timeline"];
    let series = |key: &str| -> Vec<u64> {
        timeline[key]
            .as_array()
            .unwrap_or_else(|| panic!("timeline.{key}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let ts = series("ts");
    for (at, (second, planned, sent)) in per_second.iter().enumerate() {
        let i = ts
            .iter()
            .position(|t| t == second)
            .expect("the second in the timeline");
        assert_eq!(
            (series("planned")[i], series("sent")[i]),
            (*planned, *sent),
            "second #{at}"
        );
    }
    // The text summary and the HTML report say the same.
    assert!(
        stdout.contains(&format!(
            "shots planned 520, sent {}, unsent {}",
            rows.len(),
            520 - rows.len()
        )),
        "{stdout}"
    );
    assert_eq!(report_summary(&run)["shots"], *shots);
    assert!(
        summary["warnings"].as_array().unwrap().is_empty(),
        "{summary}"
    );
}

/// Shots per start second in a run's phout (its first column, as unix seconds).
fn starts_per_second(run: &Path) -> std::collections::BTreeMap<u64, u64> {
    let mut starts = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(run.join("phout.log"))
        .expect("phout.log")
        .lines()
    {
        let (secs, _) = line.split_once('.').expect("send_ts");
        *starts
            .entry(secs.parse::<u64>().expect("seconds"))
            .or_default() += 1;
    }
    starts
}

/// A second's sent count is final when the second ends, however long its
/// replies take: against a target answering in 4 s (twice the buffer), every
/// second's sent count is its phout rows' starts, in the console's lines, in
/// test_data.log, in the summary's timeline and in the report's.
#[test]
fn sent_per_second_is_right_when_replies_come_after_the_second_is_final() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("slow.json");
    std::fs::write(
        &recipe,
        r#"{"route": "/*", "random_content": "10b", "stages": [{"at": 0, "status": 200, "latency": "4s"}]}"#,
    )
    .unwrap();
    let out = shoot(
        dir.path(),
        &format!(
            "[phantom]\naddress = origin\nrps_schedule = const(20,6s)\nuris = /\ntimeout = 10s\n\
             [origin]\nrecipe = {}\n[console]\nshort_only = 1\n",
            recipe.display()
        ),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = artifacts(dir.path());
    let starts = starts_per_second(&run);
    assert_eq!(starts.values().sum::<u64>(), 120, "{starts:?}");
    let sent_in = |ts: u64| starts.get(&ts).copied().unwrap_or(0);
    // The summary's timeline (the report draws it) has every second with a start.
    let summary = json(&run.join("summary.json"));
    let timeline = &summary["timeline"];
    let column = |key: &str| -> Vec<u64> {
        serde_json::from_value(timeline[key].clone()).unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    let sent: std::collections::BTreeMap<u64, u64> = column("ts")
        .into_iter()
        .zip(column("sent"))
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(
        sent, starts,
        "the timeline's sent against the phout's starts"
    );
    assert_eq!(report_summary(&run)["timeline"]["sent"], timeline["sent"]);
    // test_data.log has the seconds with responses: from 4 s on, some of them still sending.
    let lines = seconds(&run);
    assert!(lines.iter().any(|(_, _, sent)| *sent > 0), "{lines:?}");
    for (ts, _, sent) in &lines {
        assert_eq!(*sent, sent_in(*ts), "test_data.log at {ts}: {lines:?}");
    }
    // The console's line of each second says the same.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut shown = 0;
    for line in stdout.lines().filter(|l| l.contains(" ts=")) {
        let field = |name: &str| -> u64 {
            let at = line.find(&format!(" {name}=")).expect(name) + name.len() + 2;
            line[at..].split(' ').next().unwrap().parse().expect(name)
        };
        assert_eq!(field("sent"), sent_in(field("ts")), "{line}");
        shown += field("sent");
    }
    assert_eq!(shown, 120, "{stdout}");
}

#[test]
fn after_ctrl_c_planned_sent_and_unsent_are_the_plans_and_agree() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(200,60s)\nuris = /\n",
        server.addr()
    );
    let (out, _) = interrupted(
        dir.path(),
        &cfg,
        || server.requests().len() >= 20,
        &[libc::SIGINT],
    );
    assert_eq!(out.status.code(), Some(1));
    let run = artifacts(dir.path());
    let sent = phout(&run).len() as u64;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The plan's count, not the seconds seen so far; its rate, not shots over a short run.
    let line = format!("shots planned 12000, sent {sent}, unsent {}", 12000 - sent);
    assert!(stdout.contains(&line), "expected `{line}` in\n{stdout}");
    assert!(stdout.contains(", planned 200.0"), "{stdout}");
    // A stopped run's unsent shots are expected: no warning about them.
    assert!(!stdout.contains("WARNINGS"), "{stdout}");
    // One queue: no second, contradicting line of counts.
    assert!(!stdout.contains("[phantom] planned"), "{stdout}");
    let summary = json(&run.join("summary.json"));
    assert_eq!(summary["shots"]["planned"], 12000);
    assert_eq!(summary["shots"]["sent"], sent);
    assert_eq!(summary["shots"]["unsent"], 12000 - sent);
    // It says it was interrupted, and what was due by then, everywhere.
    assert_eq!(summary["stopped"]["cause"], "interrupted", "{summary}");
    let due = summary["stopped"]["due"].as_u64().expect("the shots due");
    assert!(
        due <= sent,
        "{due} due over a second before the stop, {sent} sent"
    );
    let text = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    assert!(
        text.contains("\ninterrupted (Ctrl-C or SIGTERM) after "),
        "{text}"
    );
    assert!(
        stdout.contains("\ninterrupted (Ctrl-C or SIGTERM) after "),
        "{stdout}"
    );
}

#[test]
fn a_closed_model_counts_its_plan_only_when_it_reaches_the_end() {
    let server = Server::start(Behaviour::KeepAlive);
    // Ran to its end (two passes over two uris): four shots planned, all sent.
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &format!(
            "[phantom]\naddress = {}\ninstances_schedule = const(2,1s)\nuris = /a /b\nloop = 2\n",
            server.addr()
        ),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("shots planned 4, sent 4, unsent 0"),
        "{stdout}"
    );
    // Stopped long before its ammo's end: no planned count, and it says so.
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[phantom]\naddress = {}\ninstances_schedule = const(2,1s)\nuris = /\nloop = 100000000\n",
        server.addr()
    );
    let (out, _) = interrupted(
        dir.path(),
        &cfg,
        || server.requests().len() >= 20,
        &[libc::SIGINT],
    );
    assert_eq!(out.status.code(), Some(1));
    let sent = phout(&artifacts(dir.path())).len();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("shots sent {sent} (planned: no end known)")),
        "{stdout}"
    );
    assert!(!stdout.contains("unsent"), "{stdout}");
}

#[test]
fn a_second_ctrl_c_writes_a_row_for_every_shot_it_abandons() {
    let server = Server::start(Behaviour::Silent);
    let dir = tempfile::tempdir().unwrap();
    // Every shot hangs for up to 60 s: only a second Ctrl-C ends this quickly.
    let cfg = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(20,60s)\nuris = /\ntimeout = 60s\n",
        server.addr()
    );
    let (out, took) = interrupted(
        dir.path(),
        &cfg,
        || server.requests().len() >= 20,
        &[libc::SIGINT, libc::SIGINT],
    );
    assert!(took < Duration::from_secs(5), "tank took {took:?} to stop");
    assert_eq!(out.status.code(), Some(1));
    let rows = phout(&artifacts(dir.path()));
    // Every request the server received has its row: abandoned, ECANCELED.
    assert!(rows.len() >= 10, "{} rows", rows.len());
    assert!(
        rows.iter().all(|r| r.net_code == 125 && r.proto_code == 0),
        "{rows:?}"
    );
    assert_eq!(server.requests().len(), rows.len());
    // Each was sent whole and waited for its reply: the row says so (before,
    // its whole time was put down as connecting, with nothing sent).
    for row in &rows {
        assert!(row.size_out > 0 && row.size_in == 0, "{row:?}");
        assert!(row.latency > row.connect + row.send, "{row:?}");
        assert_eq!(row.receive, 0, "{row:?}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("sent {}", rows.len())), "{stdout}");
    assert!(stdout.contains("125 cancelled"), "{stdout}");
}

#[test]
fn a_run_where_nothing_worked_warns_and_fails_ci_when_asked() {
    // A port nothing listens on: every shot is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let cfg =
        format!("[phantom]\naddress = {addr}\nrps_schedule = const(20,1s) const(0,2s)\nuris = /\n");
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(dir.path(), &cfg, LIMIT);
    // yandex-tank's code is kept when the config asks for nothing...
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "WARNINGS:\n  - every shot failed at the network level: 111 connection refused × 20"
        ),
        "{stdout}"
    );
    let run = artifacts(dir.path());
    let rows = phout(&run);
    assert!(
        rows.iter().all(|r| r.net_code == 111 && r.size_out == 0),
        "{rows:?}"
    );
    let summary = json(&run.join("summary.json"));
    assert_eq!(summary["warnings"].as_array().map(Vec::len), Some(1));
    assert_eq!(report_summary(&run)["warnings"], summary["warnings"]);
    // ...and CI can fail on it, from the command line or the config.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("load.ini"), &cfg).unwrap();
    let out = tank()
        .args(["-c", "load.ini", "-q", "--fail-on-warnings"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(35));
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &format!("{cfg}[tank]\nfail_on_warnings = 1\n"),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(35));
    assert_eq!(
        json(&artifacts(dir.path()).join("summary.json"))["exit_code"],
        35
    );
}

/// A directory that fills up after `bytes`: a tmpfs when this test may mount one
/// (root), else a directory whose phout.log is /dev/full (every write fails).
struct FullDisk {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl FullDisk {
    fn new(bytes: u64) -> FullDisk {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            std::os::unix::fs::symlink("/dev/full", dir.path().join("phout.log")).unwrap();
        }
        FullDisk { dir, mounted }
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(self.dir.path()).status();
        }
    }
}

#[test]
fn a_full_disk_stops_the_run_at_once_and_says_so() {
    let server = Server::start(Behaviour::KeepAlive);
    let disk = FullDisk::new(128 * 1024);
    let dir = tempfile::tempdir().unwrap();
    // A 30 s plan whose phout fills 128 KiB in about a second.
    let cfg = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(2000,30s)\nuris = /\n\
         [tank]\nartifacts_dir = {}\n",
        server.addr(),
        disk.dir.path().display()
    );
    let started = Instant::now();
    let out = shoot(dir.path(), &cfg, LIMIT);
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(34),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < Duration::from_secs(15),
        "the run went on for {took:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tank: stopping: cannot write") && stderr.contains("phout.log"),
        "{stderr}"
    );
    // The summary is printed even though the disk has no room for it.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("WARNINGS:\n  - cannot write") && stdout.contains("the run stopped there"),
        "{stdout}"
    );
    // What was written before is kept: whole lines only, read as usual.
    if disk.mounted {
        let text = std::fs::read_to_string(disk.dir.path().join("phout.log")).unwrap();
        assert!(
            text.ends_with('\n'),
            "a torn last line: {:?}",
            text.rsplit('\n').next()
        );
        assert!(
            text.lines().count() > 100,
            "{} lines kept",
            text.lines().count()
        );
    }
    // A report is whole or absent, never empty, and the console names only what is there.
    let listed = stdout
        .lines()
        .find(|l| l.starts_with("artifacts: "))
        .unwrap_or_else(|| panic!("no artifacts line in\n{stdout}"));
    for name in ["summary.json", "summary.txt", "report.html"] {
        let path = disk.dir.path().join(name);
        match std::fs::metadata(&path) {
            Ok(meta) => assert!(meta.len() > 0, "{name} is empty"),
            Err(_) => assert!(!listed.contains(name), "{listed} names the absent {name}"),
        }
        let partial = disk.dir.path().join(format!("{name}.partial"));
        assert!(!partial.exists(), "{} left behind", partial.display());
    }
}
