//! `[telegraf]` / `[monitoring]`: which host list to read, as yandex-tank's Telegraf plugin.
//!
//! `config` is `auto` (the default: the target host with the default
//! metrics), `none` (off), inline XML (`<Monitoring>...`), a path to an XML or
//! YAML file, or (YAML/TOML configs) the YAML form itself as a map. The host
//! list is read by [`crate::monitoring_hosts`]. Both sections at once is an
//! error, as in yandex-tank; the SSH options are warnings.

use std::path::{Path, PathBuf};

use crate::convert;
use crate::error::ConfigError;
use crate::model::{MonitoringConfig, QueueConfig, ORIGIN_ADDRESS};
use crate::monitoring_hosts::{self, HostSpec, TARGET_PLACEHOLDER};
use crate::queue::entry_error;
use crate::raw::{RawSection, RawValue};

/// Reads the enabled monitoring sections (at most one may be given).
/// `first` is the first queue: its address is what `[target]` means.
pub(crate) fn read(
    sections: &[&RawSection],
    first: &QueueConfig,
    config_path: &Path,
) -> Result<Option<MonitoringConfig>, ConfigError> {
    let section = match sections {
        [] => return Ok(None),
        [one] => *one,
        [_, second, ..] => return Err(ConfigError::new(
            "both [telegraf] and [monitoring] are given; keep one of them (as yandex-tank asks)",
        )
        .at(second.place)
        .in_section(&second.name)),
    };
    let mut warnings = Vec::new();
    for key in ["ssh_timeout", "ssh_key_path", "kill_old", "config_contents"] {
        if section.get(key).is_some() {
            warnings.push(format!(
                "[{}] {key}: tank collects without SSH (node_exporter, /proc) and ignores it",
                section.name
            ));
        }
    }
    if let Some(entry) = section.get("disguise_hostnames") {
        if convert::boolean(&entry.value).ok().flatten() == Some(true) {
            warnings.push(format!(
                "[{}] disguise_hostnames: tank writes host names as they are (it uploads nothing)",
                section.name
            ));
        }
    }
    let target = target_host(first);
    let mut file = None;
    let specs = match section.get("config") {
        None => Some(default_hosts()),
        Some(entry) => {
            let fail = |m: String| entry_error(&section.name, entry, m);
            match &entry.value {
                RawValue::Table(_) => Some(monitoring_hosts::from_raw(&entry.value).map_err(fail)?),
                RawValue::Null => Some(default_hosts()),
                other => {
                    let text = convert::string(other).map_err(fail)?.unwrap_or_default();
                    hosts_from_text(text.trim(), config_path, &mut file).map_err(fail)?
                }
            }
        }
    };
    let Some(specs) = specs else {
        return Ok(None);
    };
    let hosts = specs
        .iter()
        .map(|spec| monitoring_hosts::build(spec, &target, &mut warnings))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|m| {
            let message = format!("the monitoring config: {m}");
            match section.get("config") {
                Some(entry) => entry_error(&section.name, entry, message),
                None => ConfigError::new(message).in_section(&section.name),
            }
        })?;
    Ok(Some(MonitoringConfig {
        section: section.name.clone(),
        hosts,
        warnings,
        file,
    }))
}

/// `config = auto`: yandex-tank's default config, the target with the default metrics.
fn default_hosts() -> Vec<HostSpec> {
    vec![HostSpec {
        address: TARGET_PLACEHOLDER.to_owned(),
        ..HostSpec::default()
    }]
}

/// `none` → `None`; `auto`; inline XML; else a file (XML if it starts with
/// `<`, YAML otherwise), whose path goes to `file`.
fn hosts_from_text(
    text: &str,
    config_path: &Path,
    file: &mut Option<PathBuf>,
) -> Result<Option<Vec<HostSpec>>, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    if text.is_empty() || text.eq_ignore_ascii_case("auto") {
        return Ok(Some(default_hosts()));
    }
    if text.starts_with('<') {
        return monitoring_hosts::parse_xml(text)
            .map(Some)
            .map_err(|m| format!("inline XML: {m}"));
    }
    let path = convert::expand_user(text);
    let contents = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the monitoring config {} ({e}; a path is taken relative to the \
             working directory, as yandex-tank does; the test config is {})",
            path.display(),
            config_path.display()
        )
    })?;
    *file = Some(path.clone());
    let parsed = if contents.trim_start().starts_with('<') {
        monitoring_hosts::parse_xml(&contents)
    } else {
        monitoring_hosts::parse_yaml(&contents)
    };
    parsed
        .map(Some)
        .map_err(|m| format!("{}: {m}", path.display()))
}

/// The host part of the first queue's address (`origin` is this machine).
fn target_host(first: &QueueConfig) -> String {
    let address = first.address.trim();
    if address == ORIGIN_ADDRESS {
        return "localhost".to_owned();
    }
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest).to_owned();
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host.to_owned()
        }
        _ => address.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use crate::model::HostSource;
    use std::path::Path;

    fn load(text: &str, name: &str) -> Result<crate::TestConfig, crate::ConfigError> {
        let format = crate::format_from_extension(Path::new(name)).unwrap();
        crate::load_str(text, format, Path::new(name), &[])
    }

    const PHANTOM: &str =
        "[phantom]\naddress = web.example:8080\nrps_schedule = const(1,1s)\nuris = /\n";

    #[test]
    fn an_empty_section_watches_the_target_node_exporter() {
        let c = load(&format!("{PHANTOM}[telegraf]\n"), "l.ini").unwrap();
        let m = c.monitoring.unwrap();
        assert_eq!(m.hosts[0].address, "web.example");
        assert_eq!(
            m.hosts[0].source,
            HostSource::NodeExporter {
                url: "http://web.example:9100/metrics".into()
            }
        );
    }

    #[test]
    fn inline_xml_none_and_ssh_options() {
        let c = load(
            &format!(
                "{PHANTOM}[monitoring]\nconfig = <Monitoring><Host address=\"localhost\"><CPU/></Host></Monitoring>\nssh_timeout = 5s\n"
            ),
            "l.ini",
        )
        .unwrap();
        let m = c.monitoring.unwrap();
        assert_eq!(m.section, "monitoring");
        assert_eq!(m.hosts[0].source, HostSource::Local);
        assert!(m.warnings[0].contains("ssh_timeout"), "{:?}", m.warnings);
        let c = load(&format!("{PHANTOM}[telegraf]\nconfig = none\n"), "l.ini").unwrap();
        assert!(c.monitoring.is_none());
        let c = load(&format!("{PHANTOM}[telegraf]\nenabled = 0\n"), "l.ini").unwrap();
        assert!(c.monitoring.is_none());
    }

    #[test]
    fn a_missing_file_and_both_sections_are_errors() {
        let e = load(
            &format!("{PHANTOM}[telegraf]\nconfig = /nonexistent/mon.xml\n"),
            "l.ini",
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("config"));
        assert!(e.message().contains("/nonexistent/mon.xml"), "{e}");
        let e = load(&format!("{PHANTOM}[telegraf]\n[monitoring]\n"), "l.ini").unwrap_err();
        assert!(e.message().contains("keep one"), "{e}");
    }

    #[test]
    fn the_yaml_form_inline_in_a_yaml_config() {
        let yaml = "phantom:\n  address: 127.0.0.1:80\n  load_profile:\n    load_type: rps\n    schedule: const(1,1s)\n  uris: [/]\ntelegraf:\n  enabled: true\n  config:\n    hosts:\n      localhost:\n        interval: 1\n      db.example.com:\n        metrics_url: http://10.0.0.1:9100/metrics\n    metrics:\n      cpu:\n";
        let c = load(yaml, "l.yaml").unwrap();
        let m = c.monitoring.unwrap();
        assert_eq!(m.hosts.len(), 2);
        assert_eq!(m.hosts[1].address, "db.example.com");
        assert!(m.hosts[1].groups.cpu && !m.hosts[1].groups.memory);
    }

    #[test]
    fn a_monitoring_file_is_read_relative_to_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("mon.xml");
        std::fs::write(
            &xml,
            "<Monitoring>\n<Host address=\"x\">\n<Process/>\n</Host></Monitoring>",
        )
        .unwrap();
        let e = load(
            &format!("{PHANTOM}[telegraf]\nconfig = {}\n", xml.display()),
            "l.ini",
        )
        .unwrap_err();
        assert!(e.message().contains("line 3: <Process>"), "{e}");
    }

    #[test]
    fn influx_and_prometheus_sections() {
        let c = load(
            &format!(
                "{PHANTOM}[influx]\naddress = 127.0.0.1\nport = 8087\ntank_tag = t1\nlabeled = 1\ncustom_tags = {{'dc': 'eu'}}\n[prometheus]\nlisten = 127.0.0.1:0\n"
            ),
            "l.ini",
        )
        .unwrap();
        let influx = c.influx.unwrap();
        assert_eq!((influx.port, influx.tank_tag.as_str()), (8087, "t1"));
        assert!(influx.labeled);
        assert_eq!(influx.custom_tags, [("dc".to_owned(), "eu".to_owned())]);
        assert_eq!(influx.api, crate::InfluxApi::V1);
        assert_eq!(c.prometheus.unwrap().listen.ip().to_string(), "127.0.0.1");
        let e = load(&format!("{PHANTOM}[influx]\napi_version = 2\n"), "l.ini").unwrap_err();
        assert!(e.message().contains("token"), "{e}");
        let e = load(
            &format!("{PHANTOM}[prometheus]\nlisten = everywhere\n"),
            "l.ini",
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("listen"));
    }
}
