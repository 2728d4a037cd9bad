//! The one place that turns failures into MCP tool results: the error kinds and their exit codes
//! (mirrored by the table in docs/errors.md), the `[error exit=N] KIND: message` text and the
//! `structuredContent` fields fixed in CONTRIBUTING.md.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

/// Most bytes of the child's stderr repeated in an error result (the tail is kept).
pub const STDERR_TAIL_BYTES: usize = 4096;
/// Most characters of a partial answer or raw response repeated in an error result.
pub const PARTIAL_TEXT_CHARS: usize = 8192;

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
}

impl ErrorKind {
    /// Every kind, in the order of the table in docs/errors.md.
    pub const ALL: [ErrorKind; 25] = [
        ErrorKind::Error,
        ErrorKind::AuthRequired,
        ErrorKind::InputValidation,
        ErrorKind::SandboxError,
        ErrorKind::ConfigError,
        ErrorKind::TurnLimit,
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
        }
    }

    /// The exit code of this kind when no process decided one (a failure before the spawn, one
    /// the server decided, an ACP agent's answer): the "usual N" of the table in docs/errors.md,
    /// so the same kind always shows the same N.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Error | ErrorKind::Unknown | ErrorKind::CliTooOld => 1,
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
            | ErrorKind::SchemaMismatch => 0,
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

    /// What to do about a failure of this kind, when the fix is always the same.
    pub fn fix(self) -> Option<&'static str> {
        match self {
            ErrorKind::AuthRequired => Some(
                "authenticate the Gemini CLI once (run `gemini` interactively) or set GEMINI_API_KEY in the MCP server's env",
            ),
            ErrorKind::UntrustedWorkspace => Some(
                "the server passes --skip-trust; set GEMINI_CLI_TRUST_WORKSPACE=true in its env if your CLI ignores it",
            ),
            ErrorKind::ModelNotFound => Some("check the model name (e.g. gemini-2.5-pro)"),
            ErrorKind::QuotaExhausted => Some("wait for the quota to reset or use another model"),
            ErrorKind::RateLimited => Some("retry later"),
            _ => None,
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

pub use crate::structured::ValidationIssue;

/// What the run behind a failure left: everything a failure reports besides its kind, exit code
/// and message. Empty for a failure decided before anything ran.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// The end of the child's stderr, lossily decoded.
    pub stderr_tail: String,
    /// Assistant text seen before the failure.
    pub partial_response: Option<String>,
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
    /// The model's raw answer.
    pub raw: String,
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
        self.invalid = Some(Invalid { errors, raw });
        self
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

    /// The human-readable text of the result: the first line, then the stderr tail and any
    /// partial answer or raw response.
    pub fn text(&self) -> String {
        let mut text = self.first_line();
        if let Some(ms) = self.retry_delay_ms {
            text.push_str(&format!("\nretry after: {ms} ms"));
        }
        if let Some(invalid) = &self.invalid {
            text.push_str("\nvalidation errors:");
            for e in &invalid.errors {
                let path = if e.instance_path.is_empty() {
                    "(root)"
                } else {
                    &e.instance_path
                };
                text.push_str(&format!("\n  {path}: {}", e.message));
            }
            text.push_str("\n--- raw response ---\n");
            text.push_str(&clip(&invalid.raw));
        }
        if !self.run.stderr_tail.trim().is_empty() {
            text.push_str("\n--- stderr (tail) ---\n");
            text.push_str(self.run.stderr_tail.trim_end());
        }
        if let Some(partial) = &self.run.partial_response {
            text.push_str("\n--- partial response ---\n");
            text.push_str(&clip(partial));
        }
        text
    }

    /// `structuredContent` of the error result (CONTRIBUTING.md).
    pub fn structured(&self) -> Value {
        json!({
            "errorKind": self.kind.as_str(),
            "exitCode": self.exit_code,
            "message": self.message,
            "stderrTail": self.run.stderr_tail,
            "partialResponse": self.run.partial_response.as_deref().map(clip),
            "sessionId": self.run.session_id,
            "model": self.run.model,
            "stats": self.run.stats,
            "durationMs": self.run.duration_ms,
            "signal": self.run.signal,
            "retryDelayMs": self.retry_delay_ms,
            "validationErrors": self.invalid.as_ref().map(|invalid| {
                invalid
                    .errors
                    .iter()
                    .map(|e| json!({"instancePath": e.instance_path, "message": e.message}))
                    .collect::<Vec<_>>()
            }),
            "rawResponse": self.invalid.as_ref().map(|i| clip(&i.raw)),
        })
    }
}

/// The one renderer of failures into tool results: `isError: true`, the text block, and the
/// `structuredContent` of the tool's contract.
impl Failure {
    /// The result of every tool but the `acp` set's `gemini`: [`Failure::structured`].
    pub fn into_call_tool_result(self) -> CallToolResult {
        let structured = self.structured();
        self.result(structured)
    }

    /// The result of the `acp` set's `gemini` tool: gemini_mcp's contract (`success: false`,
    /// `SESSION_ID`, `agent_messages`, `error`, …) with the kind and exit code, and `extra`
    /// (what the call asked to be echoed) on top.
    pub fn into_agent_result(self, extra: Map<String, Value>) -> CallToolResult {
        let mut v = json!({
            "success": false,
            "SESSION_ID": self.run.session_id,
            "agent_messages": self.run.partial_response.as_deref().map(clip).unwrap_or_default(),
            "thought": "",
            "stop_reason": null,
            "tool_calls": [],
            "plan": [],
            "error": self.message,
            "errorKind": self.kind.as_str(),
            "exitCode": self.exit_code,
        });
        for (k, val) in extra {
            v[k] = val;
        }
        self.result(v)
    }

    fn result(self, structured: Value) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text(self.text())]);
        result.structured_content = Some(structured);
        result
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.first_line())
    }
}

impl std::error::Error for Failure {}

/// The last `max` bytes of `bytes`, lossily decoded, starting at a character boundary.
pub fn tail_lossy(bytes: &[u8], max: usize) -> String {
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

/// The one cut of a partial answer or raw response in an error result, in its text and its
/// `structuredContent` alike: the first [`PARTIAL_TEXT_CHARS`] characters (models read from the
/// start), with a marker saying how many more there were.
pub fn clip(text: &str) -> String {
    head_chars(text, PARTIAL_TEXT_CHARS)
}

/// The first `max` characters of `text`, with a marker when cut.
pub fn head_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!(
            "{}\n[… {} more characters]",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_format_is_exact() {
        let f = Failure::invalid_input("prompt must be a non-empty string");
        assert_eq!(
            f.first_line(),
            "[error exit=42] input_validation: prompt must be a non-empty string"
        );
        assert!(f.text().starts_with("[error exit=42] input_validation: "));
    }

    #[test]
    fn message_newlines_stay_out_of_the_first_line() {
        let f = Failure::new(ErrorKind::Error, "a\nb");
        assert_eq!(
            f.text().lines().next().unwrap(),
            "[error exit=1] error: a b"
        );
    }

    #[test]
    fn structured_has_every_contract_field() {
        let v = Failure::new(ErrorKind::RateLimited, "slow down").structured();
        for key in [
            "errorKind",
            "exitCode",
            "message",
            "stderrTail",
            "partialResponse",
            "sessionId",
            "model",
            "stats",
            "durationMs",
            "signal",
            "retryDelayMs",
            "validationErrors",
            "rawResponse",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert_eq!(v["errorKind"], "rate_limited");
        assert_eq!(v["exitCode"], 173);
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
    fn partial_text_is_cut_once_and_the_same_way_in_text_and_structure() {
        let long: String = "é".repeat(PARTIAL_TEXT_CHARS + 10);
        let f = Failure::new(ErrorKind::Error, "x").with_run(RunFacts {
            partial_response: Some(long),
            ..RunFacts::default()
        });
        let structured = f.structured()["partialResponse"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            structured.ends_with("[… 10 more characters]"),
            "{}",
            &structured[structured.len() - 40..]
        );
        assert!(f.text().ends_with(&structured));
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

    #[test]
    fn head_marks_the_cut() {
        assert_eq!(head_chars("abc", 5), "abc");
        assert!(head_chars("abcdef", 2).starts_with("ab\n[… 4 more"));
    }
}
