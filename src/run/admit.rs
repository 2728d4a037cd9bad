//! Admission of a call that starts a CLI: the workspace's lock (shared by new runs, held alone by
//! a resumed session, a listing or a deletion), the workspace's start gate, and a slot under the
//! concurrency bound — each wait cancellable, each named in the failure when it is cancelled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, RwLock, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::error::Failure;
use crate::gemini::gate::{self, GateWait, StartGates, StartGuard, Waiter};
use crate::gemini::session;
use crate::progress::Progress;

/// A held workspace lock (released on drop).
pub(crate) enum WorkspaceGuard {
    /// Shared with the other new runs of the workspace.
    Shared(#[allow(dead_code)] tokio::sync::OwnedRwLockReadGuard<()>),
    /// Held alone.
    Exclusive(#[allow(dead_code)] tokio::sync::OwnedRwLockWriteGuard<()>),
}

/// What is waited for; names a cancelled wait.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// The workspace's lock or start gate.
    Workspace,
    /// A free slot under GEMINICLI_MCP_MAX_CONCURRENCY.
    Slot,
}

/// The server's admission state.
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    /// One lock per workspace (canonical path): runs share it, while a resumed session, a
    /// session listing or a deletion holds it alone, so no CLI starts in that project while one
    /// of those runs (a start's clean-up is what loses sessions).
    workspaces: Mutex<HashMap<PathBuf, Arc<RwLock<()>>>>,
    /// One start gate per workspace, shared with the ACP agents (see [`StartGates`]).
    starts: Arc<StartGates>,
    shutdown: CancellationToken,
}

impl Admission {
    /// `max_concurrency` slots; start gates held `start_gate` at most; `shutdown` ends every
    /// wait as a shutdown.
    pub(crate) fn new(
        max_concurrency: usize,
        start_gate: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrency.max(1))),
            workspaces: Mutex::default(),
            starts: Arc::new(StartGates::new(start_gate)),
            shutdown,
        }
    }

    /// The start gates, for the ACP agents.
    pub(crate) fn start_gates(&self) -> Arc<StartGates> {
        self.starts.clone()
    }

    /// The failure of a wait that `cancel` ended.
    fn waited_out(&self, wait: Wait) -> Failure {
        if self.shutdown.is_cancelled() {
            return match wait {
                Wait::Workspace => Failure::shutting_down(),
                Wait::Slot => {
                    Failure::cancelled("the server is shutting down; the call was still queued")
                }
            };
        }
        Failure::cancelled(match wait {
            Wait::Workspace => "the request was cancelled while waiting for its workspace",
            Wait::Slot => "the request was cancelled while queued",
        })
    }

    /// Takes the lock of `workspace`: alone (`exclusive`) or shared.
    pub(crate) async fn workspace(
        &self,
        workspace: &Path,
        exclusive: bool,
        cancel: &CancellationToken,
    ) -> Result<WorkspaceGuard, Failure> {
        let lock = session::workspace_entry(
            &mut crate::sync::lock(&self.workspaces),
            workspace.to_path_buf(),
        );
        tokio::select! {
            guard = async {
                if exclusive {
                    WorkspaceGuard::Exclusive(lock.write_owned().await)
                } else {
                    WorkspaceGuard::Shared(lock.read_owned().await)
                }
            } => Ok(guard),
            _ = cancel.cancelled() => Err(self.waited_out(Wait::Workspace)),
        }
    }

    /// Takes the start gate of `workspace`, and says how long that took; the wait shows in the
    /// `waiter`'s progress and ends with its deadlines.
    pub(crate) async fn start_gate(
        &self,
        workspace: &Path,
        cancel: &CancellationToken,
        waiter: Waiter<'_>,
    ) -> Result<(StartGuard, Duration), Failure> {
        let began = std::time::Instant::now();
        let gate = self
            .starts
            .lock(workspace, cancel, waiter)
            .await
            .map_err(|w| match w {
                GateWait::Cancelled => self.waited_out(Wait::Workspace),
                GateWait::Deadline(limit) => gate::deadline_failure(limit, waiter, began),
            })?;
        Ok((gate, began.elapsed()))
    }

    /// [`Admission::start_gate`] for a run that shows no progress and has no deadline.
    pub(crate) async fn untracked_gate(
        &self,
        workspace: &Path,
        cancel: &CancellationToken,
    ) -> Result<StartGuard, Failure> {
        let (gate, _) = self
            .start_gate(workspace, cancel, Waiter::default())
            .await?;
        Ok(gate)
    }

    /// A slot under the concurrency bound; a call that has to wait says so in `progress`.
    pub(crate) async fn slot(
        &self,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<OwnedSemaphorePermit, Failure> {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                progress.queued();
                tracing::debug!("queued");
                tokio::select! {
                    p = self.slots.clone().acquire_owned() => p.map_err(|_| Failure::shutting_down())?,
                    _ = cancel.cancelled() => return Err(self.waited_out(Wait::Slot)),
                }
            }
        };
        if cancel.is_cancelled() {
            return Err(self.waited_out(Wait::Slot));
        }
        Ok(permit)
    }
}
