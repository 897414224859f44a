//! A hostile HTTP/2 server (h2c, the h2 crate's server side) on a free
//! loopback port, run on a thread of its own until dropped. What it does to
//! a stream depends on the request's path:
//! - `/ok`: 200 with a 2-byte body;
//! - `/refuse`: RST_STREAM(REFUSED_STREAM);
//! - `/reset`: RST_STREAM(INTERNAL_ERROR);
//! - `/drop`: closes the connection, without GOAWAY, its streams in flight;
//! - `/stall`: never reads the request's body (its flow-control window stays
//!   shut) and never answers;
//! - `/head`: answers a 200 head and one byte of body, and never ends the
//!   stream (counted in [`H2Server::heads`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use tokio::sync::oneshot;

/// The running server.
pub struct H2Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `/head` streams answered so far.
    heads: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl H2Server {
    /// Start one.
    pub fn start() -> H2Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let heads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&heads);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let accept = async {
                    while let Ok((socket, _)) = listener.accept().await {
                        tokio::spawn(serve(socket, Arc::clone(&counted)));
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        H2Server {
            addr,
            heads,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `/head` streams answered so far (their head and first byte sent).
    pub fn heads(&self) -> usize {
        self.heads.load(Ordering::SeqCst)
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(socket: tokio::net::TcpStream, heads: Arc<AtomicUsize>) {
    // A second handle on the socket, for `/drop`: the close must be a FIN,
    // never a reset, whatever the client sent last (a SETTINGS ACK not yet
    // read when the socket closes would make the kernel reset it).
    let Ok(socket) = socket.into_std() else {
        return;
    };
    let Ok(spare) = socket.try_clone() else {
        return;
    };
    let (Ok(socket), Ok(spare)) = (
        tokio::net::TcpStream::from_std(socket),
        tokio::net::TcpStream::from_std(spare),
    ) else {
        return;
    };
    let Ok(mut connection) = h2::server::handshake(socket).await else {
        return;
    };
    let (drop_tx, mut drop_rx) = tokio::sync::mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            accepted = connection.accept() => accepted,
            // Drop the connection (no GOAWAY), close the socket's sending
            // side, and read what comes until the client closes too.
            _ = drop_rx.recv() => {
                drop(connection);
                close_cleanly(spare).await;
                return;
            }
        };
        let Some(Ok((request, mut respond))) = accepted else {
            return;
        };
        let drop_tx = drop_tx.clone();
        let heads = Arc::clone(&heads);
        tokio::spawn(async move {
            match request.uri().path() {
                "/refuse" => respond.send_reset(h2::Reason::REFUSED_STREAM),
                "/reset" => respond.send_reset(h2::Reason::INTERNAL_ERROR),
                "/drop" => {
                    // The stream is held (dropping it would reset it) while
                    // the connection goes.
                    let _held = respond;
                    let _ = drop_tx.send(()).await;
                    std::future::pending::<()>().await;
                }
                "/head" => {
                    let response = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut body) = respond.send_response(response, false) {
                        if body.send_data(Bytes::from_static(b"h"), false).is_ok() {
                            heads.fetch_add(1, Ordering::SeqCst);
                        }
                        // Held open (dropping it would reset the stream).
                        let _held = body;
                        std::future::pending::<()>().await;
                    }
                }
                "/stall" => {
                    // Holds the request (and its body's window) until the connection ends.
                    let _body = request.into_body();
                    std::future::pending::<()>().await;
                }
                _ => {
                    let response = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut body) = respond.send_response(response, false) {
                        let _ = body.send_data(Bytes::from_static(b"ok"), true);
                    }
                }
            }
        });
    }
}

/// Send FIN on `socket` and read until the client closes (or 10 s pass), so
/// that nothing is left unread when it closes.
async fn close_cleanly(mut socket: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = socket.shutdown().await;
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = socket.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), drain).await;
}
