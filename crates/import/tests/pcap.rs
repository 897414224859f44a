//! Captures written by the tests themselves (a tiny pcap and pcapng writer
//! below) for the cases a live capture rarely shows: segments out of order,
//! retransmitted, overlapping; a truncated last packet; a connection without
//! its SYN; a gap; IPv6, VLAN, Linux cooked v2; a port that is not the
//! server's; and bytes of any kind, which must never panic the importers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use proptest::prelude::*;
use tank_import::{import, Format, Options, Summary, Warnings};
use tank_plan::sessions::{Record, SessionsReader};

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const RST: u8 = 0x04;

/// One packet to write: time (µs), link-layer frame, and how many bytes of it are captured.
struct Frame {
    at_us: u64,
    bytes: Vec<u8>,
    captured: usize,
}

#[derive(Clone, Copy)]
enum Link {
    Ethernet,
    Vlan,
    Sll2,
    /// BSD loopback: the address family, in the writer's byte order.
    Null,
    Raw,
}

fn tcp(src: SocketAddr, dst: SocketAddr, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut segment = Vec::new();
    segment.extend_from_slice(&src.port().to_be_bytes());
    segment.extend_from_slice(&dst.port().to_be_bytes());
    segment.extend_from_slice(&seq.to_be_bytes());
    segment.extend_from_slice(&0u32.to_be_bytes());
    segment.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    segment.extend_from_slice(payload);
    segment
}

fn ip(src: IpAddr, dst: IpAddr, segment: &[u8]) -> (u16, Vec<u8>) {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut packet = vec![0x45, 0];
            packet.extend_from_slice(&(20 + segment.len() as u16).to_be_bytes());
            packet.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
            packet.extend_from_slice(&s.octets());
            packet.extend_from_slice(&d.octets());
            packet.extend_from_slice(segment);
            (0x0800, packet)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut packet = vec![0x60, 0, 0, 0];
            packet.extend_from_slice(&(segment.len() as u16).to_be_bytes());
            packet.extend_from_slice(&[6, 64]);
            packet.extend_from_slice(&s.octets());
            packet.extend_from_slice(&d.octets());
            packet.extend_from_slice(segment);
            (0x86dd, packet)
        }
        _ => unreachable!("one family per packet"),
    }
}

fn frame(
    link: Link,
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let (ether_type, packet) = ip(src.ip(), dst.ip(), &tcp(src, dst, seq, flags, payload));
    let mut out = Vec::new();
    match link {
        Link::Ethernet | Link::Vlan => {
            out.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
            if let Link::Vlan = link {
                out.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
            }
            out.extend_from_slice(&ether_type.to_be_bytes());
        }
        Link::Sll2 => {
            out.extend_from_slice(&ether_type.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0, 0, 1, 1, 0, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        }
        Link::Null => {
            let family: u32 = if ether_type == 0x0800 { 2 } else { 30 };
            out.extend_from_slice(&family.to_le_bytes());
        }
        Link::Raw => {}
    }
    out.extend_from_slice(&packet);
    out
}

fn link_type(link: Link) -> u32 {
    match link {
        Link::Ethernet | Link::Vlan => 1,
        Link::Sll2 => 276,
        Link::Null => 0,
        Link::Raw => 101,
    }
}

fn pcap(link: Link, frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    out.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&link_type(link).to_le_bytes());
    for f in frames {
        out.extend_from_slice(&((f.at_us / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((f.at_us % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(f.captured as u32).to_le_bytes());
        out.extend_from_slice(&(f.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&f.bytes[..f.captured]);
    }
    out
}

/// Classic pcap written big-endian with ns timestamps (magic a1b23c4d).
fn pcap_be_ns(link: Link, frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b23c4du32.to_be_bytes());
    out.extend_from_slice(&[0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&65535u32.to_be_bytes());
    out.extend_from_slice(&link_type(link).to_be_bytes());
    for f in frames {
        out.extend_from_slice(&((f.at_us / 1_000_000) as u32).to_be_bytes());
        out.extend_from_slice(&((f.at_us % 1_000_000 * 1000 + 999) as u32).to_be_bytes());
        out.extend_from_slice(&(f.captured as u32).to_be_bytes());
        out.extend_from_slice(&(f.bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(&f.bytes[..f.captured]);
    }
    out
}

fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let padded = body.len().div_ceil(4) * 4;
    let len = (12 + padded) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + padded - body.len(), 0);
    out.extend_from_slice(&len.to_le_bytes());
}

/// pcapng with one interface stamping in ns (if_tsresol = 9).
fn pcapng(link: Link, frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b3c4du32.to_le_bytes());
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    block(&mut out, 0x0a0d0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&(link_type(link) as u16).to_le_bytes());
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&65535u32.to_le_bytes());
    idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
    block(&mut out, 1, &idb);
    for f in frames {
        let ns = f.at_us * 1000;
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ns as u32).to_le_bytes());
        epb.extend_from_slice(&(f.captured as u32).to_le_bytes());
        epb.extend_from_slice(&(f.bytes.len() as u32).to_le_bytes());
        epb.extend_from_slice(&f.bytes[..f.captured]);
        block(&mut out, 6, &epb);
    }
    out
}

/// Builds one connection's packets.
struct Conn {
    link: Link,
    client: SocketAddr,
    server: SocketAddr,
    isn: u32,
}

impl Conn {
    fn v4(client_port: u16, server_port: u16) -> Conn {
        Conn {
            link: Link::Ethernet,
            client: SocketAddr::new(Ipv4Addr::new(10, 0, 0, 1).into(), client_port),
            server: SocketAddr::new(Ipv4Addr::new(10, 0, 0, 2).into(), server_port),
            isn: 1000,
        }
    }

    fn syn(&self, at_us: u64) -> Frame {
        self.packet(at_us, self.isn, SYN, b"")
    }

    fn syn_ack(&self, at_us: u64) -> Frame {
        let bytes = frame(self.link, self.server, self.client, 5000, SYN | ACK, b"");
        Frame {
            at_us,
            captured: bytes.len(),
            bytes,
        }
    }

    /// Client data at stream offset `at` (0 = first byte after the SYN).
    fn data(&self, at_us: u64, at: u32, payload: &[u8]) -> Frame {
        self.packet(at_us, self.isn.wrapping_add(1 + at), ACK | PSH, payload)
    }

    fn fin(&self, at_us: u64, at: u32) -> Frame {
        self.packet(at_us, self.isn.wrapping_add(1 + at), ACK | FIN, b"")
    }

    fn reply(&self, at_us: u64, payload: &[u8]) -> Frame {
        let bytes = frame(
            self.link,
            self.server,
            self.client,
            5001,
            ACK | PSH,
            payload,
        );
        Frame {
            at_us,
            captured: bytes.len(),
            bytes,
        }
    }

    fn packet(&self, at_us: u64, seq: u32, flags: u8, payload: &[u8]) -> Frame {
        let bytes = frame(self.link, self.client, self.server, seq, flags, payload);
        Frame {
            at_us,
            captured: bytes.len(),
            bytes,
        }
    }
}

/// An imported capture: its records (as owned data), summary and warnings.
struct Imported {
    sessions: Vec<(u64, u64, String)>,
    requests: Vec<(u64, u64, String, Vec<u8>)>,
    ends: Vec<(u64, u64)>,
    summary: Summary,
    warnings: Vec<String>,
}

fn run(capture: &[u8], options: &Options) -> Result<Imported, tank_import::ImportError> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut warnings = Warnings::new(
        100,
        Box::new(move |w| sink.lock().unwrap().push(w.to_string())),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.txt");
    let out = std::fs::File::create(&path).unwrap();
    let summary = import(capture, "test.pcap", out, options, &mut warnings)?;
    let mut reader = SessionsReader::open(&path).unwrap();
    let mut imported = Imported {
        sessions: Vec::new(),
        requests: Vec::new(),
        ends: Vec::new(),
        summary,
        warnings: seen.lock().unwrap().clone(),
    };
    while let Some(record) = reader.next_record().unwrap() {
        match record {
            Record::Begin {
                id,
                offset_us,
                label,
            } => imported.sessions.push((id, offset_us, label.to_string())),
            Record::Request {
                id,
                offset_us,
                tag,
                bytes,
            } => imported.requests.push((
                id,
                offset_us,
                String::from_utf8_lossy(tag).into_owned(),
                bytes.to_vec(),
            )),
            Record::End { id, offset_us } => imported.ends.push((id, offset_us)),
        }
    }
    Ok(imported)
}

const GET_A: &[u8] = b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
const GET_B: &[u8] = b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
const POST: &[u8] = b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789";

#[test]
fn a_keep_alive_connection_is_one_session_with_requests_at_their_first_bytes() {
    let c = Conn::v4(40000, 80);
    let frames = [
        c.syn(1_000_000),
        c.syn_ack(1_000_100),
        c.data(1_000_200, 0, GET_A),
        c.reply(1_001_000, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        c.data(1_500_200, GET_A.len() as u32, &POST[..40]),
        c.data(1_600_000, GET_A.len() as u32 + 40, &POST[40..]),
        c.fin(2_000_000, (GET_A.len() + POST.len()) as u32),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions, [(0, 0, "10.0.0.1:40000→10.0.0.2:80".into())]);
    assert_eq!(
        got.requests,
        [
            (0, 0, "/a".into(), GET_A.to_vec()),
            (0, 500_000, "/up".into(), POST.to_vec())
        ]
    );
    assert_eq!(got.ends, [(0, 500_000)]);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    assert_eq!(got.summary.format, Format::Pcap);
}

#[test]
fn out_of_order_retransmitted_and_overlapping_segments_give_the_stream() {
    let c = Conn::v4(40000, 8080);
    let stream = [GET_A, POST, GET_B].concat();
    let cut = |from: usize, to: usize| &stream[from..to];
    let n = stream.len();
    let frames = [
        c.syn(0),
        c.data(10, 20, cut(20, 50)), // ahead of a hole
        c.data(20, 0, cut(0, 25)),   // fills it, overlapping
        c.data(30, 0, cut(0, 25)),   // retransmitted
        c.data(40, 60, cut(60, n)),  // ahead again
        c.data(50, 45, cut(45, 70)), // overlaps both sides
        c.fin(60, n as u32),
    ];
    let got = run(&pcap(Link::Vlan, &frames), &Options::default()).unwrap();
    let bytes: Vec<Vec<u8>> = got.requests.iter().map(|r| r.3.clone()).collect();
    assert_eq!(bytes, [GET_A.to_vec(), POST.to_vec(), GET_B.to_vec()]);
    // GET_A's first byte came at 20 µs (the first request: offset 0); POST's
    // (stream byte 32) at 10 µs in the segment held ahead; GET_B's (byte 90)
    // at 40 µs. A session's requests never go back in time: POST is at 0 too.
    let offsets: Vec<u64> = got.requests.iter().map(|r| r.1).collect();
    assert_eq!(offsets, [0, 0, 20]);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
}

#[test]
fn a_truncated_last_packet_is_a_warning_with_its_number_and_earlier_requests_stay() {
    let c = Conn::v4(40000, 80);
    let mut last = c.data(300, GET_A.len() as u32, POST);
    last.captured -= 5;
    let frames = [c.syn(0), c.data(100, 0, GET_A), last];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.requests[0].3, GET_A);
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(
        got.warnings[0].starts_with("packet 3: truncated"),
        "{}",
        got.warnings[0]
    );
    assert!(
        got.warnings[0].contains("is dropped"),
        "{}",
        got.warnings[0]
    );
}

#[test]
fn a_file_cut_inside_a_packet_record_is_a_warning() {
    let c = Conn::v4(40000, 80);
    let mut file = pcap(
        Link::Ethernet,
        &[
            c.syn(0),
            c.data(100, 0, GET_A),
            c.data(200, GET_A.len() as u32, GET_B),
        ],
    );
    file.truncate(file.len() - 10);
    let got = run(&file, &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert!(
        got.warnings
            .iter()
            .any(|w| w.contains("ends inside packet 3")),
        "{:?}",
        got.warnings
    );
}

#[test]
fn pcapng_with_ns_stamps_ipv6_and_linux_cooked_v2() {
    let c = Conn {
        link: Link::Sll2,
        client: SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 50000),
        server: SocketAddr::new("2001:db8::1".parse::<Ipv6Addr>().unwrap().into(), 80),
        isn: u32::MAX - 3,
    };
    let frames = [
        c.syn(5_000_000),
        c.data(5_000_010, 0, GET_A),
        c.data(5_000_011, GET_A.len() as u32, GET_B),
        c.fin(5_000_020, (GET_A.len() + GET_B.len()) as u32),
    ];
    let got = run(&pcapng(Link::Sll2, &frames), &Options::default()).unwrap();
    assert_eq!(got.summary.format, Format::Pcapng);
    assert_eq!(
        got.sessions,
        [(0, 0, "[::1]:50000→[2001:db8::1]:80".into())]
    );
    let offsets: Vec<u64> = got.requests.iter().map(|r| r.1).collect();
    assert_eq!(offsets, [0, 1]);
    assert_eq!(got.requests[1].3, GET_B);
}

#[test]
fn loopback_and_raw_ip_links() {
    for link in [Link::Null, Link::Raw] {
        let c = Conn {
            link,
            ..Conn::v4(40000, 80)
        };
        let frames = [c.syn(0), c.data(10, 0, GET_A)];
        let got = run(&pcap(link, &frames), &Options::default()).unwrap();
        assert_eq!(got.requests.len(), 1);
        assert_eq!(got.requests[0].3, GET_A);
    }
}

#[test]
fn big_endian_pcap_with_ns_stamps() {
    let c = Conn::v4(40000, 80);
    let frames = [
        c.syn(0),
        c.data(1_000_007, 0, GET_A),
        c.data(1_250_000, GET_A.len() as u32, GET_B),
    ];
    let got = run(&pcap_be_ns(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.summary.format, Format::Pcap);
    let offsets: Vec<u64> = got.requests.iter().map(|r| r.1).collect();
    assert_eq!(offsets, [0, 249_993]);
}

#[test]
fn a_connection_without_its_syn_starts_at_its_first_data_and_its_server_is_the_lower_port() {
    let c = Conn::v4(51000, 8000);
    let frames = [
        c.data(0, 100, GET_A),
        c.data(10, 100 + GET_A.len() as u32, GET_B),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions[0].2, "10.0.0.1:51000→10.0.0.2:8000");
    assert_eq!(got.requests.len(), 2);
    assert_eq!(got.ends, [(0, 10)]);
}

#[test]
fn a_connection_captured_inside_a_request_starts_at_its_next_request_line() {
    // The capture began while the client was sending a request's body.
    let c = Conn::v4(51000, 8000);
    let tail: &[u8] = b"e rest of a body\r\nwith lines\r\n";
    let at = |n: usize| 100 + n as u32;
    let frames = [
        c.data(0, at(0), tail),
        c.data(10, at(tail.len()), GET_A),
        c.data(20, at(tail.len() + GET_A.len()), GET_B),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 2);
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(
        got.warnings[0].contains(&format!(
            "captured from its middle (no SYN): its first {} bytes",
            tail.len()
        )),
        "{:?}",
        got.warnings
    );
}

#[test]
fn connections_to_another_port_are_counted_and_skipped() {
    let web = Conn::v4(40000, 80);
    let other = Conn::v4(40001, 6379);
    let frames = [
        web.syn(0),
        other.syn(1),
        other.data(2, 0, b"*1\r\n$4\r\nPING\r\n"),
        web.data(3, 0, GET_A),
    ];
    let options = Options {
        server_port: Some(80),
        ..Options::default()
    };
    let got = run(&pcap(Link::Ethernet, &frames), &options).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.summary.skipped_ports, [(6379, 1)]);
    assert!(
        got.summary
            .to_string()
            .contains("1 connection skipped (ports 6379 ×1)"),
        "{}",
        got.summary
    );
    // Without --server-port the other connection is read, and is not HTTP.
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(
        got.warnings[0].contains("packet 3") && got.warnings[0].contains("not an HTTP/1.x request")
    );
}

#[test]
fn a_gap_never_filled_names_the_connection_and_seq_range_and_keeps_the_requests_before() {
    let c = Conn::v4(40000, 80);
    let a = GET_A.len() as u32;
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        c.data(20, a + 5, &GET_B[5..]),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    let from = 1001 + a;
    assert!(
        got.warnings[0].contains(&format!("seq {from}..{}", from + 5)),
        "{}",
        got.warnings[0]
    );
}

#[test]
fn a_new_syn_on_a_closed_tuple_is_a_new_session_and_rst_ends_one() {
    let c = Conn::v4(40000, 80);
    let again = Conn {
        isn: 9000,
        ..Conn::v4(40000, 80)
    };
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        c.packet(20, c.isn + 1 + GET_A.len() as u32, RST, b""),
        again.syn(30),
        again.data(40, 0, GET_B),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions.len(), 2);
    assert_eq!(got.ends, [(0, 0), (1, 30)]);
}

#[test]
fn requests_are_written_in_time_order_across_connections_whatever_finishes_first() {
    // A slow upload starts first and ends last; requests on another
    // connection start and end meanwhile.
    let slow = Conn::v4(40000, 80);
    let fast = Conn::v4(40001, 80);
    let frames = [
        slow.syn(0),
        fast.syn(1),
        slow.data(100, 0, &POST[..50]),
        fast.data(200, 0, GET_A),
        fast.data(300, GET_A.len() as u32, GET_B),
        slow.data(5_000_000, 50, &POST[50..]),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    let order: Vec<(u64, u64, Vec<u8>)> = got
        .requests
        .iter()
        .map(|r| (r.0, r.1, r.3.clone()))
        .collect();
    assert_eq!(
        order,
        [
            (0, 0, POST.to_vec()),
            (1, 100, GET_A.to_vec()),
            (1, 200, GET_B.to_vec())
        ]
    );
    assert!(
        got.summary.to_string().ends_with("in order, look-ahead 3"),
        "{}",
        got.summary
    );
    // With no memory to hold them, the same comes out of an external merge.
    let tight = Options {
        memory_budget: 0,
        ..Options::default()
    };
    let merged = run(&pcap(Link::Ethernet, &frames), &tight).unwrap();
    assert_eq!(merged.requests, got.requests);
    assert!(
        merged.summary.to_string().contains("external merge of"),
        "{}",
        merged.summary
    );
}

#[test]
fn timestamps_going_slightly_back_across_connections_keep_time_order_and_far_back_are_clamped() {
    let a = Conn::v4(40000, 80);
    let b = Conn::v4(40001, 80);
    // b's request was stamped 50 µs before a's, on another CPU, but written after it.
    let frames = [
        a.syn(0),
        b.syn(1),
        a.data(1_000, 0, GET_A),
        b.data(950, 0, GET_B),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    let order: Vec<(u64, u64)> = got.requests.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(order, [(0, 0), (1, 50)]);
    assert_eq!(got.summary.clamped, 0);
    // 5 s back, after a's request was written: moved up to it, and counted.
    let frames = [
        a.syn(0),
        b.syn(1),
        a.data(10_000_000, 0, GET_A),
        a.data(11_000_000, GET_A.len() as u32, GET_B),
        b.data(6_000_000, 0, GET_B),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    let order: Vec<(u64, u64)> = got.requests.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(order, [(0, 0), (1, 0), (0, 1_000_000)]);
    assert_eq!(got.summary.clamped, 1);
    assert!(
        got.summary.to_string().contains("1 request moved up"),
        "{}",
        got.summary
    );
}

#[test]
fn a_file_that_is_not_its_format_is_an_error_naming_it() {
    let options = Options {
        format: Some(Format::Pcap),
        ..Options::default()
    };
    let err = run(b"GET / HTTP/1.1\r\n", &options).err().unwrap();
    assert_eq!(
        err.to_string(),
        "test.pcap: byte 0: expected a pcap magic number (a1 b2 c3 d4 or a1 b2 3c 4d, either \
         byte order), found 47 45 54 20"
    );
    // Nothing, and nothing known: every format read is named, the slow log too.
    let every = "expected a pcap, pcapng or HAR file, or an nginx/Apache access log, or a \
                 MySQL/MariaDB slow query log";
    let err = run(b"", &Options::default()).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!("test.pcap: the file is empty; {every}")
    );
    let err = run(b"\x00\x01junk\n", &Options::default()).err().unwrap();
    assert!(err.to_string().ends_with(every), "{err}");
    // A pcapng block whose length is shorter than a block can be.
    let mut bad = pcapng(Link::Ethernet, &[]);
    let at = bad.len();
    bad.extend_from_slice(&[6, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0]);
    bad.extend_from_slice(&[0; 64]);
    let err = run(&bad, &Options::default()).err().unwrap();
    assert!(
        err.to_string()
            .starts_with(&format!("test.pcap: byte {at}: ")),
        "{err}"
    );
}

#[test]
fn an_unknown_link_type_is_an_error_naming_the_packet() {
    let c = Conn::v4(40000, 80);
    let mut file = pcap(Link::Ethernet, &[c.syn(0)]);
    file[20..24].copy_from_slice(&147u32.to_le_bytes());
    let err = run(&file, &Options::default()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "test.pcap: packet 1 has link type 147; expected Ethernet, Linux cooked (v1, v2), \
         raw IP or loopback frames"
    );
}

#[test]
fn a_packet_time_more_than_a_year_from_the_others_is_an_error_naming_both_packets() {
    let c = Conn::v4(40000, 80);
    let day = 86_400_000_000;
    let frames = [
        c.syn(1_000 * day),
        c.data(1_000 * day + 10, 0, GET_A),
        c.data(1_400 * day, GET_A.len() as u32, GET_B),
    ];
    let file = pcap(Link::Ethernet, &frames);
    // The file header, then two records of a 16-byte header and the frame each.
    let third = 24 + (16 + frames[0].bytes.len()) + (16 + frames[1].bytes.len());
    let err = run(&file, &Options::default()).err().unwrap().to_string();
    assert_eq!(
        err,
        format!(
            "test.pcap: byte {third}: packet 3: its time is 400.0 days after that of packet 1: \
             a capture spans at most 366 days, so one of the two clocks is wrong; to import \
             the rest, keep one time range or the connections wanted first (`editcap -A START \
             -B STOP test.pcap part.pcap`, or `tcpdump -r test.pcap -w - 'port 80' | tank \
             import - …`)"
        )
    );
}

#[test]
fn a_session_is_labelled_whichever_of_its_requests_comes_first_in_time() {
    // The second line's request began 4.5 s before the first line's.
    let log = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /late HTTP/1.1\" 200 5 \"-\" \"ua\" 971211336.000 0.000\n\
               10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /early HTTP/1.1\" 200 5 \"-\" \"ua\" 971211336.500 5.000\n";
    let options = Options {
        host: Some("h".into()),
        ..Options::default()
    };
    let got = run(log.as_bytes(), &options).unwrap();
    assert_eq!(got.sessions, [(0, 0, "10.0.0.1".to_string())]);
    let tags: Vec<&str> = got.requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(tags, ["/early", "/late"]);
}

/// Connections `0..n` (client ports from 30000) each sending a POST with a
/// `body`-byte body in 700-byte segments, their packets interleaved.
fn interleaved_posts(n: u16, body: usize) -> (Vec<Frame>, Vec<Vec<u8>>) {
    let posts: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let head =
                format!("POST /up/{i} HTTP/1.1\r\nHost: h\r\nContent-Length: {body}\r\n\r\n");
            let fill = (0..body).map(|b| (b as u8).wrapping_add(i as u8));
            head.bytes().chain(fill).collect()
        })
        .collect();
    let mut frames = Vec::new();
    let conns: Vec<Conn> = (0..n).map(|i| Conn::v4(30000 + i, 80)).collect();
    for (i, c) in conns.iter().enumerate() {
        frames.push(c.syn(i as u64));
    }
    let mut at = 0;
    let mut t = 100;
    while at < posts[0].len() {
        for (c, post) in conns.iter().zip(&posts) {
            let end = (at + 700).min(post.len());
            frames.push(c.data(t, at as u32, &post[at..end]));
            t += 10;
        }
        at += 700;
    }
    for (c, post) in conns.iter().zip(&posts) {
        frames.push(c.fin(t, post.len() as u32));
        t += 10;
    }
    (frames, posts)
}

#[test]
fn requests_in_progress_past_the_memory_budget_spill_and_come_back_byte_for_byte() {
    let (frames, posts) = interleaved_posts(4, 100_000);
    let file = pcap(Link::Ethernet, &frames);
    let lean = Options {
        memory_budget: 16 << 10,
        ..Options::default()
    };
    let got = run(&file, &lean).unwrap();
    let bodies: Vec<Vec<u8>> = got.requests.iter().map(|r| r.3.clone()).collect();
    assert_eq!(bodies, posts);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    assert!(got.summary.spilled_bytes > 300_000, "{}", got.summary);
    assert!(
        got.summary.to_string().contains("held on disk"),
        "{}",
        got.summary
    );
    let roomy = run(&file, &Options::default()).unwrap();
    assert_eq!(roomy.summary.spilled_bytes, 0);
    assert_eq!(roomy.requests, got.requests);
}

#[test]
fn connections_that_send_nothing_are_forgotten_and_one_that_speaks_later_still_counts() {
    let mut frames = Vec::new();
    // 5000 SYNs in 50 ms: more than the 1024 quiet connections a small budget keeps.
    for i in 0..5000u16 {
        frames.push(Conn::v4(10_000 + i, 80).syn(u64::from(i) * 10));
    }
    // One that opens, says nothing for 11 s, then sends a request.
    let late = Conn::v4(9000, 80);
    frames.insert(0, late.syn(0));
    frames.push(late.data(11_000_000, 0, GET_A));
    frames.push(late.fin(11_000_100, GET_A.len() as u32));
    let options = Options {
        memory_budget: 1 << 20,
        ..Options::default()
    };
    let got = run(&pcap(Link::Ethernet, &frames), &options).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(got.requests[0].3, GET_A);
    assert_eq!(got.summary.forgotten, 5001);
    assert!(
        got.summary
            .to_string()
            .contains("5001 connections forgotten after sending nothing"),
        "{}",
        got.summary
    );
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
}

fn valid_captures() -> Vec<Vec<u8>> {
    let c = Conn::v4(40000, 80);
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        c.data(20, GET_A.len() as u32, POST),
        c.fin(30, (GET_A.len() + POST.len()) as u32),
    ];
    vec![pcap(Link::Vlan, &frames), pcapng(Link::Sll2, &frames)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_memory_budget_writes_the_same_sessions(
        connections in 1u16..5,
        body in 0usize..5000,
        budget in 0usize..20_000,
    ) {
        let (frames, _) = interleaved_posts(connections, body);
        let file = pcap(Link::Ethernet, &frames);
        let lean = Options { memory_budget: budget, ..Options::default() };
        let got = run(&file, &lean).unwrap();
        let want = run(&file, &Options::default()).unwrap();
        prop_assert_eq!(got.sessions, want.sessions);
        prop_assert_eq!(got.requests, want.requests);
        prop_assert_eq!(got.ends, want.ends);
    }

    #[test]
    fn no_bytes_panic_the_importers(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        format in proptest::sample::select(vec![None, Some(Format::Access), Some(Format::Har)]),
    ) {
        let options = Options { format, ..Options::default() };
        let _ = run(&bytes, &options);
    }

    #[test]
    fn no_mutation_of_a_valid_capture_panics_the_importer(
        which in 0usize..2,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..12),
        cut in any::<usize>(),
    ) {
        let mut file = valid_captures().swap_remove(which);
        for (at, byte) in edits {
            let at = at % file.len();
            file[at] = byte;
        }
        file.truncate(cut % (file.len() + 1));
        let _ = run(&file, &Options::default());
    }

    #[test]
    fn no_mutation_of_a_valid_har_or_log_panics_the_importers(
        which in 0usize..2,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..12),
    ) {
        let seeds: [&[u8]; 2] = [
            br#"{"log": {"entries": [{"startedDateTime": "2024-01-01T00:00:01.5Z", "connection": "1",
               "request": {"method": "POST", "url": "http://h/p?q", "httpVersion": "HTTP/1.1",
               "headers": [{"name": "A", "value": "b"}], "postData": {"text": "aGk=", "encoding": "base64"}}}]}}"#,
            b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.1\" 200 5 \"-\" \"ua\" 971211336.123 0.010\n",
        ];
        let mut file = seeds[which].to_vec();
        for (at, byte) in edits {
            let at = at % file.len();
            file[at] = byte;
        }
        let _ = run(&file, &Options::default());
    }
}

/// `frame` (Ethernet) with its EtherType replaced by `ether_type` and `insert` put after it.
fn rewrap(frame: Frame, ether_type: u16, insert: &[u8]) -> Frame {
    let mut bytes = frame.bytes[..12].to_vec();
    bytes.extend_from_slice(&ether_type.to_be_bytes());
    bytes.extend_from_slice(insert);
    bytes.extend_from_slice(&frame.bytes[14..]);
    Frame {
        at_us: frame.at_us,
        captured: bytes.len(),
        bytes,
    }
}

#[test]
fn a_packet_captured_with_its_headers_but_none_of_its_payload_is_truncated_not_lost_silently() {
    let c = Conn::v4(40000, 80);
    let mut cut = c.data(20, GET_A.len() as u32, GET_B);
    cut.captured = 14 + 20 + 20; // Ethernet, IPv4, TCP: tcpdump -s 54
    let frames = [c.syn(0), c.data(10, 0, GET_A), cut];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    assert_eq!(
        got.warnings,
        [format!(
            "packet 3: truncated (captured 54 of {} bytes, none of its TCP payload): \
             connection 10.0.0.1:40000→10.0.0.2:80 loses the rest of it; 1 request before is \
             kept, the rest of it is skipped",
            54 + GET_B.len()
        )]
    );
}

#[test]
fn a_syn_ack_without_its_syn_names_its_sender_the_server() {
    // The client's port (1080) is the lower one: without the SYN-ACK it would pass for the server.
    let c = Conn::v4(1080, 8000);
    let frames = [
        c.syn_ack(0),
        c.data(10, 0, POST),
        c.reply(20, b"HTTP/1.1 200 OK\r\n\r\n"),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions, [(0, 0, "10.0.0.1:1080→10.0.0.2:8000".into())]);
    assert_eq!(got.requests, [(0, 0, "/up".into(), POST.to_vec())]);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
}

#[test]
fn ends_guessed_by_port_give_way_to_the_end_that_sends_a_request_line() {
    // No SYN, no SYN-ACK: the lower port (1080) is guessed the server, and
    // sends first; then the other end sends a request line.
    let c = Conn::v4(1080, 8000);
    let frames = [
        c.reply(0, b"HTTP/1.1 100 Continue\r\n\r\n"),
        c.data(10, 0, GET_A),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions, [(0, 0, "10.0.0.1:1080→10.0.0.2:8000".into())]);
    assert_eq!(got.requests.len(), 1);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
}

#[test]
fn mpls_is_unwrapped_and_other_encapsulations_are_counted_and_named_once() {
    let c = Conn::v4(40000, 80);
    // Two labels (254, then 99 at the bottom of the stack), then IPv4.
    let labels = [0x00, 0x0f, 0xe0, 0x40, 0x00, 0x06, 0x31, 0x40];
    let frames = [
        rewrap(c.syn(0), 0x8847, &labels),
        rewrap(c.data(10, 0, GET_A), 0x8847, &labels),
        rewrap(c.data(20, 0, GET_A), 0x88b5, b""),
        rewrap(c.data(30, 0, GET_A), 0x88b5, b""),
        rewrap(c.data(40, 0, GET_A), 0x8864, b""),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1, "the MPLS frame's request");
    assert_eq!(
        got.summary.skipped_frames,
        [("EtherType 0x88b5".to_owned(), 2), ("PPPoE".to_owned(), 1)]
    );
    assert_eq!(
        got.warnings,
        [
            "packet 3: a frame in EtherType 0x88b5, which is not read; such frames are skipped \
             (counted in the summary)",
            "packet 5: a frame in PPPoE, which is not read; such frames are skipped (counted in \
             the summary)",
        ]
    );
    assert!(
        got.summary
            .to_string()
            .contains("; 3 frames skipped (EtherType 0x88b5 ×2, PPPoE ×1); "),
        "{}",
        got.summary
    );
}

#[test]
fn tls_connections_are_named_and_counted_and_no_request_found_says_why() {
    let c = Conn::v4(40000, 443);
    let frames = [
        c.syn(0),
        c.data(10, 0, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert!(got.requests.is_empty());
    assert_eq!(got.summary.unreadable, [("TLS".to_owned(), 1)]);
    assert_eq!(
        got.warnings,
        [
            "connection 10.0.0.1:40000→10.0.0.2:443: packet 2: stream byte 0: a TLS record \
             (bytes 16 03 01): TLS, not HTTP/1.x: it cannot be read; none of it is imported",
            "test.pcap: no request found: 1 connection unreadable (TLS ×1): the sessions file \
             is empty (a replay of it is refused)",
        ]
    );
    assert!(
        got.summary
            .to_string()
            .contains("; 1 connection unreadable (TLS ×1); "),
        "{}",
        got.summary
    );
}

#[test]
fn after_a_gap_reading_resumes_at_the_next_segment_that_starts_a_request_line() {
    let c = Conn::v4(40000, 80);
    let a = GET_A.len() as u32;
    let b = GET_B.len() as u32;
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        // GET_B is never captured; the segment after it is the end of a body, then GET_A.
        c.data(30, a + b, b"tail of something\r\n"),
        c.data(40, a + b + 19, GET_A),
        c.fin(50, a + b + 19 + a),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    let times: Vec<u64> = got.requests.iter().map(|r| r.1).collect();
    assert_eq!(times, [0, 30], "the requests before and after the gap");
    let from = 1001 + a;
    assert_eq!(
        got.warnings,
        [format!(
            "connection 10.0.0.1:40000→10.0.0.2:80: bytes at seq {from}..{} ({b} bytes, before \
             packet 3) were never captured; 1 request before the gap is kept, reading resumes \
             at packet 4, the first segment after the gap that starts a request line (19 bytes \
             after the gap skipped)",
            from + b
        )]
    );
}

#[test]
fn a_gzip_compressed_file_is_said_to_be_one() {
    let err = run(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0], &Options::default())
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "test.pcap: a gzip-compressed file (magic 1f 8b): decompress it first (`zcat test.pcap \
         | tank import - …`)"
    );
}

#[test]
fn a_gap_declared_while_the_connection_goes_on_resumes_at_a_later_request_line() {
    let c = Conn::v4(40000, 80);
    let a = GET_A.len() as u32;
    let b = GET_B.len() as u32;
    let body = b"tail of something\r\n";
    let after = a + b + body.len() as u32;
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        c.data(1_000_000, a + b, body), // GET_B before it is never captured
        c.data(12_000_000, after, b"more body"), // the gap is declared 10 s on
        c.data(13_000_000, after + 9, GET_A),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    let times: Vec<u64> = got.requests.iter().map(|r| r.1).collect();
    assert_eq!(times, [0, 12_999_990]);
    assert_eq!(got.warnings.len(), 2, "{:?}", got.warnings);
    assert!(
        got.warnings[0].ends_with(
            "1 request before the gap is kept, the rest of it is skipped up to a segment that \
             starts a request line, if one comes"
        ),
        "{}",
        got.warnings[0]
    );
    assert_eq!(
        got.warnings[1],
        "connection 10.0.0.1:40000→10.0.0.2:80: packet 5 starts a request line: reading \
         resumes there (28 bytes after the gap skipped)"
    );
}

#[test]
fn a_reply_body_that_starts_a_request_line_does_not_turn_the_ends_round() {
    // Captured mid-connection (no SYN): the server's answer to a TRACE is its
    // head, then a body that is the echoed request; then the client's GETs.
    let c = Conn::v4(40000, 80);
    let frames = [
        c.reply(
            0,
            b"HTTP/1.1 200 OK\r\nContent-Type: message/http\r\nContent-Length: 29\r\n\r\n",
        ),
        c.reply(10, b"TRACE / HTTP/1.1\r\nHost: h\r\n\r\n"),
        c.data(20, 0, GET_A),
        c.data(40, GET_A.len() as u32, GET_A),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.sessions, [(0, 0, "10.0.0.1:40000→10.0.0.2:80".into())]);
    assert_eq!(got.requests.len(), 2, "{:?}", got.requests);
}

#[test]
fn a_connection_with_two_gaps_is_one_connection_cut_by_a_gap() {
    let c = Conn::v4(40000, 80);
    let frames = [
        c.syn(0),
        c.data(10, 5, b"GET /x HTTP/1.1\r\nHost: h\r\n"),
        c.data(20, 200, b"zzzz"),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert!(got.requests.is_empty());
    let said = got.warnings.join("\n");
    assert!(
        said.contains("no request found: 1 connection cut by a gap"),
        "{said}"
    );
}

#[test]
fn a_syn_ack_sent_again_after_its_connection_closed_is_not_a_connection_that_sent_nothing() {
    let c = Conn::v4(40000, 80);
    let frames = [
        c.syn(0),
        c.data(10, 0, GET_A),
        c.fin(20, GET_A.len() as u32),
        // The server's SYN-ACK again, after the close, then 11 s of nothing.
        c.syn_ack(30),
        Conn::v4(40001, 80).syn(1_000),
        // Time goes on past the 10 s after which quiet connections are forgotten.
        Conn::v4(40002, 80).syn(22_000_000),
    ];
    let got = run(&pcap(Link::Ethernet, &frames), &Options::default()).unwrap();
    assert_eq!(got.requests.len(), 1);
    // The quiet SYN is forgotten and counted; the SYN-ACK is forgotten, not counted.
    assert_eq!(got.summary.forgotten, 1, "{}", got.summary);
}
