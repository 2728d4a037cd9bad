//! Every setting, one item each: its variable, its flag, its help, how the doctor lists it, its
//! default and its reading. Code reads a setting through its item (`MAX_OUTPUT_BYTES.get(vars)`,
//! or a field of [`Config`] read so) and names it through its item (`MAX_OUTPUT_BYTES.name`);
//! a test fails on a setting's name written anywhere else in `src/`. An item's ident is its
//! variable without the `GEMINICLI_MCP_` prefix.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::approval::ApprovalMode;

use super::acp::Backend;
use super::item::{
    approval_ceiling, flag, list, millis, millis_json, models, on, optional_millis, paths,
    positive, FlagValue, Item, Kind, Setting,
};
use super::parse::parse_off;
use super::policy::Toolsets;
use super::values::{
    EnvPolicy, SlashCommands, DEFAULT_ASK_TIMEOUT_MS, DEFAULT_BUDGET_BYTES, DEFAULT_EOF_GRACE_MS,
    DEFAULT_HEARTBEAT_MS, DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_START_GATE_MS, MIN_BUDGET_BYTES,
};

pub const GEMINI_CLI_BIN: Item<Option<OsString>> = Item {
    setting: Setting {
        name: "GEMINI_CLI_BIN",
        flag: flag(
            "gemini-bin",
            "PATH",
            FlagValue::Text,
            "The Gemini CLI to run",
        ),
        help: "Gemini CLI to run (default: `gemini` on PATH). On Windows the npm .cmd/.ps1 shim \
                   is resolved to node + its JS entry.",
        kind: Kind::Config(|c| {
            json!(c
                .gemini_bin
                .as_ref()
                .map(|b| b.to_string_lossy().into_owned()))
        }),
    },
    default: || None,
    parse: |v, n| v.raw(n).filter(|b| !b.is_empty()).map(Some),
};

pub const MAX_OUTPUT_BYTES: Item<usize> = Item {
    setting: Setting {
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
        kind: Kind::Config(|c| json!(c.max_output_bytes)),
    },
    default: || DEFAULT_MAX_OUTPUT_BYTES,
    parse: positive::<usize>,
};

pub const DEBUG: Item<bool> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_DEBUG",
        flag: flag(
            "debug",
            "",
            FlagValue::Switch,
            "JSON diagnostics on stderr, never prompt text",
        ),
        help: "1, true or yes: JSON diagnostics on stderr (prompt length only, never prompt text; \
                   flags, exit codes, durations, byte counts).",
        kind: Kind::Config(|c| json!(c.debug)),
    },
    default: || false,
    parse: on,
};

pub const KILL_GRACE_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_KILL_GRACE_MS",
        flag: flag(
            "kill-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time between SIGTERM and SIGKILL of a run's tree",
        ),
        help: "Time between SIGTERM and SIGKILL of a run's tree; on the warm backend also how long an agent has to answer a cancelled prompt before it is killed (default 2000).",
        kind: Kind::Config(|c| millis_json(c.kill_grace)),
    },
    default: || Duration::from_millis(DEFAULT_KILL_GRACE_MS),
    parse: millis,
};

pub const EOF_GRACE_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_EOF_GRACE_MS",
        flag: flag(
            "eof-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time calls in flight may take after stdin closes",
        ),
        help: "After stdin closes, time calls in flight may take to finish before they are \
                   killed and the server exits (default 120000).",
        kind: Kind::Config(|c| millis_json(c.eof_grace)),
    },
    default: || Duration::from_millis(DEFAULT_EOF_GRACE_MS),
    parse: millis,
};

pub const MAX_CONCURRENCY: Item<usize> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_MAX_CONCURRENCY",
        flag: flag(
            "max-concurrency",
            "N",
            FlagValue::AtLeast(1),
            "Gemini runs at once",
        ),
        help: "Gemini runs at once; further calls queue (default 4).",
        kind: Kind::Config(|c| json!(c.max_concurrency)),
    },
    default: || DEFAULT_MAX_CONCURRENCY,
    parse: positive::<usize>,
};

pub const HEARTBEAT_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_HEARTBEAT_MS",
        flag: flag(
            "heartbeat-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Progress heartbeat interval",
        ),
        help: "Progress heartbeat interval while a call runs, for clients that sent a \
                   progressToken (default 10000).",
        kind: Kind::Config(|c| millis_json(c.heartbeat)),
    },
    default: || Duration::from_millis(DEFAULT_HEARTBEAT_MS),
    parse: millis,
};

pub const RESULT_BUDGET_BYTES: Item<usize> = Item {
    setting: Setting {
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
        kind: Kind::Config(|c| json!(c.result_budget)),
    },
    default: || DEFAULT_BUDGET_BYTES,
    parse: |v, n| positive::<usize>(v, n).map(|b| b.max(MIN_BUDGET_BYTES)),
};

pub const SLASH_COMMANDS: Item<SlashCommands> = Item {
    setting: Setting {
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
        kind: Kind::Config(|c| {
            json!(match c.slash_commands {
                SlashCommands::Escape => "escape",
                SlashCommands::Passthrough => "passthrough",
            })
        }),
    },
    default: || SlashCommands::Escape,
    parse: |v, n| v.choice(n, "escape or passthrough", SlashCommands::parse),
};

pub const ENV: Item<EnvPolicy> = Item {
    setting: Setting {
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
        kind: Kind::Config(|c| json!(c.env_policy.as_str())),
    },
    default: || EnvPolicy::Inherit,
    parse: |v, n| v.choice(n, "inherit or minimal", EnvPolicy::parse),
};

pub const ENV_PASS: Item<Vec<String>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ENV_PASS",
        flag: None,
        help: "minimal also keeps these: comma-separated names, or prefixes ending in `*` (e.g. \
                   SSH_AUTH_SOCK,MY_CORP_*).",
        kind: Kind::Config(|c| json!(c.env_pass.join(","))),
    },
    default: Vec::new,
    parse: list,
};

pub const ALLOWED_ROOTS: Item<Vec<PathBuf>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ALLOWED_ROOTS",
        flag: None,
        help: "Where a call's workspace and include_directories may point: a path list (default: \
                   the server's working directory).",
        kind: Kind::Config(|c| {
            // As the variable lists them; none: the server's working directory.
            std::env::join_paths(&c.policy.allowed_roots)
                .ok()
                .filter(|p| !p.is_empty())
                .map_or(Value::Null, |p| json!(p.to_string_lossy()))
        }),
    },
    default: Vec::new,
    parse: paths,
};

pub const APPROVAL_MODE: Item<ApprovalMode> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_APPROVAL_MODE",
        flag: None,
        help: "Most permissive approval mode a call may ask for, and the mode of calls that ask \
               for none: plan, default, auto_edit or yolo (default yolo; an unknown value means \
               plan).",
        kind: Kind::Config(|c| json!(c.policy.approval_ceiling.as_str())),
    },
    default: || ApprovalMode::Yolo,
    parse: approval_ceiling,
};

pub const TOOLSETS: Item<Toolsets> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_TOOLSETS",
        flag: None,
        help: "Opt-in tools besides the three prompt tools, comma-separated: sessions \
               (gemini_list_sessions, gemini_delete_session), models (gemini_list_models), all (both); \
               jobs (gemini_start, gemini_wait, gemini_cancel, gemini_jobs) and acp (the ACP tool \
               set), which all leaves out.",
        kind: Kind::Config(|c| {
            let t = c.policy.toolsets;
            let on = [
                (t.sessions, "sessions"),
                (t.models, "models"),
                (t.jobs, "jobs"),
                (c.acp.enabled, "acp"),
            ];
            let names: Vec<&str> = on.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
            json!(names.join(","))
        }),
    },
    default: Toolsets::default,
    parse: Toolsets::read,
};

pub const FIRST_CONTENT_TIMEOUT_MS: Item<Option<Duration>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no content yet (default: none); past it the run is \
                   killed (error kind timeout). A call may set a shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.first_content)),
    },
    default: || None,
    parse: |v, n| millis(v, n).map(Some),
};

pub const INACTIVITY_TIMEOUT_MS: Item<Option<Duration>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no output line for this long (default: none); past \
                   it the run is killed (error kind timeout). A call may set a shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.inactivity)),
    },
    default: || None,
    parse: |v, n| millis(v, n).map(Some),
};

pub const TOTAL_TIMEOUT_MS: Item<Option<Duration>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: the whole run (default: none); the first of the \
                   three deadlines to pass kills the run (error kind timeout). A call may set a \
                   shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.total)),
    },
    default: || None,
    parse: |v, n| millis(v, n).map(Some),
};

pub const RATE_LIMIT_RETRY: Item<bool> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_RATE_LIMIT_RETRY",
        flag: None,
        help: "1, true or yes: retry a rate_limited call once after the API's delay (at most \
               GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS), only when no tool ran or the approval mode \
               cannot write.",
        kind: Kind::Config(|c| json!(c.policy.quota.rate_limit_retry)),
    },
    default: || false,
    parse: on,
};

pub const RATE_LIMIT_MAX_WAIT_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS",
        flag: None,
        help: "The longest wait before that retry (default 60000).",
        kind: Kind::Config(|c| millis_json(c.policy.quota.max_wait)),
    },
    default: || Duration::from_millis(60_000),
    parse: millis,
};

pub const FALLBACK_MODELS: Item<Vec<String>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_FALLBACK_MODELS",
        flag: None,
        help: "Comma-separated models tried in order after quota_exhausted.",
        kind: Kind::Config(|c| json!(c.policy.quota.fallback_models.join(","))),
    },
    default: Vec::new,
    parse: models,
};

pub const STRUCTURED_REPAIR: Item<bool> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_STRUCTURED_REPAIR",
        flag: None,
        help: "1, true or yes: a structured answer that does not validate gets one follow-up \
               turn in its session asking for the corrected JSON (a call's `repair` wins; never \
               after tools ran that may write).",
        kind: Kind::Config(|c| json!(c.policy.structured_repair)),
    },
    default: || false,
    parse: on,
};

pub const BACKEND: Item<Backend> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_BACKEND",
        flag: flag(
            "backend",
            "BACKEND",
            FlagValue::OneOf(&["oneshot", "acp"]),
            "oneshot or acp: what answers the prompt tools",
        ),
        help: "acp (default: warm agents, one-shot when one cannot start) or oneshot (one CLI per call): what answers the prompt tools.",
        kind: Kind::Config(|c| json!(c.acp.backend.as_str())),
    },
    default: || Backend::Acp,
    parse: |v, n| v.choice(n, "oneshot or acp", Backend::parse),
};

pub const ACP_IDLE_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_IDLE_MS",
        flag: None,
        help: "acp tool set: an agent unused this long is stopped (600000).",
        kind: Kind::Config(|c| millis_json(c.acp.idle)),
    },
    default: || Duration::from_millis(600_000),
    parse: millis,
};

pub const ACP_MAX_TURNS: Item<u32> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_MAX_TURNS",
        flag: None,
        help: "acp tool set: prompts per session before a fresh one (20).",
        kind: Kind::Config(|c| json!(c.acp.max_turns)),
    },
    default: || 20,
    parse: positive::<u32>,
};

pub const MCP_SERVER_TIMEOUT_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS",
        flag: None,
        help: "how long each MCP server of the Gemini CLI's settings is given to answer \
               `initialize` when a call starts; one that does not is left out of the call's CLI, \
               which would otherwise wait up to 10 minutes for it (10000).",
        kind: Kind::Config(|c| millis_json(c.mcp_server_timeout)),
    },
    default: || Duration::from_millis(10_000),
    parse: millis,
};

pub const ACP_REQUEST_TIMEOUT_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS",
        flag: None,
        help: "acp tool set: bound on start-up and requests other than prompts; past it the agent \
                   is killed (120000).",
        kind: Kind::Config(|c| millis_json(c.acp.request_timeout)),
    },
    // Start-up included: the real CLI takes 2.5-9 s before it reads its input.
    default: || Duration::from_millis(120_000),
    parse: millis,
};

pub const MAX_PROMPTS: Item<usize> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_MAX_PROMPTS",
        flag: None,
        help: "warm backend: prompts running on agents at once, server-wide; more calls wait (16).",
        kind: Kind::Config(|c| json!(c.acp.max_prompts)),
    },
    default: || 16,
    parse: positive::<usize>,
};

pub const MAX_AGENTS: Item<Option<usize>> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_MAX_AGENTS",
        flag: None,
        help: "Agent processes at once, both uses of ACP (default GEMINICLI_MCP_MAX_CONCURRENCY); \
                   past it the least recently used idle one is stopped.",
        kind: Kind::Config(|c| json!(c.acp.max_agents.unwrap_or(c.max_concurrency))),
    },
    default: || None,
    parse: |v, n| positive::<usize>(v, n).map(Some),
};

pub const ACP_SPARE_SESSIONS: Item<usize> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_SPARE_SESSIONS",
        flag: None,
        help: "warm backend: fresh sessions each agent keeps made ahead (2; 0: none).",
        kind: Kind::Config(|c| json!(c.acp.spare_sessions)),
    },
    default: || 2,
    parse: |v, n| v.choice(n, "a whole number", |t| t.trim().parse().ok()),
};

pub const ACP_MAX_SESSIONS: Item<u32> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_MAX_SESSIONS",
        flag: None,
        help: "Sessions an agent makes or loads before it is replaced (32).",
        kind: Kind::Config(|c| json!(c.acp.max_sessions)),
    },
    // Each session costs the agent ~1.8 MB it never gives back, and starts the user's MCP servers
    // again, which live as long as it.
    default: || 32,
    parse: positive::<u32>,
};

pub const ACP_MAX_AGENT_MB: Item<u64> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ACP_MAX_AGENT_MB",
        flag: None,
        help: "An agent whose resident memory has grown past this many MiB is replaced at its \
                   first idle moment (1024; measured on Linux).",
        kind: Kind::Config(|c| json!(c.acp.max_agent_mb)),
    },
    // A fresh real agent holds 210-270 MB; one that leaks (CLI 0.62 keeps each model request's
    // history when telemetry is off, ~1.17 MB a turn by its bug report) or holds huge sessions is
    // started afresh long before Node's own heap limit ends it mid-turn.
    default: || 1024,
    parse: positive::<u64>,
};

pub const START_GATE_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_START_GATE_MS",
        flag: None,
        help:
            "Longest time a new run holds its workspace's start gate before its CLI has recorded \
                   the prompt; then the next call there starts (default 15000).",
        kind: Kind::Config(|c| millis_json(c.start_gate)),
    },
    default: || Duration::from_millis(DEFAULT_START_GATE_MS),
    parse: millis,
};

pub const ASK_TIMEOUT_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_ASK_TIMEOUT_MS",
        flag: None,
        help: "approval_mode ask: how long a question waits for the user's answer before the tool \
                   is rejected (default 120000).",
        kind: Kind::Config(|c| millis_json(c.ask_timeout)),
    },
    default: || Duration::from_millis(DEFAULT_ASK_TIMEOUT_MS),
    parse: millis,
};

pub const TASKS: Item<bool> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_TASKS",
        flag: None,
        help: "0, false, no or off: never answer a call with a task (default on: a prompt call \
               from a client that declares the 2026-07-28 tasks extension returns a task at once \
               and runs on); jobs and calls with an idempotency_key are then refused.",
        kind: Kind::Config(|c| json!(c.tasks.enabled)),
    },
    default: || true,
    parse: |v, n| v.text(n).map(|t| !parse_off(&t)),
};

pub const TASK_RETENTION_MS: Item<Duration> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_TASK_RETENTION_MS",
        flag: None,
        help: "How long a task is kept after it finished or the client last asked about it \
                   (default 600000); a running task nobody asked about for that long is cancelled, \
                   its processes killed.",
        kind: Kind::Config(|c| millis_json(c.tasks.retention)),
    },
    default: || Duration::from_millis(600_000),
    parse: millis,
};

pub const MAX_TASKS: Item<usize> = Item {
    setting: Setting {
        name: "GEMINICLI_MCP_MAX_TASKS",
        flag: None,
        help: "Most tasks held at once (default 64): finished ones are evicted oldest first; when \
                   all still run, a call is answered plainly.",
        kind: Kind::Config(|c| json!(c.tasks.max_tasks)),
    },
    default: || 64,
    parse: positive::<usize>,
};

pub const WATCHDOG: Setting = Setting {
    name: "GEMINICLI_MCP_WATCHDOG",
    flag: None,
    help: "0, false, no or off: no watchdog process, which kills the runs' processes when the \
               server is killed outright (Unix; default on).",
    kind: Kind::Elsewhere,
};

pub const LOG: Setting = Setting {
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
};

pub const LAUNCHER: Setting = Setting {
    name: "GEMINICLI_MCP_LAUNCHER",
    flag: None,
    help: "Set by the npm package's launcher for the binary it starts: the launcher's path, \
               which `setup` writes as the command.",
    kind: Kind::Elsewhere,
};

pub const HTTP: Setting = Setting {
    name: "GEMINICLI_MCP_HTTP",
    flag: flag(
        "http",
        "ADDR",
        FlagValue::Text,
        "Serve Streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio",
    ),
    help: "Serve Streamable HTTP on this address instead of stdio (--http).",
    kind: Kind::Elsewhere,
};

pub const HTTP_TOKEN: Setting = Setting {
    name: "GEMINICLI_MCP_HTTP_TOKEN",
    // No flag: a token on the command line would show in `ps`.
    flag: None,
    help: "The bearer token HTTP clients must send (or the _FILE variant).",
    kind: Kind::Secret,
};

pub const HTTP_TOKEN_FILE: Setting = Setting {
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
};

pub const HTTP_ALLOWED_ORIGINS: Setting = Setting {
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
};

pub const HTTP_ALLOWED_HOSTS: Setting = Setting {
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
};

pub const HTTP_ALLOW_REMOTE: Setting = Setting {
    name: "GEMINICLI_MCP_HTTP_ALLOW_REMOTE",
    flag: flag(
        "http-allow-remote",
        "",
        FlagValue::Switch,
        "Allow --http to bind an address other than loopback",
    ),
    help: "1, true or yes: --http may bind a non-loopback address.",
    kind: Kind::Elsewhere,
};

pub const HTTP_HEADER_TIMEOUT_MS: Setting = Setting {
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
};

pub const HTTP_IDLE_TIMEOUT_MS: Setting = Setting {
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
};

pub const HTTP_MAX_CONNECTIONS: Setting = Setting {
    name: "GEMINICLI_MCP_HTTP_MAX_CONNECTIONS",
    flag: flag(
        "http-max-connections",
        "N",
        FlagValue::AtLeast(1),
        "Most HTTP connections at once (default: from the open-file limit)",
    ),
    help: "Most HTTP connections at once (default: the open-file limit less 128, at most \
               1024). At the cap the oldest connection that has not sent the token is closed for \
               the new one. The three HTTP limits must be positive integers: a bad value stops \
               the server.",
    kind: Kind::Elsewhere,
};

pub const RUN: Setting = Setting {
    name: "GEMINICLI_MCP_RUN",
    flag: None,
    help: "",
    kind: Kind::Internal,
};

/// Every setting, in `--help`'s order.
pub const SETTINGS: &[&Setting] = &[
    &GEMINI_CLI_BIN.setting,
    &MAX_OUTPUT_BYTES.setting,
    &DEBUG.setting,
    &KILL_GRACE_MS.setting,
    &EOF_GRACE_MS.setting,
    &MAX_CONCURRENCY.setting,
    &HEARTBEAT_MS.setting,
    &RESULT_BUDGET_BYTES.setting,
    &SLASH_COMMANDS.setting,
    &ENV.setting,
    &ENV_PASS.setting,
    &ALLOWED_ROOTS.setting,
    &APPROVAL_MODE.setting,
    &TOOLSETS.setting,
    &FIRST_CONTENT_TIMEOUT_MS.setting,
    &INACTIVITY_TIMEOUT_MS.setting,
    &TOTAL_TIMEOUT_MS.setting,
    &RATE_LIMIT_RETRY.setting,
    &RATE_LIMIT_MAX_WAIT_MS.setting,
    &FALLBACK_MODELS.setting,
    &STRUCTURED_REPAIR.setting,
    &BACKEND.setting,
    &ACP_IDLE_MS.setting,
    &ACP_MAX_TURNS.setting,
    &MCP_SERVER_TIMEOUT_MS.setting,
    &ACP_REQUEST_TIMEOUT_MS.setting,
    &MAX_PROMPTS.setting,
    &MAX_AGENTS.setting,
    &ACP_SPARE_SESSIONS.setting,
    &ACP_MAX_SESSIONS.setting,
    &ACP_MAX_AGENT_MB.setting,
    &START_GATE_MS.setting,
    &ASK_TIMEOUT_MS.setting,
    &TASKS.setting,
    &TASK_RETENTION_MS.setting,
    &MAX_TASKS.setting,
    &WATCHDOG,
    &LOG,
    &LAUNCHER,
    &HTTP,
    &HTTP_TOKEN,
    &HTTP_TOKEN_FILE,
    &HTTP_ALLOWED_ORIGINS,
    &HTTP_ALLOWED_HOSTS,
    &HTTP_ALLOW_REMOTE,
    &HTTP_HEADER_TIMEOUT_MS,
    &HTTP_IDLE_TIMEOUT_MS,
    &HTTP_MAX_CONNECTIONS,
    &RUN,
];
