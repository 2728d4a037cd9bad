//! The `ask` approval mode: a tool the Gemini agent wants to run, put to the client's user as a
//! question (allow once, allow for this session, reject), the answer bounded by the operator's
//! ceiling. What carries the question is an [`Asker`] the server picks per call; the form it
//! travels as is the MCP layer's (`crate::forms`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

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
