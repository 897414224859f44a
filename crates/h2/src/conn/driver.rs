//! The task that moves a connection's bytes: writes what the streams
//! queued, reads what the server sent, and hands both to the state.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::{wake_all, Closed, ConnectionError, Shared, State, HOLD_FOR, HOLD_GAP, HOLD_TIMER};
use crate::frame;

/// The task that reads and writes a connection's socket: spawn it. It ends
/// when the connection does (either side closing, an error, GOAWAY with no
/// stream left), or when every handle and stream is gone.
pub struct Driver<IO> {
    shared: Arc<Shared>,
    io: IO,
    /// Bytes being written, from `write_pos` on.
    writing: Vec<u8>,
    write_pos: usize,
    /// Bytes written in all.
    written: u64,
    /// A write since the last flush (TLS buffers what it encrypts).
    flush: bool,
    reading: Vec<u8>,
    filled: usize,
    hold: Hold,
}

/// New requests held back for a bigger write ([`State::may_hold`]).
#[derive(Default)]
struct Hold {
    /// When the requests now held were first held.
    since: Option<Instant>,
    /// Sends them if no read does first.
    timer: Option<Pin<Box<Sleep>>>,
    /// The last read, and the time since the one before it.
    last_read: Option<Instant>,
    read_gap: Option<std::time::Duration>,
}

impl Hold {
    /// Whether to hold `out` back now: while the state allows it, for
    /// [`HOLD_FOR`] from the first hold as the reads (`read_at`) tell, or
    /// until the timer fires when no read comes.
    fn keep(&mut self, state: &State, read_at: Option<Instant>, cx: &mut Context<'_>) -> bool {
        if !state.may_hold() {
            self.since = None;
            return false;
        }
        let since = match self.since {
            Some(since) => since,
            None => {
                // Only while replies stream in (the last two reads, and now,
                // within HOLD_GAP): replies that trickle would keep a request
                // waiting for the next without bringing others to join it.
                let now = read_at.unwrap_or_else(Instant::now);
                let streaming = self.read_gap.is_some_and(|gap| gap <= HOLD_GAP)
                    && self
                        .last_read
                        .is_some_and(|last| now.saturating_duration_since(last) <= HOLD_GAP);
                if !streaming {
                    return false;
                }
                self.since = Some(now);
                let deadline = now + HOLD_TIMER;
                match &mut self.timer {
                    Some(timer) => timer.as_mut().reset(deadline),
                    None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
                }
                now
            }
        };
        let long_enough = read_at.is_some_and(|at| at.duration_since(since) >= HOLD_FOR);
        let timed_out = self
            .timer
            .as_mut()
            .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
        if long_enough || timed_out {
            self.since = None;
            return false;
        }
        true
    }

    /// A read happened `at`.
    fn read(&mut self, at: Instant) {
        self.read_gap = self
            .last_read
            .map(|last| at.saturating_duration_since(last));
        self.last_read = Some(at);
    }
}

/// Bytes read at most at once: room for several frames of the largest size
/// the client allows (16 KiB).
const READ_BUFFER: usize = 64 << 10;

impl<IO> Driver<IO> {
    pub(super) fn new(shared: Arc<Shared>, io: IO) -> Self {
        Driver {
            shared,
            io,
            writing: Vec::with_capacity(16 << 10),
            write_pos: 0,
            written: 0,
            flush: false,
            reading: vec![0; READ_BUFFER],
            filled: 0,
            hold: Hold::default(),
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> Future for Driver<IO> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            let mut busy = false;
            let mut wrote = false;
            let mut ended = None;
            while this.write_pos < this.writing.len() {
                match Pin::new(&mut this.io).poll_write(cx, &this.writing[this.write_pos..]) {
                    Poll::Ready(Ok(0)) => {
                        ended = Some(Closed::Lost);
                        break;
                    }
                    Poll::Ready(Ok(n)) => {
                        this.write_pos += n;
                        this.written += n as u64;
                        this.flush = true;
                        wrote = true;
                    }
                    Poll::Ready(Err(e)) => {
                        ended = Some(closed_by(&e));
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            if this.flush && this.write_pos == this.writing.len() && ended.is_none() {
                match Pin::new(&mut this.io).poll_flush(cx) {
                    Poll::Ready(Ok(())) => this.flush = false,
                    Poll::Ready(Err(e)) => ended = Some(closed_by(&e)),
                    Poll::Pending => {}
                }
            }
            // Each side's moment is taken as its call returns: a request's
            // send ends with its write, not after the read that follows.
            let wrote_at = wrote.then(Instant::now);
            let mut read = false;
            if ended.is_none() && this.filled < this.reading.len() {
                let mut buf = ReadBuf::new(&mut this.reading[this.filled..]);
                match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                    Poll::Ready(Ok(())) => {
                        let n = buf.filled().len();
                        if n == 0 {
                            ended = Some(Closed::Lost);
                        } else {
                            this.filled += n;
                            read = true;
                            busy = true;
                        }
                    }
                    Poll::Ready(Err(e)) => ended = Some(closed_by(&e)),
                    Poll::Pending => {}
                }
            }
            let read_at = read.then(Instant::now);
            if let Some(at) = read_at {
                this.hold.read(at);
            }
            let mut state = this.shared.lock();
            if let Some(at) = wrote_at {
                state.mark_sent(this.written, at);
            }
            if !state.settings_seen {
                // A server's first frame is its SETTINGS: an HTTP/1 status
                // line or a close instead says it does not speak HTTP/2.
                let http1 = read_at.is_some()
                    && this.filled >= HTTP1.len()
                    && this.reading.starts_with(HTTP1);
                let silent_close =
                    ended == Some(Closed::Lost) && state.config.prior_knowledge && this.filled == 0;
                if http1 || silent_close {
                    ended = Some(Closed::NotHttp2);
                }
            }
            if ended == Some(Closed::NotHttp2) {
                // Nothing of it is HTTP/2 frames: it is the first stream's
                // answer (an HTTP/1 server answers the preface and closes).
                state.not_http2(&this.reading[..this.filled], read_at);
            } else if let Some(now) = read_at {
                match state.receive(&this.reading[..this.filled], now) {
                    Ok(used) => {
                        this.reading.copy_within(used..this.filled, 0);
                        this.filled -= used;
                    }
                    Err(ConnectionError(code, why)) => {
                        state.broken.get_or_insert(why);
                        // Last stream 0: the client processes no stream the server opens.
                        frame::put_goaway(&mut state.out, 0, code);
                        state.fail_all(Closed::Protocol);
                    }
                }
            }
            if let Some(closed) = ended {
                state.fail_all(closed);
            }
            if this.write_pos == this.writing.len()
                && !state.out.is_empty()
                && (ended.is_some() || !this.hold.keep(&state, read_at, cx))
            {
                this.hold.since = None;
                this.writing.clear();
                this.write_pos = 0;
                state.taken_out();
                std::mem::swap(&mut this.writing, &mut state.out);
                busy = true;
            }
            let idle = state.streams.is_empty() && Arc::strong_count(&this.shared) == 1;
            let drained = state.goaway.is_some() && state.active == 0 && state.waiting.is_empty();
            if state.goaway.is_some() || state.closed.is_some() {
                this.shared.unusable.store(true, Ordering::Relaxed);
            }
            this.shared
                .max_streams
                .store(state.max_streams, Ordering::Relaxed);
            if state.closed.is_some() || drained || idle {
                this.shared.unusable.store(true, Ordering::Relaxed);
                state.fail_all(Closed::Lost);
                let woken = std::mem::take(&mut state.wake);
                drop(state);
                wake_all(woken);
                // What is left to write (a GOAWAY) goes if the socket takes it now.
                if ended.is_none() && this.write_pos < this.writing.len() {
                    let _ = Pin::new(&mut this.io).poll_write(cx, &this.writing[this.write_pos..]);
                    let _ = Pin::new(&mut this.io).poll_flush(cx);
                }
                return Poll::Ready(());
            }
            let woken = std::mem::take(&mut state.wake);
            if !busy {
                match &state.driver {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => state.driver = Some(cx.waker().clone()),
                }
                drop(state);
                wake_all(woken);
                return Poll::Pending;
            }
            drop(state);
            wake_all(woken);
        }
    }
}

/// How an HTTP/1 reply begins.
const HTTP1: &[u8] = b"HTTP/";

/// How a socket error ends a connection.
fn closed_by(error: &std::io::Error) -> Closed {
    match error.raw_os_error() {
        Some(errno) => Closed::Io(errno),
        None => Closed::Lost,
    }
}
