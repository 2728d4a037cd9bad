//! One turn on an agent, for both uses of ACP: the prompt's blocks, the turn under the call's
//! deadlines, cancellation and output cap, its permission questions put to the user, and the
//! failure a turn that did not end well reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::acp::client::{AcpError, Connection, Inbound, Routed};
use crate::acp::departures::PromptAnswer;
use crate::acp::wire::update_kind;
use crate::deadline::{Deadlines, Limit};
use crate::error::{ErrorKind, Failure, RunFacts};
use crate::gemini::gate::{self, StartGuard};
use crate::progress::{preview, Progress};
use agent_client_protocol_schema::v1 as acp;

use super::agent::agent_failure;
use super::call::{Answer, Block, Call};
use super::fold::Fold;
use super::slots::{Session, Slot};

/// Puts a permission question to the call's user: the asker's reply within its timeout (then a
/// rejection), or `cannot_ask` when the client has no way to be asked.
pub(super) fn put(
    question: crate::ask::Question,
    reply: tokio::sync::oneshot::Sender<crate::ask::Reply>,
    asking: Option<&crate::ask::Asking>,
    progress: &Progress,
) -> AbortOnDrop<()> {
    use crate::ask::{Reply, Why};
    progress.event(
        format!("asking the user: {}", preview(&question.title)),
        true,
    );
    let asker = asking.and_then(|a| a.asker.clone());
    AbortOnDrop(tokio::spawn(async move {
        let answer = match asker {
            Some(asker) => tokio::time::timeout(asker.timeout(), asker.ask(question))
                .await
                .unwrap_or(Reply::Reject(Why::TimedOut)),
            None => Reply::Reject(Why::CannotAsk),
        };
        let _ = reply.send(answer);
    }))
}

/// Why the server cancelled a turn itself.
#[derive(Debug, Clone, Copy)]
pub(super) enum Stop {
    /// A deadline of the call passed.
    Deadline(Limit),
    /// The agent's output passed `GEMINICLI_MCP_MAX_OUTPUT_BYTES` (this many bytes), as said.
    OutputCap(usize, Overflow),
}

/// What of the agent's output passed the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Overflow {
    /// What the turn holds: its answer, thoughts and tool calls (and transcript).
    Turn,
    /// One message, a line longer than the cap: the agent was stopped before it was read whole.
    Line,
    /// The agent's stderr while the turn ran: the agent was stopped.
    Stderr,
}

/// A turn's end: what was folded in, the prompt's answer, whether the client cancelled it, and
/// why the server did, if it did.
pub(super) struct Turn {
    pub(super) fold: Fold,
    pub(super) outcome: Result<PromptAnswer, AcpError>,
    pub(super) cancelled: bool,
    pub(super) stopped: Option<Stop>,
}

/// The failure of a turn whose output passed the output cap (`cap` bytes) by `what`.
pub(super) fn output_cap_failure(cap: usize, what: Overflow) -> Failure {
    let setting = crate::config::settings::MAX_OUTPUT_BYTES.name;
    let message = match what {
        Overflow::Turn => format!("the agent's answer passed the output cap ({cap} bytes); its prompt was cancelled. Raise {setting} or ask for a shorter answer"),
        Overflow::Line => format!("one message of the agent passed the output cap ({cap} bytes); the agent was stopped before it was read whole, and the next call starts a fresh one. Raise {setting} or ask for a shorter answer"),
        Overflow::Stderr => format!("the agent wrote more than the output cap ({cap} bytes) on stderr while the prompt ran; it was stopped, and the next call starts a fresh one. Raise {setting} if its logging is expected to run that long"),
    };
    Failure::new(ErrorKind::OutputLimit, message)
}

/// The failure of a turn that `limit` of `limits` ended.
pub(super) fn deadline_failure(limits: Deadlines, limit: Limit) -> Failure {
    let ms = limits.of(limit).map_or(0, |d| d.as_millis());
    Failure::new(
        ErrorKind::Timeout,
        format!("{}; the agent's prompt was cancelled", limit.passed(ms)),
    )
}

impl Turn {
    /// How the turn ended, as the transcript's last event.
    pub(super) fn end(&self) -> Value {
        match self.stopped {
            Some(Stop::Deadline(limit)) => {
                return json!({"kind": "timeout", "deadline": limit.name()})
            }
            Some(Stop::OutputCap(cap, _)) => {
                return json!({"kind": "output_limit", "capBytes": cap})
            }
            None => {}
        }
        match (&self.outcome, self.cancelled) {
            (_, true) => json!({"kind": "cancelled"}),
            (Ok(result), false) => {
                json!({"kind": "stop", "stopReason": result.stop_reason})
            }
            (Err(AcpError::Rpc { code, message }), false) => {
                json!({"kind": "error", "code": code, "message": message})
            }
            (Err(e), false) => json!({"kind": "error", "message": e.to_string()}),
        }
    }
}

/// A prompt to send: the agent, the session, the call it answers (its deadlines, and how its
/// user is asked), the grace a cancelled prompt gets before the agent is killed and the output cap
/// (`GEMINICLI_MCP_MAX_OUTPUT_BYTES`).
#[derive(Clone, Copy)]
pub(super) struct Prompting<'a> {
    pub(super) agent: &'a Arc<Connection>,
    pub(super) session: &'a Session,
    pub(super) call: &'a Call,
    pub(super) grace: Duration,
    pub(super) cap: usize,
}

impl Prompting<'_> {
    /// Sends the prompt and follows the turn to its end: updates folded in and reported as
    /// progress, a cancellation (the client's, or a deadline of `limits` passing) sent on to the
    /// agent, and the agent killed when it ignores it past the grace.
    #[expect(
        clippy::too_many_lines,
        reason = "one select loop over the turn's sources (updates, the answer, the client's cancel, the deadlines, the output cap, the grace) reads best whole"
    )]
    pub(super) async fn turn(
        &self,
        blocks: Vec<acp::ContentBlock>,
        mut fold: Fold,
        ct: &CancellationToken,
        progress: &Progress,
    ) -> Result<Turn, Failure> {
        let Prompting {
            agent,
            session,
            call,
            grace,
            cap,
        } = *self;
        let (limits, asking) = (call.limits, call.asking.as_ref());
        let started = Instant::now();
        let first_content = Moment::new(started);
        let last_activity = Moment::new(started);
        let watch = crate::deadline::first_to_pass(
            limits,
            started,
            || first_content.get(),
            || last_activity.get(),
        );
        tokio::pin!(watch);
        let mut stopped: Option<Stop> = None;
        let (tx, mut rx) = mpsc::unbounded_channel();
        agent.route(&session.id, session.mode, tx);
        agent.ask(&session.id, asking.map(|a| a.ceiling));
        // Questions being put to the user; dropped (a rejection) when the turn ends first.
        let mut questions: Vec<AbortOnDrop<()>> = Vec::new();
        let sid = session.id.clone();
        let (mut reply, request_id) = agent
            .start_request(&acp::PromptRequest::new(sid.clone(), blocks))
            .map_err(|e| agent_failure(agent, e, "sending the prompt"))?;
        let mut guard = PromptGuard {
            agent: agent.clone(),
            session: sid.clone(),
            grace,
            request_id,
            armed: true,
        };
        let mut cancel_sent: Option<tokio::time::Instant> = None;
        let mut intake = Intake { cap, dropped: 0 };
        // The agent's stderr counts too, from here on: past the cap the agent is stopped.
        let stderr_cap = agent.stderr_bytes() + cap as u64;
        let outcome = loop {
            let grace_over = async {
                match cancel_sent {
                    Some(at) => tokio::time::sleep_until(at + grace).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(routed) = rx.recv() => {
                    // Its share of the reader's budget is given back once it is folded in.
                    let Routed { inbound, bytes, .. } = routed;
                    let inbound = match inbound {
                        Inbound::Question { question, reply } => {
                            questions.push(put(question, reply, asking, progress));
                            continue;
                        }
                        other => other,
                    };
                    let now = Instant::now();
                    last_activity.set(now);
                    if is_content(&inbound) {
                        first_content.set_once(now);
                    }
                    if intake.take(&mut fold, inbound, bytes, progress) && stopped.is_none() {
                        tracing::debug!(cap, "the turn's output passed the output cap: cancelling the prompt");
                        stopped = Some(Stop::OutputCap(cap, Overflow::Turn));
                        if cancel_sent.is_none() {
                            agent.cancel_prompt(&sid, request_id);
                            cancel_sent = Some(tokio::time::Instant::now());
                        }
                    }
                    // Killed at once, SIGTERM or not, and not waited for: the call is answered
                    // now (the agent is dead to every later call).
                    if intake.dropped > cap {
                        tracing::warn!(pid = agent.pid(), cap, "the agent went on sending past the output cap: killing it");
                        agent.kill_now();
                        break Err(AcpError::Exited("killed: it went on sending past the output cap".into()));
                    }
                }
                _ = agent.stderr_past(stderr_cap) => {
                    tracing::warn!(pid = agent.pid(), cap, "the agent's stderr passed the output cap: killing it");
                    stopped.get_or_insert(Stop::OutputCap(cap, Overflow::Stderr));
                    agent.kill_now();
                    break Err(AcpError::Exited("killed: its stderr passed the output cap".into()));
                }
                r = &mut reply => {
                    // Updates sent before the answer are already queued: take them too.
                    while let Ok(routed) = rx.try_recv() {
                        let Routed { inbound, bytes, .. } = routed;
                        // What did not fit is not kept: the answer would be cut short silently.
                        if intake.take(&mut fold, inbound, bytes, progress) {
                            stopped.get_or_insert(Stop::OutputCap(cap, Overflow::Turn));
                        }
                    }
                    break r
                        .unwrap_or_else(|_| Err(AcpError::Exited(agent.exit().unwrap_or_default())))
                        .map(|result| PromptAnswer::read(&result));
                }
                _ = ct.cancelled(), if cancel_sent.is_none() => {
                    agent.cancel_prompt(&sid, request_id);
                    cancel_sent = Some(tokio::time::Instant::now());
                }
                passed = &mut watch, if cancel_sent.is_none() => {
                    tracing::debug!(deadline = passed.name(), "a deadline passed: cancelling the prompt");
                    agent.cancel_prompt(&sid, request_id);
                    cancel_sent = Some(tokio::time::Instant::now());
                    stopped = Some(Stop::Deadline(passed));
                }
                _ = grace_over => {
                    tracing::warn!(pid = agent.pid(), "the agent did not stop after session/cancel: killing it");
                    agent.kill();
                    agent.ended().await;
                    break Err(AcpError::Exited("killed after the cancel was ignored".into()));
                }
            }
        };
        guard.armed = false;
        drop(questions);
        agent.unroute(&sid);
        // A line past the cap stopped the agent before it was read: the turn's output passed it.
        if outcome.is_err() && agent.overflowed() {
            stopped.get_or_insert(Stop::OutputCap(cap, Overflow::Line));
        }
        Ok(Turn {
            fold,
            outcome,
            cancelled: cancel_sent.is_some() && stopped.is_none(),
            stopped,
        })
    }
}

/// When something first or last happened in a turn, written by the turn's loop and read by its
/// deadline watch without a lock: the time since the turn started, in nanoseconds plus one
/// (0: not yet), which gives the instant back exactly.
struct Moment {
    started: Instant,
    since: AtomicU64,
}

impl Moment {
    fn new(started: Instant) -> Moment {
        Moment {
            started,
            since: AtomicU64::new(0),
        }
    }

    fn encode(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.started).as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX - 1) + 1
    }

    fn set(&self, at: Instant) {
        self.since.store(self.encode(at), Ordering::Relaxed);
    }

    /// Sets it unless it was set.
    fn set_once(&self, at: Instant) {
        let _ =
            self.since
                .compare_exchange(0, self.encode(at), Ordering::Relaxed, Ordering::Relaxed);
    }

    fn get(&self) -> Option<Instant> {
        match self.since.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.started + Duration::from_nanos(n - 1)),
        }
    }
}

/// What a turn takes in: messages folded in while what the fold holds stays within the cap;
/// past it, each message's line is counted as `dropped` and the message dropped, so an agent that
/// goes on sending costs nothing more and is killed once it sent another cap's worth.
struct Intake {
    cap: usize,
    dropped: usize,
}

impl Intake {
    /// Takes one message in (a question never comes here: the turn puts it to the user); true
    /// when it did not fit under the cap.
    fn take(
        &mut self,
        fold: &mut Fold,
        inbound: Inbound,
        bytes: usize,
        progress: &Progress,
    ) -> bool {
        let cost = fold.cost(&inbound, bytes);
        if self.dropped > 0 || fold.bytes() + cost > self.cap {
            self.dropped += bytes.max(cost);
            return true;
        }
        fold.charge(cost);
        observe(fold, inbound, progress);
        false
    }
}

/// Folds one inbound message in and reports it: content (text, thoughts, tool calls) counts as
/// arrived, and the message's note becomes the call's latest event (tool events at once).
pub(super) fn observe(fold: &mut Fold, inbound: Inbound, progress: &Progress) {
    let (content, urgent) = match &inbound {
        Inbound::Update(u) => {
            let kind = update_kind(u);
            (
                matches!(
                    kind,
                    "agent_message_chunk"
                        | "agent_thought_chunk"
                        | "tool_call"
                        | "tool_call_update"
                ),
                kind.starts_with("tool_call"),
            )
        }
        Inbound::Permission { .. } => (true, true),
        // Put to the user by the turn; one arriving after it is dropped, which rejects.
        Inbound::Question { .. } => return,
    };
    if content {
        progress.content_arrived();
    }
    if let Some(note) = fold.absorb(inbound) {
        progress.event(note, urgent);
    }
}

/// What a turn starts with: the session reported as the call's; the start gate, when it was
/// taken for a fresh session, held until no other start can delete that session (its prompt is
/// recorded) or the turn ends; the fold with the session, model and pid (`transcript`: keep
/// every message).
pub(super) fn start_turn(
    slot: &Slot,
    agent: &Connection,
    session: &Session,
    gate: Option<StartGuard>,
    progress: &Progress,
    transcript: bool,
) -> (Option<gate::HeldGate>, Fold) {
    progress.set_session(session.id.clone());
    let held = gate.map(|g| gate::hold_start_gate(g, slot.key.cwd.clone(), progress.clone()));
    let fold = Fold::new(
        Answer {
            session_id: session.id.clone(),
            model: session.model.clone(),
            pid: agent.pid(),
            ..Answer::default()
        },
        transcript,
    );
    (held, fold)
}

/// A failed prompt as a tool failure with what the turn left (`facts`) and the agent's stderr
/// tail; a session wedged past the context window is retired and the failure says so.
pub(super) fn turn_failure(
    slot: &Slot,
    agent: &Connection,
    sid: &str,
    e: AcpError,
    facts: RunFacts,
) -> Failure {
    let wedged = is_wedge(&e);
    let mut f = agent_failure(agent, e, "running the prompt");
    if wedged {
        slot.retire(sid);
        f = f.note(WEDGE_NOTE);
    }
    let (stderr, signal) = (f.run.stderr_tail.clone(), f.run.signal);
    f.with_run(RunFacts {
        stderr_tail: stderr,
        signal,
        ..facts
    })
}

/// Said of a session retired because its history outgrew the model's context window.
pub(super) const WEDGE_NOTE: &str = "the session's history no longer fits the model's context window (a tool output too large), and every later turn of it would fail the same way: the agent dropped it; the next call starts a fresh session, and its session_id loads it again with large tool outputs cut";

/// Whether a prompt's error is the API's context-window refusal, which a live session never
/// recovers from once a tool output put it there.
pub(super) fn is_wedge(e: &AcpError) -> bool {
    matches!(e, AcpError::Rpc { message, .. }
        if message.contains("input token count") && message.contains("exceeds"))
}

/// Whether a message is content for the first-content deadline: assistant text or a tool event.
pub(super) fn is_content(inbound: &Inbound) -> bool {
    match inbound {
        Inbound::Update(u) => matches!(
            update_kind(u),
            "agent_message_chunk" | "tool_call" | "tool_call_update"
        ),
        Inbound::Permission { .. } | Inbound::Question { .. } => true,
    }
}

/// The prompt's content blocks, in order: text; context as an embedded resource; an image as a
/// file link (the agent reads it as the one-shot CLI reads an `@` reference) or as an image block
/// of the file's bytes, its MIME type from its extension (checked when the call was decoded).
pub(super) async fn prompt_blocks(blocks: &[Block]) -> Result<Vec<acp::ContentBlock>, Failure> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        out.push(match block {
            Block::Text(text) => acp::ContentBlock::Text(acp::TextContent::new(text.clone())),
            Block::Context(context) => acp::ContentBlock::Resource(acp::EmbeddedResource::new(
                acp::EmbeddedResourceResource::TextResourceContents(
                    acp::TextResourceContents::new(context.clone(), "geminicli-mcp://context")
                        .mime_type("text/plain".to_string()),
                ),
            )),
            Block::Link(path) => acp::ContentBlock::ResourceLink(acp::ResourceLink::new(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                format!("file://{}", path.display()),
            )),
            Block::Image(path) => {
                let read = {
                    let path = path.clone();
                    tokio::task::spawn_blocking(move || std::fs::read(path)).await
                };
                let bytes = read
                    .map_err(|e| Failure::invalid_input(format!("image_path: {e}")))?
                    .map_err(|e| {
                        Failure::invalid_input(format!("image_path {}: {e}", path.display()))
                    })?;
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                acp::ContentBlock::Image(acp::ImageContent::new(data, image_mime(path)))
            }
        });
    }
    Ok(out)
}

/// An image's MIME type by its extension (`jpg` is `image/jpeg`; the others are their own name).
fn image_mime(path: &std::path::Path) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg".to_string(),
        other => format!("image/{other}"),
    }
}

/// Aborts a task when dropped.
pub(super) struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Ends a prompt whose call was dropped mid-flight (a transport gone, a task aborted), so the agent
/// does not go on running tools for nobody: `session/cancel`, then the tree kill if the agent is
/// still busy after the grace (it cannot be told apart from a hang from here).
pub(super) struct PromptGuard {
    pub(super) agent: Arc<Connection>,
    pub(super) session: String,
    pub(super) grace: Duration,
    pub(super) request_id: u64,
    pub(super) armed: bool,
}

impl Drop for PromptGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.agent.unroute(&self.session);
        self.agent.cancel_prompt(&self.session, self.request_id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (agent, grace, id) = (self.agent.clone(), self.grace, self.request_id);
            runtime.spawn(async move {
                tokio::time::sleep(grace).await;
                // Answered meanwhile (cancelled or done): the agent is healthy and may be in
                // use by the next call.
                if agent.is_waiting(id).await {
                    agent.kill();
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn chunk(kind: &str, text: &str) -> Inbound {
        Inbound::Update(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}))
    }

    #[test]
    fn past_the_cap_nothing_is_kept_and_every_line_is_counted() {
        let progress = Progress::new(None, crate::progress::Style::Summary, None);
        let mut fold = Fold::new(Answer::default(), false);
        let mut intake = Intake {
            cap: 10,
            dropped: 0,
        };
        assert!(!intake.take(
            &mut fold,
            chunk("agent_message_chunk", "12345"),
            100,
            &progress
        ));
        assert!(!intake.take(
            &mut fold,
            chunk("agent_thought_chunk", "12345"),
            100,
            &progress
        ));
        assert_eq!(
            fold.bytes(),
            10,
            "answer and thoughts count, exactly to the cap"
        );
        assert!(intake.take(&mut fold, chunk("agent_message_chunk", "6"), 100, &progress));
        // A tool call counts its line and an entry, and nothing fits once the cap was passed.
        let tool =
            Inbound::Update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}));
        assert!(intake.take(&mut fold, tool, 60, &progress));
        assert_eq!(intake.dropped, 100 + 60 + 256);
        let (answer, _) = fold.finish(json!({"kind": "output_limit"}));
        assert_eq!(
            (answer.messages.as_str(), answer.thought.as_str()),
            ("12345", "12345")
        );
        assert!(answer.tool_calls.is_empty());

        // With the transcript, every message's line counts too.
        let mut fold = Fold::new(Answer::default(), true);
        let mut intake = Intake {
            cap: 1000,
            dropped: 0,
        };
        let plan = Inbound::Update(json!({"sessionUpdate": "plan", "entries": []}));
        assert!(!intake.take(&mut fold, plan, 700, &progress));
        assert_eq!(fold.bytes(), 700 + 256);
        let plan = Inbound::Update(json!({"sessionUpdate": "plan", "entries": []}));
        assert!(intake.take(&mut fold, plan, 700, &progress));
    }

    #[test]
    fn a_moment_gives_back_its_instant_and_the_first_one_stays() {
        let started = Instant::now();
        let first = Moment::new(started);
        assert_eq!(first.get(), None);
        let (a, b) = (
            started + Duration::from_nanos(1_234_567),
            started + Duration::from_secs(3),
        );
        first.set_once(a);
        first.set_once(b);
        assert_eq!(
            first.get(),
            Some(a),
            "the first one stays, to the nanosecond"
        );
        let last = Moment::new(started);
        last.set(started);
        assert_eq!(
            last.get(),
            Some(started),
            "the turn's start is a moment too"
        );
        last.set(b);
        assert_eq!(last.get(), Some(b));
    }

    #[tokio::test]
    async fn blocks_go_in_order_images_as_links_or_as_their_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let photo = dir.path().join("a b.JPG");
        std::fs::write(&photo, [0xff, 0xd8, 0xff]).expect("write");
        let blocks = prompt_blocks(&[
            Block::Text("describe".into()),
            Block::Context("ctx".into()),
            Block::Link(PathBuf::from("/w/a b.png")),
            Block::Image(photo.clone()),
        ])
        .await
        .expect("blocks");
        let blocks = serde_json::to_value(blocks).expect("JSON");
        assert_eq!(
            blocks[1],
            json!({"type": "resource", "resource": {"mimeType": "text/plain",
                "text": "ctx", "uri": "geminicli-mcp://context"}}),
            "as the CLI reads it"
        );
        assert_eq!(blocks[0], json!({"type": "text", "text": "describe"}));
        assert_eq!(blocks[1]["type"], "resource");
        assert_eq!(blocks[1]["resource"]["text"], "ctx");
        assert_eq!(blocks[2]["type"], "resource_link");
        assert_eq!(blocks[2]["uri"], "file:///w/a b.png");
        assert_eq!(blocks[2]["name"], "a b.png");
        assert_eq!(blocks[3]["type"], "image");
        assert_eq!(blocks[3]["mimeType"], "image/jpeg");
        assert_eq!(blocks[3]["data"], "/9j/");
        std::fs::remove_file(&photo).expect("remove");
        let gone = prompt_blocks(&[Block::Image(photo)]).await;
        assert!(gone.is_err_and(|f| f.kind == crate::error::ErrorKind::InputValidation));
    }
}
