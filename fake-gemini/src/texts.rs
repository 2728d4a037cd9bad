//! The real CLI's fixed texts: help, messages and the Node stack traces it prints on stderr.
//!
//! Every string here was copied from a capture of Gemini CLI 0.61.0 (`tests/captures/`) unless its
//! comment says "from source"; stack traces name a plausible install root instead of the masked one.

/// `gemini --help` of 0.61.0, verbatim (stdout, exit 0).
pub const HELP_0_61: &str = include_str!("help-0.61.txt");

/// Where the emulated bundle lives in stack traces (the real one prints its install path).
pub const CLI_ROOT: &str = "/usr/local/lib";

/// TERM=dumb warnings, first line.
pub const TERM_DUMB: &str = "Warning: Basic terminal detected (TERM=dumb). Visual rendering will be limited. For the best experience, use a terminal emulator with truecolor support.";
/// Printed whenever 256 colours are not detected.
pub const NO_256: &str = "Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.";
/// Printed instead of [`NO_256`] when 256 colours are detected (`TERM=xterm-256color`) but true
/// colour is not (`COLORTERM` unset); observed on 0.61.0.
pub const NO_TRUE_COLOR: &str = "Warning: True color (24-bit) support not detected. Using a terminal with true color enabled will result in a better visual experience.";
/// `TMUX` set, `TERM=screen*`, no `COLORTERM` (from source).
pub const LOW_COLOR_TMUX: &str = "Warning: Limited color support detected (TERM=screen). Some visual elements may not render correctly. For better color support in tmux, add to ~/.tmux.conf:\n      set -g default-terminal \"tmux-256color\"\n      set -ga terminal-overrides \",*256col*:Tc\"";
/// `STY` set (from source).
pub const GNU_SCREEN: &str = "Warning: GNU screen detected. Some keyboard shortcuts and visual features may behave unexpectedly. For the best experience, consider using tmux or running Gemini CLI directly in your terminal.";
/// Each configuration load in an untrusted folder whose approval mode is not `default`
/// (observed on 0.61.0 for yolo, auto_edit and plan: twice before exit 55).
pub const APPROVAL_OVERRIDDEN: &str =
    "Approval mode overridden to \"default\" because the current folder is not trusted.";
/// `GOOGLE_API_KEY` and `GEMINI_API_KEY` both set: once per configuration load and per client
/// (observed on 0.61.0: twice before the ripgrep notice, twice after it).
pub const TWO_API_KEYS: &str =
    "Both GOOGLE_API_KEY and GEMINI_API_KEY are set. Using GOOGLE_API_KEY.";
/// `--approval-mode plan` with settings' `general.plan.enabled: false` (from source).
pub const PLAN_DISABLED: &str =
    "Approval mode \"plan\" is disabled in your settings. Falling back to \"default\".";
/// Printed twice under yolo.
pub const YOLO: &str = "YOLO mode is enabled. All tool calls will be automatically approved.";
/// Printed on stderr when `--allowed-tools` or settings' `tools.allowed` is not empty (from
/// source, checked against a run of 0.61.0).
pub const ALLOWED_TOOLS_DEPRECATED: &str = "Warning: --allowed-tools cli argument and tools.allowed in settings.json are deprecated and will be removed in 1.0: Migrate to Policy Engine: https://geminicli.com/docs/core/policy-engine/";
/// Printed on almost every real run (no bundled ripgrep).
pub const RIPGREP: &str = "Ripgrep is not available. Falling back to GrepTool.";
/// Printed once at start-up while telemetry is on (its OpenTelemetry SDK's deprecation notice;
/// observed on 0.61.0 in one-shot and ACP runs, with `GEMINI_TELEMETRY_ENABLED=true`).
pub const METRIC_READER_DEPRECATED: &str =
    "The 'metricReader' option is deprecated. Please use 'metricReaders' instead.";
/// The random start-up metrics noise (about 8 % of real runs).
pub const STARTUP_NOISE: [&str; 2] = [
    "[STARTUP] Phase 'cleanup_ops' was started but never ended. Skipping metrics.",
    "[STARTUP] Cannot measure phase 'cleanup_ops': start mark 'startup:cleanup_ops:start' not found (likely cleared by reset).",
];
/// Exit 42 without input.
pub const NO_INPUT: &str = "No input provided via stdin. Input can be provided by piping data into gemini or using the --prompt option.";
/// Exit 55 (wrapped in red unless NO_COLOR).
pub const UNTRUSTED: &str = "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode. For more details, see https://geminicli.com/docs/cli/trusted-folders/#headless-and-automated-environments";
/// Exit 41, `{settings}` = the settings.json path.
pub const AUTH_MISSING: &str = "Please set an Auth method in your {settings} or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA";
/// Exit 41 with an unusable auth method.
pub const AUTH_INVALID: &str = "Invalid auth method selected.";
/// Exit 53.
pub const TURN_LIMIT: &str = "Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json.";
/// The INVALID_STREAM message (empty model response).
pub const EMPTY_RESPONSE: &str = "The model returned an empty response with no text or thoughts. This may be a transient API issue; please try again.";
/// Appended to quota messages in stream-json.
pub const QUOTA_HINT: &str = "Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method";
/// Daily quota message.
pub const QUOTA_DAILY: &str = "You have exhausted your daily quota on this model.";
/// Retryable 429 message.
pub const QUOTA_RETRYABLE: &str = "Resource has been exhausted (e.g. check quota).";
/// The prefix of the "unexpected" path; no newline before the error.
pub const CRITICAL: &str = "An unexpected critical error occurred:";
/// Loop detection warning.
pub const LOOP_DETECTED: &str = "Loop detected, stopping execution";
/// How the CLI's loop detection's own message to the model begins: it suppresses the repeated
/// response and sends this as the user's text (observed on 0.61:
/// `System: Potential loop detected. Details: Repeated tool call: … Please take a step back …`).
pub const LOOP_NUDGE: &str = "System: Potential loop detected.";
/// Cancellation (from source).
pub const CANCELLED: &str = "Operation cancelled.";
/// Sandbox image failure, observed with `--sandbox` and no docker.
pub const SANDBOX_FAILED: &str = "Fatal error: Failed to relaunch the CLI process.\nFatalSandboxError: Sandbox image 'us-docker.pkg.dev/gemini-code-dev/gemini-cli/sandbox:{version}' is missing or could not be pulled. Please check the image name, your network connection, or notify gemini-cli-dev@google.com if the issue persists.\n    at start_sandbox (file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:10350:13)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async relaunchOnExitCode (file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:16790:24)\n    at async main (file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:17442:7)\n";
/// Missing include directory stack (after the `Error: …` line).
pub const INCLUDE_DIR_STACK: &str = "    at WorkspaceContext.resolveAndValidateDir (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:348294:13)\n    at WorkspaceContext.addDirectories (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:348259:31)\n    at WorkspaceContext.addDirectory (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:348243:26)\n    at Config._initialize (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:379190:29)\n    at async main (file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:17571:5)\n";
/// Stack of an `_ApiError` thrown by the HTTP layer (400/500 …), closing line `{` included.
pub const API_ERROR_STACK: &str = "    at throwErrorIfNotOK (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267833:24)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267596:7\n    at async Models.generateContentStream (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:268692:16)\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:311457:19\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:288018:23\n    at async retryWithBackoff (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308039:23)\n    at async GeminiChat.makeApiCallAndProcessStream (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:332326:28)\n    at async GeminiChat.streamWithRetries (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:332079:29)\n    at async Turn.run (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:333001:24) {\n";
/// Stack of a classified quota error (TerminalQuotaError / RetryableQuotaError), `{line}` = 307344 or 307333 and `{col}`.
pub const QUOTA_STACK: &str = "    at classifyGoogleError (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:{pos})\n    at retryWithBackoff (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308062:29)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async GeminiChat.makeApiCallAndProcessStream (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:332326:28)\n    at async GeminiChat.streamWithRetries (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:332079:29)\n    at async Turn.run (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:333001:24)\n    at async GeminiClient.processTurn (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:346675:22)\n    at async GeminiClient.sendMessageStream (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:346772:14)\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:12198:26\n    at async main (file://{root}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:17627:5) {\n";
/// Stack of a malformed SSE chunk.
pub const JSON_PARSE_STACK: &str = "    at JSON.parse (<anonymous>)\n    at parseJSONFromBytes (node:internal/deps/undici/undici:5880:19)\n    at successSteps (node:internal/deps/undici/undici:5861:27)\n    at fullyReadBody (node:internal/deps/undici/undici:4753:9)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async consumeBody (node:internal/deps/undici/undici:5870:7)\n";
/// A network failure during the router call (no network), the stack of each retry block.
pub const FETCH_FAILED_STACK: &str = "    at file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267671:13\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async Models.generateContent (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:268643:16)\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:311412:26\n    at async file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:288018:23\n    at async retryWithBackoff (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308039:23)\n    at async BaseLlmClient._generateWithRetry (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308334:14)\n    at async BaseLlmClient.generateJson (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308227:21)\n    at async NumericalClassifierStrategy.route (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:360170:28)\n    at async CompositeStrategy.route (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:360242:26)\n";

/// Google's refusal of an individual account's login (the `reasonMessage` of the ineligible tier;
/// observed 2026-12 through a local mock of Google's endpoints).
pub const SUNSET: &str = "This client is no longer supported for Gemini Code Assist for individuals. To continue using Gemini, please migrate to the Antigravity suite of products: https://antigravity.google";
/// The stack of the `IneligibleTierError` thrown by the Code Assist setup.
pub const SUNSET_STACK: &str = "    at throwIneligibleOrProjectIdError (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:311090:11)\n    at _doSetupUser (file://{root}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:311079:5)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)";
/// Node's inspection of the error's `ineligibleTiers`, after the stack of the first report.
pub const SUNSET_TIERS: &str = " {\n  ineligibleTiers: [\n    {\n      reasonCode: 'UNSUPPORTED_CLIENT',\n      reasonMessage: '{message}',\n      tierId: 'free-tier',\n      tierName: 'Gemini Code Assist for individuals'\n    }\n  ]\n}";

/// The first report of the refused login (the partial configuration's `refreshAuth`).
pub fn sunset_report() -> String {
    format!(
        "Error authenticating: IneligibleTierError: {SUNSET}\n{}{}\n",
        fill(SUNSET_STACK, ""),
        SUNSET_TIERS.replace("{message}", SUNSET)
    )
}

/// The run's end with the refused login (the second `refreshAuth`, through `main().catch`).
pub fn sunset_critical() -> String {
    format!(
        "{CRITICAL}IneligibleTierError: {SUNSET}\n{}\n",
        fill(SUNSET_STACK, "")
    )
}

/// Fills `{root}` (and `{version}`) in a template.
pub fn fill(template: &str, version: &str) -> String {
    template
        .replace("{root}", CLI_ROOT)
        .replace("{version}", version)
}
