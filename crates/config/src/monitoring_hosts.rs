//! yandex-tank's monitoring host list, in its two spellings, into [`MonitoredHost`]s.
//!
//! The XML form (`<Monitoring><Host address=.. interval=..><CPU percpu="true"/>
//! <Memory/>...</Host></Monitoring>`) and the YAML form (`hosts: {NAME: {..}}`,
//! `metrics: {cpu: .., custom: {cmd: .., label: ..}}`) are first read into the
//! same [`HostSpec`] (element or key names with their attributes, as
//! yandex-tank's `config_parser.py` does), then turned into what tank collects.
//!
//! yandex-tank installs telegraf on each host over SSH; tank reads what the
//! host already exposes instead (see [`HostSource`]). What only makes sense
//! with SSH (`port`, `username`, `python`, `telegraf`, `<Startup>`,
//! `<Source>`, ...) is a warning naming it, never an error, so a yandex-tank
//! file loads unchanged.

use crate::model::{
    CustomCommand, HostSource, MetricGroups, MonitoredHost, ProcessSelector, PrometheusScrape,
};
use crate::raw::RawValue;

/// yandex-tank's placeholder for the test's target host.
pub(crate) const TARGET_PLACEHOLDER: &str = "[target]";
/// node_exporter's port, where a host's metrics are looked for by default.
const NODE_EXPORTER_PORT: u16 = 9100;
/// Addresses whose metrics tank reads from its own /proc.
const LOCAL_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1", "local"];

/// A host as written: its attributes and its metric elements, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct HostSpec {
    /// `address` (XML) or the key under `hosts` (YAML), lower-cased.
    pub address: String,
    /// The other attributes, names lower-cased.
    pub attrs: Vec<(String, String)>,
    /// The metric elements.
    pub metrics: Vec<MetricSpec>,
    /// Where the host starts (1-based line), when known.
    pub line: Option<usize>,
}

/// One metric element (`<CPU percpu="true"/>`, `<Custom label="x">cmd</Custom>`).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MetricSpec {
    /// The element name as written.
    pub name: String,
    /// Attributes, names lower-cased.
    pub attrs: Vec<(String, String)>,
    /// The element's text (a command for `<Custom>`).
    pub text: String,
    /// Where it is (1-based line), when known.
    pub line: Option<usize>,
}

impl MetricSpec {
    fn attr(&self, name: &str) -> Option<&str> {
        attr(&self.attrs, name)
    }

    fn at(&self) -> String {
        self.line.map_or(String::new(), |l| format!("line {l}: "))
    }
}

fn attr<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Reads the XML form. Errors name the line.
pub(crate) fn parse_xml(text: &str) -> Result<Vec<HostSpec>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("invalid XML: {e}"))?;
    let line = |node: roxmltree::Node<'_, '_>| doc.text_pos_at(node.range().start).row as usize;
    let mut hosts = Vec::new();
    for host in doc
        .root_element()
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "Host")
    {
        let mut spec = HostSpec {
            line: Some(line(host)),
            ..HostSpec::default()
        };
        for a in host.attributes() {
            let name = a.name().to_ascii_lowercase();
            if name == "address" {
                spec.address = a.value().to_lowercase();
            } else {
                spec.attrs.push((name, a.value().to_owned()));
            }
        }
        for metric in host.children().filter(roxmltree::Node::is_element) {
            spec.metrics.push(MetricSpec {
                name: metric.tag_name().name().to_owned(),
                attrs: metric
                    .attributes()
                    .map(|a| (a.name().to_ascii_lowercase(), a.value().to_owned()))
                    .collect(),
                text: metric.text().unwrap_or_default().trim().to_owned(),
                line: Some(line(metric)),
            });
        }
        hosts.push(spec);
    }
    Ok(hosts)
}

/// Reads the YAML form from text (a monitoring `.yaml` file).
pub(crate) fn parse_yaml(text: &str) -> Result<Vec<HostSpec>, String> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text)
        .map_err(|e| format!("invalid YAML at line {}: {}", e.marker().line(), e.info()))?;
    let value = docs.first().map_or(RawValue::Null, yaml_to_raw);
    from_raw(&value)
}

fn yaml_to_raw(yaml: &yaml_rust2::Yaml) -> RawValue {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(r) => r.parse().map_or(RawValue::Str(r.clone()), RawValue::Float),
        Yaml::Integer(i) => RawValue::Int(*i),
        Yaml::String(s) => RawValue::Str(s.clone()),
        Yaml::Boolean(b) => RawValue::Bool(*b),
        Yaml::Array(items) => RawValue::List(items.iter().map(yaml_to_raw).collect()),
        Yaml::Hash(map) => RawValue::Table(
            map.iter()
                .map(|(k, v)| crate::raw::RawEntry {
                    key: scalar_text(&yaml_to_raw(k)),
                    value: yaml_to_raw(v),
                    place: crate::error::Place::Unknown,
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => RawValue::Null,
    }
}

fn scalar_text(value: &RawValue) -> String {
    match value {
        RawValue::Str(s) => s.clone(),
        RawValue::Int(i) => i.to_string(),
        RawValue::Float(f) => f.to_string(),
        RawValue::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

fn table(value: &RawValue, what: &str) -> Result<Vec<(String, RawValue)>, String> {
    match value {
        RawValue::Table(entries) => Ok(entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect()),
        RawValue::Null => Ok(Vec::new()),
        other => Err(format!(
            "{what}: expected a map, found {}",
            other.type_name()
        )),
    }
}

/// Reads the YAML form already parsed (a YAML config's inline `config:` map),
/// as yandex-tank's `parse_yaml`: `metrics` apply to every host, a host's own
/// `metrics` add to or replace them; no `hosts` means `[target]`.
pub(crate) fn from_raw(value: &RawValue) -> Result<Vec<HostSpec>, String> {
    let top = table(value, "the monitoring config")?;
    let get = |key: &str| top.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let global = match get("metrics") {
        Some(v) => table(v, "metrics")?,
        None => Vec::new(),
    };
    let mut hosts = match get("hosts") {
        Some(v) => table(v, "hosts")?,
        None => Vec::new(),
    };
    if hosts.is_empty() {
        hosts.push((TARGET_PLACEHOLDER.to_owned(), RawValue::Null));
    }
    let mut specs = Vec::new();
    for (name, data) in hosts {
        let data = table(&data, &format!("hosts.{name}"))?;
        let mut metrics = global.clone();
        let mut spec = HostSpec {
            address: name.to_lowercase(),
            ..HostSpec::default()
        };
        for (key, value) in data {
            if key == "metrics" {
                for (metric, options) in table(&value, &format!("hosts.{name}.metrics"))? {
                    match metrics.iter_mut().find(|(m, _)| *m == metric) {
                        Some(slot) => slot.1 = options,
                        None => metrics.push((metric, options)),
                    }
                }
            } else {
                spec.attrs
                    .push((key.to_ascii_lowercase(), scalar_text(&value)));
            }
        }
        for (metric, options) in metrics {
            let mut m = MetricSpec {
                name: metric.clone(),
                ..MetricSpec::default()
            };
            match &options {
                RawValue::Table(_) => {
                    for (k, v) in table(&options, &metric)? {
                        if metric.eq_ignore_ascii_case("custom") && k == "cmd" {
                            m.text = scalar_text(&v);
                        } else {
                            m.attrs.push((k.to_ascii_lowercase(), scalar_text(&v)));
                        }
                    }
                }
                other => m.text = scalar_text(other),
            }
            spec.metrics.push(m);
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// What a host spec means for tank. `target` replaces `[target]`; what tank
/// cannot do is added to `warnings`.
pub(crate) fn build(
    spec: &HostSpec,
    target: &str,
    warnings: &mut Vec<String>,
) -> Result<MonitoredHost, String> {
    let at = spec.line.map_or(String::new(), |l| format!("line {l}: "));
    let address = match spec.address.as_str() {
        TARGET_PLACEHOLDER => target.to_lowercase(),
        "" => return Err(format!("{at}<Host> without an address")),
        other => other.to_owned(),
    };
    let mut interval_ms = 1000;
    let mut comment = String::new();
    let mut metrics_url = None;
    for (name, value) in &spec.attrs {
        match name.as_str() {
            "interval" => interval_ms = interval(value).map_err(|m| format!("{at}{m}"))?,
            "comment" => comment = value.clone(),
            "metrics_url" => metrics_url = Some(value.trim().to_owned()),
            "port" | "username" | "python" | "telegraf" | "ssh_key_path" | "ssh_timeout" => {
                warnings.push(format!(
                    "host {address}: `{name}` is for yandex-tank's SSH agent; tank reads the \
                     host's node_exporter instead and ignores it"
                ))
            }
            other => warnings.push(format!(
                "host {address}: unknown attribute `{other}` ignored (tank knows address, \
                 interval, comment, metrics_url)"
            )),
        }
    }
    let local = LOCAL_NAMES.contains(&address.as_str());
    let source = match metrics_url {
        Some(url) if url.eq_ignore_ascii_case("none") => HostSource::None,
        Some(url) => {
            if !url.starts_with("http://") {
                return Err(format!(
                    "{at}metrics_url: expected an http:// URL (or `none`), found `{url}`"
                ));
            }
            HostSource::NodeExporter { url }
        }
        None if local => HostSource::Local,
        None => {
            let host = if address.contains(':') && !address.starts_with('[') {
                format!("[{address}]")
            } else {
                address.clone()
            };
            HostSource::NodeExporter {
                url: format!("http://{host}:{NODE_EXPORTER_PORT}/metrics"),
            }
        }
    };
    let mut groups = MetricGroups::default();
    let mut custom = Vec::new();
    let mut processes = Vec::new();
    let mut prometheus = Vec::new();
    let mut any_group = false;
    for metric in &spec.metrics {
        let name = metric.name.to_ascii_lowercase();
        let mut group = true;
        match name.as_str() {
            "cpu" => {
                groups.cpu = true;
                groups.percpu = match metric.attr("percpu") {
                    Some(v) => truthy(v),
                    None => true,
                };
            }
            "memory" | "mem" => groups.memory = true,
            "disk" | "diskio" => {
                groups.disk = true;
                groups.devices = metric.attr("devices").map(names).unwrap_or_default();
            }
            "net" => {
                groups.net = true;
                groups.interfaces = metric.attr("interfaces").map(names).unwrap_or_default();
            }
            "netstat" => groups.netstat = true,
            "nstat" => groups.nstat = true,
            "system" => groups.system = true,
            "kernel" => groups.kernel = true,
            _ => group = false,
        }
        if group {
            any_group = true;
            continue;
        }
        match name.as_str() {
            "custom" => {
                if metric.text.is_empty() {
                    return Err(format!("{}<Custom> without a command", metric.at()));
                }
                custom.push(CustomCommand {
                    command: metric.text.clone(),
                    label: metric
                        .attr("label")
                        .map_or_else(|| format!("custom{}", custom.len()), str::to_owned),
                    diff: metric.attr("diff").is_some_and(truthy),
                });
            }
            "process" => {
                if !local {
                    return Err(format!(
                        "{}<Process> watches a process of this machine, so it belongs under a \
                         local host (address=\"localhost\"), not {address}",
                        metric.at()
                    ));
                }
                processes.push(process(metric)?);
            }
            "prometheus" => prometheus.push(scrape(metric)?),
            "startup" | "shutdown" | "source" | "telegrafraw" => warnings.push(format!(
                "host {address}: <{}> runs on the host through yandex-tank's SSH agent; \
                 tank does not, and ignores it",
                metric.name
            )),
            "kernelvmstat" | "kernel_vmstat" | "netresponse" | "net_response" => {
                warnings.push(format!(
                    "host {address}: <{}> is not collected by tank (it knows CPU, Memory, Disk, \
                     Net, Netstat, Nstat, System, Kernel, Custom, Process, Prometheus)",
                    metric.name
                ))
            }
            _ => warnings.push(format!(
                "host {address}: unknown metric <{}> ignored (tank knows CPU, Memory, Disk, Net, \
                 Netstat, Nstat, System, Kernel, Custom, Process, Prometheus)",
                metric.name
            )),
        }
    }
    if !any_group {
        // yandex-tank's default set when a host names no group.
        groups = MetricGroups {
            cpu: true,
            percpu: true,
            memory: true,
            disk: true,
            net: true,
            system: true,
            kernel: true,
            ..MetricGroups::default()
        };
    }
    Ok(MonitoredHost {
        address,
        source,
        interval_ms,
        comment,
        groups,
        custom,
        processes,
        prometheus,
    })
}

fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// telegraf's list (`["eth0","eth1"]`) or a plain one (`eth0, eth1`).
fn names(value: &str) -> Vec<String> {
    value
        .split([',', ' ', '[', ']'])
        .map(|n| n.trim().trim_matches(['"', '\'']))
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `interval`: seconds (`1`, `0.5`, `5s`) or milliseconds (`500ms`); 100 ms to 1 hour.
fn interval(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix("ms") {
        Some(n) => (n, 1.0),
        None => (t.strip_suffix('s').unwrap_or(t), 1000.0),
    };
    let ms = number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
        .ok_or_else(|| format!("interval: expected seconds like 1 or 5s, found `{text}`"))?;
    if !(100.0..=3_600_000.0).contains(&ms) {
        return Err(format!(
            "interval: expected from 100ms to 1 hour, found `{text}`"
        ));
    }
    Ok(ms.round() as u64)
}

fn process(metric: &MetricSpec) -> Result<ProcessSelector, String> {
    match (metric.attr("pid"), metric.attr("name")) {
        (Some(pid), None) => pid.trim().parse().map(ProcessSelector::Pid).map_err(|_| {
            format!(
                "{}<Process pid=...>: expected a process id, found `{pid}`",
                metric.at()
            )
        }),
        (None, Some(name)) if !name.trim().is_empty() => {
            Ok(ProcessSelector::Name(name.trim().to_owned()))
        }
        _ => Err(format!(
            "{}<Process>: expected exactly one of pid=\"1234\" or name=\"nginx\"",
            metric.at()
        )),
    }
}

fn scrape(metric: &MetricSpec) -> Result<PrometheusScrape, String> {
    let url = metric.attr("url").unwrap_or_default().trim().to_owned();
    if !url.starts_with("http://") {
        return Err(format!(
            "{}<Prometheus>: expected url=\"http://HOST:PORT/metrics\", found `{url}`",
            metric.at()
        ));
    }
    let metrics = metric.attr("metrics").map(names).unwrap_or_default();
    if metrics.is_empty() {
        return Err(format!(
            "{}<Prometheus>: expected metrics=\"name1,name2\" (the metric names to keep)",
            metric.at()
        ));
    }
    Ok(PrometheusScrape { url, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from yandex-tank's documentation (Telegraf section), unchanged.
    const DOC_EXAMPLE: &str = r#"<Monitoring>
  <Host address="somehost.tld" interval="1" username="netort">
    <CPU fielddrop='["time_*", "usage_guest_nice"]'></CPU>
    <Kernel fielddrop='["active", "inactive", "total", "used_per*", "avail*"]'></Kernel>
    <Net fielddrop='["icmp*", "ip*", "udplite*", "tcp*", "udp*", "drop*", "err*"]' interfaces='["eth0","eth1","lo"]'></Net>
    <System fielddrop='["n_users", "n_cpus", "uptime*"]'></System>
    <Memory fielddrop='["active", "inactive", "total", "used_per*", "avail*"]'></Memory>
    <Disk devices='["vda1","sda1","sda2","sda3"]'></Disk>
    <Netstat />
    <Custom diff="1" measure="call" label="test">curl -s -H 'Host: host.tld' 'http://localhost:6100/stat'  | python3 -c 'import sys, json; j = json.loads(sys.stdin.read()); print(j["total_requests"])'</Custom>
    <Custom diff="1" measure="call" label="test2">curl -s -H 'Host: host.tld' 'http://localhost:6100/stat'  | python3 -c 'import sys, json; j = json.loads(sys.stdin.read()); print(j["total_requests"])'</Custom>
    <Source>/path/to/file</Source>
    <TelegrafRaw>
        [[inputs.ping]]
        urls = ["127.0.0.1"]
        count = 1
    </TelegrafRaw>
  </Host>
  <Host address="[target]" />
</Monitoring>"#;

    #[test]
    fn the_documented_xml_parses_unchanged() {
        let specs = parse_xml(DOC_EXAMPLE).unwrap();
        assert_eq!(specs.len(), 2);
        let mut warnings = Vec::new();
        let host = build(&specs[0], "target.tld", &mut warnings).unwrap();
        assert_eq!(host.address, "somehost.tld");
        assert_eq!(
            host.source,
            HostSource::NodeExporter {
                url: "http://somehost.tld:9100/metrics".into()
            }
        );
        assert!(host.groups.cpu && host.groups.percpu && host.groups.netstat);
        assert_eq!(host.groups.interfaces, ["eth0", "eth1", "lo"]);
        assert_eq!(host.groups.devices, ["vda1", "sda1", "sda2", "sda3"]);
        assert_eq!(host.custom.len(), 2);
        assert_eq!(host.custom[0].label, "test");
        assert!(host.custom[0].diff);
        assert!(host.custom[0].command.starts_with("curl -s"));
        assert!(
            warnings.iter().any(|w| w.contains("`username`")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("<Source>")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("<TelegrafRaw>")),
            "{warnings:?}"
        );
        let target = build(&specs[1], "target.tld", &mut warnings).unwrap();
        assert_eq!(target.address, "target.tld");
        assert!(target.groups.cpu && target.groups.kernel && !target.groups.netstat);
    }

    #[test]
    fn local_hosts_read_proc_and_metrics_url_points_anywhere() {
        let xml = r#"<Monitoring>
            <Host address="localhost" interval="2"><CPU percpu="false"/><Process name="nginx"/><Process pid="7"/></Host>
            <Host address="db" metrics_url="http://127.0.0.1:9200/metrics"><Prometheus url="http://db:8080/metrics" metrics="a_total, b"/></Host>
        </Monitoring>"#;
        let specs = parse_xml(xml).unwrap();
        let mut warnings = Vec::new();
        let local = build(&specs[0], "t", &mut warnings).unwrap();
        assert_eq!(local.source, HostSource::Local);
        assert_eq!(local.interval_ms, 2000);
        assert!(local.groups.cpu && !local.groups.percpu && !local.groups.memory);
        assert_eq!(
            local.processes,
            [
                ProcessSelector::Name("nginx".into()),
                ProcessSelector::Pid(7)
            ]
        );
        let db = build(&specs[1], "t", &mut warnings).unwrap();
        assert_eq!(
            db.source,
            HostSource::NodeExporter {
                url: "http://127.0.0.1:9200/metrics".into()
            }
        );
        assert_eq!(db.prometheus[0].metrics, ["a_total", "b"]);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn mistakes_name_the_line_and_what_was_expected() {
        let bad = |xml: &str| {
            let specs = parse_xml(xml).unwrap();
            build(&specs[0], "t", &mut Vec::new()).unwrap_err()
        };
        let e =
            bad("<Monitoring>\n<Host address=\"x\">\n<Process name=\"a\"/></Host></Monitoring>");
        assert!(e.starts_with("line 3: <Process>"), "{e}");
        let e = bad("<Monitoring><Host address=\"x\" interval=\"fast\"/></Monitoring>");
        assert!(e.contains("interval: expected seconds"), "{e}");
        let e = bad(
            "<Monitoring><Host address=\"x\"><Prometheus url=\"http://a\"/></Host></Monitoring>",
        );
        assert!(e.contains("metrics="), "{e}");
        assert!(parse_xml("<Monitoring><Host")
            .unwrap_err()
            .contains("invalid XML"));
    }

    #[test]
    fn the_yaml_form_shares_metrics_between_hosts() {
        let yaml = "hosts:\n  localhost:\n    interval: 1\n    comment: me\n  \"[target]\":\n    metrics:\n      mem:\nmetrics:\n  cpu:\n    percpu: true\n  custom:\n    cmd: echo 1\n    label: one\n";
        let specs = parse_yaml(yaml).unwrap();
        assert_eq!(specs.len(), 2);
        let mut warnings = Vec::new();
        let local = build(&specs[0], "web", &mut warnings).unwrap();
        assert_eq!(local.comment, "me");
        assert!(local.groups.cpu && !local.groups.memory);
        assert_eq!(local.custom[0].command, "echo 1");
        let target = build(&specs[1], "web", &mut warnings).unwrap();
        assert_eq!(target.address, "web");
        assert!(target.groups.cpu && target.groups.memory);
    }

    #[test]
    fn no_hosts_means_the_target() {
        let specs = parse_yaml("metrics:\n  cpu:\n").unwrap();
        assert_eq!(specs[0].address, TARGET_PLACEHOLDER);
    }

    proptest::proptest! {
        #[test]
        fn the_xml_reader_never_panics(text in "\\PC{0,200}") {
            if let Ok(specs) = parse_xml(&text) {
                for spec in &specs {
                    let _ = build(spec, "t", &mut Vec::new());
                }
            }
        }

        #[test]
        fn intervals_in_range_round_trip(ms in 100u64..3_600_000) {
            proptest::prop_assert_eq!(interval(&format!("{ms}ms")), Ok(ms));
        }
    }
}
