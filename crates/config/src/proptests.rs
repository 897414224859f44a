//! Property tests: no input makes a reader panic; INI keys and values round trip.

use std::path::Path;

use crate::{load_str, ConfigFormat};

use proptest::prelude::*;

proptest! {
    #[test]
    fn ini_reader_never_panics(text in "\\PC*") {
        let _ = crate::ini::read(&text);
        let _ = load_str(&text, ConfigFormat::Ini, Path::new("x.ini"), &[]);
    }

    #[test]
    fn ini_reader_never_panics_on_line_soup(lines in proptest::collection::vec("[ \t]{0,3}[\\[\\]=:#;a-z0-9 ]{0,12}", 0..20)) {
        let text = lines.join("\n");
        let _ = load_str(&text, ConfigFormat::Ini, Path::new("x.ini"), &[]);
    }

    #[test]
    fn toml_reader_never_panics(text in "\\PC*") {
        let _ = load_str(&text, ConfigFormat::Toml, Path::new("x.toml"), &[]);
    }

    #[test]
    fn yaml_reader_never_panics(text in "\\PC*") {
        let _ = load_str(&text, ConfigFormat::Yaml, Path::new("x.yaml"), &[]);
    }

    #[test]
    fn yaml_reader_never_panics_on_structure_soup(lines in proptest::collection::vec("[ ]{0,4}[-:{}\\[\\],&*!'\"a-z0-9 ]{0,12}", 0..20)) {
        let _ = load_str(&lines.join("\n"), ConfigFormat::Yaml, Path::new("x.yaml"), &[]);
    }

    #[test]
    fn ini_round_trips_generated_keys_and_values(
        entries in proptest::collection::btree_map("[a-z][a-z0-9_]{0,8}", "[!-~]([ -~]{0,20}[!-~])?", 1..10)
    ) {
        let mut text = String::from("[section]\n");
        for (key, value) in &entries {
            text.push_str(&format!("{key} = {value}\n"));
        }
        let raw = crate::ini::read(&text).unwrap();
        let section = raw.section("section").unwrap();
        prop_assert_eq!(section.entries.len(), entries.len());
        for (key, value) in &entries {
            prop_assert_eq!(&section.get(key).unwrap().value, &crate::raw::RawValue::Str(value.clone()));
        }
    }
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    let deep = format!(
        "phantom:\n  a: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(load_str(&deep, ConfigFormat::Yaml, Path::new("x.yaml"), &[]).is_err());
    let deep = format!(
        "[phantom]\na = {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(load_str(&deep, ConfigFormat::Toml, Path::new("x.toml"), &[]).is_err());
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    assert!(load_str(laughs, ConfigFormat::Yaml, Path::new("x.yaml"), &[]).is_err());
}
