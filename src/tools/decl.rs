//! What a tool is declared with: its name, its set, whether it runs long, its route and its
//! definition; and the tools of each family, by which a route names the module's code. The tool
//! modules declare their tools with these; `tools::TOOLS` lists them.

use rmcp::model::Tool;

use crate::approval::ApprovalMode;
use crate::config::Config;

/// Which code runs a call of the tool: its module's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// One of the three prompt tools.
    Prompt(Kind),
    /// One of the `sessions` and `models` sets.
    Extra(Extra),
    /// One of the `acp` set.
    Agent(AgentTool),
    /// One of the `jobs` set (run by the MCP layer, which holds the jobs).
    Job(JobTool),
    /// `gemini_read_answer`, listed in every tool set.
    ReadAnswer,
}

/// A tool set: the tools an operator turns on together (by name, in the server's tool sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Set {
    /// Always listed: the three prompt tools and `gemini_read_answer`.
    Core,
    /// `sessions`: the CLI's sessions listed and deleted.
    Sessions,
    /// `models`: the models the CLI knows.
    Models,
    /// `acp` (alias `agent`): `gemini` and its helpers, on warm agents.
    Acp,
    /// `jobs`: prompt calls as background jobs.
    Jobs,
}

impl Set {
    /// The set's name, as the operator spells it (`core` for the set always on).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Set::Core => "core",
            Set::Sessions => "sessions",
            Set::Models => "models",
            Set::Acp => "acp",
            Set::Jobs => "jobs",
        }
    }

    /// Whether `config` lists the set.
    pub(crate) fn on(self, config: &Config) -> bool {
        let sets = config.policy.toolsets;
        match self {
            Set::Core => true,
            Set::Sessions => sets.sessions,
            Set::Models => sets.models,
            Set::Acp => config.acp.enabled,
            Set::Jobs => sets.jobs,
        }
    }
}

/// What a definition is made for: the client's protocol and the operator's approval ceiling.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listing {
    /// The client knows `outputSchema` and tool titles (2025-06-18 and later).
    pub with_output_schema: bool,
    /// The approval-mode ceiling the annotations describe.
    pub ceiling: ApprovalMode,
}

/// One tool, declared once: everything else (the listing, the route of a call, what may run as a
/// task or a job, the `tools --json` catalogue and the `.mcpb` bundle's tool list) reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decl {
    /// The tool's name.
    pub name: &'static str,
    /// The set that lists it.
    pub set: Set,
    /// Whether a call runs Gemini: it may run as a task or a job (`gemini_start`), be held across
    /// rounds for its questions, and run under an `idempotency_key`; the others answer at once.
    pub runs_long: bool,
    /// Which code runs a call.
    pub route: Route,
    /// Its definition: description, argument schema (its arguments' `JsonSchema` type), output
    /// schema, title and annotations.
    pub define: fn(&Listing) -> Tool,
}

/// Which of the three prompt tools (`tools::prompt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `gemini_prompt`.
    Prompt,
    /// `gemini_prompt_with_context`.
    WithContext,
    /// `gemini_prompt_structured`.
    Structured,
}

/// One of the `sessions` and `models` sets' tools (`tools::sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extra {
    /// `gemini_list_sessions`.
    ListSessions,
    /// `gemini_delete_session`.
    DeleteSession,
    /// `gemini_list_models`.
    ListModels,
}

/// One of the `acp` set's tools (`tools::agent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentTool {
    /// `gemini`.
    Gemini,
    /// `list_models`.
    ListModels,
    /// `list_sessions`.
    ListSessions,
    /// `reset_session`.
    ResetSession,
}

/// One of the `jobs` set's tools (`tools::jobs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobTool {
    /// `gemini_start`.
    Start,
    /// `gemini_wait`.
    Wait,
    /// `gemini_cancel`.
    Cancel,
    /// `gemini_jobs`.
    Jobs,
}
