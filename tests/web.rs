//! The live web dashboard end to end: a real run (`tank -c --web`) against
//! the in-process origin simulator, its page rendered by headless Chromium
//! from live server-sent events while the run goes and again after it ended;
//! and report.html's range selection on the same run.
//!
//! Needs Chromium as tests/report.rs does (`TANK_SKIP_BROWSER=1` skips on purpose).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::report::{chromium, render_url};
use crate::support::tank;

const CONFIG: &str = "\
[phantom]
address = origin
header_http = 1.1
headers = [Host: origin.local] [Connection: keep-alive]
uris = /api/cart
  /news/1
autocases = 1
rps_schedule = const(40,15s)
instances = 20
timeout = 5s

[origin]
recipe = origin.json

[meta]
job_name = checkout steady state
job_dsc = hold 40 rps and look
operator = alice

[tank]
artifacts_base_dir = logs
";

const RECIPE: &str =
    r#"{ "route": "/*", "stages": [ { "at": 0, "status": 200, "latency": "1ms..3ms" } ] }"#;

/// Kills the run if the test fails before it ends.
struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET /state` as JSON (the dashboard is open on loopback).
fn state(addr: SocketAddr) -> Value {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
        .write_all(b"GET /state HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let body = text.split("\r\n\r\n").nth(1).expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Wait (up to a minute) until the dashboard's state passes `test`.
fn wait_for(addr: SocketAddr, what: &str, test: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let state = state(addr);
        if test(&state) {
            return state;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {what} within a minute: {state}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Start tank with `args` in `dir`; its dashboard's URL and address (the
/// first line of stderr names it), and a thread draining the rest of stderr.
fn start(
    dir: &std::path::Path,
    args: &[&str],
) -> (Run, String, SocketAddr, std::thread::JoinHandle<String>) {
    let mut run = Run(tank()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tank"));
    // "tank: dashboard: http://127.0.0.1:PORT/".
    let mut stderr = BufReader::new(run.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("tank: dashboard: ") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "tank said no URL");
    }
    let url = line
        .trim()
        .strip_prefix("tank: dashboard: ")
        .unwrap()
        .to_owned();
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    // The rest of stderr is drained so tank never blocks on it.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    (run, url, addr, drain)
}

/// Ctrl-C ends the linger at once: tank exits 0 soon after.
fn interrupt(run: &mut Run, drain: std::thread::JoinHandle<String>) {
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(run.0.id() as i32, libc::SIGINT) }, 0);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the linger outlived a Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}: {}", drain.join().unwrap());
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    Some(dom[at..at + dom[at..].find('"')?].to_owned())
}

#[test]
fn the_live_page_draws_the_run_as_it_goes_and_keeps_it_after() {
    let Some(browser) = chromium() else {
        eprintln!("browser test SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("load.ini"), CONFIG).unwrap();
    std::fs::write(dir.path().join("origin.json"), RECIPE).unwrap();
    let mut run = Run(tank()
        .args([
            "-c",
            "load.ini",
            "-q",
            "--web",
            "127.0.0.1:0",
            "--web-linger",
            "5m",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tank"));
    // The URL comes first on stderr: "tank: dashboard: http://127.0.0.1:PORT/".
    let mut stderr = BufReader::new(run.0.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("tank: dashboard: ") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "tank said no URL");
    }
    let url = line
        .trim()
        .strip_prefix("tank: dashboard: ")
        .unwrap()
        .to_owned();
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    // The rest of stderr is drained so tank never blocks on it.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });

    // While the run goes: the page draws what the events bring.
    wait_for(addr, "two seconds", |s| {
        s["run"]["seconds"].as_array().is_some_and(|a| a.len() >= 2)
    });
    let (dom, log) = render_url(&browser, &url, &["--virtual-time-budget=2000"]);
    assert_eq!(
        attr(&dom, "data-status").as_deref(),
        Some("ok"),
        "log:\n{log}"
    );
    let seconds: usize = attr(&dom, "data-seconds").unwrap().parse().unwrap();
    assert!(seconds >= 2, "{seconds} seconds drawn");
    assert!(
        dom.contains("checkout steady state"),
        "the job names the page"
    );
    assert!(dom.contains("hold 40 rps and look"));
    assert!(dom.contains("Requests per second: planned, sent, answered"));
    assert!(
        dom.contains("Response time p99 by tag"),
        "two tags: a chart by tag"
    );
    assert!(dom.matches("<polyline").count() >= 8, "series drawn");

    // After the run: the final state, kept, with the end's text.
    let end = wait_for(addr, "the end", |s| !s["over"].is_null());
    let total = end["run"]["seconds"].as_array().unwrap().len();
    assert_eq!(end["run"]["end"]["exit_code"], 0);
    assert_eq!(
        end["run"]["totals"]["responses"],
        end["run"]["totals"]["sent"]
    );
    // The page's totals are the results pipeline's: summary.json's own.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::support::artifacts(dir.path()).join("summary.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        end["run"]["totals"]["responses"],
        summary["shots"]["responses"]
    );
    assert_eq!(end["run"]["totals"]["sent"], summary["shots"]["sent"]);
    // [meta] in summary.json and report.html as on the page.
    assert_eq!(
        summary["meta"]["job"]["job_name"], "checkout steady state",
        "{summary}"
    );
    assert_eq!(summary["meta"]["job"]["job_dsc"], "hold 40 rps and look");
    let html =
        std::fs::read_to_string(crate::support::artifacts(dir.path()).join("report.html")).unwrap();
    assert!(
        html.contains("checkout steady state"),
        "report.html names the job"
    );
    let (dom, log) = render_url(&browser, &url, &["--virtual-time-budget=2000"]);
    assert_eq!(
        attr(&dom, "data-status").as_deref(),
        Some("ok"),
        "log:\n{log}"
    );
    assert_eq!(attr(&dom, "data-over").as_deref(), Some("1"));
    assert_eq!(attr(&dom, "data-seconds"), Some(total.to_string()));
    assert!(dom.contains("tank is done: exit code 0"), "{dom}");
    assert!(dom.contains("The run's end"));

    // Ctrl-C ends the linger at once.
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(run.0.id() as i32, libc::SIGINT) }, 0);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the linger outlived a Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}: {}", drain.join().unwrap());

    // report.html of the same run: a range selected by the address gives its figures.
    let artifacts = crate::support::artifacts(dir.path());
    let page = format!(
        "file://{}#range=2-5",
        artifacts.join("report.html").display()
    );
    let (dom, log) = render_url(&browser, &page, &[]);
    assert_eq!(
        attr(&dom, "data-status").as_deref(),
        Some("ok"),
        "log:\n{log}"
    );
    let selection = &dom[dom.find("<section id=\"selection\">").expect("a selection")..];
    let selection = &selection[..selection.find("</section>").unwrap()];
    assert!(selection.contains("from 2 s to 5 s (4 s)"), "{selection}");
    for row in ["<td>50%</td>", "<td>99%</td>", "<td>100%</td>", "200 OK × "] {
        assert!(selection.contains(row), "{row} in {selection}");
    }
    assert!(
        dom.contains("class=\"selection\""),
        "the range is shaded on the charts"
    );
}

#[test]
fn a_sweep_shows_each_step_live_and_its_table_of_steps() {
    let Some(browser) = chromium() else {
        eprintln!("browser test SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    let origin = crate::support::component::Component::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_tank")),
        |port, dir| {
            let file = dir.join("recipe.json");
            std::fs::write(&file, r#"{"workers": 8, "stages": [{"latency": "10ms"}]}"#).unwrap();
            vec![
                "origin".into(),
                "--listen".into(),
                format!("127.0.0.1:{port}"),
                "--recipe".into(),
                file.display().to_string(),
            ]
        },
    );
    let url = format!("http://127.0.0.1:{}/", origin.port);
    let dir = tempfile::tempdir().unwrap();
    let (mut run, page, addr, drain) = start(
        dir.path(),
        &[
            "sweep",
            &url,
            "-c",
            "1,2",
            "--step",
            "1s",
            "--warmup",
            "0.5s",
            "--web",
            "127.0.0.1:0",
            "--web-linger",
            "5m",
        ],
    );
    let end = wait_for(addr, "the sweep's end", |s| !s["over"].is_null());
    assert_eq!(end["table"]["rows"].as_array().unwrap().len(), 2, "{end}");
    assert_eq!(end["ended"][0]["label"], "step 1 of 2: 1 connections");
    assert_eq!(end["run"]["label"], "step 2 of 2: 2 connections");
    assert!(
        end["over"]["text"].as_str().unwrap().contains("knee"),
        "{end}"
    );
    let (dom, log) = render_url(&browser, &page, &["--virtual-time-budget=2000"]);
    assert_eq!(
        attr(&dom, "data-status").as_deref(),
        Some("ok"),
        "log:\n{log}"
    );
    assert!(dom.contains("Steps so far"), "{dom}");
    assert!(dom.contains("Runs before this one"), "{dom}");
    assert!(
        dom.matches("<polyline").count() >= 3,
        "the last step's charts"
    );
    interrupt(&mut run, drain);
}
