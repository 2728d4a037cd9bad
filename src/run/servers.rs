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

use crate::approval::ApprovalMode;
use crate::error::{ErrorKind, Failure};
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
    /// The silent servers, each with the settings file that names it.
    pub silent: Vec<String>,
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
///
/// `--allowed-mcp-server-names` does more than choose: the CLI also lets the tools of every
/// server it names run without asking (its policy's "MCP Allowed" rule, in every mode but
/// `plan`). Under `yolo` everything runs unasked anyway, and under `plan` the rule does not
/// apply, so there the names are handed as chosen. Under `default`, `auto_edit` or `ask`
/// (`widens`) a list the caller did not give would let servers' tools run that the mode would
/// have refused or asked about: then this server's own entries stay in the CLI's settings (a
/// server so started refuses to run Gemini, [`mcp_servers::nested`]), and a silent server ends
/// the call at once with its name and the fix instead of holding the run.
pub(crate) async fn apply(
    workspace: &Path,
    request: &mut PromptRequest,
    widening: Option<&'static str>,
    bound: Duration,
    progress: &Progress,
    ct: &CancellationToken,
) -> Result<Option<String>, Failure> {
    if mcp_servers::nested(|k| std::env::var_os(k)).is_some() {
        return Ok(None);
    }
    let servers = mcp_servers::read(workspace, |k| std::env::var_os(k));
    let call = &request.allowed_mcp_server_names;
    let choice = choose_among(&servers, workspace, call, progress, ct, bound).await;
    let (names, note) = settle(choice, widening, call.is_empty(), bound)?;
    if let Some(names) = names {
        request.allowed_mcp_server_names = names;
    }
    Ok(note)
}

/// The approval mode's name when handing the CLI a list of server names would let their tools
/// run unasked where the mode would refuse them or ask (see [`apply`]); `None` under `yolo` and
/// `plan`.
pub(crate) fn widening(asking: bool, mode: ApprovalMode) -> Option<&'static str> {
    match (asking, mode) {
        (true, _) => Some("ask"),
        (false, ApprovalMode::Yolo | ApprovalMode::Plan) => None,
        (false, mode) => Some(mode.as_str()),
    }
}

/// What a call's CLI is handed and what its result says, from the `choice` made: the names as
/// chosen, unless handing them would widen the mode (`widening`) beyond what the caller itself
/// named (`call_named_none`: it named no server). Then nothing is handed; a silent server is
/// the call's `config_error`, named with its file.
fn settle(
    choice: Choice,
    widening: Option<&str>,
    call_named_none: bool,
    bound: Duration,
) -> Result<(Option<Vec<String>>, Option<String>), Failure> {
    let Some(mode) = widening.filter(|_| call_named_none && choice.names.is_some()) else {
        return Ok((choice.names, choice.note));
    };
    if choice.silent.is_empty() {
        return Ok((None, None));
    }
    Err(Failure::new(
        ErrorKind::ConfigError,
        format!(
            "the Gemini CLI's settings hold MCP servers that do not answer `initialize` within {}s: {}; the Gemini CLI would wait up to 10 minutes for them, and under approval mode {mode} they cannot be left out (the CLI's one way to leave a server out lets the other servers' tools run unasked)",
            bound.as_secs(),
            choice.silent.join(", "),
        ),
    )
    .with_fix(
        "repair or remove that MCP server's entry in the Gemini CLI's settings, or give it a \"timeout\" in milliseconds",
    ))
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
    let silent = silent
        .iter()
        .map(|name| format!("'{name}' ({})", from(servers, name)))
        .collect();
    Choice {
        names,
        note,
        silent,
    }
}

/// What the result says: each silent server left out, and the fix. This server's own entries
/// are left out without a word: the CLI it runs must never start it.
fn note(servers: &Servers, silent: &[String], bound: Duration) -> Option<String> {
    let from = |name: &str| from(servers, name);
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

/// The settings file that names the server `name`.
fn from(servers: &Servers, name: &str) -> String {
    servers
        .configured
        .iter()
        .find(|c| c.name == name)
        .map_or_else(String::new, |c| c.from.display().to_string())
}

#[cfg(test)]
mod tests;
