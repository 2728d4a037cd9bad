//! A one-shot run's end (exit status, the supervisor's kill, stream-json events, stderr) turned
//! into a success or a typed [`Failure`]. Precedence: a kill the server made → the `result` event →
//! the JSON error document or a known stderr signature → the exit code.

use std::time::Duration;

use crate::config::settings;
use crate::error::{tail_lossy, ErrorKind, Failure, RunFacts, STDERR_TAIL_BYTES};
use crate::gemini::outcome::{
    api_error_kind, is_notice, loop_detected, stderr_signature, strip_ansi, unsupported_login,
    OrError, Success,
};
use crate::gemini::process::{KillReason, RunOutput, Stream, Termination};
use crate::oneshot::events::{ResultEvent, Transcript};

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
                    "the Gemini CLI wrote more than the {name} cap ({total} bytes seen); its process tree was killed. Raise {} or ask for a shorter answer",
                    settings::MAX_OUTPUT_BYTES.name
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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The CLI's message as a failure's message: trimmed (the fix is the kind's own, said apart).
fn reason(message: &str) -> String {
    message.trim().to_owned()
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
