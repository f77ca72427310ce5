//! What a check reports: one thing wrong, with where and what to do about
//! it. A file of its own, below `check` and every rule module, so a rule
//! can build its problems without importing the module that runs it.

use std::fmt;

/// One thing wrong, with where and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Repository-relative file, with `:line` when known.
    pub place: String,
    /// After a file: a verb phrase ("is stale: run …"); after a line: what
    /// is wrong there.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "docs/src/x.md is stale: …", but "docs/src/x.md:12: link to …".
        let separator = if self.place.contains(':') { ": " } else { " " };
        write!(f, "{}{separator}{}", self.place, self.message)
    }
}
