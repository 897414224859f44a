//! A rewindable byte source over an ammo file, gzip or plain (told apart by
//! the magic bytes, as the reference does), with Python file semantics:
//! `readline` keeps the `\n`, `read(n)` returns fewer bytes only at the end.
//!
//! Files up to [`IN_MEMORY_LIMIT`] (decompressed) are held in memory, so
//! looping over a small file costs no system calls; larger ones are streamed
//! and reopened on rewind, so memory never depends on the file's size.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::pybytes::show;
use crate::error::{PlanError, Result};

/// Files (decompressed) up to this size are kept in memory.
pub(crate) const IN_MEMORY_LIMIT: u64 = 16 << 20;
const STREAM_BUFFER: usize = 256 << 10;

enum Inner {
    Memory(Cursor<Vec<u8>>),
    Plain(BufReader<File>),
    Gzip(Box<BufReader<MultiGzDecoder<File>>>),
}

/// A line of an ammo file, found again for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineAt {
    /// Its number, counted from 1.
    pub number: u64,
    /// Its bytes, with its `\n`.
    pub text: Vec<u8>,
}

/// An open ammo file positioned somewhere in its (decompressed) bytes.
pub(crate) struct AmmoFile {
    path: PathBuf,
    inner: Inner,
    offset: u64,
    /// Line buffer for [`AmmoFile::with_line`] on streamed files.
    spare: Vec<u8>,
}

impl AmmoFile {
    /// Open `path`, detecting gzip by its first two bytes.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let io_err = |error| PlanError::Io {
            path: path.to_path_buf(),
            error,
        };
        let mut file = File::open(path).map_err(io_err)?;
        let mut magic = [0u8; 2];
        let sniffed = read_full(&mut file, &mut magic).map_err(io_err)?;
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let gzip = sniffed == 2 && magic == [0x1f, 0x8b];
        let inner = if gzip {
            let mut decoder = MultiGzDecoder::new(file);
            let mut data = Vec::new();
            (&mut decoder)
                .take(IN_MEMORY_LIMIT + 1)
                .read_to_end(&mut data)
                .map_err(io_err)?;
            if data.len() as u64 <= IN_MEMORY_LIMIT {
                Inner::Memory(Cursor::new(data))
            } else {
                Inner::Gzip(Box::new(BufReader::with_capacity(
                    STREAM_BUFFER,
                    MultiGzDecoder::new(File::open(path).map_err(io_err)?),
                )))
            }
        } else {
            let len = file.metadata().map_err(io_err)?.len();
            if len <= IN_MEMORY_LIMIT {
                // Read once into a buffer of the file's size: no growing, no copy.
                let mut data = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                file.read_to_end(&mut data).map_err(io_err)?;
                Inner::Memory(Cursor::new(data))
            } else {
                Inner::Plain(BufReader::with_capacity(STREAM_BUFFER, file))
            }
        };
        Ok(AmmoFile {
            path: path.to_path_buf(),
            inner,
            offset: 0,
            spare: Vec::new(),
        })
    }

    /// The file's path, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A malformed-ammo error at the current offset, naming the file.
    pub(crate) fn error(&self, message: String) -> PlanError {
        PlanError::Ammo {
            path: self.path.clone(),
            offset: self.offset,
            message,
        }
    }

    /// A malformed-ammo error about the line that starts at byte `start`:
    /// located at that byte, and by its line number when the file can be read
    /// again (see [`AmmoFile::line_at`]).
    pub(crate) fn line_error(&self, start: u64, message: String) -> PlanError {
        let message = match self.line_at(start) {
            Some(line) => format!("line {}: {message}", line.number),
            None => message,
        };
        PlanError::Ammo {
            path: self.path.clone(),
            offset: start,
            message,
        }
    }

    /// The line that starts at byte `start`, quoted and located for a
    /// message: `` `103 utf8` at byte 376 (line 24) ``, or only `byte 376`
    /// when the file cannot be read again.
    pub(crate) fn quote_line(&self, start: u64) -> String {
        match self.line_at(start) {
            Some(line) => format!(
                "`{}` at byte {start} (line {})",
                show(&line.text),
                line.number
            ),
            None => format!("at byte {start}"),
        }
    }

    /// The line that starts at byte `start`, found again for a message: its
    /// number and its text. Nothing counts lines while reading, as errors are
    /// rare: this counts them up to `start` (in memory, or by reading the file
    /// again from its beginning). `None` if the file cannot be read again.
    pub(crate) fn line_at(&self, start: u64) -> Option<LineAt> {
        match self.memory() {
            Some(data) => {
                let at = usize::try_from(start).map_or(data.len(), |s| s.min(data.len()));
                let rest = &data[at..];
                Some(LineAt {
                    number: 1 + memchr::memchr_iter(b'\n', &data[..at]).count() as u64,
                    text: rest[..line_len(rest)].to_vec(),
                })
            }
            None => AmmoFile::open(&self.path).ok()?.read_line_at(start),
        }
    }

    /// [`AmmoFile::line_at`] by reading this file from where it is up to
    /// `start`, counting line ends: for a streamed file, opened again.
    fn read_line_at(&mut self, start: u64) -> Option<LineAt> {
        let mut block = Vec::new();
        let mut number = 1;
        while self.offset < start {
            self.read_up_to((start - self.offset).min(1 << 20), &mut block)
                .ok()?;
            if block.is_empty() {
                // The file is shorter than it was.
                return None;
            }
            number += memchr::memchr_iter(b'\n', &block).count() as u64;
        }
        let mut text = Vec::new();
        self.read_line(&mut text).ok()?;
        Some(LineAt { number, text })
    }

    /// Bytes consumed so far (in the decompressed stream for gzip).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The whole (decompressed) file, when it is held in memory.
    pub(crate) fn memory(&self) -> Option<&[u8]> {
        match &self.inner {
            Inner::Memory(cursor) => Some(cursor.get_ref()),
            Inner::Plain(_) | Inner::Gzip(_) => None,
        }
    }

    /// The path (for errors) and the reader, borrowed apart.
    fn parts(&mut self) -> (&Path, &mut dyn BufRead) {
        let reader: &mut dyn BufRead = match &mut self.inner {
            Inner::Memory(cursor) => cursor,
            Inner::Plain(reader) => reader,
            Inner::Gzip(reader) => reader.as_mut(),
        };
        (&self.path, reader)
    }

    /// Python `readline()`: replaces `line` with the next line including its
    /// `\n` (none on the last line). Returns `false` at the end of the file.
    pub(crate) fn read_line(&mut self, line: &mut Vec<u8>) -> Result<bool> {
        line.clear();
        let read = match &mut self.inner {
            // In memory: one memchr and one copy, no buffered-reader machinery.
            Inner::Memory(cursor) => {
                let rest = remaining(cursor);
                let len = line_len(rest);
                line.extend_from_slice(&rest[..len]);
                cursor.set_position(cursor.position() + len as u64);
                len
            }
            _ => {
                let (path, reader) = self.parts();
                reader
                    .read_until(b'\n', line)
                    .map_err(|e| io_error(path, e))?
            }
        };
        self.offset += read as u64;
        Ok(read > 0)
    }

    /// Skip any run of `\r` / `\n` bytes. A line made only of them is empty
    /// once stripped, and stripping a header line removes them from its start
    /// anyway, so readers looking for the next non-blank header may skip them
    /// without reading blank lines one by one.
    pub(crate) fn skip_line_breaks(&mut self) -> Result<()> {
        let skipped = match &mut self.inner {
            Inner::Memory(cursor) => {
                let n = remaining(cursor)
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                cursor.set_position(cursor.position() + n as u64);
                n
            }
            _ => {
                let (path, reader) = self.parts();
                let mut total = 0;
                loop {
                    let chunk = match reader.fill_buf() {
                        Ok(chunk) => chunk,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(io_error(path, e)),
                    };
                    let n = chunk
                        .iter()
                        .take_while(|b| matches!(b, b'\r' | b'\n'))
                        .count();
                    let more = n == chunk.len() && n > 0;
                    reader.consume(n);
                    total += n;
                    if !more {
                        break total;
                    }
                }
            }
        };
        self.offset += skipped as u64;
        Ok(())
    }

    /// Read the next line (with its `\n`) and hand it to `parse` without
    /// copying it when the file is in memory; `None` at the end of the file.
    pub(crate) fn with_line<R>(&mut self, parse: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        match &mut self.inner {
            Inner::Memory(cursor) => {
                let start = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
                let data: &[u8] = cursor.get_ref();
                let rest = data.get(start..).unwrap_or_default();
                if rest.is_empty() {
                    return Ok(None);
                }
                let len = line_len(rest);
                let result = parse(&rest[..len]);
                cursor.set_position((start + len) as u64);
                self.offset += len as u64;
                Ok(Some(result))
            }
            _ => {
                let mut line = std::mem::take(&mut self.spare);
                let found = self.read_line(&mut line)?;
                let result = found.then(|| parse(&line));
                self.spare = line;
                Ok(result)
            }
        }
    }

    /// Python `read(n)`: replaces `out` with up to `n` bytes (fewer only at the end).
    pub(crate) fn read_up_to(&mut self, n: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let read = match &mut self.inner {
            Inner::Memory(cursor) => {
                let rest = remaining(cursor);
                let len = usize::try_from(n).map_or(rest.len(), |n| n.min(rest.len()));
                out.extend_from_slice(&rest[..len]);
                cursor.set_position(cursor.position() + len as u64);
                len
            }
            _ => {
                let mut left = n;
                let (path, reader) = self.parts();
                let mut read = 0usize;
                while left > 0 {
                    let chunk = match reader.fill_buf() {
                        Ok(chunk) => chunk,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(io_error(path, e)),
                    };
                    if chunk.is_empty() {
                        break;
                    }
                    let take = usize::try_from(left).map_or(chunk.len(), |l| l.min(chunk.len()));
                    out.extend_from_slice(&chunk[..take]);
                    reader.consume(take);
                    left -= take as u64;
                    read += take;
                }
                read
            }
        };
        self.offset += read as u64;
        Ok(())
    }

    /// Python `read()`: replaces `out` with the rest of the file.
    pub(crate) fn read_rest(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.read_up_to(u64::MAX, out)
    }

    /// Python `seek(0)`: start the file over.
    pub(crate) fn rewind(&mut self) -> Result<()> {
        // Called once per pass, which is once per shot for a one-request ammo
        // file: nothing here allocates unless it fails.
        let path = &self.path;
        let io_err = |error| PlanError::Io {
            path: path.clone(),
            error,
        };
        match &mut self.inner {
            Inner::Memory(cursor) => cursor.set_position(0),
            Inner::Plain(reader) => {
                reader.seek(SeekFrom::Start(0)).map_err(io_err)?;
            }
            Inner::Gzip(reader) => {
                let file = File::open(path).map_err(io_err)?;
                **reader = BufReader::with_capacity(STREAM_BUFFER, MultiGzDecoder::new(file));
            }
        }
        self.offset = 0;
        Ok(())
    }
}

/// Length of the first line of `bytes`, with its `\n`. Headers are short:
/// a plain scan of the first bytes beats setting up a vectorised search.
fn line_len(bytes: &[u8]) -> usize {
    let head = &bytes[..bytes.len().min(32)];
    match head.iter().position(|b| *b == b'\n') {
        Some(at) => at + 1,
        None if head.len() == bytes.len() => bytes.len(),
        None => memchr::memchr(b'\n', &bytes[head.len()..])
            .map_or(bytes.len(), |at| head.len() + at + 1),
    }
}

fn io_error(path: &Path, error: io::Error) -> PlanError {
    PlanError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The unread part of an in-memory file.
fn remaining(cursor: &Cursor<Vec<u8>>) -> &[u8] {
    let data: &[u8] = cursor.get_ref();
    let at = usize::try_from(cursor.position()).map_or(data.len(), |p| p.min(data.len()));
    &data[at..]
}

fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn reads_lines_like_python_and_rewinds() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [("plain", b"ab\ncd".to_vec()), ("gz", gzip(b"ab\ncd"))] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let mut file = AmmoFile::open(&path).unwrap();
            let mut line = Vec::new();
            assert!(file.read_line(&mut line).unwrap());
            assert_eq!(line, b"ab\n");
            assert_eq!(file.offset(), 3);
            file.read_up_to(10, &mut line).unwrap();
            assert_eq!(line, b"cd");
            assert!(!file.read_line(&mut line).unwrap());
            file.rewind().unwrap();
            file.read_rest(&mut line).unwrap();
            assert_eq!(line, b"ab\ncd");
        }
    }

    #[test]
    fn a_line_is_found_again_by_its_start_in_memory_and_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ammo");
        std::fs::write(&path, b"1\n\n22\r\nx\ry\nlast").unwrap();
        let file = AmmoFile::open(&path).unwrap();
        let line = |number, text: &[u8]| {
            Some(LineAt {
                number,
                text: text.to_vec(),
            })
        };
        for (start, want) in [
            (0, line(1, b"1\n")),
            (3, line(3, b"22\r\n")),
            (7, line(4, b"x\ry\n")),
            (11, line(5, b"last")),
            (15, line(5, b"")),
        ] {
            assert_eq!(file.line_at(start), want, "in memory, at {start}");
            // As a streamed file is read again: from its start, by blocks.
            let mut again = AmmoFile::open(&path).unwrap();
            assert_eq!(again.read_line_at(start), want, "read again, at {start}");
        }
        // Past the end of a file read again: it has changed, so no line.
        assert_eq!(AmmoFile::open(&path).unwrap().read_line_at(16), None);
        assert_eq!(file.quote_line(3), "`22` at byte 3 (line 3)");
        assert_eq!(
            file.line_error(7, "bad".into()).to_string(),
            format!("{}: byte 7: line 4: bad", path.display())
        );
    }

    #[test]
    fn missing_file_names_the_path() {
        let error = AmmoFile::open(Path::new("/nonexistent/ammo.txt"))
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("/nonexistent/ammo.txt"),
            "{error}"
        );
    }
}
