//! One agent process and the JSON-RPC connection to it: a writer, a reader routing responses to
//! their waiters and `session/update` notifications to the session's current prompt, the answers
//! to the agent's own requests (permissions from the session's approval mode, no file system),
//! and a supervisor that notices the exit and kills the whole tree.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::acp::wire::{
    error_of, id_number, session_of, update_of, Envelope, Method, PermissionRequest,
};
use crate::approval::ApprovalMode;
use crate::ask::{Question, Reply, Why};
use crate::gemini::process::{Live, RunSpec, SpawnError, Termination};
use crate::sync::lock;

mod permission;
pub use permission::permission;
use permission::{answer, chosen, question};

/// Bytes of the agent's stderr kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;
/// Longest wait, once the agent has ended, for the rest of its stderr.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// Why a request to the agent failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AcpError {
    /// The agent answered with a JSON-RPC error.
    #[error("the agent answered {code}: {message}")]
    Rpc {
        /// The JSON-RPC code (the CLI puts an API error's HTTP status here).
        code: i64,
        /// The error's message.
        message: String,
    },
    /// The agent process ended (or was killed) before answering.
    #[error("the Gemini ACP agent exited ({0})")]
    Exited(String),
    /// No answer within the request timeout; the agent is killed.
    #[error("the Gemini ACP agent did not answer {0} in time; it was killed")]
    Timeout(String),
    /// An answer the schema's type of it does not take (the method named).
    #[error("the Gemini ACP agent answered {0} with a result ACP does not define")]
    Unreadable(String),
}

/// What reaches the prompt waiting on a session.
#[derive(Debug)]
pub enum Inbound {
    /// A `session/update`'s `update` object.
    Update(Value),
    /// A permission request and the option the server chose (`None`: refused, `cancelled`).
    Permission {
        /// The request's `toolCall`.
        tool_call: Value,
        /// The options offered.
        options: Value,
        /// Whether it was allowed.
        allowed: bool,
        /// The `outcome` answered (`selected` with its `optionId`, or `cancelled`).
        outcome: Value,
        /// Who decided, when the session asks (`user`, or why nobody allowed it).
        decided_by: Option<&'static str>,
    },
    /// A permission request of a session that asks ([`Connection::ask`]): the prompt's asker puts
    /// it to the client's user and sends the reply; the agent is answered when it arrives (a
    /// dropped sender rejects).
    Question {
        /// What the agent wants to do.
        question: Question,
        /// Where the reply goes.
        reply: oneshot::Sender<Reply>,
    },
}

/// One message routed to a session's prompt: what it is, the bytes of its line, and its share of
/// the connection's budget for messages read and not yet taken ([`ROUTED_BUDGET`]), given back
/// when it is dropped.
#[derive(Debug)]
pub struct Routed {
    /// The message.
    pub inbound: Inbound,
    /// The length of the line it came in (0: made by the server, a question's answer).
    pub bytes: usize,
    _budget: Option<OwnedSemaphorePermit>,
}

impl Routed {
    /// A message the server itself routes (no line, no budget).
    pub(crate) fn made(inbound: Inbound) -> Routed {
        Routed {
            inbound,
            bytes: 0,
            _budget: None,
        }
    }
}

/// What the routed messages read and not yet taken by their prompts may hold, in bytes of their
/// lines: past it the reader stops reading (the agent blocks on its stdout) until a prompt takes
/// one. Every message counts as at least [`ROUTED_MIN_CHARGE`] (a parsed message holds more than
/// its line), and one larger than the whole budget takes all of it.
const ROUTED_BUDGET: usize = 4 << 20;
/// The least a routed message counts for in [`ROUTED_BUDGET`].
const ROUTED_MIN_CHARGE: usize = 1024;

type Waiters = Mutex<HashMap<u64, oneshot::Sender<Result<Value, AcpError>>>>;

struct Shared {
    waiters: Waiters,
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Routed>>>,
    modes: Mutex<HashMap<String, ApprovalMode>>,
    /// Sessions whose permission requests are questions, with the ceiling bounding the answers.
    asking: Mutex<HashMap<String, ApprovalMode>>,
    stderr: Mutex<VecDeque<u8>>,
    /// Fired when stderr reached its end: what the agent printed as it died is in the tail.
    stderr_done: CancellationToken,
    exit: Mutex<Option<String>>,
    /// The prompts sent `session/cancel` and not answered yet ([`Connection::cancel_prompt`]).
    cancelling: Mutex<HashSet<u64>>,
    /// Told when one of them is answered.
    settled: Notify,
    /// The routed messages read and not yet taken ([`ROUTED_BUDGET`]).
    budget: Arc<Semaphore>,
    /// Set when a line passed the output cap and the agent was stopped for it.
    overflow: AtomicBool,
    /// Bytes the agent wrote on stderr so far, and a wake-up for each read of them.
    stderr_bytes: AtomicU64,
    stderr_grew: Notify,
    /// Set by [`Connection::kill_now`]: the tree is killed without the polite signal's grace.
    at_once: AtomicBool,
}

/// Writes one line per message; a failed write means the agent is gone, which the supervisor
/// reports.
async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else { break };
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            _ = stop.cancelled() => break,
        }
    }
}

/// Drains stderr so the agent never blocks on it, keeping the tail that explains a crash.
async fn drain_stderr(mut stderr: tokio::process::ChildStderr, s: Arc<Shared>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        s.stderr_bytes.fetch_add(n as u64, Ordering::Relaxed);
        s.stderr_grew.notify_waiters();
        let mut tail = lock(&s.stderr);
        tail.extend(&buf[..n]);
        let over = tail.len().saturating_sub(STDERR_TAIL);
        tail.drain(..over);
    }
    s.stderr_done.cancel();
}

/// The largest line buffer the reader keeps between messages (1 MiB).
const KEPT_LINE_CAPACITY: usize = 1 << 20;

/// Reads stdout: every line is one JSON-RPC message; anything else is ignored (the agent's stdout
/// carries only JSON-RPC, but a stray line must not end the connection). A line past `cap` stops
/// the agent (`stop`) before it is read whole, and is remembered as the reason
/// ([`Connection::overflowed`]); stdout's end fires `eof`. A message for a prompt waits for its
/// share of [`ROUTED_BUDGET`] before it is parsed, so an agent that writes faster than its
/// prompts take in is held back by its own pipe, never buffered without bound here.
async fn read_messages(
    stdout: tokio::process::ChildStdout,
    s: Arc<Shared>,
    reply: mpsc::UnboundedSender<Vec<u8>>,
    (eof, stop): (CancellationToken, CancellationToken),
    cap: u64,
    pid: u32,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(cap + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() as u64 > cap {
            tracing::warn!(
                pid,
                cap,
                "an ACP message went past the output cap: stopping the agent"
            );
            s.overflow.store(true, Ordering::SeqCst);
            // Killed at once: its prompts fail only once it is gone, whatever it does with SIGTERM.
            s.at_once.store(true, Ordering::SeqCst);
            stop.cancel();
            break;
        }
        let charge = line.len().clamp(ROUTED_MIN_CHARGE, ROUTED_BUDGET) as u32;
        let Ok(budget) = s.budget.clone().acquire_many_owned(charge).await else {
            break;
        };
        let bytes = line.len();
        let message = Message::parse(&line);
        // The buffer of a huge line (an answer of many MiB in one chunk) is freed before the
        // message is folded into the answer, and not kept for the agent's life.
        if line.capacity() > KEPT_LINE_CAPACITY {
            line = Vec::new();
        }
        dispatch(&s, &reply, message, (bytes, budget));
    }
    // stdout closed: the agent is finished as a peer, whatever its process does.
    eof.cancel();
}

/// How long an agent whose stdout closed, unasked, has to exit by itself: one ending on its own
/// (a crash, a refused start) closes stdout as it exits, and its own status says how it ended.
const OWN_EXIT_WAIT: Duration = Duration::from_millis(500);

/// Owns the tree: on its exit or `kill` (stdout's end, or `stop`: the server's asking), ends all
/// of it, says how, and fails every waiter.
async fn supervise(
    mut live: Live,
    s: Arc<Shared>,
    (kill, stop): (CancellationToken, CancellationToken),
    dead: CancellationToken,
    grace: Duration,
    pid: u32,
) {
    let exited = tokio::select! {
        status = live.wait() => Some(status),
        _ = kill.cancelled() => None,
    };
    let exited = match exited {
        None if !stop.is_cancelled() => tokio::select! {
            status = live.wait() => Some(status),
            _ = tokio::time::sleep(OWN_EXIT_WAIT) => None,
            _ = stop.cancelled() => None,
        },
        exited => exited,
    };
    let status = match exited {
        Some(status) => {
            live.shutdown(Duration::ZERO).await;
            status
        }
        None if s.at_once.load(Ordering::SeqCst) => live.shutdown(Duration::ZERO).await,
        None => live.shutdown(grace).await,
    };
    let how = match status {
        Some(Termination::Exited(c)) => format!("exit {c}"),
        Some(Termination::Signaled(sig)) => format!("killed by signal {sig}"),
        None => "not reaped".into(),
    };
    let how = match exited.is_none() {
        true => format!("stopped by the server, {how}"),
        false => how,
    };
    tracing::debug!(pid, how = %how, "ACP agent ended");
    // The waiters' failures read the stderr tail (why a CLI refused to start): let the last of it
    // arrive. Bounded, since a descendant that left the tree may hold the pipe open.
    let _ = tokio::time::timeout(STDERR_SETTLE, s.stderr_done.cancelled()).await;
    *lock(&s.exit) = Some(how.clone());
    dead.cancel();
    for (_, w) in lock(&s.waiters).drain() {
        let _ = w.send(Err(AcpError::Exited(how.clone())));
    }
    lock(&s.routes).clear();
}

/// A running agent. Dropping the last handle does not stop it: call [`Connection::kill`].
pub struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    /// Cancelled when the agent is ending: the server asked, or its stdout closed.
    kill: CancellationToken,
    /// Cancelled when the server asked it to end.
    stop: CancellationToken,
    dead: CancellationToken,
    pid: u32,
}

impl Connection {
    /// Starts the agent. `grace` is the time between the polite signal and the tree kill.
    pub fn start(spec: &RunSpec, grace: Duration) -> Result<Arc<Connection>, SpawnError> {
        let mut live = Live::spawn(spec)?;
        let pid = live.pid();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (live.stdin.take(), live.stdout.take(), live.stderr.take())
        else {
            return Err(SpawnError::Other(
                "the agent's pipes were not set up".into(),
            ));
        };
        let shared = Arc::new(Shared {
            waiters: Mutex::default(),
            routes: Mutex::default(),
            modes: Mutex::default(),
            asking: Mutex::default(),
            stderr: Mutex::default(),
            stderr_done: CancellationToken::new(),
            exit: Mutex::default(),
            cancelling: Mutex::default(),
            settled: Notify::new(),
            budget: Arc::new(Semaphore::new(ROUTED_BUDGET)),
            overflow: AtomicBool::new(false),
            stderr_bytes: AtomicU64::new(0),
            stderr_grew: Notify::new(),
            at_once: AtomicBool::new(false),
        });
        let kill = CancellationToken::new();
        let stop = CancellationToken::new();
        let dead = CancellationToken::new();
        let (out, rx) = mpsc::unbounded_channel::<Vec<u8>>();

        tokio::spawn(write_lines(stdin, rx, dead.clone()));
        tokio::spawn(drain_stderr(stderr, shared.clone()));
        // One message may not exceed the output cap: past it the agent is stopped, so a runaway
        // line cannot take the server's memory.
        let cap = spec.max_output_bytes.max(1) as u64;
        tokio::spawn(read_messages(
            stdout,
            shared.clone(),
            out.clone(),
            (kill.clone(), stop.clone()),
            cap,
            pid,
        ));
        tokio::spawn(supervise(
            live,
            shared.clone(),
            (kill.clone(), stop.clone()),
            dead.clone(),
            grace,
            pid,
        ));
        Ok(Arc::new(Connection {
            out,
            shared,
            next_id: AtomicU64::new(1),
            kill,
            stop,
            dead,
            pid,
        }))
    }

    /// The agent's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the agent has ended.
    pub fn is_dead(&self) -> bool {
        self.dead.is_cancelled() || self.kill.is_cancelled()
    }

    /// Resolves when the agent has ended and its tree is gone.
    pub async fn ended(&self) {
        self.dead.cancelled().await
    }

    /// Starts the shutdown (polite signal, grace, tree kill); see [`Connection::ended`].
    pub fn kill(&self) {
        self.stop.cancel();
        self.kill.cancel();
    }

    /// Kills the tree without the grace after the polite signal: an agent flooding past the
    /// output cap after its cancel is owed no clean-up time, and may ignore SIGTERM.
    pub fn kill_now(&self) {
        self.shared.at_once.store(true, Ordering::SeqCst);
        self.kill();
    }

    /// How the agent ended, once it has.
    pub fn exit(&self) -> Option<String> {
        lock(&self.shared.exit).clone()
    }

    /// Whether the agent was stopped for a line longer than the output cap.
    pub fn overflowed(&self) -> bool {
        self.shared.overflow.load(Ordering::SeqCst)
    }

    /// Bytes the agent has written on stderr so far.
    pub fn stderr_bytes(&self) -> u64 {
        self.shared.stderr_bytes.load(Ordering::Relaxed)
    }

    /// Resolves once the agent has written more than `bytes` on stderr in all.
    pub async fn stderr_past(&self, bytes: u64) {
        loop {
            let grew = self.shared.stderr_grew.notified();
            tokio::pin!(grew);
            // Registered before the look, so a read in between still wakes it.
            grew.as_mut().enable();
            if self.stderr_bytes() > bytes {
                return;
            }
            grew.await;
        }
    }

    /// The last bytes the agent wrote on stderr, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = lock(&self.shared.stderr);
        let (a, b) = tail.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).into_owned()
    }

    fn send(&self, msg: &impl Serialize) {
        let _ = self.out.send(line(msg));
    }

    /// Sends a request and waits for its answer, read as the schema's type of it: `timeout`
    /// (`None`: unbounded) past which the agent is killed, since an agent that ignores one
    /// request is stuck.
    pub(crate) async fn call<M: Method>(
        &self,
        params: &M,
        timeout: Option<Duration>,
    ) -> Result<M::Answer, AcpError> {
        let result = self.request(params, timeout).await?;
        M::answer(result).ok_or_else(|| AcpError::Unreadable(M::NAME.to_string()))
    }

    /// Sends a request and waits for its answer's `result`, as [`Connection::call`].
    async fn request<M: Method>(
        &self,
        params: &M,
        timeout: Option<Duration>,
    ) -> Result<Value, AcpError> {
        let method = M::NAME;
        let (rx, _) = match self.start_request(params) {
            Ok(sent) => sent,
            // Ending (its stdout closed, say) but not yet reaped: its exit and stderr say why, and
            // they come within the kill's grace.
            Err(AcpError::Exited(_)) => {
                self.dead.cancelled().await;
                return Err(AcpError::Exited(self.exit().unwrap_or_default()));
            }
            Err(e) => return Err(e),
        };
        let wait = async {
            rx.await
                .unwrap_or_else(|_| Err(AcpError::Exited(self.exit().unwrap_or_default())))
        };
        match timeout {
            None => wait.await,
            Some(t) => match tokio::time::timeout(t, wait).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::warn!(
                        pid = self.pid,
                        method,
                        "ACP request timed out: killing the agent"
                    );
                    self.kill();
                    Err(AcpError::Timeout(method.to_string()))
                }
            },
        }
    }

    /// Sends a request; the receiver gets its answer's `result` (or the agent's end), which
    /// [`Method::answer`] reads.
    pub(crate) fn start_request<M: Method>(
        &self,
        params: &M,
    ) -> Result<(oneshot::Receiver<Result<Value, AcpError>>, u64), AcpError> {
        if self.is_dead() {
            return Err(AcpError::Exited(
                self.exit().unwrap_or_else(|| "stopping".into()),
            ));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.waiters).insert(id, tx);
        self.send(&acp::JsonRpcMessage::wrap(acp::Request {
            id: acp::RequestId::Number(i64::try_from(id).unwrap_or(i64::MAX)),
            method: M::NAME.into(),
            params: Some(params),
        }));
        Ok((rx, id))
    }

    /// Whether request `id` still waits for its answer.
    pub fn is_waiting(&self, id: u64) -> bool {
        lock(&self.shared.waiters).contains_key(&id)
    }

    /// Sends `session/cancel` for `session`, whose prompt is request `prompt`. Until the prompt
    /// is answered the agent is [unsettled](Connection::unsettled): one that ignores the cancel
    /// may be frozen, and whoever sent it kills the agent when its grace passes.
    pub fn cancel_prompt(&self, session: &str, prompt: u64) {
        if self.is_waiting(prompt) {
            lock(&self.shared.cancelling).insert(prompt);
            // Answered in between: the reader found nothing to remove.
            if !self.is_waiting(prompt) && lock(&self.shared.cancelling).remove(&prompt) {
                self.shared.settled.notify_waiters();
            }
        }
        self.send(&acp::JsonRpcMessage::wrap(acp::Notification {
            method: acp::AGENT_METHOD_NAMES.session_cancel.into(),
            params: Some(acp::CancelNotification::new(session.to_string())),
        }));
    }

    /// Whether a cancelled prompt of this running agent awaits its answer.
    pub fn unsettled(&self) -> bool {
        !self.is_dead() && !lock(&self.shared.cancelling).is_empty()
    }

    /// Resolves once no cancelled prompt awaits its answer, or the agent is ending.
    pub async fn settled(&self) {
        loop {
            // Made before the look, so an answer in between still wakes it.
            let answered = self.shared.settled.notified();
            if !self.unsettled() {
                return;
            }
            tokio::select! {
                _ = answered => {}
                _ = self.kill.cancelled() => return,
                _ = self.dead.cancelled() => return,
            }
        }
    }

    /// Routes a session's updates and permission decisions to `tx` until [`Connection::unroute`];
    /// `mode` decides the permission answers.
    pub fn route(&self, session: &str, mode: ApprovalMode, tx: mpsc::UnboundedSender<Routed>) {
        lock(&self.shared.routes).insert(session.to_string(), tx);
        lock(&self.shared.modes).insert(session.to_string(), mode);
    }

    /// Sets the approval mode permission requests of `session` are answered from.
    pub fn set_mode(&self, session: &str, mode: ApprovalMode) {
        lock(&self.shared.modes).insert(session.to_string(), mode);
    }

    /// Makes `session`'s permission requests questions to the prompt's user while it is routed,
    /// each answer bounded by `ceiling` (`None`: answered from the mode again).
    pub fn ask(&self, session: &str, ceiling: Option<ApprovalMode>) {
        let mut asking = lock(&self.shared.asking);
        match ceiling {
            Some(c) => asking.insert(session.to_string(), c),
            None => asking.remove(session),
        };
    }

    /// Stops routing a session's updates (they are dropped: e.g. history replayed by a load).
    pub fn unroute(&self, session: &str) {
        lock(&self.shared.routes).remove(session);
        lock(&self.shared.asking).remove(session);
    }
}

/// One line from the agent, classified: the reader's whole view of the agent→client direction.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of our requests (`id` as sent: ids are the server's own integers).
    Response {
        /// The request's id.
        id: u64,
        /// Its `result`, or its `error` (an API error's HTTP status is the code).
        answer: Result<Value, AcpError>,
    },
    /// A `session/update` notification: the session and its `update` object.
    Update {
        /// The session it belongs to.
        session: String,
        /// The `update` object.
        update: Value,
    },
    /// A `session/request_permission` request.
    Permission {
        /// Its id, echoed in the answer.
        id: acp::RequestId,
        /// The session asking.
        session: String,
        /// The request's `params` (`toolCall`, `options`).
        params: Value,
    },
    /// Another request: answered "method not found" (no `fs` or `terminal` capability).
    Unsupported {
        /// Its id.
        id: acp::RequestId,
        /// Its method.
        method: String,
    },
    /// Not JSON, a response whose id is no integer (never one of ours), or a notification
    /// the client does not use.
    Ignored,
}

impl Message {
    /// Classifies one line of the agent's stdout (trailing newline allowed). Never fails: a
    /// stray line must not end the connection.
    pub fn parse(line: &[u8]) -> Message {
        let parsed = serde_json::from_slice::<Envelope>(line).or_else(|e| {
            // Bytes that are not UTF-8 are read as the one-shot backend reads the CLI's output:
            // each bad sequence as U+FFFD.
            match std::str::from_utf8(line) {
                Ok(_) => Err(e),
                Err(_) => serde_json::from_str::<Envelope>(&String::from_utf8_lossy(line)),
            }
        });
        let Ok(msg) = parsed else {
            return Message::Ignored;
        };
        match (msg.method.as_deref(), msg.id) {
            (None, Some(id)) => {
                let Some(id) = id_number(&id) else {
                    return Message::Ignored;
                };
                let answer = match msg.error {
                    Some(e) => {
                        let (code, message) = error_of(e);
                        Err(AcpError::Rpc { code, message })
                    }
                    None => Ok(msg.result.unwrap_or(Value::Null)),
                };
                Message::Response { id, answer }
            }
            (Some("session/update"), None) => Message::Update {
                session: session_of(&msg.params),
                update: update_of(msg.params),
            },
            (Some("session/request_permission"), Some(id)) => Message::Permission {
                id,
                session: session_of(&msg.params),
                params: msg.params,
            },
            (Some(other), Some(id)) => Message::Unsupported {
                id,
                method: other.to_string(),
            },
            _ => Message::Ignored,
        }
    }
}

/// One message as the line that carries it.
fn line(msg: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The answer to the agent's permission request `id`.
fn permission_answer(id: acp::RequestId, outcome: acp::RequestPermissionOutcome) -> Vec<u8> {
    line(&acp::JsonRpcMessage::wrap(
        acp::Response::<_, acp::Error>::new(id, Ok(acp::RequestPermissionResponse::new(outcome))),
    ))
}

/// One message from the agent, with its line's length and its share of the budget (kept by a
/// message routed to a prompt until the prompt takes it).
fn dispatch(
    s: &Shared,
    reply: &mpsc::UnboundedSender<Vec<u8>>,
    msg: Message,
    (bytes, budget): (usize, OwnedSemaphorePermit),
) {
    match msg {
        Message::Response { id, answer } => {
            if let Some(w) = lock(&s.waiters).remove(&id) {
                let _ = w.send(answer);
            }
            if lock(&s.cancelling).remove(&id) {
                s.settled.notify_waiters();
            }
        }
        Message::Update { session, update } => {
            if let Some(tx) = lock(&s.routes).get(&session) {
                let _ = tx.send(Routed {
                    inbound: Inbound::Update(update),
                    bytes,
                    _budget: Some(budget),
                });
            }
        }
        Message::Permission {
            id,
            session,
            params,
        } => {
            let route = lock(&s.routes).get(&session).cloned();
            let asking = lock(&s.asking).get(&session).copied();
            if let (Some(route), Some(ceiling)) = (route.clone(), asking) {
                ask(route, ceiling, reply.clone(), id, params);
                return;
            }
            // A session nobody routes (no prompt of ours runs) gets the most careful answer.
            let mode = lock(&s.modes)
                .get(&session)
                .copied()
                .unwrap_or(ApprovalMode::Plan);
            let (outcome, allowed) = permission(mode, &params);
            if let Some(tx) = route {
                let (tool_call, options) = PermissionRequest::as_sent(params);
                let _ = tx.send(Routed::made(Inbound::Permission {
                    tool_call,
                    options,
                    allowed,
                    outcome: serde_json::to_value(&outcome).unwrap_or_default(),
                    decided_by: None,
                }));
            }
            let _ = reply.send(permission_answer(id, outcome));
        }
        Message::Unsupported { id, method } => {
            // No `fs` or `terminal` capability is advertised: the server is no file system or
            // shell for the agent.
            let error = acp::Error::new(
                i32::from(acp::ErrorCode::MethodNotFound),
                format!("Method not found: {method}"),
            );
            let _ = reply.send(line(&acp::JsonRpcMessage::wrap(
                acp::Response::<(), _>::new(id, Err(error)),
            )));
        }
        Message::Ignored => {}
    }
}

/// A permission request of a session that asks: rejected at once when `ceiling` would not allow
/// it whatever the answer, else put to the prompt as a [`Inbound::Question`]; the agent's answer
/// (and the prompt's record of it) follows the reply.
fn ask(
    route: mpsc::UnboundedSender<Routed>,
    ceiling: ApprovalMode,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    id: acp::RequestId,
    params: Value,
) {
    let request = PermissionRequest::read(&params);
    let (_, within) = answer(ceiling, &request);
    let question = question(&request);
    let (tx, rx) = oneshot::channel();
    let asked = within
        && route
            .send(Routed::made(Inbound::Question {
                question,
                reply: tx,
            }))
            .is_ok();
    let answer = async move {
        let reply = match (within, asked) {
            (false, _) => Reply::Reject(Why::Ceiling),
            (true, false) => Reply::Reject(Why::Gone),
            (true, true) => rx.await.unwrap_or(Reply::Reject(Why::Gone)),
        };
        let (outcome, allowed) = chosen(reply, &request);
        let (tool_call, options) = PermissionRequest::as_sent(params);
        let _ = route.send(Routed::made(Inbound::Permission {
            tool_call,
            options,
            allowed,
            outcome: serde_json::to_value(&outcome).unwrap_or_default(),
            decided_by: Some(reply.decided_by()),
        }));
        let _ = writer.send(permission_answer(id, outcome));
    };
    tokio::spawn(answer);
}

#[cfg(test)]
mod tests;
