//! Apiary's statistics view (`tank -c … --apiary`): printed every interval
//! beside tank's lines, and in summary.json, where its tallies account for
//! every response exactly.

use std::process::Stdio;

use serde_json::Value;

use crate::support::server::{Behaviour, Server};
use crate::support::{artifacts, phout, tank};

#[test]
fn the_view_is_printed_every_interval_and_its_tallies_count_every_response() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = {}\nrps_schedule = const(40,4s)\nuris = /\n",
            server.addr()
        ),
    )
    .unwrap();
    let out = tank()
        .args(["-c", "load.ini", "-q", "--apiary", "--interval", "1s"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run tank");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each heading says how long its interval really was: 1 s, or more when the
    // results thread was kept from its tick (a starved CPU); the last, cut
    // short by the run's end, may be under a second.
    let spans: Vec<f64> = stdout
        .lines()
        .filter_map(|line| line.split_once("(Apiary view, ")?.1.strip_suffix(" s)"))
        .map(|span| span.parse().expect("seconds"))
        .collect();
    assert!(!spans.is_empty(), "{stdout}");
    let (last, whole) = spans.split_last().unwrap();
    assert!(whole.iter().all(|&s| s >= 1.0), "{spans:?}");
    assert!(*last > 0.0, "{spans:?}");
    assert!(
        stdout.contains("Requests Completed:  current: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Request Duration (ms):  current: "),
        "{stdout}"
    );

    let run = artifacts(dir.path());
    let rows = phout(&run).len() as u64;
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let apiary = &summary["apiary"];
    assert_eq!(apiary["interval_s"], 1.0);
    let intervals = apiary["intervals"].as_array().expect("intervals");
    // A 4 s run at 1 s intervals: several intervals, however late the ticks (each
    // interval's `seconds` says how long it really was).
    assert!(intervals.len() >= 2, "{apiary}");
    let completed = |interval: &Value| -> (u64, u64) {
        let tally = interval["tallies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "Requests Completed")
            .expect("a Requests Completed tally");
        (
            tally["current"].as_u64().unwrap(),
            tally["total"].as_u64().unwrap(),
        )
    };
    let sum: u64 = intervals.iter().map(|i| completed(i).0).sum();
    assert_eq!(sum, rows, "every response in exactly one interval");
    assert_eq!(completed(intervals.last().unwrap()).1, rows);
    // Every interval is printed, the last one too: the console's last total is
    // the summary's (before, the interval closed at the end was never shown).
    assert_eq!(spans.len(), intervals.len(), "{stdout}");
    let last_total = stdout
        .lines()
        .rfind(|line| line.trim_start().starts_with("Requests Completed:"))
        .and_then(|line| line.split("total: ").nth(1))
        .and_then(|total| total.split_whitespace().next())
        .expect("a Requests Completed line with its total");
    assert_eq!(last_total, rows.to_string(), "{stdout}");
    // The most in flight each second: shots are in flight in every second of
    // the 4 s (before, each second had the one before's, and the first none).
    let instances = summary["timeline"]["instances"].as_array().unwrap();
    assert!(instances.len() >= 4, "{instances:?}");
    assert!(
        instances[..4].iter().all(|n| n.as_u64().unwrap() >= 1),
        "{instances:?}"
    );
    let levels = intervals[0]["levels"].as_array().unwrap();
    assert_eq!(levels[0]["name"], "Requests Running");
}

#[test]
fn an_interval_without_the_view_is_refused() {
    let out = tank()
        .args(["-c", "load.ini", "--interval", "5s"])
        .output()
        .expect("run tank");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--apiary"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
