//! tank-shard: a test beyond one process and one machine.
//!
//! A sharded test needs no coordinator: shard `I` of `N` fires its own slice of
//! the exact plan (tank-plan's [`tank_plan::Shard`]) from a wall-clock start all
//! shards share, and writes a `tank_run::ShardRecord` beside its results (as
//! every run does). This crate holds the exact merge of the shards' results
//! afterwards ([`merged`], on tank-results' phout merge) and their Kubernetes manifests ([`k8s`]).

#![warn(missing_docs)]

pub mod k8s;
pub mod merged;

pub use merged::{merge_runs, Merged};
