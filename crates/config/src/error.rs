//! The one error type of the crate.
//!
//! A config error is only useful if it says where to look: the file, the line
//! when the spelling gives one (INI always, TOML and YAML best effort), or the
//! `-o` override it came from, then the section and key, then what was wrong
//! and what was expected. The parts are kept separate so callers (and tests)
//! can inspect them; `Display` joins them as
//! `load.ini:12: [phantom] rps_schedul: unknown option (did you mean `rps_schedule`?)`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in the input a problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A 1-based line of the config file.
    Line(usize),
    /// A `-o section.key=value` override on the command line.
    Override,
    /// Somewhere in the file, line unknown.
    Unknown,
}

/// A config that could not be read or does not describe a valid test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", Rendered(self))]
pub struct ConfigError {
    file: PathBuf,
    place: Place,
    section: Option<String>,
    key: Option<String>,
    message: String,
}

impl ConfigError {
    /// An error with only a message; add the rest with the `at_*` / `in_*` builders.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ConfigError {
            file: PathBuf::new(),
            place: Place::Unknown,
            section: None,
            key: None,
            message: message.into(),
        }
    }

    /// Sets the place (line or override) the problem comes from.
    pub(crate) fn at(mut self, place: Place) -> Self {
        self.place = place;
        self
    }

    /// Sets the section the problem is in.
    pub(crate) fn in_section(mut self, section: &str) -> Self {
        self.section = Some(section.to_owned());
        self
    }

    /// Sets the key the problem is about.
    pub(crate) fn for_key(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }

    /// The same error with `note` added to its message.
    pub(crate) fn with_note(mut self, note: &str) -> Self {
        self.message.push_str(note);
        self
    }

    /// Sets the file, once the caller knows it.
    pub(crate) fn in_file(mut self, file: &Path) -> Self {
        self.file = file.to_path_buf();
        self
    }

    /// The config file (as given by the caller).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The 1-based line, when the spelling gave one.
    pub fn line(&self) -> Option<usize> {
        match self.place {
            Place::Line(line) => Some(line),
            _ => None,
        }
    }

    /// Where the problem was found: a line, an override, or unknown.
    pub fn place(&self) -> Place {
        self.place
    }

    /// The section (lower-cased, as tank names it), if the problem is in one.
    pub fn section(&self) -> Option<&str> {
        self.section.as_deref()
    }

    /// The key, if the problem is about one option.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// What was wrong and what was expected, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Where an option's value was written: the file, the line (or `-o`), the
/// section and the key. A later stage that reads the value itself (the plan
/// parses the schedules) reports a problem with it through [`Self::error`], as
/// precisely located as the config's own errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionPlace {
    file: PathBuf,
    place: Place,
    section: String,
    key: String,
    /// Added to every error about the value: what in it looks like a comment.
    note: Option<String>,
}

impl OptionPlace {
    /// The option `key` of `section`, written at `place` in `file`.
    pub(crate) fn new(file: &Path, place: Place, section: &str, key: &str) -> Self {
        OptionPlace {
            file: file.to_path_buf(),
            place,
            section: section.to_owned(),
            key: key.to_owned(),
            note: None,
        }
    }

    /// The same place, its errors saying that the part of `value` that looks
    /// like a comment (` ;…`, ` #…`) is part of the value, when there is one:
    /// the tutorials write `rps_schedule = line(1, 10, 1m) ;load scheme`, and
    /// the error about the schedule is then about the comment.
    pub(crate) fn noting_comment(mut self, value: &crate::raw::RawValue) -> Self {
        self.note = crate::validate::comment_note(value);
        self
    }

    /// Option `key` of `section` in `file`, where no line is known (not written, defaulted).
    pub fn unwritten(file: &Path, section: &str, key: &str) -> OptionPlace {
        OptionPlace::new(file, Place::Unknown, section, key)
    }

    /// The same section and place, for `key` (an option the section did not set).
    pub(crate) fn with_key(&self, key: &str) -> OptionPlace {
        OptionPlace {
            key: key.to_owned(),
            ..self.clone()
        }
    }

    /// An error about the section this option is in, as a whole.
    pub(crate) fn section_error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::new(message)
            .at(self.place)
            .in_section(&self.section)
            .in_file(&self.file)
    }

    /// The key as the config spelled it (`rps_schedule`, `load_profile.schedule`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// An error about this option's value: `message` says what was wrong and what was expected.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        let mut message = message.into();
        if let Some(note) = &self.note {
            message.push_str(note);
        }
        ConfigError::new(message)
            .at(self.place)
            .in_section(&self.section)
            .for_key(&self.key)
            .in_file(&self.file)
    }
}

/// `Display` helper so the derive can render the location parts.
struct Rendered<'a>(&'a ConfigError);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        write!(f, "{}", e.file.display())?;
        match e.place {
            Place::Line(line) => write!(f, ":{line}: ")?,
            Place::Override => write!(f, ": -o ")?,
            Place::Unknown => write!(f, ": ")?,
        }
        match (&e.section, &e.key) {
            (Some(section), Some(key)) if e.place == Place::Override => {
                write!(f, "{section}.{key}: ")?
            }
            (Some(section), Some(key)) => write!(f, "[{section}] {key}: ")?,
            (Some(section), None) => write!(f, "[{section}]: ")?,
            (None, Some(key)) => write!(f, "{key}: ")?,
            (None, None) => {}
        }
        write!(f, "{}", e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_section_key_and_message() {
        let e = ConfigError::new("unknown option (did you mean `rps_schedule`?)")
            .at(Place::Line(12))
            .in_section("phantom")
            .for_key("rps_schedul")
            .in_file(Path::new("load.ini"));
        assert_eq!(
            e.to_string(),
            "load.ini:12: [phantom] rps_schedul: unknown option (did you mean `rps_schedule`?)"
        );
    }

    #[test]
    fn display_of_an_override_error_names_the_override() {
        let e = ConfigError::new("expected an integer, found `x`")
            .at(Place::Override)
            .in_section("phantom")
            .for_key("instances")
            .in_file(Path::new("load.yaml"));
        assert_eq!(
            e.to_string(),
            "load.yaml: -o phantom.instances: expected an integer, found `x`"
        );
    }

    #[test]
    fn an_option_place_locates_errors_about_its_value() {
        let place = OptionPlace::new(
            Path::new("load.yaml"),
            Place::Line(5),
            "phantom",
            "load_profile.schedule",
        );
        assert_eq!(place.key(), "load_profile.schedule");
        let e = place.error("step `const(-1,1s)`: expected a rate of 0 or more");
        assert_eq!(
            e.to_string(),
            "load.yaml:5: [phantom] load_profile.schedule: step `const(-1,1s)`: expected a rate of 0 or more"
        );
        assert_eq!(e.line(), Some(5));
    }

    #[test]
    fn display_without_line_or_key() {
        let e =
            ConfigError::new("no [phantom] section: nothing to run").in_file(Path::new("a.ini"));
        assert_eq!(e.to_string(), "a.ini: no [phantom] section: nothing to run");
        let e = ConfigError::new("unrecognized section")
            .at(Place::Line(3))
            .in_section("foo")
            .in_file(Path::new("a.ini"));
        assert_eq!(e.to_string(), "a.ini:3: [foo]: unrecognized section");
    }
}
