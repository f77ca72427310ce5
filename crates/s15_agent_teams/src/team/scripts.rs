//! A script per agent: how a team's demo and tests stay deterministic.
//!
//! A team's agents run at the same time, so one list of scripted replies
//! would hand each reply to whichever agent asked first, and a demo or a
//! test would play differently each run. [`AgentScripts`] gives every
//! agent a [`ScriptedModel`] of its own, picked by text its system prompt
//! contains (a teammate's prompt introduces it by name); every other
//! request (the lead's turns, and every side query, which offers no tools)
//! goes to the lead's script. The demo reads the same from `demo.json`:
//! the usual script for the lead, and an `agents` list beside it.
//!
//! This is scaffolding for the scripted model only: a real model needs no
//! routing, since every request carries its agent's whole conversation.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use shared::error::ApiError;
use shared::model::scripted::{Reply, Script, ScriptedModel};
use shared::model::{BoxFuture, DeltaSink, Model};
use shared::protocol::{Request, Response};

/// How far apart the agents' reply numbers are, so their tool-use ids
/// never repeat one another's or the lead's.
const NUMBERS_PER_AGENT: usize = 10_000;

/// The replies of one agent other than the lead: turns whose system
/// prompt contains `when` take their replies from here, in order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentScript {
    /// Text the turn's system prompt must contain, e.g. the teammate's
    /// name as its prompt introduces it.
    pub when: String,
    /// The agent's replies, one per turn.
    pub replies: Vec<Reply>,
}

impl AgentScript {
    /// The replies for turns whose system prompt contains `when`.
    pub fn new(when: impl Into<String>, replies: Vec<Reply>) -> Self {
        Self {
            when: when.into(),
            replies,
        }
    }
}

/// The lead's scripted model, and one per other agent.
#[derive(Debug)]
pub struct AgentScripts {
    lead: ScriptedModel,
    agents: Vec<(String, ScriptedModel)>,
}

impl AgentScripts {
    /// A model for tests: `lead` answers what no agent's script claims,
    /// and an agent's request after its last reply is an error, as an
    /// extra request to `lead` is.
    pub fn new(lead: ScriptedModel, agents: impl IntoIterator<Item = AgentScript>) -> Self {
        Self::with_agents(lead, agents, ScriptedModel::new)
    }

    /// The demo model of a lesson whose `demo.json` may hold an `agents`
    /// list beside the lead's script.
    pub fn demo(json: &str) -> Result<Self, serde_json::Error> {
        let mut value: Value = serde_json::from_str(json)?;
        let agents = match value
            .as_object_mut()
            .and_then(|script| script.remove("agents"))
        {
            Some(agents) => serde_json::from_value::<Vec<AgentScript>>(agents)?,
            None => Vec::new(),
        };
        let lead = ScriptedModel::demo(serde_json::from_value(value)?);
        Ok(Self::with_agents(lead, agents, |replies| {
            ScriptedModel::demo(Script {
                replies,
                side_replies: Vec::new(),
                reactions: Vec::new(),
            })
        }))
    }

    fn with_agents(
        lead: ScriptedModel,
        agents: impl IntoIterator<Item = AgentScript>,
        model: impl Fn(Vec<Reply>) -> ScriptedModel,
    ) -> Self {
        let agents = agents
            .into_iter()
            .enumerate()
            .map(|(number, script)| {
                let first = (number + 1) * NUMBERS_PER_AGENT;
                (script.when, model(script.replies).numbered_from(first))
            })
            .collect();
        Self { lead, agents }
    }

    /// The lead's model.
    pub fn lead(&self) -> &ScriptedModel {
        &self.lead
    }

    /// Every turn request the lead made so far (see
    /// [`ScriptedModel::requests`]).
    pub fn requests(&self) -> Vec<Value> {
        self.lead.requests()
    }

    /// Every turn request the agent whose script has `when` made so far.
    pub fn agent_requests(&self, when: &str) -> Vec<Value> {
        self.agents
            .iter()
            .find(|(agent, _)| agent == when)
            .map(|(_, model)| model.requests())
            .unwrap_or_default()
    }

    /// The model that answers `request`: the first agent whose `when`
    /// occurs in a turn's system prompt, else the lead's.
    fn answering(&self, request: &Request<'_>) -> &ScriptedModel {
        if request.tools.is_empty() {
            return &self.lead;
        }
        let system = serde_json::to_string(request.system).unwrap_or_default();
        self.agents
            .iter()
            .find(|(when, _)| system.contains(when.as_str()))
            .map_or(&self.lead, |(_, model)| model)
    }
}

impl Model for AgentScripts {
    fn provider(&self) -> &str {
        self.lead.provider()
    }

    fn send<'a>(
        &'a self,
        request: &'a Request<'a>,
        on_delta: &'a mut DeltaSink<'_>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        self.answering(request).send(request, on_delta)
    }
}

/// The lesson's [`DemoModel`](shared::model::scripted::DemoModel): its
/// `demo.json` played by [`AgentScripts::demo`].
pub fn demo_model(json: &str) -> Result<Arc<dyn Model>, serde_json::Error> {
    Ok(Arc::new(AgentScripts::demo(json)?))
}
