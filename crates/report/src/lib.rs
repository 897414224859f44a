//! tank-report: what a person reads after (and during) a run.
