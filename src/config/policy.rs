//! The opt-in tool sets' reading. The operator's limits on what a call may ask for, `Policy`
//! (the allowed roots, the approval-mode ceiling, the tool sets, the deadlines and the quota
//! policy), are the rows `policy.*` of `super::settings`; the checks of a call against them are in
//! `crate::policy`.

use super::parse::Vars;

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
