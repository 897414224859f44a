//! tank-stats: what tank measured, and what it makes of it.
//!
//! [`Sample`] is the one record the engine emits per shot, [`Measured`] its
//! ten phout columns (their order is [`columns`]' one table); [`phout`] writes
//! and reads yandex-tank's phout log (12 tab-separated columns, as phantom
//! writes them) so existing tools read tank's results and tank reads theirs.
//! [`aggregate`] turns responses into finished seconds and run totals with flat
//! memory; [`json`] writes those seconds in yandex-tank's JSON report shape;
//! [`autostop`] watches the seconds and says when (and why) a run must stop.

#![warn(missing_docs)]

pub mod aggregate;
pub mod autostop;
pub mod columns;
pub mod group;
pub mod json;
pub mod phout;
pub mod quantile;
pub mod sample;
pub mod sessions;

pub use aggregate::{Aggregator, Quantiles, SecondStats, TotalStats};
pub use columns::{Field, COLUMNS, FIELD_NAMES};
pub use group::{CodeCounts, FieldStats, GroupStats};
pub use quantile::QUANTILES;
pub use sample::{case_of, micros, Measured, NetCode, QueueIndex, Sample, Tag};
pub use sessions::SessionCounts;
