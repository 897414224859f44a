//! The docs' INI examples as a user pastes them: INI has no comment after a
//! value (yandex-tank's ConfigParser, and tank, read it as part of the value),
//! so an example with one does not do what it says (`ssl = 1 ; TLS` is false).

use std::path::{Path, PathBuf};

/// README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("a docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages
}

/// `page:line: text` of each option line in an ```ini block whose value holds
/// a comment-like `;` or `#` after a space.
fn commented_values(page: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_ini = false;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_ini = !in_ini && line.trim() == "```ini";
            continue;
        }
        let Some((_, value)) = line.split_once('=').filter(|_| in_ini) else {
            continue;
        };
        if line.starts_with([';', '#', '[']) {
            continue;
        }
        let bytes = value.trim().as_bytes();
        if bytes
            .windows(2)
            .any(|pair| pair[0].is_ascii_whitespace() && matches!(pair[1], b';' | b'#'))
        {
            found.push(format!("{}:{}: {line}", page.display(), index + 1));
        }
    }
    found
}

#[test]
fn no_ini_example_has_a_comment_after_a_value() {
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page");
        found.extend(commented_values(&page, &text));
    }
    assert!(
        found.is_empty(),
        "comments after values, which INI reads as part of them:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_comment_after_a_value_and_nothing_else() {
    let text = "```ini\n[phantom]\n; a comment\nssl = 1   ; TLS\nheaders = [Cookie: a=1; b=2]\n```\nssl = 1 ; prose\n";
    assert_eq!(
        commented_values(Path::new("p.md"), text),
        ["p.md:4: ssl = 1   ; TLS"]
    );
}
