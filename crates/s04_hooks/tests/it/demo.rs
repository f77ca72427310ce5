//! Lesson 4's demo, run as the chapter's "Try it" runs it: with no key, so
//! the demo model plays `demo.json` while the tools and the hooks really
//! run — one `-p` prompt, then the whole script with piped input (nobody
//! to ask), twice in the same directory.

use crate::support;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Asserts that `lines` are lines of `stderr`, in this order.
fn assert_lines_in_order(stderr: &str, lines: &[String]) {
    let all: Vec<&str> = stderr.lines().collect();
    let mut from = 0;
    for line in lines {
        let found = all[from..]
            .iter()
            .position(|candidate| candidate == line)
            .unwrap_or_else(|| panic!("{line:?} after line {from} of:\n{stderr}"));
        from += found + 1;
    }
}

#[tokio::test]
async fn one_prompt_fires_all_four_events_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# readme-text-42\n").unwrap();

    let output = support::run_binary(dir.path(), &["-p", "read README.md"], &[], "").await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The read was real: the model was shown this test's own file.
    assert!(stdout.contains("readme-text-42"), "{stdout}");
    let workspace = dir.path().canonicalize().unwrap();
    assert_lines_in_order(
        &stderr,
        &[
            format!(
                "[hook] UserPromptSubmit: working in {}",
                workspace.display()
            ),
            "[hook] PreToolUse: read_file(README.md)".to_string(),
            "[hook] PostToolUse: read_file returned output (17 chars)".to_string(),
            "[hook] Stop: session used 1 tool call".to_string(),
        ],
    );
}

#[tokio::test]
async fn the_script_walks_through_the_hooks_with_no_terminal_twice() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# readme-text-42\n").unwrap();
    let prompts = "read README.md\ncreate test.txt\ndelete the temporary files\n\
                   print 1 to 10000\n";

    for run in ["first", "second"] {
        let output = support::run_binary(dir.path(), &[], &[], prompts).await;

        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "{run}: {stdout}\n{stderr}");
        assert_eq!(
            stderr.matches("[hook] UserPromptSubmit").count(),
            4,
            "{run}: {stderr}"
        );
        // Both writes ran, each between its two events.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("test.txt")).unwrap(),
            "hello from the hooks lesson\n"
        );
        assert_lines_in_order(
            &stderr,
            &[
                "[hook] PreToolUse: write_file(test.txt)".to_string(),
                "[hook] PostToolUse: write_file returned output (26 chars)".to_string(),
                "[hook] PreToolUse: write_file(draft.tmp)".to_string(),
                "[hook] PostToolUse: write_file returned output (26 chars)".to_string(),
            ],
        );
        // The rm asked through the permission hook; with no terminal the
        // answer was no, and the log hook after it never saw the call.
        assert!(
            stderr.contains("Tool: bash(rm -v draft.tmp)"),
            "{run}: {stderr}"
        );
        assert!(stdout.contains("no terminal to ask"), "{run}: {stdout}");
        assert!(dir.path().join("draft.tmp").exists(), "{run}");
        assert!(!stderr.contains("PreToolUse: bash(rm"), "{run}: {stderr}");
        // seq's 48,894 characters set off the large-output warning.
        assert!(
            stderr.contains("[hook] PostToolUse: ⚠ large output from bash: 48894 chars"),
            "{run}: {stderr}"
        );
        assert!(
            stderr.contains("[hook] Stop: session used 5 tool calls"),
            "{run}: {stderr}"
        );
    }
}
