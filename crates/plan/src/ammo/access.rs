//! Access-log ammo: the GET requests of a web server's access log, replayed
//! with the config's headers and each line's own HTTP version. Lines that are
//! not `"GET <uri> <proto>/<ver>"` requests are skipped, as in the reference.

use super::passes::ReadState;
use super::pybytes::is_str_space;
use super::request::HeaderSet;
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};

/// Reader of access logs.
pub(crate) struct AccessReader {
    file: AmmoFile,
    headers: HeaderSet,
    line: Vec<u8>,
    yielded: bool,
    done: bool,
}

impl AccessReader {
    /// Read `file`; `headers` are the config's, used verbatim.
    pub(crate) fn new(file: AmmoFile, headers: &[String]) -> Self {
        let headers = HeaderSet::new(headers.iter().map(|h| h.as_bytes().to_vec()));
        AccessReader {
            file,
            headers,
            line: Vec::new(),
            yielded: false,
            done: false,
        }
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        while !self.done {
            if !self.file.read_line(&mut self.line)? {
                self.file.rewind()?;
                let yielded = std::mem::replace(&mut self.yielded, false);
                self.done = !st.passes.finish(yielded, &self.file.path().display())?;
                continue;
            }
            let text = std::str::from_utf8(&self.line).map_err(|e| {
                let start = self.file.offset() - self.line.len() as u64;
                PlanError::Ammo {
                    path: self.file.path().to_path_buf(),
                    offset: start + e.valid_up_to() as u64,
                    message: (start == 0)
                        .then(|| super::utf16(&self.line))
                        .flatten()
                        .unwrap_or_else(|| "access log line is not valid UTF-8".into()),
                }
            })?;
            if let Some((uri, version)) = get_request(text) {
                slot.set_tag(None);
                slot.missile.clear();
                self.headers.write_request(
                    &mut slot.missile,
                    b"GET",
                    uri.as_bytes(),
                    version.as_bytes(),
                    b"",
                );
                self.yielded = true;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// `(uri, version)` of a GET line: the text after the first `"` (up to the next
/// one) must be exactly `METHOD URI PROTO`, with the version between PROTO's
/// first and second `/`.
fn get_request(line: &str) -> Option<(&str, &str)> {
    let request = line.split('"').nth(1)?;
    let mut fields = request.split(is_str_space).filter(|f| !f.is_empty());
    let (method, uri, proto) = (fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() || method != "GET" {
        return None;
    }
    let version = proto.split('/').nth(1)?;
    Some((uri, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_get_lines_are_requests() {
        let line = "1.2.3.4 - - [x] \"GET /a?b=1 HTTP/1.1\" 200 5 \"-\" \"curl\"\n";
        assert_eq!(get_request(line), Some(("/a?b=1", "1.1")));
        assert_eq!(get_request("\"POST /a HTTP/1.1\""), None);
        assert_eq!(get_request("\"GET /a\""), None);
        assert_eq!(get_request("\"GET /a HTTP\""), None);
        assert_eq!(get_request("no quotes"), None);
        assert_eq!(get_request("x \"GET /a HTTP/1.0"), Some(("/a", "1.0")));
    }

    #[test]
    fn a_utf16_log_is_told_to_be_saved_as_utf8() {
        let error = crate::ammo::error_of(b"\xff\xfe1\x00.\x002\x00\n\x00", |file| {
            crate::ammo::AmmoReader::Access(AccessReader::new(file, &[]))
        });
        assert_eq!(
            error,
            "ammo.txt: byte 0: the file is UTF-16 text (little-endian: it begins with the \
             byte-order mark FF FE), but ammo is read as bytes in UTF-8: save the file as UTF-8, \
             without a byte-order mark"
        );
    }

    /// Access logs from the corpus.
    const SEEDS: [&[u8]; 2] = [
        include_bytes!("../../../../tests/corpus/ammo/access_basic.log"),
        include_bytes!("../../../../tests/corpus/ammo/access_no_get.log"),
    ];

    proptest::proptest! {
        #[test]
        fn fuzzed_access_logs_read_to_an_end_or_a_located_error(
            bytes in crate::ammo::fuzzing::ammo(&SEEDS),
        ) {
            crate::ammo::fuzzing::read_to_end(&bytes, |file| {
                Ok(crate::ammo::AmmoReader::Access(AccessReader::new(file, &["Host: fuzz".into()])))
            })?;
        }
    }
}
