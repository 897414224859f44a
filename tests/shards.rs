//! A sharded test end to end: three shards with a common start against one
//! server (each in its own network namespace with its own address when the test
//! runs as root, as in CI; on loopback otherwise), merged by `tank merge`, and
//! the merge checked against what it must equal: the unsharded plan's planned
//! count in every second, and the quantiles of the shards' phouts taken as one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tank_plan::Schedule;

use crate::support::tank;

const SHARDS: u64 = 3;
const SCHEDULE: &str = "line(30,150,3s) const(90,1s)";

/// Network namespaces for a server and the shards, joined by a bridge in the
/// server's namespace; deleted (with their links) when dropped.
struct Namespaces {
    server: String,
    shards: Vec<String>,
}

impl Namespaces {
    const SERVER_IP: &'static str = "10.231.0.1";

    /// Set them up when root; `None` (with the reason) otherwise or when `ip` cannot.
    fn create() -> Result<Namespaces, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let tag = std::process::id();
        let spaces = Namespaces {
            server: format!("tank-srv-{tag}"),
            shards: (0..SHARDS).map(|i| format!("tank-s{i}-{tag}")).collect(),
        };
        let ip = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        let server = spaces.server.as_str();
        ip(&["netns", "add", server])?;
        ip(&["-n", server, "link", "set", "lo", "up"])?;
        ip(&["-n", server, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", server, "addr", "add", "10.231.0.1/24", "dev", "br0"])?;
        ip(&["-n", server, "link", "set", "br0", "up"])?;
        for (i, shard) in spaces.shards.iter().enumerate() {
            let (outer, inner) = (format!("v{i}-{tag}"), format!("eth{i}"));
            let outer = &outer[..outer.len().min(15)];
            ip(&["netns", "add", shard])?;
            ip(&["-n", shard, "link", "set", "lo", "up"])?;
            ip(&[
                "link", "add", outer, "netns", server, "type", "veth", "peer", "name", &inner,
                "netns", shard,
            ])?;
            ip(&["-n", server, "link", "set", outer, "master", "br0"])?;
            ip(&["-n", server, "link", "set", outer, "up"])?;
            let address = format!("10.231.0.{}/24", 10 + i);
            ip(&["-n", shard, "addr", "add", &address, "dev", &inner])?;
            ip(&["-n", shard, "link", "set", &inner, "up"])?;
        }
        Ok(spaces)
    }

    fn exec(namespace: &str, program: &Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", namespace]).arg(program);
        command
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for namespace in self.shards.iter().chain([&self.server]) {
            let _ = Command::new("ip")
                .args(["netns", "del", namespace])
                .status();
        }
    }
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the origin simulator with the steady recipe and wait for its "listening" line.
fn origin(command: Command, listen: &str) -> Killed {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin/steady.json");
    origin_with(command, listen, &recipe)
}

/// Start the origin simulator with `recipe` and wait for its "listening" line.
fn origin_with(mut command: Command, listen: &str, recipe: &Path) -> Killed {
    let mut child = command
        .args(["origin", "--listen", listen, "--recipe"])
        .arg(recipe)
        .env("TANK_ORIGIN_TOKEN", "shards-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start tank origin");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("origin output").expect("origin line");
    assert!(first.contains("listening on"), "{first}");
    Killed(child)
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

#[test]
fn three_shards_with_a_common_start_merge_into_the_unsharded_plan() {
    let dir = tempfile::tempdir().unwrap();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tank"));
    let spaces = match Namespaces::create() {
        Ok(spaces) => Some(spaces),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") && why != "not root" => {
            panic!("network namespaces: {why}")
        }
        Err(why) => {
            eprintln!("shards on loopback: no network namespaces ({why})");
            None
        }
    };
    let (target, _server) = match &spaces {
        Some(spaces) => {
            let listen = format!("{}:8080", Namespaces::SERVER_IP);
            let server = origin(Namespaces::exec(&spaces.server, &exe), &listen);
            (listen, server)
        }
        None => {
            let listen = format!("127.0.0.1:{}", crate::support::component::free_port());
            let server = origin(tank(), &listen);
            (listen, server)
        }
    };
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = {target}\nuris = /\nrps_schedule = {SCHEDULE}\ninstances = 30\n"
        ),
    )
    .unwrap();
    // Whole seconds keep the check simple; 10 s covers three processes
    // starting beside a CPU hog (one took over 3 s to prepare there).
    let start_s = unix_us() / 1_000_000 + 10;
    let runs: Vec<PathBuf> = (0..SHARDS)
        .map(|i| dir.path().join(format!("s{i}")))
        .collect();
    let mut children: Vec<Killed> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let mut command = match &spaces {
            Some(spaces) => Namespaces::exec(&spaces.shards[i], &exe),
            None => tank(),
        };
        command
            .args(["-c", "load.ini", "-q", "--start-at", &start_s.to_string()])
            .args(["--shard", &format!("{i}/{SHARDS}")])
            .arg("-o")
            .arg(format!("tank.artifacts_dir={}", run.display()))
            .current_dir(dir.path())
            .stdout(Stdio::null());
        children.push(Killed(command.spawn().expect("start a shard")));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for child in &mut children {
        loop {
            match child.0.try_wait().unwrap() {
                Some(status) => {
                    assert!(status.success(), "a shard failed: {status}");
                    break;
                }
                None if Instant::now() > deadline => panic!("the shards ran over a minute"),
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    let merged = dir.path().join("merged");
    let out = tank()
        .arg("merge")
        .args(&runs)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first-shot skew"), "{text}");
    // Two of the three: a third of the test missing fails a CI gate, as a lost shard does.
    let partial = dir.path().join("partial");
    let out = tank()
        .arg("merge")
        .args(&runs[..2])
        .arg("-o")
        .arg(&partial)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("1 of the 3 shards"), "{text}");

    // Planned, per second: the unsharded plan walked shot by shot from the common start.
    let Ok(Schedule::Rps(schedule)) = Schedule::rps(SCHEDULE) else {
        panic!("schedule")
    };
    let mut expected = std::collections::BTreeMap::<u64, u64>::new();
    for k in 0..schedule.len() {
        let due_ms = schedule.offset_ms(k).unwrap() as u64;
        *expected.entry(start_s + due_ms / 1000).or_default() += 1;
    }
    let summary = json(&merged.join("summary.json"));
    let timeline = &summary["timeline"];
    let seconds: Vec<u64> = serde_json::from_value(timeline["ts"].clone()).unwrap();
    let planned: Vec<u64> = serde_json::from_value(timeline["planned"].clone()).unwrap();
    let got: std::collections::BTreeMap<u64, u64> = seconds
        .into_iter()
        .zip(planned)
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(summary["shots"]["planned"], schedule.len());
    assert_eq!(summary["shots"]["sent"], schedule.len());

    // Quantiles: the same as `tank report` over the shards' phouts concatenated.
    let concatenated = dir.path().join("all.phout");
    let mut all = Vec::new();
    for run in &runs {
        all.extend(std::fs::read(run.join("phout.log")).unwrap());
    }
    std::fs::write(&concatenated, all).unwrap();
    let report = dir.path().join("report");
    let out = tank()
        .arg("report")
        .arg(&concatenated)
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recomputed = json(&report.join("summary.json"));
    assert_eq!(summary["quantiles"], recomputed["quantiles"]);
    assert_eq!(
        summary["shots"]["responses"],
        recomputed["shots"]["responses"]
    );

    // Every shard started on the common start, its first shot near it: within 250 ms, a
    // margin a machine busy with another build meets (a shard that ignored the common
    // start would be seconds off; the skew's precision is the benchmarks' business).
    let merge = json(&merged.join("merge.json"));
    assert_eq!(merge["start_spread_us"], 0);
    for shard in merge["shards"].as_array().unwrap() {
        assert_eq!(shard["start_unix_us"], start_s * 1_000_000);
        assert_eq!(shard["share"], 1.0, "{shard}");
        let skew = shard["skew_us"].as_i64().unwrap();
        assert!(skew.abs() < 250_000, "first-shot skew {skew} µs: {shard}");
    }
    if spaces.is_some() {
        // Each shard really came from its own address.
        let clients = std::fs::read_to_string(runs[1].join("tank.log")).unwrap();
        assert!(clients.contains("target 10.231.0.1:8080"), "{clients}");
    }
}

#[test]
fn a_start_already_past_is_an_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nuris = /\nrps_schedule = const(1,1s)\n",
    )
    .unwrap();
    let out = tank()
        .args(["-c", "load.ini", "--start-at", "2001-01-01T00:00:00Z"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the start time 2001-01-01T00:00:00.000000Z is"),
        "{stderr}"
    );
    assert!(stderr.contains("expected a time to come"), "{stderr}");
    assert!(!dir.path().join("logs").exists());
}

#[test]
fn a_shard_of_a_drawn_plan_needs_a_set_seed_and_leaves_nothing_without_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nuris = /\nrps_schedule = const(1,1s)\narrivals = poisson\n",
    )
    .unwrap();
    let out = tank()
        .args(["-c", "load.ini", "--shard", "0/2"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[phantom] the plan is drawn (arrivals poisson, seed ")
            && stderr.contains("expected `arrivals_seed` set, so every shard plans the same shots"),
        "{stderr}"
    );
    assert!(!dir.path().join("logs").exists());
}

#[test]
fn merge_names_a_directory_that_is_not_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = tank()
        .arg("merge")
        .arg(dir.path().join("nope"))
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nope/shard.json"), "{stderr}");
    assert!(
        stderr.contains("expected the artifacts of a tank run"),
        "{stderr}"
    );
    // A --processes run directory: its shards are named.
    let processes = dir.path().join("2processes");
    std::fs::create_dir_all(processes.join("shard-0")).unwrap();
    std::fs::write(processes.join("shard-0/shard.json"), "{}").unwrap();
    let out = tank()
        .arg("merge")
        .arg(&processes)
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("it is a --processes run, merged already: its shards are"),
        "{stderr}"
    );
}

/// The instances, over the queues and processes, of the many-connections test.
const HELD: u64 = 50_000;

/// A recipe whose every answer takes 20 s: a connection stays open that long,
/// time enough for all 50,000 to connect on a busy machine (a debug build).
const SLOW_RECIPE: &str = r#"{"route": "/*", "random_content": "100b",
  "stages": [{"at": 0, "status": 200, "latency": "35s"}]}"#;

/// A phout's rows as (start ms, end ms, connect µs, net code, HTTP code).
fn phout_rows(path: &Path) -> Vec<(u64, u64, u64, String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let col: Vec<&str> = line.split('\t').collect();
            assert!(col.len() >= 12, "a short phout line: {line:?}");
            let start_ms = (col[0].parse::<f64>().unwrap() * 1000.0).round() as u64;
            let real_us: u64 = col[2].parse().unwrap();
            let connect_us: u64 = col[3].parse().unwrap();
            (
                start_ms,
                start_ms + real_us / 1000,
                connect_us,
                col[10].to_owned(),
                col[11].to_owned(),
            )
        })
        .collect()
}

/// The most intervals open at one moment (an end at t closes before a start at t).
fn most_at_once(rows: &[(u64, u64, u64, String, String)]) -> u64 {
    let mut events: Vec<(u64, i8)> = rows
        .iter()
        .flat_map(|r| [(r.0, 1i8), (r.1, -1i8)])
        .collect();
    events.sort_unstable();
    let (mut open, mut most) = (0i64, 0i64);
    for (_, step) in events {
        open += i64::from(step);
        most = most.max(open);
    }
    most as u64
}

/// `--processes 3` holds 50,000 connections open at once against three slow
/// targets (one per port, each its own process under its own open-files limit):
/// every instance connects once, every request is answered, all 50,000 are in
/// flight together, and each shard reports its peak RSS.
#[test]
fn three_processes_hold_fifty_thousand_connections_open() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    // Each process holds a third of the connections, plus a few hundred descriptors.
    let needed = HELD / 3 + 1_000;
    if limit.rlim_max < needed {
        let why = format!("open-files hard limit {} < {needed}", limit.rlim_max);
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    // The targets inherit it: each accepts a third of the connections.
    limit.rlim_cur = limit.rlim_max;
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("slow.json");
    std::fs::write(&recipe, SLOW_RECIPE).unwrap();
    let mut ini = String::new();
    let mut targets = Vec::new();
    for i in 0..3u64 {
        let listen = format!("127.0.0.1:{}", crate::support::component::free_port());
        targets.push(origin_with(tank(), &listen, &recipe));
        let share = HELD / 3 + u64::from(i < HELD % 3);
        let section = if i == 0 {
            "[phantom]".to_owned()
        } else {
            format!("[phantom-{i}]")
        };
        // One shot per instance (the ammo is `loop` shots), the instances ramped
        // over 5 s: every one is connected before the first answer comes at 35 s
        // (beside a CPU hog on each core, opening them all took 20 s).
        ini += &format!(
            "{section}\naddress = {listen}\nuris = /\nloop = {share}\ninstances = {share}\n\
             instances_schedule = line(1, {share}, 5s)\ntimeout = 60s\n"
        );
    }
    std::fs::write(dir.path().join("load.ini"), ini).unwrap();
    let run = dir.path().join("run");
    let mut child = Killed(
        tank()
            .args(["-c", "load.ini", "-q", "--processes", "3"])
            .arg("-o")
            .arg(format!("tank.artifacts_dir={}", run.display()))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("start tank --processes 3"),
    );
    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        match child.0.try_wait().unwrap() {
            Some(status) => break status,
            None if Instant::now() > deadline => panic!("--processes 3 ran over 150 s"),
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    assert!(status.success(), "tank --processes 3: {status}");
    drop(targets);

    let rows = phout_rows(&run.join("phout.log"));
    assert_eq!(rows.len() as u64, HELD, "one shot per instance");
    let failed = rows.iter().filter(|r| r.3 != "0" || r.4 != "200").count();
    assert_eq!(failed, 0, "every request answered 200");
    let connected = rows.iter().filter(|r| r.2 > 0).count() as u64;
    assert_eq!(connected, HELD, "every instance connected");
    let first = rows.iter().map(|r| r.0).min().unwrap_or(0);
    let last = rows.iter().map(|r| r.0).max().unwrap_or(0);
    eprintln!("shots sent over {} ms", last - first);
    let at_once = most_at_once(&rows);
    assert_eq!(at_once, HELD, "all connections open together");
    let mut instances = 0;
    for i in 0..3 {
        let shard = json(&run.join(format!("shard-{i}/shard.json")));
        let held = shard["instances"].as_u64().unwrap();
        let rss_kib = shard["max_rss_kib"].as_u64().expect("peak RSS reported");
        eprintln!(
            "shard {i}: {held} instances, peak RSS {} MiB, {:.1} KiB per instance",
            rss_kib / 1024,
            rss_kib as f64 / held as f64
        );
        instances += held;
    }
    assert_eq!(instances, HELD);
}
