//! The opt-in tool sets beyond the reference's three tools (`GEMINICLI_MCP_TOOLSETS`): `sessions`
//! (`gemini_list_sessions`, `gemini_delete_session`) and `models` (`gemini_list_models`). Their
//! definitions, argument decoding, and the reading of the CLI's `--list-sessions` and
//! `--delete-session` output; the server runs the CLI.

use std::ffi::OsString;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

use crate::error::{ErrorKind, Failure};
use crate::gemini::session::{self, ListedSession};

/// `gemini_list_sessions`.
pub const GEMINI_LIST_SESSIONS: &str = "gemini_list_sessions";
/// `gemini_delete_session`.
pub const GEMINI_DELETE_SESSION: &str = "gemini_delete_session";
/// `gemini_list_models`.
pub const GEMINI_LIST_MODELS: &str = "gemini_list_models";

/// Which opt-in tool sets are listed and callable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Toolsets {
    /// `sessions`: list and delete the CLI's sessions.
    pub sessions: bool,
    /// `models`: the models the CLI knows.
    pub models: bool,
}

impl Toolsets {
    /// Parses `GEMINICLI_MCP_TOOLSETS`: comma-separated `sessions`, `models`, or `all` (any case,
    /// spaces ignored; `acp`/`agent` belong to the ACP tool set). Unknown names are returned.
    pub fn parse(value: &str) -> (Toolsets, Vec<String>) {
        let mut t = Toolsets::default();
        let mut unknown = Vec::new();
        for name in value.split(',').map(|n| n.trim().to_ascii_lowercase()) {
            match name.as_str() {
                "" => {}
                "sessions" => t.sessions = true,
                "models" => t.models = true,
                "all" => {
                    t.sessions = true;
                    t.models = true;
                }
                // The ACP tool set is read by `acp`.
                "acp" | "agent" => {}
                _ => unknown.push(name),
            }
        }
        (t, unknown)
    }

    /// Reads the variable through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Toolsets {
        let Some(value) = lookup("GEMINICLI_MCP_TOOLSETS").and_then(|v| v.into_string().ok())
        else {
            return Toolsets::default();
        };
        let (t, unknown) = Toolsets::parse(&value);
        if !unknown.is_empty() {
            tracing::warn!(
                ?unknown,
                "GEMINICLI_MCP_TOOLSETS: unknown tool sets ignored (known: sessions, models, all)"
            );
        }
        t
    }
}

/// One of the opt-in tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraTool {
    /// `gemini_list_sessions`.
    ListSessions,
    /// `gemini_delete_session`.
    DeleteSession,
    /// `gemini_list_models`.
    ListModels,
}

impl ExtraTool {
    /// The tool named `name`, when its set is enabled.
    pub fn from_name(name: &str, enabled: Toolsets) -> Option<ExtraTool> {
        match name {
            GEMINI_LIST_SESSIONS if enabled.sessions => Some(ExtraTool::ListSessions),
            GEMINI_DELETE_SESSION if enabled.sessions => Some(ExtraTool::DeleteSession),
            GEMINI_LIST_MODELS if enabled.models => Some(ExtraTool::ListModels),
            _ => None,
        }
    }
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("a json! object literal"),
    }
}

const LIST_SESSIONS_DESCRIPTION: &str = "List the Gemini CLI's saved sessions (conversations) of a workspace, newest last: id (pass it as `session_id` to the prompt tools), title and age. \
Costs an API request and a few seconds: the CLI asks the model to title untitled sessions before listing, and writes that title into the session. \
Runs serialised with the other calls in that workspace.";
const DELETE_SESSION_DESCRIPTION: &str = "Delete one of the Gemini CLI's saved sessions of a workspace by its id (a UUID from gemini_list_sessions or an answer's sessionId). Irreversible.";
const LIST_MODELS_DESCRIPTION: &str = "The Gemini models and aliases the installed Gemini CLI knows, the default, and where the list comes from.";

/// The definitions of the enabled opt-in tools.
pub fn definitions(enabled: Toolsets, with_output_schema: bool) -> Vec<Tool> {
    let workspace = json!({"type": "string", "description": "The project directory (default: the server's working directory); under the allowed roots."});
    let mut tools = Vec::new();
    if enabled.sessions {
        tools.push((
            Tool::new(
                GEMINI_LIST_SESSIONS,
                LIST_SESSIONS_DESCRIPTION,
                object(json!({"type": "object", "properties": {"workspace": workspace}})),
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
        ));
        tools.push((
            Tool::new(
                GEMINI_DELETE_SESSION,
                DELETE_SESSION_DESCRIPTION,
                object(json!({"type": "object", "properties": {"workspace": workspace, "session_id": {"type": "string", "description": "The session's UUID."}}, "required": ["session_id"]})),
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
        ));
    }
    if enabled.models {
        tools.push((
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
        ));
    }
    tools
        .into_iter()
        .map(|(tool, title, out)| {
            if with_output_schema {
                tool.with_title(title).with_raw_output_schema(object(out))
            } else {
                tool
            }
        })
        .collect()
}

/// The Gemini CLI 0.61 model table (its `models.ts`, reference §7): until the ACP backend can ask
/// the CLI for `availableModels`, this is the list.
pub fn list_models() -> CallToolResult {
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

/// The result of `--list-sessions` (exit 0, stdout only).
pub fn listed(workspace: &std::path::Path, stdout: &str) -> CallToolResult {
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
pub fn deleted(
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
    let mut f = Failure::new(
        kind,
        if kind == ErrorKind::SessionNotFound {
            42
        } else {
            exit
        },
        message,
    );
    f.stderr_tail = stderr.to_string();
    Err(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolsets_parse() {
        assert_eq!(Toolsets::parse("").0, Toolsets::default());
        let (t, unknown) = Toolsets::parse(" Sessions , nope");
        assert!(t.sessions && !t.models);
        assert_eq!(unknown, ["nope"]);
        let (t, _) = Toolsets::parse("all");
        assert!(t.sessions && t.models);
    }

    #[test]
    fn extra_tools_only_when_enabled() {
        let none = Toolsets::default();
        assert!(ExtraTool::from_name(GEMINI_LIST_MODELS, none).is_none());
        assert!(definitions(none, true).is_empty());
        let all = Toolsets::parse("all").0;
        let names: Vec<_> = definitions(all, true)
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(
            names,
            [
                GEMINI_LIST_SESSIONS,
                GEMINI_DELETE_SESSION,
                GEMINI_LIST_MODELS
            ]
        );
        let delete = &definitions(all, true)[1];
        assert_eq!(
            delete.annotations.as_ref().unwrap().destructive_hint,
            Some(true)
        );
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
