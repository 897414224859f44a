//! The JSON spelling. serde_json judges the text (its errors are JSON's own,
//! at line and column); the tree with lines is then read by the YAML reader,
//! since JSON is YAML's flow style. A tab is whitespace to JSON but may not
//! indent YAML, and valid JSON has tabs only between tokens (inside a string
//! it writes `\t`), so tabs become spaces first: lines do not move.

use super::{yaml, Node};
use crate::error::Fault;

/// Read a JSON scenario file.
pub(crate) fn read(text: &str) -> Result<Node, Fault> {
    if let Err(error) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(Fault::new(error.line(), format!("invalid JSON: {error}")));
    }
    yaml::read(&text.replace('\t', " "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Kind;

    #[test]
    fn tab_indented_json_keeps_its_lines() {
        let node = read("{\n\t\"requests\": [\n\t\t{\"name\": \"a\"}\n\t]\n}\n").unwrap();
        let Kind::Map(pairs) = &node.kind else {
            panic!("{node:?}")
        };
        let Kind::List(items) = &pairs[0].1.kind else {
            panic!()
        };
        assert_eq!(items[0].line, 3);
    }

    #[test]
    fn invalid_json_is_reported_at_its_line() {
        let error = read("{\n  \"a\": 1,\n}\n").unwrap_err();
        assert_eq!(error.line, 3);
        assert!(
            error.message.starts_with("invalid JSON"),
            "{}",
            error.message
        );
    }
}
