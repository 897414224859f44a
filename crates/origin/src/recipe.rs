//! Recipes: the JSON a user posts to describe how a route behaves over time.
//!
//! The format is OriginSimulator's, so its recipes work unchanged:
//!
//! ```json
//! { "route": "/news*",
//!   "random_content": "428kb",
//!   "headers": { "content-type": "text/html", "content-encoding": "gzip" },
//!   "stages": [ { "at": 0, "status": 200, "latency": "100ms" },
//!               { "at": "10s", "status": 503, "latency": 0 },
//!               { "at": "20s", "status": 200, "latency": "1000ms..1500ms" } ] }
//! ```
//!
//! A document is one such object or a list of them. Parsing checks
//! everything that can be checked without the network and keeps the object as
//! posted (for `/_admin/current_recipe`); fetching an `origin` happens when
//! the recipe is loaded into a server ([`crate::body`]).

use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};
use tank_http1::Url;

use crate::error::RecipeError;
use crate::route::Route;
use crate::simulation::MAX_ROUTES;
use crate::stage::Stage;
use crate::units;
use crate::workers::{Capacity, MAX_WORKERS};

/// Where a recipe's response body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// No source given: an empty body.
    Empty,
    /// `random_content`: this many bytes of random text, cut from a shared buffer as it is sent.
    RandomContent(usize),
    /// `body`: this text, each `<<256kb>>` placeholder replaced by that much random text.
    Body(String),
    /// `origin`: an `http://` URL fetched once when the recipe is loaded.
    Origin(String),
}

/// One validated recipe: a route, a body source, headers and stages.
#[derive(Debug, Clone)]
pub struct Recipe {
    pub(crate) route: Route,
    pub(crate) source: Source,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) stages: Vec<Stage>,
    pub(crate) capacity: Option<Capacity>,
    pub(crate) json: Value,
}

const KEYS: &[&str] = &[
    "body",
    "headers",
    "origin",
    "queue_limit",
    "random_content",
    "route",
    "stages",
    "workers",
];

/// How many items a JSON list has (1 for anything else), read without
/// building them.
struct Items(usize);

impl<'de> serde::Deserialize<'de> for Items {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Counter;
        impl<'de> serde::de::Visitor<'de> for Counter {
            type Value = Items;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a recipe document")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Items, A::Error> {
                let mut n = 0;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Items(n))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Items, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Items(1))
            }
        }
        deserializer.deserialize_any(Counter)
    }
}

impl Recipe {
    /// Parses a recipe document: one recipe object, or a list of them.
    ///
    /// Errors name the place (`recipe[1].stages[0].latency`) and what was
    /// expected. An `origin` URL is checked for form (`http://` only) but not
    /// fetched: that happens when a server loads the recipe.
    pub fn from_json(text: &str) -> Result<Vec<Recipe>, RecipeError> {
        // Counted before anything is built: a list of 80,000 recipes is
        // refused in a pass over its text, not after a gigabyte of JSON values.
        if let Ok(Items(n)) = serde_json::from_str::<Items>(text) {
            if n > MAX_ROUTES {
                return Err(RecipeError::new(
                    "recipe",
                    format!("a list of {n} recipes: a simulator holds at most {MAX_ROUTES} routes"),
                ));
            }
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            RecipeError::new(
                "recipe",
                format!(
                    "invalid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        match value {
            Value::Array(items) if items.is_empty() => Err(RecipeError::new(
                "recipe",
                "an empty list: expected at least one recipe object",
            )),
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| Recipe::from_value(item, &format!("recipe[{i}]")))
                .collect(),
            object @ Value::Object(_) => Ok(vec![Recipe::from_value(object, "recipe")?]),
            other => Err(RecipeError::new(
                "recipe",
                format!("expected a recipe object or a list of them, found {other}"),
            )),
        }
    }

    fn from_value(json: Value, place: &str) -> Result<Recipe, RecipeError> {
        let Value::Object(object) = &json else {
            return Err(RecipeError::new(
                place,
                format!("expected a recipe object, found {json}"),
            ));
        };
        let at = |key: &str| format!("{place}.{key}");
        for key in object.keys() {
            if !KEYS.contains(&key.as_str()) {
                let message = format!("unknown key (expected one of: {})", KEYS.join(", "));
                return Err(RecipeError::new(at(key), message));
            }
        }
        let string = |key: &str| -> Result<Option<String>, RecipeError> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(RecipeError::new(
                    at(key),
                    format!("expected a string, found {other}"),
                )),
            }
        };
        let route = match string("route")? {
            Some(pattern) => Route::new(&pattern).map_err(|m| RecipeError::new(at("route"), m))?,
            None => Route::new(Route::DEFAULT).map_err(|m| RecipeError::new(at("route"), m))?,
        };
        let source = source(
            string("origin")?,
            string("random_content")?,
            string("body")?,
            place,
        )?;
        let headers = headers(object.get("headers"), &at("headers"))?;
        let stages = stages(object.get("stages"), &at("stages"))?;
        let capacity = capacity(object.get("workers"), object.get("queue_limit"), place)?;
        Ok(Recipe {
            route,
            source,
            headers,
            stages,
            capacity,
            json,
        })
    }

    /// The route this recipe answers (`/*` unless the recipe names one).
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// Where the body comes from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The stages, in order of `at`.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// `workers` and `queue_limit`, when the recipe sets them.
    pub fn capacity(&self) -> Option<Capacity> {
        self.capacity
    }

    /// The recipe object as it was written.
    pub fn json(&self) -> &Value {
        &self.json
    }
}

fn source(
    origin: Option<String>,
    random_content: Option<String>,
    body: Option<String>,
    place: &str,
) -> Result<Source, RecipeError> {
    match (origin, random_content, body) {
        (None, None, None) => Ok(Source::Empty),
        (Some(url), None, None) => {
            origin_url(&url).map_err(|m| RecipeError::new(format!("{place}.origin"), m))?;
            Ok(Source::Origin(url))
        }
        (None, Some(size), None) => units::parse_size(&size)
            .map(Source::RandomContent)
            .map_err(|m| RecipeError::new(format!("{place}.random_content"), m)),
        (None, None, Some(body)) => Ok(Source::Body(body)),
        _ => Err(RecipeError::new(
            place,
            "`origin`, `random_content` and `body` are alternatives: set at most one",
        )),
    }
}

/// An origin must be `http://host[:port][/path]`: the URL, checked.
pub(crate) fn origin_url(url: &str) -> Result<Url, String> {
    let expected =
        || format!("expected an http:// URL like \"http://127.0.0.1:8081/page\", found `{url}`");
    match Url::parse(url) {
        Ok(parsed) if parsed.is_tls() => Err(format!(
            "https origins are not supported (use an http:// URL), found `{url}`"
        )),
        Ok(parsed) => Ok(parsed),
        // The parser's word on what is wrong, after the URL it repeats.
        Err(error) => Err(format!("{} ({error})", expected())),
    }
}

/// `workers` (1 to [`MAX_WORKERS`]) and `queue_limit` (0 or more; only with `workers`).
fn capacity(
    workers: Option<&Value>,
    queue_limit: Option<&Value>,
    place: &str,
) -> Result<Option<Capacity>, RecipeError> {
    let count = |value: Option<&Value>, key: &str, min: u64| -> Result<Option<u64>, RecipeError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(n) if n >= min && n <= MAX_WORKERS as u64 => Ok(Some(n)),
                _ => Err(RecipeError::new(
                    format!("{place}.{key}"),
                    format!("expected a whole number from {min} to {MAX_WORKERS}, found {n}"),
                )),
            },
            Some(other) => Err(RecipeError::new(
                format!("{place}.{key}"),
                format!("expected a whole number from {min} to {MAX_WORKERS}, found {other}"),
            )),
        }
    };
    let workers = count(workers, "workers", 1)?;
    let queue_limit = count(queue_limit, "queue_limit", 0)?;
    match (workers, queue_limit) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(RecipeError::new(
            format!("{place}.queue_limit"),
            "a queue limit needs `workers` (the queue is of requests waiting for a worker)",
        )),
        // Both are at most MAX_WORKERS, so they fit a usize.
        (Some(workers), queue_limit) => Ok(Some(Capacity {
            workers: workers as usize,
            queue_limit: queue_limit.map(|q| q as usize),
        })),
    }
}

fn headers(
    value: Option<&Value>,
    place: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>, RecipeError> {
    let object = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(RecipeError::new(
                place,
                format!("expected an object of header names to values, found {other}"),
            ))
        }
    };
    object
        .iter()
        .map(|(name, value)| {
            let here = format!("{place}.{name}");
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| RecipeError::new(&here, "not a valid header name"))?;
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(RecipeError::new(
                        &here,
                        format!("expected a string, found {other}"),
                    ))
                }
            };
            let value = HeaderValue::from_str(&text).map_err(|_| {
                RecipeError::new(&here, "not a valid header value (control characters?)")
            })?;
            Ok((header, value))
        })
        .collect()
}

fn stages(value: Option<&Value>, place: &str) -> Result<Vec<Stage>, RecipeError> {
    let items = match value {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) | None | Some(Value::Null) => return Err(RecipeError::new(
            place,
            "at least one stage is required, like [{\"at\": 0, \"status\": 200, \"latency\": 0}]",
        )),
        Some(other) => {
            return Err(RecipeError::new(
                place,
                format!("expected a list of stages, found {other}"),
            ))
        }
    };
    let mut stages: Vec<Stage> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = format!("{place}[{i}]");
        let object: &Map<String, Value> = item.as_object().ok_or_else(|| {
            RecipeError::new(&here, format!("expected a stage object, found {item}"))
        })?;
        let stage = Stage::from_object(object)
            .map_err(|(key, message)| RecipeError::new(format!("{here}.{key}"), message))?;
        if let Some(previous) = stages.last() {
            if stage.at < previous.at {
                return Err(RecipeError::new(
                    format!("{here}.at"),
                    format!(
                        "stages must be in order of `at`: {:?} comes after {:?}",
                        stage.at, previous.at
                    ),
                ));
            }
        }
        stages.push(stage);
    }
    Ok(stages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn one(text: &str) -> Recipe {
        let mut recipes = Recipe::from_json(text).unwrap();
        assert_eq!(recipes.len(), 1);
        recipes.remove(0)
    }

    fn err(text: &str) -> String {
        Recipe::from_json(text).unwrap_err().to_string()
    }

    #[test]
    fn origin_simulators_example_recipe_parses() {
        let r = one(r#"{"origin": "http://127.0.0.1:8081/news",
                "stages": [{"at": 0, "latency": 50, "status": 404},
                           {"at": 4000, "latency": 2000, "status": 503},
                           {"at": 6000, "latency": 100, "status": 200}]}"#);
        assert_eq!(r.route().as_str(), "/*");
        assert_eq!(
            r.source(),
            &Source::Origin("http://127.0.0.1:8081/news".into())
        );
        let ats: Vec<_> = r.stages().iter().map(|s| s.at).collect();
        assert_eq!(ats, [0, 4000, 6000].map(Duration::from_millis));
        assert_eq!(r.stages()[1].status.as_u16(), 503);
    }

    #[test]
    fn a_list_gives_one_recipe_per_route() {
        let recipes = Recipe::from_json(
            r#"[{"route": "/news*", "random_content": "428kb", "stages": [{"at": 0}]},
                {"body": "hi <<1kb>>", "headers": {"x-a": "1"}, "stages": [{"at": "1s"}]}]"#,
        )
        .unwrap();
        assert_eq!(recipes[0].route().as_str(), "/news*");
        assert_eq!(recipes[0].source(), &Source::RandomContent(428 * 1024));
        assert_eq!(recipes[1].source(), &Source::Body("hi <<1kb>>".into()));
        assert_eq!(recipes[1].headers[0].0.as_str(), "x-a");
    }

    #[test]
    fn errors_name_the_place_in_the_recipe() {
        assert_eq!(
            err(r#"[{"stages": [{"at": 0}]}, {"stages": [{"at": 0}, {"latency": "soon"}]}]"#)
                .split(": expected")
                .next()
                .unwrap(),
            "recipe[1].stages[1].latency"
        );
        assert_eq!(
            err(r#"{"stages": [{"at": 0}], "rout": "/x"}"#),
            "recipe.rout: unknown key (expected one of: body, headers, origin, queue_limit, random_content, route, stages, workers)"
        );
        assert_eq!(
            err(r#"{"stages": []}"#),
            "recipe.stages: at least one stage is required, like [{\"at\": 0, \"status\": 200, \"latency\": 0}]"
        );
        assert_eq!(
            err(r#"{"stages": [{"at": 0}], "body": "x", "random_content": "1kb"}"#),
            "recipe: `origin`, `random_content` and `body` are alternatives: set at most one"
        );
        assert_eq!(
            err(r#"{"stages": [{"at": "2s"}, {"at": "1s"}]}"#),
            "recipe.stages[1].at: stages must be in order of `at`: 1s comes after 2s"
        );
        assert!(err("{").starts_with("recipe: invalid JSON at line 1, column 1"));
        assert_eq!(
            err("[]"),
            "recipe: an empty list: expected at least one recipe object"
        );
    }

    #[test]
    fn workers_and_queue_limit_make_a_capacity() {
        let r = one(r#"{"workers": 8, "queue_limit": 0, "stages": [{"latency": "10ms"}]}"#);
        assert_eq!(
            r.capacity(),
            Some(Capacity {
                workers: 8,
                queue_limit: Some(0)
            })
        );
        assert_eq!(one(r#"{"stages": [{}]}"#).capacity(), None);
        assert_eq!(
            one(r#"{"workers": 2, "stages": [{}]}"#).capacity(),
            Some(Capacity {
                workers: 2,
                queue_limit: None
            })
        );
        assert_eq!(
            err(r#"{"workers": 0, "stages": [{}]}"#),
            "recipe.workers: expected a whole number from 1 to 1000000, found 0"
        );
        assert_eq!(
            err(r#"{"workers": "8", "stages": [{}]}"#),
            "recipe.workers: expected a whole number from 1 to 1000000, found \"8\""
        );
        assert_eq!(
            err(r#"{"workers": 2.5, "stages": [{}]}"#),
            "recipe.workers: expected a whole number from 1 to 1000000, found 2.5"
        );
        assert_eq!(
            err(r#"{"queue_limit": 5, "stages": [{}]}"#),
            "recipe.queue_limit: a queue limit needs `workers` (the queue is of requests waiting for a worker)"
        );
    }

    #[test]
    fn https_origins_are_refused_with_a_clear_error() {
        assert_eq!(
            err(r#"{"origin": "https://example.com/", "stages": [{"at": 0}]}"#),
            "recipe.origin: https origins are not supported (use an http:// URL), found `https://example.com/`"
        );
        assert!(err(r#"{"origin": "ftp://x", "stages": [{"at": 0}]}"#).contains("http:// URL"));
        let error = err(r#"{"origin": "http://h:99999/", "stages": [{"at": 0}]}"#);
        assert!(
            error.starts_with("recipe.origin: expected an http:// URL")
                && error.contains("the port `99999` is not a number"),
            "{error}"
        );
    }

    #[test]
    fn headers_must_be_valid() {
        assert_eq!(
            err(r#"{"headers": {"bad name": "x"}, "stages": [{"at": 0}]}"#),
            "recipe.headers.bad name: not a valid header name"
        );
        assert_eq!(
            err(r#"{"headers": ["x"], "stages": [{"at": 0}]}"#),
            "recipe.headers: expected an object of header names to values, found [\"x\"]"
        );
    }
}
