//! A connection's streams from the client's side: opened, given ids as
//! the server's stream limit allows, their requests queued as frames within
//! the flow-control windows, and ended (by the server, by a reset, by the
//! connection, or given up).

use bytes::Bytes;
use tokio::time::Instant;

use super::{Closed, Collect, Failure, State, HOLD_MIN};
use crate::frame::{self, error, flag, kind};
use std::task::Waker;

impl State {
    /// The driver's waker if it waits and there is something to write.
    pub(super) fn wake_driver(&mut self) -> Option<Waker> {
        if self.out.is_empty() {
            return None;
        }
        self.driver.take()
    }

    /// The offset, in all bytes ever queued, of `out`'s end.
    pub(super) fn queued(&self) -> u64 {
        self.taken + self.out.len() as u64
    }

    /// Give stream `key` an id and queue its HEADERS (and as much body as
    /// the windows allow).
    pub(super) fn begin(&mut self, key: usize) {
        let id = self.next_id;
        self.next_id += 2;
        self.active += 1;
        self.fresh += 1;
        let queued = self.out.len();
        self.ids.insert(id, key);
        let max_frame = self.max_frame;
        let stream = &mut self.streams[key];
        stream.id = id;
        let block = std::mem::take(&mut stream.block);
        let end_stream = stream.body.is_empty();
        let mut chunks = block.chunks(max_frame);
        let first = chunks.next().unwrap_or_default();
        let mut rest = chunks.peekable();
        let mut flags = if end_stream { flag::END_STREAM } else { 0 };
        if rest.peek().is_none() {
            flags |= flag::END_HEADERS;
        }
        frame::put_head(&mut self.out, first.len(), kind::HEADERS, flags, id);
        self.out.extend_from_slice(first);
        let mut framed = (frame::HEAD + first.len()) as u64;
        while let Some(chunk) = rest.next() {
            let flags = if rest.peek().is_none() {
                flag::END_HEADERS
            } else {
                0
            };
            frame::put_head(&mut self.out, chunk.len(), kind::CONTINUATION, flags, id);
            self.out.extend_from_slice(chunk);
            framed += (frame::HEAD + chunk.len()) as u64;
        }
        stream.record.out += framed;
        if end_stream {
            stream.local_done = true;
            let at = self.queued();
            self.sent_marks.push_back((at, key, id));
        } else {
            self.send_body(key);
        }
        self.fresh_bytes += self.out.len() - queued;
    }

    /// Whether the driver may hold `out` back for more requests to join it:
    /// `out` holds only streams just begun, and the server has at least
    /// [`HOLD_MIN`] other streams to answer, three times as many as are
    /// held. Their replies are on the way, and each wakes a shot that opens
    /// the next stream; written at once, every reply's request goes alone,
    /// a write for one or two requests (the server's next read takes as few,
    /// and the pattern keeps itself). Held, they go together: against nginx
    /// a write per twelve requests instead of three per four, and the
    /// server's reads take them in bulk.
    pub(super) fn may_hold(&self) -> bool {
        // Fresh streams that ended while held (GOAWAY, a cancel) still count in
        // `fresh`, and a connection that is going sends what it has at once.
        let answering = self.active.saturating_sub(self.fresh);
        self.goaway.is_none()
            && self.closed.is_none()
            && self.fresh > 0
            && self.fresh_bytes == self.out.len()
            && answering >= HOLD_MIN
            && self.fresh * 3 < answering
    }

    /// `out` was taken to be written: nothing in it is fresh any more.
    pub(super) fn taken_out(&mut self) {
        self.taken += self.out.len() as u64;
        self.fresh = 0;
        self.fresh_bytes = 0;
    }

    /// Queue stream `key`'s body as far as the windows allow; a stream left
    /// with body and no window waits in `blocked`.
    pub(super) fn send_body(&mut self, key: usize) {
        let max_frame = self.max_frame as i64;
        let stream = &mut self.streams[key];
        while stream.body_sent < stream.body.len() {
            let left = (stream.body.len() - stream.body_sent) as i64;
            let n = left
                .min(max_frame)
                .min(stream.send_window)
                .min(self.send_window);
            if n <= 0 {
                self.blocked.push_back(key);
                return;
            }
            let n = n as usize;
            let last = stream.body_sent + n == stream.body.len();
            let flags = if last { flag::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, kind::DATA, flags, stream.id);
            self.out
                .extend_from_slice(&stream.body[stream.body_sent..stream.body_sent + n]);
            stream.body_sent += n;
            stream.send_window -= n as i64;
            self.send_window -= n as i64;
            stream.record.out += (frame::HEAD + n) as u64;
        }
        stream.local_done = true;
        stream.body = Bytes::new();
        let id = stream.id;
        let at = self.taken + self.out.len() as u64;
        self.sent_marks.push_back((at, key, id));
    }

    /// Send what the windows now allow of the blocked streams' bodies.
    pub(super) fn send_blocked(&mut self) {
        for _ in 0..self.blocked.len() {
            let Some(key) = self.blocked.pop_front() else {
                break;
            };
            let sending = self
                .streams
                .get(key)
                .is_some_and(|s| s.result.is_none() && s.id != 0 && !s.local_done);
            if sending {
                self.send_body(key);
            }
        }
    }

    /// Start waiting streams while the server allows more.
    pub(super) fn start_waiting(&mut self) {
        while self.active < self.max_streams && self.goaway.is_none() && self.closed.is_none() {
            let Some(key) = self.waiting.pop_front() else {
                break;
            };
            self.begin(key);
        }
    }

    /// Stream `key` ended with `result`: its slot frees, its shot wakes.
    pub(super) fn close_stream(&mut self, key: usize, result: Result<(), Failure>) {
        let stream = &mut self.streams[key];
        if stream.result.is_some() {
            return;
        }
        stream.result = Some(result);
        if let Some(waker) = stream.waker.take() {
            self.wake.push(waker);
        }
        // Its key is reused once its shot is done with it: no queue may keep it.
        if !self.blocked.is_empty() {
            self.blocked.retain(|&k| k != key);
        }
        if stream.id != 0 {
            let id = stream.id;
            self.ids.remove(&id);
            self.active -= 1;
            self.start_waiting();
        }
    }

    /// Reset stream `key` (RST_STREAM with `code`, counted as its own) and
    /// end it with `failure`.
    pub(super) fn reset(&mut self, key: usize, code: u32, failure: Failure) {
        let stream = &mut self.streams[key];
        if stream.id != 0 {
            frame::put_reset(&mut self.out, stream.id, code);
            stream.record.out += frame::RESET_LEN;
        }
        self.close_stream(key, Err(failure));
    }

    /// Stream `key` is given up before it ended: reset it if it left,
    /// forget it if it waited.
    pub(super) fn cancel(&mut self, key: usize) {
        if self.streams[key].id == 0 {
            self.waiting.retain(|&k| k != key);
            self.streams[key].result = Some(Err(Failure::Closed(Closed::Lost)));
            return;
        }
        if self.closed.is_none() {
            self.reset(key, error::CANCEL, Failure::Closed(Closed::Lost));
        } else {
            self.close_stream(key, Err(Failure::Closed(Closed::Lost)));
        }
    }

    /// Every stream not ended ends with the connection, `closed`.
    pub(super) fn fail_all(&mut self, closed: Closed) {
        // After GOAWAY, a stream never sent was refused by it. One sent is at
        // or below its last stream id (those above ended with the GOAWAY):
        // the server said it would finish it, so one the close cut may have
        // been processed (RFC 9113 §6.8), and is lost, not refused.
        let unsent = match (closed, self.goaway) {
            (Closed::Lost, Some((_, code))) => Closed::GoAway(code),
            _ => closed,
        };
        self.closed.get_or_insert(unsent);
        self.waiting.clear();
        self.blocked.clear();
        let open: Vec<usize> = self
            .streams
            .iter()
            .filter(|(_, s)| s.result.is_none())
            .map(|(key, _)| key)
            .collect();
        for key in open {
            let failure = if self.streams[key].id == 0 {
                Failure::NotSent(unsent)
            } else {
                Failure::Closed(closed)
            };
            self.close_stream(key, Err(failure));
        }
    }

    /// What a server that does not speak HTTP/2 answered (an HTTP/1 reply
    /// to the preface): counted, and kept as text, on the first stream
    /// sent, so its row says what came back; `read_at` is when.
    pub(super) fn not_http2(&mut self, answer: &[u8], read_at: Option<Instant>) {
        let first = self
            .streams
            .iter_mut()
            .filter(|(_, s)| s.id != 0 && s.result.is_none())
            .min_by_key(|(_, s)| s.id);
        let Some((_, stream)) = first else {
            return;
        };
        stream.record.input += answer.len() as u64;
        if stream.record.head.is_none() {
            stream.record.head = read_at;
        }
        if let Collect::Text(text) = &mut stream.collect {
            let room = text.capacity().saturating_sub(text.len()).min(answer.len());
            text.extend_from_slice(&answer[..room]);
        }
    }

    /// The driver wrote up to byte `written`: requests whose last byte it
    /// was are sent.
    pub(super) fn mark_sent(&mut self, written: u64, now: Instant) {
        while let Some(&(at, key, id)) = self.sent_marks.front() {
            if at > written {
                break;
            }
            self.sent_marks.pop_front();
            if let Some(stream) = self.streams.get_mut(key) {
                if stream.id == id && stream.record.sent.is_none() {
                    stream.record.sent = Some(now);
                }
            }
        }
    }
}
