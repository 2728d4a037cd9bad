//! Long calls as tasks: the `io.modelcontextprotocol/tasks` extension of the 2026-07-28 protocol.
//! A prompt call from a client that declares the extension is answered at once with a task; the
//! run goes on in the background, its progress messages become the task's status message, and
//! `tasks/get` returns the result in exactly the shape the plain call would have had.
//!
//! How long a task runs and how long it is kept are two things. It runs as long as the call's own
//! deadlines allow (none set: as long as a plain call would); it is kept while the client asks
//! about it, and for [`TaskLimits::retention`] after it finished or after the client last asked.
//! A running task nobody asked about for that long is expired: its run is cancelled (the process
//! tree killed, as for a cancelled call) and it is forgotten. At most [`TaskLimits::max_tasks`]
//! tasks are held at once, finished ones evicted oldest first; when every one is still running,
//! a new call is answered as a plain call instead.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

// Tokio's clock (the system's outside a runtime): the tests run the store on a paused one.
use tokio::time::Instant;

use rmcp::model::{DetailedTask, InputRequest, JsonObject, Task, TaskPayload, TaskStatus};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::TaskLimits;

/// The poll interval suggested to clients.
pub(crate) const POLL_INTERVAL_MS: u64 = 1_000;
/// How often expired tasks are looked for.
const SWEEP: Duration = Duration::from_secs(1);

/// What a finished run left.
pub(crate) enum Outcome {
    /// The call's result (a `CallToolResult`, tool errors included), as JSON.
    Completed(JsonObject),
    /// A JSON-RPC error the call failed with (the run panicked).
    Failed(JsonObject),
}

/// The tasks of one server. Cheap to clone: everything is shared.
#[derive(Clone)]
pub(crate) struct Tasks {
    store: Arc<Mutex<Store>>,
    limits: TaskLimits,
    /// Told each time a task finishes (the jobs' `gemini_wait` waits on it).
    finished: Arc<tokio::sync::Notify>,
}

/// What a job started by `gemini_start` says of itself besides a task's fields: the tool it runs
/// and its idempotency key, with the arguments that key was first given with.
#[derive(Debug, Clone, Default)]
pub(crate) struct JobLabel {
    /// The prompt tool the job runs.
    pub tool: String,
    /// `idempotency_key`, and the tool's arguments it stands for.
    pub key: Option<(String, Value)>,
}

/// How a start went.
#[derive(Debug)]
pub(crate) enum Started {
    /// A new task, running.
    New(Task),
    /// The job already held under the start's key, for the same arguments: its id.
    Attached(String),
}

/// Why a start made nothing.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Every task held is still running.
    Full,
    /// The start's key is held by this job, for other arguments.
    KeyTaken(String),
}

/// A task as the job tools show it.
#[derive(Debug, Clone)]
pub(crate) struct JobView {
    /// The task's (and job's) id.
    pub id: String,
    /// The prompt tool it runs (none for a task a client made with the tasks extension).
    pub tool: Option<String>,
    /// Where it stands.
    pub status: TaskStatus,
    /// Seconds since it started.
    pub elapsed_s: f64,
    /// The last progress message, or how it ended.
    pub message: Option<String>,
    /// A finished task's result (the call's result, or its JSON-RPC error).
    pub payload: Option<TaskPayload>,
}

#[derive(Default)]
struct Store {
    entries: HashMap<String, Entry>,
}

struct Entry {
    /// Who made it: requests of another client do not see it.
    owner: Option<String>,
    /// A job's tool and key (`gemini_start`).
    job: Option<JobLabel>,
    created: Instant,
    created_at: String,
    updated_at: String,
    /// When the client last asked about it (or when it finished, if later).
    seen: Instant,
    status_message: Option<String>,
    state: State,
}

enum State {
    Working {
        cancel: CancellationToken,
        /// A question waiting for the client's answer (`input_required` meanwhile).
        asking: Option<Box<Pending>>,
        /// Questions asked so far: each gets a key of its own.
        asked: u32,
    },
    Finished {
        payload: TaskPayload,
        at: Instant,
    },
}

/// A question of a running task.
struct Pending {
    key: String,
    request: InputRequest,
    answer: oneshot::Sender<Value>,
}

/// What a task's run has of its task: its cancellation, its status message, its questions.
pub(crate) struct Handle {
    /// Cancelled by `tasks/cancel`, or when the task expires.
    pub cancel: CancellationToken,
    tasks: Tasks,
    id: String,
}

impl Handle {
    /// Sets the task's status message.
    pub(crate) fn status(&self, message: String) {
        self.tasks.set_status(&self.id, message);
    }

    /// Puts `request` to the client as the task's input request: the task reads
    /// `input_required` until `tasks/update` answers it, and the answer (the client's result for
    /// the request) resolves the future; `None` when the task ended or was cancelled first.
    pub(crate) async fn ask(&self, request: InputRequest) -> Option<Value> {
        let rx = self.tasks.ask(&self.id, request)?;
        tokio::select! {
            answer = rx => answer.ok(),
            _ = self.cancel.cancelled() => None,
        }
    }
}

fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An id nobody can guess: it is all a client needs to read a result or cancel a run.
pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source works");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("gemini-{hex}")
}

fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!("unknown task: {id} (finished tasks are kept for a while, then forgotten)"),
        None,
    )
}

impl Tasks {
    /// A store under `limits`; its sweeper runs until `shutdown` (it needs a tokio runtime).
    pub(crate) fn new(limits: TaskLimits, shutdown: &CancellationToken) -> Self {
        let tasks = Tasks {
            store: Arc::default(),
            limits,
            finished: Arc::default(),
        };
        let sweeper = tasks.clone();
        let stop = shutdown.clone();
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(SWEEP);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => sweeper.sweep(),
                    }
                }
            });
        }
        tasks
    }

    /// Whether calls may run as tasks.
    pub(crate) fn enabled(&self) -> bool {
        self.limits.enabled
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        crate::sync::lock(&self.store)
    }

    /// Starts `run` as a task of `owner`: `run` gets the task's [`Handle`]. `None` when the store is full of running tasks (the caller runs
    /// the call as a plain one).
    pub(crate) fn start<F, Fut>(&self, owner: Option<String>, run: F) -> Option<Task>
    where
        F: FnOnce(Handle) -> Fut,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        match self.start_job(owner, None, run) {
            Ok(Started::New(task)) => Some(task),
            _ => None,
        }
    }

    /// [`Tasks::start`] of a job (`gemini_start`), labelled with its tool and key. A job of
    /// `owner` already held under the key is attached to (`run` is dropped unrun) when it stands
    /// for the same arguments, and refused when it does not: one look and one start, under one
    /// lock, so two starts with one key make one run.
    pub(crate) fn start_job<F, Fut>(
        &self,
        owner: Option<String>,
        job: Option<JobLabel>,
        run: F,
    ) -> Result<Started, Refused>
    where
        F: FnOnce(Handle) -> Fut,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        self.sweep();
        let id = new_id();
        let cancel = CancellationToken::new();
        let task = {
            let mut store = self.lock();
            if let Some((key, args)) = job.as_ref().and_then(|j| j.key.as_ref()) {
                let held = store.entries.iter().find(|(_, e)| {
                    e.owner == owner
                        && e.job
                            .as_ref()
                            .and_then(|j| j.key.as_ref())
                            .is_some_and(|(k, _)| k == key)
                });
                if let Some((held_id, e)) = held {
                    let same = e
                        .job
                        .as_ref()
                        .and_then(|j| j.key.as_ref())
                        .is_some_and(|(_, a)| a == args);
                    return if same {
                        Ok(Started::Attached(held_id.clone()))
                    } else {
                        Err(Refused::KeyTaken(held_id.clone()))
                    };
                }
            }
            if !store.make_room(self.limits.max_tasks) {
                return Err(Refused::Full);
            }
            let now = Instant::now();
            let stamp = now_text();
            let entry = Entry {
                owner,
                job,
                created: now,
                created_at: stamp.clone(),
                updated_at: stamp,
                seen: now,
                status_message: Some("queued".into()),
                state: State::Working {
                    cancel: cancel.clone(),
                    asking: None,
                    asked: 0,
                },
            };
            let task = self.wire(&id, &entry);
            store.entries.insert(id.clone(), entry);
            task
        };
        let future = run(Handle {
            cancel,
            tasks: self.clone(),
            id: id.clone(),
        });
        let tasks = self.clone();
        tokio::spawn(async move {
            // A panic in the run is the task's failure, not the server's.
            let outcome = match tokio::spawn(future).await {
                Ok(outcome) => outcome,
                Err(e) => Outcome::Failed(internal_error(&e.to_string())),
            };
            tasks.finish(&id, outcome);
        });
        Ok(Started::New(task))
    }

    fn set_status(&self, id: &str, message: String) {
        let mut store = self.lock();
        if let Some(e) = store.entries.get_mut(id) {
            if matches!(e.state, State::Working { .. }) {
                e.status_message = Some(message);
                e.updated_at = now_text();
            }
        }
    }

    /// Makes `request` the task's pending question; the receiver gets the answer.
    fn ask(&self, id: &str, request: InputRequest) -> Option<oneshot::Receiver<Value>> {
        let mut store = self.lock();
        let e = store.entries.get_mut(id)?;
        let State::Working { asking, asked, .. } = &mut e.state else {
            return None;
        };
        *asked += 1;
        let (tx, rx) = oneshot::channel();
        *asking = Some(Box::new(Pending {
            key: crate::forms::request_key(*asked),
            request,
            answer: tx,
        }));
        e.updated_at = now_text();
        Some(rx)
    }

    fn finish(&self, id: &str, outcome: Outcome) {
        let mut store = self.lock();
        let Some(e) = store.entries.get_mut(id) else {
            return;
        };
        let State::Working { cancel, .. } = &e.state else {
            return;
        };
        let secs = e.created.elapsed().as_secs_f64();
        let (payload, message) = match outcome {
            _ if cancel.is_cancelled() => (
                TaskPayload::Cancelled,
                format!("cancelled after {secs:.1} s"),
            ),
            Outcome::Completed(result) => (
                TaskPayload::Completed { result },
                format!("finished after {secs:.1} s"),
            ),
            Outcome::Failed(error) => {
                let message = error
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("failed")
                    .to_owned();
                (TaskPayload::Failed { error }, message)
            }
        };
        let now = Instant::now();
        e.state = State::Finished { payload, at: now };
        e.status_message = Some(message);
        e.updated_at = now_text();
        e.seen = e.seen.max(now);
        drop(store);
        self.finished.notify_waiters();
    }

    /// A future that resolves when a task finishes next (made before looking, so no finish
    /// between the look and the wait is missed).
    pub(crate) fn next_finish(&self) -> tokio::sync::futures::OwnedNotified {
        self.finished.clone().notified_owned()
    }

    /// The job (or task) `id` as `owner` may see it, with its result when it has finished; the
    /// look counts as the client asking about it (it is kept for the retention time after).
    pub(crate) fn view(&self, owner: Option<&str>, id: &str) -> Result<JobView, McpError> {
        self.sweep();
        let mut store = self.lock();
        let e = store.visible(owner, id)?;
        e.seen = Instant::now();
        Ok(view(id, e, true))
    }

    /// The jobs and tasks `owner` has, oldest first, without their results; the look counts as
    /// the client asking about each.
    pub(crate) fn list(&self, owner: Option<&str>) -> Vec<JobView> {
        self.sweep();
        let mut store = self.lock();
        let now = Instant::now();
        let mut views: Vec<(Instant, JobView)> = store
            .entries
            .iter_mut()
            .filter(|(_, e)| e.owner.as_deref() == owner)
            .map(|(id, e)| {
                e.seen = now;
                (e.created, view(id, e, false))
            })
            .collect();
        views.sort_by_key(|(created, _)| *created);
        views.into_iter().map(|(_, v)| v).collect()
    }

    /// The most tasks and jobs held at once (`GEMINICLI_MCP_MAX_TASKS`).
    pub(crate) fn max_tasks(&self) -> usize {
        self.limits.max_tasks
    }

    /// `tasks/get`: the task's state, its result once it has one.
    pub(crate) fn get(&self, owner: Option<&str>, id: &str) -> Result<DetailedTask, McpError> {
        self.sweep();
        let mut store = self.lock();
        let e = store.visible(owner, id)?;
        e.seen = Instant::now();
        let payload = match &mut e.state {
            State::Working { asking, .. } => {
                // A question whose asker gave up (its receiver dropped) is no longer asked.
                if asking.as_ref().is_some_and(|p| p.answer.is_closed()) {
                    *asking = None;
                }
                match asking {
                    Some(p) => TaskPayload::InputRequired {
                        input_requests: [(p.key.clone(), p.request.clone())].into(),
                    },
                    None => TaskPayload::Working,
                }
            }
            State::Finished { payload, .. } => payload.clone(),
        };
        let task = self.wire(id, e);
        Ok(DetailedTask::new(task, payload))
    }

    /// `tasks/cancel`: cancels the run (its process tree is killed as a cancelled call's is); the
    /// task reads `cancelled` once the run has stopped. A finished task stays as it finished.
    pub(crate) fn cancel(&self, owner: Option<&str>, id: &str) -> Result<(), McpError> {
        let mut store = self.lock();
        let e = store.visible(owner, id)?;
        e.seen = Instant::now();
        if let State::Working { cancel, .. } = &e.state {
            cancel.cancel();
            e.status_message = Some("cancelling".into());
            e.updated_at = now_text();
        }
        Ok(())
    }

    /// Cancels every running task (the end of the server); how many were running.
    pub(crate) fn cancel_all(&self) -> usize {
        let mut store = self.lock();
        let mut n = 0;
        for e in store.entries.values_mut() {
            if let State::Working { cancel, .. } = &e.state {
                cancel.cancel();
                e.status_message = Some("cancelling".into());
                n += 1;
            }
        }
        n
    }

    /// `tasks/update`: the answer to the task's pending question, when `responses` holds its
    /// key; unknown and already answered keys are ignored, as the extension asks.
    pub(crate) fn update(
        &self,
        owner: Option<&str>,
        id: &str,
        mut responses: std::collections::BTreeMap<String, Value>,
    ) -> Result<(), McpError> {
        let mut store = self.lock();
        let e = store.visible(owner, id)?;
        e.seen = Instant::now();
        if let State::Working { asking, .. } = &mut e.state {
            if let Some(answer) = asking.as_ref().and_then(|p| responses.remove(&p.key)) {
                let pending = asking.take().expect("checked above");
                let _ = pending.answer.send(answer);
                e.updated_at = now_text();
            }
        }
        Ok(())
    }

    /// Forgets finished tasks past their retention and expires running ones nobody asked about.
    pub(crate) fn sweep(&self) {
        let retention = self.limits.retention;
        let mut store = self.lock();
        store.entries.retain(|_, e| {
            let idle = e.seen.elapsed() >= retention;
            match &e.state {
                State::Finished { at, .. } => at.elapsed() < retention || !idle,
                State::Working { cancel, .. } => {
                    if idle {
                        cancel.cancel();
                    }
                    !idle
                }
            }
        });
    }

    /// Whether nothing is held (the tests look).
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// The wire form of `e`: its TTL is the time from its creation until it may be forgotten,
    /// which moves on each time the client asks.
    fn wire(&self, id: &str, e: &Entry) -> Task {
        let (status, ends) = match &e.state {
            State::Working {
                asking: Some(_), ..
            } => (TaskStatus::InputRequired, e.seen),
            State::Working { .. } => (TaskStatus::Working, e.seen),
            State::Finished { payload, at } => (payload.status(), (*at).max(e.seen)),
        };
        let ttl = (ends + self.limits.retention).saturating_duration_since(e.created);
        let mut task = Task::new(id, status, &e.created_at, &e.updated_at)
            .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.status_message = e.status_message.clone();
        task
    }
}

/// `e` as the job tools show it; `result`: with a finished one's payload.
fn view(id: &str, e: &Entry, result: bool) -> JobView {
    let (status, payload) = match &e.state {
        State::Working {
            asking: Some(_), ..
        } => (TaskStatus::InputRequired, None),
        State::Working { .. } => (TaskStatus::Working, None),
        State::Finished { payload, .. } => (payload.status(), result.then(|| payload.clone())),
    };
    JobView {
        id: id.to_string(),
        tool: e.job.as_ref().map(|j| j.tool.clone()),
        status,
        elapsed_s: e.created.elapsed().as_secs_f64(),
        message: e.status_message.clone(),
        payload,
    }
}

impl Store {
    /// The entry `id` as `owner` may see it.
    fn visible(&mut self, owner: Option<&str>, id: &str) -> Result<&mut Entry, McpError> {
        match self.entries.get_mut(id) {
            Some(e) if e.owner.as_deref() == owner => Ok(e),
            _ => Err(unknown(id)),
        }
    }

    /// Makes room for one more entry under `max`, evicting the oldest finished ones; false when
    /// every entry is still running.
    fn make_room(&mut self, max: usize) -> bool {
        while self.entries.len() >= max.max(1) {
            let oldest = self
                .entries
                .iter()
                .filter_map(|(id, e)| match e.state {
                    State::Finished { at, .. } => Some((at, id.clone())),
                    State::Working { .. } => None,
                })
                .min();
            match oldest {
                Some((_, id)) => {
                    self.entries.remove(&id);
                }
                None => return false,
            }
        }
        true
    }
}

/// A JSON-RPC internal error object.
pub(crate) fn internal_error(message: &str) -> JsonObject {
    let mut error = JsonObject::new();
    error.insert("code".into(), (-32603).into());
    error.insert(
        "message".into(),
        format!("the call failed inside the server: {message}").into(),
    );
    error
}

#[cfg(test)]
mod tests;
