//! The connection against a scripted server on an in-memory pipe: each
//! test writes the server's frames byte by byte and reads the client's.
//! (tests/http2.rs and tests/grpc.rs shoot real servers: nginx, grpcio.)

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;
use crate::frame::{error, flag, kind, Head};
use crate::hpack::encode_field;

const CONFIG: Config = Config {
    stream_window: 1 << 20,
    connection_window: 16 << 20,
    max_header_list: 16 << 10,
    max_body: 1 << 20,
    prior_knowledge: true,
};

/// The server's end of the pipe.
struct Peer {
    io: DuplexStream,
}

impl Peer {
    /// The server's side of a connection just started: the preface read.
    async fn accept(mut io: DuplexStream) -> Peer {
        let mut preface = [0u8; 24];
        io.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface[..], frame::PREFACE);
        Peer { io }
    }

    async fn frame(&mut self) -> (Head, Vec<u8>) {
        let mut head = [0u8; frame::HEAD];
        self.io.read_exact(&mut head).await.unwrap();
        let head = Head::read(&head);
        let mut payload = vec![0; head.len];
        self.io.read_exact(&mut payload).await.unwrap();
        (head, payload)
    }

    /// The client's next frame that is not about the connection as a whole
    /// (SETTINGS, its ACK, WINDOW_UPDATE of stream 0).
    async fn stream_frame(&mut self) -> (Head, Vec<u8>) {
        loop {
            let (head, payload) = self.frame().await;
            if head.stream != 0 {
                return (head, payload);
            }
        }
    }

    async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut bytes = Vec::new();
        frame::put_head(&mut bytes, payload.len(), kind, flags, stream);
        bytes.extend_from_slice(payload);
        self.io.write_all(&bytes).await.unwrap();
    }

    /// A reply head: `status` and `fields`, in one HEADERS frame.
    async fn head(&mut self, stream: u32, status: &[u8], fields: &[(&[u8], &[u8])], end: bool) {
        let mut block = Vec::new();
        encode_field(&mut block, b":status", status);
        for (name, value) in fields {
            encode_field(&mut block, name, value);
        }
        let flags = flag::END_HEADERS | if end { flag::END_STREAM } else { 0 };
        self.send(kind::HEADERS, flags, stream, &block).await;
    }
}

/// `GET /` as a block.
fn get() -> Request {
    let mut block = Vec::new();
    for (name, value) in [
        (&b":method"[..], &b"GET"[..]),
        (b":scheme", b"http"),
        (b":authority", b"t"),
        (b":path", b"/"),
    ] {
        encode_field(&mut block, name, value);
    }
    Request {
        block: Bytes::from(block),
        body: Bytes::new(),
        head: false,
    }
}

fn post(len: usize) -> Request {
    Request {
        body: Bytes::from(vec![b'x'; len]),
        ..get()
    }
}

async fn connect(config: Config) -> (Connection, Peer) {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (connection, driver) = start(client, config);
    tokio::spawn(driver);
    (connection, Peer::accept(server).await)
}

fn open(connection: &Connection, request: &Request) -> Stream {
    connection.open(request, &mut Collect::Nothing).unwrap()
}

/// Let the driver run until `done` holds (a bounded number of turns).
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the condition never held");
}

#[tokio::test]
async fn a_stream_counts_its_frames_and_marks_its_moments() {
    let (connection, mut peer) = connect(CONFIG).await;
    let request = get();
    let mut stream = open(&connection, &request);
    let (head, block) = peer.stream_frame().await;
    assert_eq!(head.kind, kind::HEADERS);
    assert_eq!(head.stream, 1);
    assert_eq!(head.flags, flag::END_HEADERS | flag::END_STREAM);
    assert_eq!(block, &request.block[..]);
    peer.send(kind::SETTINGS, 0, 0, &[]).await;
    peer.head(1, b"200", &[], false).await;
    peer.send(kind::DATA, flag::END_STREAM, 1, b"hello").await;
    assert_eq!(stream.end().await, Ok(()));
    let reply = stream.finish();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.result, Some(Ok(())));
    assert_eq!(reply.record.out, 9 + request.block.len() as u64);
    // HEADERS of one byte (:status 200 is static index 8), DATA of five.
    assert_eq!(reply.record.input, 10 + 14);
    let record = reply.record;
    assert!(record.sent.is_some() && record.head.is_some() && record.end.is_some());
    assert!(record.sent <= record.head && record.head <= record.end);
    // The client acknowledged the server's SETTINGS.
    loop {
        let (head, _) = peer.frame().await;
        if head.kind == kind::SETTINGS && head.flags == flag::ACK {
            break;
        }
    }
}

#[tokio::test]
async fn streams_beyond_the_servers_limit_wait_for_a_slot() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut limit = Vec::new();
    limit.extend_from_slice(&setting::MAX_CONCURRENT_STREAMS.to_be_bytes());
    limit.extend_from_slice(&1u32.to_be_bytes());
    peer.send(kind::SETTINGS, 0, 0, &limit).await;
    until(|| connection.max_streams() == 1).await;
    let request = get();
    let mut first = open(&connection, &request);
    let mut second = open(&connection, &request);
    assert_eq!(peer.stream_frame().await.0.stream, 1);
    // Stream 3 leaves only when stream 1 ended: a PING answered first
    // shows nothing else was sent meanwhile.
    peer.send(kind::PING, 0, 0, &[7; 8]).await;
    let (pong, _) = peer.frame().await;
    assert!(
        pong.kind == kind::PING || pong.kind == kind::SETTINGS,
        "{pong:?}"
    );
    peer.head(1, b"204", &[], true).await;
    assert_eq!(first.end().await, Ok(()));
    assert_eq!(peer.stream_frame().await.0.stream, 3);
    peer.head(3, b"204", &[], true).await;
    assert_eq!(second.end().await, Ok(()));
    // The second stream's wait was before its request left.
    let (a, b) = (first.finish(), second.finish());
    assert!(a.record.end <= b.record.sent);
}

#[tokio::test]
async fn goaway_ends_the_streams_above_its_last_and_refuses_new_ones() {
    let (connection, mut peer) = connect(CONFIG).await;
    let request = get();
    let mut kept = open(&connection, &request);
    let mut dropped = open(&connection, &request);
    assert_eq!(peer.stream_frame().await.0.stream, 1);
    assert_eq!(peer.stream_frame().await.0.stream, 3);
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&error::NO_ERROR.to_be_bytes());
    peer.send(kind::GOAWAY, 0, 0, &goaway).await;
    assert_eq!(dropped.end().await, Err(Failure::Closed(Closed::GoAway(0))));
    assert!(connection.is_unusable());
    assert!(matches!(
        connection.open(&request, &mut Collect::Nothing),
        Err(Closed::GoAway(0))
    ));
    peer.head(1, b"200", &[], true).await;
    assert_eq!(kept.end().await, Ok(()));
}

#[tokio::test]
async fn a_stream_the_goaway_kept_but_the_close_cut_is_lost_not_refused() {
    let (connection, mut peer) = connect(CONFIG).await;
    peer.send(kind::SETTINGS, 0, 0, &[]).await;
    let request = get();
    let mut kept = open(&connection, &request);
    let mut refused = open(&connection, &request);
    assert_eq!(peer.stream_frame().await.0.stream, 1);
    assert_eq!(peer.stream_frame().await.0.stream, 3);
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&error::NO_ERROR.to_be_bytes());
    peer.send(kind::GOAWAY, 0, 0, &goaway).await;
    // Above its last stream id: not processed.
    assert_eq!(refused.end().await, Err(Failure::Closed(Closed::GoAway(0))));
    // At or below it, and then the close: it may have been processed.
    drop(peer);
    assert_eq!(kept.end().await, Err(Failure::Closed(Closed::Lost)));
}

#[tokio::test]
async fn a_reset_ends_its_stream_with_the_servers_reason() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut stream = open(&connection, &get());
    peer.stream_frame().await;
    peer.send(kind::RST_STREAM, 0, 1, &7u32.to_be_bytes()).await;
    assert_eq!(stream.end().await, Err(Failure::Reset(7)));
    let reply = stream.finish();
    assert_eq!(reply.record.input, 13);
    assert!(reply.record.end.is_some());
}

#[tokio::test]
async fn a_body_goes_as_the_windows_allow() {
    let (connection, mut peer) = connect(CONFIG).await;
    let request = post(100_000);
    let mut stream = open(&connection, &request);
    let (head, _) = peer.stream_frame().await;
    assert_eq!((head.kind, head.flags), (kind::HEADERS, flag::END_HEADERS));
    // The default windows: 65,535 bytes, in frames of at most 16 KiB.
    let mut got = 0;
    while got < 65_535 {
        let (head, payload) = peer.stream_frame().await;
        assert_eq!(head.kind, kind::DATA);
        assert!(payload.len() <= frame::DEFAULT_MAX_FRAME);
        assert_eq!(head.flags & flag::END_STREAM, 0);
        got += payload.len();
    }
    assert_eq!(got, 65_535);
    // Nothing more until the windows open: a PING's answer comes next.
    peer.send(kind::PING, 0, 0, &[1; 8]).await;
    let (pong, _) = peer.frame().await;
    assert_eq!((pong.kind, pong.flags), (kind::PING, flag::ACK));
    for stream in [0, 1] {
        peer.send(kind::WINDOW_UPDATE, 0, stream, &100_000u32.to_be_bytes())
            .await;
    }
    while got < 100_000 {
        let (head, payload) = peer.stream_frame().await;
        got += payload.len();
        assert_eq!(head.flags & flag::END_STREAM != 0, got == 100_000);
    }
    peer.head(1, b"200", &[], true).await;
    assert_eq!(stream.end().await, Ok(()));
    let reply = stream.finish();
    // HEADERS, 7 DATA frames (4 + 3), and the body.
    let frames = 1 + 4 + 3;
    assert_eq!(
        reply.record.out,
        9 * frames + request.block.len() as u64 + 100_000
    );
}

#[tokio::test]
async fn a_kept_reply_reads_as_http1_text_with_its_trailers() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut collect = Collect::Text(Vec::with_capacity(1024));
    let mut stream = connection.open(&get(), &mut collect).unwrap();
    peer.stream_frame().await;
    peer.head(
        1,
        b"200",
        &[(b"server", b"x"), (b"content-type", b"application/grpc")],
        false,
    )
    .await;
    peer.send(kind::DATA, 0, 1, b"body").await;
    let mut trailers = Vec::new();
    encode_field(&mut trailers, b"grpc-status", b"0");
    encode_field(&mut trailers, b"grpc-message", b"fine");
    peer.send(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &trailers,
    )
    .await;
    assert_eq!(stream.end().await, Ok(()));
    let reply = stream.finish();
    let Collect::Text(text) = reply.collect else {
        panic!("the text was not kept");
    };
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "HTTP/2 200\r\nserver: x\r\ncontent-type: application/grpc\r\n\r\nbody\r\n\
         grpc-status: 0\r\ngrpc-message: fine\r\n"
    );
    assert_eq!(reply.grpc_status.as_deref(), Some(&b"0"[..]));
    assert_eq!(reply.grpc_message.as_deref(), Some(&b"fine"[..]));
}

#[tokio::test]
async fn a_body_over_the_limit_is_malformed_and_reset() {
    let config = Config {
        max_body: 10,
        ..CONFIG
    };
    let (connection, mut peer) = connect(config).await;
    let mut stream = open(&connection, &get());
    peer.stream_frame().await;
    peer.head(1, b"200", &[], false).await;
    peer.send(kind::DATA, 0, 1, &[0; 11]).await;
    assert_eq!(
        stream.end().await,
        Err(Failure::Malformed("a body past the entity limit"))
    );
    let (head, code) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream), (kind::RST_STREAM, 1));
    assert_eq!(code, error::CANCEL.to_be_bytes());
    assert_eq!(
        stream.finish().record.out,
        9 + get().block.len() as u64 + 13
    );
}

#[tokio::test]
async fn a_closed_socket_ends_sent_streams_as_lost_and_waiting_ones_as_not_sent() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut limit = setting::MAX_CONCURRENT_STREAMS.to_be_bytes().to_vec();
    limit.extend_from_slice(&1u32.to_be_bytes());
    peer.send(kind::SETTINGS, 0, 0, &limit).await;
    until(|| connection.max_streams() == 1).await;
    let mut sent = open(&connection, &get());
    let mut waiting = open(&connection, &get());
    peer.stream_frame().await;
    drop(peer);
    assert_eq!(sent.end().await, Err(Failure::Closed(Closed::Lost)));
    assert_eq!(waiting.end().await, Err(Failure::NotSent(Closed::Lost)));
    until(|| connection.is_unusable()).await;
}

#[tokio::test]
async fn an_http1_reply_or_a_close_before_settings_says_the_server_does_not_speak_http2() {
    // An HTTP/1 server answers the preface as a bad request (nginx: 400).
    let (connection, mut peer) = connect(CONFIG).await;
    let mut collect = Collect::Text(Vec::with_capacity(256));
    let mut stream = connection.open(&get(), &mut collect).unwrap();
    let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    peer.io.write_all(answer).await.unwrap();
    let ended = stream.end().await;
    assert!(
        matches!(
            ended,
            Err(Failure::Closed(Closed::NotHttp2) | Failure::NotSent(Closed::NotHttp2))
        ),
        "{ended:?}"
    );
    // The answer is the stream's: counted, timed and kept for the answers log.
    let reply = stream.finish();
    assert_eq!(reply.record.input, answer.len() as u64);
    assert!(reply.record.head.is_some());
    let Collect::Text(text) = reply.collect else {
        panic!("the text was not kept");
    };
    assert_eq!(text, answer);
    until(|| connection.is_unusable()).await;
    // Another closes it without a word.
    let (connection, peer) = connect(CONFIG).await;
    let mut stream = open(&connection, &get());
    drop(peer);
    let ended = stream.end().await;
    assert!(
        matches!(
            ended,
            Err(Failure::Closed(Closed::NotHttp2) | Failure::NotSent(Closed::NotHttp2))
        ),
        "{ended:?}"
    );
    // Over TLS, ALPN said h2: such a close is a connection lost, not HTTP/1.
    let (connection, peer) = connect(Config {
        prior_knowledge: false,
        ..CONFIG
    })
    .await;
    let mut stream = open(&connection, &get());
    drop(peer);
    let ended = stream.end().await;
    assert!(
        matches!(
            ended,
            Err(Failure::Closed(Closed::Lost) | Failure::NotSent(Closed::Lost))
        ),
        "{ended:?}"
    );
}

#[tokio::test]
async fn a_stream_given_up_is_reset_with_cancel() {
    let (connection, mut peer) = connect(CONFIG).await;
    let stream = open(&connection, &get());
    peer.stream_frame().await;
    let reply = stream.finish();
    assert_eq!(reply.result, None);
    let (head, code) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream), (kind::RST_STREAM, 1));
    assert_eq!(code, error::CANCEL.to_be_bytes());
    // Its late reply is read past (the table stays in step) and ignored.
    peer.head(1, b"200", &[], true).await;
    let mut next = open(&connection, &get());
    assert_eq!(peer.stream_frame().await.0.stream, 3);
    peer.head(3, b"404", &[], true).await;
    assert_eq!(next.end().await, Ok(()));
    assert_eq!(next.finish().status, 404);
}

#[tokio::test]
async fn a_head_in_continuations_feeds_the_dynamic_table() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut collect = Collect::Text(Vec::with_capacity(256));
    let mut first = connection.open(&get(), &mut collect).unwrap();
    peer.stream_frame().await;
    // :status 200, then `x-id: 42` with incremental indexing (0x40).
    let block = [&[0x88, 0x40, 4][..], b"x-id", &[2], b"42"].concat();
    // END_STREAM is HEADERS' flag; CONTINUATION carries END_HEADERS only.
    peer.send(kind::HEADERS, flag::END_STREAM, 1, &block[..3])
        .await;
    peer.send(kind::CONTINUATION, flag::END_HEADERS, 1, &block[3..])
        .await;
    assert_eq!(first.end().await, Ok(()));
    let reply = first.finish();
    assert_eq!(reply.record.input, 9 + 3 + 9 + (block.len() as u64 - 3));
    let mut collect = Collect::Text(Vec::with_capacity(256));
    let mut second = connection.open(&get(), &mut collect).unwrap();
    peer.stream_frame().await;
    // Index 62: the newest entry of the dynamic table.
    peer.send(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &[0x88, 0xbe],
    )
    .await;
    assert_eq!(second.end().await, Ok(()));
    let Collect::Text(text) = second.finish().collect else {
        panic!("the text was not kept");
    };
    assert_eq!(text, b"HTTP/2 200\r\nx-id: 42\r\n\r\n");
}

#[tokio::test]
async fn a_body_short_of_its_content_length_is_malformed() {
    let (connection, mut peer) = connect(CONFIG).await;
    peer.send(kind::SETTINGS, 0, 0, &[]).await;
    let mut cut = open(&connection, &get());
    let mut whole = open(&connection, &get());
    let mut empty = open(&connection, &get());
    peer.stream_frame().await;
    peer.stream_frame().await;
    peer.stream_frame().await;
    peer.head(1, b"200", &[(b"content-length", b"100")], false)
        .await;
    peer.send(kind::DATA, flag::END_STREAM, 1, b"hello").await;
    assert_eq!(
        cut.end().await,
        Err(Failure::Malformed(
            "a body whose length is not its content-length"
        ))
    );
    peer.head(3, b"200", &[(b"content-length", b"5")], false)
        .await;
    peer.send(kind::DATA, flag::END_STREAM, 3, b"hello").await;
    assert_eq!(whole.end().await, Ok(()));
    // No body at all (a HEAD's reply, a 304): its length is the one it stands for.
    peer.head(5, b"304", &[(b"content-length", b"100")], true)
        .await;
    assert_eq!(empty.end().await, Ok(()));
    let head = Request {
        head: true,
        ..get()
    };
    let mut to_head = open(&connection, &head);
    let mut cut_to_nothing = open(&connection, &get());
    peer.stream_frame().await;
    peer.stream_frame().await;
    peer.head(7, b"200", &[(b"content-length", b"100")], true)
        .await;
    assert_eq!(to_head.end().await, Ok(()));
    // A 200 that says 100 bytes and ends at its head was cut to nothing.
    peer.head(9, b"200", &[(b"content-length", b"100")], true)
        .await;
    assert_eq!(
        cut_to_nothing.end().await,
        Err(Failure::Malformed(
            "a body whose length is not its content-length"
        ))
    );
}

#[tokio::test]
async fn a_protocol_error_ends_the_connection_with_goaway() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut stream = open(&connection, &get());
    peer.stream_frame().await;
    // DATA on stream 0 breaks the protocol.
    peer.send(kind::DATA, 0, 0, b"x").await;
    assert_eq!(stream.end().await, Err(Failure::Closed(Closed::Protocol)));
    // What it did is kept, for the run to say.
    assert_eq!(connection.broken(), Some("DATA on stream 0"));
    loop {
        let (head, payload) = peer.frame().await;
        if head.kind == kind::GOAWAY {
            assert_eq!(payload[4..], error::PROTOCOL_ERROR.to_be_bytes());
            break;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever a server sends, the connection ends or goes on: a stream on
    /// it ends once the socket closes, and nothing panics.
    #[test]
    fn any_bytes_from_the_server_end_the_stream_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (connection, mut peer) = connect(CONFIG).await;
            let mut stream = open(&connection, &get());
            peer.stream_frame().await;
            let _ = peer.io.write_all(&bytes).await;
            drop(peer);
            let _ = stream.end().await;
            let reply = stream.finish();
            assert!(reply.result.is_some());
        });
    }
}

/// A reply's frames (HEADERS with `:status 200` and `server: x`, DATA of
/// `body`, trailers with `grpc-status: 0`) for stream 1, as bytes.
fn reply_bytes(body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut block = Vec::new();
    encode_field(&mut block, b":status", b"200");
    encode_field(&mut block, b"server", b"x");
    frame::put_head(&mut bytes, block.len(), kind::HEADERS, flag::END_HEADERS, 1);
    bytes.extend_from_slice(&block);
    for chunk in body.chunks(700) {
        frame::put_head(&mut bytes, chunk.len(), kind::DATA, 0, 1);
        bytes.extend_from_slice(chunk);
    }
    let mut trailers = Vec::new();
    encode_field(&mut trailers, b"grpc-status", b"0");
    let flags = flag::END_HEADERS | flag::END_STREAM;
    frame::put_head(&mut bytes, trailers.len(), kind::HEADERS, flags, 1);
    bytes.extend_from_slice(&trailers);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// However the server's bytes are cut into reads, the reply reads the
    /// same: every frame put back together, every byte counted once.
    #[test]
    fn a_reply_cut_anywhere_reads_whole(
        body in proptest::collection::vec(any::<u8>(), 0..3000),
        cuts in proptest::collection::vec(1usize..400, 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (connection, mut peer) = connect(CONFIG).await;
            let mut collect = Collect::Text(Vec::with_capacity(8192));
            let mut stream = connection.open(&get(), &mut collect).unwrap();
            peer.stream_frame().await;
            let bytes = reply_bytes(&body);
            let mut rest = &bytes[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at((*cut).min(rest.len()));
                peer.io.write_all(now).await.unwrap();
                tokio::task::yield_now().await;
                rest = later;
            }
            assert_eq!(stream.end().await, Ok(()));
            let reply = stream.finish();
            assert_eq!(reply.record.input, bytes.len() as u64);
            assert_eq!(reply.grpc_status.as_deref(), Some(&b"0"[..]));
            let Collect::Text(text) = reply.collect else {
                panic!("the text was not kept");
            };
            let mut expected = b"HTTP/2 200\r\nserver: x\r\n\r\n".to_vec();
            expected.extend_from_slice(&body);
            expected.extend_from_slice(b"\r\ngrpc-status: 0\r\n");
            assert_eq!(text, expected);
        });
    }
}

#[tokio::test]
async fn an_early_reply_cuts_the_request_and_no_more_of_its_body_goes() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut stream = open(&connection, &post(100_000));
    peer.stream_frame().await;
    let mut got = 0;
    while got < 65_535 {
        got += peer.stream_frame().await.1.len();
    }
    // The server answers before the body is all in (413), ending the stream.
    peer.head(1, b"413", &[], true).await;
    assert_eq!(stream.end().await, Ok(()));
    let (head, code) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream), (kind::RST_STREAM, 1));
    assert_eq!(code, error::CANCEL.to_be_bytes());
    let reply = stream.finish();
    assert_eq!((reply.status, reply.record.sent), (413, None));
    // The stream's slot and key go to the next request; windows that open
    // now send nothing more of the first one's body.
    let mut next = open(&connection, &post(10));
    for stream in [0, 1, 3] {
        peer.send(kind::WINDOW_UPDATE, 0, stream, &100_000u32.to_be_bytes())
            .await;
    }
    let (head, _) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream), (kind::HEADERS, 3));
    let (head, body) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream, body.len()), (kind::DATA, 3, 10));
    assert_eq!(head.flags, flag::END_STREAM);
    peer.send(kind::PING, 0, 0, &[2; 8]).await;
    loop {
        let (head, _) = peer.frame().await;
        assert_ne!(head.stream, 1, "{head:?}");
        if head.kind == kind::PING {
            break;
        }
    }
    peer.head(3, b"200", &[], true).await;
    assert_eq!(next.end().await, Ok(()));
}

#[tokio::test]
async fn a_head_that_never_ends_is_refused_before_it_grows_without_bound() {
    let config = Config {
        max_header_list: 1024,
        ..CONFIG
    };
    let (connection, mut peer) = connect(config).await;
    let mut stream = open(&connection, &get());
    peer.stream_frame().await;
    peer.send(kind::HEADERS, 0, 1, &[0x88]).await;
    // 4 × 1 KiB + 16 KiB is the most a head may take encoded: a few frames more end it.
    for _ in 0..3 {
        peer.send(kind::CONTINUATION, 0, 1, &[0; 10_000]).await;
    }
    assert_eq!(stream.end().await, Err(Failure::Closed(Closed::Protocol)));
}

/// Let every task run until none has more to do (time stands still).
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

/// Streams opened whose HEADERS the driver holds back.
fn held(connection: &Connection) -> usize {
    let state = connection.shared.lock();
    if state.out.is_empty() {
        0
    } else {
        state.fresh
    }
}

/// Open `n` streams and read their HEADERS at the server.
async fn open_many(connection: &Connection, peer: &mut Peer, n: usize) -> Vec<Stream> {
    let request = get();
    let streams: Vec<Stream> = (0..n).map(|_| open(connection, &request)).collect();
    for _ in 0..n {
        assert_eq!(peer.stream_frame().await.0.kind, kind::HEADERS);
    }
    streams
}

/// A read the client makes now (a PING it answers): requests are held
/// only after two reads close together, replies streaming in.
async fn ping(peer: &mut Peer) {
    peer.send(kind::PING, 0, 0, &[1; 8]).await;
    loop {
        let (head, _) = peer.frame().await;
        if head.kind == kind::PING {
            assert_eq!(head.flags, flag::ACK);
            return;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn new_requests_wait_for_more_to_go_in_one_write_while_many_are_answered() {
    let (connection, mut peer) = connect(CONFIG).await;
    let start = Instant::now();
    let mut streams = open_many(&connection, &mut peer, 12).await;
    ping(&mut peer).await;
    let request = get();
    // Each reply's stream is followed by a new one, as a closed model's shot
    // does. The server has 11, 10 and 9 streams left to answer: the first
    // two new requests wait (fewer than a third of those), the third
    // sends the three.
    let mut new = Vec::new();
    for (i, id) in [1u32, 3, 5].into_iter().enumerate() {
        peer.head(id, b"204", &[], true).await;
        let mut answered = streams.remove(0);
        assert_eq!(answered.end().await, Ok(()));
        new.push(open(&connection, &request));
        settle().await;
        assert_eq!(held(&connection), if i < 2 { i + 1 } else { 0 });
    }
    for id in [25, 27, 29] {
        assert_eq!(peer.stream_frame().await.0.stream, id);
    }
    // The replies released them, not the timer.
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn held_requests_go_when_no_reply_comes_within_the_timer() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut streams = open_many(&connection, &mut peer, 12).await;
    ping(&mut peer).await;
    peer.head(1, b"204", &[], true).await;
    assert_eq!(streams[0].end().await, Ok(()));
    let held_at = Instant::now();
    let _next = open(&connection, &get());
    settle().await;
    assert_eq!(held(&connection), 1);
    // The server sends nothing more; the timer sends the request.
    assert_eq!(peer.stream_frame().await.0.stream, 25);
    let waited = Instant::now() - held_at;
    assert!(
        waited >= HOLD_TIMER && waited < HOLD_TIMER * 3,
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn held_requests_go_with_the_first_read_after_hold_for() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut streams = open_many(&connection, &mut peer, 12).await;
    ping(&mut peer).await;
    peer.head(1, b"204", &[], true).await;
    assert_eq!(streams[0].end().await, Ok(()));
    let held_at = Instant::now();
    let _next = open(&connection, &get());
    settle().await;
    assert_eq!(held(&connection), 1);
    // A reply read HOLD_FOR later sends it, though the server still has
    // more than three times as many to answer.
    tokio::time::advance(HOLD_FOR).await;
    settle().await;
    assert_eq!(held(&connection), 1);
    peer.head(3, b"204", &[], true).await;
    assert_eq!(streams[1].end().await, Ok(()));
    assert_eq!(peer.stream_frame().await.0.stream, 25);
    assert_eq!(Instant::now() - held_at, HOLD_FOR);
}

#[tokio::test(start_paused = true)]
async fn goaway_ends_held_streams_at_once_and_sends_what_is_held() {
    let (connection, mut peer) = connect(CONFIG).await;
    let start = Instant::now();
    let mut streams = open_many(&connection, &mut peer, 12).await;
    ping(&mut peer).await;
    peer.head(1, b"204", &[], true).await;
    assert_eq!(streams.remove(0).end().await, Ok(()));
    let mut next = open(&connection, &get());
    settle().await;
    assert_eq!(held(&connection), 1);
    // The server takes no stream above 23: the held one (25) ends now.
    let mut goaway = 23u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&error::NO_ERROR.to_be_bytes());
    peer.send(kind::GOAWAY, 0, 0, &goaway).await;
    let ended = tokio::time::timeout(HOLD_TIMER / 2, next.end()).await;
    assert_eq!(ended, Ok(Err(Failure::Closed(Closed::GoAway(0)))));
    // What was held is written, without waiting for the timer.
    assert_eq!(peer.stream_frame().await.0.stream, 25);
    assert_eq!(Instant::now(), start);
    for (stream, id) in streams.iter_mut().zip((3..).step_by(2)) {
        peer.head(id, b"204", &[], true).await;
        assert_eq!(stream.end().await, Ok(()));
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_goes_at_once_when_few_are_answered_or_other_frames_wait() {
    let (connection, mut peer) = connect(CONFIG).await;
    assert_eq!(HOLD_MIN, 8, "the stream ids below count on it");
    let start = Instant::now();
    // Seven streams at the server, fewer than HOLD_MIN: nothing is held.
    let mut streams = open_many(&connection, &mut peer, 7).await;
    peer.head(1, b"204", &[], true).await;
    assert_eq!(streams.remove(0).end().await, Ok(()));
    let _next = open(&connection, &get());
    assert_eq!(peer.stream_frame().await.0.stream, 15);
    // Enough at the server to hold (streams 5 to 31), but a reset queued
    // after the new request is not held back, nor the request with it.
    let mut more = open_many(&connection, &mut peer, 8).await;
    ping(&mut peer).await;
    peer.head(3, b"204", &[], true).await;
    assert_eq!(streams.remove(0).end().await, Ok(()));
    let _another = open(&connection, &get());
    settle().await;
    assert_eq!(held(&connection), 1);
    drop(more.pop());
    let (head, _) = peer.stream_frame().await;
    assert_eq!((head.kind, head.stream), (kind::HEADERS, 33));
    let (head, payload) = peer.stream_frame().await;
    assert_eq!(head.kind, kind::RST_STREAM);
    assert_eq!(payload, error::CANCEL.to_be_bytes());
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn a_request_goes_at_once_while_replies_trickle() {
    let (connection, mut peer) = connect(CONFIG).await;
    let mut streams = open_many(&connection, &mut peer, 12).await;
    ping(&mut peer).await;
    // The reply comes longer than HOLD_GAP after the read before it.
    tokio::time::advance(HOLD_GAP * 2).await;
    peer.head(1, b"204", &[], true).await;
    assert_eq!(streams.remove(0).end().await, Ok(()));
    let start = Instant::now();
    let _next = open(&connection, &get());
    assert_eq!(peer.stream_frame().await.0.stream, 25);
    assert_eq!(Instant::now(), start);
}
