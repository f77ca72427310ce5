//! Finding the skills directory.
//!
//! In order, the first that applies wins:
//!
//! 1. the directory the user named, with `--skills-dir DIR` or the
//!    `SKILLS_DIR` variable (which may also come from `.env`); it must exist;
//! 2. `skills/` in the workspace, so a project can ship its own skills;
//! 3. the course's own `skills/` folder, found from where this crate was
//!    compiled, so the lesson has skills to show in any workspace, even an
//!    empty scratch directory.
//!
//! If none exists (say the crate was copied out of the course), the agent
//! runs with an empty catalog and says so.

use std::path::{Path, PathBuf};

/// The environment variable that names the skills directory.
pub const SKILLS_DIR_ENV: &str = "SKILLS_DIR";

/// The course's skills, next to the workspace's `crates/` folder.
pub const COURSE_SKILLS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../skills");

/// This lesson's command-line flag, added to the common ones.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SkillsArgs {
    /// Directory of skills, one folder per skill with a SKILL.md
    /// (default: $SKILLS_DIR, else WORKSPACE/skills, else the course's skills/).
    #[arg(long, value_name = "DIR")]
    pub skills_dir: Option<PathBuf>,
}

impl SkillsArgs {
    /// Fills in `SKILLS_DIR`, as `lookup` finds it, when no flag was given.
    /// `main` passes the environment, after `.env` was loaded, so the
    /// variable may come from there.
    pub fn or_lookup(&self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let skills_dir = self.skills_dir.clone().or_else(|| {
            lookup(SKILLS_DIR_ENV)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        });
        Self { skills_dir }
    }
}

/// Where the skills directory was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--skills-dir` or `SKILLS_DIR`.
    Requested,
    /// `<workspace>/skills`.
    Workspace,
    /// The course's `skills/`.
    Course,
}

/// The skills directory the agent uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub dir: PathBuf,
    pub origin: Origin,
}

/// The skills directory the user asked for does not exist.
#[derive(Debug, thiserror::Error)]
#[error("the skills directory {} (from --skills-dir or {SKILLS_DIR_ENV}) is not a directory", .0.display())]
pub struct NotADirectory(pub PathBuf);

// ANCHOR: locate
/// Picks the skills directory (see the module documentation for the order).
/// A relative `requested` path is taken from the current directory, like
/// any other path on the command line.
pub fn locate(
    requested: Option<&Path>,
    workspace: &Path,
) -> Result<Option<Located>, NotADirectory> {
    if let Some(dir) = requested {
        return if dir.is_dir() {
            Ok(Some(Located {
                dir: dir.to_path_buf(),
                origin: Origin::Requested,
            }))
        } else {
            Err(NotADirectory(dir.to_path_buf()))
        };
    }
    let in_workspace = workspace.join("skills");
    if in_workspace.is_dir() {
        return Ok(Some(Located {
            dir: in_workspace,
            origin: Origin::Workspace,
        }));
    }
    let course = Path::new(COURSE_SKILLS_DIR);
    Ok(course.is_dir().then(|| Located {
        dir: course.to_path_buf(),
        origin: Origin::Course,
    }))
}
// ANCHOR_END: locate

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_beats_workspace_beats_course() {
        let workspace = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();

        let course = locate(None, workspace.path()).unwrap().unwrap();
        assert_eq!(course.origin, Origin::Course);

        std::fs::create_dir(workspace.path().join("skills")).unwrap();
        let local = locate(None, workspace.path()).unwrap().unwrap();
        assert_eq!(local.origin, Origin::Workspace);
        assert_eq!(local.dir, workspace.path().join("skills"));

        let asked = locate(Some(other.path()), workspace.path())
            .unwrap()
            .unwrap();
        assert_eq!(asked.origin, Origin::Requested);
        assert_eq!(asked.dir, other.path());

        let missing = other.path().join("nope");
        let error = locate(Some(&missing), workspace.path()).unwrap_err();
        assert!(error.to_string().contains("nope"), "{error}");
    }
}
