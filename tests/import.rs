//! `tank import` of a capture made for real: a server on 127.0.0.1, a client
//! with known timing over keep-alive and one-request connections, recorded by
//! a real `tcpdump -i lo` (Debian's tcpdump; in CI a missing one fails). The
//! sessions file must hold one session per connection, each connection's
//! requests in order and byte for byte, at the client's own send offsets
//! within 1 ms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tank_plan::sessions::{Record, SessionsReader};

use crate::support::component::binary;
use crate::support::tank;

/// A running tcpdump, interrupted (and reaped) when dropped, even on failure.
pub(crate) struct Tcpdump {
    child: Child,
}

impl Tcpdump {
    /// Capture `port` on loopback into `file`; returns once it is listening.
    pub(crate) fn start(tcpdump: &Path, port: u16, file: &Path) -> Tcpdump {
        let mut child = Command::new(tcpdump)
            // --immediate-mode: packets reach tcpdump as they come, not in
            // blocks on a 1 s timer that a quick SIGINT would cut short.
            .args(["-i", "lo", "-n", "-s", "0", "-U", "--immediate-mode", "-w"])
            .arg(file)
            .args(["tcp", "port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tcpdump");
        let stderr = child.stderr.take().expect("tcpdump's stderr");
        let mut guard = Tcpdump { child };
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("listening on") => break,
                Some(Ok(_)) => {}
                _ => {
                    let status = guard.child.wait().ok();
                    panic!("tcpdump did not start listening ({status:?})");
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "tcpdump is slow to start"
            );
        }
        // Keep draining stderr so tcpdump never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        guard
    }

    /// SIGINT (tcpdump flushes and exits), then wait at most 10 s.
    pub(crate) fn stop(mut self) {
        self.interrupt_and_wait();
    }

    fn interrupt_and_wait(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Tcpdump {
    fn drop(&mut self) {
        self.interrupt_and_wait();
    }
}

/// A tiny HTTP/1.1 server: answers every request `ok`, closes after `Connection: close`.
fn serve(listener: TcpListener) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { return };
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut writer = stream;
            loop {
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                let lower = head.to_ascii_lowercase();
                // The body, framed as tank frames requests (tank-http1).
                let mut framing = tank_http1::Framing::default();
                for line in head.lines().skip(1) {
                    if let Some((name, value)) = line.split_once(':') {
                        framing
                            .header(name.as_bytes(), value.as_bytes())
                            .expect("framing headers");
                    }
                }
                let mut body = framing.request_body().expect("a framed body");
                while !body.is_complete() {
                    let Ok(data) = reader.fill_buf() else { return };
                    if data.is_empty() {
                        return;
                    }
                    let (used, done) = body.decode(data, 8192, u64::MAX).expect("a body");
                    reader.consume(used);
                    if done {
                        break;
                    }
                }
                let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                if lower.contains("connection: close") {
                    return;
                }
            }
        });
    }
}

/// What the client sent on one connection: its port, and (offset from the
/// first request of all, bytes) per request.
struct Sent {
    client: SocketAddr,
    requests: Vec<(Duration, Vec<u8>)>,
}

/// Send `requests` on a new connection at `start + offset` each, reading each reply.
fn connection(server: SocketAddr, start: Instant, requests: &[(u64, Vec<u8>)]) -> Sent {
    let mut stream = TcpStream::connect(server).expect("connect");
    stream.set_nodelay(true).unwrap();
    let client = stream.local_addr().unwrap();
    let mut sent = Vec::new();
    for (offset_ms, bytes) in requests {
        let due = start + Duration::from_millis(*offset_ms);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let at = start.elapsed();
        stream.write_all(bytes).unwrap();
        let mut reply = [0u8; 64];
        let mut got = 0;
        while !reply[..got].ends_with(b"ok") {
            let n = stream.read(&mut reply[got..]).unwrap();
            assert!(n > 0, "the server closed early");
            got += n;
        }
        sent.push((at, bytes.clone()));
    }
    Sent {
        client,
        requests: sent,
    }
}

fn get(path: &str, close: bool) -> Vec<u8> {
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n{connection}\r\n").into_bytes()
}

#[test]
fn a_tcpdump_capture_imports_to_its_connections_requests_bytes_and_offsets() {
    let Some(tcpdump) = binary("tcpdump", "tcpdump") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.pcap");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    std::thread::spawn(move || serve(listener));
    let dump = Tcpdump::start(&tcpdump, server.port(), &capture);
    std::thread::sleep(Duration::from_millis(300));

    let post =
        b"POST /form?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world".to_vec();
    let chunked =
        b"PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            .to_vec();
    let start = Instant::now();
    // Two keep-alive connections interleaved in time, then one-request ones.
    let first = std::thread::spawn(move || {
        connection(
            server,
            start,
            &[(0, get("/a", false)), (40, post), (80, get("/a?2", false))],
        )
    });
    let second = std::thread::spawn(move || {
        connection(server, start, &[(20, get("/b", false)), (60, chunked)])
    });
    let mut sent = vec![first.join().unwrap(), second.join().unwrap()];
    for (i, offset) in [100u64, 120, 140].iter().enumerate() {
        sent.push(connection(
            server,
            start,
            &[(*offset, get(&format!("/once/{i}"), true))],
        ));
    }
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();

    let out = dir.path().join("sessions.txt");
    let output = tank()
        .arg("import")
        .arg(&capture)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run tank import");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tank import failed:\n{stderr}");
    assert!(stderr.contains("pcap: 5 sessions, 8 requests"), "{stderr}");
    assert!(stderr.contains("0 warnings"), "{stderr}");

    // Per session (by client port): its requests' (offset, bytes), in file order.
    let mut reader = SessionsReader::open(&out).unwrap();
    let mut labels = std::collections::HashMap::new();
    let mut sessions: std::collections::HashMap<String, Vec<(u64, Vec<u8>)>> = Default::default();
    while let Some(record) = reader.next_record().unwrap() {
        match record {
            Record::Begin { id, label, .. } => {
                labels.insert(id, label.to_string());
            }
            Record::Request {
                id,
                offset_us,
                bytes,
                ..
            } => sessions
                .entry(labels[&id].clone())
                .or_default()
                .push((offset_us, bytes.to_vec())),
            Record::End { .. } => {}
        }
    }
    assert_eq!(sessions.len(), sent.len(), "{:?}", sessions.keys());
    let first_send = sent[0].requests[0].0;
    for connection in &sent {
        let label = format!("{}→{}", connection.client, server);
        let got = sessions
            .get(&label)
            .unwrap_or_else(|| panic!("no session {label}"));
        let want: Vec<&[u8]> = connection.requests.iter().map(|(_, b)| &b[..]).collect();
        let got_bytes: Vec<&[u8]> = got.iter().map(|(_, b)| &b[..]).collect();
        assert_eq!(got_bytes, want, "{label}");
        for ((offset_us, _), (at, _)) in got.iter().zip(&connection.requests) {
            let client_us = (*at - first_send).as_micros() as i64;
            let error = (*offset_us as i64 - client_us).abs();
            assert!(
                error <= 1000,
                "{label}: offset {offset_us} µs, client sent at {client_us} µs"
            );
        }
    }
}

#[test]
fn an_access_log_imports_to_stdout_with_the_given_host_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a?q=1 HTTP/1.1\" 200 5 \"-\" \"curl\" 971211336.100\n\
         not a log line\n\
         10.0.0.2 - - [10/Oct/2000:13:55:36 -0700] \"POST /b HTTP/1.0\" 201 0 \"-\" \"curl\" 971211336.350\n",
    )
    .unwrap();
    let output = tank()
        .arg("import")
        .arg(&log)
        .args(["--host", "example.com", "-H", "X-Replay: 1"])
        .output()
        .expect("run tank import");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("access.log:2: no [time]"), "{stderr}");
    assert!(
        stderr.contains("access: 2 sessions, 2 requests"),
        "{stderr}"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let records: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        records,
        [
            "tank-sessions 1",
            "S 0 0 10.0.0.1",
            "R 55 0 0 /a",
            "GET /a?q=1 HTTP/1.1",
            "Host: example.com",
            "X-Replay: 1",
            "",
            "",
            "E 0 0",
            "S 1 250000 10.0.0.2",
            "R 71 250000 1 /b",
            "POST /b HTTP/1.0",
            "Content-Length: 0",
            "Host: example.com",
            "X-Replay: 1",
            "",
            "",
            "E 1 250000",
        ]
    );
}

#[test]
fn an_option_for_another_format_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("x.har");
    std::fs::write(&har, r#"{"log": {"entries": []}}"#).unwrap();
    let output = tank()
        .arg("import")
        .arg(&har)
        .args(["--server-port", "80"])
        .output()
        .expect("run tank import");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--server-port applies to pcap and pcapng, not to har"),
        "{stderr}"
    );
}

/// `tank import LOG` in `dir`: its exit status, stdout and stderr.
fn import_log(dir: &Path, log: &str) -> (bool, String, String) {
    std::fs::write(dir.join("access.log"), log).unwrap();
    let output = tank()
        .args(["import", "access.log", "--host", "h"])
        .current_dir(dir)
        .output()
        .expect("run tank import");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_corrupt_clock_is_refused_where_it_is_read_and_never_reaches_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let line = |time: &str, path: &str, msec: &str| {
        format!("10.0.0.1 - - [{time} +0000] \"GET {path} HTTP/1.1\" 200 612 \"-\" \"curl/8.0\" {msec}\n")
    };
    // A `$msec` of 10²⁰ s beside its line's own [time]: that line, named, not the log.
    for request_time in ["0.001", "0.000"] {
        let log = line(
            "14/Nov/2023:22:13:00",
            "/huge",
            &format!("99999999999999999999.000 {request_time}"),
        ) + &line("14/Nov/2023:22:13:00", "/a", "1699999980.000 0.001")
            + &line("14/Nov/2023:22:13:01", "/b", "1699999981.000 0.000");
        let (ok, stdout, stderr) = import_log(dir.path(), &log);
        assert!(ok, "{stderr}");
        assert!(
            stderr.contains("access.log:1: `$msec` 99999999999999999999.000 is 584488 years"),
            "{stderr}"
        );
        assert!(stderr.contains("1 warning;"), "{stderr}");
        let records: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(['S', 'R', 'E']))
            .collect();
        assert_eq!(
            records,
            [
                "S 0 0 10.0.0.1",
                "R 28 0 0 /a",
                "R 28 1001000 0 /b",
                "E 0 1001000"
            ]
        );
    }
    for bad in ["-1699999980.000", "1699999980..000"] {
        let log = line("14/Nov/2023:22:13:00", "/a", "1699999980.000")
            + &line("14/Nov/2023:22:13:00", "/b", bad);
        let (ok, _, stderr) = import_log(dir.path(), &log);
        assert!(ok, "{stderr}");
        assert!(
            stderr.contains(&format!("access.log:2: `{bad}` is not a time in seconds")),
            "{stderr}"
        );
        assert!(stderr.contains("1 session, 1 request,"), "{stderr}");
    }
    // Lines whose clocks agree, years apart: an error naming both.
    let log = line("14/Nov/2023:22:13:00", "/a", "1699999980.000")
        + &line("14/Nov/2023:22:13:01", "/b", "1699999981.000")
        + &line("14/Nov/9999:22:13:01", "/c", "253398233581.000");
    let (ok, _, stderr) = import_log(dir.path(), &log);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("access.log:3: its time is 7976 years after that of line 1"),
        "{stderr}"
    );
    // A sessions file holding such an offset: refused where the record is, not an abort.
    let request = "GET / HTTP/1.0\r\n\r\n";
    let far = 18_000_000_000_000_000_000u64;
    let sessions = format!(
        "tank-sessions 1\nS 0 0 a\nR 18 0 0 /\n{request}\nR 18 {far} 0 /\n{request}\nE 0 {far}\n"
    );
    std::fs::write(dir.path().join("far.sessions"), sessions).unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nammofile = far.sessions\nammo_type = sessions\n",
    )
    .unwrap();
    for command in [&["plan", "-c", "load.ini"][..], &["-c", "load.ini", "-q"]] {
        let output = tank()
            .args(command)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            stderr.contains("far.sessions: byte 54: offset 18000000000000000000 µs"),
            "{stderr}"
        );
    }
}

/// `tank import FILE` in `dir` with `env`: its exit code and stderr.
fn import_file(
    dir: &Path,
    file: &str,
    bytes: &[u8],
    env: &[(&str, &str)],
    args: &[&str],
) -> (Option<i32>, String) {
    std::fs::write(dir.join(file), bytes).unwrap();
    let output = tank()
        .args(["import", file, "-o", "out.sessions"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("run tank import");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn what_is_not_a_capture_is_an_error_said_in_the_users_terms() {
    let dir = tempfile::tempdir().unwrap();
    let prose: String = (1..=150)
        .map(|n| format!("Line {n} of a document, not a log.\n"))
        .collect();
    let pcap_magic: &[u8] = &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0];
    // pcapng: a section header, an interface, then a packet block whose two lengths differ.
    let mut pcapng = Vec::new();
    for word in [
        0x0A0D0D0Au32,
        28,
        0x1A2B3C4D,
        1,
        0xffff_ffff,
        0xffff_ffff,
        28,
    ] {
        pcapng.extend_from_slice(&word.to_le_bytes());
    }
    for word in [1u32, 20, 1, 0, 20] {
        pcapng.extend_from_slice(&word.to_le_bytes());
    }
    for word in [6u32, 36, 0, 0, 0, 4, 4, 0x6463_6261, 99] {
        pcapng.extend_from_slice(&word.to_le_bytes());
    }
    let cases: [(&str, &[u8], &str); 4] = [
        ("README.md", prose.as_bytes(), "README.md:1: no [time]; expected `ADDR - USER [TIME] \"METHOD URI HTTP/x.y\" STATUS BYTES ...`; none of its first 100 lines is an access-log line: expected a pcap, pcapng or HAR file, or an nginx/Apache access log"),
        ("empty.log", b"", "empty.log: the file is empty; expected a pcap, pcapng or HAR file"),
        ("cut.pcap", pcap_magic, "cut.pcap: byte 0: the file is cut short here; expected a pcap or pcapng file header"),
        ("bad.pcapng", &pcapng, "bad.pcapng: byte 48: a block whose length, type or byte order does not fit together; expected a packet record"),
    ];
    for (file, bytes, expected) in cases {
        let (code, stderr) = import_file(dir.path(), file, bytes, &[], &[]);
        assert_eq!(code, Some(1), "{file}: {stderr}");
        assert!(stderr.contains(expected), "{file}: {stderr}");
        assert!(!stderr.contains("warning"), "{file}: {stderr}");
    }
    // A temporary file that cannot be made is named as what failed, not as the output.
    let log = "10.0.0.1 - - [14/Nov/2023:22:13:00 +0000] \"GET /a HTTP/1.1\" 200 1\n".repeat(50);
    let (code, stderr) = import_file(
        dir.path(),
        "access.log",
        log.as_bytes(),
        &[("TMPDIR", "/nonexistent/tank-test")],
        &["--host", "h", "--memory", "0"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "access.log: holding requests in a temporary file (in TMPDIR, past --memory): "
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("os error").count(),
        1,
        "the cause once: {stderr}"
    );
}
