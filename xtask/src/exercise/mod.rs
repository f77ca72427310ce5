//! Exercises: a lesson forked with its mechanism left for the student
//! (`cargo xtask fork s03 DIR --exercise`).
//!
//! A lesson marks the code a student writes with mdBook anchors inside
//! function bodies, named with the lesson so that the copies carried into
//! later lessons belong to the lesson that introduced them:
//!
//! ```text
//! pub fn check_deny_list(command: &str) -> Option<&'static str> {
//!     // ANCHOR: exercise-s03-deny
//!     DENY_LIST.iter().copied().find(|pattern| command.contains(pattern))
//!     // ANCHOR_END: exercise-s03-deny
//! }
//! ```
//!
//! `crates/sNN_*/exercise.toml` lists the lesson's regions (file, the todo
//! line, hints that give the approach and not the code, the names the stub
//! must still mention so nothing goes unused) and, optionally, the graded
//! test modules; by default those are the lesson's new `tests/it` modules.
//! The book strips anchor lines from what it includes and the lesson diffs
//! drop them (see [`crate::lessons::normalise`]), so the markers cost the
//! book nothing.
//!
//! The fork gets the stubs, the solutions and a small tool of its own
//! (`exercise/`, std only) behind the Cargo aliases `grade`, `hint`,
//! `solution` and `reset` ([`tool`]). [`rules`] is `cargo xtask check`'s
//! rule for the markers, [`check`] proves each exercise works.

pub mod check;
pub mod page;
pub mod rules;
pub mod tool;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::lessons::{self, Lesson};

pub use crate::lessons::EXERCISE_TOML;

/// Where the lesson goes in a fork (as [`crate::fork::LESSON_PARENT`]).
const LESSON_PARENT: &str = "crates";

/// The prefix of every exercise anchor: `exercise-s03-deny`.
pub const ANCHOR_PREFIX: &str = "exercise-";

/// One lesson's exercise, as its `exercise.toml` has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exercise {
    /// The regions, in the order the student meets them.
    pub regions: Vec<Region>,
    /// The graded `tests/it` modules, when the toml names them.
    pub graded: Option<Vec<String>>,
}

/// One region the student writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The short name (`deny`); the anchor is `exercise-sNN-deny`.
    pub name: String,
    /// The file, relative to the lesson crate (`src/permission.rs`, or
    /// `../../shared/src/agent.rs` for lesson 1's loop).
    pub file: String,
    /// What to write, one line: the `todo!` message after `sNN name: `.
    pub todo: String,
    /// Hints, in order: the approach, not the code.
    pub hints: Vec<String>,
    /// Names the stub still refers to (`let _ = (&a, &b);`) so that
    /// parameters, locals and helpers the region used do not go unused;
    /// `mut a` borrows `a` mutably.
    pub uses: Vec<String>,
}

impl Region {
    /// The anchor name of this region in `lesson`: `exercise-s03-deny`.
    pub fn anchor(&self, lesson: &Lesson) -> String {
        format!("{ANCHOR_PREFIX}{}-{}", lesson.id(), self.name)
    }
}

/// Reads `lesson`'s `exercise.toml`, if it has one.
pub fn load(lesson: &Lesson) -> Result<Option<Exercise>> {
    let path = lesson.dir.join(EXERCISE_TOML);
    if !path.is_file() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text)
        .with_context(|| format!("reading {}", path.display()))
        .map(Some)
}

/// Parses the text of an `exercise.toml`.
pub fn parse(text: &str) -> Result<Exercise> {
    let doc: toml_edit::DocumentMut = text.parse()?;
    let graded = match doc.get("graded") {
        None => None,
        Some(item) => Some(strings(item, "graded")?),
    };
    let mut regions = Vec::new();
    if let Some(item) = doc.get("region") {
        let Some(tables) = item.as_array_of_tables() else {
            bail!("`region` is not an array of tables ([[region]])");
        };
        for table in tables {
            let text = |key: &str| -> Result<String> {
                table
                    .get(key)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .with_context(|| format!("a [[region]] has no string `{key}`"))
            };
            let list = |key: &str| -> Result<Vec<String>> {
                match table.get(key) {
                    None => Ok(Vec::new()),
                    Some(item) => strings(item, key),
                }
            };
            let name = text("name")?;
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !valid {
                bail!("region name {name:?}: use lowercase letters, digits and underscores");
            }
            regions.push(Region {
                name,
                file: text("file")?,
                todo: text("todo")?,
                hints: list("hints")?,
                uses: list("uses")?,
            });
        }
    }
    Ok(Exercise { regions, graded })
}

fn strings(item: &toml_edit::Item, key: &str) -> Result<Vec<String>> {
    let Some(array) = item.as_array() else {
        bail!("`{key}` is not an array of strings");
    };
    array
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .with_context(|| format!("`{key}` holds something other than a string"))
        })
        .collect()
}

/// The graded test modules of `lesson`: the toml's list, else the
/// lesson's `tests/it` modules that the lesson before it did not have
/// (its wiring, `main`, `support` and `demo`, aside).
pub fn graded_modules(all: &[Lesson], lesson: &Lesson, exercise: &Exercise) -> Result<Vec<String>> {
    if let Some(graded) = &exercise.graded {
        return Ok(graded.clone());
    }
    let modules = |lesson: &Lesson| -> Result<BTreeSet<String>> {
        let dir = lesson.dir.join("tests/it");
        let mut out = BTreeSet::new();
        if !dir.is_dir() {
            return Ok(out);
        }
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            let module = match name.strip_suffix(".rs") {
                Some(module) => module.to_string(),
                None if entry.path().join("mod.rs").is_file() => name,
                None => continue,
            };
            if !["main", "support", "demo"].contains(&module.as_str()) {
                out.insert(module);
            }
        }
        Ok(out)
    };
    let now = modules(lesson)?;
    let before = match lessons::previous(all, lesson) {
        Some(previous) => modules(previous)?,
        None => BTreeSet::new(),
    };
    Ok(now.difference(&before).cloned().collect())
}

/// Where a region's markers are in a file's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The index of the `ANCHOR:` line.
    pub start: usize,
    /// The index of the `ANCHOR_END:` line.
    pub end: usize,
}

/// The anchor name a line carries after `marker` (`ANCHOR:` or
/// `ANCHOR_END:`), if it is an exercise anchor.
pub fn exercise_anchor<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let name = &rest[..end];
    name.starts_with(ANCHOR_PREFIX).then_some(name)
}

/// Whether a line is an exercise marker, opening or closing.
pub fn is_marker(line: &str) -> bool {
    exercise_anchor(line, "ANCHOR:").is_some() || exercise_anchor(line, "ANCHOR_END:").is_some()
}

/// The lines of the region `anchor` in `text`, if both markers are there,
/// in order.
pub fn find_span(text: &str, anchor: &str) -> Option<Span> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| exercise_anchor(l, "ANCHOR:") == Some(anchor))?;
    let end = lines
        .iter()
        .skip(start)
        .position(|l| exercise_anchor(l, "ANCHOR_END:") == Some(anchor))?;
    Some(Span {
        start,
        end: start + end,
    })
}

/// The stub that stands in for a region's body: a comment saying what to
/// write, the names it must not leave unused, and the `todo!`.
pub fn stub(lesson: &Lesson, region: &Region, indent: &str) -> String {
    let id = lesson.id();
    let mut out = format!(
        "{indent}// TODO({id} {name}): {todo}.\n{indent}// `cargo hint {name}` gives a hint, `cargo grade` runs the tests.\n",
        name = region.name,
        todo = region.todo.trim_end_matches('.'),
    );
    // `mut x` borrows mutably, for a variable the region was the only one
    // to change (else: "does not need to be mutable").
    let refer = |name: &String| match name.strip_prefix("mut ") {
        Some(name) => format!("&mut {name}"),
        None => format!("&{name}"),
    };
    match region.uses.as_slice() {
        [] => {}
        [one] => out.push_str(&format!("{indent}let _ = {};\n", refer(one))),
        many => {
            let refs: Vec<String> = many.iter().map(refer).collect();
            out.push_str(&format!("{indent}let _ = ({});\n", refs.join(", ")));
        }
    }
    out.push_str(&format!(
        "{indent}todo!({:?})\n",
        format!("{id} {}: {}", region.name, region.todo)
    ));
    out
}

/// A file's text with the body of region `anchor` replaced by `body`
/// (whole lines, each ending in a newline).
pub fn replace_body(text: &str, anchor: &str, body: &str) -> Option<String> {
    let span = find_span(text, anchor)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    for line in &lines[..=span.start] {
        out.push_str(line);
    }
    out.push_str(body);
    for line in &lines[span.end..] {
        out.push_str(line);
    }
    Some(out)
}

/// The body of region `anchor` in `text`: the lines between its markers.
pub fn body(text: &str, anchor: &str) -> Option<String> {
    let span = find_span(text, anchor)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    Some(lines[span.start + 1..span.end].concat())
}

/// The indentation of a line.
pub fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// A region's file in the fork, relative to the fork's root, where the
/// lesson is `crates/NAME`: `crates/NAME/src/x.rs`, or `shared/src/x.rs`
/// for a file reached with `../../`.
pub fn fork_path(file: &str, name: &str) -> Result<String> {
    join_path(&format!("{LESSON_PARENT}/{name}"), file)
}

/// `base/file` with `..` resolved, without touching the file system.
pub fn join_path(base: &str, file: &str) -> Result<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    bail!("{file} climbs out of the repository");
                }
            }
            part => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

/// What `fork --exercise` wrote besides the lesson.
#[derive(Debug)]
pub struct Written {
    /// The tool's crate, relative to the fork's root (`exercise`).
    pub member: String,
    /// The tool's package, named as its folder.
    pub package: String,
    /// The regions stubbed, as `sNN name`.
    pub regions: Vec<String>,
}

/// Turns the fork at `dest` of `lesson` (its crate called `name`) into
/// the exercise: every region of this lesson stubbed, the solutions and
/// the tool written into `exercise/`, the Cargo aliases into
/// `.cargo/config.toml`. Regions of earlier lessons (their markers carried
/// along) are left as they are.
pub fn write_into_fork(
    all: &[Lesson],
    lesson: &Lesson,
    dest: &Path,
    name: &str,
) -> Result<Written> {
    let Some(exercise) = load(lesson)? else {
        bail!(
            "{lesson} has no {EXERCISE_TOML}: it has no exercise yet (fork it without --exercise)"
        );
    };
    if exercise.regions.is_empty() {
        bail!("{lesson}'s {EXERCISE_TOML} lists no region");
    }
    let graded = graded_modules(all, lesson, &exercise)?;
    let data_dir = dest.join(tool::DIR);
    let mut data = tool::Data {
        lesson: lesson.id(),
        package: name.to_string(),
        graded,
        hashes: Vec::new(),
        regions: Vec::new(),
    };
    let mut regions = Vec::new();
    for region in &exercise.regions {
        let anchor = region.anchor(lesson);
        let file = fork_path(&region.file, name)?;
        let path = dest.join(&file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} in the fork", path.display()))?;
        let Some(span) = find_span(&text, &anchor) else {
            bail!(
                "{file} has no region {anchor} (`// ANCHOR: {anchor}` … `// ANCHOR_END: {anchor}`)"
            );
        };
        let start_line = text.lines().nth(span.start).unwrap_or_default();
        let solution = body(&text, &anchor).unwrap_or_default();
        let stubbed = stub(lesson, region, indent(start_line));
        let Some(new_text) = replace_body(&text, &anchor, &stubbed) else {
            bail!("{file}: region {anchor} vanished");
        };
        std::fs::write(&path, new_text)?;
        tool::write_text(
            &data_dir.join(format!("solutions/{}.txt", region.name)),
            &solution,
        )?;
        tool::write_text(
            &data_dir.join(format!("stubs/{}.txt", region.name)),
            &stubbed,
        )?;
        data.regions.push(tool::RegionData {
            name: region.name.clone(),
            anchor,
            file,
            todo: region.todo.clone(),
            hints: region.hints.clone(),
        });
        regions.push(format!("{} {}", lesson.id(), region.name));
    }
    // The tests as forked: `grade` refuses to grade edited ones.
    let tests = dest.join(LESSON_PARENT).join(name).join("tests");
    for file in lessons::all_files(&tests)? {
        let relative = file
            .strip_prefix(dest)?
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(&file)?;
        data.hashes.push((relative, tool::fnv1a(&bytes)));
    }
    tool::write_text(&data_dir.join("exercise.txt"), &data.render())?;
    tool::write_crate(dest)?;
    Ok(Written {
        member: tool::DIR.to_string(),
        package: tool::DIR.to_string(),
        regions,
    })
}

/// The section `fork --exercise` adds to the fork's README.
pub fn readme_section(lesson: &Lesson, regions: &[String]) -> String {
    let list: Vec<String> = regions.iter().map(|r| format!("`{r}`")).collect();
    format!(
        "
## The exercise

This fork is an exercise: the code of {id}'s mechanism in {regions} was replaced by
`todo!(\"{id} …\")` with a comment saying what to write (search for `TODO({id}`). Write it,
then:

```sh
cargo grade                # this lesson's tests, and the earlier lessons' apart
cargo hint                 # the next hint (approach, not code); `cargo hint REGION` for one region
cargo solution             # the course's solution beside yours, once grade is green (--peek: now)
cargo solution --apply     # put the course's solution in place
cargo reset REGION         # put the stub back (asks first)
```

`grade` runs the tests as they were forked: edit them and it says so instead of grading.
The tool behind these commands is `exercise/main.rs` (standard library only).
",
        id = lesson.id(),
        regions = list.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_stubbed_and_put_back() {
        let lesson = Lesson {
            number: 3,
            name: "s03_x".into(),
            dir: "crates/s03_x".into(),
        };
        let region = Region {
            name: "deny".into(),
            file: "src/lib.rs".into(),
            todo: "find the entry".into(),
            hints: vec![],
            uses: vec!["command".into()],
        };
        let text = "fn f(command: &str) -> u32 {\n    // ANCHOR: exercise-s03-deny\n    1\n    // ANCHOR_END: exercise-s03-deny\n}\n";
        let anchor = region.anchor(&lesson);
        assert_eq!(body(text, &anchor).as_deref(), Some("    1\n"));
        let stubbed = replace_body(text, &anchor, &stub(&lesson, &region, "    ")).unwrap();
        assert!(
            stubbed.contains("    let _ = &command;\n    todo!(\"s03 deny: find the entry\")\n")
        );
        assert_eq!(replace_body(&stubbed, &anchor, "    1\n").unwrap(), text);
    }

    #[test]
    fn fork_paths_climb_from_the_lesson() {
        assert_eq!(fork_path("src/a.rs", "my").unwrap(), "crates/my/src/a.rs");
        assert_eq!(
            fork_path("../../shared/src/agent.rs", "my").unwrap(),
            "shared/src/agent.rs"
        );
    }
}
