//! What the agent sends, as the reader sees it: each line classified ([`Message`]), what reaches
//! a session's prompt ([`Inbound`], [`Routed`]), why a request failed ([`AcpError`]), and the
//! lines the client writes back.

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::acp::wire::{error_of, id_number, session_of, update_of, Envelope};
use crate::ask::{Question, Reply};

/// Why a request to the agent failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AcpError {
    /// The agent answered with a JSON-RPC error.
    #[error("the agent answered {code}: {message}")]
    Rpc {
        /// The JSON-RPC code (the CLI puts an API error's HTTP status here).
        code: i64,
        /// The error's message.
        message: String,
    },
    /// The agent process ended (or was killed) before answering.
    #[error("the Gemini ACP agent exited ({0})")]
    Exited(String),
    /// No answer within the request timeout; the agent is killed.
    #[error("the Gemini ACP agent did not answer {0} in time; it was killed")]
    Timeout(String),
    /// An answer the schema's type of it does not take (the method named).
    #[error("the Gemini ACP agent answered {0} with a result ACP does not define")]
    Unreadable(String),
}

/// What reaches the prompt waiting on a session.
#[derive(Debug)]
pub enum Inbound {
    /// A `session/update`'s `update` object.
    Update(Value),
    /// A permission request and the option the server chose (`None`: refused, `cancelled`).
    Permission {
        /// The request's `toolCall`.
        tool_call: Value,
        /// The options offered.
        options: Value,
        /// Whether it was allowed.
        allowed: bool,
        /// The `outcome` answered (`selected` with its `optionId`, or `cancelled`).
        outcome: Value,
        /// Who decided, when the session asks (`user`, or why nobody allowed it).
        decided_by: Option<&'static str>,
    },
    /// A permission request of a session that asks
    /// ([`Connection::ask`](super::Connection::ask)): the prompt's asker puts it to the client's
    /// user and sends the reply; the agent is answered when it arrives (a dropped sender rejects).
    Question {
        /// What the agent wants to do.
        question: Question,
        /// Where the reply goes.
        reply: oneshot::Sender<Reply>,
    },
}

impl Inbound {
    /// The record of a permission request the server answered with `outcome`, from the request's
    /// `params` as sent; `decided_by` as in [`Inbound::Permission`].
    pub(super) fn permission(
        params: Value,
        allowed: bool,
        outcome: &acp::RequestPermissionOutcome,
        decided_by: Option<&'static str>,
    ) -> Self {
        let (tool_call, options) = crate::acp::wire::PermissionRequest::as_sent(params);
        Inbound::Permission {
            tool_call,
            options,
            allowed,
            outcome: serde_json::to_value(outcome).unwrap_or_default(),
            decided_by,
        }
    }
}

/// One message routed to a session's prompt: what it is, the bytes of its line, and its share of
/// the connection's budget for messages read and not yet taken ([`ROUTED_BUDGET`]), given back
/// when it is dropped.
#[derive(Debug)]
pub struct Routed {
    /// The message.
    pub inbound: Inbound,
    /// The length of the line it came in (0: made by the server, a question's answer).
    pub bytes: usize,
    pub(super) _budget: Option<OwnedSemaphorePermit>,
}

impl Routed {
    /// A message the server itself routes (no line, no budget).
    pub(crate) fn made(inbound: Inbound) -> Routed {
        Routed {
            inbound,
            bytes: 0,
            _budget: None,
        }
    }
}

/// What the routed messages read and not yet taken by their prompts may hold, in bytes of their
/// lines: past it the reader stops reading (the agent blocks on its stdout) until a prompt takes
/// one. Every message counts as at least [`ROUTED_MIN_CHARGE`] (a parsed message holds more than
/// its line), and one larger than the whole budget takes all of it.
pub(super) const ROUTED_BUDGET: usize = 4 << 20;
/// The least a routed message counts for in [`ROUTED_BUDGET`].
pub(super) const ROUTED_MIN_CHARGE: usize = 1024;

/// One line from the agent, classified: the reader's whole view of the agent→client direction.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of our requests (`id` as sent: ids are the server's own integers).
    Response {
        /// The request's id.
        id: u64,
        /// Its `result`, or its `error` (an API error's HTTP status is the code).
        answer: Result<Value, AcpError>,
    },
    /// A `session/update` notification: the session and its `update` object.
    Update {
        /// The session it belongs to.
        session: String,
        /// The `update` object.
        update: Value,
    },
    /// A `session/request_permission` request.
    Permission {
        /// Its id, echoed in the answer.
        id: acp::RequestId,
        /// The session asking.
        session: String,
        /// The request's `params` (`toolCall`, `options`).
        params: Value,
    },
    /// Another request: answered "method not found" (no `fs` or `terminal` capability).
    Unsupported {
        /// Its id.
        id: acp::RequestId,
        /// Its method.
        method: String,
    },
    /// Not JSON, a response whose id is no integer (never one of ours), or a notification
    /// the client does not use.
    Ignored,
}

impl Message {
    /// Classifies one line of the agent's stdout (trailing newline allowed). Never fails: a
    /// stray line must not end the connection.
    pub fn parse(line: &[u8]) -> Message {
        let parsed = serde_json::from_slice::<Envelope>(line).or_else(|e| {
            // Bytes that are not UTF-8 are read as the one-shot backend reads the CLI's output:
            // each bad sequence as U+FFFD.
            match std::str::from_utf8(line) {
                Ok(_) => Err(e),
                Err(_) => serde_json::from_str::<Envelope>(&String::from_utf8_lossy(line)),
            }
        });
        let Ok(msg) = parsed else {
            return Message::Ignored;
        };
        match (msg.method.as_deref(), msg.id) {
            (None, Some(id)) => {
                let Some(id) = id_number(&id) else {
                    return Message::Ignored;
                };
                let answer = match msg.error {
                    Some(e) => {
                        let (code, message) = error_of(e);
                        Err(AcpError::Rpc { code, message })
                    }
                    None => Ok(msg.result.unwrap_or(Value::Null)),
                };
                Message::Response { id, answer }
            }
            (Some("session/update"), None) => Message::Update {
                session: session_of(&msg.params),
                update: update_of(msg.params),
            },
            (Some("session/request_permission"), Some(id)) => Message::Permission {
                id,
                session: session_of(&msg.params),
                params: msg.params,
            },
            (Some(other), Some(id)) => Message::Unsupported {
                id,
                method: other.to_string(),
            },
            _ => Message::Ignored,
        }
    }
}

/// One message as the line that carries it.
pub(super) fn line(msg: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The answer to the agent's permission request `id`.
pub(super) fn permission_answer(
    id: acp::RequestId,
    outcome: acp::RequestPermissionOutcome,
) -> Vec<u8> {
    line(&acp::JsonRpcMessage::wrap(
        acp::Response::<_, acp::Error>::new(id, Ok(acp::RequestPermissionResponse::new(outcome))),
    ))
}
