//! The types and defaults of the configuration's values (the rows of `super::settings` make
//! [`Config`](super::Config) of them).

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
/// Default longest hold of a workspace's start gate: a healthy 0.61 start has recorded its prompt
/// in 2 to 5 s, the user's MCP servers connected.
pub const DEFAULT_START_GATE_MS: u64 = 15_000;

/// How a prompt that starts with `/` reaches the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommands {
    /// Prefix the slash with a backslash: the CLI sees text, not a command.
    Escape,
    /// Send the prompt unchanged: the CLI may run it as a command (`/memory show` does).
    Passthrough,
}

impl SlashCommands {
    /// The spelling in `GEMINICLI_MCP_SLASH_COMMANDS` and `--slash-commands`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlashCommands::Escape => "escape",
            SlashCommands::Passthrough => "passthrough",
        }
    }

    /// `escape` or `passthrough` (also `pass-through`, `pass`; any case, trimmed).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "escape" => Some(SlashCommands::Escape),
            "passthrough" | "pass-through" | "pass" => Some(SlashCommands::Passthrough),
            _ => None,
        }
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
