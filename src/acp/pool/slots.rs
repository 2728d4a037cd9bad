//! A workspace's slot: which agent a call goes to (its key), and the task that keeps the agent
//! and the sessions it holds. The task owns that state alone: calls send it commands and await
//! its replies, so no lock guards an agent's sessions, spares or counts, and every rule about
//! them (one start at a time, one `acp`-set prompt at a time, a spare handed to one call, the
//! agent stopped when worn or idle and never while in use) is kept in one place.
//!
//! The task starts its agent, waits for it to settle after a cancel, makes its spare sessions,
//! and opens and loads each call's session: each as a child task it spawns and owns ([`Work`],
//! the pool's side), whose result comes back to its mailbox as a command (a start, a spare) or
//! goes to the call that asked (an opening), so the task never waits on I/O and answers every
//! call meanwhile. A call asking for the agent, or for its session, sends one command and awaits
//! one reply; a start that no call waits for any more is cancelled, its agent killed, and an
//! opening whose call stopped waiting is dropped. The reply to an opening hands the call the
//! guards it keeps across its prompt (its session's lock; for a session never prompted, the
//! start gate's). Prompting runs in the calls, which report what they did.
//!
//! By concern: this file holds the slot's handle (what a call sends and awaits); `commands` what
//! calls and the task share (the books' entries, the I/O, the commands); `keeper` the task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::acp::client::Connection;
use crate::error::Failure;

use super::agent::Key;

mod commands;
mod keeper;

use commands::{Command, Reply, SessionCommand, SpareCommand};
pub(super) use commands::{
    Io, Lease, Mailbox, Opening, Origin, Ready, RoomFacts, Session, Spare, Spared, Wear, Whose,
    Work,
};
use keeper::{Keeper, State};

/// A call's wait for the agent ([`Slot::agent`]). Dropped unanswered (its call cancelled or
/// dropped), it tells the task, which stops a start no call waits for any more.
struct Waiting {
    rx: oneshot::Receiver<Result<Arc<Connection>, Failure>>,
    mail: mpsc::UnboundedSender<Command>,
    answered: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.answered {
            // Closed first: the task, told, finds this call gone.
            self.rx.close();
            let _ = self.mail.send(Command::Left);
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

/// A handle on a workspace's slot: its key and its task's mailbox ([`Mailbox`], which it derefs
/// to). The task ends when the slot is dropped (stopping an agent it still holds): the pool drops
/// only a [`Slot::vacant`] one.
pub(super) struct Slot {
    mailbox: Mailbox,
    /// Set by the task: it holds nothing worth keeping (see [`State::vacant`]).
    vacant: Arc<AtomicBool>,
    _ends_task: DropGuard,
}

impl std::ops::Deref for Slot {
    type Target = Mailbox;

    fn deref(&self) -> &Mailbox {
        &self.mailbox
    }
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
    /// A slot for `key`, its task started: it starts the agent and makes its spares through
    /// `work`, and stops it when `wear` says so and when `shutdown` is cancelled.
    pub(super) fn start(
        key: Key,
        wear: Wear,
        shutdown: CancellationToken,
        work: Arc<dyn Work>,
    ) -> Arc<Slot> {
        let (mail, inbox) = mpsc::unbounded_channel();
        let vacant = Arc::new(AtomicBool::new(true));
        let dropped = CancellationToken::new();
        let keeper = Keeper {
            key: key.clone(),
            wear,
            mail: mail.clone(),
            vacant: vacant.clone(),
            state: State::default(),
            work,
            tasks: shutdown.child_token(),
            shutdown,
        };
        tokio::spawn(keeper.run(inbox, dropped.clone()));
        Arc::new(Slot {
            mailbox: Mailbox { key, mail },
            vacant,
            _ends_task: dropped.drop_guard(),
        })
    }

    /// Whether the slot keeps nothing (no agent, no use, no failed start to remember), as its
    /// task last saw it: dropping it loses nothing, and the next call of its key makes another.
    pub(super) fn vacant(&self) -> bool {
        self.vacant.load(Ordering::Relaxed)
    }
}

impl Mailbox {
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

    /// The running agent once it has answered every cancel it was sent, else the one the task
    /// starts, or the failure of that start. A call that stops waiting (dropped) tells the
    /// task: a start no call waits for is stopped, its agent killed.
    pub(super) async fn agent(&self) -> Result<Arc<Connection>, Failure> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Agent(tx));
        let mut waiting = Waiting {
            rx,
            mail: self.mail.clone(),
            answered: false,
        };
        let answer = (&mut waiting.rx).await;
        waiting.answered = true;
        answer.map_err(|_| gone())?
    }

    /// A call's session on `agent`, opened by a child task of the slot's task
    /// ([`Work::open`]): one command, one reply. A call that stops waiting (dropped) stops the
    /// opening; one whose `ct` is cancelled gets the failure saying what the opening waited for.
    pub(super) async fn open(
        &self,
        agent: Arc<Connection>,
        opening: Opening,
    ) -> Result<Ready, Failure> {
        self.ask(|r| Command::Open(agent, Box::new(opening), r))
            .await?
    }

    /// What `agent` said of its models and of itself, a session made first when it has said
    /// nothing of its models (by a child task of the slot's task, [`Work::describe`]).
    pub(super) async fn describe(&self, agent: Arc<Connection>) -> Result<(Value, Value), Failure> {
        self.ask(|r| Command::Describe(agent, r)).await?
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

    /// What the agent holds of `session` now (its mode and model), and whose it is.
    pub(super) fn record(&self, session: Session, whose: Whose) {
        self.send(SessionCommand::Record(session, whose));
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

#[cfg(test)]
mod tests;
