//! `[grpc]`: tank's own section, the schema of queues with `tank_type = grpc`
//! (the `.proto` files and where their imports are found, or the server's
//! reflection service when none is named) and the calls' `:authority`.
//!
//! The config crate checks what the text alone can tell; the files are read,
//! and the schema compiled, by the plan, so an error in a `.proto` file is
//! found by `tank plan` before the first shot.

use std::path::{Path, PathBuf};

use crate::convert;
use crate::error::{ConfigError, OptionPlace};
use crate::model::{GrpcConfig, GrpcSchema, TestConfig};
use crate::queue::entry_error;
use crate::raw::{RawConfig, RawSection};

/// Reads an enabled `[grpc]` section of the config at `file`.
pub(crate) fn read(section: &RawSection, file: &Path) -> Result<GrpcConfig, ConfigError> {
    let mut files = Vec::new();
    let mut import_paths = Vec::new();
    let mut authority = None;
    for entry in &section.entries {
        let fail = |message: String| entry_error(&section.name, entry, message);
        let list = || -> Result<Vec<PathBuf>, ConfigError> {
            Ok(convert::list(&entry.value)
                .map_err(fail)?
                .unwrap_or_default()
                .iter()
                .filter(|item| !item.is_empty())
                .map(|item| convert::expand_user(item))
                .collect())
        };
        match entry.key.as_str() {
            "proto" => files = list()?,
            "import_paths" => import_paths = list()?,
            "authority" => {
                let text = convert::string(&entry.value)
                    .map_err(fail)?
                    .unwrap_or_default();
                let text = text.trim();
                if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(fail(format!(
                        "expected an authority, host[:port], found `{text}`"
                    )));
                }
                authority = (!text.is_empty()).then(|| text.to_owned());
            }
            // Checked against the table before: `enabled`, `package`.
            _ => {}
        }
    }
    if files.is_empty() && !import_paths.is_empty() {
        let entry = section.get("import_paths");
        let message = "`import_paths` says where the imports of the `proto` files are \
                       found: expected `proto` too (without it the schema comes from the \
                       server's reflection service)";
        return Err(match entry {
            Some(entry) => entry_error(&section.name, entry, message),
            None => ConfigError::new(message).in_section(&section.name),
        });
    }
    let schema = if files.is_empty() {
        GrpcSchema::Reflection
    } else {
        GrpcSchema::Protos {
            files,
            import_paths,
        }
    };
    // The schema's errors are about `proto`: its line, or its `-o`.
    let place = section
        .get("proto")
        .map_or(section.place, |entry| entry.place);
    Ok(GrpcConfig {
        schema,
        authority,
        place: OptionPlace::new(file, place, &section.name, "proto"),
    })
}

/// The schema of a grpc queue when the config has no `[grpc]` section: the
/// server's reflection service.
pub(crate) fn reflection(file: &Path, queue: &str) -> GrpcConfig {
    GrpcConfig {
        schema: GrpcSchema::Reflection,
        authority: None,
        place: OptionPlace::unwritten(file, queue, "tank_type"),
    }
}

/// A `[grpc]` section that no queue uses would be silently ignored: it is an
/// error instead.
pub(crate) fn check_used(raw: &RawConfig, config: &TestConfig) -> Result<(), ConfigError> {
    let used = config.queues.iter().any(|q| q.grpc.is_some());
    if config.grpc.is_none() || used {
        return Ok(());
    }
    let error = ConfigError::new(
        "no queue uses this schema: it describes the calls of queues with `tank_type = grpc`",
    );
    Err(match raw.sections.iter().find(|s| s.name == "grpc") {
        Some(section) => error.at(section.place).in_section(&section.name),
        None => error.in_section("grpc"),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{load_str, ConfigFormat, Override};

    fn proto_error(overrides: &[&str]) -> String {
        let text = "[phantom]\naddress = h:80\ntank_type = grpc\nammofile = c.jsonl\n\
                    rps_schedule = const(1,1s)\n[grpc]\nimport_paths = p\n\nproto = a.proto\n";
        let overrides: Vec<Override> = overrides.iter().map(|o| o.parse().unwrap()).collect();
        let config = load_str(text, ConfigFormat::Ini, Path::new("g.ini"), &overrides).unwrap();
        config.grpc.unwrap().place.error("bad").to_string()
    }

    #[test]
    fn schema_errors_point_at_the_proto_line_or_its_override() {
        assert_eq!(proto_error(&[]), "g.ini:9: [grpc] proto: bad");
        assert_eq!(
            proto_error(&["grpc.proto=p/b.proto"]),
            "g.ini: -o grpc.proto: bad"
        );
    }
}
