//! The `acp` tool set: `gemini` (gemini_mcp's contract, answered by a warm agent), `list_models`,
//! `list_sessions` and `reset_session` — their arguments, definitions and results.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::args::{self, given};
pub(crate) use super::decl::AgentTool;
use super::decl::{Decl, Listing, Route, Set};
use super::prompt::result::{FailureFields, PageFields, SaveFields};
use super::prompt::{self, ModeArg, PermissionArg};
use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;
use crate::error::Failure;
use crate::gemini::command::PromptRequest;
use crate::gemini::{command, session};
use crate::policy::Policy;
use crate::progress::{Progress, Sink, Style};
use crate::render::Render;
use crate::roots::Roots;
use crate::run::{Answer, Finished, Job, Runner, Surface};

/// `gemini`.
pub(crate) const GEMINI: &str = "gemini";
/// `list_models`.
pub(crate) const LIST_MODELS: &str = "list_models";
/// `list_sessions`.
pub(crate) const LIST_SESSIONS: &str = "list_sessions";
/// `reset_session`.
pub(crate) const RESET_SESSION: &str = "reset_session";

/// `gemini`: runs Gemini, so it may run as a task or a job.
pub(crate) const GEMINI_TOOL: Decl = AgentTool::Gemini.decl(|l| definition(AgentTool::Gemini, l));
/// `list_models`.
pub(crate) const LIST_MODELS_TOOL: Decl =
    AgentTool::ListModels.decl(|l| definition(AgentTool::ListModels, l));
/// `list_sessions`.
pub(crate) const LIST_SESSIONS_TOOL: Decl =
    AgentTool::ListSessions.decl(|l| definition(AgentTool::ListSessions, l));
/// `reset_session`.
pub(crate) const RESET_SESSION_TOOL: Decl =
    AgentTool::ResetSession.decl(|l| definition(AgentTool::ResetSession, l));

impl AgentTool {
    /// The tool's name.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            AgentTool::Gemini => GEMINI,
            AgentTool::ListModels => LIST_MODELS,
            AgentTool::ListSessions => LIST_SESSIONS,
            AgentTool::ResetSession => RESET_SESSION,
        }
    }

    /// The tool's declaration, in the `acp` set, defined by `define`.
    const fn decl(self, define: fn(&Listing) -> Tool) -> Decl {
        Decl {
            name: self.name(),
            set: Set::Acp,
            runs_long: matches!(self, AgentTool::Gemini),
            route: Route::Agent(self),
            define,
        }
    }
}

/// Arguments of `gemini`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct GeminiArgs {
    /// The task or question for Gemini.
    pub prompt: String,
    /// Workspace directory (default: the server's working directory); under
    /// GEMINICLI_MCP_ALLOWED_ROOTS and the client's roots. One warm agent and session per
    /// workspace.
    #[serde(default)]
    pub cd: Option<String>,
    /// Alias of `cd`.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Model for the session, e.g. gemini-3.1-pro-preview or gemini-3-flash-preview (see
    /// list_models).
    #[serde(default)]
    pub model: Option<String>,
    /// Which of Gemini's tool calls are approved: plan and default approve no change, auto_edit
    /// approves edits, yolo everything. Default and ceiling: GEMINICLI_MCP_APPROVAL_MODE.
    #[serde(default)]
    pub approval_mode: Option<ModeArg>,
    /// cli-agent-mcp's names: read-only (plan), workspace-write (auto_edit), unlimited (yolo).
    /// Not together with approval_mode.
    #[serde(default)]
    pub permission: Option<PermissionArg>,
    /// An image file (png, jpg/jpeg, gif, webp, heic, heif) inside the workspace, sent as an
    /// image block.
    #[serde(default)]
    pub image_path: Option<String>,
    /// Text sent with the prompt as an embedded resource.
    #[serde(default)]
    pub context: Option<String>,
    /// Only these of Gemini's configured MCP servers are loaded (the agent is started with this
    /// filter).
    #[serde(default)]
    pub allowed_mcp_servers: Option<Vec<String>>,
    /// Continue this ACP session (from an earlier answer); default: the workspace's current
    /// session.
    #[serde(default, rename = "SESSION_ID")]
    pub session_id_upper: Option<String>,
    /// Alias of SESSION_ID.
    #[serde(default)]
    pub session_id: Option<String>,
    /// A note of yours, echoed in the result and in progress messages.
    #[serde(default)]
    pub task_note: Option<String>,
    /// Add the agent's pid and the duration to the result.
    #[serde(default)]
    pub debug: Option<bool>,
    /// Add `events`, the turn's whole ACP transcript in order: message and thought chunks, tool
    /// calls and their updates, permission requests with the answer given, and how the turn
    /// ended (stop reason or error).
    #[serde(default)]
    pub full_output: Option<bool>,
    /// Also write the answer to this file (under the allowed roots; relative to the workspace).
    #[serde(default)]
    pub save_file: Option<String>,
    /// A key of yours for this run: the call runs as a background job of that key, which a
    /// cancelled or cut-off call leaves running, and the same call made again with the key
    /// attaches to it and returns its result, with no second run (while the server keeps it: by
    /// default 10 min after it finished or was last asked about). The key with other arguments
    /// is refused.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `reset_session`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ResetArgs {
    /// The workspace whose session is reset; omit for all.
    #[serde(default)]
    pub cd: Option<String>,
    /// Alias of `cd`.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// Arguments of the tools that take none.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

/// `cd` or `workspace` (the same argument under two names: one at most).
fn workspace_arg(cd: Option<String>, workspace: Option<String>) -> Result<Option<String>, Failure> {
    match (given(cd), given(workspace)) {
        (Some(_), Some(_)) => Err(Failure::invalid_input(
            "`cd` and `workspace` are the same argument: give one",
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// `gemini`'s result, on success and failure alike (`structuredContent`, and the source of the
/// tool's `outputSchema`): gemini_mcp's eight fields always, the rest only when they say
/// something. The failure's fields are filled by the renderer under these names
/// (`Render::agent_failure`), the cut answer's by `Render::agent_answer`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct GeminiResult {
    /// Whether the agent answered.
    pub success: bool,
    /// The ACP session: pass it as SESSION_ID to continue it.
    #[serde(rename = "SESSION_ID")]
    pub session_id: Option<String>,
    /// The agent's messages of the turn (on a failure, what came before it).
    pub agent_messages: String,
    /// The agent's thoughts.
    pub thought: String,
    /// How the turn ended: end_turn, max_tokens, max_turn_requests, refusal or cancelled.
    pub stop_reason: Option<String>,
    /// The turn's tool calls, in order, with their last status.
    #[schemars(with = "Vec<Map<String, Value>>")]
    pub tool_calls: Vec<Value>,
    /// The agent's plan entries.
    #[schemars(with = "Vec<Map<String, Value>>")]
    pub plan: Vec<Value>,
    /// A failure's first line: `[error exit=N] KIND: message`.
    pub error: Option<String>,
    /// What a failure says besides its first line.
    #[serde(flatten)]
    pub failure: FailureFields,
    /// The session's model that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Models tried after quota_exhausted (GEMINICLI_MCP_FALLBACK_MODELS); the last one answered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback_models: Vec<String>,
    /// The call's task_note, echoed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_note: Option<String>,
    /// MCP servers of the Gemini CLI's settings the agent was not let start (one that does not
    /// answer `initialize` would have held its start): which, why, and the fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_servers_left_out: Option<String>,
    /// debug: the agent's pid and the call's duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<AgentDebug>,
    /// Where save_file wrote the answer, or why it could not.
    #[serde(flatten)]
    pub saved: SaveFields,
    /// Where agent_messages continues, when it is cut.
    #[serde(flatten)]
    pub page: PageFields,
    /// full_output: the turn's transcript. Each event has a `kind`: `update` (`update`: the
    /// agent's session/update as sent), `permission` (`toolCall`, `options`, `outcome`
    /// answered, `approved`), `fallback` (`model`: the next attempt's), and last `stop`
    /// (`stopReason`), `error` (`code`, `message`) or `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<Event>>")]
    pub events: Option<Vec<Value>>,
}

/// `debug` of a `gemini` call.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AgentDebug {
    /// The agent's process id.
    #[serde(rename = "agentPid")]
    pub agent_pid: u32,
    /// The call's duration in milliseconds, the agent's start-up and any retry included.
    #[serde(rename = "durationMs")]
    pub duration_ms: u64,
}

// The schema of a transcript event; the events themselves are kept as the agent sent them.
/// One event of the turn's transcript; its other fields depend on its `kind`.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct Event {
    kind: EventKind,
}

/// What the event records.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum EventKind {
    Update,
    Permission,
    Fallback,
    Stop,
    Error,
    Cancelled,
}

/// The tool's definition; `gemini`'s output schema for clients of 2025-06-18 and later.
fn definition(tool: AgentTool, listing: &Listing) -> Tool {
    let read_only = |title: &str| {
        ToolAnnotations::with_title(title)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    let (description, input, annotations) = match tool {
        AgentTool::Gemini => (
            format!("Runs a task with Gemini over ACP (Agent Client Protocol) in a warm agent: the first call in a workspace starts the agent, later calls reuse it and its session (replaced after a number of turns). Returns success, SESSION_ID, agent_messages, thought, stop_reason, tool_calls, plan (empty with Gemini CLI 0.61) and error. Pass SESSION_ID to continue a specific session. No automatic retry; a model fallback only when the operator configured one ({}).", crate::config::settings::FALLBACK_MODELS.name),
            args::input_schema::<GeminiArgs>(),
            prompt::annotations("Gemini (warm ACP session)", listing.ceiling),
        ),
        AgentTool::ListModels => (
            "Lists the models Gemini offers, the current model and the agent's name and version (starts an agent in the server's working directory if none runs).".to_owned(),
            args::input_schema::<NoArgs>(),
            read_only("List Gemini models"),
        ),
        AgentTool::ListSessions => (
            "Lists the ACP sessions the server holds: workspace, SESSION_ID, turn count, model and approval mode.".to_owned(),
            args::input_schema::<NoArgs>(),
            read_only("List Gemini sessions"),
        ),
        AgentTool::ResetSession => (
            "Forgets the ACP session of a workspace (`cd`/`workspace`), or of every workspace when none is given: the next gemini call there starts a fresh session.".to_owned(),
            args::input_schema::<ResetArgs>(),
            ToolAnnotations::with_title("Reset Gemini sessions")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
    };
    let mut defined = Tool::new(tool.name(), description, input);
    defined.annotations = Some(annotations);
    if listing.with_output_schema && tool == AgentTool::Gemini {
        defined.output_schema = Some(Arc::new(args::output_schema_of::<GeminiResult>()));
    }
    defined
}

/// What a call of this set needs from the server.
pub(crate) struct Env<'a> {
    /// The operator's policy.
    pub policy: &'a Policy,
    /// The runner (and its agents).
    pub runner: &'a Runner,
    /// The call's roots.
    pub roots: &'a Roots<'a>,
    /// How results are rendered for this client.
    pub render: Render<'a>,
    /// Where progress goes, when the call asked for it.
    pub sink: Option<Sink>,
    /// The request's cancellation.
    pub ct: CancellationToken,
    /// How the client's user is asked (`approval_mode: "ask"`), when it can be.
    pub asker: Option<std::sync::Arc<dyn crate::ask::Asker>>,
}

/// A call of this set, its arguments decoded.
#[derive(Debug, Clone)]
pub(crate) enum AgentCall {
    /// `gemini`.
    Gemini(Box<GeminiCall>),
    /// `list_models` (it reads no arguments).
    ListModels,
    /// `list_sessions` (it reads no arguments).
    ListSessions,
    /// `reset_session`.
    ResetSession(ResetArgs),
}

/// A `gemini` call: its arguments, and what of them is checked without the file system.
#[derive(Debug, Clone)]
pub(crate) struct GeminiCall {
    /// The arguments as given.
    pub args: GeminiArgs,
    /// `model`, checked.
    model: Option<String>,
    /// The approval mode, under the ceiling.
    mode: ApprovalMode,
    /// `approval_mode: "ask"`.
    pub ask: bool,
}

/// Decodes a call's arguments, and checks of `gemini`'s what needs no file system.
pub(crate) fn decode(
    tool: AgentTool,
    arguments: Option<&JsonObject>,
    policy: &Policy,
) -> Result<AgentCall, Failure> {
    Ok(match tool {
        AgentTool::Gemini => {
            let a: GeminiArgs = args::decode(arguments)?;
            if a.prompt.trim().is_empty() {
                return Err(Failure::invalid_input(
                    "`prompt` must be a non-empty string",
                ));
            }
            let model = given(a.model.clone());
            if let Some(m) = &model {
                command::validate_model(m)?;
            }
            let prompt::Approval { mode, ask } =
                prompt::approval(policy, a.approval_mode, a.permission)?;
            AgentCall::Gemini(Box::new(GeminiCall {
                args: a,
                model,
                mode,
                ask,
            }))
        }
        AgentTool::ListModels => AgentCall::ListModels,
        AgentTool::ListSessions => AgentCall::ListSessions,
        AgentTool::ResetSession => AgentCall::ResetSession(args::decode(arguments)?),
    })
}

/// `f` in `tool`'s result shape: `gemini`'s contract for `gemini`, a plain failure for the others.
pub(crate) fn failure(tool: AgentTool, render: &Render<'_>, f: &Failure) -> CallToolResult {
    match tool {
        AgentTool::Gemini => render.agent_failure(f, &Map::new()),
        _ => render.failure(f),
    }
}

/// Runs one call of this tool set.
pub(crate) async fn call(env: Env<'_>, call: AgentCall) -> CallToolResult {
    let pool = env.runner.pool();
    match call {
        AgentCall::Gemini(call) => gemini(&env, *call).await,
        AgentCall::ListSessions => env.render.value(json!({"sessions": pool.sessions().await})),
        AgentCall::ResetSession(a) => {
            let reset = async {
                let raw = workspace_arg(a.cd, a.workspace)?;
                let cwd = match &raw {
                    Some(raw) => Some(env.roots.workspace("cd", Some(raw)).await?),
                    None => None,
                };
                Ok::<_, Failure>(pool.reset(cwd.as_ref()).await)
            };
            match reset.await {
                Ok(dropped) => env.render.value(json!({"reset": dropped
                    .iter()
                    .map(|(w, s)| json!({"workspace": w.display().to_string(), "session_id": s}))
                    .collect::<Vec<_>>()})),
                Err(f) => env.render.failure(&f),
            }
        }
        AgentCall::ListModels => match pool
            .probe(env.roots.cwd().to_path_buf(), env.ct.clone())
            .await
        {
            Ok((models, info)) => env.render.value(json!({
                "models": models["availableModels"],
                "current_model": models["currentModelId"],
                "agent": info,
            })),
            Err(f) => env.render.failure(&f),
        },
    }
}

/// A `gemini` call turned into the one prompt job every prompt tool runs as (its paths checked),
/// and its note.
async fn job(env: &Env<'_>, call: GeminiCall) -> Result<(Job, Option<String>), Failure> {
    let GeminiCall {
        args: a,
        model,
        mode,
        ask,
    } = call;
    let cwd = env
        .roots
        .workspace("cd", workspace_arg(a.cd, a.workspace)?.as_deref())
        .await?;
    let mut servers = a.allowed_mcp_servers.unwrap_or_default();
    for name in &servers {
        command::validate_server_name(name)?;
    }
    servers.sort();
    servers.dedup();
    let images = match given(a.image_path) {
        None => Vec::new(),
        Some(raw) => vec![env.roots.image("image_path", &raw, &cwd).await?],
    };
    let session_id = given(a.session_id_upper).or(given(a.session_id));
    if let Some(id) = &session_id {
        session::validate_session_id(id)?;
    }
    let save = match given(a.save_file) {
        None => None,
        Some(raw) => Some(env.roots.check_save(&raw, &cwd).await?),
    };
    let job = Job {
        tool: GEMINI,
        surface: Surface::Agent,
        request: PromptRequest {
            prompt: a.prompt,
            context: a.context,
            model,
            resume: session_id,
            approval_mode: Some(mode),
            allowed_mcp_server_names: servers,
            images,
            ..PromptRequest::default()
        },
        schema: None,
        mode,
        cwd,
        save,
        // The operator's deadlines (`GEMINICLI_MCP_*_TIMEOUT_MS`): `gemini` takes none of its own.
        deadlines: Deadlines::default(),
        full_output: a.full_output.unwrap_or(false),
        debug: a.debug.unwrap_or(false),
        repair: false,
        asking: ask.then(|| crate::ask::Asking {
            asker: env.asker.clone(),
            ceiling: env.policy.approval_ceiling,
        }),
    };
    Ok((job, prompt::task_note(a.task_note)?))
}

async fn gemini(env: &Env<'_>, call: GeminiCall) -> CallToolResult {
    let (job, note) = match job(env, call).await {
        Ok(d) => d,
        Err(f) => return env.render.agent_failure(&f, &Map::new()),
    };
    tracing::debug!(
        tool = GEMINI,
        prompt_bytes = job.request.prompt.len(),
        mode = job.mode.as_str(),
        cwd = %job.cwd.display(),
        "ACP call"
    );
    let (debug, full_output) = (job.debug, job.full_output);
    let progress = Progress::new(env.sink.clone(), Style::Events, None);
    let Finished { result, report } = env.runner.prompt(job, env.ct.clone(), progress).await;
    let events = full_output.then(|| report.events.unwrap_or_default());
    // What a failure carries besides the renderer's fields (nothing was saved).
    let mut extra = Map::new();
    if let Some(note) = &note {
        extra.insert("task_note".into(), json!(note));
    }
    if let Some(events) = &events {
        extra.insert("events".into(), json!(events));
    }
    let answer = match result {
        Ok(a) => a,
        Err(f) => return env.render.agent_failure(&f, &extra),
    };
    let Answer { success, turn, .. } = answer;
    let turn = turn.unwrap_or_default();
    let result = GeminiResult {
        success: true,
        session_id: success.session_id,
        agent_messages: success.answer,
        thought: turn.thought,
        stop_reason: Some(turn.stop_reason),
        tool_calls: turn.tool_calls,
        plan: turn.plan,
        model: Some(turn.model),
        fallback_models: report.fallbacks,
        task_note: note,
        mcp_servers_left_out: report.servers_left_out,
        debug: debug.then_some(AgentDebug {
            agent_pid: turn.pid,
            duration_ms: success.duration.as_millis() as u64,
        }),
        saved: SaveFields::of(report.saved),
        events,
        ..GeminiResult::default()
    };
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => env.render.agent_answer(map),
        _ => env.render.failure(&Failure::new(
            crate::error::ErrorKind::Unknown,
            "the answer could not be put into a result",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::Answers;
    use crate::error::ErrorKind;

    fn schema() -> JsonObject {
        args::output_schema_of::<GeminiResult>()
    }

    #[test]
    fn the_schema_requires_gemini_mcps_eight_fields_and_lets_three_be_null() {
        let s = schema();
        assert_eq!(
            s["required"],
            json!([
                "success",
                "SESSION_ID",
                "agent_messages",
                "thought",
                "stop_reason",
                "tool_calls",
                "plan",
                "error"
            ])
        );
        let props = &s["properties"];
        let string_or_null = json!([{"type": "string"}, {"type": "null"}]);
        for field in ["SESSION_ID", "error", "stop_reason"] {
            assert_eq!(props[field]["anyOf"], string_or_null, "{field}");
            assert!(props[field]["description"].is_string(), "{field}");
        }
        assert!(!Value::Object(s.clone()).to_string().contains("\"type\":["));
        assert_eq!(props["agent_messages"]["type"], "string");
        // Left out when empty: one plain type.
        assert_eq!(props["exitCode"]["type"], "integer");
        assert_eq!(props["savedFile"]["type"], "string");
        assert_eq!(props["tool_calls"]["items"]["type"], "object");
        assert_eq!(props["debug"]["properties"]["agentPid"]["type"], "integer");
        assert_eq!(
            props["events"]["items"]["properties"]["kind"]["enum"],
            json!([
                "update",
                "permission",
                "fallback",
                "stop",
                "error",
                "cancelled"
            ])
        );
        assert!(!s.contains_key("$defs") && !s.contains_key("title"));
    }

    /// Every field a rendered `gemini` result carries — a failure's, and a cut answer's — is one
    /// the schema declares: the result type stays the one description of the result.
    #[test]
    fn every_field_the_renderer_fills_is_declared() {
        let answers = Answers::default();
        let render = Render {
            answers: &answers,
            budget: 2048,
            structured: true,
            debug: true,
        };
        let declared = schema()["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let f =
            Failure::new(ErrorKind::RateLimited, "slow down").with_run(crate::error::RunFacts {
                stderr_tail: "429".into(),
                partial_response: Some(Arc::new("so far".into())),
                ..Default::default()
            });
        let mut f = f;
        f.retry_delay_ms = Some(5);
        let failed = render.agent_failure(&f, &Map::new());
        let long = GeminiResult {
            success: true,
            agent_messages: "x".repeat(10_000),
            ..GeminiResult::default()
        };
        let Ok(Value::Object(long)) = serde_json::to_value(long) else {
            panic!("an object")
        };
        let cut = render.agent_answer(long);
        for result in [failed, cut] {
            let sc = result.structured_content.expect("structuredContent");
            let keys: Vec<&String> = sc.as_object().expect("object").keys().collect();
            assert!(keys.len() >= 9, "{keys:?}");
            for key in keys {
                assert!(declared.contains_key(key), "`{key}` is not in the schema");
            }
        }
    }
}
