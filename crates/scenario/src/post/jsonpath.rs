//! `var/jsonpath`: variables from the JSON body, by JSONPath (RFC 9535, with
//! serde_json_path: the standard's own syntax, its compliance suite passed,
//! parsed once at load).
//!
//! A path of names and indexes only (`$.auth_key`, `$.items[0]`) gives the one
//! value it matches; any other (a wildcard, a slice, a filter, a union,
//! descendants) gives the list of what it matches, as Pandora's JSONPath
//! library does. Matching nothing fails the run (Pandora would go on with
//! the variable unset).

use serde_json_path::JsonPath;

/// One variable's path.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    path: JsonPath,
    singular: bool,
}

impl Query {
    /// Parse `text`.
    pub(crate) fn parse(text: &str) -> Result<Query, String> {
        let path = JsonPath::parse(text).map_err(|e| format!("JSONPath `{text}`: {e}"))?;
        Ok(Query {
            path,
            singular: singular(text),
        })
    }

    /// What it matches in `document`: the value, or the list of values;
    /// `None` when it matches nothing.
    pub(crate) fn extract(&self, document: &serde_json::Value) -> Option<serde_json::Value> {
        let nodes = self.path.query(document);
        if nodes.is_empty() {
            return None;
        }
        if self.singular {
            return nodes.first().map(|v| (*v).clone());
        }
        Some(serde_json::Value::Array(
            nodes.iter().map(|v| (*v).clone()).collect(),
        ))
    }
}

/// Whether a path names one place: no wildcard, slice, filter, union or
/// descendant segment outside its quoted names.
fn singular(text: &str) -> bool {
    let mut quote = None;
    let mut escaped = false;
    let mut previous = '\0';
    for c in text.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '*' | '?' | ':' | ',' => return false,
            '.' if previous == '.' => return false,
            _ => {}
        }
        previous = c;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_singular_path_gives_its_value_and_others_a_list() {
        let doc = json!({"auth_key": "k", "items": [4, 5], "o": {"a.b": 1}});
        let get = |p: &str| Query::parse(p).unwrap().extract(&doc);
        assert_eq!(get("$.auth_key"), Some(json!("k")));
        assert_eq!(get("$.items[0]"), Some(json!(4)));
        assert_eq!(get("$.items"), Some(json!([4, 5])));
        assert_eq!(get("$.items[*]"), Some(json!([4, 5])));
        assert_eq!(get("$['o']['a.b']"), Some(json!(1)));
        assert_eq!(get("$..a"), None);
        assert_eq!(get("$.items[?@ > 4]"), Some(json!([5])));
        assert_eq!(get("$.missing"), None);
        assert_eq!(get("$.items[9]"), None);
    }

    #[test]
    fn a_bad_path_is_an_error() {
        assert!(Query::parse("$.a[").is_err());
        assert!(Query::parse("auth_key").is_err());
    }

    #[test]
    fn singularity_is_read_from_the_text() {
        assert!(singular("$.a.b[0]['c:d']"));
        assert!(!singular("$.a[*]"));
        assert!(!singular("$..a"));
        assert!(!singular("$.a[0:2]"));
        assert!(!singular("$.a[0,1]"));
        assert!(!singular("$.a[?@.x]"));
    }
}
