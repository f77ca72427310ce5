//! Questions to the person at the terminal, for the mechanisms that need a
//! yes or no (lesson 3's `Allow? [y/N]`, lesson 15's team confirmation).
//!
//! Lessons never print on their own; a question is the one thing that must
//! reach the terminal *and* wait for it, so it lives here with the rest of
//! the front end. The safe answer is the default: anything but `y`/`yes`
//! is no, and with no terminal on standard input nothing is read at all.
//! While a question is on the screen, the live progress lines are erased
//! ([`super::live::suspended`]), so they are not drawn over it.

use std::io::{BufRead, IsTerminal, Write};

/// What the terminal answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalAnswer {
    /// The person typed `y` or `yes`.
    Yes,
    /// The person typed anything else, or nothing.
    No,
    /// Standard input is not a terminal, so nobody was asked.
    NoTerminal,
}

/// Shows `question` (its lines, then `Allow? [y/N]`-style `prompt`) on
/// standard error and reads one line from the terminal. When standard input
/// is not a terminal, prints `no (<why_no>)` and answers
/// [`TerminalAnswer::NoTerminal`] without reading.
pub fn ask_yes_no(question: &str, prompt: &str, why_no: &str) -> TerminalAnswer {
    // Live progress lines would be drawn over the question and the answer
    // being typed: they are erased until the answer is in.
    super::live::suspended(|| ask(question, prompt, why_no))
}

fn ask(question: &str, prompt: &str, why_no: &str) -> TerminalAnswer {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\n{question}\n{prompt} ");
    if !std::io::stdin().is_terminal() {
        let _ = writeln!(err, "no ({why_no})");
        return TerminalAnswer::NoTerminal;
    }
    let _ = err.flush();
    drop(err);
    match read_answer() {
        Some(line) if matches!(line.trim().to_lowercase().as_str(), "y" | "yes") => {
            TerminalAnswer::Yes
        }
        _ => TerminalAnswer::No,
    }
}

/// Shows `question` and `prompt` as [`ask_yes_no`] would, followed by an
/// answer given in advance (`yes (pre-approved by --yes)`).
pub fn show_answered(question: &str, prompt: &str, answer: &str) {
    super::live::suspended(|| eprintln!("\n{question}\n{prompt} {answer}"));
}

/// Reads one line from the terminal. The REPL may hold standard input
/// locked, so the answer is read from the terminal device itself — unless
/// the REPL's own read is pending on the terminal (a turn that arriving
/// work started, from lesson 13 on): then the answer is the line that read
/// returns, and nobody races it for the user's keystrokes.
fn read_answer() -> Option<String> {
    let read = || {
        if let Some(read) = super::input::ask_pending_reader() {
            return match read {
                super::input::Read::Line(line) => Some(line),
                super::input::Read::Interrupted | super::input::Read::Eof => None,
            };
        }
        let tty = std::fs::File::open("/dev/tty").ok()?;
        let mut line = String::new();
        std::io::BufReader::new(tty).read_line(&mut line).ok()?;
        Some(line)
    };
    // Waiting for the user blocks this thread; on the multi-threaded
    // runtime the binaries use, let tokio move other work elsewhere.
    match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(read),
        _ => read(),
    }
}
