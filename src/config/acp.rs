//! The warm backend's settings (`GEMINICLI_MCP_TOOLSETS` naming `acp`, `GEMINICLI_MCP_ACP_*`).

use std::time::Duration;

use super::parse::{split_list, Vars};

/// Default time an agent may sit unused before it is shut down (10 minutes).
pub(super) const DEFAULT_IDLE_MS: u64 = 600_000;
/// Default number of prompts a session serves before the next call starts a fresh one.
pub(super) const DEFAULT_MAX_TURNS: u32 = 20;
/// Default bound on every ACP request but `session/prompt` (start-up included: the real CLI takes
/// 2.5-9 s before it reads its input).
pub(super) const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 120_000;
/// Default number of prompts the agents run at once, server-wide.
pub(super) const DEFAULT_MAX_PROMPTS: usize = 16;
/// Default number of fresh sessions an agent keeps made ahead for the prompt tools.
pub(super) const DEFAULT_SPARE_SESSIONS: usize = 2;
/// Default number of sessions an agent makes or loads before it is replaced (each costs the agent
/// ~1.8 MB it never gives back, and starts the user's MCP servers again, which live as long as it).
pub(super) const DEFAULT_MAX_SESSIONS: u32 = 32;
/// Default resident memory (MiB) past which an agent is replaced at its first idle moment: a fresh
/// real agent holds 210-270 MB; one that leaks (CLI 0.62 keeps each model request's history when
/// telemetry is off, ~1.17 MB a turn by its bug report) or holds huge sessions is started afresh
/// long before Node's own heap limit ends it mid-turn.
pub(super) const DEFAULT_MAX_AGENT_MB: u64 = 1024;

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

impl Default for AcpConfig {
    fn default() -> Self {
        AcpConfig {
            enabled: false,
            idle: Duration::from_millis(DEFAULT_IDLE_MS),
            max_turns: DEFAULT_MAX_TURNS,
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            backend: Backend::Acp,
            max_agents: None,
            max_prompts: DEFAULT_MAX_PROMPTS,
            spare_sessions: DEFAULT_SPARE_SESSIONS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_agent_mb: DEFAULT_MAX_AGENT_MB,
        }
    }
}

impl AcpConfig {
    /// Reads the variables; invalid values mean the default (and are noted in `vars`).
    pub(crate) fn read(vars: &Vars) -> Self {
        let text = |name: &str| vars.text(name);
        let positive = |name: &str| vars.positive(name);
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
            backend: vars
                .choice("GEMINICLI_MCP_BACKEND", "oneshot or acp", Backend::parse)
                .unwrap_or(d.backend),
            max_agents: positive("GEMINICLI_MCP_MAX_AGENTS")
                .and_then(|v| usize::try_from(v).ok())
                .or(d.max_agents),
            max_prompts: positive("GEMINICLI_MCP_MAX_PROMPTS")
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(d.max_prompts),
            spare_sessions: vars
                .choice("GEMINICLI_MCP_ACP_SPARE_SESSIONS", "a whole number", |v| {
                    v.trim().parse().ok()
                })
                .unwrap_or(d.spare_sessions),
            max_sessions: positive("GEMINICLI_MCP_ACP_MAX_SESSIONS")
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(d.max_sessions),
            max_agent_mb: positive("GEMINICLI_MCP_ACP_MAX_AGENT_MB").unwrap_or(d.max_agent_mb),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(c.idle, Duration::from_millis(DEFAULT_IDLE_MS));
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
