//! tank-stats: what tank measured, and what it makes of it.
//!
//! [`Sample`] is the one record the engine emits per shot; [`phout`] writes
//! and reads yandex-tank's phout log (12 tab-separated columns, as phantom
//! writes them) so existing tools read tank's results and tank reads theirs.

pub mod phout;
pub mod sample;

pub use sample::{NetCode, Sample, Tag};
