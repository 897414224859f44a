//! URI-style ammo: one `<uri> [tag]` per line, sent as GET requests, with
//! `[Name: value]` header lines anywhere in the file.

use super::headers::HeaderMap;
use super::passes::ReadState;
use super::pybytes::{show, split_fields, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::Result;

/// Reader of URI-style ammo.
pub(crate) struct UriReader {
    file: AmmoFile,
    headers: HeaderMap,
    http_ver: Vec<u8>,
    line: Vec<u8>,
    done: bool,
}

impl UriReader {
    /// Read `file`, starting from the config's headers.
    pub(crate) fn new(file: AmmoFile, headers: HeaderMap, http_ver: &str) -> Self {
        UriReader {
            file,
            headers,
            http_ver: http_ver.as_bytes().to_vec(),
            line: Vec::new(),
            done: false,
        }
    }

    /// Where the line just read starts.
    fn line_start(&self) -> u64 {
        self.file.offset() - self.line.len() as u64
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        while !self.done {
            if !self.file.read_line(&mut self.line)? {
                if st.written == 0 {
                    return Err(self.file.error(
                        "no requests in this uri ammo: expected lines of `<uri> [tag]` (the file has only \
                         header or blank lines, or chosen_cases matched none of them)"
                            .into(),
                    ));
                }
                self.file.rewind()?;
                self.done = !st
                    .passes
                    .finish(true, &self.file.path().display().to_string())?;
                continue;
            }
            if self.line.starts_with(b"[") {
                let line = std::mem::take(&mut self.line);
                let applied = self.headers.apply_line(&line);
                self.line = line;
                applied.map_err(|message| self.file.line_error(self.line_start(), message))?;
            } else if !strip_set(&self.line, b"\r\n").is_empty() {
                let mut fields = split_fields(&self.line);
                let uri = fields.next().ok_or_else(|| {
                    self.file.line_error(
                        self.line_start(),
                        format!(
                            "line `{}` has only whitespace: expected `<uri> [tag]`",
                            show(&self.line)
                        ),
                    )
                })?;
                slot.set_tag(fields.next());
                slot.missile.clear();
                self.headers.set().write_request(
                    &mut slot.missile,
                    b"GET",
                    uri,
                    &self.http_ver,
                    b"",
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ammo::{fuzzing, AmmoReader};
    use crate::error::PlanError;

    /// The error reading uri ammo `bytes` stops with.
    fn error_of(bytes: &[u8]) -> String {
        crate::ammo::error_of(bytes, |file| {
            AmmoReader::Uri(UriReader::new(file, HeaderMap::default(), "1.1"))
        })
    }

    #[test]
    fn a_bad_line_is_located_where_it_starts() {
        assert_eq!(
            error_of(b"/a\n[Host: x]\n/b\n[start]\n/c\n"),
            "ammo.txt: byte 16: line 4: header line `[start]` has no `:`; expected `[Name: value]`"
        );
        assert_eq!(
            error_of(b"/a\r\n \t\r\n"),
            "ammo.txt: byte 4: line 2: line ` \\t` has only whitespace: expected `<uri> [tag]`"
        );
        assert_eq!(
            error_of(b"/a\n[Host: \xff]\n"),
            "ammo.txt: byte 3: line 2: header line `[Host: \u{fffd}]` is not valid UTF-8"
        );
    }

    /// Uri ammo in every shape the corpus has, plain and gzip.
    const SEEDS: [&[u8]; 7] = [
        include_bytes!("../../../../tests/corpus/ammo/uri_basic.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_headers.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_spacing.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_header_case.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_utf8.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_indented_header.txt"),
        include_bytes!("../../../../tests/corpus/ammo/uri_sniff.ammo.gz"),
    ];

    proptest::proptest! {
        #[test]
        fn fuzzed_uri_ammo_reads_to_an_end_or_a_located_error(bytes in fuzzing::ammo(&SEEDS)) {
            fuzzing::read_to_end(&bytes, |file| {
                let headers = HeaderMap::from_config(&["Host: fuzz".into()]).map_err(PlanError::Config)?;
                Ok(AmmoReader::Uri(UriReader::new(file, headers, "1.1")))
            })?;
        }
    }
}
