//! The guns: how a queue's instances talk to its target. A gun is a protocol,
//! not a flag: each protocol is a module behind the two traits here, and
//! `tank_type` becomes a gun in one place, [`Guns::build`].
//!
//! Above the guns, an instance (`queue.rs`) takes work from its dispatch —
//! a shot, a replayed session's request — stamps its start and lag, fires it
//! through its [`Barrel`] and sends one sample per request. Below them, the
//! protocol owns everything on the wire. The split is that one question —
//! "what happened to this request?" — is answered by the barrel alone, as a
//! [`Measured`], and everything else (when to fire, which instance, rows,
//! lag, abandonment at a second Ctrl-C) is the instance's.
//!
//! # Contract
//!
//! A [`Gun`] is shared by a queue's instances; each instance holds its own
//! [`Barrel`], made once by [`Gun::barrel`] and used for every request the
//! instance fires.
//!
//! - **Connect.** A barrel opens its connection (or takes its share of one)
//!   when a request needs it, never ahead: connect time belongs to the request
//!   that waited for it. A barrel MAY share connections with other barrels of
//!   the same gun (memcached pipelining, HTTP/2 streams); the [`Placement`]
//!   says which I/O thread it runs on, so a shared connection stays on one
//!   thread.
//! - **Fire.** [`Barrel::fire`] sends one request and MUST resolve within the
//!   gun's budget (`timeout`, counted from the request's `start`), however the
//!   target behaves. It returns the request's [`Measured`]:
//!   - `net_code` 0 when a whole reply was read; otherwise the errno
//!     ([`tank_stats::NetCode`]), 110 when the budget ran out, 71 when the
//!     reply cannot be read. A protocol MAY add codes of its own for states
//!     only it has (an HTTP/2 stream reset, say); each MUST be documented in
//!     its module and in docs/, and MUST NOT collide with an errno it can meet;
//!   - `proto_code` the protocol's outcome in HTTP's terms (the status; 200/404/…
//!     for memcached and gRPC by their own tables), kept when the reply broke
//!     after it was read; 0 when none was read;
//!   - `size_out` / `size_in` the bytes this request put on and took off the
//!     wire, as framed;
//!   - every phase (connect, send, latency, receive) filled by
//!     [`measure::fill`], so the parts sum to `interval_real` on every row;
//!   - `sends`: how many times the request went out (a protocol MAY send a
//!     request again only where its module says why that is safe; nothing is
//!     retried silently).
//!
//!   `reply`, when given, receives the reply's bytes up to its capacity (the
//!   answers log; a scenario's extraction), the head as HTTP/1 text for a
//!   protocol whose head is not text.
//! - **Drop.** A barrel MAY be dropped in the middle of `fire` (a second
//!   Ctrl-C aborts the instance); it MUST then leave nothing behind that
//!   blocks other barrels (a shared connection carries on, or is closed).
//! - **Hang up.** [`Barrel::hang_up`] closes the barrel's own connection (a
//!   replayed session ended); the next request connects anew.
//!
//! Members: [`wire`] (HTTP/1.x, plain TCP, memcached: replies come back in
//! request order on the connection) and [`h2`] (HTTP/2 and gRPC: streams
//! multiplexed over few connections). A new protocol is a new module, a new
//! variant of [`Guns`] and an arm in [`Guns::build`] and `queue::run`.

pub mod h2;
pub(crate) mod measure;
pub mod wire;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tank_config::{QueueConfig, TankType, ORIGIN_ADDRESS};
use tank_stats::Measured;
use tokio::time::Instant;

use crate::io_threads::IoThread;
use crate::{http, target, tls, EngineError};

pub use self::h2::{H2Barrel, H2Gun};
pub use wire::{Protocol, WireBarrel, WireGun};

/// Where an instance runs: what a gun needs to decide which connection its
/// barrel shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    /// The instance's number over the whole run (queues continue each other's).
    pub instance: usize,
    /// The I/O thread it runs on.
    pub thread: IoThread,
    /// How many I/O threads the run has.
    pub threads: usize,
}

/// A queue's gun: shared by its instances, each firing through a barrel of its own.
pub(crate) trait Gun: Send + Sync + 'static {
    /// One instance's end of the gun.
    type Barrel: Barrel;

    /// The barrel of the instance at `placement`; `index` is its number in its
    /// queue (it picks a source address, `gatling_ip`, round-robin).
    fn barrel(self: &Arc<Self>, index: usize, placement: Placement) -> Self::Barrel;
}

/// One instance's end of a gun. See the module's contract.
pub(crate) trait Barrel: Send + 'static {
    /// Fire `request`, which started at `start`; resolves within the gun's
    /// budget with the request's measurement.
    fn fire<'a>(
        &'a mut self,
        request: &'a [u8],
        start: Instant,
        reply: Option<&'a mut Vec<u8>>,
    ) -> impl Future<Output = Measured> + Send + 'a;

    /// Close this barrel's connection; the next request connects anew.
    fn hang_up(&mut self);
}

/// The gun a queue's `tank_type` asks for.
pub(crate) enum Guns {
    /// `http`, `none` and `memcached`: see [`wire`].
    Wire(Arc<WireGun>),
    /// `http2` and `grpc`: see [`h2`].
    H2(Arc<H2Gun>),
}

impl Guns {
    /// The gun `queue` asks for, its target resolved and its TLS set up;
    /// `origin` is the in-process simulator's address, for `address = origin`.
    /// The one place where `tank_type` becomes a protocol.
    pub(crate) fn build(
        queue: &QueueConfig,
        origin: Option<SocketAddr>,
    ) -> Result<Guns, EngineError> {
        let at =
            |key: &str, message: String| EngineError::Option(queue.places.of(key).error(message));
        let target = if queue.address.trim() == ORIGIN_ADDRESS {
            let addr = origin.ok_or_else(|| {
                at(
                    "address",
                    "`origin` is the origin simulator: it needs an [origin] section".into(),
                )
            })?;
            target::Target {
                addr,
                host: addr.ip().to_string(),
            }
        } else {
            // memcached's own port when the address names none.
            let port = queue.port.or_else(|| {
                let bare =
                    target::split_address(&queue.address).is_ok_and(|(_, port)| port.is_none());
                (queue.tank_type == TankType::Memcached && bare).then_some(MEMCACHED_PORT)
            });
            target::resolve(&queue.address, port, queue.ssl).map_err(|m| at("address", m))?
        };
        let tls = if queue.ssl {
            let options = tls::TlsOptions {
                verify: queue.ssl_verify,
                client_certificate: queue.client_certificate.clone(),
                client_key: queue.client_key.clone(),
                cipher_suites: queue.client_cipher_suites.clone(),
            };
            Some(tls::client_config(&options).map_err(|e| at(e.key, e.message))?)
        } else {
            None
        };
        let limits = http::Limits::from(queue.reply_limits);
        let protocol = match queue.tank_type {
            TankType::Http => Protocol::Http(limits),
            TankType::None => Protocol::Tcp,
            TankType::Memcached => Protocol::Memcached,
            TankType::Http2 | TankType::Grpc => {
                let kind = if queue.tank_type == TankType::Grpc {
                    self::h2::Kind::Grpc
                } else {
                    self::h2::Kind::Http
                };
                let authority = queue.grpc.as_ref().and_then(|g| g.authority.clone());
                return Ok(Guns::H2(Arc::new(H2Gun::new(
                    target,
                    tls,
                    kind,
                    limits,
                    queue.timeout,
                    queue.gatling_ip.clone(),
                    queue.connections.map(|n| n as usize),
                    authority,
                ))));
            }
        };
        let gun = WireGun::new(
            target,
            tls,
            protocol,
            queue.timeout,
            queue.gatling_ip.clone(),
        )
        .with_depth(queue.depth as usize);
        Ok(Guns::Wire(Arc::new(gun)))
    }

    /// The endpoint shot at (resolved address and port).
    pub(crate) fn endpoint(&self) -> SocketAddr {
        match self {
            Guns::Wire(gun) => gun.endpoint(),
            Guns::H2(gun) => gun.endpoint(),
        }
    }

    /// The per-request budget.
    pub(crate) fn timeout(&self) -> Duration {
        match self {
            Guns::Wire(gun) => gun.timeout(),
            Guns::H2(gun) => gun.timeout(),
        }
    }
}

/// memcached's port, for a `tank_type = memcached` address without one.
const MEMCACHED_PORT: u16 = 11211;
