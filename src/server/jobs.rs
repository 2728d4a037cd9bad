//! The `jobs` tool set, run where the jobs are held: a job is a task of the server's task store
//! (one record, one truth: `tasks/get` reads a job, `gemini_wait` a task), started by
//! `gemini_start` instead of the tasks extension, so that a client of any protocol version can
//! start a long run, go on, and collect it.

use std::collections::BTreeSet;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, TaskPayload, TaskStatus};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Map, Value};

use super::{owner, run_as_task, GeminiServer};
use crate::config::settings;
use crate::error::{ErrorKind, Failure};
use crate::render::Render;
use crate::tasks::{JobLabel, JobView, Refused, Started};
use crate::tools::args::given;
use crate::tools::jobs::{
    CallKey, JobCall, StartArgs, WaitArgs, DEFAULT_WAIT_S, MAX_WAIT_JOBS, MAX_WAIT_S,
};
use crate::tools::prompt::GEMINI_PROMPT;
use crate::tools::Decl;

/// Longest accepted `idempotency_key`, in bytes.
const MAX_KEY_BYTES: usize = 256;

impl GeminiServer {
    /// Runs one call of the job tools.
    pub(super) async fn job(
        &self,
        call: &crate::tools::Call,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let render = self.job_render();
        let owner = owner(context);
        let done = match call.job() {
            Some(JobCall::Start(a)) => self.start_job(a.clone(), context, owner),
            Some(JobCall::Wait(a)) => self.wait_jobs(a.clone(), context, owner.as_deref()).await,
            Some(JobCall::Cancel(a)) => self.cancel_job(&a.job_id, owner.as_deref()).await,
            Some(JobCall::Jobs) => Ok(self.list_jobs(owner.as_deref())),
            None => Err(Failure::new(ErrorKind::Unknown, "not a job tool's call")),
        };
        done.unwrap_or_else(|f| render.failure(&f))
    }

    pub(super) fn job_render(&self) -> Render<'_> {
        Render {
            answers: &self.inner.answers,
            budget: self.inner.config.result_budget,
            structured: true,
            debug: false,
        }
    }

    /// `gemini_start`: the prompt call as a task, answered at once with its id; a key already
    /// held attaches to its job. The call is decoded here, as a direct call is at the door: a
    /// call its tool refuses starts no job.
    fn start_job(
        &self,
        a: StartArgs,
        context: &RequestContext<RoleServer>,
        owner: Option<String>,
    ) -> Result<CallToolResult, Failure> {
        let tool = given(a.tool).unwrap_or_else(|| GEMINI_PROMPT.to_string());
        let runnable = crate::tools::runnable(&self.inner.config);
        let decl = crate::tools::find(&tool, &self.inner.config)
            .filter(|d| d.runs_long)
            .ok_or_else(|| {
                Failure::invalid_input(format!(
                    "`tool` must be one of {}, got {tool:?}",
                    runnable.join(", ")
                ))
            })?;
        let call = crate::tools::decode(decl, Some(&a.arguments), &self.inner.config.policy)?;
        let key = given(a.idempotency_key);
        let started = self.spawn_job(call, a.arguments, key, context, owner);
        let (id, attached) = match started.map_err(|r| self.refused(r))? {
            Started::New(task) => (task.task_id, false),
            Started::Attached(id) => (id, true),
        };
        let text = if attached {
            format!("Attached to job {id} (started earlier with this idempotency_key; not run again). Wait for it: gemini_wait job_ids=[\"{id}\"]")
        } else {
            format!("Started job {id} ({tool}). Wait for it: gemini_wait job_ids=[\"{id}\"]")
        };
        let sc = json!({"job_id": id, "tool": tool, "state": "working", "attached": attached});
        Ok(self.job_render().result(text, sc, false))
    }

    /// A prompt call with a key: run as the job of that key (or attached to the one held under
    /// it, which a `gemini_start` may have made), and waited on to its end, its progress messages
    /// passed on. With an `idempotency_key`, the request's cancellation ends the wait, not the run:
    /// the same call made again attaches to it, and gets its result once, with no second run.
    /// With the client's own id of the call, the cancellation ends the run too; and where that
    /// call cannot be held (no task store, the store full, an id too long) it runs as a plain
    /// call.
    pub(super) async fn keyed_call(
        &self,
        call: crate::tools::Call,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        key: CallKey,
        env: super::CallEnv,
    ) -> CallToolResult {
        let tool = call.tool;
        let fail = |f: &Failure| self.failure_for(tool, f);
        let mut arguments = request.arguments.clone().unwrap_or_default();
        arguments.remove("idempotency_key");
        let owner = owner(context);
        let text = key.text().to_string();
        let started = self.spawn_job(call.clone(), arguments, Some(text), context, owner.clone());
        let id = match (started, &key) {
            (Ok(Started::New(task)), _) => task.task_id,
            (Ok(Started::Attached(id)), _) => id,
            (Err(Refusal::Store(Refused::KeyTaken(id))), CallKey::Client(_)) => {
                return fail(&Failure::invalid_input(format!(
                    "the client sent this call under the id of an earlier call with other arguments (job {id}; the id is in the request's _meta), so it was not run: made again, the call goes under a new id"
                )))
            }
            (Err(_), CallKey::Client(_)) => return self.call(call, env).await,
            (Err(r), CallKey::Given(_)) => return fail(&self.refused(r)),
        };
        let ends_run = matches!(key, CallKey::Client(_));
        match self.await_job(owner.as_deref(), &id, context).await {
            Ok(payload) => self.keyed_result(payload, tool),
            Err(None) if ends_run => {
                let _ = self.inner.tasks.cancel(owner.as_deref(), &id);
                fail(&Failure::cancelled("the call was cancelled"))
            }
            Err(None) => fail(&Failure::cancelled(
                "the wait was cancelled; the run goes on: the same call with the same idempotency_key attaches to it",
            )),
            Err(Some(f)) => fail(&f),
        }
    }

    /// Waits for job `id` to finish and returns its payload, passing its progress messages on to
    /// the request's progress token; `Err(None)` when the request is cancelled first.
    async fn await_job(
        &self,
        owner: Option<&str>,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<TaskPayload, Option<Failure>> {
        let progress = context.meta.get_progress_token();
        let mut tick = tokio::time::interval(Duration::from_millis(crate::tasks::POLL_INTERVAL_MS));
        let (mut said, mut n) = (None::<String>, 0u32);
        loop {
            let finished = self.inner.tasks.next_finish();
            let view = self.job_view(owner, id).map_err(Some)?;
            if let Some(payload) = view.payload {
                return Ok(payload);
            }
            if let (Some(token), Some(message)) = (&progress, view.message) {
                if said.as_ref() != Some(&message) {
                    n += 1;
                    let param =
                        rmcp::model::ProgressNotificationParam::new(token.clone(), f64::from(n))
                            .with_message(message.clone());
                    let _ = context.peer.notify_progress(param).await;
                    said = Some(message);
                }
            }
            tokio::select! {
                _ = finished => {}
                _ = tick.tick() => {}
                _ = context.ct.cancelled() => return Err(None),
            }
        }
    }

    /// A keyed call's result from its finished job: the call's own result.
    fn keyed_result(&self, payload: TaskPayload, tool: &Decl) -> CallToolResult {
        let failed = |f: Failure| self.failure_for(tool, &f);
        match payload {
            TaskPayload::Completed { result } => serde_json::from_value(Value::Object(result))
                .unwrap_or_else(|e| failed(Failure::new(ErrorKind::Unknown, format!("the job's result could not be read: {e}")))),
            TaskPayload::Failed { error } => failed(Failure::new(
                ErrorKind::Unknown,
                error.get("message").and_then(Value::as_str).unwrap_or("the run failed inside the server").to_string(),
            )),
            _ => failed(Failure::cancelled(
                "the run of this idempotency_key was cancelled (gemini_cancel, or it expired unasked)",
            )),
        }
    }

    /// Starts `call` as a job of `owner` — under `key`, when given: then a job held under it for
    /// the same tool and `arguments` (the call's as given) is attached to instead.
    fn spawn_job(
        &self,
        call: crate::tools::Call,
        arguments: Map<String, Value>,
        key: Option<String>,
        context: &RequestContext<RoleServer>,
        owner: Option<String>,
    ) -> Result<Started, Refusal> {
        if !self.inner.tasks.enabled() {
            return Err(Refusal::Off);
        }
        if key.as_ref().is_some_and(|k| k.len() > MAX_KEY_BYTES) {
            return Err(Refusal::LongKey);
        }
        let name = call.tool.name;
        let label = JobLabel {
            tool: name.to_string(),
            key: key.map(|k| (k, fingerprint(name, &arguments))),
        };
        let server = self.clone();
        let parts = (context.protocol_version(), context.peer.clone());
        let asker = self.elicit_asker(context);
        self.inner
            .tasks
            .start_job(owner, Some(label), move |handle| {
                run_as_task(server, call, parts, move |_| asker, handle)
            })
            .map_err(Refusal::Store)
    }

    /// Why a start made nothing, as the failure the model reads.
    fn refused(&self, refused: Refusal) -> Failure {
        match refused {
            Refusal::Off => Failure::new(
                ErrorKind::ConfigError,
                format!("jobs, and calls with an idempotency_key, are held in the server's task store, which {} turns off", settings::TASKS.name),
            ),
            Refusal::LongKey => Failure::invalid_input(format!(
                "idempotency_key is longer than {MAX_KEY_BYTES} bytes"
            )),
            Refusal::Store(Refused::Full) => Failure::new(
                ErrorKind::Error,
                format!(
                    "the server holds {} jobs and tasks ({}), all still running: wait for one or cancel one, then start again",
                    self.inner.tasks.max_tasks(),
                    settings::MAX_TASKS.name
                ),
            ),
            Refusal::Store(Refused::KeyTaken(id)) => Failure::invalid_input(format!(
                "idempotency_key is already the key of job {id}, started with other arguments: use another key, or the same arguments to attach to it"
            )),
        }
    }

    /// `gemini_wait`: the jobs' states once one has finished, or the time is up.
    async fn wait_jobs(
        &self,
        a: WaitArgs,
        context: &RequestContext<RoleServer>,
        owner: Option<&str>,
    ) -> Result<CallToolResult, Failure> {
        let ids: Vec<String> = a
            .job_ids
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() || ids.len() > MAX_WAIT_JOBS {
            return Err(Failure::invalid_input(format!(
                "job_ids must name 1 to {MAX_WAIT_JOBS} jobs"
            )));
        }
        let wait = Duration::from_secs(a.timeout_s.unwrap_or(DEFAULT_WAIT_S).min(MAX_WAIT_S));
        let until = tokio::time::Instant::now() + wait;
        let views = loop {
            // Made before the look: a job finishing between the look and the wait wakes it.
            let finished = self.inner.tasks.next_finish();
            let views = ids
                .iter()
                .map(|id| self.job_view(owner, id))
                .collect::<Result<Vec<_>, _>>()?;
            if views.iter().any(|v| v.payload.is_some()) || tokio::time::Instant::now() >= until {
                break views;
            }
            tokio::select! {
                _ = finished => {}
                _ = tokio::time::sleep_until(until) => {}
                _ = context.ct.cancelled() => {
                    return Err(Failure::cancelled("the wait was cancelled; its jobs go on"));
                }
            }
        };
        Ok(self.render_jobs(views))
    }

    /// `gemini_cancel`: the job's run cancelled, and its end awaited (its processes gone).
    async fn cancel_job(&self, id: &str, owner: Option<&str>) -> Result<CallToolResult, Failure> {
        self.inner
            .tasks
            .cancel(owner, id)
            .map_err(|e| unknown_job(id, &e.message))?;
        // A run stops within the kill grace of its cancellation; a little more for its end.
        let until =
            tokio::time::Instant::now() + self.inner.config.kill_grace + Duration::from_secs(5);
        let view = loop {
            let finished = self.inner.tasks.next_finish();
            let view = self.job_view(owner, id)?;
            if view.payload.is_some() || tokio::time::Instant::now() >= until {
                break view;
            }
            tokio::select! {
                _ = finished => {}
                _ = tokio::time::sleep_until(until) => {}
            }
        };
        Ok(self.render_jobs(vec![view]))
    }

    /// `gemini_jobs`: the client's jobs, without their results.
    fn list_jobs(&self, owner: Option<&str>) -> CallToolResult {
        let views = self.inner.tasks.list(owner);
        let lines: Vec<String> = views.iter().map(summary).collect();
        let text = if lines.is_empty() {
            "No jobs.".to_string()
        } else {
            lines.join("\n")
        };
        let jobs: Vec<Value> = views.iter().map(|v| Value::Object(fields(v))).collect();
        self.job_render()
            .result(text, json!({ "jobs": jobs }), false)
    }

    fn job_view(&self, owner: Option<&str>, id: &str) -> Result<JobView, Failure> {
        self.inner
            .tasks
            .view(owner, id)
            .map_err(|e| unknown_job(id, &e.message))
    }

    /// The jobs' states, and each finished one's result as the prompt tool returned it, as many
    /// as one result holds (the others are named: a wait on each alone returns it).
    fn render_jobs(&self, views: Vec<JobView>) -> CallToolResult {
        let budget = self.inner.config.result_budget;
        let mut used = 0usize;
        let mut text: Vec<String> = Vec::new();
        let mut blocks: Vec<ContentBlock> = Vec::new();
        let mut jobs = Vec::new();
        for v in &views {
            let mut entry = fields(v);
            let mut line = summary(v);
            if let Some(result) = v.payload.as_ref().and_then(result_of) {
                let size = result.to_string().len();
                if used + size <= budget / 2 {
                    used += size;
                    for block in result["content"].as_array().into_iter().flatten() {
                        if let Ok(b) = serde_json::from_value::<ContentBlock>(block.clone()) {
                            blocks.push(b);
                        }
                    }
                    entry.insert("result".into(), nested(result));
                } else {
                    line.push_str(&format!(
                        " — its result is held: gemini_wait job_ids=[\"{}\"] returns it",
                        v.id
                    ));
                }
            }
            text.push(line);
            jobs.push(Value::Object(entry));
        }
        let mut result = self
            .job_render()
            .result(text.join("\n"), json!({ "jobs": jobs }), false);
        result.content.extend(blocks);
        result
    }
}

/// Why no job was started.
enum Refusal {
    /// The task store is turned off.
    Off,
    /// The key is longer than [`MAX_KEY_BYTES`].
    LongKey,
    /// The store refused it.
    Store(Refused),
}

/// What an idempotency key stands for: the tool and its arguments.
fn fingerprint(tool: &str, arguments: &Map<String, Value>) -> Value {
    json!({"tool": tool, "arguments": arguments})
}

/// An id the store does not hold (for this client).
fn unknown_job(id: &str, why: &str) -> Failure {
    Failure::invalid_input(format!(
        "no job {id}: {why}; a job is kept for {} (10 min by default) after it finished or was last looked at",
        settings::TASK_RETENTION_MS.name
    ))
}

/// A job's state by the job tools' names.
fn state(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        // Working, and whatever a later protocol adds.
        _ => "working",
    }
}

/// A job's line of text: its id, tool, state, time and last message.
fn summary(v: &JobView) -> String {
    let mut line = format!(
        "job {} ({}): {} after {:.1} s",
        v.id,
        v.tool.as_deref().unwrap_or("task"),
        state(v.status),
        v.elapsed_s
    );
    if let Some(m) = v.message.as_deref().filter(|_| v.payload.is_none()) {
        line.push_str(&format!(" — {m}"));
    }
    line
}

/// A job's fields in `structuredContent`.
fn fields(v: &JobView) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("job_id".into(), json!(v.id));
    if let Some(tool) = &v.tool {
        m.insert("tool".into(), json!(tool));
    }
    m.insert("state".into(), json!(state(v.status)));
    m.insert(
        "elapsed_s".into(),
        json!((v.elapsed_s * 10.0).round() / 10.0),
    );
    if let Some(message) = &v.message {
        m.insert("progress".into(), json!(message));
    }
    m
}

/// A finished job's result as `structuredContent` holds it: `isError` and the call's own
/// `structuredContent` — its content blocks follow the wait's text instead, so a model that reads
/// one or the other reads the answer once; `content` only when the call had no
/// `structuredContent`.
fn nested(result: Value) -> Value {
    let Value::Object(mut all) = result else {
        return result;
    };
    let mut kept = Map::new();
    kept.insert(
        "isError".into(),
        all.remove("isError").unwrap_or(json!(false)),
    );
    match all.remove("structuredContent") {
        Some(sc) => kept.insert("structuredContent".into(), sc),
        None => kept.insert("content".into(), all.remove("content").unwrap_or(json!([]))),
    };
    Value::Object(kept)
}

/// A finished job's result: the call's result, or its JSON-RPC error as a failed result; none
/// for a cancelled job.
fn result_of(payload: &TaskPayload) -> Option<Value> {
    match payload {
        TaskPayload::Completed { result } => Some(Value::Object(result.clone())),
        TaskPayload::Failed { error } => Some(json!({
            "isError": true,
            "content": [{"type": "text", "text": error.get("message").and_then(Value::as_str).unwrap_or("failed")}],
        })),
        _ => None,
    }
}
