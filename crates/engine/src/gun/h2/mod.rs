//! HTTP/2 (`tank_type = http2`) and gRPC over it (`tank_type = grpc`):
//! many shots in flight on few connections, each shot a stream.
//!
//! The ammo stays what it is for HTTP/1 (every format, and replayed
//! sessions): `request.rs` turns each distinct request into an HTTP/2 one
//! once, its header block encoded then. gRPC's ammo is compiled by the plan
//! into such a request (see `tank_grpc::call`), so a gRPC call is an HTTP/2
//! stream like any other; only its reply is read another way ([`Kind`]).
//! `pool.rs` multiplexes the streams over connections per I/O thread.
//!
//! The protocol is tank-h2's: a client connection made for this hot path
//! (a request's block copied, not encoded; a reply decoded only as far as
//! its status, unless it is kept), which counts every stream's frames and
//! marks when its request left and its reply's HEADERS and END_STREAM
//! arrived. The h2 crate (hyper's) did this before at nearly four times the
//! instructions per request, most of them decoding reply headers no row
//! uses, and hid the frames, which a second parser had to follow.
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
//!   (HEADERS as HPACK encoded them: static table and literals, Huffman-coded
//!   where shorter; DATA, the client's WINDOW_UPDATEs and RST_STREAM for it
//!   out; the server's frames of it in). The connection's own frames belong
//!   to no row.
//!
//! # Net codes of HTTP/2's own
//!
//! Besides the errno (a connection refused, reset: 111, 104...), 110 for the
//! budget and 71 for a reply that broke the protocol or phantom's limits, a
//! stream's row may carry (see `tank_stats::NetCode`, and docs/http2.md):
//! - 1000 + the error code: the server reset the stream (RST_STREAM);
//!   1007 is REFUSED_STREAM, a request the server did not process;
//! - 1100 + the error code: the server sent GOAWAY and this stream was not
//!   among those it finishes;
//! - 1200: the connection ended with the stream in flight (without GOAWAY,
//!   or after one that counted the stream among those it finishes) and
//!   without an errno;
//! - 1201: flow control held the request back until the budget ran out (no
//!   stream slot, or no send window): the request never left whole;
//! - 1202: the server does not speak HTTP/2 (no ALPN `h2` over TLS; an
//!   HTTP/1 reply or a close before its SETTINGS in cleartext).
//!
//! None is below 1000, and Linux's errnos end at 133. A shot that finds its
//! connection closed before its stream opened goes to another connection;
//! it had not been sent, so that is no retry. A stream the server says it
//! did not process (1007, or 11xx above a GOAWAY's last stream id) is sent
//! once more, as a retry (`sends` 2), within the shot's budget: the server
//! guarantees the first was not acted on, and a server rotating its
//! connections is not failing. Any other failure is the row's, with its code.

mod outcome;
mod pool;
mod reflect;
mod request;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::ClientConfig;
use tank_h2::{Closed, Collect, Failure};
use tank_stats::{micros, Measured, NetCode};
use tokio::time::Instant;

use super::measure::{fill, Marks, ShotProgress};
use super::wire::budget::Budget;
use super::{Barrel, Gun, Placement};
use crate::http::Limits;
use crate::target::Target;
pub use outcome::Kind;
use pool::{Dial, Pools};

/// An HTTP/2 gun: a queue's connections and how its shots go over them.
pub struct H2Gun {
    dial: Dial,
    kind: Kind,
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
    /// The first way the server broke HTTP/2 ([`H2Gun::problem`]).
    problem: OnceLock<String>,
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
        let config = tank_h2::Config {
            stream_window: STREAM_WINDOW,
            connection_window: CONNECTION_WINDOW,
            max_header_list: header_list,
            max_body: limits.entity,
            prior_knowledge: tls.is_none(),
        };
        // A gRPC call's deadline (grpc-timeout) is `timeout`: the budget
        // waits a little past it, so that a server enforcing the deadline is
        // heard (DEADLINE_EXCEEDED, 504) rather than cut off by tank's timer
        // at the same moment (110).
        let timeout = match kind {
            Kind::Grpc => timeout + deadline_grace(timeout),
            Kind::Http => timeout,
        };
        H2Gun {
            dial: Dial {
                target,
                tls,
                config,
            },
            kind,
            timeout,
            connections,
            sources: Arc::from(sources),
            authority,
            scheme,
            pools: OnceLock::new(),
            statuses: Arc::default(),
            problem: OnceLock::new(),
        }
    }

    /// The first way the server broke HTTP/2 (its streams have net code 71,
    /// which says no more), for the run to say once.
    pub fn problem(&self) -> Option<String> {
        self.problem
            .get()
            .map(|problem| format!("{problem}: the requests that met it have net code 71"))
    }

    /// Keep how `failure` broke the protocol, if it did and is the first.
    fn note_problem(&self, failure: Failure, connection: &tank_h2::Connection) {
        if self.problem.get().is_some() {
            return;
        }
        let problem = match failure {
            Failure::Malformed(why) => {
                format!("a reply broke HTTP/2's rules or tank's limits: {why}")
            }
            Failure::Closed(Closed::Protocol) | Failure::NotSent(Closed::Protocol) => {
                let why = connection.broken().unwrap_or("a protocol error");
                format!("the server broke HTTP/2 ({why}), and tank ended the connection")
            }
            _ => return,
        };
        let _ = self.problem.set(problem);
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

/// One instance's end of an HTTP/2 gun: its pool, and its timer.
pub struct H2Barrel {
    gun: Arc<H2Gun>,
    pool: usize,
    /// The shots' budget, one timer for the barrel's life.
    budget: Option<Budget>,
    /// The stream in flight's marks, for its row if it is abandoned: its
    /// connection's, then sent once opened (the connection's driver writes
    /// it; when is in the stream's record, which an abandoned stream is not
    /// read for).
    progress: Arc<ShotProgress>,
}

impl H2Barrel {
    /// Fire `request`, which started at `start`.
    async fn fire(
        &mut self,
        request: &[u8],
        start: Instant,
        mut reply: Option<&mut Vec<u8>>,
    ) -> Measured {
        let timeout = self.gun.timeout;
        let mut marks = Marks::default();
        let mut collect = match reply.as_deref_mut() {
            Some(text) => {
                text.clear();
                Collect::Text(std::mem::take(text))
            }
            None => Collect::Nothing,
        };
        let mut budget = Budget::take(&mut self.budget, start + timeout);
        let mut kept = Kept {
            stream: None,
            progress: Arc::clone(&self.progress),
            start,
        };
        let mut refused = 0u8;
        let shot = self.shoot(
            request,
            start,
            &mut marks,
            (&mut kept.stream, &mut refused),
            &mut collect,
        );
        let result = budget.within(shot).await.unwrap_or(Err(NetCode::TIMED_OUT));
        self.budget = Some(budget);
        let stream = kept.stream.take();
        let end_now = micros(start.elapsed());
        let mut measured = Measured::default();
        let mut end_us = end_now;
        let mut net = result.err().unwrap_or(NetCode::OK);
        let mut outcome = outcome::Outcome::default();
        if let Some(stream) = stream {
            let got = stream.finish();
            let at = |moment: Option<Instant>| {
                moment.map(|at| micros(at.saturating_duration_since(start)))
            };
            measured.size_out = got.record.out;
            measured.size_in = got.record.input;
            marks.sent = at(got.record.sent);
            marks.first_byte = at(got.record.head);
            if result.is_ok() {
                end_us = at(got.record.end).unwrap_or(end_now).min(end_now);
            }
            if net == NetCode::TIMED_OUT && got.record.sent.is_none() {
                // The budget ran out before the request left whole: flow control held it.
                net = NetCode::H2_STALLED;
            }
            outcome = outcome::classify(
                self.gun.kind,
                got.status,
                got.grpc_status.as_deref(),
                result.is_ok(),
            );
            collect = got.collect;
        }
        if let (Some(text), Collect::Text(kept)) = (reply, collect) {
            *text = kept;
        }
        // The streams the server refused were sent too.
        measured.sends = refused + u8::from(measured.size_out > 0);
        measured.proto_code = outcome.code;
        if let Some(status) = outcome.grpc {
            self.gun.statuses.count(status);
        }
        measured.net_code = net;
        fill(&mut measured, &marks, end_us, micros(timeout));
        measured
    }

    /// The shot up to its reply's end; `stream` keeps the stream once
    /// opened (its record makes the row, whatever happens after), and
    /// `refused` counts the streams the server refused before it (sent, and
    /// then sent again).
    async fn shoot(
        &mut self,
        request: &[u8],
        start: Instant,
        marks: &mut Marks,
        (stream, refused): (&mut Option<tank_h2::Stream>, &mut u8),
        collect: &mut Collect,
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
        // A stream that never left (its connection closed or said GOAWAY
        // first): once more on another connection; nothing was sent, so that
        // is no retry. One the server says it did not process (above a
        // GOAWAY's last stream id, or REFUSED_STREAM) goes once more too, as
        // a retry: a server rotating its connections (nginx's
        // keepalive_requests) is not failing.
        // Each of the two once, so the loop ends within three passes.
        let (mut hopped, mut resent) = (false, false);
        loop {
            let slot = pools.with(self.pool, pool::Pool::take);
            let connection = &slot.0;
            let was_open = connection.is_open();
            let dial = &gun.dial;
            // Boxed: the connect path is seldom taken, and inline it would
            // make every shot's future as large as a TLS handshake's.
            let ready = connection
                .open(|source| Box::pin(pool::open(dial, source, request)))
                .await?;
            marks.connected = Some(if was_open { 0 } else { micros(start.elapsed()) });
            self.progress.connected(marks.connected.unwrap_or(0));
            let opened = match ready.conn.open(&h2_request, collect) {
                Ok(opened) => {
                    self.progress.sent(micros(start.elapsed()), 0);
                    stream.insert(opened)
                }
                Err(closed) => {
                    connection.retire();
                    if hopped {
                        return Err(outcome::net_code(Failure::NotSent(closed)));
                    }
                    hopped = true;
                    continue;
                }
            };
            match opened.end().await {
                Ok(()) => return Ok(()),
                Err(Failure::NotSent(closed)) => {
                    connection.retire();
                    if let Some(unsent) = stream.take() {
                        *collect = unsent.finish().collect;
                    }
                    if hopped {
                        gun.note_problem(Failure::NotSent(closed), &ready.conn);
                        return Err(outcome::net_code(Failure::NotSent(closed)));
                    }
                    hopped = true;
                }
                Err(failure) if !resent && unprocessed(failure) => {
                    resent = true;
                    *refused += 1;
                    if let Some(gone) = stream.take() {
                        *collect = gone.finish().collect;
                    }
                    collect.clear();
                }
                Err(failure) => {
                    gun.note_problem(failure, &ready.conn);
                    return Err(outcome::net_code(failure));
                }
            }
        }
    }
}

/// How long past a gRPC call's deadline tank waits for the server to end it:
/// a twentieth of it, from 50 ms to 1 s (grpcio answers about 20 ms late).
fn deadline_grace(deadline: Duration) -> Duration {
    (deadline / 20).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// Whether a stream's end says the server did not process it (RFC 9113
/// §8.7): above a GOAWAY's last stream id, or refused.
fn unprocessed(failure: Failure) -> bool {
    matches!(
        failure,
        Failure::Closed(Closed::GoAway(_)) | Failure::Reset(tank_h2::frame::error::REFUSED_STREAM)
    )
}

/// The stream of a shot in flight. Dropped with it (a second Ctrl-C
/// abandons the shot), it leaves the stream's bytes and moments so far in the
/// barrel's [`ShotProgress`], for the abandoned row; a shot that ends takes
/// the stream out first.
struct Kept {
    stream: Option<tank_h2::Stream>,
    progress: Arc<ShotProgress>,
    start: Instant,
}

impl Drop for Kept {
    fn drop(&mut self) {
        let Some(stream) = &self.stream else {
            return;
        };
        let record = stream.record();
        let at = |moment: Instant| micros(moment.saturating_duration_since(self.start));
        // Opened is sent (see `progress`); the bytes are those written so far.
        if let Some(sent) = record.sent.map(at).or(self.progress.sent_us()) {
            self.progress.sent(sent, record.out);
        }
        if let Some(head) = record.head {
            self.progress.received(at(head), record.input);
        }
    }
}

impl Gun for H2Gun {
    type Barrel = H2Barrel;

    fn barrel(self: &Arc<Self>, _index: usize, placement: Placement) -> H2Barrel {
        let pools = self.pools(placement.threads);
        H2Barrel {
            gun: Arc::clone(self),
            pool: pools.index_for(placement.thread.index()),
            budget: None,
            progress: Arc::default(),
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

    fn progress(&self) -> Arc<ShotProgress> {
        Arc::clone(&self.progress)
    }
}
