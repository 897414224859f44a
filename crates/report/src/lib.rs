//! tank-report: what a person reads after (and during) a run.
//!
//! * [`console`]: the live screen and the one-line-per-second form, as pure functions;
//! * [`summary`]: the final [`Summary`] (`summary.json`, `summary.txt`);
//! * [`html`]: the single-file HTML report and the comparison page;
//! * [`stream`]: `tank report`'s streaming core (phout → all of the above);
//! * [`compare`]: `tank compare` of two runs;
//! * [`monitoring`]: monitored hosts' metrics for the console and the report.
//!
//! The per-second JSON lines in yandex-tank's shape are written by `tank_stats::json`.

#![warn(missing_docs)]

pub mod compare;
pub mod console;
pub mod html;
pub mod memcached;
pub mod monitoring;
pub mod names;
pub mod stream;
pub mod summary;
pub mod warnings;

pub use summary::{Meta, RunCounts, Summary};
pub use tank_results::Timeline;
