//! The tools: one registry of the tool sets the operator enabled (the reference's three prompt
//! tools always; `sessions` and `models` with `GEMINICLI_MCP_TOOLSETS`; the `acp` set), and
//! each call routed to its tool — decoded, run, rendered.

pub(crate) mod agent;
pub(crate) mod args;
pub(crate) mod jobs;
pub(crate) mod prompt;
pub(crate) mod sessions;

use std::num::NonZeroU64;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::progress::{Progress, Sink, Style};
use crate::render::{Render, READ_ANSWER};
use crate::roots::Roots;
use crate::run::Runner;

/// Which tool a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// One of the three prompt tools.
    Prompt(prompt::Kind),
    /// One of the `sessions` and `models` sets.
    Extra(sessions::Extra),
    /// One of the `acp` set.
    Agent,
    /// One of the `jobs` set (run by the MCP layer, which holds the jobs).
    Job(jobs::JobTool),
    /// `gemini_read_answer`, listed in every tool set.
    ReadAnswer,
}

/// The tool named `name`, when it is listed under `config`.
pub(crate) fn route(name: &str, config: &Config) -> Option<Route> {
    if name == READ_ANSWER {
        return Some(Route::ReadAnswer);
    }
    if config.acp.enabled && agent::is_agent_tool(name) {
        return Some(Route::Agent);
    }
    if let Some(job) = jobs::JobTool::from_name(name).filter(|_| config.policy.toolsets.jobs) {
        return Some(Route::Job(job));
    }
    if let Some(extra) = sessions::Extra::from_name(name, config.policy.toolsets) {
        return Some(Route::Extra(extra));
    }
    prompt::Kind::from_name(name).map(Route::Prompt)
}

/// Every tool listed under `config`; `with_output_schema` for clients of 2025-06-18 and later.
pub(crate) fn list(config: &Config, with_output_schema: bool) -> Vec<Tool> {
    let ceiling = config.policy.approval_ceiling;
    let mut tools = prompt::definitions(with_output_schema, ceiling);
    tools.extend(sessions::definitions(
        config.policy.toolsets,
        with_output_schema,
    ));
    if config.acp.enabled {
        tools.extend(agent::definitions(with_output_schema, ceiling));
    }
    if config.policy.toolsets.jobs {
        tools.extend(jobs::definitions(ceiling));
    }
    tools.push(read_answer_definition(with_output_schema));
    tools
}

/// Arguments of `gemini_read_answer`.
#[derive(Debug, Deserialize, JsonSchema)]
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

fn read_answer_definition(with_output_schema: bool) -> Tool {
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
    if with_output_schema {
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

/// Runs one call of the tool `route` names.
pub(crate) async fn call(
    route: Route,
    name: &str,
    arguments: Option<&JsonObject>,
    ctx: Ctx<'_>,
) -> CallToolResult {
    match route {
        Route::Prompt(kind) => prompt_call(kind, arguments, ctx).await,
        Route::Extra(extra) => {
            sessions::call(extra, arguments, &ctx.roots, ctx.runner, ctx.ct.clone())
                .await
                .unwrap_or_else(|f| ctx.render.failure(&f))
        }
        Route::Agent => {
            let env = agent::Env {
                policy: &ctx.config.policy,
                runner: ctx.runner,
                roots: &ctx.roots,
                render: ctx.render,
                sink: ctx.sink.clone(),
                ct: ctx.ct.clone(),
                asker: ctx.asker.clone(),
            };
            agent::call(env, name, arguments).await
        }
        // The MCP layer runs the job tools: it holds the jobs.
        Route::Job(_) => ctx.render.failure(&crate::error::Failure::new(
            crate::error::ErrorKind::Unknown,
            format!("{name} is run by the server, not as a tool call"),
        )),
        Route::ReadAnswer => match args::decode::<ReadAnswerArgs>(arguments) {
            Ok(a) => ctx.render.read(
                &a.answer_id,
                usize::try_from(a.offset.unwrap_or(0)).unwrap_or(usize::MAX),
                a.max_chars
                    .map(|m| usize::try_from(m.get()).unwrap_or(usize::MAX)),
            ),
            Err(f) => ctx.render.failure(&f),
        },
    }
}

/// A prompt tool's call: decoded, its paths checked, run, rendered with what it asked to see.
async fn prompt_call(
    kind: prompt::Kind,
    arguments: Option<&JsonObject>,
    ctx: Ctx<'_>,
) -> CallToolResult {
    let call = match prompt::decode(kind, arguments, &ctx.config.policy) {
        Ok(call) => call,
        Err(f) => return ctx.render.failure(&f),
    };
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
