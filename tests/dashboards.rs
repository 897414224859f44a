//! The Grafana dashboards in dashboards/: every panel's query and every
//! variable's query, run against a real InfluxDB (1.x, Debian's influxdb) and
//! a real Prometheus (Debian's prometheus) fed by a real test of two shards on
//! two queues with tags, must give data — with the variables at their
//! defaults (the whole test, all shards added), with a queue picked, and with
//! a tag picked. Grafana itself is not run: it only substitutes the
//! variables, which the test does as Grafana does for these values.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::monitoring::{influxd, influxql};
use crate::support::component::{binary, free_port, Component};
use crate::support::tank;

fn dashboard(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("dashboards")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every query of a dashboard's panels: (panel title, query text).
fn panel_queries(dashboard: &Value, field: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            out.push((
                panel["title"].as_str().unwrap().to_owned(),
                target[field].as_str().unwrap().to_owned(),
            ));
        }
    }
    assert!(out.len() >= 6, "a dashboard of {} queries", out.len());
    out
}

/// The variables' values, as Grafana substitutes them: `$name` and `${name}`.
fn substitute(query: &str, values: &[(&str, &str)]) -> String {
    let mut out = query.to_owned();
    for (name, value) in values {
        out = out.replace(&format!("${{{name}}}"), value);
        out = out.replace(&format!("${name}"), value);
    }
    out
}

fn unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn get_json(port: u16, path_and_query: &str) -> Value {
    let url =
        tank_monitor::http::http_url(&format!("http://127.0.0.1:{port}{path_and_query}")).unwrap();
    let client = tank_monitor::http::Client::new().unwrap();
    let response = client.get(&url, Duration::from_secs(10), 16 << 20).unwrap();
    serde_json::from_slice(&response.body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&response.body)))
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn every_panel_of_both_dashboards_has_data_from_a_real_two_shard_run() {
    let Some(influx) = influxd() else {
        return;
    };
    let Some(prometheus) = binary("prometheus", "prometheus") else {
        return;
    };
    influxql(influx.port, "CREATE DATABASE tank");
    let metrics: Vec<u16> = (0..2).map(|_| free_port()).collect();
    let scraper = Component::start(&prometheus, |port, dir| {
        let conf = dir.join("prometheus.yml");
        let targets: Vec<String> = metrics.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        std::fs::write(
            &conf,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tank\n    \
                 static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        vec![
            format!("--config.file={}", conf.display()),
            format!("--storage.tsdb.path={}", dir.join("data").display()),
            format!("--web.listen-address=127.0.0.1:{port}"),
        ]
    });

    // Two shards of one test, two queues, tags, monitoring, the job.
    let dir = tempfile::tempdir().unwrap();
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin/steady.json");
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = origin\nuris = /api/cart\n  /news/1\nautocases = 1\n\
             rps_schedule = const(40,8s)\n[phantom-1]\nuris = /search\nrps_schedule = const(20,8s)\n\
             [origin]\nrecipe = {}\n[tank]\nartifacts_base_dir = logs\n\
             [influx]\naddress = 127.0.0.1\nport = {}\ndatabase = tank\ntank_tag = ci\nlabeled = 1\n\
             [telegraf]\nconfig = auto\n[meta]\njob_name = dashboards\noperator = ci\n",
            recipe.display(),
            influx.port
        ),
    )
    .unwrap();
    // Ten seconds for both shards to prepare (a CPU-starved machine took
    // over three): a start already past is an error, as it should be.
    let start_s = unix_s() + 10;
    let from_s = unix_s();
    let mut shards = Vec::new();
    for (i, port) in metrics.iter().enumerate() {
        shards.push(
            tank()
                .args(["-c", "load.ini", "-q", "--start-at", &start_s.to_string()])
                .args(["--shard", &format!("{i}/2")])
                .arg("-o")
                .arg(format!("prometheus.listen=127.0.0.1:{port}"))
                .arg("-o")
                .arg(format!("tank.artifacts_dir=logs/s{i}"))
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a shard"),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    for mut shard in shards {
        while shard.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = shard.kill();
                panic!("a shard ran past two minutes");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = shard.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a shard failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let to_s = unix_s() + 1;

    // InfluxDB: each variable's query lists what was written, and each panel has data.
    let tank_tags = influxql(influx.port, "SHOW TAG KEYS FROM overall_meta").to_string();
    for key in ["shard", "queue", "job_name", "operator"] {
        assert!(
            tank_tags.contains(&format!("\"{key}\"")),
            "no tag {key}: {tank_tags}"
        );
    }
    let influx_dash = dashboard("tank-influxdb.json");
    let mut variables = 0;
    for variable in influx_dash["templating"]["list"].as_array().unwrap() {
        let Some(query) = variable["query"]
            .as_str()
            .filter(|_| variable["type"] == "query")
        else {
            continue;
        };
        let query = substitute(query, &[("tank", ".*")]);
        let answer = influxql(influx.port, &query);
        let values = answer["results"][0]["series"][0]["values"].to_string();
        let expected: &[&str] = match variable["name"].as_str().unwrap() {
            "tank" => &["ci"],
            "shard" => &["0/2", "1/2"],
            "tag" => &["__OVERALL__", "_api", "_news", "_search"],
            "queue" => &["phantom", "phantom-1"],
            other => panic!("a variable {other} the test does not know"),
        };
        for value in expected {
            assert!(
                values.contains(&format!("\"{value}\"")),
                "{query}: no {value}: {answer}"
            );
        }
        assert!(
            !values.contains("__QUEUE__") || variable["name"] == "queue",
            "{query}: {answer}"
        );
        variables += 1;
    }
    assert_eq!(variables, 4);
    let time = format!("time >= {from_s}s AND time <= {to_s}s");
    for (title, query) in panel_queries(&influx_dash, "query") {
        for (tag, queue) in [
            ("__OVERALL__", "()"),
            ("__OVERALL__", "phantom-1"),
            ("_api", "()"),
        ] {
            let query = substitute(
                &query,
                &[
                    ("tank", ".*"),
                    ("shard", ".*"),
                    ("tag", tag),
                    ("queue", queue),
                    ("timeFilter", &time),
                ],
            );
            let answer = influxql(influx.port, &query);
            let series = answer["results"][0]["series"].as_array();
            assert!(
                series.is_some_and(|s| s
                    .iter()
                    .any(|s| s["values"].as_array().is_some_and(|v| !v.is_empty()))),
                "{title} (tag {tag}, queue {queue}): no data from\n{query}\n{answer}"
            );
        }
    }
    // All shards added: the answered rate of the whole test is both shards' shots.
    let sum = influxql(
        influx.port,
        &format!("SELECT sum(\"RPS\") FROM overall_meta WHERE label = '__OVERALL__' AND queue !~ /./ AND {time}"),
    );
    assert_eq!(
        sum["results"][0]["series"][0]["values"][0][1],
        8 * 60,
        "{sum}"
    );

    // Prometheus: the same, over the run's time.
    let prom_dash = dashboard("tank-prometheus.json");
    for variable in prom_dash["templating"]["list"].as_array().unwrap() {
        if variable["type"] != "query" {
            continue;
        }
        // label_values(SELECTOR, LABEL) is Grafana's: the label's values on the selector's series.
        let definition = substitute(variable["definition"].as_str().unwrap(), &[("job", ".*")]);
        let inner = definition
            .trim_start_matches("label_values(")
            .trim_end_matches(')');
        let (selector, label) = inner.rsplit_once(", ").unwrap();
        let answer = get_json(
            scraper.port,
            &format!(
                "/api/v1/label/{label}/values?match[]={}&start={from_s}&end={to_s}",
                encode(selector)
            ),
        );
        let values = answer["data"].to_string();
        let expected: &[&str] = match variable["name"].as_str().unwrap() {
            "job" => &["tank"],
            "shard" => &["0/2", "1/2"],
            "tag" => &["__OVERALL__", "_api", "_search"],
            "queue" => &["phantom", "phantom-1"],
            other => panic!("a variable {other} the test does not know"),
        };
        for value in expected {
            assert!(
                values.contains(&format!("\"{value}\"")),
                "{definition}: no {value}: {answer}"
            );
        }
    }
    for (title, query) in panel_queries(&prom_dash, "expr") {
        for (tag, queue) in [
            ("__OVERALL__", "()"),
            ("__OVERALL__", "phantom-1"),
            ("_api", "()"),
        ] {
            let query = substitute(
                &query,
                &[
                    ("job", ".*"),
                    ("shard", ".*"),
                    ("tag", tag),
                    ("queue", queue),
                    ("__rate_interval", "5s"),
                ],
            );
            let answer = get_json(
                scraper.port,
                &format!(
                    "/api/v1/query_range?query={}&start={from_s}&end={to_s}&step=1",
                    encode(&query)
                ),
            );
            assert_eq!(answer["status"], "success", "{query}: {answer}");
            let result = answer["data"]["result"].as_array();
            assert!(
                result.is_some_and(|r| r
                    .iter()
                    .any(|s| s["values"].as_array().is_some_and(|v| !v.is_empty()))),
                "{title} (tag {tag}, queue {queue}): no data from\n{query}\n{answer}\n{}",
                scraper.log()
            );
        }
    }
}
