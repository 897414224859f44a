//! `tank -c load.ini --processes N`: one test as N shards in N child processes
//! on this machine. Each child is `tank shoot --shard I/N --start-at T` with its
//! own artifacts directory inside the parent's run directory (and its own
//! open-files limit: this is how one box holds more instances than one process
//! may have descriptors).
//!
//! The parent draws one console from the children's `test_data.log` as they
//! grow, forwards Ctrl-C, stops every child when one stops (autostop, a
//! failure, a kill), and merges their artifacts at the end, naming a shard that
//! died and its signal. The children die with the parent: a parent killed by
//! any signal leaves no load running unsupervised. What a single run would be
//! told, each child is told too (`--fail-on-warnings`); a `[prometheus]`
//! endpoint is served by every shard on a port of its own (the configured port
//! plus the shard's index), since one port cannot be bound twice.

mod child;
mod console;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tank_config::{ConfigError, Override, TestConfig};
use tank_stats::aggregate::DEFAULT_BUFFERED_SECONDS;
use tank_stats::autostop::codes;

use crate::merge::{merge_runs, Known, MergeRunsError, Merged, PHOUT};
use child::{Ended, Shard};

/// How far ahead of now the common start is: time for every child to load the
/// config, open its ammo and start its threads.
fn start_lead(processes: u32) -> Duration {
    Duration::from_millis(2000 + 150 * u64::from(processes))
}

/// How often the parent looks at its children.
const POLL: Duration = Duration::from_millis(100);

/// What to run.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The config file.
    pub config_path: &'a Path,
    /// The command line's `-o` overrides, passed on to every shard.
    pub overrides: &'a [Override],
    /// How many shards (child processes).
    pub processes: u32,
    /// A common start given by the caller, µs since the Unix epoch (`None`: a
    /// moment ahead).
    pub start_at: Option<u64>,
    /// `--fail-on-warnings`: passed on to every shard, and applied to the merge.
    pub fail_on_warnings: bool,
}

/// Why the shards could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The config.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The options do not make a run.
    #[error("{0}")]
    Input(String),
    /// Setting up or watching the shards.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// Shards that failed before their first shot (a config a shard refuses,
    /// a port in use): each one's error, from its output.
    #[error("{0}")]
    ShardsFailed(String),
    /// Merging their artifacts; each shard's output is named in the message.
    #[error("merging the shards: {error} ({outputs})")]
    Merge {
        /// Why.
        #[source]
        error: MergeRunsError,
        /// Where each shard's console output is.
        outputs: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ScaleError {
    let what = what.into();
    move |source| ScaleError::Io { what, source }
}

/// How the shards went, merged.
#[derive(Debug)]
pub struct Outcome {
    /// The merge of their artifacts.
    pub merged: Merged,
    /// The run directory (the merged artifacts, each shard's in `shard-I/`).
    pub run_dir: PathBuf,
    /// The exit code: the first stopping shard's (as the stop it caused ended
    /// the others); else the merge's verdict; 35 for warnings under
    /// `fail_on_warnings`, as one process would exit.
    pub exit_code: i32,
}

/// Run the test as `options.processes` shards. `signals` counts the SIGINTs and
/// SIGTERMs the caller received (the first stops firing, a second stops now);
/// the console goes to `out`, notices to `err` (a closed one is ignored).
pub fn run(
    options: &Options<'_>,
    signals: &AtomicUsize,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, ScaleError> {
    let processes = options.processes;
    if processes == 0 {
        return Err(ScaleError::Input(
            "--processes 0: expected at least 1".into(),
        ));
    }
    let config = tank_config::load(options.config_path, options.overrides)?;
    for queue in config.queues.iter().filter(|_| processes > 1) {
        // Every shard would refuse it, each naming a seed of its own.
        if queue.arrivals.seed_chosen && tank_plan::Plan::seed_note(queue).is_some() {
            return Err(ScaleError::Input(format!(
                "[{}] the plan is drawn (its arrivals or its scenarios), and each shard would \
                 draw its own: expected `arrivals_seed` set, so every shard plans the same shots",
                queue.name
            )));
        }
    }
    if let Some(at) = options.start_at.filter(|&at| at < unix_us()) {
        // Every shard would refuse it: said here, before any artifacts exist.
        return Err(ScaleError::Input(format!(
            "--start-at {}: the time is past: expected a time to come",
            tank_run::time::format_rfc3339(at)
        )));
    }
    let start = options
        .start_at
        .unwrap_or_else(|| unix_us() + start_lead(processes).as_micros() as u64);
    let run_dir = match &config.core.artifacts_dir {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(&config.core.artifacts_base_dir)
            .join(tank_run::dir_name(Some(&format!("{processes}processes")))),
    };
    std::fs::create_dir_all(&run_dir).map_err(io(format!(
        "creating the run directory {}",
        run_dir.display()
    )))?;
    let mut shards = spawn_shards(options, &config, start, &run_dir)?;
    let _ = writeln!(
        out,
        "tank: {processes} shards in {}, starting together at {}",
        run_dir.display(),
        tank_run::time::format_rfc3339(start)
    );
    if let Some(prometheus) = &config.prometheus {
        let _ = writeln!(
            out,
            "tank: [prometheus] each shard serves its own /metrics: port {} + the shard's index",
            prometheus.listen.port()
        );
    }
    let ends = supervise(&mut shards, signals, out, err)?;
    let known = Known {
        fail_on_warnings: options.fail_on_warnings,
        first_stop: ends.iter().find(|e| e.stopped()).map(|e| e.code()),
        lost: shards
            .iter()
            .filter_map(|s| match s.ended {
                Some(ended @ Ended::Signal(_)) => Some((
                    u64::from(s.index),
                    format!("shard {} was {}", s.index, ended.describe()),
                )),
                _ => None,
            })
            .collect(),
    };
    let failed = failed_to_start(&shards);
    if !failed.is_empty() {
        return Err(ScaleError::ShardsFailed(failed));
    }
    let dirs: Vec<PathBuf> = shards.iter().map(|s| s.dir.clone()).collect();
    let merged =
        merge_runs(&dirs, &run_dir, DEFAULT_BUFFERED_SECONDS, &known).map_err(|error| {
            ScaleError::Merge {
                error,
                outputs: outputs(&shards),
            }
        })?;
    let exit_code = exit_code(&ends, &merged, options.fail_on_warnings);
    Ok(Outcome {
        merged,
        run_dir,
        exit_code,
    })
}

/// Start every shard, each in `run_dir/shard-I`, bound to this process.
fn spawn_shards(
    options: &Options<'_>,
    config: &TestConfig,
    start: u64,
    run_dir: &Path,
) -> Result<Vec<Shard>, ScaleError> {
    let exe = std::env::current_exe().map_err(io("finding the tank binary to start"))?;
    let mut shards = Vec::new();
    for index in 0..options.processes {
        let dir = run_dir.join(format!("shard-{index}"));
        let mut command = shard_command(&exe, options, config, index, start, &dir)?;
        let child = child::spawn_bound(&mut command)
            .map_err(io(format!("starting shard {index}/{}", options.processes)))?;
        shards.push(Shard {
            index,
            dir,
            child,
            ended: None,
            tail: console::Tail::default(),
        });
    }
    Ok(shards)
}

/// `tank shoot` for shard `index`, writing into `dir` (created, with its console output).
fn shard_command(
    exe: &Path,
    options: &Options<'_>,
    config: &TestConfig,
    index: u32,
    start: u64,
    dir: &Path,
) -> Result<Command, ScaleError> {
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let out_path = dir.join("console.txt");
    let out =
        std::fs::File::create(&out_path).map_err(io(format!("creating {}", out_path.display())))?;
    let err = out
        .try_clone()
        .map_err(io(format!("opening {}", out_path.display())))?;
    let mut command = Command::new(exe);
    command.arg("shoot").arg("-c").arg(options.config_path);
    for o in options.overrides {
        command
            .arg("-o")
            .arg(format!("{}.{}={}", o.section, o.key, o.value));
    }
    if let Some(prometheus) = &config.prometheus {
        let mut listen = prometheus.listen;
        if listen.port() != 0 {
            let port = u32::from(listen.port()) + index;
            let port = u16::try_from(port).map_err(|_| {
                ScaleError::Input(format!(
                    "[prometheus] listen {}: shard {index} would serve on port {port}, past 65535 \
                     (each shard takes the port plus its index): choose a lower port",
                    prometheus.listen
                ))
            })?;
            listen.set_port(port);
        }
        command.arg("-o").arg(format!("prometheus.listen={listen}"));
    }
    command
        .arg("-o")
        .arg(format!("tank.artifacts_dir={}", dir.display()))
        .arg("--shard")
        .arg(format!("{index}/{}", options.processes))
        .arg("--start-at")
        .arg(format!("{}.{:06}", start / 1_000_000, start % 1_000_000))
        .arg("--quiet");
    if options.fail_on_warnings {
        command.arg("--fail-on-warnings");
    }
    command
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("TANK_SHARDS")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // Its own process group: a Ctrl-C at the terminal reaches the parent only,
    // which forwards it once to each child.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    Ok(command)
}

/// Wait for every child; show the console; forward signals; when one child
/// stops before its plan's end, stop the others. How each ended, in the order
/// they ended.
fn supervise(
    shards: &mut [Shard],
    signals: &AtomicUsize,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Vec<Ended>, ScaleError> {
    let mut seconds = console::Seconds::default();
    let mut forwarded = 0;
    let mut stopping = false;
    let mut ends = Vec::new();
    let total = shards.len() as u32;
    loop {
        let received = signals.load(Ordering::Acquire);
        while forwarded < received {
            forwarded += 1;
            child::interrupt(shards.iter());
        }
        for shard in shards.iter_mut() {
            shard.tail.read(&shard.dir, &mut seconds);
        }
        let mut stop_others = false;
        for shard in shards.iter_mut().filter(|s| s.ended.is_none()) {
            let status = shard
                .child
                .try_wait()
                .map_err(io(format!("watching shard {}", shard.index)))?;
            if let Some(status) = status {
                let ended = Ended::of(status);
                shard.ended = Some(ended);
                ends.push(ended);
                // After a Ctrl-C every shard stops on it, finishing its shots
                // in flight: another signal would be a second Ctrl-C, which
                // abandons them.
                if ended.stopped() && !stopping && received == 0 {
                    stopping = true;
                    stop_others = true;
                    let _ = writeln!(
                        err,
                        "tank: shard {} stopped ({}): stopping the others",
                        shard.index,
                        ended.describe()
                    );
                }
            }
        }
        if stop_others {
            child::interrupt(shards.iter());
        }
        let running = shards.iter().any(|s| s.ended.is_none());
        for line in seconds.ready(total, running) {
            let _ = writeln!(out, "{line}");
        }
        if !running {
            return Ok(ends);
        }
        std::thread::sleep(POLL);
    }
}

/// The shards that exited with an error before their phout existed (they
/// never fired): the error each printed (the same one once, for all the
/// shards that gave it), else where its output is.
fn failed_to_start(shards: &[Shard]) -> String {
    let mut said: Vec<(String, Vec<u32>)> = Vec::new();
    for s in shards.iter().filter(|s| {
        matches!(s.ended, Some(Ended::Code(code)) if code != 0) && !s.dir.join(PHOUT).exists()
    }) {
        let console = s.dir.join("console.txt");
        let error = std::fs::read_to_string(&console)
            .ok()
            .and_then(|text| {
                text.lines()
                    .rev()
                    .find_map(|line| line.strip_prefix("tank: error: ").map(str::to_owned))
            })
            .unwrap_or_else(|| {
                format!(
                    "exit code {}, its output in {}",
                    s.ended.map_or(1, Ended::code),
                    console.display()
                )
            });
        match said.iter_mut().find(|(e, _)| *e == error) {
            Some((_, indices)) => indices.push(s.index),
            None => said.push((error, vec![s.index])),
        }
    }
    said.into_iter()
        .map(|(error, indices)| {
            let which = if indices.len() == 1 {
                "shard"
            } else {
                "shards"
            };
            let list: Vec<String> = indices.iter().map(u32::to_string).collect();
            format!("{which} {} did not start: {error}", list.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where each shard's console output is, for an error.
fn outputs(shards: &[Shard]) -> String {
    shards
        .iter()
        .map(|s| {
            format!(
                "shard {} {}, its output in {}",
                s.index,
                s.ended.map_or("still running".into(), Ended::describe),
                s.dir.join("console.txt").display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The parent's exit code (see [`Outcome::exit_code`]).
fn exit_code(ends: &[Ended], merged: &Merged, fail_on_warnings: bool) -> i32 {
    let code = ends
        .iter()
        .find(|e| e.stopped())
        .map_or(merged.exit_code, |e| e.code());
    let warned =
        ends.contains(&Ended::Code(codes::WARNINGS)) || !merged.summary.warnings.is_empty();
    if code == codes::COMPLETED && fail_on_warnings && warned {
        codes::WARNINGS
    } else {
        code
    }
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
