//! Lesson 2's demo, run as the chapter's "Try it" runs it: with no key, so
//! the demo model plays `demo.json` while the five tools really run — one
//! `-p` prompt, then the whole script in the REPL, twice in the same
//! directory.

use crate::support;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn one_prompt_writes_a_file_and_reads_it_back_without_a_key() {
    let dir = tempfile::tempdir().unwrap();

    let output = support::run_binary(
        dir.path(),
        &["-p", "create hello.py that prints hello, then run it"],
        &[],
        "",
    )
    .await;

    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("[demo model]"), "{stderr}");
    // The demo's write_file really wrote, and its read_file really read.
    let written = std::fs::read_to_string(dir.path().join("test.py")).unwrap();
    assert_eq!(written, "print(\"hello\")\n");
    let read = stdout.find("> read_file: test.py").unwrap();
    assert!(stdout[read..].contains("print(\"hello\")"), "{stdout}");
}

#[tokio::test]
async fn the_whole_script_runs_in_the_repl_and_again_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    // A file only this test made, for glob to find beside the demo's own.
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/marker.py"), "").unwrap();
    let prompts = "create test.py and read it back\n\
                   find the Python files\n\
                   read /etc/passwd\n";

    for run in ["first", "second"] {
        let output = support::run_binary(dir.path(), &[], &[], prompts).await;

        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "{run}: {stdout}\n{stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("test.py")).unwrap(),
            "print(\"hello\")\n",
            "{run}"
        );
        // glob really searched the workspace: it found both files.
        let glob = stdout.find("> glob: **/*.py").unwrap();
        let found = &stdout[glob..stdout.find("> read_file: /etc/passwd").unwrap()];
        assert!(
            found.contains("test.py") && found.contains("src/marker.py"),
            "{run}: {found}"
        );
        // The path check refused /etc/passwd: none of it was shown.
        assert!(stdout.contains("escapes the workspace"), "{run}: {stdout}");
        assert!(!stdout.contains("root:"), "{run}: {stdout}");
    }
}
