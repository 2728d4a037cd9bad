//! The elicitation form an `ask` question travels as — an `elicitation/create` request on 2025
//! connections, a task's `input_required` on 2026-07-28 ones — built the same way for both, and
//! the client's answer read back into a [`Reply`].

use serde_json::{json, Value};

use crate::ask::{Question, Reply, Why};

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
