//! `[influx]` and `[prometheus]`: where tank sends each finished second.
//!
//! `[influx]` takes yandex-tank's InfluxUploader options unchanged (same
//! defaults), so a config written for yandex-tank sends the same points to
//! the same database; tank adds `api_version = 2` with `org`, `bucket` and
//! `token` for InfluxDB 2.x. `[prometheus]` is tank's own: where to serve
//! `/metrics` while the test runs.

use std::net::SocketAddr;

use crate::convert;
use crate::error::ConfigError;
use crate::model::{InfluxApi, InfluxConfig, PrometheusConfig};
use crate::queue::entry_error;
use crate::raw::{RawSection, RawValue};

/// Where `/metrics` is served unless `listen` says otherwise: loopback only.
const DEFAULT_PROMETHEUS_LISTEN: &str = "127.0.0.1:9464";

/// A string option of `section`, `None` when absent or null.
fn string(section: &RawSection, key: &str) -> Result<Option<String>, ConfigError> {
    match section.get(key) {
        Some(entry) => {
            convert::string(&entry.value).map_err(|m| entry_error(&section.name, entry, m))
        }
        None => Ok(None),
    }
}

fn boolean(section: &RawSection, key: &str, default: bool) -> Result<bool, ConfigError> {
    match section.get(key) {
        Some(entry) => Ok(convert::boolean(&entry.value)
            .map_err(|m| entry_error(&section.name, entry, m))?
            .unwrap_or(default)),
        None => Ok(default),
    }
}

/// An integer option within `range`.
fn bounded(
    section: &RawSection,
    key: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, ConfigError> {
    let Some(entry) = section.get(key) else {
        return Ok(default);
    };
    let value = convert::integer(&entry.value)
        .map_err(|m| entry_error(&section.name, entry, m))?
        .unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        let message = format!(
            "expected an integer from {} to {}, found {value}",
            range.start(),
            range.end()
        );
        Err(entry_error(&section.name, entry, message))
    }
}

/// Reads an enabled `[influx]` section.
pub(crate) fn read_influx(section: &RawSection) -> Result<InfluxConfig, ConfigError> {
    let text = |key: &str, default: &str| -> Result<String, ConfigError> {
        Ok(string(section, key)?.unwrap_or_else(|| default.to_owned()))
    };
    let database = text("database", "mydb")?;
    let api = match bounded(section, "api_version", 1, 1..=2)? {
        1 => InfluxApi::V1,
        _ => {
            let token = string(section, "token")?.unwrap_or_default();
            if token.is_empty() {
                return Err(ConfigError::new(
                    "api_version = 2 needs `token` (an InfluxDB 2.x API token with write access)",
                )
                .at(section.place)
                .in_section(&section.name));
            }
            InfluxApi::V2 {
                org: text("org", "")?,
                bucket: string(section, "bucket")?.unwrap_or_else(|| database.clone()),
                token,
            }
        }
    };
    Ok(InfluxConfig {
        address: text("address", "localhost")?,
        port: bounded(section, "port", 8086, 1..=65535)? as u16,
        database,
        username: text("username", "root")?,
        password: text("password", "root")?,
        tank_tag: text("tank_tag", "unknown")?,
        labeled: boolean(section, "labeled", false)?,
        histograms: boolean(section, "histograms", false)?,
        prefix_measurement: text("prefix_measurement", "")?,
        custom_tags: custom_tags(section)?,
        chunk_size: bounded(section, "chunk_size", 500_000, 1024..=1 << 30)? as usize,
        api,
    })
}

/// `custom_tags`: a YAML/TOML map (flattened into `custom_tags.NAME` keys), or
/// in INI a Python-dict-like `{'a': 'b', "c": "d"}`.
fn custom_tags(section: &RawSection) -> Result<Vec<(String, String)>, ConfigError> {
    let mut tags = Vec::new();
    for entry in &section.entries {
        if let Some(name) = entry.key.strip_prefix("custom_tags.") {
            let value = convert::string(&entry.value)
                .map_err(|m| entry_error(&section.name, entry, m))?
                .unwrap_or_default();
            tags.push((name.to_owned(), value));
        }
    }
    if let Some(entry) = section.get("custom_tags") {
        match &entry.value {
            RawValue::Null => {}
            RawValue::Str(text) => {
                tags.extend(parse_dict(text).map_err(|m| entry_error(&section.name, entry, m))?)
            }
            other => {
                let message = format!("expected a map of tags, found {}", other.type_name());
                return Err(entry_error(&section.name, entry, message));
            }
        }
    }
    Ok(tags)
}

/// `{'a': 'b', "c": 1}` → pairs; `{}` or empty → none.
fn parse_dict(text: &str) -> Result<Vec<(String, String)>, String> {
    let inner = text.trim();
    if inner.is_empty() {
        return Ok(Vec::new());
    }
    let inner = inner
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(|| format!("expected a map like {{'name': 'value'}}, found `{text}`"))?;
    let unquote = |s: &str| s.trim().trim_matches(['\'', '"']).to_owned();
    inner
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (k, v) = pair
                .split_once(':')
                .ok_or_else(|| format!("expected `name: value` in custom_tags, found `{pair}`"))?;
            Ok((unquote(k), unquote(v)))
        })
        .collect()
}

/// Reads an enabled `[prometheus]` section.
pub(crate) fn read_prometheus(section: &RawSection) -> Result<PrometheusConfig, ConfigError> {
    let listen = match (section.get("listen"), string(section, "listen")?) {
        (Some(entry), Some(text)) if !text.trim().is_empty() => {
            text.trim().parse::<SocketAddr>().map_err(|_| {
                let message = format!(
                    "expected an address like 127.0.0.1:9464 (IP and port), found `{text}`"
                );
                entry_error(&section.name, entry, message)
            })?
        }
        _ => DEFAULT_PROMETHEUS_LISTEN
            .parse()
            .map_err(|_| ConfigError::new("internal: bad default listen address"))?,
    };
    let linger = match section.get("linger") {
        Some(entry) => {
            let text = convert::string(&entry.value)
                .map_err(|m| entry_error(&section.name, entry, m))?
                .unwrap_or_default();
            (!text.trim().is_empty())
                .then(|| {
                    crate::search::parse_duration(&text)
                        .map_err(|m| entry_error(&section.name, entry, m))
                })
                .transpose()?
        }
        None => None,
    };
    Ok(PrometheusConfig { listen, linger })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_dicts_become_tag_pairs() {
        assert_eq!(
            parse_dict("{'dc': 'eu', \"team\": \"web\"}").unwrap(),
            vec![("dc".into(), "eu".into()), ("team".into(), "web".into())]
        );
        assert_eq!(parse_dict("{}").unwrap(), vec![]);
        assert!(parse_dict("dc=eu").unwrap_err().contains("expected a map"));
    }
}
