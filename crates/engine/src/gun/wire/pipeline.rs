//! Pipelining (`depth = N`): up to N instances share one connection, each
//! with its own request in flight, each timed on its own.
//!
//! The connection is a plain TCP stream shared by reference (tokio's
//! readiness-based `try_read` / `try_write` take `&self`). Requests go out
//! one whole request at a time under the write turn, and each joins the
//! connection's FIFO as it does, so the FIFO's order is the wire's. A reader
//! task per connection, on the thread that opened it, feeds what arrives to
//! the FIFO's head reply and hands each whole reply to its request. Replies
//! come back in order, so a request whose budget runs out has every request
//! behind it still unanswered: the connection is closed, and they fail with
//! the same net code (110), as does every request on a connection that
//! breaks (its errno, or 71 for a reply that cannot be read or a close
//! mid-way). A request is never sent twice on a pipelined connection.

use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tank_stats::NetCode;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::{timeout_at, Instant};

use super::conn::READ_BUFFER;
use super::{Failure, Progress, Protocol, Reply};
use crate::netcode;
use crate::target::Target;

/// What a pipelined request's reply came to.
pub(super) struct Landed {
    /// The proto code, or why the request failed.
    pub result: Result<u16, Failure>,
    /// Reply bytes read.
    pub size_in: u64,
    /// When its first reply byte arrived.
    pub first_byte: Option<Instant>,
}

/// A request on the wire, waiting for its reply.
struct Waiting {
    reply: Reply,
    size_in: u64,
    first_byte: Option<Instant>,
    done: oneshot::Sender<Landed>,
}

/// One connection shared by up to `depth` instances.
#[derive(Default)]
pub(super) struct Pipe {
    /// The open connection; `None` before the first request and after a failure.
    stream: tokio::sync::Mutex<Option<Arc<TcpStream>>>,
    /// Taken to write one request whole (and join the FIFO).
    write_turn: tokio::sync::Mutex<()>,
    /// The requests on the wire, oldest first, with the stream they went out on.
    fifo: Mutex<Fifo>,
}

#[derive(Default)]
struct Fifo {
    /// The stream the waiting requests were written to (its address, as an id).
    on: usize,
    waiting: VecDeque<Waiting>,
}

fn id(stream: &Arc<TcpStream>) -> usize {
    Arc::as_ptr(stream) as usize
}

/// Timestamps of one pipelined request, for the barrel's fill rule.
#[derive(Default)]
pub(super) struct Sent {
    /// When this request opened the connection (`None`: it was open).
    pub connected: Option<Instant>,
    /// When the request was written whole.
    pub sent: Option<Instant>,
    /// Bytes written.
    pub size_out: u64,
}

impl Pipe {
    /// Send `request` over the shared connection (opening it if needed) and
    /// wait for its reply, all by `deadline`.
    pub(super) async fn fire(
        self: &Arc<Self>,
        target: &Target,
        source: Option<IpAddr>,
        protocol: Protocol,
        request: &[u8],
        deadline: Instant,
        sent: &mut Sent,
    ) -> Landed {
        let failed = |failure| Landed {
            result: Err(failure),
            size_in: 0,
            first_byte: None,
        };
        let stream = match self.stream(target, source, deadline).await {
            Ok((stream, opened)) => {
                if opened {
                    sent.connected = Some(Instant::now());
                }
                stream
            }
            Err(failure) => return failed(failure),
        };
        let (done, landed) = oneshot::channel();
        {
            let _turn = match self.write_turn.try_lock() {
                Ok(turn) => turn,
                Err(_) => match timeout_at(deadline, self.write_turn.lock()).await {
                    Ok(turn) => turn,
                    Err(_) => return failed(Failure::Timeout),
                },
            };
            let reply = protocol.reply(request);
            if let Some(code) = reply.whole_unread() {
                // Nothing to wait for: whole once written.
                return match write_all(&stream, request, deadline, &mut sent.size_out).await {
                    Ok(()) => {
                        sent.sent = Some(Instant::now());
                        Landed {
                            result: Ok(code),
                            size_in: 0,
                            first_byte: None,
                        }
                    }
                    Err(failure) => {
                        self.close(&stream, &failure).await;
                        failed(failure)
                    }
                };
            }
            {
                let mut fifo = self.fifo.lock().unwrap_or_else(PoisonError::into_inner);
                if fifo.on != id(&stream) {
                    // The stream was replaced (and its waiters failed) since it was taken.
                    return failed(Failure::Net(NetCode::PROTOCOL));
                }
                fifo.waiting.push_back(Waiting {
                    reply,
                    size_in: 0,
                    first_byte: None,
                    done,
                });
            }
            if let Err(failure) = write_all(&stream, request, deadline, &mut sent.size_out).await {
                self.close(&stream, &failure).await;
            } else {
                sent.sent = Some(Instant::now());
            }
        }
        let mut landed = landed;
        match timeout_at(deadline, &mut landed).await {
            // A dropped sender: the connection was closed under it.
            Ok(outcome) => outcome.unwrap_or_else(|_| failed(Failure::Net(NetCode::PROTOCOL))),
            Err(_) => {
                // Its budget ran out: the connection closes, failing it and those behind it.
                self.close(&stream, &Failure::Timeout).await;
                landed.await.unwrap_or_else(|_| failed(Failure::Timeout))
            }
        }
    }

    /// The open connection, or a new one.
    async fn stream(
        self: &Arc<Self>,
        target: &Target,
        source: Option<IpAddr>,
        deadline: Instant,
    ) -> Result<(Arc<TcpStream>, bool), Failure> {
        // Open and free: the common case, without arming a timer.
        if let Ok(stream) = self.stream.try_lock() {
            if let Some(open) = &*stream {
                return Ok((Arc::clone(open), false));
            }
        }
        let Ok(mut stream) = timeout_at(deadline, self.stream.lock()).await else {
            return Err(Failure::Timeout);
        };
        if let Some(open) = &*stream {
            return Ok((Arc::clone(open), false));
        }
        let connecting = super::conn::connect(target, source, None, &[]);
        let open = match timeout_at(deadline, connecting).await {
            Err(_) => return Err(Failure::Timeout),
            Ok(Err(code)) => return Err(Failure::Net(code)),
            Ok(Ok(super::conn::Conn::Tcp(open))) => Arc::new(open),
            Ok(Ok(super::conn::Conn::Tls(_))) => return Err(Failure::Net(NetCode::PROTOCOL)),
        };
        self.fifo.lock().unwrap_or_else(PoisonError::into_inner).on = id(&open);
        *stream = Some(Arc::clone(&open));
        tokio::spawn(read_replies(Arc::downgrade(self), Arc::clone(&open)));
        Ok((open, true))
    }

    /// Close `stream` (if still the pipe's) and fail every request waiting on it.
    async fn close(&self, stream: &Arc<TcpStream>, failure: &Failure) {
        // Its reader meets the end of the stream and ends.
        let _ = socket2::SockRef::from(&**stream).shutdown(std::net::Shutdown::Both);
        let mut current = self.stream.lock().await;
        if current
            .as_ref()
            .is_some_and(|open| Arc::ptr_eq(open, stream))
        {
            *current = None;
        }
        let waiting = {
            let mut fifo = self.fifo.lock().unwrap_or_else(PoisonError::into_inner);
            if fifo.on != id(stream) {
                return;
            }
            fifo.on = 0;
            std::mem::take(&mut fifo.waiting)
        };
        for waiting in waiting {
            let _ = waiting.done.send(Landed {
                result: Err(failure.again()),
                size_in: waiting.size_in,
                first_byte: waiting.first_byte,
            });
        }
    }

    /// Feed `data` to the replies at the FIFO's head, handing each whole one
    /// to its request.
    fn hand_out(&self, stream: &Arc<TcpStream>, data: &[u8]) -> Result<(), Failure> {
        let now = Instant::now();
        let mut fifo = self.fifo.lock().unwrap_or_else(PoisonError::into_inner);
        if fifo.on != id(stream) {
            // A stream the pipe has closed.
            return Err(Failure::Net(NetCode::PROTOCOL));
        }
        let mut rest = data;
        while !rest.is_empty() {
            let Some(head) = fifo.waiting.front_mut() else {
                // Bytes no request asked for.
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
                    if let Some(done) = fifo.waiting.pop_front() {
                        let _ = done.done.send(Landed {
                            result: Ok(code),
                            size_in: done.size_in,
                            first_byte: done.first_byte,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // The reader of the open connection, if any, ends with it.
        if let Ok(stream) = self.stream.try_lock() {
            if let Some(open) = &*stream {
                let _ = socket2::SockRef::from(&**open).shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// A connection's reader: reads what arrives and hands each whole reply to
/// its request, until the connection ends or fails (which fails the requests
/// still waiting), or the pipe is gone.
async fn read_replies(pipe: Weak<Pipe>, stream: Arc<TcpStream>) {
    loop {
        let failure = match stream.readable().await {
            Err(error) => Failure::Net(netcode::of_io(&error)),
            Ok(()) => {
                let Some(pipe) = pipe.upgrade() else {
                    return;
                };
                // The thread's read buffer, as the barrel's: held only while
                // the bytes are handed out, never across an await.
                let read = READ_BUFFER.with_borrow_mut(|buffer| match stream.try_read(buffer) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(()),
                    Err(error) => Err(Failure::Net(netcode::of_io(&error))),
                    Ok(0) => Err(Failure::Net(NetCode::PROTOCOL)),
                    Ok(n) => pipe.hand_out(&stream, &buffer[..n]),
                });
                match read {
                    Ok(()) => continue,
                    Err(failure) => failure,
                }
            }
        };
        if let Some(pipe) = pipe.upgrade() {
            pipe.close(&stream, &failure).await;
        }
        return;
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

/// Write `request` whole by `deadline`.
async fn write_all(
    stream: &TcpStream,
    request: &[u8],
    deadline: Instant,
    written: &mut u64,
) -> Result<(), Failure> {
    let mut at = 0;
    while at < request.len() {
        match stream.try_write(&request[at..]) {
            Ok(0) => return Err(Failure::Net(NetCode::BROKEN_PIPE)),
            Ok(n) => {
                at += n;
                *written = at as u64;
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                match timeout_at(deadline, stream.writable()).await {
                    Err(_) => return Err(Failure::Timeout),
                    Ok(Err(error)) => return Err(Failure::Net(netcode::of_io(&error))),
                    Ok(Ok(())) => {}
                }
            }
            Err(error) => return Err(Failure::Net(netcode::of_io(&error))),
        }
    }
    Ok(())
}
