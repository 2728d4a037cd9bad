//! Every way a call can fail: the error kinds, their exit codes and fixes (mirrored by the table in
//! docs/errors.md), and [`Failure`] with what its run left. `render` turns a failure into the
//! result a model reads; the first line `[error exit=N] KIND: message` is made here.

use serde_json::Value;

/// Most bytes of the child's stderr repeated in an error result (the tail is kept).
pub(crate) const STDERR_TAIL_BYTES: usize = 4096;
/// Most characters of a partial answer or raw response a failure shows (the rest is kept and
/// readable on); with the first lines and the stderr tail, a failure stays under the 11,024
/// characters past which Claude Code cuts an error result in the middle.
pub(crate) const PARTIAL_TEXT_CHARS: usize = 4000;

/// Every kind of failure a call can end with. The string form is the `KIND` of the first line and
/// the `errorKind` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// General model or API failure (CLI exit 1).
    Error,
    /// The CLI has no usable credentials (41).
    AuthRequired,
    /// Arguments refused before spawning (42), or the CLI's own input error (42).
    InputValidation,
    /// The CLI's sandbox could not start (44).
    SandboxError,
    /// The CLI's settings are invalid (52).
    ConfigError,
    /// `maxSessionTurns` reached (53).
    TurnLimit,
    /// The CLI's loop detection ended the turn: the model kept repeating one tool call or one
    /// stretch of text (one-shot: a `Loop detected, stopping execution` warning beside a success,
    /// exit 0; warm: stop reason `max_turn_requests` where no `maxSessionTurns` is set).
    LoopDetected,
    /// A fatal tool error, e.g. no space left (54).
    ToolError,
    /// The workspace is not trusted (55; cannot happen with `--skip-trust` unless the CLI ignores it).
    UntrustedWorkspace,
    /// The run was cancelled (130), or killed because the server shut down.
    Cancelled,
    /// HTTP 429 that the CLI would retry: try again shortly.
    RateLimited,
    /// HTTP 429 for an exhausted (daily) quota.
    QuotaExhausted,
    /// HTTP 400: the API refused the request.
    BadRequest,
    /// HTTP 401/403.
    PermissionDenied,
    /// HTTP 404: usually an unknown model name.
    ModelNotFound,
    /// HTTP 5xx after the CLI's retries.
    ServerError,
    /// The model returned an empty response (the CLI's INVALID_STREAM), exit 0.
    EmptyResponse,
    /// The CLI dropped the input without calling the API (a "success" with no tokens).
    InputTooLarge,
    /// The CLI exited 0 without its final `result` event.
    Incomplete,
    /// stdout or stderr passed `GEMINICLI_MCP_MAX_OUTPUT_BYTES`; the tree was killed.
    OutputLimit,
    /// `gemini_prompt_structured`: the answer does not validate against the schema.
    SchemaMismatch,
    /// The CLI could not be started (127 not found, 126 not executable).
    SpawnFailed,
    /// An exit code outside the documented set, or death by a signal the server did not send.
    Unknown,
    /// The CLI refused a flag the server passes (`Unknown argument(s): …`): it is too old (1).
    CliTooOld,
    /// `session_id` names no session of that workspace (the CLI's exit 42), or the CLI started
    /// another session than the one asked for.
    SessionNotFound,
    /// An opt-in deadline (first content, inactivity, total) passed; the tree was killed (124).
    Timeout,
    /// Google refused the CLI's login: since 2026-06-18 individual accounts cannot use it
    /// (`IneligibleTierError`, `UNSUPPORTED_CLIENT`); API keys and Vertex AI still work (1).
    AuthUnsupported,
    /// An answer a result must carry whole (a structured answer) is longer than the result
    /// budget; it is kept and readable with `gemini_read_answer` (0: the CLI succeeded).
    ResultTooLarge,
}

impl ErrorKind {
    /// Every kind, in the order of the table in docs/errors.md.
    pub const ALL: [ErrorKind; 28] = [
        ErrorKind::Error,
        ErrorKind::AuthRequired,
        ErrorKind::InputValidation,
        ErrorKind::SandboxError,
        ErrorKind::ConfigError,
        ErrorKind::TurnLimit,
        ErrorKind::LoopDetected,
        ErrorKind::ToolError,
        ErrorKind::UntrustedWorkspace,
        ErrorKind::Cancelled,
        ErrorKind::RateLimited,
        ErrorKind::QuotaExhausted,
        ErrorKind::BadRequest,
        ErrorKind::PermissionDenied,
        ErrorKind::ModelNotFound,
        ErrorKind::ServerError,
        ErrorKind::EmptyResponse,
        ErrorKind::InputTooLarge,
        ErrorKind::Incomplete,
        ErrorKind::OutputLimit,
        ErrorKind::SchemaMismatch,
        ErrorKind::SpawnFailed,
        ErrorKind::Unknown,
        ErrorKind::CliTooOld,
        ErrorKind::SessionNotFound,
        ErrorKind::Timeout,
        ErrorKind::AuthUnsupported,
        ErrorKind::ResultTooLarge,
    ];

    /// The wire name (`errorKind`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Error => "error",
            ErrorKind::AuthRequired => "auth_required",
            ErrorKind::InputValidation => "input_validation",
            ErrorKind::SandboxError => "sandbox_error",
            ErrorKind::ConfigError => "config_error",
            ErrorKind::TurnLimit => "turn_limit",
            ErrorKind::LoopDetected => "loop_detected",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::UntrustedWorkspace => "untrusted_workspace",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::QuotaExhausted => "quota_exhausted",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::ModelNotFound => "model_not_found",
            ErrorKind::ServerError => "server_error",
            ErrorKind::EmptyResponse => "empty_response",
            ErrorKind::InputTooLarge => "input_too_large",
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::OutputLimit => "output_limit",
            ErrorKind::SchemaMismatch => "schema_mismatch",
            ErrorKind::SpawnFailed => "spawn_failed",
            ErrorKind::Unknown => "unknown",
            ErrorKind::CliTooOld => "cli_too_old",
            ErrorKind::SessionNotFound => "session_not_found",
            ErrorKind::Timeout => "timeout",
            ErrorKind::AuthUnsupported => "auth_unsupported",
            ErrorKind::ResultTooLarge => "result_too_large",
        }
    }

    /// The exit code of this kind when no process decided one (a failure before the spawn, one
    /// the server decided, an ACP agent's answer): the "usual N" of the table in docs/errors.md,
    /// so the same kind always shows the same N.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Error
            | ErrorKind::Unknown
            | ErrorKind::CliTooOld
            | ErrorKind::AuthUnsupported => 1,
            ErrorKind::AuthRequired => 41,
            ErrorKind::InputValidation | ErrorKind::SessionNotFound => 42,
            ErrorKind::SandboxError => 44,
            ErrorKind::ConfigError => 52,
            ErrorKind::TurnLimit => 53,
            ErrorKind::ToolError => 54,
            ErrorKind::UntrustedWorkspace => 55,
            ErrorKind::Cancelled => 130,
            // An API error's exit is its HTTP status & 0xFF: 429 → 173, 400 → 144, 403 → 147,
            // 404 → 148, 500 → 244.
            ErrorKind::RateLimited | ErrorKind::QuotaExhausted => 173,
            ErrorKind::BadRequest => 144,
            ErrorKind::PermissionDenied => 147,
            ErrorKind::ModelNotFound => 148,
            ErrorKind::ServerError => 244,
            ErrorKind::EmptyResponse
            | ErrorKind::InputTooLarge
            | ErrorKind::Incomplete
            | ErrorKind::SchemaMismatch
            | ErrorKind::LoopDetected
            | ErrorKind::ResultTooLarge => 0,
            ErrorKind::OutputLimit => 137,
            ErrorKind::SpawnFailed => 127,
            ErrorKind::Timeout => 124,
        }
    }

    /// The kind of an API error from its HTTP status (when known) and its message: the message
    /// first, because a 429 is a daily quota or a retryable rate limit only by what it says.
    /// `None` when neither tells.
    pub fn from_http(status: Option<u16>, message: &str) -> Option<ErrorKind> {
        let lower = message.to_ascii_lowercase();
        let says = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
        if says(&[
            "exhausted your daily quota",
            "terminalquotaerror",
            "perday",
            "quota exceeded",
        ]) || (lower.contains("quota") && lower.contains("daily"))
        {
            return Some(ErrorKind::QuotaExhausted);
        }
        if says(&[
            "resource has been exhausted",
            "rate limit",
            "resource_exhausted",
            "too many requests",
        ]) {
            return Some(ErrorKind::RateLimited);
        }
        match status {
            Some(429) => Some(ErrorKind::RateLimited),
            Some(400) => Some(ErrorKind::BadRequest),
            Some(401 | 403) => Some(ErrorKind::PermissionDenied),
            Some(404) => Some(ErrorKind::ModelNotFound),
            Some(500..=599) => Some(ErrorKind::ServerError),
            _ if says(&["permission_denied", "unauthenticated"]) => {
                Some(ErrorKind::PermissionDenied)
            }
            _ if says(&["invalid_argument"]) => Some(ErrorKind::BadRequest),
            _ if says(&["not_found", "is not found"]) => Some(ErrorKind::ModelNotFound),
            _ => None,
        }
    }

    /// Whether the end of the CLI's stderr may say what the first line does not: for a failure
    /// the CLI did not name (and for its crashes, sandbox, settings and tool failures, a cut-off
    /// stream or a deadline). For an API error or a refusal the first line already carries the
    /// CLI's own words, and the stderr repeats them in a JavaScript object dump.
    pub fn stderr_helps(self) -> bool {
        matches!(
            self,
            ErrorKind::Error
                | ErrorKind::Unknown
                | ErrorKind::ConfigError
                | ErrorKind::ToolError
                | ErrorKind::SandboxError
                | ErrorKind::Incomplete
                | ErrorKind::Timeout
        )
    }

    /// What to do about a failure of this kind, in one sentence (a model can act on it).
    pub fn fix(self) -> &'static str {
        match self {
            ErrorKind::Error => "read the message and the stderr tail; call again if it looks transient",
            ErrorKind::AuthRequired => "set GEMINI_API_KEY (or configure Vertex AI) in the MCP server's environment; a Google login works only with a Standard or Enterprise licence since 2026-06-18",
            ErrorKind::AuthUnsupported => "use an API key (GEMINI_API_KEY) or Vertex AI in the MCP server's environment: Google no longer accepts the Gemini CLI's login for individual accounts (Standard and Enterprise licences still log in)",
            ErrorKind::InputValidation => "fix the arguments as the message says and call again",
            ErrorKind::SandboxError => "check the CLI's sandbox (docker or podman must run where the server runs), or call without sandbox",
            ErrorKind::ConfigError => "fix the settings file the message names",
            ErrorKind::TurnLimit => "start a new session, or raise model.maxSessionTurns in the CLI's settings",
            ErrorKind::LoopDetected => "call again with a narrower or reworded prompt; a new session (without session_id) leaves the repeated turns behind",
            ErrorKind::ToolError => "fix what the tool reported (often: free disk space)",
            ErrorKind::UntrustedWorkspace => "the server passes --skip-trust; set GEMINI_CLI_TRUST_WORKSPACE=true in its env if your CLI ignores it",
            ErrorKind::Cancelled => "call again if the work is still wanted",
            ErrorKind::RateLimited => "wait (retryDelayMs when given) and call again",
            ErrorKind::QuotaExhausted => "wait for the quota to reset, or call with another model",
            ErrorKind::BadRequest => "shorten or change the prompt",
            ErrorKind::PermissionDenied => "check the API key and what the account may use",
            ErrorKind::ModelNotFound => "check the model name (e.g. gemini-2.5-pro), or omit model",
            ErrorKind::ServerError => "call again later",
            ErrorKind::EmptyResponse => "call again, or rephrase the prompt",
            ErrorKind::InputTooLarge => "send a shorter prompt or context",
            ErrorKind::Incomplete => "call again; the stderr tail may say why the CLI stopped",
            ErrorKind::OutputLimit => "ask for a shorter answer, or raise GEMINICLI_MCP_MAX_OUTPUT_BYTES",
            ErrorKind::SchemaMismatch => "tighten the prompt or relax the schema, then call again",
            ErrorKind::SpawnFailed => "install the Gemini CLI (npm install -g @google/gemini-cli) or set GEMINI_CLI_BIN to its absolute path",
            ErrorKind::Unknown => "read the stderr tail",
            ErrorKind::CliTooOld => "upgrade the CLI (npm install -g @google/gemini-cli@latest), then run geminicli-mcp doctor",
            ErrorKind::SessionNotFound => "start a new conversation without session_id; a session belongs to the workspace it was made in",
            ErrorKind::Timeout => "raise or drop the deadline, or ask for less",
            ErrorKind::ResultTooLarge => "read it with gemini_read_answer as the message says, or ask for less",
        }
    }

    /// The kind the CLI's exit code alone implies (the last step of classification).
    pub fn from_exit_code(code: i32) -> ErrorKind {
        match code {
            1 => ErrorKind::Error,
            41 => ErrorKind::AuthRequired,
            42 => ErrorKind::InputValidation,
            44 => ErrorKind::SandboxError,
            52 => ErrorKind::ConfigError,
            53 => ErrorKind::TurnLimit,
            54 => ErrorKind::ToolError,
            55 => ErrorKind::UntrustedWorkspace,
            130 => ErrorKind::Cancelled,
            // API errors exit with the HTTP status & 0xFF: 429 → 173, 400 → 144, 401 → 145,
            // 403 → 147, 404 → 148, 5xx → 244..=255.
            173 => ErrorKind::RateLimited,
            144 => ErrorKind::BadRequest,
            145 | 147 => ErrorKind::PermissionDenied,
            148 => ErrorKind::ModelNotFound,
            244..=255 => ErrorKind::ServerError,
            126 | 127 => ErrorKind::SpawnFailed,
            0 => ErrorKind::Incomplete,
            _ => ErrorKind::Unknown,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with a structured answer (a `schema_mismatch` failure's `validationErrors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationIssue {
    /// JSON pointer into the candidate value (empty for the root or when nothing parsed).
    pub instance_path: String,
    /// What is wrong, long quotes elided to about `structured::MAX_ISSUE_MESSAGE_CHARS`
    /// characters.
    pub message: String,
}

/// What the run behind a failure left: everything a failure reports besides its kind, exit code
/// and message. Empty for a failure decided before anything ran.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// The end of the child's stderr, lossily decoded.
    pub stderr_tail: String,
    /// Assistant text seen before the failure, shared with the store of answers read on when it
    /// is rendered (it may be as long as the output cap: kept there, not copied).
    pub partial_response: Option<std::sync::Arc<String>>,
    /// The session the run used.
    pub session_id: Option<String>,
    /// The model the run used.
    pub model: Option<String>,
    /// The CLI's token and tool statistics.
    pub stats: Option<Value>,
    /// Milliseconds from the start to the end of supervision.
    pub duration_ms: u64,
    /// The signal that ended the child, when one did.
    pub signal: Option<i32>,
}

/// A structured answer that does not validate: why, and what came.
#[derive(Debug, Clone)]
pub struct Invalid {
    /// Each validation error.
    pub errors: Vec<ValidationIssue>,
    /// The model's raw answer, shared with the store of answers read on (it may be as long as the
    /// output cap: rendered, it is kept there, not copied).
    pub raw: std::sync::Arc<String>,
}

/// A failed call, with everything the error result reports.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The kind.
    pub kind: ErrorKind,
    /// `N` of `[error exit=N]`: the CLI's exit code, 128 + signal, 127/126, or the kind's own
    /// code when no process decided it ([`ErrorKind::exit_code`]).
    pub exit_code: i32,
    /// One line (or a few) saying what happened and what to do.
    pub message: String,
    /// What the run left.
    pub run: RunFacts,
    /// How long the API asked to wait, when it said.
    pub retry_delay_ms: Option<u64>,
    /// `schema_mismatch`: the validation errors and the raw answer.
    pub invalid: Option<Invalid>,
    /// What to do, when the situation says more than the kind's own fix ([`ErrorKind::fix`]).
    pub fix: Option<String>,
}

impl Failure {
    /// A failure of `kind` with its own exit code ([`ErrorKind::exit_code`]).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure::with_exit(kind, kind.exit_code(), message)
    }

    /// A failure whose exit code a process decided (the CLI's exit, 128 + signal, 127/126).
    pub fn with_exit(kind: ErrorKind, exit_code: i32, message: impl Into<String>) -> Self {
        Failure {
            kind,
            exit_code,
            message: message.into(),
            run: RunFacts::default(),
            retry_delay_ms: None,
            invalid: None,
            fix: None,
        }
    }

    /// Arguments refused before spawning: `[error exit=42] input_validation: …`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Failure::new(ErrorKind::InputValidation, message)
    }

    /// The call was cancelled (by the client, or the server shutting down): exit 130.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Failure::new(ErrorKind::Cancelled, message)
    }

    /// The server is shutting down.
    pub fn shutting_down() -> Self {
        Failure::cancelled("the server is shutting down")
    }

    /// What the run behind the failure left.
    pub fn with_run(mut self, run: RunFacts) -> Self {
        self.run = run;
        self
    }

    /// The retry delay the API gave.
    pub fn with_retry_delay(mut self, ms: Option<u64>) -> Self {
        self.retry_delay_ms = ms;
        self
    }

    /// A structured answer's validation errors and raw text.
    pub fn with_invalid(mut self, errors: Vec<ValidationIssue>, raw: String) -> Self {
        self.invalid = Some(Invalid {
            errors,
            raw: std::sync::Arc::new(raw),
        });
        self
    }

    /// A fix for this situation in place of the kind's own.
    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// What to do: this failure's own fix, else its kind's.
    pub fn fix(&self) -> &str {
        self.fix.as_deref().unwrap_or(self.kind.fix())
    }

    /// Appends a note in parentheses to the message (what a retry policy did).
    pub fn note(mut self, note: &str) -> Self {
        self.message = format!("{} ({note})", self.message);
        self
    }

    /// The first line of the text, byte for byte what clients match on.
    pub fn first_line(&self) -> String {
        let message = self.message.replace(['\r', '\n'], " ");
        format!("[error exit={}] {}: {}", self.exit_code, self.kind, message)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.first_line())
    }
}

impl std::error::Error for Failure {}

/// The last `max` bytes of `bytes`, lossily decoded, starting at a character boundary.
pub(crate) fn tail_lossy(bytes: &[u8], max: usize) -> String {
    let start = bytes.len().saturating_sub(max);
    let mut tail = &bytes[start..];
    // Skip UTF-8 continuation bytes so the cut does not produce a replacement character.
    while let Some((&b, rest)) = tail.split_first() {
        if start > 0 && (b & 0xC0) == 0x80 {
            tail = rest;
        } else {
            break;
        }
    }
    String::from_utf8_lossy(tail).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_is_exact_and_one_line() {
        let f = Failure::invalid_input("prompt must be a non-empty string");
        assert_eq!(
            f.first_line(),
            "[error exit=42] input_validation: prompt must be a non-empty string"
        );
        let f = Failure::new(ErrorKind::Error, "a\nb");
        assert_eq!(f.first_line(), "[error exit=1] error: a b");
    }

    #[test]
    fn every_kind_has_a_fix_that_never_sends_anyone_to_the_interactive_login() {
        for kind in ErrorKind::ALL {
            let fix = kind.fix();
            assert!(!fix.is_empty(), "{kind}");
            assert!(!fix.contains("interactive"), "{kind}: {fix}");
        }
    }

    #[test]
    fn exit_codes_map_to_kinds() {
        assert_eq!(ErrorKind::from_exit_code(41), ErrorKind::AuthRequired);
        assert_eq!(ErrorKind::from_exit_code(173), ErrorKind::RateLimited);
        assert_eq!(ErrorKind::from_exit_code(244), ErrorKind::ServerError);
        assert_eq!(ErrorKind::from_exit_code(7), ErrorKind::Unknown);
        assert_eq!(ErrorKind::from_exit_code(0), ErrorKind::Incomplete);
    }

    #[test]
    fn http_statuses_and_messages_map_to_kinds() {
        let k = ErrorKind::from_http;
        assert_eq!(
            k(Some(429), "You have exhausted your daily quota"),
            Some(ErrorKind::QuotaExhausted)
        );
        assert_eq!(
            k(Some(429), "quota for this daily limit"),
            Some(ErrorKind::QuotaExhausted)
        );
        assert_eq!(k(Some(429), "slow down"), Some(ErrorKind::RateLimited));
        assert_eq!(k(None, "RESOURCE_EXHAUSTED"), Some(ErrorKind::RateLimited));
        assert_eq!(k(Some(400), "bad"), Some(ErrorKind::BadRequest));
        assert_eq!(k(Some(403), "no"), Some(ErrorKind::PermissionDenied));
        assert_eq!(k(Some(404), "gone"), Some(ErrorKind::ModelNotFound));
        assert_eq!(k(Some(503), "later"), Some(ErrorKind::ServerError));
        assert_eq!(
            k(None, "models/x is not found"),
            Some(ErrorKind::ModelNotFound)
        );
        assert_eq!(k(None, "something else"), None);
    }

    #[test]
    fn every_kind_has_its_own_exit_code_where_no_process_decides() {
        for kind in ErrorKind::ALL {
            let f = Failure::new(kind, "x");
            assert_eq!(f.exit_code, kind.exit_code(), "{kind}");
        }
        assert_eq!(
            ErrorKind::from_exit_code(ErrorKind::RateLimited.exit_code()),
            ErrorKind::RateLimited
        );
        assert_eq!(
            ErrorKind::from_exit_code(ErrorKind::ModelNotFound.exit_code()),
            ErrorKind::ModelNotFound
        );
        assert_eq!(Failure::cancelled("x").exit_code, 130);
    }

    #[test]
    fn kind_names_are_unique_snake_case() {
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn the_errors_table_lists_every_kind() {
        let readme = include_str!("../docs/errors.md");
        let table: Vec<&str> = readme
            .lines()
            .filter(|l| l.starts_with("| `") && !l.starts_with("| `errorKind`"))
            .collect();
        for kind in ErrorKind::ALL {
            assert!(
                table
                    .iter()
                    .any(|row| row.starts_with(&format!("| `{kind}` |"))),
                "docs/errors.md lacks {kind}"
            );
        }
        assert_eq!(table.len(), ErrorKind::ALL.len(), "one row per kind");
    }

    #[test]
    fn tail_starts_on_a_char_boundary() {
        let s = "ééé".as_bytes();
        assert_eq!(tail_lossy(s, 3), "é");
        assert_eq!(tail_lossy(b"abc", 10), "abc");
    }
}
