//! The YAML spelling: read through tank-config's marked YAML tree, which keeps
//! lines and expands anchors and merge keys (`<<: *common-headers`, as
//! Pandora's `locals` are used in YAML).

use tank_config::yaml_tree::{self, Scalar};

use super::{Kind, Node};
use crate::error::Fault;

/// Read a YAML scenario file.
pub(crate) fn read(text: &str) -> Result<Node, Fault> {
    let root = yaml_tree::parse(text).map_err(|e| Fault::new(e.line, e.message))?;
    match root {
        Some(root) => convert(root),
        None => Ok(Node::new(1, Kind::Map(Vec::new()))),
    }
}

fn convert(node: yaml_tree::Node) -> Result<Node, Fault> {
    let kind = match node.kind {
        yaml_tree::Kind::Scalar(scalar) => match scalar {
            Scalar::Str(s) => Kind::Str(s),
            Scalar::Int(i) => Kind::Int(i),
            Scalar::Float(f) => Kind::Float(f),
            Scalar::Bool(b) => Kind::Bool(b),
            Scalar::Null => Kind::Null,
        },
        yaml_tree::Kind::Seq(items) => {
            Kind::List(items.into_iter().map(convert).collect::<Result<_, _>>()?)
        }
        yaml_tree::Kind::Map(pairs) => Kind::Map(
            pairs
                .into_iter()
                .map(|(key, value)| {
                    let text = match &key.kind {
                        yaml_tree::Kind::Scalar(scalar) => scalar.text(),
                        _ => None,
                    };
                    let text = text.ok_or_else(|| {
                        Fault::new(
                            key.line,
                            "expected a plain key (a name, not a list or a mapping)",
                        )
                    })?;
                    let mut value = convert(value)?;
                    // A block list or mapping starts on the line after its key; an
                    // error about the key's value (`calls`, an unknown key) is at the key.
                    if matches!(value.kind, Kind::List(_) | Kind::Map(_)) {
                        value.line = value.line.min(key.line);
                    }
                    Ok((text, value))
                })
                .collect::<Result<_, Fault>>()?,
        ),
    };
    Ok(Node::new(node.line, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_value_is_at_its_keys_line() {
        let root = read("a: 1\nb:\n  - x\n  - y\nc:\n  d: 1\n").unwrap();
        let Kind::Map(pairs) = &root.kind else {
            panic!("{root:?}")
        };
        let lines: Vec<usize> = pairs.iter().map(|(_, value)| value.line).collect();
        assert_eq!(lines, [1, 2, 5]);
        let Kind::List(items) = &pairs[1].1.kind else {
            panic!("{root:?}")
        };
        assert_eq!(items[1].line, 4);
    }
}
