//! Errors found reading or checking a scenario file: each names the file
//! (the scenario file, or a source file it reads) and the line, and says
//! what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// A scenario file, or one of its sources, that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file the error is in.
    pub path: PathBuf,
    /// The line (1-based), when the error is at one.
    pub line: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// An error at a line of the file being read, before the file is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The line (1-based); 0 when the error is about the file as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl Fault {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> Fault {
        Fault {
            line,
            message: message.into(),
        }
    }

    /// The error, in `path`.
    pub(crate) fn in_file(self, path: &Path) -> ScenarioError {
        ScenarioError {
            path: path.to_path_buf(),
            line: (self.line > 0).then_some(self.line),
            message: self.message,
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + memchr::memchr_iter(b'\n', &text.as_bytes()[..end]).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_the_file_and_its_line() {
        let at_line = Fault::new(3, "bad").in_file(Path::new("s.hcl"));
        assert_eq!(at_line.to_string(), "s.hcl:3: bad");
        let whole = Fault::new(0, "empty").in_file(Path::new("s.hcl"));
        assert_eq!(whole.to_string(), "s.hcl: empty");
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 100), 3);
    }
}
