//! Warnings: what an import could not take as it was (a truncated packet, a
//! gap in a stream, a line that is not a log line). Each is reported as it
//! happens up to a limit, then only counted, so a capture with a million bad
//! packets does not bury the summary; the count is always in the summary.
//! The first few are also kept, for an error that must say them itself.

/// Warnings kept for [`Warnings::first`].
const KEPT: usize = 3;

/// Collects warnings (see the module docs).
pub struct Warnings {
    report: Box<dyn FnMut(&str) + Send>,
    limit: u64,
    total: u64,
    /// Warnings reported past the limit by [`Warnings::always`].
    beyond: u64,
    first: Vec<String>,
}

impl Warnings {
    /// Report the first `limit` warnings through `report`, count the rest.
    pub fn new(limit: u64, report: Box<dyn FnMut(&str) + Send>) -> Self {
        Warnings {
            report,
            limit,
            total: 0,
            beyond: 0,
            first: Vec::new(),
        }
    }

    /// A warning.
    pub fn warn(&mut self, message: String) {
        self.total += 1;
        if self.first.len() < KEPT {
            self.first.push(message.clone());
        }
        if self.total <= self.limit {
            (self.report)(&message);
            if self.total == self.limit {
                (self.report)("further warnings are only counted");
            }
        }
    }

    /// A warning reported even past the limit (counted as any other): one
    /// that sums up what the limit may have hidden, or that the output is empty.
    pub fn always(&mut self, message: String) {
        if self.total >= self.limit {
            self.total += 1;
            self.beyond += 1;
            (self.report)(&message);
        } else {
            self.warn(message);
        }
    }

    /// Warnings so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The first warnings (three at most), whether reported or not.
    pub fn first(&self) -> &[String] {
        &self.first
    }

    /// Warnings counted but not reported.
    pub fn unreported(&self) -> u64 {
        self.total.saturating_sub(self.limit + self.beyond)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn an_always_warning_is_reported_past_the_limit_and_counted() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let mut warnings = Warnings::new(
            1,
            Box::new(move |w| sink.lock().unwrap().push(w.to_owned())),
        );
        warnings.warn("a".into());
        warnings.warn("b".into());
        warnings.always("the sessions file is empty".into());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "a",
                "further warnings are only counted",
                "the sessions file is empty"
            ]
        );
        assert_eq!((warnings.total(), warnings.unreported()), (3, 1));
    }
}
