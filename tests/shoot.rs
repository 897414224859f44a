//! `tank -c load.ini` end to end against scripted servers on 127.0.0.1.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::support::server::{Behaviour, Server};
use crate::support::{artifacts, assert_ran, interrupted, phout, shoot, tank, Row};

const LIMIT: Duration = Duration::from_secs(30);

// Schedules of one second end in `const(0,2s)`: a shot that a machine
// starved beside other work starts after its schedule's end is rightly
// unsent, and these tests count every shot exactly.
fn config(addr: std::net::SocketAddr, rest: &str) -> String {
    format!("[phantom]\naddress = {addr}\n{rest}\n")
}

/// Run `[phantom]` options `rest` against `server`: tank's output, and its phout rows.
fn shoot_at(server: &Server, rest: &str) -> (std::process::Output, Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(dir.path(), &config(server.addr(), rest), LIMIT);
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    (out, rows)
}

#[test]
fn open_model_accounts_for_every_shot_and_reuses_the_connection() {
    let server = Server::start(Behaviour::KeepAlive);
    let (out, rows) = shoot_at(
        &server,
        "rps_schedule = const(20,1s) const(0,2s)\nuris = /a /b\nheader_http = 1.1\ninstances = 1",
    );
    // On a loaded machine one instance may fall behind: shots not started by the
    // schedule's end are unsent, never fired late, and every shot is accounted for.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sent = format!(
        "planned 20, sent {}, unsent {}",
        rows.len(),
        20 - rows.len()
    );
    assert!(stdout.contains(&sent), "expected `{sent}` in {stdout}");
    assert!(rows.len() >= 5, "{} of 20 shots", rows.len());
    assert!(rows
        .iter()
        .all(|r| r.proto_code == 200 && r.net_code == 0 && r.size_in == 43));
    // One instance: one connection, connected once.
    assert_eq!(rows.iter().filter(|r| r.connect > 0).count(), 1);
    assert_eq!(server.requests().len(), rows.len());
}

#[test]
fn bytes_on_the_wire_are_the_planned_ammo_in_every_format() {
    let mut phantom = Vec::new();
    for (request, tag) in [
        (&b"GET /p HTTP/1.0\r\n\r\n"[..], " one"),
        (b"POST /q HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody", ""),
    ] {
        phantom.extend_from_slice(format!("{}{tag}\n", request.len()).as_bytes());
        phantom.extend_from_slice(request);
        phantom.push(b'\n');
    }
    let formats: [(&str, &[u8]); 5] = [
        ("phantom", &phantom),
        ("uri", b"[Host: example.org]\n/a tag1\n/b\n"),
        ("uripost", b"[Host: example.org]\n5 /post tagp\nhello\n0 /empty\n"),
        ("access", b"h - - [t] \"GET /x?y=1 HTTP/1.1\" 200 5\nh - - [t] \"POST /no HTTP/1.1\" 200 5\nh - - [t] \"GET /z HTTP/1.0\" 200 5\n"),
        ("uris", b""),
    ];
    for (format, ammo) in formats {
        let server = Server::start(Behaviour::KeepAlive);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ammo.txt"), ammo).unwrap();
        let source = if format == "uris" {
            "uris = /1 /2 /3".to_string()
        } else {
            format!("ammofile = ammo.txt\nammo_type = {format}")
        };
        let cfg = config(
            server.addr(),
            &format!(
                // The closed model fires every shot, however loaded the machine.
                "instances_schedule = const(1,1s)\n{source}\nloop = 2\nheader_http = 1.1"
            ),
        );
        let out = shoot(dir.path(), &cfg, LIMIT);
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stpd = tank()
            .args(["plan", "-c", "load.ini", "--stpd", "-"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(stpd.status.success(), "{format}");
        let planned = missiles(&stpd.stdout);
        assert!(planned.len() >= 2, "{format}");
        assert_eq!(
            server.requests(),
            planned,
            "{format}: the server got exactly the planned bytes"
        );
        assert_eq!(
            phout(&artifacts(dir.path())).len(),
            planned.len(),
            "{format}"
        );
    }
}

/// The request bytes of every stpd record.
fn missiles(stpd: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = stpd;
    while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
        let header = std::str::from_utf8(&rest[..newline]).unwrap();
        let len: usize = header.split(' ').next().unwrap().parse().unwrap();
        out.push(rest[newline + 1..newline + 1 + len].to_vec());
        rest = &rest[newline + 1 + len + 1..];
    }
    out
}

#[test]
fn plain_tcp_gun_sends_bytes_and_reads_until_close() {
    let server = Server::start(Behaviour::Close);
    let (_, rows) = shoot_at(
        &server,
        "rps_schedule = const(5,1s) const(0,2s)\nuris = /\ntank_type = none",
    );
    assert_eq!(rows.len(), 5);
    // No HTTP parsing: proto_code 0, every reply byte counted.
    assert!(
        rows.iter()
            .all(|r| (r.net_code, r.proto_code, r.size_in) == (0, 0, 59)),
        "{rows:?}"
    );
}

#[test]
fn closed_model_shots_after_the_start_times_have_no_lag() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ammo.txt"), "/1\n").unwrap();
    // Two instances, then back to back for 2 s: lag only means something for the two starts.
    let cfg = config(server.addr(), "instances_schedule = ramp(2, 1s) wait(1s)\nammofile = ammo.txt\nloop = 100000\n\n[autostop]\nautostop = limit(2s)");
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_eq!(
        out.status.code(),
        Some(21),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(artifacts(dir.path()).join("summary.json")).unwrap();
    let lag_max: f64 = summary
        .split("\"q\": 100.0")
        .nth(1)
        .and_then(|rest| rest.split("\"lag_ms\": ").nth(1))
        .and_then(|v| v.split(['}', ',']).next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(f64::MAX);
    assert!(
        lag_max < 500.0,
        "max lag {lag_max} ms: back-to-back shots must not count time since the start"
    );
}

#[test]
fn the_summary_rate_is_over_the_active_time_not_whole_seconds() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    // 2 s of shots almost always straddle three unix seconds: whole seconds would say ~67 rps.
    let out = shoot(
        dir.path(),
        &config(server.addr(), "rps_schedule = const(100,2s)\nuris = /"),
        LIMIT,
    );
    assert_ran(&out);
    let run = artifacts(dir.path());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    // The active time is from the first start to the last end, as phout has them
    // (its start is cut to the millisecond).
    let (mut first, mut last) = (f64::MAX, 0.0f64);
    let phout = std::fs::read_to_string(run.join("phout.log")).unwrap();
    for line in phout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let start: f64 = fields[0].parse().unwrap();
        let interval_s = fields[2].parse::<f64>().unwrap() / 1e6;
        first = first.min(start);
        last = last.max(start + interval_s);
    }
    let active = summary["active_s"].as_f64().unwrap();
    assert!(
        (active - (last - first)).abs() < 0.002,
        "active {active} s, phout spans {} s",
        last - first
    );
    // About the schedule's 2 s (the span check above is the exact one). The first
    // shot may start late on a busy machine, so only a gross error fails this.
    assert!(
        (1.5..2.5).contains(&active),
        "200 shots over 2 s took {active} s"
    );
    let actual = summary["rps"]["actual"].as_f64().unwrap();
    assert!(
        (actual - 200.0 / active).abs() < 1e-6,
        "{actual} rps over {active} s"
    );
    // The planned rate is the plan's own: its 200 shots over its 2 s.
    assert_eq!(summary["rps"]["planned"], 100.0);
}

#[test]
fn closed_model_reads_the_ammo_once_per_loop() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ammo.txt"), "/1\n/2\n/3\n").unwrap();
    let cfg = config(
        server.addr(),
        "instances_schedule = ramp(2, 1s)\nammofile = ammo.txt\nloop = 3",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    assert_eq!(phout(&run).len(), 9);
    assert_eq!(server.requests().len(), 9);
    // ramp(2, 1s): the second instance starts a second after the first.
    let starts: Vec<f64> = std::fs::read_to_string(run.join("phout.log"))
        .unwrap()
        .lines()
        .map(|line| line.split('\t').next().unwrap().parse().unwrap())
        .collect();
    let span = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    // The first shot may start late on a busy machine; the second instance's
    // start is held until a second after the schedule's start all the same.
    assert!((0.5..5.0).contains(&span), "shots span {span} s");
}

#[test]
fn tank_log_says_whether_the_cpus_are_kept_awake() {
    let server = Server::start(Behaviour::KeepAlive);
    for (extra, expected) in [
        (
            "",
            [
                "CPUs kept awake while shooting",
                "CPUs may sleep: cannot write",
            ],
        ),
        (
            "[tank]\nkeep_cpus_awake = 0",
            ["CPUs may sleep: keep_cpus_awake = 0"; 2],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = config(
            server.addr(),
            &format!("rps_schedule = const(10,1s) const(0,2s)\nuris = /\ninstances = 2\n{extra}"),
        );
        assert_ran(&shoot(dir.path(), &config, LIMIT));
        let log = std::fs::read_to_string(artifacts(dir.path()).join("tank.log")).unwrap();
        // Granted as root with the device; refused, with the reason, elsewhere.
        assert!(expected.iter().any(|line| log.contains(line)), "{log}");
    }
}

#[test]
fn instances_connect_only_as_concurrency_needs() {
    let server = Server::start(Behaviour::KeepAlive);
    let (_, rows) = shoot_at(
        &server,
        "rps_schedule = const(100,2s)\nuris = /\nheader_http = 1.1\ninstances = 200\nthreads = 2",
    );
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r.proto_code == 200 && r.net_code == 0));
    // Each reply is back long before the next shot is due, so the most recently
    // free instances take every shot; in first-come order all 200 would connect.
    let connects = rows.iter().filter(|r| r.connect > 0).count();
    assert!(connects <= 20, "{connects} connects for 200 shots");
}

#[test]
fn threads_sets_the_io_threads_and_instances_keep_their_connections_on_them() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(
            server.addr(),
            "rps_schedule = const(200,1s) const(0,2s)\nuris = /\nheader_http = 1.1\ninstances = 6\nthreads = 3",
        ),
        LIMIT,
    );
    assert_ran(&out);
    let run = artifacts(dir.path());
    let log = std::fs::read_to_string(run.join("tank.log")).unwrap();
    assert!(log.contains("3 I/O threads (threads)"), "{log}");
    let rows = phout(&run);
    assert!(rows.len() >= 100, "{} of 200 shots", rows.len());
    assert!(rows.iter().all(|r| r.proto_code == 200 && r.net_code == 0));
    // Six instances spread over three threads: each connects once and keeps it.
    let connects = rows.iter().filter(|r| r.connect > 0).count();
    assert!((1..=6).contains(&connects), "{connects} connects");
    assert_eq!(server.requests().len(), rows.len());
}

#[test]
fn queues_run_side_by_side_into_one_phout() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "/a first\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "/b second\n").unwrap();
    let cfg = format!(
        "[phantom]\naddress = {0}\nrps_schedule = const(5,1s) const(0,2s)\nammofile = a.txt\n\n[phantom-2]\nrps_schedule = const(3,1s) const(0,2s)\nammofile = b.txt\n",
        server.addr()
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.iter().filter(|r| r.tag == "first").count(), 5);
    assert_eq!(rows.iter().filter(|r| r.tag == "second").count(), 3);
}

#[test]
fn close_chunked_and_http_1_0_replies_are_all_read_whole() {
    for (behaviour, size_in) in [
        (Behaviour::Close, 59),
        (Behaviour::Chunked, 67),
        (Behaviour::Http10, 30),
    ] {
        let server = Server::start(behaviour);
        let dir = tempfile::tempdir().unwrap();
        let out = shoot(
            dir.path(),
            &config(
                server.addr(),
                "rps_schedule = const(10,1s) const(0,2s)\nuris = /\ninstances = 2",
            ),
            LIMIT,
        );
        assert!(
            out.status.success(),
            "{behaviour:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = phout(&artifacts(dir.path()));
        assert_eq!(rows.len(), 10, "{behaviour:?}");
        for row in rows {
            assert_eq!(
                (row.net_code, row.proto_code, row.size_in),
                (0, 200, size_in),
                "{behaviour:?}"
            );
        }
    }
}

#[test]
fn failures_become_errno_net_codes() {
    // Refused: a port with no listener (bound, then closed).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let silent = Server::start(Behaviour::Silent);
    let reset = Server::start(Behaviour::Reset);
    let garbage = Server::start(Behaviour::Garbage);
    for (addr, expected) in [
        (closed, 111),
        (silent.addr(), 110),
        (reset.addr(), 104),
        (garbage.addr(), 71),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = shoot(
            dir.path(),
            &config(
                addr,
                "rps_schedule = const(4,1s) const(0,2s)\nuris = /\ntimeout = 700ms",
            ),
            LIMIT,
        );
        assert_ran(&out);
        let rows = phout(&artifacts(dir.path()));
        assert_eq!(rows.len(), 4);
        for row in rows {
            assert_eq!((row.net_code, row.proto_code), (expected, 0), "{row:?}");
            if expected == 110 {
                assert_eq!(row.interval_event, 700_000);
                assert!(row.interval_real >= 700_000);
            }
        }
    }
}

#[test]
fn tls_with_a_self_signed_certificate() {
    let server = Server::start_with(Behaviour::KeepAlive, Some(tls_server_config(None)));
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[phantom]\naddress = localhost:{}\nssl = 1\nrps_schedule = const(10,1s) const(0,2s)\nuris = /\nheader_http = 1.1\nheaders = [Host: localhost]\ninstances = 1",
        server.addr().port()
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 10);
    assert!(
        rows.iter().all(|r| r.net_code == 0 && r.proto_code == 200),
        "{rows:?}"
    );
    assert_eq!(
        rows.iter().filter(|r| r.connect > 0).count(),
        1,
        "the handshake happens once"
    );
}

fn tls_server_config(
    client_ca: Option<&rustls::pki_types::CertificateDer<'static>>,
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    Arc::new(
        builder
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap(),
    )
}

fn tls_config(port: u16, extra: &str) -> String {
    format!(
        "[phantom]\naddress = localhost:{port}\nssl = 1\nrps_schedule = const(4,1s) const(0,2s)\nuris = /\nheader_http = 1.1\n\
         headers = [Host: localhost]\ninstances = 1\ntimeout = 2s\n{extra}\n"
    )
}

#[test]
fn ssl_verify_rejects_a_self_signed_certificate() {
    let server = Server::start_with(Behaviour::KeepAlive, Some(tls_server_config(None)));
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &tls_config(server.addr().port(), "ssl_verify = 1"),
        LIMIT,
    );
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert!(
        rows.iter().all(|r| (r.net_code, r.proto_code) == (71, 0)),
        "{rows:?}"
    );
    assert!(
        server.requests().is_empty(),
        "no request crosses a rejected handshake"
    );
}

#[test]
fn client_certificate_is_presented_when_configured() {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client_cert = rcgen::CertificateParams::new(vec!["client".into()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    let server = Server::start_with(
        Behaviour::KeepAlive,
        Some(tls_server_config(Some(ca.der()))),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), client_key.serialize_pem()).unwrap();
    let with = "client_certificate = client.pem\nclient_key = client.key\nclient_cipher_suites = TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES128-GCM-SHA256";
    let out = shoot(dir.path(), &tls_config(server.addr().port(), with), LIMIT);
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert!(
        rows.iter().all(|r| (r.net_code, r.proto_code) == (0, 200)),
        "{rows:?}"
    );
    // Without the certificate the server refuses every shot.
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(dir.path(), &tls_config(server.addr().port(), ""), LIMIT);
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert!(
        rows.iter().all(|r| r.net_code != 0 && r.proto_code == 0),
        "{rows:?}"
    );
}

#[test]
fn writelog_keeps_requests_and_replies_of_selected_shots() {
    let server = Server::start(Behaviour::StatusFromPath);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        server.addr(),
        "rps_schedule = const(4,1s) const(0,2s)\nuris = /status/200 /status/503\nwritelog = proto_error",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    let codes: BTreeSet<u16> = phout(&run).into_iter().map(|r| r.proto_code).collect();
    assert_eq!(codes, BTreeSet::from([200, 503]));
    let answers = std::fs::read_to_string(run.join("answ.log")).unwrap();
    assert_eq!(answers.matches("---- ").count(), 2, "{answers}");
    assert!(
        answers.contains("GET /status/503") && !answers.contains("GET /status/200"),
        "{answers}"
    );
    assert!(answers.contains("HTTP/1.1 503 X"));
}

#[test]
fn the_schedule_end_stops_late_shots_and_counts_them_unsent() {
    let server = Server::start(Behaviour::Silent);
    let dir = tempfile::tempdir().unwrap();
    // One instance, 1 s budget per shot, 20 shots in 1 s: only the first can be fired in time.
    let cfg = config(
        server.addr(),
        "rps_schedule = const(20,1s)\nuris = /\ninstances = 1\ntimeout = 1s",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    assert_eq!(phout(&artifacts(dir.path())).len(), 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("planned 20, sent 1, unsent 19"), "{stdout}");
}

#[test]
fn bad_input_is_a_clear_error_before_any_shot() {
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        "[phantom]\naddress = 127.0.0.1:1\nrps_schedule = const(1,1s)\nammofile = missing.txt\n",
        LIMIT,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("missing.txt") && stderr.contains("[phantom]"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("logs").exists(),
        "no artifacts for a run that never started"
    );
}

#[test]
fn bad_ammo_past_the_first_request_stops_the_test_before_its_first_shot() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    // A good request, then one that says 74 bytes and has 18.
    let good = "GET / HTTP/1.0\r\n\r\n";
    let ammo = format!("{}\n{good}\n74\nGET /broken HTTP/1.0\n", good.len());
    std::fs::write(dir.path().join("ammo.txt"), ammo).unwrap();
    let out = shoot(
        dir.path(),
        &config(
            server.addr(),
            "rps_schedule = const(10,2s)\nammofile = ammo.txt",
        ),
        LIMIT,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("load.ini:4: [phantom] ammofile: ammo.txt: byte 46: unexpected end of file"),
        "{stderr}"
    );
    // Once, not repeated by each layer that passed it on.
    assert_eq!(stderr.matches("ammo.txt: byte").count(), 1, "{stderr}");
    assert!(!dir.path().join("logs").exists(), "no artifacts");
    assert!(server.requests().is_empty(), "no shot fired");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_like_ctrl_c_and_still_writes_the_summary() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(server.addr(), "rps_schedule = const(50,60s)\nuris = /");
    let (out, _) = interrupted(
        dir.path(),
        &cfg,
        || server.requests().len() >= 20,
        &[libc::SIGTERM],
    );
    assert_eq!(out.status.code(), Some(1));
    let run = artifacts(dir.path());
    assert!(!phout(&run).is_empty());
    assert!(run.join("summary.json").exists() && run.join("report.html").exists());
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_firing_and_leaves_a_complete_phout() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(server.addr(), "rps_schedule = const(50,60s)\nuris = /");
    let (out, took) = interrupted(
        dir.path(),
        &cfg,
        || server.requests().len() >= 20,
        &[libc::SIGINT],
    );
    assert!(took < Duration::from_secs(15), "tank took {took:?} to stop");
    assert_eq!(out.status.code(), Some(1));
    let rows = phout(&artifacts(dir.path()));
    assert!(rows.len() >= 20 && rows.len() < 3000, "{} rows", rows.len());
    assert!(rows.iter().all(|r| r.proto_code == 200));
}

/// yandex-tank's own phout reader (pandas, int64 columns) reads tank's phout,
/// with mixed outcomes and tags, without an error and with every row.
#[test]
fn yandex_tanks_reader_reads_tanks_phout() {
    let Some(python) = crate::support::reference_python() else {
        return;
    };
    let server = Server::start(Behaviour::StatusFromPath);
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ammo.txt"),
        "/status/200 ok\n/status/404 missing\n/status/503\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("down.txt"), "/x\n").unwrap();
    let cfg = format!(
        "[phantom]\naddress = {}\nrps_schedule = const(30,1s) const(0,2s)\nammofile = ammo.txt\nautocases = 1\nenum_ammo = 1\n\n\
         [phantom-down]\naddress = {refused}\nrps_schedule = const(5,1s) const(0,2s)\nammofile = down.txt\n",
        server.addr()
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let read = std::process::Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/reference/read_phout.py"
        ))
        .arg(run.join("phout.log"))
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "yandex-tank's reader failed: {}",
        String::from_utf8_lossy(&read.stderr)
    );
    let summary = String::from_utf8_lossy(&read.stdout);
    assert!(
        summary.contains(&format!("\"rows\": {}", rows.len())),
        "{summary}"
    );
    assert!(
        summary.contains("\"111\": 5"),
        "refused shots as net code 111: {summary}"
    );
    assert!(
        summary.contains("\"404\": 10") && summary.contains("\"503\": 10"),
        "{summary}"
    );
    // The reader cuts enum_ammo's `#N` off the tags.
    assert!(
        summary.contains("\"ok\": 10") && summary.contains("\"_status\": 10"),
        "{summary}"
    );
}

/// On a terminal the console redraws a full screen each second; piped, it
/// prints one plain line per finished second. `script` (util-linux) gives tank
/// a pseudo-terminal.
#[cfg(unix)]
#[test]
fn console_draws_a_screen_on_a_terminal_and_lines_when_piped() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        config(server.addr(), "rps_schedule = const(20,6s)\nuris = /"),
    )
    .unwrap();
    let command = format!("{} -c load.ini", env!("CARGO_BIN_EXE_tank"));
    let terminal = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .current_dir(dir.path())
        .output()
        .expect("`script` (util-linux) runs tank on a pseudo-terminal");
    assert!(
        terminal.status.success(),
        "{}",
        String::from_utf8_lossy(&terminal.stderr)
    );
    let screen = String::from_utf8_lossy(&terminal.stdout);
    assert!(
        screen.matches("\x1b[H\x1b[2J").count() >= 2,
        "no screen redraws in:\n{screen}"
    );
    for needle in [
        "accuracy",
        "last second",
        "whole run",
        "intended ms",
        "(in finished seconds, through second 00:00:",
    ] {
        assert!(screen.contains(needle), "no `{needle}` in\n{screen}");
    }

    let dir = tempfile::tempdir().unwrap();
    let piped = shoot(
        dir.path(),
        &config(server.addr(), "rps_schedule = const(20,6s)\nuris = /"),
        LIMIT,
    );
    let lines = String::from_utf8_lossy(&piped.stdout);
    assert!(
        !lines.contains("\x1b[2J"),
        "piped output must not clear the screen"
    );
    // Each line is labelled with its second's own offset from the start: from
    // 00:00:00, one second more per line, each once (before, the labels were
    // the wall clock when the line was printed: from 00:00:02, and the last
    // seconds, printed together, all read the same).
    let seconds: Vec<(u64, u64)> = lines
        .lines()
        .filter(|l| l.contains(" rps="))
        .map(|l| {
            let (label, rest) = l.split_once(" ts=").expect("a label and a ts");
            let ts: u64 = rest.split(' ').next().unwrap().parse().unwrap();
            let parts: Vec<u64> = label.split(':').map(|p| p.parse().unwrap()).collect();
            (parts[0] * 3600 + parts[1] * 60 + parts[2], ts)
        })
        .collect();
    assert!(seconds.len() >= 6, "{lines}");
    assert_eq!(seconds[0].0, 0, "{lines}");
    for (offset, ts) in &seconds {
        assert_eq!(offset, &(ts - seconds[0].1), "{lines}");
    }
    assert!(seconds.windows(2).all(|w| w[1].0 > w[0].0), "{lines}");
}

/// The `retries` of every line of a run's `test_data.log`, summed.
fn retries_in_test_data(run: &std::path::Path) -> u64 {
    std::fs::read_to_string(run.join("test_data.log"))
        .unwrap()
        .lines()
        .map(|line| {
            let second: serde_json::Value = serde_json::from_str(line).unwrap();
            second["tank"]["retries"].as_u64().expect("tank.retries")
        })
        .sum()
}

/// `shots.retries` of a run's summary.json.
fn retries_in_summary(run: &std::path::Path) -> u64 {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    summary["shots"]["retries"].as_u64().expect("shots.retries")
}

#[test]
fn every_resent_request_is_counted_where_the_server_can_see_it() {
    let server = Server::start(Behaviour::CloseAfterReply);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        server.addr(),
        "rps_schedule = const(20,1s) const(0,2s)\nuris = /a /b\nheader_http = 1.1\ninstances = 2",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    assert!(rows.len() >= 5, "{} of 20 shots", rows.len());
    // Each kept connection is closed as its next GET arrives: sent again, answered.
    assert!(
        rows.iter().all(|r| (r.net_code, r.proto_code) == (0, 200)),
        "{rows:?}"
    );
    let retries = retries_in_summary(&run);
    assert!(retries >= 1, "no retries counted");
    assert_eq!(
        rows.len() as u64 + retries,
        server.requests().len() as u64,
        "rows + retries = the requests the server read"
    );
    assert_eq!(retries_in_test_data(&run), retries);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("\nretries {retries} (")),
        "{stdout}"
    );
}

#[test]
fn a_post_is_never_sent_twice() {
    let server = Server::start(Behaviour::CloseAfterReply);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ammo.txt"), "4 /post\nbody\n").unwrap();
    let cfg = config(
        server.addr(),
        "instances_schedule = const(1,1s)\nammofile = ammo.txt\nammo_type = uripost\nloop = 6\nheader_http = 1.1",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    assert_eq!(rows.len(), 6);
    assert_eq!(server.requests().len(), rows.len(), "one request per row");
    assert!(server
        .requests()
        .iter()
        .all(|request| request.starts_with(b"POST /post ")));
    assert_eq!(retries_in_summary(&run), 0);
    // A fresh connection is answered; the POST that meets it closed fails, with
    // the request counted as sent.
    let answered = rows.iter().filter(|r| r.proto_code == 200).count();
    let closed: Vec<&Row> = rows.iter().filter(|r| r.net_code == 71).collect();
    assert_eq!((answered, closed.len()), (3, 3), "{rows:?}");
    assert!(
        closed
            .iter()
            .all(|r| r.proto_code == 0 && r.size_out > 0 && r.size_in == 0),
        "{closed:?}"
    );
}

#[test]
fn a_refused_reconnect_reports_no_bytes_sent() {
    let server = Server::start(Behaviour::ReplyOnceThenGone);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        server.addr(),
        "instances_schedule = const(1,1s)\nuris = /\nloop = 3\nheader_http = 1.1",
    );
    let out = shoot(dir.path(), &cfg, LIMIT);
    assert_ran(&out);
    let run = artifacts(dir.path());
    let rows = phout(&run);
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[0].net_code, rows[0].proto_code), (0, 200));
    // The second shot went out on the kept connection, which the server closed
    // once it stopped listening: the retry was refused, and so was the third.
    for row in &rows[1..] {
        assert_eq!(
            (row.net_code, row.proto_code, row.size_out, row.size_in),
            (111, 0, 0, 0),
            "{rows:?}"
        );
    }
    assert_eq!(server.requests().len(), 2);
    assert_eq!(retries_in_summary(&run), 0, "the retry never went out");
}

#[test]
fn a_reply_over_phantom_http_entity_keeps_its_status() {
    let server = Server::start(Behaviour::LargeBody);
    let (_, rows) = shoot_at(
        &server,
        "instances_schedule = const(1,1s)\nuris = /\nloop = 3\nheader_http = 1.1\nphantom_http_entity = 1K",
    );
    assert_eq!(rows.len(), 3);
    for row in rows {
        // Cut at the limit: the status read, net code 71, the bytes read.
        assert_eq!((row.net_code, row.proto_code), (71, 200), "{row:?}");
        assert!(row.size_in >= 42, "{row:?}");
    }
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn plan_prints_the_seed_it_drew_for_drawn_arrivals_and_that_seed_repeats_the_stpd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nuris = /a /b\n\
         rps_schedule = const(500,2s) random(10,900,1s,3s)\narrivals = poisson\n",
    )
    .unwrap();
    let plan = |extra: &[&str], stpd: &str| {
        let out = tank()
            .args(["plan", "-c", "load.ini", "--stpd", stpd])
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = plan(&[], "first.stpd");
    let seed = first
        .lines()
        .find_map(|l| l.trim().strip_prefix("arrivals       poisson, seed "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no seed line in\n{first}"))
        .to_owned();
    assert!(
        first.contains("(chosen by tank: set `arrivals_seed` to repeat it)"),
        "{first}"
    );
    let again = plan(
        &["-o", &format!("phantom.arrivals_seed={seed}")],
        "again.stpd",
    );
    assert!(
        again.contains(&format!("arrivals       poisson, seed {seed}\n")),
        "{again}"
    );
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("first.stpd"), read("again.stpd"));
    plan(&[], "other.stpd");
    assert_ne!(read("first.stpd"), read("other.stpd"));
}

#[test]
fn a_search_section_is_named_as_unused_by_a_plain_run() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    let text = config(
        server.addr(),
        "rps_schedule = const(5,1s) const(0,2s)\nuris = /a\n[search]\nquantile = 99\nunder = 50ms",
    );
    let out = shoot(dir.path(), &text, LIMIT);
    assert_ran(&out);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("[search] holds the settings of `tank search --config`")
            && said.contains("`tank -c` does not use them"),
        "{said}"
    );
}

#[test]
fn tank_plan_counts_agree_in_number() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("one.sessions"),
        "tank-sessions 1\nS 0 0 a\nR 3 0 0 /\nGET\nE 0 0\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("two.uri"), "/a\n/b\n").unwrap();
    let cases = [
        // A file's passes: an exact multiple counts its last pass too.
        (
            "ammofile = two.uri\nrps_schedule = const(4,1s)\n",
            &["ammo           two.uri (uri), 2 full passes\n"][..],
        ),
        (
            "ammofile = two.uri\nrps_schedule = const(3,1s)\n",
            &["ammo           two.uri (uri), 1 full pass\n"][..],
        ),
        (
            "ammofile = two.uri\nrps_schedule = const(2,1s)\n",
            &["ammo           two.uri (uri), not past its first pass\n"][..],
        ),
        (
            "uris = /\nrps_schedule = const(1,1s)\n",
            &["ammo           1 uri (uris), 1 full pass\n"][..],
        ),
        (
            "uris = /a /b\nrps_schedule = const(5,1s) const(0,2s)\n",
            &["ammo           2 uris (uris), 2 full passes\n"][..],
        ),
        (
            "ammofile = one.sessions\nammo_type = sessions\n",
            &[
                "capture        1 session, 1 request over 0ms",
                "concurrency    at most 1 session open at once",
                "(sessions), 1 full pass\n",
            ][..],
        ),
    ];
    for (options, expected) in cases {
        std::fs::write(
            dir.path().join("load.ini"),
            format!("[phantom]\naddress = 127.0.0.1:9\n{options}"),
        )
        .unwrap();
        let out = tank()
            .args(["plan", "-c", "load.ini"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in expected {
            assert!(stdout.contains(line), "`{line}` in\n{stdout}");
        }
    }
}

#[test]
fn a_run_into_an_artifacts_dir_holding_a_run_is_refused_not_overwritten() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = {}\nuris = /\nrps_schedule = const(10,1s)\n",
            server.addr()
        ),
    )
    .unwrap();
    let run = || {
        tank()
            .args(["-c", "load.ini", "-q", "-o", "tank.artifacts_dir=out"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let phout = std::fs::read(dir.path().join("out/phout.log")).unwrap();
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("artifacts_dir out: it holds a run already (its phout.log)"),
        "{stderr}"
    );
    // The first run's results are as they were.
    assert_eq!(
        std::fs::read(dir.path().join("out/phout.log")).unwrap(),
        phout
    );
}

#[test]
fn a_failed_write_of_the_config_copy_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nuris = /\nrps_schedule = const(1,1s)\n",
    )
    .unwrap();
    // The copy's path is taken by a directory: writing it fails.
    std::fs::create_dir_all(dir.path().join("out/load.ini")).unwrap();
    let out = tank()
        .args(["-c", "load.ini", "-q", "-o", "tank.artifacts_dir=out"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("writing the config copy out/load.ini: Is a directory (os error 21)"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("os error 21").count(), 1, "{stderr}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_wait_for_a_grpc_schema_at_once() {
    // A server that accepts and never answers: before, Ctrl-C (even twice)
    // left tank waiting for its reflection service until `timeout`.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calls.jsonl"),
        "{\"call\": \"tankbar.Greeter.SayHello\", \"payload\": {}}\n",
    )
    .unwrap();
    let cfg = format!(
        "[phantom]\naddress = {addr}\ntank_type = grpc\nammofile = calls.jsonl\n\
         rps_schedule = const(1,1s)\ntimeout = 60s\n"
    );
    let (out, took) = interrupted(
        dir.path(),
        &cfg,
        || accepted.load(std::sync::atomic::Ordering::SeqCst) > 0,
        &[libc::SIGINT],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("reflection service at")
            && stderr.contains("stopped (Ctrl-C or SIGTERM) before it answered"),
        "{stderr}"
    );
}

/// Phantom ammo saved with a UTF-8 byte-order mark is read as uri ammo, as
/// yandex-tank reads it; tank says so before anything is fired.
#[test]
fn phantom_ammo_behind_a_byte_order_mark_is_said_to_be_read_as_uri() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bom.ammo"), b"\xef\xbb\xbf5 a\nGET /\n").unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:9\nammofile = bom.ammo\nrps_schedule = const(1,1s)\n",
    )
    .unwrap();
    let out = tank()
        .args(["plan", "-c", "load.ini"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("bom.ammo: the file begins with a UTF-8 byte-order mark")
            && stderr.contains("it looks like phantom ammo"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("bom.ammo (uri)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
