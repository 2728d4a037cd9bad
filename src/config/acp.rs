//! The warm backend's settings (`GEMINICLI_MCP_TOOLSETS` naming `acp`, `GEMINICLI_MCP_ACP_*`).

use std::time::Duration;

/// Which backend answers the prompt tools (`GEMINICLI_MCP_BACKEND`, `--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// One CLI process per call (`gemini -p`).
    Oneshot,
    /// Long-lived `gemini --acp` agents, a fresh session per call (the default: a call skips the
    /// CLI's start-up of seconds); a call whose agent cannot start runs one-shot.
    #[default]
    Acp,
}

impl Backend {
    /// `oneshot` or `acp` (any case, trimmed); anything else is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "oneshot" => Some(Backend::Oneshot),
            "acp" => Some(Backend::Acp),
            _ => None,
        }
    }

    /// The spelling in `GEMINICLI_MCP_BACKEND`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Oneshot => "oneshot",
            Backend::Acp => "acp",
        }
    }
}

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
    /// `GEMINICLI_MCP_BACKEND`: what answers the prompt tools.
    pub backend: Backend,
    /// `GEMINICLI_MCP_MAX_AGENTS`: agent processes at once (a real agent holds 210-270 MB); past
    /// it the least recently used idle one is stopped. Unset: `GEMINICLI_MCP_MAX_CONCURRENCY`.
    pub max_agents: Option<usize>,
    /// `GEMINICLI_MCP_MAX_PROMPTS`: prompts running on agents at once, server-wide; more wait.
    pub max_prompts: usize,
    /// `GEMINICLI_MCP_ACP_SPARE_SESSIONS`: fresh sessions an agent keeps ready (0: none).
    pub spare_sessions: usize,
    /// `GEMINICLI_MCP_ACP_MAX_SESSIONS`: sessions an agent opens before it is replaced.
    pub max_sessions: u32,
    /// `GEMINICLI_MCP_ACP_MAX_AGENT_MB`: resident memory past which an agent is replaced.
    pub max_agent_mb: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::Vars;
    use crate::config::settings as s;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn config(vars: &[(&str, &str)]) -> AcpConfig {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let lookup = |name: &str| map.get(name).cloned();
        AcpConfig::read(&Vars::new(&lookup))
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
        assert_eq!(c.idle, s::ACP_IDLE_MS.default());
    }

    #[test]
    fn the_backend_and_the_pool_bounds() {
        let d = config(&[]);
        assert_eq!(d.backend, Backend::Acp, "warm by default");
        assert_eq!(
            (d.max_agents, d.max_prompts, d.spare_sessions),
            (None, 16, 2)
        );
        assert_eq!(
            config(&[("GEMINICLI_MCP_BACKEND", " OneShot ")]).backend,
            Backend::Oneshot
        );
        let c = config(&[
            ("GEMINICLI_MCP_BACKEND", " ACP "),
            ("GEMINICLI_MCP_MAX_AGENTS", "2"),
            ("GEMINICLI_MCP_ACP_SPARE_SESSIONS", "0"),
            ("GEMINICLI_MCP_MAX_PROMPTS", "0"),
        ]);
        assert_eq!(c.backend, Backend::Acp);
        assert_eq!(c.max_agents, Some(2));
        assert_eq!(c.spare_sessions, 0, "no spares is a choice");
        assert_eq!(c.max_prompts, 16, "zero prompts is not");
        assert_eq!(
            config(&[("GEMINICLI_MCP_BACKEND", "x")]).backend,
            Backend::Acp
        );
    }
}
