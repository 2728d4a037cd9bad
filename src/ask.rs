//! The `ask` approval mode: a tool the Gemini agent wants to run, put to the client's user as a
//! question (allow once, allow for this session, reject), the answer bounded by the operator's
//! ceiling. The question travels as an elicitation form — an `elicitation/create` request on
//! 2025 connections, a task's `input_required` on 2026-07-28 ones — built here the same way for
//! both; what carries it is an [`Asker`] the server picks per call.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{json, Value};

/// What the agent asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The tool call's title (`Writing to notes.txt`, `rm -rf build`).
    pub title: String,
    /// Its kind (`edit`, `execute`, `delete`, `fetch`, …).
    pub kind: String,
    /// The paths it touches.
    pub locations: Vec<String>,
    /// Whether "allow for this session" is on offer (the agent offers an option that lasts for
    /// the session and nothing longer).
    pub session_option: bool,
}

/// Why a tool was rejected without the user allowing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The user chose "reject".
    Rejected,
    /// The user declined the form.
    Declined,
    /// The user dismissed the form.
    Cancelled,
    /// No answer within the time allowed.
    TimedOut,
    /// The client cannot be asked (no elicitation, or no way to hold the question).
    CannotAsk,
    /// The ceiling (`GEMINICLI_MCP_APPROVAL_MODE`) would not allow it, whatever the answer.
    Ceiling,
    /// The call ended (cancelled, or its deadline passed) before an answer.
    Gone,
}

impl Why {
    /// The word results use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Rejected => "rejected",
            Why::Declined => "declined",
            Why::Cancelled => "cancelled",
            Why::TimedOut => "timeout",
            Why::CannotAsk => "cannot_ask",
            Why::Ceiling => "ceiling",
            Why::Gone => "call_ended",
        }
    }
}

/// The answer to a [`Question`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Run it this once.
    AllowOnce,
    /// Run it, and tools like it for the rest of the session.
    AllowSession,
    /// Do not run it.
    Reject(Why),
}

impl Reply {
    /// Who decided, as results say it: `user`, or why nobody allowed it.
    pub fn decided_by(self) -> &'static str {
        match self {
            Reply::AllowOnce | Reply::AllowSession => "user",
            Reply::Reject(Why::Rejected) => "user",
            Reply::Reject(why) => why.as_str(),
        }
    }
}

/// A pending answer.
pub(crate) type Asked = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// Puts a question to the client's user.
pub trait Asker: Send + Sync {
    /// Asks `question`; the future resolves with the answer (or a rejection saying why).
    fn ask(&self, question: Question) -> Asked;
    /// How long an answer may take.
    fn timeout(&self) -> Duration;
}

/// A call that asks: who puts the questions (`None`: the client cannot be asked, so every
/// question is rejected as `cannot_ask`) and the ceiling that bounds the answers.
#[derive(Clone)]
pub struct Asking {
    /// The client's way to be asked, when it has one.
    pub asker: Option<std::sync::Arc<dyn Asker>>,
    /// The operator's ceiling (`GEMINICLI_MCP_APPROVAL_MODE`).
    pub ceiling: crate::approval::ApprovalMode,
}

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asking")
            .field("asker", &self.asker.is_some())
            .field("ceiling", &self.ceiling)
            .finish()
    }
}

/// The values of the form's one field.
pub(crate) const ALLOW_ONCE: &str = "allow_once";
/// "Allow for this session".
pub(crate) const ALLOW_SESSION: &str = "allow_session";
/// "Reject".
pub(crate) const REJECT: &str = "reject";

/// The form's message: what the agent wants to do, in plain words.
pub(crate) fn message(q: &Question) -> String {
    let mut m = format!("Gemini wants to run a tool ({}): {}", q.kind, q.title);
    if !q.locations.is_empty() {
        m.push_str(&format!("\nFiles: {}", q.locations.join(", ")));
    }
    m.push_str("\nAllow it?");
    m
}

/// The form's schema: one required choice, never free text (a form never asks for secrets).
pub(crate) fn schema(q: &Question) -> Value {
    let mut choices = vec![json!({"const": ALLOW_ONCE, "title": "Allow once"})];
    if q.session_option {
        choices.push(json!({"const": ALLOW_SESSION, "title": "Allow for this session"}));
    }
    choices.push(json!({"const": REJECT, "title": "Reject"}));
    json!({
        "type": "object",
        "properties": {"decision": {
            "type": "string",
            "title": "Let Gemini run this tool?",
            "oneOf": choices,
        }},
        "required": ["decision"],
    })
}

/// The `elicitation/create` parameters of `q` (form mode).
pub(crate) fn form(q: &Question) -> Value {
    json!({"mode": "form", "message": message(q), "requestedSchema": schema(q)})
}

/// The key of a call's `n`-th question in `inputRequests` (`permission-1`, …): unique over the call.
pub(crate) fn request_key(n: u32) -> String {
    format!("permission-{n}")
}

/// `q` as an input request of the 2026-07-28 protocol (a task's or a multi-round-trip result's):
/// the `elicitation/create` form. `None` only if rmcp would not hold the form.
pub(crate) fn input_request(q: &Question) -> Option<rmcp::model::InputRequest> {
    serde_json::from_value(json!({"method": "elicitation/create", "params": form(q)})).ok()
}

/// The reply an elicitation result (`action`, `content`) stands for. Anything but an accepted,
/// known choice rejects; "allow for this session" counts only when it was offered.
pub(crate) fn reply_of(q: &Question, result: &Value) -> Reply {
    match result["action"].as_str() {
        Some("accept") => match result["content"]["decision"].as_str() {
            Some(ALLOW_ONCE) => Reply::AllowOnce,
            Some(ALLOW_SESSION) if q.session_option => Reply::AllowSession,
            _ => Reply::Reject(Why::Rejected),
        },
        Some("decline") => Reply::Reject(Why::Declined),
        _ => Reply::Reject(Why::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(session_option: bool) -> Question {
        Question {
            title: "rm -rf build".into(),
            kind: "execute".into(),
            locations: vec!["/w/build".into()],
            session_option,
        }
    }

    #[test]
    fn the_form_names_the_tool_and_offers_only_what_the_agent_offers() {
        let q = question(false);
        let f = form(&q);
        assert_eq!(f["mode"], "form");
        let text = f["message"].as_str().unwrap();
        assert!(
            text.contains("rm -rf build") && text.contains("execute") && text.contains("/w/build")
        );
        let values: Vec<&str> = f["requestedSchema"]["properties"]["decision"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["const"].as_str().unwrap())
            .collect();
        assert_eq!(values, [ALLOW_ONCE, REJECT]);
        let with = schema(&question(true));
        assert_eq!(
            with["properties"]["decision"]["oneOf"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn the_form_is_an_input_request_rmcp_holds() {
        let request = input_request(&question(true)).expect("the form is a valid elicitation");
        let wire = serde_json::to_value(request).unwrap();
        assert_eq!(wire["method"], "elicitation/create");
        assert_eq!(wire["params"]["mode"], "form");
        assert_eq!(request_key(2), "permission-2");
    }

    #[test]
    fn answers_map_to_replies_and_anything_else_rejects() {
        let q = question(true);
        let accept = |d: &str| json!({"action": "accept", "content": {"decision": d}});
        assert_eq!(reply_of(&q, &accept(ALLOW_ONCE)), Reply::AllowOnce);
        assert_eq!(reply_of(&q, &accept(ALLOW_SESSION)), Reply::AllowSession);
        assert_eq!(reply_of(&q, &accept(REJECT)), Reply::Reject(Why::Rejected));
        assert_eq!(
            reply_of(&q, &accept("yes please")),
            Reply::Reject(Why::Rejected)
        );
        assert_eq!(
            reply_of(&q, &json!({"action": "accept"})),
            Reply::Reject(Why::Rejected)
        );
        assert_eq!(
            reply_of(&q, &json!({"action": "decline"})),
            Reply::Reject(Why::Declined)
        );
        assert_eq!(
            reply_of(&q, &json!({"action": "cancel"})),
            Reply::Reject(Why::Cancelled)
        );
        // Not offered: "allow for this session" is no answer.
        assert_eq!(
            reply_of(&question(false), &accept(ALLOW_SESSION)),
            Reply::Reject(Why::Rejected)
        );
    }
}
