//! A replay's sessions, counted (Apiary's tallies and levels): one type from
//! the engine's tally through the run's console to the summary.

use serde::{Deserialize, Serialize};

/// A replay's sessions at one reading, over its queues.
///
/// Live (read once a second), `peak` is the most running at once since the
/// previous reading; in a summary it is the most over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Running now (an instance holds them); 0 at the end of a run.
    #[serde(default)]
    pub running: u64,
    /// The most running at once (at least `running`).
    #[serde(alias = "peak_running")]
    pub peak: u64,
    /// Started so far.
    #[serde(alias = "sessions_started")]
    pub started: u64,
    /// Completed so far: the instance hung up after the session's last reply.
    #[serde(alias = "sessions_completed")]
    pub completed: u64,
}

impl SessionCounts {
    /// Add another queue's reading taken at the same moment (peaks add: the
    /// queues' sessions run side by side).
    pub fn add(&mut self, other: &SessionCounts) {
        self.running += other.running;
        self.peak += other.peak;
        self.started += other.started;
        self.completed += other.completed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_field_names_of_older_summaries() {
        let old = r#"{"sessions_started": 4, "sessions_completed": 3, "peak_running": 2}"#;
        let counts: SessionCounts = serde_json::from_str(old).unwrap();
        assert_eq!(
            counts,
            SessionCounts {
                running: 0,
                peak: 2,
                started: 4,
                completed: 3
            }
        );
        let mut sum = counts;
        sum.add(&counts);
        assert_eq!((sum.peak, sum.started), (4, 8));
    }
}
