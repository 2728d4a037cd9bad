//! The settings of calls run as tasks (`GEMINICLI_MCP_TASKS`, `GEMINICLI_MCP_TASK_RETENTION_MS`,
//! `GEMINICLI_MCP_MAX_TASKS`).

use std::time::Duration;

use super::parse::{parse_off, Vars};

/// Default time a task is kept after it finished, or after the client last asked about it.
pub(crate) const DEFAULT_RETENTION_MS: u64 = 600_000;
/// Default number of tasks held at once, running and finished.
pub(crate) const DEFAULT_MAX_TASKS: usize = 64;

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
            enabled: true,
            retention: Duration::from_millis(DEFAULT_RETENTION_MS),
            max_tasks: DEFAULT_MAX_TASKS,
        }
    }
}

impl TaskLimits {
    /// Reads the three variables; a bad value leaves its default.
    pub(super) fn read(vars: &Vars) -> TaskLimits {
        let d = TaskLimits::default();
        TaskLimits {
            enabled: !vars
                .text("GEMINICLI_MCP_TASKS")
                .is_some_and(|v| parse_off(&v)),
            retention: vars
                .positive("GEMINICLI_MCP_TASK_RETENTION_MS")
                .map(Duration::from_millis)
                .unwrap_or(d.retention),
            max_tasks: vars
                .positive("GEMINICLI_MCP_MAX_TASKS")
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(d.max_tasks),
        }
    }
}
