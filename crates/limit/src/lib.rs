//! tank-limit: finding a target's limit, in one process.
//!
//! A load tester asks three questions that one run cannot answer: how fast
//! is it at all (`tank bench`), where does throughput stop growing as
//! clients are added (`tank sweep`, the closed model), and what is the
//! highest rate at which a latency quantile stays under a bound (`tank
//! search` and `tank scan`, the open model). Each is many short runs of the
//! same target, so this crate builds each run's config from one [`Target`]
//! (a URL with wrk's flags, or a config's first queue), runs it through
//! `tank_run::run` with an observer that measures its own window after a
//! warm-up ([`probe`]), and judges the result: the validity rule and the
//! bisection in [`search`], the knee and the Universal Scalability Law in
//! [`sweep`] and [`usl`]. The CLI only parses flags and prints.

#![warn(missing_docs)]

pub mod output;
pub mod probe;
pub mod search;
pub mod sweep;
pub mod target;
pub mod usl;

pub use probe::{run_probe, Measurement, Timing};
pub use target::{Load, Options, Request, Target};

/// Why a search, scan, sweep or bench could not be done.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// The target: a bad URL, a config without a usable queue, a queue that failed.
    #[error("{0}")]
    Target(String),
    /// A run could not start or finish.
    #[error(transparent)]
    Run(#[from] tank_run::RunError),
    /// Writing the request, the JSON or the page.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl LimitError {
    pub(crate) fn io(what: &str, source: std::io::Error) -> LimitError {
        LimitError::Io {
            what: what.to_owned(),
            source,
        }
    }
}
