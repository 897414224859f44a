//! Counting passes over an ammo source, as the reference's `loop` option does.

use crate::error::{PlanError, Result};

/// Passes finished so far, and the `loop` limit.
#[derive(Debug, Clone)]
pub(crate) struct Passes {
    done: u64,
    /// `None` for no limit; the reference also treats `0` as no limit.
    limit: Option<i64>,
}

impl Passes {
    /// `limit` is the effective `loop` value (`None` = unlimited).
    pub(crate) fn new(limit: Option<i64>) -> Self {
        Passes { done: 0, limit }
    }

    /// Passes finished so far.
    pub(crate) fn done(&self) -> u64 {
        self.done
    }

    /// Whether passes go on forever (no limit, or the reference's falsy `0`).
    pub(crate) fn unlimited(&self) -> bool {
        matches!(self.limit, None | Some(0))
    }

    /// The reference's `inc_loop_count`: count a finished pass and say whether
    /// another may start. `yielded` tells whether the pass produced anything.
    /// A pass that produced nothing will produce nothing again: with no limit
    /// the reference would read forever, so it is an error here, naming
    /// `source`; with a limit it would read the remaining passes for nothing,
    /// so the reading ends here, with the same shots.
    pub(crate) fn finish(&mut self, yielded: bool, source: &dyn std::fmt::Display) -> Result<bool> {
        self.done += 1;
        if !yielded {
            if self.unlimited() {
                return Err(PlanError::Config(format!(
                    "{source}: a whole pass over the ammo gave no requests, and with no `loop` limit it would be \
                     read forever; expected at least one request (or set `loop`)"
                )));
            }
            return Ok(false);
        }
        Ok(match self.limit {
            Some(limit) if limit != 0 => (self.done as i64) < limit,
            _ => true,
        })
    }
}

/// What a reader may look at beyond its own file.
#[derive(Debug, Clone)]
pub(crate) struct ReadState {
    /// Passes over the source.
    pub passes: Passes,
    /// Shots written so far (the uri reader fails a pass when none were).
    pub written: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_with_nothing_ends_the_reading_or_is_an_error_without_a_limit() {
        let mut limited = Passes::new(Some(100_000_000_000));
        assert_eq!(limited.finish(true, &"a").ok(), Some(true));
        assert_eq!(limited.finish(false, &"a").ok(), Some(false));
        assert_eq!(limited.done(), 2);
        let mut unlimited = Passes::new(None);
        assert_eq!(unlimited.finish(true, &"a").ok(), Some(true));
        let error = unlimited
            .finish(false, &"ammo.txt")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("ammo.txt: a whole pass"), "{error}");
        assert!(Passes::new(Some(0)).finish(false, &"a").is_err());
    }

    #[test]
    fn a_limit_of_l_passes_gives_l_passes() {
        let mut passes = Passes::new(Some(3));
        assert_eq!(passes.finish(true, &"a").ok(), Some(true));
        assert_eq!(passes.finish(true, &"a").ok(), Some(true));
        assert_eq!(passes.finish(true, &"a").ok(), Some(false));
    }
}
