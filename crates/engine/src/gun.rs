//! The gun: fires one request over a kept connection and measures it, as
//! phantom's instance does: connect → send → first byte → last byte.
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

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use rustls::ClientConfig;
use tank_stats::{Measured, NetCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{timeout_at, Instant};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::http::{is_head_request, is_idempotent_request, Limits, ResponseReader};
use crate::netcode;
use crate::target::Target;
use crate::tls;

/// What one queue's instances shoot at, and how.
pub struct Gun {
    target: Target,
    tls: Option<TlsConnector>,
    http: bool,
    limits: Limits,
    timeout: Duration,
    sources: Vec<IpAddr>,
}

impl Gun {
    /// A gun for `target`. `tls` enables TLS; `http = false` is the plain TCP
    /// gun (`tank_type = none`): bytes out, then bytes in until the server closes.
    pub fn new(
        target: Target,
        tls: Option<Arc<ClientConfig>>,
        http: bool,
        limits: Limits,
        timeout: Duration,
        sources: Vec<IpAddr>,
    ) -> Self {
        Gun {
            target,
            tls: tls.map(TlsConnector::from),
            http,
            limits,
            timeout,
            sources,
        }
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
        }
    }
}

enum Conn {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// One instance's connection and the shots it fires through it.
pub struct Barrel {
    gun: Arc<Gun>,
    conn: Option<Conn>,
    source: Option<IpAddr>,
}

/// Timestamps of one attempt, µs from the shot's start.
#[derive(Default)]
struct Marks {
    connected: Option<u64>,
    sent: Option<u64>,
    first_byte: Option<u64>,
}

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

thread_local! {
    /// Reads land here and are parsed at once, so an instance waiting for a
    /// slow reply holds no buffer of its own.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; 64 * 1024]);
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
        let deadline = start + self.gun.timeout;
        let mut measured = Measured::default();
        let mut may_retry = self.gun.http && is_idempotent_request(request);
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
            let end_us = micros(start, Instant::now());
            match result {
                Err(Failure::Stale(_)) if may_retry => {
                    // Once: the next attempt is on a new connection.
                    may_retry = false;
                    self.conn = None;
                    continue;
                }
                Ok(status) => {
                    measured.proto_code = status;
                    measured.net_code = NetCode::OK;
                }
                Err(failure) => {
                    // The attempt left the status it read, if any, in `proto_code`.
                    self.conn = None;
                    measured.net_code = match failure {
                        Failure::Net(code) | Failure::Stale(code) => code,
                        Failure::Timeout => NetCode::TIMED_OUT,
                    };
                }
            }
            let timeout_us = u64::try_from(self.gun.timeout.as_micros()).unwrap_or(u64::MAX);
            fill(&mut measured, &marks, end_us, timeout_us);
            return measured;
        }
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
        capture: Option<&mut Vec<u8>>,
    ) -> Result<u16, Failure> {
        measured.size_out = 0;
        measured.size_in = 0;
        measured.proto_code = 0;
        let reused = self.conn.is_some();
        if self.conn.is_none() {
            let conn = match timeout_at(deadline, self.connect(request)).await {
                Err(_) => return Err(Failure::Timeout),
                Ok(Err(error)) => return Err(Failure::Net(error)),
                Ok(Ok(conn)) => conn,
            };
            self.conn = Some(conn);
            marks.connected = Some(micros(start, Instant::now()));
        } else {
            marks.connected = Some(0);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Failure::Net(NetCode::PROTOCOL));
        };
        let mut written = 0;
        while written < request.len() {
            let step = match conn {
                // A kept socket takes a request at once: try that before arming a timer.
                Conn::Tcp(stream) => match stream.try_write(&request[written..]) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        timeout_at(deadline, stream.write(&request[written..])).await
                    }
                    done => Ok(done),
                },
                Conn::Tls(stream) => timeout_at(deadline, stream.write(&request[written..])).await,
            };
            match step {
                Err(_) => return Err(Failure::Timeout),
                Ok(Err(error)) => {
                    let code = netcode::of_io(&error);
                    return Err(if reused && written == 0 && netcode::means_closed(code) {
                        Failure::Stale(code)
                    } else {
                        Failure::Net(code)
                    });
                }
                Ok(Ok(0)) => return Err(Failure::Net(NetCode::BROKEN_PIPE)),
                Ok(Ok(n)) => {
                    written += n;
                    measured.size_out = written as u64;
                }
            }
        }
        if let Conn::Tls(stream) = conn {
            match timeout_at(deadline, stream.flush()).await {
                Err(_) => return Err(Failure::Timeout),
                Ok(Err(error)) => return Err(Failure::Net(netcode::of_io(&error))),
                Ok(Ok(())) => {}
            }
        }
        marks.sent = Some(micros(start, Instant::now()));
        let http = self.gun.http;
        let mut reader = ResponseReader::new(self.gun.limits, is_head_request(request));
        let mut capture = capture;
        let received = loop {
            let read = match conn {
                Conn::Tcp(stream) => {
                    read_tcp(stream, deadline, &mut reader, http, capture.as_deref_mut()).await
                }
                Conn::Tls(stream) => {
                    read_tls(stream, deadline, &mut reader, http, capture.as_deref_mut()).await
                }
            };
            // `Ok(None)`: the end of the stream.
            match read {
                Ok(None) if measured.size_in == 0 && reused => {
                    break Err(Failure::Stale(NetCode::PROTOCOL));
                }
                Err(Failure::Net(code))
                    if measured.size_in == 0 && reused && netcode::means_closed(code) =>
                {
                    break Err(Failure::Stale(code));
                }
                Ok(None) => {
                    // Fine for a reply that runs to the close; a reply cut short otherwise.
                    self.conn = None;
                    if !http {
                        break Ok(0);
                    }
                    break reader
                        .finish_at_eof()
                        .map(|reply| reply.status)
                        .map_err(|_| Failure::Net(NetCode::PROTOCOL));
                }
                Err(failure) => break Err(failure),
                Ok(Some(Chunk { bytes, done })) => {
                    if bytes > 0 && marks.first_byte.is_none() {
                        marks.first_byte = Some(micros(start, Instant::now()));
                    }
                    measured.size_in += bytes as u64;
                    match done {
                        None => continue,
                        Some(Err(_)) => break Err(Failure::Net(NetCode::PROTOCOL)),
                        Some(Ok((status, keep))) => {
                            if !keep {
                                self.conn = None;
                            }
                            break Ok(status);
                        }
                    }
                }
            }
        };
        if received.is_err() {
            // A reply that broke after its status line keeps the status.
            measured.proto_code = reader.status_read();
        }
        received
    }

    async fn connect(&self, request: &[u8]) -> Result<Conn, NetCode> {
        let addr = self.gun.target.addr;
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4(),
            SocketAddr::V6(_) => TcpSocket::new_v6(),
        }
        .map_err(|e| netcode::of_io(&e))?;
        if let Some(source) = self.source {
            socket
                .bind(SocketAddr::new(source, 0))
                .map_err(|e| netcode::of_io(&e))?;
        }
        let stream = socket.connect(addr).await.map_err(|e| netcode::of_io(&e))?;
        // Requests go out whole and at once; Nagle would only delay them.
        stream.set_nodelay(true).map_err(|e| netcode::of_io(&e))?;
        match &self.gun.tls {
            None => Ok(Conn::Tcp(stream)),
            Some(connector) => {
                let name = tls::server_name(request, &self.gun.target.host)
                    .map_err(|_| NetCode::PROTOCOL)?;
                let stream = connector
                    .connect(name, stream)
                    .await
                    .map_err(|e| netcode::of_io(&e))?;
                Ok(Conn::Tls(Box::new(stream)))
            }
        }
    }
}

/// What one read brought: how many bytes, and whether the reply is complete
/// (`Some(Ok((status, keep_alive)))`) or broken.
struct Chunk {
    bytes: usize,
    done: Option<Result<(u16, bool), ()>>,
}

fn take(
    reader: &mut ResponseReader,
    http: bool,
    data: &[u8],
    capture: Option<&mut Vec<u8>>,
) -> Chunk {
    if let Some(capture) = capture {
        let room = capture
            .capacity()
            .saturating_sub(capture.len())
            .min(data.len());
        capture.extend_from_slice(&data[..room]);
    }
    if !http {
        // The plain TCP gun reads until the server closes.
        return Chunk {
            bytes: data.len(),
            done: None,
        };
    }
    let done = match reader.feed(data) {
        Ok(None) => None,
        Ok(Some(used)) => reader
            .reply()
            .map(|reply| Ok((reply.status, reply.keep_alive && used == data.len()))),
        Err(_) => Some(Err(())),
    };
    Chunk {
        bytes: data.len(),
        done,
    }
}

async fn read_tcp(
    stream: &mut TcpStream,
    deadline: Instant,
    reader: &mut ResponseReader,
    http: bool,
    mut capture: Option<&mut Vec<u8>>,
) -> Result<Option<Chunk>, Failure> {
    // poll_read, not readable() + try_read: a read shorter than the buffer
    // drains the socket, and poll_read then forgets the readiness, so the next
    // reply is awaited without a read that could only fail with EAGAIN.
    let read = std::future::poll_fn(|cx| {
        READ_BUFFER.with_borrow_mut(|buffer| {
            let mut filled = ReadBuf::new(buffer);
            match Pin::new(&mut *stream).poll_read(cx, &mut filled) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(error)) => Poll::Ready(Err(Failure::Net(netcode::of_io(&error)))),
                Poll::Ready(Ok(())) if filled.filled().is_empty() => Poll::Ready(Ok(None)),
                Poll::Ready(Ok(())) => Poll::Ready(Ok(Some(take(
                    reader,
                    http,
                    filled.filled(),
                    capture.as_deref_mut(),
                )))),
            }
        })
    });
    timeout_at(deadline, read)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

async fn read_tls(
    stream: &mut TlsStream<TcpStream>,
    deadline: Instant,
    reader: &mut ResponseReader,
    http: bool,
    capture: Option<&mut Vec<u8>>,
) -> Result<Option<Chunk>, Failure> {
    let mut buffer = [0u8; 4096];
    match timeout_at(deadline, stream.read(&mut buffer)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Ok(0)) => Ok(None),
        Ok(Ok(n)) => Ok(Some(take(reader, http, &buffer[..n], capture))),
        // A peer that closes without close_notify ends the stream all the same.
        Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Ok(Err(error)) => Err(Failure::Net(netcode::of_io(&error))),
    }
}

fn micros(start: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(start).as_micros()).unwrap_or(u64::MAX)
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
    measured.interval_event_us = if measured.net_code == NetCode::TIMED_OUT {
        timeout_us.min(end_us)
    } else {
        end_us.min(timeout_us)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

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
            true,
            limits,
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
}
