//! Every setting read through its item: the defaults and the readings of [`Config`] and its
//! parts, each field from the item of `super::settings` that declares it.

use std::ffi::OsString;

use crate::deadline::Deadlines;

use super::acp::AcpConfig;
use super::parse::Vars;
use super::policy::{Policy, QuotaPolicy};
use super::settings as s;
use super::tasks::TaskLimits;
use super::values::Config;

impl Default for Config {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl Config {
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
        Config {
            gemini_bin: s::GEMINI_CLI_BIN.get(vars),
            max_output_bytes: s::MAX_OUTPUT_BYTES.get(vars),
            debug: s::DEBUG.get(vars),
            kill_grace: s::KILL_GRACE_MS.get(vars),
            eof_grace: s::EOF_GRACE_MS.get(vars),
            max_concurrency: s::MAX_CONCURRENCY.get(vars),
            heartbeat: s::HEARTBEAT_MS.get(vars),
            mcp_server_timeout: s::MCP_SERVER_TIMEOUT_MS.get(vars),
            result_budget: s::RESULT_BUDGET_BYTES.get(vars),
            slash_commands: s::SLASH_COMMANDS.get(vars),
            env_policy: s::ENV.get(vars),
            env_pass: s::ENV_PASS.get(vars),
            policy: Policy::read(vars),
            acp: AcpConfig::read(vars),
            tasks: TaskLimits::read(vars),
            ask_timeout: s::ASK_TIMEOUT_MS.get(vars),
            start_gate: s::START_GATE_MS.get(vars),
            unread: Vec::new(),
        }
    }
}

impl Default for AcpConfig {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl AcpConfig {
    /// Reads the variables; invalid values mean the default (and are noted in `vars`).
    pub(crate) fn read(vars: &Vars) -> Self {
        AcpConfig {
            enabled: s::TOOLSETS.get(vars).acp,
            idle: s::ACP_IDLE_MS.get(vars),
            max_turns: s::ACP_MAX_TURNS.get(vars),
            request_timeout: s::ACP_REQUEST_TIMEOUT_MS.get(vars),
            backend: s::BACKEND.get(vars),
            max_agents: s::MAX_AGENTS.get(vars),
            max_prompts: s::MAX_PROMPTS.get(vars),
            spare_sessions: s::ACP_SPARE_SESSIONS.get(vars),
            max_sessions: s::ACP_MAX_SESSIONS.get(vars),
            max_agent_mb: s::ACP_MAX_AGENT_MB.get(vars),
        }
    }
}

impl Default for QuotaPolicy {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl QuotaPolicy {
    /// Reads the variables.
    pub(crate) fn read(vars: &Vars) -> QuotaPolicy {
        QuotaPolicy {
            rate_limit_retry: s::RATE_LIMIT_RETRY.get(vars),
            max_wait: s::RATE_LIMIT_MAX_WAIT_MS.get(vars),
            fallback_models: s::FALLBACK_MODELS.get(vars),
        }
    }
}

impl Default for Policy {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl Policy {
    /// Reads the variables, noting what it does not understand in `vars`.
    pub(crate) fn read(vars: &Vars) -> Self {
        Policy {
            allowed_roots: s::ALLOWED_ROOTS.get(vars),
            approval_ceiling: s::APPROVAL_MODE.get(vars),
            toolsets: s::TOOLSETS.get(vars),
            deadlines: Deadlines {
                first_content: s::FIRST_CONTENT_TIMEOUT_MS.get(vars),
                inactivity: s::INACTIVITY_TIMEOUT_MS.get(vars),
                total: s::TOTAL_TIMEOUT_MS.get(vars),
            },
            quota: QuotaPolicy::read(vars),
            structured_repair: s::STRUCTURED_REPAIR.get(vars),
        }
    }
}

impl Default for TaskLimits {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl TaskLimits {
    /// Reads the three variables; a bad value leaves its default.
    pub(super) fn read(vars: &Vars) -> TaskLimits {
        TaskLimits {
            enabled: s::TASKS.get(vars),
            retention: s::TASK_RETENTION_MS.get(vars),
            max_tasks: s::MAX_TASKS.get(vars),
        }
    }
}
