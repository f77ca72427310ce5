//! Rule 17 of `cargo xtask check`: the exercise markers and the
//! `exercise.toml` files agree, and every region can be stubbed.
//!
//! - In `shared/src` and every lesson's `src/`, each `ANCHOR:
//!   exercise-sNN-name` is followed by its `ANCHOR_END:` before any other
//!   exercise marker (no nesting, no stray end).
//! - Each region is whole statements at the end of a block inside a
//!   function body: the file is read with the region's markers turned into
//!   the braces of a block (`{ __exercise_region!("…");` … `}`), which must
//!   parse and sit last in a block of a function. So the stub's `todo!()`
//!   is the block's value and leaves no code after it unreachable.
//! - A lesson's markers name that lesson or an earlier one (a copy carried
//!   forward); each region of lesson N in lesson N's crate (or in `shared`)
//!   is listed in lesson N's `exercise.toml`, and each listed region is in
//!   the file the toml names, with a todo line and at least one hint; the
//!   graded test modules exist.
//!
//! (Rule 3 adds that a file the book includes whole has no exercise
//! marker: mdBook strips anchor lines only from anchored includes.)

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use syn::visit::{self, Visit};

use super::{Exercise, graded_modules, is_marker};
use crate::lessons::{self, Lesson};
use crate::problem::Problem;

fn problem(place: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        place: place.into(),
        message: message.into(),
    }
}

/// One region found in a file: its anchor and the line of its start.
#[derive(Debug, Clone)]
struct Found {
    anchor: String,
    line: usize,
}

/// Every problem with the exercise markers and tomls under `root`.
pub fn problems(root: &Path, all: &[Lesson]) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    // Every file with markers, repository-relative, and the regions in it.
    let mut found: BTreeMap<String, Vec<Found>> = BTreeMap::new();
    let mut dirs = vec![root.join("shared")];
    dirs.extend(all.iter().map(|lesson| lesson.dir.clone()));
    for dir in &dirs {
        for path in lessons::files_with_extension(&dir.join("src"), "rs")? {
            let text = std::fs::read_to_string(&path)?;
            if !text.lines().any(is_marker) {
                continue;
            }
            let relative = lessons::relative_path(root, &path);
            let regions = markers(&relative, &text, &mut problems);
            bodies(&relative, &text, &regions, &mut problems);
            found.insert(relative, regions);
        }
    }

    // Markers of a later lesson than the crate they are in.
    for lesson in all {
        let prefix = format!("{}/", lessons::relative_path(root, &lesson.dir));
        for (file, regions) in found.iter().filter(|(f, _)| f.starts_with(&prefix)) {
            for region in regions {
                if lesson_of(&region.anchor).is_some_and(|n| n > lesson.number) {
                    problems.push(problem(
                        format!("{file}:{}", region.line),
                        format!(
                            "region {} belongs to a later lesson than {lesson}: name it with {}",
                            region.anchor,
                            lesson.id()
                        ),
                    ));
                }
            }
        }
    }

    for lesson in all {
        let toml = format!(
            "{}/{}",
            lessons::relative_path(root, &lesson.dir),
            super::EXERCISE_TOML
        );
        let exercise = match super::load(lesson) {
            Ok(Some(exercise)) => exercise,
            Ok(None) => Exercise {
                regions: Vec::new(),
                graded: None,
            },
            Err(err) => {
                problems.push(problem(&toml, format!("cannot be read: {err:#}")));
                continue;
            }
        };
        toml_regions(root, all, lesson, &toml, &exercise, &found, &mut problems)?;
    }
    Ok(problems)
}

/// The lesson number an anchor names: `exercise-s03-deny` → 3.
fn lesson_of(anchor: &str) -> Option<u32> {
    let rest = anchor
        .strip_prefix(super::ANCHOR_PREFIX)?
        .strip_prefix('s')?;
    rest.get(..2)?.parse().ok()
}

/// Pairs the markers of one file, reporting what does not pair.
fn markers(file: &str, text: &str, problems: &mut Vec<Problem>) -> Vec<Found> {
    let mut out = Vec::new();
    let mut open: Option<Found> = None;
    for (index, line) in text.lines().enumerate() {
        let place = format!("{file}:{}", index + 1);
        if let Some(anchor) = super::exercise_anchor(line, "ANCHOR:") {
            if lesson_of(anchor).is_none() {
                problems.push(problem(
                    &place,
                    format!("exercise anchor {anchor} does not name its lesson: exercise-sNN-name"),
                ));
            }
            if let Some(previous) = open.take() {
                problems.push(problem(
                    &place,
                    format!(
                        "region {anchor} starts inside region {} (line {}): end that one first with `// ANCHOR_END: {}`",
                        previous.anchor, previous.line, previous.anchor
                    ),
                ));
            }
            if out.iter().any(|f: &Found| f.anchor == anchor) {
                problems.push(problem(
                    &place,
                    format!("region {anchor} is marked twice in this file"),
                ));
            }
            open = Some(Found {
                anchor: anchor.to_string(),
                line: index + 1,
            });
        } else if let Some(anchor) = super::exercise_anchor(line, "ANCHOR_END:") {
            match open.take() {
                Some(start) if start.anchor == anchor => out.push(start),
                Some(start) => problems.push(problem(
                    &place,
                    format!(
                        "`ANCHOR_END: {anchor}` closes region {} (line {}): the names must match",
                        start.anchor, start.line
                    ),
                )),
                None => problems.push(problem(
                    &place,
                    format!("`ANCHOR_END: {anchor}` without its `// ANCHOR: {anchor}` above"),
                )),
            }
        }
    }
    if let Some(start) = open {
        problems.push(problem(
            format!("{file}:{}", start.line),
            format!(
                "region {} has no `// ANCHOR_END: {}`: add it where the region ends",
                start.anchor, start.anchor
            ),
        ));
    }
    out
}

/// The name of the macro a region's block starts with.
const REGION_MACRO: &str = "__exercise_region";

/// Checks that each region is a block's last statements inside a function.
fn bodies(file: &str, text: &str, regions: &[Found], problems: &mut Vec<Problem>) {
    if regions.is_empty() {
        return;
    }
    let mut rewritten = String::with_capacity(text.len());
    for line in text.lines() {
        if let Some(anchor) = super::exercise_anchor(line, "ANCHOR:") {
            rewritten.push_str(&format!("{{ {REGION_MACRO}!({anchor:?});"));
        } else if super::exercise_anchor(line, "ANCHOR_END:").is_some() {
            rewritten.push('}');
        } else {
            rewritten.push_str(line);
        }
        rewritten.push('\n');
    }
    let syntax = match syn::parse_file(&rewritten) {
        Ok(syntax) => syntax,
        Err(err) => {
            let names: Vec<&str> = regions.iter().map(|r| r.anchor.as_str()).collect();
            problems.push(problem(
                file,
                format!(
                    "a region ({}) is not whole statements inside a block: read as a block of their own, the file does not parse ({err}); put the markers between statements of a function body",
                    names.join(", ")
                ),
            ));
            return;
        }
    };
    let mut finder = Finder::default();
    finder.visit_file(&syntax);
    for region in regions {
        let place = format!("{file}:{}", region.line);
        match finder.found.get(&region.anchor) {
            Some((true, true)) => {}
            Some((false, _)) | None => problems.push(problem(
                place,
                format!(
                    "region {} is not inside a function body: a stub can only stand for statements of a function",
                    region.anchor
                ),
            )),
            Some((true, false)) => problems.push(problem(
                place,
                format!(
                    "region {} has code after it in its block: once stubbed, that code would be unreachable; end the region with the block (or make the rest part of it)",
                    region.anchor
                ),
            )),
        }
    }
}

/// Finds the region blocks: for each, whether it is inside a function and
/// whether it is its block's last statement.
#[derive(Default)]
struct Finder {
    in_fn: usize,
    found: BTreeMap<String, (bool, bool)>,
}

impl Finder {
    fn region_name(block: &syn::Block) -> Option<String> {
        let syn::Stmt::Macro(first) = block.stmts.first()? else {
            return None;
        };
        if !first.mac.path.is_ident(REGION_MACRO) {
            return None;
        }
        syn::parse2::<syn::LitStr>(first.mac.tokens.clone())
            .ok()
            .map(|lit| lit.value())
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.in_fn += 1;
        visit::visit_item_fn(self, item);
        self.in_fn -= 1;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.in_fn += 1;
        visit::visit_impl_item_fn(self, item);
        self.in_fn -= 1;
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        self.in_fn += 1;
        visit::visit_trait_item_fn(self, item);
        self.in_fn -= 1;
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        let count = block.stmts.len();
        for (index, stmt) in block.stmts.iter().enumerate() {
            if let syn::Stmt::Expr(syn::Expr::Block(inner), _) = stmt
                && let Some(name) = Self::region_name(&inner.block)
            {
                self.found
                    .insert(name, (self.in_fn > 0, index + 1 == count));
            }
        }
        visit::visit_block(self, block);
    }
}

/// Lesson N's toml against the regions of lesson N found in the files.
fn toml_regions(
    root: &Path,
    all: &[Lesson],
    lesson: &Lesson,
    toml: &str,
    exercise: &Exercise,
    found: &BTreeMap<String, Vec<Found>>,
    problems: &mut Vec<Problem>,
) -> Result<()> {
    let crate_dir = lessons::relative_path(root, &lesson.dir);
    let mut listed = Vec::new();
    for region in &exercise.regions {
        let anchor = region.anchor(lesson);
        let file = super::join_path(&crate_dir, &region.file).unwrap_or_default();
        listed.push((file.clone(), anchor.clone()));
        let in_file = found
            .get(&file)
            .is_some_and(|regions| regions.iter().any(|r| r.anchor == anchor));
        if !in_file {
            problems.push(problem(
                toml,
                format!(
                    "lists region {} in {}, which has no `// ANCHOR: {anchor}` … `// ANCHOR_END: {anchor}` in a function body: mark it or fix the toml",
                    region.name, region.file
                ),
            ));
        }
        if region.todo.trim().is_empty() {
            problems.push(problem(
                toml,
                format!("region {} has an empty todo", region.name),
            ));
        }
        if region.hints.is_empty() {
            problems.push(problem(
                toml,
                format!(
                    "region {} has no hints: give at least one (the approach, not the code)",
                    region.name
                ),
            ));
        }
    }
    if exercise.regions.is_empty() && lesson.dir.join(super::EXERCISE_TOML).is_file() {
        problems.push(problem(toml, "lists no [[region]]"));
    }
    // Regions of this lesson, in its crate or in `shared`, that the toml
    // does not list.
    for (file, regions) in found {
        if !(file.starts_with(&format!("{crate_dir}/")) || file.starts_with("shared/")) {
            continue;
        }
        for region in regions {
            if lesson_of(&region.anchor) != Some(lesson.number) {
                continue;
            }
            if !listed.iter().any(|(f, a)| f == file && *a == region.anchor) {
                problems.push(problem(
                    format!("{file}:{}", region.line),
                    format!(
                        "region {} is not listed in {toml}: add a [[region]] for it (name, file, todo, hints)",
                        region.anchor
                    ),
                ));
            }
        }
    }
    if !exercise.regions.is_empty() {
        let graded = graded_modules(all, lesson, exercise)?;
        if graded.is_empty() {
            problems.push(problem(
                toml,
                "grades no test module: the lesson has no new tests/it module, so name them with `graded = [\"…\"]`",
            ));
        }
        for module in graded {
            let dir = lesson.dir.join("tests/it");
            if !dir.join(format!("{module}.rs")).is_file()
                && !dir.join(&module).join("mod.rs").is_file()
            {
                problems.push(problem(
                    toml,
                    format!("grades test module {module}, which is not in tests/it"),
                ));
            }
        }
    }
    Ok(())
}
