//! The read–eval–print loop.
//!
//! On a terminal, lines are read with rustyline (line editing, history for
//! the session). When standard input is a pipe or a file, lines are read
//! plainly until end of input, so a lesson can be scripted:
//! `printf 'list the files\n' | cargo run -p s01_agent_loop`.

use std::io::{BufRead, IsTerminal};

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::{Lesson, run_turn_interruptibly};
use crate::agent::{Agent, TurnError};
use crate::hooks::Hooks;
use crate::protocol::Message;

/// Where the REPL reads its lines from.
enum Input {
    Editor(Box<DefaultEditor>),
    Plain(std::io::StdinLock<'static>),
}

impl Input {
    fn open() -> Self {
        if std::io::stdin().is_terminal()
            && let Ok(editor) = DefaultEditor::new()
        {
            return Self::Editor(Box::new(editor));
        }
        Self::Plain(std::io::stdin().lock())
    }

    /// The next line, or `None` at end of input (EOF or Ctrl-C / Ctrl-D at
    /// the prompt).
    fn read_line(&mut self, prompt: &str) -> Option<String> {
        match self {
            Self::Editor(editor) => match editor.readline(prompt) {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    Some(line)
                }
                Err(ReadlineError::Interrupted | ReadlineError::Eof) => None,
                Err(error) => {
                    eprintln!("error reading input: {error}");
                    None
                }
            },
            Self::Plain(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
                }
            }
        }
    }
}

/// Whether a line ends the session.
fn is_quit(line: &str) -> bool {
    matches!(line.trim(), "" | "q" | "exit")
}

/// Reads prompts and runs turns until the user quits.
pub(crate) async fn run<H: Hooks>(
    lesson: Lesson,
    agent: &mut Agent<H>,
    history: &mut Vec<Message>,
) {
    eprintln!(
        "{}: {} — type a request; q, exit or an empty line quits.",
        lesson.id, lesson.title
    );
    let prompt = format!("{} >> ", lesson.id);
    let mut input = Input::open();
    // Reading a line blocks this thread; `block_in_place` lets the runtime
    // hand any background work (later lessons have some) to another thread.
    while let Some(line) = tokio::task::block_in_place(|| input.read_line(&prompt)) {
        if is_quit(&line) {
            break;
        }
        match run_turn_interruptibly(agent, history, &line).await {
            Ok(()) | Err(TurnError::Cancelled) => {}
            Err(error) => eprintln!("error: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_quit;

    #[test]
    fn quit_words() {
        assert!(is_quit("q") && is_quit(" exit ") && is_quit(""));
        assert!(!is_quit("quit the job"));
    }
}
