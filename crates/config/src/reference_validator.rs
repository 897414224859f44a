//! What yandex-tank 2.0.11's validator refuses in a phantom section that
//! tank runs anyway, said in a warning.
//!
//! tank reads a queue as yandex-tank's stepper does, and the stepper accepts
//! more than the validator that `yandex-tank -c` runs first (fractional
//! durations, `const (1, 1m)`, `writelog = 1`, a YAML string for `uris`). A
//! config written for tank may use that on purpose; one copied from a
//! tutorial is then run by tank and refused by yandex-tank, and its author
//! should know. The checks are those real configs met (the held-out corpus):
//! `writelog`'s type and values, `uris` and `headers` as YAML lists, and the
//! schedule's pattern (the validator's `_check_with_load_scheme`, but for its
//! durations: tank's fractions and milliseconds are a documented extension).

use std::sync::OnceLock;

use regex::Regex;

use crate::error::ConfigError;
use crate::model::ConfigFormat;
use crate::pynum::py_float;
use crate::queue::entry_error;
use crate::raw::{RawEntry, RawSection, RawValue};

/// The words every warning starts with.
const REFUSES: &str = "yandex-tank 2.0.11's validator refuses this";

/// Warn about what `section` (a phantom queue, read from `format`) holds
/// that yandex-tank 2.0.11's validator refuses.
pub(crate) fn check(section: &RawSection, format: ConfigFormat, warnings: &mut Vec<ConfigError>) {
    let mut warn = |entry: &RawEntry, why: String| {
        warnings.push(entry_error(
            &section.name,
            entry,
            format!("{REFUSES}: {why}"),
        ));
    };
    if let Some(entry) = section.get("writelog") {
        match &entry.value {
            RawValue::Str(text) if !WRITELOG.contains(&text.as_str()) => {
                // A value tank does not read either is its own error.
                if let Some(reading) = writelog_reading(text) {
                    warn(
                        entry,
                        format!(
                            "`{text}` is not one of {}; tank reads it as {reading}",
                            WRITELOG.join(", ")
                        ),
                    );
                }
            }
            RawValue::Str(_) | RawValue::Null => {}
            other => warn(
                entry,
                format!(
                    "it wants a string, and this is {}; tank reads it, but write it quoted ('0' or 'all') for both",
                    other.type_name()
                ),
            ),
        }
    }
    // INI turns these into lists itself, and tank's TOML strings are read as
    // INI values are; YAML says what they are.
    if format == ConfigFormat::Yaml {
        for key in ["uris", "headers"] {
            if let Some(entry) = section.get(key) {
                if !matches!(entry.value, RawValue::List(_) | RawValue::Null) {
                    warn(
                        entry,
                        format!(
                            "it wants a list, and this is {}; tank reads its lines as the list",
                            entry.value.type_name()
                        ),
                    );
                }
            }
        }
    }
    let stpd = section
        .get("load_profile.load_type")
        .is_some_and(|e| matches!(&e.value, RawValue::Str(t) if t == "stpd_file"));
    for key in [
        "rps_schedule",
        "instances_schedule",
        "load_profile.schedule",
    ] {
        let Some(entry) = section.get(key) else {
            continue;
        };
        if let (RawValue::Str(schedule), false) = (&entry.value, stpd) {
            if let Some(why) = schedule_refusal(schedule) {
                warn(entry, format!("{why}; tank reads it as the stepper does"));
            }
        }
    }
}

/// `writelog`'s values in the validator's schema.
const WRITELOG: &[&str] = &["0", "all", "proto_warning", "proto_error"];

/// How tank reads a `writelog` value (`None`: it does not, and says so).
fn writelog_reading(text: &str) -> Option<&'static str> {
    match text.trim().to_lowercase().as_str() {
        "" | "0" | "false" => Some("0 (off)"),
        "1" | "true" | "all" => Some("all"),
        "proto_warning" => Some("proto_warning"),
        "proto_error" => Some("proto_error"),
        _ => None,
    }
}

/// Why the validator's `_check_with_load_scheme` refuses `schedule`, if it does.
fn schedule_refusal(schedule: &str) -> Option<String> {
    static STEP: OnceLock<Regex> = OnceLock::new();
    // Searched, not anchored, and lazily to the first `)`: re.findall's reading.
    let step = STEP.get_or_init(|| Regex::new(r"(step|line|const)\((.+?)\)").expect("valid"));
    // A schedule with tank's own steps is written for tank (docs/reference.md).
    const TANKS_OWN: &[&str] = &["random", "trace", "trace_file", "ramp", "wait", "start"];
    let names = schedule
        .split(')')
        .filter_map(|piece| piece.split('(').next());
    if names.map(str::trim).any(|name| TANKS_OWN.contains(&name)) {
        return None;
    }
    let mut found = false;
    for caps in step.captures_iter(schedule) {
        found = true;
        let (name, params) = (&caps[1], &caps[2]);
        let params: Vec<&str> = params.split(',').map(str::trim).collect();
        let wanted = match name {
            "step" => 4,
            "line" => 3,
            _ => 2,
        };
        if params.len() != wanted {
            return Some(format!(
                "`{name}` wants {wanted} arguments, and `{}` has {}",
                &caps[0],
                params.len()
            ));
        }
        let (_duration, numbers) = params.split_last()?;
        if let Some(bad) = numbers.iter().find(|p| py_float(p).is_none()) {
            return Some(format!("`{bad}` in `{}` is not a number", &caps[0]));
        }
        // The validator also wants the duration in whole days, hours,
        // minutes and seconds (`2h30m`, `5m15`, `180`); tank's milliseconds
        // and fractions are its documented extension (docs/departures.md),
        // not worth a warning on every config written for tank.
    }
    (!found).then(|| match schedule.trim() {
        "" => "an empty schedule is none of step(...), line(...), const(...)".to_owned(),
        _ => format!(
            "`{schedule}` matches none of step(...), line(...), const(...) as it reads them"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Place;

    fn section(entries: &[(&str, RawValue)]) -> RawSection {
        let mut section = RawSection::new("phantom", Place::Line(1));
        for (i, (key, value)) in entries.iter().enumerate() {
            section.set(RawEntry {
                key: (*key).to_owned(),
                value: value.clone(),
                place: Place::Line(i + 2),
            });
        }
        section
    }

    fn warnings(entries: &[(&str, RawValue)], format: ConfigFormat) -> Vec<String> {
        let mut warnings = Vec::new();
        check(&section(entries), format, &mut warnings);
        warnings.iter().map(ToString::to_string).collect()
    }

    fn text(s: &str) -> RawValue {
        RawValue::Str(s.to_owned())
    }

    #[test]
    fn schedules_the_validator_takes_say_nothing() {
        for schedule in [
            "const(1,1s)",
            "const(1.5, 1m)",
            "line(1, 2, 1m30s) const(3,180)",
            "step(1,5,1,10s)",
            "const(1,1)",
            "line(1,10,2h5m) ;tail",
            "const(1,1.5s) const(2,500ms)",
            "random(1, 10, 1s, 1m)",
            "ramp(10, 1m) wait(5s)",
        ] {
            let said = warnings(&[("rps_schedule", text(schedule))], ConfigFormat::Ini);
            assert!(said.is_empty(), "{schedule}: {said:?}");
        }
    }

    #[test]
    fn schedules_the_validator_refuses_are_said() {
        for (schedule, why) in [
            ("const (0.5, 1m)", "matches none of"),
            ("line(1,10)", "`line` wants 3 arguments"),
            (
                "step(a,5,1,10s)",
                "`a` in `step(a,5,1,10s)` is not a number",
            ),
        ] {
            let said = warnings(
                &[("load_profile.schedule", text(schedule))],
                ConfigFormat::Yaml,
            );
            assert_eq!(said.len(), 1, "{schedule}: {said:?}");
            assert!(
                said[0].contains(REFUSES) && said[0].contains(why),
                "{schedule}: {said:?}"
            );
        }
        // A ready stpd file's path is no schedule.
        let said = warnings(
            &[
                ("load_profile.load_type", text("stpd_file")),
                ("load_profile.schedule", text("a.stpd")),
            ],
            ConfigFormat::Yaml,
        );
        assert!(said.is_empty(), "{said:?}");
    }

    #[test]
    fn writelog_must_be_one_of_the_schemas_strings() {
        for ok in ["0", "all", "proto_warning", "proto_error"] {
            assert!(warnings(&[("writelog", text(ok))], ConfigFormat::Ini).is_empty());
        }
        let said = warnings(&[("writelog", text("1"))], ConfigFormat::Ini);
        assert!(
            said.len() == 1 && said[0].contains("`1` is not one of") && said[0].ends_with("all"),
            "{said:?}"
        );
        let said = warnings(&[("writelog", RawValue::Int(0))], ConfigFormat::Yaml);
        assert!(
            said.len() == 1 && said[0].contains("it wants a string, and this is an integer"),
            "{said:?}"
        );
    }

    #[test]
    fn uris_and_headers_must_be_lists_outside_ini() {
        let said = warnings(&[("uris", text("/\n/buy"))], ConfigFormat::Yaml);
        assert!(
            said.len() == 1 && said[0].contains("it wants a list, and this is a string"),
            "{said:?}"
        );
        assert!(warnings(&[("uris", text("/ /buy"))], ConfigFormat::Ini).is_empty());
        assert!(warnings(&[("uris", text("/ /buy"))], ConfigFormat::Toml).is_empty());
        assert!(warnings(&[("headers", RawValue::List(vec![]))], ConfigFormat::Yaml).is_empty());
    }
}
