//! Black-box tests of `read_file`, `write_file`, `edit_file` and `glob`,
//! called the way the loop calls them: with the model's raw JSON input.
//!
//! Each test gets a fresh workspace in a temporary directory. Tests of
//! escapes also make a second temporary directory, "outside", and check
//! both the tool's answer and that nothing outside changed.

// Helpers outside `#[test]` functions unwrap too: a failed setup should
// fail the test on the spot.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};
use shared::tools::{self, ToolOutput, Workspace, edit_file, glob, read_file, write_file};
use tempfile::TempDir;

fn workspace() -> (TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    (dir, workspace)
}

/// Writes `content` to `relative` inside `dir`, making parents.
fn put(dir: &Path, relative: &str, content: &str) {
    let path = dir.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

async fn read(workspace: &Workspace, input: Value) -> ToolOutput {
    read_file::call(workspace, &input).await
}

async fn write(workspace: &Workspace, input: Value) -> ToolOutput {
    write_file::call(workspace, &input).await
}

async fn edit(workspace: &Workspace, input: Value) -> ToolOutput {
    edit_file::call(workspace, &input).await
}

async fn find(workspace: &Workspace, pattern: &str) -> ToolOutput {
    glob::call(workspace, &json!({ "pattern": pattern })).await
}

fn assert_escape(output: &ToolOutput) {
    assert!(output.is_error, "{output:?}");
    assert!(
        output.text.contains("path escapes the workspace"),
        "{output:?}"
    );
}

// ---- write_file and read_file ---------------------------------------------

#[tokio::test]
async fn write_creates_parent_directories_and_read_returns_the_text() {
    let (dir, workspace) = workspace();
    let output = write(
        &workspace,
        json!({"path": "a/b/c/notes.txt", "content": "héllo\n"}),
    )
    .await;
    assert_eq!(output, ToolOutput::ok("Wrote 7 bytes to a/b/c/notes.txt"));
    assert_eq!(
        fs::read_to_string(dir.path().join("a/b/c/notes.txt")).unwrap(),
        "héllo\n"
    );
    let output = read(&workspace, json!({"path": "a/b/c/notes.txt"})).await;
    assert_eq!(output, ToolOutput::ok("héllo\n"));
}

#[tokio::test]
async fn write_replaces_an_existing_file() {
    let (dir, workspace) = workspace();
    put(dir.path(), "f.txt", "old and long");
    write(&workspace, json!({"path": "f.txt", "content": "new"})).await;
    assert_eq!(fs::read_to_string(dir.path().join("f.txt")).unwrap(), "new");
}

#[tokio::test]
async fn read_limit_shows_the_first_lines_and_counts_the_rest() {
    let (dir, workspace) = workspace();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    put(dir.path(), "ten.txt", &text);
    let output = read(&workspace, json!({"path": "ten.txt", "limit": 3})).await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "line 1\nline 2\nline 3\n... [7 more lines not shown: this is the first 3 lines of 10]"
        )
    );
    // A limit past the end shows everything, with no note.
    let output = read(&workspace, json!({"path": "ten.txt", "limit": 10})).await;
    assert_eq!(output, ToolOutput::ok(text));
}

#[tokio::test]
async fn read_reports_missing_files_directories_and_binaries() {
    let (dir, workspace) = workspace();
    let output = read(&workspace, json!({"path": "nope.txt"})).await;
    assert_eq!(output, ToolOutput::error("File not found: nope.txt"));

    fs::create_dir(dir.path().join("sub")).unwrap();
    let output = read(&workspace, json!({"path": "sub"})).await;
    assert!(output.is_error);
    assert!(output.text.contains("is a directory"), "{output:?}");

    fs::write(dir.path().join("blob.bin"), b"\x7fELF\0\0\x01").unwrap();
    let output = read(&workspace, json!({"path": "blob.bin"})).await;
    assert!(output.is_error);
    assert!(output.text.contains("binary"), "{output:?}");

    put(dir.path(), "empty.txt", "");
    let output = read(&workspace, json!({"path": "empty.txt"})).await;
    assert_eq!(output, ToolOutput::ok("(empty file)"));
}

#[tokio::test]
async fn read_cuts_long_files_on_a_character_boundary() {
    let (dir, workspace) = workspace();
    put(dir.path(), "long.txt", &"é".repeat(60_000));
    let output = read(&workspace, json!({"path": "long.txt"})).await;
    assert!(!output.is_error);
    assert!(output.text.starts_with(&"é".repeat(50_000)));
    assert!(
        output
            .text
            .ends_with("[output truncated: 10000 more characters not shown]"),
        "{}",
        &output.text[output.text.len() - 100..]
    );
}

// ---- edit_file ----------------------------------------------------------

#[tokio::test]
async fn edit_replaces_only_the_first_occurrence() {
    let (dir, workspace) = workspace();
    put(dir.path(), "f.rs", "let x = 1;\nlet x = 1;\n");
    let output = edit(
        &workspace,
        json!({"path": "f.rs", "old_text": "x = 1", "new_text": "y = 2"}),
    )
    .await;
    assert!(!output.is_error, "{output:?}");
    assert!(output.text.contains("first of 2 occurrences"), "{output:?}");
    assert_eq!(
        fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "let y = 2;\nlet x = 1;\n"
    );

    let output = edit(
        &workspace,
        json!({"path": "f.rs", "old_text": "x = 1", "new_text": "x = 3"}),
    )
    .await;
    assert_eq!(output, ToolOutput::ok("Edited f.rs"));
}

#[tokio::test]
async fn edit_with_text_not_in_the_file_is_an_error_and_changes_nothing() {
    let (dir, workspace) = workspace();
    put(dir.path(), "f.txt", "alpha\n");
    let output = edit(
        &workspace,
        json!({"path": "f.txt", "old_text": "beta", "new_text": "gamma"}),
    )
    .await;
    assert!(output.is_error);
    assert!(
        output.text.contains("old_text not found in f.txt"),
        "{output:?}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "alpha\n"
    );

    let output = edit(
        &workspace,
        json!({"path": "f.txt", "old_text": "", "new_text": "x"}),
    )
    .await;
    assert!(output.is_error, "{output:?}");

    let output = edit(
        &workspace,
        json!({"path": "missing.txt", "old_text": "a", "new_text": "b"}),
    )
    .await;
    assert_eq!(output, ToolOutput::error("File not found: missing.txt"));
}

// ---- confinement --------------------------------------------------------

#[tokio::test]
async fn dot_dot_that_leaves_the_workspace_is_refused() {
    let (dir, workspace) = workspace();
    let name = format!(
        "{}-escaped.txt",
        dir.path().file_name().unwrap().to_string_lossy()
    );
    let above = dir.path().parent().unwrap().join(&name);

    let output = write(
        &workspace,
        json!({"path": format!("../{name}"), "content": "x"}),
    )
    .await;
    assert_escape(&output);
    assert!(!above.exists(), "wrote outside the workspace");

    let output = write(
        &workspace,
        json!({"path": format!("sub/../../{name}"), "content": "x"}),
    )
    .await;
    assert_escape(&output);
    assert!(!above.exists(), "wrote outside the workspace");

    assert_escape(&read(&workspace, json!({"path": "../x"})).await);
    assert_escape(
        &edit(
            &workspace,
            json!({"path": "../x", "old_text": "a", "new_text": "b"}),
        )
        .await,
    );
}

#[tokio::test]
async fn dot_dot_that_stays_inside_is_fine() {
    let (dir, workspace) = workspace();
    let output = write(
        &workspace,
        json!({"path": "new/../inside.txt", "content": "ok"}),
    )
    .await;
    assert!(!output.is_error, "{output:?}");
    assert!(dir.path().join("inside.txt").exists());
    let output = read(&workspace, json!({"path": "./new/../inside.txt"})).await;
    assert_eq!(output, ToolOutput::ok("ok"));
}

#[tokio::test]
async fn absolute_paths_are_refused_outside_and_allowed_inside() {
    let (dir, workspace) = workspace();
    assert_escape(&read(&workspace, json!({"path": "/etc/passwd"})).await);
    assert_escape(
        &write(
            &workspace,
            json!({"path": "/etc/agent-was-here", "content": "x"}),
        )
        .await,
    );

    put(dir.path(), "inside.txt", "yes");
    let absolute = workspace.root().join("inside.txt");
    let output = read(&workspace, json!({"path": absolute.to_str().unwrap()})).await;
    assert_eq!(output, ToolOutput::ok("yes"));
}

#[tokio::test]
async fn symlinks_to_outside_are_refused_for_reading_and_writing() {
    let (dir, workspace) = workspace();
    let outside = tempfile::tempdir().unwrap();
    put(outside.path(), "secret.txt", "top secret");
    symlink(outside.path(), dir.path().join("link_dir")).unwrap();
    symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link_file"),
    )
    .unwrap();

    // Through a symlinked directory.
    assert_escape(&read(&workspace, json!({"path": "link_dir/secret.txt"})).await);
    let output = write(
        &workspace,
        json!({"path": "link_dir/planted.txt", "content": "x"}),
    )
    .await;
    assert_escape(&output);
    let output = write(
        &workspace,
        json!({"path": "link_dir/deep/new/planted.txt", "content": "x"}),
    )
    .await;
    assert_escape(&output);
    assert!(!outside.path().join("planted.txt").exists());
    assert!(!outside.path().join("deep").exists());

    // Through a symlinked file.
    assert_escape(&read(&workspace, json!({"path": "link_file"})).await);
    assert_escape(&write(&workspace, json!({"path": "link_file", "content": "x"})).await);
    let output = edit(
        &workspace,
        json!({"path": "link_file", "old_text": "top", "new_text": "no"}),
    )
    .await;
    assert_escape(&output);
    assert_eq!(
        fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "top secret"
    );
}

#[tokio::test]
async fn dangling_symlinks_are_not_written_through() {
    let (dir, workspace) = workspace();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("created.txt");
    symlink(&target, dir.path().join("dangling")).unwrap();
    let output = write(&workspace, json!({"path": "dangling", "content": "x"})).await;
    assert!(output.is_error, "{output:?}");
    assert!(!target.exists(), "wrote through a dangling symlink");
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_followed() {
    let (dir, workspace) = workspace();
    put(dir.path(), "real/file.txt", "content");
    symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
    let output = read(&workspace, json!({"path": "alias/file.txt"})).await;
    assert_eq!(output, ToolOutput::ok("content"));
    assert_eq!(
        workspace.resolve("alias/file.txt").unwrap(),
        workspace.root().join("real/file.txt")
    );
}

// ---- malformed input ----------------------------------------------------

#[tokio::test]
async fn malformed_input_names_the_field() {
    let (_dir, workspace) = workspace();
    assert_eq!(
        read(&workspace, json!({})).await,
        ToolOutput::error("Invalid input for read_file: missing field `path`")
    );
    let output = read(&workspace, json!({"path": 3})).await;
    assert_eq!(
        output,
        ToolOutput::error(
            "Invalid input for read_file: field `path`: invalid type: integer `3`, expected a string"
        )
    );
    let output = read(&workspace, json!({"path": "a", "limit": "3"})).await;
    assert!(output.is_error);
    assert!(output.text.contains("field `limit`"), "{output:?}");

    let output = write(&workspace, json!({"path": "a"})).await;
    assert_eq!(
        output,
        ToolOutput::error("Invalid input for write_file: missing field `content`")
    );
    let output = edit(
        &workspace,
        json!({"path": "a", "old_text": 1, "new_text": "b"}),
    )
    .await;
    assert!(output.is_error);
    assert!(
        output
            .text
            .starts_with("Invalid input for edit_file: field `old_text`"),
        "{output:?}"
    );
    let output = glob::call(&workspace, &json!({"pattern": ["*.rs"]})).await;
    assert!(output.is_error);
    assert!(output.text.contains("field `pattern`"), "{output:?}");
    let output = glob::call(&workspace, &json!("*.rs")).await;
    assert!(output.is_error);
    assert!(
        output.text.starts_with("Invalid input for glob"),
        "{output:?}"
    );
}

// ---- glob ---------------------------------------------------------------

fn project() -> (TempDir, Workspace) {
    let (dir, workspace) = workspace();
    for path in [
        "lib.rs",
        "README.md",
        "notes.txt",
        "src/main.rs",
        "src/tools/mod.rs",
        "src/tools/bash.rs",
        "docs/guide.md",
        "target/debug/build.rs",
        ".git/hooks/pre-commit.rs",
    ] {
        put(dir.path(), path, "");
    }
    (dir, workspace)
}

#[tokio::test]
async fn glob_finds_files_at_any_depth_sorted_and_relative() {
    let (_dir, workspace) = project();
    assert_eq!(
        find(&workspace, "**/*.rs").await,
        ToolOutput::ok("lib.rs\nsrc/main.rs\nsrc/tools/bash.rs\nsrc/tools/mod.rs\n")
    );
    assert_eq!(
        find(&workspace, "src/**/*.rs").await,
        ToolOutput::ok("src/main.rs\nsrc/tools/bash.rs\nsrc/tools/mod.rs\n")
    );
    assert_eq!(
        find(&workspace, "src/**").await,
        ToolOutput::ok("src/main.rs\nsrc/tools/bash.rs\nsrc/tools/mod.rs\n")
    );
}

#[tokio::test]
async fn glob_single_star_stays_in_one_directory() {
    let (_dir, workspace) = project();
    assert_eq!(
        find(&workspace, "*.md").await,
        ToolOutput::ok("README.md\n")
    );
    assert_eq!(
        find(&workspace, "./*.md").await,
        ToolOutput::ok("README.md\n")
    );
    // Only files are listed, not the `src/tools` directory.
    assert_eq!(
        find(&workspace, "src/*").await,
        ToolOutput::ok("src/main.rs\n")
    );
    assert_eq!(
        find(&workspace, "*/*.md").await,
        ToolOutput::ok("docs/guide.md\n")
    );
}

#[tokio::test]
async fn glob_supports_question_marks_and_classes() {
    let (_dir, workspace) = project();
    assert_eq!(find(&workspace, "?ib.rs").await, ToolOutput::ok("lib.rs\n"));
    assert_eq!(
        find(&workspace, "[lR]*").await,
        ToolOutput::ok("README.md\nlib.rs\n")
    );
    assert_eq!(
        find(&workspace, "src/tools/[!m]*.rs").await,
        ToolOutput::ok("src/tools/bash.rs\n")
    );
}

#[tokio::test]
async fn glob_skips_git_and_target_and_reports_no_matches() {
    let (_dir, workspace) = project();
    let output = find(&workspace, "**/build.rs").await;
    assert_eq!(output, ToolOutput::ok("No files match **/build.rs"));
    let output = find(&workspace, "**/*").await;
    assert!(!output.text.contains("target/"), "{output:?}");
    assert!(!output.text.contains(".git/"), "{output:?}");
}

#[tokio::test]
async fn glob_refuses_patterns_outside_the_workspace() {
    let (_dir, workspace) = project();
    assert_escape(&find(&workspace, "../*").await);
    assert_escape(&find(&workspace, "/etc/*").await);
    // An absolute pattern inside the workspace is fine.
    let inside = format!("{}/*.md", workspace.root().display());
    assert_eq!(
        find(&workspace, &inside).await,
        ToolOutput::ok("README.md\n")
    );
}

#[tokio::test]
async fn glob_does_not_follow_symlinked_directories() {
    let (dir, workspace) = project();
    let outside = tempfile::tempdir().unwrap();
    put(outside.path(), "secret.rs", "");
    symlink(outside.path(), dir.path().join("elsewhere")).unwrap();
    let output = find(&workspace, "**/*").await;
    assert!(!output.text.contains("elsewhere"), "{output:?}");
    assert!(!output.text.contains("secret"), "{output:?}");
}

#[tokio::test]
async fn glob_caps_the_number_of_results() {
    let (dir, workspace) = workspace();
    for n in 0..glob::MAX_RESULTS + 5 {
        put(dir.path(), &format!("many/{n:05}.txt"), "");
    }
    let output = find(&workspace, "many/*.txt").await;
    assert!(!output.is_error);
    let lines: Vec<&str> = output.text.lines().collect();
    assert_eq!(lines.len(), glob::MAX_RESULTS + 1);
    assert_eq!(lines[0], "many/00000.txt");
    assert_eq!(lines[glob::MAX_RESULTS - 1], "many/00999.txt");
    assert_eq!(
        lines[glob::MAX_RESULTS],
        "... [5 more matches not shown; use a narrower pattern]"
    );
}

// ---- the tool set -------------------------------------------------------

#[test]
fn base_tools_are_listed_in_course_order() {
    let names: Vec<String> = tools::base_specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    assert_eq!(
        names,
        ["bash", "read_file", "write_file", "edit_file", "glob"]
    );
    for spec in tools::base_specs() {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(spec.input_schema["required"].is_array(), "{}", spec.name);
    }
}

#[test]
fn tool_futures_can_move_between_threads() {
    // The loop's `run_tool` hook must return a `Send` future, so every
    // tool's future must be `Send`. This fails to compile otherwise.
    fn assert_send<T: Send>(_: T) {}
    let (_dir, workspace) = workspace();
    let input = json!({});
    assert_send(tools::bash::call(&workspace, &input));
    assert_send(tools::read_file::call(&workspace, &input));
    assert_send(tools::write_file::call(&workspace, &input));
    assert_send(tools::edit_file::call(&workspace, &input));
    assert_send(tools::glob::call(&workspace, &input));
}
