//! The `[origin]` section: tank's origin simulator, started in-process on the
//! run's runtime so that `address = origin` queues have a target.

use tank_config::{OriginConfig, OriginRecipe};

use crate::RunError;

/// Start the simulator that `origin` describes; errors name the recipe.
pub async fn start(origin: &OriginConfig) -> Result<tank_origin::Server, RunError> {
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
    tank_origin::Server::start(origin.listen, recipes)
        .await
        .map_err(|e| RunError::Origin(format!("cannot listen on {}: {e}", origin.listen)))
}
