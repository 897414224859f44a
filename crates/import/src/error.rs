//! What makes an import fail: the input is not what its format says, or it
//! cannot be read or the output written. Every error names the file and,
//! when the input is at fault, where (byte offset or line) and what was expected.

use std::fmt;
use std::io;

/// Where in the input an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A byte offset from the file's start.
    Byte(u64),
    /// A line number, from 1.
    Line(u64),
}

/// An import that failed.
#[derive(Debug)]
pub struct ImportError {
    /// The input file (or `-` for stdin).
    pub path: String,
    /// Where, when the input is at fault.
    pub at: Option<Location>,
    /// What was wrong and what was expected.
    pub message: String,
    /// The I/O error underneath, if any.
    pub source: Option<io::Error>,
}

impl ImportError {
    /// The input at byte `at` is not what `expected` says it should be.
    pub fn format(path: &str, at: u64, expected: &str) -> Self {
        ImportError {
            path: path.to_string(),
            at: Some(Location::Byte(at)),
            message: expected.to_string(),
            source: None,
        }
    }

    /// The input as a whole is not what it should be (`message` says why).
    pub fn input(path: &str, message: String) -> Self {
        ImportError {
            path: path.to_string(),
            at: None,
            message,
            source: None,
        }
    }

    /// Line `line` of the input is not what it should be.
    pub fn line(path: &str, line: u64, message: String) -> Self {
        ImportError {
            path: path.to_string(),
            at: Some(Location::Line(line)),
            message,
            source: None,
        }
    }

    /// Reading `path` or writing the output failed (`what` says which).
    pub fn io(path: &str, what: &str, source: io::Error) -> Self {
        ImportError {
            path: path.to_string(),
            at: None,
            message: what.to_string(),
            source: Some(source),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path)?;
        match self.at {
            Some(Location::Byte(at)) => write!(f, ": byte {at}")?,
            Some(Location::Line(line)) => write!(f, ":{line}")?,
            None => {}
        }
        write!(f, ": {}", self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

/// The I/O error underneath is in the message, so it is not also a source:
/// an error chain would say it twice.
impl std::error::Error for ImportError {}
