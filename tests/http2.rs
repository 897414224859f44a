//! `tank_type = http2` against a real nginx (Debian's 1.22): every request
//! goes out as HTTP/2 (the access log's `$server_protocol`), multiplexed over
//! the connections asked for (its `$connection`), h2c with prior knowledge
//! or h2 over TLS by ALPN, and a server that does not speak it is refused
//! with HTTP/2's own net code.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::support::component::{binary, Component};
use crate::support::h2server::H2Server;
use crate::support::{artifacts, assert_ran, phout, shoot};

/// nginx serving `/small` (200) on a free port, with `listen` options
/// `listen` (`http2`, `ssl http2`, `ssl`), and `extra` in its `http` block;
/// its access log has `$server_protocol $connection $uri $status`.
pub fn nginx(listen: &str, extra: &str) -> Option<Component> {
    let nginx = binary("nginx", "nginx")?;
    let listen = listen.to_owned();
    let extra = extra.to_owned();
    Some(Component::start(&nginx, move |port, dir| {
        let tls = if listen.contains("ssl") {
            let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
            std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
            std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
            format!(
                "ssl_certificate {0}/cert.pem; ssl_certificate_key {0}/key.pem;",
                dir.display()
            )
        } else {
            String::new()
        };
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  log_format h2 '$server_protocol $connection $uri $status';\n\
             access_log {d}/access.log h2;\n  client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi;\n\
             scgi_temp_path {d}/scgi;\n  {extra}\n\
             server {{\n    listen 127.0.0.1:{port} {listen};\n    {tls}\n\
             location /small {{ return 200 \"0123456789\"; }}\n  }}\n}}\n",
            d = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        vec![
            "-p".into(),
            dir.display().to_string(),
            "-c".into(),
            dir.join("nginx.conf").display().to_string(),
            "-e".into(),
            dir.join("error.log").display().to_string(),
        ]
    }))
}

/// The access log's lines, each split into its fields.
fn access_log(nginx: &Component) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(nginx.dir.path().join("access.log")).unwrap_or_default();
    text.lines()
        .map(|line| line.split(' ').map(str::to_owned).collect())
        .collect()
}

/// Wait (up to 10 s) until nginx has logged `lines` requests: it writes
/// the log line after it answered.
fn logged(nginx: &Component, lines: usize) -> Vec<Vec<String>> {
    let started = std::time::Instant::now();
    loop {
        let log = access_log(nginx);
        if log.len() >= lines || started.elapsed() > Duration::from_secs(10) {
            return log;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config(dir: &Path, port: u16, extra: &str) -> String {
    format!(
        "[phantom]\naddress = 127.0.0.1:{port}\ntank_type = http2\n\
         uris = /small\n  /missing\nheader_http = 1.1\n\
         headers = [Host: localhost] [Connection: keep-alive]\n\
         instances_schedule = const(16, 1s)\nloop = 100\n{extra}\n\
         [tank]\nartifacts_base_dir = {}\n",
        dir.join("logs").display()
    )
}

#[test]
fn h2c_streams_share_the_connections_asked_for() {
    let Some(nginx) = nginx("http2", "keepalive_requests 1000000;") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "connections = 2"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("dropped from the requests: Connection (2 distinct requests)"),
        "{stderr}"
    );
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r.net_code == 0), "{rows:?}");
    let ok = rows.iter().filter(|r| r.proto_code == 200).count();
    let missing = rows.iter().filter(|r| r.proto_code == 404).count();
    assert_eq!((ok, missing), (100, 100));
    // Sizes are the streams' frames: a HEADERS frame out at least, HEADERS
    // and DATA in.
    assert!(
        rows.iter().all(|r| r.size_out >= 10 && r.size_in >= 10),
        "{rows:?}"
    );
    let log = logged(&nginx, 200);
    assert_eq!(log.len(), 200);
    assert!(log.iter().all(|line| line[0] == "HTTP/2.0"), "{log:?}");
    let connections: BTreeSet<&String> = log.iter().map(|line| &line[1]).collect();
    assert_eq!(connections.len(), 2, "{log:?}");
}

#[test]
fn the_streams_of_one_thread_are_spread_over_its_connections() {
    // One I/O thread, 16 streams, 4 connections: 4 carry them (before, the
    // first carried all 16, having room for 128, and 3 never opened).
    let Some(nginx) = nginx("http2", "keepalive_requests 1000000;") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "connections = 4\nthreads = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let log = logged(&nginx, 200);
    assert_eq!(log.len(), 200);
    let connections: BTreeSet<&String> = log.iter().map(|line| &line[1]).collect();
    assert_eq!(connections.len(), 4, "{log:?}");
}

#[test]
fn without_connections_as_few_as_the_streams_need() {
    let Some(nginx) = nginx("http2", "keepalive_requests 1000000;") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // One I/O thread, 16 streams in flight: nginx allows 128 on a connection.
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "threads = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    assert_eq!(phout(&artifacts(dir.path())).len(), 200);
    let log = logged(&nginx, 200);
    let connections: BTreeSet<&String> = log.iter().map(|line| &line[1]).collect();
    assert_eq!(connections.len(), 1, "{log:?}");
}

#[test]
fn h2_over_tls_is_chosen_by_alpn() {
    let Some(nginx) = nginx("ssl http2", "keepalive_requests 1000000;") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "ssl = 1\nconnections = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r.net_code == 0), "{rows:?}");
    // The stream that opened the connection carries its connect time.
    assert!(rows.iter().any(|r| r.connect > 0));
    let log = logged(&nginx, 200);
    assert!(log.iter().all(|line| line[0] == "HTTP/2.0"), "{log:?}");
    let connections: BTreeSet<&String> = log.iter().map(|line| &line[1]).collect();
    assert_eq!(connections.len(), 1, "{log:?}");
}

#[test]
fn a_tls_server_without_h2_is_refused_with_its_own_code() {
    let Some(nginx) = nginx("ssl", "") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "ssl = 1\nloop = 1\nconnections = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter().all(|r| r.net_code == 1202 && r.size_out == 0),
        "{rows:?}"
    );
    assert!(access_log(&nginx).is_empty());
}

#[test]
fn an_http1_server_shot_with_h2c_is_said_not_to_speak_http2() {
    // nginx without `http2` answers the h2c preface `PRI * HTTP/2.0` with a 400.
    let Some(nginx) = nginx("", "") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "loop = 1\nconnections = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r.net_code == 1202 && r.proto_code == 0),
        "{rows:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the server does not speak HTTP/2"),
        "{stdout}"
    );
}

#[test]
fn goaway_ends_the_streams_the_server_did_not_take_and_only_those() {
    // nginx says GOAWAY after every 10 requests on a connection.
    let Some(nginx) = nginx("http2", "keepalive_requests 10;") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), nginx.port, "connections = 1\nthreads = 1"),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    assert_eq!(rows.len(), 200);
    // A stream nginx did not take (above GOAWAY's last stream id) went once
    // more on a new connection, as a retry: rotation is not failure. A row is
    // an answer, or GOAWAY's NO_ERROR for one refused twice; nothing is lost.
    let answered = rows.iter().filter(|r| r.net_code == 0).count();
    let refused = rows.iter().filter(|r| r.net_code == 1100).count();
    assert_eq!(answered + refused, 200, "{rows:?}");
    // With 16 streams in flight and 10 a connection, a stream sent again can
    // meet the next GOAWAY too: each refused row was refused twice.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let retries = summary["shots"]["retries"].as_u64().unwrap() as usize;
    assert!(retries > refused, "{} retries, {refused} refused", retries);
    // nginx saw each answer once, and nothing of the refused streams.
    let log = logged(&nginx, answered);
    assert_eq!(log.len(), answered);
    // Each connection answered at most 10.
    let connections: BTreeSet<&String> = log.iter().map(|line| &line[1]).collect();
    assert!(
        connections.len() * 10 >= answered,
        "{} connections",
        connections.len()
    );
    assert!(connections.len() > 1);
}

/// A run of `uris` (each once) against the hostile server, with `extra` options.
fn against_hostile(uris: &str, extra: &str) -> Vec<crate::support::Row> {
    against_hostile_run(uris, extra).0
}

/// The same, with the run's `summary.json`.
fn against_hostile_run(uris: &str, extra: &str) -> (Vec<crate::support::Row>, serde_json::Value) {
    let server = H2Server::start();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\ntank_type = http2\nconnections = 1\n{uris}\n\
         instances_schedule = const(4, 1s)\nloop = 1\n{extra}\n\
         [tank]\nartifacts_base_dir = {}\n",
        server.addr,
        dir.path().join("logs").display()
    );
    let out = shoot(dir.path(), &config, Duration::from_secs(120));
    assert_ran(&out);
    let run = artifacts(dir.path());
    let summary = std::fs::read_to_string(run.join("summary.json")).unwrap();
    (phout(&run), serde_json::from_str(&summary).unwrap())
}

#[test]
fn resets_keep_their_reason_in_the_net_code() {
    let (rows, summary) = against_hostile_run("uris = /ok\n  /refuse\n  /reset", "");
    // REFUSED_STREAM is the server saying it did not process it: sent once
    // more (a retry), refused again. INTERNAL_ERROR is not sent again.
    assert_eq!(summary["shots"]["retries"], 1, "{}", summary["shots"]);
    let mut codes: Vec<(u16, u16)> = rows.iter().map(|r| (r.net_code, r.proto_code)).collect();
    codes.sort_unstable();
    // 1007: REFUSED_STREAM (refused again when sent once more); 1002: INTERNAL_ERROR.
    assert_eq!(codes, [(0, 200), (1002, 0), (1007, 0)], "{rows:?}");
}

#[test]
fn a_connection_dropped_under_a_stream_is_connection_lost() {
    let rows = against_hostile("uris = /drop", "");
    assert_eq!(rows.len(), 1);
    // Closed without GOAWAY: 1200 (a reset, with its errno, would be 104).
    assert_eq!(rows[0].net_code, 1200, "{rows:?}");
}

#[test]
fn a_second_ctrl_c_keeps_the_bytes_of_the_streams_it_abandons() {
    // Every stream gets its head and a byte, and never ends.
    let server = H2Server::start();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {}\ntank_type = http2\nconnections = 1\nuris = /head\n\
         rps_schedule = const(20,60s)\ntimeout = 60s\n",
        server.addr
    );
    let (out, took) = crate::support::interrupted(
        dir.path(),
        &config,
        || server.heads() >= 10,
        &[libc::SIGINT, libc::SIGINT],
    );
    assert!(took < Duration::from_secs(5), "tank took {took:?} to stop");
    assert_eq!(out.status.code(), Some(1));
    let rows = phout(&artifacts(dir.path()));
    assert!(rows.len() >= 10, "{} rows", rows.len());
    // Each stream's bytes so far are kept: its request out, its head and byte in.
    for row in &rows {
        assert_eq!((row.net_code, row.proto_code), (125, 0), "{row:?}");
        assert!(row.size_out > 0, "{row:?}");
    }
    let answered = rows.iter().filter(|r| r.size_in > 0).count();
    assert!(answered >= 10, "{answered} rows with bytes in: {rows:?}");
}

#[test]
fn how_a_server_broke_http2_is_said_once() {
    // A server that sends DATA on stream 0 after its SETTINGS, on every connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
            let Ok((mut socket, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            socket.set_nonblocking(false).unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if socket.read_exact(&mut preface).is_err() {
                    return;
                }
                let settings = [0u8, 0, 0, 4, 0, 0, 0, 0, 0];
                let data_on_0 = [0u8, 0, 1, 0, 0, 0, 0, 0, 0, b'x'];
                let _ = socket.write_all(&[&settings[..], &data_on_0[..]].concat());
                let mut sink = [0u8; 4096];
                while matches!(socket.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[phantom]\naddress = {addr}\ntank_type = http2\nconnections = 1\nuris = /\n\
         instances_schedule = const(2, 1s)\nloop = 3\n[tank]\nartifacts_base_dir = {}\n",
        dir.path().join("logs").display()
    );
    let out = shoot(dir.path(), &config, Duration::from_secs(120));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    server.join().unwrap();
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert!(rows.iter().all(|r| r.net_code == 71), "{rows:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .matches(
                "[phantom] the server broke HTTP/2 (DATA on stream 0), and tank ended the \
                 connection: the requests that met it have net code 71"
            )
            .count(),
        1,
        "{stdout}"
    );
}

#[test]
fn a_body_held_back_by_flow_control_is_a_stall() {
    // 100 KB: more than the server's initial window (64 KB) lets out.
    let dir = tempfile::tempdir().unwrap();
    let body = "x".repeat(100_000);
    let request = format!(
        "POST /stall HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let ammo = dir.path().join("ammo.txt");
    std::fs::write(&ammo, format!("{} stall\n{request}\n", request.len())).unwrap();
    let rows = against_hostile(
        &format!("ammofile = {}\nammo_type = phantom", ammo.display()),
        "timeout = 1s",
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].net_code, 1201, "{rows:?}");
    // What left is the window's worth, not the whole body.
    assert!(rows[0].size_out < 100_000, "{rows:?}");
}
