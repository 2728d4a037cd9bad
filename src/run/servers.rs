//! The MCP servers a call's CLI may start, decided before it starts: never this server itself
//! (its entries, under any name, recognised by command), and never one of the user's servers
//! that does not answer `initialize` within `GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS` (10 s) — the CLI would wait up to 10
//! minutes for it before its first request (or before an agent answers). The user's servers are
//! checked at a call's start, at once and concurrently, and each verdict is kept (an answer for
//! [`ANSWERED_FOR`], silence for [`SILENT_FOR`]), so a call pays the check when a server is new or
//! was silent a while ago. What was left out reaches the call's result with the fix.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::gemini::command::PromptRequest;
use crate::gemini::mcp_probe::{self, Verdict};
use crate::gemini::mcp_servers::{self, Configured, Servers};
use crate::progress::Progress;
use crate::sync::lock;

/// How long a server's answer is trusted before it is checked again.
const ANSWERED_FOR: Duration = Duration::from_secs(3600);
/// How long a silent server is left out before it is checked again.
const SILENT_FOR: Duration = Duration::from_secs(300);

/// Verdicts by entry (its text and the workspace it starts in).
static KNOWN: Mutex<Option<HashMap<String, (bool, Instant)>>> = Mutex::new(None);

/// What a call's CLI is handed, and what the result says of it.
#[derive(Debug, Default)]
pub(crate) struct Choice {
    /// The names for `--allowed-mcp-server-names`, when some server is left out.
    pub names: Option<Vec<String>>,
    /// What was left out and why, for the result; `None` when nothing was.
    pub note: Option<String>,
}

fn key(c: &Configured, workspace: &Path) -> String {
    format!(
        "{}\u{0}{}",
        workspace.display(),
        serde_json::Value::Object(c.entry.clone())
    )
}

/// Whether `c` is known to answer (`Some(true)`), known silent (`Some(false)`), or to be checked.
fn known(c: &Configured, workspace: &Path) -> Option<bool> {
    let now = Instant::now();
    let map = lock(&KNOWN);
    let (answered, at) = map.as_ref()?.get(&key(c, workspace))?;
    let keep = if *answered { ANSWERED_FOR } else { SILENT_FOR };
    (now.duration_since(*at) < keep).then_some(*answered)
}

fn remember(c: &Configured, workspace: &Path, answered: bool) {
    lock(&KNOWN)
        .get_or_insert_with(HashMap::new)
        .insert(key(c, workspace), (answered, Instant::now()));
}

/// Decides the MCP servers of a call in `workspace` ([`choose`]), putting the names its CLI is
/// handed into the request's `allowed_mcp_server_names`; returns what its result says of those
/// left out. A server that is itself nested decides nothing: it starts no CLI.
pub(crate) async fn apply(
    workspace: &Path,
    request: &mut PromptRequest,
    bound: Duration,
    progress: &Progress,
    ct: &CancellationToken,
) -> Option<String> {
    if mcp_servers::nested(|k| std::env::var_os(k)).is_some() {
        return None;
    }
    let names = &mut request.allowed_mcp_server_names;
    let servers = mcp_servers::read(workspace, |k| std::env::var_os(k));
    let choice = choose_among(&servers, workspace, names, progress, ct, bound).await;
    if let Some(chosen) = choice.names {
        *names = chosen;
    }
    choice.note
}

/// Decides the servers of a call in `workspace` whose own names are `call` (its
/// `allowed_mcp_server_names`), each server given `bound` to answer. Progress says which servers
/// it waits for while it checks.
pub(crate) async fn choose_among(
    servers: &Servers,
    workspace: &Path,
    call: &[String],
    progress: &Progress,
    ct: &CancellationToken,
    bound: Duration,
) -> Choice {
    let ours = servers.ours();
    let candidates: Vec<&Configured> = servers
        .started()
        .filter(|c| !ours.contains(&c.name))
        .filter(|c| call.is_empty() || call.contains(&c.name))
        .collect();
    let mut silent: Vec<String> = candidates
        .iter()
        .filter(|c| known(c, workspace) == Some(false))
        .map(|c| c.name.clone())
        .collect();
    let unknown: Vec<&Configured> = candidates
        .into_iter()
        .filter(|c| known(c, workspace).is_none())
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|c| c.name.as_str()).collect();
        progress.waiting(format!(
            "checking that the Gemini CLI's MCP servers answer before the run (at most {}s): {}",
            bound.as_secs(),
            names.join(", ")
        ));
        let mut probes = tokio::task::JoinSet::new();
        for (i, c) in unknown.iter().enumerate() {
            let (entry, dir) = (c.entry.clone(), workspace.to_path_buf());
            probes.spawn(async move { (i, mcp_probe::probe(&entry, &dir, bound).await) });
        }
        let all = async {
            let mut out = Vec::new();
            while let Some(Ok((i, v))) = probes.join_next().await {
                out.push((unknown[i], v));
            }
            out
        };
        let results = tokio::select! {
            r = all => r,
            _ = ct.cancelled() => Vec::new(),
        };
        for (c, v) in results {
            let answered = !matches!(v, Verdict::Silent);
            if !answered {
                tracing::warn!(server = %c.name, "an MCP server of the Gemini CLI's settings does not answer initialize: left out of the call's runs");
                silent.push(c.name.clone());
            }
            remember(c, workspace, answered);
        }
        progress.waiting_done();
    }
    let mut leave_out = ours.clone();
    leave_out.extend(silent.iter().cloned());
    let names = servers.allowed_names(call, &leave_out);
    if !ours.is_empty() {
        tracing::debug!(servers = ?ours, "this server's own entries left out of the CLI's MCP servers");
    }
    let note = names.as_ref().and_then(|_| note(servers, &silent, bound));
    Choice { names, note }
}

/// What the result says: each silent server left out, and the fix. This server's own entries
/// are left out without a word: the CLI it runs must never start it.
fn note(servers: &Servers, silent: &[String], bound: Duration) -> Option<String> {
    let from = |name: &str| {
        servers
            .configured
            .iter()
            .find(|c| c.name == name)
            .map_or_else(String::new, |c| c.from.display().to_string())
    };
    let mut parts = Vec::new();
    for name in silent {
        parts.push(format!(
            "the MCP server '{name}' ({}) did not answer `initialize` within {}s, so this call ran without it (the Gemini CLI would have waited up to 10 minutes for it); fix: repair or remove its entry, or give it a \"timeout\" in milliseconds",
            from(name),
            bound.as_secs()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests;
