//! The stepped-ammo (stpd) format: one record per shot,
//! `<len> SP <due_ms> SP <marker> LF <missile> LF` — the second space is
//! written even when the marker is empty, as the reference writes it.

use std::path::Path;

use tank_digits::Backwards;

use crate::ammo::show;
use crate::ammo::source::AmmoFile;
use crate::error::Result;
use crate::pynum::py_int;
use crate::stepper::ShotRef;

/// Append one stpd record to `out`.
pub fn push_record(out: &mut Vec<u8>, due_ms: i64, marker: &[u8], missile: &[u8]) {
    // The header, written from its end into one stack buffer and copied once;
    // a long marker is copied on its own.
    let mut head = Backwards::<HEAD_ROOM>::default();
    head.byte(b'\n');
    let short_marker = marker.len() <= MARKER_ROOM;
    if short_marker {
        head.bytes(marker);
    }
    head.byte(b' ');
    head.signed(due_ms);
    head.byte(b' ');
    head.number(missile.len() as u64);
    let head = head.as_bytes();
    out.reserve(head.len() + marker.len() + missile.len() + 1);
    if short_marker {
        out.extend_from_slice(head);
    } else {
        out.extend_from_slice(&head[..head.len() - 1]);
        out.extend_from_slice(marker);
        out.push(b'\n');
    }
    out.extend_from_slice(missile);
    out.push(b'\n');
}

/// Markers up to this long go into the header's stack buffer.
const MARKER_ROOM: usize = 64;
/// The header's stack buffer: two numbers of up to 20 digits and a sign, two
/// spaces, a marker and the line feed.
const HEAD_ROOM: usize = 2 * 21 + 2 + MARKER_ROOM + 1;

/// Reads an stpd file (`stpd_file`) back into shots. Blank lines before a
/// header are skipped; the marker is the third field, or empty.
pub(crate) struct StpdReader {
    file: AmmoFile,
    line: Vec<u8>,
    marker: Vec<u8>,
    missile: Vec<u8>,
    seq: u64,
}

impl StpdReader {
    /// Open an stpd file.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Ok(StpdReader {
            file: AmmoFile::open(path)?,
            line: Vec::new(),
            marker: Vec::new(),
            missile: Vec::new(),
            seq: 0,
        })
    }

    /// The next record, or `None` at the end of the file.
    pub(crate) fn next_shot(&mut self) -> Result<Option<ShotRef<'_>>> {
        let header = loop {
            if !self.file.read_line(&mut self.line)? {
                return Ok(None);
            }
            let text = std::str::from_utf8(&self.line).map_err(|_| {
                self.file.error(format!(
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
            .ok_or_else(|| self.file.error(bad()))?;
        let due_ms = fields
            .next()
            .and_then(|f| py_int(f.as_bytes()))
            .ok_or_else(|| self.file.error(bad()))?;
        self.marker.clear();
        self.marker
            .extend_from_slice(fields.next().unwrap_or_default().as_bytes());
        self.file.read_up_to(size as u64, &mut self.missile)?;
        if (self.missile.len() as u64) < size as u64 {
            return Err(self.file.error(format!(
                "unexpected end of file: read {} bytes instead of {size}",
                self.missile.len()
            )));
        }
        let seq = self.seq;
        self.seq += 1;
        Ok(Some(ShotRef {
            seq,
            due_ms,
            due_ns: due_ms.saturating_mul(1_000_000),
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
        let long_tag = [b'x'; 40];
        let mut long = Vec::new();
        push_record(&mut long, 123_456_789, &long_tag, b"m");
        assert_eq!(long, [&b"1 123456789 "[..], &long_tag, b"\nm\n"].concat());
        let mut out = Vec::new();
        push_record(&mut out, 0, b"", b"GET / HTTP/1.0\r\n\r\n");
        assert_eq!(out, b"18 0 \nGET / HTTP/1.0\r\n\r\n\n");
    }

    #[test]
    fn long_markers_and_negative_times_are_written_whole() {
        let tag = [b'y'; MARKER_ROOM + 1];
        let mut out = b"x".to_vec();
        push_record(&mut out, -12, &tag, b"GET");
        assert_eq!(out, [&b"x3 -12 "[..], &tag, b"\nGET\n"].concat());
    }

    #[test]
    fn reader_round_trips_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.stpd");
        let mut out = b"\n".to_vec();
        push_record(&mut out, 5, b"tag", b"ab\ncd");
        push_record(&mut out, 7, b"", b"x");
        std::fs::write(&path, &out).unwrap();
        let mut reader = StpdReader::open(&path).unwrap();
        let mut again = Vec::new();
        while let Some(shot) = reader.next_shot().unwrap() {
            push_record(&mut again, shot.due_ms, shot.marker, shot.missile);
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

    /// Stpd as tank and the reference write it: tags, empty markers, negative
    /// times, blank lines before a header, missiles with line breaks.
    const SEEDS: [&[u8]; 3] = [
        b"18 0 \nGET / HTTP/1.0\r\n\r\n\n5 333 tag\nGET 1\n",
        b"\n\n3 -12 x\nabc\n5 7 a#1\nab\ncd\n",
        b"0 0 \n\n1 99999999999 t\nz\n",
    ];

    proptest::proptest! {
        #[test]
        fn fuzzed_stpd_reads_to_an_end_or_a_located_error(
            bytes in crate::ammo::fuzzing::ammo(&SEEDS),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("fuzz.stpd");
            std::fs::write(&path, &bytes).unwrap();
            let mut records = 0u64;
            let read = StpdReader::open(&path).and_then(|mut reader| {
                while let Some(shot) = reader.next_shot()? {
                    if shot.seq != records || records >= bytes.len() as u64 {
                        // Records are numbered in order, and each takes at least a header line.
                        return Ok(false);
                    }
                    records += 1;
                }
                Ok(true)
            });
            match read {
                Ok(in_order) => proptest::prop_assert!(in_order, "record {} out of order or past the end", records),
                Err(error) => crate::ammo::fuzzing::check_refusal(&error, &path, &bytes)?,
            }
        }
    }
}
