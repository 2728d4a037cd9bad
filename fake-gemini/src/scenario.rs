//! The scenario model: what the model and its environment do (derived into exact CLI output by
//! `run`), the raw process faults, and the `expect` self-checks. Scenario files are TOML with
//! kebab-case keys; built-ins are the same TOML compiled into the binary.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One scenario file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Scenario {
    /// One sentence: the behaviour this scenario pins down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// `observed` (seen on the real CLI 0.61) or `from-source` (emulated from the upstream source, unverified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Facts about the machine the CLI runs on.
    #[serde(default)]
    pub environment: Environment,
    /// What the Gemini API does.
    #[serde(default)]
    pub model: Model,
    /// Raw process faults; they need no derivation.
    #[serde(default)]
    pub process: Process,
    /// Self-checks on how the fake was called; a failed check exits 99.
    #[serde(default)]
    pub expect: Expect,
}

/// How authentication resolves.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// Authenticated whatever the environment says (the default; `FAKE_GEMINI_AUTH=env` switches to `env`).
    #[default]
    Authenticated,
    /// The real check: `security.auth.selectedType` in settings.json, else GEMINI_API_KEY / GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_GENAI_USE_GCA.
    Env,
    /// Exit 41: "Please set an Auth method …".
    Missing,
    /// Exit 41: "Invalid auth method selected."
    Invalid,
    /// OAuth login that waits for a browser that never comes (fails fast when NO_BROWSER is set).
    OauthWait,
    /// A cached Google login that Google refuses since 2026-06-18 for individual accounts
    /// (`IneligibleTierError`, reason code `UNSUPPORTED_CLIENT`): exit 1, nothing on stdout in any
    /// format (55 when the folder is untrusted); ACP answers `authenticate` and `session/new` with
    /// -32000 and the message.
    Unsupported,
}

/// How folder trust resolves.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// The real rules: `GEMINI_RESTRICTED_MODE`, `--skip-trust`, `GEMINI_CLI_TRUST_WORKSPACE`,
    /// `security.folderTrust.enabled`, trustedFolders.json, else untrusted (never an approval mode).
    #[default]
    Rules,
    /// Always trusted.
    Trusted,
    /// Never trusted, even with `--skip-trust` (exit 55).
    Untrusted,
}

/// What `--sandbox` finds.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Sandbox {
    /// As the machine is: docker or podman on `PATH` (the CLI's own test), then as
    /// `image-missing` (no image can be pulled offline), else as `command-missing`.
    #[default]
    FromPath,
    /// No docker image (observed: exit 1, "Failed to relaunch the CLI process").
    ImageMissing,
    /// Neither docker nor podman on the machine (observed: exit 44, "GEMINI_SANDBOX is true but
    /// failed to determine command for sandbox; …").
    CommandMissing,
    /// An invalid sandbox command (exit 44, from source).
    InvalidCommand,
    /// The sandbox starts; the run proceeds as usual.
    Available,
}

/// When stdin's first bytes arrive, relative to the CLI's 500 ms window.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StdinTiming {
    /// Whatever really arrives within the window is read.
    #[default]
    Real,
    /// As if stdin arrived after the window: it is ignored.
    Late,
    /// As if neither stdin nor a prompt arrived: exit 42, whatever was passed.
    NoInput,
}

/// How long the fake takes where the real CLI takes seconds (see [`crate::timing`]).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// No start-up latency; the stdin window opens at once (tests stay fast).
    #[default]
    Fast,
    /// The real CLI's measured start-up, stdin window and first-answer latency.
    Real,
}

/// Environment facts.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Environment {
    /// Authentication outcome.
    #[serde(default)]
    pub auth: Auth,
    /// Folder trust outcome.
    #[serde(default)]
    pub trust: Trust,
    /// settings.json is unparsable: the text after `Error in <settings>: ` (exit 52).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_error: Option<String>,
    /// `model.maxSessionTurns` from settings.json (exit 53 when exceeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_session_turns: Option<u32>,
    /// Treat this `--include-directories` entry as missing (`*` = the first one given, or /nonexistent/dir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_include_directory: Option<String>,
    /// What `--sandbox` finds.
    #[serde(default)]
    pub sandbox: Sandbox,
    /// The emulated CLI version (overrides FAKE_GEMINI_VERSION).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
    /// Print the two `[STARTUP] Phase 'cleanup_ops' …` lines (the real CLI does in about 8 % of runs).
    #[serde(default)]
    pub startup_noise: bool,
    /// Start-up latency before the first byte.
    #[serde(default)]
    pub startup_delay_ms: u64,
    /// Stdin timing.
    #[serde(default)]
    pub stdin: StdinTiming,
    /// `real`: the real CLI's start-up and waits (also `FAKE_GEMINI_TIMING=real`).
    #[serde(default)]
    pub timing: Timing,
    /// Context window in tokens; a larger prompt is never sent (exit 0, empty answer). Default 1048576.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window_tokens: Option<u64>,
    /// Ctrl+C on a TTY after this many answer chunks: exit 130 "Operation cancelled." (from source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_after_chunks: Option<u32>,
    /// Write this raw text to stdout before the user message, as `/memory show` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stdout_before_answer: Option<String>,
}

/// What to do with a model name the API does not know.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownModel {
    /// 404 NOT_FOUND, as the real API answers (exit 1).
    #[default]
    NotFound,
    /// Answer anyway (what a permissive mock does).
    Accept,
}

/// Token usage reported by each API response.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Usage {
    /// promptTokenCount
    #[serde(default = "d100")]
    pub prompt: u64,
    /// candidatesTokenCount
    #[serde(default = "d7")]
    pub candidates: u64,
    /// thoughtsTokenCount
    #[serde(default = "d13")]
    pub thoughts: u64,
    /// cachedContentTokenCount
    #[serde(default)]
    pub cached: u64,
}

fn d100() -> u64 {
    100
}
fn d7() -> u64 {
    7
}
fn d13() -> u64 {
    13
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            prompt: 100,
            candidates: 7,
            thoughts: 13,
            cached: 0,
        }
    }
}

/// One model response (one API call of the main loop).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Turn {
    /// Thought text (never printed; only counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// The answer text as one chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The answer text as explicit stream chunks (wins over `text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<String>,
    /// Function calls in this response; the CLI runs them and sends the results back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// One function call.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ToolCall {
    /// Tool name (`list_directory`, `run_shell_command`, …).
    pub name: String,
    /// Arguments object.
    #[serde(default)]
    pub args: BTreeMap<String, serde_json::Value>,
    /// Output on success (default: `Directory is empty.` for list_directory, else empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Make the tool fail with this error type (e.g. `execution_failed`; `no_space_left` is fatal, exit 54).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// Kinds of API failure.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// 429 with a per-day QuotaFailure: no retries.
    QuotaDaily,
    /// Plain 429 RESOURCE_EXHAUSTED: retried, then fatal.
    RateLimit,
    /// Another HTTP status (400, 401, 403, 404, 500, 503); 5xx are retried.
    Status,
    /// 200 with no text: retried, then INVALID_STREAM (exit 0).
    EmptyResponse,
    /// A valid chunk, then unparsable SSE JSON (exit 1).
    MalformedStream,
    /// No network: `fetch failed` retries of the router call forever.
    Network,
}

/// An API failure on the main call.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Failure {
    /// What fails.
    pub kind: FailureKind,
    /// HTTP status for `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// API error message (defaults per status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Attempts before giving up (retryable kinds; default 10, empty-response 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Delay between attempts (default 20 ms; FAKE_GEMINI_ATTEMPT_DELAY_MS overrides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_delay_ms: Option<u64>,
    /// The partial delta before a malformed chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// The failing call is the one after this many responses of `turns` (their tool calls ran
    /// first, as when the quota runs out mid-turn); past the last response, after it. Default 0:
    /// the first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_turns: Option<u32>,
}

impl Failure {
    /// A plain HTTP `status` on the main call, every other field at its default (the 404 that an
    /// unknown model gets).
    pub fn status(status: u16) -> Failure {
        Failure {
            kind: FailureKind::Status,
            status: Some(status),
            message: None,
            attempts: None,
            attempt_delay_ms: None,
            partial: None,
            after_turns: None,
        }
    }
}

/// The model's side of a run.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Model {
    /// modelVersion of the main responses (default: the requested model resolved as the real CLI does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// modelVersion of the router call under `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_version: Option<String>,
    /// Unknown `-m` names.
    #[serde(default)]
    pub unknown_model: UnknownModel,
    /// Delay before the answer.
    #[serde(default)]
    pub delay_ms: u64,
    /// After the delay, the answer waits until this file exists: a test releases a held run when
    /// it is ready instead of waiting out a fixed delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_file: Option<String>,
    /// Delay between chunks.
    #[serde(default)]
    pub chunk_interval_ms: u64,
    /// The responses; empty = one response `Hello` + ` there! How can I help?`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<Turn>,
    /// Ordered answers across runs in one project (cycled); replaces the last turn's text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<String>,
    /// Usage per response.
    #[serde(default)]
    pub usage: Usage,
    /// The main call fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The model repeats its last tool call: the CLI stops with "Loop detected".
    #[serde(default)]
    pub loop_detected: bool,
}

/// Where a hang happens.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Hang {
    /// Before any stdout byte.
    BeforeOutput,
    /// After the first answer chunk.
    AfterOutput,
}

/// A descendant the worker spawns, holding the inherited stdout/stderr.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Descendant {
    /// Same process group.
    Grandchild,
    /// In a new session (escapes a process-group kill).
    SetsidGrandchild,
}

/// What the worker does once it spawned its descendant.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Then {
    /// Hang until killed.
    #[default]
    Hang,
    /// Finish the answer and exit 0.
    Exit,
}

/// The `session/update` an ACP flood is made of.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FloodUpdate {
    /// `agent_message_chunk`s.
    #[default]
    Message,
    /// `agent_thought_chunk`s.
    Thought,
    /// `tool_call`s, each a new call whose output is the text.
    Tool,
}

/// Raw process faults.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Process {
    /// Hang until killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang: Option<Hang>,
    /// Hang until killed once this many answer chunks were written (a stream stalling mid-way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_after_chunks: Option<u32>,
    /// Answer with this many bytes (in the chosen format), as fast as possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flood_stdout_bytes: Option<u64>,
    /// Write this many bytes of retry-like noise to stderr, then answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flood_stderr_bytes: Option<u64>,
    /// Answer with one chunk of this many bytes (one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_line_bytes: Option<u64>,
    /// Over `--acp`: the update a flood (`flood-stdout-bytes`, `long-line-bytes`) is made of
    /// (default: message chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flood_update: Option<FloodUpdate>,
    /// Put invalid UTF-8 into the answer and stderr.
    #[serde(default)]
    pub non_utf8: bool,
    /// Put a non-JSON line into json / stream-json stdout.
    #[serde(default)]
    pub invalid_json: bool,
    /// Die by this signal after the first answer chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_signal: Option<i32>,
    /// The worker ignores SIGTERM.
    #[serde(default)]
    pub ignore_sigterm: bool,
    /// Spawn a descendant that holds stdout/stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descendant: Option<Descendant>,
    /// How long the descendant lives (default 600000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descendant_hold_ms: Option<u64>,
    /// After spawning the descendant.
    #[serde(default)]
    pub then: Then,
    /// The worker first exits 199 this many times (the launcher relaunches it).
    #[serde(default)]
    pub relaunches: u32,
    /// Raw mode: write exactly these stdout bytes (no CLI output at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Raw mode: write exactly these stderr bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// Raw mode: exit with this code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// Self-checks.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Expect {
    /// argv (without argv0) must equal this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// argv must contain each of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv_contains: Vec<String>,
    /// argv must contain none of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv_excludes: Vec<String>,
    /// stdin must equal this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// stdin must contain this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_contains: Option<String>,
    /// These env vars must have exactly these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// These env vars must be set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_present: Vec<String>,
    /// These env vars must not be set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_absent: Vec<String>,
    /// The working directory must be this path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// The fake's own failures (exit 99).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not a built-in and no such file.
    #[error("unknown scenario `{0}` (not built in, not a file, not in FAKE_GEMINI_SCENARIO_DIR)")]
    Unknown(String),
    /// The file could not be read.
    #[error("cannot read scenario file {0}: {1}")]
    Read(String, std::io::Error),
    /// The TOML is invalid.
    #[error("invalid scenario {0}: {1}")]
    Parse(String, String),
    /// A marker parameter is unknown or has a bad value.
    #[error("scenario `{0}`: {1}")]
    Param(String, String),
}

macro_rules! builtins {
    ($($name:literal),* $(,)?) => {
        /// Built-in scenarios: (name, TOML source), compiled from `scenarios/*.toml`.
        pub static BUILTINS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../scenarios/", $name, ".toml")))),*
        ];
    };
}

builtins!(
    "success",
    "tool-call",
    "tool-error",
    "thinking",
    "auth-missing",
    "auth-invalid",
    "oauth-wait",
    "auth-unsupported",
    "untrusted-workspace",
    "no-input",
    "stdin-late",
    "bad-at-reference",
    "include-dir-missing",
    "quota-daily",
    "rate-limit-retry",
    "api-400",
    "api-401",
    "api-403",
    "model-not-found",
    "api-500",
    "api-503",
    "empty-response",
    "malformed-stream",
    "network-down",
    "turn-limit",
    "loop-detected",
    "tool-fatal",
    "sandbox-error",
    "sandbox-command-missing",
    "config-error",
    "cancelled",
    "session-not-found",
    "input-too-large",
    "memory-show",
    "old-version",
    "slow-start",
    "trickle",
    "hang",
    "hang-after-output",
    "flood-stdout",
    "flood-stderr",
    "long-line",
    "non-utf8",
    "invalid-json",
    "crash",
    "relaunch",
    "ignore-sigterm",
    "grandchild-holds-stdout",
    "exit-0-descendant-holds-stdout",
    "setsid-grandchild",
);

/// Parses scenario TOML.
pub fn parse(name: &str, src: &str) -> Result<Scenario, ScenarioError> {
    toml::from_str(src).map_err(|e| ScenarioError::Parse(name.to_string(), e.to_string()))
}

/// Resolves a scenario reference: a built-in name, a file path, or `NAME[.toml]` in `dir`.
pub fn load(reference: &str, dir: Option<&Path>) -> Result<(String, Scenario), ScenarioError> {
    if let Some((name, src)) = BUILTINS.iter().find(|(n, _)| *n == reference) {
        return Ok((name.to_string(), parse(name, src)?));
    }
    let mut candidates = Vec::new();
    if let Some(dir) = dir {
        candidates.push(dir.join(reference));
        candidates.push(dir.join(format!("{reference}.toml")));
    }
    if reference.contains('/') || reference.contains('\\') || reference.ends_with(".toml") {
        candidates.push(Path::new(reference).to_path_buf());
    }
    for path in candidates {
        if path.is_file() {
            let src = std::fs::read_to_string(&path)
                .map_err(|e| ScenarioError::Read(path.display().to_string(), e))?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| reference.to_string());
            return Ok((name, parse(&path.display().to_string(), &src)?));
        }
    }
    Err(ScenarioError::Unknown(reference.to_string()))
}

/// A `[[fake-gemini:NAME key=value …]]` marker found in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The scenario reference.
    pub name: String,
    /// Parameters in order of appearance.
    pub params: Vec<(String, String)>,
}

/// Finds the first marker in `text`. A malformed parameter list is an error (exit 99).
///
/// ```
/// let m = fake_gemini::scenario::find_marker(r#"hi [[fake-gemini:success text="a \"b\"" delay-ms=5]]"#)
///     .expect("a marker")
///     .expect("well formed");
/// assert_eq!(m.name, "success");
/// assert_eq!(m.params, [("text".into(), "a \"b\"".into()), ("delay-ms".into(), "5".into())]);
/// ```
pub fn find_marker(text: &str) -> Option<Result<Marker, ScenarioError>> {
    let start = text.find("[[fake-gemini:")?;
    let body = &text[start + "[[fake-gemini:".len()..];
    Some(parse_marker_body(body))
}

fn parse_marker_body(body: &str) -> Result<Marker, ScenarioError> {
    let bad = |m: &str| ScenarioError::Param("marker".into(), m.to_string());
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut name = String::new();
    while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ']' {
        name.push(chars[i]);
        i += 1;
    }
    if name.is_empty() {
        return Err(bad("empty scenario name"));
    }
    let mut params = Vec::new();
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i + 1 < chars.len() && chars[i] == ']' && chars[i + 1] == ']' {
            return Ok(Marker { name, params });
        }
        if i >= chars.len() {
            return Err(bad("unterminated marker (no `]]`)"));
        }
        let mut key = String::new();
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() && chars[i] != ']' {
            key.push(chars[i]);
            i += 1;
        }
        if i >= chars.len() || chars[i] != '=' || key.is_empty() {
            return Err(bad(&format!("expected key=value, found `{key}`")));
        }
        i += 1;
        let mut value = String::new();
        if i < chars.len() && chars[i] == '"' {
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(bad("unterminated quoted value")),
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        match chars.get(i + 1) {
                            Some('n') => value.push('\n'),
                            Some('t') => value.push('\t'),
                            Some('"') => value.push('"'),
                            Some('\\') => value.push('\\'),
                            Some(c) => return Err(bad(&format!("unknown escape `\\{c}`"))),
                            None => return Err(bad("unterminated quoted value")),
                        }
                        i += 2;
                    }
                    Some(c) => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ']' {
                value.push(chars[i]);
                i += 1;
            }
        }
        params.push((key, value));
    }
}

fn num<T: std::str::FromStr>(scenario: &str, key: &str, v: &str) -> Result<T, ScenarioError> {
    v.parse().map_err(|_| {
        ScenarioError::Param(
            scenario.into(),
            format!("`{key}` must be a number, got `{v}`"),
        )
    })
}

/// Largest `count` parameter: more chunks than any trickle test needs, small enough to build.
pub const MAX_COUNT: u32 = 100_000;
/// The most bytes a marker's `repeat` may make of its text.
pub const MAX_REPEAT_BYTES: usize = 64 * 1024 * 1024;

/// A marker's `failing-model=`: the scenario's API failure applies only to runs asking for this
/// model (`-m`), so a wrapper's model fallback can be seen to succeed.
static FAILING_MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The model a marker's `failing-model=` limited the API failure to, if any.
pub fn failing_model() -> Option<&'static str> {
    FAILING_MODEL.get().map(String::as_str)
}

/// Applies marker parameters. Keys mean the same in every scenario, except `delay-ms`, which
/// is the start-up latency for `slow-start` and the answer delay elsewhere.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per marker parameter, each next to its validation"
)]
pub fn apply_params(
    name: &str,
    s: &mut Scenario,
    params: &[(String, String)],
) -> Result<(), ScenarioError> {
    for (k, v) in params {
        match k.as_str() {
            "text" => {
                if s.model.turns.is_empty() {
                    s.model.turns.push(Turn::default());
                }
                let last = s.model.turns.last_mut().expect("one turn");
                last.text = Some(v.clone());
                last.chunks.clear();
            }
            "repeat" => {
                let n: u32 = num(name, k, v)?;
                let last = s.model.turns.last_mut().ok_or_else(|| {
                    ScenarioError::Param(name.into(), "`repeat` needs a `text` before it".into())
                })?;
                let text = last.text.clone().unwrap_or_else(|| last.chunks.concat());
                // Bounded like `count`: the text is built up front.
                if n > MAX_COUNT || text.len().saturating_mul(n as usize) > MAX_REPEAT_BYTES {
                    return Err(ScenarioError::Param(
                        name.into(),
                        format!("`repeat` makes at most {MAX_REPEAT_BYTES} bytes and {MAX_COUNT} copies"),
                    ));
                }
                last.text = Some(text.repeat(n as usize));
                last.chunks.clear();
            }
            "model" => s.model.version = Some(v.clone()),
            "router-model" => s.model.router_version = Some(v.clone()),
            "timing" => {
                s.environment.timing = match v.as_str() {
                    "real" => Timing::Real,
                    "fast" => Timing::Fast,
                    _ => {
                        return Err(ScenarioError::Param(
                            name.into(),
                            format!("`timing` is real or fast, not {v:?}"),
                        ))
                    }
                }
            }
            "delay-ms" if name == "slow-start" => s.environment.startup_delay_ms = num(name, k, v)?,
            "delay-ms" => s.model.delay_ms = num(name, k, v)?,
            "interval-ms" => s.model.chunk_interval_ms = num(name, k, v)?,
            "until-file" if !v.is_empty() => s.model.until_file = Some(v.to_string()),
            "count" => {
                let n: u32 = num(name, k, v)?;
                // The chunks are built up front: an unbounded count would abort the fake on
                // allocation (found by fuzzing) instead of failing as a bad parameter.
                if n > MAX_COUNT {
                    return Err(ScenarioError::Param(
                        name.into(),
                        format!("`count` is at most {MAX_COUNT}, got {n}"),
                    ));
                }
                s.model.turns = vec![Turn {
                    chunks: (1..=n).map(|i| format!("tick{i} ")).collect(),
                    ..Turn::default()
                }];
            }
            "bytes" => {
                let n: u64 = num(name, k, v)?;
                if s.process.flood_stderr_bytes.is_some() {
                    s.process.flood_stderr_bytes = Some(n);
                } else if s.process.long_line_bytes.is_some() {
                    s.process.long_line_bytes = Some(n);
                } else {
                    s.process.flood_stdout_bytes = Some(n);
                }
            }
            "attempts" | "attempt-delay-ms" | "status" | "message" => {
                let f = s.model.failure.as_mut().ok_or_else(|| {
                    ScenarioError::Param(
                        name.into(),
                        format!("`{k}` needs a scenario with an API failure"),
                    )
                })?;
                match k.as_str() {
                    "attempts" => f.attempts = Some(num(name, k, v)?),
                    "attempt-delay-ms" => f.attempt_delay_ms = Some(num(name, k, v)?),
                    "status" => f.status = Some(num(name, k, v)?),
                    _ => f.message = Some(v.clone()),
                }
            }
            "update" => {
                s.process.flood_update = Some(match v.as_str() {
                    "message" => FloodUpdate::Message,
                    "thought" => FloodUpdate::Thought,
                    "tool" => FloodUpdate::Tool,
                    _ => {
                        return Err(ScenarioError::Param(
                            name.into(),
                            "`update` is message, thought or tool".into(),
                        ))
                    }
                })
            }
            "signal" => s.process.crash_signal = Some(num(name, k, v)?),
            "after" => {
                s.process.hang_after_chunks = Some(num(name, k, v)?);
                // `after` moves the stall of hang-after-output (and its kin) to chunk N.
                if s.process.hang == Some(Hang::AfterOutput) {
                    s.process.hang = None;
                }
            }
            "hold-ms" => s.process.descendant_hold_ms = Some(num(name, k, v)?),
            "then" => {
                s.process.then = match v.as_str() {
                    "hang" => Then::Hang,
                    "exit" => Then::Exit,
                    _ => {
                        return Err(ScenarioError::Param(
                            name.into(),
                            "`then` is hang or exit".into(),
                        ))
                    }
                }
            }
            "relaunches" => s.process.relaunches = num(name, k, v)?,
            "max-session-turns" => s.environment.max_session_turns = Some(num(name, k, v)?),
            "version" => s.environment.cli_version = Some(v.clone()),
            "exit" => s.process.exit_code = Some(num(name, k, v)?),
            "failing-model" => {
                let _ = FAILING_MODEL.set(v.clone());
            }
            "now" => crate::clock::set_now(crate::clock::parse_time(v).ok_or_else(|| {
                ScenarioError::Param(
                    name.into(),
                    format!("`now` is ISO-8601 or epoch ms, got `{v}`"),
                )
            })?),
            _ => {
                return Err(ScenarioError::Param(
                    name.into(),
                    format!("unknown parameter `{k}`"),
                ))
            }
        }
    }
    Ok(())
}

/// The JSON Schema of the scenario file format (committed as `fake-gemini/scenario.schema.json`).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses() {
        for (name, src) in BUILTINS {
            parse(name, src).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn marker_parses_quotes_and_escapes() {
        let m = find_marker(r#"hi [[fake-gemini:success text="a \"b\"\n\\c" delay-ms=5]] there"#)
            .unwrap()
            .unwrap();
        assert_eq!(m.name, "success");
        assert_eq!(
            m.params,
            vec![
                ("text".into(), "a \"b\"\n\\c".into()),
                ("delay-ms".into(), "5".into())
            ]
        );
        assert!(find_marker("[[fake-gemini:x oops]]").unwrap().is_err());
        assert!(find_marker("nothing here").is_none());
    }

    #[test]
    fn a_huge_count_is_a_bad_parameter_not_an_allocation() {
        // Regression input from the `scenario_parse` fuzz target (an out-of-memory abort: ten
        // gigabytes of `tickN` chunks).
        let m = find_marker(r#"hi [[fake-gemini:success text="a" delay-ms=5 count=411111111]]"#)
            .unwrap()
            .unwrap();
        let (name, mut s) = load("success", None).unwrap();
        let err = apply_params(&name, &mut s, &m.params).unwrap_err();
        assert!(
            err.to_string().contains("`count` is at most 100000"),
            "{err}"
        );
        let (name, mut s) = load("trickle", None).unwrap();
        apply_params(&name, &mut s, &[("count".into(), MAX_COUNT.to_string())]).unwrap();
        assert_eq!(s.model.turns[0].chunks.len(), MAX_COUNT as usize);
    }

    #[test]
    fn until_file_names_the_file_that_releases_the_answer() {
        let (name, mut s) = load("success", None).unwrap();
        apply_params(&name, &mut s, &[("until-file".into(), "/tmp/x/go".into())]).unwrap();
        assert_eq!(s.model.until_file.as_deref(), Some("/tmp/x/go"));
        let mut s = Scenario::default();
        assert!(apply_params("success", &mut s, &[("until-file".into(), String::new())]).is_err());
    }

    #[test]
    fn unknown_params_are_rejected() {
        let mut s = Scenario::default();
        assert!(apply_params("success", &mut s, &[("nope".into(), "1".into())]).is_err());
        assert!(apply_params("success", &mut s, &[("attempts".into(), "1".into())]).is_err());
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(parse("x", "[model]\nbogus = 1\n").is_err());
    }
}
