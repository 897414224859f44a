//! tank-config: read a yandex-tank config in any of its spellings into one [`TestConfig`].
//!
//! Two stages, as ripgrep parses flags: first each spelling is read into a raw
//! section/key/value form that stays close to the file (so errors can name the
//! file, line, section and key), then that raw form is validated into the typed
//! model in [`model`]. INI values are converted exactly as yandex-tank's config
//! converter does (lists split on whitespace, `headers` by `[...]` groups,
//! booleans via `int()` or `true`), TOML and YAML values may be native types or
//! the same strings.
//!
//! ```text
//! load.ini  ─ ini.rs  ─┐
//! load.toml ─ toml.rs ─┼─ raw form ─ phantom.multi split ─ -o overrides ─ validate.rs ─ TestConfig
//! load.yaml ─ yaml.rs ─┘
//! ```
//!
//! # Choosing the spelling
//! By extension: `.ini`, `.cfg`, `.conf` → INI; `.toml` → TOML; `.yaml`, `.yml`
//! → YAML. Any other name is sniffed from the text (see [`sniff_format`]), and
//! read as YAML when the text does not tell, as yandex-tank reads it.
//!
//! # Queues
//! `[phantom]` is the first queue; every other section whose name starts with
//! `phantom` (`[phantom-1]`, `[phantom-api]`, as yandex-tank's `re.match`
//! does) is an extra queue, in file order. In YAML (and TOML) the extra queues
//! are the entries of `phantom.multi`; each is named by its `name` option, or
//! `phantom-multi-<i>` (0-based) when it has none. Extra queues inherit every
//! `[phantom]` option they do not set.

#![warn(missing_docs)]

use std::path::Path;

pub mod arrivals;
pub mod bounds;
mod convert;
pub mod duration;
mod error;
mod export;
mod grpc;
mod ini;
pub mod job;
pub mod memcached;
pub mod model;
mod monitoring;
mod monitoring_hosts;
mod mysql;
mod options;
mod origin;
mod overrides;
pub mod pynum;
mod queue;
mod raw;
mod reference_validator;
pub mod search;
mod sections;
mod seed;
mod toml;
pub mod units;
mod validate;
pub mod web;
mod yaml;
pub mod yaml_tree;

pub use arrivals::{ArrivalProcess, Arrivals};
pub use error::{ConfigError, OptionPlace, Place};
pub use job::Job;
pub use model::*;
pub use overrides::{Override, OverrideParseError};
pub use search::SearchConfig;
pub use web::WebConfig;

/// Reads the config at `path`, applies `overrides` in order, and validates it.
///
/// The spelling is chosen by extension, else sniffed ([`sniff_format`]).
pub fn load(path: &Path, overrides: &[Override]) -> Result<TestConfig, ConfigError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ConfigError::new(format!("cannot read the config: {e}")).in_file(path))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = raw::line_of(
            &String::from_utf8_lossy(e.as_bytes()),
            e.utf8_error().valid_up_to(),
        );
        ConfigError::new("the config is not valid UTF-8")
            .at(Place::Line(line))
            .in_file(path)
    })?;
    // As yandex-tank, a name that does not tell is read as YAML, unless the text says otherwise.
    let format = format_from_extension(path)
        .or_else(|| sniff_format(&text))
        .unwrap_or(ConfigFormat::Yaml);
    load_str(&text, format, path, overrides)
}

/// Reads config `text` in `format` (errors name `path`), applies `overrides`, and validates it.
pub fn load_str(
    text: &str,
    format: ConfigFormat,
    path: &Path,
    overrides: &[Override],
) -> Result<TestConfig, ConfigError> {
    let result = (|| {
        let mut raw = match format {
            ConfigFormat::Ini => ini::read(text)?,
            ConfigFormat::Toml => toml::read(text)?,
            ConfigFormat::Yaml => yaml::read(text)?,
        };
        raw.split_multi()?;
        overrides::apply(&mut raw, overrides);
        validate::validate(&raw, path, format)
    })();
    result.map_err(|e| e.in_file(path))
}

/// A config made of options alone, as if each were a `-o section.key=value`
/// on an empty file: for commands that take a target on the command line
/// (`tank bench URL`). The options are checked, and defaults filled in,
/// exactly as a file's; `path` names the config in errors and reports.
pub fn from_options(path: &Path, options: &[Override]) -> Result<TestConfig, ConfigError> {
    load_str("", ConfigFormat::Ini, path, options)
}

/// The spelling a file name implies: `.ini`/`.cfg`/`.conf`, `.toml`, `.yaml`/`.yml`
/// (case-insensitive); `None` for anything else.
pub fn format_from_extension(path: &Path) -> Option<ConfigFormat> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "ini" | "cfg" | "conf" => Some(ConfigFormat::Ini),
        "toml" => Some(ConfigFormat::Toml),
        "yaml" | "yml" => Some(ConfigFormat::Yaml),
        _ => None,
    }
}

/// Guesses the spelling of a config whose name does not tell.
///
/// The first line that is not blank or a `#`/`;` comment decides: if it is a
/// `[section]` header, the text is TOML when it parses as TOML and INI
/// otherwise (most `load.ini` files are not valid TOML: `address = host:80`);
/// if not, the text is YAML when it parses as a YAML mapping. Anything else
/// (`None`) is undecidable.
pub fn sniff_format(text: &str) -> Option<ConfigFormat> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))?;
    if first.starts_with('[') {
        if toml::read(text).is_ok() {
            return Some(ConfigFormat::Toml);
        }
        return Some(ConfigFormat::Ini);
    }
    match yaml::read(text) {
        Ok(raw) if !raw.sections.is_empty() => Some(ConfigFormat::Yaml),
        _ => None,
    }
}

#[cfg(test)]
mod load_tests;

#[cfg(test)]
mod proptests;
