//! `[meta]`: what the test is, for the people who read its results.
//!
//! yandex-tank keeps a job's name, description, version, component, task and
//! operator in the section of its uploader to Overload/Lunapark (`[meta]` in
//! load.ini, `uploader:` in load.yaml; `[overload]` and `DataUploader` are the
//! same plugin). tank uploads nowhere, but those few strings are what a
//! reader wants on top of every page: the console's header, summary.json,
//! report.html, the web dashboard and, as tags, every InfluxDB point. So tank
//! reads them from any of those sections, and warns that the uploader's other
//! options (`api_address`, `token_file`, ...) are not acted on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::convert;
use crate::error::ConfigError;
use crate::options::suggest;
use crate::queue::entry_error;
use crate::raw::RawSection;

/// The job's description, as yandex-tank's uploader section names it. Every
/// field is optional; [`Job::is_empty`] when the config says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// `job_name`: the test's name (the console's and the report's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// `job_dsc`: a description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_dsc: Option<String>,
    /// `ver`: the version of what is tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ver: Option<String>,
    /// `component`: the part of the system under test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// `task`: the ticket the test belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `operator`: who ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// `meta.NAME` (YAML/TOML: a `meta` map): any other facts, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

/// The keys tank reads, in the order people see them.
pub const JOB_KEYS: [&str; 6] = [
    "job_name",
    "job_dsc",
    "ver",
    "component",
    "task",
    "operator",
];

impl Job {
    /// Nothing was said about the job.
    pub fn is_empty(&self) -> bool {
        self.fields().next().is_none()
    }

    /// Each fact that was given, as (yandex-tank's key, value): the six named
    /// ones in [`JOB_KEYS`] order, then `extra` by name. Empty values are left out.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        let named = [
            &self.job_name,
            &self.job_dsc,
            &self.ver,
            &self.component,
            &self.task,
            &self.operator,
        ];
        JOB_KEYS
            .into_iter()
            .zip(named)
            .filter_map(|(key, value)| Some((key, value.as_deref()?)))
            .chain(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .filter(|(_, value)| !value.is_empty())
    }

    /// One line for a header: the name, then the other named facts
    /// (`checkout — v1.2 · component api · task LOAD-12 · by alice`);
    /// `None` when there are none.
    pub fn headline(&self) -> Option<String> {
        let mut parts = Vec::new();
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().filter(|s| !s.is_empty())
        }
        if let Some(ver) = given(&self.ver) {
            parts.push(format!("ver {ver}"));
        }
        if let Some(component) = given(&self.component) {
            parts.push(format!("component {component}"));
        }
        if let Some(task) = given(&self.task) {
            parts.push(format!("task {task}"));
        }
        if let Some(operator) = given(&self.operator) {
            parts.push(format!("operator {operator}"));
        }
        match (given(&self.job_name), parts.is_empty()) {
            (None, true) => None,
            (None, false) => Some(parts.join(" · ")),
            (Some(name), true) => Some(name.to_owned()),
            (Some(name), false) => Some(format!("{name} — {}", parts.join(" · "))),
        }
    }

    /// `other`'s facts over these (a later section wins, key by key).
    fn merge(&mut self, other: Job) {
        let over = |mine: &mut Option<String>, theirs: Option<String>| {
            if theirs.is_some() {
                *mine = theirs;
            }
        };
        over(&mut self.job_name, other.job_name);
        over(&mut self.job_dsc, other.job_dsc);
        over(&mut self.ver, other.ver);
        over(&mut self.component, other.component);
        over(&mut self.task, other.task);
        over(&mut self.operator, other.operator);
        self.extra.extend(other.extra);
    }
}

/// Check an uploader section's keys. The job's facts must be strings; a key
/// close to one of them is a typo (an error with the suggestion); every other
/// key is one of the uploader's many options (`api_address`, `token_file`,
/// ...; they differ between yandex-tank's versions), accepted with a warning
/// that it is ignored.
pub(crate) fn check_keys(
    section: &RawSection,
    warnings: &mut Vec<ConfigError>,
) -> Result<(), ConfigError> {
    for entry in &section.entries {
        let key = entry.key.as_str();
        if JOB_KEYS.contains(&key) || key.starts_with("meta.") {
            convert::string(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?;
            continue;
        }
        if matches!(key, "enabled" | "package") {
            continue;
        }
        if let Some(close) = suggest(key, JOB_KEYS) {
            let message = format!("unknown option (did you mean `{close}`?)");
            return Err(entry_error(&section.name, entry, message));
        }
        warnings.push(entry_error(
            &section.name,
            entry,
            "an option of yandex-tank's uploader: tank uploads nowhere, so it is ignored \
             (tank shows job_name, job_dsc, ver, component, task, operator and meta.* in its reports)",
        ));
    }
    Ok(())
}

/// Read one enabled uploader section's job facts into `job` (a later section
/// wins, key by key).
pub(crate) fn read(section: &RawSection, job: &mut Job) -> Result<(), ConfigError> {
    let mut read = Job::default();
    for entry in &section.entries {
        let value = || -> Result<Option<String>, ConfigError> {
            convert::string(&entry.value).map_err(|m| entry_error(&section.name, entry, m))
        };
        let slot = match entry.key.as_str() {
            "job_name" => &mut read.job_name,
            "job_dsc" => &mut read.job_dsc,
            "ver" => &mut read.ver,
            "component" => &mut read.component,
            "task" => &mut read.task,
            "operator" => &mut read.operator,
            key => {
                if let Some(name) = key.strip_prefix("meta.").filter(|n| !n.is_empty()) {
                    if let Some(text) = value()? {
                        read.extra.insert(name.to_owned(), text);
                    }
                }
                continue;
            }
        };
        *slot = value()?.map(|text| text.trim().to_owned());
    }
    job.merge(read);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, ver: &str, operator: &str) -> Job {
        Job {
            job_name: Some(name.into()).filter(|s: &String| !s.is_empty()),
            ver: Some(ver.into()).filter(|s: &String| !s.is_empty()),
            operator: Some(operator.into()).filter(|s: &String| !s.is_empty()),
            ..Job::default()
        }
    }

    #[test]
    fn the_headline_names_the_job_then_the_rest() {
        assert_eq!(Job::default().headline(), None);
        assert_eq!(
            job("checkout", "1.2", "alice").headline().as_deref(),
            Some("checkout — ver 1.2 · operator alice")
        );
        assert_eq!(
            job("checkout", "", "").headline().as_deref(),
            Some("checkout")
        );
        assert_eq!(job("", "1.2", "").headline().as_deref(), Some("ver 1.2"));
    }

    #[test]
    fn fields_leave_out_what_was_not_given_and_keep_the_order() {
        let mut j = job("checkout", "", "alice");
        j.extra.insert("build".into(), "77".into());
        let fields: Vec<_> = j.fields().collect();
        assert_eq!(
            fields,
            vec![
                ("job_name", "checkout"),
                ("operator", "alice"),
                ("build", "77")
            ]
        );
        assert!(!j.is_empty());
        assert!(Job::default().is_empty());
    }

    fn load(text: &str, format: crate::ConfigFormat) -> crate::TestConfig {
        let name = if format == crate::ConfigFormat::Yaml {
            "load.yaml"
        } else {
            "load.ini"
        };
        crate::load_str(text, format, std::path::Path::new(name), &[]).unwrap()
    }

    const PHANTOM: &str =
        "[phantom]\naddress = 127.0.0.1:8080\nrps_schedule = const(1,1s)\nuris = /\n";

    #[test]
    fn ini_meta_gives_the_job_and_warns_of_the_upload_options() {
        let c = load(
            &format!(
                "{PHANTOM}[meta]\njob_name = checkout\njob_dsc = steady part\nver = 1.2\n\
                 component = api\ntask = LOAD-12\noperator = alice\napi_address = https://x\n\
                 meta.build = 77\n"
            ),
            crate::ConfigFormat::Ini,
        );
        assert_eq!(c.job.job_name.as_deref(), Some("checkout"));
        assert_eq!(c.job.job_dsc.as_deref(), Some("steady part"));
        assert_eq!(c.job.task.as_deref(), Some("LOAD-12"));
        assert_eq!(c.job.extra.get("build").map(String::as_str), Some("77"));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(
            c.warnings[0].contains("[meta] api_address: an option of yandex-tank's uploader"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn yaml_uploader_and_a_custom_named_data_uploader_give_the_job() {
        let phantom = "phantom:\n  address: 127.0.0.1:8080\n  \
            load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  uris: [/]\n";
        let c = load(
            &format!(
                "{phantom}uploader:\n  enabled: true\n  package: yandextank.plugins.DataUploader\n  \
                 job_name: '[example][const]'\n  ver: 0.5.5\n  meta: {{build: 77}}\n"
            ),
            crate::ConfigFormat::Yaml,
        );
        assert_eq!(c.job.job_name.as_deref(), Some("[example][const]"));
        assert_eq!(c.job.ver.as_deref(), Some("0.5.5"));
        assert_eq!(c.job.extra.get("build").map(String::as_str), Some("77"));
        let c = load(
            &format!(
                "{phantom}lunapark:\n  package: yandextank.plugins.DataUploader\n  job_name: x\n"
            ),
            crate::ConfigFormat::Yaml,
        );
        assert_eq!(c.job.job_name.as_deref(), Some("x"));
        let c = load(
            &format!("{phantom}uploader:\n  enabled: false\n  job_name: x\n"),
            crate::ConfigFormat::Yaml,
        );
        assert!(c.job.is_empty(), "a disabled uploader says nothing");
    }

    #[test]
    fn a_typo_in_meta_is_an_error_with_a_suggestion() {
        let e = crate::load_str(
            &format!("{PHANTOM}[meta]\njob_nme = x\n"),
            crate::ConfigFormat::Ini,
            std::path::Path::new("load.ini"),
            &[],
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("job_nme"), "{e}");
        assert!(e.to_string().contains("job_name"), "{e}");
    }

    #[test]
    fn a_later_section_wins_key_by_key() {
        let mut first = job("a", "1", "");
        first.merge(job("", "2", "bob"));
        assert_eq!(first, job("a", "2", "bob"));
    }
}
