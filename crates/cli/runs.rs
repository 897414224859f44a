//! `tank runs`: the runs kept under the artifacts base, one line each (job,
//! date, duration, rps, p99, errors, verdict), and an index.html beside them
//! linking their reports. The ids it prints are what `tank compare` takes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tank_report::history;

/// Arguments of `tank runs`.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// The artifacts base to list (as `[tank] artifacts_base_dir`).
    #[arg(long, value_name = "DIR", default_value = "logs")]
    pub dir: PathBuf,
    /// Where to write the index page (default: DIR/index.html).
    #[arg(long, value_name = "FILE")]
    pub index: Option<PathBuf>,
    /// Print the rows as JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Run `tank runs`.
pub fn run(args: &RunsArgs) -> Result<()> {
    let (rows, skipped) = history::scan(&args.dir)
        .with_context(|| format!("reading the runs under {}", args.dir.display()))?;
    for why in &skipped {
        errln!("tank: warning: skipped {why}");
    }
    if args.json {
        for row in &rows {
            outln!("{}", serde_json::to_string(row).unwrap_or_default());
        }
    } else {
        out!("{}", history::table(&rows));
    }
    let index = args
        .index
        .clone()
        .unwrap_or_else(|| args.dir.join("index.html"));
    std::fs::write(&index, history::index(&args.dir, &rows))
        .with_context(|| format!("writing {}", index.display()))?;
    errln!("tank: {} runs; wrote {}", rows.len(), index.display());
    Ok(())
}
