//! The admin API under `/_admin/`, as OriginSimulator has it.
//!
//! | route | does |
//! |---|---|
//! | `GET /_admin/status` | `ok!` |
//! | `POST /_admin/add_recipe` | adds recipes (one object or a list), replacing those of the same routes; 201 with the current recipes, 400 with the error (a bad recipe, an origin that cannot be fetched, the body budget exceeded, more than 10,000 routes), 403 for an `origin` without `--allow-fetch`; posts are loaded one at a time |
//! | `GET /_admin/current_recipe` | the recipes as posted (JSON list), or a note that none is set |
//! | `GET /_admin/restart` | removes every recipe |
//! | `GET /_admin/routes` | one route per line |
//! | `GET /_admin/routes_status` | per line: route, current status, latency (and fault, CPU time, workers busy and waiting) |
//!
//! Everything is plain text or JSON so `curl` is the only client needed.
//!
//! When the server requires a token ([`crate::AdminAccess`]), every admin
//! route answers 401 without `Authorization: Bearer TOKEN`. A posted recipe
//! with an `origin` is refused (403) unless the server allows fetching
//! (`--allow-fetch`), and then its fetch says little when it fails
//! ([`crate::fetch`]).

use std::fmt::Write;
use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use crate::fetch::Asker;
use crate::handler::{text, Shared, NO_RECIPE};
use crate::recipe::{Recipe, Source};
use crate::response_body::OriginBody;

/// Paths under this prefix are the admin API's.
pub(crate) const PREFIX: &str = "/_admin/";

/// The largest recipe document accepted (bodies are usually generated, not posted).
const MAX_RECIPE_BYTES: usize = 64 << 20;

/// Answers one admin request.
pub(crate) async fn handle(shared: &Shared, request: Request<Incoming>) -> Response<OriginBody> {
    let name = request
        .uri()
        .path()
        .strip_prefix(PREFIX)
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    let simulation = &shared.simulation;
    match name.as_str() {
        "status" => text(StatusCode::OK, "ok!"),
        "add_recipe" if request.method() == Method::POST => add_recipe(shared, request).await,
        "add_recipe" => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST a recipe (JSON: one object or a list) to /_admin/add_recipe",
        ),
        "current_recipe" => {
            let recipes = simulation.recipes_json();
            match recipes.as_array() {
                Some(list) if !list.is_empty() => json(StatusCode::OK, &recipes),
                _ => json(StatusCode::OK, &Value::String(NO_RECIPE.into())),
            }
        }
        "restart" => {
            simulation.restart();
            text(StatusCode::OK, "ok!")
        }
        "routes" => {
            let routes: Vec<String> = simulation
                .snapshot()
                .iter()
                .map(|l| l.recipe.route.to_string())
                .collect();
            text(StatusCode::OK, routes.join("\n"))
        }
        "routes_status" => text(StatusCode::OK, routes_status(shared)),
        _ => text(
            StatusCode::NOT_FOUND,
            "admin routes: /_admin/status, /_admin/add_recipe (POST), /_admin/current_recipe, \
             /_admin/restart, /_admin/routes, /_admin/routes_status",
        ),
    }
}

async fn add_recipe(shared: &Shared, request: Request<Incoming>) -> Response<OriginBody> {
    let body = match Limited::new(request.into_body(), MAX_RECIPE_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("reading the recipe: {e}")),
    };
    let Ok(document) = std::str::from_utf8(&body) else {
        return text(StatusCode::BAD_REQUEST, "recipe: not UTF-8 text");
    };
    let recipes = match Recipe::from_json(document) {
        Ok(recipes) => recipes,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    if !shared.allow_fetch {
        if let Some(recipe) = recipes
            .iter()
            .find(|r| matches!(r.source, Source::Origin(_)))
        {
            let message = format!(
                "recipe for route {}: this simulator does not fetch an `origin` for a posted \
                 recipe; start it with --allow-fetch (or allow_fetch = 1 in [origin]) to let it, \
                 or give the recipe at start (--recipe)",
                recipe.route
            );
            return text(StatusCode::FORBIDDEN, message);
        }
    }
    match shared.simulation.load(recipes, Asker::Admin).await {
        Ok(()) => json(StatusCode::CREATED, &shared.simulation.recipes_json()),
        Err(e) => text(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// The answer to an admin request without the right token.
pub(crate) fn unauthorized() -> Response<OriginBody> {
    let mut response = text(
        StatusCode::UNAUTHORIZED,
        "the admin API needs `Authorization: Bearer TOKEN`: the token given with \
         --admin-token or TANK_ORIGIN_TOKEN, or the one printed at start",
    );
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"tank origin admin\""),
    );
    response
}

/// One line per route: `route status latency`, then ` fault`, ` cpu=TIME` and
/// ` workers=BUSY/N waiting=W[/LIMIT]` when set.
fn routes_status(shared: &Shared) -> String {
    let now = Instant::now();
    let mut out = String::new();
    for loaded in shared.simulation.snapshot() {
        let stage = loaded.stage_at(now);
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = write!(
            out,
            "{} {} {}",
            loaded.recipe.route,
            stage.status.as_u16(),
            stage.latency
        );
        if let Some(fault) = stage.fault {
            let _ = write!(out, " {fault}");
        }
        if !stage.cpu.is_zero() {
            let _ = write!(out, " cpu={:?}", stage.cpu);
        }
        if let Some(workers) = &loaded.workers {
            let (busy, waiting) = workers.load(now);
            let capacity = workers.capacity();
            let _ = write!(
                out,
                " workers={busy}/{} waiting={waiting}",
                capacity.workers
            );
            if let Some(limit) = capacity.queue_limit {
                let _ = write!(out, "/{limit}");
            }
        }
    }
    out
}

fn json(status: StatusCode, value: &Value) -> Response<OriginBody> {
    let mut response = Response::new(OriginBody::text(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
