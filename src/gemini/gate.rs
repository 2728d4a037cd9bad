//! The workspace's start gate, and how long a run may hold it. Every CLI start (`gemini --acp`
//! included) deletes each session file of its project that holds no message yet, so a new
//! session's run holds its workspace's gate from before its start until its prompt is recorded
//! (observed on 0.61, `fake-gemini/differential/concurrent-sessions.py`). The gate opens at once
//! only where the settings the CLI will read turn that clean-up off
//! ([`retention::cleanup_may_run`]).
//!
//! A hold is a lease of at most `GEMINICLI_MCP_START_GATE_MS`: past it the next start in the
//! workspace goes ahead, so a run whose CLI is stuck costs its own call and never its
//! neighbours'. What 0.61 does makes that bound cheap. Its start-up clean-up is fired in the
//! first moments of a start, before the user's MCP servers are connected (`main()`, before
//! `config.initialize()`), and a new session's file is written only after they are
//! (`geminiClient.initialize()`, the last step of `config.initialize()`): a run stuck on an MCP
//! server that never answers `initialize` (the CLI waits up to 10 minutes for it) can neither
//! delete another run's session nor lose its own. Only a run stuck with a session file that holds
//! no prompt yet loses something: the next start may delete that file, and the run says so
//! ([`hold_start_gate`]).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::settings;
use crate::config::DEFAULT_START_GATE_MS;
use crate::deadline::{Deadlines, Limit};
use crate::error::{ErrorKind, Failure};
use crate::gemini::retention;
use crate::gemini::session::{self, remove_stubs_once_recorded, tidy_stubs};
use crate::progress::Progress;

/// One start gate per workspace, shared by the one-shot runs and the ACP agents.
#[derive(Debug)]
pub struct StartGates {
    gates: Mutex<HashMap<PathBuf, Arc<Gate>>>,
    /// The longest hold (`GEMINICLI_MCP_START_GATE_MS`).
    bound: Duration,
}

impl Default for StartGates {
    fn default() -> Self {
        StartGates::new(Duration::from_millis(DEFAULT_START_GATE_MS))
    }
}

/// One workspace's gate: who holds it since when, and a wake-up for those waiting.
#[derive(Debug, Default)]
struct Gate {
    lease: Mutex<Option<Lease>>,
    next: std::sync::atomic::AtomicU64,
    opened: Notify,
}

#[derive(Debug, Clone, Copy)]
struct Lease {
    ticket: u64,
    since: Instant,
}

/// Why a wait at the gate ended without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateWait {
    /// The call (or the server) was cancelled.
    Cancelled,
    /// The call's own deadline passed while it waited.
    Deadline(Limit),
}

/// What a call waiting at the gate has: its progress, where the wait is shown, and its deadlines.
#[derive(Clone, Copy, Default)]
pub struct Waiter<'a> {
    /// Where the wait is shown.
    pub progress: Option<&'a Progress>,
    /// The call's deadlines: the first content and total ones count from the call's start.
    pub limits: Deadlines,
}

impl<'a> Waiter<'a> {
    /// A waiter showing its wait in `progress`, under `limits`.
    pub fn new(progress: &'a Progress, limits: Deadlines) -> Self {
        Waiter {
            progress: Some(progress),
            limits,
        }
    }

    /// The deadline that ends a wait begun at `began`, the earliest of the first-content and
    /// total ones.
    fn until(&self, began: Instant) -> Option<(Instant, Limit)> {
        [Limit::FirstContent, Limit::Total]
            .into_iter()
            .filter_map(|l| self.limits.of(l).map(|d| (began + d, l)))
            .min_by_key(|(at, _)| *at)
    }
}

impl StartGates {
    /// Gates whose holds last `bound` at most.
    pub fn new(bound: Duration) -> Self {
        StartGates {
            gates: Mutex::default(),
            bound: bound.max(Duration::from_millis(1)),
        }
    }

    /// The longest hold.
    pub fn bound(&self) -> Duration {
        self.bound
    }

    /// Takes the gate of `workspace` (canonicalised when possible, so every caller agrees on
    /// the key): once nobody holds it, or its holder's lease has run out. The wait is shown in
    /// the waiter's progress, with its age and the holder's.
    pub async fn lock(
        &self,
        workspace: &Path,
        cancel: &CancellationToken,
        waiter: Waiter<'_>,
    ) -> Result<StartGuard, GateWait> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if !retention::cleanup_may_run(workspace, home.as_deref()) {
            // Nothing a start of the server's does can lose a session: a gate of its own.
            return Ok(unshared_gate());
        }
        let key = fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        self.lock_key(key, cancel, waiter).await
    }

    /// [`StartGates::lock`] of the gate under `key`.
    async fn lock_key(
        &self,
        key: PathBuf,
        cancel: &CancellationToken,
        waiter: Waiter<'_>,
    ) -> Result<StartGuard, GateWait> {
        let gate = session::workspace_entry(&mut crate::sync::lock(&self.gates), key);
        let began = Instant::now();
        let until = waiter.until(began);
        let result = loop {
            let opened = gate.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            let held = match self.take(&gate) {
                Ok(guard) => break Ok(guard),
                Err(held) => held,
            };
            if let Some(p) = waiter.progress {
                p.at_gate(Some((began, held.since, self.bound)));
            }
            let deadline = async {
                match until {
                    Some((at, limit)) => {
                        tokio::time::sleep_until(at).await;
                        limit
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = opened => {}
                _ = tokio::time::sleep_until(held.since + self.bound) => {}
                _ = cancel.cancelled() => break Err(GateWait::Cancelled),
                limit = deadline => break Err(GateWait::Deadline(limit)),
            }
        };
        if let Some(p) = waiter.progress {
            p.at_gate(None);
        }
        result
    }

    /// The gate, when it is free or its lease has run out; else the lease that holds it.
    fn take(&self, gate: &Arc<Gate>) -> Result<StartGuard, Lease> {
        let now = Instant::now();
        let mut lease = crate::sync::lock(&gate.lease);
        if let Some(held) = *lease {
            if now < held.since + self.bound {
                return Err(held);
            }
            tracing::warn!(
                held_ms = (now - held.since).as_millis() as u64,
                "a run held its workspace's start gate for {} without its CLI recording the prompt: the next start goes ahead",
                settings::START_GATE_MS.name
            );
        }
        let ticket = gate.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lease = Some(Lease { ticket, since: now });
        Ok(StartGuard {
            gate: Some(gate.clone()),
            ticket,
            expires: now + self.bound,
            bound: self.bound,
        })
    }
}

/// A held start gate (released on drop). Its lease runs out at [`StartGuard::expires`]: from
/// then on the next start in the workspace may take the gate.
#[derive(Debug)]
pub struct StartGuard {
    /// None: a gate nobody else takes.
    gate: Option<Arc<Gate>>,
    ticket: u64,
    expires: Instant,
    /// The lease's length.
    bound: Duration,
}

impl StartGuard {
    /// When the lease runs out.
    pub fn expires(&self) -> Instant {
        self.expires
    }

    /// Whether the gate is shared with other starts (the clean-up may run).
    pub fn shared(&self) -> bool {
        self.gate.is_some()
    }
}

impl Drop for StartGuard {
    fn drop(&mut self) {
        let Some(gate) = &self.gate else { return };
        let mut lease = crate::sync::lock(&gate.lease);
        // A lease that ran out may be someone else's by now: only our own is ended.
        if lease.is_some_and(|l| l.ticket == self.ticket) {
            *lease = None;
        }
        drop(lease);
        gate.opened.notify_waiters();
    }
}

/// A gate nobody else takes: what a new session holds (for [`hold_start_gate`]'s tidying) where
/// no CLI start of the server's can delete it.
pub(crate) fn unshared_gate() -> StartGuard {
    StartGuard {
        gate: None,
        ticket: 0,
        expires: Instant::now() + Duration::from_secs(365 * 86_400),
        bound: Duration::from_secs(365 * 86_400),
    }
}

/// How often a held start gate looks at the new session's file.
const GATE_POLL: Duration = Duration::from_millis(20);
/// How often once its lease ran out.
const GATE_POLL_PAST_LEASE: Duration = Duration::from_millis(250);

/// Holds a new session's start gate, in a task of its own, until no other start can delete that
/// session: content arrives (the CLI records the prompt before it sends it), or the run's session
/// has a file that has recorded the prompt, or has no file (a CLI that writes it later has
/// nothing to lose: 0.61 writes the header before its `init` event and before answering
/// `session/new`), or the run ends (the returned [`HeldGate`] is dropped). Its lease runs out
/// first when the CLI is stuck: then other starts go ahead, and while the session's file holds no
/// prompt the run's progress and its result say it may be deleted by them. Before the gate opens, a stub the
/// session left in another minute's file goes ([`remove_stubs_once_recorded`]). The session id
/// and the content come from the call's `progress`, fed by either backend.
pub(crate) fn hold_start_gate(
    gate: StartGuard,
    workspace: PathBuf,
    progress: Progress,
) -> HeldGate {
    let ended = CancellationToken::new();
    tokio::spawn(hold_until_safe(gate, workspace, progress, ended.clone()));
    HeldGate(ended)
}

/// A new session's start gate, held by [`hold_start_gate`]'s task; dropping it tells the task
/// the run is over, and the task tidies the session's files and opens the gate.
#[derive(Debug)]
pub(crate) struct HeldGate(CancellationToken);

impl Drop for HeldGate {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

async fn hold_until_safe(
    gate: StartGuard,
    workspace: PathBuf,
    progress: Progress,
    ended: CancellationToken,
) {
    let mut tick = tokio::time::interval(GATE_POLL);
    let expires = tokio::time::sleep_until(gate.expires());
    tokio::pin!(expires);
    // Past the lease, another start may go ahead: the run is watched on, more slowly, until its
    // session is safe, and says once that it may be lost while it is not.
    let (mut expired, mut told, mut seen) = (false, false, false);
    loop {
        tokio::select! {
            _ = progress.content() => break,
            _ = ended.cancelled() => break,
            _ = &mut expires, if !expired => {
                expired = true;
                tick = tokio::time::interval(GATE_POLL_PAST_LEASE);
                tracing::debug!("the start gate's lease ran out before the run's prompt was recorded");
            }
            _ = tick.tick() => {}
        }
        let Some(id) = progress.session_id() else {
            // No session yet (0.61 writes its file after the MCP servers answered).
            continue;
        };
        // A new session's file is a few hundred bytes: read in place. Recorded: safe. No file:
        // nothing to lose, unless it was there and holding no prompt (another start deleted it).
        let recorded = session::gemini_dir()
            .and_then(|g| session::chats_dir(&g, &workspace))
            .and_then(|chats| session::prompt_recorded(&chats, &id));
        let lost = recorded.is_none() && seen;
        if expired && !told && gate.shared() && (recorded == Some(false) || lost) {
            told = true;
            say_at_risk(&gate, &id, &progress).await;
        }
        if recorded != Some(false) {
            break;
        }
        seen = true;
    }
    if let Some(id) = progress.session_id() {
        let why = "a new session's stub in an earlier minute's file";
        tidy_stubs(&workspace, &id, remove_stubs_once_recorded, why).await;
    }
    tracing::debug!(workspace = %workspace.display(), "start gate released");
    drop(gate);
}

/// The run's lease of the gate ran out and its session's file holds no prompt yet: another
/// start in the workspace may delete it, and the call says so.
async fn say_at_risk(gate: &StartGuard, id: &str, progress: &Progress) {
    let note = format!(
        "the CLI had not recorded the prompt after {} ({} ms), so other Gemini CLI starts in this workspace went ahead; their start-up clean-up may delete this run's new session {id} (its file holds no message yet), and then the session cannot be resumed",
        settings::START_GATE_MS.name,
        gate.bound.as_millis()
    );
    tracing::warn!("{note}");
    progress.session_at_risk(note.clone());
    progress.say(note).await;
}

/// The failure of a call whose deadline `limit` passed while it waited at the start gate.
pub(crate) fn deadline_failure(
    limit: Limit,
    waiter: Waiter<'_>,
    began: std::time::Instant,
) -> Failure {
    let ms = waiter
        .limits
        .of(limit)
        .unwrap_or_else(|| began.elapsed())
        .as_millis();
    Failure::new(
        ErrorKind::Timeout,
        format!(
            "{}; the call was still waiting for another call in this workspace to start ({} bounds that wait), and no Gemini CLI was started",
            limit.passed(ms),
            settings::START_GATE_MS.name
        ),
    )
}

#[cfg(test)]
mod tests;
