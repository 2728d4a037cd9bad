//! The operator's limits on what a call may ask for, as settings: the allowed roots, the
//! approval-mode ceiling, the opt-in tool sets, the deadlines and the quota policy, read from
//! `GEMINICLI_MCP_ALLOWED_ROOTS`, `GEMINICLI_MCP_APPROVAL_MODE`, `GEMINICLI_MCP_TOOLSETS` and the
//! deadline and quota variables. The checks of a call against them are in `crate::policy`.

use std::path::PathBuf;
use std::time::Duration;

use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;

use super::parse::{parse_flag, Vars};

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

impl Default for QuotaPolicy {
    fn default() -> Self {
        QuotaPolicy {
            rate_limit_retry: false,
            max_wait: std::time::Duration::from_millis(60_000),
            fallback_models: Vec::new(),
        }
    }
}

impl QuotaPolicy {
    /// Reads the variables; model names that would be refused as `model` are left out.
    pub(crate) fn read(vars: &Vars) -> QuotaPolicy {
        let d = QuotaPolicy::default();
        QuotaPolicy {
            rate_limit_retry: vars
                .text("GEMINICLI_MCP_RATE_LIMIT_RETRY")
                .is_some_and(|v| parse_flag(&v)),
            max_wait: vars
                .positive("GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS")
                .map_or(d.max_wait, std::time::Duration::from_millis),
            fallback_models: vars
                .text("GEMINICLI_MCP_FALLBACK_MODELS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|m| crate::names::validate_model(m).is_ok())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
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
}

impl Toolsets {
    /// Parses `GEMINICLI_MCP_TOOLSETS`: comma-separated `sessions`, `models`, `jobs`, or `all`
    /// (`sessions` and `models`; any case, spaces ignored; `acp`/`agent` belong to the ACP tool
    /// set). Unknown names are returned.
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
                // The ACP tool set is read by `acp`.
                "acp" | "agent" => {}
                _ => unknown.push(name),
            }
        }
        (t, unknown)
    }

    /// Reads the variable through `lookup`.
    pub(crate) fn read(vars: &Vars) -> Toolsets {
        let Some(value) = vars.text("GEMINICLI_MCP_TOOLSETS") else {
            return Toolsets::default();
        };
        let (t, unknown) = Toolsets::parse(&value);
        if !unknown.is_empty() {
            // Tool set names are not secrets: the note says which were not known.
            vars.note(
                "GEMINICLI_MCP_TOOLSETS",
                &format!(
                    "names tool sets that do not exist, left out: {} (known: sessions, models, \
                     jobs, acp, all)",
                    unknown.join(", ")
                ),
            );
        }
        t
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_roots: Vec::new(),
            approval_ceiling: ApprovalMode::Yolo,
            toolsets: Toolsets::default(),
            deadlines: Deadlines::default(),
            quota: QuotaPolicy::default(),
            structured_repair: false,
        }
    }
}

impl Policy {
    /// Reads the variables, noting what it does not understand in `vars`. An invalid approval
    /// mode means the most restrictive one (`plan`): a typo must not widen what callers may do.
    pub(crate) fn read(vars: &Vars) -> Self {
        let allowed_roots = vars
            .raw("GEMINICLI_MCP_ALLOWED_ROOTS")
            .filter(|v| !v.is_empty())
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let approval_ceiling = match vars.text("GEMINICLI_MCP_APPROVAL_MODE") {
            Some(v) if !v.trim().is_empty() => ApprovalMode::parse(&v.trim().to_ascii_lowercase())
                .unwrap_or_else(|| {
                    vars.note(
                        "GEMINICLI_MCP_APPROVAL_MODE",
                        "is not plan, default, auto_edit or yolo; plan, the narrowest, applies",
                    );
                    ApprovalMode::Plan
                }),
            _ => ApprovalMode::Yolo,
        };
        Policy {
            allowed_roots,
            approval_ceiling,
            toolsets: Toolsets::read(vars),
            deadlines: read_deadlines(vars),
            quota: QuotaPolicy::read(vars),
            structured_repair: vars
                .text("GEMINICLI_MCP_STRUCTURED_REPAIR")
                .is_some_and(|v| parse_flag(&v)),
        }
    }
}

/// Reads `GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS`, `GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS` and
/// `GEMINICLI_MCP_TOTAL_TIMEOUT_MS` (positive integers; anything else: unset).
fn read_deadlines(vars: &Vars) -> Deadlines {
    let ms = |name: &str| vars.positive(name).map(Duration::from_millis);
    Deadlines {
        first_content: ms("GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS"),
        inactivity: ms("GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS"),
        total: ms("GEMINICLI_MCP_TOTAL_TIMEOUT_MS"),
    }
}
