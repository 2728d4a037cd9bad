//! The tools: one registry of the tool sets the operator enabled (the reference's three prompt
//! tools always; `sessions` and `models` with `GEMINICLI_MCP_TOOLSETS`; the `acp` set), and
//! each call routed to its tool — decoded, run, rendered.

pub(crate) mod agent;
pub(crate) mod args;
mod decl;
pub(crate) mod jobs;
pub(crate) mod prompt;
pub(crate) mod sessions;

use std::num::NonZeroU64;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalMode;
use crate::config::Config;
use crate::progress::{Progress, Sink, Style};
use crate::render::{Render, READ_ANSWER};
use crate::roots::Roots;
use crate::run::Runner;
pub(crate) use decl::{Decl, Listing, Route, Set};

/// Every tool, in the order `tools/list` lists them. A new tool is one line here (its `Decl`
/// lives in its module); `tests` fail on a tool missing from the docs.
pub(crate) const TOOLS: &[Decl] = &[
    prompt::PROMPT,
    prompt::WITH_CONTEXT,
    prompt::STRUCTURED,
    sessions::LIST_SESSIONS,
    sessions::DELETE_SESSION,
    sessions::LIST_MODELS,
    agent::GEMINI_TOOL,
    agent::LIST_MODELS_TOOL,
    agent::LIST_SESSIONS_TOOL,
    agent::RESET_SESSION_TOOL,
    jobs::START,
    jobs::WAIT,
    jobs::CANCEL,
    jobs::JOBS,
    READ_ANSWER_TOOL,
];

impl Decl {
    /// `f` in the tool's result shape: the `acp` set's, or a prompt tool's failure.
    pub(crate) fn failure(&self, render: &Render<'_>, f: &crate::error::Failure) -> CallToolResult {
        match self.route {
            Route::Agent(agent_tool) => agent::failure(agent_tool, render, f),
            _ => render.failure(f),
        }
    }
}

/// The tool named `name`, when it is listed under `config`.
pub(crate) fn find(name: &str, config: &Config) -> Option<&'static Decl> {
    TOOLS.iter().find(|d| d.name == name && d.set.on(config))
}

/// Every tool listed under `config`; `with_output_schema` for clients of 2025-06-18 and later.
pub(crate) fn list(config: &Config, with_output_schema: bool) -> Vec<Tool> {
    let listing = Listing {
        with_output_schema,
        ceiling: config.policy.approval_ceiling,
    };
    TOOLS
        .iter()
        .filter(|d| d.set.on(config))
        .map(|d| (d.define)(&listing))
        .collect()
}

/// The tools a job (`gemini_start`) may run under `config`: those listed that run long.
pub(crate) fn runnable(config: &Config) -> Vec<&'static str> {
    TOOLS
        .iter()
        .filter(|d| d.runs_long && d.set.on(config))
        .map(|d| d.name)
        .collect()
}

/// Every declared tool as `geminicli-mcp tools --json` prints it: name, description and set, in
/// the listing's order, whatever the configuration turns on.
pub(crate) fn catalogue() -> serde_json::Value {
    let listing = Listing {
        with_output_schema: false,
        ceiling: ApprovalMode::Yolo,
    };
    let tools: Vec<serde_json::Value> = TOOLS
        .iter()
        .map(|d| {
            let tool = (d.define)(&listing);
            serde_json::json!({
                "name": d.name,
                "description": tool.description.as_deref().unwrap_or_default(),
                "toolset": d.set.name(),
            })
        })
        .collect();
    serde_json::json!({ "tools": tools })
}

/// `gemini_read_answer`.
const READ_ANSWER_TOOL: Decl = Decl {
    name: READ_ANSWER,
    set: Set::Core,
    runs_long: false,
    route: Route::ReadAnswer,
    define: read_answer_definition,
};

/// Arguments of `gemini_read_answer`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ReadAnswerArgs {
    /// The id of a cut answer (its `answerId`, or the `answer_id=` of its note).
    pub answer_id: String,
    /// The character to read from (its `nextOffset`, or the `offset=` of its note; default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Read at most this many characters (default: as many as one result holds).
    #[serde(default)]
    pub max_chars: Option<NonZeroU64>,
}

fn read_answer_definition(listing: &Listing) -> Tool {
    let mut tool = Tool::new(
        READ_ANSWER,
        "Reads on in an answer too long for one result: a cut answer says `gemini_read_answer answer_id=ID offset=N` at its start and its end; call this with those values, and again with each result's next_offset until it is null. Answers are kept in memory while the server runs (the last 32, at most 64 MiB).",
        args::input_schema::<ReadAnswerArgs>(),
    )
    .annotate(
        ToolAnnotations::with_title("Read on in a Gemini answer")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    if listing.with_output_schema {
        let schema = serde_json::json!({"type": "object", "properties": {
            "answer_id": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0, "description": "The first character of `text`."},
            "text": {"type": "string", "description": "The answer from `offset`, as much as one result holds."},
            "next_offset": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "Where to read on; null at the end."},
            "total_chars": {"type": "integer", "minimum": 0},
            "continued": {"type": "string", "description": "How to read on, while there is more."},
            "error": {"type": "string"},
            "errorKind": {"type": "string"},
            "exitCode": {"type": "integer"},
            "fix": {"type": "string"}
        }});
        if let serde_json::Value::Object(map) = schema {
            tool = tool
                .with_title("Read on in a Gemini answer")
                .with_raw_output_schema(std::sync::Arc::new(map));
        }
    }
    tool
}

/// What a call needs from the server.
pub(crate) struct Ctx<'a> {
    /// The server's configuration.
    pub config: &'a Config,
    /// Runs Gemini.
    pub runner: &'a Runner,
    /// How results are rendered for this client (the budget, the kept answers).
    pub render: Render<'a>,
    /// The call's roots.
    pub roots: Roots<'a>,
    /// Where the call's progress goes, when it asked for progress.
    pub sink: Option<Sink>,
    /// The request's cancellation.
    pub ct: CancellationToken,
    /// How the client's user is asked (`approval_mode: "ask"`), when it can be.
    pub asker: Option<std::sync::Arc<dyn crate::ask::Asker>>,
}

/// A call decoded at the door, once: its tool and its arguments as its own types. The MCP layer
/// reads what it decides on (a task, a job of a key, a held call) from here, and hands the call
/// down as it is.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The tool called.
    pub tool: &'static Decl,
    /// Its arguments.
    args: Args,
}

/// A call's arguments, by the tool's module.
#[derive(Debug, Clone)]
enum Args {
    Prompt(Box<prompt::Call>),
    Extra(sessions::ExtraCall),
    Agent(agent::AgentCall),
    Job(jobs::JobCall),
    ReadAnswer(ReadAnswerArgs),
}

/// Decodes a call of `tool`: its arguments, and what of them can be checked without the file
/// system (the approval mode under `policy`'s ceiling, a model's name, a schema).
pub(crate) fn decode(
    tool: &'static Decl,
    arguments: Option<&JsonObject>,
    policy: &crate::policy::Policy,
) -> Result<Call, crate::error::Failure> {
    let args = match tool.route {
        Route::Prompt(kind) => Args::Prompt(Box::new(prompt::decode(kind, arguments, policy)?)),
        Route::Extra(extra) => Args::Extra(sessions::decode(extra, arguments)?),
        Route::Agent(agent_tool) => Args::Agent(agent::decode(agent_tool, arguments, policy)?),
        Route::Job(job) => Args::Job(jobs::decode(job, arguments)?),
        Route::ReadAnswer => Args::ReadAnswer(args::decode(arguments)?),
    };
    Ok(Call { tool, args })
}

impl Call {
    /// Whether the call asks the client's user about Gemini's tool calls (`approval_mode: "ask"`).
    pub(crate) fn asks(&self) -> bool {
        match &self.args {
            Args::Prompt(call) => call.ask,
            Args::Agent(agent::AgentCall::Gemini(call)) => call.ask,
            _ => false,
        }
    }

    /// The call's `idempotency_key`, when its tool takes one and it was given.
    pub(crate) fn idempotency_key(&self) -> Option<&str> {
        match &self.args {
            Args::Prompt(call) => call.idempotency_key.as_deref(),
            Args::Agent(agent::AgentCall::Gemini(call)) => call.args.idempotency_key.as_deref(),
            _ => None,
        }
    }

    /// The decoded arguments of a job tool's call.
    pub(crate) fn job(&self) -> Option<&jobs::JobCall> {
        match &self.args {
            Args::Job(job) => Some(job),
            _ => None,
        }
    }
}

/// Runs a decoded call.
pub(crate) async fn call(call: Call, ctx: Ctx<'_>) -> CallToolResult {
    match call.args {
        Args::Prompt(prompt) => prompt_call(*prompt, ctx).await,
        Args::Extra(extra) => sessions::call(extra, &ctx.roots, ctx.runner, ctx.ct.clone())
            .await
            .unwrap_or_else(|f| ctx.render.failure(&f)),
        Args::Agent(agent_call) => {
            let env = agent::Env {
                policy: &ctx.config.policy,
                runner: ctx.runner,
                roots: &ctx.roots,
                render: ctx.render,
                sink: ctx.sink.clone(),
                ct: ctx.ct.clone(),
                asker: ctx.asker.clone(),
            };
            agent::call(env, agent_call).await
        }
        // The MCP layer runs the job tools: it holds the jobs.
        Args::Job(_) => ctx.render.failure(&crate::error::Failure::new(
            crate::error::ErrorKind::Unknown,
            format!(
                "{} is run by the server, not as a tool call",
                call.tool.name
            ),
        )),
        Args::ReadAnswer(a) => ctx.render.read(
            &a.answer_id,
            usize::try_from(a.offset.unwrap_or(0)).unwrap_or(usize::MAX),
            a.max_chars
                .map(|m| usize::try_from(m.get()).unwrap_or(usize::MAX)),
        ),
    }
}

/// A prompt tool's call: its paths checked, run, rendered with what it asked to see.
async fn prompt_call(call: prompt::Call, ctx: Ctx<'_>) -> CallToolResult {
    let note = call.task_note.as_deref();
    // The note's closing text block counts against the budget too.
    let render = Render {
        budget: ctx
            .render
            .budget
            .saturating_sub(note.map_or(0, |n| n.len() * 2 + 64)),
        debug: call.debug,
        ..ctx.render
    };
    let asking = crate::ask::Asking {
        asker: ctx.asker.clone(),
        ceiling: ctx.config.policy.approval_ceiling,
    };
    let mut result = match prompt::job(&call, &ctx.roots, Some(asking)).await {
        Err(f) => render.failure_with(&f, &prompt::extras(note, Default::default(), &render)),
        Ok(job) => {
            let progress = Progress::new(ctx.sink.clone(), Style::Summary, call.task_note.clone());
            let finished = ctx.runner.prompt(job, ctx.ct.clone(), progress).await;
            let extras = prompt::extras(note, finished.report, &render);
            match finished.result {
                Ok(answer) => prompt::render(answer, call.full_output, extras, &render),
                Err(f) => render.failure_with(&f, &extras),
            }
        }
    };
    prompt::note_text(&mut result, note);
    result
}

#[cfg(test)]
mod tests;
