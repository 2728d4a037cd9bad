//! The warm backend's choice of backend; its settings, `AcpConfig`, are the rows `acp.*` of
//! `super::settings`.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::Vars;
    use crate::config::settings as s;
    use crate::config::AcpConfig;
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
