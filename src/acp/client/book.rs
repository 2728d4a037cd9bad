//! What the reader routes by, owned by the reader task: the requests waiting for their answers,
//! the sessions' routes, approval modes and askers, the prompts being cancelled. Callers change
//! it, or ask it, with [`Command`]s.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::message::{line, permission_answer, AcpError, Inbound, Message, Routed};
use super::permission::{answer, chosen, permission, question};
use crate::acp::wire::PermissionRequest;
use crate::approval::ApprovalMode;
use crate::ask::{Reply, Why};
use agent_client_protocol_schema::v1 as acp;

/// Where the answer to one request goes.
pub(super) type Waiter = oneshot::Sender<Result<Value, AcpError>>;

/// What the reader routes by, owned by the reader task: callers reach it through [`Command`]s.
#[derive(Default)]
pub(super) struct Book {
    pub(super) waiters: HashMap<u64, Waiter>,
    routes: HashMap<String, mpsc::UnboundedSender<Routed>>,
    modes: HashMap<String, ApprovalMode>,
    /// Sessions whose permission requests are questions, with the ceiling bounding the answers.
    asking: HashMap<String, ApprovalMode>,
    /// The prompts sent `session/cancel` and not answered yet
    /// ([`Connection::cancel_prompt`](super::Connection::cancel_prompt)).
    cancelling: HashSet<u64>,
    /// Told once no prompt is being cancelled
    /// ([`Connection::settled`](super::Connection::settled)).
    settling: Vec<oneshot::Sender<()>>,
}

/// A change to the reader's [`Book`], or a question about it.
pub(super) enum Command {
    /// Request `id` is about to be sent: its answer goes to the waiter.
    Await(u64, Waiter),
    /// Routes a session's messages, its permissions answered from the mode.
    Route(String, ApprovalMode, mpsc::UnboundedSender<Routed>),
    /// A session's approval mode.
    Mode(String, ApprovalMode),
    /// Whether a session's permission requests are questions, and their ceiling.
    Ask(String, Option<ApprovalMode>),
    /// Stops routing a session.
    Unroute(String),
    /// Prompt `id` was sent `session/cancel`: unsettled until it is answered, if it waits.
    Cancel(u64),
    /// Whether request `id` waits for its answer.
    Waiting(u64, oneshot::Sender<bool>),
    /// Whether a cancelled prompt awaits its answer.
    Unsettled(oneshot::Sender<bool>),
    /// Told once no cancelled prompt awaits its answer.
    Settled(oneshot::Sender<()>),
}

impl Book {
    pub(super) fn apply(&mut self, command: Command) {
        match command {
            Command::Await(id, waiter) => {
                self.waiters.insert(id, waiter);
            }
            Command::Route(session, mode, tx) => {
                self.routes.insert(session.clone(), tx);
                self.modes.insert(session, mode);
            }
            Command::Mode(session, mode) => {
                self.modes.insert(session, mode);
            }
            Command::Ask(session, Some(ceiling)) => {
                self.asking.insert(session, ceiling);
            }
            Command::Ask(session, None) => {
                self.asking.remove(&session);
            }
            Command::Unroute(session) => {
                self.routes.remove(&session);
                self.asking.remove(&session);
            }
            // Answered already: nothing to wait for.
            Command::Cancel(id) if self.waiters.contains_key(&id) => {
                self.cancelling.insert(id);
            }
            Command::Cancel(_) => {}
            Command::Waiting(id, tx) => {
                let _ = tx.send(self.waiters.contains_key(&id));
            }
            Command::Unsettled(tx) => {
                let _ = tx.send(!self.cancelling.is_empty());
            }
            Command::Settled(tx) if self.cancelling.is_empty() => {
                let _ = tx.send(());
            }
            Command::Settled(tx) => {
                // An asker that gave up (its call cancelled) is not kept.
                self.settling.retain(|t| !t.is_closed());
                self.settling.push(tx);
            }
        }
    }

    /// Runs `work`, applying the commands that come meanwhile; `None` once the agent is dead.
    pub(super) async fn meanwhile<T>(
        &mut self,
        commands: &mut mpsc::UnboundedReceiver<Command>,
        dead: &CancellationToken,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                _ = dead.cancelled() => return None,
                Some(command) = commands.recv() => self.apply(command),
                out = &mut work => return Some(out),
            }
        }
    }

    /// Request `id` answered: its waiter told, and the agent settled if it was the last
    /// cancelled prompt.
    pub(super) fn answered(&mut self, id: u64, answer: Result<Value, AcpError>) {
        if let Some(w) = self.waiters.remove(&id) {
            let _ = w.send(answer);
        }
        if self.cancelling.remove(&id) && self.cancelling.is_empty() {
            for tx in self.settling.drain(..) {
                let _ = tx.send(());
            }
        }
    }

    /// One message from the agent, with its line's length and its share of the budget (kept by a
    /// message routed to a prompt until the prompt takes it).
    pub(super) fn dispatch(
        &mut self,
        reply: &mpsc::UnboundedSender<Vec<u8>>,
        msg: Message,
        (bytes, budget): (usize, OwnedSemaphorePermit),
    ) {
        match msg {
            Message::Response { id, answer } => self.answered(id, answer),
            Message::Update { session, update } => {
                if let Some(tx) = self.routes.get(&session) {
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
                let route = self.routes.get(&session).cloned();
                let asking = self.asking.get(&session).copied();
                if let (Some(route), Some(ceiling)) = (route.clone(), asking) {
                    ask(route, ceiling, reply.clone(), id, params);
                    return;
                }
                // A session nobody routes (no prompt of ours runs) gets the most careful answer.
                let mode = self
                    .modes
                    .get(&session)
                    .copied()
                    .unwrap_or(ApprovalMode::Plan);
                let (outcome, allowed) = permission(mode, &params);
                if let Some(tx) = route {
                    let record = Inbound::permission(params, allowed, &outcome, None);
                    let _ = tx.send(Routed::made(record));
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
        let record = Inbound::permission(params, allowed, &outcome, Some(reply.decided_by()));
        let _ = route.send(Routed::made(record));
        let _ = writer.send(permission_answer(id, outcome));
    };
    tokio::spawn(answer);
}
