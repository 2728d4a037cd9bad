//! The warm backend's settings (`GEMINICLI_MCP_TOOLSETS` naming `acp`, `GEMINICLI_MCP_ACP_*`).

use std::ffi::OsString;
use std::time::Duration;

use super::parse::{parse_positive, split_list};

/// Default time an agent may sit unused before it is shut down (10 minutes).
pub const DEFAULT_IDLE_MS: u64 = 600_000;
/// Default number of prompts a session serves before the next call starts a fresh one.
pub const DEFAULT_MAX_TURNS: u32 = 20;
/// Default bound on every ACP request but `session/prompt` (start-up included: the real CLI takes
/// 2.5-9 s before it reads its input).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 120_000;

/// The ACP backend's settings.
#[derive(Debug, Clone)]
pub struct AcpConfig {
    /// `GEMINICLI_MCP_TOOLSETS` names `acp` (or `agent`): the four tools are listed and served.
    pub enabled: bool,
    /// `GEMINICLI_MCP_ACP_IDLE_MS`: an agent unused this long is shut down.
    pub idle: Duration,
    /// `GEMINICLI_MCP_ACP_MAX_TURNS`: prompts per session before it is replaced.
    pub max_turns: u32,
    /// `GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS`: bound on start-up and every request but prompts; an
    /// agent that does not answer in time is killed.
    pub request_timeout: Duration,
}

impl Default for AcpConfig {
    fn default() -> Self {
        AcpConfig {
            enabled: false,
            idle: Duration::from_millis(DEFAULT_IDLE_MS),
            max_turns: DEFAULT_MAX_TURNS,
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
        }
    }
}

impl AcpConfig {
    /// Reads the variables through `lookup`; invalid numbers mean the default.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let text = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
        let positive = |name: &str| text(name).and_then(|v| parse_positive(&v));
        let d = AcpConfig::default();
        AcpConfig {
            enabled: text("GEMINICLI_MCP_TOOLSETS").is_some_and(|v| {
                split_list(&v)
                    .iter()
                    // Not `all`: this set starts long-lived processes, so it is named explicitly.
                    .any(|s| matches!(s.to_ascii_lowercase().as_str(), "acp" | "agent"))
            }),
            idle: positive("GEMINICLI_MCP_ACP_IDLE_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.idle),
            max_turns: positive("GEMINICLI_MCP_ACP_MAX_TURNS")
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(d.max_turns),
            request_timeout: positive("GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.request_timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> AcpConfig {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        AcpConfig::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn the_tool_set_is_opt_in() {
        assert!(!config(&[]).enabled);
        assert!(!config(&[("GEMINICLI_MCP_TOOLSETS", "sessions")]).enabled);
        assert!(config(&[("GEMINICLI_MCP_TOOLSETS", "sessions, ACP")]).enabled);
        assert!(config(&[("GEMINICLI_MCP_TOOLSETS", "agent")]).enabled);
        assert!(!config(&[("GEMINICLI_MCP_TOOLSETS", "all")]).enabled);
        let c = config(&[
            ("GEMINICLI_MCP_ACP_MAX_TURNS", "3"),
            ("GEMINICLI_MCP_ACP_IDLE_MS", "x"),
        ]);
        assert_eq!(c.max_turns, 3);
        assert_eq!(c.idle, Duration::from_millis(DEFAULT_IDLE_MS));
    }
}
