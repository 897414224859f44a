//! Why a scenario run ends before its last request, beyond the network: the
//! three kinds of failure, and the reasons, known when the file is read, that
//! a run counts them under.

/// What kind of failure ended a run (each has its net code in the results:
/// docs/scenarios.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// An `assert/response` check did not hold.
    Assertion,
    /// A template or a preprocessor needed a value the run does not have (not
    /// set yet, or not what it needs: an index past a list's end, text where
    /// a number was needed, a header value with a line break). The request is
    /// not sent.
    Unset,
    /// A `var/jsonpath` or `var/xpath` matched nothing, or the body could not
    /// be read as JSON, XML or HTML.
    Extraction,
}

impl FailureKind {
    /// A word for people.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Assertion => "assertion failed",
            FailureKind::Unset => "variable not set",
            FailureKind::Extraction => "extraction failed",
        }
    }
}

/// One way a request of the file can fail, found when the file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The request (its name).
    pub request: String,
    /// The kind of failure.
    pub kind: FailureKind,
    /// What failed (`status_code 200`, `` `$.token` matched nothing ``, ...).
    pub text: String,
}

/// A run's failure: its kind and its reason (an index into [`crate::Book::reasons`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The kind.
    pub kind: FailureKind,
    /// The reason's index.
    pub reason: usize,
}

/// The table of reasons, filled as the file is compiled.
#[derive(Debug, Default, Clone)]
pub(crate) struct Reasons {
    pub list: Vec<Reason>,
}

impl Reasons {
    /// A new reason of `request`'s.
    pub(crate) fn add(&mut self, request: &str, kind: FailureKind, text: String) -> usize {
        self.list.push(Reason {
            request: request.to_owned(),
            kind,
            text,
        });
        self.list.len() - 1
    }
}
