//! The tools: one registry of the tool sets the operator enabled (the reference's three prompt
//! tools always; `sessions` and `models` with `GEMINICLI_MCP_TOOLSETS`; the `acp` set), and
//! each call routed to its tool — decoded, run, rendered.

pub mod agent;
pub mod args;
pub mod prompt;
pub mod sessions;

use rmcp::model::{CallToolResult, JsonObject, Tool};
use tokio_util::sync::CancellationToken;

use crate::answers::Answers;
use crate::config::Config;
use crate::error::Failure;
use crate::progress::{Progress, Sink, Style};
use crate::roots::Roots;
use crate::run::Runner;

/// Which tool a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// One of the three prompt tools.
    Prompt(prompt::Kind),
    /// One of the `sessions` and `models` sets.
    Extra(sessions::Extra),
    /// One of the `acp` set.
    Agent,
}

/// The tool named `name`, when it is listed under `config`.
pub fn route(name: &str, config: &Config) -> Option<Route> {
    if config.acp.enabled && agent::is_agent_tool(name) {
        return Some(Route::Agent);
    }
    if let Some(extra) = sessions::Extra::from_name(name, config.policy.toolsets) {
        return Some(Route::Extra(extra));
    }
    prompt::Kind::from_name(name).map(Route::Prompt)
}

/// Every tool listed under `config`; `with_output_schema` for clients of 2025-06-18 and later.
pub fn list(config: &Config, with_output_schema: bool) -> Vec<Tool> {
    let ceiling = config.policy.approval_ceiling;
    let mut tools = prompt::definitions(with_output_schema, ceiling);
    tools.extend(sessions::definitions(
        config.policy.toolsets,
        with_output_schema,
    ));
    if config.acp.enabled {
        tools.extend(agent::definitions(with_output_schema, ceiling));
    }
    tools
}

/// What a call needs from the server.
pub struct Ctx<'a> {
    /// The server's configuration.
    pub config: &'a Config,
    /// Runs Gemini.
    pub runner: &'a Runner,
    /// Where long answers are kept.
    pub answers: &'a Answers,
    /// The call's roots.
    pub roots: Roots<'a>,
    /// Where the call's progress goes, when it asked for progress.
    pub sink: Option<Sink>,
    /// The request's cancellation.
    pub ct: CancellationToken,
}

/// Runs one call of the tool `route` names.
pub async fn call(
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
                .unwrap_or_else(Failure::into_call_tool_result)
        }
        Route::Agent => {
            let env = agent::Env {
                policy: &ctx.config.policy,
                runner: ctx.runner,
                roots: &ctx.roots,
                sink: ctx.sink.clone(),
                ct: ctx.ct.clone(),
            };
            agent::call(env, name, arguments).await
        }
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
        Err(f) => return f.into_call_tool_result(),
    };
    let (mut result, report) = match prompt::job(&call, &ctx.roots).await {
        Err(f) => (f.into_call_tool_result(), Default::default()),
        Ok(job) => {
            let progress = Progress::new(ctx.sink.clone(), Style::Summary, call.task_note.clone());
            let finished = ctx.runner.prompt(job, ctx.ct.clone(), progress).await;
            let result = match finished.result {
                Ok(answer) => prompt::render(answer, ctx.config.max_result_chars, ctx.answers),
                Err(f) => f.into_call_tool_result(),
            };
            (result, finished.report)
        }
    };
    prompt::decorate(&mut result, call.task_note.as_deref(), report);
    result
}
