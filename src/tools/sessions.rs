//! The `sessions` tool set: `gemini_list_sessions` and `gemini_delete_session`, the CLI's
//! `--list-sessions` and `--delete-session` run in a workspace and their output read; and the
//! `models` tool set's `gemini_list_models`.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args::{self, given};
pub(crate) use super::decl::Extra;
use super::decl::{Decl, Listing, Route, Set};
use crate::error::{tail_lossy, ErrorKind, Failure, STDERR_TAIL_BYTES};
use crate::gemini::inputs::flag;
use crate::gemini::session::{self, ListedSession};
use crate::roots::Roots;
use crate::run::Runner;

/// `gemini_list_sessions`.
pub(crate) const GEMINI_LIST_SESSIONS: &str = "gemini_list_sessions";
/// `gemini_delete_session`.
pub(crate) const GEMINI_DELETE_SESSION: &str = "gemini_delete_session";
/// `gemini_list_models`.
pub(crate) const GEMINI_LIST_MODELS: &str = "gemini_list_models";

/// Arguments of `gemini_list_sessions`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ListArgs {
    /// The project directory (default: the server's working directory); under the allowed roots.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// Arguments of `gemini_delete_session`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct DeleteArgs {
    /// The project directory (default: the server's working directory); under the allowed roots.
    #[serde(default)]
    pub workspace: Option<String>,
    /// The session's UUID.
    pub session_id: String,
}

/// `gemini_list_sessions`, in the `sessions` set.
pub(crate) const LIST_SESSIONS: Decl =
    Extra::ListSessions.decl(|l| definition(Extra::ListSessions, l));
/// `gemini_delete_session`, in the `sessions` set.
pub(crate) const DELETE_SESSION: Decl =
    Extra::DeleteSession.decl(|l| definition(Extra::DeleteSession, l));
/// `gemini_list_models`, in the `models` set.
pub(crate) const LIST_MODELS: Decl = Extra::ListModels.decl(|l| definition(Extra::ListModels, l));

impl Extra {
    /// The tool's declaration: its set, answering at once, defined by `define`.
    const fn decl(self, define: fn(&Listing) -> Tool) -> Decl {
        let (name, set) = match self {
            Extra::ListSessions => (GEMINI_LIST_SESSIONS, Set::Sessions),
            Extra::DeleteSession => (GEMINI_DELETE_SESSION, Set::Sessions),
            Extra::ListModels => (GEMINI_LIST_MODELS, Set::Models),
        };
        Decl {
            name,
            set,
            runs_long: false,
            route: Route::Extra(self),
            define,
        }
    }
}

/// A call of one of the opt-in tools, its arguments decoded.
#[derive(Debug, Clone)]
pub(crate) enum ExtraCall {
    /// `gemini_list_sessions`.
    ListSessions(ListArgs),
    /// `gemini_delete_session`.
    DeleteSession(DeleteArgs),
    /// `gemini_list_models` (it takes no arguments, and reads none).
    ListModels,
}

/// Decodes a call's arguments.
pub(crate) fn decode(tool: Extra, arguments: Option<&JsonObject>) -> Result<ExtraCall, Failure> {
    Ok(match tool {
        Extra::ListSessions => ExtraCall::ListSessions(args::decode(arguments)?),
        Extra::DeleteSession => ExtraCall::DeleteSession(args::decode(arguments)?),
        Extra::ListModels => ExtraCall::ListModels,
    })
}

/// Runs one of the opt-in tools.
pub(crate) async fn call(
    call: ExtraCall,
    roots: &Roots<'_>,
    runner: &Runner,
    ct: tokio_util::sync::CancellationToken,
) -> Result<CallToolResult, Failure> {
    let (workspace, id) = match call {
        ExtraCall::ListModels => return Ok(list_models()),
        ExtraCall::ListSessions(a) => (given(a.workspace), None),
        ExtraCall::DeleteSession(a) => {
            session::validate_session_id(&a.session_id)?;
            (given(a.workspace), Some(a.session_id))
        }
    };
    let cwd = roots.workspace("workspace", workspace.as_deref()).await?;
    let out = runner
        .cli(&cwd, vec![cli_arg(id.as_deref()).into()], ct)
        .await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let exit = out.status.map_or(1, |t| t.code());
    match id {
        Some(id) => {
            let result = deleted(&cwd, &id, &stdout, &stderr, exit);
            if result.is_ok() {
                // The agents hold their sessions in memory: a deleted one must not answer again.
                runner.pool().forget(&cwd, &id);
            }
            result
        }
        None if exit == 0 => Ok(listed(&cwd, &stdout)),
        None => {
            let line = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("gemini --list-sessions failed")
                .trim()
                .to_string();
            Err(
                Failure::with_exit(ErrorKind::from_exit_code(exit), exit, line).with_run(
                    crate::error::RunFacts {
                        stderr_tail: tail_lossy(&out.stderr, STDERR_TAIL_BYTES),
                        ..Default::default()
                    },
                ),
            )
        }
    }
}

fn object(v: Value) -> std::sync::Arc<JsonObject> {
    match v {
        Value::Object(m) => std::sync::Arc::new(m),
        _ => unreachable!("a json! object literal"),
    }
}

const LIST_SESSIONS_DESCRIPTION: &str = "List the Gemini CLI's saved sessions (conversations) of a workspace, newest last: id (pass it as `session_id` to the prompt tools), title and age. \
Costs an API request and a few seconds: the CLI asks the model to title untitled sessions before listing, and writes that title into the session. \
Runs serialised with the other calls in that workspace.";
const DELETE_SESSION_DESCRIPTION: &str = "Delete one of the Gemini CLI's saved sessions of a workspace by its id (a UUID from gemini_list_sessions or an answer's sessionId). Irreversible.";
const LIST_MODELS_DESCRIPTION: &str = "The Gemini models and aliases the installed Gemini CLI knows, the default, and where the list comes from.";

/// The tool's definition; its output schema and title for clients of 2025-06-18 and later.
fn definition(tool: Extra, listing: &Listing) -> Tool {
    let (tool, title, out) = match tool {
        Extra::ListSessions => (
            Tool::new(
                GEMINI_LIST_SESSIONS,
                LIST_SESSIONS_DESCRIPTION,
                args::input_schema::<ListArgs>(),
            )
            .annotate(
                ToolAnnotations::with_title("List Gemini sessions")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(true),
            ),
            "List Gemini sessions",
            json!({"type": "object", "properties": {"workspace": {"type": "string"}, "sessions": {"type": "array", "items": {"type": "object", "properties": {"sessionId": {"type": "string"}, "title": {"type": "string"}, "age": {"type": "string"}, "current": {"type": "boolean"}}, "required": ["sessionId", "title", "age", "current"]}}}, "required": ["workspace", "sessions"]}),
        ),
        Extra::DeleteSession => (
            Tool::new(
                GEMINI_DELETE_SESSION,
                DELETE_SESSION_DESCRIPTION,
                args::input_schema::<DeleteArgs>(),
            )
            .annotate(
                ToolAnnotations::with_title("Delete a Gemini session")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(true)
                    .open_world(false),
            ),
            "Delete a Gemini session",
            json!({"type": "object", "properties": {"workspace": {"type": "string"}, "sessionId": {"type": "string"}, "deleted": {"type": "string"}}}),
        ),
        Extra::ListModels => (
            Tool::new(
                GEMINI_LIST_MODELS,
                LIST_MODELS_DESCRIPTION,
                object(json!({"type": "object", "properties": {}})),
            )
            .annotate(
                ToolAnnotations::with_title("List Gemini models")
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            ),
            "List Gemini models",
            json!({"type": "object", "properties": {"models": {"type": "array"}, "aliases": {"type": "object"}, "default": {"type": "string"}, "source": {"type": "string"}}, "required": ["models", "aliases", "default", "source"]}),
        ),
    };
    if listing.with_output_schema {
        tool.with_title(title).with_raw_output_schema(object(out))
    } else {
        tool
    }
}

/// The Gemini CLI 0.61 model table (its `models.ts`, reference §7): until the ACP backend can ask
/// the CLI for `availableModels`, this is the list.
pub(crate) fn list_models() -> CallToolResult {
    let models = json!([
        {"id": "auto", "description": "Let the CLI route each request (router on gemini-3.5-flash-lite; main turn on gemini-3.8-flash or gemini-3.1-pro-preview)"},
        {"id": "auto-gemini-3", "description": "Routing among Gemini 3 models"},
        {"id": "auto-gemini-2.5", "description": "Routing among Gemini 2.5 models"},
        {"id": "gemini-3-pro-preview"},
        {"id": "gemini-3.1-pro-preview"},
        {"id": "gemini-3.1-pro-preview-customtools"},
        {"id": "gemini-3-flash-preview"},
        {"id": "gemini-2.5-pro"},
        {"id": "gemini-3.5-flash"},
        {"id": "gemini-3.8-flash"},
        {"id": "gemini-3-flash"},
        {"id": "gemini-3.1-flash-lite"},
        {"id": "gemini-3.5-flash-lite"},
        {"id": "gemma-4-31b-it"},
        {"id": "gemma-4-26b-a4b-it"},
    ]);
    let aliases = json!({
        "pro": "gemini-3.1-pro-preview",
        "flash": "gemini-3.8-flash",
        "flash-lite": "gemini-3.5-flash-lite",
    });
    let structured = json!({
        "models": models,
        "aliases": aliases,
        "default": "auto",
        "source": "built-in table for Gemini CLI 0.61 (models.ts); an unknown name is passed to the API verbatim and fails as model_not_found",
    });
    let ids: Vec<&str> = structured["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str())
        .collect();
    let text = format!(
        "default: auto\nmodels: {}\naliases: pro → gemini-3.1-pro-preview, flash → gemini-3.8-flash, flash-lite → gemini-3.5-flash-lite\nsource: built-in table for Gemini CLI 0.61",
        ids.join(", ")
    );
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// The one argument of a session tool's run: `--delete-session=<id>`, else `--list-sessions`.
pub(crate) fn cli_arg(delete: Option<&str>) -> String {
    match delete {
        Some(id) => format!("{}={id}", flag::DELETE_SESSION),
        None => flag::LIST_SESSIONS.to_string(),
    }
}

/// The result of `--list-sessions` (exit 0, stdout only).
pub(crate) fn listed(workspace: &std::path::Path, stdout: &str) -> CallToolResult {
    let sessions: Vec<ListedSession> = session::parse_listing(stdout);
    let text = if sessions.is_empty() {
        "No sessions in this workspace.".to_string()
    } else {
        sessions
            .iter()
            .map(|s| format!("{} ({}) [{}]", s.title, s.age, s.session_id))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "workspace": workspace.display().to_string(),
        "sessions": sessions,
    }));
    result
}

/// The result of `--delete-session=<id>`, which exits 0 even when it fails: the message decides
/// (`Deleted session N: …` on stdout; `Invalid session identifier …` or `No sessions found for
/// this project.` on stderr).
pub(crate) fn deleted(
    workspace: &std::path::Path,
    id: &str,
    stdout: &str,
    stderr: &str,
    exit: i32,
) -> Result<CallToolResult, Failure> {
    if let Some(line) = stdout.lines().find(|l| l.starts_with("Deleted session ")) {
        // The index in the message is meaningless to a caller: it shifts.
        let what = line
            .split_once(": ")
            .map_or(line, |(_, rest)| rest)
            .to_string();
        let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
            "Deleted session {id}: {what}"
        ))]);
        result.structured_content = Some(json!({
            "workspace": workspace.display().to_string(),
            "sessionId": id,
            "deleted": what,
        }));
        return Ok(result);
    }
    let message = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("the CLI deleted nothing and said nothing")
        .to_string();
    let kind = if message.contains("Invalid session identifier")
        || message.contains("No sessions found")
    {
        ErrorKind::SessionNotFound
    } else {
        ErrorKind::from_exit_code(exit)
    };
    let code = if kind == ErrorKind::SessionNotFound {
        kind.exit_code()
    } else {
        exit
    };
    Err(
        Failure::with_exit(kind, code, message).with_run(crate::error::RunFacts {
            stderr_tail: stderr.to_string(),
            ..Default::default()
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_is_destructive_and_titled_for_new_clients_only() {
        let new = Listing {
            with_output_schema: true,
            ceiling: crate::approval::ApprovalMode::Yolo,
        };
        let delete = (DELETE_SESSION.define)(&new);
        assert_eq!(delete.name, GEMINI_DELETE_SESSION);
        assert_eq!(
            delete.annotations.as_ref().unwrap().destructive_hint,
            Some(true)
        );
        assert!(delete.output_schema.is_some() && delete.title.is_some());
        let old = Listing {
            with_output_schema: false,
            ..new
        };
        let delete = (DELETE_SESSION.define)(&old);
        assert!(delete.output_schema.is_none() && delete.title.is_none());
    }

    #[test]
    fn delete_reads_the_message_not_the_exit_code() {
        let ws = std::path::Path::new("/w");
        let ok = deleted(ws, "id", "Deleted session 2: hello (Just now)", "", 0).unwrap();
        assert_eq!(
            ok.structured_content.unwrap()["deleted"],
            "hello (Just now)"
        );
        let f = deleted(
            ws,
            "id",
            "",
            "Invalid session identifier \"id\". Use --list-sessions to see available sessions.",
            0,
        )
        .unwrap_err();
        assert_eq!((f.kind, f.exit_code), (ErrorKind::SessionNotFound, 42));
        let f = deleted(ws, "id", "", "No sessions found for this project.", 0).unwrap_err();
        assert_eq!(f.kind, ErrorKind::SessionNotFound);
    }
}
