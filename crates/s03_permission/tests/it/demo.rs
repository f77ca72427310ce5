//! Lesson 3's demo, run as the chapter's "Try it" runs it: with no key, so
//! the demo model plays `demo.json` while the tools and the permission
//! gate really run — one `-p` prompt, the whole script with piped input
//! (nobody to ask), twice in the same directory, then with `--yes`.

use crate::support;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn one_prompt_writes_inside_the_workspace_without_a_question() {
    let dir = tempfile::tempdir().unwrap();

    let output = support::run_binary(dir.path(), &["-p", "create test.txt"], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // Writing inside the workspace asks nothing and really writes.
    let written = std::fs::read_to_string(dir.path().join("test.txt")).unwrap();
    assert_eq!(written, "hello from the permission lesson\n");
    assert!(!stderr.contains("Allow?"), "{stderr}");
}

#[tokio::test]
async fn the_script_walks_through_the_gates_with_no_terminal_twice_then_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = "create test.txt\ndelete it\nlist the files\n\
                   write /etc/something\nuse sudo\n";

    for run in ["first", "second"] {
        let output = support::run_binary(dir.path(), &[], &[], prompts).await;

        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "{run}: {stdout}\n{stderr}");
        // rm asked, and with no terminal the answer was no: test.txt survives.
        assert!(
            stderr.contains("⚠  Potentially destructive command")
                && stderr.contains("Tool: bash(rm test.txt)"),
            "{run}: {stderr}"
        );
        assert!(dir.path().join("test.txt").exists(), "{run}");
        // The listing ran without a question, and shows the file.
        let listing = stdout.find("> bash: ls -la").unwrap();
        let listed = &stdout[listing..stdout.find("> write_file: /etc/something").unwrap()];
        assert!(listed.contains("test.txt"), "{run}: {listed}");
        // Writing to /etc asked too, and the no kept the call from running.
        assert!(
            stderr.contains("⚠  Access outside workspace")
                && stderr.contains("Tool: write_file(/etc/something)"),
            "{run}: {stderr}"
        );
        assert!(
            stdout
                .contains("Permission denied: Access outside workspace needs the user's approval"),
            "{run}: {stdout}"
        );
        // sudo was refused without a question: two questions in all.
        assert!(
            stdout.contains("Permission denied: 'sudo' is on the deny list"),
            "{run}: {stdout}"
        );
        assert_eq!(stderr.matches("Allow? [y/N]").count(), 2, "{run}: {stderr}");
    }

    // With --yes the rm is approved in advance, and really deletes.
    let output =
        support::run_binary(dir.path(), &["--yes"], &[], "create test.txt\ndelete it\n").await;

    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("yes (pre-approved by --yes)"), "{stderr}");
    assert!(!dir.path().join("test.txt").exists());
}
