//! Plan errors: each names what was wrong, where (schedule step, file and byte
//! offset) and what was expected. The CLI prefixes the config file and section.

use std::path::PathBuf;

/// Everything that can stop a plan from being built or streamed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A schedule string that the stepper rejects.
    #[error("{key}: step `{step}`: {message}")]
    Schedule {
        /// `rps_schedule` or `instances_schedule`.
        key: &'static str,
        /// The step as split from the schedule (e.g. `const(2 ,2s)`).
        step: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A schedule that is empty, or a config combination the stepper cannot plan.
    #[error("{0}")]
    Config(String),
    /// A problem with an option's value, located where the config wrote it
    /// (file, line, section and key): what [`PlanError::Schedule`] becomes
    /// once the plan knows which config the schedule came from.
    #[error("{0}")]
    Located(Box<tank_config::ConfigError>),
    /// Malformed ammo: names the file, the byte offset (in the decompressed
    /// stream for gzip files) and what was expected there.
    #[error("{}: byte {offset}: {message}", path.display())]
    Ammo {
        /// The ammo file.
        path: PathBuf,
        /// Offset of the reader when the problem was found.
        offset: u64,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A scenario file (or one of its sources) that cannot be used: names
    /// the file and line.
    #[error("{0}")]
    Scenario(tank_scenario::ScenarioError),
    /// A malformed line of line-based ammo (`grpc/json`): names the file and
    /// the line (1-based).
    #[error("{}:{line}: {message}", path.display())]
    AmmoLine {
        /// The ammo file.
        path: PathBuf,
        /// The line.
        line: u64,
        /// What was wrong and what was expected.
        message: String,
    },
    /// An ammo or stpd file that cannot be opened or read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (shown in the message, so not also a source).
        error: std::io::Error,
    },
}

impl PlanError {
    /// A [`PlanError::Schedule`] located at `place`, the option it was read from;
    /// any other error as it is.
    pub(crate) fn located_at(self, place: &tank_config::OptionPlace) -> Self {
        match self {
            PlanError::Schedule { step, message, .. } => {
                PlanError::Located(Box::new(place.error(format!("step `{step}`: {message}"))))
            }
            other => other,
        }
    }

    /// This error, located where `queue`'s config wrote what it is about: a
    /// schedule error at the load profile, an ammo error at `ammo_key`
    /// (`ammofile`, `uris`, `stpd_file`), anything else at the queue's section.
    pub fn located(self, queue: &tank_config::QueueConfig, ammo_key: &str) -> Self {
        match self {
            PlanError::Schedule { .. } => self.located_at(&queue.load_profile_at),
            other => other.located_in(&queue.places, ammo_key),
        }
    }

    /// This error located in `places`: at `ammo_key` for ammo, else at the section.
    pub(crate) fn located_in(self, places: &tank_config::Places, ammo_key: &str) -> Self {
        let located = match &self {
            PlanError::Located(_) => return self,
            PlanError::Ammo { .. }
            | PlanError::AmmoLine { .. }
            | PlanError::Io { .. }
            | PlanError::Scenario(_) => places.of(ammo_key).error(self.to_string()),
            PlanError::Schedule { key, .. } => places.of(key).error(self.to_string()),
            PlanError::Config(message) => places.error(message.clone()),
        };
        PlanError::Located(Box::new(located))
    }

    pub(crate) fn schedule(key: &'static str, step: &str, message: impl Into<String>) -> Self {
        PlanError::Schedule {
            key,
            step: step.to_string(),
            message: message.into(),
        }
    }
}

/// Shorthand for plan results.
pub type Result<T, E = PlanError> = std::result::Result<T, E>;
