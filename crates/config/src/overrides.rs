//! `-o section.key=value`: command-line overrides of single options.
//!
//! An override is applied to the raw form before validation, so it is checked
//! exactly like a line of the file. Its value is a string and is converted as
//! an INI value would be (`-o phantom.loop=3` is the integer 3). The schedule
//! options behave like yandex-tank's recursive update of `load_profile`:
//! `-o phantom.rps_schedule=...` replaces the whole profile, whatever spelling
//! the file used, and `-o phantom.load_profile.schedule=...` replaces only the
//! schedule and keeps the type.

use std::fmt;
use std::str::FromStr;

use crate::error::Place;
use crate::options::SCHEDULE_KEYS;
use crate::raw::{RawConfig, RawEntry, RawSection, RawValue};

/// One `-o section.key=value` override.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// The section (`phantom`, `phantom-1`, `autostop`, `tank`...), lower-cased.
    pub section: String,
    /// The key (`rps_schedule`, `load_profile.schedule`...), lower-cased.
    pub key: String,
    /// The value, stripped, as it would be written in an INI file.
    pub value: String,
}

/// Why an `-o` argument could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid override `{text}`: expected section.key=value, e.g. phantom.rps_schedule=const(1,1s)"
)]
pub struct OverrideParseError {
    text: String,
}

impl FromStr for Override {
    type Err = OverrideParseError;

    /// Reads `section.key=value`: the key ends at the first `=`, the section at the first `.`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || OverrideParseError {
            text: text.to_owned(),
        };
        let (path, value) = text.split_once('=').ok_or_else(error)?;
        let (section, key) = path.trim().split_once('.').ok_or_else(error)?;
        let (section, key) = (section.trim(), key.trim());
        if section.is_empty() || key.is_empty() {
            return Err(error());
        }
        Ok(Override {
            section: section.to_lowercase(),
            key: key.to_lowercase(),
            value: value.trim().to_owned(),
        })
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}={}", self.section, self.key, self.value)
    }
}

/// Applies `overrides` in order to `raw`, creating sections that are missing.
pub(crate) fn apply(raw: &mut RawConfig, overrides: &[Override]) {
    for o in overrides {
        let section = raw.section_mut(&o.section, Place::Override);
        if SCHEDULE_KEYS.contains(&o.key.as_str()) {
            remove_load_profile(section);
        } else if o.key.starts_with("load_profile.") {
            expand_shorthand(section);
        }
        section.set(RawEntry {
            key: o.key.clone(),
            value: RawValue::Str(o.value.clone()),
            place: Place::Override,
        });
    }
}

fn remove_load_profile(section: &mut RawSection) {
    section.entries.retain(|e| {
        !SCHEDULE_KEYS.contains(&e.key.as_str()) && !e.key.starts_with("load_profile.")
    });
}

/// Rewrites `rps_schedule = X` as `load_profile.load_type = rps` + `load_profile.schedule = X`.
fn expand_shorthand(section: &mut RawSection) {
    for (key, load_type) in [
        ("rps_schedule", "rps"),
        ("instances_schedule", "instances"),
        ("stpd_file", "stpd_file"),
    ] {
        if let Some(entry) = section.remove(key) {
            section.set(RawEntry {
                key: "load_profile.load_type".into(),
                value: RawValue::Str(load_type.into()),
                place: entry.place,
            });
            section.set(RawEntry {
                key: "load_profile.schedule".into(),
                value: entry.value,
                place: entry.place,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(text: &str) -> Override {
        text.parse().unwrap()
    }

    #[test]
    fn parses_section_key_and_value_at_the_first_dot_and_equals() {
        assert_eq!(
            o("Phantom.load_profile.schedule = line(1, 2, 3s)=x "),
            Override {
                section: "phantom".into(),
                key: "load_profile.schedule".into(),
                value: "line(1, 2, 3s)=x".into(),
            }
        );
        assert_eq!(o("tank.artifacts_base_dir=").value, "");
    }

    #[test]
    fn rejects_text_without_section_key_or_equals() {
        for bad in [
            "phantom",
            "phantom=1",
            ".key=1",
            "phantom.=1",
            "rps_schedule",
        ] {
            let e = bad.parse::<Override>().unwrap_err();
            assert!(e.to_string().contains("expected section.key=value"), "{e}");
        }
    }

    #[test]
    fn a_schedule_override_replaces_every_load_profile_spelling() {
        let mut raw = RawConfig::default();
        let s = raw.section_mut("phantom", Place::Line(1));
        s.set(RawEntry {
            key: "load_profile.load_type".into(),
            value: RawValue::Str("rps".into()),
            place: Place::Line(2),
        });
        s.set(RawEntry {
            key: "load_profile.schedule".into(),
            value: RawValue::Str("const(1,1s)".into()),
            place: Place::Line(3),
        });
        apply(&mut raw, &[o("phantom.instances_schedule=line(1,5,5s)")]);
        let keys: Vec<_> = raw.sections[0]
            .entries
            .iter()
            .map(|e| e.key.as_str())
            .collect();
        assert_eq!(keys, ["instances_schedule"]);
    }

    #[test]
    fn a_load_profile_schedule_override_keeps_the_shorthand_type() {
        let mut raw = RawConfig::default();
        raw.section_mut("phantom", Place::Line(1)).set(RawEntry {
            key: "instances_schedule".into(),
            value: RawValue::Str("const(1,1s)".into()),
            place: Place::Line(2),
        });
        apply(&mut raw, &[o("phantom.load_profile.schedule=const(5,5s)")]);
        let s = &raw.sections[0];
        assert_eq!(
            s.get("load_profile.load_type").unwrap().value,
            RawValue::Str("instances".into())
        );
        assert_eq!(
            s.get("load_profile.schedule").unwrap().value,
            RawValue::Str("const(5,5s)".into())
        );
        assert_eq!(
            s.get("load_profile.schedule").unwrap().place,
            Place::Override
        );
    }

    #[test]
    fn an_override_creates_a_missing_section() {
        let mut raw = RawConfig::default();
        apply(&mut raw, &[o("autostop.autostop=time(1s,1s)")]);
        assert_eq!(raw.sections[0].name, "autostop");
        assert_eq!(raw.sections[0].place, Place::Override);
    }
}
