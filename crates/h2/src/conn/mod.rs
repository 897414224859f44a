//! One HTTP/2 connection: streams opened by shots, frames read and written
//! by a [`Driver`] task.
//!
//! The state sits behind one mutex, shared by the driver and the shots (on
//! one I/O thread as a rule; on several when a gun has fewer connections
//! than threads). A shot that opens a stream encodes its frames into the
//! outgoing buffer and wakes the driver once; the driver writes whatever
//! accumulated in one call (holding new requests back a moment while many
//! replies are due, so that more go together: `State::may_hold`), reads
//! whatever arrived, and wakes each stream that ended. Socket I/O happens
//! outside the lock.
//!
//! What a stream's row needs is recorded on the way: its frames' bytes both
//! ways, when its END_STREAM left (the write that carried its last byte),
//! when its reply's HEADERS and END_STREAM were read.
//!
//! Nothing is retried: a stream that failed ends with its [`Failure`]; only
//! a stream that never left (it waited for a stream slot when the
//! connection went) ends with [`Failure::NotSent`], so that the caller may
//! take it elsewhere.

mod driver;
mod receive;
mod streams;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use slab::Slab;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::frame::{self, setting};
use crate::hpack::Decoder;
pub use driver::Driver;

/// What a connection asks of the server, and how much of a reply it takes.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Each stream's receive window (the window reopens as data is read).
    pub stream_window: u32,
    /// The connection's receive window.
    pub connection_window: u32,
    /// The most a reply's head (or trailers) may decode to: larger ends the
    /// stream as [`Failure::Malformed`].
    pub max_header_list: u32,
    /// The most bytes a reply's body may have: more ends the stream as
    /// [`Failure::Malformed`] (and resets it).
    pub max_body: u64,
    /// Whether the connection is h2c with prior knowledge: a close before
    /// the server's first SETTINGS then says it does not speak HTTP/2
    /// ([`Closed::NotHttp2`]). Over TLS, ALPN said it does, and such a close
    /// is a connection lost.
    pub prior_knowledge: bool,
}

/// The streams a connection assumes the server allows before its SETTINGS
/// say (RFC 9113 leaves it unlimited; 100 is what servers commonly allow).
const ASSUMED_MAX_STREAMS: usize = 100;
/// The fewest streams the server must have left to answer before the
/// driver holds new requests back for a bigger write (below it, a reply may
/// be the last for a while, and a held request would wait for nothing).
const HOLD_MIN: usize = 8;
/// The longest new requests are held back, measured at the reads that
/// bring the replies they wait for; [`HOLD_TIMER`] if no read comes.
const HOLD_FOR: std::time::Duration = std::time::Duration::from_micros(200);
/// Requests are held only while replies stream in: the last two reads this
/// close together, and the last this recent.
const HOLD_GAP: std::time::Duration = std::time::Duration::from_micros(50);
/// The timer that sends held requests when no reply comes to release them
/// (the runtime's timer counts whole milliseconds).
const HOLD_TIMER: std::time::Duration = std::time::Duration::from_millis(1);
/// The dynamic table the client allows the server (SETTINGS_HEADER_TABLE_SIZE's default).
const HEADER_TABLE: usize = 4096;

/// A request: its header block (fields encoded with
/// [`crate::hpack::encode_field`], pseudo-headers first) and its body.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The HPACK header block.
    pub block: Bytes,
    /// The body, sent as DATA (none when empty).
    pub body: Bytes,
    /// Whether it is a HEAD request: its reply's `content-length` is of a
    /// body it does not carry.
    pub head: bool,
}

/// What a stream keeps of its reply.
#[derive(Debug, Default)]
pub enum Collect {
    /// The status and `grpc-status` only.
    #[default]
    Nothing,
    /// The reply as HTTP/1-shaped text (`HTTP/2 200`, the header lines, a
    /// blank line, the body, the trailers as header lines), up to the
    /// vector's capacity.
    Text(Vec<u8>),
    /// The body's bytes, as they came (within [`Config::max_body`]).
    Body(Vec<u8>),
}

impl Collect {
    /// Empty again, as asked before a stream filled it (its buffer kept).
    pub fn clear(&mut self) {
        match self {
            Collect::Nothing => {}
            Collect::Text(bytes) | Collect::Body(bytes) => bytes.clear(),
        }
    }
}

/// A stream's bytes and moments.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Bytes of its frames written, frame headers included (HEADERS, DATA,
    /// WINDOW_UPDATE and RST_STREAM of it).
    pub out: u64,
    /// Bytes of its frames read.
    pub input: u64,
    /// Its request's last frame was written whole.
    pub sent: Option<Instant>,
    /// Its reply's first HEADERS frame was read.
    pub head: Option<Instant>,
    /// Its reply's END_STREAM (or a RST_STREAM) was read.
    pub end: Option<Instant>,
}

/// How a connection ended, as a stream on it sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The server sent GOAWAY with this error code, and the stream was not
    /// among those it said it would finish.
    GoAway(u32),
    /// The socket failed with this errno.
    Io(i32),
    /// The socket closed (or failed without an errno), without GOAWAY.
    Lost,
    /// The server broke the protocol (a connection error; the client sent
    /// GOAWAY).
    Protocol,
    /// The server does not speak HTTP/2 here: before any SETTINGS it
    /// answered in HTTP/1 or closed the connection (h2c to an HTTP/1 server).
    NotHttp2,
}

/// Why a stream ended without a whole reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server reset it (RST_STREAM) with this error code.
    Reset(u32),
    /// The connection ended under it.
    Closed(Closed),
    /// Its reply broke the rules or the limits ([`Config`]): a head without
    /// a status, DATA before the head, a head or body too large (what it
    /// did, for people).
    Malformed(&'static str),
    /// It never left: it waited for a stream slot, or for the connection,
    /// which ended this way. Nothing was sent, so it may go elsewhere.
    NotSent(Closed),
}

/// What a finished stream got.
#[derive(Debug)]
pub struct Reply {
    /// Its bytes and moments.
    pub record: Record,
    /// The reply's status (0 before its head).
    pub status: u16,
    /// `grpc-status`'s value, from the trailers or the head.
    pub grpc_status: Option<Box<[u8]>>,
    /// `grpc-message`'s value, from the trailers or the head.
    pub grpc_message: Option<Box<[u8]>>,
    /// What it kept, as asked.
    pub collect: Collect,
    /// How it ended: `None` when it was given up before it ended (the
    /// stream was reset with CANCEL).
    pub result: Option<Result<(), Failure>>,
}

/// A stream as the connection follows it.
struct StreamState {
    /// Its id, 0 while it waits for a stream slot.
    id: u32,
    /// Its header block, until its HEADERS are queued.
    block: Bytes,
    /// What it still has to send: the body from `body_sent` on.
    body: Bytes,
    body_sent: usize,
    send_window: i64,
    /// Bytes received since its window was last reopened.
    recv_unacked: u32,
    /// Its request's last frame is queued.
    local_done: bool,
    /// Its final head was read (a later HEADERS is the trailers).
    headed: bool,
    body_len: u64,
    /// The head's `content-length`, when it gave one.
    content_length: Option<u64>,
    /// Its request is a HEAD (its reply carries no body, whatever its length says).
    head_request: bool,
    record: Record,
    status: u16,
    grpc_status: Option<Box<[u8]>>,
    grpc_message: Option<Box<[u8]>>,
    collect: Collect,
    result: Option<Result<(), Failure>>,
    waker: Option<Waker>,
}

/// A header block arriving in HEADERS and CONTINUATION frames.
struct Continuation {
    stream: u32,
    block: Vec<u8>,
    end_stream: bool,
    /// Bytes of its frames so far, headers included.
    framed: u64,
}

struct State {
    /// Bytes for the driver to write.
    out: Vec<u8>,
    /// Bytes handed to the driver before `out`'s first.
    taken: u64,
    /// Streams whose request ends at a byte offset: (offset, key, id).
    sent_marks: VecDeque<(u64, usize, u32)>,
    streams: Slab<StreamState>,
    ids: foldhash::HashMap<u32, usize>,
    /// Streams waiting for a slot, oldest first.
    waiting: VecDeque<usize>,
    /// Streams with body left and no window to send it.
    blocked: VecDeque<usize>,
    next_id: u32,
    /// Streams with an id that have not ended.
    active: usize,
    /// Streams begun since the driver last took `out`, and the bytes of
    /// `out` that are theirs: while `out` holds nothing else, the driver may
    /// hold them back (see [`State::may_hold`]).
    fresh: usize,
    fresh_bytes: usize,
    max_streams: usize,
    settings_seen: bool,
    /// How the server broke the protocol, when it did (the connection then ended).
    broken: Option<&'static str>,
    send_window: i64,
    initial_send_window: i64,
    max_frame: usize,
    recv_unacked: u32,
    decoder: Decoder,
    continuation: Option<Continuation>,
    /// GOAWAY's last stream id and code, once received.
    goaway: Option<(u32, u32)>,
    closed: Option<Closed>,
    /// The driver, when it waits for work.
    driver: Option<Waker>,
    /// Streams to wake once the lock is released.
    wake: Vec<Waker>,
    config: Config,
    /// Scratch for a head's lines (kept replies only).
    lines: Vec<u8>,
}

/// What the connection's handles and its driver share.
struct Shared {
    state: Mutex<State>,
    /// Set once the connection takes no new streams (GOAWAY, or closed).
    unusable: AtomicBool,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, as last said.
    max_streams: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wake `wakers` (taken out of the state, the lock released).
fn wake_all(wakers: Vec<Waker>) {
    for waker in wakers {
        waker.wake();
    }
}

/// A handle on a connection: opens streams on it.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

/// Start a connection over `io`, a byte stream to the server that has not
/// carried anything yet: the handle, and the driver to spawn. The preface
/// and SETTINGS are queued, not waited for.
pub fn start<IO>(io: IO, config: Config) -> (Connection, Driver<IO>)
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut out = Vec::with_capacity(16 << 10);
    out.extend_from_slice(frame::PREFACE);
    frame::put_settings(
        &mut out,
        &[
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, config.stream_window),
            (setting::MAX_HEADER_LIST_SIZE, config.max_header_list),
        ],
    );
    let extra = config
        .connection_window
        .saturating_sub(frame::DEFAULT_WINDOW);
    if extra > 0 {
        frame::put_window_update(&mut out, 0, extra);
    }
    let state = State {
        out,
        taken: 0,
        sent_marks: VecDeque::new(),
        streams: Slab::new(),
        ids: foldhash::HashMap::default(),
        waiting: VecDeque::new(),
        blocked: VecDeque::new(),
        next_id: 1,
        active: 0,
        fresh: 0,
        fresh_bytes: 0,
        max_streams: ASSUMED_MAX_STREAMS,
        settings_seen: false,
        broken: None,
        send_window: i64::from(frame::DEFAULT_WINDOW),
        initial_send_window: i64::from(frame::DEFAULT_WINDOW),
        max_frame: frame::DEFAULT_MAX_FRAME,
        recv_unacked: 0,
        decoder: Decoder::new(HEADER_TABLE),
        continuation: None,
        goaway: None,
        closed: None,
        driver: None,
        wake: Vec::new(),
        config,
        lines: Vec::new(),
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(state),
        unusable: AtomicBool::new(false),
        max_streams: AtomicUsize::new(ASSUMED_MAX_STREAMS),
    });
    let driver = Driver::new(Arc::clone(&shared), io);
    (Connection { shared }, driver)
}

impl Connection {
    /// Whether it takes no new streams (the server sent GOAWAY, or it closed).
    pub fn is_unusable(&self) -> bool {
        self.shared.unusable.load(Ordering::Relaxed)
    }

    /// How the server broke the protocol, when it did: what made the client
    /// end the connection (its streams then end [`Closed::Protocol`]).
    pub fn broken(&self) -> Option<&'static str> {
        self.shared.lock().broken
    }

    /// The streams the server allows at once, as it last said.
    pub fn max_streams(&self) -> usize {
        self.shared.max_streams.load(Ordering::Relaxed)
    }

    /// Open a stream for `request`, keeping what `collect` asks of its reply
    /// (taken from it; [`Stream::finish`] gives it back filled). It is sent
    /// at once when the server allows another stream, else when one ends.
    /// `Err` when the connection takes no new streams (`collect` untouched).
    pub fn open(&self, request: &Request, collect: &mut Collect) -> Result<Stream, Closed> {
        let mut state = self.shared.lock();
        if let Some(closed) = state.closed {
            return Err(closed);
        }
        if let Some((_, code)) = state.goaway {
            return Err(Closed::GoAway(code));
        }
        let stream = StreamState {
            id: 0,
            block: request.block.clone(),
            body: request.body.clone(),
            body_sent: 0,
            send_window: state.initial_send_window,
            recv_unacked: 0,
            local_done: false,
            headed: false,
            body_len: 0,
            content_length: None,
            head_request: request.head,
            record: Record::default(),
            status: 0,
            grpc_status: None,
            grpc_message: None,
            collect: std::mem::take(collect),
            result: None,
            waker: None,
        };
        let key = state.streams.insert(stream);
        if state.active < state.max_streams {
            state.begin(key);
        } else {
            state.waiting.push_back(key);
        }
        let wake = state.wake_driver();
        drop(state);
        if let Some(waker) = wake {
            waker.wake();
        }
        Ok(Stream {
            shared: Arc::clone(&self.shared),
            key,
            done: false,
        })
    }
}

/// A stream opened by [`Connection::open`]. Dropping it before it ended
/// resets it (CANCEL).
pub struct Stream {
    shared: Arc<Shared>,
    key: usize,
    done: bool,
}

impl Stream {
    /// Wait until the stream ends.
    pub fn end(&mut self) -> impl Future<Output = Result<(), Failure>> + '_ {
        std::future::poll_fn(move |cx| self.poll_end(cx))
    }

    /// Whether the stream ended, registering `cx` to be woken when it does.
    pub fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        let mut state = self.shared.lock();
        let Some(stream) = state.streams.get_mut(self.key) else {
            return Poll::Ready(Err(Failure::Closed(Closed::Lost)));
        };
        if let Some(result) = stream.result {
            return Poll::Ready(result);
        }
        match &stream.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => stream.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Its bytes and moments so far (a stream already finished has none).
    pub fn record(&self) -> Record {
        let state = self.shared.lock();
        state
            .streams
            .get(self.key)
            .map_or_else(Record::default, |stream| stream.record)
    }

    /// What the stream got; one that had not ended is reset (CANCEL), and
    /// its frames stop counting.
    pub fn finish(mut self) -> Reply {
        self.take()
    }

    fn take(&mut self) -> Reply {
        self.done = true;
        let mut state = self.shared.lock();
        let cancelled = state
            .streams
            .get(self.key)
            .is_some_and(|s| s.result.is_none());
        if cancelled {
            state.cancel(self.key);
        }
        let wake = state.wake_driver();
        let reply = match state.streams.try_remove(self.key) {
            Some(stream) => Reply {
                record: stream.record,
                status: stream.status,
                grpc_status: stream.grpc_status,
                grpc_message: stream.grpc_message,
                collect: stream.collect,
                result: stream.result.filter(|_| !cancelled),
            },
            None => Reply {
                record: Record::default(),
                status: 0,
                grpc_status: None,
                grpc_message: None,
                collect: Collect::Nothing,
                result: None,
            },
        };
        let woken = std::mem::take(&mut state.wake);
        drop(state);
        if let Some(waker) = wake {
            waker.wake();
        }
        wake_all(woken);
        reply
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !self.done {
            self.take();
        }
    }
}

/// A connection error: the code the client's GOAWAY carries, and what the
/// server did.
#[derive(Debug, Clone, Copy)]
struct ConnectionError(u32, &'static str);
