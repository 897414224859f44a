//! Request bytes that need not all be in memory.
//!
//! A request is held from its first byte until the sessions file gets it:
//! while it is in progress (an upload still arriving), then in the reorder
//! buffer. One 300 MB upload, or 100,000 uploads that never finish, once held
//! all of that in memory whatever `--memory` said. Past the budget for
//! requests in progress, a request's body moves to one temporary file (the
//! [`SpillFile`], appended to and never rewritten, removed at the end), and
//! the request keeps only where its bytes are ([`RequestBytes`]): its head
//! in memory (it is parsed, and tags are made from it), the body's extents in
//! the file, and the bytes that came since. The sessions file gets the bytes
//! back in order, streamed from the file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::order::SortError;

/// Bytes copied at once when a spilled body is read back.
const COPY_CHUNK: usize = 1 << 16;

/// The temporary file request bodies spill to (created at the first spill,
/// in `TMPDIR`; the OS removes it when it is closed).
#[derive(Debug, Default)]
pub(crate) struct SpillFile {
    file: OnceLock<File>,
    end: AtomicU64,
}

/// A run of a request's bytes in the [`SpillFile`]: where it starts, how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Its offset in the file.
    pub at: u64,
    /// Its length.
    pub len: u64,
}

impl SpillFile {
    /// A file not created yet.
    pub(crate) fn new() -> Self {
        SpillFile::default()
    }

    /// Bytes spilled so far.
    pub(crate) fn spilled(&self) -> u64 {
        self.end.load(Ordering::Relaxed)
    }

    fn file(&self) -> io::Result<&File> {
        if let Some(file) = self.file.get() {
            return Ok(file);
        }
        let file = tempfile::tempfile()?;
        Ok(self.file.get_or_init(|| file))
    }

    /// Append `bytes`; where they went.
    pub(crate) fn append(&self, bytes: &[u8]) -> io::Result<Extent> {
        let file = self.file()?;
        let at = self.end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        file.write_all_at(bytes, at)?;
        Ok(Extent {
            at,
            len: bytes.len() as u64,
        })
    }

    /// Read `buffer.len()` bytes from offset `at`.
    pub(crate) fn read(&self, at: u64, buffer: &mut [u8]) -> io::Result<()> {
        self.file()?.read_exact_at(buffer, at)
    }
}

/// A request's bytes: `head` in memory, then `spilled` extents in the
/// [`SpillFile`], then `tail` in memory (see the module docs). A request
/// never spilled is all `head`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestBytes {
    /// The first bytes (at least the request line and headers of a spilled request).
    pub head: Vec<u8>,
    /// Where the middle is, in order.
    pub spilled: Vec<Extent>,
    /// The bytes after the middle.
    pub tail: Vec<u8>,
}

impl From<Vec<u8>> for RequestBytes {
    fn from(head: Vec<u8>) -> Self {
        RequestBytes {
            head,
            spilled: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl RequestBytes {
    /// The request's length.
    pub(crate) fn len(&self) -> u64 {
        self.head.len() as u64 + spilled_len(&self.spilled) + self.tail.len() as u64
    }

    /// Memory it holds.
    pub(crate) fn held(&self) -> usize {
        self.head.capacity()
            + self.tail.capacity()
            + self.spilled.capacity() * std::mem::size_of::<Extent>()
    }

    /// Hand its bytes to `out` in order, a slice at a time, the spilled
    /// middle read back from `file` (a failed read is [`SortError::Temp`], a
    /// failed `out` [`SortError::Out`]).
    pub(crate) fn write_to(
        &self,
        file: &SpillFile,
        out: &mut impl FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<(), SortError> {
        out(&self.head).map_err(SortError::Out)?;
        let mut buffer = Vec::new();
        for extent in &self.spilled {
            let mut done = 0;
            while done < extent.len {
                let n =
                    usize::try_from(extent.len - done).map_or(COPY_CHUNK, |n| n.min(COPY_CHUNK));
                buffer.resize(n, 0);
                file.read(extent.at + done, &mut buffer)
                    .map_err(SortError::Temp)?;
                out(&buffer).map_err(SortError::Out)?;
                done += n as u64;
            }
        }
        out(&self.tail).map_err(SortError::Out)
    }
}

/// The bytes in `extents`.
pub(crate) fn spilled_len(extents: &[Extent]) -> u64 {
    extents.iter().map(|e| e.len).sum()
}

/// Append `bytes` to `extents` in `file`: one more extent, or a longer last
/// one when nothing else was appended in between (a single large upload
/// stays one extent).
pub(crate) fn spill(file: &SpillFile, extents: &mut Vec<Extent>, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let extent = file.append(bytes)?;
    match extents.last_mut() {
        Some(last) if last.at + last.len == extent.at => last.len += extent.len,
        _ => extents.push(extent),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_bytes_read_back_in_order_and_adjacent_appends_merge() {
        let file = SpillFile::new();
        let mut a = RequestBytes::from(b"HEAD".to_vec());
        let mut b = Vec::new();
        spill(&file, &mut a.spilled, b"one-").unwrap();
        spill(&file, &mut a.spilled, b"two-").unwrap();
        spill(&file, &mut b, b"other").unwrap();
        spill(&file, &mut a.spilled, b"three").unwrap();
        a.tail = b"TAIL".to_vec();
        assert_eq!(a.spilled.len(), 2);
        assert_eq!(a.len(), 4 + 13 + 4);
        let mut out = Vec::new();
        a.write_to(&file, &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, b"HEADone-two-threeTAIL");
        assert_eq!(file.spilled(), 18);
    }
}
