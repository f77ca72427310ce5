//! Workflow scripts: the model (or the user) writes the orchestration in
//! JavaScript, and it runs in a sandbox made of the same primitives a Rust
//! workflow uses.
//!
//! A script is the body of an async function of `args`. It sees six
//! names and the language's own data types — nothing else:
//!
//! | name | what it is |
//! |------|------------|
//! | `agent(prompt, {schema, label, key, model, phase})` | one call of [`WorkflowCtx::agent`]: the text, or the parsed object when a schema is given |
//! | `parallel(items)` | promises (or functions returning them) awaited together; results in input order |
//! | `pipeline(items, ...stages)` | each item through every stage on its own, no barrier |
//! | `phase(name)`, `log(message)` | [`WorkflowCtx::phase`], [`WorkflowCtx::log`] |
//! | `return value` | the run's output (anything `JSON.stringify` takes) |
//!
//! The engine is QuickJS, through `rquickjs`. Its host functions can be
//! async: `agent()` hands the script a promise whose work — the agent
//! call, journal and concurrency cap included — is a Rust future the
//! engine polls with every other one, so the agents of a `parallel` run at
//! once. Everything that can end a run is a limit with its own sentence:
//!
//! ```text
//!   memory     the engine's allocator refuses past ScriptLimits::memory_bytes
//!   stack      a RangeError past ScriptLimits::stack_bytes of native stack
//!   operations the interrupt handler counts checks (about one per 10,000
//!              steps) and stops the script past ScriptLimits::operations
//!   deadline   the same handler, and a timer around the whole run, stop it
//!              after ScriptLimits::deadline (tokio's clock: tests pause it)
//!   agents     the host refuses the call past ScriptLimits::max_agent_calls
//!   call time  one agent call longer than ScriptLimits::call_timeout
//! ```
//!
//! A limit ends the run even when the script catches the error it sees.
//! The context is built from the engine's base objects plus JSON, Promise,
//! Map/Set and RegExp: no `Date`, no module loader (`import` and `require`
//! fail), no file system, process, network or timers, and `Math.random`
//! throws — an orchestration must issue the same calls on every run, or a
//! resume finds different journal keys. A script error comes back with
//! its line and column in the script as sent.

use rquickjs::context::EvalOptions;
use rquickjs::context::intrinsic;
use rquickjs::promise::Promised;
use rquickjs::{
    AsyncContext, AsyncRuntime, CatchResultExt, CaughtError, Ctx, Function, Promise, Value as Js,
};
use serde::Deserialize;
use serde_json::Value;
use shared::sync::LockExt;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::time::Instant;

use super::WorkflowError;
use super::ctx::{AgentCall, WorkflowCtx};
use super::limits::{Limit, ScriptError, ScriptLimits};

/// The objects a script's context starts with, besides the engine's base
/// ones (Object, Array, String, Math, Error…). `Eval` is how the host
/// compiles the script; the global `eval` is removed again by the prelude.
type Intrinsics = (
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::MapSet,
    intrinsic::Promise,
);

/// The file name the engine gives the script in its stack traces.
const FILE: &str = "workflow-script";

/// What comes before the script's first line: the script is the body of
/// this function, so its line numbers are the engine's, and on line 1 its
/// columns are the engine's minus this prefix's length.
const PREFIX: &str = "(async function (args) {";

/// The sandbox's own definitions, run before the script. `agent` fixes its
/// call's journal key synchronously, in `__agent`, so identical calls are
/// numbered in the order the script issues them (see [`super::journal`]).
const PRELUDE: &str = r#"(function () {
  "use strict";
  const host = globalThis.__agent, hostLog = globalThis.__log, hostPhase = globalThis.__phase;
  delete globalThis.__agent; delete globalThis.__log; delete globalThis.__phase;
  delete globalThis.eval;
  Math.random = function () {
    throw new Error("Math.random is not available: a workflow script must make the same calls on every run");
  };
  const fixed = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false });
  fixed("agent", async function agent(prompt, options) {
    if (typeof prompt !== "string") throw new TypeError("agent(prompt, options): prompt must be a string");
    const o = options === undefined || options === null ? {} : options;
    const call = { prompt, schema: o.schema, label: o.label, key: o.key, model: o.model, phase: o.phase };
    const reply = JSON.parse(await host(JSON.stringify(call)));
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply.value;
  });
  fixed("parallel", function parallel(items) {
    return Promise.all(Array.from(items, (item) => (typeof item === "function" ? item() : item)));
  });
  fixed("pipeline", function pipeline(items, ...stages) {
    return Promise.all(Array.from(items, async (item, index) => {
      let value = item;
      for (const stage of stages) value = await stage(value, item, index);
      return value;
    }));
  });
  fixed("phase", (name) => { hostPhase(String(name)); });
  fixed("log", (message) => { hostLog(typeof message === "string" ? message : JSON.stringify(message)); });
})();
"#;

/// What `agent()` sends the host: the prompt and the options object.
#[derive(Deserialize)]
struct CallInput {
    prompt: String,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    key: Option<Value>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    phase: Option<String>,
}

/// The label of a call that names none. A constant, not a counter: the
/// label is part of the journal key, and a count would change every later
/// call's key when a call is added above it.
pub const DEFAULT_LABEL: &str = "agent";

/// What one run of a script shares with the engine's host functions.
struct Shared {
    ctx: WorkflowCtx,
    limits: ScriptLimits,
    started: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The first limit that tripped; it ends the run whatever the script
    /// does with the error it got.
    tripped: Option<Limit>,
    /// The first agent call that failed, to hand its error on unchanged if
    /// the script lets it through.
    failed: Option<WorkflowError>,
    calls: usize,
    checks: u64,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }

    fn trip(&self, limit: Limit) {
        self.state().tripped.get_or_insert(limit);
    }

    /// The interrupt handler's decision: stop once the operation budget or
    /// the deadline is spent.
    fn interrupt(&self) -> bool {
        let mut state = self.state();
        state.checks += 1;
        let limit = if state.checks > self.limits.operations {
            Limit::Operations(self.limits.operations)
        } else if self.started.elapsed() > self.limits.deadline {
            Limit::Deadline(self.limits.deadline)
        } else {
            return false;
        };
        state.tripped.get_or_insert(limit);
        true
    }

    /// One `agent()` call: checked against the cap, issued now (its key is
    /// fixed here), answered later as `{"value": …}` or `{"error": "…"}`.
    fn agent(
        self: &Arc<Self>,
        input: &str,
    ) -> impl Future<Output = String> + Send + 'static + use<> {
        let shared = Arc::clone(self);
        let issued = serde_json::from_str::<CallInput>(input)
            .map_err(|error| format!("agent(): bad options ({error})"))
            .and_then(|input| {
                let mut state = shared.state();
                state.calls += 1;
                if state.calls > shared.limits.max_agent_calls {
                    let limit = Limit::AgentCalls(shared.limits.max_agent_calls);
                    state.tripped.get_or_insert(limit.clone());
                    return Err(limit.to_string());
                }
                drop(state);
                let call = script_call(input);
                let label = call.label.clone();
                Ok((label, shared.ctx.agent(call)))
            });
        async move {
            let (label, pending) = match issued {
                Ok(issued) => issued,
                Err(error) => return failure(&error),
            };
            let after = shared.limits.call_timeout;
            match tokio::time::timeout(after, pending).await {
                Ok(Ok(value)) => answer(value),
                Ok(Err(error)) => {
                    let text = error.to_string();
                    shared.state().failed.get_or_insert(error);
                    failure(&text)
                }
                Err(_) => {
                    let limit = Limit::CallTimeout { label, after };
                    let text = limit.to_string();
                    shared.trip(limit);
                    failure(&text)
                }
            }
        }
    }
}

/// The [`AgentCall`] a script's options describe. A `key` that is not a
/// string is keyed by its JSON text.
fn script_call(input: CallInput) -> AgentCall {
    let mut call = AgentCall::new(
        input.label.unwrap_or_else(|| DEFAULT_LABEL.to_string()),
        input.prompt,
    );
    call.schema = input.schema;
    call.phase = input.phase;
    call.key = input.key.map(|key| match key {
        Value::String(text) => text,
        other => other.to_string(),
    });
    call.model = input.model;
    call
}

/// What `agent()` resolves to on the script's side: its value…
fn answer(value: Value) -> String {
    serde_json::json!({ "value": value }).to_string()
}

/// …or the error the script's `agent()` throws.
fn failure(error: &str) -> String {
    serde_json::json!({ "error": error }).to_string()
}

// ANCHOR: run
/// Runs `source` with `args` as one workflow run: a fresh engine with
/// `limits`, the primitives bound to `ctx`, the script's return value as
/// the run's output.
pub async fn run(
    ctx: WorkflowCtx,
    source: Arc<str>,
    args: Value,
    limits: ScriptLimits,
) -> Result<Value, WorkflowError> {
    let shared = Arc::new(Shared {
        ctx,
        limits: limits.clone(),
        started: Instant::now(),
        state: Mutex::new(State::default()),
    });
    let engine =
        |error: rquickjs::Error| WorkflowError::Script(ScriptError::Engine(error.to_string()));
    let runtime = AsyncRuntime::new().map_err(engine)?;
    runtime.set_memory_limit(limits.memory_bytes).await;
    runtime.set_max_stack_size(limits.stack_bytes).await;
    let watch = Arc::clone(&shared);
    runtime
        .set_interrupt_handler(Some(Box::new(move || watch.interrupt())))
        .await;
    let context = AsyncContext::custom::<Intrinsics>(&runtime)
        .await
        .map_err(engine)?;
    let inside = Arc::clone(&shared);
    let evaluated =
        context.async_with(async move |js| evaluate(&js, &inside, &source, &args).await);
    // The interrupt handler only runs while script code runs; a script
    // waiting on an agent is stopped by this timer instead.
    let outcome = match tokio::time::timeout(limits.deadline, evaluated).await {
        Ok(outcome) => outcome,
        Err(_) => {
            shared.trip(Limit::Deadline(limits.deadline));
            Err(ScriptError::Limit(Limit::Deadline(limits.deadline)))
        }
    };
    let mut state = shared.state();
    if let Some(limit) = state.tripped.take() {
        return Err(WorkflowError::Script(ScriptError::Limit(limit)));
    }
    match outcome {
        Ok(value) => Ok(value),
        // An agent's own error that the script let through is that error,
        // not a script error: the same words a Rust workflow would give.
        Err(ScriptError::Runtime { message, .. })
            if state
                .failed
                .as_ref()
                .is_some_and(|failed| failed.to_string() == message) =>
        {
            Err(state.failed.take().unwrap_or(WorkflowError::Stopped))
        }
        Err(error) => Err(WorkflowError::Script(error)),
    }
}
// ANCHOR_END: run

/// Inside the engine: the host functions, the prelude, the script
/// compiled as a function and called, its promise awaited.
async fn evaluate<'js>(
    js: &Ctx<'js>,
    shared: &Arc<Shared>,
    source: &str,
    args: &Value,
) -> Result<Value, ScriptError> {
    install(js, shared).map_err(|error| ScriptError::Engine(error.to_string()))?;
    let function: Function = compile(js, source)?;
    let args_js: Js = js
        .json_parse(args.to_string())
        .map_err(|error| ScriptError::Engine(error.to_string()))?;
    let promise: Promise = function
        .call((args_js,))
        .catch(js)
        .map_err(|error| thrown(error, &shared.limits))?;
    let value: Js = promise
        .into_future::<Js>()
        .await
        .catch(js)
        .map_err(|error| thrown(error, &shared.limits))?;
    let text = js
        .json_stringify(value)
        .catch(js)
        .map_err(|error| thrown(error, &shared.limits))?;
    let Some(text) = text else {
        return Ok(Value::Null);
    };
    let text = text
        .to_string()
        .map_err(|error| ScriptError::Engine(error.to_string()))?;
    serde_json::from_str(&text).map_err(|error| ScriptError::Engine(error.to_string()))
}

/// The host functions and the prelude that wraps them.
fn install<'js>(js: &Ctx<'js>, shared: &Arc<Shared>) -> rquickjs::Result<()> {
    let globals = js.globals();
    let host = Arc::clone(shared);
    globals.set(
        "__agent",
        Function::new(js.clone(), move |input: String| {
            Promised(host.agent(&input))
        })?,
    )?;
    let host = Arc::clone(shared);
    globals.set(
        "__log",
        Function::new(js.clone(), move |message: String| host.ctx.log(message))?,
    )?;
    let host = Arc::clone(shared);
    globals.set(
        "__phase",
        Function::new(js.clone(), move |name: String| host.ctx.phase(name))?,
    )?;
    js.eval::<(), _>(PRELUDE)
}

/// The script as the body of an async function, compiled but not run.
fn compile<'js>(js: &Ctx<'js>, source: &str) -> Result<Function<'js>, ScriptError> {
    let mut options = EvalOptions::default();
    options.filename = Some(FILE.to_string());
    options.strict = false;
    js.eval_with_options::<Function, _>(wrap(source), options)
        .catch(js)
        .map_err(|error| match error {
            CaughtError::Exception(exception) => {
                let (line, column) = within(source, location(exception.stack().as_deref()));
                let message = exception.message().unwrap_or_default();
                ScriptError::Syntax {
                    message: explain_syntax(&message, source, line),
                    line,
                    column,
                }
            }
            other => ScriptError::Engine(other.to_string()),
        })
}

fn wrap(source: &str) -> String {
    format!("{PREFIX}{source}\n}})")
}

/// Checks that `source` parses, without running any of it: the `Workflow`
/// tool answers a syntax error at once, with its place, instead of
/// starting a run that can only fail.
pub fn check_syntax(source: &str) -> Result<(), ScriptError> {
    let engine = |error: rquickjs::Error| ScriptError::Engine(error.to_string());
    let runtime = rquickjs::Runtime::new().map_err(engine)?;
    let context = rquickjs::Context::custom::<(intrinsic::Eval, intrinsic::Promise)>(&runtime)
        .map_err(engine)?;
    context.with(|js| compile(&js, source).map(|_| ()))
}

/// A thrown value as a [`ScriptError`]: its message and its place in the
/// script, or the limit it stands for.
fn thrown(error: CaughtError<'_>, limits: &ScriptLimits) -> ScriptError {
    let CaughtError::Exception(exception) = error else {
        return match error {
            CaughtError::Value(value) => ScriptError::Runtime {
                message: format!("it threw a value that is not an Error: {value:?}"),
                line: None,
                column: None,
            },
            other => ScriptError::Engine(other.to_string()),
        };
    };
    let message = exception.message().unwrap_or_default();
    let name: String = exception.as_object().get("name").unwrap_or_default();
    match (name.as_str(), message.as_str()) {
        ("InternalError", "out of memory") => {
            return ScriptError::Limit(Limit::Memory(limits.memory_bytes));
        }
        ("RangeError", "Maximum call stack size exceeded") => {
            return ScriptError::Limit(Limit::Stack(limits.stack_bytes));
        }
        _ => {}
    }
    let (line, column) = location(exception.stack().as_deref());
    let message = if name.is_empty() {
        message
    } else {
        format!("{name}: {message}")
    };
    ScriptError::Runtime {
        message: explain_runtime(message),
        line,
        column,
    }
}

/// The first place in the script a stack trace names, as the script's own
/// line and column.
fn location(stack: Option<&str>) -> (Option<u32>, Option<u32>) {
    let marker = format!("{FILE}:");
    let Some(stack) = stack else {
        return (None, None);
    };
    for frame in stack.lines() {
        let Some(start) = frame.find(&marker) else {
            continue;
        };
        let rest = &frame[start + marker.len()..];
        let rest = rest.trim_end_matches(')');
        let mut parts = rest.split(':');
        let line = parts.next().and_then(|text| text.parse::<u32>().ok());
        let column = parts.next().and_then(|text| text.parse::<u32>().ok());
        let column = match (line, column) {
            (Some(1), Some(column)) => Some(column.saturating_sub(PREFIX.len() as u32).max(1)),
            (_, column) => column,
        };
        return (line, column);
    }
    (None, None)
}

/// A place past the script's last line (the engine saw the end of the
/// wrapper) as the end of the script's last line.
fn within(source: &str, place: (Option<u32>, Option<u32>)) -> (Option<u32>, Option<u32>) {
    let lines = u32::try_from(source.lines().count())
        .unwrap_or(u32::MAX)
        .max(1);
    match place {
        (Some(line), _) if line > lines => {
            let last = source.lines().last().unwrap_or_default();
            let column = u32::try_from(last.chars().count()).unwrap_or(u32::MAX);
            (Some(lines), Some(column.saturating_add(1)))
        }
        place => place,
    }
}

/// The names a script reaches for that the sandbox does not have, and why.
const ABSENT: &[(&str, &str)] = &[
    ("require", "workflow scripts have no modules"),
    ("process", "workflow scripts have no process access"),
    (
        "Date",
        "workflow scripts have no clock: the orchestration must make the same calls on every run",
    ),
    (
        "fetch",
        "workflow scripts have no network; let an agent fetch",
    ),
    ("setTimeout", "workflow scripts have no timers"),
    ("setInterval", "workflow scripts have no timers"),
    ("console", "use log(message)"),
];

/// A runtime error's message with a word on what the sandbox offers
/// instead, where the error is about something it leaves out on purpose.
fn explain_runtime(message: String) -> String {
    for (name, why) in ABSENT {
        if message == format!("ReferenceError: {name} is not defined") {
            return format!("{message} ({why})");
        }
    }
    if message.starts_with("ReferenceError: could not load module") {
        return format!("{message} (workflow scripts have no modules: import is not available)");
    }
    message
}

/// A syntax error's message, with a word on `import`/`export`, which the
/// engine reports as an unexpected token.
fn explain_syntax(message: &str, source: &str, line: Option<u32>) -> String {
    let text = line
        .and_then(|line| source.lines().nth(line.saturating_sub(1) as usize))
        .unwrap_or_default()
        .trim_start();
    if text.starts_with("import ") || text.starts_with("export ") {
        return format!(
            "{message} (workflow scripts have no modules: import and export are not available)"
        );
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_has_the_scripts_own_line_and_column() {
        let error = check_syntax("let a = 1;\n\n  foo(;").unwrap_err();
        assert!(
            matches!(
                error,
                ScriptError::Syntax {
                    line: Some(3),
                    column: Some(7),
                    ..
                }
            ),
            "{error:?}"
        );
        let error = check_syntax("let x = ;").unwrap_err();
        assert!(
            matches!(
                error,
                ScriptError::Syntax {
                    line: Some(1),
                    column: Some(9),
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(check_syntax("return await agent('hi')"), Ok(()));
        // An unclosed bracket is found at the end of the script, not in
        // the wrapper's closing line.
        let error = check_syntax("let a = 1;\nreturn (").unwrap_err();
        assert!(
            matches!(
                error,
                ScriptError::Syntax {
                    line: Some(2),
                    column: Some(9),
                    ..
                }
            ),
            "{error:?}"
        );
    }

    #[test]
    fn import_is_named_in_its_syntax_error() {
        let error = check_syntax("import fs from 'fs'").unwrap_err().to_string();
        assert!(
            error.contains("import and export are not available"),
            "{error}"
        );
    }
}
