//! `cargo xtask carry sNN`: a fix made in the lesson that introduced a
//! mechanism, applied to every later lesson.
//!
//! The chain's rule (ARCHITECTURE.md, "Copy forward") is that a fix is made
//! once, where the mechanism was introduced, and carried to every lesson
//! after it. This module does the carrying, so the rule costs one edit:
//!
//! 1. The *change* is the difference, inside `crates/sNN_*`, between a
//!    revision (`HEAD`, or `--from REV`) and the working tree: files edited,
//!    added and deleted (git's view, renames as a delete and an add), limited
//!    to what the lessons share: `src/`, `tests/`, `demo.json` and
//!    `Cargo.toml`. Runtime state (hidden folders) and pending insta
//!    snapshots (`*.snap.new`) are never carried.
//! 2. Each later lesson, in order, gets each changed file by a three-way
//!    merge: *base* is sNN's file before the change, *theirs* sNN's file
//!    after it, *ours* that lesson's file. A lesson whose copy is still
//!    identical to the base gets the new file as it is; one that changed the
//!    file keeps its change and gains the fix (`git merge-file`, the merge
//!    git itself does, so conflicts look as they do in any git merge). All
//!    three are compared with the crate name replaced by a placeholder, so
//!    `s12_task_system` in sNN's file becomes `s16_autonomous_agents` in
//!    lesson 16's.
//! 3. An added file is added where the lesson has none; a lesson that has
//!    one already (and not this one) is a conflict. A deleted file is
//!    deleted where the lesson's copy is identical to the base; a lesson
//!    that changed it is a conflict, left for a person to decide.
//! 4. The first lesson with a conflict is written (markers in the files that
//!    conflict, the clean merges beside them) and the carry stops there:
//!    nothing after it is touched. Once the conflict is resolved, that
//!    lesson's uncommitted changes hold the carried fix, so
//!    `cargo xtask carry sMM` from it continues the carry.
//! 5. After a carry that finished, the generated pages are written again
//!    (as `cargo xtask docs` would), and the chapters that include a region
//!    of a carried file whose text changed are listed for a person to read:
//!    carry never edits prose.
//!
//! The later lessons must have no uncommitted changes of their own when the
//! carry starts: they would be mixed into the fix when a conflict is
//! continued from them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::i18n;
use crate::lessons::{self, Lesson};
use crate::markdown::{self, Selector};

/// What stands for a lesson's crate name while files of two lessons are
/// merged: nothing in a lesson spells it, so putting the name back is exact.
const CRATE_TOKEN: &str = "__xtask_carry_crate_name__";

/// What a carry is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// List what would change, write nothing.
    pub dry_run: bool,
    /// Carry the difference between this revision and the working tree
    /// instead of the uncommitted changes (the difference from `HEAD`).
    pub from: Option<String>,
}

/// One file of the change: its crate-relative path and both versions, with
/// the source lesson's crate name replaced by [`CRATE_TOKEN`].
#[derive(Debug, Clone)]
struct Changed {
    path: String,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
}

/// What happened (or, on a dry run, would happen) to one file of one lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The lesson's copy was the old file: it is now the new one.
    Replaced,
    /// The lesson had changed the file: the fix was merged into its version.
    Merged,
    /// The file is new to the lesson.
    Added,
    /// The lesson's copy was the old file, which the fix deletes.
    Deleted,
    /// The lesson already has the fix (its file is the new one, or the file
    /// it deletes is not there).
    AlreadyThere,
    /// The lesson has no such file to change: nothing to do.
    Absent,
    /// The fix and the lesson's own change overlap; `why` says how.
    Conflict(String),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Replaced => f.write_str("replaced (was identical)"),
            Action::Merged => f.write_str("merged (three-way)"),
            Action::Added => f.write_str("added"),
            Action::Deleted => f.write_str("deleted (was identical)"),
            Action::AlreadyThere => f.write_str("already carried"),
            Action::Absent => f.write_str("not in this lesson: left alone"),
            Action::Conflict(why) => write!(f, "CONFLICT: {why}"),
        }
    }
}

/// One file of one lesson and what the carry did to it.
#[derive(Debug, Clone)]
pub struct Step {
    /// The lesson's crate name.
    pub lesson: String,
    /// Repository-relative path, e.g. `crates/s13_background_tasks/src/board.rs`.
    pub path: String,
    pub action: Action,
}

/// Everything a carry did, for the terminal and for tests.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The files of the source lesson that were carried (crate-relative).
    pub changed: Vec<String>,
    /// Per lesson and file, in the order they were carried.
    pub steps: Vec<Step>,
    /// The lesson where a conflict stopped the carry.
    pub stopped_at: Option<String>,
    /// The generated pages written after a carry that finished.
    pub regenerated: Vec<String>,
    /// Chapters to read again: an include of a carried file whose text
    /// changed, `docs/src/s12_task_system.md:40: includes … which changed`.
    pub to_review: Vec<String>,
}

impl Report {
    /// Whether the carry stopped at a conflict.
    pub fn conflicted(&self) -> bool {
        self.stopped_at.is_some()
    }

    /// The report as the terminal shows it.
    pub fn render(&self, dry_run: bool) -> String {
        let mut out = String::new();
        if self.changed.is_empty() {
            out.push_str("nothing to carry: the lesson has no changes in src/, tests/, demo.json or Cargo.toml\n");
            return out;
        }
        out.push_str(&format!("carrying {}:\n", self.changed.join(", ")));
        let mut lesson = "";
        for step in &self.steps {
            if step.lesson != lesson {
                lesson = &step.lesson;
                out.push_str(&format!("{lesson}\n"));
            }
            let verb = if dry_run { "would be " } else { "" };
            let action = match &step.action {
                Action::Conflict(_) | Action::AlreadyThere | Action::Absent => {
                    step.action.to_string()
                }
                other => format!("{verb}{other}"),
            };
            out.push_str(&format!("  {}: {action}\n", step.path));
        }
        if let Some(lesson) = &self.stopped_at {
            let files: Vec<&str> = self
                .steps
                .iter()
                .filter(|s| s.lesson == *lesson && matches!(s.action, Action::Conflict(_)))
                .map(|s| s.path.as_str())
                .collect();
            if dry_run {
                out.push_str(&format!(
                    "the carry would stop at {lesson}, on a conflict in {}\n",
                    files.join(", ")
                ));
            } else {
                out.push_str(&format!(
                    "stopped at {lesson}: conflict in {}. Nothing after {lesson} was touched.\n\
                     Resolve the conflict markers (or decide the deletion) in {lesson}, then run \
                     `cargo xtask carry {id}` to carry on from there.\n",
                    files.join(", "),
                    id = lessons::lesson_number(lesson)
                        .map(|n| format!("s{n:02}"))
                        .unwrap_or_else(|| lesson.clone()),
                ));
            }
        }
        for path in &self.regenerated {
            out.push_str(&format!("wrote {path}\n"));
        }
        if !self.to_review.is_empty() {
            out.push_str("read these chapters again (carry never edits prose):\n");
            for line in &self.to_review {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}

/// Carries the change of `source` (see the module header) to every later
/// lesson of the repository at `root`.
pub fn carry(root: &Path, source: &str, options: &Options) -> Result<Report> {
    let all = lessons::discover(root)?;
    let source = lessons::find(&all, source)?;
    let later: Vec<&Lesson> = all.iter().filter(|l| l.number > source.number).collect();
    let rev = options.from.as_deref().unwrap_or("HEAD");
    git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .with_context(|| format!("{rev} is not a revision of this repository"))?;
    if !options.dry_run {
        for lesson in &later {
            let dirty = git(root, &["status", "--porcelain", "--", &crate_dir(lesson)])?;
            if !dirty.trim().is_empty() {
                bail!(
                    "{lesson} has uncommitted changes of its own; commit or stash them first, \
                     so that what is carried is the fix and nothing else:\n{dirty}"
                );
            }
        }
    }
    let changed = change(root, source, rev)?;
    let mut report = Report {
        changed: changed.iter().map(|c| c.path.clone()).collect(),
        ..Report::default()
    };
    if changed.is_empty() {
        return Ok(report);
    }
    // The included text of every changed file before the carry, to tell
    // afterwards which chapters show something that changed.
    let before = included_texts(root)?;
    let mut touched = vec![source.name.clone()];
    for lesson in later {
        let mut conflicted = false;
        for file in &changed {
            let (action, result) = carry_file(root, lesson, file)?;
            conflicted |= matches!(action, Action::Conflict(_));
            let path = format!("{}/{}", crate_dir(lesson), file.path);
            if !options.dry_run {
                apply(root, &path, lesson, result)?;
            }
            report.steps.push(Step {
                lesson: lesson.name.clone(),
                path,
                action,
            });
        }
        touched.push(lesson.name.clone());
        if conflicted {
            report.stopped_at = Some(lesson.name.clone());
            return Ok(report);
        }
    }
    if options.dry_run {
        return Ok(report);
    }
    report.regenerated = crate::docs::generate(root)?;
    let after = included_texts(root)?;
    for (key, text) in &after {
        let (page, line, target) = key;
        let lesson_of_target = touched
            .iter()
            .any(|name| target.starts_with(&format!("crates/{name}/")));
        if lesson_of_target && before.get(key) != Some(text) {
            report
                .to_review
                .push(format!("{page}:{line}: includes {target}, which changed"));
        }
    }
    Ok(report)
}

/// What to write for one file of one lesson.
enum Outcome {
    Leave,
    Write(Vec<u8>),
    Remove,
}

/// Decides one file of one lesson, and the bytes to write (with the
/// lesson's own crate name put back).
fn carry_file(root: &Path, lesson: &Lesson, file: &Changed) -> Result<(Action, Outcome)> {
    let full = lesson.dir.join(&file.path);
    let ours = match std::fs::read(&full) {
        Ok(bytes) => Some(tokenise(bytes, &lesson.name)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err).with_context(|| format!("reading {}", full.display())),
    };
    let write = |bytes: &[u8]| Outcome::Write(untokenise(bytes, &lesson.name));
    Ok(match (&file.before, &file.after, &ours) {
        // Edited in the source lesson.
        (Some(_), Some(_), None) => (Action::Absent, Outcome::Leave),
        (Some(base), Some(new), Some(ours)) => {
            if ours == new {
                (Action::AlreadyThere, Outcome::Leave)
            } else if ours == base {
                (Action::Replaced, write(new))
            } else {
                let label = format!("{} ({})", lesson.name, file.path);
                match merge(root, base, ours, new, &label)? {
                    Merge::Clean(bytes) => (Action::Merged, write(&bytes)),
                    Merge::Conflict(bytes) => (
                        Action::Conflict(format!(
                            "{} changed the same lines; conflict markers written",
                            lesson.name
                        )),
                        write(&bytes),
                    ),
                }
            }
        }
        // Added in the source lesson.
        (None, Some(new), None) => (Action::Added, write(new)),
        (None, Some(new), Some(ours)) if ours == new => (Action::AlreadyThere, Outcome::Leave),
        (None, Some(new), Some(ours)) => {
            let label = format!("{} ({})", lesson.name, file.path);
            let bytes = match merge(root, &[], ours, new, &label)? {
                Merge::Clean(bytes) | Merge::Conflict(bytes) => bytes,
            };
            (
                Action::Conflict(format!(
                    "the fix adds this file, but {} has one of its own; conflict markers written",
                    lesson.name
                )),
                write(&bytes),
            )
        }
        // Deleted in the source lesson.
        (Some(_), None, None) => (Action::AlreadyThere, Outcome::Leave),
        (Some(base), None, Some(ours)) if ours == base => (Action::Deleted, Outcome::Remove),
        (Some(_), None, Some(_)) => (
            Action::Conflict(format!(
                "the fix deletes this file, but {} changed it: delete it or keep it by hand",
                lesson.name
            )),
            Outcome::Leave,
        ),
        (None, None, _) => (Action::AlreadyThere, Outcome::Leave),
    })
}

fn apply(root: &Path, path: &str, lesson: &Lesson, outcome: Outcome) -> Result<()> {
    let full = root.join(path);
    match outcome {
        Outcome::Leave => {}
        Outcome::Write(bytes) => {
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&full, bytes).with_context(|| format!("writing {}", full.display()))?;
        }
        Outcome::Remove => {
            std::fs::remove_file(&full)
                .with_context(|| format!("removing {} from {lesson}", full.display()))?;
        }
    }
    Ok(())
}

enum Merge {
    Clean(Vec<u8>),
    Conflict(Vec<u8>),
}

/// `git merge-file`: the three-way merge git does, with standard conflict
/// markers labelled by the lesson, the old fix and the new fix.
fn merge(root: &Path, base: &[u8], ours: &[u8], theirs: &[u8], label: &str) -> Result<Merge> {
    let dir = tempfile::tempdir()?;
    let [ours_path, base_path, theirs_path] =
        ["ours", "base", "theirs"].map(|name| dir.path().join(name));
    std::fs::write(&ours_path, ours)?;
    std::fs::write(&base_path, base)?;
    std::fs::write(&theirs_path, theirs)?;
    let output = Command::new("git")
        .current_dir(root)
        .args([
            "merge-file",
            "-p",
            "-L",
            label,
            "-L",
            "before the fix",
            "-L",
            "the fix",
        ])
        .args([&ours_path, &base_path, &theirs_path])
        .output()
        .context("running git merge-file (is git installed?)")?;
    // Its status is the number of conflicts, negative (255 here) on error.
    match output.status.code() {
        Some(0) => Ok(Merge::Clean(output.stdout)),
        Some(n) if (1..=127).contains(&n) => Ok(Merge::Conflict(output.stdout)),
        _ => bail!(
            "git merge-file failed on {label}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    }
}

/// The change of `source` since `rev`, file by file, limited to what the
/// lessons share (see the module header).
fn change(root: &Path, source: &Lesson, rev: &str) -> Result<Vec<Changed>> {
    let dir = crate_dir(source);
    let mut paths: Vec<String> = Vec::new();
    let diff = git(
        root,
        &["diff", "--no-renames", "--name-only", "-z", rev, "--", &dir],
    )?;
    let untracked = git(
        root,
        &[
            "ls-files",
            "--others",
            "--exclude-standard",
            "-z",
            "--",
            &dir,
        ],
    )?;
    for path in diff.split('\0').chain(untracked.split('\0')) {
        let Some(relative) = path.strip_prefix(&format!("{dir}/")) else {
            continue;
        };
        if is_carried(relative) && !paths.iter().any(|p| p == relative) {
            paths.push(relative.to_string());
        }
    }
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let before = show(root, rev, &format!("{dir}/{path}"))?;
        let after = match std::fs::read(source.dir.join(&path)) {
            Ok(bytes) => Some(bytes),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(err).with_context(|| format!("reading {dir}/{path}")),
        };
        if before == after {
            continue;
        }
        out.push(Changed {
            path,
            before: before.map(|b| tokenise(b, &source.name)),
            after: after.map(|b| tokenise(b, &source.name)),
        });
    }
    Ok(out)
}

/// Whether a crate-relative path is part of what lessons share.
fn is_carried(relative: &str) -> bool {
    // Insta's accepted snapshots are carried (a fix may change what a test
    // records); its pending ones (`.snap.new`) are not.
    let snapshot = relative.starts_with("tests/")
        && relative.contains("/snapshots/")
        && relative.ends_with(".snap");
    let shared = relative.starts_with("src/")
        || relative.starts_with("tests/")
        || relative == "demo.json"
        || relative == "Cargo.toml";
    snapshot || shared && lessons::is_lesson_file(Path::new(relative))
}

/// A file at a revision, or `None` when the revision has no such file.
fn show(root: &Path, rev: &str, path: &str) -> Result<Option<Vec<u8>>> {
    let output = Command::new("git")
        .current_dir(root)
        .args(["cat-file", "blob", &format!("{rev}:{path}")])
        .output()
        .context("running git")?;
    Ok(output.status.success().then_some(output.stdout))
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .current_dir(root)
        .args(args)
        .output()
        .context("running git (is git installed?)")?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `crates/sNN_name`, the lesson's repository-relative directory.
fn crate_dir(lesson: &Lesson) -> String {
    format!("crates/{}", lesson.name)
}

fn tokenise(bytes: Vec<u8>, crate_name: &str) -> Vec<u8> {
    replace(bytes, crate_name.as_bytes(), CRATE_TOKEN.as_bytes())
}

fn untokenise(bytes: &[u8], crate_name: &str) -> Vec<u8> {
    replace(
        bytes.to_vec(),
        CRATE_TOKEN.as_bytes(),
        crate_name.as_bytes(),
    )
}

/// Replaces every `from` in `bytes` with `to` (bytes, so a binary file
/// passes through untouched unless it spells the name).
fn replace(bytes: Vec<u8>, from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || !bytes.windows(from.len()).any(|w| w == from) {
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at..].starts_with(from) {
            out.extend_from_slice(to);
            at += from.len();
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    out
}

/// Every include of a lesson file in a hand-written page of every edition,
/// keyed by (page, line, included path with its selector), with the text
/// it takes today.
fn included_texts(root: &Path) -> Result<BTreeMap<(String, usize, String), String>> {
    let mut out = BTreeMap::new();
    for edition in i18n::editions(root) {
        let src = root.join(edition.src());
        for page in lessons::files_with_extension(&src, "md")? {
            let relative = lessons::relative_path(root, &page);
            if relative.contains("/changes/") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&page) else {
                continue;
            };
            let page_dir = page.parent().unwrap_or(root);
            for include in markdown::includes(&text) {
                let target = page_dir.join(&include.path);
                let target = std::fs::canonicalize(&target).unwrap_or(target);
                let shown = lessons::relative_path(
                    &std::fs::canonicalize(root).unwrap_or(root.to_path_buf()),
                    &target,
                );
                if !shown.starts_with("crates/") {
                    continue;
                }
                let content = std::fs::read_to_string(&target).unwrap_or_default();
                let (text, label) = match &include.selector {
                    Selector::All => (content, shown),
                    Selector::Anchor(name) => (anchored(&content, name), format!("{shown}:{name}")),
                    Selector::Lines(start, end) => {
                        let lines: Vec<&str> = content.lines().collect();
                        let from = start.unwrap_or(1).saturating_sub(1).min(lines.len());
                        let to = end.unwrap_or(lines.len()).min(lines.len()).max(from);
                        (lines[from..to].join("\n"), shown)
                    }
                };
                out.insert((relative.clone(), include.line, label), text);
            }
        }
    }
    Ok(out)
}

/// The lines between `ANCHOR: name` and `ANCHOR_END: name`.
fn anchored(content: &str, name: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in content.lines() {
        if marker(line, "ANCHOR_END:") == Some(name) {
            inside = false;
        } else if marker(line, "ANCHOR:") == Some(name) {
            inside = true;
        } else if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn marker<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_name_round_trips_through_the_token() {
        let text = b"use s12_task_system::x; // s12_task_system\n".to_vec();
        let tokenised = tokenise(text, "s12_task_system");
        assert!(!String::from_utf8_lossy(&tokenised).contains("s12"));
        assert_eq!(
            untokenise(&tokenised, "s16_autonomous_agents"),
            b"use s16_autonomous_agents::x; // s16_autonomous_agents\n"
        );
    }

    #[test]
    fn only_what_lessons_share_is_carried() {
        for yes in [
            "src/lib.rs",
            "src/board/mod.rs",
            "tests/it/board.rs",
            "tests/it/snapshots/it__offered_tools__tools.snap",
            "demo.json",
            "Cargo.toml",
        ] {
            assert!(is_carried(yes), "{yes}");
        }
        for no in [
            ".tasks/1.json",
            "src/.tasks/1.json",
            "tests/it/snapshots/it__x.snap.new",
            "target/debug/x",
            "README.md",
        ] {
            assert!(!is_carried(no), "{no}");
        }
    }

    #[test]
    fn anchored_text_is_what_the_book_includes() {
        let file = "a\n// ANCHOR: run\nb\nc\n// ANCHOR_END: run\nd\n";
        assert_eq!(anchored(file, "run"), "b\nc\n");
        assert_eq!(anchored(file, "other"), "");
    }
}
