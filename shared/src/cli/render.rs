//! Printing the loop's events: text as it streams, tool calls as they run,
//! notices, and the progress of work running in the background.
//!
//! One [`TerminalPrinter`] lasts the whole session (the REPL's turns, the
//! waits between them, `-p`'s wait for background work), because what it
//! shows of running work must outlive any one turn.
//!
//! Progress is shown two ways:
//!
//! - **Live**, when standard output and standard error are both terminals
//!   and no prompt is open: one line per running id at the bottom of the
//!   screen (a spinner, the report's status, a clock that ticks between
//!   reports; see [`super::live`]). A finished report takes its line away
//!   and leaves one plain line saying how the work ended.
//! - **Plain lines** otherwise (`[progress] …` on standard error), and only
//!   when a report says something the last one on its id did not, so a
//!   pipe is not flooded with clock ticks.
//!
//! Nothing may be written through a live line. Whole lines (tool calls,
//! results, notices, the front end's own messages) are written with the
//! live area erased and drawn again below them. A streaming reply is not
//! whole lines, so the area is taken away when a reply starts streaming
//! and drawn again, from the last reports, when the reply is done. A
//! progress line never splits a half-written line of text either: it waits
//! for the line to end. (A notice does end the line: it may be urgent,
//! such as "retrying in 2 s".)
//!
//! While the REPL's line editor shows its prompt, drawing below it would
//! garble the line the user is typing, so the live area is off and
//! progress comes as plain lines. Between turns these are handed to the
//! editor's external printer, which prints them above the prompt and
//! redraws the prompt and what was typed so far.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use rustyline::ExternalPrinter;

use super::live::LiveArea;
use crate::agent::{Event, Observer};
use crate::notice::Notice;
use crate::progress::Progress;
use crate::protocol::{Delta, ToolResult, ToolUse};
use crate::text::truncate_chars;

/// How many characters of a tool result the terminal shows.
const RESULT_PREVIEW_CHARS: usize = 300;

/// Whether the user's prompt is on the screen, which rules out live lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// No prompt: live lines may be drawn.
    Closed,
    /// The REPL waits at the editor's prompt between turns: lines go
    /// through the editor's external printer when there is one.
    Waiting,
    /// A turn runs while the prompt stays open (work arrived on its own):
    /// lines are written as the turn's other output is.
    Busy,
}

/// The last report of a piece of work still running, and when it came.
#[derive(Debug, Clone)]
struct Running {
    report: Progress,
    at: Instant,
}

/// Writes events to standard output, with colours on a terminal; notices
/// and progress go to standard error.
pub struct TerminalPrinter {
    colour: bool,
    /// Whether standard error is a terminal (notices are painted then).
    colour_err: bool,
    /// Whether the cursor is in the middle of a line of streamed text.
    mid_line: bool,
    /// Printed before every line, so a subagent's output can be told apart.
    prefix: String,
    /// The last report on each piece of work still running.
    running: Vec<Running>,
    /// Progress lines waiting for a half-written line of text to end.
    held: Vec<String>,
    /// The live lines, when both outputs are terminals.
    live: Option<LiveArea>,
    /// Whether a reply is streaming (the live area is away meanwhile).
    replying: bool,
    prompt: Prompt,
    /// The line editor's printer, for lines written at its prompt.
    external: Option<Box<dyn ExternalPrinter + Send>>,
}

impl std::fmt::Debug for TerminalPrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalPrinter")
            .field("prefix", &self.prefix)
            .field("running", &self.running.len())
            .field("live", &self.live.is_some())
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

impl Default for TerminalPrinter {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalPrinter {
    /// A printer for the main agent: live progress lines when standard
    /// output and standard error are both terminals, plain lines otherwise.
    pub fn new() -> Self {
        let terminal = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        Self {
            live: terminal.then(LiveArea::terminal),
            ..Self::plain()
        }
    }

    /// A printer whose lines start with `prefix` (e.g. `"  [subagent] "`).
    /// It shows progress as plain lines: the live area belongs to the
    /// session's main printer.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            ..Self::plain()
        }
    }

    /// A printer without a live area.
    fn plain() -> Self {
        Self {
            colour: std::io::stdout().is_terminal(),
            colour_err: std::io::stderr().is_terminal(),
            mid_line: false,
            prefix: String::new(),
            running: Vec::new(),
            held: Vec::new(),
            live: None,
            replying: false,
            prompt: Prompt::Closed,
            external: None,
        }
    }

    /// Gives the printer the line editor's external printer, for what it
    /// shows while the editor's prompt waits for the user.
    pub(crate) fn set_external(&mut self, external: Box<dyn ExternalPrinter + Send>) {
        self.external = Some(external);
    }

    /// The user's prompt opened or closed. When it opens, the live lines
    /// give way to one plain line each, so the state of running work stays
    /// on the screen; when it closes, they are drawn again.
    pub(crate) fn set_prompt(&mut self, prompt: Prompt) {
        if prompt == self.prompt {
            return;
        }
        if self.prompt == Prompt::Closed {
            self.retire_live_lines();
        }
        self.prompt = prompt;
        self.redraw();
    }

    /// One line of the front end's own on standard error (an error, a
    /// note on how a turn ended), written above the live lines.
    pub(crate) fn say(&mut self, line: &str) {
        self.write_out(|printer, out, err| {
            printer.end_line(out, err);
            let _ = writeln!(err, "{line}");
        });
    }

    /// One line on standard output (a slash command's answer), written
    /// above the live lines.
    pub(crate) fn answer(&mut self, text: &str) {
        self.write_out(|printer, out, err| {
            printer.end_line(out, err);
            let _ = writeln!(out, "{text}");
        });
    }

    /// Ends a turn's output with an empty line.
    pub(crate) fn end_turn(&mut self) {
        self.write_out(|printer, out, err| {
            printer.end_line(out, err);
            let _ = writeln!(out);
        });
    }

    /// The end of the session: live lines give way to plain ones, so what
    /// was still running is not wiped from the screen.
    pub(crate) fn close(&mut self) {
        self.retire_live_lines();
        self.live = None;
    }

    /// Takes the live lines away, leaving a plain line for each.
    fn retire_live_lines(&mut self) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        if live.is_empty() {
            return;
        }
        live.clear();
        let lines: Vec<String> = self
            .running
            .iter()
            .map(|running| self.progress_line(&running.report))
            .collect();
        self.write_out(|printer, out, err| {
            printer.end_line(out, err);
            for line in &lines {
                let _ = writeln!(err, "{line}");
            }
        });
    }

    /// Whether lines go through the line editor's printer now.
    fn at_editor_prompt(&self) -> bool {
        self.prompt == Prompt::Waiting && self.external.is_some()
    }

    /// Whether progress is drawn as live lines right now.
    fn drawing_live(&self) -> bool {
        self.live.is_some() && self.prompt == Prompt::Closed
    }

    /// Draws every running piece of work's line from its last report, if
    /// live lines may be drawn now.
    fn redraw(&mut self) {
        if !self.drawing_live() || self.replying || self.mid_line {
            return;
        }
        if let Some(live) = self.live.as_mut() {
            for running in &self.running {
                live.draw(&self.prefix, &running.report, running.at.elapsed());
            }
        }
    }

    /// Runs `write` on the real outputs, or on buffers handed to the line
    /// editor's external printer while its prompt waits.
    fn write_out(&mut self, write: impl FnOnce(&mut Self, &mut dyn Write, &mut dyn Write)) {
        if self.at_editor_prompt()
            && let Some(mut external) = self.external.take()
        {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            write(self, &mut out, &mut err);
            out.extend(err);
            if !out.is_empty() {
                let _ = external.print(String::from_utf8_lossy(&out).into_owned());
            }
            self.external = Some(external);
            return;
        }
        // Unlocked handles: a lock held here while the live area draws
        // would wait on the area's ticking thread, which may be waiting
        // for the same lock.
        self.write_lines(&mut std::io::stdout(), &mut std::io::stderr(), write);
    }

    /// Runs `write`, which writes whole lines, with the live lines erased,
    /// and draws them again below.
    fn write_lines(
        &mut self,
        out: &mut dyn Write,
        err: &mut dyn Write,
        write: impl FnOnce(&mut Self, &mut dyn Write, &mut dyn Write),
    ) {
        // The area is out of `self` while `write` runs, so that nothing
        // `write` does can suspend it a second time (its lock is held).
        let live = self.live.take();
        match &live {
            Some(area) => area.suspend(|| {
                write(self, out, err);
                let _ = out.flush();
                let _ = err.flush();
            }),
            None => {
                write(self, out, err);
                let _ = out.flush();
                let _ = err.flush();
            }
        }
        self.live = live;
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn paint_err(&self, code: &str, text: &str) -> String {
        if self.colour_err {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Ends a half-written line of text, then writes the progress lines
    /// that waited for it.
    fn end_line(&mut self, out: &mut dyn Write, err: &mut dyn Write) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
        self.write_held(out, err);
    }

    fn write_held(&mut self, out: &mut dyn Write, err: &mut dyn Write) {
        if self.held.is_empty() {
            return;
        }
        let _ = out.flush();
        for line in self.held.drain(..) {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn tool_call(&mut self, out: &mut dyn Write, err: &mut dyn Write, call: &ToolUse) {
        self.end_line(out, err);
        let line = format!("{}> {}: {}", self.prefix, call.name, describe_input(call));
        let _ = writeln!(out, "{}", self.paint("33", &line));
    }

    fn tool_result(&mut self, out: &mut dyn Write, err: &mut dyn Write, result: &ToolResult) {
        self.end_line(out, err);
        let text = truncate_chars(result.text().trim_end(), RESULT_PREVIEW_CHARS);
        let indent = format!("{}  ", self.prefix);
        let mut lines: Vec<String> = text.lines().map(|line| format!("{indent}{line}")).collect();
        if result.is_error {
            // Mark the first line, after the prefix, so a prefixed subagent's
            // errors read the same as the parent's.
            let first = text.lines().next().unwrap_or_default();
            match lines.first_mut() {
                Some(line) => *line = format!("{indent}error: {first}"),
                None => lines.push(format!("{indent}error")),
            }
        }
        let code = if result.is_error { "31" } else { "2" };
        let _ = writeln!(out, "{}", self.paint(code, &lines.join("\n")));
    }

    /// A notice goes to standard error, dim, on a line of its own: the
    /// streamed line on standard output is ended first, so the two never
    /// share a line on the screen.
    fn notice(&mut self, out: &mut dyn Write, err: &mut dyn Write, notice: &Notice) {
        self.end_line(out, err);
        let _ = out.flush();
        let line = format!("{}{notice}", self.prefix);
        let _ = writeln!(err, "{}", self.paint_err("2", &line));
        let _ = err.flush();
    }

    /// The plain line for a report.
    fn progress_line(&self, report: &Progress) -> String {
        self.paint_err("2", &format!("{}[progress] {report}", self.prefix))
    }

    /// A progress report: its id's live line is redrawn (or, when live
    /// lines are not drawn now, a plain line is written if the report says
    /// something the last one on its id did not). A finished report ends
    /// its id: the live line goes, and one plain line says how it ended.
    fn progress(&mut self, out: &mut dyn Write, err: &mut dyn Write, report: &Progress) {
        let news = self
            .running
            .iter()
            .find(|running| running.report.id == report.id)
            .is_none_or(|running| report.differs_in_substance(&running.report));
        self.running
            .retain(|running| running.report.id != report.id);
        if !report.finished {
            self.running.push(Running {
                report: report.clone(),
                at: Instant::now(),
            });
        }
        if self.drawing_live() {
            if report.finished {
                if let Some(live) = self.live.as_mut() {
                    live.remove(&report.id);
                }
                self.plain_progress(out, err, report);
            } else if !self.replying
                && !self.mid_line
                && let Some(live) = self.live.as_mut()
            {
                live.draw(&self.prefix, report, Duration::ZERO);
            }
        } else if news {
            self.plain_progress(out, err, report);
        }
    }

    /// Writes a report's plain line, or holds it while a line of text is
    /// half-written.
    fn plain_progress(&mut self, out: &mut dyn Write, err: &mut dyn Write, report: &Progress) {
        let line = self.progress_line(report);
        if self.mid_line {
            self.held.push(line);
            return;
        }
        self.write_lines(out, err, |_, out, err| {
            let _ = out.flush();
            let _ = writeln!(err, "{line}");
        });
    }

    /// Streams text, starting every line with the prefix so that nested
    /// output can be told apart from the parent's. The live lines are taken
    /// away first (they are drawn again when the reply is done).
    fn text(&mut self, out: &mut dyn Write, err: &mut dyn Write, text: &str) {
        if !self.replying {
            self.replying = true;
            if let Some(live) = self.live.as_mut() {
                live.clear();
            }
        }
        for piece in text.split_inclusive('\n') {
            if !self.mid_line {
                let _ = write!(out, "{}", self.prefix);
            }
            let _ = write!(out, "{piece}");
            self.mid_line = !piece.ends_with('\n');
            if !self.mid_line {
                self.write_held(out, err);
            }
        }
    }

    /// Writes one event to `out`, or a notice or progress line to `err`;
    /// the terminal passes standard output and standard error.
    fn write_event(&mut self, out: &mut dyn Write, err: &mut dyn Write, event: Event<'_>) {
        match event {
            Event::Progress(report) => self.progress(out, err, report),
            Event::Delta(Delta::Text(text)) => self.text(out, err, text),
            Event::Delta(Delta::Thinking(_) | Delta::ToolUseStart { .. }) => {}
            Event::ReplyDone => {
                self.end_line(out, err);
                self.replying = false;
                self.redraw();
            }
            Event::Notice(notice) => {
                self.write_lines(out, err, |printer, out, err| {
                    printer.notice(out, err, notice);
                });
            }
            Event::ToolCall(call) => {
                self.write_lines(out, err, |printer, out, err| {
                    printer.tool_call(out, err, call);
                });
            }
            Event::ToolResult(_, result) => {
                self.write_lines(out, err, |printer, out, err| {
                    printer.tool_result(out, err, result);
                });
            }
        }
        let _ = out.flush();
    }
}

/// A one-line summary of a tool call's input: the command for `bash`, the
/// path for file tools, compact JSON otherwise.
pub fn describe_input(call: &ToolUse) -> String {
    let field = |name: &str| call.input.get(name).and_then(|value| value.as_str());
    let summary = match call.name.as_str() {
        "bash" => field("command").map(str::to_string),
        "read_file" | "write_file" | "edit_file" => field("path").map(str::to_string),
        "glob" => field("pattern").map(str::to_string),
        _ => None,
    };
    truncate_chars(&summary.unwrap_or_else(|| call.input.to_string()), 200)
}

impl Observer for TerminalPrinter {
    fn event(&mut self, event: Event<'_>) {
        if self.at_editor_prompt() {
            self.write_out(|printer, out, err| printer.write_event(out, err, event));
        } else {
            // Unlocked handles, as in `write_out`.
            self.write_event(&mut std::io::stdout(), &mut std::io::stderr(), event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::cell::RefCell;
    use std::rc::Rc;

    use indicatif::{InMemoryTerm, ProgressDrawTarget};

    fn render(printer: &mut TerminalPrinter, events: &[Event<'_>]) -> String {
        render_both(printer, events).0
    }

    /// Standard output and standard error, as the events left them.
    fn render_both(printer: &mut TerminalPrinter, events: &[Event<'_>]) -> (String, String) {
        printer.colour = false;
        printer.colour_err = false;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for event in events {
            printer.write_event(&mut out, &mut err, *event);
        }
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_notice_ends_the_streamed_line_first_and_goes_to_stderr() {
        let notice = Notice {
            tag: "recovery".into(),
            text: "retrying in 2s".into(),
        };
        let (out, err) = render_both(
            &mut TerminalPrinter::plain(),
            &[
                Event::Delta(Delta::Text("half a li")),
                Event::Notice(&notice),
                Event::Delta(Delta::Text("ne")),
                Event::ReplyDone,
            ],
        );
        assert_eq!(out, "half a li\nne\n");
        assert_eq!(err, "[recovery] retrying in 2s\n");
    }

    #[test]
    fn a_prefix_starts_every_line_of_text_tool_calls_and_errors() {
        let call = ToolUse {
            id: "t1".into(),
            name: "bash".into(),
            input: json!({"command": "rm -rf x"}),
        };
        let denied = ToolResult::error("t1", "Permission denied\nsecond line");
        let mut printer = TerminalPrinter::with_prefix("[sub] ");
        let text = render(
            &mut printer,
            &[
                Event::Delta(Delta::Text("one\ntw")),
                Event::Delta(Delta::Text("o")),
                Event::ReplyDone,
                Event::ToolCall(&call),
                Event::ToolResult(&call, &denied),
            ],
        );
        assert_eq!(
            text,
            "[sub] one\n[sub] two\n[sub] > bash: rm -rf x\n[sub]   error: Permission denied\n[sub]   second line\n"
        );
    }

    #[test]
    fn results_are_previewed_not_printed_whole() {
        let call = ToolUse {
            id: "t1".into(),
            name: "read_file".into(),
            input: json!({"path": "big.txt"}),
        };
        let big = ToolResult::ok("t1", "x".repeat(10_000));
        let text = render(
            &mut TerminalPrinter::plain(),
            &[Event::ToolCall(&call), Event::ToolResult(&call, &big)],
        );
        assert!(text.starts_with("> read_file: big.txt\n"), "{text}");
        assert!(
            text.chars().count() < RESULT_PREVIEW_CHARS + 50,
            "{}",
            text.len()
        );
    }

    fn report(id: &str, running: usize, done: usize, secs: u64) -> Progress {
        Progress {
            id: id.into(),
            status: format!("review · Verify · {running} running · {done} done"),
            meter: "1.2k tokens".into(),
            elapsed: Duration::from_secs(secs),
            finished: false,
        }
    }

    fn finished(id: &str, done: usize, secs: u64) -> Progress {
        Progress {
            finished: true,
            ..report(id, 0, done, secs)
        }
    }

    /// Standard output and standard error as one screen would show them,
    /// in the order they were written.
    #[derive(Clone, Default)]
    struct Sink(Rc<RefCell<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn interleaved(printer: &mut TerminalPrinter, events: &[Event<'_>]) -> String {
        printer.colour = false;
        printer.colour_err = false;
        let sink = Sink::default();
        let (mut out, mut err) = (sink.clone(), sink.clone());
        for event in events {
            printer.write_event(&mut out, &mut err, *event);
        }
        String::from_utf8(sink.0.take()).unwrap()
    }

    #[test]
    fn plain_lines_come_only_when_a_report_says_something_new() {
        let (_, err) = render_both(
            &mut TerminalPrinter::plain(),
            &[
                Event::Progress(&report("wf-1", 3, 0, 1)),
                // The clock and the meter alone: nothing to print.
                Event::Progress(&Progress {
                    meter: "9.0k tokens".into(),
                    ..report("wf-1", 3, 0, 5)
                }),
                Event::Progress(&report("wf-1", 2, 1, 6)),
                Event::Progress(&report("wf-2", 1, 0, 0)),
            ],
        );
        assert_eq!(
            err,
            "[progress] review · Verify · 3 running · 0 done · 1.2k tokens · 1s\n\
             [progress] review · Verify · 2 running · 1 done · 1.2k tokens · 6s\n\
             [progress] review · Verify · 1 running · 0 done · 1.2k tokens · 0s\n"
        );
    }

    #[test]
    fn a_finished_report_ends_its_id() {
        let mut printer = TerminalPrinter::plain();
        let (_, err) = render_both(
            &mut printer,
            &[
                Event::Progress(&report("wf-1", 0, 2, 1)),
                Event::Progress(&finished("wf-1", 2, 4)),
                // A run under the same id later is new work, and shown.
                Event::Progress(&report("wf-1", 0, 2, 0)),
            ],
        );
        assert_eq!(err.lines().count(), 3, "{err}");
        assert!(err.lines().nth(1).unwrap().ends_with("· 4s · finished"));
        assert_eq!(printer.running.len(), 1);
        render_both(&mut printer, &[Event::Progress(&finished("wf-1", 2, 5))]);
        assert!(printer.running.is_empty(), "nothing is kept of ended work");
    }

    #[test]
    fn a_progress_line_waits_for_the_streamed_line_to_end() {
        let text = interleaved(
            &mut TerminalPrinter::plain(),
            &[
                Event::Delta(Delta::Text("half a li")),
                Event::Progress(&report("wf-1", 1, 0, 1)),
                Event::Delta(Delta::Text("ne\nand a")),
                Event::Progress(&finished("wf-1", 1, 2)),
                Event::ReplyDone,
            ],
        );
        assert_eq!(
            text,
            "half a line\n\
             [progress] review · Verify · 1 running · 0 done · 1.2k tokens · 1s\n\
             and a\n\
             [progress] review · Verify · 0 running · 1 done · 1.2k tokens · 2s · finished\n"
        );
    }

    /// A terminal screen in memory, and the writer both outputs use to
    /// reach it; the line ending becomes the terminal's `\r\n`, as the
    /// terminal driver would make it.
    #[derive(Clone)]
    struct Screen(InMemoryTerm);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            use indicatif::TermLike;
            let text = String::from_utf8_lossy(buf).replace('\n', "\r\n");
            self.0.write_str(&text)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn live_printer(screen: &Screen) -> TerminalPrinter {
        let target = ProgressDrawTarget::term_like(Box::new(screen.0.clone()));
        let mut printer = TerminalPrinter::plain();
        printer.colour = false;
        printer.colour_err = false;
        printer.live = Some(LiveArea::new(target, None));
        printer
    }

    fn show(printer: &mut TerminalPrinter, screen: &Screen, events: &[Event<'_>]) -> String {
        let (mut out, mut err) = (screen.clone(), screen.clone());
        for event in events {
            printer.write_event(&mut out, &mut err, *event);
        }
        screen.0.contents()
    }

    #[test]
    fn live_lines_stay_below_what_is_written_and_do_not_split_it() {
        let screen = Screen(InMemoryTerm::new(20, 100));
        let mut printer = live_printer(&screen);
        let call = ToolUse {
            id: "t1".into(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
        };
        let listing = ToolResult::ok("t1", "a.txt");

        let drawn = show(
            &mut printer,
            &screen,
            &[Event::Progress(&report("wf-1", 3, 0, 12))],
        );
        let live = "review · Verify · 3 running · 0 done · 1.2k tokens · 12s";
        assert!(drawn.ends_with(live), "{drawn}");
        assert_eq!(drawn.lines().count(), 1, "one live line: {drawn}");

        let drawn = show(
            &mut printer,
            &screen,
            &[
                Event::ToolCall(&call),
                Event::ToolResult(&call, &listing),
                Event::Delta(Delta::Text("half a li")),
                Event::Progress(&report("wf-1", 2, 1, 13)),
                Event::Delta(Delta::Text("ne\n")),
                Event::ReplyDone,
            ],
        );
        let lines: Vec<&str> = drawn.lines().collect();
        assert_eq!(
            lines[..3],
            ["> bash: ls", "  a.txt", "half a line"],
            "{drawn}"
        );
        assert!(
            lines[3].ends_with("review · Verify · 2 running · 1 done · 1.2k tokens · 13s"),
            "the live line is drawn again below, with the newest report: {drawn}"
        );
        assert_eq!(lines.len(), 4, "{drawn}");

        let drawn = show(
            &mut printer,
            &screen,
            &[Event::Progress(&finished("wf-1", 3, 20))],
        );
        let lines: Vec<&str> = drawn.lines().collect();
        assert_eq!(
            lines[3],
            "[progress] review · Verify · 0 running · 3 done · 1.2k tokens · 20s · finished",
            "{drawn}"
        );
        assert_eq!(lines.len(), 4, "the live line is gone: {drawn}");
        assert!(printer.live.as_ref().is_some_and(LiveArea::is_empty));
    }

    #[test]
    fn live_lines_give_way_to_plain_ones_while_a_prompt_is_open() {
        let screen = Screen(InMemoryTerm::new(20, 100));
        let mut printer = live_printer(&screen);
        show(
            &mut printer,
            &screen,
            &[Event::Progress(&report("wf-1", 3, 0, 1))],
        );
        // Opening the prompt writes the state to the real standard error
        // (the test's), and the live line leaves the screen.
        printer.set_prompt(Prompt::Busy);
        let drawn = show(
            &mut printer,
            &screen,
            &[
                Event::Progress(&report("wf-1", 3, 0, 2)),
                Event::Progress(&report("wf-1", 2, 1, 3)),
            ],
        );
        assert_eq!(
            drawn, "[progress] review · Verify · 2 running · 1 done · 1.2k tokens · 3s",
            "only the report with news, as a plain line"
        );
        printer.set_prompt(Prompt::Closed);
        assert!(
            printer.live.as_ref().is_some_and(|live| !live.is_empty()),
            "drawn again when the prompt closes"
        );
    }
}
