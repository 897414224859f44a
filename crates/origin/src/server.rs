//! The server: a listener, one task per connection, hyper's HTTP/1.1 with keep-alive.
//!
//! It runs on the caller's tokio runtime, so `tank` can start it beside the
//! engine and tests can start one per test. The listener is bound with a
//! deep backlog (thousands of connections arrive at once in a load test), and
//! accept errors such as running out of file descriptors back off briefly
//! instead of ending the server.
//!
//! Shutdown is graceful but bounded: stop accepting, let each connection
//! finish its request in flight for up to [`GRACE`], then close. A stalled
//! request (a `stall` stage) is cut at the end of the grace period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::access::{exposure_warning, AdminAccess};
use crate::cpu::CpuPool;
use crate::error::{LoadError, StartError};
use crate::fault_io::{FaultIo, FaultSlot};
use crate::fetch::Asker;
use crate::handler::{self, Shared};
use crate::options::Options;
use crate::recipe::Recipe;
use crate::simulation::Simulation;

/// How long a shutdown lets requests in flight finish.
pub const GRACE: Duration = Duration::from_secs(1);

/// Pending connections the kernel may queue (capped by `net.core.somaxconn`).
const BACKLOG: i32 = 16_384;

/// A running simulator. Dropping it stops it without waiting; [`Server::shutdown`] waits.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    /// Closed (every sender dropped) once the accept loop and every connection have ended.
    done: mpsc::Receiver<()>,
}

impl Server {
    /// [`Server::start_with`] the default [`Options`]: no fetching for posted
    /// recipes, the admin API open on loopback (a generated token beyond), the
    /// default body budget.
    pub async fn start(listen: SocketAddr, recipes: Vec<Recipe>) -> Result<Server, StartError> {
        Server::start_with(listen, recipes, Options::default()).await
    }

    /// Loads `recipes` (fetching any `origin`), binds `listen` (port 0 picks a free
    /// port) and starts serving on the current tokio runtime.
    ///
    /// The recipes' stages count from the moment they are loaded. With no
    /// recipes every request gets 406 until one is posted to `/_admin/add_recipe`.
    /// Listening beyond loopback without `options.admin_token`, the admin API
    /// takes a generated token: show the user [`Server::exposure_warning`].
    pub async fn start_with(
        listen: SocketAddr,
        recipes: Vec<Recipe>,
        options: Options,
    ) -> Result<Server, StartError> {
        let listener = bind(listen).map_err(|source| StartError::Bind {
            addr: listen,
            source,
        })?;
        let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: listen,
            source,
        })?;
        let shared = Arc::new(Shared {
            simulation: Simulation::new(options.body_budget),
            cpu: CpuPool::new(),
            access: AdminAccess::decide(listen.ip(), options.admin_token),
            allow_fetch: options.allow_fetch,
        });
        shared.simulation.load(recipes, Asker::Operator).await?;
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = mpsc::channel(1);
        tokio::spawn(accept_loop(listener, Arc::clone(&shared), stop_rx, done_tx));
        Ok(Server {
            local_addr,
            shared,
            stop,
            done,
        })
    }

    /// The address the server listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Who may use the admin API: open, or the token it requires.
    pub fn admin_access(&self) -> &AdminAccess {
        &self.shared.access
    }

    /// What the user must be told when the server listens beyond loopback
    /// (print it to stderr): that anyone who can reach the address can use
    /// it, and the admin token, once, if it was generated. `None` on loopback.
    pub fn exposure_warning(&self) -> Option<String> {
        exposure_warning(self.local_addr, &self.shared.access)
    }

    /// Adds recipes as `POST /_admin/add_recipe` does: each replaces the recipe
    /// of its route, and its stages count from now. Being the caller's own, an
    /// `origin` is fetched whatever [`Options::allow_fetch`] says.
    pub async fn add_recipes(&self, recipes: Vec<Recipe>) -> Result<(), LoadError> {
        self.shared.simulation.load(recipes, Asker::Operator).await
    }

    /// Stops accepting, lets requests in flight finish (up to [`GRACE`]), and
    /// returns once every connection is closed.
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        while self.done.recv().await.is_some() {}
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    done: mpsc::Sender<()>,
) {
    let for_connections = stop.clone();
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let stop = for_connections.clone();
                    tokio::spawn(connection(stream, Arc::clone(&shared), stop, done.clone()));
                }
                // Out of descriptors or a connection aborted before accept: wait, go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
        }
    }
}

/// Resolves once the server is told to stop (or its handle is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

async fn connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    _done: mpsc::Sender<()>,
) {
    let _ = stream.set_nodelay(true);
    let slot = Arc::new(FaultSlot::default());
    let io = TokioIo::new(FaultIo::new(stream, Arc::clone(&slot)));
    let service =
        service_fn(move |request| handler::serve(Arc::clone(&shared), Arc::clone(&slot), request));
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(connection);
    let finished = tokio::select! {
        _ = connection.as_mut() => true,
        () = stopped(&mut stop) => false,
    };
    if !finished {
        connection.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(GRACE, connection).await;
    }
}
