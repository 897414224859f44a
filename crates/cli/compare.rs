//! `tank compare RUN_A RUN_B [--out FILE]`: two runs side by side (text on stdout, and an
//! HTML page with overlaid charts when `--out` is given). A run is an artifacts directory
//! with `summary.json`, a run id under `--dir` (as `tank runs` lists them), or a phout file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tank_report::compare;
use tank_stats::aggregate::DEFAULT_BUFFERED_SECONDS;

/// Arguments of `tank compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline run: an artifacts directory with summary.json, or a phout file.
    #[arg(value_name = "RUN_A")]
    run_a: PathBuf,
    /// The run compared with it (deltas are B − A).
    #[arg(value_name = "RUN_B")]
    run_b: PathBuf,
    /// Also write an HTML page with the two runs' charts overlaid.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Where run ids are looked up (the artifacts base).
    #[arg(long, value_name = "DIR", default_value = "logs")]
    dir: PathBuf,
}

/// `run` as given when it exists, else the run whose id it is (or starts) under `dir`.
fn resolve(run: &Path, dir: &Path) -> Result<PathBuf> {
    if run.exists() {
        return Ok(run.to_path_buf());
    }
    let id = run.to_string_lossy();
    tank_report::history::find(dir, &id).with_context(|| {
        format!(
            "{id}: no such file, and no single run under {} has that id (see `tank runs --dir {}`)",
            dir.display(),
            dir.display()
        )
    })
}

/// Run `tank compare`.
pub fn run(args: &CompareArgs) -> Result<()> {
    let (a, b, out) = (
        &resolve(&args.run_a, &args.dir)?,
        &resolve(&args.run_b, &args.dir)?,
        args.out.as_deref(),
    );
    let load = |path: &Path| {
        compare::load_run(path, DEFAULT_BUFFERED_SECONDS)
            .with_context(|| format!("reading run {}", path.display()))
    };
    let sweep = |dir: &Path| dir.join(tank_report::history::SWEEP_JSON);
    if sweep(a).is_file() || sweep(b).is_file() {
        return compare_sweeps(&sweep(a), &sweep(b), out);
    }
    let (a, b) = (load(a)?, load(b)?);
    out!("{}", compare::text(&a, &b));
    if let Some(out) = out {
        std::fs::write(out, tank_report::html::compare(&a, &b))
            .with_context(|| format!("writing {}", out.display()))?;
        outln!("\nwrote {}", out.display());
    }
    Ok(())
}

/// Two sweeps: throughput and p99 against concurrency.
fn compare_sweeps(a: &Path, b: &Path, out: Option<&Path>) -> Result<()> {
    let read = |path: &Path| -> Result<serde_json::Value> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "reading {} (comparing sweeps takes two sweep directories)",
                path.display()
            )
        })?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a sweep's JSON", path.display()))
    };
    let (a, b) = (read(a)?, read(b)?);
    out!("{}", compare::sweeps_text(&a, &b));
    if let Some(out) = out {
        std::fs::write(out, tank_report::html::compare_sweeps(&a, &b))
            .with_context(|| format!("writing {}", out.display()))?;
        outln!("\nwrote {}", out.display());
    }
    Ok(())
}
