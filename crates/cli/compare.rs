//! `tank compare RUN_A RUN_B [--out FILE]`: two runs side by side (text on stdout, and an
//! HTML page with overlaid charts when `--out` is given). A run is an artifacts directory
//! with `summary.json`, or a phout file.

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
}

/// Run `tank compare`.
pub fn run(args: &CompareArgs) -> Result<()> {
    let (a, b, out) = (&args.run_a, &args.run_b, args.out.as_deref());
    let load = |path: &Path| {
        compare::load_run(path, DEFAULT_BUFFERED_SECONDS)
            .with_context(|| format!("reading run {}", path.display()))
    };
    let (a, b) = (load(a)?, load(b)?);
    out!("{}", compare::text(&a, &b));
    if let Some(out) = out {
        std::fs::write(out, tank_report::html::compare(&a, &b))
            .with_context(|| format!("writing {}", out.display()))?;
        outln!("\nwrote {}", out.display());
    }
    Ok(())
}
