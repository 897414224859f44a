//! Pandora's `grpc/json` ammo (`tank_type = grpc`): one JSON object a line,
//! each compiled against the queue's gRPC schema into the HTTP/1-shaped
//! request the HTTP/2 gun sends (see `tank_grpc::call`). Blank lines are
//! skipped; any other line that is not a call the schema has is an error
//! naming the file and line.
//!
//! Compiling a line (JSON, then protobuf) costs more than the gun's send,
//! so a first pass that fits [`MEMO_BYTES`] is kept, and later passes (`loop`)
//! come from memory.

use std::path::{Path, PathBuf};

use tank_config::{GrpcConfig, GrpcSchema, QueueConfig};
use tank_grpc::call::{CallLine, Compiler};
use tank_grpc::Schema;

use super::passes::ReadState;
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};

/// The most request bytes of one pass kept for the next.
const MEMO_BYTES: usize = 64 << 20;

/// Reader of grpc/json ammo.
pub(crate) struct GrpcReader {
    file: AmmoFile,
    compiler: Compiler,
    line: Vec<u8>,
    /// The line number of `line` (1-based) in this pass.
    number: u64,
    /// This pass's calls so far, while they fit.
    memo: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    memo_bytes: usize,
    /// A whole pass, once kept: later passes read it, from `replay_at`.
    kept: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    replay_at: usize,
    done: bool,
}

/// The connection-specific metadata names in the calls of `path` (HTTP/2 has
/// no place for them, so the compiled calls leave them out:
/// [`tank_grpc::call::CONNECTION_SPECIFIC`]), lower-cased, each with the
/// number of lines that have it, in the order first met: for the run's one
/// warning. A pass over the file; a line that does not parse is the plan's
/// to report, and is passed over here.
pub fn dropped_metadata(path: &Path) -> Result<Vec<(String, u64)>> {
    let mut file = AmmoFile::open(path)?;
    let mut line = Vec::new();
    let mut found: Vec<(String, u64)> = Vec::new();
    while file.read_line(&mut line)? {
        let Ok(call) = CallLine::parse(line.trim_ascii()) else {
            continue;
        };
        for key in call.metadata.keys() {
            let name = key.to_ascii_lowercase();
            if !tank_grpc::call::CONNECTION_SPECIFIC.contains(&name.as_str()) {
                continue;
            }
            match found.iter_mut().find(|(known, _)| *known == name) {
                Some((_, lines)) => *lines += 1,
                None => found.push((name, 1)),
            }
        }
    }
    Ok(found)
}

/// The schema `grpc` names, compiled (from `.proto` files) or decoded (what
/// reflection answered). Errors name the `[grpc]` option.
pub fn schema(grpc: &GrpcConfig) -> Result<Schema> {
    let located = |message: String| PlanError::Located(Box::new(grpc.place.error(message)));
    match &grpc.schema {
        GrpcSchema::Protos {
            files,
            import_paths,
        } => Schema::compile(files, import_paths).map_err(located),
        GrpcSchema::Descriptors(bytes) => Schema::from_descriptor_set(bytes)
            .map_err(|e| located(format!("the reflection service's schema: {e}"))),
        GrpcSchema::Reflection => Err(located(
            "no `proto` is given, so the schema comes from the server's reflection \
             service, which has not been asked yet"
                .into(),
        )),
    }
}

impl GrpcReader {
    /// Read `file` for `queue` (a `tank_type = grpc` queue).
    pub(crate) fn new(file: AmmoFile, queue: &QueueConfig) -> Result<Self> {
        let grpc = queue.grpc.as_ref().ok_or_else(|| {
            PlanError::Config("grpc/json ammo is for a `tank_type = grpc` queue".into())
        })?;
        let schema = schema(grpc)?;
        Ok(GrpcReader {
            file,
            compiler: Compiler::new(schema, grpc.authority.clone(), queue.timeout),
            line: Vec::new(),
            number: 0,
            memo: Some(Vec::new()),
            memo_bytes: 0,
            kept: None,
            replay_at: 0,
            done: false,
        })
    }

    fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    /// Advance to the next call; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        while !self.done {
            if let Some(kept) = &self.kept {
                if let Some((request, tag)) = kept.get(self.replay_at) {
                    self.replay_at += 1;
                    fill(slot, request, tag);
                    return Ok(true);
                }
                self.replay_at = 0;
                self.done = !st.passes.finish(true, &self.path().display().to_string())?;
                continue;
            }
            if !self.file.read_line(&mut self.line)? {
                self.end_of_pass(st)?;
                continue;
            }
            self.number += 1;
            if self.line.trim_ascii().is_empty() {
                continue;
            }
            let at = |message: String| PlanError::AmmoLine {
                path: self.file.path().to_path_buf(),
                line: self.number,
                message,
            };
            let call = CallLine::parse(self.line.trim_ascii()).map_err(at)?;
            let compiled = self.compiler.compile(&call).map_err(at)?;
            fill(slot, &compiled.request, &compiled.tag);
            if let Some(memo) = &mut self.memo {
                self.memo_bytes += compiled.request.len() + compiled.tag.len();
                if self.memo_bytes > MEMO_BYTES {
                    self.memo = None;
                } else {
                    memo.push((compiled.request, compiled.tag));
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The file ended: the next pass, from memory when the whole pass is kept.
    fn end_of_pass(&mut self, st: &mut ReadState) -> Result<()> {
        let yielded = self.number > 0 && self.memo.as_ref().is_none_or(|m| !m.is_empty());
        if st.written == 0 && !yielded {
            return Err(self.file.error(
                "no calls in this grpc/json ammo: expected one JSON object a line, \
                 {\"tag\", \"call\", \"metadata\", \"payload\"}"
                    .into(),
            ));
        }
        self.file.rewind()?;
        self.number = 0;
        self.done = !st.passes.finish(true, &self.path().display().to_string())?;
        if let Some(memo) = self.memo.take() {
            self.kept = Some(memo);
            self.replay_at = 0;
        }
        Ok(())
    }
}

fn fill(slot: &mut Slot, request: &[u8], tag: &[u8]) {
    slot.missile.clear();
    slot.missile.extend_from_slice(request);
    slot.set_tag(Some(tag));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ammo::passes::Passes;
    use crate::ammo::{AmmoReader, Slot};
    use std::time::Duration;

    fn queue(dir: &std::path::Path, ammo: &str) -> QueueConfig {
        let proto = dir.join("greeter.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\";\npackage tankbar;\nservice Greeter { rpc SayHello \
             (HelloRequest) returns (HelloReply); }\nmessage HelloRequest { string name = 1; }\n\
             message HelloReply { string message = 1; }\n",
        )
        .unwrap();
        let ammo_path = dir.join("ammo.jsonl");
        std::fs::write(&ammo_path, ammo).unwrap();
        let ini = format!(
            "[phantom]\naddress = 127.0.0.1:1\ntank_type = grpc\nammofile = {}\n\
             rps_schedule = const(1, 1s)\n[grpc]\nproto = {}\n",
            ammo_path.display(),
            proto.display()
        );
        let config = tank_config::load_str(
            &ini,
            tank_config::ConfigFormat::Ini,
            &dir.join("load.ini"),
            &[],
        )
        .unwrap();
        let mut queue = config.queues[0].clone();
        queue.timeout = Duration::from_secs(2);
        queue
    }

    fn read_all(queue: &QueueConfig, passes: i64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let source = queue.ammo.clone().unwrap();
        let mut reader = AmmoReader::open(queue, &source)?;
        let mut st = ReadState {
            passes: Passes::new(Some(passes)),
            written: 0,
        };
        let mut slot = Slot::default();
        let mut out = Vec::new();
        while reader.advance(&mut st, &mut slot)? {
            st.written += 1;
            out.push((slot.missile.clone(), slot.marker().to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn calls_are_compiled_and_later_passes_repeat_them() {
        let dir = tempfile::tempdir().unwrap();
        let queue = queue(
            dir.path(),
            "{\"tag\": \"/a\", \"call\": \"tankbar.Greeter.SayHello\", \"payload\": {\"name\": \"x\"}}\n\
             \n{\"call\": \"tankbar.Greeter.SayHello\"}\n",
        );
        let calls = read_all(&queue, 2).unwrap();
        let tags: Vec<&[u8]> = calls.iter().map(|(_, tag)| tag.as_slice()).collect();
        assert_eq!(
            tags,
            [
                &b"/a"[..],
                b"tankbar.Greeter.SayHello",
                b"/a",
                b"tankbar.Greeter.SayHello"
            ]
        );
        assert_eq!(calls[0].0, calls[2].0);
        assert!(calls[0]
            .0
            .starts_with(b"POST /tankbar.Greeter/SayHello HTTP/1.1\r\n"));
        assert!(calls[0].0.ends_with(b"\0\0\0\0\x03\x0a\x01x"));
    }

    #[test]
    fn connection_specific_metadata_is_found_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ammo.jsonl");
        std::fs::write(
            &path,
            "{\"call\": \"a.B.C\", \"metadata\": {\"Transfer-Encoding\": \"chunked\", \"x\": \"1\"}}\n\
             not json\n\
             {\"call\": \"a.B.C\", \"metadata\": {\"transfer-encoding\": \"chunked\", \
             \"connection\": \"close\"}}\n\
             {\"call\": \"a.B.C\"}\n",
        )
        .unwrap();
        assert_eq!(
            dropped_metadata(&path).unwrap(),
            [
                ("transfer-encoding".to_owned(), 2),
                ("connection".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn a_wrong_field_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let queue = queue(
            dir.path(),
            "{\"call\": \"tankbar.Greeter.SayHello\"}\n\n{\"call\": \"tankbar.Greeter.SayHello\", \
             \"payload\": {\"nmae\": \"x\"}}\n",
        );
        let error = read_all(&queue, 1).unwrap_err().to_string();
        let expected = format!(
            "{}:3: tankbar.Greeter.SayHello: payload: field \"nmae\" does not exist \
             (tankbar.HelloRequest has: name)",
            dir.path().join("ammo.jsonl").display()
        );
        assert_eq!(error, expected);
    }

    #[test]
    fn an_empty_file_and_an_unasked_reflection_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut queue = queue(dir.path(), "\n\n");
        assert!(read_all(&queue, 1)
            .unwrap_err()
            .to_string()
            .contains("no calls in this grpc/json ammo"));
        queue.grpc.as_mut().unwrap().schema = GrpcSchema::Reflection;
        let error = AmmoReader::open(&queue, &queue.ammo.clone().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("reflection service, which has not been asked"),
            "{error}"
        );
    }
}
