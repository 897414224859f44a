//! tank-scale: a test beyond one process and one machine.
//!
//! A sharded test needs no coordinator: shard `I` of `N` fires its own slice of
//! the exact plan (tank-plan's [`tank_plan::Shard`]) from a wall-clock start all
//! shards share, and writes a `tank_run::ShardRecord` beside its results (as
//! every run does). This crate holds what runs and joins the shards: N child
//! processes on this machine ([`processes`]), the Kubernetes manifests that run
//! them across machines ([`k8s`]), and the exact merge of their results
//! afterwards ([`merge`], on tank-results' pipeline).

#![warn(missing_docs, unreachable_pub)]

pub mod k8s;
pub mod merge;
pub mod processes;

pub use merge::{merge_runs, Merged};
