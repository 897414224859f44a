//! The raw form every spelling is read into: sections of keyed values.
//!
//! It stays close to the file on purpose. Values keep the type the spelling
//! gave them (INI: always strings; TOML and YAML: native types), and each
//! entry keeps where it came from, so validation can say `file:line: [section] key`.
//! Nested maps directly under a section become dotted keys
//! (`load_profile: {schedule: ..}` → `load_profile.schedule`), the same
//! spelling INI accepts; maps inside lists stay tables (`phantom.multi`).

use crate::error::{ConfigError, Place};

/// A whole config file in raw form.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RawConfig {
    /// Sections in file order; names are lower-cased and unique.
    pub sections: Vec<RawSection>,
    /// What reading the spelling found worth a warning (a YAML section
    /// written twice), for the validated config's warnings.
    pub notes: Vec<ConfigError>,
}

/// One section (`[phantom]`, `autostop:`), or one `phantom.multi` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawSection {
    /// The name, lower-cased (`phantom-multi-<i>` or the entry's `name` for multi entries).
    pub name: String,
    /// Where the section starts.
    pub place: Place,
    /// `Some(i)` when this section is `phantom.multi[i]`: an extra queue whatever its name.
    pub multi_index: Option<usize>,
    /// The options; keys are unique (a later duplicate replaces the earlier value in place).
    pub entries: Vec<RawEntry>,
}

/// One `key = value`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawEntry {
    /// The key (INI: lower-cased; nested keys joined with `.`).
    pub key: String,
    /// The value as the spelling gave it.
    pub value: RawValue,
    /// Where the entry was written.
    pub place: Place,
}

/// A value before validation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawValue {
    /// A string (every INI value is one).
    Str(String),
    /// A native integer.
    Int(i64),
    /// A native float.
    Float(f64),
    /// A native boolean.
    Bool(bool),
    /// YAML `null` / `~` / an empty value.
    Null,
    /// A list.
    List(Vec<RawValue>),
    /// A map that is not directly under a section (e.g. an item of `multi`).
    Table(Vec<RawEntry>),
}

impl RawValue {
    /// A short name of the value's type, for "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            RawValue::Str(_) => "a string",
            RawValue::Int(_) => "an integer",
            RawValue::Float(_) => "a float",
            RawValue::Bool(_) => "a boolean",
            RawValue::Null => "null",
            RawValue::List(_) => "a list",
            RawValue::Table(_) => "a table",
        }
    }
}

impl RawSection {
    /// An empty section.
    pub fn new(name: &str, place: Place) -> Self {
        RawSection {
            name: name.to_lowercase(),
            place,
            multi_index: None,
            entries: Vec::new(),
        }
    }

    /// The entry for `key`, if set.
    pub fn get(&self, key: &str) -> Option<&RawEntry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// Sets `entry`, replacing an entry with the same key in place (last wins).
    pub fn set(&mut self, entry: RawEntry) {
        match self.entries.iter_mut().find(|e| e.key == entry.key) {
            Some(old) => *old = entry,
            None => self.entries.push(entry),
        }
    }

    /// Removes the entry for `key` and returns it.
    pub fn remove(&mut self, key: &str) -> Option<RawEntry> {
        let index = self.entries.iter().position(|e| e.key == key)?;
        Some(self.entries.remove(index))
    }

    /// Sets `key`, turning a table value into dotted keys (`a: {b: 1}` → `a.b = 1`).
    /// The monitoring sections' `config` stays a table: it is a host list whose
    /// host names may hold dots.
    pub fn set_flattened(&mut self, key: String, value: RawValue, place: Place) {
        let keeps_table =
            key == "config" && matches!(self.name.as_str(), "telegraf" | "monitoring");
        match value {
            RawValue::Table(entries) if !keeps_table => {
                for entry in entries {
                    let dotted = format!("{key}.{}", entry.key);
                    self.set_flattened(dotted, entry.value, entry.place);
                }
            }
            value => self.set(RawEntry { key, value, place }),
        }
    }
}

impl RawConfig {
    /// The section named `name`, if any.
    #[cfg(test)]
    pub fn section(&self, name: &str) -> Option<&RawSection> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The section named `name` (lower-cased), created at the end if absent.
    /// Duplicate sections merge, as Python's ConfigParser does.
    pub fn section_mut(&mut self, name: &str, place: Place) -> &mut RawSection {
        let name = name.to_lowercase();
        let index = match self.sections.iter().position(|s| s.name == name) {
            Some(index) => index,
            None => {
                self.sections.push(RawSection::new(&name, place));
                self.sections.len() - 1
            }
        };
        &mut self.sections[index]
    }

    /// Drops the section named `name` (lower-cased), if there is one: what
    /// it held, and where it began.
    pub fn drop_section(&mut self, name: &str) -> Option<RawSection> {
        let name = name.to_lowercase();
        let index = self.sections.iter().position(|s| s.name == name)?;
        Some(self.sections.remove(index))
    }

    /// Turns `phantom.multi` (a list of tables) into extra queue sections placed
    /// right after `[phantom]`, named by their `name` key or `phantom-multi-<i>`.
    pub fn split_multi(&mut self) -> Result<(), ConfigError> {
        let Some(index) = self.sections.iter().position(|s| s.name == "phantom") else {
            return Ok(());
        };
        let Some(multi) = self.sections[index].remove("multi") else {
            return Ok(());
        };
        let items = match multi.value {
            RawValue::List(items) => items,
            RawValue::Null => Vec::new(),
            other => {
                return Err(expected_multi(multi.place, other.type_name()));
            }
        };
        let mut extras = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let RawValue::Table(entries) = item else {
                return Err(expected_multi(multi.place, item.type_name()));
            };
            let place = entries.first().map_or(multi.place, |e| e.place);
            let name = entries
                .iter()
                .find(|e| e.key == "name")
                .and_then(|e| match &e.value {
                    RawValue::Str(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("phantom-multi-{i}"));
            let mut section = RawSection::new(&name, place);
            section.multi_index = Some(i);
            for entry in entries {
                section.set_flattened(entry.key, entry.value, entry.place);
            }
            extras.push(section);
        }
        let at = index + 1;
        self.sections.splice(at..at, extras);
        Ok(())
    }
}

fn expected_multi(place: Place, found: &str) -> ConfigError {
    let message = format!(
        "expected a list of tables (one per extra queue), found {found}; \
         in INI write extra queues as [phantom-N] sections"
    );
    ConfigError::new(message)
        .at(place)
        .in_section("phantom")
        .for_key("multi")
}

/// 1-based line number of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: RawValue) -> RawEntry {
        RawEntry {
            key: key.to_owned(),
            value,
            place: Place::Unknown,
        }
    }

    #[test]
    fn set_flattened_turns_nested_tables_into_dotted_keys() {
        let mut s = RawSection::new("phantom", Place::Unknown);
        let table = RawValue::Table(vec![
            entry("load_type", RawValue::Str("rps".into())),
            entry("schedule", RawValue::Str("const(1,1s)".into())),
        ]);
        s.set_flattened("load_profile".into(), table, Place::Unknown);
        let keys: Vec<_> = s.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["load_profile.load_type", "load_profile.schedule"]);
    }

    #[test]
    fn set_replaces_a_duplicate_key_in_place() {
        let mut s = RawSection::new("phantom", Place::Unknown);
        s.set(entry("a", RawValue::Int(1)));
        s.set(entry("b", RawValue::Int(2)));
        s.set(entry("a", RawValue::Int(3)));
        assert_eq!(
            s.entries,
            vec![entry("a", RawValue::Int(3)), entry("b", RawValue::Int(2))]
        );
    }

    #[test]
    fn split_multi_names_entries_and_places_them_after_phantom() {
        let mut raw = RawConfig::default();
        raw.section_mut("phantom", Place::Unknown).set(entry(
            "multi",
            RawValue::List(vec![
                RawValue::Table(vec![entry("address", RawValue::Str("a".into()))]),
                RawValue::Table(vec![entry("name", RawValue::Str("second".into()))]),
            ]),
        ));
        raw.section_mut("autostop", Place::Unknown);
        raw.split_multi().unwrap();
        let names: Vec<_> = raw.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["phantom", "phantom-multi-0", "second", "autostop"]);
        assert_eq!(raw.sections[2].multi_index, Some(1));
        assert!(raw.sections[0].get("multi").is_none());
    }

    #[test]
    fn split_multi_rejects_a_string() {
        let mut raw = RawConfig::default();
        raw.section_mut("phantom", Place::Line(2))
            .set(entry("multi", RawValue::Str("x".into())));
        let e = raw.split_multi().unwrap_err();
        assert_eq!(e.key(), Some("multi"));
        assert!(e.message().contains("found a string"), "{}", e.message());
    }

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
