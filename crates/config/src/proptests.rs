//! Property tests: no input makes a reader panic, and every refusal names the
//! file and, where the text has one, the place; INI keys and values round trip.
//!
//! The fuzz targets feed each spelling arbitrary text, arbitrary bytes, and the
//! example configs of `configs/` with a few structured mutations (bytes flipped,
//! snippets that matter to the syntax inserted, ranges cut or doubled), which
//! reach the validation stage far more often than random text does.

use std::path::Path;

use crate::{load, load_str, ConfigError, ConfigFormat, Place};

use proptest::prelude::*;
use tank_testkit::mutation::{mutate, mutation};

/// Valid configs in every spelling: the seeds the mutations start from.
const SEEDS: [(&str, ConfigFormat); 7] = [
    (include_str!("../../../configs/line.ini"), ConfigFormat::Ini),
    (
        include_str!("../../../configs/multi.ini"),
        ConfigFormat::Ini,
    ),
    (
        include_str!("../../../configs/access.ini"),
        ConfigFormat::Ini,
    ),
    (
        include_str!("../../../configs/instances.ini"),
        ConfigFormat::Ini,
    ),
    (
        include_str!("../../../configs/origin-demo.ini"),
        ConfigFormat::Ini,
    ),
    (
        include_str!("../../../configs/uris.toml"),
        ConfigFormat::Toml,
    ),
    (
        include_str!("../../../configs/load.yaml"),
        ConfigFormat::Yaml,
    ),
];

/// Text that matters to one spelling or another, and numbers at the edges.
const SNIPPETS: [&[u8]; 24] = [
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"=",
    b":",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b"'",
    b"#",
    b";",
    b",",
    b"- ",
    b"&a ",
    b"*a",
    b"-1",
    b"0",
    b"99999999999999999999",
    b"1e999",
    b"\n[phantom-1]\n",
    b"\nphantom:\n  multi: [x]\n",
];

/// A refusal must name the file, and a line inside it when it names one.
fn check_located(error: &ConfigError, path: &Path, text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(error.file(), path, "{}", error);
    prop_assert!(!error.message().is_empty(), "{}", error);
    prop_assert!(
        error.to_string().starts_with(&*path.to_string_lossy()),
        "{}",
        error
    );
    if let Place::Line(line) = error.place() {
        let lines = text.split('\n').count();
        prop_assert!(
            (1..=lines).contains(&line),
            "line {} of {}: {}",
            line,
            lines,
            error
        );
    }
    prop_assert!(
        error.place() != Place::Override,
        "no override was given: {}",
        error
    );
    Ok(())
}

fn file_name(format: ConfigFormat) -> &'static Path {
    Path::new(match format {
        ConfigFormat::Ini => "fuzz.ini",
        ConfigFormat::Toml => "fuzz.toml",
        ConfigFormat::Yaml => "fuzz.yaml",
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn mutated_examples_load_or_fail_naming_file_and_line(
        seed in 0..SEEDS.len(),
        mutations in proptest::collection::vec(mutation(&SNIPPETS), 1..5),
    ) {
        let (text, format) = SEEDS[seed];
        let mutated = mutate(text.as_bytes().to_vec(), &mutations);
        let text = String::from_utf8_lossy(&mutated);
        let path = file_name(format);
        if let Err(error) = load_str(&text, format, path, &[]) {
            check_located(&error, path, &text)?;
        }
    }

    #[test]
    fn any_text_in_any_spelling_loads_or_fails_naming_file_and_line(
        text in "\\PC{0,200}",
        format in proptest::sample::select(&[ConfigFormat::Ini, ConfigFormat::Toml, ConfigFormat::Yaml][..]),
    ) {
        let path = file_name(format);
        if let Err(error) = load_str(&text, format, path, &[]) {
            check_located(&error, path, &text)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_bytes_in_a_file_load_or_fail_naming_it(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        name in proptest::sample::select(&["load.ini", "load.toml", "load.yaml", "load.conf", "load"][..]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        if let Err(error) = load(&path, &[]) {
            check_located(&error, &path, &String::from_utf8_lossy(&bytes))?;
        }
    }
}

proptest! {
    #[test]
    fn ini_line_soup_loads_or_fails_naming_file_and_line(lines in proptest::collection::vec("[ \t]{0,3}[\\[\\]=:#;a-z0-9 ]{0,12}", 0..20)) {
        let text = lines.join("\n");
        let _ = crate::ini::read(&text);
        if let Err(error) = load_str(&text, ConfigFormat::Ini, Path::new("x.ini"), &[]) {
            check_located(&error, Path::new("x.ini"), &text)?;
        }
    }

    #[test]
    fn yaml_structure_soup_loads_or_fails_naming_file_and_line(lines in proptest::collection::vec("[ ]{0,4}[-:{}\\[\\],&*!'\"a-z0-9 ]{0,12}", 0..20)) {
        let text = lines.join("\n");
        if let Err(error) = load_str(&text, ConfigFormat::Yaml, Path::new("x.yaml"), &[]) {
            check_located(&error, Path::new("x.yaml"), &text)?;
        }
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
