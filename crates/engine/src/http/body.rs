//! Framing a reply's body once its head is read: how many bytes belong to it
//! (RFC 9112 §6.3: `Transfer-Encoding: chunked`, else `Content-Length`, else
//! up to the connection's close), counted against `phantom_http_entity` and
//! never kept.

use super::limits::Limits;
use super::response::ReplyError;

/// How a body is framed, and how far it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    /// `n` more bytes.
    Length(u64),
    /// Chunked, in the given step.
    Chunked(Chunk),
    /// Until the connection closes.
    UntilClose,
}

/// Where a chunked body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chunk {
    /// Reading a size line (the bytes so far are in `line`).
    Size,
    /// `n` bytes of chunk data left.
    Data(u64),
    /// The CRLF after chunk data (`n` bytes of it seen).
    DataEnd(u8),
    /// Trailer lines after the last chunk, up to an empty line.
    Trailers,
}

/// Reads one body: fed bytes as they arrive, it says how many belong to the
/// body and when the body is over. Plain data (`Copy`), so that changing the
/// reply's state drops nothing; the one buffer it needs, for a chunk-size or
/// trailer line cut between reads, is the caller's (`line`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BodyReader {
    body: Body,
    /// Body bytes so far (chunk framing not counted).
    seen: u64,
}

impl BodyReader {
    /// A body framed as `body`, nothing of it read yet.
    pub fn new(body: Body) -> BodyReader {
        BodyReader { body, seen: 0 }
    }

    /// Whether the body runs to the connection's close (then a close completes it).
    pub fn ends_at_close(&self) -> bool {
        self.body == Body::UntilClose
    }

    /// Feed the next bytes: how many of them belong to the body (at least one
    /// unless `data` is empty), and whether the body ended with them. `line`
    /// keeps a chunked body's line between calls: empty at the start.
    #[inline]
    pub fn feed(
        &mut self,
        line: &mut Vec<u8>,
        data: &[u8],
        limits: &Limits,
    ) -> Result<(usize, bool), ReplyError> {
        match self.body {
            Body::Length(left) => {
                let take = left.min(data.len() as u64);
                self.count(take, limits)?;
                self.body = Body::Length(left - take);
                Ok((take as usize, take == left))
            }
            Body::UntilClose => {
                self.count(data.len() as u64, limits)?;
                Ok((data.len(), false))
            }
            Body::Chunked(chunk) => self.feed_chunked(chunk, line, data, limits),
        }
    }

    #[inline]
    fn count(&mut self, n: u64, limits: &Limits) -> Result<(), ReplyError> {
        self.seen += n;
        if self.seen > limits.entity {
            return Err(ReplyError::TooLarge("phantom_http_entity"));
        }
        Ok(())
    }

    #[inline]
    fn feed_chunked(
        &mut self,
        chunk: Chunk,
        line: &mut Vec<u8>,
        data: &[u8],
        limits: &Limits,
    ) -> Result<(usize, bool), ReplyError> {
        match chunk {
            Chunk::Size | Chunk::Trailers => {
                let Some(at) = data.iter().position(|b| *b == b'\n') else {
                    line.extend_from_slice(data);
                    if line.len() > limits.field {
                        return Err(ReplyError::TooLarge("phantom_http_field"));
                    }
                    return Ok((data.len(), false));
                };
                line.extend_from_slice(&data[..at]);
                let whole = line.strip_suffix(b"\r").unwrap_or(line);
                let parsed = if chunk == Chunk::Trailers {
                    None
                } else {
                    Some(chunk_size(whole))
                };
                let blank = whole.is_empty();
                line.clear();
                let Some(size) = parsed else {
                    return Ok((at + 1, blank));
                };
                let size = size?;
                self.body = Body::Chunked(if size == 0 {
                    Chunk::Trailers
                } else {
                    Chunk::Data(size)
                });
                Ok((at + 1, false))
            }
            Chunk::Data(left) => {
                let take = left.min(data.len() as u64);
                self.count(take, limits)?;
                self.body = Body::Chunked(if take == left {
                    Chunk::DataEnd(0)
                } else {
                    Chunk::Data(left - take)
                });
                Ok((take as usize, false))
            }
            Chunk::DataEnd(seen) => {
                let expected: &[u8] = &b"\r\n"[seen as usize..];
                let mut used = 0;
                for (&want, &got) in expected.iter().zip(data) {
                    if want != got {
                        // Tolerate a bare LF after the data.
                        if got == b'\n' && seen + used as u8 == 0 {
                            self.body = Body::Chunked(Chunk::Size);
                            return Ok((1, false));
                        }
                        return Err(ReplyError::Chunked(
                            "chunk data not followed by CRLF".into(),
                        ));
                    }
                    used += 1;
                }
                let seen = seen + used as u8;
                self.body = Body::Chunked(if seen == 2 {
                    Chunk::Size
                } else {
                    Chunk::DataEnd(seen)
                });
                Ok((used, false))
            }
        }
    }
}

fn chunk_size(line: &[u8]) -> Result<u64, ReplyError> {
    let digits = line
        .split(|b| *b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if digits.is_empty() || digits.len() > 15 {
        return Err(ReplyError::Chunked(format!(
            "bad chunk size line `{}`",
            String::from_utf8_lossy(line)
        )));
    }
    let text = std::str::from_utf8(digits)
        .map_err(|_| ReplyError::Chunked("chunk size is not text".into()))?;
    u64::from_str_radix(text, 16)
        .map_err(|_| ReplyError::Chunked(format!("bad chunk size `{text}`")))
}
