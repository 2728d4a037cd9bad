//! What a slot's calls and its task share: the books' entries (sessions, spares, when the agent
//! wears out), the I/O the task has done for it ([`Work`]), and the commands of its mailbox.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::acp::client::Connection;
use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;
use crate::error::Failure;
use crate::gemini::gate::StartGuard;
use crate::progress::Progress;

use super::super::agent::Key;
use super::super::call::Call;

/// One ACP session as the server tracks it.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) turns: u32,
    pub(crate) model: String,
    pub(crate) mode: ApprovalMode,
}

/// A fresh session made ahead of time, never prompted.
pub(crate) struct Spare {
    pub(crate) session: Session,
    /// Whether its chat file, holding no message, was on disk when it was made: a CLI start's
    /// clean-up may have deleted it since, and a spare whose file is gone is not used.
    pub(crate) file: bool,
}

/// When the slot's task stops its agent: past this many sessions opened, this much resident
/// memory, or this long unused.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wear {
    pub(crate) max_sessions: u32,
    pub(crate) max_agent_mb: u64,
    pub(crate) idle: Duration,
    /// How many spare sessions the agent keeps for the prompt tools (none until a prompt tool's
    /// call has had a session of it).
    pub(crate) spares: usize,
}

/// How long after an agent could not start its workspace's prompt-tool calls run one-shot
/// without trying again (each try may wait out `GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS`).
pub(crate) const START_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The I/O the slot's task has done for it, each run as a child task the task owns, whose
/// result comes back to its mailbox: the task itself never waits on the agent, so it answers
/// every call meanwhile. What that I/O needs across agents (the configuration, the start gates,
/// room made among the slots, `session/new` one at a time server-wide) is the pool's, reached
/// through this.
pub(crate) trait Work: Send + Sync + 'static {
    /// Starts an agent for `key`: the process, and `initialize` answered; what it said of
    /// itself. Cancelled with `ct`, it kills the agent it had started.
    fn start(
        &self,
        key: Key,
        ct: CancellationToken,
    ) -> Io<Result<(Arc<Connection>, Value), Failure>>;

    /// Makes a spare session of `agent` in approval mode `mode`; `None` when the agent fails
    /// to make one or the server shuts down.
    fn spare(&self, key: Key, agent: Arc<Connection>, mode: ApprovalMode) -> Io<Option<Spared>>;

    /// Opens a call's session on `agent` ([`Opening`]): the one it continues (held by the agent,
    /// else loaded), else the workspace's (the `acp` set's) or a spare, else a new one; locked
    /// for the call, in its mode and model, and recorded through `mailbox`.
    fn open(
        &self,
        mailbox: Mailbox,
        agent: Arc<Connection>,
        opening: Opening,
    ) -> Io<Result<Ready, Failure>>;

    /// What `agent` said of its models and of itself, read through `mailbox`: when it has said
    /// nothing of its models yet, after a session made for the `acp` set (`list_models`).
    fn describe(
        &self,
        mailbox: Mailbox,
        agent: Arc<Connection>,
    ) -> Io<Result<(Value, Value), Failure>>;
}

/// A slot's key and its task's mailbox: what calls, and the I/O the task runs for a call
/// ([`Work::open`], [`Work::describe`]), send their commands through. It does not keep the task
/// running.
#[derive(Clone)]
pub(crate) struct Mailbox {
    pub(crate) key: Key,
    pub(super) mail: mpsc::UnboundedSender<Command>,
}

/// What a call asks of its session ([`Work::open`]).
pub(crate) struct Opening {
    /// The `acp` set's prompt (the workspace's session, kept across calls), else a prompt
    /// tool's (a fresh session, a spare when there is one).
    pub(crate) workspace: bool,
    /// The session it continues (`session_id`), else `None` for a fresh one.
    pub(crate) asked: Option<String>,
    pub(crate) mode: ApprovalMode,
    pub(crate) model: Option<String>,
    pub(crate) limits: Deadlines,
    /// Where the waits (the clock minute, the start gate) are announced.
    pub(crate) progress: Progress,
    /// The call's: cancelled, the opening ends with the failure saying what it was waiting for.
    pub(crate) ct: CancellationToken,
}

impl Opening {
    /// What `call` asks of its session: the one it continues, its mode, model and deadlines;
    /// `workspace` for the `acp` set's prompt.
    pub(crate) fn of(
        call: &Call,
        workspace: bool,
        progress: &Progress,
        ct: &CancellationToken,
    ) -> Self {
        Opening {
            workspace,
            asked: call.session_id.clone(),
            mode: call.mode,
            model: call.model.clone(),
            limits: call.limits,
            progress: progress.clone(),
            ct: ct.clone(),
        }
    }
}

/// How a call got its session (`debug`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin {
    Spare,
    New,
    Held,
    Loaded,
}

impl Origin {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::Spare => "spare",
            Origin::New => "new",
            Origin::Held => "held",
            Origin::Loaded => "loaded",
        }
    }
}

/// A session ready for a call's prompt: locked for the call, in its mode and model. The call
/// keeps the guards across its prompt.
pub(crate) struct Ready {
    pub(crate) session: Session,
    pub(crate) origin: Origin,
    /// The session's lock: one prompt per session at a time.
    pub(crate) lock: tokio::sync::OwnedMutexGuard<()>,
    /// For a session never prompted: the workspace's start gate when a CLI start's clean-up
    /// could delete it, else a gate of its own; held until its prompt is recorded (see
    /// `gate::hold_start_gate`).
    pub(crate) gate: Option<StartGuard>,
}

/// The I/O of [`Work`], as a future the slot's task spawns.
pub(crate) type Io<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A session made for a spare: what the agent said of its models with it, and whether it was
/// put in the spares' approval mode (`ready`; one that was not is held by the agent, unused).
pub(crate) struct Spared {
    pub(crate) spare: Spare,
    pub(crate) models: Value,
    pub(crate) ready: bool,
}

/// What a call asking for the agent gets: the running agent, or the failure of the start made
/// for it.
pub(super) type AgentReply = Reply<Result<Arc<Connection>, Failure>>;

/// The workspace session of the `acp` set, leased to one call at a time; given back when dropped.
pub(crate) struct Lease {
    pub(super) mail: mpsc::UnboundedSender<Command>,
    pub(super) armed: bool,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.mail.send(Command::Release);
        }
    }
}

/// What makes an agent the least recently used idle one, for [`Slot::room_facts`].
pub(crate) struct RoomFacts {
    pub(crate) alive: bool,
    pub(crate) last_used: Option<Instant>,
}

pub(super) type Reply<T> = oneshot::Sender<T>;

/// Whose session a call records ([`Slot::record`]).
pub(crate) enum Whose {
    /// The `acp` set's session of the workspace.
    Workspace,
    /// A prompt tool's on the warm backend: the agent keeps spare sessions from now on, made in
    /// this call's approval mode.
    Warm(ApprovalMode),
}

pub(super) enum Command {
    Use,
    Done,
    Agent(AgentReply),
    /// A call asks for its session: the task runs the opening as a child task.
    Open(Arc<Connection>, Box<Opening>, Reply<Result<Ready, Failure>>),
    /// A call asks what the agent said of its models and itself: the task runs the session it
    /// may need as a child task.
    Describe(Arc<Connection>, Reply<Result<(Value, Value), Failure>>),
    /// A call waiting for the agent gave up.
    Left,
    /// How the start the task spawned went.
    Started(Result<(Arc<Connection>, Value), Failure>),
    /// The agent answered every cancel it was sent (or ended): the calls waiting for it may
    /// have it.
    Settled(Arc<Connection>),
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
pub(super) enum SessionCommand {
    Sessions(Option<String>, Reply<(Option<Session>, Option<Session>)>),
    Opened(Session, Option<Value>),
    Record(Session, Whose),
    Prompted(String, bool),
    Retire(String),
    Forget(String),
    Reset(Reply<Option<String>>),
    Listing(Reply<Option<Value>>),
    Described(Reply<(Value, Value)>),
}

/// The commands about spare sessions.
pub(super) enum SpareCommand {
    /// How the spare the task spawned for the agent went.
    Made(Arc<Connection>, Option<Spared>),
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
