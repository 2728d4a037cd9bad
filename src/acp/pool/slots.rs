//! A workspace's slot: which agent a call goes to (its key), and the task that keeps the agent
//! and the sessions it holds. The task owns that state alone: calls send it commands and await
//! its replies, so no lock guards an agent's sessions, spares or counts, and every rule about
//! them (one start at a time, one `acp`-set prompt at a time, a spare handed to one call, the
//! agent stopped when worn or idle and never while in use) is kept in one place. The task does
//! no I/O with the agent: starting it, making and loading sessions and prompting run in the
//! calls, which report what they did.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::acp::client::Connection;
use crate::approval::ApprovalMode;
use crate::error::Failure;

use super::agent::{resident_mib, Key};

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

/// When the slot's task stops its agent: past this many sessions opened, this much resident
/// memory, or this long unused.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wear {
    pub(super) max_sessions: u32,
    pub(super) max_agent_mb: u64,
    pub(super) idle: Duration,
}

/// How long after an agent could not start its workspace's prompt-tool calls run one-shot
/// without trying again (each try may wait out `GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS`).
pub(super) const START_RETRY_AFTER: Duration = Duration::from_secs(300);

/// What a call asking for the agent gets.
pub(super) enum Start {
    /// The running agent.
    Running(Arc<Connection>),
    /// No agent runs: this call starts one and reports how it went through the ticket.
    Yours(StartTicket),
    /// The start another call made for this one failed so.
    Failed(Box<Failure>),
}

/// The duty of starting the slot's agent. Reported with [`StartTicket::done`]; dropped unreported
/// (its call cancelled or dropped), the duty passes to the next call waiting for the agent.
pub(super) struct StartTicket {
    mail: mpsc::UnboundedSender<Command>,
    armed: bool,
}

impl StartTicket {
    /// Reports the start: the agent and what it said of itself, or the failure (`remember`:
    /// the prompt tools run one-shot in this workspace for [`START_RETRY_AFTER`]).
    pub(super) fn done(
        mut self,
        result: Result<(Arc<Connection>, Value), Failure>,
        remember: bool,
    ) {
        self.armed = false;
        let _ = self
            .mail
            .send(Command::Started(Some(Started { result, remember })));
    }
}

impl Drop for StartTicket {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.mail.send(Command::Started(None));
        }
    }
}

/// The workspace session of the `acp` set, leased to one call at a time; given back when dropped.
pub(super) struct Lease {
    mail: mpsc::UnboundedSender<Command>,
    armed: bool,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.mail.send(Command::Release);
        }
    }
}

/// Counts a call as using its slot's agent while alive: the agent is not stopped meanwhile.
pub(super) struct Using(Arc<Slot>);

impl Using {
    pub(super) fn new(slot: &Arc<Slot>) -> Self {
        slot.send(Command::Use);
        Using(slot.clone())
    }
}

impl Drop for Using {
    fn drop(&mut self) {
        self.0.send(Command::Done);
    }
}

/// What makes an agent the least recently used idle one, for [`Slot::room_facts`].
pub(super) struct RoomFacts {
    pub(super) alive: bool,
    pub(super) last_used: Option<Instant>,
}

type Reply<T> = oneshot::Sender<T>;

/// How a start went: the agent and what it said of itself, or the failure, and whether the
/// prompt tools run one-shot in the workspace for a while (`remember`).
struct Started {
    result: Result<(Arc<Connection>, Value), Failure>,
    remember: bool,
}

enum Command {
    Use,
    Done,
    Agent(Reply<Start>),
    /// `None`: the call starting the agent gave up (cancelled).
    Started(Option<Started>),
    FailedLately(Reply<Option<Failure>>),
    Lease(Reply<Lease>),
    Release,
    Died(Arc<Connection>),
    RoomFacts(Reply<RoomFacts>),
    StopForRoom(Reply<bool>),
    Session(SessionCommand),
    Spare(SpareCommand),
}

/// The commands about the sessions the agent holds.
enum SessionCommand {
    Sessions(Option<String>, Reply<(Option<Session>, Option<Session>)>),
    Opened(Session, Option<Value>),
    Record(Session, bool),
    Prompted(String, bool),
    Retire(String),
    Forget(String),
    Reset(Reply<Option<String>>),
    Listing(Reply<Option<Value>>),
    Described(Reply<(Value, Value)>),
}

/// The commands about spare sessions.
enum SpareCommand {
    BeginSpares(usize, Reply<bool>),
    WantsSpare(Arc<Connection>, usize, Reply<bool>),
    SpareMade(Arc<Connection>, Spare),
    EndSpares,
    TakeSpare(bool, Reply<Option<Spare>>),
}

impl From<SessionCommand> for Command {
    fn from(c: SessionCommand) -> Self {
        Command::Session(c)
    }
}

impl From<SpareCommand> for Command {
    fn from(c: SpareCommand) -> Self {
        Command::Spare(c)
    }
}

/// A handle on a workspace's slot: its key and its task's mailbox. The task ends when the slot
/// is dropped (stopping an agent it still holds): the pool drops only a [`Slot::vacant`] one.
pub(super) struct Slot {
    pub(super) key: Key,
    mail: mpsc::UnboundedSender<Command>,
    /// Set by the task: it holds nothing worth keeping (see [`State::vacant`]).
    vacant: Arc<AtomicBool>,
    _ends_task: DropGuard,
}

/// Drops the slots that are vacant and held by no call: only the registry holds them, so no call
/// can reach one between the look and the drop.
pub(super) fn let_go_of_vacant(slots: &mut HashMap<Key, Arc<Slot>>) {
    slots.retain(|_, slot| Arc::strong_count(slot) > 1 || !slot.vacant());
}

/// The failure of a call whose slot's task is gone: only the runtime shutting down ends it.
fn gone() -> Failure {
    Failure::shutting_down()
}

impl Slot {
    /// A slot for `key`, its task started: it stops the agent when `wear` says so and when
    /// `shutdown` is cancelled.
    pub(super) fn start(key: Key, wear: Wear, shutdown: CancellationToken) -> Arc<Slot> {
        let (mail, inbox) = mpsc::unbounded_channel();
        let vacant = Arc::new(AtomicBool::new(true));
        let dropped = CancellationToken::new();
        let keeper = Keeper {
            cwd: key.cwd.clone(),
            wear,
            mail: mail.clone(),
            vacant: vacant.clone(),
            state: State::default(),
        };
        tokio::spawn(keeper.run(inbox, shutdown, dropped.clone()));
        Arc::new(Slot {
            key,
            mail,
            vacant,
            _ends_task: dropped.drop_guard(),
        })
    }

    /// Whether the slot keeps nothing (no agent, no use, no failed start to remember), as its
    /// task last saw it: dropping it loses nothing, and the next call of its key makes another.
    pub(super) fn vacant(&self) -> bool {
        self.vacant.load(Ordering::Relaxed)
    }

    fn send(&self, command: impl Into<Command>) {
        let _ = self.mail.send(command.into());
    }

    async fn ask<T, C: Into<Command>>(
        &self,
        command: impl FnOnce(Reply<T>) -> C,
    ) -> Result<T, Failure> {
        let (tx, rx) = oneshot::channel();
        self.send(command(tx));
        rx.await.map_err(|_| gone())
    }

    /// The running agent, or the duty to start it, or the failure of the start made meanwhile;
    /// waiting while another call starts it.
    pub(super) async fn agent(&self) -> Result<Start, Failure> {
        self.ask(Command::Agent).await
    }

    /// Why the agent could not start, when that was under [`START_RETRY_AFTER`] ago.
    pub(super) async fn failed_lately(&self) -> Option<Failure> {
        self.ask(Command::FailedLately).await.ok().flatten()
    }

    /// The workspace session of the `acp` set, for one call at a time: waits for the call before.
    pub(super) async fn lease(&self) -> Result<Lease, Failure> {
        self.ask(Command::Lease).await
    }

    /// The `acp` set's session of the workspace, and session `asked` when the agent holds it.
    pub(super) async fn sessions(
        &self,
        asked: Option<&str>,
    ) -> Result<(Option<Session>, Option<Session>), Failure> {
        self.ask(|r| SessionCommand::Sessions(asked.map(str::to_string), r))
            .await
    }

    /// A session the agent made or loaded; `models` replaces what it said of its models.
    pub(super) fn opened(&self, session: Session, models: Option<Value>) {
        self.send(SessionCommand::Opened(session, models));
    }

    /// What the agent holds of `session` now (its mode and model); `workspace`: it is also the
    /// `acp` set's session of the workspace.
    pub(super) fn record(&self, session: Session, workspace: bool) {
        self.send(SessionCommand::Record(session, workspace));
    }

    /// One more turn of session `id` (`workspace`: counted on the `acp` set's session).
    pub(super) fn prompted(&self, id: &str, workspace: bool) {
        self.send(SessionCommand::Prompted(id.to_string(), workspace));
    }

    /// `agent` died: the slot forgets it, and the next call starts another.
    pub(super) fn died(&self, agent: &Arc<Connection>) {
        self.send(Command::Died(agent.clone()));
    }

    /// Forgets session `id`: the `acp` set's next call makes a fresh one, and a continuation
    /// loads it again.
    pub(super) fn retire(&self, id: &str) {
        self.send(SessionCommand::Retire(id.to_string()));
    }

    /// Forgets session `id` and any spare of that id (it was deleted).
    pub(super) fn forget(&self, id: &str) {
        self.send(SessionCommand::Forget(id.to_string()));
    }

    /// Drops the `acp` set's session of the workspace; its id, when there was one.
    pub(super) async fn reset(&self) -> Option<String> {
        self.ask(SessionCommand::Reset).await.ok().flatten()
    }

    /// The `acp` set's session of the workspace as `list_sessions` shows it.
    pub(super) async fn listing(&self) -> Option<Value> {
        self.ask(SessionCommand::Listing).await.ok().flatten()
    }

    /// What the agent said of its models and of itself.
    pub(super) async fn described(&self) -> Result<(Value, Value), Failure> {
        self.ask(SessionCommand::Described).await
    }

    /// Whether this call should make spares until the agent holds `want`: none is being made.
    pub(super) async fn begin_spares(&self, want: usize) -> bool {
        self.ask(|r| SpareCommand::BeginSpares(want, r))
            .await
            .unwrap_or(false)
    }

    /// Whether `agent`, still the slot's, should get one more spare of the `want`.
    pub(super) async fn wants_spare(&self, agent: &Arc<Connection>, want: usize) -> bool {
        self.ask(|r| SpareCommand::WantsSpare(agent.clone(), want, r))
            .await
            .unwrap_or(false)
    }

    /// A spare of `agent` made: to a call waiting for one, else kept.
    pub(super) fn spare_made(&self, agent: &Arc<Connection>, spare: Spare) {
        self.send(SpareCommand::SpareMade(agent.clone(), spare));
    }

    /// No more spares are being made.
    pub(super) fn end_spares(&self) {
        self.send(SpareCommand::EndSpares);
    }

    /// A spare session: one ready, else (`wait`) the one being made, else none.
    pub(super) async fn take_spare(&self, wait: bool) -> Result<Option<Spare>, Failure> {
        self.ask(|r| SpareCommand::TakeSpare(wait, r)).await
    }

    /// Whether the agent runs, and when it was last used.
    pub(super) async fn room_facts(&self) -> Option<RoomFacts> {
        self.ask(Command::RoomFacts).await.ok()
    }

    /// Stops the agent if nothing uses it; whether it did.
    pub(super) async fn stop_for_room(&self) -> bool {
        self.ask(Command::StopForRoom).await.unwrap_or(false)
    }
}

/// What the slot's task holds.
#[derive(Default)]
struct State {
    agent: Option<Arc<Connection>>,
    agent_info: Value,
    models: Value,
    /// The `acp` set's session of this workspace.
    session: Option<Session>,
    /// Every session the running agent holds (made or loaded), by id.
    known: HashMap<String, Session>,
    /// Fresh sessions made ahead of time for the prompt tools, never prompted.
    spares: Vec<Spare>,
    /// Whether a call is making spares.
    replenishing: bool,
    /// Calls waiting for the spare being made.
    spare_waiters: VecDeque<Reply<Option<Spare>>>,
    /// Sessions the running agent made or loaded (it is replaced past `max_sessions`).
    opened: u32,
    /// Calls using the agent now: it is not stopped while one runs.
    running: usize,
    last_used: Option<Instant>,
    /// Whether a call is starting the agent, and the calls waiting for it.
    starting: bool,
    start_waiters: VecDeque<Reply<Start>>,
    /// When the agent last could not start, and why: the prompt tools' calls run one-shot
    /// meanwhile ([`START_RETRY_AFTER`]).
    start_failed: Option<(Instant, Failure)>,
    /// Whether a call holds the `acp` set's lease, and the calls waiting for it.
    leased: bool,
    lease_waiters: VecDeque<Reply<Lease>>,
}

impl State {
    /// Forgets the agent and everything it held, and stops it.
    fn drop_agent(&mut self) {
        self.session = None;
        self.known.clear();
        self.spares.clear();
        self.opened = 0;
        if let Some(agent) = self.agent.take() {
            agent.kill();
        }
    }

    fn in_use(&self) -> bool {
        self.running > 0 || self.leased || self.replenishing || self.starting
    }

    /// Nothing worth a task: no agent, nothing using the slot, no failed start remembered.
    fn vacant(&self) -> bool {
        self.agent.is_none() && !self.in_use() && self.start_failed.is_none()
    }

    /// The failed start remembered, while it is under [`START_RETRY_AFTER`] old.
    fn failed_lately(&mut self) -> Option<Failure> {
        if self
            .start_failed
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() >= START_RETRY_AFTER)
        {
            self.start_failed = None;
        }
        self.start_failed.as_ref().map(|(_, f)| f.clone())
    }

    fn retire(&mut self, id: &str) {
        self.known.remove(id);
        if self.session.as_ref().is_some_and(|s| s.id == id) {
            self.session = None;
        }
    }
}

/// The slot's task.
struct Keeper {
    cwd: PathBuf,
    wear: Wear,
    mail: mpsc::UnboundedSender<Command>,
    vacant: Arc<AtomicBool>,
    state: State,
}

impl Keeper {
    async fn run(
        mut self,
        mut inbox: mpsc::UnboundedReceiver<Command>,
        shutdown: CancellationToken,
        dropped: CancellationToken,
    ) {
        // The task holds a sender of its own (for tickets and leases), so its mailbox never
        // closes: it ends when its slot is dropped, or with the runtime after the shutdown
        // stopped its agent. It ticks only while it has an agent or a failed start to forget.
        let period = (self.wear.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stopped = false;
        loop {
            let ticking = self.state.agent.is_some() || self.state.start_failed.is_some();
            tokio::select! {
                _ = shutdown.cancelled(), if !stopped => {
                    stopped = true;
                    self.state.drop_agent();
                }
                _ = dropped.cancelled() => break,
                _ = tick.tick(), if ticking => {
                    self.state.failed_lately();
                    self.stop_if_worn(true);
                }
                command = inbox.recv() => match command {
                    Some(command) => self.handle(command),
                    None => break,
                },
            }
            self.vacant.store(self.state.vacant(), Ordering::Relaxed);
        }
        self.state.drop_agent();
    }

    fn ticket(&self) -> StartTicket {
        StartTicket {
            mail: self.mail.clone(),
            armed: true,
        }
    }

    fn lease(&self) -> Lease {
        Lease {
            mail: self.mail.clone(),
            armed: true,
        }
    }

    fn handle(&mut self, command: Command) {
        let st = &mut self.state;
        match command {
            Command::Use => st.running += 1,
            Command::Done => {
                st.running = st.running.saturating_sub(1);
                st.last_used = Some(Instant::now());
                self.stop_if_worn(false);
            }
            Command::Agent(reply) => self.agent(reply),
            Command::Started(Some(started)) => self.started(started),
            Command::Started(None) => {
                st.starting = false;
                self.hand_start_on();
            }
            Command::FailedLately(reply) => {
                let _ = reply.send(st.failed_lately());
            }
            Command::Lease(reply) => {
                if st.leased {
                    st.lease_waiters.push_back(reply);
                } else {
                    st.leased = true;
                    if let Err(mut lease) = reply.send(self.lease()) {
                        lease.armed = false;
                        self.hand_lease_on();
                    }
                }
            }
            Command::Release => self.hand_lease_on(),
            Command::Died(agent) => {
                if st.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, &agent)) {
                    st.drop_agent();
                }
            }
            Command::RoomFacts(reply) => {
                let _ = reply.send(RoomFacts {
                    alive: st.agent.as_ref().is_some_and(|a| !a.is_dead()),
                    last_used: st.last_used,
                });
            }
            Command::StopForRoom(reply) => {
                let stop = st.agent.as_ref().is_some_and(|a| !a.is_dead()) && !st.in_use();
                if stop {
                    tracing::debug!(cwd = %self.cwd.display(), "ACP agent limit reached: stopping the least recently used agent");
                    st.drop_agent();
                }
                let _ = reply.send(stop);
            }
            Command::Spare(command) => self.spares(command),
            Command::Session(command) => self.sessions(command),
        }
    }

    /// A call asks for the agent: the running one, or the duty to start it, or a place in the
    /// queue of the start under way.
    fn agent(&mut self, reply: Reply<Start>) {
        let st = &mut self.state;
        if st.starting {
            st.start_waiters.push_back(reply);
            return;
        }
        match &st.agent {
            Some(a) if !a.is_dead() => {
                let _ = reply.send(Start::Running(a.clone()));
                return;
            }
            Some(_) => st.drop_agent(),
            None => {}
        }
        st.starting = true;
        if let Err(Start::Yours(mut t)) = reply.send(Start::Yours(self.ticket())) {
            t.armed = false;
            self.hand_start_on();
        }
    }

    /// A start ended: its agent or its failure goes to every call waiting for it.
    fn started(&mut self, Started { result, remember }: Started) {
        let st = &mut self.state;
        st.starting = false;
        match result {
            Ok((agent, info)) => {
                st.start_failed = None;
                st.drop_agent();
                st.agent_info = info;
                st.agent = Some(agent.clone());
                for w in st.start_waiters.drain(..) {
                    let _ = w.send(Start::Running(agent.clone()));
                }
            }
            Err(f) => {
                if remember {
                    st.start_failed = Some((Instant::now(), f.clone()));
                }
                for w in st.start_waiters.drain(..) {
                    let _ = w.send(Start::Failed(Box::new(f.clone())));
                }
            }
        }
    }

    /// The commands about the sessions the agent holds.
    fn sessions(&mut self, command: SessionCommand) {
        let st = &mut self.state;
        match command {
            SessionCommand::Sessions(asked, reply) => {
                let held = asked.and_then(|id| st.known.get(&id).cloned());
                let _ = reply.send((st.session.clone(), held));
            }
            SessionCommand::Opened(session, models) => {
                if let Some(models) = models {
                    st.models = models;
                }
                st.opened += 1;
                st.known.insert(session.id.clone(), session);
            }
            SessionCommand::Record(session, workspace) => {
                if workspace {
                    st.session = Some(session.clone());
                }
                st.known.insert(session.id.clone(), session);
            }
            SessionCommand::Prompted(id, workspace) => {
                let session = if workspace {
                    st.session.as_mut().filter(|s| s.id == id)
                } else {
                    st.known.get_mut(&id)
                };
                if let Some(s) = session {
                    s.turns += 1;
                }
            }
            SessionCommand::Retire(id) => st.retire(&id),
            SessionCommand::Forget(id) => {
                st.retire(&id);
                st.spares.retain(|s| s.session.id != id);
            }
            SessionCommand::Reset(reply) => {
                let _ = reply.send(st.session.take().map(|s| s.id));
            }
            SessionCommand::Listing(reply) => {
                let listing = st.session.as_ref().map(|s| {
                    json!({
                        "session_id": s.id,
                        "turn_count": s.turns,
                        "model": s.model,
                        "approval_mode": s.mode.as_str(),
                        "agent_pid": st.agent.as_ref().map(|a| a.pid()),
                    })
                });
                let _ = reply.send(listing);
            }
            SessionCommand::Described(reply) => {
                let _ = reply.send((st.models.clone(), st.agent_info.clone()));
            }
        }
    }

    /// The commands about spare sessions.
    fn spares(&mut self, command: SpareCommand) {
        let st = &mut self.state;
        match command {
            SpareCommand::BeginSpares(want, reply) => {
                let begin = want > 0 && !st.replenishing && st.spares.len() < want;
                st.replenishing |= begin;
                let _ = reply.send(begin);
            }
            SpareCommand::WantsSpare(agent, want, reply) => {
                let wants = !agent.is_dead()
                    && st.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, &agent))
                    && st.spares.len() < want
                    && st.opened < self.wear.max_sessions;
                let _ = reply.send(wants);
            }
            SpareCommand::SpareMade(agent, spare) => {
                if !st.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, &agent)) {
                    return;
                }
                st.known
                    .insert(spare.session.id.clone(), spare.session.clone());
                let mut spare = spare;
                while let Some(w) = st.spare_waiters.pop_front() {
                    match w.send(Some(spare)) {
                        Ok(()) | Err(None) => return,
                        // That call gave up waiting: the next one, or the shelf.
                        Err(Some(back)) => spare = back,
                    }
                }
                st.spares.push(spare);
            }
            SpareCommand::EndSpares => {
                st.replenishing = false;
                for w in st.spare_waiters.drain(..) {
                    let _ = w.send(None);
                }
            }
            SpareCommand::TakeSpare(wait, reply) => {
                if let Some(s) = st.spares.pop() {
                    if let Err(Some(s)) = reply.send(Some(s)) {
                        st.spares.push(s);
                    }
                } else if wait && st.replenishing {
                    st.spare_waiters.push_back(reply);
                } else {
                    let _ = reply.send(None);
                }
            }
        }
    }

    /// Gives the duty of starting the agent to the next call still waiting for it.
    fn hand_start_on(&mut self) {
        while let Some(w) = self.state.start_waiters.pop_front() {
            self.state.starting = true;
            match w.send(Start::Yours(self.ticket())) {
                Ok(()) => return,
                Err(Start::Yours(mut t)) => t.armed = false,
                Err(_) => {}
            }
        }
        self.state.starting = false;
    }

    /// Gives the lease to the next call still waiting for it.
    fn hand_lease_on(&mut self) {
        while let Some(w) = self.state.lease_waiters.pop_front() {
            match w.send(self.lease()) {
                Ok(()) => return,
                Err(mut lease) => lease.armed = false,
            }
        }
        self.state.leased = false;
        self.stop_if_worn(false);
    }

    /// Stops the agent when nothing uses it (no call, no start, no spare being made) and it has
    /// opened `max_sessions` sessions, grown past `max_agent_mb` of resident memory or, given
    /// `idle`, been unused that long: the next call starts a fresh one.
    fn stop_if_worn(&mut self, idle: bool) {
        let st = &mut self.state;
        let Some(agent) = st.agent.as_ref() else {
            return;
        };
        if st.in_use() {
            return;
        }
        let grown = resident_mib(agent.pid()).filter(|mib| *mib > self.wear.max_agent_mb);
        if let Some(mib) = grown {
            tracing::info!(cwd = %self.cwd.display(), mib, "ACP agent past {}: replacing it", crate::config::settings::ACP_MAX_AGENT_MB.name);
        }
        let worn = st.opened >= self.wear.max_sessions || grown.is_some();
        let unused = idle && st.last_used.is_some_and(|t| t.elapsed() >= self.wear.idle);
        if worn || unused {
            tracing::debug!(cwd = %self.cwd.display(), worn, "ACP agent idle or worn: stopping it");
            st.drop_agent();
        }
    }
}

#[cfg(test)]
mod tests;
