//! tank-scenario: scenarios in Pandora's format.
mod doc;
mod error;
pub use doc::Format;
pub use error::ScenarioError;
