//! `tank compare`: two runs side by side — cumulative quantiles with deltas, codes, per-tag
//! deltas — as text, and as an HTML page with the per-second charts overlaid.
//!
//! A run is an artifacts directory holding `summary.json` (what `tank report` and a run
//! write), or a phout file, which is aggregated on the fly.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::stream::{files, summarize, ReportError};
use crate::summary::{Meta, Summary};

/// Why a run could not be loaded for comparison.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading the phout (or the directory) failed.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// `summary.json` is not a tank summary. (The message holds the reason,
    /// so it is no `source()`: a chain printer would say it twice.)
    #[error("{}: not a tank summary: {error}", path.display())]
    Summary {
        /// The file.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
    },
}

/// Load a run: a directory with `summary.json`, or a phout file.
pub fn load_run(path: &Path, buffered_seconds: u32) -> Result<Summary, LoadError> {
    if path.is_dir() {
        let file = path.join(files::SUMMARY_JSON);
        let text = std::fs::read_to_string(&file).map_err(|error| ReportError::Io {
            path: file.clone(),
            error,
        })?;
        return Summary::from_json(&text).map_err(|error| LoadError::Summary { path: file, error });
    }
    let meta = Meta {
        title: path.display().to_string(),
        sources: vec![path.display().to_string()],
        generator: concat!("tank ", env!("CARGO_PKG_VERSION")).to_string(),
        facts: Vec::new(),
        ..Meta::default()
    };
    Ok(summarize(&[path.to_path_buf()], buffered_seconds, meta)?.0)
}

fn delta(a: f64, b: f64) -> String {
    let d = b - a;
    if a == 0.0 {
        format!("{d:+.3}")
    } else {
        format!("{d:+.3} ({:+.1}%)", d * 100.0 / a)
    }
}

/// The comparison as text: A is the baseline, deltas are B − A.
pub fn text(a: &Summary, b: &Summary) -> String {
    let mut out = String::new();
    let name = |s: &Summary| {
        s.meta
            .job
            .job_name
            .clone()
            .unwrap_or_else(|| s.meta.title.clone())
    };
    let _ = writeln!(out, "A: {}\nB: {}\n", name(a), name(b));
    let _ = writeln!(
        out,
        "responses: A {}  B {}   rps: A {:.1}  B {:.1}   duration: A {:.1} s  B {:.1} s",
        a.shots.responses,
        b.shots.responses,
        a.rps.actual,
        b.rps.actual,
        a.active_or_whole_s(),
        b.active_or_whole_s()
    );
    let _ = writeln!(
        out,
        "\nservice time\n{:>8}  {:>12}  {:>12}  B − A ms",
        "quantile", "A ms", "B ms"
    );
    for (ra, rb) in a.quantiles.iter().zip(&b.quantiles) {
        let _ = writeln!(
            out,
            "{:>7}%  {:>12.3}  {:>12.3}  {}",
            ra.q,
            ra.service_ms,
            rb.service_ms,
            delta(ra.service_ms, rb.service_ms)
        );
    }
    // From the intended start (lag + service time), when either run knows its lag.
    let known = |s: &Summary| s.quantiles.iter().any(|r| r.intended_ms.is_some());
    if known(a) || known(b) {
        let _ = writeln!(
            out,
            "\nfrom the intended start\n{:>8}  {:>12}  {:>12}  B − A ms",
            "quantile", "A ms", "B ms"
        );
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        for (ra, rb) in a.quantiles.iter().zip(&b.quantiles) {
            let change = match (ra.intended_ms, rb.intended_ms) {
                (Some(x), Some(y)) => delta(x, y),
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                out,
                "{:>7}%  {:>12}  {:>12}  {change}",
                ra.q,
                ms(ra.intended_ms),
                ms(rb.intended_ms)
            );
        }
    }
    for (label, ca, cb) in [
        ("HTTP code", &a.proto_codes, &b.proto_codes),
        ("net code", &a.net_codes, &b.net_codes),
    ] {
        let _ = writeln!(
            out,
            "\n{label:>9}  {:>10}  {:>10}  {:>10}",
            "A", "B", "B − A"
        );
        let codes: BTreeSet<&String> = ca.keys().chain(cb.keys()).collect();
        for code in codes {
            let (na, nb) = (
                ca.get(code).copied().unwrap_or(0),
                cb.get(code).copied().unwrap_or(0),
            );
            let _ = writeln!(
                out,
                "{code:>9}  {na:>10}  {nb:>10}  {:>+10}",
                nb as i128 - na as i128
            );
        }
    }
    let tags: BTreeSet<&String> = a.tags.iter().chain(&b.tags).map(|t| &t.tag).collect();
    if !tags.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<20} {:>9} {:>9} {:>10} {:>10}  {:<22} p99 B − A",
            "tag", "count A", "count B", "avg A ms", "avg B ms", "avg B − A"
        );
        for tag in tags {
            let ta = a.tags.iter().find(|t| &t.tag == tag);
            let tb = b.tags.iter().find(|t| &t.tag == tag);
            let name = if tag.is_empty() {
                "(no tag)"
            } else {
                tag.as_str()
            };
            let count = |t: Option<&crate::summary::TagRow>| {
                t.map_or("-".to_string(), |t| t.count.to_string())
            };
            let avg = |t: Option<&crate::summary::TagRow>| {
                t.map_or("-".to_string(), |t| format!("{:.3}", t.avg_ms))
            };
            let (avg_delta, p99_delta) = match (ta, tb) {
                (Some(ta), Some(tb)) => {
                    let p99 =
                        |t: &crate::summary::TagRow| t.quantiles_ms.get(7).copied().unwrap_or(0.0);
                    (delta(ta.avg_ms, tb.avg_ms), delta(p99(ta), p99(tb)))
                }
                _ => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{name:<20} {:>9} {:>9} {:>10} {:>10}  {avg_delta:<22} {p99_delta}",
                count(ta),
                count(tb),
                avg(ta),
                avg(tb)
            );
        }
    }
    out
}

/// Two sweeps (their `sweep.json`) side by side: good throughput and p99 at
/// each concurrency either measured, with B − A where both did.
pub fn sweeps_text(a: &serde_json::Value, b: &serde_json::Value) -> String {
    let steps = |s: &serde_json::Value| -> std::collections::BTreeMap<u64, (f64, f64)> {
        s["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|step| {
                Some((
                    step["concurrency"].as_u64()?,
                    (step["achieved_rps"].as_f64()?, step["p99_ms"].as_f64()?),
                ))
            })
            .collect()
    };
    let (sa, sb) = (steps(a), steps(b));
    let mut out = String::new();
    let target = |s: &serde_json::Value| s["target"].as_str().unwrap_or("?").to_owned();
    let knee = |s: &serde_json::Value| {
        s["knee_concurrency"]
            .as_u64()
            .map_or("none".to_owned(), |k| format!("{k} connections"))
    };
    let _ = writeln!(out, "A: sweep of {} (knee {})", target(a), knee(a));
    let _ = writeln!(out, "B: sweep of {} (knee {})\n", target(b), knee(b));
    let _ = writeln!(
        out,
        "{:>6}  {:>10}  {:>10}  {:>18}  {:>10}  {:>10}  B − A p99 ms",
        "conns", "A rps", "B rps", "B − A rps", "A p99 ms", "B p99 ms"
    );
    let concurrencies: std::collections::BTreeSet<u64> =
        sa.keys().chain(sb.keys()).copied().collect();
    let cell = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.2}"));
    for c in concurrencies {
        let (ra, pa) = (sa.get(&c).map(|s| s.0), sa.get(&c).map(|s| s.1));
        let (rb, pb) = (sb.get(&c).map(|s| s.0), sb.get(&c).map(|s| s.1));
        let d = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => delta(x, y),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "{c:>6}  {:>10}  {:>10}  {:>18}  {:>10}  {:>10}  {}",
            cell(ra),
            cell(rb),
            d(ra, rb),
            cell(pa),
            cell(pb),
            d(pa, pb)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample_summary;

    #[test]
    fn text_shows_quantile_code_and_tag_deltas() {
        let a = sample_summary();
        let mut b = sample_summary();
        b.quantiles[0].service_ms = a.quantiles[0].service_ms * 2.0;
        b.proto_codes.insert("404".into(), 5);
        let out = text(&a, &b);
        assert!(out.contains("(+100.0%)"), "{out}");
        assert!(
            out.contains("      404           0           5          +5"),
            "{out}"
        );
        assert!(out.contains("search"), "{out}");
    }

    #[test]
    fn text_compares_latency_from_the_intended_start_too() {
        let a = sample_summary();
        let mut b = sample_summary();
        for (row, intended) in b.quantiles.iter_mut().zip(1..) {
            row.intended_ms = Some(f64::from(intended));
        }
        let out = text(&a, &b);
        let section = out
            .split("from the intended start\n")
            .nth(1)
            .expect("an intended-start table");
        let first = section.lines().nth(1).unwrap();
        assert!(first.trim_start().starts_with("50%"), "{out}");
        assert!(first.contains("1.000"), "{out}");
        // Without lag on either side (phouts) there is nothing to compare.
        assert!(!text(&a, &a).contains("from the intended start"));
    }

    #[test]
    fn runs_load_from_a_summary_dir_or_a_phout() {
        let dir = tempfile::tempdir().unwrap();
        let s = sample_summary();
        std::fs::write(dir.path().join("summary.json"), s.to_json()).unwrap();
        assert_eq!(load_run(dir.path(), 2).unwrap(), s);
        let phout = dir.path().join("phout.log");
        std::fs::write(&phout, "10.0\ta\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200\n").unwrap();
        assert_eq!(load_run(&phout, 2).unwrap().shots.responses, 1);
        std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
        assert!(load_run(dir.path(), 2)
            .unwrap_err()
            .to_string()
            .contains("not a tank summary"));
    }
}
