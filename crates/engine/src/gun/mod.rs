//! The guns: how a queue's instances talk to its target. A gun is a protocol,
//! not a flag: each protocol is a module behind the two traits here, and
//! `tank_type` becomes a protocol in one place, [`GunSpec::check`].
//!
//! Above the guns, an instance (`queue/`) takes work from its dispatch —
//! a shot, a replayed session's request, a scenario run's step (built by the
//! run's state before it is fired, its reply read after) — stamps its start
//! and lag, fires it
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
//! request order on the connection), [`h2`] (HTTP/2 and gRPC: streams
//! multiplexed over few connections) and [`mysql`] (a login after
//! connecting, then commands; see there why it is not a wire protocol). A new
//! protocol is a new module, a new
//! variant of [`Guns`] and an arm in [`GunSpec::check`], [`GunSpec::resolve`] and
//! `queue::run`.

pub mod h2;
pub(crate) mod measure;
pub mod mysql;
pub mod wire;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tank_config::{Password, QueueConfig, TankType, ORIGIN_ADDRESS};
use tank_stats::Measured;
use tokio::time::Instant;

use crate::io_threads::IoThread;
use crate::{http, target, tls, EngineError};

pub use self::h2::{H2Barrel, H2Gun};
pub use mysql::{MysqlBarrel, MysqlGun};
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

    /// Where the shot in flight has got to, updated as it goes: asked once per
    /// instance, read if the shot is abandoned.
    fn progress(&self) -> Arc<measure::ShotProgress>;
}

/// Where a queue's gun shoots, as written: resolved only by [`GunSpec::resolve`].
#[derive(Debug, Clone)]
enum Address {
    /// `address = origin`: the in-process simulator, known once it listens.
    Origin,
    /// A host (a name or an IP) and the port to use.
    Host { address: String, port: Option<u16> },
}

/// A queue's gun as its options ask for it: every option checked (the
/// address's form, TLS files and suites, the protocol), nothing resolved or
/// connected. [`GunSpec::resolve`] turns it into the gun that fires.
pub struct GunSpec {
    address: Address,
    ssl: bool,
    tls: Option<Arc<rustls::ClientConfig>>,
    protocol: Protocol,
    timeout: Duration,
    sources: Vec<std::net::IpAddr>,
    depth: usize,
    /// HTTP/2's options, for `tank_type = http2` and `grpc` (then `protocol`
    /// is not used).
    h2: Option<self::h2::Settings>,
    /// `tank_type = mysql`'s login (then `protocol` is not used); its
    /// password is read when the gun is resolved (`password_env`).
    mysql: Option<MysqlLogin>,
    /// Where `address` was written, for resolution errors.
    address_at: tank_config::OptionPlace,
}

impl GunSpec {
    /// Check the gun options of `queue`; `has_origin` says whether the config
    /// starts the origin simulator (`address = origin` needs it). The one
    /// place where `tank_type` becomes a protocol. Pure: no network.
    pub fn check(queue: &QueueConfig, has_origin: bool) -> Result<GunSpec, EngineError> {
        let at =
            |key: &str, message: String| EngineError::Option(queue.places.of(key).error(message));
        let address = if queue.address.trim() == ORIGIN_ADDRESS {
            if !has_origin {
                return Err(at(
                    "address",
                    "`origin` is the origin simulator: it needs an [origin] section".into(),
                ));
            }
            Address::Origin
        } else {
            let (_, written_port) =
                target::split_address(&queue.address).map_err(|m| at("address", m))?;
            // memcached's own port when the address names none.
            let port = queue.port.or_else(|| {
                (queue.tank_type == TankType::Memcached && written_port.is_none())
                    .then_some(MEMCACHED_PORT)
            });
            Address::Host {
                address: queue.address.clone(),
                port,
            }
        };
        // MySQL starts TLS inside its handshake: `[mysql] ssl` (the config
        // refuses `ssl` on such a queue).
        let ssl = queue.ssl || queue.mysql.as_ref().is_some_and(|m| m.ssl);
        let tls = if ssl {
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
        let limits = http::limits(queue.reply_limits);
        let protocol = match queue.tank_type {
            TankType::Http | TankType::Http2 | TankType::Grpc => Protocol::Http(limits),
            TankType::None => Protocol::Tcp(wire::tcp::Framing::of(
                &queue.reply_framing,
                queue.reply_limits.entity,
            )),
            TankType::Memcached => Protocol::Memcached,
            // Not a wire protocol: see `mysql`.
            TankType::Mysql => Protocol::Tcp(wire::tcp::Framing::Close),
        };
        let mysql = match (&queue.mysql, queue.tank_type) {
            (Some(config), TankType::Mysql) => Some(MysqlLogin {
                user: config.user.clone(),
                password: config.password.clone(),
                database: config.database.clone(),
            }),
            (None, TankType::Mysql) => {
                return Err(at(
                    "tank_type",
                    "`tank_type = mysql` needs the [mysql] section".into(),
                ))
            }
            _ => None,
        };
        let h2 = queue.tank_type.is_http2().then(|| self::h2::Settings {
            kind: if queue.tank_type == TankType::Grpc {
                self::h2::Kind::Grpc
            } else {
                self::h2::Kind::Http
            },
            limits,
            connections: queue.connections.map(|n| n as usize),
            authority: queue.grpc.as_ref().and_then(|g| g.authority.clone()),
        });
        Ok(GunSpec {
            address,
            ssl: queue.ssl,
            mysql,
            tls,
            protocol,
            timeout: queue.timeout,
            sources: queue.gatling_ip.clone(),
            depth: queue.depth as usize,
            h2,
            address_at: queue.places.of("address"),
        })
    }

    /// The host requests name (an HTTP `Host` header's default): the
    /// address's host, an IPv6 address in brackets, with `:port` unless the
    /// port is the scheme's default (80, or 443 with `ssl`), as RFC 9110
    /// §7.2 asks; `localhost` for the origin simulator. No lookup.
    pub fn host(&self) -> String {
        match &self.address {
            Address::Origin => "localhost".to_owned(),
            Address::Host { address, port } => {
                let (host, written) = target::split_address(address)
                    .unwrap_or_else(|_| (address.trim().to_owned(), None));
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                // `port` overrides the address's, as when connecting.
                match port.or(written) {
                    Some(port) if port != if self.ssl { 443 } else { 80 } => {
                        format!("{host}:{port}")
                    }
                    _ => host,
                }
            }
        }
    }

    /// The target, resolved (a host name is looked up now); `origin` is the
    /// in-process simulator's address, for `address = origin`.
    pub fn target(&self, origin: Option<SocketAddr>) -> Result<target::Target, EngineError> {
        match &self.address {
            Address::Origin => {
                let addr = origin.ok_or_else(|| {
                    EngineError::Option(
                        self.address_at
                            .error("`origin` is the origin simulator, which is not running"),
                    )
                })?;
                Ok(target::Target {
                    addr,
                    host: addr.ip().to_string(),
                })
            }
            Address::Host { address, port } => target::resolve(address, *port, self.ssl)
                .map_err(|m| EngineError::Option(self.address_at.error(m))),
        }
    }

    /// The gun that fires: its target resolved (see [`GunSpec::target`]).
    pub(crate) fn resolve(&self, origin: Option<SocketAddr>) -> Result<Guns, EngineError> {
        if let Some(login) = &self.mysql {
            let credentials = mysql::Credentials {
                user: login.user.clone(),
                password: login.password()?,
                database: login.database.clone(),
            };
            return Ok(Guns::Mysql(Arc::new(MysqlGun::new(
                self.target(origin)?,
                self.tls.clone(),
                credentials,
                self.timeout,
                self.sources.clone(),
            ))));
        }
        if let Some(h2) = &self.h2 {
            return Ok(Guns::H2(Arc::new(H2Gun::new(
                self.target(origin)?,
                self.tls.clone(),
                h2.clone(),
                self.timeout,
                self.sources.clone(),
            ))));
        }
        let gun = WireGun::new(
            self.target(origin)?,
            self.tls.clone(),
            self.protocol,
            self.timeout,
            self.sources.clone(),
        )
        .with_depth(self.depth);
        Ok(Guns::Wire(Arc::new(gun)))
    }
}

impl GunSpec {
    /// Whether what the gun reads from the environment when it is resolved
    /// (a MySQL `password_env`) is there now: an error naming the option
    /// when not. A run fails on it when it starts; `tank plan` only warns.
    pub fn environment(&self) -> Result<(), EngineError> {
        match &self.mysql {
            Some(login) => login.password().map(drop),
            None => Ok(()),
        }
    }
}

/// `[mysql]` as a gun reads it.
#[derive(Debug, Clone)]
struct MysqlLogin {
    user: String,
    password: Password,
    database: Option<String>,
}

impl MysqlLogin {
    /// The password: written, or from the environment variable `password_env` names.
    fn password(&self) -> Result<String, EngineError> {
        match &self.password {
            Password::Literal(password) => Ok(password.clone()),
            Password::Env { name, place } => std::env::var(name).map_err(|_| {
                EngineError::Option(place.error(format!(
                    "the environment variable `{name}` is not set (or not UTF-8): expected \
                     it to hold the password"
                )))
            }),
        }
    }
}

/// The gun a queue's `tank_type` asks for, ready to fire.
#[derive(Clone)]
pub(crate) enum Guns {
    /// `http`, `none` and `memcached`: see [`wire`].
    Wire(Arc<WireGun>),
    /// `http2` and `grpc`: see [`h2`].
    H2(Arc<H2Gun>),
    /// `mysql`: see [`mysql`].
    Mysql(Arc<MysqlGun>),
}

impl Guns {
    /// The endpoint shot at (resolved address and port).
    pub(crate) fn endpoint(&self) -> SocketAddr {
        match self {
            Guns::Wire(gun) => gun.endpoint(),
            Guns::H2(gun) => gun.endpoint(),
            Guns::Mysql(gun) => gun.endpoint(),
        }
    }

    /// A gRPC gun's count of replies by status (`None` for other guns).
    pub(crate) fn grpc_statuses(&self) -> Option<Arc<self::h2::StatusTally>> {
        match self {
            Guns::H2(gun) => gun.grpc_statuses(),
            Guns::Wire(_) | Guns::Mysql(_) => None,
        }
    }

    /// The per-request budget.
    pub(crate) fn timeout(&self) -> Duration {
        match self {
            Guns::Wire(gun) => gun.timeout(),
            Guns::H2(gun) => gun.timeout(),
            Guns::Mysql(gun) => gun.timeout(),
        }
    }

    /// What the gun found that no row explains (a MySQL login it cannot
    /// complete, how an HTTP/2 server broke the protocol), for the run to say
    /// once.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Guns::Wire(_) => None,
            Guns::H2(gun) => gun.problem(),
            Guns::Mysql(gun) => gun.problem(),
        }
    }
}

/// memcached's port, for a `tank_type = memcached` address without one.
const MEMCACHED_PORT: u16 = 11211;

#[cfg(test)]
mod tests {
    use super::*;

    fn host_of(options: &str) -> String {
        let text = format!(
            "[phantom]\nammo_type = uri\nammofile = a\nrps_schedule = const(1, 1s)\n{options}"
        );
        let config = tank_config::load_str(
            &text,
            tank_config::ConfigFormat::Ini,
            std::path::Path::new("load.ini"),
            &[],
        )
        .unwrap();
        GunSpec::check(&config.queues[0], false).unwrap().host()
    }

    #[test]
    fn the_host_has_the_port_unless_it_is_the_schemes_default() {
        assert_eq!(host_of("address = 127.0.0.1:19301\n"), "127.0.0.1:19301");
        assert_eq!(host_of("address = example.org:80\n"), "example.org");
        assert_eq!(host_of("address = example.org\n"), "example.org");
        assert_eq!(host_of("address = [::1]:8080\n"), "[::1]:8080");
        assert_eq!(host_of("address = ::1\n"), "[::1]");
        assert_eq!(
            host_of("address = example.org\nport = 81\n"),
            "example.org:81"
        );
        assert_eq!(
            host_of("address = example.org:443\nssl = 1\n"),
            "example.org"
        );
        assert_eq!(
            host_of("address = example.org:80\nssl = 1\n"),
            "example.org:80"
        );
    }
}
