//! `tank report PHOUT... [--out DIR] [--buffered-seconds N]`: rebuild the summary, the
//! per-second JSON lines and the HTML report from phout files (tank's, phantom's, pandora's).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tank_report::stream;
use tank_report::Meta;
use tank_stats::aggregate::DEFAULT_BUFFERED_SECONDS;

/// Arguments of `tank report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// phout files (several are merged by response time: one per queue, say).
    #[arg(value_name = "PHOUT", required = true)]
    phouts: Vec<PathBuf>,
    /// Write summary.json, summary.txt, test_data.log and report.html here
    /// (default: the first phout's directory). Files already there are never
    /// overwritten (a run's own reports hold more than a phout can give) unless
    /// --force says so.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Overwrite reports already in the output directory.
    #[arg(long)]
    force: bool,
    /// Seconds to wait for late responses before a second is final.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUFFERED_SECONDS)]
    buffered_seconds: u32,
}

/// Run `tank report`.
pub fn run(args: &ReportArgs) -> Result<()> {
    let (phouts, out, buffered_seconds) =
        (&args.phouts, args.out.as_deref(), args.buffered_seconds);
    let Some(first) = phouts.first() else {
        bail!("give at least one phout file");
    };
    let out_dir = match out {
        Some(dir) => dir.to_path_buf(),
        None => first
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf(),
    };
    if !args.force {
        refuse_to_overwrite(&out_dir)?;
    }
    let names: Vec<String> = phouts.iter().map(|p| p.display().to_string()).collect();
    let meta = Meta {
        title: names.join(", "),
        sources: names,
        generator: concat!("tank ", env!("CARGO_PKG_VERSION")).to_string(),
        facts: vec![("buffered seconds".into(), buffered_seconds.to_string())],
    };
    let (summary, read) =
        stream::report(phouts, &out_dir, buffered_seconds, meta).context("tank report")?;
    for warning in &read.warnings {
        errln!("tank: warning: {warning}");
    }
    out!("{}", summary.to_text());
    outln!(
        "\n{} lines; wrote {}, {}, {}, {} in {}",
        read.lines,
        stream::files::SUMMARY_JSON,
        stream::files::SUMMARY_TEXT,
        stream::files::JSON_LINES,
        stream::files::HTML,
        out_dir.display()
    );
    Ok(())
}

/// Fail when `dir` already holds a report file: a run's own summary has planned
/// and unsent counts, lag and intended-start quantiles that a phout cannot give.
fn refuse_to_overwrite(dir: &Path) -> Result<()> {
    let existing: Vec<&str> = stream::files::ALL
        .into_iter()
        .filter(|name| dir.join(name).exists())
        .collect();
    if !existing.is_empty() {
        bail!(
            "{} already holds {}: a run's own reports know more than its phout, so they are \
             not overwritten; write elsewhere with --out DIR, or overwrite with --force",
            dir.display(),
            existing.join(", ")
        );
    }
    Ok(())
}
