//! tank-scenario: scenarios in Pandora's format (`ammo_type = scenario`).
//!
//! A scenario is a user's flow: log in, take the token from the answer,
//! list, pick an item, buy it, with each user's data from a file and pauses
//! between steps. Pandora's scenario generator defines the format Yandex.Tank
//! users already write (HCL, YAML or JSON of one structure); this crate
//! reads it, checks it and runs its logic, in two stages as the rest of tank:
//!
//! - **Load** ([`load`], the plan stage): read the file (`doc`), decode its
//!   structure (`spec`), read its sources (`source`), compile every template,
//!   path and postprocessor and check each scenario's order (`book`). Every
//!   error names the file and line, before the first shot. The result, a
//!   [`Book`], is read-only and shared.
//! - **Run** ([`Run`], used by the engine's scenario driver): per run, build
//!   each step's request (`run`, `template`, `jar`), read its reply (`reply`,
//!   `post`), and say why a run ends early ([`Failure`]). The engine owns the
//!   timing, the connection and the rows; this crate owns no socket and no
//!   clock but the cookies' expiry.
//!
//! docs/scenarios.md is the user's guide, with where tank departs from
//! Pandora and why.

#![warn(missing_docs)]

mod book;
mod call;
mod doc;
mod error;
mod failure;
mod funcs;
mod jar;
mod path;
mod post;
mod reply;
mod run;
mod source;
mod spec;
mod template;
mod value;

pub use book::{load, Book, Scenario, Step, MAX_STEPS};
pub use doc::Format;
pub use error::ScenarioError;
pub use failure::{Failure, FailureKind, Reason};
pub use run::{Cursors, Defaults, Run};
pub use source::{CsvTable, Source, SourceData};
