//! The filler: one buffer of random text per process that every generated body is cut from.
//!
//! `random_content: "256mb"` used to be 256 MB allocated when the recipe was
//! loaded, so four such routes in one 245-byte POST took the simulator to
//! 1 GB. Now a generated body is this buffer repeated, then a slice of it for
//! the rest: reference-counted views of one allocation, so a body costs a few
//! pointers whatever size it declares. The buffer is large enough (1 MiB)
//! that the bodies load tests use (bytes to hundreds of kilobytes) are one
//! slice, sent as one frame as before, and far longer than gzip's 32 kB
//! window, so the repetition does not make a body compress better than
//! random text does. Every route gets the same text; nothing relies on it
//! differing.

use std::sync::OnceLock;

use bytes::Bytes;
use rand::distr::{Alphanumeric, SampleString};

/// The filler's length in bytes.
pub(crate) const FILLER_LEN: usize = 1 << 20;

/// The process's filler: [`FILLER_LEN`] random letters and digits, made on first use.
pub(crate) fn filler() -> &'static Bytes {
    static FILLER: OnceLock<Bytes> = OnceLock::new();
    FILLER.get_or_init(|| Bytes::from(Alphanumeric.sample_string(&mut rand::rng(), FILLER_LEN)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filler_is_printable_and_made_once() {
        let first = filler();
        assert_eq!(first.len(), FILLER_LEN);
        assert!(first.iter().all(u8::is_ascii_alphanumeric));
        assert_eq!(filler().as_ptr(), first.as_ptr());
    }
}
