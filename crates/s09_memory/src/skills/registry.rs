//! The skill registry: every valid skill in the skills directory, by name.
//!
//! The directory holds one folder per skill, each with a `SKILL.md` and
//! optionally more files (`references/`, `scripts/`, `assets/`):
//!
//! ```text
//! skills/
//!   code-review/SKILL.md
//!   code-review/references/checklist.md
//!   writing-tests/SKILL.md
//! ```
//!
//! [`SkillRegistry::scan`] reads it once, at start-up. A folder whose
//! `SKILL.md` is broken is reported and skipped; the other skills still
//! load. The registry is the only way to a skill's files: the model names
//! a skill, never a path, so it cannot use `load_skill` to read anything
//! the registry did not list.

use std::fmt;
use std::path::{Path, PathBuf};

use super::frontmatter::{self, FrontmatterError};

/// The name of the file that makes a folder a skill.
pub const MANIFEST: &str = "SKILL.md";

/// The largest `SKILL.md` read, in bytes. A skill is instructions for a
/// model, not a data file; anything bigger is a mistake.
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024;

/// How many extra files of one skill are listed, at most.
pub const MAX_SKILL_FILES: usize = 100;

/// How deep the listing of a skill's files goes (`references/a.md` is 2).
pub const MAX_FILE_DEPTH: usize = 4;

// ANCHOR: skill
/// One loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The name from the frontmatter (the folder's name if the file has
    /// none): the key `load_skill` looks up.
    pub name: String,
    /// The description from the frontmatter, as written (the file's first
    /// line of text if it has none).
    pub description: String,
    /// The skill's folder (canonical).
    pub dir: PathBuf,
    /// The Markdown after the frontmatter (the whole file if it has none).
    pub body: String,
    /// The skill's other files, relative to `dir` with `/` separators,
    /// sorted. These, and only these, can be read with `load_skill`'s
    /// `file` argument.
    pub files: Vec<String>,
}
// ANCHOR_END: skill

/// A skill folder that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillWarning {
    /// The file (or folder) at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipping skill {}: {}",
            self.path.display(),
            self.problem
        )
    }
}

/// Every valid skill found in one directory.
#[derive(Debug, Clone, Default)]
pub struct SkillRegistry {
    dir: Option<PathBuf>,
    skills: Vec<Skill>,
}

impl SkillRegistry {
    /// A registry with no skills (no skills directory was found).
    pub fn empty() -> Self {
        Self::default()
    }

    // ANCHOR: scan
    /// Reads every `<dir>/<folder>/SKILL.md`, in folder-name order. Broken
    /// skills and second skills with a name already taken come back as
    /// warnings; they never stop the others from loading.
    pub fn scan(dir: &Path) -> (Self, Vec<SkillWarning>) {
        let mut warnings = Vec::new();
        let dir = match dir.canonicalize() {
            Ok(dir) => dir,
            Err(error) => {
                warnings.push(warning(dir, format!("cannot open the directory: {error}")));
                return (Self::empty(), warnings);
            }
        };
        let mut skills: Vec<Skill> = Vec::new();
        for folder in skill_folders(&dir, &mut warnings) {
            // ANCHOR: exercise-s07-scan
            let manifest = folder.join(MANIFEST);
            let skill = match read_skill(&folder, &manifest) {
                Ok(Some(skill)) => skill,
                // A folder without a SKILL.md is not a skill; say nothing.
                Ok(None) => continue,
                Err(problem) => {
                    warnings.push(warning(&manifest, problem.to_string()));
                    continue;
                }
            };
            if let Some(first) = skills.iter().find(|known| known.name == skill.name) {
                warnings.push(name_taken(&manifest, &skill, first));
                continue;
            }
            skills.push(skill);
            // ANCHOR_END: exercise-s07-scan
        }
        let registry = Self {
            dir: Some(dir),
            skills,
        };
        (registry, warnings)
    }
    // ANCHOR_END: scan

    /// The directory the skills came from, if one was scanned.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// All skills, in folder-name order.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill with exactly this name. Nothing else is matched: not a
    /// folder name, not a path, not a prefix.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// The names of all skills, comma-separated, for error messages.
    pub fn names(&self) -> String {
        if self.skills.is_empty() {
            return "(none)".to_string();
        }
        let names: Vec<&str> = self
            .skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect();
        names.join(", ")
    }

    // ANCHOR: catalog
    /// The catalog for the system prompt: one line per skill.
    pub fn catalog(&self) -> String {
        if self.skills.is_empty() {
            return "No skills are installed, so load_skill has nothing to load.".to_string();
        }
        let mut catalog = String::from("Skills available:\n");
        for skill in &self.skills {
            // A multi-line description becomes one line, so each skill
            // keeps to one line of the catalog.
            let description: Vec<&str> = skill.description.split_whitespace().collect();
            catalog.push_str(&format!("- {}: {}\n", skill.name, description.join(" ")));
        }
        catalog.push_str("Use load_skill to get full details when needed.");
        catalog
    }
    // ANCHOR_END: catalog
}

fn warning(path: &Path, problem: impl Into<String>) -> SkillWarning {
    SkillWarning {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// The warning for a second skill (its `manifest`) named like `first`.
fn name_taken(manifest: &Path, skill: &Skill, first: &Skill) -> SkillWarning {
    let problem = format!(
        "the name {:?} is already used by {}",
        skill.name,
        first.dir.join(MANIFEST).display()
    );
    warning(manifest, problem)
}

/// The sub-folders of `dir`, sorted by name, hidden ones left out.
/// Symlinked folders count: linking a skill in is a common way to install it.
fn skill_folders(dir: &Path, warnings: &mut Vec<SkillWarning>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            warnings.push(warning(dir, format!("cannot list the directory: {error}")));
            return Vec::new();
        }
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    folders
}

/// Why a skill folder was skipped; the warning shows the message.
#[derive(Debug, thiserror::Error)]
enum UnreadableSkill {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("it is not a regular file")]
    NotAFile,
    #[error("it is {0} bytes; the limit is {MAX_MANIFEST_BYTES}")]
    TooLarge(u64),
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
    #[error("cannot resolve its folder: {0}")]
    Folder(std::io::Error),
}

/// Reads one skill folder. `Ok(None)`: the folder has no `SKILL.md`.
fn read_skill(folder: &Path, manifest: &Path) -> Result<Option<Skill>, UnreadableSkill> {
    let metadata = match std::fs::metadata(manifest) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(UnreadableSkill::Read(error)),
    };
    if !metadata.is_file() {
        return Err(UnreadableSkill::NotAFile);
    }
    if metadata.len() > MAX_MANIFEST_BYTES {
        return Err(UnreadableSkill::TooLarge(metadata.len()));
    }
    let text = std::fs::read_to_string(manifest).map_err(UnreadableSkill::Read)?;
    let folder_name = folder
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let (front, body) = frontmatter::parse(&text, &folder_name)?;
    let dir = folder.canonicalize().map_err(UnreadableSkill::Folder)?;
    let files = list_files(&dir);
    Ok(Some(Skill {
        name: front.name,
        description: front.description.trim().to_string(),
        body: body.to_string(),
        files,
        dir,
    }))
}

/// The skill's files other than `SKILL.md`, relative to its folder.
///
/// Symlinks are not followed and hidden entries are skipped: the list is
/// what `load_skill` may read, so it holds only plain files that really
/// live in the skill's folder.
fn list_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), 1usize)];
    while let Some((folder, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < MAX_FILE_DEPTH {
                pending.push((path, depth + 1));
            } else if kind.is_file()
                && path != dir.join(MANIFEST)
                && let Some(relative) = relative_name(dir, &path)
            {
                files.push(relative);
            }
        }
    }
    files.sort();
    files.truncate(MAX_SKILL_FILES);
    files
}

/// `references/a.md` for `<dir>/references/a.md`; `None` if a component is
/// not valid UTF-8 (such a file could not be named in JSON anyway).
fn relative_name(dir: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(dir).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|component| component.as_os_str().to_str())
        .collect();
    Some(parts?.join("/"))
}
