//! The gun: fires one request over a kept connection and measures it, as
//! phantom's instance does: connect → send → first byte → last byte.
//!
//! **Guns are a family.** The barrel (this module) owns what every protocol
//! shares: the connection (`conn`: TCP or TLS, source address, one read
//! buffer), the shot's budget, the retry rule and phantom's fill rule. A
//! protocol is a module that says three things, and nothing else:
//! - how a reply is framed: fed the bytes as they arrive, it says when the
//!   reply is whole and whether the connection may carry the next request
//!   ([`Progress`]), and what a reply that runs to the end of the stream is;
//! - how the outcome is classified: the proto code of a whole reply, and the
//!   code read so far when a reply breaks (the net code is the barrel's: the
//!   errno, 110 for the budget, 71 for a broken reply);
//! - whether a request may be sent again after a kept connection was found
//!   closed.
//!
//! Members: [`Protocol::Http`] (HTTP/1.x, `http.rs`), [`Protocol::Tcp`]
//! (plain TCP, `tcp.rs`) and [`Protocol::Memcached`] (memcached's ASCII
//! protocol, [`memcached`]). A new protocol is a new module and a new variant.
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
//! meaning is unknown, and its connections carry one request anyway (the reply
//! runs to the close). How many times the request went out is in the shot's
//! `sends`; its sizes, codes and phases are the last attempt's.

mod conn;
mod http;
pub mod memcached;
mod pipeline;
mod tcp;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use tank_stats::{micros, Measured, NetCode};
use tokio::time::{timeout_at, Instant};
use tokio_rustls::TlsConnector;

use crate::http::Limits;
use crate::netcode;
use crate::target::Target;
use conn::{Conn, WriteError};

/// What a gun speaks over its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.x, replies read within phantom's limits.
    Http(Limits),
    /// Plain TCP (`tank_type = none`): bytes out, then bytes in until the server closes.
    Tcp,
    /// memcached's ASCII protocol (`tank_type = memcached`): the request's
    /// commands say which replies to read; see [`memcached`] for the codes.
    Memcached,
}

impl Protocol {
    fn reply(self, request: &[u8]) -> Reply {
        match self {
            Protocol::Http(limits) => Reply::Http(http::HttpReply::new(limits, request)),
            Protocol::Tcp => Reply::Tcp(tcp::TcpReply),
            Protocol::Memcached => Reply::Memcached(memcached::McReply::new(request)),
        }
    }

    fn may_resend(self, request: &[u8]) -> bool {
        match self {
            Protocol::Http(_) => http::may_resend(request),
            Protocol::Tcp => false,
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
pub struct Gun {
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

impl Gun {
    /// A gun speaking `protocol` to `target`, over TLS when `tls` is set, each
    /// shot within `timeout`, from `sources` round-robin (none: the kernel's choice).
    pub fn new(
        target: Target,
        tls: Option<Arc<ClientConfig>>,
        protocol: Protocol,
        timeout: Duration,
        sources: Vec<IpAddr>,
    ) -> Self {
        Gun {
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
    /// TCP only: the caller checks). Instances then take their barrels from
    /// [`Gun::pipelined`].
    pub fn with_depth(mut self, depth: usize) -> Self {
        self.depth = depth.max(1);
        self
    }

    /// Requests in flight per connection.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// An instance's end of a pipelined gun: the instances given the same
    /// `group` (at most `depth` of them) share one connection.
    pub fn pipelined(self: &Arc<Self>, index: usize, group: usize) -> Barrel {
        let mut barrel = self.instance(index);
        let mut pipes = self
            .pipes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while pipes.len() <= group {
            pipes.push(Arc::default());
        }
        barrel.pipe = Some(Arc::clone(&pipes[group]));
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

    /// An instance's end of the gun; `index` picks its source address (`gatling_ip`) round-robin.
    pub fn instance(self: &Arc<Self>, index: usize) -> Barrel {
        let source = (!self.sources.is_empty()).then(|| self.sources[index % self.sources.len()]);
        Barrel {
            gun: Arc::clone(self),
            conn: None,
            source,
            pipe: None,
        }
    }
}

/// One instance's connection and the shots it fires through it.
pub struct Barrel {
    gun: Arc<Gun>,
    conn: Option<Conn>,
    source: Option<IpAddr>,
    /// The connection shared with other instances, when pipelining.
    pipe: Option<Arc<pipeline::Pipe>>,
}

/// Timestamps of one attempt, µs from the shot's start.
#[derive(Default)]
struct Marks {
    connected: Option<u64>,
    sent: Option<u64>,
    first_byte: Option<u64>,
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

impl Failure {
    /// The same failure, for each request that shared a broken pipelined connection.
    fn again(&self) -> Failure {
        *self
    }
}

impl Barrel {
    /// Fire `request`, which started at `start`. `capture`, when given,
    /// collects the reply bytes (up to its capacity) for the answers log.
    pub async fn fire(
        &mut self,
        request: &[u8],
        start: Instant,
        mut capture: Option<&mut Vec<u8>>,
    ) -> Measured {
        if let Some(pipe) = &self.pipe {
            return self.fire_pipelined(&Arc::clone(pipe), request, start).await;
        }
        let deadline = start + self.gun.timeout;
        let mut measured = Measured::default();
        let mut may_retry = self.gun.protocol.may_resend(request);
        loop {
            let mut marks = Marks::default();
            if let Some(capture) = capture.as_deref_mut() {
                capture.clear();
            }
            let result = self
                .attempt(
                    request,
                    start,
                    deadline,
                    &mut marks,
                    &mut measured,
                    capture.as_deref_mut(),
                )
                .await;
            if measured.size_out > 0 {
                measured.sends += 1;
            }
            let end_us = micros(start.elapsed());
            match result {
                Err(Failure::Stale(_)) if may_retry => {
                    // Once: the next attempt is on a new connection.
                    may_retry = false;
                    self.conn = None;
                    continue;
                }
                Ok(code) => {
                    measured.proto_code = code;
                    measured.net_code = NetCode::OK;
                }
                Err(failure) => {
                    // The attempt left the code it read, if any, in `proto_code`.
                    self.conn = None;
                    measured.net_code = match failure {
                        Failure::Net(code) | Failure::Stale(code) => code,
                        Failure::Timeout => NetCode::TIMED_OUT,
                    };
                }
            }
            let timeout_us = micros(self.gun.timeout);
            fill(&mut measured, &marks, end_us, timeout_us);
            return measured;
        }
    }

    /// Fire `request` over the connection shared with other instances.
    async fn fire_pipelined(
        &self,
        pipe: &Arc<pipeline::Pipe>,
        request: &[u8],
        start: Instant,
    ) -> Measured {
        let gun = &self.gun;
        let mut sent = pipeline::Sent::default();
        let landed = pipe
            .fire(
                &gun.target,
                self.source,
                gun.protocol,
                request,
                start + gun.timeout,
                &mut sent,
            )
            .await;
        let end_us = micros(start.elapsed());
        let mut measured = Measured {
            size_out: sent.size_out,
            size_in: landed.size_in,
            sends: u8::from(sent.size_out > 0),
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
            connected: match sent.connected {
                Some(at) => Some(micros(at.saturating_duration_since(start))),
                None => (sent.size_out > 0).then_some(0),
            },
            sent: sent
                .sent
                .map(|at| micros(at.saturating_duration_since(start))),
            first_byte: landed
                .first_byte
                .map(|at| micros(at.saturating_duration_since(start))),
        };
        let timeout_us = micros(gun.timeout);
        fill(&mut measured, &marks, end_us, timeout_us);
        measured
    }

    /// One attempt at the shot. Its sizes replace the previous attempt's in
    /// `measured` (from 0, before connecting); on a failure after a reply's
    /// status line, `measured.proto_code` keeps that status.
    async fn attempt(
        &mut self,
        request: &[u8],
        start: Instant,
        deadline: Instant,
        marks: &mut Marks,
        measured: &mut Measured,
        mut capture: Option<&mut Vec<u8>>,
    ) -> Result<u16, Failure> {
        measured.size_out = 0;
        measured.size_in = 0;
        measured.proto_code = 0;
        let reused = self.conn.is_some();
        let conn = match &mut self.conn {
            Some(conn) => {
                marks.connected = Some(0);
                conn
            }
            empty => {
                let gun = &self.gun;
                let connecting = conn::connect(&gun.target, self.source, gun.tls.as_ref(), request);
                let conn = match timeout_at(deadline, connecting).await {
                    Err(_) => return Err(Failure::Timeout),
                    Ok(Err(error)) => return Err(Failure::Net(error)),
                    Ok(Ok(conn)) => conn,
                };
                marks.connected = Some(micros(start.elapsed()));
                empty.insert(conn)
            }
        };
        match conn
            .write_all(request, deadline, &mut measured.size_out)
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
        marks.sent = Some(micros(start.elapsed()));
        let mut reply = self.gun.protocol.reply(request);
        if let Some(code) = reply.whole_unread() {
            return Ok(code);
        }
        let received = loop {
            let read = conn
                .read(deadline, |data| {
                    if let Some(capture) = capture.as_deref_mut() {
                        let room = capture
                            .capacity()
                            .saturating_sub(capture.len())
                            .min(data.len());
                        capture.extend_from_slice(&data[..room]);
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
                    break reply.at_end().ok_or(Failure::Net(NetCode::PROTOCOL));
                }
                Err(Some(code)) => break Err(Failure::Net(code)),
                Err(None) => break Err(Failure::Timeout),
                Ok(Some((bytes, progress))) => {
                    if bytes > 0 && marks.first_byte.is_none() {
                        marks.first_byte = Some(micros(start.elapsed()));
                    }
                    measured.size_in += bytes as u64;
                    match progress {
                        Progress::More => continue,
                        Progress::Broken => break Err(Failure::Net(NetCode::PROTOCOL)),
                        Progress::Whole { code, keep_alive } => {
                            if !keep_alive {
                                self.conn = None;
                            }
                            break Ok(code);
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

/// phantom's fill rule: phases never reached end at the shot's end, so the
/// parts always sum to the whole.
fn fill(measured: &mut Measured, marks: &Marks, end_us: u64, timeout_us: u64) {
    let connected = marks.connected.unwrap_or(end_us).min(end_us);
    let sent = marks.sent.unwrap_or(end_us).clamp(connected, end_us);
    let first = marks.first_byte.unwrap_or(end_us).clamp(sent, end_us);
    measured.interval_real_us = end_us;
    measured.connect_us = connected;
    measured.send_us = sent - connected;
    measured.latency_us = first - sent;
    measured.receive_us = end_us - first;
    // The time spent waiting within the budget: the budget itself on a timeout.
    measured.interval_event_us = end_us.min(timeout_us);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    #[test]
    fn fill_rule_makes_parts_sum_to_the_whole() {
        let mut measured = Measured {
            net_code: NetCode::RESET,
            ..Measured::default()
        };
        let marks = Marks {
            connected: Some(100),
            sent: Some(150),
            first_byte: None,
        };
        fill(&mut measured, &marks, 900, 11_000_000);
        assert_eq!(
            (
                measured.connect_us,
                measured.send_us,
                measured.latency_us,
                measured.receive_us
            ),
            (100, 50, 750, 0)
        );
        let mut timed_out = Measured {
            net_code: NetCode::TIMED_OUT,
            ..Measured::default()
        };
        fill(&mut timed_out, &Marks::default(), 1_000_450, 1_000_000);
        assert_eq!(
            (timed_out.connect_us, timed_out.interval_event_us),
            (1_000_450, 1_000_000)
        );
    }

    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    const POST: &[u8] = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async { tokio::time::timeout(Duration::from_secs(20), future).await })
            .expect("the test took over 20 s")
    }

    fn barrel(addr: SocketAddr, limits: Limits) -> Barrel {
        let target = Target {
            addr,
            host: "127.0.0.1".into(),
        };
        Arc::new(Gun::new(
            target,
            None,
            Protocol::Http(limits),
            Duration::from_secs(5),
            Vec::new(),
        ))
        .instance(0)
    }

    /// Read one request head (the tests' requests have no body).
    async fn read_request(stream: &mut TcpStream) -> bool {
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte).await {
                Ok(1) => request.push(byte[0]),
                _ => return false,
            }
        }
        true
    }

    /// A server that answers the first request of each connection, then reads
    /// the second and closes without a word. Counts the requests it read.
    async fn one_reply_per_connection(
        listener: tokio::net::TcpListener,
        received: Arc<std::sync::atomic::AtomicUsize>,
    ) {
        use std::sync::atomic::Ordering;
        while let Ok((mut stream, _)) = listener.accept().await {
            if read_request(&mut stream).await {
                received.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(OK).await;
            }
            if read_request(&mut stream).await {
                received.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn a_kept_connection_found_closed_resends_only_an_idempotent_request() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let received = Arc::new(AtomicUsize::new(0));
            tokio::spawn(one_reply_per_connection(listener, Arc::clone(&received)));
            let mut barrel = barrel(addr, Limits::default());
            let fresh = barrel.fire(GET, Instant::now(), None).await;
            assert_eq!(
                (fresh.net_code, fresh.proto_code, fresh.sends),
                (NetCode::OK, 200, 1)
            );
            // The server read this one on the kept connection and closed it: sent again.
            let resent = barrel.fire(GET, Instant::now(), None).await;
            assert_eq!(
                (
                    resent.net_code,
                    resent.proto_code,
                    resent.sends,
                    resent.retries()
                ),
                (NetCode::OK, 200, 2, 1)
            );
            assert_eq!(
                (resent.size_out, resent.size_in),
                (GET.len() as u64, OK.len() as u64)
            );
            assert_eq!(received.load(Ordering::SeqCst), 3);
            // A POST meets the same closed connection: it is not sent twice.
            let post = barrel.fire(POST, Instant::now(), None).await;
            assert_eq!(
                (
                    post.net_code,
                    post.proto_code,
                    post.sends,
                    post.size_out,
                    post.size_in
                ),
                (NetCode::PROTOCOL, 0, 1, POST.len() as u64, 0)
            );
            assert_eq!(received.load(Ordering::SeqCst), 4);
            // The next shot connects anew.
            let next = barrel.fire(POST, Instant::now(), None).await;
            assert_eq!(
                (next.net_code, next.proto_code, next.sends),
                (NetCode::OK, 200, 1)
            );
            assert!(next.connect_us > 0);
        });
    }

    #[test]
    fn a_refused_reconnect_reports_no_bytes_sent() {
        block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                if read_request(&mut stream).await {
                    let _ = stream.write_all(OK).await;
                }
                let _ = read_request(&mut stream).await;
                // Nothing listens any more when the connection closes.
                drop(listener);
                drop(stream);
            });
            let mut barrel = barrel(addr, Limits::default());
            let fresh = barrel.fire(GET, Instant::now(), None).await;
            assert_eq!((fresh.net_code, fresh.proto_code), (NetCode::OK, 200));
            let refused = barrel.fire(GET, Instant::now(), None).await;
            // The row is the refused attempt's: nothing sent, nothing read. The
            // stale attempt's request did go out, once.
            assert_eq!(
                (
                    refused.net_code,
                    refused.proto_code,
                    refused.size_out,
                    refused.size_in,
                    refused.sends
                ),
                (NetCode::REFUSED, 0, 0, 0, 1)
            );
            assert_eq!(
                refused.connect_us + refused.send_us + refused.latency_us + refused.receive_us,
                refused.interval_real_us
            );
        });
    }

    #[test]
    fn a_reply_over_the_entity_limit_keeps_its_status() {
        block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                if read_request(&mut stream).await {
                    // No Content-Length: the body runs to the close, past the limit.
                    let mut reply = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
                    reply.resize(reply.len() + 4096, b'z');
                    let _ = stream.write_all(&reply).await;
                }
            });
            let limits = Limits {
                entity: 1024,
                ..Limits::default()
            };
            let mut barrel = barrel(addr, limits);
            let cut = barrel.fire(GET, Instant::now(), None).await;
            assert_eq!((cut.net_code, cut.proto_code), (NetCode::PROTOCOL, 200));
            assert!(cut.size_in > 1024, "{} bytes read", cut.size_in);
            assert!(barrel.conn.is_none(), "a cut reply ends its connection");
        });
    }

    #[test]
    fn a_pipelined_request_past_its_budget_fails_the_ones_behind_it() {
        use tokio::io::AsyncBufReadExt;
        block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            // Answers `get a` with a miss, and never answers `get slow`.
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(async move {
                        let (read, mut write) = stream.into_split();
                        let mut lines = tokio::io::BufReader::new(read).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            if line == "get slow" {
                                std::future::pending::<()>().await;
                            }
                            let _ = write.write_all(b"END\r\n").await;
                        }
                    });
                }
            });
            let target = Target {
                addr,
                host: "127.0.0.1".into(),
            };
            let gun = Arc::new(
                Gun::new(
                    target,
                    None,
                    Protocol::Memcached,
                    Duration::from_millis(300),
                    Vec::new(),
                )
                .with_depth(2),
            );
            let (mut first, mut second) = (gun.pipelined(0, 0), gun.pipelined(1, 0));
            let warm = first.fire(b"get a\r\n", Instant::now(), None).await;
            assert_eq!((warm.net_code, warm.proto_code), (NetCode::OK, 404));
            assert!(
                warm.connect_us > 0,
                "the first request opened the connection"
            );
            let slow = first.fire(b"get slow\r\n", Instant::now(), None);
            let behind = async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                second.fire(b"get a\r\n", Instant::now(), None).await
            };
            let (slow, behind) = tokio::join!(slow, behind);
            assert_eq!(slow.net_code, NetCode::TIMED_OUT);
            assert_eq!(behind.net_code, NetCode::TIMED_OUT);
            assert_eq!(
                behind.connect_us + behind.send_us + behind.latency_us + behind.receive_us,
                behind.interval_real_us
            );
            // The next request opens a new connection.
            let after = second.fire(b"get a\r\n", Instant::now(), None).await;
            assert_eq!((after.net_code, after.proto_code), (NetCode::OK, 404));
            assert!(after.connect_us > 0);
        });
    }
}
