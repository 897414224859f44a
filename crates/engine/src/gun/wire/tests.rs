//! The barrel against loopback servers: retries, refused reconnects, kept status.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

fn barrel(addr: SocketAddr, limits: Limits) -> WireBarrel {
    let target = Target {
        addr,
        host: "127.0.0.1".into(),
    };
    Arc::new(WireGun::new(
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
            WireGun::new(
                target,
                None,
                Protocol::Memcached,
                Duration::from_millis(300),
                Vec::new(),
            )
            .with_depth(2),
        );
        let (mut first, mut second) = (gun.pipelined(0, 0, 0), gun.pipelined(1, 0, 1));
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

#[test]
fn pipelined_requests_queued_together_go_out_in_one_write_and_land_each_in_its_slot() {
    block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Answers the first request (which opened the connection); then one
        // read: what one write of the gun put on the wire. Each key's reply
        // has its own code and size, in one write back.
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buffer = vec![0; 64 * 1024];
            let read = stream.read(&mut buffer).await.unwrap();
            assert_eq!(&buffer[..read], b"get a\r\n");
            stream.write_all(b"END\r\n").await.unwrap();
            let read = stream.read(&mut buffer).await.unwrap();
            let first = String::from_utf8_lossy(&buffer[..read]).into_owned();
            stream
                .write_all(
                    b"VALUE a 0 1\r\nx\r\nEND\r\nEND\r\nSTORED\r\nVALUE d 0 2\r\nyy\r\nEND\r\n",
                )
                .await
                .unwrap();
            first
        });
        let target = Target {
            addr,
            host: "127.0.0.1".into(),
        };
        let gun = Arc::new(
            WireGun::new(
                target,
                None,
                Protocol::Memcached,
                Duration::from_secs(5),
                Vec::new(),
            )
            .with_depth(4),
        );
        let mut barrels: Vec<WireBarrel> = (0..4).map(|i| gun.pipelined(i, 0, i)).collect();
        let opened = barrels[0].fire(b"get a\r\n", Instant::now(), None).await;
        assert_eq!((opened.net_code, opened.proto_code), (NetCode::OK, 404));
        // The connection open, all four queue before the connection's task runs.
        let requests: [&[u8]; 4] = [
            b"get a\r\n",
            b"get b\r\n",
            b"set c 0 0 1\r\nz\r\n",
            b"get d\r\n",
        ];
        let start = Instant::now();
        let [a, b, c, d] = &mut barrels[..] else {
            unreachable!()
        };
        let landed = tokio::join!(
            a.fire(requests[0], start, None),
            b.fire(requests[1], start, None),
            c.fire(requests[2], start, None),
            d.fire(requests[3], start, None),
        );
        assert_eq!(server.await.unwrap().as_bytes(), requests.concat());
        let rows = [landed.0, landed.1, landed.2, landed.3];
        let codes: Vec<_> = rows
            .iter()
            .map(|m| (m.net_code, m.proto_code, m.size_in))
            .collect();
        assert_eq!(
            codes,
            [
                (NetCode::OK, 200, 21),
                (NetCode::OK, 404, 5),
                (NetCode::OK, 200, 8),
                (NetCode::OK, 200, 22),
            ]
        );
        for (row, request) in rows.iter().zip(requests) {
            assert_eq!(row.size_out, request.len() as u64);
            assert_eq!(
                row.connect_us + row.send_us + row.latency_us + row.receive_us,
                row.interval_real_us
            );
        }
    });
}

#[test]
fn framed_tcp_replies_keep_the_connection_for_the_next_request() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        // Answers each NUL-ended message with `ok:<message>\0`.
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut message = Vec::new();
                let mut byte = [0u8; 1];
                while let Ok(1) = stream.read(&mut byte).await {
                    if byte[0] != 0 {
                        message.push(byte[0]);
                        continue;
                    }
                    let mut reply = b"ok:".to_vec();
                    reply.append(&mut message);
                    reply.push(0);
                    let _ = stream.write_all(&reply).await;
                }
            }
        });
        let target = Target {
            addr,
            host: "127.0.0.1".into(),
        };
        let framing = tcp::Framing::of(&tank_config::ReplyFraming::Delimiter(vec![0]), 8 << 20);
        let mut barrel = Arc::new(WireGun::new(
            target,
            None,
            Protocol::Tcp(framing),
            Duration::from_secs(5),
            Vec::new(),
        ))
        .instance(0);
        for message in [&b"{\"count\":1}\0"[..], b"{\"count\":2}\0"] {
            let shot = barrel.fire(message, Instant::now(), None).await;
            assert_eq!(
                (shot.net_code, shot.size_in),
                (NetCode::OK, message.len() as u64 + 3)
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    });
}
