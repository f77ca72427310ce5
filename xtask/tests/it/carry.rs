//! `cargo xtask carry`, on a small made-up chain of five lessons in a real
//! git repository: a fix replaces identical copies, merges into a lesson
//! that changed the file, adds and deletes files, stops at the first
//! conflict without touching what comes after, and continues from there.

// The helpers below are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::process::Command;

use tempfile::TempDir;
use xtask::carry::{self, Action, Options, Report};

use crate::fixture::{copy_lesson, edit, fixture, problems, write};

const LESSONS: [&str; 5] = [
    "s01_first",
    "s02_second",
    "s03_third",
    "s04_fourth",
    "s05_fifth",
];

fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(root)
        .args(["-c", "user.name=carry", "-c", "user.email=carry@test"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn read(root: &Path, path: &str) -> String {
    fs::read_to_string(root.join(path)).unwrap()
}

/// The fixture's two lessons and three more copied from the second, each
/// with a chapter, committed; `cargo xtask check` passes on it.
fn chain() -> TempDir {
    let dir = fixture();
    let root = dir.path();
    for pair in LESSONS[1..].windows(2) {
        copy_lesson(root, pair[0], pair[1]);
        let number = &pair[1][2..3];
        write(
            root,
            &format!("docs/src/{}.md", pair[1]),
            &format!("# {number}. Lesson {number}\n\nChanges Cargo.toml.\n"),
        );
    }
    xtask::docs::generate(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "chain"]);
    assert_eq!(problems(root), Vec::<String>::new());
    dir
}

/// A change a later lesson makes to a file it inherited, copied forward to
/// the lessons after it as the chain does, committed, with the chapter
/// mentioning it as the check asks.
fn lesson_changes(root: &Path, lesson: &str, path: &str, from: &str, to: &str) {
    let at = LESSONS.iter().position(|l| *l == lesson).unwrap();
    for later in &LESSONS[at..] {
        edit(root, &format!("crates/{later}/{path}"), from, to);
    }
    let chapter = format!("docs/src/{lesson}.md");
    let text = read(root, &chapter);
    write(root, &chapter, &format!("{text}\nIt changes {path}.\n"));
    xtask::docs::generate(root).unwrap();
    git(
        root,
        &["commit", "-q", "-am", &format!("{lesson} changes {path}")],
    );
}

fn run(root: &Path, lesson: &str) -> Report {
    carry::carry(root, lesson, &Options::default()).unwrap()
}

fn actions(report: &Report, lesson: &str) -> Vec<(String, Action)> {
    report
        .steps
        .iter()
        .filter(|step| step.lesson == lesson)
        .map(|step| (step.path.clone(), step.action.clone()))
        .collect()
}

const TODO: &str = "src/todo.rs";

#[test]
fn a_fix_replaces_identical_copies_and_merges_into_changed_ones() {
    let dir = chain();
    let root = dir.path();
    // Lesson 4 changed the file in its own way, far from the fix.
    lesson_changes(
        root,
        "s04_fourth",
        TODO,
        "pub const TOOL_NAME",
        "/// Lesson 4 says why.\npub const TOOL_NAME",
    );
    // The fix, in lesson 2 where the file was introduced, names its crate.
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "pub const MAX_ITEMS: usize = 20;",
        "pub const MAX_ITEMS: usize = 30; // s02_second's limit",
    );

    let report = run(root, "s02");
    assert!(!report.conflicted(), "{}", report.render(false));
    assert_eq!(report.changed, vec![TODO.to_string()]);
    let path = |lesson: &str| format!("crates/{lesson}/{TODO}");
    assert_eq!(
        actions(&report, "s03_third"),
        vec![(path("s03_third"), Action::Replaced)]
    );
    assert_eq!(
        actions(&report, "s04_fourth"),
        vec![(path("s04_fourth"), Action::Merged)]
    );
    assert_eq!(
        actions(&report, "s05_fifth"),
        vec![(path("s05_fifth"), Action::Merged)]
    );
    // Identical copies are the new file, with their own crate name.
    assert_eq!(
        read(root, &path("s03_third")),
        read(root, &path("s02_second")).replace("s02_second", "s03_third")
    );
    // The lesson that changed the file keeps its change and gains the fix.
    let fourth = read(root, &path("s04_fourth"));
    assert!(fourth.contains("/// Lesson 4 says why."), "{fourth}");
    assert!(
        fourth.contains("MAX_ITEMS: usize = 30; // s04_fourth's limit"),
        "{fourth}"
    );
    // Lesson 5 was a copy of lesson 4's file before the fix.
    assert_eq!(
        read(root, &path("s05_fifth")),
        fourth.replace("s04_fourth", "s05_fifth")
    );
    // Nothing else to do: the book and the lessons still agree.
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn added_files_are_added_and_deleted_files_deleted_where_identical() {
    let dir = chain();
    let root = dir.path();
    write(
        root,
        "crates/s02_second/src/lock.rs",
        "//! s02_second's lock.\n",
    );
    fs::remove_file(root.join("crates/s02_second/tests/it/offered_tools.rs")).unwrap();
    // A file outside what lessons share is not carried.
    write(root, "crates/s02_second/NOTES.md", "notes\n");

    let report = run(root, "s02_second");
    assert!(!report.conflicted(), "{}", report.render(false));
    for lesson in &LESSONS[2..] {
        assert_eq!(
            read(root, &format!("crates/{lesson}/src/lock.rs")),
            format!("//! {lesson}'s lock.\n")
        );
        assert!(
            !root
                .join(format!("crates/{lesson}/tests/it/offered_tools.rs"))
                .exists()
        );
        assert!(!root.join(format!("crates/{lesson}/NOTES.md")).exists());
        let mut got = actions(&report, lesson);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![
                (format!("crates/{lesson}/src/lock.rs"), Action::Added),
                (
                    format!("crates/{lesson}/tests/it/offered_tools.rs"),
                    Action::Deleted
                ),
            ]
        );
    }
    // The earlier lesson is not touched.
    assert!(!root.join("crates/s01_first/src/lock.rs").exists());
}

#[test]
fn a_conflict_stops_the_carry_there_and_the_carry_continues_from_it() {
    let dir = chain();
    let root = dir.path();
    lesson_changes(
        root,
        "s04_fourth",
        TODO,
        "pub const MAX_ITEMS: usize = 20;",
        "pub const MAX_ITEMS: usize = 25;",
    );
    let before_fifth = read(root, "crates/s05_fifth/src/todo.rs");
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "pub const MAX_ITEMS: usize = 20;",
        "pub const MAX_ITEMS: usize = 30;",
    );

    let report = run(root, "s02");
    assert_eq!(report.stopped_at.as_deref(), Some("s04_fourth"));
    let rendered = report.render(false);
    assert!(
        rendered.contains("stopped at s04_fourth: conflict in crates/s04_fourth/src/todo.rs")
            && rendered.contains("cargo xtask carry s04"),
        "{rendered}"
    );
    // Lesson 3 got the fix; lesson 4 has standard conflict markers.
    assert!(read(root, "crates/s03_third/src/todo.rs").contains("= 30;"));
    let fourth = read(root, "crates/s04_fourth/src/todo.rs");
    for marker in ["<<<<<<< s04_fourth", "=======", ">>>>>>> the fix"] {
        assert!(fourth.contains(marker), "{fourth}");
    }
    assert!(fourth.contains("= 25;") && fourth.contains("= 30;"));
    // Nothing past the conflict is touched, and no page was regenerated.
    assert_eq!(read(root, "crates/s05_fifth/src/todo.rs"), before_fifth);
    assert!(report.regenerated.is_empty());

    // Resolve (the fix wins), then carry on from lesson 4.
    let start = fourth.find("<<<<<<<").unwrap();
    let end = fourth.find(">>>>>>> the fix\n").unwrap() + ">>>>>>> the fix\n".len();
    let resolved = format!(
        "{}pub const MAX_ITEMS: usize = 30;\n{}",
        &fourth[..start],
        &fourth[end..]
    );
    write(root, "crates/s04_fourth/src/todo.rs", &resolved);
    let report = run(root, "s04");
    assert!(!report.conflicted(), "{}", report.render(false));
    assert_eq!(
        actions(&report, "s05_fifth"),
        vec![("crates/s05_fifth/src/todo.rs".to_string(), Action::Replaced)]
    );
    assert_eq!(
        read(root, "crates/s05_fifth/src/todo.rs"),
        resolved.replace("s04_fourth", "s05_fifth")
    );
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn an_added_file_a_later_lesson_already_has_and_a_deleted_one_it_changed_are_conflicts() {
    let dir = chain();
    let root = dir.path();
    write(
        root,
        "crates/s03_third/src/lock.rs",
        "//! lesson 3's own.\n",
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "s03 lock"]);
    write(root, "crates/s02_second/src/lock.rs", "//! the fix's.\n");
    let report = run(root, "s02");
    assert_eq!(report.stopped_at.as_deref(), Some("s03_third"));
    let lock = read(root, "crates/s03_third/src/lock.rs");
    assert!(lock.contains("<<<<<<< s03_third") && lock.contains("the fix's"));
    assert!(!root.join("crates/s04_fourth/src/lock.rs").exists());

    let dir = chain();
    let root = dir.path();
    lesson_changes(
        root,
        "s03_third",
        TODO,
        "Longest list.",
        "Longest list, lesson 3.",
    );
    fs::remove_file(root.join("crates/s02_second/src/todo.rs")).unwrap();
    let report = run(root, "s02");
    assert_eq!(report.stopped_at.as_deref(), Some("s03_third"));
    assert!(matches!(
        &actions(&report, "s03_third")[0].1,
        Action::Conflict(why) if why.contains("deletes this file")
    ));
    // Left for a person to decide: still there, unchanged.
    assert!(read(root, "crates/s03_third/src/todo.rs").contains("lesson 3"));
    assert!(root.join("crates/s04_fourth/src/todo.rs").exists());
}

#[test]
fn a_dry_run_writes_nothing_and_from_carries_a_committed_fix() {
    let dir = chain();
    let root = dir.path();
    edit(root, "crates/s02_second/src/todo.rs", "= 20;", "= 30;");
    let dry = Options {
        dry_run: true,
        ..Options::default()
    };
    let report = carry::carry(root, "s02", &dry).unwrap();
    assert_eq!(report.steps.len(), 3);
    let rendered = report.render(true);
    assert!(
        rendered.contains("crates/s03_third/src/todo.rs: would be replaced"),
        "{rendered}"
    );
    assert!(read(root, "crates/s03_third/src/todo.rs").contains("= 20;"));
    assert_eq!(
        git(root, &["status", "--porcelain", "--", "crates/s03_third"]),
        ""
    );

    // The fix committed: `--from` names the revision before it.
    git(root, &["commit", "-q", "-am", "fix in s02"]);
    assert!(run(root, "s02").changed.is_empty());
    let from = Options {
        from: Some("HEAD~1".into()),
        ..Options::default()
    };
    let report = carry::carry(root, "s02", &from).unwrap();
    assert!(!report.conflicted());
    for lesson in &LESSONS[2..] {
        assert!(read(root, &format!("crates/{lesson}/src/todo.rs")).contains("= 30;"));
    }
}

#[test]
fn a_later_lesson_with_uncommitted_changes_is_refused() {
    let dir = chain();
    let root = dir.path();
    edit(root, "crates/s02_second/src/todo.rs", "= 20;", "= 30;");
    edit(
        root,
        "crates/s04_fourth/src/todo.rs",
        "Longest",
        "The longest",
    );
    let err = carry::carry(root, "s02", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("s04_fourth has uncommitted changes"), "{err}");
    assert!(read(root, "crates/s03_third/src/todo.rs").contains("= 20;"));
}

#[test]
fn chapters_that_include_a_changed_file_are_listed_for_review() {
    let dir = chain();
    let root = dir.path();
    // Chapter 3 shows lesson 3's copy of the file the fix changes; chapter
    // 1 shows a file the fix does not touch.
    write(
        root,
        "docs/src/s03_third.md",
        "# 3. Lesson 3\n\nChanges Cargo.toml.\n\n```rust\n{{#include ../../crates/s03_third/src/todo.rs}}\n```\n",
    );
    git(root, &["commit", "-q", "-am", "chapter 3 shows todo.rs"]);
    edit(root, "crates/s02_second/src/todo.rs", "= 20;", "= 30;");
    let report = run(root, "s02");
    assert!(!report.conflicted(), "{}", report.render(false));
    assert_eq!(
        report.to_review,
        vec!["docs/src/s03_third.md:6: includes crates/s03_third/src/todo.rs, which changed"]
    );
    // The diff pages are written again: lesson 2's shows the new line.
    assert!(
        report
            .regenerated
            .iter()
            .any(|page| page.ends_with("changes/s02_second.md")),
        "{:?}",
        report.regenerated
    );
    assert!(read(root, "docs/src/changes/s02_second.md").contains("= 30;"));
    assert_eq!(problems(root), Vec::<String>::new());
}
