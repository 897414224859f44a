//! Plain TCP (`tank_type = none`): the request's bytes go out verbatim, and
//! the reply ends where its framing says ([`Framing`]): at the server's close
//! (the default: one request per connection), after a delimiter
//! (`reply_delimiter`), or after a big-endian length prefix and the bytes it
//! counts (`reply_length_prefix`). A framed reply keeps the connection for
//! the next request, which is what lets a request/response protocol over raw
//! TCP (Apiary's CountDB) be shot over kept connections, and replayed.
//!
//! There is no proto code (0). A request is never sent again: the bytes'
//! meaning is unknown. Bytes past a framed reply's end belong to no request:
//! the reply is broken (net code 71), as a reply cut short by the close is.

use tank_config::{ReplyFraming, MAX_DELIMITER};

use super::Progress;

/// Where a plain TCP reply ends (a copy of the config's [`ReplyFraming`]
/// that fits in a register or two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// At the server's close.
    Close,
    /// After the first `len` bytes of `bytes`.
    Delimiter {
        /// The delimiter, padded.
        bytes: [u8; MAX_DELIMITER],
        /// Its length, 1 to [`MAX_DELIMITER`].
        len: u8,
    },
    /// After a big-endian length of `width` bytes (1, 2, 4 or 8) and the
    /// bytes it counts, at most `max` (more is a broken reply at once: a
    /// length that large is garbage, not a frame to wait for).
    LengthPrefix {
        /// The length's bytes.
        width: u8,
        /// The most a frame may count (`phantom_http_entity`, as for an
        /// HTTP body).
        max: u64,
    },
}

impl Framing {
    /// The config's framing, a frame of at most `max_frame` bytes.
    pub fn of(framing: &ReplyFraming, max_frame: u64) -> Self {
        match framing {
            ReplyFraming::Close => Framing::Close,
            // The config holds 1 to MAX_DELIMITER bytes; none would match nothing.
            ReplyFraming::Delimiter(delimiter) if delimiter.is_empty() => Framing::Close,
            ReplyFraming::Delimiter(delimiter) => {
                let len = delimiter.len().min(MAX_DELIMITER);
                let mut bytes = [0; MAX_DELIMITER];
                bytes[..len].copy_from_slice(&delimiter[..len]);
                Framing::Delimiter {
                    bytes,
                    len: len as u8,
                }
            }
            ReplyFraming::LengthPrefix(width) => Framing::LengthPrefix {
                width: (*width).clamp(1, 8),
                max: max_frame,
            },
        }
    }
}

/// A reply being read.
pub(super) struct TcpReply {
    framing: Framing,
    /// Delimiter: its bytes matched at the end of what was read.
    /// Length prefix: the prefix's bytes read so far.
    matched: usize,
    /// Length prefix: the prefix's value so far.
    length: u64,
    /// Length prefix: body bytes still to come, once the prefix is whole.
    left: Option<u64>,
}

impl TcpReply {
    pub(super) fn new(framing: Framing) -> Self {
        TcpReply {
            framing,
            matched: 0,
            length: 0,
            left: None,
        }
    }

    pub(super) fn feed(&mut self, data: &[u8]) -> Progress {
        let whole = Progress::Whole {
            code: 0,
            keep_alive: true,
        };
        match self.framing {
            Framing::Close => Progress::More,
            Framing::Delimiter { bytes, len } => {
                let delimiter = &bytes[..usize::from(len)];
                for (i, &b) in data.iter().enumerate() {
                    self.matched = next_match(delimiter, self.matched, b);
                    if self.matched == delimiter.len() {
                        return if i + 1 == data.len() {
                            whole
                        } else {
                            Progress::Broken
                        };
                    }
                }
                Progress::More
            }
            Framing::LengthPrefix { width, max } => {
                let mut rest = data;
                while self.left.is_none() {
                    let Some((&b, after)) = rest.split_first() else {
                        return Progress::More;
                    };
                    self.length = self.length << 8 | u64::from(b);
                    self.matched += 1;
                    rest = after;
                    if self.matched == usize::from(width) {
                        if self.length > max {
                            return Progress::Broken;
                        }
                        self.left = Some(self.length);
                    }
                }
                let left = self.left.unwrap_or(0);
                let take = (rest.len() as u64).min(left);
                self.left = Some(left - take);
                match (left - take, rest.len() as u64 - take) {
                    (0, 0) => whole,
                    (0, _) => Progress::Broken,
                    _ => Progress::More,
                }
            }
        }
    }

    /// The server closed: whole for a reply that runs to the close, cut short otherwise.
    pub(super) fn at_end(&mut self) -> Option<u16> {
        (self.framing == Framing::Close).then_some(0)
    }
}

/// How much of `delimiter` is matched after `b`, `matched` bytes of it
/// having been matched before (the longest prefix of it ending there).
fn next_match(delimiter: &[u8], matched: usize, b: u8) -> usize {
    let mut matched = matched;
    loop {
        if delimiter[matched] == b {
            return matched + 1;
        }
        if matched == 0 {
            return 0;
        }
        // The longest shorter prefix that is also a suffix of what matched.
        matched = (1..matched)
            .rev()
            .find(|&k| delimiter[..k] == delimiter[matched - k..matched])
            .unwrap_or(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delimiter(text: &[u8]) -> Framing {
        Framing::of(&ReplyFraming::Delimiter(text.to_vec()), 8 << 20)
    }

    fn feed_all(framing: Framing, pieces: &[&[u8]]) -> Vec<Progress> {
        let mut reply = TcpReply::new(framing);
        pieces.iter().map(|piece| reply.feed(piece)).collect()
    }

    const WHOLE: Progress = Progress::Whole {
        code: 0,
        keep_alive: true,
    };

    #[test]
    fn a_delimited_reply_ends_at_its_delimiter_across_reads() {
        assert_eq!(
            feed_all(delimiter(b"\0"), &[b"{\"a\":1", b"}\0"]),
            [Progress::More, WHOLE]
        );
        assert_eq!(
            feed_all(delimiter(b"\r\n\r\n"), &[b"x\r\n\r", b"\r", b"\n\r\n"]),
            [Progress::More, Progress::More, WHOLE]
        );
        // "aab" in "aaab": a partial match restarts from its longest suffix.
        assert_eq!(feed_all(delimiter(b"aab"), &[b"aaab"]), [WHOLE]);
        assert_eq!(
            feed_all(delimiter(b"\0"), &[b"one\0two"]),
            [Progress::Broken]
        );
    }

    #[test]
    fn a_length_prefixed_reply_ends_after_its_count() {
        let prefix = |width| Framing::LengthPrefix {
            width,
            max: 8 << 20,
        };
        let framing = prefix(4);
        assert_eq!(
            feed_all(framing, &[b"\0\0", b"\0\x03ab", b"c"]),
            [Progress::More, Progress::More, WHOLE]
        );
        assert_eq!(feed_all(framing, &[b"\0\0\0\0"]), [WHOLE]);
        assert_eq!(feed_all(prefix(1), &[b"\x01ab"]), [Progress::Broken]);
        // 4 GB is no frame to wait for: broken at once, not at the timeout.
        assert_eq!(
            feed_all(framing, &[b"\xff\xff\xff\xff"]),
            [Progress::Broken]
        );
        let mut close = TcpReply::new(framing);
        assert_eq!(close.at_end(), None);
        assert_eq!(TcpReply::new(Framing::Close).at_end(), Some(0));
    }

    proptest! {
        #[test]
        fn a_delimited_reply_ends_exactly_at_the_first_delimiter(
            body in proptest::collection::vec(any::<u8>(), 0..100),
            delim in proptest::collection::vec(any::<u8>(), 1..4),
            cut in 1usize..20,
        ) {
            let mut stream = body.clone();
            stream.extend_from_slice(&delim);
            let first = stream.windows(delim.len()).position(|w| w == delim.as_slice()).unwrap();
            let end = first + delim.len();
            let mut reply = TcpReply::new(delimiter(&delim));
            let mut fed = 0;
            let mut last = Progress::More;
            for piece in stream[..end].chunks(cut) {
                last = reply.feed(piece);
                fed += piece.len();
                if last != Progress::More {
                    break;
                }
            }
            prop_assert_eq!(last, WHOLE);
            prop_assert_eq!(fed, end);
        }
    }
}
