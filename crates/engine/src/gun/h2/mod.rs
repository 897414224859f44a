//! HTTP/2 (`tank_type = http2`) and gRPC over it (`tank_type = grpc`):
//! many shots in flight on few connections, each shot a stream.
//!
//! The ammo stays what it is for HTTP/1 (every format, and replayed
//! sessions): `request.rs` turns each distinct request into an HTTP/2 one
//! once. gRPC's ammo is compiled by the plan into such a request (see
//! `tank_grpc::call`), so a gRPC call is an HTTP/2 stream like any other;
//! only its reply is read another way ([`Kind`]). `pool.rs` multiplexes the
//! streams over connections per I/O thread; `ledger.rs` follows the frames
//! on each connection, which gives every stream its bytes as framed and the
//! moments its request left and its reply's HEADERS and END_STREAM arrived.
//!
//! The h2 crate (hyper's HTTP/2) does the protocol: HPACK, flow control,
//! SETTINGS, GOAWAY, resets. It is used directly rather than through
//! hyper's client, whose pooling, retries of requests it deems safe and
//! body types would stand between a shot and its stream; h2 gives the
//! stream itself (its id, its reset reason, GOAWAY), and the ledger gives
//! the timing h2's API does not.
//!
//! # A shot's row
//!
//! - connect: the connection's TCP (and TLS with ALPN `h2`) set-up, on the
//!   stream that opened it and on streams that waited for it; 0 on an open
//!   connection. The HTTP/2 preface and SETTINGS are not waited for.
//! - send: until the request's END_STREAM frame was written whole (a
//!   stream held back by the server's stream limit waits here);
//! - latency: until the reply's HEADERS began to arrive;
//! - receive: until its END_STREAM (the last DATA or the trailers);
//! - size out / in: the stream's frames, their 9-byte headers included
//!   (HEADERS as HPACK encoded them, DATA, the client's WINDOW_UPDATEs and
//!   RST_STREAM for it out; the server's frames of it in). The connection's
//!   own frames belong to no row.
//!
//! # Net codes of HTTP/2's own
//!
//! Besides the errno (a connection refused, reset: 111, 104...), 110 for the
//! budget and 71 for a reply h2 found malformed, a stream's row may carry
//! (see `tank_stats::NetCode`, and docs/http2.md):
//! - 1000 + the error code: the server reset the stream (RST_STREAM);
//!   1007 is REFUSED_STREAM, a request the server did not process;
//! - 1100 + the error code: the server sent GOAWAY and this stream was not
//!   among those it finishes;
//! - 1200: the connection ended with the stream in flight, without GOAWAY
//!   and without an errno;
//! - 1201: flow control held the request back until the budget ran out (no
//!   stream slot, or no send window): the request never left whole;
//! - 1202: over TLS, the server did not choose `h2` by ALPN.
//!
//! None is below 1000, and Linux's errnos end at 133. Nothing is sent twice:
//! a stream that failed has its row with its code. A shot that finds its
//! connection closed before its stream opened goes to another connection;
//! it had not been sent, so that is no retry.

mod ledger;
mod outcome;
mod pool;
mod reflect;
mod request;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::ClientConfig;
use tank_stats::{micros, Measured, NetCode};
use tokio::time::{timeout_at, Instant};

use super::measure::{fill, Marks};
use super::{Barrel, Gun, Placement};
use crate::http::Limits;
use crate::target::Target;
pub use outcome::Kind;
use pool::{Dial, Pools, Slot};

/// An HTTP/2 gun: a queue's connections and how its shots go over them.
pub struct H2Gun {
    dial: Dial,
    kind: Kind,
    limits: Limits,
    timeout: Duration,
    connections: Option<usize>,
    sources: Arc<[IpAddr]>,
    /// `host:port` for requests without a Host, and the scheme.
    authority: String,
    scheme: &'static str,
    /// Made when the first barrel says how many threads there are.
    pools: OnceLock<Pools>,
    /// Replies by `grpc-status` (a gRPC gun's).
    statuses: Arc<StatusTally>,
}

/// Replies counted by gRPC status, without a lock: a counter per code.
pub struct StatusTally([std::sync::atomic::AtomicU64; 256]);

impl Default for StatusTally {
    fn default() -> Self {
        StatusTally(std::array::from_fn(|_| Default::default()))
    }
}

impl StatusTally {
    fn count(&self, status: tank_grpc::Status) {
        self.0[usize::from(status.0)].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The statuses counted, in code order, with their counts.
    pub fn counts(&self) -> Vec<(tank_grpc::Status, u64)> {
        (0..=255u8)
            .map(|code| {
                let n = self.0[usize::from(code)].load(std::sync::atomic::Ordering::Relaxed);
                (tank_grpc::Status(code), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The most header bytes a reply's head may decode to, at least.
const MIN_HEADER_LIST: u32 = 16 << 10;
/// Each stream's receive window: replies up to this size flow without waiting
/// for a WINDOW_UPDATE (the window reopens as soon as data is read).
const STREAM_WINDOW: u32 = 1 << 20;
/// The connection's receive window: the streams' windows together.
const CONNECTION_WINDOW: u32 = 16 << 20;

/// What an HTTP/2 gun needs besides what every gun does.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How its replies read.
    pub kind: Kind,
    /// phantom's reply limits (the body's size, the head's).
    pub limits: Limits,
    /// `connections` (`None`: as few as the concurrency needs).
    pub connections: Option<usize>,
    /// The `:authority` of requests without a Host (`None`: the address's
    /// host and port).
    pub authority: Option<String>,
}

impl H2Gun {
    /// A gun speaking HTTP/2 as `settings` say to `target`, over TLS when
    /// `tls` is set (ALPN `h2` is asked for), else h2c with prior knowledge;
    /// each shot within `timeout`, from `sources` round-robin.
    pub fn new(
        target: Target,
        tls: Option<Arc<ClientConfig>>,
        settings: Settings,
        timeout: Duration,
        sources: Vec<IpAddr>,
    ) -> Self {
        let Settings {
            kind,
            limits,
            connections,
            authority,
        } = settings;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let tls = tls.map(|config| {
            let mut config = (*config).clone();
            // http/1.1 too: a server without h2 then says so by choosing it,
            // rather than failing the handshake, and the row says why (1202).
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            tokio_rustls::TlsConnector::from(Arc::new(config))
        });
        let authority = authority.unwrap_or_else(|| match target.addr {
            SocketAddr::V6(addr) if target.host.parse::<IpAddr>().is_ok() => {
                format!("[{}]:{}", addr.ip(), addr.port())
            }
            addr => format!("{}:{}", target.host, addr.port()),
        });
        let header_list = u32::try_from(limits.field)
            .unwrap_or(u32::MAX)
            .max(MIN_HEADER_LIST);
        let mut builder = h2::client::Builder::new();
        builder
            .enable_push(false)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_header_list_size(header_list);
        H2Gun {
            dial: Dial {
                target,
                tls,
                builder,
            },
            kind,
            limits,
            timeout,
            connections,
            sources: Arc::from(sources),
            authority,
            scheme,
            pools: OnceLock::new(),
            statuses: Arc::default(),
        }
    }

    /// Its count of replies by gRPC status (`None` for HTTP/2).
    pub(crate) fn grpc_statuses(&self) -> Option<Arc<StatusTally>> {
        (self.kind == Kind::Grpc).then(|| Arc::clone(&self.statuses))
    }

    /// The endpoint shot at.
    pub fn endpoint(&self) -> SocketAddr {
        self.dial.target.addr
    }

    /// The per-shot budget.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn pools(&self, threads: usize) -> &Pools {
        self.pools.get_or_init(|| {
            let cache = || request::Cache::new(self.authority.clone(), self.scheme);
            Pools::new(threads, self.connections, &self.sources, cache)
        })
    }
}

/// The headers an HTTP/2 request would drop from `request`, an HTTP/1
/// request, or why it cannot be sent over HTTP/2: what the plan check
/// reports before the first shot.
pub fn check_request(request: &[u8]) -> Result<Vec<String>, String> {
    request::convert(request, "check:0", "http").map(|c| c.dropped)
}

/// One instance's end of an HTTP/2 gun: its pool.
pub struct H2Barrel {
    gun: Arc<H2Gun>,
    pool: usize,
}

/// Why a shot failed before its reply was read.
enum Failure {
    Net(NetCode),
    /// The connection could not open a stream (closed, or GOAWAY): nothing
    /// was sent, so another connection may carry the shot.
    Unusable(NetCode),
}

/// What a shot got to, for its row when it fails or runs out of time.
#[derive(Default)]
struct Progress {
    /// The stream, once opened: its ledger and id.
    stream: Option<(Arc<pool::Connection>, u32)>,
    outcome: outcome::Outcome,
}

impl H2Barrel {
    /// Fire `request`, which started at `start`.
    async fn fire(
        &mut self,
        request: &[u8],
        start: Instant,
        mut reply: Option<&mut Vec<u8>>,
    ) -> Measured {
        let gun = Arc::clone(&self.gun);
        let deadline = start + gun.timeout;
        let mut marks = Marks::default();
        let mut progress = Progress::default();
        if let Some(reply) = reply.as_deref_mut() {
            reply.clear();
        }
        let shot = self.shoot(request, start, &mut marks, &mut progress, reply);
        let result = match timeout_at(deadline, shot).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(code)) => Err(code),
            Err(_) => Err(NetCode::TIMED_OUT),
        };
        let end_now = micros(start.elapsed());
        let mut measured = Measured::default();
        let mut end_us = end_now;
        if let Some((connection, id)) = &progress.stream {
            // The stream's frames, and the moments they mark.
            let record = connection
                .ready_ledger()
                .map(|ledger| ledger.take(*id))
                .unwrap_or_default();
            let at = |moment: Option<Instant>| {
                moment.map(|at| micros(at.saturating_duration_since(start)))
            };
            measured.size_out = record.out;
            measured.size_in = record.input;
            marks.sent = at(record.sent);
            marks.first_byte = at(record.head);
            if result.is_ok() {
                end_us = at(record.end).unwrap_or(end_now).min(end_now);
            }
            if result == Err(NetCode::TIMED_OUT) && record.sent.is_none() {
                // The budget ran out before the request left whole: flow control held it.
                return self.row(
                    measured,
                    marks,
                    Err(NetCode::H2_STALLED),
                    &progress,
                    end_now,
                );
            }
        }
        self.row(measured, marks, result, &progress, end_us)
    }

    /// The shot's row.
    fn row(
        &self,
        mut measured: Measured,
        marks: Marks,
        result: Result<(), NetCode>,
        progress: &Progress,
        end_us: u64,
    ) -> Measured {
        measured.sends = u8::from(measured.size_out > 0);
        measured.proto_code = progress.outcome.code;
        if let Some(status) = progress.outcome.grpc {
            self.gun.statuses.count(status);
        }
        measured.net_code = result.err().unwrap_or(NetCode::OK);
        fill(&mut measured, &marks, end_us, micros(self.gun.timeout));
        measured
    }

    /// The shot up to its reply's end; `progress` keeps what it got to.
    async fn shoot(
        &mut self,
        request: &[u8],
        start: Instant,
        marks: &mut Marks,
        progress: &mut Progress,
        reply: Option<&mut Vec<u8>>,
    ) -> Result<(), NetCode> {
        let gun = Arc::clone(&self.gun);
        // Made by `barrel` with the run's thread count; the count is not used again.
        let pools = gun.pools(1);
        let converted = pools.with(self.pool, |pool| pool.cache.get(request));
        let Ok(h2_request) = converted else {
            // The plan check rejects what cannot be converted; a request
            // that slipped through is a protocol error of the ammo's.
            return Err(NetCode::PROTOCOL);
        };
        // A connection found closed before the stream opened: once more on another.
        let mut attempts = 0;
        let (slot, response) = loop {
            attempts += 1;
            let slot = pools.with(self.pool, pool::Pool::take);
            match self
                .open_stream(&slot, &h2_request, request, start, marks)
                .await
            {
                Ok((id, response)) => {
                    progress.stream = Some((Arc::clone(&slot.0), id));
                    break (slot, response);
                }
                Err(Failure::Unusable(code)) => {
                    slot.0.retire();
                    if attempts == 2 {
                        return Err(code);
                    }
                }
                Err(Failure::Net(code)) => return Err(code),
            }
        };
        let read = outcome::read(
            response,
            gun.kind,
            &gun.limits,
            &mut progress.outcome,
            reply,
        )
        .await;
        drop(slot);
        read
    }

    /// Take a stream on `slot`'s connection (opening it if need be) and send
    /// the request on it: the stream's id and its reply to come.
    async fn open_stream(
        &self,
        slot: &Slot,
        h2_request: &request::H2Request,
        raw: &[u8],
        start: Instant,
        marks: &mut Marks,
    ) -> Result<(u32, h2::client::ResponseFuture), Failure> {
        let connection = &slot.0;
        let was_open = connection.is_open();
        let dial = &self.gun.dial;
        let ready = connection
            .open(|source| pool::open(dial, source, raw))
            .await
            .map_err(Failure::Net)?;
        marks.connected = Some(if was_open { 0 } else { micros(start.elapsed()) });
        let send = ready
            .send
            .clone()
            .ready()
            .await
            .map_err(|e| Failure::Unusable(outcome::net_code(&e)))?;
        let mut send = send;
        let empty = h2_request.body.is_empty();
        let (response, mut body) = send
            .send_request(h2_request.to_request(), empty)
            .map_err(|e| Failure::Unusable(outcome::net_code(&e)))?;
        let id = u32::from(response.stream_id());
        if !empty {
            body.send_data(h2_request.body.clone(), true)
                .map_err(|e| Failure::Net(outcome::net_code(&e)))?;
        }
        Ok((id, response))
    }
}

impl pool::Connection {
    /// Its ledger, once open.
    fn ready_ledger(&self) -> Option<&Arc<ledger::Ledger>> {
        self.ready_now().map(|ready| &ready.ledger)
    }
}

impl Gun for H2Gun {
    type Barrel = H2Barrel;

    fn barrel(self: &Arc<Self>, _index: usize, placement: Placement) -> H2Barrel {
        let pools = self.pools(placement.threads);
        H2Barrel {
            gun: Arc::clone(self),
            pool: pools.index_for(placement.thread.index()),
        }
    }
}

impl Barrel for H2Barrel {
    fn fire<'a>(
        &'a mut self,
        request: &'a [u8],
        start: Instant,
        reply: Option<&'a mut Vec<u8>>,
    ) -> impl std::future::Future<Output = Measured> + Send + 'a {
        H2Barrel::fire(self, request, start, reply)
    }

    fn hang_up(&mut self) {
        // A replayed session's end: its streams are done, and the connection
        // is shared with other sessions, so it stays open.
    }
}
