//! The ACP messages both ways. Every request the server sends is a type of the ACP project's
//! schema (`agent-client-protocol-schema`) with its method and the type its answer reads into
//! ([`Method`]); a message from the agent is an [`Envelope`] whose parts are read by their
//! schema types. A session's updates and a permission request's tool call and options are read
//! by the small lenient types here instead: a kind the server does not know (a newer agent's)
//! reads as `Other`, and a transcript keeps the message as it came. The schema's types have no
//! such fallback for unknown update kinds, content blocks or option kinds, so an agent one
//! release ahead of them would fail to parse. Where the Gemini CLI leaves the schema:
//! `departures`.

use std::borrow::Cow;

use agent_client_protocol_schema::v1 as acp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acp::departures::{self, Opened, PromptAnswer, SetSessionModelRequest};

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
    /// Reads a tool call leniently, field by field (the schema's `ToolCallUpdate`, its kind and
    /// status kept as text: the schema's sets are closed).
    pub(crate) fn read(value: &Value) -> ToolCall {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            #[serde(default, deserialize_with = "lenient")]
            tool_call_id: Option<String>,
            #[serde(default, deserialize_with = "lenient")]
            title: Option<String>,
            #[serde(default, deserialize_with = "lenient")]
            kind: Option<String>,
            #[serde(default, deserialize_with = "lenient")]
            status: Option<String>,
            #[serde(default, deserialize_with = "lenient")]
            locations: Option<Vec<Value>>,
            #[serde(default, deserialize_with = "lenient")]
            content: Option<Vec<Value>>,
        }
        let f = Fields::deserialize(value).unwrap_or_default();
        ToolCall {
            tool_call_id: f.tool_call_id.unwrap_or_default(),
            title: f.title,
            kind: f.kind,
            status: f.status,
            locations: f.locations.map(|l| {
                l.iter()
                    .filter_map(|l| Location::deserialize(l).ok())
                    .collect()
            }),
            content: f
                .content
                .iter()
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
        #[derive(Deserialize)]
        struct Piece<'a> {
            #[serde(rename = "type", borrow)]
            kind: Cow<'a, str>,
            #[serde(default, borrow)]
            content: Option<ContentBlock<'a>>,
        }
        let piece = Piece::deserialize(piece).ok()?;
        match (&*piece.kind, piece.content) {
            ("content", Some(block)) => Some(ToolCallContent::Content {
                text: block.text().to_owned(),
            }),
            ("content", None) => None,
            _ => Some(ToolCallContent::Other),
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
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            option_id: String,
            #[serde(default)]
            kind: Value,
        }
        let f = Fields::deserialize(option).ok()?;
        Some(PermissionOption {
            option_id: f.option_id,
            kind: match f.kind {
                Value::String(kind) => kind,
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
        let (tool_call, options) = Self::parts(params);
        PermissionRequest {
            tool_call: ToolCall::read(&tool_call),
            options: options
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(PermissionOption::read)
                .collect(),
        }
    }

    /// The request's `toolCall` and `options` as sent (`null` when absent), for a transcript.
    pub(crate) fn as_sent(params: Value) -> (Value, Value) {
        let parts: Parts = serde_json::from_value(params).unwrap_or_default();
        (parts.tool_call, parts.options)
    }

    fn parts(params: &Value) -> (Value, Value) {
        let parts = Parts::deserialize(params).unwrap_or_default();
        (parts.tool_call, parts.options)
    }
}

/// The parts of the schema's `RequestPermissionRequest` the server reads, as sent.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Parts {
    #[serde(default)]
    tool_call: Value,
    #[serde(default)]
    options: Value,
}

/// A field of the type asked for, or none (one of another type takes nothing else with it).
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(serde_json::from_value(Value::deserialize(deserializer)?).ok())
}

/// The kind of a `session/update` (`agent_message_chunk`, `tool_call`, …), without reading the
/// rest of it.
pub(crate) fn update_kind(update: &Value) -> &str {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "sessionUpdate", borrow)]
        kind: &'a str,
    }
    Kind::deserialize(update).map_or("", |k| k.kind)
}

/// A request the server sends the agent: the schema's parameters of `NAME`, and what its answer
/// reads as (`None`: an answer the schema's type does not take).
pub(crate) trait Method: Serialize {
    /// The JSON-RPC method.
    const NAME: &'static str;
    /// The answer, read.
    type Answer;
    /// Reads the answer's `result`.
    fn answer(result: Value) -> Option<Self::Answer>;
}

/// A method whose answer is the schema's type of it, read whole.
macro_rules! method {
    ($request:ty, $name:expr, $answer:ty) => {
        impl Method for $request {
            const NAME: &'static str = $name;
            type Answer = $answer;
            fn answer(result: Value) -> Option<$answer> {
                serde_json::from_value(result).ok()
            }
        }
    };
}

method!(
    acp::InitializeRequest,
    acp::AGENT_METHOD_NAMES.initialize,
    acp::InitializeResponse
);
method!(
    acp::AuthenticateRequest,
    acp::AGENT_METHOD_NAMES.authenticate,
    acp::AuthenticateResponse
);
method!(
    acp::SetSessionModeRequest,
    acp::AGENT_METHOD_NAMES.session_set_mode,
    acp::SetSessionModeResponse
);

impl Method for acp::NewSessionRequest {
    const NAME: &'static str = acp::AGENT_METHOD_NAMES.session_new;
    type Answer = Opened<acp::NewSessionResponse>;
    fn answer(result: Value) -> Option<Self::Answer> {
        Opened::read(result)
    }
}

impl Method for acp::LoadSessionRequest {
    const NAME: &'static str = acp::AGENT_METHOD_NAMES.session_load;
    type Answer = Opened<acp::LoadSessionResponse>;
    fn answer(result: Value) -> Option<Self::Answer> {
        Opened::read(result)
    }
}

impl Method for acp::PromptRequest {
    const NAME: &'static str = acp::AGENT_METHOD_NAMES.session_prompt;
    type Answer = PromptAnswer;
    fn answer(result: Value) -> Option<PromptAnswer> {
        Some(PromptAnswer::read(&result))
    }
}

impl Method for SetSessionModelRequest {
    const NAME: &'static str = departures::SET_MODEL;
    // Answered `{}`, which nothing reads.
    type Answer = ();
    fn answer(_: Value) -> Option<()> {
        Some(())
    }
}

/// One JSON-RPC message from the agent, its parts by name: a request (`id` and `method`), a
/// notification (`method`), or a response (`id`, and `result` or `error`).
#[derive(Debug, Deserialize)]
pub(crate) struct Envelope {
    /// A request's or a response's id (`null` is none).
    #[serde(default)]
    pub id: Option<acp::RequestId>,
    /// A request's or a notification's method.
    #[serde(default)]
    pub method: Option<String>,
    /// Its parameters.
    #[serde(default)]
    pub params: Value,
    /// A response's result (`null` is none).
    #[serde(default)]
    pub result: Option<Value>,
    /// A response's error.
    #[serde(default)]
    pub error: Option<Value>,
}

/// The server's own id a response carries (the server's ids are positive integers).
pub(crate) fn id_number(id: &acp::RequestId) -> Option<u64> {
    match id {
        acp::RequestId::Number(n) => u64::try_from(*n).ok(),
        acp::RequestId::Null | acp::RequestId::Str(_) => None,
    }
}

/// The session a `session/update` or a `session/request_permission` is about (its `sessionId`).
pub(crate) fn session_of(params: &Value) -> String {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Of {
        session_id: acp::SessionId,
    }
    Of::deserialize(params).map_or_else(|_| String::new(), |of| of.session_id.0.to_string())
}

/// A `session/update`'s `update`, taken from its parameters (not copied: a chunk may be many
/// MiB). The schema's `SessionNotification`, its update left as sent for [`SessionUpdate::read`].
pub(crate) fn update_of(params: Value) -> Value {
    #[derive(Deserialize)]
    struct Of {
        #[serde(default)]
        update: Value,
    }
    serde_json::from_value::<Of>(params).map_or(Value::Null, |of| of.update)
}

/// An error answer's code and message; one that is not the schema's `Error` is code 0 with no
/// message.
pub(crate) fn error_of(error: Value) -> (i64, String) {
    serde_json::from_value::<acp::Error>(error).map_or((0, String::new()), |e| {
        (i64::from(i32::from(e.code)), e.message)
    })
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
    fn envelopes_and_errors_read_by_their_schema() {
        assert_eq!(update_kind(&json!({"sessionUpdate": "plan"})), "plan");
        assert_eq!(update_kind(&json!(null)), "");
        assert_eq!(session_of(&json!({"sessionId": "s", "update": {}})), "s");
        assert_eq!(session_of(&json!({"sessionId": 3})), "");
        assert_eq!(
            update_of(json!({"sessionId": "s", "update": {"sessionUpdate": "plan"}})),
            json!({"sessionUpdate": "plan"})
        );
        assert_eq!(
            error_of(json!({"code": 429, "message": "quota"})),
            (429, "quota".into())
        );
        assert_eq!(error_of(json!({"code": -32000})), (0, String::new()));
    }
}
