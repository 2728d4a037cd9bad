//! The settings of calls run as tasks (`GEMINICLI_MCP_TASKS`, `GEMINICLI_MCP_TASK_RETENTION_MS`,
//! `GEMINICLI_MCP_MAX_TASKS`).

use std::time::Duration;

use super::parse::Vars;
use super::settings as s;

/// The operator's task settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Whether calls may run as tasks at all (`GEMINICLI_MCP_TASKS`).
    pub enabled: bool,
    /// How long a task is kept after it finished or was last asked about
    /// (`GEMINICLI_MCP_TASK_RETENTION_MS`).
    pub retention: Duration,
    /// Most tasks held at once (`GEMINICLI_MCP_MAX_TASKS`).
    pub max_tasks: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            enabled: s::TASKS.default(),
            retention: s::TASK_RETENTION_MS.default(),
            max_tasks: s::MAX_TASKS.default(),
        }
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
