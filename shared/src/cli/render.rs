//! Printing the loop's events: text as it streams, tool calls as they run.

use std::io::{IsTerminal, Write};

use crate::agent::{Event, Observer};
use crate::notice::Notice;
use crate::progress::Progress;
use crate::protocol::{Delta, ToolResult, ToolUse};
use crate::text::truncate_chars;

/// How many characters of a tool result the terminal shows.
const RESULT_PREVIEW_CHARS: usize = 300;

/// Writes events to standard output, with colours on a terminal.
#[derive(Debug)]
pub struct TerminalPrinter {
    colour: bool,
    /// Whether standard error is a terminal (notices are painted then).
    colour_err: bool,
    /// Whether the cursor is in the middle of a line of streamed text.
    mid_line: bool,
    /// Printed before every line, so a subagent's output can be told apart.
    prefix: String,
    /// The last progress report shown for each piece of work still running.
    last_progress: Vec<Progress>,
}

impl Default for TerminalPrinter {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalPrinter {
    /// A printer for the main agent.
    pub fn new() -> Self {
        Self {
            colour: std::io::stdout().is_terminal(),
            colour_err: std::io::stderr().is_terminal(),
            mid_line: false,
            prefix: String::new(),
            last_progress: Vec::new(),
        }
    }

    /// A printer whose tool lines start with `prefix` (e.g. `"  [subagent] "`).
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            ..Self::new()
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn end_line(&mut self, out: &mut impl Write) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
    }

    fn tool_call(&mut self, out: &mut impl Write, call: &ToolUse) {
        self.end_line(out);
        let line = format!("{}> {}: {}", self.prefix, call.name, describe_input(call));
        let _ = writeln!(out, "{}", self.paint("33", &line));
    }

    fn tool_result(&mut self, out: &mut impl Write, result: &ToolResult) {
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
    fn notice(&mut self, out: &mut impl Write, err: &mut impl Write, notice: &Notice) {
        self.end_line(out);
        let _ = out.flush();
        let line = format!("{}{notice}", self.prefix);
        let _ = writeln!(err, "{}", self.paint_err("2", &line));
        let _ = err.flush();
    }

    /// A progress report, as a plain line on standard error when it says
    /// something the last one on its id did not. (The live display on a
    /// terminal is drawn over this.)
    fn progress(&mut self, out: &mut impl Write, err: &mut impl Write, report: &Progress) {
        let news = self
            .last_progress
            .iter()
            .find(|seen| seen.id == report.id)
            .is_none_or(|seen| report.differs_in_substance(seen));
        self.last_progress.retain(|seen| seen.id != report.id);
        if !report.finished {
            self.last_progress.push(report.clone());
        }
        if news {
            self.end_line(out);
            let _ = out.flush();
            let line = format!("{}[progress] {report}", self.prefix);
            let _ = writeln!(err, "{}", self.paint_err("2", &line));
            let _ = err.flush();
        }
    }

    fn paint_err(&self, code: &str, text: &str) -> String {
        if self.colour_err {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Streams text, starting every line with the prefix so that nested
    /// output can be told apart from the parent's.
    fn text(&mut self, out: &mut impl Write, text: &str) {
        for piece in text.split_inclusive('\n') {
            if !self.mid_line {
                let _ = write!(out, "{}", self.prefix);
            }
            let _ = write!(out, "{piece}");
            self.mid_line = !piece.ends_with('\n');
        }
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

impl TerminalPrinter {
    /// Writes one event to `out`, or a notice to `err`; the terminal passes
    /// standard output and standard error.
    fn write_event(&mut self, out: &mut impl Write, err: &mut impl Write, event: Event<'_>) {
        match event {
            Event::Notice(notice) => self.notice(out, err, notice),
            Event::Progress(report) => self.progress(out, err, report),
            Event::Delta(Delta::Text(text)) => self.text(out, text),
            Event::Delta(Delta::Thinking(_) | Delta::ToolUseStart { .. }) => {}
            Event::ReplyDone => self.end_line(out),
            Event::ToolCall(call) => self.tool_call(out, call),
            Event::ToolResult(_, result) => self.tool_result(out, result),
        }
        let _ = out.flush();
    }
}

impl Observer for TerminalPrinter {
    fn event(&mut self, event: Event<'_>) {
        self.write_event(
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
            event,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            &mut TerminalPrinter::new(),
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
            &mut TerminalPrinter::new(),
            &[Event::ToolCall(&call), Event::ToolResult(&call, &big)],
        );
        assert!(text.starts_with("> read_file: big.txt\n"), "{text}");
        assert!(
            text.chars().count() < RESULT_PREVIEW_CHARS + 50,
            "{}",
            text.len()
        );
    }
}
