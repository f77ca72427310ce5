//! `cargo xtask fork`: every lesson forks into a tree that refers to nothing
//! outside itself and whose trimmed lock resolves, offline and `--locked`,
//! to the packages its manifests ask for; a new name reaches every place
//! that names the crate; unknown lessons, bad names and occupied or
//! in-repository destinations are refused.
//!
//! Nothing here builds a fork. `cargo fetch --offline --locked` proves, for
//! every lesson, what a build would first need: the manifests are valid on
//! their own and the trimmed lock is complete. That the newest lesson's
//! fork builds, passes its own tests and runs its demo is proven by `cargo
//! xtask fork-check`, which CI runs after `cargo test` (see
//! `xtask/src/fork/check.rs` for why that is a command and not a test).

// The helpers below are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;
use xtask::fork::{self, inherit};
use xtask::lessons::{self, Lesson};

fn root() -> PathBuf {
    xtask::repo_root()
}

/// Every lesson of the course, in order.
fn lessons() -> Vec<Lesson> {
    lessons::discover(&root()).unwrap()
}

/// `lesson` forked into a new temporary directory (the fork is its
/// `fork` subdirectory, so the destination does not exist beforehand).
fn forked(lesson: &str, name: Option<&str>) -> (TempDir, PathBuf) {
    let all = lessons();
    let lesson = lessons::find(&all, lesson).unwrap();
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("fork");
    // Offline: tests never touch the network, and the workspace's own
    // build has filled the registry cache with every package a lesson uses.
    fork::fork(&root(), lesson, &dest, name, true).unwrap();
    (temp, dest)
}

/// `path` with `.` and `..` taken away, without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
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

/// The directory of the nearest `Cargo.toml` at or above `file`.
fn crate_dir(file: &Path) -> PathBuf {
    let mut dir = file.parent().unwrap().to_path_buf();
    while !dir.join("Cargo.toml").is_file() {
        dir.pop();
    }
    dir
}

/// Every way a forked tree could still lean on the course: its absolute
/// path anywhere in any file, a dependency `path` in a manifest, or a path
/// the code builds from `CARGO_MANIFEST_DIR`, that resolves outside the
/// fork or to nothing. Returns the problems found.
fn references_outside(fork: &Path) -> Vec<String> {
    let course = root().canonicalize().unwrap();
    let course = course.to_string_lossy();
    let fork = fork.canonicalize().unwrap();
    let mut problems = Vec::new();
    for file in lessons::all_files(&fork).unwrap() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let shown = file.strip_prefix(&fork).unwrap().display().to_string();
        if text.contains(course.as_ref()) {
            problems.push(format!("{shown} names the course's directory"));
        }
        let mut relative: Vec<String> = Vec::new();
        if file.file_name().is_some_and(|name| name == "Cargo.toml") {
            relative.extend(inherit::dependency_paths(&text).unwrap());
        }
        for line in text.lines().filter(|l| l.contains("CARGO_MANIFEST_DIR")) {
            // The paths on the line that climb ("/../../skills", or inside a
            // shell command in demo.json), each from the start of its climb
            // to the first character that cannot be part of a path.
            for (at, _) in line.match_indices("../") {
                if line[..at].ends_with('.') || line[..at].ends_with("../") {
                    continue;
                }
                let path: String = line[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                    .collect();
                relative.push(path.trim_end_matches('/').to_string());
            }
        }
        for path in relative {
            let target = normalise(&crate_dir(&file).join(&path));
            if !target.starts_with(&fork) {
                problems.push(format!("{shown}: {path} leaves the fork"));
            } else if !target.exists() {
                problems.push(format!("{shown}: {path} does not exist in the fork"));
            }
        }
    }
    problems
}

#[test]
fn every_lesson_forks_into_a_tree_that_refers_to_nothing_outside_it() {
    for lesson in lessons() {
        let (_temp, fork) = forked(&lesson.name, None);
        let problems = references_outside(&fork);
        assert!(problems.is_empty(), "{lesson}: {problems:#?}");
        // The manifests stand on their own and the trimmed lock holds
        // every package a build here needs: cargo resolves the fork for
        // this machine, offline, from the registry cache the workspace's
        // build filled, without changing the lock (`--locked` fails if it
        // would). Packages only other platforms use were never downloaded.
        let lock = std::fs::read_to_string(fork.join("Cargo.lock")).unwrap();
        cargo(
            &fork,
            &["fetch", "--offline", "--locked", "--target", "host-tuple"],
        );
        assert_eq!(
            std::fs::read_to_string(fork.join("Cargo.lock")).unwrap(),
            lock,
            "{lesson}: cargo rewrote the trimmed lock"
        );

        let crate_dir = fork.join("crates").join(&lesson.name);
        for file in ["demo.json", "src/lib.rs", "src/main.rs", "tests/it/main.rs"] {
            assert!(crate_dir.join(file).is_file(), "{lesson}: no {file}");
        }
        assert!(
            crate_dir
                .join("tests/it/snapshots/it__offered_tools__tools.snap")
                .is_file(),
            "{lesson}: the snapshots stay with the tests"
        );
        // Every crate's manifest stands on its own (the root's is the
        // fork's own workspace).
        for file in lessons::all_files(&fork).unwrap() {
            let shown = file.strip_prefix(&fork).unwrap();
            if file.file_name().is_some_and(|name| name == "Cargo.toml")
                && shown != Path::new("Cargo.toml")
            {
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(
                    !text.contains("workspace"),
                    "{lesson}: {}:\n{text}",
                    shown.display()
                );
            }
            assert!(
                !shown.starts_with("examples/library")
                    && !shown
                        .components()
                        .any(|part| part.as_os_str() == "node_modules"),
                "{lesson}: {} came along",
                shown.display()
            );
        }
        let readme = std::fs::read_to_string(fork.join("README.md")).unwrap();
        assert!(
            readme.contains(&format!("lesson {},", lesson.number))
                && readme.contains(&lesson.chapter_file())
                && readme.contains("cargo test"),
            "{lesson}: {readme}"
        );
        // Lessons that load skills find the course's copy in the fork.
        let reads_skills = crate_dir.join("src/skills").is_dir();
        assert_eq!(fork.join("skills").is_dir(), reads_skills, "{lesson}");

        // Lessons that depend on the course's MCP server carry it as a
        // member, with its npm manifest but not its installed packages, and
        // the README says how to install those.
        let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
        let uses_server = manifest.contains("mcp_example_server");
        let server = fork.join("examples/mcp_server");
        assert_eq!(server.join("Cargo.toml").is_file(), uses_server, "{lesson}");
        let root_manifest = std::fs::read_to_string(fork.join("Cargo.toml")).unwrap();
        assert_eq!(
            root_manifest.contains("\"examples/mcp_server\""),
            uses_server,
            "{lesson}: {root_manifest}"
        );
        if uses_server {
            for file in ["npm/package.json", "npm/package-lock.json", "src/main.rs"] {
                assert!(
                    server.join(file).is_file(),
                    "{lesson}: no examples/mcp_server/{file}"
                );
            }
            assert!(
                readme.contains("npm ci --prefix examples/mcp_server/npm"),
                "{lesson}: {readme}"
            );
        }
        // The example settings file comes along for the lessons whose
        // tests read it, and nothing else of examples/ does.
        let reads_settings = lessons::all_files(&lesson.dir).unwrap().iter().any(|file| {
            std::fs::read_to_string(file).is_ok_and(|text| text.contains("../../examples/settings"))
        });
        assert_eq!(
            fork.join("examples/settings/settings.toml").is_file(),
            reads_settings,
            "{lesson}"
        );
    }
}

#[test]
fn a_new_name_reaches_the_crate_the_binary_and_the_code() {
    let (_temp, fork) = forked("s08", Some("my_agent"));
    let crate_dir = fork.join("crates/my_agent");
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[package]\nname = \"my_agent\""),
        "{manifest}"
    );
    assert!(
        manifest.contains("[[bin]]\nname = \"my_agent\""),
        "{manifest}"
    );
    let tests = std::fs::read_to_string(crate_dir.join("tests/it/main.rs")).unwrap();
    assert!(
        tests.contains("extern crate my_agent as lesson;"),
        "{tests}"
    );
    assert!(tests.contains("CARGO_BIN_EXE_my_agent"), "{tests}");
    let main = std::fs::read_to_string(crate_dir.join("src/main.rs")).unwrap();
    assert!(main.contains("my_agent::LESSON"), "{main}");

    // The old name is gone everywhere but in the README's account of where
    // the fork came from.
    for file in lessons::all_files(&fork).unwrap() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if file.ends_with("README.md") {
            assert!(text.contains("s08_context_compact"), "{text}");
        } else {
            assert!(!text.contains("s08_context_compact"), "{}", file.display());
        }
    }
    let lock = std::fs::read_to_string(fork.join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"my_agent\""), "{lock}");
    let root = std::fs::read_to_string(fork.join("Cargo.toml")).unwrap();
    assert!(
        root.contains("members = [\"shared\", \"crates/my_agent\"]"),
        "{root}"
    );
}

/// The xtask binary, as `cargo xtask` runs it.
fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn unknown_lessons_bad_names_and_occupied_or_inner_destinations_are_refused() {
    let temp = tempfile::tempdir().unwrap();
    let dest = temp.path().join("fork");
    let dest_arg = dest.to_str().unwrap();

    let output = xtask(&["fork", "s99", dest_arg]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("no lesson \"s99\"") && error.contains("s01, s02, s03"),
        "{error}"
    );
    assert!(!dest.exists(), "nothing is written for an unknown lesson");

    let output = xtask(&["fork", "s01", dest_arg, "--name", "My-Agent"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("\"My-Agent\" is not a crate name"));
    assert!(!dest.exists());

    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("notes.txt"), "mine").unwrap();
    let output = xtask(&["fork", "s01", dest_arg]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is not empty"),
        "{}",
        stderr(&output)
    );
    let left: Vec<_> = std::fs::read_dir(&dest).unwrap().collect();
    assert_eq!(left.len(), 1, "the occupied directory is left as it was");
    assert_eq!(
        std::fs::read_to_string(dest.join("notes.txt")).unwrap(),
        "mine"
    );

    let inside = root().join("crates/s99_fork_here");
    let output = xtask(&["fork", "s01", inside.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("inside the course's repository"));
    assert!(!inside.exists());

    // An empty directory is fine.
    std::fs::remove_file(dest.join("notes.txt")).unwrap();
    let output = xtask(&["fork", "1", dest_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(dest.join("crates/s01_agent_loop/Cargo.toml").is_file());
}

/// `cargo ARGS` in `dir`; panics with cargo's output if it fails.
fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .current_dir(dir)
        // What the outer cargo exported for this test must not steer the
        // inner one.
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .env_remove("RUSTC_WRAPPER")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo {args:?} in {} failed:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    output
}

#[test]
fn a_demo_scripts_first_reply_is_what_the_fork_check_looks_for() {
    let newest = lessons().last().unwrap().dir.join("demo.json");
    let expected =
        fork::check::first_demo_reply(&std::fs::read_to_string(newest).unwrap()).unwrap();
    assert!(!expected.is_empty());
    let script = r#"{"replies": [{"text": "Let me look around.\nMore.", "tool_calls": [{"name": "bash", "input": {}}]}]}"#;
    assert_eq!(
        fork::check::first_demo_reply(script).unwrap(),
        ["Let me look around.", "> bash"]
    );
    assert!(fork::check::first_demo_reply(r#"{"replies": [{"text": ""}]}"#).is_err());
}

#[test]
fn sync_rewrites_only_what_changed_and_removes_what_is_gone() {
    let from = tempfile::tempdir().unwrap();
    let to = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(from.path().join("a")).unwrap();
    std::fs::write(from.path().join("a/same.txt"), "same").unwrap();
    std::fs::write(from.path().join("changed.txt"), "new").unwrap();
    std::fs::create_dir_all(to.path().join("a")).unwrap();
    std::fs::write(to.path().join("a/same.txt"), "same").unwrap();
    std::fs::write(to.path().join("changed.txt"), "old").unwrap();
    std::fs::write(to.path().join("gone.txt"), "gone").unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for file in ["a/same.txt", "changed.txt"] {
        std::fs::File::options()
            .write(true)
            .open(to.path().join(file))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    fork::check::sync(from.path(), to.path()).unwrap();
    let modified = |file: &str| {
        std::fs::metadata(to.path().join(file))
            .unwrap()
            .modified()
            .unwrap()
    };
    assert_eq!(
        modified("a/same.txt"),
        old,
        "an unchanged file was rewritten"
    );
    assert_ne!(modified("changed.txt"), old);
    assert_eq!(
        std::fs::read_to_string(to.path().join("changed.txt")).unwrap(),
        "new"
    );
    assert!(!to.path().join("gone.txt").exists());
}

#[test]
fn a_checked_fork_marks_each_of_its_packages_apart_from_the_course() {
    let all = lessons();
    let lesson = lessons::find(&all, "s18").unwrap();
    // As fork-check lays it out: the fork in a folder of its own inside
    // the target directory, the config beside it.
    let place = tempfile::tempdir().unwrap();
    let dir = place.path().join("my_agent");
    let forked = fork::fork(&root(), lesson, &dir, Some("my_agent"), true).unwrap();
    fork::check::keep_apart(&dir, &forked.packages, 7).unwrap();

    let text = std::fs::read_to_string(place.path().join(".cargo/config.toml")).unwrap();
    let config: toml_edit::DocumentMut = text.parse().unwrap();
    let packages = config["profile"]["dev"]["package"].as_table().unwrap();
    let mut named: Vec<&str> = packages.iter().map(|(name, _)| name).collect();
    named.sort_unstable();
    // Every crate the fork builds, the lesson's under its new name and
    // the example server that does not depend on `shared` included.
    assert_eq!(named, ["mcp_example_server", "my_agent", "shared"]);
    for (name, settings) in packages {
        assert_eq!(
            settings["codegen-units"].as_integer(),
            Some(7),
            "{name} is not marked"
        );
    }
}
