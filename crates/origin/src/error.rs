//! The crate's errors: a recipe that does not parse, one that cannot be
//! loaded (its origin is unreachable, its body over the budget), and a
//! server that cannot start.
//!
//! Each says where (`recipe[1].stages[0].latency`, the origin's URL, the
//! listen address) and what was expected, so the message alone is enough to
//! fix the input.

use std::net::SocketAddr;

use crate::route::Route;

/// A recipe that is not valid JSON or does not describe a simulation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct RecipeError {
    place: String,
    message: String,
}

impl RecipeError {
    pub(crate) fn new(place: impl Into<String>, message: impl Into<String>) -> Self {
        RecipeError {
            place: place.into(),
            message: message.into(),
        }
    }

    /// Where in the recipe: `recipe`, `recipe[1].stages[0].latency`, ...
    pub fn place(&self) -> &str {
        &self.place
    }

    /// What was wrong and what was expected.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A valid recipe that could not be loaded: its `origin` could not be
/// fetched, or its body does not fit in the body budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recipe for route {route}: {message}")]
pub struct LoadError {
    route: String,
    message: String,
}

impl LoadError {
    pub(crate) fn new(route: &Route, message: impl Into<String>) -> Self {
        LoadError {
            route: route.to_string(),
            message: message.into(),
        }
    }

    /// The route of the recipe that could not be loaded.
    pub fn route(&self) -> &str {
        &self.route
    }

    /// What went wrong: `origin URL: ...`, or the sizes that exceed the budget.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A recipe could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The standalone runtime could not be built or Ctrl-C not watched.
    #[error("cannot run the simulator: {0}")]
    Runtime(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_render_place_then_message() {
        let e = RecipeError::new("recipe[1].stages[0].latency", "expected a latency");
        assert_eq!(
            e.to_string(),
            "recipe[1].stages[0].latency: expected a latency"
        );
        let e = LoadError::new(
            &Route::new("/*").unwrap(),
            "origin http://127.0.0.1:1/: cannot connect: Connection refused",
        );
        assert_eq!(
            e.to_string(),
            "recipe for route /*: origin http://127.0.0.1:1/: cannot connect: Connection refused"
        );
    }
}
