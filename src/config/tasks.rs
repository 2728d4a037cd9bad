//! The settings of calls run as tasks (`GEMINICLI_MCP_TASKS`, `GEMINICLI_MCP_TASK_RETENTION_MS`,
//! `GEMINICLI_MCP_MAX_TASKS`).

use std::time::Duration;

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
