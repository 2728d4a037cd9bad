//! One call's progress, for both backends: what a run has shown so far (queued, running for N s,
//! characters of answer, tools, the CLI's retries, the latest agent event), when it first showed
//! content and under which session, and the MCP `notifications/progress` that report it —
//! throttled, with a heartbeat, and never after the call was answered.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::future::Future;
use std::pin::Pin;

use crate::sync::lock;
use tokio::sync::Notify;
use tokio::time::Instant as TokioInstant;
use tokio_util::sync::CancellationToken;

/// Shortest interval between two content progress notifications (urgent ones and heartbeats
/// aside).
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(1000);
/// Characters of the latest answer text quoted in a progress message, and of an event's title.
pub(crate) const PREVIEW_CHARS: usize = 60;
/// How often the reporter looks for something to send.
const TICK: Duration = Duration::from_millis(200);

/// Something a run showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// Assistant text: how many characters, and the last few of them.
    Text {
        /// Characters in this piece.
        chars: usize,
        /// Its last [`PREVIEW_CHARS`] characters.
        tail: String,
    },
    /// A tool call, by name.
    Tool(String),
    /// The CLI reported a failed API attempt it will retry (or has given up on).
    Retry {
        /// The attempt number.
        attempt: u32,
        /// The HTTP status, when printed.
        status: Option<u16>,
        /// Whether this was the last attempt.
        last: bool,
    },
}

/// How progress messages read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A summary of the whole run: `running 12s, 340 chars, tools: a, b: …last words`.
    Summary,
    /// The latest event of the turn (`tool completed: ls`, `thinking: …`), the `acp` set's style.
    Events,
}

/// Where a call's progress messages go: MCP `notifications/progress` for a plain call that asked
/// for progress, or the status message of the task a call runs as. The MCP layer makes it; what
/// reports through it knows nothing of the protocol.
#[derive(Clone)]
pub struct Sink {
    to: To,
}

/// Sends one message with its number (increasing over the call); `false`: the client is gone.
type Sender = Arc<dyn Fn(u32, String) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

#[derive(Clone)]
enum To {
    Notify(Sender),
    Status(Arc<dyn Fn(String) + Send + Sync>, Duration),
}

impl Sink {
    /// A sink handing each message and its number to `send` (the server's
    /// `notifications/progress`); when `send` answers `false` the reports stop.
    pub fn notify<F, Fut>(send: F) -> Self
    where
        F: Fn(u32, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        Sink {
            to: To::Notify(Arc::new(move |n, message| Box::pin(send(n, message)))),
        }
    }

    /// A sink handing each message to `status` (a task's status message), refreshed at least
    /// every `every`: a client polling the task reads a running time that moves.
    pub fn status(status: impl Fn(String) + Send + Sync + 'static, every: Duration) -> Self {
        Sink {
            to: To::Status(Arc::new(status), every),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    queued: bool,
    /// What the call waits for before its run starts, and since when.
    waiting: Option<(String, Instant)>,
    started: Option<Instant>,
    chars: usize,
    preview: String,
    tools: Vec<String>,
    retry: Option<(u32, Option<u16>, bool)>,
    /// The latest event note ([`Style::Events`]).
    latest: Option<String>,
    /// When the first assistant text or tool event arrived (the first-content deadline, the
    /// start gate).
    first_content: Option<Instant>,
    /// The run's session, once known.
    session_id: Option<String>,
    /// Waiting at the workspace's start gate: since when, since when its holder holds it, and
    /// the longest hold (tokio's clock, which the gate's leases run on).
    gate: Option<(TokioInstant, TokioInstant, Duration)>,
    /// The run's new session may be deleted by another CLI start: why.
    session_at_risk: Option<String>,
    dirty: bool,
    urgent: bool,
}

struct Shared {
    state: Mutex<State>,
    sink: Option<Sink>,
    style: Style,
    /// The caller's `task_note`, prefixed to every message.
    note: Option<String>,
    /// Notifications sent so far: `progress` keeps increasing across a call's attempts.
    sent: AtomicU32,
    /// Notified when content first arrives.
    content: Notify,
}

/// One call's progress (cheap to clone; every attempt of the call shares it).
#[derive(Clone)]
pub struct Progress {
    shared: Arc<Shared>,
}

impl Progress {
    /// Progress reported through `sink` (none: tracked only, for deadlines and the start gate).
    pub fn new(sink: Option<Sink>, style: Style, note: Option<String>) -> Self {
        Progress {
            shared: Arc::new(Shared {
                state: Mutex::default(),
                sink,
                style,
                note,
                sent: AtomicU32::new(0),
                content: Notify::new(),
            }),
        }
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        let mut s = lock(&self.shared.state);
        f(&mut s);
        s.dirty = true;
    }

    /// The call waits for a free slot.
    pub fn queued(&self) {
        self.update(|s| {
            s.queued = true;
            s.urgent = true;
        });
    }

    /// The call waits at its workspace's start gate (`Some((since, held_since, bound))`: since
    /// when it waits, since when the gate's holder holds it, the longest hold), or no longer.
    pub fn at_gate(&self, wait: Option<(TokioInstant, TokioInstant, Duration)>) {
        self.update(|s| {
            s.urgent |= s.gate.is_none() && wait.is_some();
            s.gate = wait;
        });
    }

    /// What the call says while it waits at the start gate (none: it does not wait).
    #[cfg(test)]
    pub(crate) fn gate_message(&self) -> Option<String> {
        let s = lock(&self.shared.state);
        s.gate.is_some().then(|| status(&s))
    }

    /// Records that the run's new session may be deleted by another CLI start, and why.
    pub fn session_at_risk(&self, why: String) {
        lock(&self.shared.state).session_at_risk = Some(why);
    }

    /// Why the run's new session may be deleted by another CLI start, when it may.
    pub fn at_risk(&self) -> Option<String> {
        lock(&self.shared.state).session_at_risk.clone()
    }

    /// The call waits for `what` before its run can start: progress says so, with the time
    /// waited, until [`Progress::waiting_done`] or the run starts.
    pub fn waiting(&self, what: String) {
        self.update(|s| {
            s.waiting = Some((what, Instant::now()));
            s.urgent = true;
        });
    }

    /// The wait of [`Progress::waiting`] is over.
    pub fn waiting_done(&self) {
        self.update(|s| {
            s.waiting = None;
            // The run's clock starts now, if nothing started it: what follows is the run.
            s.started.get_or_insert_with(Instant::now);
        });
    }

    /// The call's run started (again, for a retry: the clock restarts).
    pub fn started(&self) {
        self.update(|s| {
            s.queued = false;
            s.waiting = None;
            s.started = Some(Instant::now());
            s.urgent = true;
        });
    }

    /// Folds in something the run showed.
    pub fn observe(&self, hint: Hint) {
        let content = matches!(hint, Hint::Text { .. } | Hint::Tool(_));
        self.update(|s| match hint {
            Hint::Text { chars, tail } => {
                s.chars += chars;
                s.preview.push_str(&tail);
                let n = s.preview.chars().count();
                if n > PREVIEW_CHARS {
                    let cut = s
                        .preview
                        .char_indices()
                        .nth(n - PREVIEW_CHARS)
                        .map_or(0, |(i, _)| i);
                    s.preview.drain(..cut);
                }
            }
            Hint::Tool(name) => {
                s.tools.push(name);
                s.urgent = true;
            }
            // Not urgent: the throttle applies, so a burst of attempts is one message.
            Hint::Retry {
                attempt,
                status,
                last,
            } => s.retry = Some((attempt, status, last)),
        });
        if content {
            self.content_arrived();
        }
    }

    /// An event of an agent's turn (`tool completed: ls`), sent without waiting for the
    /// throttle when `urgent`.
    pub fn event(&self, note: String, urgent: bool) {
        self.update(|s| {
            s.latest = Some(note);
            s.urgent |= urgent;
        });
    }

    /// Records that content arrived (the first time counts).
    pub fn content_arrived(&self) {
        let first = {
            let mut s = lock(&self.shared.state);
            let first = s.first_content.is_none();
            if first {
                s.first_content = Some(Instant::now());
            }
            first
        };
        if first {
            self.shared.content.notify_waiters();
        }
    }

    /// When content first arrived.
    pub fn first_content(&self) -> Option<Instant> {
        lock(&self.shared.state).first_content
    }

    /// Resolves once content has arrived.
    pub async fn content(&self) {
        loop {
            let notified = self.shared.content.notified();
            if self.first_content().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Records the run's session id.
    pub fn set_session(&self, id: String) {
        lock(&self.shared.state).session_id = Some(id);
    }

    /// The run's session id, once known.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.state).session_id.clone()
    }

    /// Sends `message` now (a wait, a retry, a fallback of the call's policy).
    pub async fn say(&self, message: String) {
        let message = self.with_note(message);
        self.send(message).await;
    }

    /// Sends what changed since the last notification, now (the end of an agent's turn: its
    /// last event is where the call ended).
    pub async fn flush(&self) {
        let message = {
            let mut s = lock(&self.shared.state);
            if !s.dirty {
                return;
            }
            s.dirty = false;
            s.urgent = false;
            self.message(&s)
        };
        self.send(message).await;
    }

    async fn send(&self, message: String) -> bool {
        let Some(sink) = &self.shared.sink else {
            return true;
        };
        let n = self.shared.sent.fetch_add(1, Ordering::Relaxed) + 1;
        match &sink.to {
            To::Notify(send) => send(n, message).await,
            To::Status(status, _) => {
                status(message);
                true
            }
        }
    }

    fn with_note(&self, message: String) -> String {
        match &self.shared.note {
            Some(note) => format!("[{note}] {message}"),
            None => message,
        }
    }

    fn message(&self, s: &State) -> String {
        let body = match (self.shared.style, &s.latest) {
            (Style::Events, Some(latest))
                if !s.queued && s.gate.is_none() && s.waiting.is_none() =>
            {
                latest.clone()
            }
            _ => status(s),
        };
        self.with_note(body)
    }

    /// Reports changes (throttled) and a heartbeat until `stop` fires; nothing when there is
    /// no sink. The returned guard stops the reporter when dropped.
    pub fn report(&self, heartbeat: Duration, stop: CancellationToken) -> Option<Reporter> {
        let heartbeat = match &self.shared.sink.as_ref()?.to {
            To::Status(_, every) => heartbeat.min(*every),
            To::Notify(_) => heartbeat,
        };
        let progress = self.clone();
        Some(Reporter(tokio::spawn(async move {
            let mut last: Option<Instant> = None;
            let mut tick = tokio::time::interval(TICK);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let message = {
                    let mut s = lock(&progress.shared.state);
                    let since = last.map_or(Duration::MAX, |l| l.elapsed());
                    if !due(s.dirty, s.urgent, since, heartbeat) {
                        continue;
                    }
                    s.dirty = false;
                    s.urgent = false;
                    progress.message(&s)
                };
                last = Some(Instant::now());
                if !progress.send(message).await {
                    return;
                }
            }
        })))
    }
}

/// The reporter task of [`Progress::report`]; dropping it stops the reports (the call is about
/// to be answered, and no progress may follow its answer).
pub struct Reporter(tokio::task::JoinHandle<()>);

impl Drop for Reporter {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The summary of a run so far.
fn status(s: &State) -> String {
    if let Some((since, held, bound)) = s.gate {
        return format!(
            "queued: waiting for another call in this workspace to start (for {}s; its run has held the start gate for {}s, at most {}s)",
            since.elapsed().as_secs(),
            held.elapsed().as_secs(),
            bound.as_secs_f64(),
        );
    }
    if s.queued {
        return format!(
            "queued: waiting for a free Gemini slot ({})",
            crate::config::settings::MAX_CONCURRENCY.name
        );
    }
    if let Some((what, since)) = &s.waiting {
        return format!("{what}, {}s", since.elapsed().as_secs());
    }
    let secs = s.started.map_or(0, |t| t.elapsed().as_secs());
    let mut m = format!("running {secs}s");
    if s.chars > 0 {
        m.push_str(&format!(", {} chars", s.chars));
    }
    if !s.tools.is_empty() {
        m.push_str(&format!(", tools: {}", s.tools.join(", ")));
    }
    if let Some((attempt, status, last)) = s.retry {
        let status = status.map_or(String::new(), |s| format!(" with status {s}"));
        if last {
            m.push_str(&format!(
                ", Attempt {attempt} failed{status}: the CLI gives up"
            ));
        } else {
            m.push_str(&format!(
                ", Attempt {attempt} failed{status}, the CLI is retrying"
            ));
        }
    }
    let preview = s.preview.replace(['\n', '\r'], " ");
    let preview = preview.trim();
    if !preview.is_empty() {
        m.push_str(&format!(": …{preview}"));
    }
    m
}

/// Whether a progress notification goes out now, `since` the last one: a change waits for
/// [`MIN_INTERVAL`] unless it is urgent (queued/started, a tool call); without changes only the
/// heartbeat speaks.
fn due(dirty: bool, urgent: bool, since: Duration, heartbeat: Duration) -> bool {
    (dirty && (urgent || since >= MIN_INTERVAL)) || since >= heartbeat
}

/// The first non-blank line of `text`, at most [`PREVIEW_CHARS`] characters: how an event
/// names a title or a thought.
pub(crate) fn preview(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    line.chars().take(PREVIEW_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_before_the_run_says_what_it_waits_for_and_the_run_clock_starts_after_it() {
        let p = Progress::new(None, Style::Events, None);
        p.waiting("checking that the Gemini CLI's MCP servers answer: slow".into());
        let s = lock(&p.shared.state);
        assert_eq!(
            status(&s),
            "checking that the Gemini CLI's MCP servers answer: slow, 0s"
        );
        assert!(s.urgent && s.started.is_none());
        drop(s);
        p.event("an older event".into(), false);
        assert!(p.message(&lock(&p.shared.state)).starts_with("checking"));
        p.waiting_done();
        let s = lock(&p.shared.state);
        assert!(s.waiting.is_none() && s.started.is_some());
        assert_eq!(status(&s), "running 0s");
    }

    #[test]
    fn progress_is_throttled_with_a_heartbeat() {
        let hb = Duration::from_secs(10);
        let ms = Duration::from_millis;
        assert!(
            due(true, false, Duration::MAX, hb),
            "the first change goes out"
        );
        assert!(!due(true, false, ms(300), hb), "text changes wait");
        assert!(due(true, false, ms(1000), hb));
        assert!(
            due(true, true, ms(10), hb),
            "tool calls and queueing do not wait"
        );
        assert!(!due(false, false, ms(9_999), hb), "nothing new: silence");
        assert!(due(false, false, hb, hb), "until the heartbeat");
    }

    #[test]
    fn a_summary_has_the_runs_content() {
        let p = Progress::new(None, Style::Summary, None);
        p.started();
        p.observe(Hint::Tool("list_directory".into()));
        p.observe(Hint::Text {
            chars: 11,
            tail: "Hello\nthere".into(),
        });
        p.observe(Hint::Retry {
            attempt: 2,
            status: Some(429),
            last: false,
        });
        let m = p.message(&lock(&p.shared.state));
        assert!(m.contains("tools: list_directory"), "{m}");
        assert!(m.contains("…Hello there"), "{m}");
        assert!(
            m.contains("Attempt 2 failed with status 429, the CLI is retrying"),
            "{m}"
        );
        assert!(p.first_content().is_some(), "a tool call is content");
        p.queued();
        assert!(p.message(&lock(&p.shared.state)).starts_with("queued"));
    }

    #[test]
    fn events_read_as_the_latest_event_with_the_note() {
        let p = Progress::new(None, Style::Events, Some("t1".into()));
        p.started();
        assert!(p
            .message(&lock(&p.shared.state))
            .starts_with("[t1] running"));
        p.event("tool completed: .".into(), true);
        assert_eq!(p.message(&lock(&p.shared.state)), "[t1] tool completed: .");
    }

    #[tokio::test]
    async fn content_wakes_whoever_waits_for_it() {
        let p = Progress::new(None, Style::Summary, None);
        let waiter = tokio::spawn({
            let p = p.clone();
            async move { p.content().await }
        });
        tokio::task::yield_now().await;
        p.content_arrived();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("joined");
    }
}
