//! Scenarios (`ammo_type = scenario`) end to end, against the stateful shop
//! of `support::shop`: every token and item a run used must have come from
//! that same run (the shop answers 200 only then), the CSV source is walked
//! in order, assertions and missing values end runs with their codes and
//! reasons, and the same flow runs alike written in HCL and in YAML.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::shop::Shop;
use crate::support::{artifacts, assert_ran, interrupted, phout, shoot, tank, Row};

/// The repository's worked example: `ammo/scenario/`.
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("ammo/scenario")
        .join(name)
}

/// A directory laid out as the repository is: `ammo/scenario/` with the
/// example's users and `file` (the example's, or written here).
fn workdir(file: &str, text: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let ammo = dir.path().join("ammo/scenario");
    std::fs::create_dir_all(&ammo).expect("ammo dir");
    std::fs::copy(example("users.csv"), ammo.join("users.csv")).expect("users.csv");
    match text {
        Some(text) => std::fs::write(ammo.join(file), text).expect("scenario file"),
        None => {
            std::fs::copy(example(file), ammo.join(file)).expect("scenario file");
        }
    }
    dir
}

/// A scenario file's start: the users source and a login that takes the
/// next user and keeps the token; its postprocessor list open for more.
const LOGIN: &str = r#"
variable_sources:
  - {name: users, type: file/csv, file: ammo/scenario/users.csv, fields: [id, name], ignore_first_line: true}
requests:
  - name: login
    method: POST
    uri: /login
    body: '{"user": "{{.request.login.preprocessor.user.name}}"}'
    preprocessor: {mapping: {user: "source.users[next]"}}
    postprocessors:
      - {type: var/jsonpath, mapping: {token: $.token}}
"#;

fn config(shop: &Shop, file: &str, runs: u32) -> String {
    format!(
        "[phantom]\naddress = {}\nammo_type = scenario\nammofile = ammo/scenario/{file}\n\
         instances_schedule = const(3, 1s)\nammo_limit = {runs}\narrivals_seed = 5\n",
        shop.addr()
    )
}

fn by_tag(rows: &[Row]) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for row in rows {
        *counts.entry(row.tag.as_str()).or_default() += 1;
    }
    counts
}

fn summary(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// Run the shop example written as `file` (over HTTP/2 when `http2`) and
/// check everything the shop and the rows say.
fn shop_flow(file: &str, http2: bool) {
    let (shop, extra) = if http2 {
        (Shop::start_http2(), "tank_type = http2\n")
    } else {
        (Shop::start(), "")
    };
    let dir = workdir(file, None);
    let config = config(&shop, file, 12) + extra;
    let out = shoot(dir.path(), &config, Duration::from_secs(120));
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    // 12 runs are three rounds of 3 buyers and 1 browser: each round is exact.
    let tags = by_tag(&rows);
    assert_eq!(tags.get("auth"), Some(&12), "{tags:?}");
    assert_eq!(tags.get("list"), Some(&12), "{tags:?}");
    assert_eq!(tags.get("profile"), Some(&12), "{tags:?}");
    assert_eq!(tags.get("buy"), Some(&18), "{tags:?}");
    assert_eq!(rows.len(), 54);
    for row in &rows {
        assert_eq!((row.net_code, row.proto_code), (0, 200), "{row:?}");
    }
    let ledger = shop.ledger();
    assert!(
        ledger.requests.iter().all(|(_, _, status)| *status == 200),
        "the shop refused some: {:?}",
        ledger
            .requests
            .iter()
            .filter(|r| r.2 != 200)
            .collect::<Vec<_>>()
    );
    assert_eq!(ledger.accounts.len(), 12);
    // Each run bought only items its own list answered, with its own token and user.
    let mut users: HashMap<(String, String), usize> = HashMap::new();
    let mut buyers = 0;
    for account in ledger.accounts.values() {
        *users
            .entry((account.id.clone(), account.user.clone()))
            .or_default() += 1;
        assert_eq!(account.issued.len(), 3, "{account:?}");
        for (item, status) in &account.bought {
            assert!(account.issued.contains(item), "{account:?}");
            assert_eq!(*status, 200);
        }
        match account.bought.len() {
            0 => {}
            2 => {
                buyers += 1;
                // Two items in the order listed: `items[next]` is the run's own cursor.
                let bought: Vec<u64> = account.bought.iter().map(|b| b.0).collect();
                assert_eq!(bought, account.issued[..2]);
            }
            n => panic!("{n} buys in one run: {account:?}"),
        }
    }
    assert_eq!(buyers, 9);
    // users.csv's four rows, walked in turn by every instance: three times each.
    let expected: HashMap<(String, String), usize> =
        [("1", "ann"), ("2", "bob"), ("3", "cid"), ("4", "dan")]
            .into_iter()
            .map(|(id, name)| ((id.to_owned(), name.to_owned()), 3))
            .collect();
    assert_eq!(users, expected);
    let scenarios = &summary(&run)["scenarios"];
    assert_eq!(scenarios["runs_started"], 12);
    assert_eq!(scenarios["runs_completed"], 12);
    assert_eq!(scenarios["runs_planned"], 12);
    assert_eq!(scenarios["runs_failed"], 0);
    // The plan counts runs, not requests: each second's line says it has no planned count.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(" ts=")).collect();
    assert!(!lines.is_empty(), "{stdout}");
    assert!(lines.iter().all(|l| l.contains(" planned=– ")), "{stdout}");
}

#[test]
fn the_shop_flow_in_hcl_uses_only_what_each_run_was_given() {
    shop_flow("shop.hcl", false);
}

#[test]
fn the_shop_flow_in_yaml_runs_as_in_hcl() {
    shop_flow("shop.yaml", false);
}

#[test]
fn the_shop_flow_runs_over_http2_as_over_http1() {
    shop_flow("shop.hcl", true);
}

#[test]
fn autocases_tag_the_requests_without_a_tag_of_their_own() {
    let shop = Shop::start();
    let dir = workdir("shop.hcl", None);
    let config = config(&shop, "shop.hcl", 4) + "autocases = 1\n";
    let out = shoot(dir.path(), &config, Duration::from_secs(120));
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    let mut tags: Vec<&str> = by_tag(&rows).into_keys().collect();
    tags.sort_unstable();
    // `login` has `tag = "auth"`; the others are tagged by their path, as uri ammo is.
    assert_eq!(tags, ["_buy", "_items", "_profile", "auth"]);
}

#[test]
fn a_failed_assertion_ends_the_run_and_is_counted_by_request_and_reason() {
    let shop = Shop::start();
    let text = std::fs::read_to_string(example("shop.yaml"))
        .expect("shop.yaml")
        // The shop answers a purchase 200: expecting 201 fails it.
        .replace(
            "      - type: assert/response\n        status_code: 200\n        headers:",
            "      - type: assert/response\n        status_code: 201\n        headers:",
        )
        .replace(
            "weight: 1\n    requests: [login, list, \"sleep(20)\", profile]",
            "weight: 1\n    requests: [login]",
        );
    let dir = workdir("strict.yaml", Some(&text));
    let out = shoot(
        dir.path(),
        &config(&shop, "strict.yaml", 8),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let failed: Vec<&Row> = rows.iter().filter(|r| r.net_code != 0).collect();
    // Two rounds of 3 buyers and 1 browser: each buyer's first purchase fails, its second is never sent.
    assert_eq!(failed.len(), 6, "{failed:?}");
    for row in &failed {
        assert_eq!(
            (row.tag.as_str(), row.net_code, row.proto_code),
            ("buy", 901, 200)
        );
    }
    assert_eq!(by_tag(&rows).get("buy"), Some(&6));
    let ledger = shop.ledger();
    let bought: Vec<usize> = ledger.accounts.values().map(|a| a.bought.len()).collect();
    assert_eq!(bought.iter().filter(|n| **n == 1).count(), 6, "{bought:?}");
    assert_eq!(bought.iter().filter(|n| **n > 1).count(), 0, "{bought:?}");
    let summary = summary(&run);
    let scenarios = &summary["scenarios"];
    assert_eq!(
        (
            scenarios["runs_failed"].as_u64(),
            scenarios["runs_completed"].as_u64()
        ),
        (Some(6), Some(2))
    );
    assert_eq!(
        scenarios["failures"],
        serde_json::json!([{
            "queue": "phantom",
            "request": "buy",
            "code": 901,
            "reason": "assert/response: status_code 201",
            "count": 6
        }])
    );
    assert_eq!(summary["net_codes"]["901"], 6);
    let text = std::fs::read_to_string(run.join("summary.txt")).expect("summary.txt");
    assert!(
        text.contains("buy                    901          6  assert/response: status_code 201"),
        "{text}"
    );
    assert!(
        text.contains("6 of 8 scenario runs (75.0%) ended early"),
        "{text}"
    );
    assert!(!text.contains("failed at the network level"), "{text}");
    // report.html shows the runs and the failures by reason.
    if let Some(browser) = crate::report::chromium() {
        let page = run.join("report.html");
        let (dom, log) = crate::report::render(&browser, &page);
        crate::report::assert_rendered("report.html", &dom, &log, 3);
        assert!(dom.contains("Scenario runs"), "{dom}");
        assert!(
            dom.contains("assert/response: status_code 201"),
            "no reason in the page"
        );
        assert!(
            dom.contains("901 assertion failed"),
            "no code's name in the page"
        );
    }
}

#[test]
fn a_missing_value_is_never_sent_and_an_empty_match_ends_the_run() {
    let shop = Shop::start();
    let text = LOGIN.to_owned()
        + r#"      - {type: var/header, mapping: {missing: X-Not-Sent}}
  - name: list
    uri: /items
    headers:
      Authorization: "Bearer {{.request.login.postprocessor.token}}"
      X-Missing: "{{.request.login.postprocessor.missing}}"
  - name: search
    uri: /items
    headers: {Authorization: "Bearer {{.request.login.postprocessor.token}}"}
    postprocessors:
      - {type: var/jsonpath, mapping: {first: "$.nothing"}}
scenarios:
  - {name: unset, requests: [login, list]}
  - {name: nomatch, requests: [login, search, list]}
"#;
    let dir = workdir("broken.yaml", Some(&text));
    let out = shoot(
        dir.path(),
        &config(&shop, "broken.yaml", 4),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let unset: Vec<&Row> = rows.iter().filter(|r| r.net_code == 902).collect();
    assert_eq!(unset.len(), 2, "{rows:?}");
    for row in unset {
        assert_eq!(
            (
                row.tag.as_str(),
                row.size_out,
                row.size_in,
                row.proto_code,
                row.interval_real
            ),
            ("list", 0, 0, 0, 0)
        );
    }
    let nomatch: Vec<&Row> = rows.iter().filter(|r| r.net_code == 903).collect();
    assert_eq!(nomatch.len(), 2, "{rows:?}");
    assert!(
        nomatch
            .iter()
            .all(|r| r.tag == "search" && r.proto_code == 200),
        "{nomatch:?}"
    );
    // The shop saw the logins and the searches, never a list with an empty hole.
    let ledger = shop.ledger();
    let paths: Vec<&str> = ledger.requests.iter().map(|(_, p, _)| p.as_str()).collect();
    assert_eq!(paths.iter().filter(|p| **p == "/login").count(), 4);
    assert_eq!(paths.iter().filter(|p| **p == "/items").count(), 2);
    let summary = summary(&run);
    let reasons: Vec<(String, u64)> = summary["scenarios"]["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            (
                f["reason"].as_str().unwrap_or_default().to_owned(),
                f["count"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert!(
        reasons.contains(&("var/jsonpath `$.nothing` matched nothing".into(), 2)),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|(r, n)| *n == 2 && r.contains(".request.login.postprocessor.missing")),
        "{reasons:?}"
    );
}

#[test]
fn tank_plan_shows_the_scenarios_and_refuses_a_mistake_at_its_line() {
    // The repository's own example, from the repository's root.
    let out = tank()
        .args(["plan", "-c", "configs/scenario.ini"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("tank plan");
    assert_ran(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "scenario file  ammo/scenario/shop.hcl: 2 scenario(s), 4 request(s), 1 source(s)",
        "buyer        weight 3 (75.0% of runs), 5 request(s) a run, sleeps 20ms, at least 50ms a run",
        "browser      weight 1 (25.0% of runs), 3 request(s) a run, sleeps 20ms, at least 20ms a run",
        "source users    file/csv ammo/scenario/users.csv: 4 rows of id, name",
        "runs           40",
        "drawn          buyer 30, browser 10",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    // chosen_cases: the share is among the chosen, and the others say they never run.
    let out = tank()
        .args([
            "plan",
            "-c",
            "configs/scenario.ini",
            "-o",
            "phantom.chosen_cases=browser",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("tank plan");
    assert_ran(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "buyer        weight 3 (not in chosen_cases: never run), 5 request(s) a run",
        "browser      weight 1 (100.0% of runs), 3 request(s) a run",
        "drawn          browser 40",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    // A scenario naming a request the file lacks: refused, located in the scenario file.
    let broken = std::fs::read_to_string(example("shop.hcl"))
        .expect("shop.hcl")
        .replace("\"buy(2, 10)\"", "\"pay(2, 10)\"");
    let dir = workdir("shop.hcl", Some(&broken));
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:1\nammo_type = scenario\nammofile = ammo/scenario/shop.hcl\n\
         rps_schedule = const(1, 1s)\n",
    )
    .expect("load.ini");
    let out = tank()
        .args(["plan", "-c", "load.ini"])
        .current_dir(dir.path())
        .output()
        .expect("tank plan");
    assert!(!out.status.success());
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains(
            "ammo/scenario/shop.hcl:102: scenario `buyer`: `pay(2, 10)`: no request `pay`"
        ),
        "{error}"
    );
    assert!(
        error.contains("load.ini:4"),
        "located at the ammofile option too: {error}"
    );
}

#[test]
fn a_second_ctrl_c_leaves_exactly_one_row_per_step_sent() {
    let shop = Shop::start();
    let text = LOGIN.to_owned()
        + r#"  - name: slow
    uri: /slow
    headers: {Authorization: "Bearer {{.request.login.postprocessor.token}}"}
scenarios:
  - {name: wait, requests: [login, slow, login]}
"#;
    let dir = workdir("slow.yaml", Some(&text));
    let slow_seen = || {
        shop.ledger()
            .requests
            .iter()
            .filter(|(_, path, _)| path == "/slow")
            .count()
    };
    let (out, _) = interrupted(
        dir.path(),
        &config(&shop, "slow.yaml", 10),
        || slow_seen() >= 3,
        &[libc::SIGINT, libc::SIGINT],
    );
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let logins = shop
        .ledger()
        .requests
        .iter()
        .filter(|(_, path, _)| path == "/login")
        .count();
    // Three instances, each in its run's slow step when stopped: every step sent has its row.
    let tags = by_tag(&rows);
    assert_eq!(tags.get("login"), Some(&logins), "{rows:?}");
    assert_eq!(tags.get("slow"), Some(&slow_seen()), "{rows:?}");
    assert_eq!(rows.len(), logins + slow_seen());
    for row in &rows {
        let expected = if row.tag == "slow" { 125 } else { 0 };
        assert_eq!(row.net_code, expected, "{row:?}");
    }
    let scenarios = &summary(&run)["scenarios"];
    assert_eq!(
        scenarios["runs_started"],
        3,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(scenarios["runs_completed"], 0);
    // Every run started is counted once: the three abandoned ones were cut short
    // (before, they were in no count).
    assert_eq!(scenarios["runs_stopped"], 3, "{scenarios}");
}

#[test]
fn an_instance_sleeping_in_its_run_counts_as_busy() {
    // Two runs, each a login, 2.5 s of think time and another login: both
    // instances are held throughout (before, the seconds of sleep read 0).
    let shop = Shop::start();
    let text = format!(
        "{LOGIN}\nscenarios:\n  - name: thinker\n    requests: [login, \"sleep(2500)\", login]\n"
    );
    let dir = workdir("think.yaml", Some(&text));
    let cfg = format!(
        "[phantom]\naddress = {}\nammo_type = scenario\nammofile = ammo/scenario/think.yaml\n\
         instances = 2\nrps_schedule = const(2, 1s)\n",
        shop.addr()
    );
    let out = shoot(dir.path(), &cfg, Duration::from_secs(120));
    assert_ran(&out);
    let run = artifacts(dir.path());
    let summary = summary(&run);
    let instances: Vec<u64> = summary["timeline"]["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    // The seconds wholly inside the sleep: both instances busy.
    assert!(instances.len() >= 3, "{instances:?}");
    assert_eq!(instances[1], 2, "{instances:?}");
}
