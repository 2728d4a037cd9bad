//! What a prompt on an agent asks for, and what it answers.

use std::path::PathBuf;

use serde_json::Value;

use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;

/// One block of a prompt, in the order sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Text.
    Text(String),
    /// Text sent as an embedded resource (the `acp` set's `context`).
    Context(String),
    /// An image file sent as a file link, which the agent reads as the one-shot CLI reads an
    /// `@` reference (the prompt tools).
    Link(PathBuf),
    /// An image file sent as an image block, its bytes read when the prompt is sent (the `acp`
    /// set's `image_path`).
    Image(PathBuf),
}

/// A prompt for an agent, checked: its blocks and where and how it runs. `Pool::prompt` runs it
/// in the workspace's session (the `acp` set's `gemini`), `Pool::warm` in a fresh one (the prompt
/// tools).
#[derive(Debug, Clone)]
pub struct Call {
    /// The prompt's blocks; every path canonical and under the roots.
    pub blocks: Vec<Block>,
    /// A model for the session (`session/set_model`).
    pub model: Option<String>,
    /// The approval mode, already under the ceiling.
    pub mode: ApprovalMode,
    /// A session to continue.
    pub session_id: Option<String>,
    /// The workspace, canonical and under the roots.
    pub cwd: PathBuf,
    /// `--include-directories` of the agent: canonical, checked.
    pub dirs: Vec<PathBuf>,
    /// `--allowed-mcp-server-names` of the agent, checked.
    pub servers: Vec<String>,
    /// The call's deadlines, the operator's included; the runner narrows `total` to what a
    /// retry leaves of it.
    pub limits: Deadlines,
    /// Keep the turn's ACP messages (`full_output`).
    pub full_output: bool,
    /// Report the agent, the session and the timings (`debug`).
    pub debug: bool,
    /// `approval_mode: "ask"`: permission requests become questions to the client's user.
    pub asking: Option<crate::ask::Asking>,
}

/// A prompt's outcome on an agent: what its turn said and did.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The session the prompt ran in.
    pub session_id: String,
    /// The agent's message chunks, concatenated.
    pub messages: String,
    /// Where in `messages` the chunks since the last tool event start: the last model turn's
    /// text, what a one-shot run answers (an offset, not a copy: an answer may be tens of MiB).
    pub last_turn_start: usize,
    /// Thought chunks, concatenated.
    pub thought: String,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub stop_reason: String,
    /// Tool calls, in order, with their last status.
    pub tool_calls: Vec<Value>,
    /// Plan entries (the CLI 0.61 sends none).
    pub plan: Vec<Value>,
    /// The session's model.
    pub model: String,
    /// The last `usage_update`: tokens in the context and the context window.
    pub context: Option<(u64, u64)>,
    /// The agent's pid.
    pub pid: u32,
}

/// A prompt's end on an agent, with what its options asked to see.
pub struct Ran<T> {
    /// The answer, or the failure.
    pub result: Result<T, crate::error::Failure>,
    /// Whether a tool ran (or was asked for).
    pub tools_ran: bool,
    /// The turn's ACP messages and how it ended (`full_output`).
    pub events: Option<Vec<Value>>,
    /// Agent pid, session and timings (`debug`).
    pub debug: Option<Value>,
    /// `approval_mode: "ask"`: each permission the agent asked for, and who decided it.
    pub approvals: Vec<Value>,
    /// The agent could not start (or did not, lately), for a reason a one-shot run does not
    /// share: nothing reached the CLI, and a one-shot run may answer the call.
    pub no_agent: bool,
}

impl<T> Ran<T> {
    /// The same end, its answer mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Ran<U> {
        Ran {
            result: self.result.map(f),
            tools_ran: self.tools_ran,
            events: self.events,
            debug: self.debug,
            approvals: self.approvals,
            no_agent: self.no_agent,
        }
    }

    /// A prompt refused before its turn: nothing ran.
    pub fn refused(f: crate::error::Failure) -> Self {
        Ran {
            result: Err(f),
            tools_ran: false,
            events: None,
            debug: None,
            approvals: Vec::new(),
            no_agent: false,
        }
    }

    /// A prompt that found no agent: it could not start, for a reason a one-shot run does not
    /// share ([`super::agent::one_shot_may_answer`]).
    pub fn no_agent(f: crate::error::Failure) -> Self {
        Ran {
            no_agent: true,
            ..Ran::refused(f)
        }
    }
}
