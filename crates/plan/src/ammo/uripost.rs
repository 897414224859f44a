//! URI+POST ammo: `<size> <uri> [tag]` on a line, then `size` bytes of body,
//! sent as a POST; `[Name: value]` header lines may stand between chunks.

use super::headers::HeaderMap;
use super::passes::ReadState;
use super::pybytes::{show, split_fields, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::Result;
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
                let line = std::mem::take(&mut self.line);
                let applied = self.headers.apply_line(&line);
                self.line = line;
                applied.map_err(|message| self.file.error(message))?;
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
        let bad = || {
            format!(
                "bad chunk header `{}`: expected `<size> <uri> [tag]` with a whole number size",
                show(header)
            )
        };
        let size = fields
            .next()
            .and_then(py_int)
            .ok_or_else(|| self.file.error(bad()))?;
        let uri = fields.next().ok_or_else(|| self.file.error(bad()))?;
        slot.set_tag(fields.next());
        let uri = uri.to_vec();
        if size < 0 {
            self.file.read_rest(&mut self.body)?;
        } else {
            self.file.read_up_to(size as u64, &mut self.body)?;
            if (self.body.len() as u64) < size as u64 {
                return Err(self.file.error(format!(
                    "unexpected end of file: read {} bytes instead of {size} for the body of `{}`",
                    self.body.len(),
                    show(&uri)
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
