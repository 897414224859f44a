//! Counting passes over an ammo source, as the reference's `loop` option does.

use crate::error::{PlanError, Result};

/// Passes finished so far, and the `loop` limit.
#[derive(Debug, Clone)]
pub struct Passes {
    done: u64,
    /// `None` for no limit; the reference also treats `0` as no limit.
    limit: Option<i64>,
}

impl Passes {
    /// `limit` is the effective `loop` value (`None` = unlimited).
    pub fn new(limit: Option<i64>) -> Self {
        Passes { done: 0, limit }
    }

    /// Passes finished so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Whether passes go on forever (no limit, or the reference's falsy `0`).
    pub fn unlimited(&self) -> bool {
        matches!(self.limit, None | Some(0))
    }

    /// The reference's `inc_loop_count`: count a finished pass and say whether
    /// another may start. `yielded` tells whether the pass produced anything:
    /// a pass that produced nothing with no limit would repeat forever in the
    /// reference, so it is an error here, naming `source`.
    pub fn finish(&mut self, yielded: bool, source: &str) -> Result<bool> {
        self.done += 1;
        if !yielded && self.unlimited() {
            return Err(PlanError::Config(format!(
                "{source}: a whole pass over the ammo gave no requests, and with no `loop` limit it would be \
                 read forever; expected at least one request (or set `loop`)"
            )));
        }
        Ok(match self.limit {
            Some(limit) if limit != 0 => (self.done as i64) < limit,
            _ => true,
        })
    }
}

/// What a reader may look at beyond its own file.
#[derive(Debug, Clone)]
pub struct ReadState {
    /// Passes over the source.
    pub passes: Passes,
    /// Shots written so far (the uri reader fails a pass when none were).
    pub written: u64,
}
