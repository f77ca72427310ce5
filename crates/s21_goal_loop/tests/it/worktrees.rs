//! The worktree manager, black-box, against the real `git` in temporary
//! repositories.
//!
//! Every git command the tests run themselves goes through [`git`], which
//! sets the identity and default branch on the command line, so the tests
//! pass whatever the developer's own git configuration says.

use std::fs;
use std::path::Path;
use std::process::Command;

use lesson::worktrees::{EventKind, Taken, WorktreeError, WorktreeManager};
use tempfile::TempDir;

/// Runs git in `dir` and returns its output, failing the test on an error.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A repository with one commit on `main`: `README.md`.
fn repo() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "--quiet"]);
    fs::write(dir.path().join("README.md"), "hello\n").unwrap();
    git(dir.path(), &["add", "README.md"]);
    git(dir.path(), &["commit", "--quiet", "-m", "initial"]);
    dir
}

fn branch_exists(repo: &Path, branch: &str) -> bool {
    !git(repo, &["branch", "--list", branch]).trim().is_empty()
}

/// The main checkout's `git status`, which must stay empty.
fn main_status(repo: &Path) -> String {
    git(repo, &["status", "--porcelain", "--untracked-files=all"])
}

fn kinds(manager: &WorktreeManager) -> Vec<(EventKind, String)> {
    manager
        .events()
        .into_iter()
        .map(|event| (event.kind, event.worktree))
        .collect()
}

#[test]
fn create_makes_an_isolated_checkout_on_its_own_branch() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let created = manager.create("auth", None).unwrap();

    let path = repo.path().join(".worktrees/auth");
    assert!(path.join("README.md").is_file());
    assert_eq!(created.branch.as_deref(), Some("wt/auth"));
    assert!(branch_exists(repo.path(), "wt/auth"));
    assert_eq!(manager.path_of("auth"), Some(created.path.clone()));
    let events = manager.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::Create);
    assert_eq!(events[0].worktree, "auth");
    assert_eq!(events[0].task_id, "");
    assert!(events[0].ts > 1.0e9);

    // Work in the worktree stays there.
    fs::write(path.join("login.rs"), "fn login() {}\n").unwrap();
    assert!(!repo.path().join("login.rs").exists());
    assert_eq!(
        main_status(repo.path()),
        "",
        "the main checkout must stay clean"
    );
    let listed = manager.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uncommitted, 1);
    assert_eq!(
        listed[0].to_string(),
        "auth at .worktrees/auth, branch wt/auth: 1 uncommitted change"
    );
}

#[test]
fn two_worktrees_keep_their_own_copy_of_a_file() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let a = manager.create("a", None).unwrap();
    let b = manager.create("b", None).unwrap();
    fs::write(a.path.join("README.md"), "from a\n").unwrap();
    fs::write(b.path.join("README.md"), "from b\n").unwrap();

    assert_eq!(
        fs::read_to_string(a.path.join("README.md")).unwrap(),
        "from a\n"
    );
    assert_eq!(
        fs::read_to_string(b.path.join("README.md")).unwrap(),
        "from b\n"
    );
    assert_eq!(
        fs::read_to_string(repo.path().join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(main_status(repo.path()), "");
}

#[test]
fn invalid_names_are_refused_before_anything_happens() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let long = "a".repeat(65);
    for name in [
        "../x",
        "a/b",
        "",
        long.as_str(),
        "-x",
        ".hidden",
        "x.lock",
        "a..b",
        "a b",
        "..",
        "events.jsonl",
    ] {
        let error = manager.create(name, Some("1")).unwrap_err();
        assert!(
            matches!(error, WorktreeError::InvalidName { .. }),
            "{name:?}: {error}"
        );
        assert!(
            error.to_string().starts_with("invalid worktree name"),
            "{error}"
        );
    }
    assert!(!repo.path().join(".worktrees").exists());
    assert!(!repo.path().join("x").exists());
    assert!(manager.events().is_empty());
    assert_eq!(git(repo.path(), &["branch", "--list", "wt/*"]), "");
}

#[test]
fn the_rule_broken_is_named() {
    let error = lesson::worktrees::validate_name("x.lock").unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid worktree name `x.lock`: it ends with `.lock`, which git keeps for its lock files; \
         use 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter, digit or `_`"
    );
}

#[test]
fn a_directory_that_is_not_a_repository_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let manager = WorktreeManager::new(dir.path());
    let error = manager.create("x", None).unwrap_err();
    assert!(
        matches!(error, WorktreeError::NotARepository { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .ends_with("is not a git repository; run `git init` and make a first commit, or work without worktrees"),
        "{error}"
    );
    assert!(matches!(
        manager.list(),
        Err(WorktreeError::NotARepository { .. })
    ));
    assert!(!dir.path().join(".worktrees").exists());
}

#[test]
fn a_repository_without_commits_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "--quiet"]);
    let manager = WorktreeManager::new(dir.path());
    let error = manager.create("x", None).unwrap_err();
    assert!(matches!(error, WorktreeError::NoCommits { .. }), "{error}");
    assert!(error.to_string().contains("has no commits yet"), "{error}");
    assert!(manager.list().unwrap().is_empty());
    assert!(manager.events().is_empty());
}

#[test]
fn a_taken_name_is_refused_and_logs_nothing() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    manager.create("x", None).unwrap();
    let error = manager.create("x", None).unwrap_err();
    assert!(
        matches!(
            &error,
            WorktreeError::NameTaken {
                taken: Taken::Worktree(_),
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(manager.events().len(), 1);

    // A branch left over from earlier work blocks the name too.
    git(repo.path(), &["branch", "wt/old"]);
    let error = manager.create("old", None).unwrap_err();
    assert!(
        matches!(
            &error,
            WorktreeError::NameTaken {
                taken: Taken::Branch(_),
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("`git branch -D wt/old`"),
        "{error}"
    );
    assert!(!repo.path().join(".worktrees/old").exists());

    // So does anything else in the way.
    fs::create_dir(repo.path().join(".worktrees/stray")).unwrap();
    let error = manager.create("stray", None).unwrap_err();
    assert!(
        matches!(
            &error,
            WorktreeError::NameTaken {
                taken: Taken::Directory(_),
                ..
            }
        ),
        "{error}"
    );
    assert!(!branch_exists(repo.path(), "wt/stray"));
    assert_eq!(manager.events().len(), 1);
}

#[test]
fn a_failing_git_command_reports_what_git_said_and_leaves_nothing() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    // A lock file nobody will release: git cannot create the branch.
    let refs = repo.path().join(".git/refs/heads/wt");
    fs::create_dir_all(&refs).unwrap();
    fs::write(refs.join("x.lock"), "").unwrap();

    let error = manager.create("x", None).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, WorktreeError::Git { .. }), "{message}");
    assert!(message.contains("worktree add -b wt/x"), "{message}");
    assert!(message.contains("x.lock': File exists"), "{message}");
    assert!(!repo.path().join(".worktrees/x").exists());
    assert!(!branch_exists(repo.path(), "wt/x"));
    assert!(manager.events().is_empty());
}

#[test]
fn remove_refuses_uncommitted_changes_until_told_to_discard_them() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let worktree = manager.create("x", None).unwrap();
    fs::write(worktree.path.join("README.md"), "changed\n").unwrap();

    let error = manager.remove("x", false).unwrap_err();
    assert!(
        matches!(
            error,
            WorktreeError::WouldLoseWork {
                uncommitted: 1,
                unmerged_commits: 0,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("1 uncommitted change"),
        "{error}"
    );
    assert!(error.to_string().contains("discard_changes"), "{error}");
    assert!(worktree.path.is_dir());
    assert_eq!(kinds(&manager), [(EventKind::Create, "x".to_string())]);

    let removed = manager.remove("x", true).unwrap();
    assert_eq!(removed.discarded_changes, 1);
    assert_eq!(removed.branch.as_deref(), Some("wt/x"));
    assert!(!worktree.path.exists());
    assert!(!branch_exists(repo.path(), "wt/x"));
    assert_eq!(
        kinds(&manager),
        [
            (EventKind::Create, "x".to_string()),
            (EventKind::Remove, "x".to_string())
        ]
    );
}

#[test]
fn remove_refuses_untracked_files() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let worktree = manager.create("x", None).unwrap();
    fs::create_dir(worktree.path.join("notes")).unwrap();
    fs::write(worktree.path.join("notes/todo.md"), "- a\n").unwrap();

    let error = manager.remove("x", false).unwrap_err();
    assert!(
        matches!(error, WorktreeError::WouldLoseWork { uncommitted: 1, .. }),
        "{error}"
    );
    assert!(worktree.path.join("notes/todo.md").is_file());
    assert_eq!(manager.events().len(), 1);
}

#[test]
fn remove_refuses_commits_the_main_checkout_does_not_have() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let worktree = manager.create("x", None).unwrap();
    fs::write(worktree.path.join("feature.rs"), "fn f() {}\n").unwrap();
    git(&worktree.path, &["add", "feature.rs"]);
    git(&worktree.path, &["commit", "--quiet", "-m", "feature"]);

    let error = manager.remove("x", false).unwrap_err();
    assert!(
        matches!(
            error,
            WorktreeError::WouldLoseWork {
                uncommitted: 0,
                unmerged_commits: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("1 commit not merged into the main checkout's HEAD"),
        "{error}"
    );
    assert_eq!(manager.events().len(), 1);

    // Once main has merged the branch, nothing would be lost.
    git(repo.path(), &["merge", "--quiet", "--ff-only", "wt/x"]);
    let removed = manager.remove("x", false).unwrap();
    assert_eq!(
        (removed.discarded_changes, removed.discarded_commits),
        (0, 0)
    );
    assert!(!branch_exists(repo.path(), "wt/x"));
    assert!(repo.path().join("feature.rs").is_file());
    assert_eq!(manager.events().len(), 2);
}

#[test]
fn discarding_throws_away_changes_and_commits_and_says_so() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let worktree = manager.create("x", Some("7")).unwrap();
    fs::write(worktree.path.join("a.rs"), "a\n").unwrap();
    git(&worktree.path, &["add", "a.rs"]);
    git(&worktree.path, &["commit", "--quiet", "-m", "a"]);
    fs::write(worktree.path.join("b.rs"), "b\n").unwrap();
    fs::write(worktree.path.join("README.md"), "changed\n").unwrap();

    let removed = manager.remove("x", true).unwrap();
    assert_eq!(
        (removed.discarded_changes, removed.discarded_commits),
        (2, 1)
    );
    assert_eq!(removed.task_id.as_deref(), Some("7"));
    assert_eq!(
        removed.to_string(),
        "removed the worktree `x` and its branch wt/x, discarding 2 uncommitted changes and 1 unmerged commit"
    );
    assert!(!worktree.path.exists());
    assert!(!branch_exists(repo.path(), "wt/x"));
    assert!(manager.list().unwrap().is_empty());
    assert_eq!(manager.bound_to("7"), None);
    assert_eq!(main_status(repo.path()), "");
}

#[test]
fn a_clean_worktree_is_removed_without_discarding() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    manager.create("x", Some("2")).unwrap();
    let removed = manager.remove("x", false).unwrap();
    assert_eq!(removed.branch.as_deref(), Some("wt/x"));
    assert!(!repo.path().join(".worktrees/x").exists());
    assert!(!branch_exists(repo.path(), "wt/x"));
    let events = manager.events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].kind, EventKind::Remove);
    assert_eq!(events[1].task_id, "2");
}

#[test]
fn an_unknown_name_is_answered_with_the_names_there_are() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let error = manager.remove("nope", false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "there is no worktree named `nope`; there are no worktrees yet"
    );
    manager.create("b", None).unwrap();
    manager.create("a", None).unwrap();
    let error = manager.keep("nope").unwrap_err();
    assert_eq!(
        error.to_string(),
        "there is no worktree named `nope`; the worktrees are: a, b"
    );
    assert_eq!(manager.events().len(), 2);
}

#[test]
fn keep_logs_an_event_and_leaves_the_worktree_for_review() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    manager.create("x", Some("4")).unwrap();
    let kept = manager.keep("x").unwrap();
    assert!(kept.kept);
    assert_eq!(kept.branch.as_deref(), Some("wt/x"));
    assert!(repo.path().join(".worktrees/x").is_dir());
    assert!(branch_exists(repo.path(), "wt/x"));
    let events = manager.events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].kind, EventKind::Keep);
    assert_eq!(events[1].task_id, "4");
    let listed = WorktreeManager::new(repo.path()).list().unwrap();
    assert!(listed[0].kept);
    assert_eq!(
        listed[0].to_string(),
        "x at .worktrees/x, branch wt/x, task 4: clean; kept for review"
    );
}

#[test]
fn a_task_finds_its_worktree_across_restarts() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let created = manager.create("auth", Some("3")).unwrap();
    assert_eq!(created.task_id.as_deref(), Some("3"));

    // A new manager, as after a restart, reads the binding from disk.
    let restarted = WorktreeManager::new(repo.path());
    let bound = restarted.bound_to("3").unwrap();
    assert_eq!((bound.name.as_str(), bound.path), ("auth", created.path));
    assert_eq!(restarted.bound_to("4"), None);
    assert_eq!(restarted.list().unwrap()[0].task_id.as_deref(), Some("3"));

    // One worktree per task.
    let error = restarted.create("other", Some("3")).unwrap_err();
    assert!(
        matches!(error, WorktreeError::TaskAlreadyBound { .. }),
        "{error}"
    );
    assert!(!repo.path().join(".worktrees/other").exists());
    assert_eq!(restarted.events().len(), 1);
}

#[test]
fn a_corrupt_bindings_file_is_reported_and_set_aside() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    manager.create("x", Some("1")).unwrap();
    let bindings = repo.path().join(".worktrees/bindings.json");
    fs::write(&bindings, "{ not json").unwrap();

    let problems = manager.problems();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].contains(".worktrees/bindings.json could not be read"),
        "{problems:?}"
    );
    assert_eq!(manager.bound_to("1"), None);
    let listed = manager.list().unwrap();
    assert_eq!((listed.len(), listed[0].task_id.clone()), (1, None));

    // The next change keeps the bad file for a person to look at.
    manager.create("y", Some("2")).unwrap();
    assert_eq!(manager.bound_to("2").unwrap().name, "y");
    assert!(manager.problems().is_empty());
    assert_eq!(
        fs::read_to_string(repo.path().join(".worktrees/bindings.json.corrupt")).unwrap(),
        "{ not json"
    );
}

#[test]
fn a_worktree_whose_directory_vanished_is_listed_and_can_be_cleared() {
    let repo = repo();
    let manager = WorktreeManager::new(repo.path());
    let worktree = manager.create("gone", None).unwrap();
    fs::remove_dir_all(&worktree.path).unwrap();

    let listed = manager.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].missing.is_some(), "{:?}", listed[0]);
    assert!(
        listed[0].to_string().contains("directory missing"),
        "{}",
        listed[0]
    );
    assert_eq!(manager.path_of("gone"), None);
    let error = manager.create("gone", None).unwrap_err();
    assert!(
        matches!(
            &error,
            WorktreeError::NameTaken {
                taken: Taken::Registered(_),
                ..
            }
        ),
        "{error}"
    );

    manager.remove("gone", false).unwrap();
    assert!(manager.list().unwrap().is_empty());
    assert!(!branch_exists(repo.path(), "wt/gone"));
    manager.create("gone", None).unwrap();
}

#[test]
fn eight_concurrent_creates_all_succeed_and_are_all_recorded() {
    let repo = repo();
    std::thread::scope(|scope| {
        for i in 0..8 {
            let root = repo.path();
            scope.spawn(move || {
                // A manager each, as separate agents would have.
                let manager = WorktreeManager::new(root);
                manager
                    .create(&format!("w{i}"), Some(&i.to_string()))
                    .unwrap();
            });
        }
    });

    let manager = WorktreeManager::new(repo.path());
    let names: Vec<_> = manager
        .list()
        .unwrap()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(names, ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"]);
    for i in 0..8 {
        assert_eq!(
            manager.bound_to(&i.to_string()).unwrap().name,
            format!("w{i}")
        );
    }
    let events = manager.events();
    assert_eq!(events.len(), 8);
    assert!(events.iter().all(|event| event.kind == EventKind::Create));
    assert!(manager.problems().is_empty());
    assert_eq!(main_status(repo.path()), "");
}
