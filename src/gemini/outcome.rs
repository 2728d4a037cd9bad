//! What both backends read the same of the Gemini CLI's end: a successful run's answer, the
//! known failure texts on stderr (signatures, the JSON error document, a refused login, the API's
//! retry delay) and the notices that are never a failure's reason. The one-shot backend's
//! classification of a whole run is `crate::oneshot::classify`.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::error::ErrorKind;

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

/// A kind read from a failure's text or code, as a failure.
pub(crate) trait OrError {
    /// `error` for a kind that says no failure (`incomplete`, `unknown`).
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
pub(crate) fn api_error_kind(message: &str, stderr: &str, exit: i32) -> (ErrorKind, Option<u64>) {
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

pub(crate) fn strip_ansi(line: &str) -> String {
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
