//! The dashboard's HTTP server: hyper on a current-thread runtime in a thread
//! of its own, as the `/metrics` endpoint is, so no page ever touches the
//! shooting or the results.
//!
//! `GET /` is the page, `GET /events` the server-sent events that keep it up
//! to date (a snapshot first, then each change), `GET /state` the snapshot's
//! JSON for scripts. Nothing else is served; nothing can be changed.
//!
//! Beyond loopback every request needs the token (tank-http1's access rule):
//! as `Authorization: Bearer TOKEN`, as `?token=TOKEN` (what a browser can
//! send: the URL tank prints), or as the cookie the page sets when it was
//! opened with the token, so the page's own requests for events carry it.
//! The cookie is HttpOnly and SameSite=Strict: another site's page cannot
//! send it.
//!
//! A client has [`HEAD_TIMEOUT`] to send its request head; at most
//! [`MAX_CLIENTS`] are served at once (more are closed as they come). An
//! events stream lives as long as its client reads it; one that does not
//! read falls behind by a bounded number of events and is sent a fresh
//! snapshot when it catches up, never an unbounded queue. Stopping the
//! server drops every client at once.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, COOKIE, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tank_http1::access::Access;
use tokio::sync::{broadcast, mpsc, oneshot, Semaphore};

use crate::state::State;

/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Clients served at once.
pub const MAX_CLIENTS: usize = 64;
/// Events a stream may fall behind by before it is sent a fresh snapshot.
const BACKLOG: usize = 256;
/// A comment line this often keeps idle streams (and proxies) open.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// The cookie the page is given to carry the token.
const COOKIE_NAME: &str = "tank-web-token";

/// What the server threads share with the results thread.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) events: broadcast::Sender<Bytes>,
    pub(crate) access: Access,
    pub(crate) page: Bytes,
}

impl Shared {
    /// Apply a change to the state and send the event it makes to every stream.
    pub(crate) fn publish(&self, change: impl FnOnce(&mut State) -> Option<String>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some(event) = change(&mut state) {
            // No stream listening is no error.
            let _ = self.events.send(Bytes::from(event));
        }
    }

    /// The snapshot, and a subscription that misses nothing after it.
    fn subscribe(&self) -> Option<(Bytes, broadcast::Receiver<Bytes>)> {
        let state = self.state.lock().ok()?;
        Some((Bytes::from(state.snapshot()), self.events.subscribe()))
    }
}

/// The running server.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Bind `listen` (here: a port in use is an error now) and start serving.
    pub(crate) fn start(listen: SocketAddr, shared: Arc<Shared>) -> std::io::Result<Server> {
        let listener = std::net::TcpListener::bind(listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("web".into())
            .spawn(move || {
                runtime.block_on(serve(listener, shared, stopped));
                runtime.shutdown_background();
            })?;
        Ok(Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stop serving, at once, whatever clients are connected.
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // A failed accept (out of descriptors, say): a pause, not a spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                std::future::ready(Ok::<_, Infallible>(answer(&request, &shared)))
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

type Reply = Response<BoxBody<Bytes, Infallible>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The token a request carries: `?token=`, else the cookie, else a bearer header.
fn offered_token(request: &Request<Incoming>) -> Option<&str> {
    let query = request.uri().query().unwrap_or_default();
    let from_query = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="));
    let from_cookie = || {
        request
            .headers()
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|cookies| cookies.split(';'))
            .find_map(|cookie| cookie.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
    };
    let from_header = || {
        request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
    };
    from_query.or_else(from_cookie).or_else(from_header)
}

fn answer(request: &Request<Incoming>, shared: &Arc<Shared>) -> Reply {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "the dashboard is read-only\n",
        );
    }
    let offered = offered_token(request);
    if !shared.access.accepts(offered) {
        return reply(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            "this dashboard needs its token: open the URL tank printed (…/?token=…)\n",
        );
    }
    match request.uri().path() {
        "/" | "/index.html" => {
            let mut response = reply(
                StatusCode::OK,
                "text/html; charset=utf-8",
                shared.page.clone(),
            );
            // The page's own requests (events) carry the token as a cookie.
            if let (Access::Token { .. }, Some(token)) = (&shared.access, offered) {
                let cookie = format!("{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/");
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().insert(SET_COOKIE, value);
                }
            }
            response
        }
        "/events" => events(shared),
        "/state" => {
            let json = shared
                .state
                .lock()
                .map(|state| state.snapshot_json().to_string())
                .unwrap_or_else(|_| "null".into());
            reply(StatusCode::OK, "application/json", json)
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "tank's dashboard serves /, /events and /state\n",
        ),
    }
}

/// The events stream: the snapshot, then every event; a snapshot again after
/// falling behind; a comment line every [`HEARTBEAT`].
fn events(shared: &Arc<Shared>) -> Reply {
    let Some((snapshot, mut events)) = shared.subscribe() else {
        return reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain; charset=utf-8",
            "the dashboard's state is unavailable\n",
        );
    };
    let (tx, rx) = mpsc::channel::<Bytes>(BACKLOG);
    let shared = shared.clone();
    tokio::spawn(async move {
        if tx.send(snapshot).await.is_err() {
            return;
        }
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.tick().await;
        loop {
            let next = tokio::select! {
                event = events.recv() => match event {
                    Ok(event) => event,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        match shared.subscribe() {
                            Some((snapshot, fresh)) => {
                                events = fresh;
                                snapshot
                            }
                            None => return,
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = heartbeat.tick() => Bytes::from_static(b": still here\n\n"),
            };
            if tx.send(next).await.is_err() {
                return;
            }
        }
    });
    let mut response = Response::new(EventBody(rx).boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A body of events from a channel: it ends when the sender goes.
struct EventBody(mpsc::Receiver<Bytes>);

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|event| event.map(|bytes| Ok(Frame::data(bytes))))
    }
}
