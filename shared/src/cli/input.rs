//! Reading the user's lines on a thread of their own.
//!
//! Reading a line blocks. Until lesson 13 that was fine: the REPL waited for
//! the user, ran the turn, waited again. From lesson 13 on, work can arrive
//! while the REPL waits — a background command finishes, a cron job comes
//! due — and the REPL must be able to wait for *either* a line *or* that
//! work, with `tokio::select!`. So the blocking read moves to a thread, and
//! the REPL receives what it read over a channel.
//!
//! The line editor lives on that thread, but what background work reports
//! must reach the screen while the editor waits for a line. Rustyline's
//! external printer does that (it prints above the prompt and redraws it);
//! the thread creates it with the editor and hands it to the REPL.
//!
//! The REPL asks for one line at a time ([`LineReader::request`]), so
//! nothing is read, and no prompt is shown, while a turn the user started
//! is running. A turn started by arriving work is different: the user's
//! prompt is on screen then, with a read pending. If that turn needs a
//! yes-or-no answer (lesson 3's `Allow? [y/N]`), the answer must come from
//! that pending read, not from a second reader of the same terminal racing
//! it for keystrokes: [`ask_pending_reader`] arranges that.

use std::io::{BufRead, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use rustyline::error::ReadlineError;
use rustyline::{DefaultEditor, ExternalPrinter};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::sync::LockExt;

/// What one read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    /// A line, without its line ending.
    Line(String),
    /// Ctrl-C at the prompt (only seen while a line editor reads).
    Interrupted,
    /// End of input: Ctrl-D, or the end of a pipe or file.
    Eof,
}

/// Whether a line editor on the terminal is waiting for a line right now.
static EDITOR_READING: AtomicBool = AtomicBool::new(false);

/// A question waiting for the next line the pending read returns.
static QUESTION: Mutex<Option<mpsc::Sender<Read>>> = Mutex::new(None);

/// If a line editor is waiting for the user's next prompt, shows nothing
/// more, waits for the line the user types and hands it to the caller
/// instead of to the REPL. `None` when no read is pending, so the caller
/// reads the terminal itself. Blocks the calling thread.
pub(crate) fn ask_pending_reader() -> Option<Read> {
    if !EDITOR_READING.load(Ordering::SeqCst) {
        return None;
    }
    let (sender, answer) = mpsc::channel();
    *QUESTION.locked() = Some(sender);
    // If the read ended between the check and now, the reader thread sent
    // that line to the REPL; the REPL then asks for another at once (see
    // `repl`), and that one comes here.
    answer.recv().ok()
}

/// Where lines are read from.
enum Input {
    Editor(Box<DefaultEditor>),
    Plain(std::io::StdinLock<'static>),
}

/// A printer that writes above the line editor's prompt.
pub(crate) type Printer = Box<dyn ExternalPrinter + Send>;

impl Input {
    /// Opens the terminal's line editor, with its external printer, or
    /// plain standard input.
    fn open() -> (Self, Option<Printer>) {
        if std::io::stdin().is_terminal()
            && let Ok(mut editor) = DefaultEditor::new()
        {
            // Rustyline refuses one when standard output is not a
            // terminal: the REPL's lines are then written plainly.
            let printer = editor
                .create_external_printer()
                .ok()
                .map(|printer| Box::new(printer) as Printer);
            return (Self::Editor(Box::new(editor)), printer);
        }
        (Self::Plain(std::io::stdin().lock()), None)
    }

    fn read(&mut self, prompt: &str) -> Read {
        match self {
            Self::Editor(editor) => {
                EDITOR_READING.store(true, Ordering::SeqCst);
                let line = editor.readline(prompt);
                EDITOR_READING.store(false, Ordering::SeqCst);
                match line {
                    Ok(line) => {
                        let _ = editor.add_history_entry(line.as_str());
                        Read::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Read::Interrupted,
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(error) => {
                        eprintln!("error reading input: {error}");
                        Read::Eof
                    }
                }
            }
            Self::Plain(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => Read::Eof,
                    Ok(_) => Read::Line(line.trim_end_matches(['\r', '\n']).to_string()),
                }
            }
        }
    }
}

/// The REPL's end of the reading thread.
pub(crate) struct LineReader {
    requests: mpsc::Sender<()>,
    reads: UnboundedReceiver<Read>,
    /// Whether a read was requested and its line not yet received.
    pending: bool,
    /// Whether the thread is gone (end of input was read).
    closed: bool,
    /// Whether a line editor reads (it shows the prompt; a plain reader
    /// of a pipe shows none).
    editor: bool,
}

impl LineReader {
    /// Starts the thread. It reads only when asked, showing `prompt`.
    /// Returns the reader and, with a line editor on a terminal, the
    /// editor's external printer.
    pub(crate) fn spawn(prompt: String) -> (Self, Option<Printer>) {
        let (requests, asked) = mpsc::channel::<()>();
        let (sender, reads) = unbounded_channel();
        let (opened, printer) = mpsc::channel();
        // The thread is not joined: at exit it may be blocked in a read
        // that only the user can end, and the process ending ends it.
        std::thread::spawn(move || {
            let (input, printer) = Input::open();
            let _ = opened.send(printer);
            read_on_request(input, &prompt, &asked, &sender);
        });
        let reader = Self {
            requests,
            reads,
            pending: false,
            closed: false,
            editor: std::io::stdin().is_terminal(),
        };
        (reader, printer.recv().ok().flatten())
    }

    /// Asks for the next line, unless a read is already pending.
    pub(crate) fn request(&mut self) {
        if !self.pending && !self.closed {
            self.pending = self.requests.send(()).is_ok();
        }
    }

    /// Whether a read is pending (its prompt is on screen).
    pub(crate) fn is_pending(&self) -> bool {
        self.pending
    }

    /// Whether the lines come from a line editor on a terminal.
    pub(crate) fn is_editor(&self) -> bool {
        self.editor
    }

    /// The line the pending read returns. Cancel-safe: if the caller stops
    /// waiting, the line is kept for the next call.
    pub(crate) async fn next(&mut self) -> Read {
        if self.closed {
            return Read::Eof;
        }
        let read = self.reads.recv().await.unwrap_or(Read::Eof);
        self.pending = false;
        if read == Read::Eof {
            self.closed = true;
        }
        read
    }
}

/// The thread's loop: one read per request; a line that a waiting question
/// claims goes to it, and then the REPL's read starts over.
fn read_on_request(
    mut input: Input,
    prompt: &str,
    asked: &mpsc::Receiver<()>,
    reads: &UnboundedSender<Read>,
) {
    while asked.recv().is_ok() {
        let read = loop {
            let read = input.read(prompt);
            let question = QUESTION.locked().take();
            match question {
                Some(question) => {
                    let _ = question.send(read);
                }
                None => break read,
            }
        };
        let end = read == Read::Eof;
        if reads.send(read).is_err() || end {
            return;
        }
    }
}
