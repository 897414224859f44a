//! tank-origin: the origin simulator, a target whose behaviour a load test controls.
//!
//! A load test needs a target that is slow for ten seconds, then answers 503,
//! then recovers; that returns 428 kB bodies; whose latency has a lognormal
//! tail. This crate is that target, in the manner of the BBC's
//! OriginSimulator (whose recipes it reads unchanged), built on hyper so it is
//! fast enough to be measured against rather than measured. `tank origin` runs
//! it on its own, `[origin]` in a tank config starts it beside the engine, and
//! tank's own tests use it as a deterministic target.
//!
//! # Recipes
//! JSON, one object or a list ([`Recipe::from_json`]):
//!
//! ```json
//! { "route": "/news*",
//!   "random_content": "428kb",
//!   "headers": { "content-encoding": "gzip" },
//!   "stages": [ { "at": 0,     "status": 200, "latency": "100ms" },
//!               { "at": "10s", "status": 503, "latency": 0 },
//!               { "at": "20s", "status": 200, "latency": "99%: lognormal(-1.63,0.7); 1%: lognormal(1,0.25)" },
//!               { "at": "30s", "fault": "reset" } ] }
//! ```
//!
//! - `route`: a path pattern with `*` wildcards (default `/*`); the most
//!   specific matching route answers.
//! - body source, at most one: `random_content` (a size: `b`, `kb` = 1024
//!   bytes, `mb`; at most 256mb), `body` (text whose `<<256kb>>` placeholders
//!   become random text), `origin` (an `http://` URL fetched once when the
//!   recipe is loaded; loading fails with a clear error if it is
//!   unreachable). None: empty body. Random text is cut from one shared
//!   buffer as it is sent, so a large body costs no memory; the bodies of
//!   all routes together may declare at most the body budget
//!   ([`Options::body_budget`], 256mb unless set).
//! - `headers`: sent with every response; `content-encoding: gzip` also
//!   compresses the body (once, at load).
//! - `workers` (optional): at most this many requests in service at once;
//!   the others wait in a FIFO queue, and the wait counts in their latency.
//!   A worker serves a request for the stage's latency, so the route's
//!   capacity is `workers` ÷ the mean latency. `queue_limit`: at most this
//!   many waiting; past it a request gets 503 at once (0: no queue).
//! - `stages`: from `at` (milliseconds or `"4s"`, counted from when the recipe
//!   was loaded) on, answer with `status` (default 200) after `latency`
//!   (default 0): fixed (`"100ms"`, `0`), a uniform range (`"1000ms..1500ms"`),
//!   `lognormal(mu,sigma)` (of ln seconds), `exponential(mean)`,
//!   `normal(mean,sd)`, or a weighted mixture. `cpu` (`"2ms"`) is busy work per
//!   request. `fault` replaces the answer: `reset` (RST), `close` (FIN, no
//!   bytes), `malformed` (a line that is not HTTP), `trickle(1kb/s)` (the body
//!   at that rate), `stall` (never answer). Before the first stage's `at`, the
//!   first stage applies.
//!
//! # Admin API
//! `GET /_admin/status`, `POST /_admin/add_recipe`, `GET /_admin/current_recipe`,
//! `GET /_admin/restart`, `GET /_admin/routes`, `GET /_admin/routes_status`
//! (see the `admin` module). Without a recipe every other request gets 406 and
//! a message naming `/_admin/add_recipe`.
//!
//! # Exposure
//! The admin API changes what the simulator serves, so [`Options`] guard it:
//! listening beyond loopback, it needs `Authorization: Bearer TOKEN` (a
//! token given, or one generated and shown by [`Server::exposure_warning`]);
//! a posted recipe may fetch an `origin` only with
//! [`Options::allow_fetch`]; and no fetch ever connects to a link-local or
//! cloud metadata address, checked on the addresses the host resolves to.
//! A failed fetch for a posted recipe answers the same, after the same time,
//! whether the port was closed, filtered or open, so the API is no port
//! scanner.
//!
//! # Embedding
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let recipes = tank_origin::Recipe::from_json(r#"{"stages": [{"at": 0, "status": 200}]}"#)?;
//! let server = tank_origin::Server::start("127.0.0.1:0".parse()?, recipes).await?;
//! let target = server.local_addr(); // shoot at this
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//! [`Server::start`] runs on the caller's tokio runtime (any flavour; a
//! multi-thread runtime spreads connections over its workers).
//! [`run_until_interrupted`] is the standalone process: its own runtime, one
//! worker per core, until Ctrl-C.

#![warn(missing_docs)]

mod access;
mod admin;
mod blocked;
mod body;
mod cpu;
mod error;
mod fault_io;
mod fetch;
mod filler;
mod gzip;
mod handler;
mod latency;
mod options;
mod recipe;
mod response_body;
mod route;
mod server;
mod simulation;
mod stage;
mod standalone;
mod units;
mod workers;

pub use access::{AdminAccess, AdminToken, TOKEN_ENV};
pub use error::{LoadError, RecipeError, StartError};
pub use latency::Latency;
pub use options::{parse_body_budget, Options, DEFAULT_BODY_BUDGET};
pub use recipe::{Recipe, Source};
pub use route::Route;
pub use server::{Server, GRACE};
pub use stage::{Fault, Stage};
pub use standalone::run_until_interrupted;
pub use workers::Capacity;
