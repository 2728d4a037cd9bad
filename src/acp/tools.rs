//! The agent tool set: `gemini` (gemini_mcp's contract, warm over ACP), `list_models`,
//! `list_sessions` and `reset_session` — definitions, argument decoding and result rendering.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::pool::{Pool, Progress, PromptCall};
use crate::config::Config;
use crate::error::Failure;
use crate::policy::{self, ApprovalMode};

/// `gemini`.
pub const GEMINI: &str = "gemini";
/// `list_models`.
pub const LIST_MODELS: &str = "list_models";
/// `list_sessions`.
pub const LIST_SESSIONS: &str = "list_sessions";
/// `reset_session`.
pub const RESET_SESSION: &str = "reset_session";

/// Whether `name` is one of this tool set's tools.
pub fn is_acp_tool(name: &str) -> bool {
    matches!(name, GEMINI | LIST_MODELS | LIST_SESSIONS | RESET_SESSION)
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The four tools; `with_output_schema` for clients of 2025-06-18 and later.
pub fn definitions(with_output_schema: bool, ceiling: ApprovalMode) -> Vec<Tool> {
    let gemini_input = json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task or question for Gemini."},
            "cd": {"type": "string", "description": "Workspace directory (default: the server's working directory); under GEMINICLI_MCP_ALLOWED_ROOTS and the client's roots. One warm agent and session per workspace."},
            "workspace": {"type": "string", "description": "Alias of `cd`."},
            "model": {"type": "string", "description": "Model for the session, e.g. gemini-3.1-pro-preview or gemini-3-flash-preview (see list_models)."},
            "approval_mode": {"type": "string", "enum": ["plan", "default", "auto_edit", "yolo"], "description": "Which of Gemini's tool calls are approved: plan and default approve no change, auto_edit approves edits, yolo everything. Default and ceiling: GEMINICLI_MCP_APPROVAL_MODE."},
            "permission": {"type": "string", "enum": ["read-only", "workspace-write", "unlimited"], "description": "cli-agent-mcp's names: read-only (plan), workspace-write (auto_edit), unlimited (yolo). Not together with approval_mode."},
            "image_path": {"type": "string", "description": "An image file (png, jpg/jpeg, gif, webp, heic, heif) inside the workspace, sent as an image block."},
            "context": {"type": "string", "description": "Text sent with the prompt as an embedded resource."},
            "allowed_mcp_servers": {"type": "array", "items": {"type": "string"}, "description": "Only these of Gemini's configured MCP servers are loaded (the agent is started with this filter)."},
            "SESSION_ID": {"type": "string", "description": "Continue this ACP session (from an earlier answer); default: the workspace's current session."},
            "session_id": {"type": "string", "description": "Alias of SESSION_ID."},
            "task_note": {"type": "string", "description": "A note of yours, echoed in the result and in progress messages."},
            "debug": {"type": "boolean", "description": "Add the agent's pid and the duration to the result."},
            "full_output": {"type": "boolean", "description": "Add `events`, the turn's whole ACP transcript in order: message and thought chunks, tool calls and their updates, permission requests with the answer given, and how the turn ended (stop reason or error)."},
            "save_file": {"type": "string", "description": "Also write the answer to this file (under the allowed roots; relative to the workspace)."}
        },
        "required": ["prompt"]
    });
    let gemini_output = json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "SESSION_ID": {"type": ["string", "null"]},
            "agent_messages": {"type": "string"},
            "thought": {"type": "string"},
            "stop_reason": {"type": ["string", "null"]},
            "tool_calls": {"type": "array", "items": {"type": "object"}},
            "plan": {"type": "array", "items": {"type": "object"}},
            "error": {"type": ["string", "null"]},
            "errorKind": {"type": "string"},
            "model": {"type": "string", "description": "The session's model that answered."},
            "fallback_models": {"type": "array", "items": {"type": "string"}, "description": "Models tried after quota_exhausted (GEMINICLI_MCP_FALLBACK_MODELS); the last one answered."},
            "task_note": {"type": "string"},
            "debug": {"type": "object"},
            "saved_file": {"description": "Where the answer was written (save_file), or {error}."},
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
    });
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
        object(gemini_input),
    );
    gemini.annotations = Some(crate::tools::annotations_for(
        "Gemini (warm ACP session)",
        ceiling,
    ));
    let mut list_models = Tool::new(
        LIST_MODELS,
        "Lists the models Gemini offers, the current model and the agent's name and version (starts an agent in the server's working directory if none runs).",
        object(json!({"type": "object", "properties": {}})),
    );
    list_models.annotations = Some(read_only("List Gemini models"));
    let mut list_sessions = Tool::new(
        LIST_SESSIONS,
        "Lists the ACP sessions the server holds: workspace, SESSION_ID, turn count, model and approval mode.",
        object(json!({"type": "object", "properties": {}})),
    );
    list_sessions.annotations = Some(read_only("List Gemini sessions"));
    let mut reset_session = Tool::new(
        RESET_SESSION,
        "Forgets the ACP session of a workspace (`cd`/`workspace`), or of every workspace when none is given: the next gemini call there starts a fresh session.",
        object(json!({"type": "object", "properties": {
            "cd": {"type": "string", "description": "The workspace whose session is reset; omit for all."},
            "workspace": {"type": "string", "description": "Alias of `cd`."}
        }})),
    );
    reset_session.annotations = Some(
        ToolAnnotations::with_title("Reset Gemini sessions")
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(false),
    );
    if with_output_schema {
        gemini.output_schema = Some(object(gemini_output));
    }
    vec![gemini, list_models, list_sessions, reset_session]
}

/// What a call needs from the server.
pub struct Env<'a> {
    /// The server's configuration.
    pub config: &'a Config,
    /// The server's working directory.
    pub cwd: &'a Path,
    /// The agents.
    pub pool: &'a Arc<Pool>,
    /// The client (asked for its MCP roots when a path is given).
    pub peer: Peer<RoleServer>,
    /// The request's progress token, if any.
    pub progress: Option<rmcp::model::ProgressToken>,
    /// The client's MCP roots, asked for once per call (see [`Env::limits`]).
    pub client_roots: tokio::sync::OnceCell<Option<Vec<PathBuf>>>,
}

impl Env<'_> {
    /// The roots a path argument must lie under: the operator's, and the client's MCP roots when
    /// it advertises them (asked for on the first path argument of the call only).
    async fn limits(&self) -> Result<(Vec<PathBuf>, Option<&[PathBuf]>), Failure> {
        let client = self
            .client_roots
            .get_or_try_init(|| crate::server::client_roots(Some(&self.peer)))
            .await?;
        Ok((self.config.policy.roots(self.cwd), client.as_deref()))
    }
}

/// Runs one call of this tool set.
pub async fn call(
    env: Env<'_>,
    name: &str,
    args: Option<&JsonObject>,
    ct: CancellationToken,
) -> CallToolResult {
    let empty = Map::new();
    let args = args.unwrap_or(&empty);
    match name {
        GEMINI => match gemini(&env, args, ct).await {
            Ok(r) => r,
            Err((f, extra)) => render_failure(f, extra),
        },
        LIST_SESSIONS => {
            let sessions = env.pool.sessions();
            render(json!({"sessions": sessions}))
        }
        RESET_SESSION => match workspace(&env, args).await {
            Ok(cwd) => {
                let given = args.contains_key("cd") || args.contains_key("workspace");
                let dropped = env.pool.reset(cwd.as_ref().filter(|_| given));
                render(
                    json!({"reset": dropped.iter().map(|(w, s)| json!({"workspace": w.display().to_string(), "session_id": s})).collect::<Vec<_>>()}),
                )
            }
            Err(f) => f.into_call_tool_result(),
        },
        LIST_MODELS => match env.pool.probe(env.cwd.to_path_buf(), ct).await {
            Ok((models, info)) => render(json!({
                "models": models["availableModels"],
                "current_model": models["currentModelId"],
                "agent": info,
            })),
            Err(f) => f.into_call_tool_result(),
        },
        _ => Failure::invalid_input(format!("unknown tool {name}")).into_call_tool_result(),
    }
}

fn render(v: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(
        serde_json::to_string_pretty(&v).unwrap_or_default(),
    )]);
    r.structured_content = Some(v);
    r
}

fn render_failure(f: Failure, extra: Map<String, Value>) -> CallToolResult {
    let mut v = json!({
        "success": false,
        "SESSION_ID": f.session_id,
        "agent_messages": f.partial_response.clone().unwrap_or_default(),
        "thought": "",
        "stop_reason": null,
        "tool_calls": [],
        "plan": [],
        "error": f.message,
        "errorKind": f.kind.as_str(),
        "exitCode": f.exit_code,
    });
    for (k, val) in extra {
        v[k] = val;
    }
    let mut r = CallToolResult::error(vec![ContentBlock::text(f.text())]);
    r.structured_content = Some(v);
    r
}

fn flag(args: &JsonObject, key: &str) -> Result<bool, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Failure::invalid_input(format!("`{key}` must be a boolean"))),
    }
}

fn string(args: &JsonObject, key: &str) -> Result<Option<String>, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Failure::invalid_input(format!("`{key}` must be a string"))),
    }
}

/// `cd` / `workspace` checked against the roots (`None`: the server's directory).
async fn workspace(env: &Env<'_>, args: &JsonObject) -> Result<Option<PathBuf>, Failure> {
    let raw = match (string(args, "cd")?, string(args, "workspace")?) {
        (Some(_), Some(_)) => {
            return Err(Failure::invalid_input(
                "`cd` and `workspace` are the same argument: give one",
            ))
        }
        (a, b) => a.or(b),
    };
    let Some(raw) = raw else {
        return Ok(Some(env.cwd.to_path_buf()));
    };
    let (roots, client_roots) = env.limits().await?;
    policy::check_path(
        "cd",
        &raw,
        env.cwd,
        policy::Expect::Dir,
        &roots,
        client_roots,
    )
    .map(Some)
}

type CallError = (Failure, Map<String, Value>);

async fn gemini(
    env: &Env<'_>,
    args: &JsonObject,
    ct: CancellationToken,
) -> Result<CallToolResult, CallError> {
    let plain = |f: Failure| (f, Map::new());
    let prompt = string(args, "prompt")
        .map_err(plain)?
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| {
            plain(Failure::invalid_input(
                "`prompt` must be a non-empty string",
            ))
        })?;
    let model = string(args, "model")
        .map_err(plain)?
        .filter(|m| !m.is_empty());
    if let Some(m) = &model {
        crate::gemini::command::validate_model(m).map_err(plain)?;
    }
    let asked = match (
        string(args, "approval_mode").map_err(plain)?,
        string(args, "permission").map_err(plain)?,
    ) {
        (Some(_), Some(_)) => {
            return Err(plain(Failure::invalid_input(
                "give `approval_mode` or `permission`, not both",
            )))
        }
        (Some(m), None) => Some((
            ApprovalMode::parse(&m).ok_or_else(|| {
                plain(Failure::invalid_input(format!(
                    "approval_mode must be plan, default, auto_edit or yolo (got {m:?})"
                )))
            })?,
            "approval_mode",
        )),
        (None, Some(p)) => Some((
            ApprovalMode::from_permission(&p).ok_or_else(|| {
                plain(Failure::invalid_input(format!(
                    "permission must be read-only, workspace-write or unlimited (got {p:?})"
                )))
            })?,
            "permission",
        )),
        (None, None) => None,
    };
    let mode = env
        .config
        .policy
        .approval(asked.map(|a| a.0), asked.map_or("approval_mode", |a| a.1))
        .map_err(plain)?;
    let cwd = workspace(env, args)
        .await
        .map_err(plain)?
        .unwrap_or_else(|| env.cwd.to_path_buf());
    let servers = match args.get("allowed_mcp_servers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut names = Vec::new();
            for item in items {
                let name = item.as_str().ok_or_else(|| {
                    plain(Failure::invalid_input(
                        "`allowed_mcp_servers` must be an array of strings",
                    ))
                })?;
                crate::gemini::command::validate_server_name(name).map_err(plain)?;
                names.push(name.to_string());
            }
            names.sort();
            names.dedup();
            names
        }
        Some(_) => {
            return Err(plain(Failure::invalid_input(
                "`allowed_mcp_servers` must be an array of strings",
            )))
        }
    };
    let image = match string(args, "image_path").map_err(plain)? {
        None => None,
        Some(raw) => {
            let (roots, client_roots) = env.limits().await.map_err(plain)?;
            let path = policy::check_path(
                "image_path",
                &raw,
                &cwd,
                policy::Expect::File,
                &roots,
                client_roots,
            )
            .map_err(plain)?;
            if !policy::is_supported_image(&path) {
                return Err(plain(Failure::invalid_input(format!(
                    "image_path {raw:?}: not an image type Gemini reads (png, jpg, jpeg, gif, webp, heic, heif)"
                ))));
            }
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default()
                .to_ascii_lowercase();
            let mime = match ext.as_str() {
                "jpg" | "jpeg" => "image/jpeg".to_string(),
                other => format!("image/{other}"),
            };
            Some((mime, path))
        }
    };
    let session_id = match (
        string(args, "SESSION_ID").map_err(plain)?,
        string(args, "session_id").map_err(plain)?,
    ) {
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
    .filter(|s| !s.is_empty());
    if let Some(id) = &session_id {
        crate::gemini::session::validate_session_id(id).map_err(plain)?;
    }
    let task_note = string(args, "task_note").map_err(plain)?;
    let debug = flag(args, "debug").map_err(plain)?;
    let full_output = flag(args, "full_output").map_err(plain)?;
    let save = match string(args, "save_file").map_err(plain)? {
        None => None,
        Some(raw) => {
            let (roots, client_roots) = env.limits().await.map_err(plain)?;
            Some(policy::check_save_path(&raw, &cwd, &roots, client_roots).map_err(plain)?)
        }
    };
    let mut extra = Map::new();
    if let Some(note) = &task_note {
        extra.insert("task_note".into(), json!(note));
    }
    let call = PromptCall {
        prompt,
        context: string(args, "context").map_err(plain)?,
        model,
        mode,
        image,
        session_id,
        cwd,
        servers,
    };
    tracing::debug!(
        tool = GEMINI,
        prompt_bytes = call.prompt.len(),
        mode = mode.as_str(),
        cwd = %call.cwd.display(),
        "ACP call"
    );
    let progress = env.progress.clone().map(|token| Progress {
        peer: env.peer.clone(),
        token,
    });
    let mut events = Vec::new();
    let transcript = full_output.then_some(&mut events);
    let answer = env.pool.prompt(call, ct, progress, transcript).await;
    if full_output {
        extra.insert("events".into(), Value::Array(events));
    }
    let answer = answer.map_err(|f| (f, extra.clone()))?;
    let mut v = json!({
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
    if debug {
        v["debug"] = json!({"agentPid": answer.pid, "durationMs": answer.duration_ms});
    }
    if let Some(path) = save {
        v["saved_file"] = match crate::server::save_answer(&path, &answer.messages) {
            Ok(p) => json!(p.display().to_string()),
            Err(e) => json!({"error": e}),
        };
    }
    Ok(render(v))
}
