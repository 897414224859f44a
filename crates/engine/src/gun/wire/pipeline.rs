//! Pipelining (`depth = N`): up to N instances share one connection, each
//! with its own request in flight, each timed on its own.
//!
//! A task per connection, on the thread of its instances, does all of the
//! connection's I/O. An instance queues its request (and joins the
//! connection's FIFO, so the FIFO's order is the wire's) and waits in its
//! slot; the task writes every request queued since its last write in one
//! write, and reads the replies, parsing each where it lies in the read
//! buffer and handing it to its instance's slot. So a batch costs one write:
//! the instances that one read of replies wakes queue their next requests
//! before the task runs again. And a request costs no allocation: no channel
//! per request, no timer per wait (the instance's budget is the barrel's).
//!
//! Replies come back in order, so a request whose budget runs out has every
//! request behind it still unanswered: the connection is closed, and they
//! fail with the same net code (110), as does every request on a connection
//! that breaks (its errno, or 71 for a reply that cannot be read or a close
//! mid-way); a request that never went out has nothing on the wire (0 bytes
//! sent). A request is never sent twice on a pipelined connection.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use tank_stats::NetCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::budget::Budget;
use super::conn::READ_BUFFER;
use super::{Failure, Progress, Protocol, Reply};
use crate::netcode;
use crate::target::Target;

/// What a pipelined request came to.
pub(super) struct Landed {
    /// The proto code, or why the request failed.
    pub result: Result<u16, Failure>,
    /// Bytes of the request that went out.
    pub size_out: u64,
    /// When it went out whole.
    pub sent: Option<Instant>,
    /// Reply bytes read.
    pub size_in: u64,
    /// When its first reply byte arrived.
    pub first_byte: Option<Instant>,
    /// When its reply was whole (`None` when it failed).
    pub whole: Option<Instant>,
    /// When this request opened the connection (`None`: it was open).
    pub connected: Option<Instant>,
}

impl Landed {
    fn failed(failure: Failure) -> Landed {
        Landed {
            result: Err(failure),
            size_out: 0,
            sent: None,
            size_in: 0,
            first_byte: None,
            whole: None,
            connected: None,
        }
    }
}

/// One connection shared by up to `depth` instances, each in a slot of its own.
pub(super) struct Pipe {
    state: Mutex<State>,
    /// Held by the instance that opens the connection, so that one does.
    opening: tokio::sync::Mutex<()>,
}

struct State {
    /// The open connection; `None` before the first request and after a failure.
    open: Option<Open>,
    /// One per instance sharing the connection.
    slots: Vec<Slot>,
    /// Connections opened so far, the last one's number.
    opened: u64,
}

/// The open connection as its instances and its task share it.
struct Open {
    /// Its number (the task of an older connection ends).
    number: u64,
    /// Requests queued or on the wire, oldest first; those not yet written
    /// whole are the newest `unsent`.
    fifo: VecDeque<Waiting>,
    unsent: usize,
    /// Bytes of the oldest unsent request already written.
    partly: u64,
    /// The unsent requests' bytes, for the next write.
    out: Vec<u8>,
    /// The connection's task, when it waits for requests to write.
    task: Option<Waker>,
}

/// A request in the FIFO.
struct Waiting {
    slot: usize,
    reply: Reply,
    /// Its size: the bytes it puts on the wire.
    len: u64,
    sent: Option<Instant>,
    size_in: u64,
    first_byte: Option<Instant>,
    connected: Option<Instant>,
}

/// Where an instance's request lands.
#[derive(Default)]
struct Slot {
    landed: Option<Landed>,
    waker: Option<Waker>,
}

impl Slot {
    /// Land `landed` here and wake the instance.
    fn land(&mut self, landed: Landed) {
        self.landed = Some(landed);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

impl Pipe {
    /// A connection for `depth` instances (slots `0..depth`).
    pub(super) fn new(depth: usize) -> Pipe {
        Pipe {
            state: Mutex::new(State {
                open: None,
                slots: (0..depth).map(|_| Slot::default()).collect(),
                opened: 0,
            }),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere leaves nothing half-changed that matters: go on.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Send `request` from `slot` over the shared connection (opening it if
    /// needed) and wait for its reply, all within `budget`.
    pub(super) async fn fire(
        self: &Arc<Self>,
        slot: usize,
        (target, source): (&Target, Option<IpAddr>),
        protocol: Protocol,
        request: &[u8],
        budget: &mut Budget,
    ) -> Landed {
        let connected = if self.lock().open.is_some() {
            None
        } else {
            // Boxed: opening is rare, and its state (a connect) would make
            // every request's future larger.
            match Box::pin(self.open(target, source, budget)).await {
                Ok(connected) => connected,
                Err(failure) => return Landed::failed(failure),
            }
        };
        let reply = protocol.reply(request);
        let (number, wake) = {
            let mut state = self.lock();
            let state = &mut *state;
            let Some(open) = &mut state.open else {
                // Closed since it was opened (its requests failed): this one never went out.
                return Landed::failed(Failure::Net(NetCode::PROTOCOL));
            };
            state.slots[slot].landed = None;
            open.fifo.push_back(Waiting {
                slot,
                reply,
                len: request.len() as u64,
                sent: None,
                size_in: 0,
                first_byte: None,
                connected,
            });
            open.unsent += 1;
            open.out.extend_from_slice(request);
            (open.number, open.task.take())
        };
        if let Some(task) = wake {
            task.wake();
        }
        let landed = std::future::poll_fn(|cx| {
            let mut state = self.lock();
            let slot = &mut state.slots[slot];
            if let Some(landed) = slot.landed.take() {
                return Poll::Ready(landed);
            }
            if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                slot.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        });
        if let Some(landed) = budget.within(landed).await {
            return landed;
        }
        // Its budget ran out: the connection closes, failing it and those behind it.
        let mut state = self.lock();
        state.close(number, Failure::Timeout);
        state.slots[slot]
            .landed
            .take()
            .unwrap_or_else(|| Landed::failed(Failure::Timeout))
    }

    /// Open the connection, unless another instance does first: when this
    /// request opened it, when.
    async fn open(
        self: &Arc<Self>,
        target: &Target,
        source: Option<IpAddr>,
        budget: &mut Budget,
    ) -> Result<Option<Instant>, Failure> {
        let Some(_turn) = budget.within(self.opening.lock()).await else {
            return Err(Failure::Timeout);
        };
        if self.lock().open.is_some() {
            // Another instance opened it meanwhile.
            return Ok(None);
        }
        let connecting = super::conn::connect(target, source, None, &[]);
        let stream = match budget.within(connecting).await {
            None => return Err(Failure::Timeout),
            Some(Err(code)) => return Err(Failure::Net(code)),
            Some(Ok(super::conn::Conn::Tcp(stream))) => stream,
            Some(Ok(super::conn::Conn::Tls(_))) => return Err(Failure::Net(NetCode::PROTOCOL)),
        };
        let connected = Instant::now();
        let number = {
            let mut state = self.lock();
            state.opened += 1;
            state.open = Some(Open {
                number: state.opened,
                fifo: VecDeque::new(),
                unsent: 0,
                partly: 0,
                out: Vec::new(),
                task: None,
            });
            state.opened
        };
        tokio::spawn(drive(Arc::downgrade(self), number, stream));
        Ok(Some(connected))
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // The task of the open connection, if any, ends (and closes it) once woken.
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(task) = state.open.as_mut().and_then(|open| open.task.take()) {
            task.wake();
        }
    }
}

impl State {
    /// The open connection, when it is connection `number`.
    fn open(&mut self, number: u64) -> Option<&mut Open> {
        self.open.as_mut().filter(|open| open.number == number)
    }

    /// Close connection `number` (if still the pipe's), failing every request
    /// on it with `failure`; its task ends when it next runs.
    fn close(&mut self, number: u64, failure: Failure) {
        let Some(mut open) = self.open.take_if(|open| open.number == number) else {
            return;
        };
        let sent_whole = open.fifo.len() - open.unsent;
        for (at, waiting) in open.fifo.drain(..).enumerate() {
            let size_out = match at {
                at if at < sent_whole => waiting.len,
                at if at == sent_whole => open.partly,
                _ => 0,
            };
            self.slots[waiting.slot].land(Landed {
                result: Err(failure),
                size_out,
                sent: waiting.sent,
                size_in: waiting.size_in,
                first_byte: waiting.first_byte,
                whole: None,
                connected: waiting.connected,
            });
        }
        if let Some(task) = open.task.take() {
            task.wake();
        }
    }

    /// `written` more bytes of connection `number`'s unsent requests went out
    /// at `now`: those now written whole are sent (a request with no reply to
    /// wait for is whole then).
    fn wrote(&mut self, number: u64, written: usize, now: Instant) {
        let Some(open) = self.open(number) else {
            return;
        };
        open.out.drain(..written);
        let mut written = written as u64;
        let mut at = open.fifo.len() - open.unsent;
        let mut landed = Vec::new();
        while let Some(waiting) = open.fifo.get_mut(at) {
            let left = waiting.len - open.partly;
            if written < left {
                open.partly += written;
                break;
            }
            written -= left;
            open.partly = 0;
            open.unsent -= 1;
            waiting.sent = Some(now);
            match waiting.reply.whole_unread() {
                Some(code) => {
                    // `noreply` commands only: nothing comes back for it.
                    if let Some(waiting) = open.fifo.remove(at) {
                        landed.push((waiting.slot, code, waiting));
                    }
                }
                None => at += 1,
            }
        }
        for (slot, code, waiting) in landed {
            self.slots[slot].land(Landed {
                result: Ok(code),
                size_out: waiting.len,
                sent: waiting.sent,
                size_in: 0,
                first_byte: None,
                whole: waiting.sent,
                connected: waiting.connected,
            });
        }
    }

    /// Feed `data`, read from connection `number` at `now`, to the replies at
    /// the FIFO's head, handing each whole one to its instance.
    fn hand_out(&mut self, number: u64, data: &[u8], now: Instant) -> Result<(), Failure> {
        let State { open, slots, .. } = self;
        let Some(open) = open.as_mut().filter(|open| open.number == number) else {
            return Ok(());
        };
        let mut rest = data;
        while !rest.is_empty() {
            let sent_whole = open.fifo.len() - open.unsent;
            let Some(head) = open.fifo.front_mut().filter(|_| sent_whole > 0) else {
                // Bytes no request on the wire asked for.
                return Err(Failure::Net(NetCode::PROTOCOL));
            };
            head.first_byte.get_or_insert(now);
            let (used, progress) = feed_until_whole(&mut head.reply, rest);
            head.size_in += used as u64;
            rest = &rest[used..];
            match progress {
                Progress::More => {}
                Progress::Broken => return Err(Failure::Net(NetCode::PROTOCOL)),
                Progress::Whole { code, .. } => {
                    if let Some(done) = open.fifo.pop_front() {
                        slots[done.slot].land(Landed {
                            result: Ok(code),
                            size_out: done.len,
                            sent: done.sent,
                            size_in: done.size_in,
                            first_byte: done.first_byte,
                            whole: Some(now),
                            connected: done.connected,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// Connection `number`'s task: writes what its instances queue and hands
/// each reply to its instance, until the connection fails (which fails the
/// requests on it), the pipe closes it, or the pipe is gone.
async fn drive(pipe: Weak<Pipe>, number: u64, mut stream: TcpStream) {
    std::future::poll_fn(|cx| {
        let Some(pipe) = pipe.upgrade() else {
            return Poll::Ready(());
        };
        match turn(&pipe, number, &mut stream, cx) {
            Poll::Ready(failure) => {
                pipe.lock().close(number, failure);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
}

/// Write what is queued, then read what has arrived, until neither can go
/// on; ready with the failure that ends the connection (or with nothing to
/// report when the pipe closed it).
fn turn(pipe: &Pipe, number: u64, stream: &mut TcpStream, cx: &mut Context<'_>) -> Poll<Failure> {
    loop {
        let mut state = pipe.lock();
        let Some(open) = state.open(number) else {
            // Closed by the pipe: its requests have failed already.
            return Poll::Ready(Failure::Net(NetCode::PROTOCOL));
        };
        // Woken by an instance that queues a request (and by the pipe's end).
        if !open.task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            open.task = Some(cx.waker().clone());
        }
        if open.out.is_empty() {
            break;
        }
        match Pin::new(&mut *stream).poll_write(cx, &open.out) {
            Poll::Pending => break,
            Poll::Ready(Ok(0)) => return Poll::Ready(Failure::Net(NetCode::BROKEN_PIPE)),
            Poll::Ready(Ok(written)) => state.wrote(number, written, Instant::now()),
            Poll::Ready(Err(error)) => return Poll::Ready(Failure::Net(netcode::of_io(&error))),
        }
    }
    loop {
        // The thread's read buffer, as the barrel's: held only while the
        // bytes are handed out. poll_read, as the barrel's: a short read
        // drains the socket and forgets its readiness.
        let read = READ_BUFFER.with_borrow_mut(|buffer| {
            let mut filled = ReadBuf::new(buffer);
            match Pin::new(&mut *stream).poll_read(cx, &mut filled) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(error)) => Poll::Ready(Err(Failure::Net(netcode::of_io(&error)))),
                // The end of the stream: requests on it are cut short.
                Poll::Ready(Ok(())) if filled.filled().is_empty() => {
                    Poll::Ready(Err(Failure::Net(NetCode::PROTOCOL)))
                }
                Poll::Ready(Ok(())) => Poll::Ready(pipe.lock().hand_out(
                    number,
                    filled.filled(),
                    Instant::now(),
                )),
            }
        });
        match read {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(failure)) => return Poll::Ready(failure),
            Poll::Ready(Ok(())) => {}
        }
    }
}

/// Feed `data` to `reply` up to the reply's end: how many bytes it took,
/// and where it stands; the bytes after it are the next reply's.
fn feed_until_whole(reply: &mut Reply, data: &[u8]) -> (usize, Progress) {
    let Reply::Memcached(reply) = reply else {
        return (data.len(), Progress::Broken);
    };
    reply.feed_some(data)
}
