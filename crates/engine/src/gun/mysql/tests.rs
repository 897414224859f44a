//! The barrel against a scripted server on loopback: the login, statement
//! ids mapped both ways, codes, and what a misbehaving server leaves.

use super::*;
use tank_mysql::build;
use tank_mysql::flags;
use tank_mysql::handshake::Response as ClientResponse;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SCRAMBLE: [u8; 20] = *b"0123456789abcdefghij";
const SERVER_CAPS: u64 = flags::LONG_PASSWORD
    | flags::PROTOCOL_41
    | flags::SECURE_CONNECTION
    | flags::PLUGIN_AUTH
    | flags::PLUGIN_AUTH_LENENC
    | flags::CONNECT_WITH_DB
    | flags::MULTI_STATEMENTS
    | flags::MULTI_RESULTS
    | flags::PS_MULTI_RESULTS
    | flags::DEPRECATE_EOF
    | flags::TRANSACTIONS;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), future).await })
        .expect("the test took over 20 s")
}

fn gun(addr: SocketAddr, password: &str) -> Arc<MysqlGun> {
    let target = Target {
        addr,
        host: "127.0.0.1".into(),
    };
    let credentials = Credentials {
        user: "tank".into(),
        password: password.into(),
        database: None,
    };
    Arc::new(MysqlGun::new(
        target,
        None,
        credentials,
        Duration::from_secs(5),
        Vec::new(),
    ))
}

async fn read_packet(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await.ok()?;
    let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).await.ok()?;
    Some((header[3], payload))
}

async fn send(stream: &mut TcpStream, first_seq: u8, payloads: &[Vec<u8>]) {
    let mut out = Vec::new();
    let mut seq = first_seq;
    for payload in payloads {
        seq = tank_mysql::packet::write(&mut out, seq, payload);
    }
    stream.write_all(&out).await.unwrap();
}

/// What the scripted server saw of one connection.
#[derive(Debug, Default, Clone)]
struct Seen {
    user: Vec<u8>,
    schema: Vec<u8>,
    caps: u64,
    commands: Vec<Vec<u8>>,
}

/// Greet with `plugin`, check the native password `secret`, then answer
/// commands: a query naming `nope` with ERR 1146, other queries with one
/// row, a prepare with statement id 77 (then 78, …), an execute with OK,
/// `ping` with OK and trailing garbage. Each connection's `Seen` goes to `seen`.
async fn server(
    listener: TcpListener,
    plugin: &'static str,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
) {
    while let Ok((mut stream, _)) = listener.accept().await {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            send(
                &mut stream,
                0,
                &[build::greeting(
                    "5.5.5-10.11-test",
                    7,
                    SERVER_CAPS,
                    &SCRAMBLE,
                    plugin,
                )],
            )
            .await;
            let Some((seq, payload)) = read_packet(&mut stream).await else {
                return;
            };
            let response = ClientResponse::parse(&payload).unwrap();
            let mut this = Seen {
                user: response.user.clone(),
                schema: response.schema.clone(),
                caps: response.caps,
                commands: Vec::new(),
            };
            let expected = tank_mysql::auth::native_password(b"secret", &SCRAMBLE);
            let mut reader = tank_mysql::packet::Reader::new(&payload[32..]);
            reader.nul_terminated().unwrap();
            let auth = reader.lenenc_bytes().unwrap().to_vec();
            if plugin != "mysql_native_password" {
                // Ask to switch to a plugin tank does not speak.
                send(
                    &mut stream,
                    seq + 1,
                    &[b"\xfeclient_ed25519\0xyz\0".to_vec()],
                )
                .await;
                return;
            }
            if auth != expected {
                send(
                    &mut stream,
                    seq + 1,
                    &[build::err(1045, b"28000", "Access denied")],
                )
                .await;
                return;
            }
            send(&mut stream, seq + 1, &[build::ok(0, 0, 2)]).await;
            let mut next_id = 77;
            while let Some((_, command)) = read_packet(&mut stream).await {
                this.commands.push(command.clone());
                seen.lock().unwrap().push(this.clone());
                match command[0] {
                    0x03 if command.windows(4).any(|w| w == b"nope") => {
                        send(
                            &mut stream,
                            1,
                            &[build::err(1146, b"42S02", "no such table")],
                        )
                        .await;
                    }
                    0x03 => {
                        let rows = vec![vec![Some(&b"1"[..])]];
                        send(&mut stream, 1, &build::result_set(&["a"], &rows, 2, true)).await;
                    }
                    0x16 => {
                        send(&mut stream, 1, &[build::prepare_ok(next_id, 0, 0)]).await;
                        next_id += 1;
                    }
                    0x17 => send(&mut stream, 1, &[build::ok(0, 1, 2)]).await,
                    0x0e => {
                        let mut out = Vec::new();
                        tank_mysql::packet::write(&mut out, 1, &build::ok(0, 0, 2));
                        out.extend_from_slice(b"garbage");
                        stream.write_all(&out).await.unwrap();
                    }
                    _ => {}
                }
            }
        });
    }
}

async fn start(plugin: &'static str) -> (SocketAddr, Arc<std::sync::Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    tokio::spawn(server(listener, plugin, Arc::clone(&seen)));
    (addr, seen)
}

fn connect(schema: &[u8]) -> Vec<u8> {
    Connect {
        caps: flags::MULTI_STATEMENTS,
        collation: 45,
        schema: schema.to_vec(),
    }
    .encode()
}

fn codes(measured: &Measured) -> (NetCode, u16) {
    (measured.net_code, measured.proto_code)
}

#[test]
fn a_session_logs_in_with_its_schema_and_maps_statement_numbers_to_the_servers_ids() {
    block_on(async {
        let (addr, seen) = start("mysql_native_password").await;
        let mut barrel = gun(addr, "secret").instance(0);
        let login = barrel.fire(&connect(b"shop"), Instant::now(), None).await;
        assert_eq!(codes(&login), (NetCode::OK, OK));
        assert!(
            login.connect_us > 0 && login.connect_us == login.interval_real_us - login.receive_us
        );
        let query = barrel.fire(b"\x03SELECT 1", Instant::now(), None).await;
        assert_eq!(codes(&query), (NetCode::OK, OK));
        assert_eq!(query.connect_us, 0);
        let missing = barrel
            .fire(b"\x03SELECT * FROM nope", Instant::now(), None)
            .await;
        assert_eq!(codes(&missing), (NetCode::OK, 1146));
        let prepare = barrel.fire(b"\x16SELECT ?", Instant::now(), None).await;
        assert_eq!(codes(&prepare), (NetCode::OK, OK));
        // Statement 1 of the session is the server's 77; statement 2 was never prepared.
        let execute = barrel
            .fire(
                b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00",
                Instant::now(),
                None,
            )
            .await;
        assert_eq!(codes(&execute), (NetCode::OK, OK));
        barrel
            .fire(
                b"\x17\x02\x00\x00\x00\x00\x01\x00\x00\x00",
                Instant::now(),
                None,
            )
            .await;
        let seen = seen.lock().unwrap().last().cloned().unwrap();
        assert_eq!(
            (&seen.user[..], &seen.schema[..]),
            (&b"tank"[..], &b"shop"[..])
        );
        assert_eq!(seen.caps & flags::MULTI_STATEMENTS, flags::MULTI_STATEMENTS);
        assert_eq!(&seen.commands[3][..5], b"\x17\x4d\x00\x00\x00");
        assert_eq!(&seen.commands[4][..5], b"\x17\x00\x00\x00\x00");
    });
}

#[test]
fn a_command_without_a_session_logs_in_first_and_a_wrong_password_is_1045() {
    block_on(async {
        let (addr, _) = start("mysql_native_password").await;
        let mut barrel = gun(addr, "secret").instance(0);
        let query = barrel.fire(b"\x03SELECT 1", Instant::now(), None).await;
        assert_eq!(codes(&query), (NetCode::OK, OK));
        assert!(
            query.connect_us > 0,
            "the login is the request's connect time"
        );
        let wrong_gun = gun(addr, "wrong");
        let mut wrong = wrong_gun.instance(0);
        let refused = wrong.fire(&connect(b""), Instant::now(), None).await;
        assert_eq!(codes(&refused), (NetCode::OK, 1045));
        let again = wrong.fire(b"\x03SELECT 1", Instant::now(), None).await;
        assert_eq!(codes(&again), (NetCode::OK, 1045));
        // The server's words are kept for the run to say once.
        let problem = wrong_gun.problem().unwrap();
        assert!(
            problem.starts_with("the server refused the login as `tank`: 1045 Access denied")
                && problem.ends_with("have proto code 1045)"),
            "{problem}"
        );
    });
}

#[test]
fn an_auth_plugin_tank_does_not_speak_is_71_and_said_once() {
    block_on(async {
        let (addr, _) = start("client_ed25519").await;
        let gun = gun(addr, "secret");
        let mut barrel = gun.instance(0);
        let login = barrel.fire(&connect(b""), Instant::now(), None).await;
        assert_eq!(codes(&login), (NetCode::PROTOCOL, 0));
        let problem = gun.problem().unwrap();
        assert!(
            problem.contains("`client_ed25519`, which tank does not speak"),
            "{problem}"
        );
    });
}

#[test]
fn bytes_past_a_reply_break_it_and_the_next_command_reconnects() {
    block_on(async {
        let (addr, seen) = start("mysql_native_password").await;
        let mut barrel = gun(addr, "secret").instance(0);
        barrel.fire(&connect(b""), Instant::now(), None).await;
        barrel.fire(b"\x16SELECT ?", Instant::now(), None).await;
        let ping = barrel.fire(b"\x0e", Instant::now(), None).await;
        assert_eq!(codes(&ping), (NetCode::PROTOCOL, 0));
        // A new connection: statement 1 is not prepared on it.
        let execute = barrel
            .fire(
                b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00",
                Instant::now(),
                None,
            )
            .await;
        assert_eq!(codes(&execute), (NetCode::OK, OK));
        assert!(execute.connect_us > 0);
        let seen = seen.lock().unwrap().last().cloned().unwrap();
        assert_eq!(&seen.commands[0][..5], b"\x17\x00\x00\x00\x00");
        let quit = barrel.fire(b"\x01", Instant::now(), None).await;
        assert_eq!((codes(&quit), quit.size_in), ((NetCode::OK, OK), 0));
        assert!(barrel.session.is_none());
    });
}

/// A server that offers TLS: reads the SSL request, starts TLS, then the
/// handshake response and one ping, over TLS; what it saw goes to `seen`.
async fn tls_server(listener: TcpListener, seen: Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    use tokio::io::{AsyncRead, AsyncWrite};
    async fn packet<S: AsyncRead + Unpin>(stream: &mut S) -> Option<(u8, Vec<u8>)> {
        let mut header = [0u8; 4];
        stream.read_exact(&mut header).await.ok()?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        let mut payload = vec![0; len];
        stream.read_exact(&mut payload).await.ok()?;
        Some((header[3], payload))
    }
    async fn reply<S: AsyncWrite + Unpin>(stream: &mut S, seq: u8, payload: &[u8]) {
        let mut out = Vec::new();
        tank_mysql::packet::write(&mut out, seq, payload);
        stream.write_all(&out).await.unwrap();
        stream.flush().await.unwrap();
    }
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let (mut stream, _) = listener.accept().await.unwrap();
    let caps = SERVER_CAPS | flags::SSL;
    send(
        &mut stream,
        0,
        &[build::greeting(
            "5.5.5-10.11-test",
            7,
            caps,
            &SCRAMBLE,
            "mysql_native_password",
        )],
    )
    .await;
    let (seq, request) = read_packet(&mut stream).await.unwrap();
    seen.lock().unwrap().push(request);
    let mut tls = acceptor.accept(stream).await.unwrap();
    let (seq, response) = packet(&mut tls).await.unwrap_or((seq + 1, Vec::new()));
    seen.lock().unwrap().push(response);
    reply(&mut tls, seq + 1, &build::ok(0, 0, 2)).await;
    if let Some((_, command)) = packet(&mut tls).await {
        seen.lock().unwrap().push(command);
        reply(&mut tls, 1, &build::ok(0, 0, 2)).await;
    }
}

#[test]
fn with_ssl_the_login_and_the_commands_go_over_tls_started_in_the_handshake() {
    block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        tokio::spawn(tls_server(listener, Arc::clone(&seen)));
        let options = crate::tls::TlsOptions {
            verify: false,
            client_certificate: None,
            client_key: None,
            cipher_suites: Vec::new(),
        };
        let target = Target {
            addr,
            host: "localhost".into(),
        };
        let credentials = Credentials {
            user: "tank".into(),
            password: "secret".into(),
            database: Some("shop".into()),
        };
        let gun = Arc::new(MysqlGun::new(
            target,
            Some(crate::tls::client_config(&options).unwrap()),
            credentials,
            Duration::from_secs(5),
            Vec::new(),
        ));
        let mut barrel = gun.instance(0);
        let ping = barrel.fire(b"\x0e", Instant::now(), None).await;
        assert_eq!(codes(&ping), (NetCode::OK, OK), "{:?}", gun.problem());
        let seen = seen.lock().unwrap();
        let ssl_request = ClientResponse::parse(&seen[0]).unwrap();
        assert!(ssl_request.ssl_request);
        let response = ClientResponse::parse(&seen[1]).unwrap();
        assert_eq!(
            (&response.user[..], &response.schema[..]),
            (&b"tank"[..], &b"shop"[..])
        );
        assert_eq!(seen[2], b"\x0e");
    });
}

#[test]
fn password_env_is_read_when_the_gun_is_resolved_and_named_when_missing() {
    let text = "[phantom]\naddress = 127.0.0.1:3306\ntank_type = mysql\nammo_type = sessions\n\
                ammofile = s\n[mysql]\nuser = tank\npassword_env = TANK_GUN_TEST_UNSET_PASSWORD\n";
    let config = tank_config::load_str(
        text,
        tank_config::ConfigFormat::Ini,
        std::path::Path::new("load.ini"),
        &[],
    )
    .unwrap();
    // Checked without it (a config is often planned where it is not fired) …
    let spec = crate::gun::GunSpec::check(&config.queues[0], false).unwrap();
    // … and said missing, at its option, when the gun would read it.
    let error = spec.environment().unwrap_err().to_string();
    assert!(
        error.contains(
            "load.ini:8: [mysql] password_env: the environment variable \
                        `TANK_GUN_TEST_UNSET_PASSWORD` is not set"
        ),
        "{error}"
    );
    assert!(spec.resolve(None).is_err());
}

#[test]
fn a_tls_handshake_the_server_never_answers_ends_at_the_budget() {
    block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Greets offering TLS, reads the SSL request, then says nothing more.
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let greeting = build::greeting(
                "5.5.5-10.11-test",
                7,
                SERVER_CAPS | flags::SSL,
                &SCRAMBLE,
                "mysql_native_password",
            );
            send(&mut stream, 0, &[greeting]).await;
            read_packet(&mut stream).await;
            let mut rest = Vec::new();
            // Until the client gives up and closes.
            let _ = stream.read_to_end(&mut rest).await;
        });
        let options = crate::tls::TlsOptions {
            verify: false,
            client_certificate: None,
            client_key: None,
            cipher_suites: Vec::new(),
        };
        let credentials = Credentials {
            user: "tank".into(),
            password: "secret".into(),
            database: None,
        };
        let target = Target {
            addr,
            host: "localhost".into(),
        };
        let timeout = Duration::from_millis(300);
        let gun = Arc::new(MysqlGun::new(
            target,
            Some(crate::tls::client_config(&options).unwrap()),
            credentials,
            timeout,
            Vec::new(),
        ));
        let mut barrel = gun.instance(0);
        let ping = barrel.fire(b"\x0e", Instant::now(), None).await;
        assert_eq!(codes(&ping), (NetCode::TIMED_OUT, 0));
        assert!(ping.interval_real_us >= micros(timeout));
        drop(barrel);
        server.await.unwrap();
    });
}

#[test]
fn a_quit_after_a_failure_is_not_sent_on_a_new_login() {
    block_on(async {
        let (addr, seen) = start("mysql_native_password").await;
        let mut barrel = gun(addr, "secret").instance(0);
        barrel.fire(&connect(b""), Instant::now(), None).await;
        let ping = barrel.fire(b"\x0e", Instant::now(), None).await;
        assert_eq!(codes(&ping), (NetCode::PROTOCOL, 0));
        let commands_seen = seen.lock().unwrap().len();
        let quit = barrel.fire(b"\x01", Instant::now(), None).await;
        assert_eq!(codes(&quit), (NetCode::OK, OK));
        assert_eq!((quit.size_out, quit.sends, quit.connect_us), (0, 0, 0));
        // Give a wrongly opened connection the time to log in and send.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(seen.lock().unwrap().len(), commands_seen);
        assert!(barrel.session.is_none());
    });
}
