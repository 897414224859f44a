//! tank-plan: the stepper. Turns a queue's schedule and ammo into the exact
//! stream of shots (when, which tag, which bytes) that yandex-tank 2.0.11 would
//! fire, lazily, and reads and writes the stepped-ammo (stpd) format.
//!
//! Data flows one way: [`schedule`] says when, [`ammo`] says what, [`marker`]
//! tags it, [`stepper`] pairs them under `loop` / `ammo_limit` / `chosen_cases`,
//! and [`plan::Plan`] is what later stages consume. Nothing is kept per shot:
//! schedules are closed-form and ammo is streamed (files up to 16 MiB are held
//! in memory to make loops cheap), so memory does not grow with the plan.

#![warn(missing_docs)]

pub mod ammo;
/// The stepper's duration syntax (kept in tank-config, which reads `timeout` with it).
pub use tank_config::duration;
// Python's number rules, shared with tank-config.
pub(crate) use tank_config::pynum;
pub mod error;
pub mod marker;
pub mod plan;
pub mod planned;
pub mod schedule;
pub mod shard;
pub mod stepper;
pub mod stpd;
pub mod summary;
pub mod writer;

pub use error::{PlanError, Result};
pub use plan::{Model, Plan, TimedShot};
pub use planned::PlannedCount;
pub use schedule::Schedule;
pub use shard::Shard;
pub use stepper::ShotRef;
pub use summary::Summary;
