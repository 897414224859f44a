//! tank-plan: the stepper. Turns a queue's schedule and ammo into the exact
//! stream of shots (when, which tag, which bytes) that yandex-tank 2.0.11 would
//! fire, lazily, and reads and writes the stepped-ammo (stpd) format.
//!
//! Data flows one way: [`schedule`] says when, [`ammo`] says what, [`marker`]
//! tags it, [`stepper`] pairs them under `loop` / `ammo_limit` / `chosen_cases`,
//! and [`plan::Plan`] is what later stages consume. Nothing is kept per shot:
//! schedules are closed-form and ammo is streamed (files up to 16 MiB are held
//! in memory to make loops cheap), so memory does not grow with the plan.
//!
//! # Glossary
//!
//! This crate speaks phantom's words, because they are the ones yandex-tank's
//! stpd files, ammo formats and docs use; the engine and the results speak
//! plainer ones. They name the same things:
//!
//! | here (phantom's word) | engine and stats | what it is |
//! |---|---|---|
//! | **missile** | request (`feed::Shot::request`) | the bytes sent, verbatim |
//! | **marker** | tag (`Sample::tag`, phout's 2nd column) | the label results are grouped by; a `#N` suffix is cut off for grouping |
//! | **case** | case (`tank_stats::case_of`) | a marker without its `#N` suffix |
//! | **shot** ([`ShotRef`]) | shot (`feed::Shot`), then sample | one request at one due time |
//! | **due time** (`due_ms`, `due_ns`) | `due` (a `Duration`, or none: at once) | when the shot should start, from the test's start (whole ms but for drawn arrivals) |
//!
//! The renaming happens once, where the engine's feeder turns a [`ShotRef`]
//! into its own shot. [`PlanTotals`] is what `tank plan` prints about a plan;
//! a run's summary is `tank_report::Summary`.

#![warn(missing_docs, unreachable_pub)]

pub mod ammo;
/// The stepper's duration syntax (kept in tank-config, which reads `timeout` with it).
pub use tank_config::duration;
// Python's number rules, shared with tank-config.
pub(crate) use tank_config::pynum;
mod error;
#[cfg(test)]
mod ks;
pub mod marker;
mod plan;
mod planned;
pub mod replay;
pub mod schedule;
pub mod sessions;
mod shard;
mod splitmix;
mod stepper;
pub mod stpd;
mod summary;
pub mod words;
pub mod writer;

pub use error::{PlanError, Result};
pub use plan::{Model, Plan, TimedShot};
pub use planned::PlannedCount;
pub use schedule::Schedule;
pub use shard::Shard;
pub use stepper::ShotRef;
pub use summary::PlanTotals;
