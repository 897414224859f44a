//! `tank`: a phantom-compatible load generator.
//!
//! This file is thin wiring: parse the command line, run the subcommand, and
//! map any error to a message on stderr and a non-zero exit code, once.

mod plan;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tank_config::Override;

/// A phantom-compatible load generator: reads yandex-tank configs (load.ini,
/// TOML, load.yaml) and ammo, plans shots exactly as yandex-tank's stepper does.
#[derive(Debug, Parser)]
#[command(name = "tank", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan a test without firing: print each queue's schedule, ammo, shot
    /// count and tags, and optionally write the stepped ammo (stpd) that
    /// yandex-tank's stepper would write for the same config, byte for byte.
    Plan(PlanArgs),
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
        Command::Plan(args) => plan::run(
            &args.config,
            args.section.as_deref(),
            args.stpd.as_deref(),
            &args.overrides,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tank: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
