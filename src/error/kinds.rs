//! Every kind of failure a call can end with, each declared once as a row of [`error_kinds!`]:
//! its name (the `KIND` of the first line and the `errorKind` field), the exit code it shows when
//! no process decided one, the CLI exit codes that alone imply it, whether the CLI's stderr may
//! say more than the first line, its fix (the line the model reads) and when it happens. The
//! table in docs/errors.md is made from these rows, and a test fails when the two differ.

use std::borrow::Cow;

use crate::config::settings;

/// One kind's row, as [`error_kinds!`] declares it.
pub struct Row {
    /// The wire name (`errorKind`, the `KIND` of `[error exit=N] KIND: …`).
    pub name: &'static str,
    /// `N` when no process decided one (a refusal before the spawn, a failure the server decided,
    /// an ACP agent's answer), so the same kind always shows the same N.
    pub exit: i32,
    /// The CLI exit codes (inclusive ranges) that alone imply this kind, the last step of
    /// classification; a code no row claims is `unknown`.
    pub cli_exits: &'static [(i32, i32)],
    /// The "usual N" column of docs/errors.md.
    pub shown_exits: &'static str,
    /// Whether the end of the CLI's stderr may say what the first line does not.
    pub stderr_helps: bool,
    /// What to do, one sentence a model can act on: its parts joined (a setting is named through
    /// its item, `settings::X.setting.name`).
    pub fix: &'static [&'static str],
    /// The fix in place of [`Row::fix`] when no stderr tail is shown (a fix that points at it).
    pub fix_without_tail: Option<&'static str>,
    /// When it happens: the "when" column of docs/errors.md, and the variant's documentation.
    pub when: &'static str,
}

/// Declares [`ErrorKind`], [`ErrorKind::ALL`] (in the rows' order) and the rows themselves.
macro_rules! error_kinds {
    ($(
        $variant:ident {
            name: $name:literal,
            exit: $exit:expr,
            cli_exits: $cli_exits:expr,
            shown_exits: $shown:literal,
            stderr_helps: $helps:literal,
            fix: $fix:expr,
            $(fix_without_tail: $alone:literal,)?
            when: $when:literal $(,)?
        }
    ),* $(,)?) => {
        /// Every kind of failure a call can end with (the rows of [`ErrorKind::row`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $(#[doc = $when] $variant,)*
        }

        impl ErrorKind {
            /// Every kind, in the order of the rows (and of the table in docs/errors.md).
            pub const ALL: [ErrorKind; [$(ErrorKind::$variant),*].len()] = [$(ErrorKind::$variant),*];

            /// This kind's row.
            pub fn row(self) -> &'static Row {
                match self {
                    $(ErrorKind::$variant => {
                        const ROW: Row = Row {
                            name: $name,
                            exit: $exit,
                            cli_exits: $cli_exits,
                            shown_exits: $shown,
                            stderr_helps: $helps,
                            fix: $fix,
                            fix_without_tail: error_kinds!(@opt $($alone)?),
                            when: $when,
                        };
                        &ROW
                    })*
                }
            }
        }
    };
    (@opt $alone:literal) => { Some($alone) };
    (@opt) => { None };
}

error_kinds! {
    Error {
        name: "error",
        exit: 1,
        cli_exits: &[(1, 1)],
        shown_exits: "1",
        stderr_helps: true,
        fix: &["read the message and the stderr tail; call again if it looks transient"],
        fix_without_tail: "read the message; call again if it looks transient",
        when: "general failure: malformed API stream, unexpected CLI error",
    },
    AuthRequired {
        name: "auth_required",
        exit: 41,
        cli_exits: &[(41, 41)],
        shown_exits: "41",
        stderr_helps: false,
        fix: &["set GEMINI_API_KEY (or configure Vertex AI) in the MCP server's environment; a Google login works only with a Standard or Enterprise licence since 2026-06-18"],
        when: "the CLI has no usable credentials (also OAuth waiting for a browser: `NO_BROWSER=true` makes it fail fast; a leftover `selectedType: \"oauth-personal\"` beside a key: `Manual authorization is required…`; `GOOGLE_GEMINI_BASE_URL` with no selected type: `Invalid auth method selected.`); where a settings file's `security.auth.selectedType` is the obstacle, the fix names the file: set it to `gemini-api-key` or remove it",
    },
    InputValidation {
        name: "input_validation",
        exit: 42,
        cli_exits: &[(42, 42)],
        shown_exits: "42",
        stderr_helps: false,
        fix: &["fix the arguments as the message says and call again"],
        when: "bad arguments (missing/wrong-typed field, empty prompt, bad `model`, prompt ≥ 8 MiB of UTF-8 or over 4,128,768 UTF-16 code units, bad schema), or the CLI's own input error",
    },
    SandboxError {
        name: "sandbox_error",
        exit: 44,
        cli_exits: &[(44, 44)],
        shown_exits: "44",
        stderr_helps: true,
        fix: &["check the CLI's sandbox (docker or podman must run where the server runs), or call without sandbox"],
        when: "the CLI's sandbox could not start",
    },
    ConfigError {
        name: "config_error",
        exit: 52,
        cli_exits: &[(52, 52)],
        shown_exits: "52",
        stderr_helps: true,
        fix: &["fix the settings file the message names"],
        when: "the CLI's `settings.json` is invalid",
    },
    TurnLimit {
        name: "turn_limit",
        exit: 53,
        cli_exits: &[(53, 53)],
        shown_exits: "53",
        stderr_helps: false,
        fix: &["start a new session, or raise model.maxSessionTurns in the CLI's settings"],
        when: "`maxSessionTurns` reached (over ACP: stop reason `max_turn_requests` where a settings layer sets `model.maxSessionTurns`, or cannot be read; 0.61 gives a turn its loop detection ended the same stop reason)",
    },
    LoopDetected {
        name: "loop_detected",
        exit: 0,
        cli_exits: &[],
        shown_exits: "0",
        stderr_helps: false,
        fix: &["call again with a narrower or reworded prompt; a new session (without session_id) leaves the repeated turns behind"],
        when: "the CLI's loop detection ended the turn: the model kept repeating one tool call or one stretch of text (one-shot: the warning `Loop detected, stopping execution` beside a success; over ACP: stop reason `max_turn_requests` where no `maxSessionTurns` is set); what it said before is the partial answer",
    },
    ToolError {
        name: "tool_error",
        exit: 54,
        cli_exits: &[(54, 54)],
        shown_exits: "54",
        stderr_helps: true,
        fix: &["fix what the tool reported (often: free disk space)"],
        when: "a fatal CLI tool error (no space left on device)",
    },
    UntrustedWorkspace {
        name: "untrusted_workspace",
        exit: 55,
        cli_exits: &[(55, 55)],
        shown_exits: "55",
        stderr_helps: false,
        fix: &["the server passes --skip-trust; set GEMINI_CLI_TRUST_WORKSPACE=true in its env if your CLI ignores it"],
        when: "the CLI refused the folder despite `--skip-trust`",
    },
    Cancelled {
        name: "cancelled",
        exit: 130,
        cli_exits: &[(130, 130)],
        shown_exits: "130",
        stderr_helps: false,
        fix: &["call again if the work is still wanted"],
        when: "the CLI reported cancellation, or the server killed the run at shutdown",
    },
    RateLimited {
        name: "rate_limited",
        // An API error's exit is its HTTP status & 0xFF: 429 → 173.
        exit: 173,
        cli_exits: &[(173, 173)],
        shown_exits: "173",
        stderr_helps: false,
        fix: &["wait (retryDelayMs when given) and call again"],
        when: "HTTP 429 the CLI retried without success (`retryDelayMs` when the API said how long to wait)",
    },
    QuotaExhausted {
        name: "quota_exhausted",
        exit: 173,
        cli_exits: &[],
        shown_exits: "173",
        stderr_helps: false,
        fix: &["wait for the quota to reset, or call with another model"],
        when: "HTTP 429 for an exhausted (daily) quota",
    },
    BadRequest {
        name: "bad_request",
        exit: 144,
        cli_exits: &[(144, 144)],
        shown_exits: "144",
        stderr_helps: false,
        fix: &["shorten or change the prompt"],
        when: "HTTP 400",
    },
    PermissionDenied {
        name: "permission_denied",
        exit: 147,
        // 401 → 145, 403 → 147.
        cli_exits: &[(145, 145), (147, 147)],
        shown_exits: "145, 147",
        stderr_helps: false,
        fix: &["check the API key and what the account may use"],
        when: "HTTP 401/403",
    },
    ModelNotFound {
        name: "model_not_found",
        exit: 148,
        cli_exits: &[(148, 148)],
        shown_exits: "148, 1",
        stderr_helps: false,
        fix: &["check the model name (e.g. gemini-2.5-pro), or omit model"],
        when: "HTTP 404, usually an unknown `model` (text mode exits 1)",
    },
    ServerError {
        name: "server_error",
        exit: 244,
        cli_exits: &[(244, 255)],
        shown_exits: "244–255",
        stderr_helps: false,
        fix: &["call again later"],
        when: "HTTP 5xx after the CLI's retries",
    },
    EmptyResponse {
        name: "empty_response",
        exit: 0,
        cli_exits: &[],
        shown_exits: "0",
        stderr_helps: false,
        fix: &["call again, or rephrase the prompt"],
        when: "the model returned an empty answer (the CLI's `INVALID_STREAM`)",
    },
    InputTooLarge {
        name: "input_too_large",
        exit: 0,
        cli_exits: &[],
        shown_exits: "0",
        stderr_helps: false,
        fix: &["send a shorter prompt or context"],
        when: "the CLI dropped the prompt without calling the API (exit 0, a success `result` with zero tokens and `models: {}`)",
    },
    Incomplete {
        name: "incomplete",
        exit: 0,
        cli_exits: &[(0, 0)],
        shown_exits: "0",
        stderr_helps: true,
        fix: &["call again; the stderr tail may say why the CLI stopped"],
        when: "the CLI exited 0 without its final `result` event",
    },
    OutputLimit {
        name: "output_limit",
        exit: 137,
        cli_exits: &[],
        shown_exits: "137",
        stderr_helps: false,
        fix: &["ask for a shorter answer, or raise ", settings::MAX_OUTPUT_BYTES.setting.name],
        when: "stdout or stderr passed the output cap (warm backend: what the turn keeps, one agent message, or the agent's stderr while the turn ran)",
    },
    SchemaMismatch {
        name: "schema_mismatch",
        exit: 0,
        cli_exits: &[],
        shown_exits: "0",
        stderr_helps: false,
        fix: &["tighten the prompt or relax the schema, then call again"],
        when: "the structured answer has no JSON, does not validate, or its JSON holds more than 1,000,000 values (`validationErrors`, `rawResponse`)",
    },
    SpawnFailed {
        name: "spawn_failed",
        exit: 127,
        cli_exits: &[(126, 127)],
        shown_exits: "127, 126",
        stderr_helps: false,
        fix: &["install the Gemini CLI (npm install -g @google/gemini-cli) or set ", settings::GEMINI_CLI_BIN.setting.name, " to its absolute path"],
        when: "the CLI was not found (127) or cannot be executed (126)",
    },
    Unknown {
        name: "unknown",
        exit: 1,
        cli_exits: &[],
        shown_exits: "other",
        stderr_helps: true,
        fix: &["read the stderr tail"],
        when: "an undocumented exit code, or death by a signal the server did not send",
    },
    CliTooOld {
        name: "cli_too_old",
        exit: 1,
        cli_exits: &[],
        shown_exits: "1",
        stderr_helps: false,
        fix: &["upgrade the CLI (npm install -g @google/gemini-cli@latest), then run geminicli-mcp doctor"],
        when: "the CLI refused a flag the server passes (`Unknown argument(s): …`): it predates 0.40.0",
    },
    SessionNotFound {
        name: "session_not_found",
        exit: 42,
        cli_exits: &[],
        shown_exits: "42",
        stderr_helps: false,
        fix: &["start a new conversation without session_id; a session belongs to the workspace it was made in"],
        when: "`session_id` names no session of that `workspace` (`Error resuming session: …`), or the CLI answered in another session",
    },
    Timeout {
        name: "timeout",
        exit: 124,
        cli_exits: &[],
        shown_exits: "124",
        stderr_helps: true,
        fix: &["raise or drop the deadline, or ask for less"],
        when: "an opt-in deadline passed (first content, inactivity, total; the message names it); the tree was killed, the partial answer is kept",
    },
    AuthUnsupported {
        name: "auth_unsupported",
        exit: 1,
        cli_exits: &[],
        shown_exits: "1",
        stderr_helps: false,
        fix: &["use an API key (GEMINI_API_KEY) or Vertex AI in the MCP server's environment: Google no longer accepts the Gemini CLI's login for individual accounts (Standard and Enterprise licences still log in)"],
        when: "Google refused the CLI's login (`IneligibleTierError`, `UNSUPPORTED_CLIENT`): since 2026-06-18 individual accounts (free, Google One, AI Pro/Ultra) cannot use the CLI's Google login. Recognised by its text before any exit-code rule (a run that also fails the trust check exits 55 and is still this kind); over ACP, `authenticate`/`session/new` answer -32000 with the same text",
    },
    ResultTooLarge {
        name: "result_too_large",
        exit: 0,
        cli_exits: &[],
        shown_exits: "0",
        stderr_helps: false,
        fix: &["read it with gemini_read_answer as the message says, or ask for less"],
        when: "a structured answer's JSON is longer than one result may hold (the result budget); it is never cut, but kept",
    },
}

impl ErrorKind {
    /// The wire name (`errorKind`).
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// The exit code of this kind when no process decided one ([`Row::exit`]).
    pub fn exit_code(self) -> i32 {
        self.row().exit
    }

    /// Whether the end of the CLI's stderr may say what the first line does not ([`Row::stderr_helps`]):
    /// for an API error or a refusal the first line already carries the CLI's own words, and the
    /// stderr repeats them in a JavaScript object dump.
    pub fn stderr_helps(self) -> bool {
        self.row().stderr_helps
    }

    /// What to do about a failure of this kind, in one sentence (a model can act on it).
    pub fn fix(self) -> Cow<'static, str> {
        match self.row().fix {
            [one] => Cow::Borrowed(one),
            parts => Cow::Owned(parts.concat()),
        }
    }

    /// The kind the CLI's exit code alone implies (the last step of classification): the row that
    /// claims it, else `unknown`.
    pub fn from_exit_code(code: i32) -> ErrorKind {
        ErrorKind::ALL
            .into_iter()
            .find(|k| {
                k.row()
                    .cli_exits
                    .iter()
                    .any(|(lo, hi)| (*lo..=*hi).contains(&code))
            })
            .unwrap_or(ErrorKind::Unknown)
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
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The table of docs/errors.md, made from the rows: one line a kind, in the rows' order.
#[cfg(test)]
pub(crate) fn docs_table() -> String {
    let mut table = String::from(
        "| `errorKind` | usual N | when | fix (the line the model reads) |\n|---|---:|---|---|\n",
    );
    for kind in ErrorKind::ALL {
        let row = kind.row();
        let fix = match row.fix_without_tail {
            Some(alone) => format!("{} (where no stderr tail is shown: {alone})", kind.fix()),
            None => kind.fix().into_owned(),
        };
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            row.name, row.shown_exits, row.when, fix
        ));
    }
    table
}
