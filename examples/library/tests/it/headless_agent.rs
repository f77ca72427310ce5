//! `headless_agent`: one turn run from code, its outcome and history read
//! back as data.

use crate::support::{run, stdout};

#[test]
fn a_turn_run_from_code_really_uses_the_tools_and_reports_its_outcome() {
    let workdir = tempfile::tempdir().unwrap();
    let output = run(env!("CARGO_BIN_EXE_headless_agent"), workdir.path());

    // write_file really ran in the workspace...
    let notes = std::fs::read_to_string(workdir.path().join("notes.md")).unwrap();
    assert_eq!(notes, "# Notes\n\n- written by an agent driven from code\n");
    // ...and the outcome the program read from `run_turn`: three model
    // calls, two tools, none failed, and a history of six messages (the
    // prompt, then a reply and its results twice, then the last reply).
    let stdout = stdout(&output);
    assert!(
        stdout.contains(
            "rounds: 3, tool calls: 2 (write_file, bash), failed: 0, messages in the history: 6"
        ),
        "{stdout}"
    );
}
