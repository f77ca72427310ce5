//! The generator and every check rule, on a small made-up repository with
//! two lessons: the pages it renders (snapshots), and for each rule a change
//! that breaks it and the message that names the fix.

// The helpers below are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use tempfile::TempDir;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn edit(root: &Path, path: &str, from: &str, to: &str) {
    let text = fs::read_to_string(root.join(path)).unwrap();
    assert!(text.contains(from), "{path} has no {from:?}");
    fs::write(root.join(path), text.replacen(from, to, 1)).unwrap();
}

const CARGO_TOML: &str = "[package]\nname = \"NAME\"\nversion = \"0.1.0\"\n";

const HOOKS_1: &str = r#"//! Hooks.

/// The hooks.
pub struct LessonHooks;

impl Hooks for LessonHooks {
    // ANCHOR: tools
    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![bash::spec()]
    }
    // ANCHOR_END: tools
}
"#;

const HOOKS_2: &str = r#"//! Hooks.

/// The hooks.
pub struct LessonHooks;

impl Hooks for LessonHooks {
    fn tools(&mut self) -> Vec<ToolSpec> {
        vec![bash::spec(), todo::spec()]
    }
}
"#;

const TODO: &str = r#"//! The todo tool.

/// Longest list.
pub const MAX_ITEMS: usize = 20;

/// Extra flags of this lesson.
#[derive(clap::Args)]
pub struct TodoArgs {
    /// Turns before a reminder.
    #[arg(long)]
    pub nag_after: Option<u32>,
}

/// What the model is told about `todo_write`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        "todo_write",
        "Rewrite the todo list. Use it for work with <3 or more> steps.",
        json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "maxItems": MAX_ITEMS, "description": "The whole list."},
                "note": {"type": "string"},
            },
            "required": ["items"]
        }),
    )
}
"#;

/// A repository with lessons s01_first and s02_second, pages generated.
fn fixture() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "shared/src/tools/bash.rs",
        r#"pub fn spec() -> ToolSpec {
    ToolSpec::new("bash", "Run a command.", json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}))
}"#,
    );
    write(
        root,
        "shared/src/cli/args.rs",
        "pub struct CommonArgs {\n    #[arg(long)]\n    pub demo: bool,\n    #[arg(short = 'p', long = \"prompt\")]\n    pub prompt: Option<String>,\n}\n",
    );
    for (name, number, title, hooks) in [
        ("s01_first", 1, "The first", HOOKS_1),
        ("s02_second", 2, "The second", HOOKS_2),
    ] {
        let dir = format!("crates/{name}");
        write(
            root,
            &format!("{dir}/Cargo.toml"),
            &CARGO_TOML.replace("NAME", name),
        );
        write(
            root,
            &format!("{dir}/src/lib.rs"),
            &format!(
                "//! # Lesson {number}: the {}\n\npub mod hooks;\n\npub const LESSON: Lesson = Lesson {{ id: \"s0{number}\", title: \"{title}\" }};\n",
                title.to_lowercase().trim_start_matches("the ")
            ),
        );
        write(
            root,
            &format!("{dir}/src/main.rs"),
            &format!("fn main() {{\n    {name}::run();\n}}\n"),
        );
        write(root, &format!("{dir}/src/hooks.rs"), hooks);
        write(root, &format!("{dir}/tests/snapshots/x.snap"), name);
        write(root, &format!("{dir}/.tasks/state.json"), name);
    }
    write(root, "crates/s02_second/src/todo.rs", TODO);
    write(
        root,
        "docs/src/introduction.md",
        "# Introduction\n\nStart with [lesson 1](s01_first.md#try-it).\n",
    );
    write(
        root,
        "docs/src/s01_first.md",
        "# 1. The first\n\n> *\"One loop | one tool\"* \u{2014} and more.\n\n\
         ```rust\n{{#include ../../crates/s01_first/src/hooks.rs:tools}}\n```\n\n\
         ## Try it\n\n```sh\ncargo run -p s01_first -- --demo -p \"list files\"\n```\n",
    );
    write(
        root,
        "docs/src/s02_second.md",
        "# 2. The second\n\nAdds `src/todo.rs`; changes src/hooks.rs, src/lib.rs and Cargo.toml.\n\n\
         ```sh\n$ cargo run -p s02_second -- --nag-after 3 -p hi\n$ cargo xtask diff s01 s02\n```\n\n\
         See [what changed](changes/s02_second.md#types-and-functions).\n",
    );
    xtask::docs::generate(root).unwrap();
    dir
}

fn problems(root: &Path) -> Vec<String> {
    xtask::check::run(root)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_generated_repository_passes_every_check() {
    let dir = fixture();
    assert_eq!(problems(dir.path()), Vec::<String>::new());
    // Generating again changes nothing: the output is deterministic.
    assert_eq!(
        xtask::docs::generate(dir.path()).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn rendered_pages() {
    let dir = fixture();
    let read = |path: &str| fs::read_to_string(dir.path().join(path)).unwrap();
    insta::assert_snapshot!("changes_s02", read("docs/src/changes/s02_second.md"));
    insta::assert_snapshot!("changes_s01", read("docs/src/changes/s01_first.md"));
    insta::assert_snapshot!("lessons", read("docs/src/lessons.md"));
    insta::assert_snapshot!("summary", read("docs/src/SUMMARY.md"));
}

#[test]
fn a_changed_lesson_makes_its_page_stale() {
    let dir = fixture();
    // Anchors are book markup: adding one changes no generated page.
    edit(
        dir.path(),
        "crates/s02_second/src/todo.rs",
        "pub fn spec",
        "// ANCHOR: spec\npub fn spec",
    );
    assert_eq!(problems(dir.path()), Vec::<String>::new());
    edit(dir.path(), "crates/s02_second/src/todo.rs", "20", "30");
    assert_eq!(
        problems(dir.path()),
        ["docs/src/changes/s02_second.md is stale: run `cargo xtask docs`"]
    );
    xtask::docs::generate(dir.path()).unwrap();
    assert_eq!(problems(dir.path()), Vec::<String>::new());
}

#[test]
fn chapters_and_crates_must_match() {
    let dir = fixture();
    let root = dir.path();
    fs::rename(
        root.join("docs/src/s02_second.md"),
        root.join("docs/src/s02_other.md"),
    )
    .unwrap();
    let found = problems(root);
    assert!(
        found.contains(
            &"crates/s02_second has no chapter: write docs/src/s02_second.md".to_string()
        ),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|p| p.starts_with(
            "docs/src/s02_other.md has no lesson crate crates/s02_other: name the chapter after its crate"
        )),
        "{found:#?}"
    );
}

#[test]
fn pages_of_removed_lessons_are_reported_and_removed() {
    let dir = fixture();
    write(dir.path(), "docs/src/changes/s09_gone.md", "old");
    assert_eq!(
        problems(dir.path()),
        [
            "docs/src/changes/s09_gone.md belongs to no lesson crate: run `cargo xtask docs` (it removes the page)"
        ]
    );
    xtask::docs::generate(dir.path()).unwrap();
    assert!(!dir.path().join("docs/src/changes/s09_gone.md").exists());
}

#[test]
fn includes_must_resolve() {
    let dir = fixture();
    let root = dir.path();
    let chapter = "docs/src/s01_first.md";
    edit(root, chapter, "hooks.rs:tools", "hooks.rs:tool");
    edit(
        root,
        chapter,
        "## Try it",
        "{{#include ../../crates/s01_first/src/nope.rs}}\n{{#include ../../crates/s01_first/src/main.rs:2:9}}\n\\{{#include escaped.rs}}\n\n## Try it",
    );
    assert_eq!(
        problems(root),
        [
            "docs/src/s01_first.md:6: crates/s01_first/src/hooks.rs has no `ANCHOR: tool`: put `// ANCHOR: tool` and `// ANCHOR_END: tool` around the code to show, or fix the name",
            "docs/src/s01_first.md:9: {{#include ../../crates/s01_first/src/nope.rs}}: no such file crates/s01_first/src/nope.rs: fix the path (it is relative to the page)",
            "docs/src/s01_first.md:10: line range 2:9 is outside crates/s01_first/src/main.rs (3 lines): fix the range, or use an anchor, which follows edits",
        ]
    );
    edit(root, chapter, "hooks.rs:tool}}", "hooks.rs:tools}}");
    edit(
        root,
        "crates/s01_first/src/hooks.rs",
        "// ANCHOR_END: tools",
        "",
    );
    let found = problems(root);
    assert!(
        found.contains(&"docs/src/s01_first.md:6: crates/s01_first/src/hooks.rs has `ANCHOR: tools` but no `ANCHOR_END: tools`: add it where the snippet ends".to_string()),
        "{found:#?}"
    );
}

#[test]
fn links_must_resolve_inside_the_book() {
    let dir = fixture();
    let root = dir.path();
    write(
        root,
        "docs/src/introduction.md",
        "# Introduction\n\n[a](s01_first.md#nowhere) [b](missing.md) [c](../../crates/s01_first/src/lib.rs)\n\
         [d](/s01_first.html) [e](s01_first.html#try-it) [f](#introduction) [g](https://example.com/x.md)\n",
    );
    assert_eq!(
        problems(root),
        [
            "docs/src/introduction.md:3: link to s01_first.md#nowhere: docs/src/s01_first.md has no heading with id `nowhere`: link to an existing heading (ids are the heading text, lower case, spaces as `-`)",
            "docs/src/introduction.md:3: link to missing.md: no such file docs/src/missing.md: fix the link (it is relative to the page)",
            "docs/src/introduction.md:3: link to ../../crates/s01_first/src/lib.rs: crates/s01_first/src/lib.rs is outside docs/src, so the built book does not have it: show code with {{#include}}, or link to a page of the book",
            "docs/src/introduction.md:4: link to /s01_first.html: an absolute path breaks when the book is served under a prefix: make it relative to the page",
        ]
    );
}

#[test]
fn try_it_commands_must_name_real_crates_and_flags() {
    let dir = fixture();
    let root = dir.path();
    edit(
        root,
        "docs/src/s01_first.md",
        "-- --demo -p",
        "-- --nag-after 3 --demo -p",
    );
    edit(
        root,
        "docs/src/s02_second.md",
        "$ cargo xtask diff s01 s02",
        "$ cargo run -p s02_typo\n$ cargo xtask diff s07",
    );
    assert_eq!(
        problems(root),
        [
            "docs/src/s01_first.md:11: `cargo run -p s01_first -- … --nag-after`: s01_first has no flag --nag-after: use one of --demo, --help, --prompt, -h, -p",
            "docs/src/s02_second.md:5: `cargo run -p s02_typo`: there is no lesson crate s02_typo: use one of s01_first, s02_second",
            "docs/src/s02_second.md:5: `cargo xtask diff`: there is no lesson s07: use one of s01_first, s02_second",
        ]
    );
}

#[test]
fn every_file_that_differs_between_lessons_is_mentioned_in_the_chapter() {
    let dir = fixture();
    let root = dir.path();
    edit(root, "docs/src/s02_second.md", "Adds `src/todo.rs`; ", "");
    // A difference in anchors only is not a difference...
    edit(
        root,
        "crates/s02_second/src/main.rs",
        "fn main() {",
        "// ANCHOR: main\nfn main() {",
    );
    // ...but a file that exists in one lesson only is.
    write(root, "crates/s01_first/demo.json", "{}\n");
    // Tests are not: rule 7 covers them.
    write(
        root,
        "crates/s02_second/tests/end_to_end.rs",
        "#[test]\nfn runs() {}\n",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/src/s02_second.md does not mention demo.json (removed since s01_first): say in the chapter what changed there, or make the file identical to s01_first's (see `cargo xtask diff s02`)",
            "docs/src/s02_second.md does not mention src/todo.rs (added since s01_first): say in the chapter what changed there, or make the file identical to s01_first's (see `cargo xtask diff s02`)",
        ]
    );
}

/// A test module every lesson inherits unchanged.
const DISPATCH_TEST: &str = r#"//! The dispatch map, through the real loop.

use crate::support;

#[test]
fn every_tool_is_dispatched() {
    let hooks = support::hooks();
    assert!(!hooks.tools().is_empty());
}
"#;

/// Puts the fixture's lessons on the one-test-binary layout: the same
/// `dispatch.rs` in both, and wiring (`main.rs`, `support.rs`, `demo.rs`)
/// and snapshots of their own; then regenerates the pages.
fn with_test_binaries(root: &Path) {
    for name in ["s01_first", "s02_second"] {
        let it = format!("crates/{name}/tests/it");
        write(
            root,
            &format!("{it}/main.rs"),
            &format!(
                "extern crate {name} as lesson;\n\nconst BIN: &str = env!(\"CARGO_BIN_EXE_{name}\");\n\nmod demo;\nmod dispatch;\nmod support;\n"
            ),
        );
        write(
            root,
            &format!("{it}/support.rs"),
            &format!(
                "pub fn hooks() -> lesson::hooks::LessonHooks {{\n    // {name}'s wiring\n    lesson::hooks::LessonHooks\n}}\n"
            ),
        );
        write(
            root,
            &format!("{it}/demo.rs"),
            &format!("#[test]\nfn demo() {{\n    // runs {name} --demo\n}}\n"),
        );
        write(root, &format!("{it}/dispatch.rs"), DISPATCH_TEST);
        write(
            root,
            &format!("{it}/snapshots/it__dispatch__tools.snap"),
            name,
        );
    }
    xtask::docs::generate(root).unwrap();
}

/// Copies every file of `crates/{from}` to `crates/{to}`, renaming the crate
/// in paths and contents.
fn copy_lesson(root: &Path, from: &str, to: &str) {
    let crates = root.join("crates");
    let mut pending = vec![crates.join(from)];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(&crates).unwrap().to_string_lossy();
            let text = fs::read_to_string(&path).unwrap();
            write(
                root,
                &format!("crates/{}", relative.replacen(from, to, 1)),
                &text.replace(from, to),
            );
        }
    }
}

#[test]
fn identical_test_modules_and_lesson_wiring_pass() {
    let dir = fixture();
    let root = dir.path();
    with_test_binaries(root);
    // A mechanism's module is new in the lesson that introduces it.
    write(
        root,
        "crates/s02_second/tests/it/todo.rs",
        "//! The todo tool.\n\nuse lesson::todo;\n",
    );
    edit(
        root,
        "crates/s02_second/tests/it/main.rs",
        "mod support;",
        "mod support;\nmod todo;",
    );
    // A snapshot directory beside the binary is no test of its own.
    write(root, "crates/s02_second/tests/snapshots/y.snap", "y");
    xtask::docs::generate(root).unwrap();
    // main.rs, support.rs, demo.rs and snapshots differ, and the chapter
    // does not say so: tests are not copy-forward's business.
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn a_test_module_changed_in_a_later_lesson_is_reported() {
    let dir = fixture();
    let root = dir.path();
    with_test_binaries(root);
    // A third lesson, the second's copy: the module came from s01.
    copy_lesson(root, "s02_second", "s03_third");
    write(root, "docs/src/s03_third.md", "# 3. The third\n");
    xtask::docs::generate(root).unwrap();
    assert_eq!(problems(root), Vec::<String>::new());
    edit(
        root,
        "crates/s03_third/tests/it/dispatch.rs",
        "is_empty());",
        "is_empty(), \"no tools\");",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s03_third/tests/it/dispatch.rs differs from crates/s02_second/tests/it/dispatch.rs (first difference: line 8): inherited test modules must stay identical in every later lesson: make the change in crates/s01_first/tests/it/dispatch.rs, where s01 introduced it, and copy it forward; what only this lesson needs goes in tests/it/support.rs"
        ]
    );
}

#[test]
fn a_test_module_missing_in_a_later_lesson_is_reported() {
    let dir = fixture();
    let root = dir.path();
    with_test_binaries(root);
    fs::remove_file(root.join("crates/s02_second/tests/it/dispatch.rs")).unwrap();
    edit(
        root,
        "crates/s02_second/tests/it/main.rs",
        "mod dispatch;\n",
        "",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s02_second/tests/it/dispatch.rs is missing, but crates/s01_first/tests/it/dispatch.rs has it: inherited test modules must stay identical in every later lesson: copy it forward (and declare the module in main.rs)"
        ]
    );
}

#[test]
fn only_main_rs_names_the_crate() {
    let dir = fixture();
    let root = dir.path();
    with_test_binaries(root);
    write(
        root,
        "crates/s02_second/tests/it/todo.rs",
        "//! The todo tool.\n\nuse s02_second::todo;\n",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s02_second/tests/it/todo.rs:3: names the crate s02_second: only tests/it/main.rs may name it, so that the module can be copied to the next lesson unchanged: write `lesson::…` (main.rs has `extern crate s02_second as lesson;`) and `crate::BIN` for the binary"
        ]
    );
}

#[test]
fn a_lesson_with_tests_it_has_no_other_test_binary() {
    let dir = fixture();
    let root = dir.path();
    with_test_binaries(root);
    write(
        root,
        "crates/s02_second/tests/end_to_end.rs",
        "#[test]\nfn runs() {}\n",
    );
    write(
        root,
        "crates/s02_second/tests/cli/main.rs",
        "#[test]\nfn cli() {}\n",
    );
    // Without main.rs, cargo builds nothing from tests/it.
    fs::remove_file(root.join("crates/s01_first/tests/it/main.rs")).unwrap();
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s01_first/tests/it has no main.rs, so cargo builds no test from it: write tests/it/main.rs (it names the crate and declares the modules)",
            "crates/s02_second/tests/cli/main.rs is a test binary of its own next to tests/it/main.rs: make it a module of that one binary, tests/it/cli.rs with `mod cli;` in main.rs",
            "crates/s02_second/tests/end_to_end.rs is a test binary of its own next to tests/it/main.rs: make it a module of that one binary, tests/it/end_to_end.rs with `mod end_to_end;` in main.rs",
        ]
    );
}
