//! tank-results: the one results pipeline.
//!
//! Responses come from a source: the live run's samples, or phout files
//! merged by response end ([`source::PhoutSource`]).

#![warn(missing_docs)]

pub mod planned;
pub mod source;
pub mod timeline;

pub use planned::Planned;
pub use source::{PhoutSource, SourceError};
pub use timeline::Timeline;
