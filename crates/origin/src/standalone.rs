//! Running the simulator as its own process (`tank origin`): a runtime sized to
//! the machine, serving until Ctrl-C.
//!
//! This lives in the library so the command line stays thin wiring and the
//! runtime is sized in one place: one worker per core, as a dedicated server
//! should have.

use std::net::SocketAddr;

use crate::error::StartError;
use crate::options::Options;
use crate::recipe::Recipe;
use crate::server::Server;

/// Starts a [`Server`] with `options` on a new multi-thread runtime (one
/// worker per core), calls `on_ready` with it (to print its address, and
/// [`Server::exposure_warning`]), and serves until Ctrl-C (SIGINT), then
/// shuts down gracefully.
pub fn run_until_interrupted(
    listen: SocketAddr,
    recipes: Vec<Recipe>,
    options: Options,
    on_ready: impl FnOnce(&Server),
) -> Result<(), StartError> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    runtime.block_on(async {
        let server = Server::start_with(listen, recipes, options).await?;
        on_ready(&server);
        let interrupted = tokio::signal::ctrl_c().await;
        server.shutdown().await;
        interrupted.map_err(StartError::Runtime)
    })
}
