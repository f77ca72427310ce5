//! The lesson crates: finding them under `crates/`, naming them on the
//! command line, and reading their files in the normalised form that diffs
//! and checks compare.
//!
//! Two lessons are compared after *normalisation*, so that the only
//! differences left are the ones a chapter has to explain:
//! - the crate's own name (`s01_agent_loop`) becomes [`PLACEHOLDER`] in
//!   paths and contents, since every lesson necessarily differs there;
//! - lines carrying mdBook anchors (`// ANCHOR: name`, `// ANCHOR_END: name`)
//!   are dropped: they are book markup, invisible in included code, and a
//!   chapter must be free to add one without breaking copy-forward.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The file in a lesson crate that lists its exercise (see
/// [`crate::exercise`]).
pub const EXERCISE_TOML: &str = "exercise.toml";

/// What a lesson's crate name is replaced with when two lessons are compared.
pub const PLACEHOLDER: &str = "sNN";

/// One lesson crate, `crates/sNN_name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    /// The lesson number, `NN`.
    pub number: u32,
    /// The crate (and directory) name, e.g. `s02_tool_use`.
    pub name: String,
    /// The crate directory.
    pub dir: PathBuf,
}

impl Lesson {
    /// `s02`, as the terminal and the book abbreviate the lesson.
    pub fn id(&self) -> String {
        format!("s{:02}", self.number)
    }

    /// The chapter's file name in `docs/src`, e.g. `s02_tool_use.md`.
    pub fn chapter_file(&self) -> String {
        format!("{}.md", self.name)
    }

    /// The generated page's path relative to `docs/src`.
    pub fn changes_file(&self) -> String {
        format!("changes/{}.md", self.name)
    }
}

impl fmt::Display for Lesson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Parses a directory name like `s02_tool_use` into its number.
pub fn lesson_number(dir_name: &str) -> Option<u32> {
    let rest = dir_name.strip_prefix('s')?;
    let (digits, name) = rest.split_once('_')?;
    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// Every lesson crate under `root/crates`, in lesson order.
pub fn discover(root: &Path) -> Result<Vec<Lesson>> {
    let crates = root.join("crates");
    let mut lessons = Vec::new();
    for entry in
        std::fs::read_dir(&crates).with_context(|| format!("reading {}", crates.display()))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(number) = lesson_number(&name) else {
            continue;
        };
        if entry.path().join("Cargo.toml").is_file() {
            lessons.push(Lesson {
                number,
                name,
                dir: entry.path(),
            });
        }
    }
    lessons.sort_by(|a, b| (a.number, &a.name).cmp(&(b.number, &b.name)));
    Ok(lessons)
}

/// The lesson before `lesson` in the chain, if any.
pub fn previous<'a>(lessons: &'a [Lesson], lesson: &Lesson) -> Option<&'a Lesson> {
    lessons
        .iter()
        .filter(|other| other.number < lesson.number)
        .max_by_key(|other| other.number)
}

/// Finds a lesson named on the command line: `s02`, `2`, `02`,
/// `s02_tool_use` or `crates/s02_tool_use`.
pub fn find<'a>(lessons: &'a [Lesson], wanted: &str) -> Result<&'a Lesson> {
    let wanted = wanted.trim_end_matches('/');
    let wanted = wanted.strip_prefix("crates/").unwrap_or(wanted);
    let number = wanted
        .strip_prefix('s')
        .unwrap_or(wanted)
        .split('_')
        .next()
        .and_then(|digits| digits.parse::<u32>().ok());
    let found = lessons.iter().find(|lesson| {
        lesson.name == wanted || (!wanted.contains('_') && Some(lesson.number) == number)
    });
    match found {
        Some(lesson) => Ok(lesson),
        None => {
            let known: Vec<String> = lessons.iter().map(Lesson::id).collect();
            bail!("no lesson {wanted:?}; the lessons are {}", known.join(", "))
        }
    }
}

/// A file of a lesson crate as it is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// UTF-8 text, normalised.
    Text(String),
    /// Anything else, compared byte for byte.
    Binary(Vec<u8>),
}

impl Content {
    /// The text, or `None` for binary files.
    pub fn text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            Content::Binary(_) => None,
        }
    }
}

/// Replaces the crate name and drops anchor lines (see the module header).
pub fn normalise(text: &str, crate_name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if is_anchor_line(line) {
            continue;
        }
        out.push_str(&line.replace(crate_name, PLACEHOLDER));
    }
    out
}

/// Whether mdBook would treat this line as an anchor marker
/// (`ANCHOR: name` or `ANCHOR_END: name`, anywhere in the line).
pub fn is_anchor_line(line: &str) -> bool {
    ["ANCHOR:", "ANCHOR_END:"].iter().any(|marker| {
        line.match_indices(marker).any(|(at, _)| {
            line[at + marker.len()..]
                .trim_start()
                .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-')
        })
    })
}

/// Whether a file inside a lesson crate is part of the lesson. Build output,
/// hidden files (runtime state such as `.tasks/`), editor backups and insta
/// snapshots are not: snapshots are test output, and the test that writes
/// them is compared already. Nor is `exercise.toml`: it describes the
/// lesson's exercise (see [`crate::exercise`]), not its code, and each
/// lesson has its own.
pub fn is_lesson_file(relative: &Path) -> bool {
    relative.components().all(|part| {
        let part = part.as_os_str().to_string_lossy();
        !(part.starts_with('.') || part == "target" || part == "snapshots")
    }) && !relative.to_string_lossy().ends_with(".rs.bk")
        && relative != Path::new(EXERCISE_TOML)
}

/// Every file of `lesson`, keyed by its normalised crate-relative path
/// (with `/` separators), with normalised contents.
pub fn files(lesson: &Lesson) -> Result<BTreeMap<String, Content>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![lesson.dir.clone()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            let relative = path.strip_prefix(&lesson.dir)?;
            if !is_lesson_file(relative) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let key = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
                .replace(&lesson.name, PLACEHOLDER);
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let content = match String::from_utf8(bytes) {
                Ok(text) => Content::Text(normalise(&text, &lesson.name)),
                Err(err) => Content::Binary(err.into_bytes()),
            };
            out.insert(key, content);
        }
    }
    Ok(out)
}

/// The Rust sources under `src/` of a crate directory, sorted by path.
pub fn rust_sources(crate_dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for path in files_with_extension(&crate_dir.join("src"), "rs")? {
        let relative = relative_path(crate_dir, &path);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        out.push((relative, text));
    }
    out.sort();
    Ok(out)
}

/// `path` relative to `root`, with `/` separators (the whole path if it is
/// not under `root`).
pub fn relative_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every file under `dir` (recursively) whose extension is `extension`,
/// in no particular order. A directory that cannot be read is skipped.
pub fn files_with_extension(dir: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    let mut out = all_files(dir)?;
    out.retain(|path| path.extension().is_some_and(|ext| ext == extension));
    Ok(out)
}

/// Every file under `dir` (recursively), in no particular order. A
/// directory that cannot be read is skipped.
pub fn all_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(number: u32, name: &str) -> Lesson {
        Lesson {
            number,
            name: name.into(),
            dir: PathBuf::from(name),
        }
    }

    #[test]
    fn lesson_numbers_come_from_the_directory_name() {
        assert_eq!(lesson_number("s02_tool_use"), Some(2));
        assert_eq!(lesson_number("s21_goal_loop"), Some(21));
        assert_eq!(lesson_number("s2_tool_use"), None);
        assert_eq!(lesson_number("s02"), None);
        assert_eq!(lesson_number("shared"), None);
    }

    #[test]
    fn lessons_are_found_by_any_usual_name() {
        let lessons = [lesson(1, "s01_agent_loop"), lesson(2, "s02_tool_use")];
        for name in ["s02", "2", "02", "s02_tool_use", "crates/s02_tool_use/"] {
            assert_eq!(find(&lessons, name).unwrap().number, 2, "{name}");
        }
        let err = find(&lessons, "s03").unwrap_err().to_string();
        assert!(err.contains("s01, s02"), "{err}");
        assert!(find(&lessons, "s02_other").is_err());
        assert_eq!(previous(&lessons, &lessons[1]), Some(&lessons[0]));
        assert_eq!(previous(&lessons, &lessons[0]), None);
    }

    #[test]
    fn normalising_replaces_the_crate_name_and_drops_anchor_lines() {
        let text = "use s01_agent_loop::X;\n// ANCHOR: run\nfn run() {}\n    // ANCHOR_END: run\n";
        assert_eq!(
            normalise(text, "s01_agent_loop"),
            "use sNN::X;\nfn run() {}\n"
        );
        assert!(!is_anchor_line("let s = \"ANCHOR:\";\n"));
        assert!(is_anchor_line("<!-- ANCHOR:intro -->"));
    }
}
