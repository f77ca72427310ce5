//! Keeping file tools inside the workspace directory.
//!
//! The model names files with strings it made up, so every path it sends is
//! untrusted. [`Workspace::resolve`] turns such a string into a real path and
//! refuses any that would land outside the workspace, whichever way it tries:
//!
//! * an absolute path elsewhere (`/etc/passwd`);
//! * `..` climbing above the root (`../secrets.txt`);
//! * a symlink inside the workspace that points outside it.
//!
//! The check cannot simply call [`std::fs::canonicalize`] on the path,
//! because `write_file` creates files that do not exist yet, and
//! canonicalising a missing file fails. So resolution walks the path one
//! component at a time, following each symlink that exists, exactly like the
//! operating system will when the tool opens the file. Only the parts that do
//! not exist yet are taken as written, and a part that does not exist cannot
//! be a symlink.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::hooks::ToolOutput;

/// The directory the agent works in.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path leads outside the workspace.
    #[error("path escapes the workspace: {path} resolves to {}, which is outside {}", .resolved.display(), .root.display())]
    Escapes {
        /// The path as given, before resolving.
        path: String,
        /// Where it leads once `..` and symlinks are resolved.
        resolved: PathBuf,
        /// The workspace root it had to stay under.
        root: PathBuf,
    },
    /// The path was the empty string.
    #[error("the path is empty")]
    Empty,
    /// A symlink on the way points at something that does not exist, so we
    /// cannot tell where a write through it would land.
    #[error("cannot follow {path}: {} is a symlink whose target does not exist", .link.display())]
    DanglingSymlink {
        /// The path as given, before resolving.
        path: String,
        /// The symlink whose target is missing.
        link: PathBuf,
    },
    /// The file system refused to tell us about a part of the path
    /// (permission denied, a file used as a directory, ...).
    #[error("cannot resolve {path}: {source}")]
    Io {
        /// The path as given, before resolving.
        path: String,
        /// The file system's error.
        #[source]
        source: io::Error,
    },
}

/// Tools hand path errors straight back to the model.
impl From<PathError> for ToolOutput {
    fn from(error: PathError) -> Self {
        ToolOutput::error(error.to_string())
    }
}

impl Workspace {
    /// Opens a workspace at `root`, which must exist.
    ///
    /// The root is canonicalised once here, so every later comparison is
    /// between real paths, not spellings of them.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self {
            root: root.as_ref().canonicalize()?,
        })
    }

    /// The workspace directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Turns a path the model sent into a real path inside the workspace.
    ///
    /// Relative paths are taken from the workspace root; absolute paths are
    /// accepted only if they lie inside it. The result has every existing
    /// symlink followed and no `.` or `..` left, so opening it cannot lead
    /// anywhere the check did not see. The file itself need not exist.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        let requested = Path::new(path);
        // Both starting points are canonical, and every step below keeps
        // `resolved` canonical for as long as the path exists.
        let mut resolved = if requested.is_absolute() {
            PathBuf::from("/")
        } else {
            self.root.clone()
        };
        for component in requested.components() {
            match component {
                // The starting point above already accounts for these.
                Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
                // `resolved` has no symlinks in it, so its parent is the
                // real parent: popping is what the OS would do.
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => {
                    resolved.push(name);
                    resolved = follow_symlink(resolved, path)?;
                }
            }
        }
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(PathError::Escapes {
                path: path.to_string(),
                resolved,
                root: self.root.clone(),
            })
        }
    }
}

/// If the last component of `candidate` is a symlink, replaces it by where
/// it really leads. Anything that does not exist is returned unchanged: a
/// missing file cannot be a symlink, and `write_file` may be about to
/// create it.
fn follow_symlink(candidate: PathBuf, original: &str) -> Result<PathBuf, PathError> {
    match std::fs::symlink_metadata(&candidate) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            // The parent is already canonical, so this only resolves the
            // link itself (and any links its target passes through).
            std::fs::canonicalize(&candidate).map_err(|source| {
                if source.kind() == io::ErrorKind::NotFound {
                    PathError::DanglingSymlink {
                        path: original.to_string(),
                        link: candidate,
                    }
                } else {
                    PathError::Io {
                        path: original.to_string(),
                        source,
                    }
                }
            })
        }
        Ok(_) => Ok(candidate),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(candidate),
        Err(source) => Err(PathError::Io {
            path: original.to_string(),
            source,
        }),
    }
}
