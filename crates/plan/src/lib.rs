//! tank-plan: the stepper. Turns a queue's schedule and ammo into the exact
//! stream of shots (when, which tag, which bytes) that yandex-tank 2.0.11 would
//! fire, lazily, and reads and writes the stepped-ammo (stpd) format.
//!
//! Nothing here does I/O on the network or keeps the plan in memory: schedules
//! are closed-form and ammo is read as a stream, so a 1 GB ammo file or a
//! 10-hour schedule is planned with memory that does not grow with them.

pub mod duration;
pub mod error;
mod pynum;
pub mod schedule;

pub use error::{PlanError, Result};
pub use schedule::Schedule;
