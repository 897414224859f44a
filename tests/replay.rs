//! Replaying a sessions file (`ammo_type = sessions`) against a server that
//! logs, per request, its connection, its arrival time and its bytes.
//!
//! Timing is checked at the server: every request over a kept connection
//! within 1 ms of its offset (÷ speed), the two clocks aligned by the median
//! of the differences. On a busy 2-core machine a thread can miss its moment
//! now and then, so one of them may be off by more (none by more than 25 ms);
//! a session's first request also times this server's accept and the thread
//! it starts per connection, so it is only held to 25 ms. A replay that
//! ignored the offsets (all at once, or shifted) is off by tens of ms on most
//! arrivals and fails.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tank_plan::sessions::SessionsWriter;
use tank_run::{Handle, Silent, Spec, Verdict};

/// One request as the server read it.
#[derive(Debug, Clone)]
struct Arrival {
    connection: usize,
    at: Instant,
    bytes: Vec<u8>,
}

/// An HTTP/1.1 server on 127.0.0.1 that answers 200 after `delay`, keeps
/// connections, and logs every request.
struct LoggingServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Arrival>>>,
    stop: Arc<AtomicBool>,
}

impl LoggingServer {
    fn start(delay: Duration) -> LoggingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (Arc::clone(&log), Arc::clone(&stop));
        let connections = Arc::new(AtomicUsize::new(0));
        // A blocking accept: a new connection is served at once (no polling
        // interval in the arrival times). Drop wakes it with a connection.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let connection = connections.fetch_add(1, Ordering::Relaxed);
                let log = Arc::clone(&log2);
                std::thread::spawn(move || serve(stream, connection, delay, &log));
            }
        });
        LoggingServer { addr, log, stop }
    }

    fn arrivals(&self) -> Vec<Arrival> {
        let mut log = self.log.lock().unwrap().clone();
        log.sort_by_key(|a| a.at);
        log
    }
}

impl Drop for LoggingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Read requests (a head, then a Content-Length body) and answer each.
fn serve(mut stream: TcpStream, connection: usize, delay: Duration, log: &Mutex<Vec<Arrival>>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut first_byte: Option<Instant> = None;
    loop {
        // Whole requests in the buffer are logged and answered.
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
            let body = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + body {
                let bytes: Vec<u8> = buffer.drain(..end + 4 + body).collect();
                let at = first_byte.take().unwrap_or_else(Instant::now);
                log.lock().unwrap().push(Arrival {
                    connection,
                    at,
                    bytes,
                });
                if !buffer.is_empty() {
                    first_byte = Some(at);
                }
                std::thread::sleep(delay);
                let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                if stream.write_all(reply).is_err() {
                    return;
                }
                continue;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                first_byte.get_or_insert_with(Instant::now);
                buffer.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The capture: per session, its requests' offsets in µs.
fn capture() -> Vec<Vec<u64>> {
    vec![
        vec![0, 200_000, 480_000],
        vec![80_000, 120_000, 800_000],
        vec![400_000],
        vec![600_000, 640_000, 680_000],
        vec![1_000_000],
    ]
}

/// Request `j` of session `i`: a GET, or (the second of each session) a POST with a body.
fn request(i: usize, j: usize) -> Vec<u8> {
    if j == 1 {
        let body = format!("session={i}&binary=\u{1}\u{2}");
        format!(
            "POST /s{i}/r{j} HTTP/1.1\r\nHost: replay\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    } else {
        format!("GET /s{i}/r{j} HTTP/1.1\r\nHost: replay\r\n\r\n").into_bytes()
    }
}

/// Write `capture()` as a sessions file in `dir`.
fn write_sessions(dir: &Path) -> PathBuf {
    let mut records = Vec::new();
    for (i, offsets) in capture().iter().enumerate() {
        records.push((offsets[0], 0, i, 0));
        for (j, offset) in offsets.iter().enumerate() {
            records.push((*offset, 1, i, j));
        }
        records.push((*offsets.last().unwrap(), 2, i, 0));
    }
    records.sort_unstable();
    let path = dir.join("capture.sessions");
    let mut out = SessionsWriter::new(Vec::new()).unwrap();
    out.comment("written by tests/replay.rs").unwrap();
    for (offset, kind, i, j) in records {
        let id = 7 + i as u64;
        match kind {
            0 => out.begin(id, offset, "10.0.0.1:5000").unwrap(),
            1 => out
                .request(id, offset, format!("s{i}").as_bytes(), &request(i, j))
                .unwrap(),
            _ => out.end(id, offset).unwrap(),
        }
    }
    std::fs::write(&path, out.finish().unwrap()).unwrap();
    path
}

/// One replay at a time: their timing is measured, and the machine may have 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Replay the capture against `server` with `options` (INI lines).
fn replay(dir: &Path, server: &LoggingServer, options: &str) -> tank_run::Outcome {
    let outcome = run(dir, server, options, &Handle::default());
    assert_eq!(outcome.verdict, Verdict::Completed, "{}", outcome.text);
    outcome
}

/// Write the capture and a config replaying it with `options`, and run it under `handle`.
fn run(dir: &Path, server: &LoggingServer, options: &str, handle: &Handle) -> tank_run::Outcome {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = config(dir, server, options);
    let spec = Spec::new(tank_config::load(&path, &[]).unwrap());
    tank_run::run(&spec, Box::new(Silent), handle).unwrap()
}

/// The capture and a config replaying it against `server` with `options`, in `dir`.
fn config(dir: &Path, server: &LoggingServer, options: &str) -> PathBuf {
    let sessions = write_sessions(dir);
    replay_config(dir, server, &sessions, options)
}

/// A config in `dir` replaying `ammofile` against `server` with `options`.
fn replay_config(dir: &Path, server: &LoggingServer, ammofile: &Path, options: &str) -> PathBuf {
    let path = dir.join("load.ini");
    std::fs::write(
        &path,
        format!(
            "[phantom]\naddress = {}\nammo_type = sessions\nammofile = {}\n{options}\n\
             [tank]\nartifacts_base_dir = {}\n",
            server.addr,
            ammofile.display(),
            dir.join("logs").display()
        ),
    )
    .unwrap();
    path
}

/// The sessions whose requests a server saw, per connection, as (session, request) pairs.
fn by_connection(arrivals: &[Arrival]) -> BTreeMap<usize, Vec<(usize, usize)>> {
    let mut connections: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    for arrival in arrivals {
        let line = String::from_utf8_lossy(&arrival.bytes);
        let path = line.split(' ').nth(1).unwrap();
        let (i, j) = path[2..].split_once("/r").unwrap();
        let (i, j) = (i.parse().unwrap(), j.parse().unwrap());
        assert_eq!(arrival.bytes, request(i, j), "the bytes of s{i}/r{j}");
        connections
            .entry(arrival.connection)
            .or_default()
            .push((i, j));
    }
    connections
}

/// How far an arrival may be from its offset ÷ speed in these tests: what a
/// machine running another build beside them still keeps. The replay's
/// accuracy (a fraction of a millisecond) is measured by
/// benches/replay/accuracy.sh, not here; the capture's gaps (40 ms and more)
/// are wide enough apart that a replay without its timing still fails.
const KEPT_MARGIN_US: i64 = 100_000;
/// A session's first request also times this server's accept and its new
/// thread, which a busy machine delays more.
const FIRST_MARGIN_US: i64 = 150_000;

/// Every request within [`KEPT_MARGIN_US`] of its offset ÷ `speed` (a
/// session's first within [`FIRST_MARGIN_US`]), the clocks aligned by the
/// median difference of those over kept connections.
fn assert_on_time(arrivals: &[Arrival], speed: f64) {
    let offsets = capture();
    assert_near(arrivals, |i, j| (offsets[i][j] as f64 / speed) as i64);
}

/// Session `i`'s request `j` as the server read it: its (session, request) pair.
fn which(arrival: &Arrival) -> (usize, usize) {
    let line = String::from_utf8_lossy(&arrival.bytes);
    let path = line.split(' ').nth(1).unwrap();
    let (i, j) = path[2..].split_once("/r").unwrap();
    (i.parse().unwrap(), j.parse().unwrap())
}

/// [`assert_on_time`] against `expected(i, j)`, µs from the first request.
fn assert_near(arrivals: &[Arrival], expected: impl Fn(usize, usize) -> i64) {
    let first = arrivals[0].at;
    // (error before alignment µs, over a kept connection)
    let errors: Vec<(i64, bool)> = arrivals
        .iter()
        .map(|arrival| {
            let (i, j) = which(arrival);
            let actual = arrival.at.duration_since(first).as_micros() as i64;
            (actual - expected(i, j), j > 0)
        })
        .collect();
    let mut kept: Vec<i64> = errors.iter().filter(|e| e.1).map(|e| e.0).collect();
    kept.sort_unstable();
    let median = kept[kept.len() / 2];
    let errors: Vec<(i64, bool)> = errors.iter().map(|(e, k)| (e - median, *k)).collect();
    assert!(
        errors.iter().all(|(e, kept)| e.abs()
            <= if *kept {
                KEPT_MARGIN_US
            } else {
                FIRST_MARGIN_US
            }),
        "arrivals off their offsets (µs, over a kept connection): {errors:?}"
    );
}

fn whole_capture() -> Vec<Vec<(usize, usize)>> {
    capture()
        .iter()
        .enumerate()
        .map(|(i, offsets)| (0..offsets.len()).map(|j| (i, j)).collect())
        .collect()
}

#[test]
fn a_replay_keeps_sessions_connections_order_bytes_and_timing() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let outcome = replay(dir.path(), &server, "");
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 11);
    let mut sessions: Vec<Vec<(usize, usize)>> = by_connection(&arrivals).into_values().collect();
    sessions.sort();
    assert_eq!(
        sessions,
        whole_capture(),
        "one connection per session, in order"
    );
    assert_on_time(&arrivals, 1.0);
    // The check can fail: these arrivals are not those of a replay at speed 1.5.
    let wrong = std::panic::catch_unwind(|| assert_on_time(&arrivals, 1.5));
    assert!(wrong.is_err());
    let shots = &outcome.summary.shots;
    assert_eq!(
        (shots.planned, shots.sent, shots.unsent),
        (Some(11), Some(11), Some(0))
    );
    // The pool is the capture's peak of open sessions: A, B and C at 400 ms.
    assert_eq!(outcome.summary.meta.facts[2].1, "3");
    let replayed = outcome.summary.replay.expect("a replay row");
    assert_eq!(
        (
            replayed.sessions.started,
            replayed.sessions.completed,
            replayed.pool
        ),
        (5, 5, 3)
    );
    assert!((2..=3).contains(&replayed.sessions.peak), "{replayed:?}");
    // The capture's rate: 11 requests over its 1 s; planned per second is the replay's.
    assert_eq!(outcome.summary.rps.planned, Some(11.0));
    let timeline = &outcome.summary.timeline;
    assert_eq!(timeline.planned.iter().sum::<u64>(), 11);
    assert_eq!(timeline.sent.iter().sum::<u64>(), 11);
    assert!(
        outcome
            .text
            .contains("replay: sessions started 5, completed 5"),
        "{}",
        outcome.text
    );
    let json = std::fs::read_to_string(outcome.artifacts.join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["replay"]["started"], 5, "{json}");
}

#[test]
fn at_speed_two_offsets_are_halved() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    replay(dir.path(), &server, "replay_speed = 2");
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 11);
    assert_on_time(&arrivals, 2.0);
    let span = arrivals[10].at.duration_since(arrivals[0].at);
    assert!(
        span < Duration::from_millis(500 + 150),
        "{span:?} for 1 s at speed 2"
    );
}

#[test]
fn per_request_puts_every_request_on_its_own_connection() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    // Its pool is `instances` (a thousand by default, slow to start in a debug build).
    replay(
        dir.path(),
        &server,
        "replay_connections = per_request\ninstances = 16",
    );
    let arrivals = server.arrivals();
    let connections = by_connection(&arrivals);
    assert_eq!(connections.len(), 11);
    assert!(connections.values().all(|requests| requests.len() == 1));
    // Not timed here: each arrival would also time this server's accept and
    // its new thread per connection, which a busy machine delays by tens of ms.
}

#[test]
fn skip_and_offset_fire_one_session_in_n() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let outcome = replay(dir.path(), &server, "replay_skip = 2\nreplay_offset = 1");
    let mut sessions: Vec<Vec<(usize, usize)>> =
        by_connection(&server.arrivals()).into_values().collect();
    sessions.sort();
    // Sessions begin in the order 0, 1, 2, 3, 4: the 1st and 3rd are kept.
    let whole = whole_capture();
    assert_eq!(sessions, vec![whole[1].clone(), whole[3].clone()]);
    assert_eq!(outcome.summary.shots.planned, Some(6));
}

#[test]
fn a_slow_server_makes_the_next_request_wait_and_its_lag_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // Every reply takes 320 ms: session 0's second request (due at 200 ms)
    // waits for the first's reply, and so does session 1's (due 40 ms after
    // its first). Lower bounds only: a busy machine makes things later.
    let server = LoggingServer::start(Duration::from_millis(320));
    let outcome = replay(dir.path(), &server, "");
    let arrivals = server.arrivals();
    let first = arrivals[0].at;
    let second_of_0 = arrivals.iter().find(|a| a.bytes == request(0, 1)).unwrap();
    assert!(second_of_0.at.duration_since(first) >= Duration::from_millis(318));
    let max_lag = outcome
        .summary
        .quantiles
        .iter()
        .filter_map(|row| row.lag_ms)
        .fold(0.0, f64::max);
    assert!(max_lag >= 100.0, "the largest lag is {max_lag} ms");
    let mut sessions: Vec<Vec<(usize, usize)>> = by_connection(&arrivals).into_values().collect();
    sessions.sort();
    assert_eq!(sessions, whole_capture(), "order is kept, late or not");
}

#[test]
fn loop_replays_the_capture_again_and_ammo_limit_counts_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let outcome = replay(dir.path(), &server, "loop = 2");
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 22);
    assert_eq!(by_connection(&arrivals).len(), 10);
    assert_eq!(outcome.summary.shots.planned, Some(22));
    // The second pass comes a period (1 s + the mean gap, 100 ms) after the
    // first: session 3's first request (at 600 ms, past the run's start-up)
    // and its repeat, within what a busy machine keeps (either may be late).
    let at = |bytes: &[u8], nth: usize| {
        arrivals
            .iter()
            .filter(|a| a.bytes == bytes)
            .nth(nth)
            .unwrap()
            .at
    };
    let period = at(&request(3, 0), 1).duration_since(at(&request(3, 0), 0));
    let margin = Duration::from_micros(KEPT_MARGIN_US as u64);
    let expected = Duration::from_millis(1100);
    assert!(
        period >= expected - margin && period <= expected + margin,
        "{period:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let outcome = replay(dir.path(), &server, "ammo_limit = 4");
    let arrivals = server.arrivals();
    assert_eq!(arrivals.len(), 4);
    assert_eq!(outcome.summary.shots.planned, Some(4));
}

/// Replay `ammofile` (a capture, imported on the fly) against `server` with
/// `options`; the run's outcome.
fn replay_capture(
    dir: &Path,
    server: &LoggingServer,
    ammofile: &Path,
    options: &str,
) -> tank_run::Outcome {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = replay_config(dir, server, ammofile, options);
    let spec = Spec::new(tank_config::load(&path, &[]).unwrap());
    let outcome = tank_run::run(&spec, Box::new(Silent), &Handle::default()).unwrap();
    assert_eq!(outcome.verdict, Verdict::Completed, "{}", outcome.text);
    outcome
}

/// Send `capture()` for real, each session on its own connection and each
/// request at its offset after the previous reply, to `server`.
fn send_capture(server: SocketAddr) {
    let start = Instant::now() + Duration::from_millis(50);
    let clients: Vec<_> = capture()
        .into_iter()
        .enumerate()
        .map(|(i, offsets)| {
            std::thread::spawn(move || {
                std::thread::sleep(
                    (start + Duration::from_micros(offsets[0]))
                        .saturating_duration_since(Instant::now())
                        .saturating_sub(Duration::from_millis(5)),
                );
                let mut stream = TcpStream::connect(server).unwrap();
                stream.set_nodelay(true).unwrap();
                for (j, offset) in offsets.iter().enumerate() {
                    let due = start + Duration::from_micros(*offset);
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                    stream.write_all(&request(i, j)).unwrap();
                    let mut reply = Vec::new();
                    let mut chunk = [0u8; 256];
                    while !reply.ends_with(b"ok") {
                        let n = stream.read(&mut chunk).unwrap();
                        assert!(n > 0, "the server closed early");
                        reply.extend_from_slice(&chunk[..n]);
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
}

#[test]
fn a_tcpdump_capture_replays_with_its_connections_order_bytes_and_timing() {
    let Some(tcpdump) = crate::support::component::binary("tcpdump", "tcpdump") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The production traffic: clients with known timing, recorded by tcpdump.
    let production = LoggingServer::start(Duration::ZERO);
    let pcap = dir.path().join("traffic.pcap");
    let dump = crate::import::Tcpdump::start(&tcpdump, production.addr.port(), &pcap);
    send_capture(production.addr);
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();
    let captured = production.arrivals();
    assert_eq!(captured.len(), 11);
    let captured_at = |i: usize, j: usize, speed: f64| {
        let arrival = captured.iter().find(|a| which(a) == (i, j)).unwrap();
        (arrival.at.duration_since(captured[0].at).as_micros() as f64 / speed) as i64
    };

    // The pcap given straight to a replay: imported on the fly, then fired.
    for speed in [1.0, 2.0] {
        let target = LoggingServer::start(Duration::ZERO);
        let outcome = replay_capture(
            dir.path(),
            &target,
            &pcap,
            &format!("replay_speed = {speed}"),
        );
        let arrivals = target.arrivals();
        assert_eq!(arrivals.len(), 11, "{}", outcome.text);
        // Every request's bytes as captured (by_connection checks them), in
        // order, one connection per captured connection.
        let mut sessions: Vec<Vec<(usize, usize)>> =
            by_connection(&arrivals).into_values().collect();
        sessions.sort();
        assert_eq!(sessions, whole_capture());
        // At the captured offsets (÷ speed), as the production server saw them.
        assert_near(&arrivals, |i, j| captured_at(i, j, speed));
        let shots = &outcome.summary.shots;
        assert_eq!((shots.planned, shots.sent), (Some(11), Some(11)));
    }
}

#[test]
fn an_access_log_given_as_ammofile_is_imported_with_the_queues_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "10.0.0.7 - - [10/Oct/2000:13:55:36 -0700] \"GET /one HTTP/1.1\" 200 2326 \"-\" \"ua\"\n\
         10.0.0.7 - - [10/Oct/2000:13:55:36 -0700] \"GET /two?x=1 HTTP/1.1\" 200 2326 \"-\" \"ua\"\n",
    )
    .unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let outcome = replay_capture(dir.path(), &server, &log, "headers = [Host: replay]");
    let arrivals = server.arrivals();
    let seen: Vec<String> = arrivals
        .iter()
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned())
        .collect();
    assert_eq!(
        seen,
        [
            "GET /one HTTP/1.1\r\nHost: replay\r\n\r\n",
            "GET /two?x=1 HTTP/1.1\r\nHost: replay\r\n\r\n"
        ],
        "{}",
        outcome.text
    );
    // One client, one session, one connection.
    assert!(arrivals
        .iter()
        .all(|a| a.connection == arrivals[0].connection));
}

#[test]
fn a_broken_capture_is_an_error_at_the_queues_ammofile() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("broken.pcap");
    // A pcap of a link type no importer reads, with one packet.
    let mut bytes = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    bytes.extend_from_slice(&65535u32.to_le_bytes());
    bytes.extend_from_slice(&0xbeefu32.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&4u32.to_le_bytes());
    bytes.extend_from_slice(&4u32.to_le_bytes());
    bytes.extend_from_slice(&[1, 2, 3, 4]);
    std::fs::write(&pcap, &bytes).unwrap();
    let path = dir.path().join("load.ini");
    std::fs::write(
        &path,
        format!(
            "[phantom]\naddress = 127.0.0.1:9\nammo_type = sessions\nammofile = {}\n",
            pcap.display()
        ),
    )
    .unwrap();
    let spec = Spec::new(tank_config::load(&path, &[]).unwrap());
    let error = tank_run::run(&spec, Box::new(Silent), &Handle::default()).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("load.ini:4: [phantom] ammofile"),
        "{message}"
    );
    assert!(message.contains("broken.pcap"), "{message}");
    assert!(message.contains("packet 1 has link type"), "{message}");
}

#[test]
fn tank_plan_describes_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let path = config(dir.path(), &server, "");
    let out = crate::support::tank()
        .args(["plan", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "replay         speed 1, captured connections",
        "capture        5 sessions, 11 requests over 1s; largest gap 200ms",
        "concurrency    at most 3 sessions open at once (3 of this replay's)",
        "session pool   3 (the replay's peak of open sessions; set instances for more)",
        "capture rps    11.0 on average over 1s; in each whole second: min 1, max 10: 10 1",
        "shots          11, due from 0ms to 1s",
    ] {
        assert!(text.contains(line), "`{line}` in:\n{text}");
    }
    // Written out as stpd, the requests keep their times and bytes, and the
    // sessions they lose are said to be lost.
    let stpd = dir.path().join("replay.stpd");
    let out = crate::support::tank()
        .args(["plan", "-c"])
        .arg(&path)
        .arg("--stpd")
        .arg(&stpd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("an stpd file has no sessions"), "{stderr}");
    let written = std::fs::read(&stpd).unwrap();
    let first = request(0, 0);
    assert!(
        written.starts_with(format!("{} 0 s0\n", first.len()).as_bytes()),
        "{}",
        String::from_utf8_lossy(&written)
    );
}

#[test]
fn a_stopped_replay_counts_what_it_did_not_send() {
    let dir = tempfile::tempdir().unwrap();
    let server = LoggingServer::start(Duration::ZERO);
    let handle = Handle::default();
    let stopper = {
        let handle = handle.clone();
        let log = Arc::clone(&server.log);
        std::thread::spawn(move || {
            // Stopped once it fires, however long a busy machine takes to start it.
            let waited = Instant::now();
            while log.lock().unwrap().is_empty() && waited.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(10));
            }
            handle.stop();
        })
    };
    // 40 passes would take 44 s.
    let outcome = run(dir.path(), &server, "loop = 40", &handle);
    stopper.join().unwrap();
    assert_eq!(outcome.verdict, Verdict::Interrupted);
    let shots = &outcome.summary.shots;
    let sent = shots.sent.unwrap();
    assert!((1..440).contains(&sent), "{sent}");
    assert_eq!(shots.planned, Some(440));
    assert_eq!(shots.unsent, Some(440 - sent));
    let phout = std::fs::read_to_string(outcome.artifacts.join("phout.log")).unwrap();
    assert_eq!(phout.lines().count() as u64, sent);
    assert_eq!(server.arrivals().len() as u64, sent);
}

#[test]
fn a_replay_that_would_fire_nothing_is_an_error_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sessions");
    std::fs::write(&empty, "tank-sessions 1\n# an import that found nothing\n").unwrap();
    let two = dir.path().join("two.sessions");
    std::fs::write(
        &two,
        "tank-sessions 1\nS 0 0 a\nR 3 0 0 /\nGET\nE 0 0\nS 1 5 b\nR 3 5 1 /\nGET\nE 1 5\n",
    )
    .unwrap();
    let cases = [
        (
            &empty,
            "",
            "the sessions file has no request (0 sessions): nothing to replay",
        ),
        (
            &two,
            "replay_skip = 5\nreplay_offset = 3\n",
            "replay_skip = 5, replay_offset = 3 select none of its 2 sessions: nothing to replay",
        ),
    ];
    for (file, options, expected) in cases {
        let path = dir.path().join("load.ini");
        std::fs::write(
            &path,
            format!(
                "[phantom]\naddress = 127.0.0.1:9\nammo_type = sessions\nammofile = {}\n{options}",
                file.display()
            ),
        )
        .unwrap();
        for command in [&["-c", "load.ini", "-q"][..], &["plan", "-c", "load.ini"]] {
            let out = crate::support::tank()
                .args(command)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command:?}: {stderr}");
            assert!(
                stderr.contains("load.ini:4: [phantom] ammofile"),
                "{stderr}"
            );
            assert!(stderr.contains(expected), "{command:?}: {stderr}");
        }
    }
}
