//! The `[origin]` section: tank's origin simulator, started in-process on the
//! run's runtime so that `address = origin` queues have a target.

use tank_config::{OriginConfig, OriginRecipe};

use crate::RunError;

/// Start the simulator that `origin` describes; errors name the recipe. With it
/// comes the warning to show when its admin API is reachable beyond loopback.
pub async fn start(
    origin: &OriginConfig,
) -> Result<(tank_origin::Server, Option<String>), RunError> {
    let (text, source) = match &origin.recipe {
        OriginRecipe::File(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                RunError::Origin(format!("recipe: cannot read {}: {e}", path.display()))
            })?,
            path.display().to_string(),
        ),
        OriginRecipe::Json(json) => (json.clone(), "recipe_json".to_string()),
    };
    let recipes = tank_origin::Recipe::from_json(&text)
        .map_err(|e| RunError::Origin(format!("{source}: {e}")))?;
    let body_budget = match &origin.body_budget {
        Some(text) => tank_origin::parse_body_budget(text)
            .map_err(|e| RunError::Origin(format!("body_budget: {e}")))?,
        None => tank_origin::DEFAULT_BODY_BUDGET,
    };
    let options = tank_origin::Options {
        allow_fetch: origin.allow_fetch,
        admin_token: tank_origin::AdminToken::from_env().map_err(RunError::Origin)?,
        body_budget,
    };
    let server = tank_origin::Server::start_with(origin.listen, recipes, options)
        .await
        .map_err(|e| {
            RunError::Origin(format!(
                "cannot start the simulator on {}: {e}",
                origin.listen
            ))
        })?;
    let warning = server.exposure_warning();
    Ok((server, warning))
}
