//! Monitoring during a run, against a real node_exporter (Debian's
//! prometheus-node-exporter) and against sources that die or hang.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tank_run::{Handle, LiveState, Notice, Observer, Spec, Verdict};
use tank_stats::aggregate::SecondStats;

use crate::support::component::{binary, Component};

/// A run at `dir` shooting the origin simulator, with `extra` sections.
pub(crate) fn spec(dir: &Path, schedule: &str, extra: &str) -> Spec {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin/steady.json");
    let path = dir.join("load.ini");
    std::fs::write(
        &path,
        format!(
            "[phantom]\naddress = origin\nuris = /\nrps_schedule = {schedule}\n\
             [origin]\nrecipe = {}\n[tank]\nartifacts_base_dir = {}\n{extra}",
            recipe.display(),
            dir.join("logs").display()
        ),
    )
    .unwrap();
    Spec::new(tank_config::load(&path, &[]).unwrap())
}

/// Keeps the warnings and the monitoring the run showed.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<(Vec<String>, usize)>>);

impl Observer for Seen {
    fn seconds(&mut self, _: &[SecondStats], state: &LiveState<'_>) {
        let mut seen = self.0.lock().unwrap();
        seen.1 = seen.1.max(state.monitoring.len());
    }

    fn notice(&mut self, notice: &Notice<'_>) {
        if let Notice::Warning(w) = notice {
            self.0.lock().unwrap().0.push(w.to_string());
        }
    }
}

/// (timestamp, host) → metric names, from monitoring.log.
fn monitoring_log(run: &Path) -> Vec<(u64, String, serde_json::Map<String, serde_json::Value>)> {
    let text = std::fs::read_to_string(run.join("monitoring.log")).expect("monitoring.log");
    let mut rows = Vec::new();
    for line in text.lines() {
        let chunks: Vec<serde_json::Value> = serde_json::from_str(line).expect("a JSON list");
        for chunk in chunks {
            let ts = chunk["timestamp"].as_u64().expect("timestamp");
            for (host, data) in chunk["data"].as_object().expect("data") {
                let metrics = data["metrics"].as_object().expect("metrics").clone();
                rows.push((ts, host.clone(), metrics));
            }
        }
    }
    rows
}

#[test]
fn node_exporter_gives_per_core_cpu_for_every_second_of_the_run_and_a_chart() {
    let Some(exporter) = binary("prometheus-node-exporter", "prometheus-node-exporter") else {
        return;
    };
    let node = Component::start(&exporter, |port, _| {
        vec![format!("--web.listen-address=127.0.0.1:{port}")]
    });
    let dir = tempfile::tempdir().unwrap();
    let xml = format!(
        "<Monitoring><Host address=\"node\" comment=\"under test\" metrics_url=\"http://127.0.0.1:{}/metrics\">\
         <CPU/><Memory/><System/><Kernel/></Host></Monitoring>",
        node.port
    );
    let spec = spec(
        dir.path(),
        "const(50,3s)",
        &format!("[telegraf]\nconfig = {xml}\n"),
    );
    let seen = Seen::default();
    let outcome = tank_run::run(&spec, Box::new(seen.clone()), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    let rows = monitoring_log(&outcome.artifacts);
    let with_cores: BTreeSet<u64> = rows
        .iter()
        .filter(|(_, host, m)| host == "node" && m.contains_key("custom:cpu-cpu0_usage_idle"))
        .map(|(ts, _, _)| *ts)
        .collect();
    for ts in &outcome.summary.timeline.ts {
        assert!(
            with_cores.contains(ts),
            "no per-core CPU row for second {ts}: {with_cores:?} (node_exporter log:\n{})",
            node.log()
        );
    }
    let (_, _, metrics) = &rows[0];
    for name in [
        "Memory_used",
        "System_la1",
        "System_csw",
        "custom:cpu-cpu-total_usage_user",
    ] {
        assert!(metrics.contains_key(name), "{name} missing: {metrics:?}");
    }
    let host = &outcome.summary.monitoring[0];
    assert_eq!(
        (host.host.as_str(), host.comment.as_str()),
        ("node", "under test")
    );
    assert!(host.metrics.contains_key("custom:cpu-cpu0_busy"));
    let (warnings, hosts_shown) = seen.0.lock().unwrap().clone();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(hosts_shown, 1, "the console saw the host");
    let Some(browser) = crate::report::chromium() else {
        return;
    };
    let page = outcome.artifacts.join("report.html");
    let (dom, log) = crate::report::render(&browser, &page);
    crate::report::assert_rendered("report.html", &dom, &log, 6);
    assert!(
        dom.contains("Monitoring: node (under test) — CPU per core, busy"),
        "no per-core chart in report.html"
    );
}

/// Serves a metrics page while `alive`, then refuses (the listener is closed).
fn dying_source(alive: Duration) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let thread = std::thread::spawn(move || {
        let until = Instant::now() + alive;
        while Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 1024];
                    let _ = stream.read(&mut buf);
                    let body = "node_load1 0.5\nnode_context_switches_total 100\n";
                    let _ = write!(
                        stream,
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (url, thread)
}

/// Accepts connections and never answers, until `done`.
fn silent_source(done: Arc<AtomicBool>) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let thread = std::thread::spawn(move || {
        let mut held = Vec::new();
        while !done.load(Ordering::Relaxed) {
            if let Ok((stream, _)) = listener.accept() {
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    (url, thread)
}

#[test]
fn sources_that_die_hang_or_send_garbage_never_cost_a_shot() {
    let (dying, dying_thread) = dying_source(Duration::from_millis(1500));
    let done = Arc::new(AtomicBool::new(false));
    let (silent, silent_thread) = silent_source(done.clone());
    let xml = format!(
        "<Monitoring>\
         <Host address=\"dies\" metrics_url=\"{dying}\"><System/><Kernel/></Host>\
         <Host address=\"hangs\" metrics_url=\"{silent}\"><System/></Host>\
         <Host address=\"local\" metrics_url=\"none\"><Custom label=\"junk\">echo not-a-number</Custom></Host>\
         </Monitoring>"
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        "const(100,3s)",
        &format!("[telegraf]\nconfig = {xml}\n"),
    );
    let seen = Seen::default();
    let outcome = tank_run::run(&spec, Box::new(seen.clone()), &Handle::default()).unwrap();
    done.store(true, Ordering::Relaxed);
    dying_thread.join().unwrap();
    silent_thread.join().unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    let shots = &outcome.summary.shots;
    // Every shot is sent, but for what a starved CPU alone costs: a shot that falls over a
    // second behind at the schedule's end is cut, monitoring or not (under 1%: no warning).
    // A source that blocked the shots would cost seconds of them.
    let sent = shots.sent.expect("a run counts its sent shots");
    assert_eq!(shots.planned, Some(300));
    assert!(sent >= 297, "{sent} of 300 shots sent");
    let phout = std::fs::read_to_string(outcome.artifacts.join("phout.log")).unwrap();
    assert_eq!(
        phout.lines().count() as u64,
        sent,
        "a row for every shot sent"
    );
    let (warnings, _) = seen.0.lock().unwrap().clone();
    for host in ["dies", "hangs", "local"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with(&format!("monitoring {host}:"))),
            "no warning for {host}: {warnings:?}"
        );
    }
    // The dying source answered before it died.
    let rows = monitoring_log(&outcome.artifacts);
    assert!(rows
        .iter()
        .any(|(_, host, m)| host == "dies" && m.contains_key("System_la1")));
}

#[test]
fn metric_higher_stops_the_run_with_yandex_tanks_code() {
    let dir = tempfile::tempdir().unwrap();
    let extra =
        "[telegraf]\nconfig = <Monitoring><Host address=\"localhost\" metrics_url=\"none\">\
                 <Custom label=\"hot\">echo 99</Custom></Host></Monitoring>\n\
                 [autostop]\nautostop = metric_higher(local*, hot_exec_value, 90, 2s)\n";
    let spec = spec(dir.path(), "const(20,30s)", extra);
    let started = Instant::now();
    let outcome = tank_run::run(&spec, Box::new(Seen::default()), &Handle::default()).unwrap();
    assert_eq!(outcome.exit_code, 31);
    assert!(started.elapsed() < Duration::from_secs(20), "stopped early");
    let report = std::fs::read_to_string(outcome.artifacts.join("autostop_report.txt")).unwrap();
    assert!(
        report.starts_with("metric_higher(local*, hot_exec_value, 90, 2s)"),
        "{report}"
    );
}

#[test]
fn metric_criteria_without_monitoring_are_an_error_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[autostop]\nautostop = metric_lower(h, m, 1, 1s)\n";
    let spec = spec(dir.path(), "const(1,1s)", extra);
    let e = tank_run::run(&spec, Box::new(Seen::default()), &Handle::default()).unwrap_err();
    assert!(e.to_string().contains("[telegraf]"), "{e}");
    assert!(!dir.path().join("logs").exists(), "nothing left behind");
}

/// InfluxDB 1.x on a free port with its own data directory.
pub(crate) fn influxd() -> Option<Component> {
    let influxd = binary("influxd", "influxdb")?;
    Some(Component::start(&influxd, |port, dir| {
        let rpc = crate::support::component::free_port();
        let conf = dir.join("influxdb.conf");
        let d = dir.display();
        std::fs::write(
            &conf,
            format!(
                "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
                 [meta]\n  dir = \"{d}/meta\"\n[data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n\
                 [http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n\
                 [monitor]\n  store-enabled = false\n"
            ),
        )
        .unwrap();
        vec!["-config".into(), conf.display().to_string()]
    }))
}

/// An InfluxQL statement's JSON answer.
pub(crate) fn influxql(port: u16, q: &str) -> serde_json::Value {
    let mut encoded = String::new();
    for b in q.bytes() {
        if b.is_ascii_alphanumeric() {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    let url = tank_monitor::http::http_url(&format!(
        "http://127.0.0.1:{port}/query?db=tank&q={encoded}"
    ))
    .unwrap();
    let client = tank_monitor::http::Client::new().unwrap();
    let response = client
        .post(&url, &[], Vec::new(), Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    serde_json::from_slice(&response.body).unwrap()
}

#[test]
fn influxdb_gets_every_second_with_yandex_tanks_names() {
    let Some(influx) = influxd() else {
        return;
    };
    influxql(influx.port, "CREATE DATABASE tank");
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[influx]\naddress = 127.0.0.1\nport = {}\ndatabase = tank\ntank_tag = ci\nlabeled = 1\n\
         [telegraf]\nconfig = <Monitoring><Host address=\"localhost\"><System/></Host></Monitoring>\n",
        influx.port
    );
    let spec = spec(dir.path(), "const(40,3s)", &extra);
    let outcome = tank_run::run(&spec, Box::new(Seen::default()), &Handle::default()).unwrap();
    assert!(outcome.text.contains(" dropped"), "{}", outcome.text);
    let seconds = outcome.summary.timeline.ts.len();
    let answer = influxql(
        influx.port,
        "SELECT q50, q99, q100 FROM overall_quantiles WHERE label = '__OVERALL__' AND tank = 'ci'",
    );
    let rows = answer["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {answer}"));
    assert_eq!(rows.len(), seconds, "{answer}");
    let meta = influxql(
        influx.port,
        "SELECT sum(RPS) FROM overall_meta WHERE label = '__OVERALL__'",
    );
    assert_eq!(
        meta["results"][0]["series"][0]["values"][0][1], 120,
        "{meta}"
    );
    let codes = influxql(
        influx.port,
        "SELECT sum(\"200\") FROM proto_codes WHERE label = '__OVERALL__'",
    );
    assert_eq!(
        codes["results"][0]["series"][0]["values"][0][1], 120,
        "{codes}"
    );
    let tags = influxql(influx.port, "SHOW TAG KEYS FROM overall_meta");
    let keys = tags["results"][0]["series"][0]["values"].to_string();
    for key in ["label", "tank", "uuid"] {
        assert!(keys.contains(key), "{key} missing: {tags}");
    }
    let mon = influxql(
        influx.port,
        "SELECT System_la1 FROM monitoring WHERE host = 'localhost'",
    );
    assert!(
        mon["results"][0]["series"][0]["values"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{mon}"
    );
}

#[test]
fn an_influxdb_that_is_down_costs_no_shot_and_drops_are_counted() {
    let port = crate::support::component::free_port();
    let dir = tempfile::tempdir().unwrap();
    let extra = format!("[influx]\naddress = 127.0.0.1\nport = {port}\n");
    let spec = spec(dir.path(), "const(100,2s)", &extra);
    let outcome = tank_run::run(&spec, Box::new(Seen::default()), &Handle::default()).unwrap();
    assert_eq!(outcome.summary.shots.sent, Some(200));
    let phout = std::fs::read_to_string(outcome.artifacts.join("phout.log")).unwrap();
    assert_eq!(phout.lines().count(), 200);
    assert!(
        outcome.text.contains("influx: 0 points written"),
        "{}",
        outcome.text
    );
    assert!(!outcome.text.contains(", 0 dropped"), "{}", outcome.text);
}

#[test]
fn a_source_and_an_influxdb_down_for_the_whole_run_are_warnings_that_can_fail_it() {
    // Two closed ports: a node_exporter and an InfluxDB that never answer.
    let node = crate::support::component::free_port();
    let influx = crate::support::component::free_port();
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin/steady.json");
    let config = format!(
        "[phantom]\naddress = origin\nuris = /\nrps_schedule = const(50,2s)\n\
         [origin]\nrecipe = {}\n[tank]\nartifacts_base_dir = logs\n\
         [telegraf]\nconfig = <Monitoring><Host address=\"node\" \
         metrics_url=\"http://127.0.0.1:{node}/metrics\"><System/></Host></Monitoring>\n\
         [influx]\naddress = 127.0.0.1\nport = {influx}\n",
        recipe.display()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("load.ini"), &config).unwrap();
    let out = crate::support::tank()
        .args(["-c", "load.ini", "-q", "--fail-on-warnings"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(35), "{stdout}");
    let never = format!("monitoring node: http://127.0.0.1:{node}/metrics never answered");
    let nothing = "influx: no point was written";
    // The console's WARNINGS block, summary.txt, summary.json and report.html all say it.
    let block = stdout.split("WARNINGS:").nth(1).unwrap_or_default();
    assert!(
        block.contains(&never) && block.contains(nothing),
        "{stdout}"
    );
    let run = crate::support::artifacts(dir.path());
    let text = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    assert!(text.contains(&never) && text.contains(nothing), "{text}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let warnings: Vec<&str> = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(&never)),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.starts_with(nothing)),
        "{warnings:?}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("never answered during the run"));
}

#[test]
fn prometheus_scrapes_tanks_metrics_during_the_run() {
    let Some(prometheus) = binary("prometheus", "prometheus") else {
        return;
    };
    let tank_port = crate::support::component::free_port();
    let server = Component::start(&prometheus, |port, dir| {
        let conf = dir.join("prometheus.yml");
        std::fs::write(
            &conf,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tank\n    \
                 static_configs:\n      - targets: ['127.0.0.1:{tank_port}']\n"
            ),
        )
        .unwrap();
        vec![
            format!("--config.file={}", conf.display()),
            format!("--storage.tsdb.path={}", dir.join("data").display()),
            format!("--web.listen-address=127.0.0.1:{port}"),
        ]
    });
    let dir = tempfile::tempdir().unwrap();
    // `linger`: the final totals stay up after the run, for the last scrapes.
    let extra = format!("[prometheus]\nlisten = 127.0.0.1:{tank_port}\nlinger = 10s\n");
    let spec = spec(dir.path(), "const(50,6s)", &extra);
    let outcome = tank_run::run(&spec, Box::new(Seen::default()), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed);
    assert!(outcome.metrics.is_some(), "the endpoint lingers");
    let url = tank_monitor::http::http_url(&format!(
        "http://127.0.0.1:{}/api/v1/query?query=tank_responses_total%7Btag%3D%22__OVERALL__%22%7D%5B1m%5D",
        server.port
    ))
    .unwrap();
    let client = tank_monitor::http::Client::new().unwrap();
    let response = client.get(&url, Duration::from_secs(10), 1 << 20).unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    let values = answer["data"]["result"][0]["values"].as_array();
    assert!(
        values.is_some_and(|v| !v.is_empty()),
        "prometheus has no tank series: {answer}\n{}",
        server.log()
    );
    // While it lingers, a scrape sees every response: the run's 300, not a
    // count seconds short of the end.
    let last = tank_monitor::http::http_url(&format!(
        "http://127.0.0.1:{}/api/v1/query?query=max_over_time(tank_responses_total%7Btag%3D%22__OVERALL__%22%7D%5B1m%5D)",
        server.port
    ))
    .unwrap();
    let began = std::time::Instant::now();
    let total = loop {
        let response = client.get(&last, Duration::from_secs(10), 1 << 20).unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
        let total = answer["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if total >= 300.0 || began.elapsed() > Duration::from_secs(9) {
            break total;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(total, 300.0, "{}", server.log());
    drop(outcome);
}

#[test]
fn tank_c_waits_out_the_prometheus_linger_and_says_so() {
    let server =
        crate::support::server::Server::start(crate::support::server::Behaviour::KeepAlive);
    let port = crate::support::component::free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(10,1s)\nuris = /\n\
         [prometheus]\nlisten = 127.0.0.1:{port}\nlinger = 1s\n",
        server.addr()
    );
    std::fs::write(dir.path().join("load.ini"), config).unwrap();
    let began = Instant::now();
    let out = crate::support::tank()
        .args(["-c", "load.ini", "-q"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tank: [prometheus] http://127.0.0.1:{port}/metrics keeps the final totals for 1 s"
        )),
        "{stderr}"
    );
    // The run (its last shot due at 0.9 s) and the 1 s linger, at least (a
    // busy machine takes longer).
    assert!(
        began.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        began.elapsed()
    );
}
