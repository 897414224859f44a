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

use anyhow::{bail, Context, Result};
use tank_config::Override;
use tank_run::{Handle, Spec};

use crate::scale::ScaleArgs;
use console::Console;

/// Run the test in `config_path`.
pub fn run(
    config_path: &Path,
    overrides: &[Override],
    quiet: bool,
    fail_on_warnings: bool,
    scale: &ScaleArgs,
) -> Result<ExitCode> {
    let start_at = scale.start_at()?;
    if let Some(processes) = scale.processes {
        return crate::processes::run(config_path, overrides, processes, start_at);
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
    let console = Console::choose(
        quiet || config.console.short_only,
        config.path.display().to_string(),
    );
    let spec = Spec {
        config,
        overrides: overrides.to_vec(),
        fail_on_warnings,
        shard,
        start_at,
    };
    let handle = Handle::default();
    watch_signals(handle.clone()).context("watching for Ctrl-C")?;
    let outcome = tank_run::run(&spec, Box::new(console), &handle)?;
    out!("{}", outcome.text);
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
