//! MySQL captures written by the tests (raw IPv4 frames): a whole
//! conversation with prepared statements, TLS and compressed connections,
//! a greeting on another port, a connection captured from its middle, and
//! any segmentation, which must not change what is imported.

use std::net::SocketAddr;

use proptest::prelude::*;
use tank_import::{import, Options, Protocol, Summary, Warnings};
use tank_mysql::{build, flags, packet};
use tank_plan::sessions::{Record, SessionsReader};

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;

/// A packet: time (µs), sender, receiver, sequence number, flags, payload.
struct Segment {
    at_us: u64,
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    flags: u8,
    payload: Vec<u8>,
}

/// A pcap of raw IPv4 frames (link type 101).
fn pcap(segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    out.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&101u32.to_le_bytes());
    for s in segments {
        let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (s.src, s.dst) else {
            unreachable!("IPv4 only")
        };
        let mut tcp = Vec::new();
        tcp.extend_from_slice(&src.port().to_be_bytes());
        tcp.extend_from_slice(&dst.port().to_be_bytes());
        tcp.extend_from_slice(&s.seq.to_be_bytes());
        tcp.extend_from_slice(&0u32.to_be_bytes());
        tcp.extend_from_slice(&[5 << 4, s.flags, 0xff, 0xff, 0, 0, 0, 0]);
        tcp.extend_from_slice(&s.payload);
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&(20 + tcp.len() as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        ip.extend_from_slice(&src.ip().octets());
        ip.extend_from_slice(&dst.ip().octets());
        ip.extend_from_slice(&tcp);
        out.extend_from_slice(&((s.at_us / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((s.at_us % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        out.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        out.extend_from_slice(&ip);
    }
    out
}

/// A conversation to capture: each step the client's or the server's bytes at a time.
struct Conversation {
    client: SocketAddr,
    server: SocketAddr,
    syn: bool,
    steps: Vec<(u64, bool, Vec<u8>)>,
}

impl Conversation {
    fn new(client_port: u16, server_port: u16) -> Self {
        Conversation {
            client: SocketAddr::from(([10, 0, 0, 1], client_port)),
            server: SocketAddr::from(([10, 0, 0, 2], server_port)),
            syn: true,
            steps: Vec::new(),
        }
    }

    /// The client sends `payloads` as packets numbered from `seq`, at `at_us`.
    fn client(&mut self, at_us: u64, seq: u8, payloads: &[&[u8]]) -> &mut Self {
        let mut bytes = Vec::new();
        let mut seq = seq;
        for payload in payloads {
            seq = packet::write(&mut bytes, seq, payload);
        }
        self.steps.push((at_us, true, bytes));
        self
    }

    /// The server answers `payloads` as packets numbered from `seq`.
    fn server(&mut self, at_us: u64, seq: u8, payloads: &[Vec<u8>]) -> &mut Self {
        let mut bytes = Vec::new();
        let mut seq = seq;
        for payload in payloads {
            seq = packet::write(&mut bytes, seq, payload);
        }
        self.steps.push((at_us, false, bytes));
        self
    }

    /// Its segments, each step cut into pieces of at most `mss` bytes.
    fn segments(&self, mss: usize) -> Vec<Segment> {
        let (mut client_seq, mut server_seq) = (1000u32, 5000u32);
        let mut out = Vec::new();
        if self.syn {
            out.push(self.segment(0, true, client_seq, SYN, Vec::new()));
            out.push(self.segment(10, false, server_seq, SYN | ACK, Vec::new()));
            client_seq += 1;
            server_seq += 1;
        }
        let mut last = 0;
        for (at, from_client, bytes) in &self.steps {
            for piece in bytes.chunks(mss.max(1)) {
                let seq = if *from_client {
                    &mut client_seq
                } else {
                    &mut server_seq
                };
                out.push(self.segment(*at, *from_client, *seq, ACK, piece.to_vec()));
                *seq = seq.wrapping_add(piece.len() as u32);
            }
            last = *at;
        }
        out.push(self.segment(last + 10, true, client_seq, FIN | ACK, Vec::new()));
        out
    }

    fn segment(
        &self,
        at: u64,
        from_client: bool,
        seq: u32,
        flags: u8,
        payload: Vec<u8>,
    ) -> Segment {
        let (src, dst) = if from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        Segment {
            at_us: 1_700_000_000_000_000 + at,
            src,
            dst,
            seq,
            flags,
            payload,
        }
    }
}

const SCRAMBLE: [u8; 20] = *b"abcdefghijklmnopqrst";
const SERVER: u64 = flags::LONG_PASSWORD
    | flags::PROTOCOL_41
    | flags::SECURE_CONNECTION
    | flags::PLUGIN_AUTH
    | flags::PLUGIN_AUTH_LENENC
    | flags::CONNECT_WITH_DB
    | flags::SSL
    | flags::COMPRESS
    | flags::MULTI_STATEMENTS
    | flags::QUERY_ATTRIBUTES
    | flags::TRANSACTIONS;

/// A client's handshake response with `caps` as user `app` to `schema`.
fn response(caps: u64, schema: &[u8]) -> Vec<u8> {
    tank_mysql::handshake::Login {
        caps: caps | flags::PROTOCOL_41 | flags::SECURE_CONNECTION | flags::PLUGIN_AUTH,
        collation: 33,
        user: b"app",
        auth: &[7; 20],
        schema,
        plugin: "mysql_native_password",
    }
    .response()
}

/// A connection's login: greeting, response, OK, as `caps` and `schema` say.
fn logged_in(port: u16, caps: u64, schema: &[u8]) -> Conversation {
    let mut c = Conversation::new(40000, port);
    c.server(
        100,
        0,
        &[build::greeting(
            "8.0.36",
            9,
            SERVER,
            &SCRAMBLE,
            "mysql_native_password",
        )],
    );
    c.client(200, 1, &[&response(caps | flags::CONNECT_WITH_DB, schema)]);
    c.server(300, 2, &[build::ok(0, 0, 2)]);
    c
}

/// Import `capture` with `options`: the summary, the requests (session id,
/// offset, tag, bytes), the session labels, and the warnings.
type Imported = (
    Summary,
    Vec<(u64, u64, String, Vec<u8>)>,
    Vec<String>,
    Vec<String>,
);

fn run(capture: &[u8], options: &Options) -> Imported {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = said.clone();
    let mut warnings = Warnings::new(
        100,
        Box::new(move |w| sink.lock().unwrap().push(w.to_owned())),
    );
    let out = std::fs::File::create(&path).unwrap();
    let summary = import(capture, "db.pcap", out, options, &mut warnings).unwrap();
    let mut reader = SessionsReader::open(&path).unwrap();
    assert_eq!(reader.protocol(), summary.protocol);
    let (mut requests, mut labels) = (Vec::new(), Vec::new());
    while let Some(record) = reader.next_record().unwrap() {
        match record {
            Record::Begin { label, .. } => labels.push(label.to_owned()),
            Record::Request {
                id,
                offset_us,
                tag,
                bytes,
            } => requests.push((
                id,
                offset_us,
                String::from_utf8(tag.to_vec()).unwrap(),
                bytes.to_vec(),
            )),
            Record::End { .. } => {}
        }
    }
    let said = said.lock().unwrap().clone();
    (summary, requests, labels, said)
}

/// A whole conversation: queries, a prepared statement's life, ping, quit.
fn shop(caps: u64) -> Conversation {
    let mut c = logged_in(3306, caps, b"shop");
    let rows = vec![vec![Some(&b"1"[..]), Some(&b"apple"[..])]];
    c.client(1_000, 0, &[b"\x03SELECT id, name FROM items"]);
    c.server(
        1_100,
        1,
        &build::result_set(&["id", "name"], &rows, 2, false),
    );
    c.client(2_000, 0, &[b"\x16UPDATE stock SET n = n - ? WHERE id = 1"]);
    c.server(
        2_100,
        1,
        &[
            build::prepare_ok(41, 0, 1),
            build::column("?"),
            build::eof(2),
        ],
    );
    c.client(3_000, 0, &[b"\x17\x29\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x08\x00\x02\x00\x00\x00\x00\x00\x00\x00"]);
    c.server(3_100, 1, &[build::ok(0, 1, 2)]);
    c.client(4_000, 0, &[b"\x19\x29\x00\x00\x00"]);
    c.client(5_000, 0, &[b"\x0e"]);
    c.server(5_100, 1, &[build::ok(0, 0, 2)]);
    c.client(6_000, 0, &[b"\x01"]);
    c
}

#[test]
fn a_conversation_becomes_its_commands_with_statements_numbered_in_the_session() {
    let capture = pcap(&shop(0).segments(1460));
    let (summary, requests, labels, warnings) = run(&capture, &Options::default());
    assert_eq!(summary.protocol, Protocol::Mysql, "told by the port");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(labels, ["10.0.0.1:40000→10.0.0.2:3306 app@shop"]);
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(
        tags,
        [
            "CONNECT",
            "SELECT items",
            "PREPARE UPDATE stock",
            "UPDATE stock",
            "STMT_CLOSE",
            "PING",
            "QUIT"
        ]
    );
    let offsets: Vec<u64> = requests.iter().map(|r| r.1).collect();
    assert_eq!(
        offsets,
        [0, 900, 1_900, 2_900, 3_900, 4_900, 5_900],
        "from the greeting"
    );
    let connect = tank_mysql::Connect::decode(&requests[0].3).unwrap();
    assert_eq!(
        (connect.schema.as_slice(), connect.collation),
        (&b"shop"[..], 33)
    );
    assert_eq!(requests[1].3, b"\x03SELECT id, name FROM items");
    // The captured statement 41 is the session's first.
    assert_eq!(&requests[3].3[..5], b"\x17\x01\x00\x00\x00");
    assert_eq!(requests[4].3, b"\x19\x01\x00\x00\x00");
    assert_eq!((summary.sessions, summary.requests), (1, 7));
}

#[test]
fn a_table_in_the_sessions_own_schema_is_tagged_without_it() {
    // `shop.items` in schema shop is `items`: one table, one tag. The schema
    // follows the login, COM_INIT_DB and USE.
    let mut c = logged_in(3306, 0, b"shop");
    let queries: [&[u8]; 6] = [
        b"\x03SELECT * FROM shop.items",
        b"\x03SELECT * FROM items",
        b"\x02stock",
        b"\x03SELECT * FROM shop.items",
        b"\x03USE `shop`",
        b"\x03DELETE FROM `shop`.items WHERE id = 1",
    ];
    for (i, query) in queries.iter().enumerate() {
        let at = 1_000 * (i as u64 + 1);
        c.client(at, 0, &[query]);
        c.server(at + 100, 1, &[build::ok(0, 0, 2)]);
    }
    let (_, requests, _, warnings) = run(&pcap(&c.segments(1460)), &Options::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(
        tags,
        [
            "CONNECT",
            "SELECT items",
            "SELECT items",
            "INIT_DB",
            "SELECT shop.items",
            "USE",
            "DELETE items"
        ]
    );
}

#[test]
fn any_segmentation_imports_the_same_commands() {
    let whole = run(&pcap(&shop(0).segments(1460)), &Options::default()).1;
    for mss in [1, 3, 7, 64] {
        let cut = run(&pcap(&shop(0).segments(mss)), &Options::default()).1;
        assert_eq!(cut, whole, "mss {mss}");
    }
}

#[test]
fn tls_and_compressed_connections_are_counted_named_and_never_half_imported() {
    let mut tls = Conversation::new(40001, 3306);
    tls.server(
        100,
        0,
        &[build::greeting("8.0.36", 9, SERVER, &SCRAMBLE, "x")],
    );
    let ssl_request = tank_mysql::handshake::Login {
        caps: flags::PROTOCOL_41 | flags::SECURE_CONNECTION,
        collation: 33,
        user: b"",
        auth: b"",
        schema: b"",
        plugin: "",
    }
    .ssl_request();
    tls.client(200, 1, &[&ssl_request]);
    tls.client(300, 2, &[b"\x16\x03\x01 tls bytes"]);
    let mut compressed = logged_in(3306, flags::COMPRESS, b"");
    compressed.client(1_000, 0, &[b"\x03SELECT 1"]);
    let mut segments = tls.segments(1460);
    let mut second = compressed.segments(1460);
    for s in &mut second {
        s.src = SocketAddr::from(([10, 0, 0, 3], s.src.port()));
    }
    segments.append(&mut second);
    segments.sort_by_key(|s| s.at_us);
    let (summary, requests, _, warnings) = run(&pcap(&segments), &Options::default());
    assert!(requests.is_empty(), "{requests:?}");
    assert_eq!(
        summary.unreadable,
        [("TLS".to_owned(), 1), ("compressed".to_owned(), 1)]
    );
    assert!(warnings
        .iter()
        .any(|w| w.contains("10.0.0.1:40001→10.0.0.2:3306: the client started TLS")));
    assert!(warnings
        .iter()
        .any(|w| w.contains("agreed on compression: it cannot be read")));
    assert!(summary
        .to_string()
        .contains("2 connections unreadable (TLS ×1, compressed ×1)"));
}

#[test]
fn a_greeting_on_another_port_is_mysql_and_a_client_that_speaks_first_is_not() {
    let mut db = logged_in(13306, 0, b"");
    db.client(1_000, 0, &[b"\x03SELECT 1"]);
    let mut web = Conversation::new(40002, 80);
    web.client(500, 0, &[b"GET / HTTP/1.1\r\n\r\n"]);
    let mut segments = db.segments(1460);
    segments.extend(web.segments(1460));
    segments.sort_by_key(|s| s.at_us);
    let options = Options {
        protocol: Some(Protocol::Mysql),
        ..Options::default()
    };
    let (summary, requests, _, _) = run(&pcap(&segments), &options);
    assert_eq!(requests.len(), 2);
    assert_eq!(summary.skipped_ports, [(80, 1)]);
}

#[test]
fn a_connection_captured_from_its_middle_starts_at_its_first_whole_command() {
    let mut c = Conversation::new(40003, 3306);
    c.syn = false;
    c.steps
        .push((100, true, b"the tail of an earlier command".to_vec()));
    c.client(1_000, 0, &[b"\x03SELECT * FROM carts"]);
    c.server(1_100, 1, &build::result_set(&["a"], &[], 2, true));
    // Statement 7 was prepared before the capture began: left out.
    c.client(2_000, 0, &[b"\x17\x07\x00\x00\x00\x00\x01\x00\x00\x00"]);
    c.server(2_100, 1, &[build::ok(0, 0, 2)]);
    c.client(3_000, 0, &[b"\x0e"]);
    c.server(3_100, 1, &[build::ok(0, 0, 2)]);
    let (_, requests, _, warnings) = run(&pcap(&c.segments(1460)), &Options::default());
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(tags, ["SELECT carts", "PING"]);
    assert!(warnings[0].contains("captured from its middle (no handshake): its first 30 bytes"));
    assert!(
        warnings[1].contains("1 command named a prepared statement whose prepare was not captured")
    );
}

#[test]
fn a_connection_captured_from_its_middle_at_a_whole_command_says_so_not_0_bytes_skipped() {
    let mut c = Conversation::new(40004, 3306);
    c.syn = false;
    c.client(1_000, 0, &[b"\x0e"]);
    c.server(1_100, 1, &[build::ok(0, 0, 2)]);
    let (_, requests, _, warnings) = run(&pcap(&c.segments(1460)), &Options::default());
    assert_eq!(requests.len(), 1);
    assert!(
        warnings[0].contains("(no handshake): it starts at a whole command; it replays"),
        "{warnings:?}"
    );
}

#[test]
fn a_client_that_speaks_first_on_the_mysql_port_is_said_to_be_no_mysql_client() {
    let mut c = Conversation::new(40005, 19210);
    c.steps.push((500, true, b"{\"get\":\"k\"}\0".to_vec()));
    c.steps.push((600, false, vec![b'x'; 70_000]));
    let options = Options {
        mysql_port: Some(19210),
        ..Options::default()
    };
    let (summary, requests, _, warnings) = run(&pcap(&c.segments(1460)), &options);
    assert_eq!((summary.sessions, requests.len()), (0, 0));
    assert_eq!(
        warnings[0],
        "connection 10.0.0.1:40005→10.0.0.2:19210: the client spoke first, and not a \
         handshake response: not MySQL, whose server greets first; none of it is imported"
    );
}

#[test]
fn query_attributes_are_taken_out_of_the_commands() {
    let mut c = logged_in(3306, flags::QUERY_ATTRIBUTES, b"");
    c.client(1_000, 0, &[b"\x03\x00\x01SELECT 1"]);
    c.server(1_100, 1, &[build::ok(0, 0, 2)]);
    c.client(2_000, 0, &[b"\x03\x01\x01\x00\x01\xfe\x00\x01aXSELECT 2"]);
    c.server(2_100, 1, &[build::ok(0, 0, 2)]);
    let (_, requests, _, warnings) = run(&pcap(&c.segments(1460)), &Options::default());
    assert_eq!(requests[1].3, b"\x03SELECT 1");
    assert_eq!(requests.len(), 2);
    assert!(warnings
        .iter()
        .any(|w| w.contains("1 command carried query attributes")));
}

#[test]
fn options_that_do_not_apply_are_errors() {
    let capture = pcap(&shop(0).segments(1460));
    let refused = |options: Options| {
        let mut warnings = Warnings::new(0, Box::new(|_| {}));
        import(&capture[..], "db.pcap", Vec::new(), &options, &mut warnings)
            .unwrap_err()
            .to_string()
    };
    assert!(refused(Options {
        server_port: Some(3306),
        ..Options::default()
    })
    .contains("--server-port applies to HTTP and framed TCP captures (MySQL's is --mysql-port)"));
    assert!(refused(Options {
        protocol: Some(Protocol::Tcp),
        ..Options::default()
    })
    .contains("--protocol tcp needs --framing"));
}

proptest! {
    #[test]
    fn any_bytes_on_the_mysql_port_import_or_warn_without_panicking(
        client in proptest::collection::vec(any::<u8>(), 0..300),
        server in proptest::collection::vec(any::<u8>(), 0..300),
        mss in 1usize..80,
    ) {
        let mut c = Conversation::new(40004, 3306);
        c.steps.push((100, false, server));
        c.steps.push((200, true, client));
        let capture = pcap(&c.segments(mss));
        let mut warnings = Warnings::new(0, Box::new(|_| {}));
        prop_assert!(import(&capture[..], "x.pcap", Vec::new(), &Options::default(), &mut warnings).is_ok());
    }
}

#[test]
fn a_login_the_server_refused_is_left_out_counted_and_named() {
    let mut refused = Conversation::new(40005, 3306);
    refused.server(
        100,
        0,
        &[build::greeting(
            "8.0.36",
            9,
            SERVER,
            &SCRAMBLE,
            "mysql_native_password",
        )],
    );
    refused.client(200, 1, &[&response(0, b"")]);
    refused.server(
        300,
        2,
        &[build::err(1045, b"28000", "Access denied for user 'app'")],
    );
    let mut fine = logged_in(3306, 0, b"");
    fine.client(1_000, 0, &[b"\x03SELECT 1"]);
    let mut segments = refused.segments(1460);
    let mut second = fine.segments(1460);
    for s in &mut second {
        s.src = SocketAddr::from(([10, 0, 0, 3], s.src.port()));
    }
    segments.append(&mut second);
    segments.sort_by_key(|s| s.at_us);
    let (summary, requests, labels, warnings) = run(&pcap(&segments), &Options::default());
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(tags, ["CONNECT", "SELECT"], "only the login that succeeded");
    assert_eq!(labels, ["10.0.0.3:40000→10.0.0.2:3306 app"]);
    assert_eq!(
        warnings,
        [
            "connection 10.0.0.1:40005→10.0.0.2:3306 app: the server refused its login (error \
          1045: Access denied for user 'app'); none of it is imported"
        ]
    );
    assert_eq!(summary.refused, 1);
    assert!(
        summary
            .to_string()
            .contains("; 1 connection refused by the server, left out; "),
        "{summary}"
    );
}
