//! A workspace's slot: which agent a call goes to (its key), the agent and the sessions it holds,
//! and the count of calls using it, which keeps it from being stopped while one runs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::acp::client::Connection;
use crate::approval::ApprovalMode;
use crate::sync::lock;

/// Which agent a call goes to: the workspace, the MCP servers it may load and the directories
/// it may read besides the workspace (start-up flags: ACP has no per-session field for either).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) cwd: PathBuf,
    pub(super) servers: Vec<String>,
    pub(super) dirs: Vec<PathBuf>,
}

/// One ACP session as the server tracks it.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) id: String,
    pub(super) turns: u32,
    pub(super) model: String,
    pub(super) mode: ApprovalMode,
}

/// A fresh session made ahead of time, never prompted.
pub(super) struct Spare {
    pub(super) session: Session,
    /// Whether its chat file, holding no message, was on disk when it was made: a CLI start's
    /// clean-up may have deleted it since, and a spare whose file is gone is not used.
    pub(super) file: bool,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) agent: Option<Arc<Connection>>,
    pub(super) agent_info: Value,
    pub(super) models: Value,
    /// The `acp` set's session of this workspace.
    pub(super) session: Option<Session>,
    /// Every session the running agent holds (made or loaded), by id.
    pub(super) known: HashMap<String, Session>,
    /// Fresh sessions made ahead of time for the prompt tools, never prompted.
    pub(super) spares: Vec<Spare>,
    /// Whether a task is making spares.
    pub(super) replenishing: bool,
    /// Sessions the running agent made or loaded (it is replaced past `max_sessions`).
    pub(super) opened: u32,
    /// Calls using the agent now: it is not stopped while one runs.
    pub(super) running: usize,
    pub(super) last_used: Option<Instant>,
    /// When the agent last could not start, and why: the prompt tools' calls run one-shot
    /// meanwhile ([`super::START_RETRY_AFTER`]).
    pub(super) start_failed: Option<(Instant, crate::error::Failure)>,
}

impl State {
    /// Forgets the agent and everything it held.
    pub(super) fn drop_agent(&mut self) -> Option<Arc<Connection>> {
        self.session = None;
        self.known.clear();
        self.spares.clear();
        self.opened = 0;
        self.agent.take()
    }
}

pub(super) struct Slot {
    pub(super) key: Key,
    /// Held for a whole `acp`-set call: one prompt on the workspace's session at a time.
    pub(super) busy: tokio::sync::Mutex<()>,
    /// Held while the agent starts: one start per slot.
    pub(super) starting: tokio::sync::Mutex<()>,
    /// Told when a spare session is ready, or when making spares stops.
    pub(super) spare_made: tokio::sync::Notify,
    pub(super) state: Mutex<State>,
}

/// Counts a call as using its slot's agent while alive.
pub(super) struct Using(pub(super) Arc<Slot>);

impl Using {
    pub(super) fn new(slot: &Arc<Slot>) -> Self {
        lock(&slot.state).running += 1;
        Using(slot.clone())
    }
}

impl Drop for Using {
    fn drop(&mut self) {
        let mut st = lock(&self.0.state);
        st.running = st.running.saturating_sub(1);
        st.last_used = Some(Instant::now());
    }
}

/// Forgets session `id` on the slot's agent: the `acp` set's next call makes a fresh one, and a
/// continuation loads it again.
pub(super) fn retire(slot: &Slot, id: &str) {
    let mut st = lock(&slot.state);
    st.known.remove(id);
    if st.session.as_ref().is_some_and(|s| s.id == id) {
        st.session = None;
    }
}
