//! The Prometheus text exposition format (version 0.0.4), read without copying.
//!
//! Only what a scrape needs: `# TYPE` lines (to tell counters) and samples
//! `name{label="value",...} value [timestamp]`. `# HELP` and other comments
//! are skipped. A line that is none of these is an error naming its line, so
//! a page of garbage is a failed scrape (a warning and a gap), not zeros.

use std::borrow::Cow;

/// One sample line, borrowing the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// The metric name.
    pub name: &'a str,
    /// The text between `{` and `}` (empty without labels); read with [`Sample::label`].
    pub labels: &'a str,
    /// The value.
    pub value: f64,
}

impl<'a> Sample<'a> {
    /// The value of label `key`, unescaped.
    pub fn label(&self, key: &str) -> Option<Cow<'a, str>> {
        labels(self.labels)
            .ok()?
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

/// A page: its samples in order and which metric families are counters.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Page<'a> {
    /// Every sample.
    pub samples: Vec<Sample<'a>>,
    /// Names declared `# TYPE name counter`.
    pub counters: Vec<&'a str>,
}

impl Page<'_> {
    /// Whether `name` is a counter: declared so, or named `*_total` as the convention says.
    pub fn is_counter(&self, name: &str) -> bool {
        self.counters.contains(&name) || name.ends_with("_total")
    }
}

/// Reads a page; an error says which line and what was expected.
pub fn parse(text: &str) -> Result<Page<'_>, String> {
    let mut page = Page::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                if let (Some(name), Some("counter")) = (words.next(), words.next()) {
                    page.counters.push(name);
                }
            }
            continue;
        }
        let sample = sample(line).map_err(|m| format!("line {}: {m}", i + 1))?;
        page.samples.push(sample);
    }
    Ok(page)
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

fn sample(line: &str) -> Result<Sample<'_>, String> {
    let end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map_or(line.len(), |(i, _)| i);
    if end == 0 {
        return Err(format!("expected a metric name, found `{}`", short(line)));
    }
    let name = &line[..end];
    let mut rest = &line[end..];
    let mut label_text = "";
    if let Some(after) = rest.strip_prefix('{') {
        let close = closing_brace(after)
            .ok_or_else(|| format!("`{name}`: expected `}}` after the labels"))?;
        label_text = &after[..close];
        labels(label_text).map_err(|m| format!("`{name}`: {m}"))?;
        rest = &after[close + 1..];
    }
    let mut words = rest.split_whitespace();
    let value_text = words
        .next()
        .ok_or_else(|| format!("`{name}`: expected a value"))?;
    let value = value(value_text)
        .ok_or_else(|| format!("`{name}`: expected a number, found `{}`", short(value_text)))?;
    if let Some(ts) = words.next() {
        ts.parse::<i64>().map_err(|_| {
            format!(
                "`{name}`: expected a timestamp in ms, found `{}`",
                short(ts)
            )
        })?;
    }
    if words.next().is_some() {
        return Err(format!("`{name}`: unexpected text after the value"));
    }
    Ok(Sample {
        name,
        labels: label_text,
        value,
    })
}

/// The index of the `}` closing a label set, skipping quoted values.
fn closing_brace(text: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, b) in text.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b'}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

fn value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn short(text: &str) -> String {
    text.chars().take(40).collect()
}

/// `a="x",b="y\"z"` → pairs (a trailing comma is allowed).
fn labels(text: &str) -> Result<Vec<(&str, Cow<'_, str>)>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or_else(|| {
            format!(
                "expected `name=\"value\"` in the labels, found `{}`",
                short(rest)
            )
        })?;
        let key = rest[..eq].trim();
        if key.is_empty()
            || !key
                .chars()
                .enumerate()
                .all(|(i, c)| is_name_char(c, i == 0) && c != ':')
        {
            return Err(format!("expected a label name, found `{}`", short(key)));
        }
        let after = rest[eq + 1..].trim_start();
        let body = after
            .strip_prefix('"')
            .ok_or_else(|| format!("label `{key}`: expected a quoted value"))?;
        let mut escaped = false;
        let mut close = None;
        for (i, b) in body.bytes().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let close = close.ok_or_else(|| format!("label `{key}`: expected a closing quote"))?;
        let raw = &body[..close];
        let value = if raw.contains('\\') {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        };
        out.push((key, value));
        rest = body[close + 1..].trim_start();
        if let Some(after_comma) = rest.strip_prefix(',') {
            rest = after_comma.trim_start();
        } else if !rest.is_empty() {
            return Err(format!(
                "label `{key}`: expected `,` or `}}` after the value"
            ));
        }
    }
    Ok(out)
}

fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PAGE: &str = "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
# TYPE node_cpu_seconds_total counter\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 12345.67\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 1.5e2\n\
node_load1 0.25\n\
weird{path=\"a\\\"b}c\\\\d\",} 1 1700000000000\n\
inf_metric +Inf\n";

    #[test]
    fn reads_samples_labels_and_types() {
        let page = parse(PAGE).unwrap();
        assert_eq!(page.samples.len(), 5);
        assert_eq!(page.counters, ["node_cpu_seconds_total"]);
        let s = &page.samples[1];
        assert_eq!((s.name, s.value), ("node_cpu_seconds_total", 150.0));
        assert_eq!(s.label("mode").as_deref(), Some("user"));
        assert_eq!(s.label("cpu").as_deref(), Some("0"));
        assert_eq!(page.samples[3].label("path").as_deref(), Some("a\"b}c\\d"));
        assert!(page.samples[4].value.is_infinite());
        assert!(page.is_counter("node_cpu_seconds_total") && page.is_counter("x_total"));
        assert!(!page.is_counter("node_load1"));
    }

    #[test]
    fn garbage_is_an_error_naming_the_line() {
        let e = parse("ok 1\n<html>404</html>\n").unwrap_err();
        assert!(e.starts_with("line 2: expected a metric name"), "{e}");
        let e = parse("a{b=\"c\" 1\n").unwrap_err();
        assert!(e.contains("expected `}`"), "{e}");
        let e = parse("a one\n").unwrap_err();
        assert!(e.contains("expected a number"), "{e}");
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn written_samples_read_back(
            name in "[a-z_][a-z0-9_]{0,20}",
            labels in proptest::collection::vec(("[a-z_][a-z0-9_]{0,8}", "[ -~]{0,12}"), 0..4),
            value in -1e12f64..1e12,
        ) {
            let escaped: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
                .collect();
            let line = format!("{name}{{{}}} {value}\n", escaped.join(","));
            let page = parse(&line).unwrap();
            prop_assert_eq!(page.samples.len(), 1);
            prop_assert_eq!(page.samples[0].name, name.as_str());
            prop_assert_eq!(page.samples[0].value, value);
            for (k, v) in &labels {
                // The first of duplicate keys wins.
                let first = labels.iter().find(|(k2, _)| k2 == k).map(|(_, v)| v.clone());
                prop_assert_eq!(page.samples[0].label(k).map(|c| c.into_owned()), first.clone());
                let _ = v;
            }
        }
    }
}
