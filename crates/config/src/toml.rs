//! The TOML reader: the INI sections and keys, with native TOML values.
//!
//! `[phantom]`, `[phantom-1]`, `[autostop]`, `[tank]`... are tables; values may
//! be native (`loop = 3`, `ssl = true`, `uris = ["/a", "/b"]`) or the strings an
//! INI file would hold (`loop = "3"`). `[phantom.load_profile]` and
//! `[[phantom.multi]]` spell the YAML structure. Sections and keys are taken in
//! file order (by their position in the text), and every entry gets the line
//! of its key.

use ::toml::de::{DeTable, DeValue};
use ::toml::Spanned;

use crate::error::{ConfigError, Place};
use crate::raw::{line_of, RawConfig, RawEntry, RawValue};

/// Deepest nesting of arrays/tables accepted (keeps conversion recursion bounded).
const MAX_DEPTH: usize = 64;

/// Reads TOML text into the raw form.
pub(crate) fn read(text: &str) -> Result<RawConfig, ConfigError> {
    let document = DeTable::parse(text).map_err(|e| {
        let place = e.span().map_or(Place::Unknown, |span| {
            Place::Line(line_of(text, span.start))
        });
        ConfigError::new(format!("invalid TOML: {}", e.message().trim_end())).at(place)
    })?;
    let mut raw = RawConfig::default();
    for (key, value) in in_file_order(document.get_ref()) {
        let place = Place::Line(line_of(text, key.span().start));
        let name = key.get_ref().as_ref();
        let DeValue::Table(table) = value.get_ref() else {
            let message = format!(
                "`{name}` is outside any section; TOML configs keep options in \
                 tables such as [phantom]"
            );
            return Err(ConfigError::new(message).at(place).for_key(name));
        };
        let section = raw.section_mut(name, place);
        for (key, value) in in_file_order(table) {
            let place = Place::Line(line_of(text, key.span().start));
            let converted = convert(text, value, 0).map_err(|e| {
                e.at(place)
                    .in_section(&name.to_lowercase())
                    .for_key(key.get_ref())
            })?;
            section.set_flattened(key.get_ref().to_string(), converted, place);
        }
    }
    Ok(raw)
}

/// A table's entries sorted by where their keys are written.
fn in_file_order<'a, 'i>(
    table: &'a DeTable<'i>,
) -> Vec<(
    &'a Spanned<std::borrow::Cow<'i, str>>,
    &'a Spanned<DeValue<'i>>,
)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

fn convert(
    text: &str,
    value: &Spanned<DeValue<'_>>,
    depth: usize,
) -> Result<RawValue, ConfigError> {
    if depth > MAX_DEPTH {
        return Err(ConfigError::new("nested too deeply"));
    }
    Ok(match value.get_ref() {
        DeValue::String(s) => RawValue::Str(s.to_string()),
        DeValue::Integer(i) => {
            let parsed = i64::from_str_radix(i.as_str(), i.radix()).map_err(|_| {
                ConfigError::new(format!("integer `{}` is out of range", i.as_str()))
            })?;
            RawValue::Int(parsed)
        }
        DeValue::Float(f) => {
            let parsed: f64 = f
                .as_str()
                .parse()
                .map_err(|_| ConfigError::new(format!("cannot read float `{}`", f.as_str())))?;
            RawValue::Float(parsed)
        }
        DeValue::Boolean(b) => RawValue::Bool(*b),
        DeValue::Datetime(d) => RawValue::Str(d.to_string()),
        DeValue::Array(items) => RawValue::List(
            items
                .iter()
                .map(|item| convert(text, item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(table) => {
            let mut entries = Vec::new();
            for (key, value) in in_file_order(table) {
                entries.push(RawEntry {
                    key: key.get_ref().to_string(),
                    value: convert(text, value, depth + 1)?,
                    place: Place::Line(line_of(text, key.span().start)),
                });
            }
            RawValue::Table(entries)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_file_order_and_native_types() {
        let raw = read(
            "[phantom]\naddress = \"h:1\"\nloop = 3\nssl = true\nheader_http = 1.1\n\
             uris = [\"/a\", \"/b\"]\n\n[autostop]\nautostop = \"time(1s,1s)\"\n\n[phantom-1]\n",
        )
        .unwrap();
        let names: Vec<_> = raw.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["phantom", "autostop", "phantom-1"]);
        let p = raw.section("phantom").unwrap();
        assert_eq!(p.get("loop").unwrap().value, RawValue::Int(3));
        assert_eq!(p.get("loop").unwrap().place, Place::Line(3));
        assert_eq!(p.get("ssl").unwrap().value, RawValue::Bool(true));
        assert_eq!(p.get("header_http").unwrap().value, RawValue::Float(1.1));
        assert_eq!(
            p.get("uris").unwrap().value,
            RawValue::List(vec![RawValue::Str("/a".into()), RawValue::Str("/b".into())])
        );
    }

    #[test]
    fn subtables_become_dotted_keys_and_table_arrays_stay_lists() {
        let raw = read(
            "[phantom.load_profile]\nload_type = \"rps\"\nschedule = \"const(1,1s)\"\n\
             [[phantom.multi]]\naddress = \"x\"\n",
        )
        .unwrap();
        let p = raw.section("phantom").unwrap();
        assert_eq!(
            p.get("load_profile.schedule").unwrap().value,
            RawValue::Str("const(1,1s)".into())
        );
        assert!(matches!(p.get("multi").unwrap().value, RawValue::List(_)));
    }

    #[test]
    fn a_key_outside_a_section_is_an_error() {
        let e = read("address = \"x\"\n").unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert_eq!(e.key(), Some("address"));
    }

    #[test]
    fn a_syntax_error_has_a_line() {
        let e = read("[phantom]\n\nrps_schedule = line(1,2,3s)\n").unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(e.message().starts_with("invalid TOML"), "{}", e.message());
    }
}
