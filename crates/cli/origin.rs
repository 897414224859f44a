//! `tank origin`: run the origin simulator on its own until Ctrl-C.
//!
//! It prints the address it listens on as the first line of stdout (the real
//! port when `--listen` asks for port 0), so scripts and tests can read it.
//! Listening beyond loopback, it warns on stderr, with the admin token when
//! it had to generate one.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use tank_origin::{AdminToken, Options, Recipe, DEFAULT_BODY_BUDGET};

/// Arguments of `tank origin`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The admin API (/_admin/) is open on loopback. Beyond loopback (--listen 0.0.0.0:8080) it \
needs `Authorization: Bearer TOKEN`: the token from --admin-token or TANK_ORIGIN_TOKEN, or \
else one generated at start and printed once to stderr. No fetch ever connects to a \
link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254, \
100.100.100.200, ...), whatever the host name resolves to.")]
pub struct OriginArgs {
    /// Address to listen on (port 0 picks a free port). Loopback unless you say
    /// otherwise; beyond loopback tank warns and the admin API needs a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A recipe (JSON: one object or a list) to serve from the start; without
    /// one, requests get 406 until a recipe is POSTed to /_admin/add_recipe.
    /// Its `origin`, if any, is fetched whatever --allow-fetch says.
    #[arg(long, value_name = "FILE")]
    recipe: Option<PathBuf>,
    /// Let recipes POSTed to /_admin/add_recipe fetch their `origin` URL.
    /// Without it such a recipe is refused with 403. A failed fetch for a
    /// posted recipe says only that there was no HTTP response, after 5 s,
    /// so the admin API cannot be used to scan ports.
    #[arg(long)]
    allow_fetch: bool,
    /// Require `Authorization: Bearer TOKEN` on every /_admin/ request, even
    /// on loopback. Prefer the TANK_ORIGIN_TOKEN environment variable, which
    /// other users cannot see in `ps`. Beyond loopback a token is always
    /// required: without one, a random one is generated and printed once.
    #[arg(long, value_name = "TOKEN")]
    admin_token: Option<AdminToken>,
    /// The most bytes the bodies of all routes together may declare (b, kb,
    /// mb, gb; 1kb = 1024 bytes) [default: 256mb]. A recipe that would go
    /// over is refused, naming its route and the sizes. Generated bodies cost
    /// no memory however large; fetched pages do.
    #[arg(long, value_name = "SIZE", value_parser = tank_origin::parse_body_budget)]
    body_budget: Option<usize>,
}

/// Run `tank origin`.
pub fn run(args: &OriginArgs) -> Result<()> {
    let recipes = match &args.recipe {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the recipe {}", path.display()))?;
            Recipe::from_json(&text).with_context(|| path.display().to_string())?
        }
        None => Vec::new(),
    };
    let admin_token = match &args.admin_token {
        Some(token) => Some(token.clone()),
        None => AdminToken::from_env(tank_origin::TOKEN_ENV).map_err(|e| anyhow!(e))?,
    };
    let options = Options {
        allow_fetch: args.allow_fetch,
        admin_token,
        body_budget: args.body_budget.unwrap_or(DEFAULT_BODY_BUDGET),
    };
    let described: Vec<String> = recipes.iter().map(|r| r.route().to_string()).collect();
    tank_origin::run_until_interrupted(args.listen, recipes, options, |server| {
        let addr = server.local_addr();
        let routes = if described.is_empty() {
            format!("no recipe yet: POST one to http://{addr}/_admin/add_recipe")
        } else {
            format!("routes: {}", described.join(" "))
        };
        // Whoever started us may stop reading after the address: that is not an error.
        let _ = writeln!(
            std::io::stdout().lock(),
            "tank origin: listening on http://{addr}\n\
             admin: http://{addr}/_admin/status (add_recipe, current_recipe, restart, routes, routes_status)\n\
             {routes}\n\
             Ctrl-C stops"
        );
        let mut stderr = std::io::stderr().lock();
        for line in server.exposure_warning().iter().flat_map(|w| w.lines()) {
            let _ = writeln!(stderr, "tank origin: {line}");
        }
    })?;
    Ok(())
}
