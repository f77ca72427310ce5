//! The memory layer's lines on standard error, so the user can watch it
//! work: `[Memory: …]` for what it did, `warning: …` for what it skipped.

use std::io::IsTerminal;

/// Prints `[Memory: text]`, grey when standard error is a terminal.
pub fn note(text: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("\x1b[90m[Memory: {text}]\x1b[0m");
    } else {
        eprintln!("[Memory: {text}]");
    }
}

/// Prints `warning: text`.
pub fn warn(text: &str) {
    tracing::debug!("memory warning: {text}");
    eprintln!("warning: {text}");
}

/// "1 memory", "3 memories".
pub fn memories(count: usize) -> String {
    if count == 1 {
        "1 memory".to_string()
    } else {
        format!("{count} memories")
    }
}
