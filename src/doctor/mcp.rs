//! The doctor's check of the MCP servers the Gemini CLI would start (its settings' and its
//! extensions'): each one started as the CLI starts it and sent `initialize`, all at once, each
//! within `GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS`, then its process group killed; those that do not
//! answer are named (a call leaves them out of its CLI, which would otherwise wait for them), and
//! this server's own entries are shown as left out.

use std::ffi::OsString;
use std::path::Path;

use serde_json::{json, Value};

use crate::config::Config;
use crate::gemini::mcp_probe::{self, Verdict};
use crate::gemini::mcp_servers;

/// One server of the settings, and what the doctor found.
#[derive(Debug, Clone)]
pub(crate) struct McpRow {
    /// Its name.
    pub(crate) name: String,
    /// The settings file or extension manifest it comes from.
    pub(crate) from: String,
    /// What it did; `None` for this server's own entries (left out, not started).
    pub(crate) verdict: Option<Verdict>,
}

/// What the fix of a nested server says.
const NESTED_FIX: &str = "remove this server from the MCP servers of the Gemini CLI settings the outer geminicli-mcp reads, or update the outer one: it leaves out every entry whose command starts geminicli-mcp";

/// Checks every server the CLI would start in `cwd`, given the environment `vars`, each within
/// the configured bound: the rows and the problem of a nested server (its message and fix);
/// warnings for those a call leaves out or the CLI cannot start go into `warnings`.
pub(super) async fn check(
    vars: &[(OsString, OsString)],
    cwd: &Path,
    warnings: &mut Vec<String>,
    config: &Config,
) -> (Vec<McpRow>, Option<(String, String)>) {
    let bound = config.mcp_server_timeout;
    let var = |k: &str| {
        let same = |n: &OsString| match cfg!(windows) {
            true => n.to_string_lossy().eq_ignore_ascii_case(k),
            false => n == k,
        };
        vars.iter().find(|(n, _)| same(n)).map(|(_, v)| v.clone())
    };
    let nested = mcp_servers::nested(var).map(|why| (why, NESTED_FIX.to_owned()));
    let servers = mcp_servers::read(cwd, var);
    let ours = servers.ours();
    let mut set = tokio::task::JoinSet::new();
    for (i, c) in servers.started().enumerate() {
        let (entry, cwd, own) = (c.entry.clone(), cwd.to_path_buf(), ours.contains(&c.name));
        let (name, from) = (c.name.clone(), c.from.display().to_string());
        set.spawn(async move {
            let verdict = match own {
                true => None,
                false => Some(mcp_probe::probe(&entry, &cwd, bound).await),
            };
            (
                i,
                McpRow {
                    name,
                    from,
                    verdict,
                },
            )
        });
    }
    let mut rows = Vec::new();
    while let Some(Ok(row)) = set.join_next().await {
        rows.push(row);
    }
    rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<McpRow> = rows.into_iter().map(|(_, r)| r).collect();
    let found: Vec<String> = rows
        .iter()
        .filter_map(|r| match &r.verdict {
            Some(Verdict::Silent) => Some(format!(
                "the MCP server '{}' ({}) does not answer `initialize` within {} ms: calls leave it out of their CLI (which would wait up to 10 minutes for it); fix: repair or remove its entry, or give it a \"timeout\"",
                r.name,
                r.from,
                bound.as_millis()
            )),
            Some(Verdict::Failed(why)) => Some(format!(
                "the MCP server '{}' ({}) does not work: {why}; the CLI warns (`MCP issues detected`) and runs without it",
                r.name, r.from
            )),
            _ => None,
        })
        .collect();
    warnings.extend(found);
    (rows, nested)
}

fn state(verdict: Option<&Verdict>) -> (&'static str, String) {
    match verdict {
        None => (
            "left_out",
            "this server itself: left out of the CLI it runs".into(),
        ),
        Some(Verdict::Answered(d)) => (
            "answered",
            format!("answered `initialize` in {:.1} s", d.as_secs_f64()),
        ),
        Some(Verdict::Silent) => (
            "silent",
            "NO ANSWER to `initialize`: calls leave it out".into(),
        ),
        Some(Verdict::Failed(why)) => ("failed", format!("does not work: {why}")),
        Some(Verdict::NotChecked(why)) => ("not_checked", format!("not checked ({why})")),
    }
}

/// The rows as JSON.
pub(super) fn json(rows: &[McpRow]) -> Value {
    rows.iter()
        .map(|r| {
            let (status, text) = state(r.verdict.as_ref());
            json!({"name": r.name, "from": r.from, "status": status, "detail": text})
        })
        .collect()
}

/// The rows as the report's section (nothing when the settings hold no server).
pub(super) fn text(rows: &[McpRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut t =
        String::from("\nThe Gemini CLI's MCP servers (each started and sent `initialize`)\n");
    for r in rows {
        t.push_str(&format!(
            "  {:<16} {} ({})\n",
            r.name,
            state(r.verdict.as_ref()).1,
            r.from
        ));
    }
    t
}
