//! The slot's task: the books of its agent ([`State`]) and the loop that keeps them, answering
//! calls' commands and spawning the agent's start, its settling and its spares as child tasks.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::acp::client::Connection;
use crate::approval::ApprovalMode;
use crate::error::Failure;

use super::super::agent::{one_shot_may_answer, resident_mib, Key};
use super::commands::*;

/// A start under way: its cancellation (when every call waiting for it has gone), and the
/// calls waiting for it.
struct Starting {
    ct: CancellationToken,
    waiters: Vec<AgentReply>,
}

/// What the slot's task holds.
#[derive(Default)]
pub(super) struct State {
    agent: Option<Arc<Connection>>,
    agent_info: Value,
    models: Value,
    /// The `acp` set's session of this workspace.
    session: Option<Session>,
    /// Every session the running agent holds (made or loaded), by id.
    known: HashMap<String, Session>,
    /// Fresh sessions made ahead of time for the prompt tools, never prompted.
    spares: Vec<Spare>,
    /// Whether a spare is being made (one at a time).
    making_spare: bool,
    /// The approval mode spares are made in: the last prompt tool's call's; `None` until one
    /// came, and no spare is made before.
    spare_mode: Option<ApprovalMode>,
    /// Calls waiting for the spare being made.
    spare_waiters: VecDeque<Reply<Option<Spare>>>,
    /// Sessions the running agent made or loaded (it is replaced past `max_sessions`).
    opened: u32,
    /// Calls using the agent now: it is not stopped while one runs.
    running: usize,
    last_used: Option<Instant>,
    /// The start under way.
    start: Option<Starting>,
    /// Whether the task waits for the agent to answer the cancels it was sent, and the calls
    /// waiting for the agent meanwhile.
    settling: bool,
    settle_waiters: Vec<AgentReply>,
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
        self.running > 0 || self.leased || self.making_spare || self.start.is_some()
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
pub(super) struct Keeper {
    pub(super) key: Key,
    pub(super) wear: Wear,
    pub(super) mail: mpsc::UnboundedSender<Command>,
    pub(super) vacant: Arc<AtomicBool>,
    pub(super) state: State,
    pub(super) work: Arc<dyn Work>,
    /// Cancels the I/O the task spawned: with the shutdown, and when the task ends.
    pub(super) tasks: CancellationToken,
    pub(super) shutdown: CancellationToken,
}

impl Keeper {
    pub(super) async fn run(
        mut self,
        mut inbox: mpsc::UnboundedReceiver<Command>,
        dropped: CancellationToken,
    ) {
        let shutdown = self.shutdown.clone();
        // The task holds a sender of its own (for leases and its I/O), so its mailbox never
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
        self.tasks.cancel();
        self.state.drop_agent();
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
            Command::Open(agent, opening, reply) => {
                let work = self.work.clone();
                self.child(|mailbox| work.open(mailbox, agent, *opening), reply);
            }
            Command::Describe(agent, reply) => {
                let work = self.work.clone();
                self.child(|mailbox| work.describe(mailbox, agent), reply);
            }
            Command::Left => {
                if let Some(start) = &mut st.start {
                    start.waiters.retain(|w| !w.is_closed());
                    if start.waiters.is_empty() {
                        start.ct.cancel();
                    }
                }
            }
            Command::Started(result) => self.started(result),
            Command::Settled(agent) => self.settled(agent),
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
                    tracing::debug!(cwd = %self.key.cwd.display(), "ACP agent limit reached: stopping the least recently used agent");
                    st.drop_agent();
                }
                let _ = reply.send(stop);
            }
            Command::Spare(command) => self.spares(command),
            Command::Session(command) => self.sessions(command),
        }
    }

    /// A call asks for the agent: the running one once it has answered every cancel it was
    /// sent, else a place among the calls waiting for the start under way, or for the one this
    /// begins.
    fn agent(&mut self, reply: AgentReply) {
        let st = &mut self.state;
        if let Some(start) = &mut st.start {
            start.waiters.push(reply);
            return;
        }
        match st.agent.clone() {
            Some(a) if !a.is_dead() => {
                st.settle_waiters.push(reply);
                if !st.settling {
                    st.settling = true;
                    self.settle(a);
                }
                return;
            }
            Some(_) => st.drop_agent(),
            None => {}
        }
        self.begin_start(vec![reply]);
    }

    /// Spawns I/O a call asked for (the opening of its session, [`Work::open`]; what the agent
    /// said of itself, [`Work::describe`]): its answer goes to the call, which keeps what it
    /// hands over (a session's guards) across its prompt. It stops when the call stops waiting,
    /// and with the task's I/O.
    fn child<T: Send + 'static>(
        &self,
        io: impl FnOnce(Mailbox) -> Io<Result<T, Failure>>,
        mut reply: Reply<Result<T, Failure>>,
    ) {
        let io = io(Mailbox {
            key: self.key.clone(),
            mail: self.mail.clone(),
        });
        let tasks = self.tasks.clone();
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = io => Some(answer),
                _ = reply.closed() => None,
                _ = tasks.cancelled() => Some(Err(Failure::shutting_down())),
            };
            if let Some(answer) = answer {
                let _ = reply.send(answer);
            }
        });
    }

    /// Spawns the wait for `agent` to answer every cancel it was sent: one that ignores a
    /// cancelled prompt's `session/cancel` is frozen, and is killed when the kill grace passes,
    /// taking with it whatever it was sent meanwhile. The calls waiting then go to the next one.
    fn settle(&self, agent: Arc<Connection>) {
        let (mail, tasks) = (self.mail.clone(), self.tasks.clone());
        tokio::spawn(async move {
            if agent.unsettled().await {
                tracing::debug!(
                    pid = agent.pid(),
                    "the agent has not answered a cancel: waiting before sending it work"
                );
                tokio::select! {
                    _ = agent.settled() => {}
                    _ = tasks.cancelled() => {}
                }
            }
            let _ = mail.send(Command::Settled(agent));
        });
    }

    /// The agent settled: the calls waiting for it have it, or (it died meanwhile, or is no
    /// longer the slot's) ask again.
    fn settled(&mut self, agent: Arc<Connection>) {
        let st = &mut self.state;
        st.settling = false;
        let waiters = std::mem::take(&mut st.settle_waiters);
        let current = st.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, &agent));
        if current && !agent.is_dead() {
            for w in waiters {
                let _ = w.send(Ok(agent.clone()));
            }
            return;
        }
        for w in waiters.into_iter().filter(|w| !w.is_closed()) {
            self.agent(w);
        }
    }

    /// Spawns the start of an agent for the calls `waiters`.
    fn begin_start(&mut self, waiters: Vec<AgentReply>) {
        let ct = self.tasks.child_token();
        self.state.start = Some(Starting {
            ct: ct.clone(),
            waiters,
        });
        let (work, key, mail) = (self.work.clone(), self.key.clone(), self.mail.clone());
        tokio::spawn(async move {
            let result = work.start(key, ct).await;
            // The task ended meanwhile: nobody holds the agent.
            if let Err(mpsc::error::SendError(Command::Started(Ok((agent, _))))) =
                mail.send(Command::Started(result))
            {
                agent.kill();
            }
        });
    }

    /// A start ended: its agent or its failure goes to every call waiting for it. An agent no
    /// call waits for any more is killed; a start cancelled because none did is begun again
    /// for the calls that came since. A failure a one-shot run may not share is remembered:
    /// the prompt tools run one-shot in this workspace for [`START_RETRY_AFTER`].
    fn started(&mut self, result: Result<(Arc<Connection>, Value), Failure>) {
        let st = &mut self.state;
        let Some(Starting { ct, mut waiters }) = st.start.take() else {
            if let Ok((agent, _)) = result {
                agent.kill();
            }
            return;
        };
        waiters.retain(|w| !w.is_closed());
        let shutting_down = self.shutdown.is_cancelled();
        match result {
            Ok((agent, _)) if shutting_down || waiters.is_empty() => {
                agent.kill();
                for w in waiters {
                    let _ = w.send(Err(Failure::shutting_down()));
                }
            }
            Ok((agent, info)) => {
                st.start_failed = None;
                st.drop_agent();
                st.agent_info = info;
                st.agent = Some(agent.clone());
                for w in waiters {
                    let _ = w.send(Ok(agent.clone()));
                }
            }
            Err(_) if ct.is_cancelled() && !shutting_down => {
                if !waiters.is_empty() {
                    self.begin_start(waiters);
                }
            }
            Err(f) => {
                if !ct.is_cancelled() && one_shot_may_answer(&f) {
                    tracing::warn!(
                        workspace = %self.key.cwd.display(),
                        "the Gemini ACP agent could not start ({}); the prompt tools run one-shot there for {} s",
                        f.message,
                        START_RETRY_AFTER.as_secs()
                    );
                    st.start_failed = Some((Instant::now(), f.clone()));
                }
                for w in waiters {
                    let _ = w.send(Err(f.clone()));
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
            SessionCommand::Record(session, whose) => {
                st.known.insert(session.id.clone(), session.clone());
                match whose {
                    Whose::Workspace => st.session = Some(session),
                    Whose::Warm(mode) => {
                        st.spare_mode = Some(mode);
                        self.replenish();
                    }
                }
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
            SpareCommand::Made(agent, made) => {
                st.making_spare = false;
                let current = st.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, &agent));
                if let Some(Spared {
                    spare,
                    models,
                    ready,
                }) = made.filter(|_| current)
                {
                    st.models = models;
                    st.opened += 1;
                    st.known
                        .insert(spare.session.id.clone(), spare.session.clone());
                    if ready {
                        self.shelve(spare);
                        self.replenish();
                    }
                }
                let st = &mut self.state;
                if !st.making_spare {
                    for w in st.spare_waiters.drain(..) {
                        let _ = w.send(None);
                    }
                }
            }
            SpareCommand::TakeSpare(wait, reply) => {
                if let Some(s) = st.spares.pop() {
                    if let Err(Some(s)) = reply.send(Some(s)) {
                        st.spares.push(s);
                    }
                } else if wait && st.making_spare {
                    st.spare_waiters.push_back(reply);
                } else {
                    let _ = reply.send(None);
                }
            }
        }
    }

    /// A spare made: to a call waiting for one, else kept.
    fn shelve(&mut self, mut spare: Spare) {
        let st = &mut self.state;
        while let Some(w) = st.spare_waiters.pop_front() {
            match w.send(Some(spare)) {
                Ok(()) | Err(None) => return,
                // That call gave up waiting: the next one, or the shelf.
                Err(Some(back)) => spare = back,
            }
        }
        st.spares.push(spare);
    }

    /// Spawns the making of a spare session when one is wanted: a prompt tool's call has had a
    /// session of the agent, which runs, holds fewer spares than wanted and has opened fewer
    /// than `max_sessions` sessions; none is being made and the server is not shutting down.
    /// Each is made in the last prompt tool's call's approval mode.
    fn replenish(&mut self) {
        let st = &mut self.state;
        let Some(mode) = st.spare_mode else {
            return;
        };
        let Some(agent) = st.agent.clone().filter(|a| !a.is_dead()) else {
            return;
        };
        if st.making_spare
            || self.shutdown.is_cancelled()
            || st.spares.len() >= self.wear.spares
            || st.opened >= self.wear.max_sessions
        {
            return;
        }
        st.making_spare = true;
        let (work, key, mail) = (self.work.clone(), self.key.clone(), self.mail.clone());
        let tasks = self.tasks.clone();
        tokio::spawn(async move {
            let made = tokio::select! {
                made = work.spare(key, agent.clone(), mode) => made,
                _ = tasks.cancelled() => None,
            };
            let _ = mail.send(SpareCommand::Made(agent, made).into());
        });
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
            tracing::info!(cwd = %self.key.cwd.display(), mib, "ACP agent past {}: replacing it", crate::config::settings::ACP_MAX_AGENT_MB.name);
        }
        let worn = st.opened >= self.wear.max_sessions || grown.is_some();
        let unused = idle && st.last_used.is_some_and(|t| t.elapsed() >= self.wear.idle);
        if worn || unused {
            tracing::debug!(cwd = %self.key.cwd.display(), worn, "ACP agent idle or worn: stopping it");
            st.drop_agent();
        }
    }
}
