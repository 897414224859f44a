//! `tank origin`: run the origin simulator on its own until Ctrl-C.
//!
//! It prints the address it listens on as the first line of stdout (the real
//! port when `--listen` asks for port 0), so scripts and tests can read it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use tank_origin::Recipe;

/// Arguments of `tank origin`.
#[derive(Debug, clap::Args)]
pub struct OriginArgs {
    /// Address to listen on (port 0 picks a free port). Loopback unless you say otherwise.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A recipe (JSON: one object or a list) to serve from the start; without
    /// one, requests get 406 until a recipe is POSTed to /_admin/add_recipe.
    #[arg(long, value_name = "FILE")]
    recipe: Option<PathBuf>,
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
    let described: Vec<String> = recipes.iter().map(|r| r.route().to_string()).collect();
    tank_origin::run_until_interrupted(args.listen, recipes, |addr| {
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
    })?;
    Ok(())
}
