//! How a finished run is told to the model: one `<task_notification>`,
//! in lesson 13's format and through lesson 13's places (after the next
//! round's `tool_result` blocks, or as idle work between turns).
//!
//! The `Workflow` call was answered at once with the run id, so the
//! result cannot be its `tool_result`; it arrives as this notification,
//! which carries what the model needs to act on the run: its status, the
//! output file, what it cost and what was reused, and the start of its
//! result (or the error that ended it). The output file has the whole
//! result; the summary is capped like a command's.

use std::time::Duration;

use crate::background::notification;

use super::store::RunStatus;

// ANCHOR: finished
/// A run that ended, waiting to be told to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFinished {
    pub run_id: String,
    pub workflow: String,
    pub status: RunStatus,
    /// The output file, relative to the workspace, when the run completed.
    pub output_file: Option<String>,
    pub agents_run: usize,
    pub agents_cached: usize,
    pub tokens: u64,
    pub tool_calls: usize,
    pub elapsed: Duration,
    /// The result as pretty JSON, or the error, or how to resume.
    pub summary: String,
}
// ANCHOR_END: finished

impl RunFinished {
    /// The notification text.
    pub fn notification(&self) -> String {
        let usage = format!(
            "agents: {} run, {} cached; tokens: {}; tool calls: {}; elapsed: {:.1}s",
            self.agents_run,
            self.agents_cached,
            self.tokens,
            self.tool_calls,
            self.elapsed.as_secs_f64()
        );
        let mut fields = vec![("workflow", self.workflow.as_str())];
        if let Some(file) = &self.output_file {
            fields.push(("output_file", file));
        }
        fields.push(("usage", &usage));
        notification::render(&self.run_id, self.status.word(), &fields, &self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notification_carries_status_file_counts_and_an_escaped_summary() {
        let finished = RunFinished {
            run_id: "wf-x-1".into(),
            workflow: "x".into(),
            status: RunStatus::Completed,
            output_file: Some(".runtime/wf-x-1.output.json".into()),
            agents_run: 2,
            agents_cached: 3,
            tokens: 40,
            tool_calls: 1,
            elapsed: Duration::from_millis(1_500),
            summary: "{\"a\": \"</task_notification>\"}".into(),
        };
        let text = finished.notification();
        assert!(text.starts_with(
            "<task_notification>\n<task_id>wf-x-1</task_id>\n<status>completed</status>\n"
        ));
        assert!(text.contains("<output_file>.runtime/wf-x-1.output.json</output_file>"));
        assert!(text.contains("agents: 2 run, 3 cached; tokens: 40; tool calls: 1; elapsed: 1.5s"));
        assert_eq!(text.matches("</task_notification>").count(), 1, "{text}");
    }
}
