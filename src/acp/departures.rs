//! Gemini's departures: where the Gemini CLI 0.61's ACP agent leaves the protocol's own schema
//! (`agent-client-protocol-schema` 1.20, stable ACP v1), said once and kept. Every other ACP
//! message the server sends or reads is the schema's type.
//!
//! - `session/set_model` ([`SetSessionModelRequest`]): no method of stable ACP v1 (the schema
//!   dropped its draft); the CLI takes `{sessionId, modelId}` and answers `{}`.
//! - `models` on the answers to `session/new` and `session/load` ([`Opened`]): the session's
//!   current and available models, which the schema does not know (kept as sent for
//!   `list_models`).
//! - `_meta.quota` on the answer to `session/prompt` ([`PromptAnswer`]): the turn's token counts,
//!   in all and per model; ACP's own `usage` (a draft of the schema, on with its feature
//!   `unstable_end_turn_token_usage`) comes from 0.64 (by its release notes).
//! - Stop reasons: the schema's set is closed; a newer one is kept as sent ([`PromptAnswer`]).
//! - Errors: the API's HTTP status as the JSON-RPC code (0.61), or `-32000` with the API's JSON
//!   error body as the message (0.62, by its release notes: [`api_status`]); a login the agent
//!   lacks is `-32000` ([`AUTH_REQUIRED`]); a session `session/load` cannot find is `-32603` or
//!   `-32602`, not the schema's `-32002` ([`LOAD_NOT_FOUND`]).
//! - Session updates and permission requests are read leniently (`wire`): the schema's types
//!   have no fallback for an update kind, content block or option kind newer than they are.

use agent_client_protocol_schema::v1::{
    LoadSessionResponse, NewSessionResponse, PromptResponse, SessionId, StopReason, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The method of [`SetSessionModelRequest`].
pub(crate) const SET_MODEL: &str = "session/set_model";

/// The JSON-RPC code of a request the agent refuses for want of a login.
pub(crate) const AUTH_REQUIRED: i64 = -32000;

/// The JSON-RPC codes the CLI answers a `session/load` of a session it cannot find with.
pub(crate) const LOAD_NOT_FOUND: [i64; 2] = [-32603, -32602];

/// `session/set_model`'s parameters: puts a session on another model.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetSessionModelRequest {
    /// The session.
    pub session_id: SessionId,
    /// The model's id, as the CLI's `--model` takes it.
    pub model_id: String,
}

/// The `models` of a session the agent opened (`session/new`, `session/load`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionModels {
    /// The model its prompts run on.
    #[serde(default)]
    pub current_model_id: String,
}

/// An answer to `session/new` (`R` = [`NewSessionResponse`]) or `session/load`
/// ([`LoadSessionResponse`]): the schema's answer, and the session's models.
#[derive(Debug, Clone)]
pub(crate) struct Opened<R> {
    /// The schema's part.
    pub acp: R,
    /// `models`, as sent (`null` when absent).
    pub models: Value,
}

impl<R: serde::de::DeserializeOwned> Opened<R> {
    /// Reads an answer; `None` when the schema's part does not parse.
    pub(crate) fn read(result: Value) -> Option<Opened<R>> {
        #[derive(Deserialize)]
        struct Models {
            #[serde(default)]
            models: Value,
        }
        let models = Models::deserialize(&result).map_or(Value::Null, |m| m.models);
        Some(Opened {
            acp: serde_json::from_value(result).ok()?,
            models,
        })
    }

    /// The session's model (empty when the agent did not say).
    pub(crate) fn model(&self) -> String {
        SessionModels::deserialize(&self.models)
            .map(|m| m.current_model_id)
            .unwrap_or_default()
    }
}

/// A session's mode id, as the agent said it ([`NewSessionResponse`], [`LoadSessionResponse`]).
pub(crate) trait ModeOf {
    /// The id of the mode the session is in, when the agent said.
    fn mode(&self) -> Option<&str>;
}

impl ModeOf for NewSessionResponse {
    fn mode(&self) -> Option<&str> {
        Some(&self.modes.as_ref()?.current_mode_id.0)
    }
}

impl ModeOf for LoadSessionResponse {
    fn mode(&self) -> Option<&str> {
        Some(&self.modes.as_ref()?.current_mode_id.0)
    }
}

/// The answer to `session/prompt`: the schema's, read leniently (a stop reason newer than the
/// schema keeps the rest), with the CLI's `_meta.quota`.
#[derive(Debug, Clone, Default)]
pub(crate) struct PromptAnswer {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled`, or a newer reason
    /// as sent; `end_turn` when the answer names none.
    pub stop_reason: String,
    /// ACP's own token counts (CLI 0.64 and later).
    pub usage: Option<Usage>,
    /// The CLI's token counts (`_meta.quota`).
    pub quota: Option<Quota>,
}

/// The CLI's token counts of a turn (`_meta.quota` of a prompt's answer).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Quota {
    /// The turn's totals.
    #[serde(default)]
    pub token_count: TokenCount,
    /// Per model, as sent.
    #[serde(default)]
    pub model_usage: Value,
}

/// Input and output tokens of a turn.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct TokenCount {
    /// Tokens sent to the model.
    pub input_tokens: Option<u64>,
    /// Tokens the model wrote.
    pub output_tokens: Option<u64>,
}

impl PromptAnswer {
    /// Reads an answer; every part that does not parse is absent.
    pub(crate) fn read(result: &Value) -> PromptAnswer {
        #[derive(Deserialize, Default)]
        struct Gemini {
            #[serde(rename = "stopReason", default)]
            stop_reason: Option<Value>,
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
        }
        #[derive(Deserialize, Default)]
        struct Meta {
            #[serde(default)]
            quota: Option<Quota>,
        }
        let acp = PromptResponse::deserialize(result).ok();
        let gemini = Gemini::deserialize(result).unwrap_or_default();
        let stop_reason = match (&acp, gemini.stop_reason) {
            (Some(r), _) => stop_name(r.stop_reason),
            (None, Some(Value::String(newer))) => newer,
            (None, _) => stop_name(StopReason::EndTurn),
        };
        PromptAnswer {
            stop_reason,
            usage: acp.and_then(|r| r.usage),
            quota: gemini.meta.and_then(|m| m.quota),
        }
    }
}

/// A stop reason's wire name (`end_turn`).
fn stop_name(reason: StopReason) -> String {
    match serde_json::to_value(reason) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

/// The HTTP status an error's message carries as the API's JSON error body
/// (`{"error": {"code": 429, …}}`), as CLI 0.62 sends every API error.
pub(crate) fn api_status(message: &str) -> Option<i64> {
    #[derive(Deserialize)]
    struct Body {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        code: i64,
    }
    serde_json::from_str::<Body>(message.trim())
        .ok()
        .map(|b| b.error.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_answer_reads_its_stop_reason_usage_and_quota() {
        let a = PromptAnswer::read(&json!({"stopReason": "max_tokens",
            "_meta": {"quota": {"token_count": {"input_tokens": 3, "output_tokens": 4},
                "model_usage": [{"model": "m"}]}}}));
        assert_eq!(a.stop_reason, "max_tokens");
        let quota = a.quota.expect("the quota is read");
        assert_eq!(
            (
                quota.token_count.input_tokens,
                quota.token_count.output_tokens
            ),
            (Some(3), Some(4))
        );
        assert_eq!(quota.model_usage[0]["model"], "m");
        let newer = PromptAnswer::read(&json!({"stopReason": "a_newer_reason"}));
        assert_eq!(newer.stop_reason, "a_newer_reason", "kept as sent");
        assert_eq!(PromptAnswer::read(&json!({})).stop_reason, "end_turn");
        let usage = PromptAnswer::read(&json!({"stopReason": "end_turn",
            "usage": {"totalTokens": 9, "inputTokens": 5, "outputTokens": 4}}));
        assert_eq!(usage.usage.map(|u| u.total_tokens), Some(9));
    }

    #[test]
    fn an_opened_session_reads_its_id_mode_and_models() {
        let r = Opened::<NewSessionResponse>::read(json!({"sessionId": "s1",
            "models": {"currentModelId": "gemini-2.5-pro", "availableModels": []},
            "modes": {"currentModeId": "yolo", "availableModes": []}}))
        .expect("a session/new answer");
        assert_eq!(
            (&*r.acp.session_id.0, r.model().as_str(), r.acp.mode()),
            ("s1", "gemini-2.5-pro", Some("yolo"))
        );
        assert!(
            Opened::<NewSessionResponse>::read(json!({"models": 3})).is_none(),
            "no session id: no session"
        );
        let loaded = Opened::<LoadSessionResponse>::read(json!({"models": 3})).expect("a load");
        assert_eq!((loaded.model().as_str(), loaded.acp.mode()), ("", None));
    }

    #[test]
    fn set_model_is_written_as_the_cli_takes_it() {
        let request = SetSessionModelRequest {
            session_id: SessionId::new("s"),
            model_id: "m".into(),
        };
        assert_eq!(
            serde_json::to_value(request).unwrap(),
            json!({"sessionId": "s", "modelId": "m"})
        );
        assert_eq!(
            api_status(r#" {"error": {"code": 429, "message": "x"}} "#),
            Some(429)
        );
        assert_eq!(api_status("429 Too Many Requests"), None);
    }
}
