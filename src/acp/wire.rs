//! The ACP messages the server reads from an agent, typed: a session's updates and a permission
//! request's tool call and options. Only what the server reads is typed; a kind it does not know
//! (a newer agent's) reads as `Other`, and a transcript keeps the message as it came. The ACP SDK's
//! schema crate has no such fallback for unknown update kinds, content blocks or stop reasons, so
//! an agent one release ahead of it would fail to parse; these types stay small and lenient.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// One `session/update`'s `update`, its text borrowed from the message (a chunk may be many MiB).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub(crate) enum SessionUpdate<'a> {
    /// A piece of the agent's answer.
    AgentMessageChunk {
        /// Its content (text, or a block the server does not read).
        #[serde(borrow)]
        content: ContentBlock<'a>,
    },
    /// A piece of the agent's thinking.
    AgentThoughtChunk {
        /// Its content.
        #[serde(borrow)]
        content: ContentBlock<'a>,
    },
    /// A tool call starts.
    ToolCall(ToolCall),
    /// A tool call's status, output or fields change.
    ToolCallUpdate(ToolCall),
    /// The agent's plan, whole each time.
    Plan {
        /// Its entries, as sent.
        #[serde(default)]
        entries: Vec<Value>,
    },
    /// How much of the model's context window the session uses (ACP's `usage_update`; the CLI
    /// sends it from 0.64, by its release notes).
    UsageUpdate {
        /// Tokens in the context.
        used: u64,
        /// The context window, in tokens.
        size: u64,
    },
    /// Any other kind (the user's own message echoed, mode and command updates, a newer kind).
    #[serde(other)]
    Other,
}

impl<'a> SessionUpdate<'a> {
    /// Reads an update; one whose known kind has fields of the wrong type reads as `Other`, as an
    /// unknown kind does (the transcript keeps it as sent).
    pub(crate) fn read(update: &'a Value) -> SessionUpdate<'a> {
        SessionUpdate::deserialize(update).unwrap_or(SessionUpdate::Other)
    }
}

/// A content block: text is read, every other kind (image, audio, resource) is not.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock<'a> {
    /// Text.
    Text {
        /// The text.
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    /// Any other kind.
    #[serde(other)]
    Other,
}

impl ContentBlock<'_> {
    /// The text, or nothing.
    pub(crate) fn text(&self) -> &str {
        match self {
            ContentBlock::Text { text } => text,
            ContentBlock::Other => "",
        }
    }
}

/// A tool call, as a `tool_call`, a `tool_call_update` or a permission request names it: every
/// field but the id may be absent from an update (it changes only what it names). Read field by
/// field: one of another type is absent and takes nothing else with it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolCall {
    /// The call's id within the session.
    pub tool_call_id: String,
    /// What the agent calls it (`ls -la`, `Write file.txt`).
    pub title: Option<String>,
    /// `read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch`, `other`.
    pub kind: Option<String>,
    /// `pending`, `in_progress`, `completed`, `failed`.
    pub status: Option<String>,
    /// The files it touches that name a path.
    pub locations: Option<Vec<Location>>,
    /// What it produced.
    pub content: Vec<ToolCallContent>,
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ToolCall::read(&Value::deserialize(deserializer)?))
    }
}

impl ToolCall {
    /// Reads a tool call leniently, field by field.
    pub(crate) fn read(value: &Value) -> ToolCall {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let each = |key: &str| value.get(key).and_then(Value::as_array);
        ToolCall {
            tool_call_id: text("toolCallId").unwrap_or_default(),
            title: text("title"),
            kind: text("kind"),
            status: text("status"),
            locations: each("locations").map(|l| {
                l.iter()
                    .filter_map(|l| Location::deserialize(l).ok())
                    .collect()
            }),
            content: each("content")
                .into_iter()
                .flatten()
                .filter_map(ToolCallContent::read)
                .collect(),
        }
    }

    /// The text of its content blocks, concatenated.
    pub(crate) fn output(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content { text } => Some(text.as_str()),
                ToolCallContent::Other => None,
            })
            .collect()
    }
}

/// A file a tool call touches.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub(crate) struct Location {
    /// Its absolute path.
    pub path: String,
    /// A line in it, when the agent names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// A piece of a tool call's output.
#[derive(Debug, Clone)]
pub(crate) enum ToolCallContent {
    /// A content block: its text (none for an image, audio or a resource).
    Content {
        /// The block's text.
        text: String,
    },
    /// A diff or a terminal, which the server does not read.
    Other,
}

impl ToolCallContent {
    /// Reads a piece; one of kind `content` whose block is no object with a `type` is none.
    fn read(piece: &Value) -> Option<ToolCallContent> {
        match piece.get("type").and_then(Value::as_str) {
            Some("content") => {
                let block = ContentBlock::deserialize(piece.get("content")?).ok()?;
                Some(ToolCallContent::Content {
                    text: block.text().to_owned(),
                })
            }
            Some(_) => Some(ToolCallContent::Other),
            None => None,
        }
    }
}

/// One option of a permission request.
#[derive(Debug, Clone)]
pub(crate) struct PermissionOption {
    /// What the answer names.
    pub option_id: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`; an option sent without a
    /// kind, or with one that is not text, has that JSON here (`null`), so that an id offered
    /// both with a kind and without one reads as two kinds (which the server never chooses).
    pub kind: String,
}

impl PermissionOption {
    /// An option with a text id; one without cannot be chosen, nor confused with one that has.
    fn read(option: &Value) -> Option<PermissionOption> {
        Some(PermissionOption {
            option_id: option["optionId"].as_str()?.to_owned(),
            kind: match &option["kind"] {
                Value::String(kind) => kind.clone(),
                other => other.to_string(),
            },
        })
    }
}

/// A `session/request_permission`'s parameters, as far as the server reads them.
#[derive(Debug, Clone, Default)]
pub(crate) struct PermissionRequest {
    /// The tool call it is for.
    pub tool_call: ToolCall,
    /// The answers offered that have a text id.
    pub options: Vec<PermissionOption>,
}

impl PermissionRequest {
    /// Reads the parameters leniently: a tool call that does not parse names nothing, and an
    /// option without a text id is not offered.
    pub(crate) fn read(params: &Value) -> PermissionRequest {
        PermissionRequest {
            tool_call: ToolCall::read(&params["toolCall"]),
            options: params["options"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(PermissionOption::read)
                .collect(),
        }
    }
}

/// The parts of a `session/new` or `session/load` result the server reads (`models` is kept as
/// sent for `list_models`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionResult {
    /// The new session's id (`session/load` answers without one: the id asked for).
    pub session_id: String,
    /// The session's models.
    pub models: Option<SessionModels>,
    /// The session's modes.
    pub modes: Option<SessionModes>,
}

/// A session's current model.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionModels {
    /// The model its prompts run on.
    #[serde(default)]
    pub current_model_id: String,
}

/// A session's current mode.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionModes {
    /// The mode's id (`default`, `autoEdit`, `yolo`, `plan`).
    pub current_mode_id: Option<String>,
}

impl SessionResult {
    /// Reads a result leniently, each part on its own: a part that does not parse is absent,
    /// and takes nothing else with it (a newer shape of `models` leaves the session's id).
    pub(crate) fn read(result: &Value) -> SessionResult {
        let part = |key: &str| result.get(key).filter(|v| !v.is_null());
        SessionResult {
            session_id: part("sessionId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            models: part("models").and_then(|v| SessionModels::deserialize(v).ok()),
            modes: part("modes").and_then(|v| SessionModes::deserialize(v).ok()),
        }
    }

    /// The session's model (empty when the agent did not say).
    pub(crate) fn model(&self) -> String {
        self.models
            .as_ref()
            .map(|m| m.current_model_id.clone())
            .unwrap_or_default()
    }

    /// The session's mode id, when the agent said.
    pub(crate) fn mode(&self) -> Option<&str> {
        self.modes.as_ref()?.current_mode_id.as_deref()
    }
}

/// Why a `session/prompt` turn ended: `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`,
/// `cancelled`, or a newer reason as sent; `end_turn` when the result names none.
pub(crate) fn stop_reason(result: &Value) -> &str {
    result
        .get("stopReason")
        .and_then(Value::as_str)
        .unwrap_or("end_turn")
}

/// The kind of a `session/update` (`agent_message_chunk`, `tool_call`, …), without reading the
/// rest of it.
pub(crate) fn update_kind(update: &Value) -> &str {
    update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_read_by_kind_and_an_unknown_kind_or_shape_is_other() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}});
        let chunk = SessionUpdate::read(&chunk);
        assert!(
            matches!(
                chunk,
                SessionUpdate::AgentMessageChunk {
                    content: ContentBlock::Text {
                        text: Cow::Borrowed("Hi")
                    }
                }
            ),
            "a chunk's text is borrowed from the message, not copied: {chunk:?}"
        );
        let image = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "…"}});
        let image = SessionUpdate::read(&image);
        assert!(
            matches!(image, SessionUpdate::AgentMessageChunk { ref content } if content.text().is_empty())
        );
        let call = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
            "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "out"}},
            {"type": "diff", "path": "/a", "newText": "x"}]});
        let call = SessionUpdate::read(&call);
        match call {
            SessionUpdate::ToolCallUpdate(t) => {
                assert_eq!(t.tool_call_id, "t1");
                assert_eq!(t.status.as_deref(), Some("completed"));
                assert_eq!(t.title, None, "an update names only what changed");
                assert_eq!(t.output(), "out");
            }
            other => panic!("{other:?}"),
        }
        let odd = json!({"sessionUpdate": "tool_call", "toolCallId": "t2",
            "title": "ls", "status": 3, "locations": [{"path": "/a"}, {"line": 2}]});
        let odd = SessionUpdate::read(&odd);
        match odd {
            SessionUpdate::ToolCall(t) => {
                assert_eq!(
                    (t.tool_call_id.as_str(), t.title.as_deref()),
                    ("t2", Some("ls"))
                );
                assert_eq!(t.status, None, "a field of another type is absent");
                assert_eq!(
                    t.locations.map(|l| l.len()),
                    Some(1),
                    "and so is such a location"
                );
            }
            other => panic!("a field of another type takes nothing else with it: {other:?}"),
        }
        for other in [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "x"}}),
            json!({"sessionUpdate": "a_kind_from_a_newer_agent", "anything": 1}),
            json!({"no": "tag"}),
        ] {
            assert!(
                matches!(SessionUpdate::read(&other), SessionUpdate::Other),
                "{other}"
            );
        }
    }

    #[test]
    fn a_permission_request_reads_its_tool_call_and_options() {
        let request = PermissionRequest::read(&json!({"sessionId": "s",
            "toolCall": {"toolCallId": "t", "title": "rm x", "kind": "execute",
                "locations": [{"path": "/w/x"}]},
            "options": [{"optionId": "a", "kind": "allow_once", "name": "Allow"},
                {"optionId": "r", "kind": "reject_once", "name": "Reject"}]}));
        assert_eq!(request.tool_call.title.as_deref(), Some("rm x"));
        assert_eq!(request.tool_call.locations.as_ref().map(Vec::len), Some(1));
        let kinds: Vec<&str> = request.options.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["allow_once", "reject_once"]);
        assert!(PermissionRequest::read(&json!({"options": "nope"}))
            .options
            .is_empty());
        let partly =
            PermissionRequest::read(&json!({"options": [{"optionId": 1, "kind": "allow_once"},
            {"optionId": "r", "kind": "reject_once"}]}));
        assert_eq!(
            partly.options.len(),
            1,
            "an option that does not read is not offered"
        );
    }

    #[test]
    fn session_and_prompt_results_read_what_the_server_uses() {
        let r = SessionResult::read(&json!({"sessionId": "s1",
            "models": {"currentModelId": "gemini-2.5-pro", "availableModels": []},
            "modes": {"currentModeId": "yolo", "availableModes": []}}));
        assert_eq!(
            (r.session_id.as_str(), r.model().as_str(), r.mode()),
            ("s1", "gemini-2.5-pro", Some("yolo"))
        );
        let none = SessionResult::read(&json!({"models": 3}));
        assert_eq!(
            (none.session_id.as_str(), none.model().as_str(), none.mode()),
            ("", "", None)
        );
        assert_eq!(
            stop_reason(&json!({"stopReason": "max_tokens"})),
            "max_tokens"
        );
        assert_eq!(stop_reason(&json!({})), "end_turn");
        assert_eq!(update_kind(&json!({"sessionUpdate": "plan"})), "plan");
        assert_eq!(update_kind(&json!(null)), "");
    }
}
