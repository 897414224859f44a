//! Serving one simulated request: find the route's stage, wait, work, answer or fail.
//!
//! The order is that of a real handler: the latency (time waiting on
//! something), then the CPU work, then the answer. A fault stage waits and
//! works too, so "reset after 2 s" is one stage. The common case (no
//! latency, no CPU, no fault) touches no timer and allocates only the
//! response head: the body is the recipe's shared pieces.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::access::AdminAccess;
use crate::admin;
use crate::cpu::CpuPool;
use crate::fault_io::FaultSlot;
use crate::response_body::OriginBody;
use crate::simulation::{Loaded, Lookup, Simulation};
use crate::stage::{Fault, Stage};
use crate::workers::{Admission, Capacity};

/// What every connection of a server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub simulation: Simulation,
    pub cpu: CpuPool,
    /// Who may use the admin API.
    pub access: AdminAccess,
    /// Whether a posted recipe may fetch its `origin`.
    pub allow_fetch: bool,
}

/// What a request without a recipe gets (with status 406), as OriginSimulator says it.
pub(crate) const NO_RECIPE: &str = "Recipe not set, please POST a recipe to /_admin/add_recipe";

/// The service "error" that makes hyper drop the connection so its fault can play.
#[derive(Debug)]
pub(crate) struct FaultPlayed(Fault);

impl fmt::Display for FaultPlayed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fault stage: {}", self.0)
    }
}

impl std::error::Error for FaultPlayed {}

/// Answers one request: the admin API under `/_admin/`, else the matching recipe's stage.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    slot: Arc<FaultSlot>,
    request: Request<Incoming>,
) -> Result<Response<OriginBody>, FaultPlayed> {
    let path = request.uri().path();
    if path.starts_with(admin::PREFIX) {
        if !shared.access.allows(request.headers()) {
            return Ok(admin::unauthorized());
        }
        return Ok(admin::handle(&shared, request).await);
    }
    let loaded = match shared.simulation.lookup(path) {
        Lookup::Found(loaded) => loaded,
        Lookup::NoRecipe => return Ok(text(StatusCode::NOT_ACCEPTABLE, NO_RECIPE)),
        Lookup::NoRoute => {
            let message = format!(
                "no recipe route matches {path}; add one with POST /_admin/add_recipe \
                 (see GET /_admin/routes)"
            );
            return Ok(text(StatusCode::NOT_FOUND, message));
        }
    };
    drop(request);
    let now = Instant::now();
    let stage = loaded.stage_at(now);
    if let Some(workers) = &loaded.workers {
        let service = stage.latency.sample(&mut rand::rng());
        match workers.admit(now, service) {
            Admission::Until(end) => tokio::time::sleep_until(end.into()).await,
            Admission::Full => return Ok(queue_full(workers.capacity())),
        }
    } else if !stage.latency.is_zero() {
        let wait = stage.latency.sample(&mut rand::rng());
        tokio::time::sleep(wait).await;
    }
    if !stage.cpu.is_zero() {
        shared.cpu.burn(stage.cpu).await;
    }
    match stage.fault {
        None => Ok(respond(
            &loaded,
            stage,
            OriginBody::prepared(loaded.body.clone()),
        )),
        Some(Fault::Trickle { bytes_per_second }) => {
            let body = OriginBody::trickle(loaded.body.clone(), bytes_per_second);
            Ok(respond(&loaded, stage, body))
        }
        Some(Fault::Stall) => std::future::pending().await,
        Some(fault) => {
            slot.set(fault);
            Err(FaultPlayed(fault))
        }
    }
}

/// The stage's status with the recipe's headers and `body` (none for 204 and 304).
fn respond(loaded: &Loaded, stage: &Stage, body: OriginBody) -> Response<OriginBody> {
    let body = match stage.status {
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED => OriginBody::Full(None),
        _ => body,
    };
    let mut response = Response::new(body);
    *response.status_mut() = stage.status;
    let headers = response.headers_mut();
    for (name, value) in &loaded.recipe.headers {
        headers.append(name.clone(), value.clone());
    }
    response
}

/// The 503 of a route whose queue is at its limit.
fn queue_full(capacity: Capacity) -> Response<OriginBody> {
    let message = format!(
        "all {} workers are busy and {} requests wait (queue_limit)",
        capacity.workers,
        capacity.queue_limit.unwrap_or_default()
    );
    text(StatusCode::SERVICE_UNAVAILABLE, message)
}

/// A `text/plain` response.
pub(crate) fn text(status: StatusCode, body: impl Into<String>) -> Response<OriginBody> {
    let mut response = Response::new(OriginBody::text(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
