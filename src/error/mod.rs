//! Every way a call can fail: the error kinds (one row each in `kinds`, from which the table in
//! docs/errors.md is made), and [`Failure`] with what its run left. `render` turns a failure into
//! the result a model reads; the first line `[error exit=N] KIND: message` is made here.

use std::borrow::Cow;

use serde_json::Value;

mod kinds;

#[cfg(test)]
use kinds::docs_table;
pub(crate) use kinds::ErrorKind;

/// Most bytes of the child's stderr repeated in an error result (the tail is kept).
pub(crate) const STDERR_TAIL_BYTES: usize = 4096;
/// Most characters of a partial answer or raw response a failure shows (the rest is kept and
/// readable on); with the first lines and the stderr tail, a failure stays under the 11,024
/// characters past which Claude Code cuts an error result in the middle.
pub(crate) const PARTIAL_TEXT_CHARS: usize = 4000;

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
    pub fn fix(&self) -> Cow<'_, str> {
        match &self.fix {
            Some(fix) => Cow::Borrowed(fix),
            None => self.kind.fix(),
        }
    }

    /// What to do as the result shows it: with no stderr tail shown, a kind's fix that points at
    /// the tail gives way to its [`kinds::Row::fix_without_tail`].
    pub fn fix_shown(&self, tail_shown: bool) -> Cow<'_, str> {
        match (&self.fix, self.kind.row().fix_without_tail) {
            (None, Some(alone)) if !tail_shown => Cow::Borrowed(alone),
            _ => self.fix(),
        }
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
    fn the_errors_table_of_the_docs_is_the_rows() {
        let docs = include_str!("../../docs/errors.md");
        let table: String = docs
            .lines()
            .skip_while(|l| !l.starts_with("| `errorKind`"))
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        let rows = docs_table();
        assert!(
            table == rows,
            "docs/errors.md's table differs from the rows of src/error/kinds.rs; the rows make \
             this table:\n{rows}"
        );
    }

    #[test]
    fn the_rows_classify_every_exit_code_of_the_cli_as_documented() {
        // The CLI's documented exits; an API error exits with its HTTP status & 0xFF.
        let documented = |code: i32| match code {
            0 => ErrorKind::Incomplete,
            1 => ErrorKind::Error,
            41 => ErrorKind::AuthRequired,
            42 => ErrorKind::InputValidation,
            44 => ErrorKind::SandboxError,
            52 => ErrorKind::ConfigError,
            53 => ErrorKind::TurnLimit,
            54 => ErrorKind::ToolError,
            55 => ErrorKind::UntrustedWorkspace,
            126 | 127 => ErrorKind::SpawnFailed,
            130 => ErrorKind::Cancelled,
            144 => ErrorKind::BadRequest,
            145 | 147 => ErrorKind::PermissionDenied,
            148 => ErrorKind::ModelNotFound,
            173 => ErrorKind::RateLimited,
            244..=255 => ErrorKind::ServerError,
            _ => ErrorKind::Unknown,
        };
        for code in -1..=300 {
            assert_eq!(
                ErrorKind::from_exit_code(code),
                documented(code),
                "exit {code}"
            );
        }
    }

    #[test]
    fn no_two_rows_claim_one_exit_code_of_the_cli() {
        for code in 0..=255 {
            let claims: Vec<ErrorKind> = ErrorKind::ALL
                .into_iter()
                .filter(|k| {
                    k.row()
                        .cli_exits
                        .iter()
                        .any(|(lo, hi)| (*lo..=*hi).contains(&code))
                })
                .collect();
            assert!(claims.len() <= 1, "exit {code}: {claims:?}");
        }
    }

    #[test]
    fn tail_starts_on_a_char_boundary() {
        let s = "ééé".as_bytes();
        assert_eq!(tail_lossy(s, 3), "é");
        assert_eq!(tail_lossy(b"abc", 10), "abc");
    }
}
