//! What every ammo format's fuzz target shares: the inputs (arbitrary bytes, and
//! valid ammo from `tests/corpus/ammo/` with structured mutations) and the
//! property, checked by reading a file through one reader:
//!
//! * no panic;
//! * the reading ends: under `loop = 3` a reader gives a bounded number of
//!   missiles, then says so (an unbounded loop over the input fails here);
//! * a refusal names the file and a byte offset inside it (gzip: the path; a
//!   broken gzip stream is an I/O error of that file).

use std::path::Path;

use proptest::prelude::*;
use tank_testkit::mutation::mutated;

use super::passes::{Passes, ReadState};
use super::source::AmmoFile;
use super::{AmmoReader, Slot};
use crate::error::PlanError;

/// Bytes that matter to one format or another, and numbers at the edges.
const SNIPPETS: [&[u8]; 20] = [
    b"\n",
    b"\r\n",
    b"\r",
    b" ",
    b"\t",
    b"0",
    b"-1",
    b"99999999999999999999",
    b"18446744073709551616",
    b"[",
    b"]",
    b":",
    b"\"",
    b"\"GET ",
    b" HTTP/1.1\"",
    b"\x1f\x8b",
    b"#",
    b"\n\n",
    b"\xff\xfe",
    b"5 t\nGET /",
];

/// Ammo for a fuzz target: arbitrary bytes, or one of `seeds` mutated a few times.
pub(crate) fn ammo(seeds: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..300),
        3 => mutated(seeds, &SNIPPETS, 0..5),
    ]
}

/// Passes a reader may make over a fuzzed file.
const LOOPS: i64 = 3;

/// Write `bytes` to a file, open a reader on it with `open`, and read it to
/// its end, checking the property of this module. Returns the missiles read.
pub(crate) fn read_to_end(
    bytes: &[u8],
    open: impl FnOnce(AmmoFile) -> Result<AmmoReader, PlanError>,
) -> Result<u64, TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let path = dir.path().join("ammo");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut st = ReadState {
        passes: Passes::new(Some(LOOPS)),
        written: 0,
    };
    let mut slot = Slot::default();
    let opened = AmmoFile::open(&path).and_then(|file| {
        // Each pass gives at most one missile per byte (of the decompressed
        // text), and one more for a file without a final newline; a reader
        // that goes past that is looping.
        let size = file.memory().map_or(bytes.len(), <[u8]>::len) as u64;
        Ok((open(file)?, LOOPS as u64 * (size + 1)))
    });
    let outcome = opened.and_then(|(mut reader, most)| {
        while reader.advance(&mut st, &mut slot)? {
            st.written += 1;
            if st.written > most {
                return Ok(Err(format!(
                    "more than {most} missiles under loop = {LOOPS}"
                )));
            }
        }
        Ok(Ok(st.written))
    });
    match outcome {
        Ok(Ok(missiles)) => Ok(missiles),
        Ok(Err(endless)) => Err(TestCaseError::fail(endless)),
        Err(error) => {
            check_refusal(&error, &path, bytes)?;
            Ok(st.written)
        }
    }
}

/// A refusal names the file, and a byte offset inside it.
pub(crate) fn check_refusal(
    error: &PlanError,
    path: &Path,
    bytes: &[u8],
) -> Result<(), TestCaseError> {
    let gzip = bytes.starts_with(&[0x1f, 0x8b]);
    match error {
        PlanError::Ammo {
            path: named,
            offset,
            message,
        } => {
            prop_assert_eq!(named.as_path(), path);
            prop_assert!(!message.is_empty());
            prop_assert!(
                gzip || *offset <= bytes.len() as u64,
                "offset {} past the end ({} bytes): {}",
                offset,
                bytes.len(),
                error
            );
        }
        PlanError::Io { path: named, .. } if gzip => prop_assert_eq!(named.as_path(), path),
        other => prop_assert!(false, "not a located ammo error: {}", other),
    }
    prop_assert!(error.to_string().contains(&*path.to_string_lossy()));
    Ok(())
}
