//! How finished background work is told to the model.
//!
//! The `bash` call that started the command was answered at once (with the
//! task's id), so the command's output cannot be its `tool_result`: each
//! `tool_use` gets exactly one. It arrives later as text in a user
//! message, a `<task_notification>`, placed where the API accepts it:
//! after the `tool_result` blocks of the next round, or as a user message
//! of its own when the model is idle. From lesson 20 on, a workflow run
//! ends with one too, made by the same [`render`].

use shared::tools::bash::CommandStatus;

/// How many characters of a command's output a notification carries. The
/// command's own capture is larger; a notification is a summary, and a
/// build log that runs to megabytes would flood the context.
pub const OUTPUT_CHARS: usize = 4_000;

// ANCHOR: finished
/// A background command that ended, waiting to be told to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `bg_0001`, …
    pub id: String,
    pub command: String,
    pub status: CommandStatus,
    /// What it printed, as the `bash` tool reports it.
    pub output: String,
}
// ANCHOR_END: finished

// ANCHOR: render
impl Finished {
    /// The notification text, one element per line.
    pub fn notification(&self) -> String {
        render(
            &self.id,
            status_word(&self.status),
            &[("command", &self.command)],
            &self.output,
        )
    }
}

/// A `<task_notification>` for any work that ran in the background (a
/// command here, a workflow run from lesson 20 on): its id, its status,
/// its own elements in order, and a summary capped at [`OUTPUT_CHARS`].
/// Everything but the id and the status, which the harness makes, is
/// escaped.
pub fn render(id: &str, status: &str, fields: &[(&str, &str)], summary: &str) -> String {
    let mut text =
        format!("<task_notification>\n<task_id>{id}</task_id>\n<status>{status}</status>\n");
    for (name, value) in fields {
        text.push_str(&format!("<{name}>{}</{name}>\n", escape(value)));
    }
    text.push_str(&format!(
        "<summary>\n{}\n</summary>\n</task_notification>",
        escape(&shared::text::limit_output(
            summary.trim_end(),
            OUTPUT_CHARS
        ))
    ));
    text
}
// ANCHOR_END: render

/// The status as one word.
pub fn status_word(status: &CommandStatus) -> &'static str {
    match status {
        CommandStatus::Succeeded => "completed",
        CommandStatus::Failed => "failed",
        CommandStatus::TimedOut => "timed_out",
        CommandStatus::NotRun => "error",
    }
}

/// Output may contain anything, including `</task_notification>`: escape
/// the three characters that could end an element early or start a new
/// one, so the model reads the command's text as text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
