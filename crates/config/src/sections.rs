//! Which yandex-tank plugin a section name belongs to.
//!
//! yandex-tank picks the plugin by `re.match` of the lower-cased name against
//! a list of patterns, so a pattern only has to match a prefix: `phantom-1`,
//! `phantom_2` and `phantomx` are all Phantom sections (extra queues), `tank2`
//! is the core. tank acts on Phantom, Autostop, RCAssert, Console and the core;
//! every other yandex-tank plugin's section is accepted and ignored, so a
//! `load.ini` written for yandex-tank loads unchanged.

use regex::Regex;
use std::sync::OnceLock;

/// What tank does with a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SectionKind {
    /// `[phantom]`: the main queue.
    Phantom,
    /// `[phantom-*]` (or a YAML `phantom.multi` entry): an extra queue.
    ExtraQueue,
    /// `[tank]` / `[core]`.
    Core,
    /// `[autostop]`.
    Autostop,
    /// `[rcassert]`.
    RcAssert,
    /// `[console]`.
    Console,
    /// `[origin]`: tank's own, the in-process origin simulator.
    Origin,
    /// `[memcached]`: tank's own, the memcached workload.
    Memcached,
    /// `[mysql]`: tank's own, who `tank_type = mysql` logs in as.
    Mysql,
    /// `[grpc]`: tank's own, the schema of `tank_type = grpc` queues.
    Grpc,
    /// Another yandex-tank plugin's section: accepted, not acted on.
    Ignored,
    /// `[telegraf]` / `[monitoring]`: the hosts to watch.
    Monitoring,
    /// `[influx]`: yandex-tank's InfluxUploader.
    Influx,
    /// `[prometheus]`: tank's own, serve `/metrics` during the run.
    Prometheus,
    /// `[search]`: tank's own, the settings of `tank search` and `tank scan`.
    Search,
    /// `[meta]` (`[overload]`, `uploader:`, DataUploader): yandex-tank's
    /// uploader, whose job name and description tank shows (it uploads nowhere).
    Meta,
    /// `[web]`: tank's own, the live web dashboard.
    Web,
}

/// yandex-tank's plugin patterns, in its order (the first match wins), with what tank does.
const PATTERNS: &[(&str, SectionKind)] = &[
    ("tank|core", SectionKind::Core),
    ("lunaport", SectionKind::Ignored),
    ("aggregator", SectionKind::Ignored),
    ("android", SectionKind::Ignored),
    ("appium", SectionKind::Ignored),
    ("autostop", SectionKind::Autostop),
    ("battery_historian", SectionKind::Ignored),
    (
        "bfg|ultimate_gun|http_gun|custom_gun|scenario_gun",
        SectionKind::Ignored,
    ),
    ("phantom", SectionKind::ExtraQueue),
    ("meta|overload|uploader|datauploader", SectionKind::Meta),
    ("telegraf|monitoring", SectionKind::Monitoring),
    ("jmeter", SectionKind::Ignored),
    ("rcheck", SectionKind::Ignored),
    ("shell_?exec", SectionKind::Ignored),
    ("shoot_?exec", SectionKind::Ignored),
    ("console", SectionKind::Console),
    ("tips", SectionKind::Ignored),
    ("rcassert", SectionKind::RcAssert),
    ("json_report|jsonreport", SectionKind::Ignored),
    ("pandora", SectionKind::Ignored),
    ("influx", SectionKind::Influx),
    ("opentsdb", SectionKind::Ignored),
    // tank's own, after every yandex-tank pattern.
    ("origin", SectionKind::Origin),
    ("prometheus", SectionKind::Prometheus),
    ("memcached", SectionKind::Memcached),
    ("mysql", SectionKind::Mysql),
    ("search", SectionKind::Search),
    ("grpc", SectionKind::Grpc),
    ("web", SectionKind::Web),
];

/// The known section names, for "unrecognized section" messages.
pub(crate) const KNOWN: &str =
    "phantom, phantom-*, autostop, rcassert, console, origin, telegraf/monitoring, influx, \
    prometheus, memcached, mysql, search, grpc, web, meta/overload/uploader (the job's name and \
    description), tank/core (and, ignored: aggregator, android, appium, battery_historian, bfg, \
    jmeter, rcheck, shellexec, shootexec, tips, json_report, pandora, opentsdb)";

fn compiled() -> &'static [(Regex, SectionKind)] {
    static COMPILED: OnceLock<Vec<(Regex, SectionKind)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|(pattern, kind)| {
                let re = Regex::new(&format!("^(?:{pattern})")).expect("valid pattern");
                (re, *kind)
            })
            .collect()
    })
}

/// The yandex-tank plugin a section of kind [`SectionKind::Ignored`] belongs to,
/// when tank does not do what that plugin does (so the section deserves a
/// warning); `None` for the plugins whose work tank does itself (aggregator,
/// json_report: test_data.log; tips: nothing to do).
pub(crate) fn unimplemented_plugin(name: &str) -> Option<&'static str> {
    const UNIMPLEMENTED: &[(&str, &str)] = &[
        ("lunaport", "Lunaport uploader"),
        ("android", "Android"),
        ("appium", "Appium"),
        ("battery_historian", "Battery Historian"),
        (
            "bfg|ultimate_gun|http_gun|custom_gun|scenario_gun",
            "BFG gun",
        ),
        ("jmeter", "JMeter"),
        ("rcheck", "resource check"),
        ("shell_?exec", "ShellExec"),
        ("shoot_?exec", "ShootExec"),
        ("pandora", "Pandora gun"),
        ("opentsdb", "OpenTSDB uploader"),
    ];
    UNIMPLEMENTED
        .iter()
        .find(|(pattern, _)| {
            Regex::new(&format!("^(?:{pattern})")).is_ok_and(|re| re.is_match(name))
        })
        .map(|(_, plugin)| *plugin)
}

/// The load generator a section named `name` (lower-cased) is for, when it
/// is one of yandex-tank's that tank does not run (BFG, JMeter, Pandora).
pub(crate) fn load_generator(name: &str) -> Option<&'static str> {
    const GENERATORS: &[&str] = &["BFG gun", "JMeter", "Pandora gun"];
    unimplemented_plugin(name).filter(|plugin| GENERATORS.contains(plugin))
}

/// The kind of section `name` (already lower-cased), or `None` if no plugin claims it.
///
/// Autostop, RCAssert and Console are acted on only under their exact names: a
/// second instance (`[autostop2]`) is not something tank can run, so it is not
/// recognized rather than silently dropped.
pub(crate) fn classify(name: &str) -> Option<SectionKind> {
    let kind = compiled()
        .iter()
        .find(|(re, _)| re.is_match(name))
        .map(|(_, kind)| *kind)?;
    match kind {
        SectionKind::ExtraQueue if name == "phantom" => Some(SectionKind::Phantom),
        SectionKind::Autostop if name != "autostop" => None,
        SectionKind::RcAssert if name != "rcassert" => None,
        SectionKind::Console if name != "console" => None,
        SectionKind::Origin if name != "origin" => None,
        SectionKind::Monitoring if name != "telegraf" && name != "monitoring" => None,
        SectionKind::Influx if name != "influx" => None,
        SectionKind::Prometheus if name != "prometheus" => None,
        SectionKind::Memcached if name != "memcached" => None,
        SectionKind::Mysql if name != "mysql" => None,
        SectionKind::Search if name != "search" => None,
        SectionKind::Grpc if name != "grpc" => None,
        SectionKind::Web if name != "web" => None,
        kind => Some(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phantom_prefixes_are_extra_queues() {
        assert_eq!(classify("phantom"), Some(SectionKind::Phantom));
        assert_eq!(classify("phantom-1"), Some(SectionKind::ExtraQueue));
        assert_eq!(classify("phantom-anything"), Some(SectionKind::ExtraQueue));
        assert_eq!(classify("phantom_2"), Some(SectionKind::ExtraQueue));
    }

    #[test]
    fn core_matches_tank_and_core_prefixes() {
        assert_eq!(classify("tank"), Some(SectionKind::Core));
        assert_eq!(classify("core"), Some(SectionKind::Core));
    }

    #[test]
    fn other_plugins_are_ignored_and_unknown_names_are_not_recognized() {
        for name in [
            "shellexec",
            "shell_exec",
            "jsonreport",
            "bfg",
            "lunaport",
            "aggregator",
        ] {
            assert_eq!(classify(name), Some(SectionKind::Ignored), "{name}");
        }
        assert_eq!(classify("phantm"), None);
        assert_eq!(classify("autostop2"), None);
        assert_eq!(classify("default"), None);
    }

    #[test]
    fn understood_sections() {
        assert_eq!(classify("autostop"), Some(SectionKind::Autostop));
        assert_eq!(classify("rcassert"), Some(SectionKind::RcAssert));
        assert_eq!(classify("console"), Some(SectionKind::Console));
        assert_eq!(classify("origin"), Some(SectionKind::Origin));
        assert_eq!(classify("origin2"), None);
        assert_eq!(classify("telegraf"), Some(SectionKind::Monitoring));
        assert_eq!(classify("monitoring"), Some(SectionKind::Monitoring));
        assert_eq!(classify("influx"), Some(SectionKind::Influx));
        assert_eq!(classify("prometheus"), Some(SectionKind::Prometheus));
        assert_eq!(classify("search"), Some(SectionKind::Search));
        assert_eq!(classify("search2"), None);
        for name in ["meta", "overload", "uploader", "datauploader"] {
            assert_eq!(classify(name), Some(SectionKind::Meta), "{name}");
        }
        assert_eq!(classify("web"), Some(SectionKind::Web));
        assert_eq!(classify("webs"), None);
    }
}
