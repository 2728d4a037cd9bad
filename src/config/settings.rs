//! Every setting, one row each: its variable, its flag, its help, its default and its reading,
//! and for one read into [`Config`], where its value lives there (`max_output_bytes`,
//! `acp.idle`). The `settings!` table (`super::item`) makes of the rows the items, [`SETTINGS`],
//! [`Config`] and its parts `AcpConfig` and `TaskLimits` (a field per row, read through its item)
//! and the doctor's listing of each value. Code reads a setting through its field
//! (`config.max_output_bytes`) or its item (`MAX_OUTPUT_BYTES.get(vars)`) and names it through its
//! item (`MAX_OUTPUT_BYTES.name`); a test fails on a setting's name written anywhere else in
//! `src/`. An item's ident is its variable without the `GEMINICLI_MCP_` prefix.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;

use super::acp::Backend;
use super::item::{
    approval_ceiling, flag, list, millis, models, on, paths, positive, settings, FlagValue, Kind,
};
use super::parse::parse_off;
use super::policy::Toolsets;
use super::values::{
    EnvPolicy, SlashCommands, DEFAULT_ASK_TIMEOUT_MS, DEFAULT_BUDGET_BYTES, DEFAULT_EOF_GRACE_MS,
    DEFAULT_HEARTBEAT_MS, DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_START_GATE_MS, MIN_BUDGET_BYTES,
};

settings! {
    // The structs the rows make: each one's fields that are not a row's, with their readings.
    structs {
        /// Everything the server reads from its environment: a field for each row below without a
        /// part's prefix, and these.
        #[derive(Debug, Clone)]
        pub struct Config {
            /// Allowed roots, the approval ceiling, the tool sets, the deadlines and the quota
            /// policy (the rows `policy.*`).
            pub policy: Policy = Policy::read,
            /// The ACP tool set and its agents (the rows `acp.*`).
            pub acp: AcpConfig = AcpConfig::read,
            /// Calls as tasks (the rows `tasks.*`).
            pub tasks: TaskLimits = TaskLimits::read,
            /// The variables set to something the settings did not understand, and what was wrong
            /// (`GEMINICLI_MCP_BACKEND is not oneshot or acp`), in `--help`'s order: their defaults
            /// apply, and the server logs each once at start.
            pub unread: Vec<String> = |_| Vec::new(),
        }

        /// The operator's limits on what a call may ask for: the rows `policy.*`, and these.
        #[derive(Debug, Clone)]
        pub struct Policy {
            /// The operator's deadlines of every run (none by default).
            pub deadlines: Deadlines = |vars| Deadlines {
                first_content: FIRST_CONTENT_TIMEOUT_MS.get(vars),
                inactivity: INACTIVITY_TIMEOUT_MS.get(vars),
                total: TOTAL_TIMEOUT_MS.get(vars),
            },
            /// The opt-in quota and retry policy (the rows `policy.quota.*`; off by default).
            pub quota: QuotaPolicy = QuotaPolicy::read,
        }

        /// What the server does about 429s on top of the CLI's own retries: the rows
        /// `policy.quota.*`.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct QuotaPolicy {}

        /// The ACP backend's settings: the rows `acp.*`, and this.
        #[derive(Debug, Clone)]
        pub struct AcpConfig {
            /// `GEMINICLI_MCP_TOOLSETS` names `acp` (or `agent`): the four tools are listed and
            /// served.
            pub enabled: bool = |vars| TOOLSETS.get(vars).acp,
        }

        /// The operator's task settings: the rows `tasks.*`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct TaskLimits {}
    }

    // The rows, in `--help`'s order.
    /// `GEMINI_CLI_BIN`, when set and non-empty.
    gemini_bin: Option<OsString> = GEMINI_CLI_BIN {
        name: "GEMINI_CLI_BIN",
        flag: flag(
            "gemini-bin",
            "PATH",
            FlagValue::Text,
            "The Gemini CLI to run",
        ),
        help: "Gemini CLI to run (default: `gemini` on PATH). On Windows the npm .cmd/.ps1 shim \
                   is resolved to node + its JS entry.",
        default: || None,
        parse: |v, n| v.raw(n).filter(|b| !b.is_empty()).map(Some),
    },

    /// Cap per stream on bytes read from the child.
    max_output_bytes: usize = MAX_OUTPUT_BYTES {
        name: "GEMINICLI_MCP_MAX_OUTPUT_BYTES",
        flag: flag(
            "max-output-bytes",
            "BYTES",
            FlagValue::AtLeast(1),
            "Cap per stream on bytes read from the CLI",
        ),
        help: "Cap per stream (stdout, stderr) on bytes read from the CLI; past it the process \
               tree is killed and the call fails with output_limit (default 33554432 = 32 MiB; a \
               positive base-10 integer, anything else means the default).",
        default: || DEFAULT_MAX_OUTPUT_BYTES,
        parse: positive::<usize>,
    },

    /// Whether debug diagnostics go to stderr.
    debug: bool = DEBUG {
        name: "GEMINICLI_MCP_DEBUG",
        flag: flag(
            "debug",
            "",
            FlagValue::Switch,
            "JSON diagnostics on stderr, never prompt text",
        ),
        help: "1, true or yes: JSON diagnostics on stderr (prompt length only, never prompt text; \
                   flags, exit codes, durations, byte counts).",
        default: || false,
        parse: on,
    },

    /// Time between SIGTERM and SIGKILL of a run's tree.
    kill_grace: Duration = KILL_GRACE_MS {
        name: "GEMINICLI_MCP_KILL_GRACE_MS",
        flag: flag(
            "kill-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time between SIGTERM and SIGKILL of a run's tree",
        ),
        help: "Time between SIGTERM and SIGKILL of a run's tree; on the warm backend also how long an agent has to answer a cancelled prompt before it is killed (default 2000).",
        default: || Duration::from_millis(DEFAULT_KILL_GRACE_MS),
        parse: millis,
    },

    /// Time calls in flight may take after stdin reached EOF.
    eof_grace: Duration = EOF_GRACE_MS {
        name: "GEMINICLI_MCP_EOF_GRACE_MS",
        flag: flag(
            "eof-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time calls in flight may take after stdin closes",
        ),
        help: "After stdin closes, time calls in flight may take to finish before they are \
                   killed and the server exits (default 120000).",
        default: || Duration::from_millis(DEFAULT_EOF_GRACE_MS),
        parse: millis,
    },

    /// Number of Gemini runs at once.
    max_concurrency: usize = MAX_CONCURRENCY {
        name: "GEMINICLI_MCP_MAX_CONCURRENCY",
        flag: flag(
            "max-concurrency",
            "N",
            FlagValue::AtLeast(1),
            "Gemini runs at once",
        ),
        help: "Gemini runs at once; further calls queue (default 4).",
        default: || DEFAULT_MAX_CONCURRENCY,
        parse: positive::<usize>,
    },

    /// Interval of the progress heartbeat.
    heartbeat: Duration = HEARTBEAT_MS {
        name: "GEMINICLI_MCP_HEARTBEAT_MS",
        flag: flag(
            "heartbeat-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Progress heartbeat interval",
        ),
        help: "Progress heartbeat interval while a call runs, for clients that sent a \
                   progressToken (default 10000).",
        default: || Duration::from_millis(DEFAULT_HEARTBEAT_MS),
        parse: millis,
    },

    /// Most bytes of one serialised tool result.
    result_budget: usize = RESULT_BUDGET_BYTES {
        name: "GEMINICLI_MCP_RESULT_BUDGET_BYTES",
        flag: flag(
            "result-budget-bytes",
            "BYTES",
            FlagValue::AtLeast(MIN_BUDGET_BYTES as u64),
            "Most bytes of one serialised tool result",
        ),
        help: "Most bytes of one serialised tool result (text and JSON together; default 40000, \
               under Claude Code's and Codex's cuts). A longer answer keeps its head and says how \
               to read on with gemini_read_answer (at least 4096).",
        default: || DEFAULT_BUDGET_BYTES,
        parse: |v, n| positive::<usize>(v, n).map(|b| b.max(MIN_BUDGET_BYTES)),
    },

    /// How a leading `/` is passed.
    slash_commands: SlashCommands = SLASH_COMMANDS {
        name: "GEMINICLI_MCP_SLASH_COMMANDS",
        flag: flag(
            "slash-commands",
            "MODE",
            FlagValue::OneOf(&["escape", "passthrough"]),
            "escape or passthrough",
        ),
        help: "escape (default): a prompt the CLI would run as its own command (a leading `/`; \
               on the warm agent `/` or `$` after leading spaces) is sent with a backslash before \
               it; passthrough: sent as is to a yolo call (the CLI may run e.g. /memory show), \
               escaped under any lower approval mode.",
        default: || SlashCommands::Escape,
        parse: |v, n| v.choice(n, "escape or passthrough", SlashCommands::parse),
    },

    /// What environment a run gets.
    env_policy: EnvPolicy = ENV {
        name: "GEMINICLI_MCP_ENV",
        flag: flag(
            "env",
            "POLICY",
            FlagValue::OneOf(&["inherit", "minimal"]),
            "inherit or minimal: what environment the CLI gets",
        ),
        help: "inherit (default): the CLI gets the server's whole environment; minimal: only what \
               it needs (GEMINI_*, GOOGLE_*, CLOUDSDK_*, HOME, USER, PATH, proxies, NODE_*, \
               locale, temp dirs; on Windows also SystemRoot, windir, PATHEXT, COMSPEC, APPDATA, \
               ...).",
        default: || EnvPolicy::Inherit,
        parse: |v, n| v.choice(n, "inherit or minimal", EnvPolicy::parse),
    },

    /// Variables `minimal` keeps besides its own list: names, or prefixes ending in `*`.
    env_pass: Vec<String> = ENV_PASS {
        name: "GEMINICLI_MCP_ENV_PASS",
        flag: None,
        help: "minimal also keeps these: comma-separated names, or prefixes ending in `*` (e.g. \
                   SSH_AUTH_SOCK,MY_CORP_*).",
        default: Vec::new,
        parse: list,
    },

    /// Where `workspace`, `include_directories`, `image_paths` and `save_file` may point. Empty:
    /// the server's working directory and below.
    policy.allowed_roots: Vec<PathBuf> = ALLOWED_ROOTS {
        name: "GEMINICLI_MCP_ALLOWED_ROOTS",
        flag: None,
        help: "Where a call's workspace and include_directories may point: a path list (default: \
                   the server's working directory).",
        default: Vec::new,
        parse: paths,
    },

    /// The most permissive approval mode a call may ask for, and the mode of calls that ask for
    /// none (default `yolo`, as the reference).
    policy.approval_ceiling: ApprovalMode = APPROVAL_MODE {
        name: "GEMINICLI_MCP_APPROVAL_MODE",
        flag: None,
        help: "Most permissive approval mode a call may ask for, and the mode of calls that ask \
               for none: plan, default, auto_edit or yolo (default yolo; an unknown value means \
               plan).",
        default: || ApprovalMode::Yolo,
        parse: approval_ceiling,
    },

    /// The opt-in tools listed besides the reference's three.
    policy.toolsets: Toolsets = TOOLSETS {
        name: "GEMINICLI_MCP_TOOLSETS",
        flag: None,
        help: "Opt-in tools besides the three prompt tools, comma-separated: sessions \
               (gemini_list_sessions, gemini_delete_session), models (gemini_list_models), all (both); \
               jobs (gemini_start, gemini_wait, gemini_cancel, gemini_jobs) and acp (the ACP tool \
               set), which all leaves out.",
        default: Toolsets::default,
        parse: Toolsets::read,
    },

    policy.deadlines.first_content: Option<Duration> = FIRST_CONTENT_TIMEOUT_MS {
        name: "GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no content yet (default: none); past it the run is \
                   killed (error kind timeout). A call may set a shorter one.",
        default: || None,
        parse: |v, n| millis(v, n).map(Some),
    },

    policy.deadlines.inactivity: Option<Duration> = INACTIVITY_TIMEOUT_MS {
        name: "GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no output line for this long (default: none); past \
                   it the run is killed (error kind timeout). A call may set a shorter one.",
        default: || None,
        parse: |v, n| millis(v, n).map(Some),
    },

    policy.deadlines.total: Option<Duration> = TOTAL_TIMEOUT_MS {
        name: "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: the whole run (default: none); the first of the \
                   three deadlines to pass kills the run (error kind timeout). A call may set a \
                   shorter one.",
        default: || None,
        parse: |v, n| millis(v, n).map(Some),
    },

    /// After `rate_limited` with a known delay, wait and retry once.
    policy.quota.rate_limit_retry: bool = RATE_LIMIT_RETRY {
        name: "GEMINICLI_MCP_RATE_LIMIT_RETRY",
        flag: None,
        help: "1, true or yes: retry a rate_limited call once after the API's delay (at most \
               GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS), only when no tool ran or the approval mode \
               cannot write.",
        default: || false,
        parse: on,
    },

    /// The longest wait for that retry.
    policy.quota.max_wait: Duration = RATE_LIMIT_MAX_WAIT_MS {
        name: "GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS",
        flag: None,
        help: "The longest wait before that retry (default 60000).",
        default: || Duration::from_millis(60_000),
        parse: millis,
    },

    /// After `quota_exhausted`, the models to try next, in order.
    policy.quota.fallback_models: Vec<String> = FALLBACK_MODELS {
        name: "GEMINICLI_MCP_FALLBACK_MODELS",
        flag: None,
        help: "Comma-separated models tried in order after quota_exhausted.",
        default: Vec::new,
        parse: models,
    },

    /// A structured answer that does not validate gets one follow-up turn asking for the
    /// corrected JSON (a call's `repair` wins; off by default).
    policy.structured_repair: bool = STRUCTURED_REPAIR {
        name: "GEMINICLI_MCP_STRUCTURED_REPAIR",
        flag: None,
        help: "1, true or yes: a structured answer that does not validate gets one follow-up \
               turn in its session asking for the corrected JSON (a call's `repair` wins; never \
               after tools ran that may write).",
        default: || false,
        parse: on,
    },

    /// What answers the prompt tools.
    acp.backend: Backend = BACKEND {
        name: "GEMINICLI_MCP_BACKEND",
        flag: flag(
            "backend",
            "BACKEND",
            FlagValue::OneOf(&["oneshot", "acp"]),
            "oneshot or acp: what answers the prompt tools",
        ),
        help: "acp (default: warm agents, one-shot when one cannot start) or oneshot (one CLI per call): what answers the prompt tools.",
        default: || Backend::Acp,
        parse: |v, n| v.choice(n, "oneshot or acp", Backend::parse),
    },

    /// An agent unused this long is shut down.
    acp.idle: Duration = ACP_IDLE_MS {
        name: "GEMINICLI_MCP_ACP_IDLE_MS",
        flag: None,
        help: "acp tool set: an agent unused this long is stopped (600000).",
        default: || Duration::from_millis(600_000),
        parse: millis,
    },

    /// Prompts per session before it is replaced.
    acp.max_turns: u32 = ACP_MAX_TURNS {
        name: "GEMINICLI_MCP_ACP_MAX_TURNS",
        flag: None,
        help: "acp tool set: prompts per session before a fresh one (20).",
        default: || 20,
        parse: positive::<u32>,
    },

    /// How long each MCP server of the CLI's settings is given to answer `initialize` when a
    /// call starts; one that does not is left out.
    mcp_server_timeout: Duration = MCP_SERVER_TIMEOUT_MS {
        name: "GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS",
        flag: None,
        help: "how long each MCP server of the Gemini CLI's settings is given to answer \
               `initialize` when a call starts; one that does not is left out of the call's CLI, \
               which would otherwise wait up to 10 minutes for it (10000).",
        default: || Duration::from_millis(10_000),
        parse: millis,
    },

    /// Bound on start-up and every request but prompts; an agent that does not answer in time
    /// is killed.
    acp.request_timeout: Duration = ACP_REQUEST_TIMEOUT_MS {
        name: "GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS",
        flag: None,
        help: "acp tool set: bound on start-up and requests other than prompts; past it the agent \
                   is killed (120000).",
        // Start-up included: the real CLI takes 2.5-9 s before it reads its input.
        default: || Duration::from_millis(120_000),
        parse: millis,
    },

    /// Prompts running on agents at once, server-wide; more wait.
    acp.max_prompts: usize = MAX_PROMPTS {
        name: "GEMINICLI_MCP_MAX_PROMPTS",
        flag: None,
        help: "warm backend: prompts running on agents at once, server-wide; more calls wait (16).",
        default: || 16,
        parse: positive::<usize>,
    },

    /// Agent processes at once (a real agent holds 210-270 MB); past it the least recently used
    /// idle one is stopped. Unset: `max_concurrency`.
    acp.max_agents: Option<usize> = MAX_AGENTS {
        name: "GEMINICLI_MCP_MAX_AGENTS",
        flag: None,
        help: "Agent processes at once, both uses of ACP (default GEMINICLI_MCP_MAX_CONCURRENCY); \
                   past it the least recently used idle one is stopped.",
        show: |c| json!(c.acp.max_agents.unwrap_or(c.max_concurrency)),
        default: || None,
        parse: |v, n| positive::<usize>(v, n).map(Some),
    },

    /// Fresh sessions an agent keeps ready (0: none).
    acp.spare_sessions: usize = ACP_SPARE_SESSIONS {
        name: "GEMINICLI_MCP_ACP_SPARE_SESSIONS",
        flag: None,
        help: "warm backend: fresh sessions each agent keeps made ahead (2; 0: none).",
        default: || 2,
        parse: |v, n| v.choice(n, "a whole number", |t| t.trim().parse().ok()),
    },

    /// Sessions an agent opens before it is replaced.
    acp.max_sessions: u32 = ACP_MAX_SESSIONS {
        name: "GEMINICLI_MCP_ACP_MAX_SESSIONS",
        flag: None,
        help: "Sessions an agent makes or loads before it is replaced (32).",
        // Each session costs the agent ~1.8 MB it never gives back, and starts the user's MCP
        // servers again, which live as long as it.
        default: || 32,
        parse: positive::<u32>,
    },

    /// Resident memory past which an agent is replaced.
    acp.max_agent_mb: u64 = ACP_MAX_AGENT_MB {
        name: "GEMINICLI_MCP_ACP_MAX_AGENT_MB",
        flag: None,
        help: "An agent whose resident memory has grown past this many MiB is replaced at its \
                   first idle moment (1024; measured on Linux).",
        // A fresh real agent holds 210-270 MB; one that leaks (CLI 0.62 keeps each model
        // request's history when telemetry is off, ~1.17 MB a turn by its bug report) or holds
        // huge sessions is started afresh long before Node's own heap limit ends it mid-turn.
        default: || 1024,
        parse: positive::<u64>,
    },

    /// The longest hold of a workspace's start gate.
    start_gate: Duration = START_GATE_MS {
        name: "GEMINICLI_MCP_START_GATE_MS",
        flag: None,
        help:
            "Longest time a new run holds its workspace's start gate before its CLI has recorded \
                   the prompt; then the next call there starts (default 15000).",
        default: || Duration::from_millis(DEFAULT_START_GATE_MS),
        parse: millis,
    },

    /// How long an `ask` question waits for the user.
    ask_timeout: Duration = ASK_TIMEOUT_MS {
        name: "GEMINICLI_MCP_ASK_TIMEOUT_MS",
        flag: None,
        help: "approval_mode ask: how long a question waits for the user's answer before the tool \
                   is rejected (default 120000).",
        default: || Duration::from_millis(DEFAULT_ASK_TIMEOUT_MS),
        parse: millis,
    },

    /// Whether calls may run as tasks at all.
    tasks.enabled: bool = TASKS {
        name: "GEMINICLI_MCP_TASKS",
        flag: None,
        help: "0, false, no or off: never answer a call with a task (default on: a prompt call \
               from a client that declares the 2026-07-28 tasks extension returns a task at once \
               and runs on); jobs and calls with an idempotency_key are then refused.",
        default: || true,
        parse: |v, n| v.text(n).map(|t| !parse_off(&t)),
    },

    /// How long a task is kept after it finished or was last asked about.
    tasks.retention: Duration = TASK_RETENTION_MS {
        name: "GEMINICLI_MCP_TASK_RETENTION_MS",
        flag: None,
        help: "How long a task is kept after it finished or the client last asked about it \
                   (default 600000); a running task nobody asked about for that long is cancelled, \
                   its processes killed.",
        default: || Duration::from_millis(600_000),
        parse: millis,
    },

    /// Most tasks held at once.
    tasks.max_tasks: usize = MAX_TASKS {
        name: "GEMINICLI_MCP_MAX_TASKS",
        flag: None,
        help: "Most tasks held at once (default 64): finished ones are evicted oldest first; when \
                   all still run, a call is answered plainly.",
        default: || 64,
        parse: positive::<usize>,
    },

    WATCHDOG {
        name: "GEMINICLI_MCP_WATCHDOG",
        flag: None,
        help: "0, false, no or off: no watchdog process, which kills the runs' processes when the \
                   server is killed outright (Unix; default on).",
        kind: Kind::Elsewhere,
    },

    LOG {
        name: "GEMINICLI_MCP_LOG",
        flag: flag(
            "log",
            "FILTER",
            FlagValue::Text,
            "Log filter for stderr, e.g. `geminicli_mcp=info`",
        ),
        help: "Log filter for stderr, tracing's EnvFilter syntax (default \
                   geminicli_mcp=warn,rmcp=error; with GEMINICLI_MCP_DEBUG \
                   geminicli_mcp=debug,rmcp=warn).",
        kind: Kind::Elsewhere,
    },

    LAUNCHER {
        name: "GEMINICLI_MCP_LAUNCHER",
        flag: None,
        help: "Set by the npm package's launcher for the binary it starts: the launcher's path, \
                   which `setup` writes as the command.",
        kind: Kind::Elsewhere,
    },

    HTTP {
        name: "GEMINICLI_MCP_HTTP",
        flag: flag(
            "http",
            "ADDR",
            FlagValue::Text,
            "Serve Streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio",
        ),
        help: "Serve Streamable HTTP on this address instead of stdio (--http).",
        kind: Kind::Elsewhere,
    },

    HTTP_TOKEN {
        name: "GEMINICLI_MCP_HTTP_TOKEN",
        // No flag: a token on the command line would show in `ps`.
        flag: None,
        help: "The bearer token HTTP clients must send (or the _FILE variant).",
        kind: Kind::Secret,
    },

    HTTP_TOKEN_FILE {
        name: "GEMINICLI_MCP_HTTP_TOKEN_FILE",
        flag: flag(
            "http-token-file",
            "PATH",
            FlagValue::Text,
            "File whose first line is the HTTP bearer token (there is no flag for the token \
                 itself: it would show in `ps`)",
        ),
        help: "A file whose first line is the bearer token.",
        kind: Kind::Elsewhere,
    },

    HTTP_ALLOWED_ORIGINS {
        name: "GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS",
        flag: flag(
            "http-allowed-origin",
            "ORIGIN",
            FlagValue::Repeated,
            "A browser origin allowed to call over HTTP, e.g. `http://localhost:3000` \
                 (repeatable)",
        ),
        help: "Comma-separated browser origins allowed over HTTP.",
        kind: Kind::Elsewhere,
    },

    HTTP_ALLOWED_HOSTS {
        name: "GEMINICLI_MCP_HTTP_ALLOWED_HOSTS",
        flag: flag(
            "http-allowed-host",
            "HOST",
            FlagValue::Repeated,
            "A `Host` header value (name or name:port) accepted besides the loopback names \
                 (repeatable)",
        ),
        help: "Comma-separated Host values accepted besides loopback.",
        kind: Kind::Elsewhere,
    },

    HTTP_ALLOW_REMOTE {
        name: "GEMINICLI_MCP_HTTP_ALLOW_REMOTE",
        flag: flag(
            "http-allow-remote",
            "",
            FlagValue::Switch,
            "Allow --http to bind an address other than loopback",
        ),
        help: "1, true or yes: --http may bind a non-loopback address.",
        kind: Kind::Elsewhere,
    },

    HTTP_HEADER_TIMEOUT_MS {
        name: "GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS",
        flag: flag(
            "http-header-timeout-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time an HTTP connection has to send a request's complete headers",
        ),
        help: "Time an HTTP connection has to send a request's headers (default 10000); then it \
                   is closed.",
        kind: Kind::Elsewhere,
    },

    HTTP_IDLE_TIMEOUT_MS {
        name: "GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS",
        flag: flag(
            "http-idle-timeout-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time a keep-alive HTTP connection with no request in progress stays open",
        ),
        help: "Time a keep-alive HTTP connection with no request in progress stays open (default \
                   60000); a request in progress, an SSE stream included, is never cut.",
        kind: Kind::Elsewhere,
    },

    HTTP_MAX_CONNECTIONS {
        name: "GEMINICLI_MCP_HTTP_MAX_CONNECTIONS",
        flag: flag(
            "http-max-connections",
            "N",
            FlagValue::AtLeast(1),
            "Most HTTP connections at once (default: from the open-file limit)",
        ),
        help: "Most HTTP connections at once (default: the open-file limit less 128, at most \
                   1024). At the cap the oldest connection that has not sent the token is closed \
                   for the new one. The three HTTP limits must be positive integers: a bad value \
                   stops the server.",
        kind: Kind::Elsewhere,
    },

    RUN {
        name: "GEMINICLI_MCP_RUN",
        flag: None,
        help: "",
        kind: Kind::Internal,
    },
}
