//! The `uris` option: GET requests built once and cycled in order.

use super::passes::ReadState;
use super::request::HeaderSet;
use super::Slot;
use crate::error::Result;

/// Cycles over the requests built from the config's `uris`.
pub(crate) struct UrisReader {
    requests: Vec<Vec<u8>>,
    next: usize,
    done: bool,
}

impl UrisReader {
    /// Build one GET request per URI with the config's headers (verbatim).
    pub(crate) fn new(uris: &[String], headers: &[String], http_ver: &str) -> Self {
        let set = HeaderSet::new(headers.iter().map(|h| h.as_bytes().to_vec()));
        let requests = uris
            .iter()
            .map(|uri| {
                let mut out = Vec::new();
                set.write_request(&mut out, b"GET", uri.as_bytes(), http_ver.as_bytes(), b"");
                out
            })
            .collect();
        UrisReader {
            requests,
            next: 0,
            done: false,
        }
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        if self.done || self.requests.is_empty() {
            return Ok(false);
        }
        if self.next == self.requests.len() {
            self.next = 0;
            if !st.passes.finish(true, &"uris")? {
                self.done = true;
                return Ok(false);
            }
        }
        slot.missile.clear();
        slot.missile.extend_from_slice(&self.requests[self.next]);
        slot.set_tag(None);
        self.next += 1;
        Ok(true)
    }
}
