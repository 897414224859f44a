//! URI-style ammo: one `<uri> [tag]` per line, sent as GET requests, with
//! `[Name: value]` header lines anywhere in the file.

use super::headers::HeaderMap;
use super::passes::ReadState;
use super::pybytes::{show, split_fields, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::Result;

/// Reader of URI-style ammo.
pub struct UriReader {
    file: AmmoFile,
    headers: HeaderMap,
    http_ver: Vec<u8>,
    line: Vec<u8>,
    done: bool,
}

impl UriReader {
    /// Read `file`, starting from the config's headers.
    pub fn new(file: AmmoFile, headers: HeaderMap, http_ver: &str) -> Self {
        UriReader {
            file,
            headers,
            http_ver: http_ver.as_bytes().to_vec(),
            line: Vec::new(),
            done: false,
        }
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
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
                applied.map_err(|message| self.file.error(message))?;
            } else if !strip_set(&self.line, b"\r\n").is_empty() {
                let mut fields = split_fields(&self.line);
                let uri = fields.next().ok_or_else(|| {
                    self.file.error(format!(
                        "line `{}` has only whitespace: expected `<uri> [tag]`",
                        show(&self.line)
                    ))
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
