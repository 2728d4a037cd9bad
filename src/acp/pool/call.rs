//! What a prompt on an agent asks for, and what it answers.

use std::path::PathBuf;

use serde_json::Value;

use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;

/// What a `gemini` call asks for, decoded and checked.
#[derive(Debug, Clone)]
pub struct PromptCall {
    /// The prompt text.
    pub prompt: String,
    /// Text sent as an embedded resource block.
    pub context: Option<String>,
    /// A model for the session (`session/set_model`).
    pub model: Option<String>,
    /// The approval mode, already under the ceiling.
    pub mode: ApprovalMode,
    /// An image, already checked: its MIME type and path.
    pub image: Option<(String, PathBuf)>,
    /// A session to continue (`SESSION_ID` of an earlier answer).
    pub session_id: Option<String>,
    /// The workspace, canonical and under the roots.
    pub cwd: PathBuf,
    /// `--allowed-mcp-server-names` of the agent, checked.
    pub servers: Vec<String>,
    /// `--include-directories` of the agent: canonical, checked.
    pub dirs: Vec<PathBuf>,
    /// `approval_mode: "ask"`: permission requests become questions to the client's user.
    pub asking: Option<crate::ask::Asking>,
    /// The operator's deadlines (`GEMINICLI_MCP_*_TIMEOUT_MS`) for the turn; the runner narrows
    /// `total` to what a retry leaves of it.
    pub limits: Deadlines,
}

/// A prompt's outcome.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The session the prompt ran in.
    pub session_id: String,
    /// The agent's message chunks, concatenated.
    pub messages: String,
    /// The message chunks since the last tool event: the last model turn's text, what a one-shot
    /// run answers.
    pub last_turn: String,
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
    /// The agent's pid and stderr tail, for `debug`.
    pub pid: u32,
    /// Milliseconds the call took, start-up included.
    pub duration_ms: u64,
    /// Fallback models tried after `quota_exhausted` (the last one answered).
    pub fallbacks: Vec<String>,
}
