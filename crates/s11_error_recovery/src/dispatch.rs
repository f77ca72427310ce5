//! The dispatch map: tool name → handler.
//!
//! Adding a tool to the agent is two lines: its spec (what the model is
//! told) and its handler (what runs). The loop never changes; it asks the
//! registry for the specs before each call and hands every `tool_use` to
//! [`ToolRegistry::dispatch`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use shared::hooks::ToolOutput;
use shared::protocol::{ToolSpec, ToolUse};
use shared::tools::{Workspace, bash, edit_file, glob, read_file, write_file};

/// A boxed future, so handlers of different tools fit in one map.
pub type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// Runs one tool given the model's raw JSON input.
pub type Handler = Box<dyn Fn(Value) -> ToolFuture + Send + Sync>;

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
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        self.specs.retain(|existing| existing.name != spec.name);
        self.handlers.insert(
            spec.name.clone(),
            Box::new(move |input| Box::pin(handler(input))),
        );
        self.specs.push(spec);
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
    pub async fn dispatch(&self, call: &ToolUse) -> ToolOutput {
        match self.handlers.get(&call.name) {
            Some(handler) => handler(call.input.clone()).await,
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

/// The five base tools, each working in `workspace`.
pub fn base_tools(workspace: &Workspace) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    let ws = workspace.clone();
    tools.register(
        bash::spec(),
        in_workspace(ws.clone(), |ws, input| async move {
            bash::call(&ws, &input).await
        }),
    );
    tools.register(
        read_file::spec(),
        in_workspace(ws.clone(), |ws, input| async move {
            read_file::call(&ws, &input).await
        }),
    );
    tools.register(
        write_file::spec(),
        in_workspace(ws.clone(), |ws, input| async move {
            write_file::call(&ws, &input).await
        }),
    );
    tools.register(
        edit_file::spec(),
        in_workspace(ws.clone(), |ws, input| async move {
            edit_file::call(&ws, &input).await
        }),
    );
    tools.register(
        glob::spec(),
        in_workspace(ws, |ws, input| async move { glob::call(&ws, &input).await }),
    );
    tools
}

/// Binds a tool that needs the workspace to one, so it fits the map: each
/// call gets its own handle, because the returned future must own its data.
pub fn in_workspace<F, Fut>(
    workspace: Workspace,
    tool: F,
) -> impl Fn(Value) -> Fut + Send + Sync + 'static
where
    F: Fn(Workspace, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    move |input| tool(workspace.clone(), input)
}
