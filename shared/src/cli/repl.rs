//! The read–eval–print loop.
//!
//! On a terminal, lines are read with rustyline (line editing, history for
//! the session). When standard input is a pipe or a file, lines are read
//! plainly until end of input, so a lesson can be scripted:
//! `printf 'list the files\n' | cargo run -p s01_agent_loop`.
//!
//! Between turns the REPL waits for two things at once: the user's next
//! line, and work that arrives on its own ([`Hooks::idle_work`]: a finished
//! background command, a cron job that came due). Whichever comes first
//! starts the next turn. While a turn started by arriving work runs, the
//! user's prompt stays open: what they type meanwhile runs next, and Ctrl-C
//! cancels that turn.
//!
//! The wait passes on what background work reports meanwhile (notices,
//! progress), so it shows up at once, not with the next turn. With the line
//! editor's prompt on the screen, writing to the terminal directly would
//! garble the prompt and what the user has typed so far; so those lines go
//! through rustyline's external printer, which prints them above the prompt
//! and redraws it. (The other way, hiding the prompt, printing and drawing
//! it again by hand, would need to know the editor's state, which only the
//! editor has.) Live progress lines are not drawn while a prompt is open:
//! progress comes as plain lines then, and the live lines come back when
//! the next turn runs.
//!
//! A line that starts with `/` is offered to [`Hooks::slash_command`]
//! first; when the lesson answers it, the answer is printed and no turn
//! runs.

use std::collections::VecDeque;

use super::input::{LineReader, Read};
use super::render::{Prompt, TerminalPrinter};
use super::{Lesson, run_turn_printing};
use crate::agent::{Agent, TurnError};
use crate::hooks::Hooks;
use crate::protocol::Message;

/// The user's side of the terminal while arriving work runs: the pending
/// read, the lines typed meanwhile, and whether input has ended.
pub(crate) struct TypeAhead {
    pub(crate) reader: LineReader,
    pub(crate) lines: VecDeque<String>,
    pub(crate) ended: bool,
}

impl TypeAhead {
    /// Takes what the pending read returned during a turn. Returns whether
    /// the user asked to cancel the turn (Ctrl-C at the open prompt).
    pub(crate) fn take(&mut self, read: Read) -> bool {
        match read {
            Read::Line(line) => {
                self.lines.push_back(line);
                // Keep a read pending, so a question the turn asks can be
                // answered at the prompt.
                self.reader.request();
                false
            }
            Read::Interrupted => {
                self.reader.request();
                true
            }
            Read::Eof => {
                self.ended = true;
                false
            }
        }
    }
}

/// Whether a line ends the session.
fn is_quit(line: &str) -> bool {
    matches!(line.trim(), "" | "q" | "exit")
}

/// What ended the REPL's wait between turns.
enum Next {
    Line(String),
    Work(String),
    Quit,
}

/// Reads prompts and runs turns until the user quits.
pub(crate) async fn run<H: Hooks>(
    lesson: Lesson,
    agent: &mut Agent<H>,
    history: &mut Vec<Message>,
    printer: &mut TerminalPrinter,
) {
    printer.say(&format!(
        "{}: {} — type a request; q, exit or an empty line quits.",
        lesson.id, lesson.title
    ));
    let prompt = format!("{} >> ", lesson.id);
    let (reader, external) = LineReader::spawn(prompt.clone());
    if let Some(external) = external {
        printer.set_external(external);
    }
    let mut user = TypeAhead {
        reader,
        lines: VecDeque::new(),
        ended: false,
    };
    // With a line editor the prompt is on the screen while a read is
    // pending; a plain reader of a pipe shows none.
    let open = |user: &TypeAhead, prompt: Prompt| {
        if user.reader.is_editor() && user.reader.is_pending() {
            prompt
        } else {
            Prompt::Closed
        }
    };
    loop {
        let next = match user.lines.pop_front() {
            Some(line) => Next::Line(line),
            None if user.ended => Next::Quit,
            None => {
                user.reader.request();
                printer.set_prompt(open(&user, Prompt::Waiting));
                let next = tokio::select! {
                    read = user.reader.next() => match read {
                        Read::Line(line) => Next::Line(line),
                        Read::Interrupted | Read::Eof => Next::Quit,
                    },
                    work = agent.idle_work(printer) => Next::Work(work),
                };
                printer.set_prompt(open(&user, Prompt::Busy));
                next
            }
        };
        let result = match next {
            Next::Quit => break,
            Next::Line(line) if is_quit(&line) => break,
            Next::Line(line) => {
                if let Some(answer) = super::slash_command(agent, &line) {
                    printer.answer(&answer);
                    continue;
                }
                run_turn_printing(agent, history, printer, &line, None).await
            }
            Next::Work(work) => {
                // The prompt is on screen with a read pending: the turn's
                // output starts on a line of its own, and the prompt is
                // shown again after it.
                printer.say("");
                let result =
                    run_turn_printing(agent, history, printer, &work, Some(&mut user)).await;
                if user.reader.is_pending() && user.reader.is_editor() {
                    eprint!("{prompt}");
                }
                result
            }
        };
        match result {
            Ok(_) | Err(TurnError::Cancelled) => {}
            Err(error) => printer.say(&format!("error: {error}")),
        }
    }
    printer.set_prompt(Prompt::Closed);
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
