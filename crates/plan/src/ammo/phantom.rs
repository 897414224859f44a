//! Request-style ("phantom") ammo: `<size>[ <tag>[ ignored…]]` on a line, then
//! exactly `size` raw bytes sent as they are.
//!
//! Blank lines between chunks are skipped; a chunk of size 0 starts the next
//! pass (chunks after it are never read); a negative size takes the rest of the
//! file as one request (the reference's quirk, kept).

use super::passes::ReadState;
use super::pybytes::{show, split_fields, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};
use crate::pynum::py_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing read yet: read the first header.
    Start,
    /// A header (possibly none, at the end of the file) is in `line`.
    Header(bool),
    /// A missile was just returned: read the next header, rewinding at the end.
    AfterMissile,
    Done,
}

/// Reader of request-style ammo.
pub struct PhantomReader {
    file: AmmoFile,
    line: Vec<u8>,
    header: (usize, usize),
    state: State,
    yielded: bool,
}

impl PhantomReader {
    /// Read `file` as request-style ammo.
    pub fn new(file: AmmoFile) -> Self {
        PhantomReader {
            file,
            line: Vec::new(),
            header: (0, 0),
            state: State::Start,
            yielded: false,
        }
    }

    /// The reference's `read_chunk_header`: the next line that is not empty
    /// once `\r`/`\n` are stripped from its ends; `false` at the end of the file.
    fn read_header(&mut self) -> Result<bool> {
        while self.file.read_line(&mut self.line)? {
            let stripped = strip_set(&self.line, b"\r\n");
            if !stripped.is_empty() {
                let start = stripped.as_ptr() as usize - self.line.as_ptr() as usize;
                self.header = (start, start + stripped.len());
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Start the next pass; `false` when the `loop` limit ends the reading.
    fn next_pass(&mut self, st: &mut ReadState) -> Result<bool> {
        self.file.rewind()?;
        let yielded = std::mem::replace(&mut self.yielded, false);
        st.passes
            .finish(yielded, &self.file.path().display().to_string())
    }

    fn error(&self, message: String) -> PlanError {
        PlanError::Ammo {
            path: self.file.path().to_path_buf(),
            offset: self.file.offset(),
            message,
        }
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        loop {
            let has_header = match self.state {
                State::Done => return Ok(false),
                State::Start => self.read_header()?,
                State::Header(has) => has,
                State::AfterMissile => {
                    if self.read_header()? {
                        true
                    } else if self.next_pass(st)? {
                        self.read_header()?
                    } else {
                        false
                    }
                }
            };
            if !has_header {
                self.state = State::Done;
                return Ok(false);
            }
            let (size, tag) = {
                let header = &self.line[self.header.0..self.header.1];
                let mut fields = split_fields(header);
                let size = fields.next().and_then(py_int).ok_or_else(|| {
                    self.error(format!(
                        "bad chunk header `{}`: expected `<size> [tag]` with a whole number size",
                        show(header)
                    ))
                })?;
                let base = self.line.as_ptr() as usize;
                let tag = fields.next().map(|t| {
                    (
                        t.as_ptr() as usize - base,
                        t.as_ptr() as usize - base + t.len(),
                    )
                });
                (size, tag)
            };
            if size == 0 {
                // A zero-size chunk ends the pass.
                self.state = if self.next_pass(st)? {
                    State::Header(self.read_header()?)
                } else {
                    State::Done
                };
                continue;
            }
            slot.set_tag(tag.map(|(start, end)| &self.line[start..end]));
            if size < 0 {
                self.file.read_rest(&mut slot.missile)?;
            } else {
                let wanted = size as u64;
                self.file.read_up_to(wanted, &mut slot.missile)?;
                if (slot.missile.len() as u64) < wanted {
                    return Err(self.error(format!(
                        "unexpected end of file: read {} bytes instead of {wanted} for the chunk `{}`",
                        slot.missile.len(),
                        show(&self.line[self.header.0..self.header.1])
                    )));
                }
            }
            self.yielded = true;
            self.state = State::AfterMissile;
            return Ok(true);
        }
    }
}
