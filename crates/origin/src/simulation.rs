//! The live simulation: the loaded recipes by route, each with the instant it was posted.
//!
//! Requests only read the table (a read lock held for a lookup and one
//! reference-count bump, never across an await); the admin API replaces it.
//! The table is kept most specific route first, newest first among equals,
//! so a lookup is the first match.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;

use crate::body;
use crate::error::LoadError;
use crate::recipe::Recipe;
use crate::stage::Stage;

/// A recipe ready to serve: its body prepared and its clock started.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub recipe: Recipe,
    pub body: Bytes,
    pub posted: Instant,
}

/// Prepares each recipe's body (fetching origins), then starts all their
/// clocks at the same instant: stages count from when the recipes go live.
pub(crate) async fn load_all(recipes: Vec<Recipe>) -> Result<Vec<Loaded>, LoadError> {
    let mut bodies = Vec::with_capacity(recipes.len());
    for recipe in &recipes {
        bodies.push(body::load(recipe).await?);
    }
    let posted = Instant::now();
    Ok(recipes
        .into_iter()
        .zip(bodies)
        .map(|(recipe, body)| Loaded {
            recipe,
            body,
            posted,
        })
        .collect())
}

impl Loaded {
    /// The stage in force at `now`: the last one whose `at` has passed, or the
    /// first one before that.
    pub fn stage_at(&self, now: Instant) -> &Stage {
        let stages = &self.recipe.stages;
        let elapsed = now.saturating_duration_since(self.posted);
        let index = stages
            .partition_point(|s| s.at <= elapsed)
            .saturating_sub(1);
        // Parsing guarantees at least one stage.
        &stages[index]
    }
}

/// What a request path finds.
pub(crate) enum Lookup {
    /// No recipe has been posted.
    NoRecipe,
    /// Recipes exist but none of their routes matches.
    NoRoute,
    /// The recipe that answers.
    Found(Arc<Loaded>),
}

/// The table of loaded recipes.
#[derive(Debug, Default)]
pub(crate) struct Simulation {
    table: RwLock<Vec<Arc<Loaded>>>,
}

impl Simulation {
    /// The recipe answering `path`.
    pub fn lookup(&self, path: &str) -> Lookup {
        let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
        if table.is_empty() {
            return Lookup::NoRecipe;
        }
        match table.iter().find(|l| l.recipe.route.matches(path)) {
            Some(loaded) => Lookup::Found(Arc::clone(loaded)),
            None => Lookup::NoRoute,
        }
    }

    /// Adds recipes, each replacing the recipe of the same route (in order, so
    /// within one post the last recipe for a route wins).
    pub fn add(&self, recipes: Vec<Loaded>) {
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        for loaded in recipes {
            table.retain(|l| l.recipe.route != loaded.recipe.route);
            let specificity = loaded.recipe.route.specificity();
            let at = table
                .iter()
                .position(|l| l.recipe.route.specificity() <= specificity)
                .unwrap_or(table.len());
            table.insert(at, Arc::new(loaded));
        }
    }

    /// Removes every recipe.
    pub fn restart(&self) {
        self.table
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The table as it is now, most specific route first.
    pub fn snapshot(&self) -> Vec<Arc<Loaded>> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The recipes as posted, most specific route first.
    pub fn recipes_json(&self) -> Value {
        Value::Array(
            self.snapshot()
                .iter()
                .map(|l| l.recipe.json.clone())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn loaded(json: &str, posted: Instant) -> Loaded {
        let recipes = Recipe::from_json(json).unwrap();
        let mut loaded = load_all(recipes).await.unwrap().remove(0);
        loaded.posted = posted;
        loaded
    }

    fn status(sim: &Simulation, path: &str, now: Instant) -> Option<u16> {
        match sim.lookup(path) {
            Lookup::Found(l) => Some(l.stage_at(now).status.as_u16()),
            _ => None,
        }
    }

    #[tokio::test]
    async fn stages_switch_by_time_since_posting_and_the_first_covers_the_start() {
        let t0 = Instant::now();
        let l = loaded(
            r#"{"stages": [{"at": "1s", "status": 201}, {"at": "2s", "status": 503}]}"#,
            t0,
        )
        .await;
        let at = |ms| l.stage_at(t0 + Duration::from_millis(ms)).status.as_u16();
        assert_eq!(
            [at(0), at(999), at(1000), at(1999), at(2000), at(99_000)],
            [201, 201, 201, 201, 503, 503]
        );
    }

    #[tokio::test]
    async fn the_most_specific_route_wins_and_a_route_is_replaced_in_place() {
        let sim = Simulation::default();
        let now = Instant::now();
        assert!(matches!(sim.lookup("/"), Lookup::NoRecipe));
        sim.add(vec![
            loaded(r#"{"route": "/news*", "stages": [{"status": 201}]}"#, now).await,
        ]);
        assert!(matches!(sim.lookup("/sport"), Lookup::NoRoute));
        sim.add(vec![loaded(r#"{"stages": [{"status": 202}]}"#, now).await]);
        assert_eq!(status(&sim, "/news/1", now), Some(201));
        assert_eq!(status(&sim, "/sport", now), Some(202));
        sim.add(vec![
            loaded(r#"{"route": "/*", "stages": [{"status": 203}]}"#, now).await,
        ]);
        assert_eq!(sim.snapshot().len(), 2);
        assert_eq!(status(&sim, "/sport", now), Some(203));
        sim.restart();
        assert!(matches!(sim.lookup("/"), Lookup::NoRecipe));
    }
}
