//! `tank report` and `tank compare` end to end: the golden comparison of tank's per-second
//! aggregation with yandex-tank 2.0.11's own aggregator, the HTML pages in a real headless
//! Chromium, and the commands' errors and output.
//!
//! The golden test needs the reference venv (`TANK_REFERENCE_PYTHON`, as
//! tests/differential.rs; `TANK_SKIP_REFERENCE=1` skips it on purpose). The browser test
//! needs Chromium (`chromium` on PATH, or `TANK_CHROMIUM=/path`; `TANK_SKIP_BROWSER=1` skips
//! it on purpose).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const REFERENCE_HELP: &str = "\
the golden aggregation test needs the reference, yandextank 2.0.11, in a Python venv:

    scripts/reference-venv.sh            # creates .venv-ref/ and prints its python
    export TANK_REFERENCE_PYTHON=$PWD/.venv-ref/bin/python
    cargo test

(scripts/test.sh does both.) To skip this test on purpose, set TANK_SKIP_REFERENCE=1.";

const BROWSER_HELP: &str = "\
the HTML report test renders report.html in a real headless Chromium. Install it:

    apt-get install -y chromium          # Debian / Ubuntu (.ci/run does this)

or point the test at a Chromium or Chrome binary with TANK_CHROMIUM=/path/to/chrome.
To skip this test on purpose, set TANK_SKIP_BROWSER=1.";

fn tank(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tank"))
        .args(args)
        .output()
        .expect("run tank")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A deterministic phout with what makes aggregation tricky: tags with `#` (cut at the last
/// one), the empty tag, 11 s timeouts ending many seconds later, resets, HTTP errors, busy
/// seconds and seconds with one or two responses (where interpolation shows).
fn golden_phout() -> String {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let tags = ["search#1", "search#2", "cart", "", "api/v1#x#3"];
    let mut out = String::new();
    let mut ms = 1_700_000_000_000u64;
    for i in 0..30_000u64 {
        // Busy at first (~2000 rps), then sparse seconds with a response or two.
        ms += if i < 29_400 {
            next() % 2
        } else if i % 2 == 0 {
            1000 + next() % 300
        } else {
            next() % 400
        };
        let roll = next() % 1000;
        let (interval, net, proto) = match roll {
            0..=4 => (11_000_000, 110, 0),
            5..=8 => (next() % 3000 + 100, 104, 0),
            9..=40 => (next() % 50_000 + 500, 0, 500 + (next() % 4) as u16),
            41..=70 => (next() % 5_000 + 300, 0, 404),
            // A log-ish spread from 0.1 ms to ~70 ms.
            _ => (100 + (next() % 700) * (1 + next() % 100), 0, 200),
        };
        let connect = if next() % 4 == 0 { next() % 500 } else { 0 }.min(interval);
        let send = (next() % 50).min(interval - connect);
        let receive = (next() % 200).min(interval - connect - send);
        let latency = interval - connect - send - receive;
        let tag = tags[(next() % tags.len() as u64) as usize];
        let _ = writeln!(
            out,
            "{}.{:03}\t{tag}\t{interval}\t{connect}\t{send}\t{latency}\t{receive}\t{interval}\t{}\t{}\t{net}\t{proto}",
            ms / 1000,
            ms % 1000,
            70 + next() % 20,
            if net == 0 { next() % 5000 } else { 0 },
        );
    }
    out
}

fn reference_python() -> Option<PathBuf> {
    match std::env::var_os("TANK_REFERENCE_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var("TANK_SKIP_REFERENCE").as_deref() == Ok("1") => None,
        _ => panic!("TANK_REFERENCE_PYTHON is not set: {REFERENCE_HELP}"),
    }
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// Compare one aggregate (overall or a tag) of tank's with the reference's; push differences.
fn compare_agg(at: &str, tank: &Value, reference: &Value, problems: &mut Vec<String>) {
    for field in tank_stats::FIELD_NAMES {
        for stat in ["total", "min", "max", "len"] {
            if tank[field][stat] != reference[field][stat] {
                problems.push(format!(
                    "{at} {field}.{stat}: tank {} reference {}",
                    tank[field][stat], reference[field][stat]
                ));
            }
        }
    }
    for codes in ["net_code", "proto_code"] {
        if tank[codes]["count"] != reference[codes]["count"] {
            problems.push(format!(
                "{at} {codes}: tank {} reference {}",
                tank[codes]["count"], reference[codes]["count"]
            ));
        }
    }
    if tank["interval_real"]["hist"] != reference["interval_real"]["hist"] {
        problems.push(format!(
            "{at} hist: tank {} reference {}",
            tank["interval_real"]["hist"], reference["interval_real"]["hist"]
        ));
    }
    // Quantiles: the reference's (numpy) are exact; tank's come from an hdrhistogram with 3
    // significant digits, interpolated the same way: within 0.1% (+1 µs of rounding).
    let (tq, tv) = (
        &tank["interval_real"]["q"]["q"],
        &tank["interval_real"]["q"]["value"],
    );
    let (rq, rv) = (
        &reference["interval_real"]["q"]["q"],
        &reference["interval_real"]["q"]["value"],
    );
    for (i, q) in rq.as_array().into_iter().flatten().enumerate() {
        let Some(j) = tq
            .as_array()
            .and_then(|t| t.iter().position(|x| x.as_f64() == q.as_f64()))
        else {
            problems.push(format!("{at}: tank has no quantile {q}"));
            continue;
        };
        let (t, r) = (
            tv[j].as_f64().unwrap_or(f64::NAN),
            rv[i].as_f64().unwrap_or(f64::NAN),
        );
        // A missing value (NaN) fails too.
        let close = (t - r).abs() <= r * 0.001 + 1.0;
        if !close {
            problems.push(format!("{at} q{q}: tank {t} reference {r}"));
        }
    }
}

#[test]
fn aggregation_matches_yandex_tanks_aggregator_second_by_second() {
    let Some(python) = reference_python() else {
        eprintln!("golden aggregation test SKIPPED: TANK_SKIP_REFERENCE=1");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let phout = dir.path().join("phout.log");
    std::fs::write(&phout, golden_phout()).unwrap();
    let out = dir.path().join("out");
    let run = tank(&[
        "report",
        phout.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "tank report failed: {}",
        text(&run.stderr)
    );

    let reference_out = dir.path().join("reference.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/ref_aggregate.py");
    let reference = Command::new(&python)
        .arg(&script)
        .arg(&phout)
        .arg(&reference_out)
        .stdout(Stdio::null())
        .output()
        .expect("run the reference aggregator");
    assert!(
        reference.status.success(),
        "reference failed: {}",
        text(&reference.stderr)
    );

    let tank_seconds = read_jsonl(&out.join("test_data.log"));
    let reference_seconds = read_jsonl(&reference_out);
    let ts = |v: &[Value], data: bool| -> Vec<u64> {
        v.iter()
            .map(|s| {
                if data { &s["data"]["ts"] } else { &s["ts"] }
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(
        ts(&tank_seconds, true),
        ts(&reference_seconds, false),
        "the same seconds"
    );
    assert!(
        reference_seconds.len() > 20,
        "the fixture spans many seconds"
    );

    let mut problems = Vec::new();
    for (t, r) in tank_seconds.iter().zip(&reference_seconds) {
        let second = r["ts"].as_u64().unwrap();
        compare_agg(
            &format!("{second} overall"),
            &t["data"]["overall"],
            &r["overall"],
            &mut problems,
        );
        let tank_tags: Vec<&String> = t["data"]["tagged"].as_object().unwrap().keys().collect();
        let reference_tags: Vec<&String> = r["tagged"].as_object().unwrap().keys().collect();
        if tank_tags != reference_tags {
            problems.push(format!(
                "{second} tags: tank {tank_tags:?} reference {reference_tags:?}"
            ));
            continue;
        }
        for tag in reference_tags {
            compare_agg(
                &format!("{second} tag {tag:?}"),
                &t["data"]["tagged"][tag],
                &r["tagged"][tag],
                &mut problems,
            );
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences, first ones:\n{}",
        problems.len(),
        problems[..problems.len().min(20)].join("\n")
    );
}

/// Chromium, or `None` when skipped on purpose.
pub(crate) fn chromium() -> Option<PathBuf> {
    if std::env::var("TANK_SKIP_BROWSER").as_deref() == Ok("1") {
        return None;
    }
    if let Some(path) = std::env::var_os("TANK_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    panic!("no Chromium found: {BROWSER_HELP}");
}

/// Load `page` in headless Chromium; return the DOM after scripts ran and Chromium's log.
pub(crate) fn render(browser: &Path, page: &Path) -> (String, String) {
    render_url(browser, &format!("file://{}", page.display()), &[])
}

/// Load `url` in headless Chromium with `flags` besides the usual (a
/// `--virtual-time-budget=MS` to let a live page take events, a
/// `--screenshot=FILE`); return the DOM after scripts ran and Chromium's log.
pub(crate) fn render_url(browser: &Path, url: &str, flags: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    // Files, not pipes: the DOM is bigger than a pipe's buffer.
    let dom_path = profile.path().join("dom.html");
    let log_path = profile.path().join("chromium.log");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stdout(std::fs::File::create(&dom_path).unwrap())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    while child.try_wait().expect("wait for chromium").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |path: &Path| text(&std::fs::read(path).unwrap_or_default());
    (read(&dom_path), read(&log_path))
}

pub(crate) fn assert_rendered(page: &str, dom: &str, log: &str, min_charts: usize) {
    assert!(
        dom.contains("data-status=\"ok\""),
        "{page}: the script did not finish; log:\n{log}"
    );
    let charts = dom.matches("<svg").count();
    let lines = dom.matches("<polyline").count();
    assert!(
        charts >= min_charts,
        "{page}: {charts} charts drawn, expected {min_charts}+"
    );
    assert!(lines >= min_charts, "{page}: {lines} series drawn");
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Refused to"))
        .collect();
    assert!(
        errors.is_empty(),
        "{page}: console errors:\n{}",
        errors.join("\n")
    );
}

#[test]
fn html_report_and_comparison_render_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("browser test SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let phout = dir.path().join("phout.log");
    std::fs::write(&phout, golden_phout()).unwrap();
    let out = dir.path().join("run");
    assert!(tank(&[
        "report",
        phout.to_str().unwrap(),
        "--out",
        out.to_str().unwrap()
    ])
    .status
    .success());
    let compare_page = dir.path().join("compare.html");
    let compared = tank(&[
        "compare",
        out.to_str().unwrap(),
        phout.to_str().unwrap(),
        "--out",
        compare_page.to_str().unwrap(),
    ]);
    assert!(compared.status.success(), "{}", text(&compared.stderr));

    let report_page = out.join("report.html");
    let html = std::fs::read_to_string(&report_page).unwrap();
    assert!(
        !html.contains(" src=") && !html.contains("https://") && !html.contains("@import"),
        "self-contained"
    );
    let (dom, log) = render(&browser, &report_page);
    assert_rendered("report.html", &dom, &log, 5);
    assert_the_headline_comes_first(&dom, &out);
    for heading in [
        "Response time quantiles per second",
        "HTTP codes per second",
        "Cumulative quantiles",
        "Per tag",
        "Response time distribution",
        "Responses per second by tag",
        "Response time p99 by tag",
        "Errors per second by tag",
        "log scale",
        "(no tag)",
    ] {
        assert!(dom.contains(heading), "report.html lacks `{heading}`");
    }
    // The histogram spreads its bins over the data's own range (0.1 ms to 11 s here), not
    // yandex-tank's fixed bins, and every line has a legend item that toggles it.
    let bars = section(&dom, "Response time distribution")
        .matches("class=\"bar\"")
        .count();
    assert_eq!(bars, 40, "log-spaced bins in the histogram");
    // Each tag on its own: its quantile band over time and its distribution.
    let tags = section(&dom, "Each tag on its own");
    assert_eq!(
        tags.matches("<details").count(),
        4,
        "search, cart, api/v1#x, (no tag)"
    );
    assert_eq!(tags.matches("class=\"bar\"").count(), 4 * 40);
    assert!(dom.contains("Phases per second"), "the phases are charted");
    assert!(
        dom.contains("log scale, 40 bins"),
        "the histogram's axis says how it is binned"
    );
    assert!(
        dom.matches("class=\"toggle\"").count() >= 20,
        "legend items toggle their lines"
    );
    let (dom, log) = render(&browser, &compare_page);
    assert_rendered("compare.html", &dom, &log, 2);
    // The durations the text gives, to the same tenth of a second.
    let stdout = text(&compared.stdout);
    let a_duration = stdout
        .split("duration: A ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the text's durations");
    assert!(
        dom.contains(&format!(
            "<td>duration s</td><td>{a_duration}</td><td>{a_duration}</td>"
        )),
        "compare.html's durations are not the text's {a_duration} s"
    );
}

/// The text from the `<h2>` that starts with `heading` to the end of its section.
fn section<'a>(dom: &'a str, heading: &str) -> &'a str {
    let Some(start) = dom.find(&format!("<h2>{heading}")) else {
        panic!("no `{heading}` section in\n{dom}");
    };
    let rest = &dom[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// `n` as the page writes integers: 12,345.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// report.html's headline (`dom`, of the run in `run`) comes right after the test box,
/// with the summary's error share and duration.
fn assert_the_headline_comes_first(dom: &str, run: &Path) {
    // The headline comes right after the test box, before any chart (and so
    // before monitoring, whose sections are charts). Before, it was the
    // last thing on the page.
    let headline = dom.find("<h2>Results</h2>").expect("a Results section");
    assert!(dom.find("<h2>Test</h2>").unwrap() < headline);
    assert!(
        headline < dom.find("<svg").unwrap(),
        "the headline is not before the charts"
    );
    let results = section(dom, "Results");
    for needle in [
        "<th>p50</th>",
        "<th>p90</th>",
        "<th>p99</th>",
        "service time ms",
        "HTTP codes",
        "404 Not Found",
    ] {
        assert!(
            results.contains(needle),
            "no `{needle}` in the headline:\n{results}"
        );
    }
    // Its error share is the summary's: net errors and HTTP 4xx/5xx of all responses.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let errors: u64 = summary["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["errors"].as_u64().unwrap())
        .sum();
    let responses = summary["shots"]["responses"].as_u64().unwrap();
    let share = format!(
        "{} of {} ({:.2}%)",
        thousands(errors),
        thousands(responses),
        errors as f64 * 100.0 / responses as f64
    );
    assert!(results.contains(&share), "no `{share}` in\n{results}");
    // One duration: summary.txt's (what the console prints) is the page's.
    let summary_txt = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    let seconds = summary_txt
        .lines()
        .find_map(|l| l.strip_prefix("duration "))
        .and_then(|l| l.split(" s,").next())
        .expect("a duration line");
    assert!(
        section(dom, "Test").contains(&format!("<td>duration</td><td>{seconds} s</td>")),
        "the test box's duration is not summary.txt's {seconds} s"
    );
}

#[test]
fn the_quantile_chart_leaves_a_gap_before_the_first_reply() {
    let Some(browser) = chromium() else {
        eprintln!("browser test SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    // Replies take 2.5 s: the run's first seconds have shots but no replies.
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::shoot(
        dir.path(),
        "[phantom]\naddress = origin\nuris = /\nrps_schedule = const(4,3s)\ntimeout = 10s\n\
         [origin]\nrecipe_json = {\"stages\": [{\"latency\": \"2500ms\"}]}\n",
        Duration::from_secs(60),
    );
    crate::support::assert_ran(&out);
    let run = crate::support::artifacts(dir.path());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let responses: Vec<u64> = summary["timeline"]["responses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(
        responses.first(),
        Some(&0),
        "the first second has no reply: {responses:?}"
    );
    let (dom, log) = render(&browser, &run.join("report.html"));
    assert_rendered("report.html", &dom, &log, 5);
    let chart = section(&dom, "Response time quantiles per second");
    let points: Vec<&str> = chart
        .split("points=\"")
        .skip(1)
        .flat_map(|p| p[..p.find('"').unwrap()].split(' '))
        .collect();
    assert!(!points.is_empty(), "no lines drawn:\n{chart}");
    // The chart is 260 high with a 28 px bottom margin: y 232.0 is 0 ms.
    // Before, the seconds before the first reply were drawn there.
    let zero: Vec<&&str> = points.iter().filter(|p| p.ends_with(",232.0")).collect();
    assert!(
        zero.is_empty(),
        "seconds without replies drawn at 0 ms: {zero:?}"
    );
}

#[test]
fn an_unresolved_search_says_so_in_its_heading_and_its_chart_has_a_log_scale() {
    use tank_limit::output::{write_page, SearchReport};
    use tank_limit::search::{Bound, Outcome, Probe, Verdict};
    let Some(browser) = chromium() else {
        eprintln!("browser test SKIPPED: TANK_SKIP_BROWSER=1");
        return;
    };
    let probe = |rate: u64, attempt: u32, valid: bool, passed: bool, p99: f64| Probe {
        target_rps: rate,
        attempt,
        achieved_rps: rate as f64,
        quantile_ms: p99,
        latency_ms: vec![p99 / 2.0; 6],
        error_pct: 0.0,
        lag_p99_ms: if valid { 0.2 } else { 2.9 },
        unsent: 0,
        valid,
        reasons: if valid {
            Vec::new()
        } else {
            vec!["lag p99 2.90 ms (over 1 ms)".into()]
        },
        passed,
        artifacts: String::new(),
    };
    let probes = vec![
        probe(1550, 1, true, false, 7800.0),
        probe(825, 1, false, false, 40.0),
        probe(825, 2, false, false, 41.0),
        probe(825, 3, false, false, 39.0),
        probe(512, 1, true, true, 12.0),
    ];
    let verdict = Verdict::of(&[
        (1550, Outcome::Fail),
        (825, Outcome::Invalid),
        (512, Outcome::Pass),
    ]);
    let bound = Bound {
        quantile: 99.0,
        under_ms: 50.0,
        max_error_pct: 1.0,
        max_lag_p99_ms: 1.0,
    };
    let report = SearchReport::new(
        "search",
        "http://x/".into(),
        &bound,
        verdict,
        probes,
        Vec::new(),
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    write_page(&page, "tank search — http://x/", &report).unwrap();
    let (dom, log) = render(&browser, &page);
    assert_rendered("search report.html", &dom, &log, 2);
    let heading = "Probes (limit unresolved: between 512 and 1550 rps; 3 probes were invalid \
                   (825 rps invalid in 3 tries each: tank, not the target, fell behind))";
    assert!(
        dom.contains(&format!("<h2>{heading}</h2>")),
        "no `{heading}` in\n{dom}"
    );
    assert!(
        section(&dom, "p99 by rate").contains("log scale"),
        "no log toggle on p99 by rate"
    );
}

#[test]
fn report_names_the_file_line_and_field_of_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let phout = dir.path().join("bad.phout");
    std::fs::write(
        &phout,
        "1.000\ta\t1\t0\t0\t1\t0\t1\t1\t1\t0\t200\n1.000\ta\t1\t0\t0\t1\t0\t1\t1\t1\t0\n",
    )
    .unwrap();
    let run = tank(&[
        "report",
        phout.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("bad.phout:2: phout field 12 (proto_code): missing"),
        "{stderr}"
    );
}

#[test]
fn report_writes_outputs_next_to_the_phout_and_compare_prints_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.phout");
    let b = dir.path().join("b.phout");
    std::fs::write(&a, "10.000\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200\n").unwrap();
    std::fs::write(&b, "10.000\tx\t3000\t0\t0\t3000\t0\t3000\t1\t1\t0\t503\n").unwrap();
    let run = tank(&["report", a.to_str().unwrap()]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(dir.path().join("summary.json").is_file() && dir.path().join("report.html").is_file());
    let compared = tank(&["compare", dir.path().to_str().unwrap(), b.to_str().unwrap()]);
    let stdout = text(&compared.stdout);
    assert!(compared.status.success(), "{}", text(&compared.stderr));
    assert!(stdout.contains("+2.000 (+200.0%)"), "{stdout}");
    assert!(stdout.contains("503"), "{stdout}");
}

#[test]
fn report_never_overwrites_a_runs_own_reports_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let phout = dir.path().join("phout.log");
    std::fs::write(
        &phout,
        "10.000\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200\n",
    )
    .unwrap();
    // A run's own summary, richer than a phout can give.
    let own = "{\"a run's own\": \"summary\"}";
    std::fs::write(dir.path().join("summary.json"), own).unwrap();
    let refused = tank(&["report", phout.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("already holds summary.json") && stderr.contains("--out DIR"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        own
    );
    assert!(!dir.path().join("report.html").exists());
    // Elsewhere, it writes; with --force, it overwrites.
    let elsewhere = dir.path().join("rebuilt");
    let run = tank(&[
        "report",
        phout.to_str().unwrap(),
        "--out",
        elsewhere.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(elsewhere.join("summary.json").is_file());
    let forced = tank(&["report", phout.to_str().unwrap(), "--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert_ne!(
        std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        own
    );
}

#[test]
fn a_window_recomputes_every_figure_from_the_shots_started_in_it() {
    let dir = tempfile::tempdir().unwrap();
    // 10 seconds of 10 shots: the first 3 seconds slow (100 ms, a 503 each), then fast (1 ms).
    let mut phout = String::new();
    for second in 0..10u64 {
        for i in 0..10u64 {
            let (real, code) = if second < 3 {
                (100_000, 503)
            } else {
                (1_000, 200)
            };
            let _ = writeln!(
                phout,
                "{}.{:03}\t\t{real}\t0\t0\t{real}\t0\t{real}\t10\t10\t0\t{code}",
                1_700_000_000 + second,
                i * 100
            );
        }
    }
    let path = dir.path().join("phout.log");
    std::fs::write(&path, phout).unwrap();
    let run = |args: &[&str], out: &str| {
        let out_dir = dir.path().join(out);
        let mut all = vec![
            "report",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        (tank(&all), out_dir)
    };
    let (out, steady) = run(&["--from", "3s", "--to", "8s"], "steady");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(steady.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["shots"]["responses"], 50);
    assert_eq!(summary["proto_codes"], serde_json::json!({ "200": 50 }));
    let max = summary["quantiles"].as_array().unwrap().last().unwrap()["service_ms"].as_f64();
    assert_eq!(max, Some(1.0));
    assert_eq!(summary["timeline"]["ts"].as_array().unwrap().len(), 5);
    let facts = summary["meta"]["facts"].to_string();
    assert!(
        facts.contains("shots started from 3 s after the first shot to 8 s after the first shot"),
        "{facts}"
    );
    // The same window in absolute times; and an open end.
    let (out, absolute) = run(
        &["--from", "@1700000003", "--to", "2023-11-14T22:13:28Z"],
        "absolute",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(absolute.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(again["shots"]["responses"], 50);
    let (out, tail) = run(&["--from", "9s"], "tail");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tail: Value =
        serde_json::from_str(&std::fs::read_to_string(tail.join("summary.json")).unwrap()).unwrap();
    assert_eq!(tail["shots"]["responses"], 10);
    // An empty window, and a bound that is neither, are errors that say what was expected.
    let (out, _) = run(&["--from", "8s", "--to", "3s"], "empty");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the window is empty"),
        "{}",
        text(&out.stderr)
    );
    let (out, _) = run(&["--from", "soon"], "bad");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("expected an offset from the first shot"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn report_of_no_rows_is_an_error_naming_the_window_and_the_phouts_span() {
    let dir = tempfile::tempdir().unwrap();
    let phout = dir.path().join("phout.log");
    let row = "\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\t200\n";
    std::fs::write(&phout, format!("1700000000.000{row}1700000002.200{row}")).unwrap();
    let out = dir.path().join("w");
    for from in ["10s", "@1800000000"] {
        let run = tank(&[
            "report",
            phout.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--from",
            from,
        ]);
        assert!(!run.status.success(), "--from {from}");
        let stderr = text(&run.stderr);
        assert!(
            stderr.contains("phout.log: no shot started in the window, from ")
                && stderr.contains(
                    "; the shots started from 2023-11-14T22:13:20Z to 2023-11-14T22:13:22.2Z \
                     (2.2 s): nothing to report"
                ),
            "{stderr}"
        );
        assert!(!out.exists(), "nothing written, not even the directory");
    }
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let run = tank(&["report", empty.to_str().unwrap()]);
    assert!(!run.status.success());
    assert!(
        text(&run.stderr).contains("empty.log: no rows (an empty phout): nothing to report"),
        "{}",
        text(&run.stderr)
    );
}

#[test]
fn report_errors_say_their_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nosuch.log");
    let run = tank(&["report", missing.to_str().unwrap()]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
    let short = dir.path().join("short.log");
    std::fs::write(&short, "10.000\tx\t1000\t0\t0\t1000\t0\t1000\t1\t1\t0\n").unwrap();
    let run = tank(&["report", short.to_str().unwrap()]);
    let stderr = text(&run.stderr);
    assert_eq!(stderr.matches("phout field 12").count(), 1, "{stderr}");
    // `tank compare` of a run directory without its summary.
    let run = tank(&[
        "compare",
        dir.path().to_str().unwrap(),
        short.to_str().unwrap(),
    ]);
    let stderr = text(&run.stderr);
    assert!(!run.status.success());
    assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
}
