//! The body type every response uses: a whole prepared body, or one trickled at N bytes/s.
//!
//! One concrete type (rather than a boxed trait object) keeps the common
//! path free of allocation: a full body is the recipe's shared [`Bytes`].
//! A trickle sends the same bytes in small chunks, each when the elapsed time
//! says the rate allows it (deadlines are computed from the start, so timer
//! jitter does not accumulate), and announces its full length up front so
//! the client sees a valid response that is merely slow.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// How many chunks a trickle sends per second (fewer when the rate is below this).
const CHUNKS_PER_SECOND: usize = 20;

/// A response body.
#[derive(Debug)]
pub(crate) enum OriginBody {
    /// The whole body in one frame (`None` once sent).
    Full(Option<Bytes>),
    /// The body sent at a fixed rate.
    Trickle(Box<Trickle>),
}

/// State of a trickled body.
#[derive(Debug)]
pub(crate) struct Trickle {
    rest: Bytes,
    total: usize,
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

    /// `bytes` at `bytes_per_second` (at least 1).
    pub fn trickle(bytes: Bytes, bytes_per_second: usize) -> OriginBody {
        let start = Instant::now();
        OriginBody::Trickle(Box::new(Trickle {
            total: bytes.len(),
            rest: bytes,
            sent: 0,
            bytes_per_second: bytes_per_second.max(1),
            start,
            sleep: Box::pin(tokio::time::sleep_until(start)),
        }))
    }
}

impl Trickle {
    fn chunk_len(&self) -> usize {
        (self.bytes_per_second / CHUNKS_PER_SECOND)
            .max(1)
            .min(self.rest.len())
    }

    /// When the bytes up to and including the next chunk have "taken" their time.
    fn due(&self, chunk: usize) -> Instant {
        let seconds = (self.sent + chunk) as f64 / self.bytes_per_second as f64;
        self.start + Duration::from_secs_f64(seconds)
    }
}

impl Body for OriginBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            OriginBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            OriginBody::Trickle(t) => {
                if t.rest.is_empty() {
                    return Poll::Ready(None);
                }
                let chunk = t.chunk_len();
                let due = t.due(chunk);
                if Instant::now() < due {
                    t.sleep.as_mut().reset(due);
                    if t.sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                }
                t.sent += chunk;
                Poll::Ready(Some(Ok(Frame::data(t.rest.split_to(chunk)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            OriginBody::Full(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            OriginBody::Trickle(t) => t.rest.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        let remaining = match self {
            OriginBody::Full(bytes) => bytes.as_ref().map_or(0, Bytes::len),
            OriginBody::Trickle(t) => t.total - t.sent,
        };
        SizeHint::with_exact(remaining as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

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
        let body = OriginBody::trickle(Bytes::from(vec![b'x'; 200]), 100);
        assert_eq!(body.size_hint().exact(), Some(200));
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(collected.len(), 200);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_millis(2100),
            "{took:?}"
        );
    }
}
