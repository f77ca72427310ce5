//! Running one of the programs.

// The helpers are test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `program` with the scripted model in `workdir`, with no model
/// configured in its environment either way.
pub fn run(program: &str, workdir: &Path) -> Output {
    let output = Command::new(program)
        .args(["--demo", "--workdir"])
        .arg(workdir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{program} failed:\n{}\n{}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}
