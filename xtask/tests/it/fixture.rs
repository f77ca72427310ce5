//! The generator and every check rule, on a small made-up repository with
//! two lessons: the pages it renders (snapshots), and for each rule a change
//! that breaks it and the message that names the fix.

// The helpers below are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use tempfile::TempDir;

pub(crate) fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub(crate) fn edit(root: &Path, path: &str, from: &str, to: &str) {
    let text = fs::read_to_string(root.join(path)).unwrap();
    assert!(text.contains(from), "{path} has no {from:?}");
    fs::write(root.join(path), text.replacen(from, to, 1)).unwrap();
}

const CARGO_TOML: &str = "[package]\nname = \"NAME\"\nversion = \"0.1.0\"\ndescription = \"Lesson N: the mechanism.\"\n\n[dependencies]\nanyhow.workspace = true\n";

/// The test module every lesson has: it snapshots the tools the lesson
/// sends (the pages read that snapshot, not this code).
const OFFERED_TOOLS_TEST: &str = r#"#[tokio::test]
async fn tools() {
    insta::assert_json_snapshot!("tools", crate::support::offered().await);
}
"#;

/// Where a lesson's snapshot of its offered tools is, crate-relative.
const TOOLS_SNAPSHOT: &str = "tests/it/snapshots/it__offered_tools__tools.snap";

/// `bash` as the lessons send it: the description as the model reads it,
/// with the numbers the source fills in with `format!`.
const BASH_SENT: &str = r#"{
    "description": "Run a command. Commands stop after 120 seconds (at most 600).",
    "input_schema": {
      "properties": {
        "command": {
          "type": "string"
        }
      },
      "required": [
        "command"
      ],
      "type": "object"
    },
    "name": "bash"
  }"#;

/// `todo_write` as lesson 2 sends it.
const TODO_SENT: &str = r#"{
    "description": "Rewrite the todo list. Use it for work with <3 or more> steps.",
    "input_schema": {
      "properties": {
        "items": {
          "description": "The whole list.",
          "maxItems": 20,
          "type": "array"
        },
        "note": {
          "type": "string"
        }
      },
      "required": [
        "items"
      ],
      "type": "object"
    },
    "name": "todo_write"
  }"#;

/// Writes the insta snapshot of the tools `lesson` sends.
fn write_tools_snapshot(root: &Path, lesson: &str, tools: &[&str]) {
    let listed: Vec<String> = tools.iter().map(|tool| format!("  {tool}")).collect();
    write(
        root,
        &format!("crates/{lesson}/{TOOLS_SNAPSHOT}"),
        &format!(
            "---\nsource: crates/{lesson}/tests/it/offered_tools.rs\nexpression: tools\n---\n[\n{}\n]\n",
            listed.join(",\n")
        ),
    );
}

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

/// The tool's name.
pub const TOOL_NAME: &str = "todo_write";

/// What the model is told about `todo_write`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(
        TOOL_NAME,
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

/// The map of the fixture's code: every module file of `shared/src` and
/// `xtask/src` under its folder (rule 12), one description continued on a
/// second line.
const ARCHITECTURE: &str = "# Architecture\n\n```\nshared/src/\n  cli/args.rs     the flags every lesson accepts\n  tools/bash.rs   the bash tool: runs a command,\n                  stops it after a while\ncrates/sNN_name/\n  src/lib.rs      the lesson\nxtask/src/\n  main.rs         the tasks\n```\n";

/// A repository with lessons s01_first and s02_second, pages generated.
pub(crate) fn fixture() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "shared/src/tools/bash.rs",
        r#"pub const MAX_TIMEOUT_SECS: u64 = 600;
pub fn spec() -> ToolSpec {
    ToolSpec::new("bash", format!("Run a command. Commands stop after {} seconds (at most {MAX_TIMEOUT_SECS}).", 120), json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}))
}"#,
    );
    write(
        root,
        "shared/src/cli/args.rs",
        "pub struct CommonArgs {\n    #[arg(long)]\n    pub demo: bool,\n    #[arg(short = 'p', long = \"prompt\")]\n    pub prompt: Option<String>,\n}\n",
    );
    write(root, "xtask/src/main.rs", "fn main() {}\n");
    write(root, "ARCHITECTURE.md", ARCHITECTURE);
    for (name, number, title, hooks) in [
        ("s01_first", 1, "The first", HOOKS_1),
        ("s02_second", 2, "The second", HOOKS_2),
    ] {
        let dir = format!("crates/{name}");
        write(
            root,
            &format!("{dir}/Cargo.toml"),
            &CARGO_TOML
                .replace("NAME", name)
                .replace("Lesson N", &format!("Lesson {number}")),
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
        write(
            root,
            &format!("{dir}/tests/it/main.rs"),
            &format!("extern crate {name} as lesson;\n\nmod offered_tools;\n"),
        );
        write(
            root,
            &format!("{dir}/tests/it/offered_tools.rs"),
            OFFERED_TOOLS_TEST,
        );
        write(root, &format!("{dir}/.tasks/state.json"), name);
    }
    write(root, "crates/s02_second/src/todo.rs", TODO);
    write_tools_snapshot(root, "s01_first", &[BASH_SENT]);
    write_tools_snapshot(root, "s02_second", &[BASH_SENT, TODO_SENT]);
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

pub(crate) fn problems(root: &Path) -> Vec<String> {
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
        "crates/s02_second/tests/it/todo.rs",
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
                "extern crate {name} as lesson;\n\nconst BIN: &str = env!(\"CARGO_BIN_EXE_{name}\");\n\nmod demo;\nmod dispatch;\nmod offered_tools;\nmod support;\n"
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
/// in paths and contents and renumbering the description, as a new lesson
/// is made.
pub(crate) fn copy_lesson(root: &Path, from: &str, to: &str) {
    let number = |name: &str| name[1..3].trim_start_matches('0').to_string();
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
    edit(
        root,
        &format!("crates/{to}/Cargo.toml"),
        &format!("Lesson {}:", number(from)),
        &format!("Lesson {}:", number(to)),
    );
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
    write(
        root,
        "docs/src/s03_third.md",
        "# 3. The third\n\nOnly the description in Cargo.toml changes.\n",
    );
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

/// A third lesson, the second's copy plus a `compact` tool: its module
/// names the tool with a `TOOL_NAME` constant, as `todo.rs` does, and
/// builds the description with `format!`.
fn with_compact_lesson(root: &Path) {
    copy_lesson(root, "s02_second", "s03_third");
    write(
        root,
        "crates/s03_third/src/compact.rs",
        r#"//! The compact tool.

/// The tool's name.
pub const TOOL_NAME: &str = "compact";

/// What the model is told about `compact`.
pub fn spec() -> ToolSpec {
    ToolSpec::new(TOOL_NAME, format!("Summarize {} to free context space.", "the conversation"), json!({"type": "object", "properties": {}}))
}
"#,
    );
    edit(
        root,
        "crates/s03_third/src/hooks.rs",
        "todo::spec()]",
        "todo::spec(), compact::spec()]",
    );
    write(
        root,
        "docs/src/s03_third.md",
        "# 3. The third\n\nAdds `src/compact.rs`; changes src/hooks.rs, src/lib.rs and Cargo.toml.\n",
    );
    write_tools_snapshot(
        root,
        "s03_third",
        &[
            BASH_SENT,
            TODO_SENT,
            r#"{
    "description": "Summarize the conversation to free context space.",
    "input_schema": {
      "properties": {},
      "type": "object"
    },
    "name": "compact"
  }"#,
        ],
    );
    xtask::docs::generate(root).unwrap();
}

/// The `## Tools` section of a generated page.
fn tools_section(root: &Path, lesson: &str) -> String {
    let page = fs::read_to_string(root.join(format!("docs/src/changes/{lesson}.md"))).unwrap();
    let start = page.find("## Tools\n").unwrap();
    let end = page[start..].find("\n## Types").unwrap();
    page[start..start + end].to_string()
}

#[test]
fn a_tool_a_lesson_adds_is_new_under_its_own_name_with_its_own_description() {
    let dir = fixture();
    let root = dir.path();
    with_compact_lesson(root);
    assert_eq!(problems(root), Vec::<String>::new());
    assert_eq!(
        tools_section(root, "s03_third"),
        "## Tools\n\nThe model can call 3 tools.\n\n\
         - **`compact`** (new): Summarize the conversation to free context space.\n\
         - Unchanged: `bash`, `todo_write`.\n"
    );
    let lessons = fs::read_to_string(root.join("docs/src/lessons.md")).unwrap();
    assert!(lessons.contains("| 3, new: `compact` |"), "{lessons}");
}

#[test]
fn a_tool_is_changed_only_when_what_the_lesson_sends_changes() {
    let dir = fixture();
    let root = dir.path();
    // The third lesson changes `todo.rs`'s source, but not what it sends.
    with_compact_lesson(root);
    edit(
        root,
        "crates/s03_third/src/todo.rs",
        "/// What the model is told",
        "/// Comments are not sent.\n/// What the model is told",
    );
    edit(
        root,
        "docs/src/s03_third.md",
        "changes src/hooks.rs",
        "changes src/todo.rs, src/hooks.rs",
    );
    xtask::docs::generate(root).unwrap();
    assert!(
        tools_section(root, "s03_third").contains("- Unchanged: `bash`, `todo_write`.\n"),
        "{}",
        tools_section(root, "s03_third")
    );
    assert!(!tools_section(root, "s03_third").contains("(changed)"));
    // A new description, or a new input, is a change.
    let snapshot = format!("crates/s03_third/{TOOLS_SNAPSHOT}");
    edit(root, &snapshot, "Use it for work", "Use it only for work");
    edit(
        root,
        &snapshot,
        "\"command\": {\n          \"type\": \"string\"\n        }",
        "\"command\": {\n          \"type\": \"string\"\n        },\n        \"timeout\": {\n          \"type\": \"integer\"\n        }",
    );
    assert_eq!(
        problems(root),
        ["docs/src/changes/s03_third.md is stale: run `cargo xtask docs`"]
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        tools_section(root, "s03_third"),
        "## Tools\n\nThe model can call 3 tools.\n\n\
         - **`bash`** (changed): Run a command. Commands stop after 120 seconds (at most 600).\n  \
           - `command` (string, required)\n  \
           - `timeout` (integer)\n\
         - **`todo_write`** (changed): Rewrite the todo list. Use it only for work with &lt;3 or more&gt; steps.\n  \
           - `items` (array, required): The whole list.\n  \
           - `note` (string)\n\
         - **`compact`** (new): Summarize the conversation to free context space.\n"
    );
}

#[test]
fn a_tool_description_is_shown_as_sent() {
    let dir = fixture();
    let root = dir.path();
    // The source builds it with `format!("… after {} seconds (at most
    // {MAX_TIMEOUT_SECS}).", 120)`; the page shows what the model reads.
    assert_eq!(
        tools_section(root, "s01_first"),
        "## Tools\n\nThe model can call 1 tool.\n\n\
         - **`bash`**: Run a command. Commands stop after 120 seconds (at most 600).\n  \
           - `command` (string, required)\n"
    );
}

#[test]
fn a_missing_tool_snapshot_is_reported_with_the_command_that_writes_it() {
    let dir = fixture();
    let root = dir.path();
    fs::remove_file(root.join(format!("crates/s02_second/{TOOLS_SNAPSHOT}"))).unwrap();
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s02_second/tests/it/snapshots/it__offered_tools__tools.snap is missing, so the book cannot list the tools s02_second offers: run `INSTA_UPDATE=always cargo test -p s02_second --test it -- offered_tools` (the test is tests/it/offered_tools.rs, the same in every lesson), check the snapshot, then run `cargo xtask docs`"
        ]
    );
    assert_eq!(
        tools_section(root, "s02_second"),
        "## Tools\n\nThe tool list is not recorded: `crates/s02_second/tests/it/snapshots/it__offered_tools__tools.snap` is missing. \
         `INSTA_UPDATE=always cargo test -p s02_second --test it -- offered_tools` writes it.\n"
    );
    write(
        root,
        &format!("crates/s02_second/{TOOLS_SNAPSHOT}"),
        "---\nx: y\n---\n[1, 2\n",
    );
    xtask::docs::generate(root).unwrap();
    let found = problems(root);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("crates/s02_second/tests/it/snapshots/it__offered_tools__tools.snap is not a list of tools (expected `,` or `]` at line 2 of the JSON), so"),
        "{found:#?}"
    );
}

#[test]
fn a_description_starts_with_the_lessons_own_number() {
    let dir = fixture();
    let root = dir.path();
    // Copied from lesson 1 and not renumbered.
    edit(
        root,
        "crates/s02_second/Cargo.toml",
        "Lesson 2: the mechanism.",
        "Lesson 1: the mechanism.",
    );
    edit(
        root,
        "crates/s01_first/Cargo.toml",
        "description = \"Lesson 1: the mechanism.\"\n",
        "",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "crates/s01_first/Cargo.toml has no `description` in [package]: add `description = \"Lesson 1: …\"` (the mechanism, in a few words)",
            "crates/s02_second/Cargo.toml:4: the description starts \"Lesson 1:\", not \"Lesson 2:\": start it with \"Lesson 2:\", this lesson's own number",
        ]
    );
    // "Lesson 12:" is not "Lesson 1:".
    edit(
        root,
        "crates/s02_second/Cargo.toml",
        "Lesson 1: the mechanism.",
        "Lesson 21: the mechanism.",
    );
    xtask::docs::generate(root).unwrap();
    assert!(
        problems(root).contains(&"crates/s02_second/Cargo.toml:4: the description starts \"Lesson 21:\", not \"Lesson 2:\": start it with \"Lesson 2:\", this lesson's own number".to_string())
    );
}

#[test]
fn the_cargo_toml_bullet_calls_new_only_what_the_lesson_adds_or_moves() {
    let dir = fixture();
    let root = dir.path();
    let manifest = |deps: &str, dev: &str| {
        format!(
            "[package]\nname = \"NAME\"\nversion = \"0.1.0\"\ndescription = \"Lesson N: x.\"\n\n[dependencies]\n{deps}\n[dev-dependencies]\n{dev}\n[lints]\nworkspace = true\n"
        )
    };
    write(
        root,
        "crates/s01_first/Cargo.toml",
        &manifest(
            "anyhow.workspace = true\nclap = { workspace = true }\ntracing = \"0.1\"\n",
            "serde_json.workspace = true\ntempfile.workspace = true\n",
        )
        .replace("NAME", "s01_first")
        .replace("Lesson N", "Lesson 1"),
    );
    write(
        root,
        "crates/s02_second/Cargo.toml",
        &manifest(
            // `serde_json` moves up, `thiserror` is new, `tracing` is dropped.
            "anyhow.workspace = true\nclap = { workspace = true }\nserde_json.workspace = true\nthiserror.workspace = true\n",
            "insta.workspace = true\ntempfile.workspace = true\n",
        )
        .replace("NAME", "s02_second")
        .replace("Lesson N", "Lesson 2"),
    );
    edit(
        root,
        "docs/src/s02_second.md",
        "See [what changed]",
        "- `Cargo.toml` \u{2014} the description; `thiserror` for the errors, `serde_json` moves\n  \
         from the test dependencies, `clap` for the flag and `insta` for the snapshots;\n  \
         `tracing` is gone. The workspace's `Cargo.toml` gains `yaml_serde` in\n  \
         `[workspace.dependencies]`; `clap` keeps its `derive` feature.\n\
         - `src/hooks.rs` uses `anyhow`, as before.\n\n\
         See [what changed]",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(
        problems(root),
        [
            "docs/src/s02_second.md:11: the `Cargo.toml` bullet calls `clap` a new dependency, but s01_first already depends on it ([dependencies]): name only the dependencies lesson 2 adds or moves (`cargo xtask diff s02` shows its Cargo.toml)"
        ]
    );
    // A dependency in both sections is new if one of them is.
    edit(
        root,
        "crates/s02_second/Cargo.toml",
        "insta.workspace = true\n",
        "insta.workspace = true\nclap.workspace = true\n",
    );
    xtask::docs::generate(root).unwrap();
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn every_module_file_of_shared_and_xtask_is_in_the_code_map() {
    let dir = fixture();
    let root = dir.path();
    // A new module, a file whose name the other folder's block has, and an
    // entry whose file was removed.
    write(root, "shared/src/model/sse.rs", "//! SSE.\n");
    write(root, "xtask/src/lib.rs", "//! The tasks.\n");
    edit(
        root,
        "ARCHITECTURE.md",
        "  cli/args.rs ",
        "  lib.rs          gone\n  cli/args.rs ",
    );
    assert_eq!(
        problems(root),
        [
            "shared/src/model/sse.rs is not in the code map: add it to the code map in ARCHITECTURE.md, as a line `  model/sse.rs  what it is` under `shared/src/`",
            "ARCHITECTURE.md:5: the code map names shared/src/lib.rs, which is not a file: remove the line, or correct the path",
            "xtask/src/lib.rs is not in the code map: add it to the code map in ARCHITECTURE.md, as a line `  lib.rs  what it is` under `xtask/src/`",
        ]
    );
    // Named under their own folders, with the stale entry gone, all pass.
    edit(root, "ARCHITECTURE.md", "  lib.rs          gone\n", "");
    edit(
        root,
        "ARCHITECTURE.md",
        "  tools/bash.rs ",
        "  model/sse.rs    server-sent events\n  tools/bash.rs ",
    );
    edit(
        root,
        "ARCHITECTURE.md",
        "  main.rs ",
        "  lib.rs          the library\n  main.rs ",
    );
    assert_eq!(problems(root), Vec::<String>::new());
    // Without the map, one problem says to write it.
    fs::remove_file(root.join("ARCHITECTURE.md")).unwrap();
    assert_eq!(
        problems(root),
        [
            "ARCHITECTURE.md is missing: write the map of the code, naming every module file of shared/src and xtask/src"
        ]
    );
}

#[test]
fn counts_a_chapter_states_must_match_the_code() {
    let dir = fixture();
    let root = dir.path();
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "/// Longest list.",
        "/// Where the list is kept.\npub trait Store {\n    fn load(&self);\n    fn save(&self);\n}\n\n/// Longest list.",
    );
    xtask::docs::generate(root).unwrap();
    let chapter = "docs/src/s02_second.md";
    let text = fs::read_to_string(root.join(chapter)).unwrap();
    let line = text.lines().count() + 2;
    write(
        root,
        chapter,
        &format!(
            "{text}\nIts `todo::Store`, whose three\nmethods load and save. The lesson adds two new tools.\n\n\
             The `Store::load` method is one of 2 methods too, of nothing the code names: not a claim.\n"
        ),
    );
    assert_eq!(
        problems(root),
        [
            format!(
                "{chapter}:{line}: says \"three methods\", but `Store` has 2 in s02_second: fix the number"
            ),
            format!(
                "{chapter}:{}: says \"two new tools\", but s02_second offers 1 that s01_first does not (todo_write): fix the number",
                line + 1
            ),
        ]
    );
    // True numbers pass: two methods, and two new tools once the lesson
    // offers a second one.
    edit(root, chapter, "whose three\n", "whose two\n");
    let second = TODO_SENT.replace("\"todo_write\"", "\"todo_read\"");
    write_tools_snapshot(root, "s02_second", &[BASH_SENT, TODO_SENT, &second]);
    xtask::docs::generate(root).unwrap();
    assert_eq!(problems(root), Vec::<String>::new());
}

/// A crate of the workspace besides the lessons, with the given source
/// files (`src/…`), so only rule 14 looks at it.
fn with_example_crate(root: &Path, files: &[(&str, &str)]) {
    write(
        root,
        "examples/library/Cargo.toml",
        "[package]\nname = \"course_examples\"\n",
    );
    for (path, text) in files {
        write(root, &format!("examples/library/{path}"), text);
    }
}

#[test]
fn an_import_circle_between_files_of_a_crate_fails_the_check_and_names_them() {
    let dir = fixture();
    let root = dir.path();
    // The lead uses the teammate's `Spec` by `use`; the teammate names the
    // lead's `LEAD` inline, inside `format!`.
    with_example_crate(
        root,
        &[
            ("src/lib.rs", "pub mod team;\n\npub use team::lead::LEAD;\n"),
            ("src/team/mod.rs", "pub mod lead;\npub mod teammate;\n"),
            (
                "src/team/lead.rs",
                "use super::teammate::Spec;\n\npub const LEAD: &str = \"lead\";\n\npub fn spawn(spec: Spec) -> Spec {\n    spec\n}\n",
            ),
            (
                "src/team/teammate.rs",
                "pub struct Spec;\n\npub fn report() -> String {\n    format!(\"to {}\", super::lead::LEAD)\n}\n",
            ),
        ],
    );
    assert_eq!(
        problems(root),
        [
            "examples/library has an import circle: src/team/lead.rs -> src/team/teammate.rs -> src/team/lead.rs (Spec; LEAD): move what they share into a file below them, so that each file stands above what it imports"
        ]
    );
}

#[test]
fn files_that_stand_above_what_they_import_pass() {
    let dir = fixture();
    let root = dir.path();
    // `LEAD` moved below both: the lead takes it from `send.rs`, the
    // teammate through `team/mod.rs`, its parent; the crate root
    // re-exports the lead's names, which is no import; the lead's tests
    // reach back into it with `super::*`, inside one file; the teammate's
    // tests spawn with the lead, which only tests do.
    with_example_crate(
        root,
        &[
            (
                "src/lib.rs",
                "pub mod team;\n\npub use team::lead::spawn;\n",
            ),
            (
                "src/team/mod.rs",
                "pub mod lead;\npub mod send;\npub mod teammate;\n\npub use send::LEAD;\n",
            ),
            ("src/team/send.rs", "pub const LEAD: &str = \"lead\";\n"),
            (
                "src/team/lead.rs",
                "use super::teammate::Spec;\n\npub fn spawn(spec: Spec) -> (Spec, &'static str) {\n    (spec, super::send::LEAD)\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn spawns() {\n        spawn(Spec);\n    }\n}\n",
            ),
            (
                "src/team/teammate.rs",
                "pub struct Spec;\n\npub fn report() -> String {\n    format!(\"to {}\", super::LEAD)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn is_spawned() {\n        crate::team::lead::spawn(super::Spec);\n    }\n}\n",
            ),
        ],
    );
    assert_eq!(problems(root), Vec::<String>::new());
}

#[test]
fn a_string_or_boxed_error_in_library_code_fails_the_check_and_names_where() {
    let dir = fixture();
    let root = dir.path();
    write(
        root,
        "shared/src/plan.rs",
        "use std::io;\n\n\
         pub fn parse(text: &str) -> Result<u8, String> {\n    text.parse().map_err(|_| text.to_string())\n}\n\n\
         pub struct Loader {\n    pub load: fn() -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>,\n}\n\n\
         // Typed, or not an error at all: no problem.\n\
         pub fn names() -> Result<Vec<String>, io::Error> {\n    Ok(Vec::new())\n}\n\
         pub fn line() -> io::Result<String> {\n    Ok(String::new())\n}\n\
         pub fn boxed() -> Box<dyn Fn() -> String> {\n    Box::new(String::new)\n}\n\n\
         #[cfg(test)]\nmod tests {\n    fn helper() -> Result<(), String> {\n        Ok(())\n    }\n}\n",
    );
    // (The new file is also missing from the code map: another rule's.)
    let found: Vec<String> = problems(root)
        .into_iter()
        .filter(|problem| !problem.contains("code map"))
        .collect();
    assert_eq!(
        found,
        [
            "shared/src/plan.rs writes `Result < u8 , String >` in `parse`: say which failure it is with an error type (a thiserror enum or struct whose text is the sentence), not a String or a boxed Error",
            "shared/src/plan.rs writes `Box < dyn std :: error :: Error + Send + Sync >` in `Loader`: say which failure it is with an error type (a thiserror enum or struct whose text is the sentence), not a String or a boxed Error",
        ]
    );
}

/// Lesson 2's `spec` body as an exercise region, listed in its toml.
fn with_exercise(root: &Path) {
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "pub fn spec() -> ToolSpec {\n",
        "pub fn spec() -> ToolSpec {\n    // ANCHOR: exercise-s02-spec\n",
    );
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "    )\n}\n",
        "    )\n    // ANCHOR_END: exercise-s02-spec\n}\n",
    );
    write(
        root,
        "crates/s02_second/exercise.toml",
        "graded = [\"offered_tools\"]\n\n[[region]]\nname = \"spec\"\nfile = \"src/todo.rs\"\ntodo = \"describe todo_write to the model\"\nhints = [\"A ToolSpec: name, description, input schema.\"]\n",
    );
    xtask::docs::generate(root).unwrap();
}

#[test]
fn exercise_regions_pair_sit_in_function_bodies_and_match_their_toml() {
    let dir = fixture();
    let root = dir.path();
    with_exercise(root);
    assert_eq!(problems(root), Vec::<String>::new());
    assert!(
        root.join("docs/src/changes/s02_second-exercise.md")
            .is_file()
    );

    // An end marker gone.
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "    // ANCHOR_END: exercise-s02-spec\n",
        "",
    );
    let found = problems(root);
    assert!(
        found
            .iter()
            .any(|p| p
                .contains("region exercise-s02-spec has no `// ANCHOR_END: exercise-s02-spec`")),
        "{found:#?}"
    );
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "    )\n}\n",
        "    )\n    // ANCHOR_END: exercise-s02-spec\n}\n",
    );
    assert_eq!(problems(root), Vec::<String>::new());

    // A region that starts outside the function.
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "pub fn spec() -> ToolSpec {\n    // ANCHOR: exercise-s02-spec\n",
        "// ANCHOR: exercise-s02-spec\npub fn spec() -> ToolSpec {\n",
    );
    let found = problems(root);
    assert!(
        found
            .iter()
            .any(|p| p.contains("is not whole statements inside a block")),
        "{found:#?}"
    );
    edit(
        root,
        "crates/s02_second/src/todo.rs",
        "// ANCHOR: exercise-s02-spec\npub fn spec() -> ToolSpec {\n",
        "pub fn spec() -> ToolSpec {\n    // ANCHOR: exercise-s02-spec\n",
    );

    // The toml names a region the code does not mark, and misses the one it does.
    edit(
        root,
        "crates/s02_second/exercise.toml",
        "name = \"spec\"",
        "name = \"specs\"",
    );
    xtask::docs::generate(root).unwrap();
    let found = problems(root);
    assert!(
        found
            .iter()
            .any(|p| p.contains("lists region specs in src/todo.rs")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|p| p
            .contains("region exercise-s02-spec is not listed in crates/s02_second/exercise.toml")),
        "{found:#?}"
    );
}
