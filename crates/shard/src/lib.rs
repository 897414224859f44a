//! tank-shard: a test beyond one process and one machine.
//!
//! A sharded test needs no coordinator: shard `I` of `N` fires its own slice of
//! the exact plan (tank-plan's [`tank_plan::Shard`]) from a wall-clock start all
//! shards share, and writes a [`record::ShardRecord`] beside its results. This
//! crate holds what surrounds that: reading the start time ([`time`]), what the
//! shard knows of its clock ([`clock`]), the record, and the exact merge of the
//! shards' results afterwards ([`merge`], [`merged`]).

#![warn(missing_docs)]

pub mod clock;
pub mod k8s;
pub mod merge;
pub mod merged;
pub mod record;
pub mod time;

pub use clock::ClockInfo;
pub use merged::{merge_runs, Merged};
pub use record::{QueuePlan, ShardRecord, SHARD_JSON};
