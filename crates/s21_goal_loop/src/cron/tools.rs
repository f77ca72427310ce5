//! The three cron tools the model sees: `schedule_cron`, `list_crons`,
//! `cancel_cron`.

use jiff::ZonedDateTime;
use serde::Deserialize;
use serde_json::{Value, json};
use shared::hooks::ToolOutput;
use shared::protocol::ToolSpec;
use shared::tools::input::parse_input;

use super::scheduler::{CronScheduler, Listed, TAG};
use crate::dispatch::{ToolContext, ToolRegistry};

#[derive(Deserialize)]
struct ScheduleInput {
    cron: String,
    prompt: String,
    #[serde(default = "yes")]
    recurring: bool,
    #[serde(default)]
    durable: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct CancelInput {
    job_id: String,
}

// ANCHOR: specs
fn schedule_spec() -> ToolSpec {
    ToolSpec::new(
        "schedule_cron",
        "Schedule a prompt to be sent to you later, on a 5-field cron schedule in local time \
         (minute hour day-of-month month day-of-week; e.g. '*/5 * * * *' every five \
         minutes, '0 9 * * 1-5' at 9:00 on weekdays). When the job fires and you are idle, \
         you receive '[Scheduled] <prompt>' as a user message. Jobs recur unless \
         recurring is false, and last for this session unless durable is true (then they \
         are saved to .scheduled_tasks.json and survive a restart).",
        json!({
            "type": "object",
            "properties": {
                "cron": {"type": "string", "description": "A 5-field cron expression."},
                "prompt": {"type": "string", "description": "What to do when the job fires."},
                "recurring": {"type": "boolean", "description": "Fire every time the expression matches (default), or only once."},
                "durable": {"type": "boolean", "description": "Save the job so it survives a restart (default false)."}
            },
            "required": ["cron", "prompt"]
        }),
    )
}

fn list_spec() -> ToolSpec {
    ToolSpec::new(
        "list_crons",
        "List the scheduled cron jobs: id, expression, kind, next fire time and prompt.",
        json!({"type": "object", "properties": {}}),
    )
}

fn cancel_spec() -> ToolSpec {
    ToolSpec::new(
        "cancel_cron",
        "Cancel a scheduled cron job by its id (from schedule_cron or list_crons).",
        json!({
            "type": "object",
            "properties": {"job_id": {"type": "string", "description": "The job's id, e.g. cron_0001."}},
            "required": ["job_id"]
        }),
    )
}
// ANCHOR_END: specs

/// Registers the three tools, working on `scheduler`.
pub fn register(tools: &mut ToolRegistry, scheduler: &CronScheduler) {
    let cron = scheduler.clone();
    tools.register(schedule_spec(), move |input, cx: ToolContext| {
        let output = schedule(&cron, &input, &cx);
        async move { output }
    });
    let cron = scheduler.clone();
    tools.register(list_spec(), move |_input, _cx: ToolContext| {
        let output = ToolOutput::ok(listing(&cron.list()));
        async move { output }
    });
    let cron = scheduler.clone();
    tools.register(cancel_spec(), move |input, cx: ToolContext| {
        let output = cancel(&cron, &input, &cx);
        async move { output }
    });
}

fn schedule(cron: &CronScheduler, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: ScheduleInput = match parse_input("schedule_cron", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    match cron.schedule(&input.cron, &input.prompt, input.recurring, input.durable) {
        Ok(listed) => {
            cx.notices.emit(
                TAG,
                format!("scheduled {}: {}", listed.job.id, listed.job.cron),
            );
            ToolOutput::ok(format!("Scheduled {}", describe(&listed)))
        }
        Err(error) => ToolOutput::error(capitalised(&error.to_string())),
    }
}

fn cancel(cron: &CronScheduler, input: &Value, cx: &ToolContext) -> ToolOutput {
    let input: CancelInput = match parse_input("cancel_cron", input) {
        Ok(input) => input,
        Err(output) => return output,
    };
    match cron.cancel(input.job_id.trim()) {
        Ok(job) => {
            cx.notices.emit(TAG, format!("cancelled {}", job.id));
            ToolOutput::ok(format!(
                "Cancelled {} ({}, {} {}): {}",
                job.id,
                job.cron,
                job.kind(),
                job.lifetime(),
                job.prompt
            ))
        }
        Err(error) => ToolOutput::error(capitalised(&error.to_string())),
    }
}

// ANCHOR: listing
/// One line per job, or a sentence when there are none.
fn listing(jobs: &[Listed]) -> String {
    if jobs.is_empty() {
        return "No cron jobs are scheduled.".to_string();
    }
    jobs.iter().map(describe).collect::<Vec<_>>().join("\n")
}

/// `cron_0001 '*/5 * * * *' (recurring, session), next 2026-12-01T09:05:00+01:00: <prompt>`
fn describe(listed: &Listed) -> String {
    let job = &listed.job;
    format!(
        "{} '{}' ({}, {}), next {}: {}",
        job.id,
        job.cron,
        job.kind(),
        job.lifetime(),
        listed.next.as_ref().map_or("never".to_string(), local_iso),
        job.prompt
    )
}

/// Local time in ISO 8601 with the UTC offset, to the second.
pub fn local_iso(time: &ZonedDateTime) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}
// ANCHOR_END: listing

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
