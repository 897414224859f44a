//! The gun: fires one request over a kept connection and measures it, as
//! phantom's instance does: connect → send → first byte → last byte.
//!
//! Every shot has one budget, `timeout`, from its start; each wait spends from
//! it, and running out is net code 110. Phases a failed shot never reached are
//! set to its end, so connect + send + latency + receive = interval_real on
//! every shot. A reused keep-alive connection that turns out to be closed
//! (EPIPE/ECONNRESET on write, or the end of the stream before any reply byte)
//! is retried once on a new connection, as phantom does.

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

use crate::http::{is_head_request, Limits, ResponseReader};
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
    /// The end of the stream: on a kept connection before any reply byte it
    /// means the server had closed it (retry once); otherwise it may end a reply.
    Stale,
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
        let mut attempt = 0;
        loop {
            let reused = self.conn.is_some();
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
            let end_us = micros(start, Instant::now());
            match result {
                Err(Failure::Stale) if reused && attempt == 0 => {
                    self.conn = None;
                    attempt += 1;
                    continue;
                }
                Ok(status) => {
                    measured.proto_code = status;
                    measured.net_code = NetCode::OK;
                }
                Err(failure) => {
                    self.conn = None;
                    measured.proto_code = 0;
                    measured.net_code = match failure {
                        Failure::Net(code) => code,
                        Failure::Timeout => NetCode::TIMED_OUT,
                        // A stale connection again, or on a fresh one: the server closed it.
                        Failure::Stale => NetCode::PROTOCOL,
                    };
                }
            }
            let timeout_us = u64::try_from(self.gun.timeout.as_micros()).unwrap_or(u64::MAX);
            fill(&mut measured, &marks, end_us, timeout_us);
            return measured;
        }
    }

    async fn attempt(
        &mut self,
        request: &[u8],
        start: Instant,
        deadline: Instant,
        marks: &mut Marks,
        measured: &mut Measured,
        capture: Option<&mut Vec<u8>>,
    ) -> Result<u16, Failure> {
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
        measured.size_out = 0;
        measured.size_in = 0;
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
                Ok(Err(error)) if reused && written == 0 && netcode::is_stale(&error) => {
                    return Err(Failure::Stale)
                }
                Ok(Err(error)) => return Err(Failure::Net(netcode::of_io(&error))),
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
        loop {
            let read = match conn {
                Conn::Tcp(stream) => {
                    read_tcp(stream, deadline, &mut reader, http, capture.as_deref_mut()).await
                }
                Conn::Tls(stream) => {
                    read_tls(stream, deadline, &mut reader, http, capture.as_deref_mut()).await
                }
            };
            match read {
                Err(Failure::Stale) if measured.size_in == 0 && reused => {
                    return Err(Failure::Stale)
                }
                Err(Failure::Stale) => {
                    // The end of the stream: fine for a reply that runs to the close.
                    self.conn = None;
                    if !http {
                        return Ok(0);
                    }
                    return reader
                        .finish_at_eof()
                        .map(|reply| reply.status)
                        .map_err(|_| Failure::Net(NetCode::PROTOCOL));
                }
                Err(failure) => return Err(failure),
                Ok(Chunk { bytes, done }) => {
                    if bytes > 0 && marks.first_byte.is_none() {
                        marks.first_byte = Some(micros(start, Instant::now()));
                    }
                    measured.size_in += bytes as u64;
                    match done {
                        None => continue,
                        Some(Err(_)) => return Err(Failure::Net(NetCode::PROTOCOL)),
                        Some(Ok((status, keep))) => {
                            if !keep {
                                self.conn = None;
                            }
                            return Ok(status);
                        }
                    }
                }
            }
        }
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
) -> Result<Chunk, Failure> {
    // poll_read, not readable() + try_read: a read shorter than the buffer
    // drains the socket, and poll_read then forgets the readiness, so the next
    // reply is awaited without a read that could only fail with EAGAIN.
    let read = std::future::poll_fn(|cx| {
        READ_BUFFER.with_borrow_mut(|buffer| {
            let mut filled = ReadBuf::new(buffer);
            match Pin::new(&mut *stream).poll_read(cx, &mut filled) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(error)) => Poll::Ready(Err(Failure::Net(netcode::of_io(&error)))),
                Poll::Ready(Ok(())) if filled.filled().is_empty() => {
                    Poll::Ready(Err(Failure::Stale))
                }
                Poll::Ready(Ok(())) => Poll::Ready(Ok(take(
                    reader,
                    http,
                    filled.filled(),
                    capture.as_deref_mut(),
                ))),
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
) -> Result<Chunk, Failure> {
    let mut buffer = [0u8; 4096];
    match timeout_at(deadline, stream.read(&mut buffer)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Ok(0)) => Err(Failure::Stale),
        Ok(Ok(n)) => Ok(take(reader, http, &buffer[..n], capture)),
        // A peer that closes without close_notify ends the stream all the same.
        Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => Err(Failure::Stale),
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
}
