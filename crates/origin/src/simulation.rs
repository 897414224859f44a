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
//!
//! Loads are taken one at a time: an `origin` is fetched up to the room left
//! when its load's turn comes, so concurrent posts never download more than
//! the budget between them (four posts of a 250 MB page each once held a
//! gigabyte and a half, to refuse three). A load costs time linear in the
//! routes it adds and the table's, and the table holds at most
//! [`MAX_ROUTES`] routes (a request's lookup walks it).

use std::collections::HashSet;
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

/// The most routes the table holds.
pub const MAX_ROUTES: usize = 10_000;

/// The table of loaded recipes, and the budget their bodies share.
#[derive(Debug)]
pub(crate) struct Simulation {
    table: RwLock<Vec<Arc<Loaded>>>,
    budget: usize,
    /// Held for the whole of a load (see the module docs).
    loading: tokio::sync::Mutex<()>,
}

impl Simulation {
    /// An empty table whose bodies may declare at most `budget` bytes in all.
    pub fn new(budget: usize) -> Simulation {
        Simulation {
            table: RwLock::default(),
            budget,
            loading: tokio::sync::Mutex::new(()),
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
        let _turn = self.loading.lock().await;
        // Routes this post replaces free their room; every recipe of the post counts.
        let posted: HashSet<&Route> = recipes.iter().map(|r| &r.route).collect();
        let kept: Vec<Arc<Loaded>> = self
            .snapshot()
            .into_iter()
            .filter(|l| !posted.contains(&l.recipe.route))
            .collect();
        if let Some(first) = recipes
            .first()
            .filter(|_| kept.len() + posted.len() > MAX_ROUTES)
        {
            return Err(LoadError::new(
                &first.route,
                format!(
                    "this post of {} routes would make the simulator's {}, over the {MAX_ROUTES} \
                     it holds (each request's lookup walks them): post fewer, or restart first",
                    posted.len(),
                    kept.len() + posted.len()
                ),
            ));
        }
        let mut total = kept
            .iter()
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
    /// and those left would exceed the budget. The table stays most specific
    /// first and, among equals, newest first (a post's later recipes newer):
    /// the post's recipes, newest first, go before the routes kept, and a
    /// stable sort by specificity does the rest, in O(n log n).
    fn add(&self, recipes: Vec<Loaded>) -> Result<(), LoadError> {
        let largest = recipes
            .iter()
            .max_by_key(|l| l.body.len())
            .map(|l| (l.recipe.route.clone(), l.body.len()));
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        let mut seen: HashSet<Route> = HashSet::with_capacity(recipes.len());
        let mut next: Vec<Arc<Loaded>> = Vec::with_capacity(table.len() + recipes.len());
        for loaded in recipes.into_iter().rev() {
            if seen.insert(loaded.recipe.route.clone()) {
                next.push(Arc::new(loaded));
            }
        }
        next.extend(
            table
                .iter()
                .filter(|l| !seen.contains(&l.recipe.route))
                .cloned(),
        );
        next.sort_by_key(|l| std::cmp::Reverse(l.recipe.route.specificity()));
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

    /// The table's order as routes were added one at a time before: each
    /// replaces its route's, then goes before the first route as specific or less.
    fn one_at_a_time(table: &mut Vec<(String, u64)>, post: &[(String, u64)]) {
        for (pattern, id) in post {
            table.retain(|(p, _)| p != pattern);
            let specificity = Route::new(pattern).unwrap().specificity();
            let at = table
                .iter()
                .position(|(p, _)| Route::new(p).unwrap().specificity() <= specificity)
                .unwrap_or(table.len());
            table.insert(at, (pattern.clone(), *id));
        }
    }

    proptest::proptest! {
        #[test]
        fn a_post_orders_the_table_as_adding_its_recipes_one_at_a_time_did(
            posts in proptest::collection::vec(
                proptest::collection::vec("/[ab]{0,2}\\*?", 1..6),
                1..6,
            ),
        ) {
            let sim = Simulation::new(0);
            let now = Instant::now();
            let mut model = Vec::new();
            let mut id = 0u64;
            for post in posts {
                let post: Vec<(String, u64)> = post
                    .into_iter()
                    .map(|p| {
                        id += 1;
                        (p, id)
                    })
                    .collect();
                one_at_a_time(&mut model, &post);
                let loaded = post
                    .iter()
                    .map(|(p, id)| {
                        let json = format!(r#"{{"route": "{p}", "stages": [{{"status": {}}}]}}"#, 200 + id % 300);
                        loaded(&json, now)
                    })
                    .collect();
                sim.add(loaded).unwrap();
                let table: Vec<(String, u16)> = sim
                    .snapshot()
                    .iter()
                    .map(|l| (l.recipe.route.to_string(), l.stage_at(now).status.as_u16()))
                    .collect();
                let want: Vec<(String, u16)> = model
                    .iter()
                    .map(|(p, id)| (p.clone(), (200 + id % 300) as u16))
                    .collect();
                proptest::prop_assert_eq!(table, want);
            }
        }
    }

    #[tokio::test]
    async fn a_post_past_the_route_limit_is_refused_and_changes_nothing() {
        let sim = Simulation::new(1 << 20);
        let list = |from: usize, n: usize| {
            let items: Vec<String> = (from..from + n)
                .map(|i| format!(r#"{{"route": "/r{i}", "stages": [{{}}]}}"#))
                .collect();
            format!("[{}]", items.join(","))
        };
        load(&sim, &list(0, MAX_ROUTES - 1)).await.unwrap();
        // Replacing routes does not add to the count.
        load(&sim, &list(0, 2)).await.unwrap();
        let error = load(&sim, &list(MAX_ROUTES, 2)).await.unwrap_err();
        assert_eq!(
            error,
            "recipe for route /r10000: this post of 2 routes would make the simulator's 10001, \
             over the 10000 it holds (each request's lookup walks them): post fewer, or restart first"
        );
        assert_eq!(sim.snapshot().len(), MAX_ROUTES - 1);
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
