//! Server configuration: the command line (`--help`, `--version`) and the `GEMINI_CLI_BIN` /
//! `GEMINICLI_MCP_*` environment variables, parsed leniently into one [`Config`].

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

use parse::{parse_flag, split_list, Vars};

mod acp;
pub mod parse;
mod tasks;

pub use acp::{AcpConfig, Backend};
pub use tasks::TaskLimits;

/// Default per-stream cap on bytes read from the child (32 MiB), as in the TypeScript reference.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32 * 1024 * 1024;
/// Default time between the polite termination signal and the kill of the whole tree.
pub const DEFAULT_KILL_GRACE_MS: u64 = 2_000;
/// Default time calls in flight may still take after stdin reached EOF.
pub const DEFAULT_EOF_GRACE_MS: u64 = 120_000;
/// Default number of Gemini runs at once: each real CLI process can take gigabytes of memory.
pub const DEFAULT_MAX_CONCURRENCY: usize = 4;
/// Default interval of the progress heartbeat while a call runs.
pub const DEFAULT_HEARTBEAT_MS: u64 = 10_000;
/// The default budget of one serialised tool result, in bytes of UTF-8 (a bound on characters
/// too, and on Codex's 4 bytes a token): under Codex's 47,964 and Claude Code's 50,000.
pub const DEFAULT_BUDGET_BYTES: usize = 40_000;
/// The least result budget the operator may set: room for a failure's first lines.
pub(crate) const MIN_BUDGET_BYTES: usize = 4_096;
/// Default time an `ask` question waits for the user's answer.
pub(crate) const DEFAULT_ASK_TIMEOUT_MS: u64 = 120_000;

/// How a prompt that starts with `/` reaches the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommands {
    /// Prefix the slash with a backslash: the CLI sees text, not a command.
    Escape,
    /// Send the prompt unchanged: the CLI may run it as a command (`/memory show` does).
    Passthrough,
}

/// The text `--help` prints below the usage: every variable the server reads.
pub const ENV_HELP: &str = "\
Environment:
  GEMINI_CLI_BIN                  Gemini CLI to run (default: `gemini` on PATH). On Windows the
                                  npm .cmd/.ps1 shim is resolved to node + its JS entry.
  GEMINICLI_MCP_MAX_OUTPUT_BYTES  Cap per stream (stdout, stderr) on bytes read from the CLI; past
                                  it the process tree is killed and the call fails with
                                  output_limit (default 33554432 = 32 MiB; a positive base-10
                                  integer, anything else means the default).
  GEMINICLI_MCP_DEBUG             1, true or yes: JSON diagnostics on stderr (prompt length only,
                                  never prompt text; flags, exit codes, durations, byte counts).
  GEMINICLI_MCP_KILL_GRACE_MS     Time between SIGTERM and SIGKILL of a run's tree (default 2000).
  GEMINICLI_MCP_EOF_GRACE_MS      After stdin closes, time calls in flight may take to finish
                                  before they are killed and the server exits (default 120000).
  GEMINICLI_MCP_MAX_CONCURRENCY   Gemini runs at once; further calls queue (default 4).
  GEMINICLI_MCP_HEARTBEAT_MS      Progress heartbeat interval while a call runs, for clients that
                                  sent a progressToken (default 10000).
  GEMINICLI_MCP_RESULT_BUDGET_BYTES  Most bytes of one serialised tool result (text and JSON
                                  together; default 40000, under Claude Code's and Codex's cuts).
                                  A longer answer keeps its head and says how to read on with
                                  gemini_read_answer (at least 4096).
  GEMINICLI_MCP_SLASH_COMMANDS    escape (default): a prompt starting with `/` is sent with a
                                  leading backslash so the CLI does not run it as a command;
                                  passthrough: sent as is (the CLI may run e.g. /memory show).
  GEMINICLI_MCP_ENV               inherit (default): the CLI gets the server's whole environment;
                                  minimal: only what it needs (GEMINI_*, GOOGLE_*, CLOUDSDK_*,
                                  HOME, USER, PATH, proxies, NODE_*, locale, temp dirs; on Windows
                                  also SystemRoot, windir, PATHEXT, COMSPEC, APPDATA, ...).
  GEMINICLI_MCP_ENV_PASS          minimal also keeps these: comma-separated names, or prefixes
                                  ending in `*` (e.g. SSH_AUTH_SOCK,MY_CORP_*).
  GEMINICLI_MCP_ALLOWED_ROOTS     Where a call's workspace and include_directories may point: a
                                  path list (default: the server's working directory).
  GEMINICLI_MCP_APPROVAL_MODE     Most permissive approval mode a call may ask for, and the mode
                                  of calls that ask for none: plan, default, auto_edit or yolo
                                  (default yolo; an unknown value means plan).
  GEMINICLI_MCP_TOOLSETS          Opt-in tools besides the three prompt tools, comma-separated:
                                  sessions (gemini_list_sessions, gemini_delete_session), models
                                  (gemini_list_models), all.
  GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS, GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS,
  GEMINICLI_MCP_TOTAL_TIMEOUT_MS  Opt-in deadlines of every run (default: none): no content yet,
                                  no output line, the whole run; the first to pass kills the run
                                  (error kind timeout). A call may set shorter ones.
  GEMINICLI_MCP_RATE_LIMIT_RETRY  1, true or yes: retry a rate_limited call once after the API's
                                  delay (at most GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS, default
                                  60000), only when no tool ran or the approval mode cannot write.
  GEMINICLI_MCP_FALLBACK_MODELS   Comma-separated models tried in order after quota_exhausted.
  GEMINICLI_MCP_STRUCTURED_REPAIR 1, true or yes: a structured answer that does not validate gets
                                  one follow-up turn in its session asking for the corrected JSON
                                  (a call's `repair` wins; never after tools ran that may write).
  GEMINICLI_MCP_BACKEND           oneshot (default) or acp: what answers the prompt tools.
  GEMINICLI_MCP_ACP_IDLE_MS       acp tool set: an agent unused this long is stopped (600000).
  GEMINICLI_MCP_ACP_MAX_TURNS     acp tool set: prompts per session before a fresh one (20).
  GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS  acp tool set: bound on start-up and requests other than
                                  prompts; past it the agent is killed (120000).
  GEMINICLI_MCP_MAX_PROMPTS       warm backend: prompts running on agents at once, server-wide;
                                  more calls wait (16).
  GEMINICLI_MCP_MAX_AGENTS        Agent processes at once, both uses of ACP (default
                                  GEMINICLI_MCP_MAX_CONCURRENCY); past it the least recently used
                                  idle one is stopped.
  GEMINICLI_MCP_ACP_SPARE_SESSIONS  warm backend: fresh sessions each agent keeps made ahead (2;
                                  0: none).
  GEMINICLI_MCP_ACP_MAX_SESSIONS  Sessions an agent makes or loads before it is replaced (32).
  GEMINICLI_MCP_ASK_TIMEOUT_MS    approval_mode ask: how long a question waits for the user's
                                  answer before the tool is rejected (default 120000).
  GEMINICLI_MCP_TASKS             0, false, no or off: never answer a call with a task (default on:
                                  a prompt call from a client that declares the 2026-07-28 tasks
                                  extension returns a task at once and runs on).
  GEMINICLI_MCP_TASK_RETENTION_MS How long a task is kept after it finished or the client last
                                  asked about it (default 600000); a running task nobody asked
                                  about for that long is cancelled, its processes killed.
  GEMINICLI_MCP_MAX_TASKS         Most tasks held at once (default 64): finished ones are evicted
                                  oldest first; when all still run, a call is answered plainly.
  GEMINICLI_MCP_WATCHDOG          0, false, no or off: no watchdog process, which kills the runs'
                                  processes when the server is killed outright (Unix; default on).
  GEMINICLI_MCP_LOG               Log filter for stderr, tracing's EnvFilter syntax (default
                                  geminicli_mcp=warn; with GEMINICLI_MCP_DEBUG geminicli_mcp=debug).
  GEMINICLI_MCP_LAUNCHER          Set by the npm package's launcher for the binary it starts:
                                  the launcher's path, which `setup` writes as the command.
  GEMINICLI_MCP_HTTP              Serve Streamable HTTP on this address instead of stdio (--http).
  GEMINICLI_MCP_HTTP_TOKEN        The bearer token HTTP clients must send (or the _FILE variant).
  GEMINICLI_MCP_HTTP_TOKEN_FILE   A file whose first line is the bearer token.
  GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS  Comma-separated browser origins allowed over HTTP.
  GEMINICLI_MCP_HTTP_ALLOWED_HOSTS    Comma-separated Host values accepted besides loopback.
  GEMINICLI_MCP_HTTP_ALLOW_REMOTE     1, true or yes: --http may bind a non-loopback address.
  GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS  Time an HTTP connection has to send a request's headers
                                  (default 10000); then it is closed.
  GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS  Time a keep-alive HTTP connection with no request in
                                  progress stays open (default 60000); a request in progress,
                                  an SSE stream included, is never cut.
  GEMINICLI_MCP_HTTP_MAX_CONNECTIONS  Most HTTP connections at once (default: the open-file limit
                                  less 128, at most 1024). At the cap the oldest connection that
                                  has not sent the token is closed for the new one. The three
                                  HTTP limits must be positive integers: a bad value stops
                                  the server.

A flag wins over its variable; a variable wins over the default.

The server speaks MCP over stdio (stdout carries only JSON-RPC; logs go to stderr), or over
Streamable HTTP with --http.";

/// Every variable under the server's prefix that it reads: the ones `--help` lists, and the run
/// marker the server sets on its children (a server started by one of them inherits it).
pub fn known_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ENV_HELP
        .split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        .filter(|w| w.starts_with(parse::PREFIX) && !w.ends_with('_'))
        .collect();
    names.push(crate::gemini::process::RUN_MARKER_VAR);
    names.sort_unstable();
    names.dedup();
    names
}

/// Command line of the server binary. Every setting is also an environment variable (MCP clients
/// set those in their `env` blocks); a flag given wins over its variable.
#[derive(Debug, Parser)]
#[command(
    name = "geminicli-mcp",
    version,
    about = "MCP server (stdio, or Streamable HTTP with --http) that runs Google's headless Gemini CLI as a tool",
    after_help = ENV_HELP
)]
pub struct Cli {
    /// `doctor`, `setup`, or none to serve.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Settings shared by serving and the doctor.
    #[command(flatten)]
    pub flags: Flags,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check the installation: which gemini runs, its version and flags, auth variables (names
    /// only), the effective configuration. Never calls a model. Exits 1 on a problem.
    Doctor(DoctorArgs),
    /// Register this server in MCP clients' configuration files, or remove it (--remove).
    ///
    /// Clients: claude-code, codex, gemini-cli, cursor, claude-desktop, vscode; none named: every
    /// client found installed. Each file is edited in place (other entries, comments and layout
    /// kept), backed up first as <file>.bak-<UTC time> beside it, and replaced atomically; a second
    /// run changes nothing. The entry runs the command that ran setup: `npx -y geminicli-mcp`
    /// under npx, the npm launcher's path, or else this binary's absolute path. Secrets are passed
    /// by name (GEMINI_API_KEY), never written. Exits 1 when any client's file could not be
    /// changed. docs/install.md has the details.
    Setup(crate::setup::SetupArgs),
}

/// Options of `geminicli-mcp doctor`.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Bound on each probe of the CLI (`--version`, `--help`), in seconds: the real CLI takes
    /// 5-9 s to start, longer on a loaded machine.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = parse_seconds)]
    pub doctor_timeout: f64,
}

/// Settings given on the command line; each overrides the environment variable named in its help.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Flags {
    /// The Gemini CLI to run [env: GEMINI_CLI_BIN].
    #[arg(long, global = true, value_name = "PATH")]
    pub gemini_bin: Option<OsString>,
    /// Cap per stream on bytes read from the CLI [env: GEMINICLI_MCP_MAX_OUTPUT_BYTES].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_bytes: Option<u64>,
    /// JSON diagnostics on stderr, never prompt text [env: GEMINICLI_MCP_DEBUG].
    #[arg(long, global = true)]
    pub debug: bool,
    /// Time between SIGTERM and SIGKILL of a run's tree [env: GEMINICLI_MCP_KILL_GRACE_MS].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub kill_grace_ms: Option<u64>,
    /// Time calls in flight may take after stdin closes [env: GEMINICLI_MCP_EOF_GRACE_MS].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub eof_grace_ms: Option<u64>,
    /// Gemini runs at once [env: GEMINICLI_MCP_MAX_CONCURRENCY].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_concurrency: Option<u64>,
    /// oneshot or acp: what answers the prompt tools [env: GEMINICLI_MCP_BACKEND].
    #[arg(long, global = true, value_name = "BACKEND", value_parser = ["oneshot", "acp"])]
    pub backend: Option<String>,
    /// Progress heartbeat interval [env: GEMINICLI_MCP_HEARTBEAT_MS].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_ms: Option<u64>,
    /// Most bytes of one serialised tool result [env: GEMINICLI_MCP_RESULT_BUDGET_BYTES].
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(4096..))]
    pub result_budget_bytes: Option<u64>,
    /// escape or passthrough [env: GEMINICLI_MCP_SLASH_COMMANDS].
    #[arg(long, global = true, value_name = "MODE", value_parser = ["escape", "passthrough"])]
    pub slash_commands: Option<String>,
    /// inherit or minimal: what environment the CLI gets [env: GEMINICLI_MCP_ENV].
    #[arg(long = "env", global = true, value_name = "POLICY", value_parser = ["inherit", "minimal"])]
    pub env_policy: Option<String>,
    /// Log filter for stderr, e.g. `geminicli_mcp=info` [env: GEMINICLI_MCP_LOG].
    #[arg(long, global = true, value_name = "FILTER")]
    pub log: Option<String>,
    /// Serve Streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio [env: GEMINICLI_MCP_HTTP].
    #[arg(long, global = true, value_name = "ADDR")]
    pub http: Option<String>,
    /// File whose first line is the HTTP bearer token [env: GEMINICLI_MCP_HTTP_TOKEN_FILE; or the
    /// token itself in GEMINICLI_MCP_HTTP_TOKEN]. There is no flag for the token itself: it would
    /// show in `ps`.
    #[arg(long, global = true, value_name = "PATH")]
    pub http_token_file: Option<std::path::PathBuf>,
    /// A browser origin allowed to call over HTTP, e.g. `http://localhost:3000` (repeatable)
    /// [env: GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS, comma-separated].
    #[arg(long, global = true, value_name = "ORIGIN")]
    pub http_allowed_origin: Vec<String>,
    /// A `Host` header value (name or name:port) accepted besides the loopback names (repeatable)
    /// [env: GEMINICLI_MCP_HTTP_ALLOWED_HOSTS, comma-separated].
    #[arg(long, global = true, value_name = "HOST")]
    pub http_allowed_host: Vec<String>,
    /// Allow --http to bind an address other than loopback [env: GEMINICLI_MCP_HTTP_ALLOW_REMOTE].
    #[arg(long, global = true)]
    pub http_allow_remote: bool,
    /// Time an HTTP connection has to send a request's complete headers
    /// [env: GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub http_header_timeout_ms: Option<u64>,
    /// Time a keep-alive HTTP connection with no request in progress stays open
    /// [env: GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS].
    #[arg(long, global = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub http_idle_timeout_ms: Option<u64>,
    /// Most HTTP connections at once (default: from the open-file limit)
    /// [env: GEMINICLI_MCP_HTTP_MAX_CONNECTIONS].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub http_max_connections: Option<u64>,
}

fn parse_seconds(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("a positive number of seconds".into()),
    }
}

/// What environment a Gemini run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvPolicy {
    /// The server's whole environment, as the TypeScript reference does.
    Inherit,
    /// Only the variables the CLI needs on this OS (`gemini::environment`).
    Minimal,
}

impl EnvPolicy {
    /// The spelling in `GEMINICLI_MCP_ENV` and `--env`.
    pub fn as_str(self) -> &'static str {
        match self {
            EnvPolicy::Inherit => "inherit",
            EnvPolicy::Minimal => "minimal",
        }
    }

    /// `inherit` or `minimal` (any case, trimmed); anything else is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "inherit" => Some(EnvPolicy::Inherit),
            "minimal" => Some(EnvPolicy::Minimal),
            _ => None,
        }
    }
}

/// Everything the server reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `GEMINI_CLI_BIN`, when set and non-empty.
    pub gemini_bin: Option<OsString>,
    /// Cap per stream on bytes read from the child.
    pub max_output_bytes: usize,
    /// Whether debug diagnostics go to stderr.
    pub debug: bool,
    /// Time between SIGTERM and SIGKILL of a run's tree.
    pub kill_grace: Duration,
    /// Time calls in flight may take after stdin reached EOF.
    pub eof_grace: Duration,
    /// Number of Gemini runs at once.
    pub max_concurrency: usize,
    /// Interval of the progress heartbeat.
    pub heartbeat: Duration,
    /// Most bytes of one serialised tool result (`GEMINICLI_MCP_RESULT_BUDGET_BYTES`).
    pub result_budget: usize,
    /// How a leading `/` is passed.
    pub slash_commands: SlashCommands,
    /// What environment a run gets (`GEMINICLI_MCP_ENV`).
    pub env_policy: EnvPolicy,
    /// Variables `minimal` keeps besides its own list (`GEMINICLI_MCP_ENV_PASS`): names, or
    /// prefixes ending in `*`.
    pub env_pass: Vec<String>,
    /// Allowed roots and the approval ceiling (`GEMINICLI_MCP_ALLOWED_ROOTS`,
    /// `GEMINICLI_MCP_APPROVAL_MODE`; see `policy`).
    pub policy: crate::policy::Policy,
    /// The ACP tool set and its agents (`GEMINICLI_MCP_TOOLSETS`, `GEMINICLI_MCP_ACP_*`).
    pub acp: AcpConfig,
    /// Calls as tasks (`GEMINICLI_MCP_TASKS`, `GEMINICLI_MCP_TASK_RETENTION_MS`,
    /// `GEMINICLI_MCP_MAX_TASKS`).
    pub tasks: TaskLimits,
    /// How long an `ask` question waits for the user (`GEMINICLI_MCP_ASK_TIMEOUT_MS`).
    pub ask_timeout: Duration,
    /// The variables set to something the settings did not understand, and what was wrong
    /// (`GEMINICLI_MCP_BACKEND is not oneshot or acp`): their defaults apply, and the server logs
    /// each once at start.
    pub unread: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            gemini_bin: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            debug: false,
            kill_grace: Duration::from_millis(DEFAULT_KILL_GRACE_MS),
            eof_grace: Duration::from_millis(DEFAULT_EOF_GRACE_MS),
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            heartbeat: Duration::from_millis(DEFAULT_HEARTBEAT_MS),
            result_budget: DEFAULT_BUDGET_BYTES,
            slash_commands: SlashCommands::Escape,
            env_policy: EnvPolicy::Inherit,
            env_pass: Vec::new(),
            policy: crate::policy::Policy::default(),
            acp: AcpConfig::default(),
            tasks: TaskLimits::default(),
            ask_timeout: Duration::from_millis(DEFAULT_ASK_TIMEOUT_MS),
            unread: Vec::new(),
        }
    }
}

impl Config {
    /// Reads the process environment; a variable under the server's prefix that no setting reads
    /// (a misspelt name, which would silently leave its setting at the default) is noted too.
    pub fn from_env() -> Self {
        let mut config = Self::from_lookup(|name| std::env::var_os(name));
        config.unread.extend(parse::unknown_names(
            std::env::vars_os().map(|(name, _)| name),
            &known_names(),
        ));
        config
    }

    /// Builds the configuration from any variable lookup (tests pass a map). Invalid values fall
    /// back to the default rather than failing: a typo in a client's `env` block must not stop the
    /// server from starting, which is what the reference does for the output cap.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let vars = Vars::new(&lookup);
        let mut config = Self::read(&vars);
        config.unread = vars.unread();
        config
    }

    fn read(vars: &Vars) -> Self {
        let text = |name: &str| vars.text(name);
        let positive = |name: &str| vars.positive(name);
        let d = Config::default();
        Config {
            gemini_bin: vars.raw("GEMINI_CLI_BIN").filter(|v| !v.is_empty()),
            max_output_bytes: positive("GEMINICLI_MCP_MAX_OUTPUT_BYTES")
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(d.max_output_bytes),
            debug: text("GEMINICLI_MCP_DEBUG").is_some_and(|v| parse_flag(&v)),
            kill_grace: positive("GEMINICLI_MCP_KILL_GRACE_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.kill_grace),
            eof_grace: positive("GEMINICLI_MCP_EOF_GRACE_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.eof_grace),
            max_concurrency: positive("GEMINICLI_MCP_MAX_CONCURRENCY")
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(d.max_concurrency),
            heartbeat: positive("GEMINICLI_MCP_HEARTBEAT_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.heartbeat),
            result_budget: positive("GEMINICLI_MCP_RESULT_BUDGET_BYTES")
                .and_then(|v| usize::try_from(v).ok())
                .map(|v| v.max(MIN_BUDGET_BYTES))
                .unwrap_or(d.result_budget),
            slash_commands: vars
                .choice(
                    "GEMINICLI_MCP_SLASH_COMMANDS",
                    "escape or passthrough",
                    |v| match v.trim().to_ascii_lowercase().as_str() {
                        "escape" => Some(SlashCommands::Escape),
                        "passthrough" | "pass-through" | "pass" => Some(SlashCommands::Passthrough),
                        _ => None,
                    },
                )
                .unwrap_or(SlashCommands::Escape),
            env_policy: vars
                .choice("GEMINICLI_MCP_ENV", "inherit or minimal", EnvPolicy::parse)
                .unwrap_or(d.env_policy),
            env_pass: text("GEMINICLI_MCP_ENV_PASS")
                .map(|v| split_list(&v))
                .unwrap_or_default(),
            policy: crate::policy::Policy::read(vars),
            acp: AcpConfig::read(vars),
            tasks: TaskLimits::read(vars),
            ask_timeout: positive("GEMINICLI_MCP_ASK_TIMEOUT_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.ask_timeout),
            unread: Vec::new(),
        }
    }

    /// The environment's configuration with the command line's flags on top (flags > env >
    /// defaults).
    pub fn from_env_and_flags(flags: &Flags) -> Self {
        let mut config = Self::from_env();
        config.apply_flags(flags);
        config
    }

    /// Overrides every setting a flag was given for.
    pub fn apply_flags(&mut self, flags: &Flags) {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        if let Some(bin) = flags.gemini_bin.clone().filter(|b| !b.is_empty()) {
            self.gemini_bin = Some(bin);
        }
        if let Some(v) = flags.max_output_bytes {
            self.max_output_bytes = size(v);
        }
        if flags.debug {
            self.debug = true;
        }
        if let Some(v) = flags.kill_grace_ms {
            self.kill_grace = Duration::from_millis(v);
        }
        if let Some(v) = flags.eof_grace_ms {
            self.eof_grace = Duration::from_millis(v);
        }
        if let Some(v) = flags.max_concurrency {
            self.max_concurrency = size(v);
        }
        if let Some(b) = flags.backend.as_deref().and_then(acp::Backend::parse) {
            self.acp.backend = b;
        }
        if let Some(v) = flags.heartbeat_ms {
            self.heartbeat = Duration::from_millis(v);
        }
        if let Some(v) = flags.result_budget_bytes {
            self.result_budget = size(v);
        }
        match flags.slash_commands.as_deref() {
            Some("passthrough") => self.slash_commands = SlashCommands::Passthrough,
            Some("escape") => self.slash_commands = SlashCommands::Escape,
            _ => {}
        }
        if let Some(policy) = flags.env_policy.as_deref().and_then(EnvPolicy::parse) {
            self.env_policy = policy;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    /// Every `"GEMINICLI_MCP_…"` name written in a file under `dir`, as a string literal.
    fn names_in_sources(dir: &std::path::Path, names: &mut std::collections::BTreeSet<String>) {
        let quoted = regex::Regex::new(r#""(GEMINICLI_MCP_[A-Z0-9_]*[A-Z0-9])""#).unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                names_in_sources(&path, names);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                names.extend(quoted.captures_iter(&text).map(|c| c[1].to_owned()));
            }
        }
    }

    #[test]
    fn every_variable_the_server_reads_or_documents_is_a_known_name() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut read = std::collections::BTreeSet::new();
        names_in_sources(&root.join("src"), &mut read);
        let known = known_names();
        let unlisted: Vec<_> = read
            .iter()
            .filter(|n| !known.contains(&n.as_str()))
            .collect();
        assert!(
            unlisted.is_empty(),
            "read in src/ but missing from --help, so a set one would be called unknown: {unlisted:?}"
        );
        let docs = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
        let documented = regex::Regex::new(r"GEMINICLI_MCP_[A-Z0-9_]*[A-Z0-9]").unwrap();
        let undocumented: Vec<_> = known
            .iter()
            .filter(|n| **n != crate::gemini::process::RUN_MARKER_VAR)
            .filter(|n| !documented.find_iter(&docs).any(|m| m.as_str() == **n))
            .collect();
        assert!(
            undocumented.is_empty(),
            "not in docs/environment.md: {undocumented:?}"
        );
        assert!(
            known.contains(&"GEMINICLI_MCP_TOTAL_TIMEOUT_MS"),
            "{known:?}"
        );
    }

    #[test]
    fn values_not_understood_are_noted_by_name_never_by_value() {
        let c = config(&[
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "four"),
            ("GEMINICLI_MCP_BACKEND", "acpp"),
            ("GEMINICLI_MCP_APPROVAL_MODE", "yolo!"),
            ("GEMINICLI_MCP_TOOLSETS", "sessions,sesions"),
            ("GEMINICLI_MCP_TOTAL_TIMEOUT_MS", "-5"),
            ("GEMINICLI_MCP_ENV", "secret-looking-value"),
            // Blank is unset, and these are understood: nothing to say of them.
            ("GEMINICLI_MCP_KILL_GRACE_MS", " "),
            ("GEMINICLI_MCP_SLASH_COMMANDS", "Pass"),
            ("GEMINICLI_MCP_ACP_SPARE_SESSIONS", "0"),
        ]);
        assert_eq!(c.max_concurrency, 4, "the default applies");
        assert_eq!(c.acp.backend, Backend::Oneshot);
        let named: Vec<&str> = c
            .unread
            .iter()
            .map(|n| n.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            named,
            [
                "GEMINICLI_MCP_MAX_CONCURRENCY",
                "GEMINICLI_MCP_ENV",
                "GEMINICLI_MCP_APPROVAL_MODE",
                "GEMINICLI_MCP_TOOLSETS",
                "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
                "GEMINICLI_MCP_BACKEND",
            ],
            "{:?}",
            c.unread
        );
        assert!(c.unread[0].ends_with("is not a positive whole number; the default applies"));
        assert!(c.unread[2].contains("plan, the narrowest, applies"));
        assert!(c.unread[3].contains("left out: sesions"), "{}", c.unread[3]);
        assert!(c.unread[5].contains("oneshot or acp"));
        assert!(
            !c.unread.iter().any(|n| n.contains("secret-looking-value")),
            "{:?}",
            c.unread
        );
        assert!(config(&[]).unread.is_empty());
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = config(&[]);
        assert_eq!(c.max_output_bytes, 33_554_432);
        assert!(!c.debug);
        assert_eq!(c.kill_grace, Duration::from_millis(2000));
        assert_eq!(c.eof_grace, Duration::from_millis(120_000));
        assert_eq!(c.max_concurrency, 4);
        assert_eq!(c.heartbeat, Duration::from_millis(10_000));
        assert_eq!(c.result_budget, 40_000);
        assert_eq!(c.slash_commands, SlashCommands::Escape);
        assert!(c.gemini_bin.is_none());
    }

    #[test]
    fn invalid_numbers_fall_back_to_the_default() {
        for bad in [
            "0",
            "-5",
            "+5",
            " 5",
            "5 ",
            "0x10",
            "1e3",
            "",
            "abc",
            "99999999999999999999999",
        ] {
            let c = config(&[("GEMINICLI_MCP_MAX_OUTPUT_BYTES", bad)]);
            assert_eq!(
                c.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES,
                "value {bad:?}"
            );
        }
        let c = config(&[("GEMINICLI_MCP_MAX_OUTPUT_BYTES", "1024")]);
        assert_eq!(c.max_output_bytes, 1024);
    }

    #[test]
    fn debug_accepts_the_reference_spellings() {
        for yes in ["1", "true", "TRUE", "yes", "Yes"] {
            assert!(config(&[("GEMINICLI_MCP_DEBUG", yes)]).debug, "{yes}");
        }
        for no in ["0", "false", "no", "on", ""] {
            assert!(!config(&[("GEMINICLI_MCP_DEBUG", no)]).debug, "{no}");
        }
    }

    #[test]
    fn slash_commands_mode() {
        let c = config(&[("GEMINICLI_MCP_SLASH_COMMANDS", "passthrough")]);
        assert_eq!(c.slash_commands, SlashCommands::Passthrough);
        let c = config(&[("GEMINICLI_MCP_SLASH_COMMANDS", "nonsense")]);
        assert_eq!(c.slash_commands, SlashCommands::Escape);
    }

    #[test]
    fn empty_bin_is_unset() {
        assert!(config(&[("GEMINI_CLI_BIN", "")]).gemini_bin.is_none());
        assert_eq!(
            config(&[("GEMINI_CLI_BIN", "/x/gemini")]).gemini_bin,
            Some(OsString::from("/x/gemini"))
        );
    }

    #[test]
    fn help_lists_every_variable() {
        for name in [
            "GEMINI_CLI_BIN",
            "GEMINICLI_MCP_MAX_OUTPUT_BYTES",
            "GEMINICLI_MCP_DEBUG",
            "GEMINICLI_MCP_KILL_GRACE_MS",
            "GEMINICLI_MCP_EOF_GRACE_MS",
            "GEMINICLI_MCP_MAX_CONCURRENCY",
            "GEMINICLI_MCP_HEARTBEAT_MS",
            "GEMINICLI_MCP_RESULT_BUDGET_BYTES",
            "GEMINICLI_MCP_SLASH_COMMANDS",
            "GEMINICLI_MCP_ENV",
            "GEMINICLI_MCP_LOG",
            "GEMINICLI_MCP_HTTP",
            "GEMINICLI_MCP_HTTP_TOKEN",
            "GEMINICLI_MCP_HTTP_TOKEN_FILE",
            "GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS",
            "GEMINICLI_MCP_HTTP_ALLOWED_HOSTS",
            "GEMINICLI_MCP_HTTP_ALLOW_REMOTE",
            "GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS",
            "GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS",
            "GEMINICLI_MCP_HTTP_MAX_CONNECTIONS",
            "GEMINICLI_MCP_ALLOWED_ROOTS",
            "GEMINICLI_MCP_APPROVAL_MODE",
            "GEMINICLI_MCP_TOOLSETS",
            "GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS",
            "GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS",
            "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
            "GEMINICLI_MCP_RATE_LIMIT_RETRY",
            "GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS",
            "GEMINICLI_MCP_FALLBACK_MODELS",
            "GEMINICLI_MCP_STRUCTURED_REPAIR",
            "GEMINICLI_MCP_BACKEND",
            "GEMINICLI_MCP_ASK_TIMEOUT_MS",
            "GEMINICLI_MCP_TASKS",
            "GEMINICLI_MCP_TASK_RETENTION_MS",
            "GEMINICLI_MCP_MAX_TASKS",
        ] {
            assert!(ENV_HELP.contains(name), "{name}");
        }
    }

    #[test]
    fn task_settings_and_the_ask_timeout_are_read() {
        let d = config(&[]);
        assert!(d.tasks.enabled);
        assert_eq!(d.tasks.retention, Duration::from_millis(600_000));
        assert_eq!(d.tasks.max_tasks, 64);
        assert_eq!(d.ask_timeout, Duration::from_millis(120_000));
        let c = config(&[
            ("GEMINICLI_MCP_TASKS", "Off"),
            ("GEMINICLI_MCP_TASK_RETENTION_MS", "1500"),
            ("GEMINICLI_MCP_MAX_TASKS", "3"),
            ("GEMINICLI_MCP_ASK_TIMEOUT_MS", "2500"),
        ]);
        assert!(!c.tasks.enabled);
        assert_eq!(c.tasks.retention, Duration::from_millis(1500));
        assert_eq!(c.tasks.max_tasks, 3);
        assert_eq!(c.ask_timeout, Duration::from_millis(2500));
        // A typo keeps tasks on and the defaults.
        let t = config(&[
            ("GEMINICLI_MCP_TASKS", "maybe"),
            ("GEMINICLI_MCP_MAX_TASKS", "-1"),
        ]);
        assert!(t.tasks.enabled);
        assert_eq!(t.tasks.max_tasks, 64);
    }

    #[test]
    fn env_policy_defaults_to_inherit() {
        assert_eq!(config(&[]).env_policy, EnvPolicy::Inherit);
        let c = config(&[("GEMINICLI_MCP_ENV", " Minimal ")]);
        assert_eq!(c.env_policy, EnvPolicy::Minimal);
        let c = config(&[("GEMINICLI_MCP_ENV", "none")]);
        assert_eq!(c.env_policy, EnvPolicy::Inherit);
    }

    #[test]
    fn flags_win_over_env_which_wins_over_defaults() {
        let mut c = config(&[
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "7"),
            ("GEMINICLI_MCP_KILL_GRACE_MS", "900"),
            ("GEMINICLI_MCP_ENV", "minimal"),
        ]);
        let cli = Cli::try_parse_from([
            "geminicli-mcp",
            "--max-concurrency",
            "2",
            "--env",
            "inherit",
            "--slash-commands",
            "passthrough",
        ])
        .unwrap();
        c.apply_flags(&cli.flags);
        assert_eq!(c.max_concurrency, 2, "flag over env");
        assert_eq!(c.env_policy, EnvPolicy::Inherit, "flag over env");
        assert_eq!(c.kill_grace, Duration::from_millis(900), "env over default");
        assert_eq!(c.heartbeat, Duration::from_millis(DEFAULT_HEARTBEAT_MS));
        assert_eq!(c.slash_commands, SlashCommands::Passthrough);
    }

    #[test]
    fn flags_are_checked_strictly() {
        for bad in [
            &["geminicli-mcp", "--max-concurrency", "0"][..],
            &["geminicli-mcp", "--env", "all"],
            &["geminicli-mcp", "--http-token", "x"],
            &["geminicli-mcp", "doctor", "--doctor-timeout", "-1"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
        let cli = Cli::try_parse_from([
            "geminicli-mcp",
            "doctor",
            "--json",
            "--max-concurrency",
            "3",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, Some(Command::Doctor(ref d)) if d.json && d.doctor_timeout == 30.0)
        );
        assert_eq!(cli.flags.max_concurrency, Some(3), "settings are global");
    }
}
