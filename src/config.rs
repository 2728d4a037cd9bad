//! Server configuration: the command line (`--help`, `--version`) and the `GEMINI_CLI_BIN` /
//! `GEMINICLI_MCP_*` environment variables, parsed leniently into one [`Config`].

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

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
/// Default cap on the characters of an answer returned inline. 80,000 characters is about 20k
/// tokens: below Claude Code's 25k-token cap on tool results, with room for the metadata.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 80_000;

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
  GEMINICLI_MCP_MAX_RESULT_CHARS  Longest answer returned inline; longer answers keep head and tail,
                                  set truncated=true and stay readable as an MCP resource
                                  (default 80000, about 20k tokens).
  GEMINICLI_MCP_SLASH_COMMANDS    escape (default): a prompt starting with `/` is sent with a
                                  leading backslash so the CLI does not run it as a command;
                                  passthrough: sent as is (the CLI may run e.g. /memory show).

The server speaks MCP over stdio (stdout carries only JSON-RPC; logs go to stderr).";

/// Command line of the server binary. It takes no arguments: configuration comes from the
/// environment so that MCP clients can set it in their `env` blocks.
#[derive(Debug, Parser)]
#[command(
    name = "geminicli-mcp",
    version,
    about = "MCP server (stdio) that runs Google's headless Gemini CLI as a tool",
    after_help = ENV_HELP
)]
pub struct Cli {}

/// How a prompt that starts with `/` reaches the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommands {
    /// Prefix the slash with a backslash: the CLI sees text, not a command.
    Escape,
    /// Send the prompt unchanged: the CLI may run it as a command (`/memory show` does).
    Passthrough,
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
    /// Longest answer returned inline, in characters.
    pub max_result_chars: usize,
    /// How a leading `/` is passed.
    pub slash_commands: SlashCommands,
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
            max_result_chars: DEFAULT_MAX_RESULT_CHARS,
            slash_commands: SlashCommands::Escape,
        }
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Builds the configuration from any variable lookup (tests pass a map). Invalid values fall
    /// back to the default rather than failing: a typo in a client's `env` block must not stop the
    /// server from starting, which is what the reference does for the output cap.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let text = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
        let positive = |name: &str| text(name).and_then(|v| parse_positive(&v));
        let d = Config::default();
        Config {
            gemini_bin: lookup("GEMINI_CLI_BIN").filter(|v| !v.is_empty()),
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
            max_result_chars: positive("GEMINICLI_MCP_MAX_RESULT_CHARS")
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(d.max_result_chars),
            slash_commands: match text("GEMINICLI_MCP_SLASH_COMMANDS")
                .map(|v| v.trim().to_ascii_lowercase())
                .as_deref()
            {
                Some("passthrough" | "pass-through" | "pass") => SlashCommands::Passthrough,
                _ => SlashCommands::Escape,
            },
        }
    }
}

/// A positive base-10 integer: ASCII digits only (no sign, no spaces, no `0x`), above zero.
pub fn parse_positive(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u64>().ok().filter(|v| *v > 0)
}

/// The reference's truthy spellings: `1`, `true`, `yes` (case-insensitive).
pub fn parse_flag(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes"
    )
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

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = config(&[]);
        assert_eq!(c.max_output_bytes, 33_554_432);
        assert!(!c.debug);
        assert_eq!(c.kill_grace, Duration::from_millis(2000));
        assert_eq!(c.eof_grace, Duration::from_millis(120_000));
        assert_eq!(c.max_concurrency, 4);
        assert_eq!(c.heartbeat, Duration::from_millis(10_000));
        assert_eq!(c.max_result_chars, 80_000);
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
            "GEMINICLI_MCP_MAX_RESULT_CHARS",
            "GEMINICLI_MCP_SLASH_COMMANDS",
        ] {
            assert!(ENV_HELP.contains(name), "{name}");
        }
    }
}
