//! The stepped-ammo (stpd) format: one record per shot,
//! `<len> SP <due_ms> SP <marker> LF <missile> LF` — the second space is
//! written even when the marker is empty, as the reference writes it.

use std::io::{self, Write};
use std::path::Path;

use crate::ammo::show;
use crate::ammo::source::AmmoFile;
use crate::error::{PlanError, Result};
use crate::pynum::py_int;
use crate::stepper::ShotRef;

/// Append one stpd record to `out`.
pub fn write_record(
    out: &mut impl Write,
    due_ms: i64,
    marker: &[u8],
    missile: &[u8],
) -> io::Result<()> {
    // The header is assembled in one small buffer so a record costs three writes, not eight.
    let mut header = [0u8; 96];
    let mut len = itoa::Buffer::new();
    let mut due = itoa::Buffer::new();
    let (len, due) = (
        len.format(missile.len()).as_bytes(),
        due.format(due_ms).as_bytes(),
    );
    let used = len.len() + due.len() + marker.len() + 3;
    if used <= header.len() {
        let mut at = 0;
        for part in [len, b" ", due, b" ", marker, b"\n"] {
            header[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        out.write_all(&header[..at])?;
    } else {
        for part in [len, b" ", due, b" ", marker, b"\n"] {
            out.write_all(part)?;
        }
    }
    out.write_all(missile)?;
    out.write_all(b"\n")
}

/// Reads an stpd file (`stpd_file`) back into shots. Blank lines before a
/// header are skipped; the marker is the third field, or empty.
pub struct StpdReader {
    file: AmmoFile,
    line: Vec<u8>,
    marker: Vec<u8>,
    missile: Vec<u8>,
    seq: u64,
}

impl StpdReader {
    /// Open an stpd file.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(StpdReader {
            file: AmmoFile::open(path)?,
            line: Vec::new(),
            marker: Vec::new(),
            missile: Vec::new(),
            seq: 0,
        })
    }

    fn error(&self, message: String) -> PlanError {
        PlanError::Ammo {
            path: self.file.path().to_path_buf(),
            offset: self.file.offset(),
            message,
        }
    }

    /// The next record, or `None` at the end of the file.
    pub fn next_shot(&mut self) -> Result<Option<ShotRef<'_>>> {
        let header = loop {
            if !self.file.read_line(&mut self.line)? {
                return Ok(None);
            }
            let text = std::str::from_utf8(&self.line).map_err(|_| {
                self.error(format!(
                    "stpd header `{}` is not valid UTF-8",
                    show(&self.line)
                ))
            })?;
            let trimmed = text.trim_matches(['\r', '\n']);
            if !trimmed.is_empty() {
                break trimmed.to_string();
            }
        };
        let mut fields = header.split_whitespace();
        let bad = || format!("bad stpd header `{header}`: expected `<length> <due_ms> [marker]`");
        let size = fields
            .next()
            .and_then(|f| py_int(f.as_bytes()))
            .filter(|s| *s >= 0)
            .ok_or_else(|| self.error(bad()))?;
        let due_ms = fields
            .next()
            .and_then(|f| py_int(f.as_bytes()))
            .ok_or_else(|| self.error(bad()))?;
        self.marker.clear();
        self.marker
            .extend_from_slice(fields.next().unwrap_or_default().as_bytes());
        self.file.read_up_to(size as u64, &mut self.missile)?;
        if (self.missile.len() as u64) < size as u64 {
            return Err(self.error(format!(
                "unexpected end of file: read {} bytes instead of {size}",
                self.missile.len()
            )));
        }
        let seq = self.seq;
        self.seq += 1;
        Ok(Some(ShotRef {
            seq,
            due_ms,
            marker: &self.marker,
            missile: &self.missile,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_marker_keeps_its_space() {
        let mut out = Vec::new();
        write_record(&mut out, 0, b"", b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(out, b"18 0 \nGET / HTTP/1.0\r\n\r\n\n");
    }

    #[test]
    fn reader_round_trips_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.stpd");
        let mut out = b"\n".to_vec();
        write_record(&mut out, 5, b"tag", b"ab\ncd").unwrap();
        write_record(&mut out, 7, b"", b"x").unwrap();
        std::fs::write(&path, &out).unwrap();
        let mut reader = StpdReader::open(&path).unwrap();
        let mut again = Vec::new();
        while let Some(shot) = reader.next_shot().unwrap() {
            write_record(&mut again, shot.due_ms, shot.marker, shot.missile).unwrap();
        }
        assert_eq!(again, &out[1..]);
    }

    #[test]
    fn truncated_record_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.stpd");
        std::fs::write(&path, b"10 0 \nabc").unwrap();
        let mut reader = StpdReader::open(&path).unwrap();
        let error = reader.next_shot().err().unwrap().to_string();
        assert!(error.contains("read 3 bytes instead of 10"), "{error}");
    }
}
