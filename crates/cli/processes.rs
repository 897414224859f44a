//! `tank -c load.ini --processes N`: one test as N shards in N child processes
//! on this machine. Each child is `tank shoot --shard I/N --start-at T` with its
//! own artifacts directory inside the parent's run directory (and its own
//! open-files limit: this is how one box holds more instances than one process
//! may have descriptors). The parent draws one console from the children's
//! `test_data.log` as they grow, forwards Ctrl-C, stops every child when one
//! stops (autostop, a failure), and merges their artifacts at the end.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use tank_config::Override;
use tank_report::stream::files::JSON_LINES;
use tank_stats::aggregate::DEFAULT_BUFFERED_SECONDS;

/// How far ahead of now the common start is: time for every child to load the
/// config, open its ammo and start its threads.
fn start_lead(processes: u32) -> Duration {
    Duration::from_millis(2000 + 150 * u64::from(processes))
}

/// How often the parent looks at its children.
const POLL: Duration = Duration::from_millis(100);

/// One child shard.
struct Shard {
    index: u32,
    dir: PathBuf,
    child: Child,
    exit: Option<i32>,
    /// Reads its test_data.log from where the last read ended.
    data: Option<BufReader<File>>,
    partial: String,
}

/// What the console shows of one second, summed over the shards that wrote it.
#[derive(Default)]
struct Second {
    shards: u32,
    responses: u64,
    planned: u64,
    sent: u64,
    errors: u64,
}

/// Run `config_path` as `processes` shards.
pub fn run(
    config_path: &Path,
    overrides: &[Override],
    processes: u32,
    start_at: Option<u64>,
) -> Result<ExitCode> {
    if processes == 0 {
        bail!("--processes 0: expected at least 1");
    }
    let config = tank_config::load(config_path, overrides)?;
    let now_us = unix_us();
    let start = match start_at {
        Some(at) => at,
        None => now_us + start_lead(processes).as_micros() as u64,
    };
    let run_dir = match &config.core.artifacts_dir {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(&config.core.artifacts_base_dir).join(format!(
            "{}_{processes}processes",
            tank_shard::time::format_rfc3339(now_us)
                .get(..19)
                .unwrap_or_default()
                .replace([':', 'T'], "-")
        )),
    };
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("creating the run directory {}", run_dir.display()))?;
    let exe = std::env::current_exe().context("finding the tank binary to start")?;
    let signals = watch_signals()?;
    let mut shards = Vec::new();
    for index in 0..processes {
        let dir = run_dir.join(format!("shard-{index}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let out_path = dir.join("console.txt");
        let out =
            File::create(&out_path).with_context(|| format!("creating {}", out_path.display()))?;
        let mut command = Command::new(&exe);
        command.arg("shoot").arg("-c").arg(config_path);
        for o in overrides {
            command
                .arg("-o")
                .arg(format!("{}.{}={}", o.section, o.key, o.value));
        }
        command
            .arg("-o")
            .arg(format!("tank.artifacts_dir={}", dir.display()))
            .arg("--shard")
            .arg(format!("{index}/{processes}"))
            .arg("--start-at")
            .arg(format!("{}.{:06}", start / 1_000_000, start % 1_000_000))
            .arg("--quiet")
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("TANK_SHARDS")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            // Its own process group: a Ctrl-C at the terminal reaches the parent
            // only, which forwards it once to each child.
            .process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting shard {index}/{processes}"))?;
        shards.push(Shard {
            index,
            dir,
            child,
            exit: None,
            data: None,
            partial: String::new(),
        });
    }
    outln!(
        "tank: {processes} shards in {}, starting together at {}",
        run_dir.display(),
        tank_shard::time::format_rfc3339(start)
    );
    let codes = supervise(&mut shards, &signals)?;
    let dirs: Vec<PathBuf> = shards.iter().map(|s| s.dir.clone()).collect();
    let merged = tank_shard::merge_runs(&dirs, &run_dir, DEFAULT_BUFFERED_SECONDS);
    let merged = match merged {
        Ok(merged) => merged,
        Err(error) => {
            for shard in &shards {
                errln!(
                    "tank: shard {} exited with {:?}; its output: {}",
                    shard.index,
                    shard.exit,
                    shard.dir.join("console.txt").display()
                );
            }
            return Err(error).context("merging the shards");
        }
    };
    for warning in &merged.warnings {
        errln!("tank: warning: {warning}");
    }
    out!("{}", merged.summary.to_text());
    out!("{}", tank_shard::merged::describe(&merged));
    outln!(
        "artifacts: {} (report.html, summary.json, phout.log; each shard's in shard-I/)",
        run_dir.display()
    );
    // The first shard to stop decides, as the stop it caused ended the others.
    let code = codes
        .iter()
        .copied()
        .find(|c| *c != 0)
        .unwrap_or(merged.exit_code);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Wait for every child; show the console; forward signals; when one child
/// ends with a non-zero code, stop the others. The children's exit codes, in the
/// order they ended.
fn supervise(shards: &mut [Shard], signals: &AtomicUsize) -> Result<Vec<i32>> {
    let mut seconds: BTreeMap<u64, Second> = BTreeMap::new();
    let mut shown = 0u64;
    let mut forwarded = 0;
    let mut stopping = false;
    let mut codes = Vec::new();
    loop {
        let received = signals.load(Ordering::Acquire);
        while forwarded < received {
            forwarded += 1;
            interrupt(shards.iter().filter(|s| s.exit.is_none()));
        }
        for shard in shards.iter_mut() {
            read_seconds(shard, &mut seconds);
        }
        let mut ended = Vec::new();
        for shard in shards.iter_mut().filter(|s| s.exit.is_none()) {
            if let Some(status) = shard.child.try_wait()? {
                let code = status.code().unwrap_or(1);
                shard.exit = Some(code);
                codes.push(code);
                ended.push((shard.index, code));
            }
        }
        let running = shards.iter().filter(|s| s.exit.is_none()).count() as u32;
        for (index, code) in ended {
            if code != 0 && !stopping && running > 0 {
                stopping = true;
                errln!("tank: shard {index} stopped with exit code {code}: stopping the others");
                interrupt(shards.iter().filter(|s| s.exit.is_none()));
            }
        }
        let latest = seconds.keys().next_back().copied().unwrap_or(0);
        let total = shards.len() as u32;
        while let Some((&ts, second)) = seconds.first_key_value() {
            // A second is shown once every shard wrote it, or it is 3 s old.
            if second.shards < total && ts + 3 > latest && running > 0 {
                break;
            }
            if ts > shown {
                outln!(
                    "{}  responses {:>8}  planned {:>8}  sent {:>8}  errors {:>6}  [{}/{} shards]",
                    tank_shard::time::format_rfc3339(ts * 1_000_000)
                        .get(11..19)
                        .unwrap_or(""),
                    second.responses,
                    second.planned,
                    second.sent,
                    second.errors,
                    second.shards,
                    total
                );
                shown = ts;
            }
            seconds.pop_first();
        }
        if running == 0 {
            return Ok(codes);
        }
        std::thread::sleep(POLL);
    }
}

/// Take the lines a child appended to its test_data.log since the last look.
fn read_seconds(shard: &mut Shard, seconds: &mut BTreeMap<u64, Second>) {
    if shard.data.is_none() {
        let Ok(file) = File::open(shard.dir.join(JSON_LINES)) else {
            return;
        };
        shard.data = Some(BufReader::new(file));
    }
    let Some(reader) = shard.data.as_mut() else {
        return;
    };
    loop {
        let mut line = std::mem::take(&mut shard.partial);
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => {
                shard.partial = line;
                return;
            }
            Ok(_) if !line.ends_with('\n') => {
                // A line being written: keep it and read its rest next time.
                shard.partial = line;
                return;
            }
            Ok(_) => {
                if let Some((ts, second)) = parse_second(&line) {
                    let sum = seconds.entry(ts).or_default();
                    sum.shards += 1;
                    sum.responses += second.responses;
                    sum.planned += second.planned;
                    sum.sent += second.sent;
                    sum.errors += second.errors;
                }
            }
        }
    }
}

/// The console's numbers from one test_data.log line.
fn parse_second(line: &str) -> Option<(u64, Second)> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let ts = value.pointer("/data/ts")?.as_u64()?;
    let count = |path: &str| {
        value
            .pointer(path)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let errors = value
        .pointer("/data/overall/net_code/count")
        .and_then(serde_json::Value::as_object)
        .map_or(0, |codes| {
            codes
                .iter()
                .filter(|(code, _)| code.as_str() != "0")
                .filter_map(|(_, n)| n.as_u64())
                .sum()
        });
    Some((
        ts,
        Second {
            shards: 0,
            responses: count("/data/counted_rps"),
            planned: count("/stats/metrics/reqps"),
            sent: count("/tank/sent"),
            errors,
        },
    ))
}

/// SIGINT to each of `shards`: the first stops firing, a second stops at once.
fn interrupt<'a>(shards: impl Iterator<Item = &'a Shard>) {
    for shard in shards {
        if let Ok(pid) = i32::try_from(shard.child.id()) {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }
}

/// Count SIGINT/SIGTERM received, on a thread of their own.
fn watch_signals() -> Result<Arc<AtomicUsize>> {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    crate::signals::watch(move |_| {
        errln!("tank: stopping the shards (Ctrl-C again to stop them now)");
        counter.fetch_add(1, Ordering::AcqRel);
    })?;
    Ok(count)
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_console_numbers_of_a_second() {
        let line = r#"{"data":{"ts":100,"counted_rps":7,"overall":{"net_code":{"count":{"0":5,"110":2}}}},"stats":{"ts":100,"metrics":{"instances":3,"reqps":8}},"tank":{"sent":8}}"#;
        let (ts, second) = parse_second(line).unwrap();
        assert_eq!(
            (
                ts,
                second.responses,
                second.planned,
                second.sent,
                second.errors
            ),
            (100, 7, 8, 8, 2)
        );
        assert!(parse_second("{}").is_none());
    }
}
