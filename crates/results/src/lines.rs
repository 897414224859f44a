//! A file of lines that never ends in a torn line: phout and `test_data.log`.
//!
//! Lines are gathered in a buffer and written when it fills and on
//! [`LineFile::flush`]. When a write fails (a full disk), the bytes that did
//! reach the file may end mid-line; the file is then cut back to its last
//! whole line, so every reader (tank report, yandex-tank's, a `tail -f`) sees
//! only whole rows, and what was written before stays. After a failure the
//! file takes nothing more: the caller has been told once, and the run stops.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::sink::SinkError;

/// A line-oriented file writer with a buffer of its own.
#[derive(Debug)]
pub(crate) struct LineFile {
    file: File,
    path: PathBuf,
    buffer: Vec<u8>,
    capacity: usize,
    /// Bytes of whole lines in the file.
    committed: u64,
    failed: bool,
}

impl LineFile {
    /// Create (truncate) `path`, buffering up to `capacity` bytes.
    pub(crate) fn create(path: &Path, capacity: usize) -> io::Result<LineFile> {
        Ok(LineFile::new(
            File::create(path)?,
            path.to_path_buf(),
            capacity,
        ))
    }

    /// Write to `file`, opened at `path` (named in errors) and empty.
    pub(crate) fn new(file: File, path: PathBuf, capacity: usize) -> LineFile {
        LineFile {
            file,
            path,
            buffer: Vec::with_capacity(capacity),
            capacity,
            committed: 0,
            failed: false,
        }
    }

    /// Append whole lines: `write` appends them (each with its `\n`) to the
    /// buffer, which is written out when it is full.
    pub(crate) fn append(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), SinkError> {
        if self.failed {
            return Ok(());
        }
        write(&mut self.buffer);
        if self.buffer.len() >= self.capacity {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// Write the buffer out. On a failure the file is cut back to its last
    /// whole line, and the error returned (once; the file is quiet after it).
    pub(crate) fn flush(&mut self) -> Result<(), SinkError> {
        if self.failed || self.buffer.is_empty() {
            return Ok(());
        }
        let mut written = 0;
        while written < self.buffer.len() {
            match self.file.write(&self.buffer[written..]) {
                Ok(0) => return Err(self.fail(written, io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(written, e)),
            }
        }
        self.committed += written as u64;
        self.buffer.clear();
        Ok(())
    }

    /// `written` bytes of the buffer reached the file before `error`: cut the
    /// file back to its last whole line.
    fn fail(&mut self, written: usize, error: io::Error) -> SinkError {
        self.failed = true;
        let whole = self.buffer[..written]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        self.buffer = Vec::new();
        // Only a regular file can be cut (not /dev/full, a pipe, a terminal).
        let regular = self.file.metadata().is_ok_and(|m| m.is_file());
        let error = match regular.then(|| self.file.set_len(self.committed + whole as u64)) {
            Some(Err(cut)) => io::Error::new(
                error.kind(),
                format!("{error}; and its last line may be torn: cutting it back failed: {cut}"),
            ),
            _ => error,
        };
        SinkError {
            file: self.path.clone(),
            error,
        }
    }
}

impl Drop for LineFile {
    fn drop(&mut self) {
        // A sink's owner flushes at the end and hears of a failure; this is
        // for one that is dropped early (a failed setup), and cannot report.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The disk filling mid-line, as a full disk would make it (a real one
    /// needs a mount, so the half line is written by hand).
    #[test]
    fn a_failed_write_cuts_the_file_back_to_its_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("phout.log");
        let mut file = LineFile::create(&path, 1 << 20).unwrap();
        file.append(|b| b.extend_from_slice(b"one\ntwo\n")).unwrap();
        file.flush().unwrap();
        // Half a line reached the disk before the failure.
        file.buffer.extend_from_slice(b"three\nfo");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"three\nfo")
            .unwrap();
        let error = file.fail(8, io::Error::from_raw_os_error(28));
        assert!(error.to_string().contains("phout.log"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\nthree\n");
        // Quiet afterwards.
        file.append(|b| b.extend_from_slice(b"five\n")).unwrap();
        file.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\nthree\n");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_full_disk_is_an_error_naming_the_file() {
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let mut file = LineFile::new(full, PathBuf::from("/dev/full"), 4);
        let error = file
            .append(|b| b.extend_from_slice(b"a line\n"))
            .unwrap_err();
        assert_eq!(error.error.raw_os_error(), Some(28), "{error}");
        assert!(
            error.to_string().starts_with("cannot write /dev/full: "),
            "{error}"
        );
        assert!(file.append(|b| b.extend_from_slice(b"more\n")).is_ok());
    }
}
