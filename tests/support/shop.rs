//! A stateful shop on 127.0.0.1 for the scenario tests, built on hyper (over
//! HTTP/1.1, or HTTP/2 without TLS): a
//! user logs in and gets a token and a cookie, lists items (fresh ones,
//! issued to that token), reads a profile page (HTML) and buys items, each
//! request answered 200 only when it carries what the same user's earlier
//! answers gave. It records what every token did, so a test can check that
//! every token and item a run used came from that same run.
//!
//! - `POST /login` with `{"user": "<name>", "id": "<id>"}` → `{"token": ...}`,
//!   `Set-Cookie: shop=<cookie>`, `X-Session: <session>`.
//! - `GET /items` with `Authorization: Bearer <token>` and the login's
//!   cookie → `{"items": [<id>, <id>, <id>]}`, three items issued to the token.
//! - `GET /profile` with the token → an HTML page naming the user.
//! - `POST /buy/<item>` with the token and `X-User: <name>` → 200 only for
//!   an item issued to that token, by its user; 403/404/409 otherwise.
//! - `GET /slow`: recorded, then answered only after a minute (a request a
//!   test interrupts in flight).
//!
//! Stops when dropped.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::watch;

/// What one token was given and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Account {
    /// The user who logged in.
    pub user: String,
    /// The CSV id the login carried.
    pub id: String,
    /// The cookie the login set.
    pub cookie: String,
    /// Items issued to the token, in order.
    pub issued: Vec<u64>,
    /// Items bought with the token, with the status answered.
    pub bought: Vec<(u64, u16)>,
}

/// Everything the shop saw.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Token → its account.
    pub accounts: HashMap<String, Account>,
    /// Every request: method, path and the status answered (0 for one not answered yet).
    pub requests: Vec<(String, String, u16)>,
    next: u64,
}

/// A running shop.
pub struct Shop {
    addr: SocketAddr,
    ledger: Arc<Mutex<Ledger>>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Shop {
    /// Start the shop on an ephemeral loopback port, over HTTP/1.1.
    pub fn start() -> Shop {
        Shop::start_serving(false)
    }

    /// Start the shop over HTTP/2 without TLS (h2c, prior knowledge).
    pub fn start_http2() -> Shop {
        Shop::start_serving(true)
    }

    fn start_serving(http2: bool) -> Shop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let (stop, stopped) = watch::channel(false);
        let thread = {
            let ledger = Arc::clone(&ledger);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(serve(listener, ledger, stopped, http2));
            })
        };
        Shop {
            addr,
            ledger,
            stop,
            thread: Some(thread),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it saw so far.
    pub fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().expect("ledger")
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    ledger: Arc<Mutex<Ledger>>,
    mut stopped: watch::Receiver<bool>,
    http2: bool,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
    let mut connections = tokio::task::JoinSet::new();
    let connection_stop = stopped.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let ledger = Arc::clone(&ledger);
                let mut stop = connection_stop.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request| answer(Arc::clone(&ledger), request));
                    let io = TokioIo::new(stream);
                    if http2 {
                        let connection = http2::Builder::new(TokioExecutor::new())
                            .serve_connection(io, service);
                        tokio::select! {
                            _ = connection => {}
                            _ = stop.wait_for(|s| *s) => {}
                        }
                    } else {
                        let connection = http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(io, service);
                        tokio::select! {
                            _ = connection => {}
                            _ = stop.wait_for(|s| *s) => {}
                        }
                    }
                });
            }
            _ = stopped.wait_for(|s| *s) => break,
        }
    }
    connections.abort_all();
}

fn reply(status: u16, headers: &[(&str, String)], body: String) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    response
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

async fn answer(
    ledger: Arc<Mutex<Ledger>>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let token = header("authorization")
        .strip_prefix("Bearer ")
        .unwrap_or_default()
        .to_owned();
    let (cookie, user_header) = (header("cookie"), header("x-user"));
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if path == "/slow" {
        ledger
            .lock()
            .expect("ledger")
            .requests
            .push((method, path, 0));
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        return Ok(reply(200, &[], String::new()));
    }
    let mut ledger = ledger.lock().expect("ledger");
    let response = match (method.as_str(), path.as_str()) {
        ("POST", "/login") => login(&mut ledger, &body),
        ("GET", "/items") => match ledger.accounts.get(&token) {
            None => reply(401, &[], "no such token".into()),
            Some(account) if !cookie.contains(&format!("shop={}", account.cookie)) => {
                reply(403, &[], "the login's cookie is missing".into())
            }
            Some(_) => {
                let first = ledger.next;
                ledger.next += 3;
                let items: Vec<u64> = (first..first + 3).collect();
                if let Some(account) = ledger.accounts.get_mut(&token) {
                    account.issued.extend(&items);
                }
                let list: Vec<String> = items.iter().map(u64::to_string).collect();
                reply(
                    200,
                    &[("content-type", "application/json".into())],
                    format!("{{\"items\": [{}]}}", list.join(", ")),
                )
            }
        },
        ("GET", "/profile") => match ledger.accounts.get(&token) {
            None => reply(401, &[], "no such token".into()),
            Some(account) => reply(
                200,
                &[("content-type", "text/html".into())],
                format!(
                    "<!DOCTYPE html><html><body><h1>Profile</h1><div class=\"user\">{}</div>\
                     <p>welcome back<br></body></html>",
                    account.user
                ),
            ),
        },
        ("POST", buy) if buy.starts_with("/buy/") => {
            let item: Option<u64> = buy["/buy/".len()..].parse().ok();
            let status = match (ledger.accounts.get(&token), item) {
                (None, _) => 403,
                (_, None) => 404,
                (Some(account), Some(item)) if !account.issued.contains(&item) => 404,
                (Some(account), _) if account.user != user_header => 409,
                _ => 200,
            };
            if let (Some(account), Some(item)) = (ledger.accounts.get_mut(&token), item) {
                account.bought.push((item, status));
            }
            reply(
                status,
                &[("x-receipt", format!("R-{}", item.unwrap_or(0)))],
                String::new(),
            )
        }
        _ => reply(404, &[], "no such page".into()),
    };
    let status = response.status().as_u16();
    ledger.requests.push((method, path, status));
    Ok(response)
}

fn login(ledger: &mut Ledger, body: &[u8]) -> Response<Full<Bytes>> {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return reply(400, &[], "expected JSON".into());
    };
    let field = |name: &str| {
        json.get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (user, id) = (field("user"), field("id"));
    if user.is_empty() {
        return reply(400, &[], "expected a user".into());
    }
    ledger.next += 1;
    let n = ledger.next;
    let token = format!("tok-{user}-{n}");
    let cookie = format!("c{n}");
    ledger.accounts.insert(
        token.clone(),
        Account {
            user,
            id,
            cookie: cookie.clone(),
            ..Account::default()
        },
    );
    reply(
        200,
        &[
            ("content-type", "application/json".into()),
            ("set-cookie", format!("shop={cookie}; Path=/; HttpOnly")),
            ("x-session", format!("S-{n}")),
        ],
        format!("{{\"token\": \"{token}\"}}"),
    )
}
