//! Request-style ("phantom") ammo: `<size>[ <tag>[ ignored…]]` on a line, then
//! exactly `size` raw bytes sent as they are.
//!
//! Blank lines between chunks are skipped; a chunk of size 0 starts the next
//! pass (chunks after it are never read); a negative size takes the rest of the
//! file as one request (the reference's quirk, kept).

use super::passes::ReadState;
use super::pybytes::{is_space, show, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};
use crate::pynum::py_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing read yet: read the first header.
    Start,
    /// A header was read: its size (its tag is in the slot), or `None` at the end of the file.
    Header(Option<i64>),
    /// A missile was just returned: read the next header, rewinding at the end.
    AfterMissile,
    Done,
}

/// Reader of request-style ammo.
pub struct PhantomReader {
    file: AmmoFile,
    state: State,
    yielded: bool,
}

impl PhantomReader {
    /// Read `file` as request-style ammo.
    pub fn new(file: AmmoFile) -> Self {
        PhantomReader {
            file,
            state: State::Start,
            yielded: false,
        }
    }

    /// The reference's `read_chunk_header`, parsed: the size of the next chunk
    /// (its tag goes to `slot`), or `None` at the end of the file.
    fn read_header(&mut self, slot: &mut Slot) -> Result<Option<i64>> {
        // Blank lines hold only \r and \n, and those are stripped from a
        // header's ends anyway: skipping them first gives the same header.
        self.file.skip_line_breaks()?;
        let parsed = self.file.with_line(|line| {
            let header = strip_set(line, b"\r\n");
            let (size, tag) = two_fields(header);
            match size.and_then(py_int) {
                Some(size) => {
                    slot.set_tag(tag);
                    Ok(size)
                }
                None => Err(format!(
                    "bad chunk header `{}`: expected `<size> [tag]` with a whole number size",
                    show(header)
                )),
            }
        })?;
        match parsed {
            None => Ok(None),
            Some(Ok(size)) => Ok(Some(size)),
            Some(Err(message)) => Err(self.error(message)),
        }
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
            let header = match self.state {
                State::Done => return Ok(false),
                State::Start => self.read_header(slot)?,
                State::Header(header) => header,
                State::AfterMissile => match self.read_header(slot)? {
                    Some(size) => Some(size),
                    None if self.next_pass(st)? => self.read_header(slot)?,
                    None => None,
                },
            };
            let Some(size) = header else {
                self.state = State::Done;
                return Ok(false);
            };
            if size == 0 {
                // A zero-size chunk ends the pass.
                self.state = if self.next_pass(st)? {
                    State::Header(self.read_header(slot)?)
                } else {
                    State::Done
                };
                continue;
            }
            if size < 0 {
                self.file.read_rest(&mut slot.missile)?;
            } else {
                let wanted = size as u64;
                self.file.read_up_to(wanted, &mut slot.missile)?;
                if (slot.missile.len() as u64) < wanted {
                    return Err(self.error(format!(
                        "unexpected end of file: read {} bytes instead of {wanted}",
                        slot.missile.len()
                    )));
                }
            }
            self.yielded = true;
            self.state = State::AfterMissile;
            return Ok(true);
        }
    }
}

/// The first two whitespace-separated fields of a chunk header (Python's
/// `split()[0]` and `[1]`), without building an iterator per shot.
fn two_fields(header: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    let field = |from: usize| -> Option<(usize, usize)> {
        let start = from + header.get(from..)?.iter().position(|b| !is_space(*b))?;
        let end = header[start..]
            .iter()
            .position(|b| is_space(*b))
            .map_or(header.len(), |n| start + n);
        Some((start, end))
    };
    let Some((a, b)) = field(0) else {
        return (None, None);
    };
    (Some(&header[a..b]), field(b).map(|(c, d)| &header[c..d]))
}

#[cfg(test)]
mod tests {
    use super::two_fields;

    #[test]
    fn two_fields_split_like_python() {
        assert_eq!(two_fields(b"12"), (Some(&b"12"[..]), None));
        assert_eq!(
            two_fields(b" 12 \x0btag  x"),
            (Some(&b"12"[..]), Some(&b"tag"[..]))
        );
        assert_eq!(two_fields(b" \t "), (None, None));
    }
}
