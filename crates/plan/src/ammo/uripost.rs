//! URI+POST ammo: `<size> <uri> [tag]` on a line, then `size` bytes of body,
//! sent as a POST; `[Name: value]` header lines may stand between chunks.

use super::headers::HeaderMap;
use super::passes::ReadState;
use super::pybytes::{show, split_fields, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};
use crate::pynum::py_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    AfterMissile,
    Done,
}

/// Reader of URI+POST ammo.
pub(crate) struct UriPostReader {
    file: AmmoFile,
    headers: HeaderMap,
    http_ver: Vec<u8>,
    line: Vec<u8>,
    header: (usize, usize),
    /// Where the header of the chunk last read starts, if only blank lines
    /// follow that chunk: a bad header after it names it.
    header_at: Option<u64>,
    body: Vec<u8>,
    state: State,
}

impl UriPostReader {
    /// Read `file`, starting from the config's headers.
    pub(crate) fn new(file: AmmoFile, headers: HeaderMap, http_ver: &str) -> Self {
        UriPostReader {
            file,
            headers,
            http_ver: http_ver.as_bytes().to_vec(),
            line: Vec::new(),
            header: (0, 0),
            header_at: None,
            body: Vec::new(),
            state: State::Start,
        }
    }

    /// The next chunk header, applying header lines on the way; `false` at the end.
    fn read_header(&mut self) -> Result<bool> {
        loop {
            if !self.file.read_line(&mut self.line)? {
                return Ok(false);
            }
            if self.line.starts_with(b"[") {
                self.header_at = None;
                let line = std::mem::take(&mut self.line);
                let applied = self.headers.apply_line(&line);
                self.line = line;
                applied.map_err(|message| self.file.line_error(self.line_start(), message))?;
                continue;
            }
            let stripped = strip_set(&self.line, b"\r\n");
            if !stripped.is_empty() {
                let start = stripped.as_ptr() as usize - self.line.as_ptr() as usize;
                self.header = (start, start + stripped.len());
                return Ok(true);
            }
        }
    }

    /// Where the line just read starts.
    fn line_start(&self) -> u64 {
        self.file.offset() - self.line.len() as u64
    }

    /// The error for the bad chunk header just read, `header`. When it follows
    /// a chunk, that chunk's size is nearly always the cause: the message names it.
    #[cold]
    fn bad_header(&self, header: &[u8]) -> PlanError {
        let start = self.line_start();
        if start == 0 {
            if let Some(message) = super::utf16(&self.line) {
                return self.file.line_error(start, message);
            }
        }
        let mut message = format!(
            "bad chunk header `{}`: expected `<size> <uri> [tag]` with a whole number size",
            show(header)
        );
        if start == 0 && self.line.starts_with(b"\xef\xbb\xbf") {
            message += "; the file begins with a UTF-8 byte-order mark, which is read as part \
                        of its first line: save the file without it";
        } else if let Some(before) = self.header_at {
            message += &format!(
                "; the chunk before it, {}, ends before this line: if its size is wrong \
                 (counted with \\r\\n line ends for a body written with \\n, or in characters, \
                 not bytes), this line is the rest of its body or of the chunk after it",
                self.file.quote_line(before)
            );
        }
        self.file.line_error(start, message)
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        let has_header = match self.state {
            State::Done => false,
            State::Start => self.read_header()?,
            State::AfterMissile => {
                if self.read_header()? {
                    true
                } else {
                    self.file.rewind()?;
                    self.header_at = None;
                    st.passes
                        .finish(true, &self.file.path().display().to_string())?
                        && self.read_header()?
                }
            }
        };
        if !has_header {
            self.state = State::Done;
            return Ok(false);
        }
        let header = &self.line[self.header.0..self.header.1];
        let mut fields = split_fields(header);
        let size = fields
            .next()
            .and_then(py_int)
            .ok_or_else(|| self.bad_header(header))?;
        let uri = fields.next().ok_or_else(|| self.bad_header(header))?;
        slot.set_tag(fields.next());
        let uri = uri.to_vec();
        let header_at = self.line_start();
        self.header_at = Some(header_at);
        if size < 0 {
            self.file.read_rest(&mut self.body)?;
        } else {
            self.file.read_up_to(size as u64, &mut self.body)?;
            if (self.body.len() as u64) < size as u64 {
                return Err(self.file.error(format!(
                    "unexpected end of file: read {} bytes instead of {size} for the body of \
                     the chunk {}",
                    self.body.len(),
                    self.file.quote_line(header_at)
                )));
            }
        }
        slot.missile.clear();
        self.headers.set().write_request(
            &mut slot.missile,
            b"POST",
            &uri,
            &self.http_ver,
            &self.body,
        );
        self.state = State::AfterMissile;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ammo::{fuzzing, AmmoReader};
    use crate::error::PlanError;

    /// The error reading uripost ammo `bytes` stops with.
    fn error_of(bytes: &[u8]) -> String {
        crate::ammo::error_of(bytes, |file| {
            AmmoReader::UriPost(UriPostReader::new(file, HeaderMap::default(), "1.1"))
        })
    }

    #[test]
    fn a_bad_header_is_located_at_its_line_and_names_the_chunk_before_it() {
        // yandex-tank's own test file `uripost-bad-2`: a body longer than its size.
        let ammo = b"[Host: x]\n7 /a\n{\"a\": \"b\"}\n";
        assert_eq!(
            error_of(ammo),
            "ammo.txt: byte 22: line 3: bad chunk header `b\"}`: expected `<size> <uri> [tag]` \
             with a whole number size; the chunk before it, `7 /a` at byte 10 (line 2), ends \
             before this line: if its size is wrong (counted with \\r\\n line ends for a body \
             written with \\n, or in characters, not bytes), this line is the rest of its body \
             or of the chunk after it"
        );
        // After a header line, the chunk before is not named.
        assert_eq!(
            error_of(b"1 /a\nx\n[Host: x]\n/b\n"),
            "ammo.txt: byte 17: line 4: bad chunk header `/b`: expected `<size> <uri> [tag]` \
             with a whole number size"
        );
    }

    #[test]
    fn a_header_line_without_a_colon_is_located_at_its_line() {
        assert_eq!(
            error_of(b"1 /a\nx\n[start]\r\n"),
            "ammo.txt: byte 7: line 3: header line `[start]` has no `:`; expected `[Name: value]`"
        );
    }

    #[test]
    fn a_body_cut_short_names_its_chunk() {
        assert_eq!(
            error_of(b"\n2 /a\nxy\n50 /parse_iso t\n{}"),
            "ammo.txt: byte 27: unexpected end of file: read 2 bytes instead of 50 for the body \
             of the chunk `50 /parse_iso t` at byte 9 (line 4)"
        );
    }

    #[test]
    fn a_byte_order_mark_or_utf16_at_the_start_is_named() {
        assert_eq!(
            error_of(b"\xef\xbb\xbf[Host: x]\n1 /a\nx\n"),
            "ammo.txt: byte 0: line 1: bad chunk header `\\u{feff}[Host: x]`: expected \
             `<size> <uri> [tag]` with a whole number size; the file begins with a UTF-8 \
             byte-order mark, which is read as part of its first line: save the file without it"
        );
        assert_eq!(
            error_of(b"\xff\xfe1\x00 \x00/\x00\n\x00"),
            "ammo.txt: byte 0: line 1: the file is UTF-16 text (little-endian: it begins with \
             the byte-order mark FF FE), but ammo is read as bytes in UTF-8: save the file as \
             UTF-8, without a byte-order mark"
        );
    }

    /// Uri+post ammo in every shape the corpus has.
    const SEEDS: [&[u8]; 4] = [
        include_bytes!("../../../../tests/corpus/ammo/uripost_basic.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uripost_crlf.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uripost_truncated.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uripost_bad_size.txt"),
    ];

    proptest::proptest! {
        #[test]
        fn fuzzed_uripost_ammo_reads_to_an_end_or_a_located_error(bytes in fuzzing::ammo(&SEEDS)) {
            fuzzing::read_to_end(&bytes, |file| {
                let headers = HeaderMap::from_config(&["Host: fuzz".into()]).map_err(PlanError::Config)?;
                Ok(AmmoReader::UriPost(UriPostReader::new(file, headers, "1.1")))
            })?;
        }
    }
}
