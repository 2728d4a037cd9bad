//! One run's end (exit status, the supervisor's kill, stream-json events, stderr) turned into a
//! success or a typed [`Failure`]. Precedence: a kill the server made → the `result` event → the
//! JSON error document or a known stderr signature → the exit code.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::error::{tail_lossy, ErrorKind, Failure, RunFacts, STDERR_TAIL_BYTES};
use crate::oneshot::events::{ResultEvent, Transcript};
use crate::gemini::process::{KillReason, RunOutput, Stream, Termination};

/// A successful run.
#[derive(Debug, Clone)]
pub struct Success {
    /// The assistant text of the last model turn.
    pub answer: String,
    /// From `init`.
    pub session_id: Option<String>,
    /// From `init`.
    pub model: Option<String>,
    /// From `result`.
    pub stats: Option<Value>,
    /// Spawn to end of supervision.
    pub duration: Duration,
    /// The CLI's exit code (0).
    pub exit_code: i32,
}

/// Why the supervisor's cancellation fired, as the caller knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelCause {
    /// The client cancelled the request (no response will be sent).
    Client,
    /// The server is shutting down (signal, or stdin EOF past its grace).
    Shutdown,
}

/// What a finished run leaves for its failure: stderr tail, session, model, stats, duration and
/// the signal that ended it (the partial answer is moved in by [`classify`]).
fn facts(run: &RunOutput, transcript: &Transcript) -> RunFacts {
    RunFacts {
        stderr_tail: tail_lossy(&run.stderr, STDERR_TAIL_BYTES),
        partial_response: None,
        session_id: transcript.session_id.clone(),
        model: transcript.model.clone(),
        stats: transcript.result.as_ref().and_then(|r| r.stats.clone()),
        duration_ms: millis(run.duration),
        signal: match run.status {
            Some(Termination::Signaled(s)) => Some(s),
            _ => None,
        },
    }
}

/// Classifies one finished run. `deadline_ms` is the length of the deadline that killed it, if
/// one did (`KillReason::Deadline`).
///
/// The transcript is taken whole: a success's answer, or a failure's partial answer, is moved out
/// of it, not copied, so a text as long as the output cap is held once.
pub(crate) fn classify(
    run: &RunOutput,
    transcript: Transcript,
    cancel_cause: CancelCause,
    deadline_ms: Option<Duration>,
) -> Result<Success, Failure> {
    match judge(run, &transcript, cancel_cause, deadline_ms) {
        Ok(success) => Ok(Success {
            answer: transcript.into_answer(),
            ..success
        }),
        Err(mut failure) => {
            failure.run.partial_response = transcript.into_partial().map(std::sync::Arc::new);
            Err(failure)
        }
    }
}

/// [`classify`] with the transcript borrowed: the text is left for `classify` to move (a
/// success's `answer` is empty, a failure has no `partial_response` yet).
fn judge(
    run: &RunOutput,
    transcript: &Transcript,
    cancel_cause: CancelCause,
    deadline_ms: Option<Duration>,
) -> Result<Success, Failure> {
    let stderr = String::from_utf8_lossy(&run.stderr);
    let failure = |kind: ErrorKind, code: i32, message: String| {
        Failure::with_exit(kind, code, message).with_run(facts(run, transcript))
    };
    // 1. A kill the server made outranks whatever the dying CLI printed.
    if let Some(reason) = run.killed {
        let (kind, code, message) = killed(run, reason, cancel_cause, deadline_ms);
        return Err(failure(kind, code, message));
    }
    let exit = run.status.map_or(1, Termination::code);
    // Google's refusal of the login outranks the exit code it comes with (1, or 55 without
    // --skip-trust): it is the one thing a caller must know.
    if let Some(message) = unsupported_login(&stderr) {
        return Err(failure(ErrorKind::AuthUnsupported, exit, message));
    }
    // 2. The result event.
    if let Some(result) = &transcript.result {
        return from_result(run, transcript, result, &stderr, exit).map_err(
            |(kind, message, retry)| failure(kind, exit, message).with_retry_delay(retry),
        );
    }
    // 3. The JSON error document or a known stderr signature.
    if let Some((kind, message, retry)) = stderr_signature(&stderr, exit) {
        return Err(failure(kind, exit, reason(&message)).with_retry_delay(retry));
    }
    // 4. The exit code.
    let (kind, code, message) = from_status(run.status, &stderr);
    Err(failure(kind, code, message))
}

/// A run the supervisor ended: its kind, exit code and message.
fn killed(
    run: &RunOutput,
    reason: KillReason,
    cause: CancelCause,
    deadline_ms: Option<Duration>,
) -> (ErrorKind, i32, String) {
    let code = run.status.map(Termination::code).filter(|c| *c != 0);
    match reason {
        KillReason::OutputLimit(stream) => {
            let (name, total) = match stream {
                Stream::Stdout => ("stdout", run.stdout_total),
                Stream::Stderr => ("stderr", run.stderr_total),
            };
            (
                ErrorKind::OutputLimit,
                code.unwrap_or(ErrorKind::OutputLimit.exit_code()),
                format!(
                    "the Gemini CLI wrote more than the {name} cap ({total} bytes seen); its process tree was killed. Raise GEMINICLI_MCP_MAX_OUTPUT_BYTES or ask for a shorter answer"
                ),
            )
        }
        KillReason::Deadline(limit) => (
            ErrorKind::Timeout,
            ErrorKind::Timeout.exit_code(),
            format!(
                "{}; the CLI's process tree was killed",
                limit.passed(deadline_ms.map_or(0, |d| d.as_millis())),
            ),
        ),
        KillReason::Cancelled => {
            let message = match cause {
                CancelCause::Client => {
                    "the request was cancelled; the Gemini CLI process tree was killed"
                }
                CancelCause::Shutdown => {
                    "the server is shutting down; the Gemini CLI process tree was killed"
                }
            };
            (
                ErrorKind::Cancelled,
                code.unwrap_or(ErrorKind::Cancelled.exit_code()),
                message.into(),
            )
        }
    }
}

/// A failure read from the CLI's final `result` event: kind, message and retry delay.
type Reported = (ErrorKind, String, Option<u64>);

/// The answer, or the failure, that the `result` event reports.
fn from_result(
    run: &RunOutput,
    transcript: &Transcript,
    result: &ResultEvent,
    stderr: &str,
    exit: i32,
) -> Result<Success, Reported> {
    if result.is_success() {
        // The CLI reports the end its loop detection made as a warning beside a success; what
        // the model said before it is the partial answer (observed on 0.61).
        if transcript.errors.iter().any(|(_, m)| m == LOOP_DETECTED) {
            return Err((ErrorKind::LoopDetected, loop_detected(LOOP_DETECTED), None));
        }
        let dropped = result.nothing_was_sent() && transcript.answer().is_empty();
        if dropped || stderr.contains("stdin input truncated") {
            return Err((
                ErrorKind::InputTooLarge,
                "the Gemini CLI dropped the prompt without sending it to the model (no tokens used): the input is too large for it. Send a shorter prompt or context".into(),
                None,
            ));
        }
        return Ok(Success {
            // Moved out of the transcript by `classify`, which owns it.
            answer: String::new(),
            session_id: transcript.session_id.clone(),
            model: transcript.model.clone(),
            stats: result.stats.clone(),
            duration: run.duration,
            exit_code: exit,
        });
    }
    let kind = match result.error_type.as_deref() {
        Some("FatalTurnLimitedError") => Some(ErrorKind::TurnLimit),
        Some("FatalCancellationError") => Some(ErrorKind::Cancelled),
        Some("FatalToolExecutionError" | "no_space_left") => Some(ErrorKind::ToolError),
        Some("FatalAuthenticationError") => Some(ErrorKind::AuthRequired),
        Some("FatalConfigError") => Some(ErrorKind::ConfigError),
        Some("FatalSandboxError") => Some(ErrorKind::SandboxError),
        Some("FatalInputError") => Some(ErrorKind::InputValidation),
        _ => None,
    };
    if let Some(kind) = kind {
        let text = result
            .error_message
            .clone()
            .unwrap_or_else(|| kind.as_str().into());
        return Err((kind, reason(&text), None));
    }
    if let Some(message) = &result.error_message {
        let (kind, retry) = api_error_kind(message, stderr, exit);
        return Err((kind, reason(message), retry));
    }
    // status error without an error field: the empty-response path (INVALID_STREAM).
    let empty = transcript
        .errors
        .iter()
        .rev()
        .find(|(severity, _)| severity == "error")
        .map(|(_, m)| m.clone());
    let kind = ErrorKind::from_exit_code(exit).or_error();
    Err(match empty {
        Some(m) if m.contains("empty response") => (ErrorKind::EmptyResponse, m, None),
        Some(m) => (kind, m, None),
        None => (
            kind,
            "the Gemini CLI reported an error without details".into(),
            None,
        ),
    })
}

/// The warning of the CLI's loop detection in stream-json (an `error` event, severity `warning`).
const LOOP_DETECTED: &str = "Loop detected, stopping execution";

/// The message of a turn the CLI's loop detection ended, with what the CLI said of it.
pub(crate) fn loop_detected(said: &str) -> String {
    format!(
        "the Gemini CLI's loop detection ended the turn ({said}): the model kept repeating one tool call or one stretch of text, so the answer stops short"
    )
}

/// The reason of Google's refusal of the CLI's login for individual accounts (since 2026-06-18:
/// `IneligibleTierError`, reason code `UNSUPPORTED_CLIENT`), when stderr reports it.
pub(crate) fn unsupported_login(text: &str) -> Option<String> {
    const SIGNS: [&str; 3] = [
        "IneligibleTierError",
        "UNSUPPORTED_CLIENT",
        "no longer supported for Gemini Code Assist for individuals",
    ];
    if !SIGNS.iter().any(|s| text.contains(s)) {
        return None;
    }
    let line = text
        .lines()
        .find(|l| l.contains("IneligibleTierError:") || l.contains("no longer supported"))
        .unwrap_or("the Gemini CLI's Google login was refused (UNSUPPORTED_CLIENT)");
    let message = line
        .split_once("IneligibleTierError: ")
        .map_or(line, |(_, m)| m)
        .trim();
    Some(format!(
        "Google refused the Gemini CLI's login for this account: {message}"
    ))
}

/// A failure told only by how the CLI ended.
fn from_status(status: Option<Termination>, stderr: &str) -> (ErrorKind, i32, String) {
    match status {
        Some(Termination::Exited(0)) => (
            ErrorKind::Incomplete,
            0,
            "the Gemini CLI exited 0 without its final result event: the answer may be cut short (was it signalled?)".into(),
        ),
        Some(Termination::Signaled(s)) => (
            ErrorKind::Unknown,
            128 + s,
            format!("the Gemini CLI was killed by signal {s}"),
        ),
        Some(Termination::Exited(c)) => {
            let kind = ErrorKind::from_exit_code(c);
            let line = first_meaningful_line(stderr)
                .unwrap_or_else(|| format!("the Gemini CLI exited with code {c}"));
            (kind, c, reason(&line))
        }
        None => (
            ErrorKind::Unknown,
            1,
            "the Gemini CLI's exit status could not be collected".into(),
        ),
    }
}

trait OrError {
    fn or_error(self) -> ErrorKind;
}

impl OrError for ErrorKind {
    /// A failure reported with exit 0 or an unmapped code is still a failure: `error`.
    fn or_error(self) -> ErrorKind {
        match self {
            ErrorKind::Incomplete | ErrorKind::Unknown => ErrorKind::Error,
            k => k,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The CLI's message as a failure's message: trimmed (the fix is the kind's own, said apart).
fn reason(message: &str) -> String {
    message.trim().to_owned()
}

static HTTP_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:"code"\s*:\s*|\bstatus(?:\s+code)?\s*:?\s*|\bstatus\s+)([1-5][0-9]{2})\b"#)
        .expect("valid regex")
});
static RETRY_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:retry in|retry after|retryDelay"?\s*:\s*"?)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b"#,
    )
    .expect("valid regex")
});

/// The retry delay the API gave, in milliseconds.
pub(crate) fn retry_delay_ms(text: &str) -> Option<u64> {
    let caps = RETRY_IN.captures(text)?;
    let value: f64 = caps[1].parse().ok()?;
    let ms = if &caps[2] == "ms" {
        value
    } else {
        value * 1000.0
    };
    (ms.is_finite() && ms >= 0.0).then(|| ms.round() as u64)
}

/// Kind of an API error from its message (and the stderr around it, and the exit code).
fn api_error_kind(message: &str, stderr: &str, exit: i32) -> (ErrorKind, Option<u64>) {
    let retry = retry_delay_ms(message).or_else(|| retry_delay_ms(stderr));
    let status = HTTP_CODE
        .captures(message)
        .and_then(|c| c[1].parse::<u16>().ok());
    let kind = ErrorKind::from_http(status, message)
        .unwrap_or_else(|| ErrorKind::from_exit_code(exit).or_error());
    (kind, retry)
}

/// The upgrade hint of a `cli_too_old` failure (the doctor prints the same fix).
pub(crate) const CLI_TOO_OLD_HINT: &str = "the Gemini CLI is too old for this server (it needs --skip-trust and -o stream-json: version 0.40.0 or newer)";

/// Known failure texts on stderr when no `result` event came (pre-run failures print plain text,
/// `-o json` failures a JSON document).
pub(crate) fn stderr_signature(
    stderr: &str,
    exit: i32,
) -> Option<(ErrorKind, String, Option<u64>)> {
    if let Some((message, code)) = json_error_document(stderr) {
        let kind = match code {
            Some(41) => ErrorKind::AuthRequired,
            Some(42) => ErrorKind::InputValidation,
            Some(44) => ErrorKind::SandboxError,
            Some(52) => ErrorKind::ConfigError,
            Some(53) => ErrorKind::TurnLimit,
            Some(54) => ErrorKind::ToolError,
            Some(55) => ErrorKind::UntrustedWorkspace,
            Some(130) => ErrorKind::Cancelled,
            _ => {
                let with_code = match code {
                    Some(c) => format!("{message} (code {c})"),
                    None => message.clone(),
                };
                let (kind, retry) = api_error_kind(&with_code, stderr, exit);
                return Some((kind, message, retry));
            }
        };
        return Some((kind, message, None));
    }
    let line_with = |needle: &str| {
        stderr
            .lines()
            .find(|l| l.contains(needle))
            .map(|l| strip_ansi(l).trim().to_owned())
    };
    let checks: [(&str, ErrorKind); 12] = [
        ("Please set an Auth method", ErrorKind::AuthRequired),
        // A selected Google login without a cached one (exit 41): `Error authenticating:
        // FatalAuthenticationError: Manual authorization is required …`, a stack, the text again.
        ("Manual authorization is required", ErrorKind::AuthRequired),
        ("Invalid auth method selected", ErrorKind::AuthRequired),
        ("API key is missing", ErrorKind::AuthRequired),
        (
            "not running in a trusted directory",
            ErrorKind::UntrustedWorkspace,
        ),
        ("No input provided via stdin", ErrorKind::InputValidation),
        // `--resume <uuid>`: `Invalid session identifier …` or, in a project without sessions,
        // `No previous sessions found for this project.` (both exit 42, plain text).
        ("Error resuming session:", ErrorKind::SessionNotFound),
        ("Please fix the configuration file", ErrorKind::ConfigError),
        ("FatalSandboxError", ErrorKind::SandboxError),
        ("Reached max session turns", ErrorKind::TurnLimit),
        ("Operation cancelled.", ErrorKind::Cancelled),
        // yargs' strict mode: `Unknown argument: x` or `Unknown arguments: x, y`. The server
        // passes only flags a current CLI knows, so this means the CLI predates one of them.
        ("Unknown argument", ErrorKind::CliTooOld),
    ];
    for (needle, kind) in checks {
        if let Some(line) = line_with(needle) {
            let message = match (kind, needle) {
                (ErrorKind::ConfigError, _) => stderr
                    .lines()
                    .find(|l| l.starts_with("Error in "))
                    .map(|l| l.trim().to_owned())
                    .unwrap_or(line),
                (ErrorKind::CliTooOld, _) => format!("{line} — {CLI_TOO_OLD_HINT}"),
                (ErrorKind::AuthRequired, _) => line
                    .split_once("FatalAuthenticationError: ")
                    .map_or(line.clone(), |(_, m)| m.to_owned()),
                _ => line,
            };
            return Some((kind, message, None));
        }
    }
    None
}

/// The `{"session_id", "error": {"type", "message", "code"}}` document the CLI prints on stderr
/// for fatal errors in `-o json` mode (possibly twice, the second copy after `[ERROR] `).
fn json_error_document(stderr: &str) -> Option<(String, Option<i64>)> {
    let start = stderr.find("{\n")?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let bytes = stderr.as_bytes();
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    let doc: Value = serde_json::from_str(&stderr[start..=i]).ok()?;
                    let error = doc.get("error")?;
                    let message = error.get("message")?.as_str()?.to_owned();
                    return Some((message, error.get("code").and_then(Value::as_i64)));
                }
            }
            _ => {}
        }
    }
    None
}

fn strip_ansi(line: &str) -> String {
    static ANSI: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("valid regex"));
    ANSI.replace_all(line, "").into_owned()
}

/// Lines the CLI 0.61 prints before or beside any outcome, which are never a failure's reason
/// (`line` trimmed, ANSI stripped): the terminal warnings, start-up timing, a skipped system
/// settings file (its `sudo chmod` advice is about that file, not the failure), the untrusted
/// folder's overrides, the choice between two keys, a deprecated flag or telemetry option. Texts from the CLI's bundle
/// and runs. The one list: a failure's message and the stderr tail it shows both skip these.
pub(crate) fn is_notice(line: &str) -> bool {
    const NOTICES: [&str; 16] = [
        "Warning: Basic terminal detected",
        "Warning: 256-color support not detected",
        "Warning: True color (24-bit) support not detected",
        "Warning: Limited color support detected",
        "Warning: GNU screen detected",
        "Ripgrep is not available",
        "YOLO mode is enabled",
        "[STARTUP]",
        "Loaded cached credentials",
        "Warning: --allowed-tools cli argument",
        "Security Warning: Skipping ",
        "Approval mode overridden to \"default\" because the current folder is not trusted",
        "Both GOOGLE_API_KEY and GEMINI_API_KEY are set",
        "Skipping project agents due to untrusted folder",
        "Project hooks disabled because the folder is not trusted",
        // Telemetry's SDK, on in the agents where the user set none (`gemini::telemetry`).
        "The 'metricReader' option is deprecated",
    ];
    NOTICES.iter().any(|n| line.starts_with(n))
}

/// The first stderr line that can say why a run failed: not noise, not a JavaScript stack frame
/// or the braces of an error object dump.
fn first_meaningful_line(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .map(|l| strip_ansi(l).trim().to_owned())
        .find(|l| {
            !l.is_empty()
                && !is_notice(l)
                && !l.starts_with("at ")
                && !matches!(l.as_str(), "{" | "}")
        })
}

#[cfg(test)]
mod tests;
