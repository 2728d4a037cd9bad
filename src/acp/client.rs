//! One agent process and the JSON-RPC connection to it: a writer, a reader routing responses to
//! their waiters and `session/update` notifications to the session's current prompt, the answers
//! to the agent's own requests (permissions from the session's approval mode, no file system),
//! and a supervisor that notices the exit and kills the whole tree. `message` classifies the
//! agent's lines, `book` is what the reader routes by, `permission` the answers it gives.
//!
//! The reader task owns what it routes by (`Book`: the waiters, the routes, the approval modes,
//! the sessions that ask, the prompts being cancelled). Callers change it, or ask it, with
//! `Command`s on an unbounded channel (a plain send, so a `Drop` can send one), and the reader
//! applies every command sent before it read a line before it dispatches that line: a route or a
//! waiter made before its request is sent sees every message of that request. When the agent is
//! dead the reader fails every waiter with how it ended.
//!
//! One lock is left: the tail of the agent's stderr, written by the stderr task and read where a
//! failure is built — in sync code, and often after that task has ended, so there is no task to
//! ask — held only to append a read or copy 8 KiB at most. How the agent ended is written once
//! (a `OnceLock`); the rest is atomics, cancellation tokens and the output budget's semaphore.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::acp::wire::Method;
use crate::approval::ApprovalMode;
use crate::gemini::process::{Live, RunSpec, SpawnError, Termination};
use crate::sync::lock;

mod book;
mod message;
mod permission;
use book::{Book, Command};
use message::{line, ROUTED_BUDGET, ROUTED_MIN_CHARGE};
pub use message::{AcpError, Inbound, Message, Routed};
pub use permission::permission;

/// Bytes of the agent's stderr kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;
/// Longest wait, once the agent has ended, for the rest of its stderr.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// What the connection's tasks and its handle share.
struct Shared {
    /// The tail of the agent's stderr ([`STDERR_TAIL`]), kept by the stderr task.
    stderr: Mutex<VecDeque<u8>>,
    /// Fired when stderr reached its end: what the agent printed as it died is in the tail.
    stderr_done: CancellationToken,
    /// How the agent ended: written once by the supervisor, before `dead` fires.
    exit: OnceLock<String>,
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
/// prompts take in is held back by its own pipe, never buffered without bound here. Owns the
/// [`Book`]: applies `commands` all along, and once the agent is `dead` fails every waiter.
async fn read_messages(
    stdout: tokio::process::ChildStdout,
    s: Arc<Shared>,
    (mut commands, reply): (
        mpsc::UnboundedReceiver<Command>,
        mpsc::UnboundedSender<Vec<u8>>,
    ),
    (eof, stop, dead): (CancellationToken, CancellationToken, CancellationToken),
    cap: u64,
    pid: u32,
) {
    let mut book = Book::default();
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = (&mut reader).take(cap + 1);
        let read = limited.read_until(b'\n', &mut line);
        match book.meanwhile(&mut commands, &dead, read).await {
            Some(Ok(0) | Err(_)) | None => break,
            Some(Ok(_)) => {}
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
        let acquire = s.budget.clone().acquire_many_owned(charge);
        let Some(Ok(budget)) = book.meanwhile(&mut commands, &dead, acquire).await else {
            break;
        };
        let bytes = line.len();
        let message = Message::parse(&line);
        // The buffer of a huge line (an answer of many MiB in one chunk) is freed before the
        // message is folded into the answer, and not kept for the agent's life.
        if line.capacity() > KEPT_LINE_CAPACITY {
            line = Vec::new();
        }
        // Every command sent before the line was read is applied before it is dispatched: a
        // route or waiter made before its request was sent. (`try_recv` waits out a send under
        // way, so none is skipped.)
        while let Ok(command) = commands.try_recv() {
            book.apply(command);
        }
        book.dispatch(&reply, message, (bytes, budget));
    }
    // stdout closed: the agent is finished as a peer, whatever its process does.
    eof.cancel();
    book.meanwhile(&mut commands, &dead, std::future::pending::<()>())
        .await;
    // Dead: no answer comes any more. Commands still queued are applied, so a request sent in
    // between fails with the others.
    commands.close();
    while let Ok(command) = commands.try_recv() {
        book.apply(command);
    }
    let how = s.exit.get().cloned().unwrap_or_default();
    for (_, w) in book.waiters.drain() {
        let _ = w.send(Err(AcpError::Exited(how.clone())));
    }
}

/// How long an agent whose stdout closed, unasked, has to exit by itself: one ending on its own
/// (a crash, a refused start) closes stdout as it exits, and its own status says how it ended.
const OWN_EXIT_WAIT: Duration = Duration::from_millis(500);

/// Owns the tree: on its exit or `kill` (stdout's end, or `stop`: the server's asking), ends all
/// of it and says how; `dead` then has the reader fail every waiter.
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
    let _ = s.exit.set(how);
    dead.cancel();
}

/// A running agent. Dropping the last handle does not stop it: call [`Connection::kill`].
pub struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    /// To the reader, which owns the [`Book`].
    commands: mpsc::UnboundedSender<Command>,
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
            stderr: Mutex::default(),
            stderr_done: CancellationToken::new(),
            exit: OnceLock::new(),
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
        let (commands, inbox) = mpsc::unbounded_channel();

        tokio::spawn(write_lines(stdin, rx, dead.clone()));
        tokio::spawn(drain_stderr(stderr, shared.clone()));
        // One message may not exceed the output cap: past it the agent is stopped, so a runaway
        // line cannot take the server's memory.
        let cap = spec.max_output_bytes.max(1) as u64;
        tokio::spawn(read_messages(
            stdout,
            shared.clone(),
            (inbox, out.clone()),
            (kill.clone(), stop.clone(), dead.clone()),
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
            commands,
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
        self.shared.exit.get().cloned()
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

    /// Hands the reader a command (dropped once the reader has ended: the agent is dead).
    fn tell(&self, command: Command) {
        let _ = self.commands.send(command);
    }

    /// Asks the reader; `None` once it has ended.
    async fn query<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tell(command(tx));
        rx.await.ok()
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
        // Told before the request is written, so the reader has it before the answer.
        self.tell(Command::Await(id, tx));
        self.send(&acp::JsonRpcMessage::wrap(acp::Request {
            id: acp::RequestId::Number(i64::try_from(id).unwrap_or(i64::MAX)),
            method: M::NAME.into(),
            params: Some(params),
        }));
        Ok((rx, id))
    }

    /// Whether request `id` still waits for its answer (false once the agent is dead).
    pub async fn is_waiting(&self, id: u64) -> bool {
        self.query(|tx| Command::Waiting(id, tx))
            .await
            .unwrap_or(false)
    }

    /// Sends `session/cancel` for `session`, whose prompt is request `prompt`. Until the prompt
    /// is answered the agent is [unsettled](Connection::unsettled): one that ignores the cancel
    /// may be frozen, and whoever sent it kills the agent when its grace passes.
    pub fn cancel_prompt(&self, session: &str, prompt: u64) {
        self.send(&acp::JsonRpcMessage::wrap(acp::Notification {
            method: acp::AGENT_METHOD_NAMES.session_cancel.into(),
            params: Some(acp::CancelNotification::new(session.to_string())),
        }));
        // The reader looks whether the prompt still waits and marks it in one step: an answer
        // read before the mark finds nothing to settle, one read after it settles the agent. The
        // cancel is handed to the writer first: it is what stops an agent flooding its stdout,
        // and woken after the reader it was measured to reach the agent milliseconds later.
        self.tell(Command::Cancel(prompt));
    }

    /// Whether a cancelled prompt of this running agent awaits its answer (one cancelled before
    /// this is asked counts).
    pub async fn unsettled(&self) -> bool {
        !self.is_dead() && self.query(Command::Unsettled).await.unwrap_or(false)
    }

    /// Resolves once no cancelled prompt awaits its answer, or the agent is ending.
    pub async fn settled(&self) {
        tokio::select! {
            _ = self.query(Command::Settled) => {}
            _ = self.kill.cancelled() => {}
            _ = self.dead.cancelled() => {}
        }
    }

    /// Routes a session's updates and permission decisions to `tx` until [`Connection::unroute`];
    /// `mode` decides the permission answers.
    pub fn route(&self, session: &str, mode: ApprovalMode, tx: mpsc::UnboundedSender<Routed>) {
        self.tell(Command::Route(session.to_string(), mode, tx));
    }

    /// Sets the approval mode permission requests of `session` are answered from.
    pub fn set_mode(&self, session: &str, mode: ApprovalMode) {
        self.tell(Command::Mode(session.to_string(), mode));
    }

    /// Makes `session`'s permission requests questions to the prompt's user while it is routed,
    /// each answer bounded by `ceiling` (`None`: answered from the mode again).
    pub fn ask(&self, session: &str, ceiling: Option<ApprovalMode>) {
        self.tell(Command::Ask(session.to_string(), ceiling));
    }

    /// Stops routing a session's updates (they are dropped: e.g. history replayed by a load).
    pub fn unroute(&self, session: &str) {
        self.tell(Command::Unroute(session.to_string()));
    }
}

#[cfg(test)]
mod tests;
