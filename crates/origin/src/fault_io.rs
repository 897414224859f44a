//! The connection wrapper that lets a request's fault reach the socket.
//!
//! hyper owns a connection's socket while it serves it, and a service can
//! only answer or fail. A fault stage records what it wants in the
//! connection's [`FaultSlot`] and then fails; hyper drops the connection
//! without writing anything, and this wrapper, on drop, does the rest:
//! a zero linger for `reset` (the kernel sends RST instead of FIN), a line
//! that is not HTTP for `malformed`. `close` needs nothing: the drop closes.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::stage::Fault;

/// What a `malformed` stage sends: no HTTP parser accepts this status line.
pub(crate) const MALFORMED: &[u8] = b"HTTP/1.1 ??? this is not a status line\r\n\r\n";

const NONE: u8 = 0;
const RESET: u8 = 1;
const CLOSE: u8 = 2;
const MALFORMED_CODE: u8 = 3;

/// The fault a connection should end with, shared by its service and its socket wrapper.
#[derive(Debug, Default)]
pub(crate) struct FaultSlot(AtomicU8);

impl FaultSlot {
    /// Records that the connection must end with `fault` (`reset`, `close` or
    /// `malformed`; other faults are played by the response itself).
    pub fn set(&self, fault: Fault) {
        let code = match fault {
            Fault::Reset => RESET,
            Fault::Close => CLOSE,
            Fault::Malformed => MALFORMED_CODE,
            Fault::Trickle { .. } | Fault::Stall => NONE,
        };
        self.0.store(code, Ordering::Release);
    }

    fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
}

/// A TCP connection that plays its [`FaultSlot`]'s fault when dropped.
#[derive(Debug)]
pub(crate) struct FaultIo {
    stream: TcpStream,
    slot: Arc<FaultSlot>,
}

impl FaultIo {
    pub fn new(stream: TcpStream, slot: Arc<FaultSlot>) -> FaultIo {
        FaultIo { stream, slot }
    }
}

impl Drop for FaultIo {
    fn drop(&mut self) {
        match self.slot.get() {
            RESET => {
                // Best effort: if the option cannot be set the close is a plain FIN.
                let _ = SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
            }
            MALFORMED_CODE => {
                // A fresh socket's send buffer takes these few bytes at once.
                let _ = self.stream.try_write(MALFORMED);
            }
            _ => {}
        }
    }
}

impl AsyncRead for FaultIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.slot.get() != NONE {
            // The fault is played on drop; a FIN now would spoil a reset.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
