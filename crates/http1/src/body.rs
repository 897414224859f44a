//! Framing a message's body once its head is read: how many bytes belong to
//! it (RFC 9112 §6.3: `Transfer-Encoding: chunked`, else `Content-Length`,
//! else, for a reply, up to the connection's close), counted against a limit.
//!
//! One decoder for requests and replies, as hyper's `decode.rs` is: the gun
//! counts a reply's body and drops it; `tank import` keeps a request's bytes
//! verbatim. So the decoder only says which bytes belong to the body and when
//! it ends; keeping them is the caller's choice. It is plain data (`Copy`) and
//! needs no buffer: a chunk-size or trailer line cut between reads is read a
//! byte at a time, so nothing of it has to be kept.

/// Why a body's bytes cannot be framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// More body bytes than the caller's `max_body`.
    #[error("the body is larger than its limit")]
    TooLarge,
    /// A chunk-size or trailer line longer than the caller's `max_line`.
    #[error("a chunk size or trailer line is longer than its limit")]
    LineTooLong,
    /// A byte that cannot be in a chunk-size line where it is.
    #[error(
        "byte 0x{0:02x} in a chunk size line, where hex digits (then `;` extensions) were expected"
    )]
    BadChunkSize(u8),
    /// A chunk-size line with no digits.
    #[error("a chunk size line without a size (expected hex digits)")]
    NoChunkSize,
    /// A chunk size of more than 15 hex digits.
    #[error("a chunk size of more than 15 hex digits")]
    ChunkSizeTooLong,
    /// Chunk data not followed by CRLF (or a bare LF).
    #[error("chunk data not followed by CRLF")]
    NoCrlfAfterData,
}

/// How a body is framed, and how far it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `n` more bytes (0: the body is complete).
    Length(u64),
    /// Chunked, in the given step.
    Chunked(Chunk),
    /// Until the connection closes.
    Eof,
}

/// Where a chunked body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// In a chunk-size line: its bytes so far, the size so far, and which part.
    Size {
        len: usize,
        size: u64,
        part: SizePart,
    },
    /// `n` bytes of chunk data left.
    Data(u64),
    /// After chunk data: its CR seen or not.
    DataEnd { cr: bool },
    /// A trailer line after the last chunk, `len` bytes of it so far; `blank`
    /// while those are nothing or one CR (then its LF ends the body).
    Trailer { len: usize, blank: bool },
}

/// The parts of a chunk-size line, `[ws] hex-digits [ws] [; extensions] [CR] LF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SizePart {
    /// Whitespace before the digits.
    Lead,
    /// `n` hex digits so far.
    Digits(u8),
    /// Whitespace after them.
    Trail,
    /// After a `;`: anything, up to the LF.
    Extension,
}

/// Most hex digits in a chunk size (beyond them it would not fit the entity limits anyway).
const MAX_SIZE_DIGITS: u8 = 15;

/// Reads one body: fed bytes as they arrive, it says how many belong to the
/// body and whether the body ended with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyDecoder {
    kind: Kind,
    /// Body bytes so far (chunk framing not counted).
    seen: u64,
}

impl BodyDecoder {
    /// A body of `length` bytes (`Content-Length`); complete at once when 0.
    pub fn length(length: u64) -> BodyDecoder {
        BodyDecoder::new(Kind::Length(length))
    }

    /// A chunked body (`Transfer-Encoding: …, chunked`), up to its last chunk and trailers.
    pub fn chunked() -> BodyDecoder {
        BodyDecoder::new(Kind::Chunked(Chunk::Size {
            len: 0,
            size: 0,
            part: SizePart::Lead,
        }))
    }

    /// A body that runs to the connection's close (a reply with neither framing header).
    pub fn eof() -> BodyDecoder {
        BodyDecoder::new(Kind::Eof)
    }

    #[inline]
    fn new(kind: Kind) -> BodyDecoder {
        BodyDecoder { kind, seen: 0 }
    }

    /// Whether the body runs to the connection's close (then a close completes it).
    #[inline]
    pub fn ends_at_close(&self) -> bool {
        self.kind == Kind::Eof
    }

    /// Whether the body is complete (a zero length, or everything decoded).
    pub fn is_complete(&self) -> bool {
        self.kind == Kind::Length(0)
    }

    /// The bytes a `Content-Length` body still lacks (`None` when chunked or to the close).
    pub fn length_left(&self) -> Option<u64> {
        match self.kind {
            Kind::Length(left) => Some(left),
            _ => None,
        }
    }

    /// Body bytes decoded so far, framing not counted.
    pub fn body_bytes(&self) -> u64 {
        self.seen
    }

    /// Feed the next bytes: how many of them belong to the body, and whether
    /// the body ended with them. Unless it ended, all of `data` belongs to it.
    /// Chunk data counts against `max_body`, a chunk-size or trailer line
    /// (without its LF) against `max_line`. After an error the decoder must
    /// not be fed again.
    #[inline]
    pub fn decode(
        &mut self,
        data: &[u8],
        max_line: usize,
        max_body: u64,
    ) -> Result<(usize, bool), BodyError> {
        self.decode_with(data, max_line, max_body, |_| {})
    }

    /// As [`BodyDecoder::decode`], handing `keep` the body's own bytes in
    /// order (a chunked body's data without its framing), for a caller that
    /// reads the body: a scenario's postprocessors.
    #[inline]
    pub fn decode_with(
        &mut self,
        data: &[u8],
        max_line: usize,
        max_body: u64,
        mut keep: impl FnMut(&[u8]),
    ) -> Result<(usize, bool), BodyError> {
        match self.kind {
            Kind::Length(left) => {
                let take = left.min(data.len() as u64);
                self.count(take, max_body)?;
                keep(&data[..take as usize]);
                self.kind = Kind::Length(left - take);
                Ok((take as usize, take == left))
            }
            Kind::Eof => {
                self.count(data.len() as u64, max_body)?;
                keep(data);
                Ok((data.len(), false))
            }
            Kind::Chunked(chunk) => self.decode_chunked(chunk, data, max_line, max_body, &mut keep),
        }
    }

    #[inline]
    fn count(&mut self, n: u64, max_body: u64) -> Result<(), BodyError> {
        self.seen += n;
        if self.seen > max_body {
            return Err(BodyError::TooLarge);
        }
        Ok(())
    }

    /// The chunked body's steps over `data`, until it ends or `data` does.
    fn decode_chunked(
        &mut self,
        mut chunk: Chunk,
        data: &[u8],
        max_line: usize,
        max_body: u64,
        keep: &mut impl FnMut(&[u8]),
    ) -> Result<(usize, bool), BodyError> {
        let mut at = 0;
        while at < data.len() {
            match chunk {
                Chunk::Data(left) => {
                    let take = left.min((data.len() - at) as u64);
                    self.count(take, max_body)?;
                    keep(&data[at..at + take as usize]);
                    at += take as usize;
                    chunk = if take == left {
                        Chunk::DataEnd { cr: false }
                    } else {
                        Chunk::Data(left - take)
                    };
                }
                Chunk::DataEnd { cr } => {
                    let byte = data[at];
                    at += 1;
                    chunk = match (cr, byte) {
                        (false, b'\r') => Chunk::DataEnd { cr: true },
                        // A bare LF is tolerated, as servers do.
                        (_, b'\n') => Chunk::Size {
                            len: 0,
                            size: 0,
                            part: SizePart::Lead,
                        },
                        _ => return Err(BodyError::NoCrlfAfterData),
                    };
                }
                Chunk::Size { len, size, part } => {
                    let byte = data[at];
                    at += 1;
                    if byte == b'\n' {
                        if matches!(part, SizePart::Lead) {
                            return Err(BodyError::NoChunkSize);
                        }
                        chunk = if size == 0 {
                            Chunk::Trailer {
                                len: 0,
                                blank: true,
                            }
                        } else {
                            Chunk::Data(size)
                        };
                        continue;
                    }
                    if len + 1 > max_line {
                        return Err(BodyError::LineTooLong);
                    }
                    let (size, part) = size_byte(size, part, byte)?;
                    chunk = Chunk::Size {
                        len: len + 1,
                        size,
                        part,
                    };
                }
                Chunk::Trailer { len, blank } => {
                    let byte = data[at];
                    at += 1;
                    if byte == b'\n' {
                        if blank {
                            self.kind = Kind::Length(0);
                            return Ok((at, true));
                        }
                        chunk = Chunk::Trailer {
                            len: 0,
                            blank: true,
                        };
                        continue;
                    }
                    if len + 1 > max_line {
                        return Err(BodyError::LineTooLong);
                    }
                    chunk = Chunk::Trailer {
                        len: len + 1,
                        blank: len == 0 && byte == b'\r',
                    };
                }
            }
        }
        self.kind = Kind::Chunked(chunk);
        Ok((at, false))
    }
}

/// One byte (not the LF) of a chunk-size line: the size and part after it.
/// Whitespace around the digits (CR included, so `5\r\r\n` reads as 5) is
/// allowed; after a `;` anything goes.
#[inline]
fn size_byte(size: u64, part: SizePart, byte: u8) -> Result<(u64, SizePart), BodyError> {
    let space = byte.is_ascii_whitespace();
    match part {
        SizePart::Extension => Ok((size, part)),
        SizePart::Lead | SizePart::Digits(_) if (byte as char).is_ascii_hexdigit() => {
            let digits = match part {
                SizePart::Digits(n) => n + 1,
                _ => 1,
            };
            if digits > MAX_SIZE_DIGITS {
                return Err(BodyError::ChunkSizeTooLong);
            }
            let digit = (byte as char).to_digit(16).unwrap_or_default();
            Ok((size * 16 + u64::from(digit), SizePart::Digits(digits)))
        }
        SizePart::Lead if space => Ok((size, part)),
        SizePart::Lead if byte == b';' => Err(BodyError::NoChunkSize),
        SizePart::Digits(_) | SizePart::Trail if space => Ok((size, SizePart::Trail)),
        SizePart::Digits(_) | SizePart::Trail if byte == b';' => Ok((size, SizePart::Extension)),
        _ => Err(BodyError::BadChunkSize(byte)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feed `pieces` one after another: the bytes the body took, and whether it ended.
    fn decode_all(
        mut decoder: BodyDecoder,
        pieces: &[&[u8]],
        max_line: usize,
    ) -> Result<(usize, bool), BodyError> {
        let mut taken = 0;
        for piece in pieces {
            let (used, done) = decoder.decode(piece, max_line, u64::MAX)?;
            taken += used;
            if done {
                return Ok((taken, true));
            }
            assert_eq!(used, piece.len(), "an unfinished body takes every byte");
        }
        Ok((taken, false))
    }

    const CHUNKED: &[u8] = b"5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: a\r\n\r\n";

    #[test]
    fn a_chunked_body_ends_after_its_trailers_whole_or_split_anywhere() {
        let whole = CHUNKED.len();
        for split in 0..=whole {
            let (a, b) = CHUNKED.split_at(split);
            let got = decode_all(BodyDecoder::chunked(), &[a, b, b"NEXT"], 8192);
            assert_eq!(got, Ok((whole, true)), "split at {split}");
        }
        let mut decoder = BodyDecoder::chunked();
        assert_eq!(decoder.decode(CHUNKED, 8192, u64::MAX), Ok((whole, true)));
        assert_eq!(decoder.body_bytes(), 21);
        assert!(decoder.is_complete());
    }

    #[test]
    fn chunk_size_lines_take_spaces_extensions_and_bare_lfs() {
        for body in [
            &b" 5 \r\nhello\r\n0\r\n\r\n"[..],
            b"5\r\r\nhello\n0\n\n",
            b"5 ; a=b ; c\r\nhello\r\n0;last\r\n\r\n",
            b"A\r\n0123456789\r\n0\r\nX: y\r\nZ: w\r\n\r\n",
        ] {
            assert_eq!(
                decode_all(BodyDecoder::chunked(), &[body], 8192),
                Ok((body.len(), true)),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn broken_chunking_says_what_was_expected() {
        let cases: [(&[u8], BodyError); 6] = [
            (b"x\r\n", BodyError::BadChunkSize(b'x')),
            (b"5 5\r\n", BodyError::BadChunkSize(b'5')),
            (b"\r\n", BodyError::NoChunkSize),
            (b";ext\r\n", BodyError::NoChunkSize),
            (b"1000000000000000\r\n", BodyError::ChunkSizeTooLong),
            (b"2\r\nabXY", BodyError::NoCrlfAfterData),
        ];
        for (body, error) in cases {
            assert_eq!(
                decode_all(BodyDecoder::chunked(), &[body], 8192),
                Err(error),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        assert_eq!(
            decode_all(BodyDecoder::chunked(), &[b"5;", &[b'x'; 20]], 10),
            Err(BodyError::LineTooLong)
        );
        assert_eq!(
            decode_all(BodyDecoder::chunked(), &[b"0\r\nX: ", &[b'y'; 20]], 10),
            Err(BodyError::LineTooLong)
        );
    }

    #[test]
    fn lengths_and_the_close_count_against_the_body_limit() {
        let mut decoder = BodyDecoder::length(5);
        assert_eq!(decoder.decode(b"hel", 0, 10), Ok((3, false)));
        assert_eq!(decoder.length_left(), Some(2));
        assert_eq!(decoder.decode(b"loNEXT", 0, 10), Ok((2, true)));
        assert!(BodyDecoder::length(0).is_complete());
        let mut decoder = BodyDecoder::eof();
        assert!(decoder.ends_at_close());
        assert_eq!(decoder.decode(b"0123456789", 0, 10), Ok((10, false)));
        assert_eq!(decoder.decode(b"!", 0, 10), Err(BodyError::TooLarge));
        let mut decoder = BodyDecoder::chunked();
        assert_eq!(
            decoder.decode(b"b\r\n0123456789a", 100, 10),
            Err(BodyError::TooLarge)
        );
    }

    proptest! {
        #[test]
        fn any_chunked_body_decodes_to_its_data_split_anywhere_and_keeps_it(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
            upper in any::<bool>(),
        ) {
            let mut body = Vec::new();
            for chunk in &chunks {
                let size = if upper { format!("{:X}", chunk.len()) } else { format!("{:x}", chunk.len()) };
                body.extend_from_slice(size.as_bytes());
                body.extend_from_slice(b"\r\n");
                body.extend_from_slice(chunk);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(b"0\r\n\r\n");
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
            cuts.extend([0, body.len()]);
            cuts.sort_unstable();
            let pieces: Vec<&[u8]> = cuts.windows(2).map(|w| &body[w[0]..w[1]]).collect();
            let mut decoder = BodyDecoder::chunked();
            let mut taken = 0;
            let mut done = false;
            let mut kept = Vec::new();
            for piece in pieces {
                let (used, ended) = decoder
                    .decode_with(piece, 64, u64::MAX, |data| kept.extend_from_slice(data))
                    .unwrap();
                taken += used;
                done = ended;
                if ended {
                    break;
                }
            }
            prop_assert!(done);
            prop_assert_eq!(taken, body.len());
            prop_assert_eq!(decoder.body_bytes(), chunks.iter().map(|c| c.len() as u64).sum::<u64>());
            prop_assert_eq!(kept, chunks.concat());
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_read_the_same_in_pieces(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            split in any::<usize>(),
        ) {
            let whole = decode_all(BodyDecoder::chunked(), &[&bytes], 32);
            let (a, b) = bytes.split_at(split % (bytes.len() + 1));
            prop_assert_eq!(decode_all(BodyDecoder::chunked(), &[a, b], 32), whole);
        }
    }
}
