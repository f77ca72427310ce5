//! The dispatch map: tool name → handler.
//!
//! Adding a tool to the agent is two lines: its spec (what the model is
//! told) and its handler (what runs). The loop never changes; it asks the
//! registry for the specs before each call and hands every `tool_use` to
//! [`ToolRegistry::dispatch`].
//!
//! A handler gets two things: the model's raw JSON input, and a
//! [`ToolContext`] — what the harness knows about *this* call (the
//! workspace to work in, where to report, when to give up). State that every
//! call shares, like a todo list or a skill catalog, is captured by the
//! handler when it is registered; state that can differ from call to call
//! comes in the context. That split is what lets every tool of every later
//! lesson, even one that runs a whole subagent, live in this one map.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use shared::CancellationToken;
use shared::hooks::ToolOutput;
use shared::notice::Notices;
use shared::protocol::{ToolSpec, ToolUse};
use shared::tools::{Workspace, bash, edit_file, glob, read_file, write_file};

// ANCHOR: context
/// What a handler knows about the call it is running.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Where file paths resolve and commands run.
    pub workspace: Workspace,
    /// Where the tool reports what the user should see (see
    /// [`shared::notice`]).
    pub notices: Notices,
    /// Cancelled when the session ends, for work that outlives one call.
    /// A turn the user cancels needs no token: the loop drops the running
    /// tool's future, and the base tools clean up when dropped (`bash`
    /// kills its process group).
    pub cancel: CancellationToken,
}

impl ToolContext {
    /// A context for calls working in `workspace`, reporting to `notices`.
    pub fn new(workspace: Workspace, notices: Notices) -> Self {
        Self {
            workspace,
            notices,
            cancel: CancellationToken::new(),
        }
    }
}
// ANCHOR_END: context

/// A boxed future, so handlers of different tools fit in one map.
pub type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// Runs one tool given the model's raw JSON input and the call's context.
pub type Handler = Box<dyn Fn(Value, ToolContext) -> ToolFuture + Send + Sync>;

// ANCHOR: registry
/// The tools the model may call, by name.
#[derive(Default)]
pub struct ToolRegistry {
    specs: Vec<ToolSpec>,
    handlers: BTreeMap<String, Handler>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool. A second tool with the same name replaces the first.
    pub fn register<F, Fut>(&mut self, spec: ToolSpec, handler: F)
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        // ANCHOR: exercise-s02-register
        self.specs.retain(|existing| existing.name != spec.name);
        self.handlers.insert(
            spec.name.clone(),
            Box::new(move |input, context| Box::pin(handler(input, context))),
        );
        self.specs.push(spec);
        // ANCHOR_END: exercise-s02-register
    }

    /// Replaces a registered tool in its place, keeping the order of the
    /// tools (lesson 13 replaces `bash`, which stays first); registers it
    /// at the end if there was none by that name.
    pub fn replace<F, Fut>(&mut self, spec: ToolSpec, handler: F)
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        let place = self
            .specs
            .iter()
            .position(|existing| existing.name == spec.name);
        let name = spec.name.clone();
        self.register(spec, handler);
        if let Some(place) = place
            && let Some(moved) = self.specs.iter().position(|spec| spec.name == name)
        {
            let spec = self.specs.remove(moved);
            self.specs.insert(place, spec);
        }
    }

    /// What the model is told about every registered tool, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    /// Removes a tool; returns whether it was registered.
    pub fn unregister(&mut self, name: &str) -> bool {
        self.specs.retain(|spec| spec.name != name);
        self.handlers.remove(name).is_some()
    }

    /// The names of the registered tools, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.handlers.keys().map(String::as_str).collect()
    }

    /// Looks the call up by name and runs it. An unknown name is an error
    /// result listing the tools that do exist.
    pub async fn dispatch(&self, call: &ToolUse, context: &ToolContext) -> ToolOutput {
        match self.handlers.get(&call.name) {
            Some(handler) => handler(call.input.clone(), context.clone()).await,
            None => {
                let known: Vec<&str> = self.specs.iter().map(|spec| spec.name.as_str()).collect();
                ToolOutput::error(format!(
                    "Unknown tool: {}. Available tools: {}",
                    call.name,
                    known.join(", ")
                ))
            }
        }
    }
}
// ANCHOR_END: registry

// ANCHOR: base_tools
/// The five base tools, each working in the workspace its context names.
pub fn base_tools() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.register(bash::spec(), |input, cx: ToolContext| async move {
        bash::call(&cx.workspace, &input).await
    });
    tools.register(read_file::spec(), |input, cx: ToolContext| async move {
        read_file::call(&cx.workspace, &input).await
    });
    tools.register(write_file::spec(), |input, cx: ToolContext| async move {
        write_file::call(&cx.workspace, &input).await
    });
    tools.register(edit_file::spec(), |input, cx: ToolContext| async move {
        edit_file::call(&cx.workspace, &input).await
    });
    tools.register(glob::spec(), |input, cx: ToolContext| async move {
        glob::call(&cx.workspace, &input).await
    });
    tools
}
// ANCHOR_END: base_tools
