//! A scripted HTTP/1.x target on 127.0.0.1 for the engine's tests: each
//! behaviour is one way a real server answers (or fails to). It records every
//! request it reads, byte for byte, and stops when dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// `HTTP/1.1 200` with a Content-Length body, connection kept.
    KeepAlive,
    /// `HTTP/1.1 200` with `Connection: close`, then close.
    Close,
    /// `HTTP/1.1 200` with a chunked body, connection kept.
    Chunked,
    /// `HTTP/1.0 200` (no keep-alive), then close.
    Http10,
    /// Status from the request path: `/status/503` answers 503.
    StatusFromPath,
    /// Read the request and never answer.
    Silent,
    /// Read the request and reset the connection.
    Reset,
    /// Answer bytes that are not HTTP.
    Garbage,
    /// `HTTP/1.1 200` with a Content-Length body and no `Connection: close`;
    /// then the connection's next request is read (and recorded) and the
    /// connection closed without a reply, as a server closing idle keep-alive
    /// connections does when a request arrives just then.
    CloseAfterReply,
    /// As [`Behaviour::CloseAfterReply`], but the server also stops listening
    /// before it closes that connection: reconnecting is refused.
    ReplyOnceThenGone,
    /// `HTTP/1.1 200` with a 64 KiB Content-Length body, connection kept.
    LargeBody,
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Start serving `behaviour` on an ephemeral loopback port.
    pub fn start(behaviour: Behaviour) -> Server {
        Self::start_with(behaviour, None)
    }

    /// Start serving `behaviour` over TLS with `tls` (a rustls server config).
    pub fn start_with(behaviour: Behaviour, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, requests) = (Arc::clone(&stop), Arc::clone(&requests));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (stop, requests, tls) =
                                (Arc::clone(&stop), Arc::clone(&requests), tls.clone());
                            std::thread::spawn(move || {
                                let _ = stream.set_nonblocking(false);
                                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                                match tls {
                                    None => serve(stream, behaviour, &stop, &requests),
                                    Some(config) => {
                                        let Ok(connection) = rustls::ServerConnection::new(config)
                                        else {
                                            return;
                                        };
                                        let mut tls = rustls::StreamOwned::new(connection, stream);
                                        serve_stream(&mut tls, behaviour, &stop, &requests);
                                    }
                                }
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(2))
                        }
                        Err(_) => break,
                    }
                }
            })
        };
        Server {
            addr,
            stop,
            requests,
            accept: Some(accept),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request read so far, in arrival order.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    behaviour: Behaviour,
    stop: &AtomicBool,
    requests: &Mutex<Vec<Vec<u8>>>,
) {
    if behaviour == Behaviour::Reset {
        // Linger 0: closing sends RST instead of FIN.
        let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    }
    serve_stream(&mut stream, behaviour, stop, requests);
    if behaviour == Behaviour::ReplyOnceThenGone {
        stop_listening(&stream, stop);
    }
    if behaviour != Behaviour::Reset {
        // A reset must not send FIN first: dropping the stream with linger 0 sends RST alone.
        let _ = stream.shutdown(Shutdown::Both);
    }
}

fn serve_stream(
    stream: &mut (impl Read + Write),
    behaviour: Behaviour,
    stop: &AtomicBool,
    requests: &Mutex<Vec<Vec<u8>>>,
) {
    let mut pending = Vec::new();
    let mut answered = 0;
    while !stop.load(Ordering::Acquire) {
        let Some(request) = read_request(stream, &mut pending, stop) else {
            return;
        };
        let path = request
            .split(|b| *b == b' ')
            .nth(1)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default();
        if let Ok(mut all) = requests.lock() {
            all.push(request);
        }
        let reply: Vec<u8> = match behaviour {
            Behaviour::KeepAlive => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            Behaviour::Close => b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            Behaviour::Chunked => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".to_vec(),
            Behaviour::Http10 => b"HTTP/1.0 200 OK\r\n\r\nuntil close".to_vec(),
            Behaviour::StatusFromPath => {
                let status = path.strip_prefix("/status/").and_then(|s| s.parse::<u16>().ok()).unwrap_or(200);
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n").into_bytes()
            }
            Behaviour::Silent => {
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Behaviour::Reset => return,
            Behaviour::Garbage => b"THIS IS NOT HTTP\r\n\r\n".to_vec(),
            Behaviour::CloseAfterReply | Behaviour::ReplyOnceThenGone if answered > 0 => return,
            Behaviour::CloseAfterReply | Behaviour::ReplyOnceThenGone => {
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec()
            }
            Behaviour::LargeBody => {
                let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n".to_vec();
                reply.resize(reply.len() + 65536, b'z');
                reply
            }
        };
        if stream
            .write_all(&reply)
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
        answered += 1;
        if matches!(
            behaviour,
            Behaviour::Close | Behaviour::Http10 | Behaviour::Garbage
        ) {
            return;
        }
    }
}

/// One request: its head up to the blank line, plus a Content-Length body.
fn read_request(
    stream: &mut impl Read,
    pending: &mut Vec<u8>,
    stop: &AtomicBool,
) -> Option<Vec<u8>> {
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(head_end) = pending
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|p| p + 4)
        {
            let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
            let body = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .and_then(|v| v.trim().parse::<usize>().ok())
                })
                .unwrap_or(0);
            if pending.len() >= head_end + body {
                return Some(pending.drain(..head_end + body).collect());
            }
        }
        match stream.read(&mut buffer) {
            Ok(0) => return None,
            Ok(n) => pending.extend_from_slice(&buffer[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if stop.load(Ordering::Acquire) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

/// Stop the server accepting (which ends every connection's loop too) and
/// wait, at most 10 s, until connecting to it is refused.
fn stop_listening(stream: &TcpStream, stop: &AtomicBool) {
    stop.store(true, Ordering::Release);
    let Ok(addr) = stream.local_addr() else {
        return;
    };
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < until {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}
