//! Lesson 1's demo, run as the chapter's "Try it" runs it: with no key, so
//! the demo model plays `demo.json` while the tools really run — first one
//! `-p` prompt, then the whole script in the REPL, twice in the same
//! directory.

use crate::support;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// What `stdout` shows after the echoed call that starts with `call`: the
/// command's real output, and whatever the run printed after it. (The
/// echoed line itself is the script's text, so it proves nothing.)
fn after_call<'a>(stdout: &'a str, call: &str) -> &'a str {
    let echoed = &stdout[stdout.find(call).unwrap()..];
    echoed.split_once('\n').unwrap().1
}

#[tokio::test]
async fn one_prompt_lists_the_real_workspace_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker-file.txt"), "x").unwrap();

    let output = support::run_binary(dir.path(), &["-p", "list the files here"], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    assert!(stdout.contains("> bash: ls -la"), "{stdout}");
    // The listing is real: it names a file only this test created.
    assert!(stdout.contains("marker-file.txt"), "{stdout}");
}

#[tokio::test]
async fn the_whole_script_runs_in_the_repl_and_again_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    // A repository on a branch only this test names, where git can make
    // one; the script's last command asks git which branch this is.
    let repository = std::process::Command::new("git")
        .args(["init", "-q", "-b", "lesson-one-branch"])
        .current_dir(dir.path())
        .status()
        .is_ok_and(|status| status.success());
    let prompts = "list the files here\n\
                   create hello.py that prints a greeting, and run it\n\
                   which git branch is this?\n";

    let first = support::run_binary(dir.path(), &[], &[], prompts).await;

    let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
    assert!(first.status.success(), "{stdout}\n{stderr}");
    // The second prompt's command really wrote hello.py, and really ran it
    // (or said why it could not).
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.py")).unwrap(),
        "print(\"Hello, World!\")\n"
    );
    let ran = after_call(&stdout, "> bash: printf");
    assert!(
        ran.contains("Hello, World!\n") || ran.contains("python3 is not installed"),
        "{ran}"
    );
    // The third really asked git.
    let answer = after_call(&stdout, "> bash: git branch");
    let expected = if repository {
        "lesson-one-branch"
    } else {
        "not a git repository"
    };
    assert!(answer.contains(expected), "{answer}");

    // A second run starts from what the first left: its listing, made by a
    // real `ls`, now shows hello.py.
    let second = support::run_binary(dir.path(), &[], &[], prompts).await;

    let stdout = text(&second.stdout);
    assert!(
        second.status.success(),
        "{stdout}\n{}",
        text(&second.stderr)
    );
    let listing_end = stdout.find("> bash: printf").unwrap();
    assert!(stdout[..listing_end].contains("hello.py"), "{stdout}");
}
