//! `tank -c FILE` / `tank shoot -c FILE`: run a test.
//!
//! Wiring only: load the config, show a console, forward signals, and print
//! how the run went; `tank_run::run` does the run. The first Ctrl-C (or
//! SIGTERM) stops firing and waits for shots in flight (up to `timeout`); a
//! second one stops at once, writing a row for every shot it abandons. Exit
//! codes are the run's (docs/results.md).

mod console;

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use tank_config::Override;
use tank_run::{Handle, Spec};

use crate::scale::ScaleArgs;
use crate::web::WebArgs;
use console::Console;

/// Run the test in `config_path`.
pub fn run(
    config_path: &Path,
    overrides: &[Override],
    quiet: bool,
    fail_on_warnings: bool,
    scale: &ScaleArgs,
    apiary: Option<std::time::Duration>,
    web: &WebArgs,
) -> Result<ExitCode> {
    let start_at = scale.start_at()?;
    if let Some(processes) = scale.processes {
        if apiary.is_some() {
            bail!(
                "--apiary shows one run's view: with --processes, each process is a run of its \
                 own (run them with --shard and --apiary instead)"
            );
        }
        if web.web.is_some() {
            bail!("--web with --processes: the dashboard is not yet fed by the merged shards; run one process, or read each shard's report.html");
        }
        return run_processes(
            config_path,
            overrides,
            processes,
            start_at,
            fail_on_warnings,
        );
    }
    let shard = scale.shard()?;
    let mut config = tank_config::load(config_path, overrides)?;
    if config.search != tank_config::SearchConfig::default() {
        // Read for `tank search` and `tank scan`; a run of the config fires its own schedule.
        let warning = format!(
            "{}: [search] holds the settings of `tank search --config` and `tank scan --config`; \
             `tank -c` does not use them",
            config.path.display()
        );
        config.warnings.push(warning);
    }
    let console = Console::choose(quiet || config.console.short_only, &config);
    let spec = Spec {
        config,
        overrides: overrides.to_vec(),
        fail_on_warnings,
        shard,
        start_at,
        apiary,
    };
    let web = web.start(
        Some(&spec.config),
        format!("tank -c {}", spec.config.path.display()),
    )?;
    let observer: Box<dyn tank_run::Observer> = match &web {
        Some(web) => web.observe("run", Box::new(console)),
        None => Box::new(console),
    };
    let handle = Handle::default();
    watch_signals(handle.clone()).context("watching for Ctrl-C")?;
    let outcome = tank_run::run(&spec, observer, &handle);
    let outcome = match (outcome, web) {
        (Ok(outcome), Some(web)) => {
            web.dashboard
                .end_run(&outcome.text, Some(outcome.exit_code));
            out!("{}", outcome.text);
            web.finish(&format!("exit code {}", outcome.exit_code));
            outcome
        }
        (Ok(outcome), None) => {
            out!("{}", outcome.text);
            outcome
        }
        (Err(error), Some(web)) => {
            web.finish(&format!("the run failed: {error}"));
            return Err(error.into());
        }
        (Err(error), None) => return Err(error.into()),
    };
    if let Some((endpoint, linger)) = &outcome.metrics {
        errln!(
            "tank: [prometheus] http://{}/metrics keeps the final totals for {} s (linger; \
             Ctrl-C ends it now)",
            endpoint.local_addr(),
            linger.as_secs()
        );
        crate::signals::linger(*linger);
    }
    if let Some(why) = &outcome.reports_failed {
        errln!(
            "tank: error: writing the reports into {}: {why}",
            outcome.artifacts.display()
        );
    }
    let errors = outcome.queue_errors();
    if !errors.is_empty() {
        bail!("{}: {}", spec.config.path.display(), errors.join("; "));
    }
    Ok(ExitCode::from(u8::try_from(outcome.exit_code).unwrap_or(1)))
}

/// `tank -c FILE --loadonly`: set the [memcached] workloads' records, fire nothing.
pub fn load_only(config_path: &Path, overrides: &[Override]) -> Result<ExitCode> {
    let config = tank_config::load(config_path, overrides)?;
    let spec = Spec {
        overrides: overrides.to_vec(),
        ..Spec::new(config)
    };
    let set = tank_run::load_only(&spec, Box::new(Console::lines()))?;
    outln!("tank: {set} records set");
    Ok(ExitCode::SUCCESS)
}

/// `--processes N`: the shards, their console, and the merged summary.
fn run_processes(
    config_path: &Path,
    overrides: &[Override],
    processes: u32,
    start_at: Option<u64>,
    fail_on_warnings: bool,
) -> Result<ExitCode> {
    let signals = count_signals().context("watching for Ctrl-C")?;
    let options = tank_scale::processes::Options {
        config_path,
        overrides,
        processes,
        start_at,
        fail_on_warnings,
    };
    let outcome = tank_scale::processes::run(
        &options,
        &signals,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )?;
    let merged = &outcome.merged;
    out!("{}", merged.summary.to_text());
    out!("{}", tank_scale::merge::describe(merged));
    outln!(
        "artifacts: {} (report.html, summary.json, phout.log; each shard's in shard-I/)",
        outcome.run_dir.display()
    );
    Ok(ExitCode::from(u8::try_from(outcome.exit_code).unwrap_or(1)))
}

/// Count SIGINT/SIGTERM received, for `--processes` to forward to its shards.
fn count_signals() -> std::io::Result<Arc<AtomicUsize>> {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    crate::signals::watch(move |_| {
        errln!("tank: stopping the shards (Ctrl-C again to stop them now)");
        counter.fetch_add(1, Ordering::AcqRel);
    })?;
    Ok(count)
}

/// First Ctrl-C (or SIGTERM, as CI runners and supervisors send): stop firing
/// and let shots in flight finish. Second: stop now.
fn watch_signals(handle: Handle) -> std::io::Result<()> {
    crate::signals::watch(move |n| match n {
        1 => {
            errln!("tank: stopping: waiting for shots in flight (Ctrl-C again to stop now)");
            handle.stop();
        }
        2 => {
            errln!("tank: stopping now");
            handle.abort();
        }
        _ => {}
    })
}
