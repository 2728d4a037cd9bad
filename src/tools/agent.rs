//! The `acp` tool set: `gemini` (gemini_mcp's contract, answered by a warm agent), `list_models`,
//! `list_sessions` and `reset_session` — their arguments, definitions and results.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::args::{self, given};
use super::prompt::{self, ModeArg, PermissionArg};
use crate::acp::pool::PromptCall;
use crate::approval::ApprovalMode;
use crate::error::Failure;
use crate::gemini::{command, session};
use crate::policy::Policy;
use crate::progress::{Progress, Sink, Style};
use crate::render::Render;
use crate::roots::Roots;
use crate::run::Runner;

/// `gemini`.
pub(crate) const GEMINI: &str = "gemini";
/// `list_models`.
pub(crate) const LIST_MODELS: &str = "list_models";
/// `list_sessions`.
pub(crate) const LIST_SESSIONS: &str = "list_sessions";
/// `reset_session`.
pub(crate) const RESET_SESSION: &str = "reset_session";

/// Whether `name` is one of this tool set's tools.
pub(crate) fn is_agent_tool(name: &str) -> bool {
    matches!(name, GEMINI | LIST_MODELS | LIST_SESSIONS | RESET_SESSION)
}

/// Arguments of `gemini`.
#[derive(Debug, Deserialize, JsonSchema)]
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
}

/// Arguments of `reset_session`.
#[derive(Debug, Deserialize, JsonSchema)]
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

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn gemini_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "SESSION_ID": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "agent_messages": {"type": "string"},
            "thought": {"type": "string"},
            "stop_reason": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "tool_calls": {"type": "array", "items": {"type": "object"}},
            "plan": {"type": "array", "items": {"type": "object"}},
            "error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "errorKind": {"type": "string"},
            "model": {"type": "string", "description": "The session's model that answered."},
            "fallback_models": {"type": "array", "items": {"type": "string"}, "description": "Models tried after quota_exhausted (GEMINICLI_MCP_FALLBACK_MODELS); the last one answered."},
            "task_note": {"type": "string"},
            "debug": {"type": "object"},
            "saved_file": {"anyOf": [{"type": "string"}, {"type": "object"}], "description": "Where the answer was written (save_file), or {error}."},
            "answerId": {"type": "string", "description": "Present when agent_messages is cut: the id gemini_read_answer reads on by."},
            "nextOffset": {"type": "integer", "minimum": 0},
            "totalChars": {"type": "integer", "minimum": 0},
            "continued": {"type": "string", "description": "Present when agent_messages is cut: how to read on (gemini_read_answer)."},
            "exitCode": {"type": "integer"},
            "fix": {"type": "string"},
            "retryDelayMs": {"type": "integer", "minimum": 0},
            "stderrTail": {"type": "string"},
            "events": {
                "type": "array",
                "description": "full_output: the turn's transcript. Each event has a `kind`: `update` (`update`: the agent's session/update as sent), `permission` (`toolCall`, `options`, `outcome` answered, `approved`), `fallback` (`model`: the next attempt's), and last `stop` (`stopReason`), `error` (`code`, `message`) or `cancelled`.",
                "items": {
                    "type": "object",
                    "properties": {"kind": {"type": "string", "enum": ["update", "permission", "fallback", "stop", "error", "cancelled"]}},
                    "required": ["kind"]
                }
            }
        },
        "required": ["success", "SESSION_ID", "agent_messages", "thought", "stop_reason", "tool_calls", "plan", "error"]
    })
}

/// The four tools; `with_output_schema` for clients of 2025-06-18 and later.
pub(crate) fn definitions(with_output_schema: bool, ceiling: ApprovalMode) -> Vec<Tool> {
    let read_only = |title: &str| {
        ToolAnnotations::with_title(title)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    let mut gemini = Tool::new(
        GEMINI,
        "Runs a task with Gemini over ACP (Agent Client Protocol) in a warm agent: the first call in a workspace starts the agent, later calls reuse it and its session (replaced after a number of turns). Returns success, SESSION_ID, agent_messages, thought, stop_reason, tool_calls, plan (empty with Gemini CLI 0.61) and error. Pass SESSION_ID to continue a specific session. No automatic retry; a model fallback only when the operator configured one (GEMINICLI_MCP_FALLBACK_MODELS).",
        args::input_schema::<GeminiArgs>(),
    );
    gemini.annotations = Some(prompt::annotations("Gemini (warm ACP session)", ceiling));
    let mut list_models = Tool::new(
        LIST_MODELS,
        "Lists the models Gemini offers, the current model and the agent's name and version (starts an agent in the server's working directory if none runs).",
        args::input_schema::<NoArgs>(),
    );
    list_models.annotations = Some(read_only("List Gemini models"));
    let mut list_sessions = Tool::new(
        LIST_SESSIONS,
        "Lists the ACP sessions the server holds: workspace, SESSION_ID, turn count, model and approval mode.",
        args::input_schema::<NoArgs>(),
    );
    list_sessions.annotations = Some(read_only("List Gemini sessions"));
    let mut reset_session = Tool::new(
        RESET_SESSION,
        "Forgets the ACP session of a workspace (`cd`/`workspace`), or of every workspace when none is given: the next gemini call there starts a fresh session.",
        args::input_schema::<ResetArgs>(),
    );
    reset_session.annotations = Some(
        ToolAnnotations::with_title("Reset Gemini sessions")
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(false),
    );
    if with_output_schema {
        gemini.output_schema = Some(object(gemini_output_schema()));
    }
    vec![gemini, list_models, list_sessions, reset_session]
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

/// Runs one call of this tool set.
pub(crate) async fn call(
    env: Env<'_>,
    name: &str,
    arguments: Option<&JsonObject>,
) -> CallToolResult {
    let pool = env.runner.pool();
    match name {
        GEMINI => gemini(&env, arguments).await,
        LIST_SESSIONS => env.render.value(json!({"sessions": pool.sessions()})),
        RESET_SESSION => {
            let reset = async {
                let a: ResetArgs = args::decode(arguments)?;
                let raw = workspace_arg(a.cd, a.workspace)?;
                let cwd = match &raw {
                    Some(raw) => Some(env.roots.workspace("cd", Some(raw)).await?),
                    None => None,
                };
                Ok::<_, Failure>(pool.reset(cwd.as_ref()))
            };
            match reset.await {
                Ok(dropped) => env.render.value(json!({"reset": dropped
                    .iter()
                    .map(|(w, s)| json!({"workspace": w.display().to_string(), "session_id": s}))
                    .collect::<Vec<_>>()})),
                Err(f) => env.render.failure(&f),
            }
        }
        LIST_MODELS => match pool
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
        _ => env
            .render
            .failure(&Failure::invalid_input(format!("unknown tool {name}"))),
    }
}

/// A decoded `gemini` call: the agent's call, and what its result echoes.
struct Decoded {
    call: PromptCall,
    task_note: Option<String>,
    debug: bool,
    full_output: bool,
    save: Option<crate::save::SaveTarget>,
}

async fn decode(env: &Env<'_>, arguments: Option<&JsonObject>) -> Result<Decoded, Failure> {
    let a: GeminiArgs = args::decode(arguments)?;
    if a.prompt.trim().is_empty() {
        return Err(Failure::invalid_input(
            "`prompt` must be a non-empty string",
        ));
    }
    let model = given(a.model);
    if let Some(m) = &model {
        command::validate_model(m)?;
    }
    let prompt::Approval { mode, ask } =
        prompt::approval(env.policy, a.approval_mode, a.permission)?;
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
    let image = match given(a.image_path) {
        None => None,
        Some(raw) => Some(image(env.roots, &raw, &cwd).await?),
    };
    let session_id = given(a.session_id_upper).or(given(a.session_id));
    if let Some(id) = &session_id {
        session::validate_session_id(id)?;
    }
    let save = match given(a.save_file) {
        None => None,
        Some(raw) => Some(env.roots.check_save(&raw, &cwd).await?),
    };
    Ok(Decoded {
        call: PromptCall {
            prompt: a.prompt,
            context: a.context,
            model,
            mode,
            image,
            session_id,
            cwd,
            servers,
            dirs: Vec::new(),
            asking: ask.then(|| crate::ask::Asking {
                asker: env.asker.clone(),
                ceiling: env.policy.approval_ceiling,
            }),
            limits: env.policy.deadlines,
        },
        task_note: prompt::task_note(a.task_note)?,
        debug: a.debug.unwrap_or(false),
        full_output: a.full_output.unwrap_or(false),
        save,
    })
}

/// `image_path` checked: a supported image inside the roots, with its MIME type.
async fn image(
    roots: &Roots<'_>,
    raw: &str,
    cwd: &std::path::Path,
) -> Result<(String, PathBuf), Failure> {
    let path = roots.image("image_path", raw, cwd).await?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mime = match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg".to_string(),
        other => format!("image/{other}"),
    };
    Ok((mime, path))
}

async fn gemini(env: &Env<'_>, arguments: Option<&JsonObject>) -> CallToolResult {
    let d = match decode(env, arguments).await {
        Ok(d) => d,
        Err(f) => return env.render.agent_failure(&f, &Map::new()),
    };
    tracing::debug!(
        tool = GEMINI,
        prompt_bytes = d.call.prompt.len(),
        mode = d.call.mode.as_str(),
        cwd = %d.call.cwd.display(),
        "ACP call"
    );
    let mut extra = Map::new();
    if let Some(note) = &d.task_note {
        extra.insert("task_note".into(), json!(note));
    }
    let progress = Progress::new(env.sink.clone(), Style::Events, None);
    let mut events = Vec::new();
    let transcript = d.full_output.then_some(&mut events);
    let answer = env
        .runner
        .agent(d.call, env.ct.clone(), progress, transcript)
        .await;
    if d.full_output {
        extra.insert("events".into(), Value::Array(events));
    }
    let answer = match answer {
        Ok(a) => a,
        Err(f) => return env.render.agent_failure(&f, &extra),
    };
    let mut v = serde_json::json!({
        "success": true,
        "SESSION_ID": answer.session_id,
        "agent_messages": answer.messages,
        "thought": answer.thought,
        "stop_reason": answer.stop_reason,
        "tool_calls": answer.tool_calls,
        "plan": answer.plan,
        "error": null,
        "model": answer.model,
    });
    for (k, val) in extra {
        v[k] = val;
    }
    if !answer.fallbacks.is_empty() {
        v["fallback_models"] = json!(answer.fallbacks);
    }
    if d.debug {
        v["debug"] = json!({"agentPid": answer.pid, "durationMs": answer.duration_ms});
    }
    if let Some(path) = d.save {
        v["saved_file"] = match crate::save::save_answer(&path, &answer.messages) {
            Ok(p) => json!(p.display().to_string()),
            Err(e) => json!({"error": e}),
        };
    }
    match v {
        Value::Object(map) => env.render.agent_answer(map),
        other => env.render.value(other),
    }
}
