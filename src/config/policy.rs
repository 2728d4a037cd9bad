//! The operator's limits on what a call may ask for, as settings: the allowed roots, the
//! approval-mode ceiling, the opt-in tool sets, the deadlines and the quota policy, each read
//! through its item of `super::settings`. The checks of a call against them are in `crate::policy`.

use std::path::PathBuf;

use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;

use super::parse::Vars;

/// The operator's limits.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `GEMINICLI_MCP_ALLOWED_ROOTS`: where `workspace`, `include_directories`, `image_paths` and
    /// `save_file` may point. Empty: the server's working directory and below.
    pub allowed_roots: Vec<PathBuf>,
    /// `GEMINICLI_MCP_APPROVAL_MODE`: the most permissive approval mode a call may ask for, and
    /// the mode of calls that ask for none (default `yolo`, as the reference).
    pub approval_ceiling: ApprovalMode,
    /// `GEMINICLI_MCP_TOOLSETS`: the opt-in tools listed besides the reference's three.
    pub toolsets: Toolsets,
    /// `GEMINICLI_MCP_*_TIMEOUT_MS`: the operator's deadlines (none by default).
    pub deadlines: Deadlines,
    /// The opt-in quota and retry policy (off by default).
    pub quota: QuotaPolicy,
    /// `GEMINICLI_MCP_STRUCTURED_REPAIR`: a structured answer that does not validate gets one
    /// follow-up turn asking for the corrected JSON (a call's `repair` wins; off by default).
    pub structured_repair: bool,
}

/// What the server does about 429s on top of the CLI's own retries (off by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaPolicy {
    /// `GEMINICLI_MCP_RATE_LIMIT_RETRY`: after `rate_limited` with a known delay, wait and retry
    /// once.
    pub rate_limit_retry: bool,
    /// `GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS` (default 60000): the longest wait for that retry.
    pub max_wait: std::time::Duration,
    /// `GEMINICLI_MCP_FALLBACK_MODELS`: after `quota_exhausted`, the models to try next, in order.
    pub fallback_models: Vec<String>,
}

/// Which opt-in tool sets are listed and callable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Toolsets {
    /// `sessions`: list and delete the CLI's sessions.
    pub sessions: bool,
    /// `models`: the models the CLI knows.
    pub models: bool,
    /// `jobs`: prompt calls as background jobs (`gemini_start`, `gemini_wait`, `gemini_cancel`,
    /// `gemini_jobs`).
    pub jobs: bool,
    /// `acp` (or `agent`): the ACP tool set, never part of `all` (it starts long-lived
    /// processes, so it is named explicitly).
    pub acp: bool,
}

impl Toolsets {
    /// Parses the tool sets' list: comma-separated `sessions`, `models`, `jobs`, `acp`, or `all`
    /// (`sessions` and `models`; any case, spaces ignored). Unknown names are returned.
    pub fn parse(value: &str) -> (Toolsets, Vec<String>) {
        let mut t = Toolsets::default();
        let mut unknown = Vec::new();
        for name in value.split(',').map(|n| n.trim().to_ascii_lowercase()) {
            match name.as_str() {
                "" => {}
                "sessions" => t.sessions = true,
                "models" => t.models = true,
                "jobs" => t.jobs = true,
                "all" => {
                    t.sessions = true;
                    t.models = true;
                }
                "acp" | "agent" => t.acp = true,
                _ => unknown.push(name),
            }
        }
        (t, unknown)
    }

    /// Reads the variable `name`, noting the names it does not know.
    pub(crate) fn read(vars: &Vars, name: &'static str) -> Option<Toolsets> {
        let value = vars.text(name)?;
        let (t, unknown) = Toolsets::parse(&value);
        if !unknown.is_empty() {
            // Tool set names are not secrets: the note says which were not known.
            vars.note(
                name,
                &format!(
                    "names tool sets that do not exist, left out: {} (known: sessions, models, \
                     jobs, acp, all)",
                    unknown.join(", ")
                ),
            );
        }
        Some(t)
    }
}
