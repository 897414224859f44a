//! The body type every response uses: a short text, a prepared body, or one trickled at N bytes/s.
//!
//! One concrete type (rather than a boxed trait object) keeps the common
//! path free of allocation: a prepared body is the recipe's shared
//! [`Body`], sent a piece per frame by a [`Cursor`] (one frame for most
//! bodies; a `256mb` one is 256 frames that are all the same shared
//! megabyte, so it costs no memory to send). A trickle sends the same bytes
//! in small chunks, each when the elapsed time says the rate allows it
//! (deadlines are computed from the start, so timer jitter does not
//! accumulate). Every body announces its exact length up front, so the
//! client sees a valid response that is, at worst, slow.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::body::Body;

/// How many chunks a trickle sends per second (fewer when the rate is below this).
const CHUNKS_PER_SECOND: usize = 20;

/// A response body.
#[derive(Debug)]
pub(crate) enum OriginBody {
    /// A short body in one frame (`None` once sent).
    Full(Option<Bytes>),
    /// A recipe's body, a piece per frame.
    Prepared(Cursor),
    /// A recipe's body sent at a fixed rate.
    Trickle(Box<Trickle>),
}

/// A position in a [`Body`]: which piece, which repetition of it, how far into it.
#[derive(Debug)]
pub(crate) struct Cursor {
    body: Body,
    piece: usize,
    repeat: usize,
    offset: usize,
    remaining: usize,
}

impl Cursor {
    fn new(body: Body) -> Cursor {
        Cursor {
            remaining: body.len(),
            body,
            piece: 0,
            repeat: 0,
            offset: 0,
        }
    }

    /// How long the next [`Cursor::take`] of at most `max` bytes will be (0 at the end).
    fn next_len(&self, max: usize) -> usize {
        self.body
            .pieces()
            .get(self.piece)
            .map_or(0, |p| (p.bytes.len() - self.offset).min(max))
    }

    /// The next at most `max` bytes: a view of the piece under the cursor, never
    /// crossing into the next one. `None` at the end.
    fn take(&mut self, max: usize) -> Option<Bytes> {
        let piece = self.body.pieces().get(self.piece)?;
        let len = (piece.bytes.len() - self.offset).min(max);
        let bytes = if len == piece.bytes.len() {
            piece.bytes.clone()
        } else {
            piece.bytes.slice(self.offset..self.offset + len)
        };
        self.offset += len;
        if self.offset == piece.bytes.len() {
            self.offset = 0;
            self.repeat += 1;
            if self.repeat == piece.times {
                self.repeat = 0;
                self.piece += 1;
            }
        }
        self.remaining -= len;
        Some(bytes)
    }
}

/// State of a trickled body.
#[derive(Debug)]
pub(crate) struct Trickle {
    cursor: Cursor,
    sent: usize,
    bytes_per_second: usize,
    start: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl OriginBody {
    /// The whole of `bytes` at once.
    pub fn full(bytes: Bytes) -> OriginBody {
        OriginBody::Full(Some(bytes))
    }

    /// A short text body.
    pub fn text(text: impl Into<String>) -> OriginBody {
        OriginBody::full(Bytes::from(text.into()))
    }

    /// A recipe's body, as fast as the connection takes it.
    pub fn prepared(body: Body) -> OriginBody {
        OriginBody::Prepared(Cursor::new(body))
    }

    /// A recipe's body at `bytes_per_second` (at least 1).
    pub fn trickle(body: Body, bytes_per_second: usize) -> OriginBody {
        let start = Instant::now();
        OriginBody::Trickle(Box::new(Trickle {
            cursor: Cursor::new(body),
            sent: 0,
            bytes_per_second: bytes_per_second.max(1),
            start,
            sleep: Box::pin(tokio::time::sleep_until(start)),
        }))
    }
}

impl Trickle {
    fn chunk_len(&self) -> usize {
        self.cursor
            .next_len((self.bytes_per_second / CHUNKS_PER_SECOND).max(1))
    }

    /// When the bytes up to and including the next chunk have "taken" their time.
    fn due(&self, chunk: usize) -> Instant {
        let seconds = (self.sent + chunk) as f64 / self.bytes_per_second as f64;
        self.start + Duration::from_secs_f64(seconds)
    }
}

impl hyper::body::Body for OriginBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            OriginBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            OriginBody::Prepared(cursor) => {
                Poll::Ready(cursor.take(usize::MAX).map(|b| Ok(Frame::data(b))))
            }
            OriginBody::Trickle(t) => {
                let chunk = t.chunk_len();
                if chunk == 0 {
                    return Poll::Ready(None);
                }
                let due = t.due(chunk);
                if Instant::now() < due {
                    t.sleep.as_mut().reset(due);
                    if t.sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                }
                t.sent += chunk;
                Poll::Ready(t.cursor.take(chunk).map(|b| Ok(Frame::data(b))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            OriginBody::Full(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            OriginBody::Prepared(cursor) => cursor.remaining == 0,
            OriginBody::Trickle(t) => t.cursor.remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        let remaining = match self {
            OriginBody::Full(bytes) => bytes.as_ref().map_or(0, Bytes::len),
            OriginBody::Prepared(cursor) => cursor.remaining,
            OriginBody::Trickle(t) => t.cursor.remaining,
        };
        SizeHint::with_exact(remaining as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Part;
    use crate::filler::{filler, FILLER_LEN};
    use http_body_util::BodyExt;
    use hyper::body::Body as _;

    #[tokio::test]
    async fn a_full_body_is_one_frame_of_exact_size() {
        let body = OriginBody::full(Bytes::from_static(b"hello"));
        assert_eq!(body.size_hint().exact(), Some(5));
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(collected, "hello");
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_takes_size_over_rate_seconds() {
        let start = Instant::now();
        let body = OriginBody::trickle(Body::plain(&[Part::Filler(200)]), 100);
        assert_eq!(body.size_hint().exact(), Some(200));
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(collected.len(), 200);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_millis(2100),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_prepared_body_is_a_frame_per_piece_and_exactly_its_length() {
        let len = 3 * FILLER_LEN + 100;
        let mut body = OriginBody::prepared(Body::plain(&[Part::Filler(len)]));
        assert_eq!(body.size_hint().exact(), Some(len as u64));
        let mut frames = 0;
        let mut total = 0;
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            assert_eq!(data.as_ptr(), filler().as_ptr(), "a view of the filler");
            total += data.len();
            frames += 1;
        }
        assert_eq!((frames, total), (4, len));
        assert!(body.is_end_stream());
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_crosses_pieces_without_losing_a_byte() {
        let parts = [Part::Text(Bytes::from(vec![b'<'; 100])), Part::Filler(150)];
        let body = OriginBody::trickle(Body::plain(&parts), 1000);
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(collected.len(), 250);
        assert!(collected[..100].iter().all(|b| *b == b'<'));
        assert_eq!(&collected[100..], &filler()[..150]);
    }
}
