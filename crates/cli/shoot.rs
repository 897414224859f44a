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

use console::Console;

/// Run the test in `config_path`.
pub fn run(
    config_path: &Path,
    overrides: &[Override],
    quiet: bool,
    fail_on_warnings: bool,
) -> Result<ExitCode> {
    let config = tank_config::load(config_path, overrides)?;
    let console = Console::choose(
        quiet || config.console.short_only,
        config.path.display().to_string(),
    );
    let spec = Spec {
        config,
        overrides: overrides.to_vec(),
        fail_on_warnings,
    };
    let handle = Handle::default();
    watch_signals(handle.clone()).context("watching for Ctrl-C")?;
    let outcome = tank_run::run(&spec, Box::new(console), &handle)?;
    print!("{}", outcome.text);
    if let Some(why) = &outcome.reports_failed {
        eprintln!(
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
        config,
        overrides: overrides.to_vec(),
        fail_on_warnings: false,
    };
    let set = tank_run::load_only(&spec, Box::new(Console::Lines))?;
    println!("tank: {set} records set");
    Ok(ExitCode::SUCCESS)
}

/// First Ctrl-C (or SIGTERM, as CI runners and supervisors send): stop firing
/// and let shots in flight finish. Second: stop now. The watch runs on a thread
/// of its own for the rest of the process; it is registered before this returns,
/// so no signal sent once the run has started is missed.
fn watch_signals(handle: Handle) -> std::io::Result<()> {
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready.send(Err(error));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut signals = match Signals::new() {
                    Ok(signals) => signals,
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                signals.next().await;
                eprintln!("tank: stopping: waiting for shots in flight (Ctrl-C again to stop now)");
                handle.stop();
                signals.next().await;
                eprintln!("tank: stopping now");
                handle.abort();
            });
        })?;
    registered
        .recv()
        .map_err(|_| std::io::Error::other("the signal thread ended"))?
}

/// SIGINT (Ctrl-C) and SIGTERM, as one stream; registered when made.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Wait for the next signal (forever, if none can come).
    async fn next(&mut self) {
        let received = tokio::select! {
            signal = self.interrupt.recv() => signal.is_some(),
            signal = self.terminate.recv() => signal.is_some(),
        };
        if !received {
            std::future::pending::<()>().await;
        }
    }
}
