//! `custom_tool`: a tool registered by the program is offered, dispatched
//! and confined like the lesson's own.

use crate::support::{run, stdout};

#[test]
fn the_registered_tool_counts_the_real_file_and_refuses_one_outside() {
    let temp = tempfile::tempdir().unwrap();
    let workdir = temp.path().join("workspace");
    std::fs::create_dir(&workdir).unwrap();
    // Counts no script could know: only the tool reading this file finds them.
    let poem: String = (1..=7)
        .map(|line| format!("{}\n", vec!["word"; line].join(" ")))
        .collect();
    std::fs::write(workdir.join("poem.txt"), &poem).unwrap();
    std::fs::write(temp.path().join("outside.txt"), "secret words here\n").unwrap();

    let stdout = stdout(&run(env!("CARGO_BIN_EXE_custom_tool"), &workdir));
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("word_count "))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(
        lines[0],
        format!(
            "word_count {{\"path\":\"poem.txt\"}} -> ok: poem.txt: 7 lines, 28 words, {} bytes",
            poem.len()
        )
    );
    assert!(
        lines[1].starts_with("word_count {\"path\":\"../outside.txt\"} -> error: "),
        "{stdout}"
    );
    assert!(!lines[1].contains("1 lines"), "{stdout}");
}
