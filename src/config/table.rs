//! Every setting the server reads, declared once: its variable, its flag, its default and its help.
//! From this table come the `Environment:` part of `--help`, the flags and their strict checks,
//! the flags' values as the variables they stand for (a flag wins over its variable), the names a
//! misspelling is measured against, and the doctor's listing of the configuration in effect. The
//! readings themselves, lenient and typed, are in [`super::Config::from_lookup`] and the modules
//! it calls; a test holds them and `docs/environment.md` to this table.

use std::ffi::OsString;

use clap::{Arg, ArgAction, ArgMatches};
use serde_json::{json, Value};

use super::values::{Config, SlashCommands, MIN_BUDGET_BYTES};

/// One setting.
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// The command-line flag that stands for it, if any.
    pub flag: Option<Flag>,
    /// What `--help` says of the variable: one paragraph, wrapped when printed.
    pub help: &'static str,
    /// Where the server reads it: what the doctor lists.
    pub kind: Kind,
}

/// How a setting shows in the doctor's listing.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Read into [`Config`]: the value in effect, typed.
    Config(fn(&Config) -> Value),
    /// Read where it is used (HTTP, the log, the launcher): listed as given, or as unset.
    Elsewhere,
    /// A secret: listed only as `set`, or as unset.
    Secret,
    /// Set by the server itself on what it starts, never by the operator: not listed, not in
    /// `--help`, but not a misspelling either.
    Internal,
}

/// A flag, and the check a value given on the command line must pass (the variable's reading is
/// lenient; a flag is typed by hand, so it is checked).
pub struct Flag {
    /// The long name, without `--`.
    pub long: &'static str,
    /// What the flag's value is (`MS`, `N`, …); empty for a switch.
    pub value_name: &'static str,
    /// The check of its value.
    pub value: FlagValue,
    /// The flag's line in `--help` (the variable is added in brackets).
    pub help: &'static str,
}

/// The values a flag takes.
#[derive(Clone, Copy)]
pub enum FlagValue {
    /// No value: present means on (the variable's `1`).
    Switch,
    /// Any text.
    Text,
    /// Any text, repeatable: the values join with commas, as the variable lists them.
    Repeated,
    /// A whole number of at least this.
    AtLeast(u64),
    /// One of these words.
    OneOf(&'static [&'static str]),
}

const fn flag(
    long: &'static str,
    value_name: &'static str,
    value: FlagValue,
    help: &'static str,
) -> Option<Flag> {
    Some(Flag {
        long,
        value_name,
        value,
        help,
    })
}

fn millis(d: std::time::Duration) -> Value {
    json!(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn optional_millis(d: Option<std::time::Duration>) -> Value {
    d.map_or(Value::Null, millis)
}

/// The server's run marker, set on every process it starts (a server started by one of them
/// inherits it, so it is known, not a misspelling). The inventory of what the server hands the
/// CLI names it too (`gemini::inputs`, shared with fake-gemini's tests); a test holds the two
/// equal.
pub const RUN_MARK: &str = "GEMINICLI_MCP_RUN";

/// Every setting, in `--help`'s order.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "GEMINI_CLI_BIN",
        flag: flag("gemini-bin", "PATH", FlagValue::Text, "The Gemini CLI to run"),
        help: "Gemini CLI to run (default: `gemini` on PATH). On Windows the npm .cmd/.ps1 shim \
               is resolved to node + its JS entry.",
        kind: Kind::Config(|c| {
            json!(c
                .gemini_bin
                .as_ref()
                .map(|b| b.to_string_lossy().into_owned()))
        }),
    },
    Setting {
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
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_KILL_GRACE_MS",
        flag: flag(
            "kill-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time between SIGTERM and SIGKILL of a run's tree",
        ),
        help: "Time between SIGTERM and SIGKILL of a run's tree; on the warm backend also how long an agent has to answer a cancelled prompt before it is killed (default 2000).",
        kind: Kind::Config(|c| millis(c.kill_grace)),
    },
    Setting {
        name: "GEMINICLI_MCP_EOF_GRACE_MS",
        flag: flag(
            "eof-grace-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Time calls in flight may take after stdin closes",
        ),
        help: "After stdin closes, time calls in flight may take to finish before they are \
               killed and the server exits (default 120000).",
        kind: Kind::Config(|c| millis(c.eof_grace)),
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_HEARTBEAT_MS",
        flag: flag(
            "heartbeat-ms",
            "MS",
            FlagValue::AtLeast(1),
            "Progress heartbeat interval",
        ),
        help: "Progress heartbeat interval while a call runs, for clients that sent a \
               progressToken (default 10000).",
        kind: Kind::Config(|c| millis(c.heartbeat)),
    },
    Setting {
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
    Setting {
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
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_ENV_PASS",
        flag: None,
        help: "minimal also keeps these: comma-separated names, or prefixes ending in `*` (e.g. \
               SSH_AUTH_SOCK,MY_CORP_*).",
        kind: Kind::Config(|c| json!(c.env_pass.join(","))),
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_APPROVAL_MODE",
        flag: None,
        help: "Most permissive approval mode a call may ask for, and the mode of calls that ask \
               for none: plan, default, auto_edit or yolo (default yolo; an unknown value means \
               plan).",
        kind: Kind::Config(|c| json!(c.policy.approval_ceiling.as_str())),
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no content yet (default: none); past it the run is \
               killed (error kind timeout). A call may set a shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.first_content)),
    },
    Setting {
        name: "GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: no output line for this long (default: none); past \
               it the run is killed (error kind timeout). A call may set a shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.inactivity)),
    },
    Setting {
        name: "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
        flag: None,
        help: "Opt-in deadline of every run: the whole run (default: none); the first of the \
               three deadlines to pass kills the run (error kind timeout). A call may set a \
               shorter one.",
        kind: Kind::Config(|c| optional_millis(c.policy.deadlines.total)),
    },
    Setting {
        name: "GEMINICLI_MCP_RATE_LIMIT_RETRY",
        flag: None,
        help: "1, true or yes: retry a rate_limited call once after the API's delay (at most \
               GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS), only when no tool ran or the approval mode \
               cannot write.",
        kind: Kind::Config(|c| json!(c.policy.quota.rate_limit_retry)),
    },
    Setting {
        name: "GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS",
        flag: None,
        help: "The longest wait before that retry (default 60000).",
        kind: Kind::Config(|c| millis(c.policy.quota.max_wait)),
    },
    Setting {
        name: "GEMINICLI_MCP_FALLBACK_MODELS",
        flag: None,
        help: "Comma-separated models tried in order after quota_exhausted.",
        kind: Kind::Config(|c| json!(c.policy.quota.fallback_models.join(","))),
    },
    Setting {
        name: "GEMINICLI_MCP_STRUCTURED_REPAIR",
        flag: None,
        help: "1, true or yes: a structured answer that does not validate gets one follow-up \
               turn in its session asking for the corrected JSON (a call's `repair` wins; never \
               after tools ran that may write).",
        kind: Kind::Config(|c| json!(c.policy.structured_repair)),
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_ACP_IDLE_MS",
        flag: None,
        help: "acp tool set: an agent unused this long is stopped (600000).",
        kind: Kind::Config(|c| millis(c.acp.idle)),
    },
    Setting {
        name: "GEMINICLI_MCP_ACP_MAX_TURNS",
        flag: None,
        help: "acp tool set: prompts per session before a fresh one (20).",
        kind: Kind::Config(|c| json!(c.acp.max_turns)),
    },
    Setting {
        name: "GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS",
        flag: None,
        help: "how long each MCP server of the Gemini CLI's settings is given to answer \
               `initialize` when a call starts; one that does not is left out of the call's CLI, \
               which would otherwise wait up to 10 minutes for it (10000).",
        kind: Kind::Config(|c| millis(c.mcp_server_timeout)),
    },
    Setting {
        name: "GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS",
        flag: None,
        help: "acp tool set: bound on start-up and requests other than prompts; past it the agent \
               is killed (120000).",
        kind: Kind::Config(|c| millis(c.acp.request_timeout)),
    },
    Setting {
        name: "GEMINICLI_MCP_MAX_PROMPTS",
        flag: None,
        help: "warm backend: prompts running on agents at once, server-wide; more calls wait (16).",
        kind: Kind::Config(|c| json!(c.acp.max_prompts)),
    },
    Setting {
        name: "GEMINICLI_MCP_MAX_AGENTS",
        flag: None,
        help: "Agent processes at once, both uses of ACP (default GEMINICLI_MCP_MAX_CONCURRENCY); \
               past it the least recently used idle one is stopped.",
        kind: Kind::Config(|c| json!(c.acp.max_agents.unwrap_or(c.max_concurrency))),
    },
    Setting {
        name: "GEMINICLI_MCP_ACP_SPARE_SESSIONS",
        flag: None,
        help: "warm backend: fresh sessions each agent keeps made ahead (2; 0: none).",
        kind: Kind::Config(|c| json!(c.acp.spare_sessions)),
    },
    Setting {
        name: "GEMINICLI_MCP_ACP_MAX_SESSIONS",
        flag: None,
        help: "Sessions an agent makes or loads before it is replaced (32).",
        kind: Kind::Config(|c| json!(c.acp.max_sessions)),
    },
    Setting {
        name: "GEMINICLI_MCP_ACP_MAX_AGENT_MB",
        flag: None,
        help: "An agent whose resident memory has grown past this many MiB is replaced at its \
               first idle moment (1024; measured on Linux).",
        kind: Kind::Config(|c| json!(c.acp.max_agent_mb)),
    },
    Setting {
        name: "GEMINICLI_MCP_START_GATE_MS",
        flag: None,
        help: "Longest time a new run holds its workspace's start gate before its CLI has recorded \
               the prompt; then the next call there starts (default 15000).",
        kind: Kind::Config(|c| millis(c.start_gate)),
    },
    Setting {
        name: "GEMINICLI_MCP_ASK_TIMEOUT_MS",
        flag: None,
        help: "approval_mode ask: how long a question waits for the user's answer before the tool \
               is rejected (default 120000).",
        kind: Kind::Config(|c| millis(c.ask_timeout)),
    },
    Setting {
        name: "GEMINICLI_MCP_TASKS",
        flag: None,
        help: "0, false, no or off: never answer a call with a task (default on: a prompt call \
               from a client that declares the 2026-07-28 tasks extension returns a task at once \
               and runs on); jobs and calls with an idempotency_key are then refused.",
        kind: Kind::Config(|c| json!(c.tasks.enabled)),
    },
    Setting {
        name: "GEMINICLI_MCP_TASK_RETENTION_MS",
        flag: None,
        help: "How long a task is kept after it finished or the client last asked about it \
               (default 600000); a running task nobody asked about for that long is cancelled, \
               its processes killed.",
        kind: Kind::Config(|c| millis(c.tasks.retention)),
    },
    Setting {
        name: "GEMINICLI_MCP_MAX_TASKS",
        flag: None,
        help: "Most tasks held at once (default 64): finished ones are evicted oldest first; when \
               all still run, a call is answered plainly.",
        kind: Kind::Config(|c| json!(c.tasks.max_tasks)),
    },
    Setting {
        name: "GEMINICLI_MCP_WATCHDOG",
        flag: None,
        help: "0, false, no or off: no watchdog process, which kills the runs' processes when the \
               server is killed outright (Unix; default on).",
        kind: Kind::Elsewhere,
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_LAUNCHER",
        flag: None,
        help: "Set by the npm package's launcher for the binary it starts: the launcher's path, \
               which `setup` writes as the command.",
        kind: Kind::Elsewhere,
    },
    Setting {
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
    Setting {
        name: "GEMINICLI_MCP_HTTP_TOKEN",
        // No flag: a token on the command line would show in `ps`.
        flag: None,
        help: "The bearer token HTTP clients must send (or the _FILE variant).",
        kind: Kind::Secret,
    },
    Setting {
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
    Setting {
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
    Setting {
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
    Setting {
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
    Setting {
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
    Setting {
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
    Setting {
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
    },
    Setting {
        name: RUN_MARK,
        flag: None,
        help: "",
        kind: Kind::Internal,
    },
];

/// Every variable the server reads: what a set name is checked against before it is called a
/// misspelling.
pub fn known_names() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.name).collect()
}

/// Width of `--help`'s lines.
const WIDTH: usize = 98;
/// Column where a variable's help starts.
const HELP_COLUMN: usize = 34;

/// The text `--help` prints below the usage: every variable, with the rules all of them share.
pub fn env_help() -> String {
    let mut out = String::from("Environment:\n");
    for s in SETTINGS
        .iter()
        .filter(|s| !matches!(s.kind, Kind::Internal))
    {
        let head = format!("  {}", s.name);
        let mut line = if head.len() + 2 <= HELP_COLUMN {
            format!("{head:<HELP_COLUMN$}")
        } else {
            format!("{head}  ")
        };
        let mut fresh = true;
        for word in s.help.split_whitespace() {
            if !fresh && line.len() + 1 + word.len() > WIDTH {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(HELP_COLUMN);
                fresh = true;
            }
            if !fresh {
                line.push(' ');
            }
            line.push_str(word);
            fresh = false;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nA flag wins over its variable; a variable wins over the default.\n\n\
         The server speaks MCP over stdio (stdout carries only JSON-RPC; logs go to stderr), or \
         over\nStreamable HTTP with --http.",
    );
    out
}

/// The flags, one for each setting that has one; global, so they may follow a subcommand.
pub fn flag_args() -> Vec<Arg> {
    SETTINGS
        .iter()
        .filter_map(|s| Some((s, s.flag.as_ref()?)))
        .map(|(s, f)| {
            let arg = Arg::new(s.name)
                .long(f.long)
                .global(true)
                .help(format!("{} [env: {}]", f.help, s.name));
            match f.value {
                FlagValue::Switch => arg.action(ArgAction::SetTrue),
                FlagValue::Text => arg
                    .value_name(f.value_name)
                    .value_parser(clap::value_parser!(OsString)),
                FlagValue::Repeated => arg
                    .value_name(f.value_name)
                    .action(ArgAction::Append)
                    .value_parser(clap::value_parser!(OsString)),
                FlagValue::AtLeast(least) => arg
                    .value_name(f.value_name)
                    .value_parser(clap::value_parser!(u64).range(least..)),
                FlagValue::OneOf(words) => arg
                    .value_name(f.value_name)
                    .value_parser(clap::builder::PossibleValuesParser::new(words)),
            }
        })
        .collect()
}

/// The settings given as flags, as the values of the variables they stand for.
#[derive(Debug, Clone, Default)]
pub struct Given {
    values: Vec<(&'static str, OsString)>,
}

impl Given {
    /// The flags' values in `matches` (a flag given empty counts as not given).
    pub fn from_matches(matches: &ArgMatches) -> Given {
        let mut values = Vec::new();
        for s in SETTINGS {
            let Some(f) = &s.flag else { continue };
            let value: Option<OsString> = match f.value {
                FlagValue::Switch => matches.get_flag(s.name).then(|| "1".into()),
                FlagValue::Text => matches.get_one::<OsString>(s.name).cloned(),
                FlagValue::Repeated => matches.get_many::<OsString>(s.name).map(|v| {
                    v.cloned()
                        .collect::<Vec<_>>()
                        .join(std::ffi::OsStr::new(","))
                }),
                FlagValue::AtLeast(_) => {
                    matches.get_one::<u64>(s.name).map(|v| v.to_string().into())
                }
                FlagValue::OneOf(_) => matches.get_one::<String>(s.name).map(Into::into),
            };
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                values.push((s.name, value));
            }
        }
        Given { values }
    }

    /// The value a flag gave for `name`.
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The flags over `env`: what every setting reads.
    pub fn over<'a>(
        &'a self,
        env: impl Fn(&str) -> Option<OsString> + 'a,
    ) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| self.get(name).cloned().or_else(|| env(name))
    }
}

/// The doctor's listing: every setting the operator sets, under its variable, with the value in
/// effect; one read elsewhere as given (`lookup`: flags over the environment), a secret only as set
/// or not.
pub fn effective(
    config: &Config,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Vec<(&'static str, Value)> {
    SETTINGS
        .iter()
        .filter_map(|s| {
            let value = match s.kind {
                Kind::Config(show) => show(config),
                Kind::Elsewhere => {
                    lookup(s.name).map_or(Value::Null, |v| json!(v.to_string_lossy()))
                }
                Kind::Secret => match lookup(s.name) {
                    Some(v) if !v.is_empty() => json!("set"),
                    _ => Value::Null,
                },
                Kind::Internal => return None,
            };
            Some((s.name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_doctor_lists_every_setting_but_the_internal_one_and_never_a_secret() {
        let env = lookup(&[
            ("GEMINICLI_MCP_HTTP_TOKEN", "do-not-print-this-token"),
            ("GEMINICLI_MCP_HTTP_ALLOWED_HOSTS", "from-env"),
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "5"),
        ]);
        let cli = super::super::Cli::try_parse_from([
            "geminicli-mcp",
            "--http-allowed-host",
            "from-flag",
        ])
        .unwrap();
        let config = Config::from_lookup(cli.given.over(&env));
        let rows = effective(&config, cli.given.over(&env));
        let names: Vec<&str> = rows.iter().map(|(n, _)| *n).collect();
        let listed: Vec<&str> = SETTINGS
            .iter()
            .filter(|s| !matches!(s.kind, Kind::Internal))
            .map(|s| s.name)
            .collect();
        assert_eq!(names, listed);
        let row = |name: &str| rows.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(row("GEMINICLI_MCP_HTTP_TOKEN"), json!("set"));
        assert_eq!(row("GEMINICLI_MCP_HTTP_ALLOWED_HOSTS"), json!("from-flag"));
        assert_eq!(row("GEMINICLI_MCP_MAX_CONCURRENCY"), json!(5));
        assert_eq!(
            row("GEMINICLI_MCP_MAX_AGENTS"),
            json!(5),
            "its default follows"
        );
        assert_eq!(row("GEMINICLI_MCP_TOTAL_TIMEOUT_MS"), Value::Null);
        assert_eq!(row("GEMINICLI_MCP_HTTP"), Value::Null);
        let all = serde_json::to_string(&rows).unwrap();
        assert!(!all.contains("do-not-print-this-token"), "{all}");
    }

    #[test]
    fn each_name_and_flag_is_declared_once() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        let mut flags: Vec<&str> = SETTINGS
            .iter()
            .filter_map(|s| Some(s.flag.as_ref()?.long))
            .collect();
        let (n, f) = (names.len(), flags.len());
        names.sort_unstable();
        names.dedup();
        flags.sort_unstable();
        flags.dedup();
        assert_eq!((names.len(), flags.len()), (n, f));
        for s in SETTINGS {
            assert_eq!(
                s.help.is_empty(),
                matches!(s.kind, Kind::Internal),
                "{}: every setting an operator sets has help",
                s.name
            );
        }
    }
}
