//! The HTML report: one self-contained file (inline CSS, inline JS, data as inline JSON;
//! no external scripts, fonts or network) that draws its charts as SVG in the browser.
//!
//! The page holds the [`Summary`] as JSON in a `<script type="application/json">` element;
//! `report.js` draws from it. When drawing is done the script sets `data-status="ok"` on
//! `<body>` (or `error: ...`), which the headless-browser test checks.

use serde_json::json;
use tank_stats::NetCode;

use crate::summary::Summary;

/// The charts and tables every page draws with (the live dashboard's too).
pub const CHART_SCRIPT: &str = include_str!("chart.js");
/// The pages' look (the live dashboard's too).
pub const STYLE: &str = include_str!("report.css");
const REPORT_SCRIPT: &str = include_str!("report.js");

/// `page_script` and the chart functions it uses, as one strict-mode function
/// run at once: the names stay the page's own.
pub fn script(page_script: &str) -> String {
    format!("(function () {{\n\"use strict\";\n{CHART_SCRIPT}\n{page_script}\n}})();\n")
}

/// The report page of one run.
pub fn report(summary: &Summary) -> String {
    // The proto codes' names and heading by what they are (a MySQL run's are no HTTP statuses).
    let kind = summary.codes();
    let http: serde_json::Map<String, serde_json::Value> = summary
        .proto_codes
        .keys()
        .filter_map(|c| {
            c.parse::<u16>()
                .ok()
                .map(|code| (c.clone(), json!(kind.reason(code))))
        })
        .collect();
    let net: serde_json::Map<String, serde_json::Value> = summary
        .net_codes
        .keys()
        .filter_map(|c| {
            c.parse::<u16>()
                .ok()
                .map(|code| (c.clone(), json!(NetCode(code).describe())))
        })
        .collect();
    let data = json!({ "kind": "report", "summary": summary,
                "names": { "http": http, "net": net, "proto": kind.short() } });
    let title = summary
        .meta
        .job
        .job_name
        .as_deref()
        .unwrap_or(&summary.meta.title);
    page(&format!("tank report — {title}"), &data)
}

/// The comparison page of two runs: quantiles and codes side by side, overlaid charts.
pub fn compare(a: &Summary, b: &Summary) -> String {
    let data = json!({ "kind": "compare", "a": a, "b": b });
    page(
        &format!("tank compare — {} vs {}", a.meta.title, b.meta.title),
        &data,
    )
}

/// The comparison page of two sweeps (their `sweep.json`): throughput and
/// p99 against concurrency, overlaid.
pub fn compare_sweeps(a: &serde_json::Value, b: &serde_json::Value) -> String {
    let target = |s: &serde_json::Value| s["target"].as_str().unwrap_or("?").to_owned();
    page(
        &format!("tank compare — sweep of {} vs {}", target(a), target(b)),
        &json!({ "kind": "compare_sweeps", "a": a, "b": b }),
    )
}

/// The page of a search, scan or sweep (`data` has `kind`: `search`, `scan`
/// or `sweep`, and its probes or steps): a chart of rate and latency per probe.
pub fn limit(title: &str, data: &serde_json::Value) -> String {
    page(title, &json!({ "kind": "limit", "limit": data }))
}

fn page(title: &str, data: &serde_json::Value) -> String {
    // `</` inside the JSON would end the script element early; `<\/` is the same JSON string.
    let data = data.to_string().replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <header><h1 id=\"title\">{title}</h1></header>\n<main id=\"content\"></main>\n\
         <script type=\"application/json\" id=\"tank-data\">{data}</script>\n\
         <script>\n{script}</script>\n</body>\n</html>\n",
        title = escape(title),
        script = script(REPORT_SCRIPT),
    )
}

/// Escape text for HTML (element text and attribute values).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample_summary;

    #[test]
    fn page_is_self_contained_and_carries_the_data() {
        let mut s = sample_summary();
        s.meta.title = "a </script> & b".into();
        s.shots.retries = Some(3);
        let html = report(&s);
        assert!(!html.contains("src="), "no external scripts");
        // The only URL is the SVG namespace name, which is never fetched.
        assert_eq!(
            html.matches("http://").count(),
            html.matches("http://www.w3.org/2000/svg").count()
        );
        assert!(!html.contains("https://"), "no external assets");
        assert!(html.contains("a &lt;/script&gt; &amp; b"));
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "the title cannot close a script"
        );
        let json_start = html.find("id=\"tank-data\">").unwrap() + "id=\"tank-data\">".len();
        let json_end = json_start + html[json_start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&html[json_start..json_end]).unwrap();
        assert_eq!(data["summary"]["shots"]["responses"], 3);
        assert_eq!(data["summary"]["shots"]["retries"], 3);
        assert_eq!(data["names"]["net"]["110"], "timed out");
        assert_eq!(data["names"]["proto"], "HTTP codes");
    }

    #[test]
    fn a_mysql_runs_codes_are_named_as_mysql_errors() {
        let mut s = sample_summary();
        s.proto_codes = [("200".to_string(), 2), ("1045".to_string(), 1)].into();
        let html = report(&s);
        assert!(html.contains(r#""proto":"MySQL codes""#), "{html}");
        assert!(html.contains(r#""1045":"access denied""#), "{html}");
    }
}
