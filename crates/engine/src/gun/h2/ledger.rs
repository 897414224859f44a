//! The ledger: what each stream put on and took off a connection, and when,
//! read from the frames themselves as they pass between the h2 crate and
//! the socket.
//!
//! h2 encodes and decodes frames out of sight, several streams' frames in
//! one write, so a stream's bytes "as framed" and the moments its request
//! left and its reply arrived are not visible through its API. [`Counted`]
//! wraps the connection's I/O and follows the 9-byte frame headers both
//! ways: each frame of a client stream (odd id) adds its header and payload
//! to that stream's [`Record`]; the last byte of the request's END_STREAM
//! frame written marks `sent`, the first reply HEADERS frame read marks
//! `head`, and the last byte of the reply's END_STREAM (or a RST_STREAM)
//! marks `end`. The connection's own frames (stream 0: SETTINGS, PING,
//! WINDOW_UPDATE, GOAWAY) and the client preface belong to no stream.
//!
//! Records are kept in stream order from the oldest stream not yet taken, so
//! a frame finds its record by index, and a record is dropped once its
//! stream and every older one were taken: memory follows the streams in
//! flight, not the streams ever opened.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// A stream's bytes and moments so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record {
    /// Bytes of its frames written (headers included).
    pub out: u64,
    /// Bytes of its frames read.
    pub input: u64,
    /// Its request's END_STREAM frame was written whole.
    pub sent: Option<Instant>,
    /// Its reply's first HEADERS frame began to arrive.
    pub head: Option<Instant>,
    /// Its reply's END_STREAM frame (or a RST_STREAM) was read whole.
    pub end: Option<Instant>,
}

/// Streams further apart than this are not followed (a server naming a
/// stream the client never opened would otherwise grow the ledger).
const MAX_SPREAD: usize = 1 << 20;

/// One connection's records.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    streams: Mutex<Streams>,
}

#[derive(Debug, Default)]
struct Streams {
    /// The index of the first record: stream id `2 * index + 1`.
    base: usize,
    /// Records from `base` on, with whether each was taken.
    records: VecDeque<(Record, bool)>,
}

impl Streams {
    fn record(&mut self, stream: u32) -> Option<&mut Record> {
        if stream % 2 == 0 {
            // The connection's own frames (0), or a push the client refused.
            return None;
        }
        let index = (stream as usize / 2).checked_sub(self.base)?;
        if index >= MAX_SPREAD {
            return None;
        }
        while self.records.len() <= index {
            self.records.push_back(Default::default());
        }
        let (record, taken) = &mut self.records[index];
        (!*taken).then_some(record)
    }
}

impl Ledger {
    /// Stream `stream`'s record, taken: later frames of it are not counted.
    pub(super) fn take(&self, stream: u32) -> Record {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        let record = streams.record(stream).map(|r| *r).unwrap_or_default();
        if let Some(index) = (stream as usize / 2).checked_sub(streams.base) {
            if let Some(entry) = streams.records.get_mut(index) {
                entry.1 = true;
            }
        }
        while streams.records.front().is_some_and(|(_, taken)| *taken) {
            streams.records.pop_front();
            streams.base += 1;
        }
        record
    }

    /// Stream `stream`'s record as it stands.
    #[cfg(test)]
    fn peek(&self, stream: u32) -> Record {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        streams.record(stream).map(|r| *r).unwrap_or_default()
    }
}

/// Frame types and flags the ledger reads.
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const END_STREAM: u8 = 0x1;

/// Which way bytes go, for what a frame marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Out,
    In,
}

/// Where a byte stream stands between frames.
#[derive(Debug)]
struct Framing {
    way: Way,
    /// Bytes of the client preface still to pass (writes only).
    preface: usize,
    header: [u8; 9],
    have: usize,
    /// Payload bytes of the current frame still to pass.
    payload: usize,
    /// The stream whose moment the current frame's last byte marks.
    marks: Option<u32>,
}

/// The client connection preface's length (RFC 9113 §3.4).
const PREFACE: usize = 24;

impl Framing {
    fn new(way: Way) -> Self {
        Framing {
            way,
            preface: if way == Way::Out { PREFACE } else { 0 },
            header: [0; 9],
            have: 0,
            payload: 0,
            marks: None,
        }
    }

    /// Follow `bytes` that passed at `now`.
    fn pass(&mut self, ledger: &Ledger, mut bytes: &[u8], now: Instant) {
        let mut streams = ledger
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while !bytes.is_empty() {
            if self.preface > 0 {
                let n = self.preface.min(bytes.len());
                self.preface -= n;
                bytes = &bytes[n..];
            } else if self.payload > 0 {
                let n = self.payload.min(bytes.len());
                self.payload -= n;
                bytes = &bytes[n..];
                if self.payload == 0 {
                    self.mark_end(&mut streams, now);
                }
            } else {
                let n = (9 - self.have).min(bytes.len());
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have == 9 {
                    self.have = 0;
                    self.frame(&mut streams, now);
                }
            }
        }
    }

    /// A frame header is whole: count the frame, note what it marks.
    fn frame(&mut self, streams: &mut Streams, now: Instant) {
        let h = &self.header;
        let length = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5] & 0x7f, h[6], h[7], h[8]]);
        self.payload = length;
        self.marks = None;
        let Some(record) = streams.record(stream) else {
            return;
        };
        let size = 9 + length as u64;
        match self.way {
            Way::Out => record.out += size,
            Way::In => {
                record.input += size;
                if kind == HEADERS {
                    record.head.get_or_insert(now);
                }
            }
        }
        let ends = (matches!(kind, DATA | HEADERS) && flags & END_STREAM != 0)
            || (kind == RST_STREAM && self.way == Way::In);
        if ends {
            self.marks = Some(stream);
            if length == 0 {
                self.mark_end(streams, now);
            }
        }
    }

    /// The current frame's last byte passed: the moment it marks.
    fn mark_end(&mut self, streams: &mut Streams, now: Instant) {
        let Some(stream) = self.marks.take() else {
            return;
        };
        if let Some(record) = streams.record(stream) {
            match self.way {
                Way::Out => record.sent = Some(now),
                Way::In => record.end = Some(now),
            }
        }
    }
}

/// A connection's I/O, followed frame by frame into its [`Ledger`].
pub(super) struct Counted<S> {
    inner: S,
    ledger: Arc<Ledger>,
    out: Framing,
    input: Framing,
}

impl<S> Counted<S> {
    /// `inner`, its frames recorded in `ledger`.
    pub(super) fn new(inner: S, ledger: Arc<Ledger>) -> Self {
        Counted {
            inner,
            ledger,
            out: Framing::new(Way::Out),
            input: Framing::new(Way::In),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let read = &buf.filled()[before..];
            if !read.is_empty() {
                this.input.pass(&this.ledger, read, Instant::now());
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.out.pass(&this.ledger, &buf[..n], Instant::now());
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            let now = Instant::now();
            let mut left = n;
            for buf in bufs {
                if left == 0 {
                    break;
                }
                let take = left.min(buf.len());
                this.out.pass(&this.ledger, &buf[..take], now);
                left -= take;
            }
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: usize) -> Vec<u8> {
        let mut bytes = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            flags,
        ];
        bytes.extend_from_slice(&stream.to_be_bytes());
        bytes.extend(std::iter::repeat_n(0xaa, payload));
        bytes
    }

    /// A client's bytes: the preface, SETTINGS, then two requests, the
    /// first with a body.
    fn client_bytes() -> Vec<u8> {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(4, 0, 0, 12));
        bytes.extend(frame(HEADERS, 0x4, 1, 30));
        bytes.extend(frame(HEADERS, 0x4 | END_STREAM, 3, 20));
        bytes.extend(frame(DATA, END_STREAM, 1, 100));
        bytes
    }

    #[test]
    fn each_stream_gets_its_frames_and_its_moments() {
        let ledger = Ledger::default();
        let mut out = Framing::new(Way::Out);
        let t0 = Instant::now();
        out.pass(&ledger, &client_bytes(), t0);
        let mut input = Framing::new(Way::In);
        let t1 = t0 + std::time::Duration::from_millis(1);
        let mut reply = frame(HEADERS, 0x4, 3, 10);
        reply.extend(frame(DATA, END_STREAM, 3, 5));
        reply.extend(frame(RST_STREAM, 0, 1, 4));
        input.pass(&ledger, &reply, t1);
        let one = ledger.take(1);
        assert_eq!((one.out, one.input), (9 + 30 + 9 + 100, 9 + 4));
        assert_eq!((one.sent, one.head, one.end), (Some(t0), None, Some(t1)));
        let three = ledger.take(3);
        assert_eq!((three.out, three.input), (9 + 20, 9 + 10 + 9 + 5));
        assert_eq!(
            (three.sent, three.head, three.end),
            (Some(t0), Some(t1), Some(t1))
        );
        // Taken streams are forgotten, and later frames of them not counted.
        input.pass(&ledger, &frame(8, 0, 3, 4), t1);
        assert_eq!(ledger.streams.lock().unwrap().records.len(), 0);
        assert_eq!(ledger.peek(3), Record::default());
    }

    #[test]
    fn a_frame_marks_when_its_last_byte_passes() {
        let ledger = Ledger::default();
        let mut out = Framing::new(Way::Out);
        let bytes = client_bytes();
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(1);
        out.pass(&ledger, &bytes[..bytes.len() - 1], t0);
        assert_eq!(ledger.peek(1).sent, None);
        out.pass(&ledger, &bytes[bytes.len() - 1..], t1);
        assert_eq!(ledger.peek(1).sent, Some(t1));
    }

    #[test]
    fn a_stream_far_beyond_the_others_is_not_followed() {
        let ledger = Ledger::default();
        let mut input = Framing::new(Way::In);
        input.pass(&ledger, &frame(HEADERS, 0, 0x7fff_ffff, 1), Instant::now());
        assert!(ledger.streams.lock().unwrap().records.is_empty());
    }

    proptest! {
        #[test]
        fn counts_do_not_depend_on_how_the_bytes_are_cut(cuts in proptest::collection::vec(1usize..40, 1..20)) {
            let bytes = client_bytes();
            let whole = Ledger::default();
            Framing::new(Way::Out).pass(&whole, &bytes, Instant::now());
            let cut = Ledger::default();
            let mut framing = Framing::new(Way::Out);
            let mut rest = bytes.as_slice();
            for n in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let n = (*n).min(rest.len());
                framing.pass(&cut, &rest[..n], Instant::now());
                rest = &rest[n..];
            }
            for stream in [1, 3] {
                prop_assert_eq!(whole.peek(stream).out, cut.peek(stream).out);
                prop_assert_eq!(whole.peek(stream).sent.is_some(), cut.peek(stream).sent.is_some());
            }
        }

        #[test]
        fn any_bytes_pass_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let ledger = Ledger::default();
            Framing::new(Way::In).pass(&ledger, &bytes, Instant::now());
        }
    }
}
