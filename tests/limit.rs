//! `tank bench`, `tank search` and `tank sweep` against the origin simulator
//! with a known capacity: 8 workers of 10 ms serve 800 requests per second.
//!
//! The simulator runs in this process on a runtime of its own; the binary
//! shoots at it. Probes are short (a second or two) so the suite stays fast;
//! the generator's lag limit is loosened to 50 ms because the tests run a
//! debug build on two cores shared with the rest of the suite: a lag that
//! large would still void a probe, but a busy machine's scheduling noise
//! does not.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use tank_origin::{Recipe, Server};

use crate::support::{phout, tank};

/// One test here at a time: each measures a capacity, and two at once on
/// two cores would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The longest any command here may take.
const LIMIT: Duration = Duration::from_secs(120);

/// The simulator with `recipe`, on its own runtime, for as long as it is held.
struct Origin {
    server: Option<Server>,
    runtime: tokio::runtime::Runtime,
}

impl Origin {
    fn start(recipe: &str) -> Origin {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let recipes = Recipe::from_json(recipe).unwrap();
        let server = runtime
            .block_on(Server::start("127.0.0.1:0".parse().unwrap(), recipes))
            .unwrap();
        Origin {
            server: Some(server),
            runtime,
        }
    }

    fn url(&self) -> String {
        let addr = self.server.as_ref().unwrap().local_addr();
        format!("http://{addr}/")
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// Runs `tank ARGS` in `dir`, at most [`LIMIT`] long.
fn run(dir: &Path, args: &[&str]) -> Output {
    let mut child = tank()
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tank");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "tank {args:?} ran longer than {LIMIT:?}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

const CAPACITY_800: &str = r#"{"workers": 8, "stages": [{"latency": "10ms"}]}"#;

#[test]
fn search_finds_the_capacity_of_eight_workers_of_10ms() {
    let _one = one_at_a_time();
    let origin = Origin::start(CAPACITY_800);
    let dir = tempfile::tempdir().unwrap();
    let url = origin.url();
    let out = run(
        dir.path(),
        &[
            "search",
            &url,
            "--quantile",
            "99",
            "--under",
            "50ms",
            "--from",
            "100",
            "--to",
            "3000",
            "--probe",
            "1.5s",
            "--warmup",
            "0.5s",
            "--max-lag",
            "50ms",
            "--json",
            "out.json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.json")).unwrap())
            .unwrap();
    let limit = json["limit_rps"].as_f64().unwrap();
    assert!((760.0..=840.0).contains(&limit), "limit {limit}\n{stdout}");
    let probes = json["probes"].as_array().unwrap();
    let allowed = (2900.0 / (0.02 * limit)).log2() + 3.0;
    assert!(
        probes.len() as f64 <= allowed,
        "{} probes\n{stdout}",
        probes.len()
    );
    for probe in probes {
        for key in ["target_rps", "achieved_rps", "quantile_ms", "valid"] {
            assert!(!probe[key].is_null(), "{key} in {probe}");
        }
    }
    assert!(stdout.contains(&format!("limit: {limit} rps")), "{stdout}");
}

#[test]
fn search_exits_non_zero_when_no_rate_meets_the_bound() {
    let _one = one_at_a_time();
    let origin = Origin::start(CAPACITY_800);
    let dir = tempfile::tempdir().unwrap();
    let url = origin.url();
    let out = run(
        dir.path(),
        &[
            "scan",
            &url,
            "--under",
            "5ms",
            "--rate",
            "50:100:50",
            "--probe",
            "0.5s",
            "--warmup",
            "0.2s",
            "--max-lag",
            "50ms",
            "--json",
            "scan.json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scan.json")).unwrap())
            .unwrap();
    assert!(json["limit_rps"].is_null());
    assert_eq!(json["probes"].as_array().unwrap().len(), 2);
}

#[test]
fn sweep_names_a_knee_within_one_step_of_eight_workers() {
    // A short queue (2 waiting) as a real server's backlog: past 8 workers
    // the extra connections meet 503s, which is the knee's error rule.
    let _one = one_at_a_time();
    let origin =
        Origin::start(r#"{"workers": 8, "queue_limit": 2, "stages": [{"latency": "10ms"}]}"#);
    let dir = tempfile::tempdir().unwrap();
    let url = origin.url();
    let out = run(
        dir.path(),
        &[
            "sweep",
            &url,
            "-c",
            "1,2,4,8,16,32",
            // Long enough that one scheduling stall of a busy machine (a few
            // requests) stays under 1% of a step, so under its p99.
            "--step",
            "4s",
            "--warmup",
            "0.5s",
            "--json",
            "sweep.json",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap())
            .unwrap();
    let knee = json["knee_concurrency"].as_u64().unwrap();
    assert!([4, 8, 16].contains(&knee), "knee {knee}\n{stdout}");
    assert_eq!(json["steps"].as_array().unwrap().len(), 6);
    for key in ["sigma", "kappa", "gamma"] {
        assert!(json["usl"][key].is_number(), "{key}\n{stdout}");
    }
    // Below the knee, throughput grows with connections.
    let rps = |i: usize| json["steps"][i]["achieved_rps"].as_f64().unwrap();
    assert!(rps(2) > 1.5 * rps(0), "{stdout}");
}

#[test]
fn bench_prints_wrks_summary_and_its_rate_matches_phout() {
    let _one = one_at_a_time();
    let origin = Origin::start(CAPACITY_800);
    let dir = tempfile::tempdir().unwrap();
    let url = origin.url();
    let out = run(
        dir.path(),
        &["bench", &url, "-c", "4", "-d", "2s", "-t", "1"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // As a parser of wrk's output reads it.
    let rate: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .expect("a Requests/sec: line")
        .trim()
        .parse()
        .unwrap();
    let latency: Vec<&str> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Latency "))
        .expect("a Latency line")
        .split_whitespace()
        .collect();
    assert_eq!(latency.len(), 5, "{latency:?}");
    assert!(
        latency[1].ends_with("ms") && latency[4].ends_with('%'),
        "{latency:?}"
    );
    // 4 connections on workers of 10 ms: at most 400/s (less on a busy machine).
    assert!(rate > 0.0 && rate <= 400.0, "{rate}\n{stdout}");
    let artifacts = stdout
        .lines()
        .find_map(|l| l.strip_prefix("artifacts: "))
        .and_then(|l| l.split(' ').next())
        .expect("an artifacts line");
    let rows = phout(&dir.path().join(artifacts));
    let phout_rate = rows.len() as f64 / 2.0;
    assert!(
        (phout_rate - rate).abs() <= 0.03 * rate,
        "phout {phout_rate} vs {rate}\n{stdout}"
    );
    assert!(rows.iter().all(|r| r.proto_code == 200));
}

#[test]
fn bench_with_drawn_arrivals_fires_the_planned_count_and_logs_the_seed() {
    let _one = one_at_a_time();
    let origin = Origin::start(r#"{"stages": [{"latency": "1ms"}]}"#);
    let dir = tempfile::tempdir().unwrap();
    let url = origin.url();
    let out = run(
        dir.path(),
        &[
            "bench",
            &url,
            "-R",
            "200",
            "--arrivals",
            "poisson",
            "-c",
            "50",
            "-d",
            "2s",
            "-t",
            "1",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let artifacts = dir.path().join(
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("artifacts: "))
            .and_then(|l| l.split(' ').next())
            .expect("an artifacts line"),
    );
    // Drawn gaps, the evenly spaced plan's count: 200 a second for 2 s.
    assert_eq!(phout(&artifacts).len(), 400, "{stdout}");
    let log = std::fs::read_to_string(artifacts.join("tank.log")).unwrap();
    assert!(
        log.contains("arrivals poisson, seed ") && log.contains("set `arrivals_seed` to repeat it"),
        "{log}"
    );
    // --arrivals shapes an open model only.
    let out = run(dir.path(), &["bench", &url, "--arrivals", "poisson"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rate"));
}

#[test]
fn scan_reads_its_settings_from_the_configs_search_section_and_flags_override_them() {
    let _one = one_at_a_time();
    let origin = Origin::start(r#"{"stages": [{"latency": "10ms"}]}"#);
    let dir = tempfile::tempdir().unwrap();
    let address = origin.url();
    let address = address.trim_start_matches("http://").trim_end_matches('/');
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = {address}\nuris = /\nrps_schedule = const(1,1s)\n\
             [search]\nquantile = 50\nunder = 5s\nrate = 50:50:1\nprobe = 1s\nwarmup = 0.5s\n\
             max_lag = 50ms\narrivals = poisson\n"
        ),
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["scan", "--config", "load.ini", "--json", "scan.json"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("scan.json")).unwrap())
            .unwrap();
    assert_eq!(json["limit_rps"].as_f64(), Some(50.0), "{json}");
    assert_eq!(json["probes"].as_array().map(Vec::len), Some(1));
    // The flag wins over the section: no probe keeps a 10 ms median under 1 ms.
    let out = run(
        dir.path(),
        &["scan", "--config", "load.ini", "--under", "1ms"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
