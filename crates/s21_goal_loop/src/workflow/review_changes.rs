//! The sample workflow, `review-changes`: review the workspace's changes
//! along several dimensions, have every finding checked by an agent that
//! tries to refute it, and return what survives, worst first.
//!
//! Its shape is the one this lesson is for. Each dimension goes through
//! a [`pipeline`](super::WorkflowCtx::pipeline) of two stages, so the
//! dimension whose audit finishes first is verified first, without
//! waiting for the slowest audit. Inside the second stage the findings of
//! one dimension are verified in [`parallel`](super::WorkflowCtx::parallel),
//! because the stage's answer needs every verdict. Both kinds of agent
//! answer in JSON bound to a schema, so the code below reads fields, not
//! prose.
//!
//! Arguments (all optional): `{"dimensions": ["correctness", …]}`.

use serde_json::{Value, json};

use super::ctx::{AgentCall, WorkflowCtx, stage};
use super::meta::WorkflowMeta;
use super::registry::WorkflowRegistry;
use super::{BoxFuture, WorkflowError};

/// The workflow's name.
pub const NAME: &str = "review-changes";

/// What is reviewed when the arguments do not say.
pub const DEFAULT_DIMENSIONS: &[&str] = &["correctness", "error handling", "security", "tests"];

/// Severities, worst first: the order of the result.
pub const SEVERITIES: &[&str] = &["critical", "high", "medium", "low"];

/// The sample's metadata.
pub fn meta() -> WorkflowMeta {
    WorkflowMeta::new(
        NAME,
        "Review the workspace's uncommitted changes: one audit agent per dimension, every \
         finding checked by an adversarial agent, confirmed issues sorted by severity. \
         Args: {\"dimensions\": [...]} (optional).",
        ["Review", "Verify"],
    )
}

/// The registry a session starts with: this sample alone. It is written
/// here rather than beside the registry because the sample stands above
/// it (a workflow runs through the registry's runner), so the registry
/// naming the sample would make the two import each other.
impl Default for WorkflowRegistry {
    fn default() -> Self {
        let mut registry = WorkflowRegistry::empty();
        registry.register(meta(), run);
        registry
    }
}

// ANCHOR: schemas
/// What an audit agent answers.
pub fn findings_schema() -> Value {
    json!({
        "type": "object",
        "required": ["findings"],
        "additionalProperties": false,
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["title", "severity", "file", "detail"],
                    "additionalProperties": false,
                    "properties": {
                        "title": {"type": "string", "minLength": 1},
                        "severity": {"enum": SEVERITIES},
                        "file": {"type": "string"},
                        "detail": {"type": "string"}
                    }
                }
            }
        }
    })
}

/// What a verifying agent answers.
pub fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "required": ["isReal", "reason"],
        "additionalProperties": false,
        "properties": {
            "isReal": {"type": "boolean"},
            "reason": {"type": "string"}
        }
    })
}
// ANCHOR_END: schemas

// ANCHOR: run
/// The workflow.
pub async fn run(ctx: WorkflowCtx, args: Value) -> Result<Value, WorkflowError> {
    let dimensions = dimensions(&args)?;
    ctx.phase("Review");
    let audit = {
        let ctx = ctx.clone();
        stage(move |_, dimension, _| audit(ctx.clone(), dimension))
    };
    let verify = {
        let ctx = ctx.clone();
        stage(move |audited, _, _| verify(ctx.clone(), audited))
    };
    let items = dimensions.iter().map(|name| json!(name)).collect();
    let reviewed = ctx.pipeline(items, vec![audit, verify]).await?;
    let found: usize = reviewed
        .iter()
        .map(|review| review["found"].as_u64().unwrap_or(0) as usize)
        .sum();
    let mut confirmed: Vec<Value> = reviewed
        .iter()
        .flat_map(|review| review["confirmed"].as_array().cloned().unwrap_or_default())
        .collect();
    // Worst first; ties in a fixed order, so the same verdicts always give
    // the same output, byte for byte.
    confirmed.sort_by_key(|finding| {
        (
            severity_rank(&finding["severity"]),
            finding["dimension"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            finding["title"].as_str().unwrap_or_default().to_string(),
        )
    });
    ctx.log(format!("{} of {found} findings confirmed", confirmed.len()));
    Ok(json!({
        "dimensions": dimensions,
        "findings": found,
        "confirmed": confirmed,
    }))
}

/// Stage one: one audit agent for `dimension`.
async fn audit(ctx: WorkflowCtx, dimension: Value) -> Result<Value, WorkflowError> {
    let name = dimension.as_str().unwrap_or_default().to_string();
    let prompt = format!(
        "Review the uncommitted changes in this workspace for {name} problems only. Start \
         with `git status` and `git diff` (if the workspace is not a git repository, review \
         its source files). Report each real problem as a finding, with the file it is in \
         and the severity it deserves; report no finding rather than a guess."
    );
    let answer = ctx
        .agent(
            AgentCall::new(format!("audit:{name}"), prompt)
                .schema(findings_schema())
                .phase("Review"),
        )
        .await?;
    Ok(json!({"dimension": name, "findings": answer["findings"]}))
}

/// Stage two: every finding of one dimension checked by its own agent, in
/// parallel; the confirmed ones kept, with the verifier's reason.
async fn verify(ctx: WorkflowCtx, audited: Value) -> Result<Value, WorkflowError> {
    let dimension = audited["dimension"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let findings = audited["findings"].as_array().cloned().unwrap_or_default();
    if !findings.is_empty() {
        ctx.phase("Verify");
    }
    let checks: Vec<BoxFuture<Result<Value, WorkflowError>>> = findings
        .iter()
        .enumerate()
        .map(|(index, finding)| {
            let call = AgentCall::new(
                format!("verify:{dimension}#{}", index + 1),
                format!(
                    "A reviewer reported this {dimension} problem in the workspace's changes:\n\
                     {}\nTry to prove it wrong: read the code it points at and check the claim. \
                     Answer isReal: true only if the problem is really there.",
                    serde_json::to_string_pretty(finding).unwrap_or_default()
                ),
            )
            .schema(verdict_schema())
            .phase("Verify");
            ctx.agent(call)
        })
        .collect();
    let verdicts = ctx.parallel(checks).await?;
    let confirmed: Vec<Value> = findings
        .into_iter()
        .zip(verdicts)
        .filter(|(_, verdict)| verdict["isReal"] == json!(true))
        .map(|(mut finding, verdict)| {
            finding["dimension"] = json!(dimension);
            finding["reason"] = verdict["reason"].clone();
            finding
        })
        .collect();
    Ok(json!({
        "dimension": dimension,
        "found": audited["findings"].as_array().map_or(0, Vec::len),
        "confirmed": confirmed,
    }))
}
// ANCHOR_END: run

/// The dimensions the arguments name, or the default ones.
fn dimensions(args: &Value) -> Result<Vec<String>, WorkflowError> {
    match args.get("dimensions") {
        None | Some(Value::Null) => {
            Ok(DEFAULT_DIMENSIONS.iter().map(ToString::to_string).collect())
        }
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|item| match item.as_str() {
                Some(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
                _ => Err(WorkflowError::Failed(format!(
                    "args.dimensions must be non-empty strings, got {item}"
                ))),
            })
            .collect(),
        Some(other) => Err(WorkflowError::Failed(format!(
            "args.dimensions must be a non-empty list of strings, got {other}"
        ))),
    }
}

/// Where `severity` sorts: worst first, unknown last.
fn severity_rank(severity: &Value) -> usize {
    SEVERITIES
        .iter()
        .position(|known| Some(*known) == severity.as_str())
        .unwrap_or(SEVERITIES.len())
}
