//! The one place that turns failures into MCP tool results: the error kinds and their exit codes
//! (mirrored by the errors table in README.md), the `[error exit=N] KIND: message` text and the
//! `structuredContent` fields fixed in CONTRIBUTING.md.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

/// Most bytes of the child's stderr repeated in an error result (the tail is kept).
pub const STDERR_TAIL_BYTES: usize = 4096;
/// Most characters of a partial answer or raw response repeated in an error result's text.
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
    /// Every kind, in the README table's order.
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

/// A failed call, with everything the error result reports.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The kind.
    pub kind: ErrorKind,
    /// `N` of `[error exit=N]`: the CLI's exit code, 128 + signal, 127/126, or 42 before spawning.
    pub exit_code: i32,
    /// One line (or a few) saying what happened and what to do.
    pub message: String,
    /// The end of the child's stderr, lossily decoded.
    pub stderr_tail: String,
    /// Assistant text seen before the failure.
    pub partial_response: Option<String>,
    /// From the `init` event.
    pub session_id: Option<String>,
    /// From the `init` event.
    pub model: Option<String>,
    /// From the `result` event.
    pub stats: Option<Value>,
    /// Milliseconds from spawn to the end of supervision (0 when nothing was spawned).
    pub duration_ms: u64,
    /// The signal that ended the child, when one did.
    pub signal: Option<i32>,
    /// How long the API asked to wait, when it said.
    pub retry_delay_ms: Option<u64>,
    /// `schema_mismatch`: each validation error.
    pub validation_errors: Option<Vec<ValidationIssue>>,
    /// `schema_mismatch`: the model's raw answer.
    pub raw_response: Option<String>,
}

impl Failure {
    /// A failure with only a kind, an exit code and a message (the rest empty).
    pub fn new(kind: ErrorKind, exit_code: i32, message: impl Into<String>) -> Self {
        Failure {
            kind,
            exit_code,
            message: message.into(),
            stderr_tail: String::new(),
            partial_response: None,
            session_id: None,
            model: None,
            stats: None,
            duration_ms: 0,
            signal: None,
            retry_delay_ms: None,
            validation_errors: None,
            raw_response: None,
        }
    }

    /// Arguments refused before spawning: `[error exit=42] input_validation: …`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Failure::new(ErrorKind::InputValidation, 42, message)
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
        if let Some(errors) = &self.validation_errors {
            text.push_str("\nvalidation errors:");
            for e in errors {
                let path = if e.instance_path.is_empty() {
                    "(root)"
                } else {
                    &e.instance_path
                };
                text.push_str(&format!("\n  {path}: {}", e.message));
            }
        }
        if let Some(raw) = &self.raw_response {
            text.push_str("\n--- raw response ---\n");
            text.push_str(&head_chars(raw, PARTIAL_TEXT_CHARS));
        }
        if !self.stderr_tail.trim().is_empty() {
            text.push_str("\n--- stderr (tail) ---\n");
            text.push_str(self.stderr_tail.trim_end());
        }
        if let Some(partial) = &self.partial_response {
            text.push_str("\n--- partial response ---\n");
            text.push_str(&head_chars(partial, PARTIAL_TEXT_CHARS));
        }
        text
    }

    /// `structuredContent` of the error result (CONTRIBUTING.md).
    pub fn structured(&self) -> Value {
        json!({
            "errorKind": self.kind.as_str(),
            "exitCode": self.exit_code,
            "message": self.message,
            "stderrTail": self.stderr_tail,
            "partialResponse": self.partial_response,
            "sessionId": self.session_id,
            "model": self.model,
            "stats": self.stats,
            "durationMs": self.duration_ms,
            "signal": self.signal,
            "retryDelayMs": self.retry_delay_ms,
            "validationErrors": self.validation_errors.as_ref().map(|errors| {
                errors
                    .iter()
                    .map(|e| json!({"instancePath": e.instance_path, "message": e.message}))
                    .collect::<Vec<_>>()
            }),
            "rawResponse": self.raw_response,
        })
    }

    /// The MCP result: `isError: true`, the text block, and `structuredContent`.
    pub fn into_call_tool_result(self) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text(self.text())]);
        result.structured_content = Some(self.structured());
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
        let f = Failure::new(ErrorKind::Error, 1, "a\nb");
        assert_eq!(
            f.text().lines().next().unwrap(),
            "[error exit=1] error: a b"
        );
    }

    #[test]
    fn structured_has_every_contract_field() {
        let v = Failure::new(ErrorKind::RateLimited, 173, "slow down").structured();
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
    fn readme_errors_table_lists_every_kind() {
        let readme = include_str!("../README.md");
        let table: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.starts_with("## Errors"))
            .take_while(|l| !l.starts_with("## Differences"))
            .filter(|l| l.starts_with("| `") && !l.starts_with("| `errorKind`"))
            .collect();
        for kind in ErrorKind::ALL {
            assert!(
                table
                    .iter()
                    .any(|row| row.starts_with(&format!("| `{kind}` |"))),
                "README errors table lacks {kind}"
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
