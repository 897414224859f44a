//! A gRPC schema: the services, methods and messages the calls are checked
//! against and encoded with.
//!
//! Two sources, one result (a prost-reflect `DescriptorPool`):
//! - `.proto` files, compiled in-process by protox (a Rust protobuf
//!   compiler: no protoc to install, nothing spawned). Each file is found in
//!   the import paths, then in its own directory; imports likewise, and
//!   Google's well-known types (`google/protobuf/*.proto`) are built in.
//! - A server's reflection answers: the `FileDescriptorProto`s it sent,
//!   in any order, which a `FileDescriptorSet` of them carries to the plan.

use std::path::{Path, PathBuf};

use prost::Message;
use prost_reflect::prost_types::{FileDescriptorProto, FileDescriptorSet};
use prost_reflect::{DescriptorPool, MethodDescriptor};

/// The services and messages of a gRPC target.
#[derive(Debug, Clone)]
pub struct Schema {
    pool: DescriptorPool,
}

impl Schema {
    /// Compile `files` with their imports found in `import_paths` (then in
    /// each file's own directory). The error names the file as written, and
    /// the line where the compiler found the problem; a file that is nowhere
    /// is named with the import paths it was looked for in.
    pub fn compile(files: &[PathBuf], import_paths: &[PathBuf]) -> Result<Schema, String> {
        let mut includes: Vec<PathBuf> = import_paths.to_vec();
        // What protox is given to open, and (the name it reports, the file
        // as written) for files given as paths.
        let mut opens = Vec::with_capacity(files.len());
        let mut written = Vec::new();
        for file in files {
            // A name found in an import path is compiled from there (as
            // protoc and ghz read it), and opened by that path: protox takes
            // a bare name that some include (`.`) also prefixes for a path,
            // and then says the file is "shadowed".
            let found = import_paths
                .iter()
                .map(|p| p.join(file))
                .find(|path| file.is_relative() && path.is_file());
            if let Some(path) = found {
                opens.push(path);
                continue;
            }
            if !file.is_file() {
                return Err(not_found(file, import_paths));
            }
            // Otherwise it is a path, and its directory is where its
            // imports are looked for too.
            let dir = match file.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if let Some(name) = file.file_name() {
                written.push((name.to_string_lossy().into_owned(), file.clone()));
            }
            if !includes.contains(&dir) {
                includes.push(dir);
            }
            opens.push(file.clone());
        }
        let describe = |e: protox::Error| describe(&e, &written);
        let mut compiler = protox::Compiler::new(&includes).map_err(describe)?;
        compiler.include_imports(true).include_source_info(false);
        for file in &opens {
            compiler.open_file(file).map_err(describe)?;
        }
        Ok(Schema {
            pool: compiler.descriptor_pool(),
        })
    }

    /// The schema a serialized `FileDescriptorSet` describes (what
    /// [`Schema::to_descriptor_set`] wrote).
    pub fn from_descriptor_set(bytes: &[u8]) -> Result<Schema, String> {
        let set = FileDescriptorSet::decode(bytes)
            .map_err(|e| format!("not a FileDescriptorSet: {e}"))?;
        Schema::from_files(set.file)
    }

    /// The schema of `files`, each with every file it imports among them,
    /// in any order (as a reflection service sends them).
    pub fn from_files(files: Vec<FileDescriptorProto>) -> Result<Schema, String> {
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(order_by_imports(files))
            .map_err(|e| e.to_string())?;
        Ok(Schema { pool })
    }

    /// The schema as a serialized `FileDescriptorSet`.
    pub fn to_descriptor_set(&self) -> Vec<u8> {
        let set = FileDescriptorSet {
            file: self.pool.file_descriptor_protos().cloned().collect(),
        };
        set.encode_to_vec()
    }

    /// The services it has, by full name.
    pub fn services(&self) -> Vec<String> {
        self.pool
            .services()
            .map(|s| s.full_name().to_owned())
            .collect()
    }

    /// The method `call` names, Pandora's way (`pkg.Service.Method`) or
    /// gRPC's (`pkg.Service/Method`); the error says what the schema has.
    pub fn method(&self, call: &str) -> Result<MethodDescriptor, String> {
        let split = call.rfind('/').or_else(|| call.rfind('.'));
        let Some(at) = split.filter(|&at| at > 0 && at + 1 < call.len()) else {
            return Err(format!(
                "call `{call}`: expected `package.Service.Method` (or `package.Service/Method`)"
            ));
        };
        let (service_name, method_name) = (&call[..at], &call[at + 1..]);
        let Some(service) = self.pool.get_service_by_name(service_name) else {
            let services = self.services();
            let known = if services.is_empty() {
                "the schema has no services".to_owned()
            } else {
                format!("the schema has: {}", services.join(", "))
            };
            return Err(format!(
                "call `{call}`: no service `{service_name}` ({known})"
            ));
        };
        let found = service.methods().find(|m| m.name() == method_name);
        found.ok_or_else(|| {
            let methods: Vec<String> = service.methods().map(|m| m.name().to_owned()).collect();
            format!(
                "call `{call}`: `{service_name}` has no method `{method_name}` (it has: {})",
                methods.join(", ")
            )
        })
    }
}

/// Files in an order where each comes after the files it imports (those it
/// has), as the pool wants them added.
fn order_by_imports(files: Vec<FileDescriptorProto>) -> Vec<FileDescriptorProto> {
    let mut pending = files;
    let mut ordered: Vec<FileDescriptorProto> = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let present = |name: &String| pending.iter().any(|f| f.name() == name);
        let ready = pending
            .iter()
            .position(|file| !file.dependency.iter().any(present))
            // An import cycle: the pool says so when the file is added.
            .unwrap_or(0);
        let file = pending.swap_remove(ready);
        // A file sent twice (as a dependency of two symbols) is added once.
        if !ordered.iter().any(|f| f.name() == file.name()) {
            ordered.push(file);
        }
    }
    ordered
}

/// The error for a `proto` file that is neither in an import path nor a
/// file at its path.
fn not_found(file: &Path, import_paths: &[PathBuf]) -> String {
    if import_paths.is_empty() || file.is_absolute() {
        return format!("`{}` was not found: no such file", file.display());
    }
    let paths: Vec<String> = import_paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "`{}` was not found in the import paths ({}), nor as a path",
        file.display(),
        paths.join(", ")
    )
}

/// protox's error, with the file and line it points at: protox reports
/// errors as miette diagnostics (a labelled span in a named source), and
/// the span's line is the one a person wants. protox names a file given as
/// a path by its name under its directory; `written` maps such names back
/// to the path as written.
fn describe(error: &protox::Error, written: &[(String, PathBuf)]) -> String {
    use miette::Diagnostic;
    let message = error.to_string();
    let line = error.source_code().and_then(|source| {
        let span = error.labels()?.next()?;
        let contents = source.read_span(span.inner(), 0, 0).ok()?;
        Some(contents.line() + 1)
    });
    let file = error
        .file()
        .map(|file| match written.iter().find(|(name, _)| name == file) {
            Some((_, path)) => path.display().to_string(),
            None => file.to_owned(),
        });
    match (file, line) {
        (Some(file), Some(line)) => format!("{file}:{line}: {message}"),
        (Some(file), None) if !message.contains(&file) => format!("{file}: {message}"),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREETER: &str = r#"
syntax = "proto3";
package tankbar;
import "google/protobuf/timestamp.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc Count (HelloRequest) returns (stream HelloReply);
}
message HelloRequest { string name = 1; int64 times = 2; google.protobuf.Timestamp at = 3; }
message HelloReply { string message = 1; }
"#;

    fn greeter() -> (tempfile::TempDir, Schema) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("greeter.proto");
        std::fs::write(&file, GREETER).unwrap();
        let schema = Schema::compile(&[file], &[]).unwrap();
        (dir, schema)
    }

    #[test]
    fn a_proto_file_compiles_with_its_well_known_imports() {
        let (_dir, schema) = greeter();
        assert_eq!(schema.services(), vec!["tankbar.Greeter".to_owned()]);
        let method = schema.method("tankbar.Greeter.SayHello").unwrap();
        assert_eq!(method.input().full_name(), "tankbar.HelloRequest");
        assert!(schema
            .method("tankbar.Greeter/Count")
            .unwrap()
            .is_server_streaming());
    }

    #[test]
    fn unknown_calls_say_what_the_schema_has() {
        let (_dir, schema) = greeter();
        assert_eq!(
            schema.method("tankbar.Greeter.SayHi").unwrap_err(),
            "call `tankbar.Greeter.SayHi`: `tankbar.Greeter` has no method `SayHi` \
             (it has: SayHello, Count)"
        );
        assert_eq!(
            schema.method("tankbar.Greter.SayHello").unwrap_err(),
            "call `tankbar.Greter.SayHello`: no service `tankbar.Greter` (the schema has: \
             tankbar.Greeter)"
        );
        assert!(schema.method("SayHello").is_err());
    }

    #[test]
    fn a_name_is_looked_for_in_the_import_paths() {
        let (dir, _) = greeter();
        let schema = Schema::compile(
            &[PathBuf::from("greeter.proto")],
            &[dir.path().to_path_buf()],
        )
        .unwrap();
        assert_eq!(schema.services(), vec!["tankbar.Greeter".to_owned()]);
    }

    #[test]
    fn a_descriptor_set_round_trips() {
        let (_dir, schema) = greeter();
        let again = Schema::from_descriptor_set(&schema.to_descriptor_set()).unwrap();
        assert_eq!(again.services(), schema.services());
        assert!(Schema::from_descriptor_set(b"\xff\xff").is_err());
    }

    #[test]
    fn files_are_added_after_their_imports_whatever_order_they_came_in() {
        let (_dir, schema) = greeter();
        let mut files: Vec<FileDescriptorProto> =
            schema.pool.file_descriptor_protos().cloned().collect();
        files.reverse();
        files.push(files[0].clone());
        let again = Schema::from_files(files).unwrap();
        assert_eq!(again.services(), schema.services());
    }

    #[test]
    fn a_proto_error_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.proto");
        std::fs::write(
            &file,
            "syntax = \"proto3\";\n\nmessage A { strin name = 1; }\n",
        )
        .unwrap();
        // Named as written, not as protox names it under its directory.
        let error = Schema::compile(std::slice::from_ref(&file), &[]).unwrap_err();
        let written = format!("{}:3: ", file.display());
        assert!(error.starts_with(&written), "{error}");
    }

    #[test]
    fn a_missing_file_is_named_after_a_found_one() {
        let (dir, _) = greeter();
        let files = [
            PathBuf::from("greeter.proto"),
            PathBuf::from("nothere.proto"),
        ];
        let error = Schema::compile(&files, &[dir.path().to_path_buf()]).unwrap_err();
        assert_eq!(
            error,
            format!(
                "`nothere.proto` was not found in the import paths ({}), nor as a path",
                dir.path().display()
            )
        );
        let error = Schema::compile(&[dir.path().join("nothere.proto")], &[]).unwrap_err();
        assert!(
            error.ends_with("nothere.proto` was not found: no such file"),
            "{error}"
        );
    }
}
