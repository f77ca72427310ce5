//! `cargo xtask check`: everything that keeps the book and the lessons
//! honest, without building the book (so it needs no mdBook). Each problem
//! names its file and the fix.
//!
//! The rules:
//! 1. Generated pages (`SUMMARY.md`, `lessons.md`, `changes/*.md`) equal what
//!    `cargo xtask docs` would write now; `changes/` holds no page of a
//!    lesson that is gone. The pages list each lesson's tools from its
//!    snapshot `tests/it/snapshots/it__offered_tools__tools.snap` (what
//!    `tests/it/offered_tools.rs` recorded the lesson sending, see
//!    [`crate::tools`]), so a missing or unreadable snapshot is reported,
//!    with the command that writes it.
//! 2. Every lesson crate `crates/sNN_name` has a chapter
//!    `docs/src/sNN_name.md`, and every `docs/src/sNN_*.md` has a crate.
//! 3. In every hand-written page, each `{{#include}}` (`rustdoc_include`,
//!    `playground`) resolves, relative to the page: the file exists; an
//!    anchor has both `ANCHOR: name` and `ANCHOR_END: name` in it; a line
//!    range lies inside it.
//! 4. Each relative link or image resolves to a file under `docs/src` (a
//!    file outside it is not in the built book); a `#fragment` names a
//!    heading of the target page.
//! 5. Each `cargo run -p CRATE -- FLAGS` in a shell block names a lesson
//!    crate and only flags that lesson accepts (see [`crate::flags`]); each
//!    `cargo xtask diff` names existing lessons.
//! 6. Copy-forward: every file outside `tests/` that differs between lesson
//!    N-1 and lesson N (after normalisation, see [`crate::lessons`]) or
//!    exists in only one is mentioned in chapter N by its crate-relative path
//!    (`src/dispatch.rs`). A mention counts standing alone or right after
//!    `crates/<lesson>/`, as in an include path; `shared/src/hooks.rs` is not
//!    a mention of `src/hooks.rs`. Tests are left to rule 7: inherited test
//!    modules may not differ at all, and the wiring files differ by design.
//! 7. Inherited tests: a lesson's tests are one binary, `tests/it/main.rs`,
//!    with one module per mechanism (`tests/it/dispatch.rs`) and the
//!    lesson's own wiring (`tests/it/support.rs`, `tests/it/demo.rs`, or
//!    `support/` and `demo/` directories). Every file under `tests/it/` of
//!    lesson N-1 except that wiring, `main.rs` and `snapshots/` (insta
//!    output) exists in lesson N byte for byte, with no normalisation; so
//!    such a file must not name its crate (`s05_todo_write`): only `main.rs`
//!    may, as `extern crate s05_todo_write as lesson;` and in `BIN`. A
//!    lesson without `tests/it/` is still on the old layout and is skipped.
//! 8. One test binary: a lesson with `tests/it/main.rs` has no other test
//!    target in `tests/` (a top-level `tests/*.rs`, or another
//!    `tests/*/main.rs`), since cargo builds each as a binary of its own;
//!    and a `tests/it/` directory has a `main.rs`.
//! 9. Descriptions: the `description` in a lesson's `Cargo.toml` starts
//!    with `Lesson N:` for the lesson's own number N (a copied lesson keeps
//!    the number of the one it was copied from until someone changes it).
//! 10. New dependencies: in chapter N, the bullet that starts with
//!     ``- `Cargo.toml` `` (with the indented lines that continue it) names
//!     no dependency as new that lesson N-1 already had. Every code span in
//!     it that is a dependency of lesson N (in `[dependencies]` or
//!     `[dev-dependencies]`, see [`crate::manifest`]) must be added or moved
//!     there: lesson N-1 must lack it in at least one section where lesson N
//!     has it. Other names (files, features, a dependency the lesson drops,
//!     one the root workspace gains) are not dependencies of lesson N and
//!     pass.
//! 11. Translations (see [`crate::i18n`]): for every edition besides
//!     English (`docs/zh`, `docs/ja`), every hand-written page of `docs/src`
//!     has a translation of the same name; its line 1 records the English
//!     file and that file's current SHA-256 (else it is stale, and the
//!     problem says how to see the English change and re-stamp); a current
//!     translation has the same `{{#include}}` directives, the same code
//!     blocks and every heading id of its English page; the edition has
//!     its own pages (the glossary) and no page that translates nothing;
//!     the language switcher lists every edition. Rules 3–5 apply to the
//!     translated pages as to the English ones, and rule 1 to the
//!     generated pages of every edition.
//! 12. The code map: every `.rs` file under `shared/src` and `xtask/src`
//!     (see [`MAPPED_SOURCES`]) is named in `ARCHITECTURE.md`, by an
//!     indented line under the line that is that folder alone
//!     (`shared/src/`), starting with the file's path relative to it
//!     (`cli/repl.rs`); the block ends at the first line that is not
//!     indented (see [`map_entries`]). An entry under one folder does not
//!     name a file of the other (`lib.rs` is in both). An entry ending in
//!     `.rs` that is no file is reported too, so the map stays true when
//!     a module is removed or renamed.
//! 13. Counts: in chapter N, "N methods" said of a trait the paragraph names
//!     in a code span (one of the lesson's or `shared`'s) is that trait's
//!     number of methods, and "N new tools" is the number of tools lesson N
//!     offers that lesson N-1 did not (by their snapshots, see rule 1); see
//!     [`crate::claims`].
//! 14. Terms: in every translation, no hand-written page uses, outside code
//!     spans and code blocks, a variant its glossary forbids (the table
//!     under `{#forbidden}`, see [`crate::terms`]); each use is reported
//!     with its line and what to write instead.
//! 15. No import circles: in every crate of the workspace (`shared`,
//!     `xtask`, each lesson, each example), no files take names from each
//!     other in a loop, by `use` or by a path written inline; a re-export
//!     alone, a reference up to an ancestor module and test-only code are
//!     no import. See [`crate::circles`].
//! 16. Typed errors: no `Result<T, String>` and no `Box<dyn Error>` in
//!     `shared/src` or a lesson's `src/` outside `#[cfg(test)]`; library
//!     code says which failure it was with an error type of its own. See
//!     [`crate::error_types`].
//! 17. Exercises: the `// ANCHOR: exercise-sNN-name` markers in `shared/src`
//!     and the lessons' `src/` are paired, each region is whole statements
//!     ending a block inside a function body, and they match each lesson's
//!     `exercise.toml` (regions, todo lines, hints, graded modules). See
//!     [`crate::exercise::rules`].

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::circles;
use crate::claims::{self, Subject};
use crate::diff;
use crate::error_types;
use crate::flags::Flags;
use crate::i18n::{self, BOOK_SRC, Edition, State};
use crate::lessons::{self, Lesson};
use crate::manifest::Manifest;
use crate::markdown::{self, Selector};
use crate::pages;
use crate::shell::{self, Cargo};
use crate::terms;

pub use crate::problem::Problem;
use crate::tools;

fn problem(place: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        place: place.into(),
        message: message.into(),
    }
}

/// Runs every check on the repository at `root`.
pub fn run(root: &Path) -> Result<Vec<Problem>> {
    let lessons = lessons::discover(root)?;
    let generated = pages::render_all(root)?;
    let mut problems = Vec::new();
    generated_pages(root, &generated, &mut problems)?;
    tool_snapshots(&lessons, &mut problems);
    chapters(root, &lessons, &mut problems)?;
    // Flags every lesson has, from `shared` (its `CommonArgs`).
    let mut shared_flags = Flags::default();
    shared_flags.scan(&lessons::rust_sources(&root.join("shared"))?);
    let editions = i18n::editions(root);
    for edition in &editions {
        let changes_dir = format!("{}/changes/", edition.src());
        for (path, text) in &book_pages(root, edition)? {
            // Generated pages (and leftovers in their directory, reported above)
            // are not hand-written.
            if generated.contains_key(path) || path.starts_with(&changes_dir) {
                continue;
            }
            includes(root, path, text, &mut problems);
            links(root, edition, path, text, &generated, &mut problems);
            commands(path, text, &lessons, &shared_flags, &mut problems)?;
        }
    }
    // Links inside generated pages are checked as they will be written.
    for (path, text) in &generated {
        if let Some(edition) = editions
            .iter()
            .find(|e| path.starts_with(&format!("{}/", e.src())))
        {
            links(root, edition, path, text, &generated, &mut problems);
        }
    }
    translations(root, &editions, &mut problems)?;
    copy_forward(root, &lessons, &mut problems)?;
    inherited_tests(&lessons, &mut problems)?;
    one_test_binary(&lessons, &mut problems)?;
    let manifests = manifests(&lessons)?;
    descriptions(&lessons, &manifests, &mut problems);
    new_dependencies(root, &lessons, &manifests, &mut problems);
    code_map(root, &mut problems)?;
    counts(root, &lessons, &mut problems)?;
    // Rule 14.
    problems.extend(terms::problems(root, &editions)?);
    // Rule 15.
    import_circles(root, &mut problems)?;
    // Rule 16.
    untyped_errors(root, &mut problems)?;
    // Rule 17.
    problems.extend(crate::exercise::rules::problems(root, &lessons)?);
    Ok(problems)
}

/// Rule 1.
fn generated_pages(
    root: &Path,
    generated: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) -> Result<()> {
    for (path, why) in pages::stale(root, generated) {
        problems.push(problem(path, format!("{why}: run `cargo xtask docs`")));
    }
    for path in pages::orphans(root, generated)? {
        problems.push(problem(
            path,
            "belongs to no lesson crate: run `cargo xtask docs` (it removes the page)",
        ));
    }
    Ok(())
}

/// Rule 1: the snapshots the pages take the tools from.
fn tool_snapshots(lessons: &[Lesson], problems: &mut Vec<Problem>) {
    for lesson in lessons {
        if let Err(why) = tools::offered(lesson) {
            problems.push(problem(
                format!("crates/{}/{}", lesson.name, tools::SNAPSHOT),
                format!(
                    "{why}, so the book cannot list the tools {} offers: run `{}` (the test is tests/it/offered_tools.rs, the same in every lesson), check the snapshot, then run `cargo xtask docs`",
                    lesson.name,
                    tools::update_command(lesson)
                ),
            ));
        }
    }
}

/// Rule 2.
fn chapters(root: &Path, lessons: &[Lesson], problems: &mut Vec<Problem>) -> Result<()> {
    let src = root.join(BOOK_SRC);
    for lesson in lessons {
        if !src.join(lesson.chapter_file()).is_file() {
            problems.push(problem(
                format!("crates/{}", lesson.name),
                format!("has no chapter: write {BOOK_SRC}/{}", lesson.chapter_file()),
            ));
        }
    }
    let Ok(entries) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    for name in names {
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if lessons::lesson_number(stem).is_some() && !lessons.iter().any(|l| l.name == stem) {
            problems.push(problem(
                format!("{BOOK_SRC}/{name}"),
                format!(
                    "has no lesson crate crates/{stem}: name the chapter after its crate ({}) or remove it",
                    lessons
                        .iter()
                        .map(Lesson::chapter_file)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every markdown file of an edition (`docs/src`, `docs/zh`, …):
/// repository-relative path → text.
fn book_pages(root: &Path, edition: &Edition) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for path in lessons::files_with_extension(&root.join(edition.src()), "md")? {
        out.insert(
            lessons::relative_path(root, &path),
            std::fs::read_to_string(&path)?,
        );
    }
    Ok(out)
}

/// `base/../x` → `x`, without touching the file system.
fn join_lexically(base: &Path, link: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(link).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The directory of a repository-relative page, as a repository-relative path.
fn page_dir(page: &str) -> PathBuf {
    Path::new(page)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Rule 3.
fn includes(root: &Path, page: &str, text: &str, problems: &mut Vec<Problem>) {
    for include in markdown::includes(text) {
        let place = format!("{page}:{}", include.line);
        let target = join_lexically(&page_dir(page), &include.path);
        let shown = target.to_string_lossy().into_owned();
        let Ok(content) = std::fs::read_to_string(root.join(&target)) else {
            problems.push(problem(
                place,
                format!(
                    "{{{{#include {}}}}}: no such file {shown}: fix the path (it is relative to the page)",
                    include.path
                ),
            ));
            continue;
        };
        match include.selector {
            // mdBook strips anchor lines from an anchored include only: a
            // whole file would show its exercise markers (rule 17).
            Selector::All => {
                if let Some(line) = content
                    .lines()
                    .find(|line| crate::exercise::is_marker(line))
                {
                    problems.push(problem(
                        place,
                        format!(
                            "{shown} is included whole, so the book would show its exercise marker `{}`: include an anchored part of it, or move the region",
                            line.trim()
                        ),
                    ));
                }
            }
            Selector::Anchor(name) => {
                let has = |marker: &str| {
                    content
                        .lines()
                        .any(|line| anchor_in(line, marker) == Some(&*name))
                };
                if !has("ANCHOR:") {
                    problems.push(problem(
                        place,
                        format!(
                            "{shown} has no `ANCHOR: {name}`: put `// ANCHOR: {name}` and `// ANCHOR_END: {name}` around the code to show, or fix the name"
                        ),
                    ));
                } else if !has("ANCHOR_END:") {
                    problems.push(problem(
                        place,
                        format!(
                            "{shown} has `ANCHOR: {name}` but no `ANCHOR_END: {name}`: add it where the snippet ends"
                        ),
                    ));
                }
            }
            Selector::Lines(start, end) => {
                let count = content.lines().count();
                let bad = [start, end]
                    .into_iter()
                    .flatten()
                    .any(|n| n == 0 || n > count)
                    || matches!((start, end), (Some(s), Some(e)) if s > e);
                if bad {
                    problems.push(problem(
                        place,
                        format!(
                            "line range {}:{} is outside {shown} ({count} lines): fix the range, or use an anchor, which follows edits",
                            start.map(|n| n.to_string()).unwrap_or_default(),
                            end.map(|n| n.to_string()).unwrap_or_default()
                        ),
                    ));
                }
            }
        }
    }
}

/// The anchor name a line declares with `marker` (mdBook's reading).
fn anchor_in<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.match_indices(marker).find_map(|(at, _)| {
        let rest = line[at + marker.len()..].trim_start();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// Rule 4.
fn links(
    root: &Path,
    edition: &Edition,
    page: &str,
    text: &str,
    generated: &BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    for link in markdown::links(text) {
        let dest = link.dest.as_str();
        let external =
            dest.contains("://") || dest.starts_with("mailto:") || dest.starts_with("//");
        if external || dest.is_empty() {
            continue;
        }
        let place = format!("{page}:{}", link.line);
        if dest.starts_with('/') {
            problems.push(problem(
                place,
                format!("link to {dest}: an absolute path breaks when the book is served under a prefix: make it relative to the page"),
            ));
            continue;
        }
        let (file, fragment) = match dest.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (dest, None),
        };
        let file = file.replace("%20", " ");
        let target = if file.is_empty() {
            PathBuf::from(page)
        } else {
            join_lexically(&page_dir(page), &file)
        };
        // mdBook serves `x.md` as `x.html`; both spellings link to the page.
        let target = match target.extension() {
            Some(ext) if ext == "html" => target.with_extension("md"),
            _ => target,
        };
        let shown = lessons::relative_path(Path::new(""), &target);
        let book = edition.src();
        if !target.starts_with(&book) {
            problems.push(problem(
                place,
                format!("link to {dest}: {shown} is outside {book}, so the built book does not have it: show code with {{{{#include}}}}, or link to a page of the book"),
            ));
            continue;
        }
        let generated_text = generated.get(&shown);
        if generated_text.is_none() && !root.join(&target).exists() {
            // A page the English book has and this edition lacks is a
            // missing translation, which rule 11 reports once.
            if !edition.is_english()
                && let Ok(inside) = target.strip_prefix(&book)
                && root.join(BOOK_SRC).join(inside).exists()
            {
                continue;
            }
            problems.push(problem(
                place,
                format!("link to {dest}: no such file {shown}: fix the link (it is relative to the page)"),
            ));
            continue;
        }
        let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
            continue;
        };
        if target.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        let target_text = match generated_text {
            Some(text) => text.clone(),
            None => std::fs::read_to_string(root.join(&target)).unwrap_or_default(),
        };
        if !markdown::heading_ids(&target_text).contains(fragment) {
            problems.push(problem(
                place,
                format!("link to {dest}: {shown} has no heading with id `{fragment}`: link to an existing heading (ids are the heading text, lower case, spaces as `-`)"),
            ));
        }
    }
}

/// Rule 5.
fn commands(
    page: &str,
    text: &str,
    lessons: &[Lesson],
    shared_flags: &Flags,
    problems: &mut Vec<Problem>,
) -> Result<()> {
    let names = || {
        lessons
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for block in markdown::shell_blocks(text) {
        let place = format!("{page}:{}", block.line);
        for words in shell::commands(&block.code) {
            match shell::cargo(&words) {
                Some(Cargo::Run(run)) => {
                    let Some(lesson) = lessons.iter().find(|l| l.name == run.package) else {
                        problems.push(problem(
                            &place,
                            format!(
                                "`cargo run -p {}`: there is no lesson crate {}: use one of {}",
                                run.package,
                                run.package,
                                names()
                            ),
                        ));
                        continue;
                    };
                    let mut flags = shared_flags.clone();
                    flags.scan(&lessons::rust_sources(&lesson.dir)?);
                    for bad in unknown_flags(&flags, &run.args) {
                        problems.push(problem(
                            &place,
                            format!(
                                "`cargo run -p {} -- … {bad}`: {} has no flag {bad}: use one of {}",
                                run.package,
                                run.package,
                                known_flags(&flags)
                            ),
                        ));
                    }
                }
                Some(Cargo::XtaskDiff(named)) => {
                    for name in named {
                        if lessons::find(lessons, &name).is_err() {
                            problems.push(problem(
                                &place,
                                format!(
                                    "`cargo xtask diff`: there is no lesson {name}: use one of {}",
                                    names()
                                ),
                            ));
                        }
                    }
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// The flags in `args` that the binary does not accept.
fn unknown_flags(flags: &Flags, args: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline_value) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            match flags.long.get(name) {
                Some(true) if !inline_value => {
                    args.next();
                }
                Some(_) => {}
                None => bad.push(format!("--{name}")),
            }
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (at, c) in shorts.char_indices() {
                match flags.short.get(&c) {
                    Some(true) => {
                        // The rest of the word, or else the next word, is the value.
                        if at + c.len_utf8() == shorts.len() {
                            args.next();
                        }
                        break;
                    }
                    Some(false) => {}
                    None => {
                        bad.push(format!("-{c}"));
                        break;
                    }
                }
            }
        }
    }
    bad
}

fn known_flags(flags: &Flags) -> String {
    let mut all: Vec<String> = flags.long.keys().map(|l| format!("--{l}")).collect();
    all.extend(flags.short.keys().map(|s| format!("-{s}")));
    all.join(", ")
}

/// Rule 6.
fn copy_forward(root: &Path, lessons: &[Lesson], problems: &mut Vec<Problem>) -> Result<()> {
    let names: Vec<&str> = lessons.iter().map(|l| l.name.as_str()).collect();
    for lesson in lessons {
        let Some(previous) = lessons::previous(lessons, lesson) else {
            continue;
        };
        let chapter_path = format!("{BOOK_SRC}/{}", lesson.chapter_file());
        // A missing chapter is reported by rule 2 already.
        let Ok(chapter) = std::fs::read_to_string(root.join(&chapter_path)) else {
            continue;
        };
        for change in diff::compare(previous, lesson)? {
            // Tests are rule 7's.
            if change.path.starts_with("tests/") {
                continue;
            }
            if !mentions(&chapter, &change.path, &names) {
                problems.push(problem(
                    &chapter_path,
                    format!(
                        "does not mention {} ({} since {}): say in the chapter what changed there, or make the file identical to {}'s (see `cargo xtask diff {}`)",
                        change.path,
                        change.status.word(),
                        previous.name,
                        previous.name,
                        lesson.id()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `text` mentions the crate-relative `path` (see rule 6 in the
/// module header).
pub fn mentions(text: &str, path: &str, lesson_names: &[&str]) -> bool {
    text.match_indices(path).any(|(at, _)| {
        let before = &text[..at];
        let starts_alone = match before.chars().next_back() {
            None => true,
            Some('/') => lesson_names
                .iter()
                .any(|name| before.ends_with(&format!("crates/{name}/"))),
            Some(c) => !is_path_char(c),
        };
        let mut after = text[at + path.len()..].chars();
        let ends_alone = match after.next() {
            None => true,
            // A full stop ends a sentence unless a name goes on after it.
            Some('.') => !after.next().is_some_and(is_path_char),
            Some(c) => !is_path_char(c),
        };
        starts_alone && ends_alone
    })
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Where a lesson's one test binary lives, crate-relative.
const TEST_BINARY: &str = "tests/it";

/// Whether a file under `tests/it/` (relative to it) is the lesson's own
/// wiring rather than an inherited module (see rule 7).
fn is_wiring(relative: &str) -> bool {
    matches!(relative, "main.rs" | "support.rs" | "demo.rs")
        || relative.starts_with("support/")
        || relative.starts_with("demo/")
}

/// The inherited files of a lesson's test binary: path relative to
/// `tests/it/` → bytes. `None` when the lesson has no `tests/it/`.
fn test_modules(lesson: &Lesson) -> Result<Option<BTreeMap<String, Vec<u8>>>> {
    let dir = lesson.dir.join(TEST_BINARY);
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for path in lessons::all_files(&dir)? {
        let relative = lessons::relative_path(&dir, &path);
        if is_wiring(&relative) || !lessons::is_lesson_file(Path::new(&relative)) {
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        out.insert(relative, bytes);
    }
    Ok(Some(out))
}

/// The 1-based number of the first line where `a` and `b` differ.
fn first_different_line(a: &[u8], b: &[u8]) -> usize {
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    a[..same].iter().filter(|&&byte| byte == b'\n').count() + 1
}

/// Rule 7.
fn inherited_tests(lessons: &[Lesson], problems: &mut Vec<Problem>) -> Result<()> {
    let modules: BTreeMap<&str, BTreeMap<String, Vec<u8>>> = lessons
        .iter()
        .filter_map(|lesson| {
            test_modules(lesson)
                .map(|found| found.map(|files| (lesson.name.as_str(), files)))
                .transpose()
        })
        .collect::<Result<_>>()?;
    for lesson in lessons {
        let Some(own) = modules.get(lesson.name.as_str()) else {
            continue;
        };
        let place = |path: &str| format!("crates/{}/{TEST_BINARY}/{path}", lesson.name);
        for (path, bytes) in own {
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            if let Some(line) = text.lines().position(|line| line.contains(&lesson.name)) {
                problems.push(problem(
                    format!("{}:{}", place(path), line + 1),
                    format!(
                        "names the crate {}: only {TEST_BINARY}/main.rs may name it, so that the module can be copied to the next lesson unchanged: write `lesson::…` (main.rs has `extern crate {} as lesson;`) and `crate::BIN` for the binary",
                        lesson.name, lesson.name
                    ),
                ));
            }
        }
        let Some(previous) = lessons::previous(lessons, lesson) else {
            continue;
        };
        let Some(inherited) = modules.get(previous.name.as_str()) else {
            continue;
        };
        for (path, old) in inherited {
            let old_place = format!("crates/{}/{TEST_BINARY}/{path}", previous.name);
            match own.get(path) {
                None => {
                    let declare = if path.ends_with(".rs") {
                        " (and declare the module in main.rs)"
                    } else {
                        ""
                    };
                    problems.push(problem(
                        place(path),
                        format!(
                            "is missing, but {old_place} has it: inherited test modules must stay identical in every later lesson: copy it forward{declare}"
                        ),
                    ));
                }
                Some(new) if new != old => {
                    // Walk back to the lesson that introduced the module.
                    let mut introduced = previous;
                    while let Some(earlier) =
                        lessons::previous(lessons, introduced).filter(|earlier| {
                            modules
                                .get(earlier.name.as_str())
                                .is_some_and(|files| files.contains_key(path))
                        })
                    {
                        introduced = earlier;
                    }
                    problems.push(problem(
                        place(path),
                        format!(
                            "differs from {old_place} (first difference: line {}): inherited test modules must stay identical in every later lesson: make the change in crates/{}/{TEST_BINARY}/{path}, where {} introduced it, and copy it forward; what only this lesson needs goes in {TEST_BINARY}/support.rs",
                            first_different_line(old, new),
                            introduced.name,
                            introduced.id()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Rule 8.
fn one_test_binary(lessons: &[Lesson], problems: &mut Vec<Problem>) -> Result<()> {
    for lesson in lessons {
        let tests = lesson.dir.join("tests");
        let it = lesson.dir.join(TEST_BINARY);
        if !it.is_dir() {
            continue;
        }
        let crate_dir = format!("crates/{}", lesson.name);
        if !it.join("main.rs").is_file() {
            problems.push(problem(
                format!("{crate_dir}/{TEST_BINARY}"),
                format!(
                    "has no main.rs, so cargo builds no test from it: write {TEST_BINARY}/main.rs (it names the crate and declares the modules)"
                ),
            ));
            continue;
        }
        let mut extra = Vec::new();
        for entry in
            std::fs::read_dir(&tests).with_context(|| format!("reading {}", tests.display()))?
        {
            let path = entry?.path();
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let is_target = if path.is_dir() {
                name != "it" && path.join("main.rs").is_file()
            } else {
                path.extension().is_some_and(|ext| ext == "rs")
            };
            if is_target {
                extra.push(if path.is_dir() {
                    format!("{name}/main.rs")
                } else {
                    name
                });
            }
        }
        extra.sort();
        for name in extra {
            let module = name.trim_end_matches("/main.rs").trim_end_matches(".rs");
            problems.push(problem(
                format!("{crate_dir}/tests/{name}"),
                format!(
                    "is a test binary of its own next to {TEST_BINARY}/main.rs: make it a module of that one binary, {TEST_BINARY}/{module}.rs with `mod {module};` in main.rs"
                ),
            ));
        }
    }
    Ok(())
}

/// Every lesson's `Cargo.toml`, read (see [`crate::manifest`]), by crate name.
fn manifests(lessons: &[Lesson]) -> Result<BTreeMap<String, Manifest>> {
    lessons
        .iter()
        .map(|lesson| {
            let path = lesson.dir.join("Cargo.toml");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok((lesson.name.clone(), Manifest::parse(&text)))
        })
        .collect()
}

/// Rule 9.
fn descriptions(
    lessons: &[Lesson],
    manifests: &BTreeMap<String, Manifest>,
    problems: &mut Vec<Problem>,
) {
    for lesson in lessons {
        let Some(manifest) = manifests.get(&lesson.name) else {
            continue;
        };
        let place = format!("crates/{}/Cargo.toml", lesson.name);
        let wanted = format!("Lesson {}:", lesson.number);
        match &manifest.description {
            None => problems.push(problem(
                place,
                format!(
                    "has no `description` in [package]: add `description = \"{wanted} …\"` (the mechanism, in a few words)"
                ),
            )),
            Some((line, description)) if !description.starts_with(&wanted) => {
                problems.push(problem(
                    format!("{place}:{line}"),
                    format!(
                        "the description starts {:?}, not {wanted:?}: start it with {wanted:?}, this lesson's own number",
                        opening(description)
                    ),
                ));
            }
            Some(_) => {}
        }
    }
}

/// How a description starts, for a message: `Lesson 5:` when it starts
/// like one, else its first few words.
fn opening(description: &str) -> String {
    if let Some(rest) = description.strip_prefix("Lesson ")
        && let Some(colon) = rest.find(':')
        && colon <= 4
    {
        return description[.."Lesson ".len() + colon + 1].to_string();
    }
    let words: Vec<&str> = description.split_whitespace().take(4).collect();
    let mut out = words.join(" ");
    if description.split_whitespace().count() > words.len() {
        out.push_str(" …");
    }
    out
}

/// Rule 10.
fn new_dependencies(
    root: &Path,
    lessons: &[Lesson],
    manifests: &BTreeMap<String, Manifest>,
    problems: &mut Vec<Problem>,
) {
    for lesson in lessons {
        let Some(previous) = lessons::previous(lessons, lesson) else {
            continue;
        };
        let (Some(now), Some(before)) =
            (manifests.get(&lesson.name), manifests.get(&previous.name))
        else {
            continue;
        };
        let chapter_path = format!("{BOOK_SRC}/{}", lesson.chapter_file());
        // A missing chapter is reported by rule 2 already.
        let Ok(chapter) = std::fs::read_to_string(root.join(&chapter_path)) else {
            continue;
        };
        for bullet in markdown::bullets(&chapter, "- `Cargo.toml`") {
            let mut seen = Vec::new();
            for (offset, name) in markdown::code_spans(&bullet.lines.join("\n")) {
                if seen.contains(&name) {
                    continue;
                }
                let Some(sections) = now.sections_of(&name) else {
                    continue;
                };
                let had = before.sections_of(&name);
                let added_somewhere = sections
                    .iter()
                    .any(|section| !had.is_some_and(|had| had.contains(section)));
                if added_somewhere {
                    continue;
                }
                let listed: Vec<String> = sections.iter().map(|s| format!("[{s}]")).collect();
                problems.push(problem(
                    format!("{chapter_path}:{}", bullet.line + offset),
                    format!(
                        "the `Cargo.toml` bullet calls `{name}` a new dependency, but {} already depends on it ({}): name only the dependencies lesson {} adds or moves (`cargo xtask diff {}` shows its Cargo.toml)",
                        previous.name,
                        listed.join(", "),
                        lesson.number,
                        lesson.id()
                    ),
                ));
                seen.push(name);
            }
        }
    }
}

/// Rule 11.
fn translations(root: &Path, editions: &[&Edition], problems: &mut Vec<Problem>) -> Result<()> {
    let translations: Vec<&&Edition> = editions.iter().filter(|e| !e.is_english()).collect();
    if translations.is_empty() {
        return Ok(());
    }
    switcher(root, editions, problems);
    let english_pages = i18n::english_pages(root)?;
    for edition in translations {
        let dir = edition.src();
        for page in &english_pages {
            let path = format!("{dir}/{page}");
            let source = format!("{BOOK_SRC}/{page}");
            let stamp = stamp_command(root, edition, page);
            match i18n::state(root, edition, page)? {
                State::Missing => problems.push(problem(
                    &path,
                    format!(
                        "is missing: translate {source} into it (line 1 records the English file's hash; see docs/TRANSLATING.md), then run `cargo xtask docs`"
                    ),
                )),
                State::BadHeader(why) => problems.push(problem(
                    format!("{path}:1"),
                    format!(
                        "{why}: line 1 must be `<!-- source: {source} sha256:<sha256sum of {source}> -->`; once the translation matches the English page, `{stamp}` writes it"
                    ),
                )),
                State::Stale { recorded, now } => problems.push(problem(
                    &path,
                    format!(
                        "is stale: it was translated from {source} with sha256:{recorded}, which is now sha256:{now}: `git log -p {source}` shows what changed in English; bring the translation up to date, then run `{stamp}`"
                    ),
                )),
                State::Current => {
                    let english = std::fs::read_to_string(root.join(&source))?;
                    let translated = std::fs::read_to_string(root.join(&path))?;
                    same_structure(&path, &source, &translated, &english, problems);
                }
            }
        }
        // Pages of the edition's own, and pages that translate nothing.
        for own in edition.own_pages {
            if !root.join(&dir).join(own).is_file() {
                problems.push(problem(
                    format!("{dir}/{own}"),
                    format!(
                        "is missing: every {} edition has it (it is the edition's own page, with no English source)",
                        edition.label
                    ),
                ));
            }
        }
        for file in lessons::files_with_extension(&root.join(&dir), "md")? {
            let relative = lessons::relative_path(&root.join(&dir), &file);
            if i18n::is_generated(&relative)
                || edition.own_pages.contains(&relative.as_str())
                || english_pages.contains(&relative)
            {
                continue;
            }
            problems.push(problem(
                format!("{dir}/{relative}"),
                format!(
                    "translates no page of {BOOK_SRC} (there is no {BOOK_SRC}/{relative}): name it after the English page it translates, or remove it"
                ),
            ));
        }
    }
    Ok(())
}

/// How to re-record the hash of `page` in `edition`, as a command.
fn stamp_command(root: &Path, edition: &Edition, page: &str) -> String {
    let stem = page.trim_end_matches(".md");
    let name = lessons::discover(root)
        .ok()
        .and_then(|all| {
            all.into_iter()
                .find(|lesson| lesson.chapter_file() == page)
                .map(|lesson| lesson.id())
        })
        .unwrap_or_else(|| stem.to_string());
    format!("cargo xtask translation stamp {} {name}", edition.dir)
}

/// Rule 11: what the build resolves is the same in a current translation
/// as in its English page.
fn same_structure(
    path: &str,
    source: &str,
    translated: &str,
    english: &str,
    problems: &mut Vec<Problem>,
) {
    let theirs = markdown::includes(english);
    let ours = markdown::includes(translated);
    let shown = |include: &markdown::Include| match &include.selector {
        Selector::All => include.path.clone(),
        Selector::Anchor(name) => format!("{}:{name}", include.path),
        Selector::Lines(start, end) => format!(
            "{}:{}:{}",
            include.path,
            start.map(|n| n.to_string()).unwrap_or_default(),
            end.map(|n| n.to_string()).unwrap_or_default()
        ),
    };
    if ours.len() != theirs.len() {
        problems.push(problem(
            path,
            format!(
                "has {} {{{{#include}}}} directive(s) where {source} has {}: copy every directive of the English page, verbatim",
                ours.len(),
                theirs.len()
            ),
        ));
    } else if let Some((mine, english)) = ours
        .iter()
        .zip(&theirs)
        .find(|(a, b)| a.path != b.path || a.selector != b.selector)
    {
        problems.push(problem(
            format!("{path}:{}", mine.line),
            format!(
                "includes {} where {source}:{} includes {}: copy the directive verbatim",
                shown(mine),
                english.line,
                shown(english)
            ),
        ));
    }
    let theirs = markdown::code_blocks(english);
    let ours = markdown::code_blocks(translated);
    if ours.len() != theirs.len() {
        problems.push(problem(
            path,
            format!(
                "has {} code block(s) where {source} has {}: keep every code block of the English page, verbatim",
                ours.len(),
                theirs.len()
            ),
        ));
    } else if let Some((mine, english)) = ours.iter().zip(&theirs).find(|(a, b)| a.code != b.code) {
        problems.push(problem(
            format!("{path}:{}", mine.line),
            format!(
                "this code block differs from the one at {source}:{}: code blocks show what the programs really say, so they are copied verbatim",
                english.line
            ),
        ));
    }
    let ours = markdown::heading_ids(translated);
    let mut missing: Vec<String> = markdown::heading_ids(english)
        .into_iter()
        .filter(|id| !ours.contains(id))
        .collect();
    missing.sort();
    if !missing.is_empty() {
        problems.push(problem(
            path,
            format!(
                "has no heading with id {}, which {source} has: end each translated heading with the English heading's id, `## 标题 {{#the-id}}`, so links and the language switcher land on the same section",
                missing
                    .iter()
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
}

/// Where the language switcher lists the editions.
pub const SWITCHER: &str = "docs/i18n/switcher.js";

/// Rule 11: the switcher offers every edition, by the tag mdBook writes
/// into `<html lang>` and the directory the edition is built into.
fn switcher(root: &Path, editions: &[&Edition], problems: &mut Vec<Problem>) {
    let Ok(script) = std::fs::read_to_string(root.join(SWITCHER)) else {
        problems.push(problem(
            SWITCHER,
            "is missing: every page of every edition loads it (docs/book.toml's additional-js) to switch languages",
        ));
        return;
    };
    for edition in editions {
        let dir = if edition.is_english() {
            String::new()
        } else {
            format!("{}/", edition.dir)
        };
        let entry = format!("lang: '{}', dir: '{dir}'", edition.lang);
        if !script.contains(&entry) {
            problems.push(problem(
                SWITCHER,
                format!(
                    "does not offer the {} edition: add `{{ {entry}, label: '{}' }}` to its EDITIONS",
                    edition.label, edition.label
                ),
            ));
        }
    }
}

/// The map of the code, at the repository root.
pub const ARCHITECTURE: &str = "ARCHITECTURE.md";

/// The folders whose every module file the code map names (rule 12): the
/// ground every lesson stands on and the tool that keeps the chain honest.
/// Lesson crates are not listed file by file; the map describes their
/// common shape instead.
pub const MAPPED_SOURCES: [&str; 2] = ["shared/src", "xtask/src"];

/// Rule 12.
fn code_map(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let mut sources = Vec::new();
    for folder in MAPPED_SOURCES {
        let dir = root.join(folder);
        let mut files: Vec<String> = lessons::files_with_extension(&dir, "rs")?
            .iter()
            .map(|path| lessons::relative_path(&dir, path))
            .collect();
        files.sort();
        sources.push((folder, files));
    }
    if sources.iter().all(|(_, files)| files.is_empty()) {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(root.join(ARCHITECTURE)) else {
        problems.push(problem(
            ARCHITECTURE,
            format!(
                "is missing: write the map of the code, naming every module file of {}",
                MAPPED_SOURCES.join(" and ")
            ),
        ));
        return Ok(());
    };
    for (folder, files) in &sources {
        let entries = map_entries(&text, folder);
        for file in files {
            if !entries.iter().any(|(_, entry)| entry == file) {
                problems.push(problem(
                    format!("{folder}/{file}"),
                    format!(
                        "is not in the code map: add it to the code map in {ARCHITECTURE}, as a line `  {file}  what it is` under `{folder}/`"
                    ),
                ));
            }
        }
        for (line, entry) in &entries {
            if entry.ends_with(".rs") && !files.contains(entry) {
                problems.push(problem(
                    format!("{ARCHITECTURE}:{line}"),
                    format!(
                        "the code map names {folder}/{entry}, which is not a file: remove the line, or correct the path"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The entries of the code map under `folder` (`shared/src`): after each
/// line that is `folder/` alone, the first word of every indented line, up
/// to the first line that is not indented (a blank line, the next folder,
/// the end of the code block), with its 1-based line number. A description
/// continued on a deeper-indented line yields a word that names no file,
/// which is harmless.
pub fn map_entries(text: &str, folder: &str) -> Vec<(usize, String)> {
    let heading = format!("{folder}/");
    let mut entries = Vec::new();
    let mut inside = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_end() == heading {
            inside = true;
            continue;
        }
        if !line.starts_with([' ', '\t']) || line.trim().is_empty() {
            inside = false;
            continue;
        }
        if inside && let Some(word) = line.split_whitespace().next() {
            entries.push((index + 1, word.to_string()));
        }
    }
    entries
}

/// Rule 13.
fn counts(root: &Path, lessons: &[Lesson], problems: &mut Vec<Problem>) -> Result<()> {
    let shared = lessons::rust_sources(&root.join("shared"))?;
    for lesson in lessons {
        let chapter = format!("{BOOK_SRC}/{}", lesson.chapter_file());
        // A missing chapter is reported by rule 2 already.
        let Ok(text) = std::fs::read_to_string(root.join(&chapter)) else {
            continue;
        };
        let found = claims::claims(&text);
        if found.is_empty() {
            continue;
        }
        let mut sources = lessons::rust_sources(&lesson.dir)?;
        sources.extend(shared.iter().cloned());
        let traits = claims::trait_methods(&sources);
        for claim in found {
            let place = format!("{chapter}:{}", claim.line);
            match &claim.subject {
                Subject::Methods { spans } => {
                    let named: Vec<&(String, usize)> = traits
                        .iter()
                        .filter(|(name, _)| {
                            spans
                                .iter()
                                .any(|span| claims::trait_name(span) == Some(name.as_str()))
                        })
                        .collect();
                    if named.is_empty() || named.iter().any(|(_, n)| *n == claim.value) {
                        continue;
                    }
                    let actual: Vec<String> = named
                        .iter()
                        .map(|(name, n)| format!("`{name}` has {n}"))
                        .collect();
                    problems.push(problem(
                        place,
                        format!(
                            "says \"{} methods\", but {} in {}: fix the number",
                            claim.written,
                            actual.join(", "),
                            lesson.name
                        ),
                    ));
                }
                Subject::NewTools => {
                    let Some(previous) = lessons::previous(lessons, lesson) else {
                        continue;
                    };
                    // Missing snapshots are reported by rule 1.
                    let (Ok(now), Ok(before)) = (tools::offered(lesson), tools::offered(previous))
                    else {
                        continue;
                    };
                    let new: Vec<&str> = now
                        .iter()
                        .filter(|tool| !before.iter().any(|old| old.name == tool.name))
                        .map(|tool| tool.name.as_str())
                        .collect();
                    if new.len() != claim.value {
                        problems.push(problem(
                            place,
                            format!(
                                "says \"{} new tools\", but {} offers {} that {} does not ({}): fix the number",
                                claim.written,
                                lesson.name,
                                new.len(),
                                previous.name,
                                new.join(", ")
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Rule 15.
fn import_circles(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    for circle in circles::circles(root)? {
        problems.push(problem(
            &circle.krate,
            format!(
                "has an import circle: {}: move what they share into a file below them, so that each file stands above what it imports",
                circle.describe()
            ),
        ));
    }
    Ok(())
}

/// Rule 16.
fn untyped_errors(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    for found in error_types::find(root)? {
        problems.push(problem(
            &found.file,
            format!(
                "writes `{}` in `{}`: say which failure it is with an error type (a thiserror enum or struct whose text is the sentence), not a String or a boxed Error",
                found.written, found.item
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mention_must_be_the_crate_relative_path_itself() {
        let names = ["s01_a", "s02_b"];
        let yes = [
            "We add `src/dispatch.rs`.",
            "see src/dispatch.rs.",
            "{{#include ../../crates/s02_b/src/dispatch.rs:map}}",
            "(src/dispatch.rs)",
        ];
        for text in yes {
            assert!(mentions(text, "src/dispatch.rs", &names), "{text}");
        }
        let no = [
            "shared/src/dispatch.rs",
            "src/dispatch.rs.bak",
            "mysrc/dispatch.rs",
            "src/dispatch.rsx",
            "crates/other/src/dispatch.rs",
            "all of `src/` changes",
        ];
        for text in no {
            assert!(!mentions(text, "src/dispatch.rs", &names), "{text}");
        }
        assert!(mentions("the `Cargo.toml` gains", "Cargo.toml", &names));
    }

    #[test]
    fn a_description_is_quoted_by_its_opening() {
        assert_eq!(opening("Lesson 5: todo write — a plan"), "Lesson 5:");
        assert_eq!(opening("Lesson 12: x"), "Lesson 12:");
        assert_eq!(
            opening("The agent loop, with one tool"),
            "The agent loop, with …"
        );
        assert_eq!(opening("Lesson five"), "Lesson five");
    }

    #[test]
    fn unknown_flags_skip_values_and_split_short_clusters() {
        let mut flags = Flags::default();
        flags.scan(&[(
            "a.rs".into(),
            "struct A { #[arg(short = 'p', long)] prompt: Option<String>, #[arg(short, long)] verbose: bool, #[arg(long)] demo: bool }".into(),
        )]);
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            unknown_flags(
                &flags,
                &args(&["-p", "--not-a-flag", "--demo", "-vp", "-x"])
            )
            .is_empty()
        );
        assert!(unknown_flags(&flags, &args(&["--prompt=--x", "-vpvalue", "-h"])).is_empty());
        assert_eq!(
            unknown_flags(&flags, &args(&["--model", "x", "-vq", "--demo=1"])),
            ["--model", "-q"]
        );
    }

    #[test]
    fn code_map_entries_are_the_first_words_under_their_own_folder() {
        let text = "```\nshared/src/\n  lib.rs      the map\n  cli/mod.rs  the front end,\n              continued\nxtask/src/\n  main.rs     the tasks\n```\n\n  lib.rs indented, but in no block\n";
        let entries = |folder| {
            map_entries(text, folder)
                .into_iter()
                .map(|(line, word)| format!("{line}:{word}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            entries("shared/src"),
            ["3:lib.rs", "4:cli/mod.rs", "5:continued"]
        );
        assert_eq!(entries("xtask/src"), ["7:main.rs"]);
        assert!(entries("crates").is_empty());
    }

    #[test]
    fn anchors_are_read_like_mdbook_reads_them() {
        assert_eq!(
            anchor_in("    // ANCHOR: run_tool", "ANCHOR:"),
            Some("run_tool")
        );
        assert_eq!(
            anchor_in("<!-- ANCHOR_END:x-1 -->", "ANCHOR_END:"),
            Some("x-1")
        );
        assert_eq!(anchor_in("// ANCHOR_END: x", "ANCHOR:"), None);
    }
}
