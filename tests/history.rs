//! Run history end to end: two sweeps against `tank origin`'s capacity model
//! (8 workers of 10 ms), listed by `tank runs` with their steps and an
//! index.html, then compared by id as curves against concurrency, the page
//! rendered in headless Chromium.

use std::path::Path;
use std::process::Output;

use crate::report::{assert_rendered, chromium, render};
use crate::support::component::Component;
use crate::support::tank;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    tank()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tank")
}

#[test]
fn runs_lists_sweeps_and_compare_takes_their_ids() {
    let origin = Component::start(Path::new(env!("CARGO_BIN_EXE_tank")), |port, dir| {
        let file = dir.join("recipe.json");
        std::fs::write(&file, r#"{"workers": 8, "stages": [{"latency": "10ms"}]}"#).unwrap();
        vec![
            "origin".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--recipe".into(),
            file.display().to_string(),
        ]
    });
    let url = format!("http://127.0.0.1:{}/", origin.port);
    let dir = tempfile::tempdir().unwrap();
    for steps in ["1,2", "1,2,4"] {
        let out = run(
            dir.path(),
            &[
                "sweep", &url, "-c", steps, "--step", "1s", "--warmup", "0.5s",
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = run(dir.path(), &["runs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines.len(),
        1 + 2 + 2 + 3,
        "a header, 2 sweeps, 5 steps:\n{table}"
    );
    let sweeps: Vec<&str> = lines
        .iter()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|id| id.ends_with("_sweep"))
        })
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(sweeps.len(), 2, "{table}");
    assert!(
        lines[1].contains("2 steps, knee") || lines[1].contains("2 steps, no knee"),
        "{table}"
    );
    assert!(
        !table.contains("interrupted or failed"),
        "a step ended by its sweep is not a failure:\n{table}"
    );
    let index = std::fs::read_to_string(dir.path().join("logs/index.html")).unwrap();
    assert_eq!(
        index.matches("/report.html\">").count(),
        2 + 5,
        "every run links its report"
    );
    let json = run(dir.path(), &["runs", "--json"]);
    let rows: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 7);
    assert!(rows
        .iter()
        .filter(|r| r["kind"] == "step")
        .all(|r| r["rps"].as_f64().unwrap() > 0.0));

    let page = dir.path().join("compare.html");
    let out = run(
        dir.path(),
        &[
            "compare",
            sweeps[0],
            sweeps[1],
            "--out",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("conns"), "{stdout}");
    // Concurrency 4 only in B: its A cells are empty.
    let four = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("4 "))
        .unwrap();
    assert!(four.contains('–'), "{stdout}");
    // A step of each sweep, compared by its id as a run.
    let step = |sweep: &str| format!("{sweep}/01_1c");
    let out = run(dir.path(), &["compare", &step(sweeps[0]), &step(sweeps[1])]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unknown = run(dir.path(), &["compare", "nope", sweeps[0]]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("no single run under logs has that id"),
        "{}",
        text(&unknown.stderr)
    );

    let Some(browser) = chromium() else {
        eprintln!("browser part SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    let (dom, log) = render(&browser, &page);
    assert_rendered("compare.html (sweeps)", &dom, &log, 2);
    assert!(dom.contains("Throughput (good answers) by concurrency, overlaid"));
    assert!(dom.contains("p99 by concurrency, overlaid"));
}

#[test]
fn runs_lists_a_run_killed_before_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let killed = logs.join("2026-11-26_16-00-36_0c9c4e");
    std::fs::create_dir_all(&killed).unwrap();
    // `kill -9` after 2 s: phout.log, but no summary.json.
    let row = "\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200\n";
    std::fs::write(
        killed.join("phout.log"),
        format!("1795708836.000{row}1795708837.000{row}1795708838.000{row}"),
    )
    .unwrap();
    let out = run(dir.path(), &["runs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains("2026-11-26_16-00-36_0c9c4e")
            && table.contains("no summary.json: killed, or still running; 3 rows in phout.log"),
        "{table}"
    );
    assert!(
        text(&out.stderr).contains("tank: 1 runs"),
        "{}",
        text(&out.stderr)
    );
    let index = std::fs::read_to_string(logs.join("index.html")).unwrap();
    assert!(index.contains("2026-11-26_16-00-36_0c9c4e"), "{index}");
}
