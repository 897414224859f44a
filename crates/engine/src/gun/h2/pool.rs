//! The connections of an HTTP/2 gun: a pool per I/O thread, each connection
//! carrying as many streams as the server's SETTINGS_MAX_CONCURRENT_STREAMS
//! allows.
//!
//! A shot takes a stream slot on the least loaded connection of its thread's
//! pool that has one free. When none has, the pool opens another connection,
//! unless it holds its share of `connections` already: then the shot goes to
//! the least loaded one, and the connection holds its stream until a slot
//! frees (the wait is part of its send phase). Without `connections`, a pool
//! opens as many as its instances need, and no more: a thread of 64
//! instances against a server allowing 128 streams uses one connection.
//!
//! `connections = N` is spread over the threads: pool `p` of `min(N,
//! threads)` pools holds `N / pools` connections, one more for the first `N
//! % pools`; with fewer connections than threads, the instances of thread `t`
//! use pool `t % N` (their streams then cross threads, which works and costs
//! a wake-up each).
//!
//! A connection is opened by the first shot that needs it (that shot's row
//! has the connect time; shots that waited for the same connection count
//! their wait as connecting too) and lives while the server keeps it: once
//! it is closed or has sent GOAWAY, new shots go elsewhere.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tank_stats::NetCode;
use tokio::sync::OnceCell;

use super::request::Cache;
use crate::gun::wire::conn::{self, Conn};
use crate::target::Target;

/// An open HTTP/2 connection.
pub(super) struct Ready {
    /// Opens streams on it.
    pub conn: tank_h2::Connection,
}

/// A connection of a pool: opening, open, or done.
pub(super) struct Connection {
    ready: OnceCell<Ready>,
    /// Set when opening it failed, or it was found unusable.
    failed: AtomicBool,
    /// Streams taken on it and not yet given back.
    in_flight: AtomicUsize,
    /// Where it connects from.
    source: Option<IpAddr>,
}

/// The connection's limit before the server's SETTINGS say otherwise.
const ASSUMED_MAX_STREAMS: usize = 100;

impl Connection {
    fn usable(&self) -> bool {
        !self.failed.load(Ordering::Relaxed)
            && !self
                .ready
                .get()
                .is_some_and(|ready| ready.conn.is_unusable())
    }

    /// The streams the server allows at once (100 until it says).
    fn max_streams(&self) -> usize {
        self.ready
            .get()
            .map_or(ASSUMED_MAX_STREAMS, |ready| ready.conn.max_streams())
    }

    /// Whether it is open already.
    pub(super) fn is_open(&self) -> bool {
        self.ready.initialized()
    }

    /// The open connection, opening it with `open` if no one has: `Err` when
    /// that failed (it is then not picked again).
    pub(super) async fn open<F, Fut>(&self, open: F) -> Result<&Ready, NetCode>
    where
        F: FnOnce(Option<IpAddr>) -> Fut,
        Fut: std::future::Future<Output = Result<Ready, NetCode>>,
    {
        let opened = self.ready.get_or_try_init(|| open(self.source)).await;
        if opened.is_err() {
            self.failed.store(true, Ordering::Relaxed);
        }
        opened
    }

    /// Not to be picked again (the server sent GOAWAY, or it broke).
    pub(super) fn retire(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }
}

/// A stream slot on a connection, given back when dropped.
pub(super) struct Slot(pub Arc<Connection>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One thread's connections, and its conversions of requests.
pub(super) struct Pool {
    connections: Vec<Arc<Connection>>,
    /// The most connections it may hold (`None`: as many as needed).
    limit: Option<usize>,
    /// Source addresses (`gatling_ip`), taken round-robin by new connections.
    sources: Arc<[IpAddr]>,
    opened: usize,
    /// Requests converted for HTTP/2.
    pub cache: Cache,
}

impl Pool {
    pub(super) fn new(limit: Option<usize>, sources: Arc<[IpAddr]>, cache: Cache) -> Self {
        Pool {
            connections: Vec::new(),
            limit,
            sources,
            opened: 0,
            cache,
        }
    }

    /// A stream slot. With a limit (`connections`), the streams are spread
    /// over that many connections, as h2load's `-c`: a new one opens while
    /// fewer are open and none is idle, else the least loaded takes it (and
    /// holds it until a slot frees, past the server's stream limit). Without
    /// one, as few as the streams need: the least loaded with a slot free,
    /// else a new one, unless the server allows no stream at all now (then
    /// the least loaded holds it until one frees).
    pub(super) fn take(&mut self) -> Slot {
        self.connections
            .retain(|c| c.usable() || c.in_flight.load(Ordering::Relaxed) > 0);
        let load = |c: &&Arc<Connection>| c.in_flight.load(Ordering::Relaxed);
        let usable = || self.connections.iter().filter(|c| c.usable());
        let least = usable().min_by_key(load);
        // The least loaded of those with a slot free (one whose server
        // allows fewer streams can be less loaded and have none).
        let room = usable()
            .filter(|c| load(c) < c.max_streams())
            .min_by_key(load);
        let usable_count = self.connections.iter().filter(|c| c.usable()).count();
        let idle = least.is_some_and(|c| c.in_flight.load(Ordering::Relaxed) == 0);
        let spread = self.limit.is_some_and(|limit| usable_count < limit) && !idle;
        // A server that allows no stream now (SETTINGS_MAX_CONCURRENT_STREAMS
        // 0) asks for none on another connection either: the shot waits for a
        // slot (1201 when none comes) rather than opening one per request.
        let held_back = room.is_none() && usable().any(|c| c.max_streams() == 0);
        let full = self.limit.is_some_and(|limit| usable_count >= limit);
        let chosen = match (room, least) {
            (Some(free), _) if !spread => Arc::clone(free),
            (None, Some(busy)) if full || held_back => Arc::clone(busy),
            _ => {
                let source = (!self.sources.is_empty())
                    .then(|| self.sources[self.opened % self.sources.len()]);
                self.opened += 1;
                let fresh = Arc::new(Connection {
                    ready: OnceCell::new(),
                    failed: AtomicBool::new(false),
                    in_flight: AtomicUsize::new(0),
                    source,
                });
                self.connections.push(Arc::clone(&fresh));
                fresh
            }
        };
        chosen.in_flight.fetch_add(1, Ordering::Relaxed);
        Slot(chosen)
    }

    /// Connections open or opening now.
    #[cfg(test)]
    fn open_count(&self) -> usize {
        self.connections.iter().filter(|c| c.usable()).count()
    }
}

/// How a gun's connections are set up.
pub(super) struct Dial {
    pub target: Target,
    pub tls: Option<tokio_rustls::TlsConnector>,
    pub config: tank_h2::Config,
}

/// Open an HTTP/2 connection to `dial`'s target from `source`; `request`
/// names the TLS server (its Host). The connection's task runs on the
/// current thread.
pub(super) async fn open(
    dial: &Dial,
    source: Option<IpAddr>,
    request: &[u8],
) -> Result<Ready, NetCode> {
    let io = conn::connect(&dial.target, source, dial.tls.as_ref(), request).await?;
    if let Conn::Tls(stream) = &io {
        if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(NetCode::H2_NOT_OFFERED);
        }
    }
    let (conn, driver) = tank_h2::start(io, dial.config);
    // Its end (either side closing, an error) reaches each stream through
    // the connection's state, and marks the connection unusable.
    tokio::spawn(driver);
    Ok(Ready { conn })
}

/// Pools of a gun, one per I/O thread (or per connection, with fewer
/// connections than threads).
pub(super) struct Pools {
    pools: Vec<Mutex<Pool>>,
}

impl Pools {
    /// Pools for `threads` threads, sharing `connections` (`None`: as many
    /// as needed), each making its own request cache with `cache`.
    pub(super) fn new(
        threads: usize,
        connections: Option<usize>,
        sources: &Arc<[IpAddr]>,
        cache: impl Fn() -> Cache,
    ) -> Self {
        let threads = threads.max(1);
        let count = connections.map_or(threads, |n| n.clamp(1, threads));
        let pools = (0..count)
            .map(|p| {
                let limit = connections.map(|n| n / count + usize::from(p < n % count));
                Mutex::new(Pool::new(limit, Arc::clone(sources), cache()))
            })
            .collect();
        Pools { pools }
    }

    /// The pool the instances of thread `thread` use.
    pub(super) fn index_for(&self, thread: usize) -> usize {
        thread % self.pools.len()
    }

    /// Run `f` on pool `index`.
    pub(super) fn with<T>(&self, index: usize, f: impl FnOnce(&mut Pool) -> T) -> T {
        let mut pool = self.pools[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(limit: Option<usize>) -> Pool {
        Pool::new(
            limit,
            Arc::from(Vec::new()),
            Cache::new("t:1".into(), "http"),
        )
    }

    #[test]
    fn streams_fill_a_connection_before_another_opens() {
        let mut pool = pool(None);
        let slots: Vec<Slot> = (0..ASSUMED_MAX_STREAMS).map(|_| pool.take()).collect();
        assert_eq!(pool.open_count(), 1);
        let next = pool.take();
        assert_eq!(pool.open_count(), 2);
        assert!(!Arc::ptr_eq(&next.0, &slots[0].0));
        drop(slots);
        // Both have room now: the least loaded one is taken.
        let again = pool.take();
        assert!(!Arc::ptr_eq(&again.0, &next.0));
    }

    #[test]
    fn a_limited_pool_spreads_its_streams_over_its_connections() {
        // `connections = 4` with 8 in flight: 2 streams on each, as h2load -c 4 -m 2
        // (before, all 8 shared the first connection, which had room for 100).
        let mut pool = pool(Some(4));
        let slots: Vec<Slot> = (0..8).map(|_| pool.take()).collect();
        assert_eq!(pool.open_count(), 4);
        let loads: Vec<usize> = pool
            .connections
            .iter()
            .map(|c| c.in_flight.load(Ordering::Relaxed))
            .collect();
        assert_eq!(loads, [2, 2, 2, 2]);
        // An idle connection is used before another opens.
        drop(slots);
        let _one = pool.take();
        assert_eq!(pool.connections.len(), 4);
    }

    #[test]
    fn a_limited_pool_queues_on_its_least_loaded_connection() {
        let mut pool = pool(Some(2));
        let slots: Vec<Slot> = (0..3 * ASSUMED_MAX_STREAMS).map(|_| pool.take()).collect();
        assert_eq!(pool.open_count(), 2);
        let loads: Vec<usize> = pool
            .connections
            .iter()
            .map(|c| c.in_flight.load(Ordering::Relaxed))
            .collect();
        assert_eq!(loads, [150, 150]);
        drop(slots);
    }

    #[tokio::test]
    async fn a_server_allowing_no_stream_gets_no_connection_per_request() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A server whose SETTINGS allow 0 streams (it asks for none).
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let config = tank_h2::Config {
            stream_window: 1 << 16,
            connection_window: 1 << 16,
            max_header_list: 1 << 16,
            max_body: 1 << 20,
            prior_knowledge: true,
        };
        let (conn, driver) = tank_h2::start(client, config);
        tokio::spawn(driver);
        let mut preface = [0u8; 24];
        server.read_exact(&mut preface).await.unwrap();
        // SETTINGS: MAX_CONCURRENT_STREAMS (3) = 0.
        let settings = [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0];
        server.write_all(&settings).await.unwrap();
        for _ in 0..10_000 {
            if conn.max_streams() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(conn.max_streams(), 0);
        let mut pool = pool(None);
        let first = pool.take();
        assert!(first.0.ready.set(Ready { conn }).is_ok());
        let waiting: Vec<Slot> = (0..50).map(|_| pool.take()).collect();
        // All wait on the one connection (1201 if no slot frees in time).
        assert_eq!(pool.open_count(), 1);
        assert!(waiting.iter().all(|slot| Arc::ptr_eq(&slot.0, &first.0)));
    }

    #[test]
    fn a_failed_connection_is_replaced_and_dropped_once_idle() {
        let mut pool = pool(Some(1));
        let first = pool.take();
        first.0.retire();
        let second = pool.take();
        assert!(!Arc::ptr_eq(&first.0, &second.0));
        drop(first);
        let _third = pool.take();
        assert_eq!(pool.connections.len(), 1);
    }

    #[test]
    fn connections_are_spread_over_the_threads() {
        let sources: Arc<[IpAddr]> = Arc::from(Vec::new());
        let cache = || Cache::new("t:1".into(), "http");
        let pools = Pools::new(3, Some(5), &sources, cache);
        let limits: Vec<Option<usize>> = (0..3).map(|p| pools.with(p, |pool| pool.limit)).collect();
        assert_eq!(limits, [Some(2), Some(2), Some(1)]);
        let few = Pools::new(4, Some(2), &sources, cache);
        assert_eq!((few.index_for(2), few.index_for(3)), (0, 1));
        let unlimited = Pools::new(2, None, &sources, cache);
        assert_eq!(unlimited.with(1, |pool| pool.limit), None);
    }
}
