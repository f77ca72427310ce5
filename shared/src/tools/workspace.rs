//! Keeping file tools inside the workspace directory.

use std::path::{Path, PathBuf};

/// The directory the agent works in.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens a workspace at `root`, which must exist.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            root: root.as_ref().canonicalize()?,
        })
    }

    /// The workspace directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }
}
