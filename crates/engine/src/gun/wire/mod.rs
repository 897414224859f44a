//! The wire family: protocols whose replies come back in request order on a
//! connection — HTTP/1.x ([`Protocol::Http`], `http.rs`), plain TCP, its
//! replies ended by the close or framed ([`Protocol::Tcp`], [`tcp`]) and memcached's ASCII protocol
//! ([`Protocol::Memcached`], [`memcached`]). A barrel fires one request over a
//! kept connection and measures it, as phantom's instance does: connect →
//! send → first byte → last byte.
//!
//! The barrel (this module) owns what these protocols share: the connection
//! (`conn`: TCP or TLS, source address, one read buffer), the shot's budget,
//! the retry rule and phantom's fill rule. A protocol here says three things,
//! and nothing else:
//! - how a reply is framed: fed the bytes as they arrive, it says when the
//!   reply is whole and whether the connection may carry the next request
//!   ([`Progress`]), and what a reply that runs to the end of the stream is;
//! - how the outcome is classified: the proto code of a whole reply, and the
//!   code read so far when a reply breaks (the net code is the barrel's: the
//!   errno, 110 for the budget, 71 for a broken reply);
//! - whether a request may be sent again after a kept connection was found
//!   closed.
//!
//! Every shot has one budget, `timeout`, from its start; each wait spends from
//! it, and running out is net code 110. Phases a failed shot never reached are
//! set to its end, so connect + send + latency + receive = interval_real on
//! every shot.
//!
//! A reused keep-alive connection may turn out to be closed: the server closed
//! it while it was idle, and the request meets EPIPE or ECONNRESET, or the end
//! of the stream, before any reply byte. Such a shot is sent again, once, on a
//! new connection, as phantom does, but only when the request may be repeated:
//! an HTTP request with an idempotent method (RFC 9110: GET, HEAD, PUT, DELETE,
//! OPTIONS, TRACE). A POST may have been acted on before the server closed, so
//! it is never sent twice; its row has the failure's net code (the errno, or 71
//! for a close without a reply). The plain TCP gun never resends: the bytes'
//! meaning is unknown. How many times the request went out is in the shot's
//! `sends`; its sizes, codes and phases are the last attempt's.
//!
//! With `depth = N` (memcached over plain TCP), up to N barrels on one I/O
//! thread share a connection, each with a request in flight (`pipeline.rs`).

pub(crate) mod budget;
pub(crate) mod conn;
mod http;
pub mod memcached;
mod pipeline;
pub mod tcp;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use tank_stats::{micros, Measured, NetCode};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::measure::{fill, Marks, ShotProgress};
use super::{Barrel, Gun, Placement};
use crate::http::Limits;
use crate::netcode;
use crate::target::Target;
use budget::Budget;
use conn::{Conn, WriteError};

/// What a gun speaks over its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.x, replies read within phantom's limits.
    Http(Limits),
    /// Plain TCP (`tank_type = none`): bytes out, then bytes in until the
    /// reply's framing says it ended (by default, the server's close).
    Tcp(tcp::Framing),
    /// memcached's ASCII protocol (`tank_type = memcached`): the request's
    /// commands say which replies to read; see [`memcached`] for the codes.
    Memcached,
}

impl Protocol {
    #[inline]
    fn reply(self, request: &[u8]) -> Reply {
        match self {
            Protocol::Http(limits) => Reply::Http(http::HttpReply::new(limits, request)),
            Protocol::Tcp(framing) => Reply::Tcp(tcp::TcpReply::new(framing)),
            Protocol::Memcached => Reply::Memcached(memcached::McReply::new(request)),
        }
    }

    fn may_resend(self, request: &[u8]) -> bool {
        match self {
            Protocol::Http(_) => http::may_resend(request),
            Protocol::Tcp(_) => false,
            Protocol::Memcached => memcached::may_resend(request),
        }
    }
}

/// Where a reply stands after the bytes read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// More is to come.
    More,
    /// The reply is whole: its proto code, and whether the connection may be kept.
    Whole {
        /// The proto code (the HTTP status; 0 for plain TCP).
        code: u16,
        /// Whether the connection may carry the next request.
        keep_alive: bool,
    },
    /// The reply cannot be read (net code 71).
    Broken,
}

/// One reply being read, in its protocol's terms.
enum Reply {
    Http(http::HttpReply),
    Tcp(tcp::TcpReply),
    Memcached(memcached::McReply),
}

impl Reply {
    #[inline]
    fn feed(&mut self, data: &[u8]) -> Progress {
        match self {
            Reply::Http(reply) => reply.feed(data),
            Reply::Tcp(reply) => reply.feed(data),
            Reply::Memcached(reply) => reply.feed(data),
        }
    }

    /// The stream ended: the proto code of a reply that runs to the close, or
    /// `None` for one cut short.
    fn at_end(&mut self) -> Option<u16> {
        match self {
            Reply::Http(reply) => reply.at_end(),
            Reply::Tcp(reply) => reply.at_end(),
            // A memcached reply never runs to the close.
            Reply::Memcached(_) => None,
        }
    }

    /// The proto code read so far, kept when the reply breaks later.
    fn code_so_far(&self) -> u16 {
        match self {
            Reply::Http(reply) => reply.code_so_far(),
            Reply::Tcp(_) | Reply::Memcached(_) => 0,
        }
    }

    /// Whole before any byte is read (a memcached request of `noreply` commands).
    fn whole_unread(&self) -> Option<u16> {
        match self {
            Reply::Memcached(reply) => reply.whole_unread(),
            Reply::Http(_) | Reply::Tcp(_) => None,
        }
    }
}

/// What one queue's instances shoot at, and how.
pub struct WireGun {
    target: Target,
    tls: Option<TlsConnector>,
    protocol: Protocol,
    timeout: Duration,
    sources: Vec<IpAddr>,
    /// Requests in flight per connection (1: no pipelining).
    depth: usize,
    /// The pipelined connections, by group (see [`Gun::pipelined`]).
    pipes: std::sync::Mutex<Vec<Arc<pipeline::Pipe>>>,
}

impl WireGun {
    /// A gun speaking `protocol` to `target`, over TLS when `tls` is set, each
    /// shot within `timeout`, from `sources` round-robin (none: the kernel's choice).
    pub fn new(
        target: Target,
        tls: Option<Arc<ClientConfig>>,
        protocol: Protocol,
        timeout: Duration,
        sources: Vec<IpAddr>,
    ) -> Self {
        WireGun {
            target,
            tls: tls.map(TlsConnector::from),
            protocol,
            timeout,
            sources,
            depth: 1,
            pipes: std::sync::Mutex::default(),
        }
    }

    /// Pipeline up to `depth` requests per connection (memcached over plain
    /// TCP only: the config checks). Barrels then share connections (see
    /// [`WireGun::barrel`]).
    pub fn with_depth(mut self, depth: usize) -> Self {
        self.depth = depth.max(1);
        self
    }

    /// The barrel of an instance sharing the connection of `group` (at most
    /// `depth` instances share one), in its slot `member` (below `depth`).
    fn pipelined(self: &Arc<Self>, index: usize, group: usize, member: usize) -> WireBarrel {
        let mut barrel = self.instance(index);
        let mut pipes = self
            .pipes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while pipes.len() <= group {
            pipes.push(Arc::new(pipeline::Pipe::new(self.depth)));
        }
        barrel.pipe = Some((Arc::clone(&pipes[group]), member));
        barrel
    }

    /// The endpoint shot at (resolved address and port).
    pub fn endpoint(&self) -> SocketAddr {
        self.target.addr
    }

    /// The per-shot budget.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// An instance's own connection; `index` picks its source address
    /// (`gatling_ip`) round-robin.
    pub fn instance(self: &Arc<Self>, index: usize) -> WireBarrel {
        let source = (!self.sources.is_empty()).then(|| self.sources[index % self.sources.len()]);
        WireBarrel {
            gun: Arc::clone(self),
            conn: None,
            source,
            budget: None,
            pipe: None,
            progress: Arc::default(),
        }
    }
}

/// One instance's connection and the shots it fires through it.
pub struct WireBarrel {
    gun: Arc<WireGun>,
    conn: Option<Conn>,
    source: Option<IpAddr>,
    /// The shots' timer, made on the barrel's I/O thread at its first shot.
    budget: Option<Budget>,
    /// The connection shared with other instances, when pipelining, and
    /// this instance's slot in it.
    pipe: Option<(Arc<pipeline::Pipe>, usize)>,
    /// The shot in flight's marks, for its row if it is abandoned (not kept
    /// for a pipelined shot: its marks are the pipe's).
    progress: Arc<ShotProgress>,
}

#[derive(Debug, Clone, Copy)]
enum Failure {
    /// A network or protocol error with its net code.
    Net(NetCode),
    /// The budget ran out.
    Timeout,
    /// A reused connection was found closed before any reply byte: the server
    /// had closed it. The request may be sent again (see the module docs);
    /// otherwise the shot has this net code.
    Stale(NetCode),
}

impl WireBarrel {
    /// Close the connection, if one is open (a replayed session ended); the
    /// next shot connects anew.
    pub fn hang_up(&mut self) {
        self.conn = None;
    }

    /// Fire `request`, which started at `start`. `reply`, when given,
    /// collects the reply bytes (up to its capacity) for the answers log.
    pub async fn fire(
        &mut self,
        request: &[u8],
        start: Instant,
        mut reply: Option<&mut Vec<u8>>,
    ) -> Measured {
        if let Some((pipe, slot)) = &self.pipe {
            let (pipe, slot) = (Arc::clone(pipe), *slot);
            return self.fire_pipelined(&pipe, slot, request, start).await;
        }
        let mut budget = Budget::take(&mut self.budget, start + self.gun.timeout);
        let mut measured = Measured::default();
        // Whether the request may go out again is asked only when a kept
        // connection turns out closed: most shots never need to know.
        let mut resent = false;
        let measured = loop {
            let mut marks = Marks::default();
            self.progress.begin();
            if let Some(reply) = reply.as_deref_mut() {
                reply.clear();
            }
            let result = self
                .attempt(
                    request,
                    start,
                    &mut budget,
                    &mut marks,
                    &mut measured,
                    reply.as_deref_mut(),
                )
                .await;
            if measured.size_out > 0 {
                measured.sends += 1;
            }
            let end_us = match result {
                Err(Failure::Stale(_)) if !resent && self.gun.protocol.may_resend(request) => {
                    // Once: the next attempt is on a new connection.
                    resent = true;
                    self.conn = None;
                    continue;
                }
                Ok((code, end_us)) => {
                    measured.proto_code = code;
                    measured.net_code = NetCode::OK;
                    end_us
                }
                Err(failure) => {
                    // The attempt left the code it read, if any, in `proto_code`.
                    self.conn = None;
                    measured.net_code = match failure {
                        Failure::Net(code) | Failure::Stale(code) => code,
                        Failure::Timeout => NetCode::TIMED_OUT,
                    };
                    micros(start.elapsed())
                }
            };
            let timeout_us = micros(self.gun.timeout);
            fill(&mut measured, &marks, end_us, timeout_us);
            break measured;
        };
        self.budget = Some(budget);
        measured
    }

    /// Fire `request` over the connection shared with other instances, from
    /// its `slot` there.
    async fn fire_pipelined(
        &mut self,
        pipe: &Arc<pipeline::Pipe>,
        slot: usize,
        request: &[u8],
        start: Instant,
    ) -> Measured {
        let gun = Arc::clone(&self.gun);
        let mut budget = Budget::take(&mut self.budget, start + gun.timeout);
        let landed = pipe
            .fire(
                slot,
                (&gun.target, self.source),
                gun.protocol,
                request,
                &mut budget,
            )
            .await;
        self.budget = Some(budget);
        let since_start =
            |at: Option<Instant>| at.map(|at| micros(at.saturating_duration_since(start)));
        let end_us = since_start(landed.whole).unwrap_or_else(|| micros(start.elapsed()));
        let mut measured = Measured {
            size_out: landed.size_out,
            size_in: landed.size_in,
            sends: u8::from(landed.size_out > 0),
            ..Measured::default()
        };
        match landed.result {
            Ok(code) => {
                measured.proto_code = code;
                measured.net_code = NetCode::OK;
            }
            Err(Failure::Net(code) | Failure::Stale(code)) => measured.net_code = code,
            Err(Failure::Timeout) => measured.net_code = NetCode::TIMED_OUT,
        }
        let marks = Marks {
            // A request that went out on an open connection spent nothing connecting.
            connected: since_start(landed.connected).or_else(|| (landed.size_out > 0).then_some(0)),
            sent: since_start(landed.sent),
            first_byte: since_start(landed.first_byte),
        };
        fill(&mut measured, &marks, end_us, micros(gun.timeout));
        measured
    }

    /// One attempt at the shot: the reply's proto code and when it was whole
    /// (µs from `start`), or why it failed. Its sizes replace the previous
    /// attempt's in `measured` (from 0, before connecting); on a failure after
    /// a reply's status line, `measured.proto_code` keeps that status.
    ///
    /// The clock is read once per mark: after connecting, after the write,
    /// and at each read that brings bytes (the first is the first byte's
    /// mark, the one that makes the reply whole its end).
    async fn attempt(
        &mut self,
        request: &[u8],
        start: Instant,
        budget: &mut Budget,
        marks: &mut Marks,
        measured: &mut Measured,
        mut kept: Option<&mut Vec<u8>>,
    ) -> Result<(u16, u64), Failure> {
        measured.size_out = 0;
        measured.size_in = 0;
        measured.proto_code = 0;
        let reused = self.conn.is_some();
        let conn = match &mut self.conn {
            Some(conn) => {
                marks.connected = Some(0);
                self.progress.connected(0);
                conn
            }
            empty => {
                let gun = &self.gun;
                let connecting = conn::connect(&gun.target, self.source, gun.tls.as_ref(), request);
                let conn = match budget.within(connecting).await {
                    None => return Err(Failure::Timeout),
                    Some(Err(error)) => return Err(Failure::Net(error)),
                    Some(Ok(conn)) => conn,
                };
                let connected_us = micros(start.elapsed());
                marks.connected = Some(connected_us);
                self.progress.connected(connected_us);
                empty.insert(conn)
            }
        };
        match conn
            .write_all(request, budget, &mut measured.size_out)
            .await
        {
            Ok(()) => {}
            Err(WriteError::Timeout) => return Err(Failure::Timeout),
            Err(WriteError::Net { code, written }) => {
                return Err(if reused && written == 0 && netcode::means_closed(code) {
                    Failure::Stale(code)
                } else {
                    Failure::Net(code)
                });
            }
        }
        let sent_us = micros(start.elapsed());
        marks.sent = Some(sent_us);
        self.progress.sent(sent_us, measured.size_out);
        let mut reply = self.gun.protocol.reply(request);
        if let Some(code) = reply.whole_unread() {
            return Ok((code, sent_us));
        }
        let received = loop {
            let read = conn
                .read(budget, |data| {
                    if let Some(kept) = kept.as_deref_mut() {
                        let room = kept.capacity().saturating_sub(kept.len()).min(data.len());
                        kept.extend_from_slice(&data[..room]);
                    }
                    (data.len(), reply.feed(data))
                })
                .await;
            match read {
                // The end of the stream before any byte of the reply on a kept connection.
                Ok(None) if measured.size_in == 0 && reused => {
                    break Err(Failure::Stale(NetCode::PROTOCOL));
                }
                Err(Some(code))
                    if measured.size_in == 0 && reused && netcode::means_closed(code) =>
                {
                    break Err(Failure::Stale(code));
                }
                Ok(None) => {
                    // Whole for a reply that runs to the close; cut short otherwise.
                    self.conn = None;
                    break match reply.at_end() {
                        Some(code) => Ok((code, micros(start.elapsed()))),
                        None => Err(Failure::Net(NetCode::PROTOCOL)),
                    };
                }
                Err(Some(code)) => break Err(Failure::Net(code)),
                Err(None) => break Err(Failure::Timeout),
                Ok(Some((bytes, progress))) => {
                    // A read returns at least one byte.
                    let now_us = micros(start.elapsed());
                    marks.first_byte.get_or_insert(now_us);
                    measured.size_in += bytes as u64;
                    self.progress.received(now_us, measured.size_in);
                    match progress {
                        Progress::More => continue,
                        Progress::Broken => break Err(Failure::Net(NetCode::PROTOCOL)),
                        Progress::Whole { code, keep_alive } => {
                            if !keep_alive {
                                self.conn = None;
                            }
                            break Ok((code, now_us));
                        }
                    }
                }
            }
        };
        if received.is_err() {
            // A reply that broke after its status line keeps the status.
            measured.proto_code = reply.code_so_far();
        }
        received
    }
}

impl Gun for WireGun {
    type Barrel = WireBarrel;

    fn barrel(self: &Arc<Self>, index: usize, placement: Placement) -> WireBarrel {
        if self.depth == 1 {
            return self.instance(index);
        }
        // The instances sharing a connection run on one thread: the k-th
        // instance of each thread joins its thread's (k / depth)-th connection.
        let threads = placement.threads.max(1);
        let nth = placement.instance / threads;
        self.pipelined(
            index,
            placement.thread.index() + threads * (nth / self.depth),
            nth % self.depth,
        )
    }
}

impl Barrel for WireBarrel {
    fn fire<'a>(
        &'a mut self,
        request: &'a [u8],
        start: Instant,
        reply: Option<&'a mut Vec<u8>>,
    ) -> impl std::future::Future<Output = Measured> + Send + 'a {
        WireBarrel::fire(self, request, start, reply)
    }

    fn hang_up(&mut self) {
        WireBarrel::hang_up(self);
    }

    fn progress(&self) -> Arc<ShotProgress> {
        Arc::clone(&self.progress)
    }
}

#[cfg(test)]
mod tests;
