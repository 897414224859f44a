//! tank-results: the one results pipeline, between the measurements
//! (tank-stats) and what people read (tank-report).
//!
//! Responses come from a source: a live run's samples, or phout files merged
//! by response end ([`PhoutSource`]). A [`Pipeline`] aggregates them per second
//! (tank-stats' `Aggregator`) with the generator's own counts (planned from the
//! plan in closed form, [`Planned`]; sent, instances), and hands each finished
//! second, in order, to every [`SecondSink`]: phout and `test_data.log`
//! ([`PhoutFile`], [`JsonLines`]), the report's series ([`Timeline`]),
//! autostop ([`AutostopSink`]), and, implemented where they live, the
//! exporters (tank-export), mcperf's table (tank-report) and the console (tank-run).
//! The live run, `tank report`, `tank compare` and `tank merge` all drive the
//! same sinks; [`drive`] is the loop for phout files.
//!
//! Why a crate of its own: the sinks live in several crates (export, report,
//! run), so the trait and the driver must sit below all of them and above
//! tank-stats; tank-report, the natural home of a "report", would pull its HTML
//! and console into every exporter.

#![warn(missing_docs, unreachable_pub)]

mod autostop;
mod files;
mod lines;
mod pipeline;
mod planned;
mod sink;
mod source;
mod timeline;

pub use autostop::{AutostopSink, Elapsed};
pub use files::{JsonLines, PhoutFile};
pub use pipeline::{drive, DriveError, Driven, Pipeline};
pub use planned::Planned;
pub use sink::{Response, SecondSink, SinkError, SoFar};
pub use source::{PhoutSource, Row, SentCounts, SourceError};
pub use timeline::{GroupSeries, Timeline, MAX_GROUP_SERIES};
