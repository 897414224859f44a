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
                    Ok((text, convert(value)?))
                })
                .collect::<Result<_, Fault>>()?,
        ),
    };
    Ok(Node::new(node.line, kind))
}
