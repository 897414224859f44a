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

pub mod interrupt;
pub mod measure;
pub mod output;
pub mod probe;
pub mod search;
pub mod sweep;
pub mod target;
pub mod usl;

pub use interrupt::Interrupt;
pub use measure::{LatencySummary, Measurement, SocketErrors};
pub use probe::{run_probe, run_probe_shown, Timing};
pub use target::{Load, Options, Request, Target};

/// The exit codes of `bench`, `sweep`, `search` and `scan` beyond 0 (done)
/// and 1 (could not be done); docs/results.md lists them.
pub mod exit {
    /// `search`, `scan`: no rate tried met the bound.
    pub const NONE_MEETS: u8 = 3;
    /// `search`, `scan`: the limit is unresolved, because a rate between the
    /// highest pass and the lowest failure was invalid in every try.
    pub const UNRESOLVED: u8 = 4;
    /// Any of them, with `--fail-on-warnings`: it ended with warnings (a run's 35).
    pub const WARNINGS: u8 = tank_stats::autostop::codes::WARNINGS as u8;
}

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
