//! `tank search` and `tank scan`: the highest rate at which a latency
//! quantile stays under a bound (mcperf's `--search 99:5000` and `--scan`),
//! with open-model probes. The bisection, the validity rule, the retries of
//! invalid probes, the verdict and the reports are tank-limit's; this module
//! parses flags, prints, and maps the verdict to the exit code (0 a limit,
//! 3 none meets the bound, 4 unresolved).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use tank_config::search::{parse_percent, parse_rates, parse_share};
use tank_config::{ArrivalProcess, SearchConfig};
use tank_limit::output::{write_json, write_page, SearchReport};
use tank_limit::search::{self, bisect, scan_rates, Bound, Probe, Range, Verdict, TRIES};
use tank_limit::{exit, run_probe_shown, Interrupt, Load, Target, Timing};

use crate::target_args::{finish, parse_duration, probe_dir, TargetArgs};

/// The exit code of a command stopped by a signal, as `tank -c`'s.
const INTERRUPTED: u8 = tank_stats::autostop::codes::INTERRUPTED as u8;

/// What both commands judge and how they probe. Each setting may also be
/// in the `[search]` section of a `--config` file; a flag overrides it.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The quantile judged, percent [default: 99].
    #[arg(long)]
    pub quantile: Option<f64>,
    /// Its bound (e.g. 5ms, 0.5s), from the intended start (or `under` in [search]).
    #[arg(long, value_parser = parse_duration)]
    pub under: Option<Duration>,
    /// How long each probe is measured, after its warm-up [default: 20s].
    #[arg(long, value_parser = parse_duration)]
    pub probe: Option<Duration>,
    /// How long each probe runs before it is measured [default: 5s].
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// The most connections a probe may open [default: 1000].
    #[arg(long)]
    pub instances: Option<u32>,
    /// The most errors a passing probe may have, percent [default: 1].
    #[arg(long, value_parser = parse_percent)]
    pub max_errors: Option<f64>,
    /// A probe whose generator lag p99 is over this (while connections were
    /// free) is invalid: the generator, not the target, fell behind [default: 1ms].
    #[arg(long, value_parser = parse_duration)]
    pub max_lag: Option<Duration>,
    /// How each probe spaces its shots: uniform, poisson, pareto(loc,scale,shape),
    /// gev(loc,scale,shape), normal(mean,sd) or fb_ia [default: the config's, uniform].
    #[arg(long, value_name = "DIST", value_parser = ArrivalProcess::parse)]
    pub arrivals: Option<ArrivalProcess>,
    /// Write the result as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `tank search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// The lowest rate considered [default: 1].
    #[arg(long)]
    pub from: Option<u64>,
    /// The highest rate considered [default: the peak measured first by a
    /// closed-model probe with --peak-connections].
    #[arg(long)]
    pub to: Option<u64>,
    /// Stop when the bracket is narrower than this share of its low end (2% or 0.02) [default: 2%].
    #[arg(long, value_parser = parse_share)]
    pub precision: Option<f64>,
    /// Connections of the probe that measures the peak when --to is not given [default: 64].
    #[arg(long)]
    pub peak_connections: Option<u32>,
}

/// Arguments of `tank scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// The rates, `lo:hi:step` (e.g. 100:1000:100), or `rate` in [search].
    #[arg(long, value_parser = parse_rates)]
    pub rate: Option<(u64, u64, u64)>,
}

/// How both commands probe, from the flags over the config's `[search]`
/// over the defaults.
struct Settings {
    bound: Bound,
    timing: Timing,
    instances: u32,
    arrivals: Option<ArrivalProcess>,
}

impl Settings {
    fn resolve(p: &ProbeArgs, file: &SearchConfig) -> Result<Settings> {
        let quantile = p.quantile.or(file.quantile).unwrap_or(99.0);
        if !(quantile > 0.0 && quantile <= 100.0) {
            bail!("--quantile {quantile}: expected a percent above 0, at most 100");
        }
        let Some(under) = p.under.or(file.under) else {
            bail!("no bound: expected --under DURATION (or `under` in the config's [search])");
        };
        let instances = p.instances.or(file.instances).unwrap_or(1000);
        if instances == 0 {
            bail!("--instances 0: expected at least one connection");
        }
        let max_lag = p
            .max_lag
            .or(file.max_lag)
            .unwrap_or(Duration::from_millis(1));
        Ok(Settings {
            bound: Bound {
                quantile,
                under_ms: under.as_secs_f64() * 1000.0,
                max_error_pct: p.max_errors.or(file.max_errors).unwrap_or(1.0),
                max_lag_p99_ms: max_lag.as_secs_f64() * 1000.0,
            },
            timing: Timing {
                warmup: p.warmup.or(file.warmup).unwrap_or(Duration::from_secs(5)),
                measure: p.probe.or(file.probe).unwrap_or(Duration::from_secs(20)),
                quantile,
            },
            instances,
            arrivals: p.arrivals.or(file.arrivals),
        })
    }
}

/// Run `tank search`.
pub fn search(args: &SearchArgs) -> Result<ExitCode> {
    let p = &args.probe;
    let (target, root, name) = p.target.target("search")?;
    let file = &target.base().search;
    let settings = Settings::resolve(p, file)?;
    let from = args.from.or(file.from).unwrap_or(1);
    let peak_connections = args
        .peak_connections
        .or(file.peak_connections)
        .unwrap_or(64);
    let web = p.target.web.start(None, format!("tank search {name}"))?;
    let interrupt = crate::signals::interrupt_probes()?;
    let mut prober = Prober::new(&target, &settings, &root, web.as_ref(), &interrupt);
    let to = match args.to.or(file.to) {
        Some(to) => to,
        None => {
            let dir = prober.next_dir(&format!("peak_{peak_connections}c"));
            let load = Load::Closed {
                concurrency: peak_connections.max(1),
            };
            let label = format!("the peak: {peak_connections} connections back to back");
            let show = crate::web::Web::show(web.as_ref(), label);
            let peak = run_probe_shown(&target, &load, &settings.timing, &dir, &show, &interrupt)?;
            crate::target_args::note_setup_warnings(&mut prober.warnings, &peak);
            if interrupt.interrupted() {
                errln!(
                    "tank: interrupted while measuring the peak, before any rate was probed; \
                     its run is in {}",
                    dir.display()
                );
                return Ok(ExitCode::from(INTERRUPTED));
            }
            let good_rps = peak.per_second(peak.good());
            outln!(
                "peak: {good_rps:.1} good rps with {peak_connections} connections ({} errors)",
                peak.errors
            );
            good_rps.floor() as u64
        }
    };
    if to <= from {
        bail!("--to {to} must be above --from {from}");
    }
    let range = Range {
        from: from.max(1),
        to,
        precision: args.precision.or(file.precision).unwrap_or(0.02),
    };
    let (verdict, probes) = bisect(&range, |rate, attempt| prober.probe(rate, attempt))?;
    finish_search(
        prober.report("search", name, verdict, probes),
        p,
        &root,
        web,
        interrupt.interrupted(),
    )
}

/// Run `tank scan`.
pub fn scan(args: &ScanArgs) -> Result<ExitCode> {
    let p = &args.probe;
    let (target, root, name) = p.target.target("scan")?;
    let file = &target.base().search;
    let settings = Settings::resolve(p, file)?;
    let Some((from, to, step)) = args.rate.or(file.rate) else {
        bail!("no rates: expected --rate lo:hi:step (or `rate` in the config's [search])");
    };
    let web = p.target.web.start(None, format!("tank scan {name}"))?;
    let interrupt = crate::signals::interrupt_probes()?;
    let mut prober = Prober::new(&target, &settings, &root, web.as_ref(), &interrupt);
    let (verdict, probes) = search::scan(&scan_rates(from, to, step), |rate, attempt| {
        prober.probe(rate, attempt)
    })?;
    let report = prober.report("scan", name, verdict, probes);
    finish_search(report, p, &root, web, interrupt.interrupted())
}

/// Runs a command's probes, each in the next numbered directory under the
/// command's root, prints a line for each, and notes where nothing succeeded.
struct Prober<'a> {
    target: &'a Target,
    settings: &'a Settings,
    root: &'a Path,
    index: usize,
    warnings: Vec<String>,
    /// The live dashboard, if asked for, and the probes' rows shown on it.
    web: Option<&'a crate::web::Web>,
    rows: Vec<Vec<String>>,
    /// Ctrl-C: the probe it stops is not judged, and none runs after it.
    interrupt: &'a Interrupt,
}

impl<'a> Prober<'a> {
    fn new(
        target: &'a Target,
        settings: &'a Settings,
        root: &'a Path,
        web: Option<&'a crate::web::Web>,
        interrupt: &'a Interrupt,
    ) -> Prober<'a> {
        Prober {
            target,
            settings,
            root,
            index: 0,
            warnings: Vec::new(),
            web,
            rows: Vec::new(),
            interrupt,
        }
    }

    /// The report of a `kind` command of `target` that ended in `verdict` after `probes`.
    fn report(
        mut self,
        kind: &'static str,
        target: String,
        verdict: Verdict,
        probes: Vec<Probe>,
    ) -> SearchReport {
        if self.interrupt.interrupted() {
            self.warnings.push(format!(
                "interrupted (Ctrl-C or SIGTERM) after {} judged: the verdict is of those \
                 rates only, not the {kind} asked for",
                tank_plan::words::count(probes.len() as u64, "probe")
            ));
        }
        SearchReport::new(
            kind,
            target,
            &self.settings.bound,
            verdict,
            probes,
            self.warnings,
        )
    }

    /// The next probe's directory: `NN_label` under the root.
    fn next_dir(&mut self, label: &str) -> PathBuf {
        self.index += 1;
        probe_dir(self.root, self.index - 1, label)
    }

    /// Probes `rate` (try `attempt`) and judges it; `None` once interrupted
    /// (the probe a signal stopped is not judged).
    fn probe(&mut self, rate: u64, attempt: u32) -> Result<Option<Probe>, tank_limit::LimitError> {
        if self.interrupt.interrupted() {
            return Ok(None);
        }
        let (bound, timing) = (&self.settings.bound, &self.settings.timing);
        let load = Load::Open {
            rate,
            duration: timing.warmup + timing.measure,
            instances: self.settings.instances,
            arrivals: self.settings.arrivals,
        };
        let label = if attempt > 1 {
            format!("{rate}rps_try{attempt}")
        } else {
            format!("{rate}rps")
        };
        let dir = self.next_dir(&label);
        let shown = format!(
            "probe {}: {rate} rps (try {attempt} of {TRIES})",
            self.index
        );
        let show = crate::web::Web::show(self.web, shown);
        let measured = run_probe_shown(self.target, &load, timing, &dir, &show, self.interrupt)?;
        crate::target_args::note_setup_warnings(&mut self.warnings, &measured);
        if measured.interrupted {
            errln!(
                "probe {rate} rps (try {attempt} of {TRIES}): interrupted after {:.2} s of its \
                 window: not judged",
                measured.seconds
            );
            return Ok(None);
        }
        if measured.good() == 0 {
            self.warnings.push(format!(
                "no request succeeded at {rate} rps: {}",
                measured.failures()
            ));
        }
        let probe = Probe::judge(rate, &measured, bound);
        let verdict = if probe.passed {
            "pass".to_owned()
        } else if probe.valid {
            "fail".to_owned()
        } else if attempt < TRIES {
            format!("INVALID ({}): trying again", probe.reasons.join("; "))
        } else {
            format!(
                "INVALID ({}): {TRIES} tries, none valid: this rate stays unjudged",
                probe.reasons.join("; ")
            )
        };
        errln!(
            "probe {rate} rps (try {attempt} of {TRIES}): achieved {:.1}, p{} {:.2} ms: {verdict}",
            probe.achieved_rps,
            bound.quantile,
            probe.quantile_ms,
        );
        if let Some(web) = self.web {
            self.rows.push(vec![
                rate.to_string(),
                attempt.to_string(),
                format!("{:.1}", probe.achieved_rps),
                format!("{:.2}", probe.quantile_ms),
                verdict,
            ]);
            let quantile = format!("p{} ms", bound.quantile);
            web.dashboard.table(
                "Probes so far",
                &["rate", "try", "achieved rps", &quantile, "verdict"],
                &self.rows,
            );
        }
        Ok(Some(probe))
    }
}

/// Prints and writes `report`; the exit code: 1 when `interrupted`, else 0
/// with a limit, 3 when no rate meets the bound, 4 when the limit is
/// unresolved (or 35 for warnings under --fail-on-warnings instead of 0).
fn finish_search(
    report: SearchReport,
    p: &ProbeArgs,
    root: &Path,
    web: Option<crate::web::Web>,
    interrupted: bool,
) -> Result<ExitCode> {
    out!("{}", report.table());
    if let Some(path) = &p.json {
        write_json(path, &report)?;
    }
    let page = root.join("report.html");
    write_page(
        &page,
        &format!("tank {} — {}", report.kind, report.target),
        &report,
    )?;
    write_json(&root.join(format!("{}.json", report.kind)), &report)?;
    outln!(
        "artifacts: {} (report.html, {}.json, one directory per probe)",
        root.display(),
        report.kind
    );
    let code = match (report.resolved, report.limit_rps) {
        _ if interrupted => INTERRUPTED,
        (false, _) => exit::UNRESOLVED,
        (true, Some(_)) => 0,
        (true, None) => exit::NONE_MEETS,
    };
    if let Some(web) = web {
        web.finish(&report.verdict_line());
    }
    Ok(finish(code, &report.warnings, p.target.fail_on_warnings))
}
