//! `tank`: a phantom-compatible load generator.
//!
//! This file is thin wiring: parse the command line, run the subcommand, and
//! map any error to a message on stderr and a non-zero exit code, once.

// Every print goes through `out` (`out!`, `outln!`, `err!`, `errln!`), which a
// closed pipe cannot turn into a panic; its macros are in scope in every module below.
#![deny(clippy::print_stdout, clippy::print_stderr)]
#[macro_use]
mod out;

mod bench;
mod compare;
mod import;
mod k8s;
mod merge;
mod origin;
mod plan;
mod report;
mod runs;
mod scale;
mod search;
mod shoot;
mod signals;
mod sweep;
mod target_args;
mod walk;
mod web;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tank_config::Override;

/// A phantom-compatible load generator: reads yandex-tank configs (load.ini,
/// TOML, load.yaml) and ammo, plans shots exactly as yandex-tank's stepper does.
#[derive(Debug, Parser)]
#[command(name = "tank", version, about, long_about = None, propagate_version = true)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `tank -c FILE` is `tank shoot -c FILE`.
    #[command(flatten)]
    shoot: ShootArgs,
}

/// Arguments of `tank shoot` (and of plain `tank -c FILE`).
#[derive(Debug, clap::Args)]
struct ShootArgs {
    /// The config to run: load.ini (yandex-tank INI), .toml, or load.yaml (yandex-tank 2).
    #[arg(short, long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override an option: `-o phantom.rps_schedule='const(10,1m)'` (repeatable).
    #[arg(short = 'o', long = "option", value_name = "SECTION.KEY=VALUE")]
    overrides: Vec<Override>,
    /// One plain line per second instead of the full-screen console (as `[console] short_only`).
    #[arg(short, long)]
    quiet: bool,
    /// Exit 35 instead of 0 when the run ends with warnings (every shot failed,
    /// 1% or more unsent or failing, samples dropped, ...), as `[tank] fail_on_warnings = 1`.
    #[arg(long)]
    fail_on_warnings: bool,
    /// Sharding: --shard, --start-at, --processes.
    #[command(flatten)]
    scale: scale::ScaleArgs,
    /// Only set every record of the [memcached] workload (as `preload = 1`
    /// does before a run) and exit, as mcperf's --loadonly.
    #[arg(long, conflicts_with = "apiary")]
    loadonly: bool,
    /// Show Apiary's statistics view beside tank's: every --interval,
    /// tallies (errors by kind, sessions and requests completed, with their
    /// rates), levels (sessions and requests running: current, min, max,
    /// median, mean, stdev) and series (request duration), each with its change
    /// since the interval before. Also in summary.json (`apiary`).
    #[arg(long)]
    apiary: bool,
    /// How often --apiary's view is shown (default 15s, as Apiary's; at least 1s).
    #[arg(long, value_name = "DURATION", requires = "apiary", value_parser = parse_interval)]
    interval: Option<std::time::Duration>,
    /// The live web dashboard: --web, --web-token, --web-linger.
    #[command(flatten)]
    web: web::WebArgs,
}

/// `--interval`: a duration (`15s`, `1m`, `500ms`) of at least a second.
fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let interval = tank_config::units::parse_timeout(text)?;
    if interval < std::time::Duration::from_secs(1) {
        return Err(format!("`{text}`: expected at least 1s"));
    }
    Ok(interval)
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a test: fire every queue's plan at its target, write phout.log and a
    /// summary into a new artifacts directory (logs/<time>_<id>/ by default).
    /// With `ammo_type = scenario` each shot is a run of a scenario in Pandora's
    /// format (HCL, YAML or JSON: log in, list, buy, with variables, sources,
    /// templates and checks), one phout row per request (docs/scenarios.md).
    ///
    /// Ctrl-C (or SIGTERM) stops firing and waits for shots in flight; a second
    /// one stops at once. Exit codes, as yandex-tank's: 0 completed, 1 interrupted
    /// or failed, 21-33 stopped by an autostop criterion; and tank's own: 34 an
    /// artifact could not be written (a full disk: the run stops at once), 35 the
    /// run ended with warnings under --fail-on-warnings; [rcassert] may remap them.
    ///
    /// While it shoots, tank asks Linux to keep the CPUs out of idle states that
    /// are slow to wake from, so that no shot is late waiting for a CPU to wake
    /// (it needs root; tank.log says whether it was granted; `-o
    /// tank.keep_cpus_awake=0` turns it off).
    Shoot(ShootArgs),
    /// Plan a test without firing: print each queue's schedule, ammo, shot
    /// count and tags, and optionally write the stepped ammo (stpd) that
    /// yandex-tank's stepper would write for the same config, byte for byte.
    /// For a replay (`ammo_type = sessions`), also the capture: sessions,
    /// requests, duration, largest gap, peak of open sessions (the default
    /// session pool) and its requests per second. For a scenario file
    /// (`ammo_type = scenario`, Pandora's format: docs/scenarios.md), its
    /// scenarios (weight, requests and sleeps a run, shortest run) and
    /// sources (rows), every template and reference checked, and the runs drawn.
    Plan(PlanArgs),
    /// Run the origin simulator: a target whose status, latency, body and
    /// faults follow a JSON recipe over time (OriginSimulator's format, plus
    /// latency distributions, CPU work and faults). Admin API under /_admin/.
    Origin(origin::OriginArgs),
    /// Rebuild a run's reports from phout files (tank's, phantom's or pandora's):
    /// summary.json, summary.txt, per-second JSON lines in yandex-tank's shape
    /// (test_data.log) and a self-contained report.html. Streams: memory does
    /// not grow with the file.
    Report(report::ReportArgs),
    /// Compare two runs (artifacts directories with summary.json, run ids
    /// from `tank runs`, or phout files): cumulative quantiles with deltas,
    /// codes, per-tag deltas; with --out, an HTML page with the runs' charts
    /// overlaid, each tag's too. Two sweeps overlay their throughput and p99
    /// against concurrency.
    Compare(compare::CompareArgs),
    /// List the runs under the artifacts base (logs/ by default): id, start,
    /// duration, rps, p99, errors, the job's name and how each ended (sweeps
    /// with their steps); and write an index.html there linking each run's
    /// report. `tank compare` takes the ids.
    Runs(runs::RunsArgs),
    /// A wrk-style one-liner: `tank bench URL -c 64 -d 10s` (connections
    /// firing back to back) or `-R 10000` (requests per second, latency from
    /// the intended start, as wrk2). Prints wrk's summary (Latency and Req/Sec
    /// per thread, the latency distribution, Requests/sec, Transfer/sec) and
    /// counts as wrk: a request is a shot that got a reply; shots without one
    /// are `Socket errors: connect, read, write, timeout`, replies of 400 and
    /// up `Non-2xx or 3xx responses`. Leaves the usual artifacts. A run where
    /// no request succeeded ends with a WARNING (exit 35 with --fail-on-warnings).
    Bench(bench::BenchArgs),
    /// Sweep concurrency (closed model): one run per step (`-c 1,2,4,8` or
    /// `line(1,64,16)`), measured after a warm-up; per step good answers per
    /// second (no net error, status under 400), errors, p50/p90/p99/p99.9; the
    /// knee (the last step before one that adds under 10% throughput per
    /// doubling of connections while p99 grows, or before errors pass 1%) and a
    /// Universal Scalability Law fit, withheld with the reason when steps had
    /// errors or R² < 0.9. Table, --json, report.html.
    Sweep(sweep::SweepArgs),
    /// Find the highest rate whose latency quantile stays under a bound
    /// (`--quantile 99 --under 50ms`), bisecting open-model probes between
    /// --from and --to to --precision. A probe where the generator fell behind
    /// (achieved < 98% of the rate, or of the shots the plan had due in the
    /// window with drawn --arrivals; lag p99 > 1 ms; or unsent shots, while
    /// connections were free) is invalid, never a pass nor a failure, and is
    /// tried again (3 tries in all). Exits 0 with a limit, 3 when no rate meets
    /// the bound, 4 when the limit is unresolved (a rate left invalid lies
    /// between the highest pass and the lowest failure: the bracket is given).
    /// With --config, the settings may come from the config's [search]
    /// section; flags override it.
    Search(search::SearchArgs),
    /// Measure every rate of `--rate lo:hi:step` against a latency bound, as
    /// search does (invalid probes tried again, exits 0, 3 or 4 alike); the
    /// limit is the highest rate passing with all below it. With --config, the
    /// settings may come from the config's [search] section; flags override it.
    Scan(search::ScanArgs),
    /// Merge the runs of a sharded test (`--shard I/N` on several machines or
    /// processes) into one: their phouts merged by time, per-second data with
    /// the planned counts of the whole plan, summary, report.html, the autostop
    /// verdict over the merged data, and each shard's first-shot skew against
    /// the common start and its share of its plan (merge.json). Shards of
    /// different tests are refused; exits with autostop's code (21-33), else 1
    /// when a shard was stopped or lost, else 0.
    Merge(merge::MergeArgs),
    /// Print Kubernetes manifests that run the test as N shards with a common
    /// start: a ConfigMap with the config and small ammo, and an Indexed Job
    /// (completions = parallelism = N) whose pods run `tank -c ... --shard
    /// $(JOB_COMPLETION_INDEX)/N --start-at ...` and keep their artifacts on the
    /// claim tank-artifacts. --dockerfile prints a Dockerfile for the image.
    /// See docs/kubernetes.md.
    K8s(k8s::K8sArgs),
    /// Import captured traffic (pcap, pcapng, an nginx/Apache access log, HAR,
    /// or a MySQL/MariaDB slow query log) into a sessions file: per captured
    /// connection (or client, or MySQL thread) its requests, verbatim, at their
    /// captured offsets, ready to replay with `ammo_type = sessions` (MySQL
    /// with `tank_type = mysql`, a framed TCP protocol with `tank_type = none`). Streams, in bounded memory (--memory); warnings
    /// and a one-line summary go to stderr. See docs/replay.md.
    Import(import::ImportArgs),
}

/// Arguments of `tank plan`.
#[derive(Debug, clap::Args)]
struct PlanArgs {
    /// The config: load.ini (yandex-tank INI), .toml, or load.yaml (yandex-tank 2).
    #[arg(short, long, value_name = "FILE")]
    config: PathBuf,
    /// Plan only this queue (`phantom`, `phantom-1`, ...). Needed with --stpd when the config has several.
    #[arg(long, value_name = "NAME")]
    section: Option<String>,
    /// Write the queue's stepped ammo in stpd format to this file (`-` for stdout).
    #[arg(long, value_name = "OUT")]
    stpd: Option<PathBuf>,
    /// Override an option: `-o phantom.rps_schedule='const(10,1m)'` (repeatable).
    #[arg(short = 'o', long = "option", value_name = "SECTION.KEY=VALUE")]
    overrides: Vec<Override>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None | Some(Command::Shoot(_)) => {
            let args = match cli.command {
                Some(Command::Shoot(args)) => args,
                _ => cli.shoot,
            };
            match args.config {
                Some(config) if args.loadonly => shoot::load_only(&config, &args.overrides),
                Some(config) => shoot::run(
                    &config,
                    &args.overrides,
                    args.quiet,
                    args.fail_on_warnings,
                    &args.scale,
                    args.apiary.then(|| {
                        args.interval
                            .unwrap_or(tank_report::apiary::DEFAULT_INTERVAL)
                    }),
                    &args.web,
                ),
                None => {
                    errln!("tank: nothing to do: run a test with `tank -c load.ini`, or see `tank --help`");
                    return ExitCode::from(2);
                }
            }
        }
        Some(Command::Plan(args)) => plan::run(
            &args.config,
            args.section.as_deref(),
            args.stpd.as_deref(),
            &args.overrides,
        )
        .map(|()| ExitCode::SUCCESS),
        Some(Command::Origin(args)) => origin::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Report(args)) => report::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Compare(args)) => compare::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Runs(args)) => runs::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Bench(args)) => bench::run(&args),
        Some(Command::Sweep(args)) => sweep::run(&args),
        Some(Command::Search(args)) => search::search(&args),
        Some(Command::Scan(args)) => search::scan(&args),
        Some(Command::Merge(args)) => merge::run(&args),
        Some(Command::K8s(args)) => k8s::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Import(args)) => import::run(&args).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            errln!("tank: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
