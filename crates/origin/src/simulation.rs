//! The live simulation: the loaded recipes by route, each with the instant it was posted.
//!
//! Requests only read the table (a read lock held for a lookup and one
//! reference-count bump, never across an await); the admin API replaces it.
//! The table is kept most specific route first, newest first among equals,
//! so a lookup is the first match.
//!
//! The table also keeps the body budget: the bodies of all routes together
//! may declare at most so many bytes. It is checked twice when recipes are
//! loaded: as each body is resolved (so an over-budget recipe is refused
//! before it is built, and an `origin` is fetched only up to the room left,
//! counting every recipe of the post), and exactly when the table is
//! replaced, under its lock, so concurrent posts cannot share out the same
//! room.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use serde_json::Value;

use crate::body::{self, Body, Part};
use crate::error::LoadError;
use crate::fetch::Asker;
use crate::recipe::Recipe;
use crate::route::Route;
use crate::stage::Stage;
use crate::units::{human, MAX_SIZE};
use crate::workers::Workers;

/// A recipe ready to serve: its body prepared and its clock started.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub recipe: Recipe,
    pub body: Body,
    pub posted: Instant,
    /// The route's workers, when its recipe sets `workers`.
    pub workers: Option<Workers>,
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

/// The table of loaded recipes, and the budget their bodies share.
#[derive(Debug)]
pub(crate) struct Simulation {
    table: RwLock<Vec<Arc<Loaded>>>,
    budget: usize,
}

impl Simulation {
    /// An empty table whose bodies may declare at most `budget` bytes in all.
    pub fn new(budget: usize) -> Simulation {
        Simulation {
            table: RwLock::default(),
            budget,
        }
    }

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

    /// Prepares each recipe's body (fetching origins on behalf of `asker`),
    /// then adds them all, each replacing the recipe of its route, with their
    /// clocks started at the same instant. If any recipe fails (an origin, the
    /// budget), nothing changes.
    pub async fn load(&self, recipes: Vec<Recipe>, asker: Asker) -> Result<(), LoadError> {
        // Routes this post replaces free their room; every recipe of the post counts.
        let mut total = self
            .snapshot()
            .iter()
            .filter(|l| !recipes.iter().any(|r| r.route == l.recipe.route))
            .fold(0usize, |sum, l| sum.saturating_add(l.body.len()));
        let mut bodies = Vec::with_capacity(recipes.len());
        for recipe in &recipes {
            let room = self.budget.saturating_sub(total).min(MAX_SIZE);
            let parts = body::parts(recipe, room, asker).await?;
            let declared = parts.iter().map(Part::len).fold(0, usize::saturating_add);
            total = total.saturating_add(declared);
            if total > self.budget {
                return Err(self.over_budget(&recipe.route, declared, total));
            }
            bodies.push(body::encode(recipe, &parts)?);
        }
        let posted = Instant::now();
        let loaded = recipes
            .into_iter()
            .zip(bodies)
            .map(|(recipe, body)| Loaded {
                workers: recipe.capacity.map(Workers::new),
                recipe,
                body,
                posted,
            })
            .collect();
        self.add(loaded)
    }

    /// Adds recipes, each replacing the recipe of the same route (in order, so
    /// within one post the last recipe for a route wins), unless their bodies
    /// and those left would exceed the budget.
    fn add(&self, recipes: Vec<Loaded>) -> Result<(), LoadError> {
        let largest = recipes
            .iter()
            .max_by_key(|l| l.body.len())
            .map(|l| (l.recipe.route.clone(), l.body.len()));
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = table.clone();
        for loaded in recipes {
            next.retain(|l| l.recipe.route != loaded.recipe.route);
            let specificity = loaded.recipe.route.specificity();
            let at = next
                .iter()
                .position(|l| l.recipe.route.specificity() <= specificity)
                .unwrap_or(next.len());
            next.insert(at, Arc::new(loaded));
        }
        let total = next
            .iter()
            .map(|l| l.body.len())
            .fold(0, usize::saturating_add);
        if let Some((route, body)) = largest.filter(|_| total > self.budget) {
            return Err(self.over_budget(&route, body, total));
        }
        *table = next;
        Ok(())
    }

    fn over_budget(&self, route: &Route, body: usize, total: usize) -> LoadError {
        LoadError::new(
            route,
            format!(
                "its body of {} would bring the bodies of all routes to {}, over the body \
                 budget of {} (raise it with --body-budget, or body_budget in [origin])",
                human(body),
                human(total),
                human(self.budget)
            ),
        )
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

    fn loaded(json: &str, posted: Instant) -> Loaded {
        Loaded {
            recipe: Recipe::from_json(json).unwrap().remove(0),
            body: Body::plain(&[]),
            posted,
            workers: None,
        }
    }

    fn status(sim: &Simulation, path: &str, now: Instant) -> Option<u16> {
        match sim.lookup(path) {
            Lookup::Found(l) => Some(l.stage_at(now).status.as_u16()),
            _ => None,
        }
    }

    async fn load(sim: &Simulation, json: &str) -> Result<(), String> {
        let recipes = Recipe::from_json(json).unwrap();
        sim.load(recipes, Asker::Operator)
            .await
            .map_err(|e| e.to_string())
    }

    #[test]
    fn stages_switch_by_time_since_posting_and_the_first_covers_the_start() {
        let t0 = Instant::now();
        let l = loaded(
            r#"{"stages": [{"at": "1s", "status": 201}, {"at": "2s", "status": 503}]}"#,
            t0,
        );
        let at = |ms| l.stage_at(t0 + Duration::from_millis(ms)).status.as_u16();
        assert_eq!(
            [at(0), at(999), at(1000), at(1999), at(2000), at(99_000)],
            [201, 201, 201, 201, 503, 503]
        );
    }

    #[test]
    fn the_most_specific_route_wins_and_a_route_is_replaced_in_place() {
        let sim = Simulation::new(0);
        let now = Instant::now();
        assert!(matches!(sim.lookup("/"), Lookup::NoRecipe));
        let add = |json| sim.add(vec![loaded(json, now)]).unwrap();
        add(r#"{"route": "/news*", "stages": [{"status": 201}]}"#);
        assert!(matches!(sim.lookup("/sport"), Lookup::NoRoute));
        add(r#"{"stages": [{"status": 202}]}"#);
        assert_eq!(status(&sim, "/news/1", now), Some(201));
        assert_eq!(status(&sim, "/sport", now), Some(202));
        add(r#"{"route": "/*", "stages": [{"status": 203}]}"#);
        assert_eq!(sim.snapshot().len(), 2);
        assert_eq!(status(&sim, "/sport", now), Some(203));
        sim.restart();
        assert!(matches!(sim.lookup("/"), Lookup::NoRecipe));
    }

    #[tokio::test]
    async fn a_recipe_over_the_body_budget_is_refused_naming_its_route_and_the_sizes() {
        let sim = Simulation::new(1 << 20);
        load(
            &sim,
            r#"{"route": "/a", "random_content": "768kb", "stages": [{}]}"#,
        )
        .await
        .unwrap();
        assert_eq!(
            load(
                &sim,
                r#"{"route": "/b", "random_content": "512kb", "stages": [{}]}"#
            )
            .await,
            Err(
                "recipe for route /b: its body of 512kb would bring the bodies of all routes \
                 to 1280kb, over the body budget of 1mb (raise it with --body-budget, or \
                 body_budget in [origin])"
                    .into()
            )
        );
        assert_eq!(sim.snapshot().len(), 1, "nothing changed");
        // Replacing a route frees its room; placeholders count too.
        load(
            &sim,
            r#"{"route": "/a", "body": "<<512kb>>", "stages": [{}]}"#,
        )
        .await
        .unwrap();
        load(
            &sim,
            r#"{"route": "/b", "random_content": "512kb", "stages": [{}]}"#,
        )
        .await
        .unwrap();
        assert_eq!(sim.snapshot().len(), 2);
    }

    #[tokio::test]
    async fn every_recipe_of_a_post_counts_toward_the_budget() {
        let sim = Simulation::new(1 << 20);
        let error = load(
            &sim,
            r#"[{"route": "/a", "random_content": "1mb", "stages": [{}]},
                {"route": "/b", "body": "x<<1b>>", "stages": [{}]}]"#,
        )
        .await
        .unwrap_err();
        assert!(
            error.starts_with("recipe for route /b: its body of 2b would bring the bodies of all routes to 1048578b"),
            "{error}"
        );
        assert!(sim.snapshot().is_empty());
    }

    #[tokio::test]
    async fn the_final_check_counts_the_table_as_it_will_be() {
        let sim = Simulation::new(100);
        sim.add(vec![loaded(
            r#"{"route": "/a", "stages": [{}]}"#,
            Instant::now(),
        )])
        .unwrap();
        let big = Loaded {
            body: Body::plain(&[Part::Filler(101)]),
            ..loaded(r#"{"route": "/b", "stages": [{}]}"#, Instant::now())
        };
        assert_eq!(
            sim.add(vec![big]).unwrap_err().to_string(),
            "recipe for route /b: its body of 101b would bring the bodies of all routes to \
             101b, over the body budget of 100b (raise it with --body-budget, or body_budget \
             in [origin])"
        );
        assert_eq!(sim.snapshot().len(), 1);
    }
}
