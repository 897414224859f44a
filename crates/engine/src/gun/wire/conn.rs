//! A gun's connection, whatever the protocol: TCP or TLS over TCP, opened
//! from an optional source address, written whole, and read into one
//! per-thread buffer. Every wait is bounded by the shot's deadline.

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::Poll;

use tank_stats::NetCode;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{timeout_at, Instant};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::netcode;
use crate::target::Target;
use crate::tls;

/// An open connection.
pub(crate) enum Conn {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

thread_local! {
    /// Reads land here and are parsed at once, so an instance waiting for a
    /// slow reply holds no buffer of its own, over TCP and TLS alike.
    pub(super) static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; 64 * 1024]);
}

/// Why writing a request stopped short.
pub(super) enum WriteError {
    /// The budget ran out.
    Timeout,
    /// The socket failed after `written` bytes.
    Net { code: NetCode, written: usize },
}

/// Open a connection to `target` (from `source`, when set), with TLS when
/// `tls` is set; `request` names the TLS server (its Host header).
pub(crate) async fn connect(
    target: &Target,
    source: Option<IpAddr>,
    tls: Option<&TlsConnector>,
    request: &[u8],
) -> Result<Conn, NetCode> {
    let addr = target.addr;
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .map_err(|e| netcode::of_io(&e))?;
    if let Some(source) = source {
        socket
            .bind(SocketAddr::new(source, 0))
            .map_err(|e| netcode::of_io(&e))?;
    }
    let stream = socket.connect(addr).await.map_err(|e| netcode::of_io(&e))?;
    // Requests go out whole and at once; Nagle would only delay them.
    stream.set_nodelay(true).map_err(|e| netcode::of_io(&e))?;
    match tls {
        None => Ok(Conn::Tcp(stream)),
        Some(connector) => {
            let name = tls::server_name(request, &target.host).map_err(|_| NetCode::PROTOCOL)?;
            let stream = connector
                .connect(name, stream)
                .await
                .map_err(|e| netcode::of_io(&e))?;
            Ok(Conn::Tls(Box::new(stream)))
        }
    }
}

impl Conn {
    /// Write `request` whole by `deadline`; `sent` learns each byte count as
    /// it grows (so a failure still says how much went out).
    pub(super) async fn write_all(
        &mut self,
        request: &[u8],
        deadline: Instant,
        sent: &mut u64,
    ) -> Result<(), WriteError> {
        let mut written = 0;
        while written < request.len() {
            let step = match self {
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
                Err(_) => return Err(WriteError::Timeout),
                Ok(Err(error)) => {
                    return Err(WriteError::Net {
                        code: netcode::of_io(&error),
                        written,
                    })
                }
                Ok(Ok(0)) => {
                    return Err(WriteError::Net {
                        code: NetCode::BROKEN_PIPE,
                        written,
                    })
                }
                Ok(Ok(n)) => {
                    written += n;
                    *sent = written as u64;
                }
            }
        }
        if let Conn::Tls(stream) = self {
            match timeout_at(deadline, stream.flush()).await {
                Err(_) => return Err(WriteError::Timeout),
                Ok(Err(error)) => {
                    return Err(WriteError::Net {
                        code: netcode::of_io(&error),
                        written,
                    })
                }
                Ok(Ok(())) => {}
            }
        }
        Ok(())
    }

    /// Read what has arrived into the thread's buffer and hand it to `take`;
    /// `Ok(None)` at the end of the stream, `Err(None)` when `deadline` passed.
    pub(super) async fn read<T>(
        &mut self,
        deadline: Instant,
        take: impl FnMut(&[u8]) -> T,
    ) -> Result<Option<T>, Option<NetCode>> {
        match self {
            Conn::Tcp(stream) => read_into(stream, deadline, take, false).await,
            Conn::Tls(stream) => read_into(&mut **stream, deadline, take, true).await,
        }
    }
}

/// The connection as a byte stream, for a protocol library that does its
/// own framing (HTTP/2's h2).
impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            Conn::Tls(stream) => Pin::new(&mut **stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(stream) => Pin::new(stream).poll_write(cx, buf),
            Conn::Tls(stream) => Pin::new(&mut **stream).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Conn::Tls(stream) => Pin::new(&mut **stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Tcp(stream) => stream.is_write_vectored(),
            Conn::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(stream) => Pin::new(stream).poll_flush(cx),
            Conn::Tls(stream) => Pin::new(&mut **stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(stream) => Pin::new(stream).poll_shutdown(cx),
            Conn::Tls(stream) => Pin::new(&mut **stream).poll_shutdown(cx),
        }
    }
}

/// poll_read, not readable() + try_read: a read shorter than the buffer drains
/// the socket, and poll_read then forgets the readiness, so the next reply is
/// awaited without a read that could only fail with EAGAIN.
async fn read_into<S: AsyncRead + Unpin, T>(
    stream: &mut S,
    deadline: Instant,
    mut take: impl FnMut(&[u8]) -> T,
    tls: bool,
) -> Result<Option<T>, Option<NetCode>> {
    let read = std::future::poll_fn(|cx| {
        READ_BUFFER.with_borrow_mut(|buffer| {
            let mut filled = ReadBuf::new(buffer);
            match Pin::new(&mut *stream).poll_read(cx, &mut filled) {
                Poll::Pending => Poll::Pending,
                // A TLS peer that closes without close_notify ends the stream all the same.
                Poll::Ready(Err(error)) if tls && error.kind() == io::ErrorKind::UnexpectedEof => {
                    Poll::Ready(Ok(None))
                }
                Poll::Ready(Err(error)) => Poll::Ready(Err(Some(netcode::of_io(&error)))),
                Poll::Ready(Ok(())) if filled.filled().is_empty() => Poll::Ready(Ok(None)),
                Poll::Ready(Ok(())) => Poll::Ready(Ok(Some(take(filled.filled())))),
            }
        })
    });
    timeout_at(deadline, read).await.unwrap_or(Err(None))
}
