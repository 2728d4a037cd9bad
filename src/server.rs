//! The MCP server: rmcp's `ServerHandler` for the three tools and the answers kept as resources.
//! Each call is decoded, queued behind the concurrency bound, run as a supervised Gemini CLI
//! process tree, classified, and rendered by `error` (failures) or here (successes).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, RwLock, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::gemini::command;
use crate::gemini::environment;
use crate::gemini::events::{self, Hint, Transcript};
use crate::gemini::outcome::{self, CancelCause, Success};
use crate::gemini::process::{self, RunSpec, SpawnError};
use crate::gemini::resolve;
use crate::gemini::session;
use crate::policy;
use crate::structured::{self, PreparedSchema};
use crate::tools::{self, Call, ToolKind};
use crate::toolsets::{self, ExtraTool};
use crate::transport::INVALID_ARGUMENTS_META;

/// Most answers kept readable as resources; the oldest goes first.
pub const MAX_STORED_ANSWERS: usize = 32;
/// Most bytes of answers kept readable as resources; the oldest go first.
pub const MAX_STORED_BYTES: usize = 64 * 1024 * 1024;
/// URI prefix of stored answers.
pub const ANSWER_URI_PREFIX: &str = "geminicli-mcp://answers/";
/// Shortest interval between two content progress notifications (heartbeats aside).
const PROGRESS_MIN_INTERVAL: Duration = Duration::from_millis(1000);
/// Characters of the latest answer text quoted in a progress message.
const PREVIEW_CHARS: usize = 60;

/// The server. Cheap to clone: everything is shared.
#[derive(Clone)]
pub struct GeminiServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    cwd: PathBuf,
    slots: Arc<Semaphore>,
    shutdown: CancellationToken,
    active: watch::Sender<usize>,
    answers: Mutex<AnswerStore>,
    next_id: AtomicU64,
    /// One lock per workspace (canonical path): runs share it, while a resumed session, a
    /// session listing or a deletion holds it alone, so no CLI starts in that project while one
    /// of those runs (a start's clean-up is what loses sessions, reference §11.1).
    workspaces: Mutex<HashMap<PathBuf, Arc<RwLock<()>>>>,
    /// One start gate per workspace: a new session's file holds no message until the CLI has
    /// recorded the prompt, and any other CLI start in that project deletes it meanwhile (its
    /// start-up clean-up; observed on 0.61, `fake-gemini/differential/concurrent-sessions.py`).
    /// A new run holds the gate from before its spawn until its prompt is recorded. Shared with
    /// the ACP pool: `gemini --acp` runs the same clean-up when it starts.
    starts: Arc<session::StartGates>,
    /// The warm ACP agents of the `acp` tool set (issue 6); idle unless it is enabled.
    acp: Arc<crate::acp::pool::Pool>,
}

/// Answers too long to return inline, kept for `resources/read`.
#[derive(Default)]
struct AnswerStore {
    entries: VecDeque<(String, Arc<String>)>,
    bytes: usize,
}

impl AnswerStore {
    fn insert(&mut self, uri: String, text: Arc<String>) {
        self.bytes += text.len();
        self.entries.push_back((uri, text));
        while self.entries.len() > MAX_STORED_ANSWERS
            || (self.bytes > MAX_STORED_BYTES && self.entries.len() > 1)
        {
            if let Some((_, old)) = self.entries.pop_front() {
                self.bytes -= old.len();
            }
        }
    }

    fn get(&self, uri: &str) -> Option<Arc<String>> {
        self.entries
            .iter()
            .find(|(u, _)| u == uri)
            .map(|(_, t)| t.clone())
    }
}

/// Counts calls in progress while alive.
struct ActiveGuard(watch::Sender<usize>);

impl ActiveGuard {
    fn new(active: &watch::Sender<usize>) -> Self {
        active.send_modify(|n| *n += 1);
        ActiveGuard(active.clone())
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl GeminiServer {
    /// A server running the CLI in `cwd`. Cancelling `shutdown` kills every run.
    pub fn new(config: Config, cwd: PathBuf, shutdown: CancellationToken) -> Self {
        let slots = Arc::new(Semaphore::new(config.max_concurrency.max(1)));
        let starts = Arc::new(session::StartGates::default());
        let acp = Arc::new(crate::acp::pool::Pool::new(
            config.clone(),
            shutdown.clone(),
            starts.clone(),
        ));
        GeminiServer {
            inner: Arc::new(Inner {
                config,
                cwd,
                slots,
                shutdown,
                active: watch::Sender::new(0),
                answers: Mutex::default(),
                next_id: AtomicU64::new(1),
                workspaces: Mutex::default(),
                starts,
                acp,
            }),
        }
    }

    /// The token whose cancellation kills every run.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// Waits until no call is in progress.
    pub async fn idle(&self) {
        let mut rx = self.inner.active.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Runs one decoded call to its result. `ct` is the request's cancellation.
    pub async fn run_call(
        &self,
        call: Call,
        ct: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> CallToolResult {
        let _active = ActiveGuard::new(&self.inner.active);
        let started = Instant::now();
        let quota = self.inner.config.policy.quota.clone();
        let asked_model = call.request.model.clone();
        let mut call = call;
        let mut retried_after: Option<u64> = None;
        let mut fallbacks: Vec<String> = Vec::new();
        let mut not_retried: Option<&'static str> = None;
        let (mut report, outcome) = loop {
            let mut report = Report::default();
            let outcome = self
                .execute(&call, ct.clone(), progress.clone(), &mut report)
                .await;
            let Err(f) = &outcome else {
                break (report, outcome);
            };
            if ct.is_cancelled() || self.inner.shutdown.is_cancelled() {
                break (report, outcome);
            }
            let guard = policy::may_repeat(report.tools_ran, report.approval);
            if f.kind == ErrorKind::RateLimited && quota.rate_limit_retry && retried_after.is_none()
            {
                let Some(delay) = f.retry_delay_ms else {
                    break (report, outcome);
                };
                let total = self
                    .inner
                    .config
                    .policy
                    .deadlines
                    .with(call.options.deadlines)
                    .total;
                let left = total.map(|t| t.saturating_sub(started.elapsed()));
                let wait = Duration::from_millis(delay);
                if !guard {
                    not_retried = Some("not retried: tools ran");
                } else if wait > quota.max_wait {
                    not_retried = Some("not retried: the API's delay is longer than GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS");
                } else if left.is_some_and(|l| wait >= l) {
                    not_retried = Some("not retried: the wait would pass the total deadline");
                } else {
                    if let Some(p) = &progress {
                        p.say(format!(
                            "rate limited: waiting {delay} ms, then retrying once"
                        ))
                        .await;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = ct.cancelled() => break (report, outcome),
                        _ = self.inner.shutdown.cancelled() => break (report, outcome),
                    }
                    retried_after = Some(delay);
                    if let Some(t) = left {
                        call.options.deadlines.total =
                            Some(t.saturating_sub(wait).max(Duration::from_millis(1)));
                    }
                    continue;
                }
                break (report, outcome);
            }
            if f.kind == ErrorKind::QuotaExhausted {
                let next = quota.fallback_models.get(fallbacks.len()).cloned();
                match (next, guard) {
                    (Some(model), true) => {
                        if let Some(p) = &progress {
                            p.say(format!("quota exhausted: falling back to model {model}"))
                                .await;
                        }
                        call.request.model = Some(model.clone());
                        fallbacks.push(model);
                        continue;
                    }
                    (Some(_), false) => not_retried = Some("no fallback: tools ran"),
                    (None, _) => {}
                }
            }
            break (report, outcome);
        };
        if retried_after.is_some() || !fallbacks.is_empty() {
            report.policy = Some(json!({
                "retriedAfterMs": retried_after,
                "requestedModel": asked_model,
                "fallbacks": fallbacks,
                "modelUsed": call.request.model,
            }));
        }
        let mut result = match outcome {
            Ok((success, json)) => {
                if let Some(path) = &report.save_path {
                    report.saved = Some(save_answer(path, &success.answer));
                }
                self.render_success(success, json)
            }
            Err(mut failure) => {
                let max = self.inner.config.max_result_chars;
                for text in [&mut failure.partial_response, &mut failure.raw_response]
                    .into_iter()
                    .flatten()
                {
                    let total = text.chars().count();
                    if total > max {
                        *text = cut_middle(text, max, total);
                    }
                }
                if failure.duration_ms == 0 && failure.kind != ErrorKind::InputValidation {
                    failure.duration_ms = started.elapsed().as_millis() as u64;
                }
                if let Some(why) = not_retried {
                    failure.message = format!("{} ({why})", failure.message);
                }
                if let Some(ms) = retried_after {
                    failure.message =
                        format!("{} (retried once after waiting {ms} ms)", failure.message);
                }
                if !fallbacks.is_empty() {
                    failure.message = format!(
                        "{} (after falling back to {})",
                        failure.message,
                        fallbacks.join(", ")
                    );
                }
                tracing::debug!(tool = call.tool.name(), kind = %failure.kind, exit = failure.exit_code, "call failed");
                if failure.kind == ErrorKind::CliTooOld {
                    // An operator problem, not a caller's: it goes to the log (and so to the
                    // client as a log notification) besides the result.
                    tracing::warn!(
                        "the Gemini CLI refused a flag the server passes: it is too old; upgrade it (npm install -g @google/gemini-cli@latest) and run `geminicli-mcp doctor`"
                    );
                }
                failure.into_call_tool_result()
            }
        };
        report.decorate(&call, &mut result);
        result
    }

    async fn execute(
        &self,
        call: &Call,
        ct: CancellationToken,
        progress: Option<ProgressSink>,
        report: &mut Report,
    ) -> Result<(Success, Option<Value>), Failure> {
        let config = &self.inner.config;
        let schema: Option<PreparedSchema> = match &call.schema {
            Some(schema) => Some(
                structured::Schema::prepare(schema)
                    .map_err(|e| Failure::invalid_input(e.to_string()))?,
            ),
            None => None,
        };
        // Workspace, include directories and approval mode: checked against the operator's
        // policy before anything runs.
        let approval = config
            .policy
            .approval(call.options.approval_mode, call.options.approval_argument)?;
        report.approval = Some(approval);
        let (cwd, include_directories, image_refs, save_path) =
            self.resolve_paths(&call.options).await?;
        let mut request = call.request.clone();
        request.approval_mode = Some(approval);
        request.include_directories = include_directories;
        request.image_refs = image_refs;
        request.sandbox = call.options.sandbox;
        request.allowed_mcp_server_names = call.options.allowed_mcp_server_names.clone();
        report.save_path = save_path;
        let invocation = command::build(&request, schema.as_ref(), config.slash_commands)?;
        // Resolved per call: a CLI installed (or PATH fixed) after start-up is found.
        let resolved = resolve_cli(config)?;
        let program = resolved.program;
        let mut args = resolved.prefix_args;
        args.extend(invocation.args);
        tracing::debug!(
            tool = call.tool.name(),
            prompt_bytes = call.request.prompt.len(),
            context_bytes = call.request.context.as_ref().map_or(0, String::len),
            stdin_bytes = invocation.stdin.len(),
            slash_escaped = invocation.slash_escaped,
            program = %program.display(),
            via = %resolved.via,
            args = ?args,
            "call"
        );

        // One token for the run: the client's cancellation or the server's shutdown.
        let (run_ct, _unlink) = self.run_token(ct);
        let cause = || {
            if self.inner.shutdown.is_cancelled() {
                CancelCause::Shutdown
            } else {
                CancelCause::Client
            }
        };
        // Cancelled while waiting for the workspace's lock or start gate.
        let waited_out = || match cause() {
            CancelCause::Client => Failure::new(
                ErrorKind::Cancelled,
                130,
                "the request was cancelled while waiting for its workspace",
            ),
            CancelCause::Shutdown => shutting_down(),
        };

        let queued_since = Instant::now();
        let state = Arc::new(Mutex::new(ProgressState {
            note: call.options.task_note.clone(),
            ..ProgressState::default()
        }));
        let reporter = progress.map(|sink| {
            let state = state.clone();
            let stop = run_ct.clone();
            let heartbeat = config.heartbeat;
            AbortOnDrop(tokio::spawn(sink.report(state, stop, heartbeat)))
        });

        // Session runs hold their workspace alone; every other run shares it. Taken before the
        // concurrency slot, so a call waiting for its workspace does not hold a slot.
        let _workspace = self
            .lock_workspace(&cwd, call.request.resume.is_some(), &run_ct)
            .await
            .ok_or_else(waited_out)?;

        // New runs start one at a time per workspace (see `Inner::starts`). Resumed runs already
        // hold the workspace alone against other runs, but ACP agents start through the gate
        // only: a resumed run holds it until its stub is removed (the stub exists from its start).
        let gate = self
            .lock_start(&cwd, &run_ct)
            .await
            .ok_or_else(waited_out)?;
        let (start_gate, _resume_gate) = match call.request.resume {
            Some(_) => (None, Some(gate)),
            None => (Some(gate), None),
        };

        // The concurrency bound; a queued call says so.
        let permit = match self.inner.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                {
                    let mut s = lock(&state);
                    s.queued = true;
                    s.dirty = true;
                    s.urgent = true;
                }
                tracing::debug!(tool = call.tool.name(), "queued");
                tokio::select! {
                    p = self.inner.slots.clone().acquire_owned() => p.map_err(|_| shutting_down())?,
                    _ = run_ct.cancelled() => {
                        let message = match cause() {
                            CancelCause::Client => "the request was cancelled while queued",
                            CancelCause::Shutdown => "the server is shutting down; the call was still queued",
                        };
                        return Err(Failure::new(ErrorKind::Cancelled, 130, message));
                    }
                }
            }
        };
        if run_ct.is_cancelled() {
            return Err(match cause() {
                CancelCause::Client => Failure::new(
                    ErrorKind::Cancelled,
                    130,
                    "the request was cancelled while queued",
                ),
                CancelCause::Shutdown => shutting_down(),
            });
        }
        {
            let mut s = lock(&state);
            s.queued = false;
            s.started = Some(Instant::now());
            s.dirty = true;
            s.urgent = true;
        }

        // `minimal`: the child starts from the kept variables only; the run's own come on top.
        let base_env = environment::base(
            config.env_policy,
            std::env::vars_os(),
            &config.env_pass,
            resolve::Platform::current(),
        );
        let env_clear = base_env.is_some();
        let mut env = base_env.unwrap_or_default();
        env.extend(invocation.env);
        let queued_for = queued_since.elapsed();
        let (spec_program, spec_args) = match call.options.debug {
            true => (program.clone(), args.clone()),
            false => (PathBuf::new(), Vec::new()),
        };
        let spec = RunSpec {
            program,
            args,
            env_clear,
            env,
            env_remove: Vec::new(),
            cwd: cwd.clone(),
            stdin: invocation.stdin,
            max_output_bytes: config.max_output_bytes,
            kill_grace: config.kill_grace,
            private_tmp: true,
        };
        // Streamed lines only feed progress; the transcript is parsed once at the end from the
        // kept stdout, which holds the same lines (the supervisor streams exactly what it keeps),
        // so a flood is held once, not twice.
        let (tx, mut rx) = mpsc::unbounded_channel::<(process::Stream, Vec<u8>)>();
        let watch_progress = {
            let state = state.clone();
            async move {
                while let Some((stream, line)) = rx.recv().await {
                    let hint = match stream {
                        process::Stream::Stdout => events::progress_hint(&line, PREVIEW_CHARS),
                        // The CLI retries failed API calls for minutes, saying so only on stderr.
                        process::Stream::Stderr => events::retry_hint(&line),
                    };
                    let mut s = lock(&state);
                    if s.session_id.is_none()
                        && stream == process::Stream::Stdout
                        && line.starts_with(b"{\"type\":\"init\"")
                    {
                        if let Some(events::Event::Init { session_id, .. }) =
                            events::parse_line(&line)
                        {
                            s.session_id = session_id;
                        }
                    }
                    if let Some(hint) = hint {
                        if matches!(hint, Hint::Text { .. } | Hint::Tool(_))
                            && s.first_content.is_none()
                        {
                            s.first_content = Some(Instant::now());
                            s.content_arrived.notify_one();
                        }
                        s.observe(hint);
                    }
                }
            }
        };
        // Opt-in deadlines kill the run through their own token, so the outcome can tell them
        // from a client's cancellation.
        let limits = config.policy.deadlines.with(call.options.deadlines);
        // Inactivity means no byte on either stream: a line printed slowly is activity too.
        let activity = process::Activity::new();
        let kill_ct = run_ct.child_token();
        let fired: Arc<Mutex<Option<&'static str>>> = Arc::default();
        let _deadlines = limits.any().then(|| {
            AbortOnDrop(tokio::spawn(watch_deadlines(
                state.clone(),
                activity.clone(),
                limits,
                kill_ct.clone(),
                fired.clone(),
            )))
        });
        let start_gate = start_gate.map(|gate| {
            AbortOnDrop(tokio::spawn(hold_start_gate(
                gate,
                state.clone(),
                cwd.clone(),
            )))
        });
        let (run, ()) = tokio::join!(
            process::run_observed(spec, kill_ct.clone(), Some(tx), Some(activity)),
            watch_progress
        );
        drop(start_gate);
        drop(permit);
        drop(reporter);
        let mut out = run.map_err(spawn_failure)?;
        tracing::debug!(
            tool = call.tool.name(),
            exit = ?out.status,
            killed = ?out.killed,
            duration_ms = out.duration.as_millis() as u64,
            stdout_bytes = out.stdout_total,
            stderr_bytes = out.stderr_total,
            "run finished"
        );
        if call.options.full_output {
            report.events = Some(events::all_events(&out.stdout));
        }
        if call.options.debug {
            report.debug = Some(json!({
                "program": spec_program.display().to_string(),
                "argv": spec_args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
                "cwd": cwd.display().to_string(),
                "exit": out.status.map(|t| t.code()),
                "killed": out.killed.map(|k| format!("{k:?}")),
                "queuedMs": queued_for.as_millis() as u64,
                "runMs": out.duration.as_millis() as u64,
                "stdoutBytes": out.stdout_total,
                "stderrBytes": out.stderr_total,
                "stderrTail": crate::error::tail_lossy(&out.stderr, crate::error::STDERR_TAIL_BYTES),
            }));
        }
        // The text is built inside the kept stdout's own buffer: a flood at the cap is held once
        // while it is parsed, not twice (raw bytes and their text side by side).
        let transcript = Transcript::from_stdout_owned(std::mem::take(&mut out.stdout));
        report.tools_ran = !transcript.tools.is_empty();
        if let Some(id) = call.request.resume.as_deref() {
            // Still under the workspace's exclusive lock: no other start can clean up first.
            remove_session_stubs(&cwd, id);
        }
        let fired = *lock(&fired);
        if let (Some(limit), false) = (fired, run_ct.is_cancelled()) {
            let ms = match limit {
                "first_content" => limits.first_content,
                "inactivity" => limits.inactivity,
                _ => limits.total,
            }
            .map_or(0, |d| d.as_millis() as u64);
            let what = match limit {
                "first_content" => "no content (assistant text or a tool event) came",
                "inactivity" => "the CLI printed nothing",
                _ => "the run took",
            };
            let mut f = Failure::new(
                ErrorKind::Timeout,
                TIMEOUT_EXIT_CODE,
                format!("the {limit} deadline passed: {what} for {ms} ms; the CLI's process tree was killed"),
            );
            f.stderr_tail = crate::error::tail_lossy(&out.stderr, crate::error::STDERR_TAIL_BYTES);
            f.partial_response = transcript.partial();
            f.session_id = transcript.session_id.clone();
            f.model = transcript.model.clone();
            f.stats = transcript.result.as_ref().and_then(|r| r.stats.clone());
            f.duration_ms = out.duration.as_millis() as u64;
            return Err(f);
        }
        let success = outcome::classify(&out, &transcript, cause())?;
        if let Some(asked) = call.request.resume.as_deref() {
            if !success
                .session_id
                .as_deref()
                .is_some_and(|id| id.eq_ignore_ascii_case(asked))
            {
                let mut f = Failure::new(
                    ErrorKind::SessionNotFound,
                    success.exit_code,
                    format!(
                        "asked to resume session {asked}, but the CLI answered in session {}",
                        success.session_id.as_deref().unwrap_or("(none)")
                    ),
                );
                f.partial_response = Some(success.answer);
                f.session_id = success.session_id;
                f.model = success.model;
                f.stats = success.stats;
                f.duration_ms = success.duration.as_millis() as u64;
                return Err(f);
            }
        }
        let Some(schema) = schema else {
            return Ok((success, None));
        };
        // Extraction and validation are CPU-bound on answers of up to the output cap: off the
        // async workers, so other calls' progress and cancellations are not held up.
        let (checked, success) = tokio::task::spawn_blocking(move || {
            let checked = structured::extract_and_validate(&schema, &success.answer);
            (checked, success)
        })
        .await
        .map_err(|e| {
            Failure::new(
                ErrorKind::Unknown,
                0,
                format!("validating the structured answer failed: {e}"),
            )
        })?;
        match checked {
            Ok(ok) => {
                let mut success = success;
                success.answer = ok.canonical;
                Ok((success, Some(ok.value)))
            }
            Err(err) => {
                let mut f = Failure::new(
                    ErrorKind::SchemaMismatch,
                    success.exit_code,
                    err.reason.summary(),
                );
                f.session_id = success.session_id;
                f.model = success.model;
                f.stats = success.stats;
                f.duration_ms = success.duration.as_millis() as u64;
                f.validation_errors = Some(err.errors);
                f.raw_response = Some(err.raw);
                Err(f)
            }
        }
    }

    /// Runs one of the opt-in tools (`GEMINICLI_MCP_TOOLSETS`).
    async fn call_extra(
        &self,
        tool: ExtraTool,
        args: Option<&rmcp::model::JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, Failure> {
        if tool == ExtraTool::ListModels {
            return Ok(toolsets::list_models());
        }
        let empty = rmcp::model::JsonObject::new();
        let args = args.unwrap_or(&empty);
        let text = |name: &str| match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Failure::invalid_input(format!(
                "argument `{name}` must be a string"
            ))),
        };
        let options = tools::CallOptions {
            workspace: text("workspace")?,
            client: Some(context.peer.clone()),
            ..Default::default()
        };
        let (cwd, ..) = self.resolve_paths(&options).await?;
        let flag = match tool {
            ExtraTool::DeleteSession => {
                let id = text("session_id")?.ok_or_else(|| {
                    Failure::invalid_input("missing required argument `session_id` (a string)")
                })?;
                session::validate_session_id(&id)?;
                Some(id)
            }
            _ => None,
        };
        let arg = match &flag {
            Some(id) => format!("--delete-session={id}"),
            None => "--list-sessions".to_string(),
        };
        let (run_ct, _unlink) = self.run_token(context.ct.clone());
        // Listing writes titles into session files and deletion removes them: both hold the
        // workspace alone, like a resumed run.
        let cancelled = || Failure::new(ErrorKind::Cancelled, 130, "the request was cancelled");
        let _workspace = self
            .lock_workspace(&cwd, true, &run_ct)
            .await
            .ok_or_else(cancelled)?;
        // A listing or a deletion starts a CLI too, whose start-up clean-up would delete a new
        // ACP session that has not recorded its first prompt (the ACP pool holds the gate then).
        let _gate = self.lock_start(&cwd, &run_ct).await.ok_or_else(cancelled)?;
        let _permit = tokio::select! {
            p = self.inner.slots.clone().acquire_owned() => p.map_err(|_| shutting_down())?,
            _ = run_ct.cancelled() => return Err(cancelled()),
        };
        let out = self.run_plain(&cwd, vec![arg.into()], run_ct).await?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let exit = out.status.map_or(1, |t| t.code());
        if out.killed.is_some() {
            return Err(Failure::new(
                ErrorKind::Cancelled,
                130,
                "the CLI was stopped before it finished",
            ));
        }
        match flag {
            Some(id) => toolsets::deleted(&cwd, &id, &stdout, &stderr, exit),
            None if exit == 0 => Ok(toolsets::listed(&cwd, &stdout)),
            None => {
                let mut f = Failure::new(
                    ErrorKind::from_exit_code(exit),
                    exit,
                    stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("gemini --list-sessions failed")
                        .trim()
                        .to_string(),
                );
                f.stderr_tail =
                    crate::error::tail_lossy(&out.stderr, crate::error::STDERR_TAIL_BYTES);
                Err(f)
            }
        }
    }

    /// Runs the CLI with `args` (no prompt) in `cwd`, with the same program, environment and
    /// supervision as a prompt run.
    async fn run_plain(
        &self,
        cwd: &std::path::Path,
        extra: Vec<std::ffi::OsString>,
        ct: CancellationToken,
    ) -> Result<process::RunOutput, Failure> {
        let config = &self.inner.config;
        let resolved = resolve_cli(config)?;
        let mut args = resolved.prefix_args;
        args.extend(extra);
        let (env_clear, env) = environment::for_child(config.env_policy, &config.env_pass);
        let spec = RunSpec {
            program: resolved.program,
            args,
            env_clear,
            env,
            env_remove: Vec::new(),
            cwd: cwd.to_path_buf(),
            stdin: Vec::new(),
            max_output_bytes: config.max_output_bytes,
            kill_grace: config.kill_grace,
            private_tmp: true,
        };
        process::run(spec, ct, None).await.map_err(spawn_failure)
    }

    /// The run's working directory, include directories, image `@` references and `save_file`
    /// path, canonical and checked against the allowed roots (and the client's MCP roots, asked
    /// for once, and only when a path was given).
    async fn resolve_paths(
        &self,
        options: &tools::CallOptions,
    ) -> Result<(PathBuf, Vec<PathBuf>, Vec<String>, Option<PathBuf>), Failure> {
        if options.workspace.is_none()
            && options.include_directories.is_empty()
            && options.image_paths.is_empty()
            && options.save_file.is_none()
        {
            return Ok((self.inner.cwd.clone(), Vec::new(), Vec::new(), None));
        }
        let roots = self.inner.config.policy.roots(&self.inner.cwd);
        let client_roots = client_roots(options.client.as_ref()).await?;
        let client_roots = client_roots.as_deref();
        let cwd = match &options.workspace {
            Some(w) => policy::check_path(
                "workspace",
                w,
                &self.inner.cwd,
                policy::Expect::Dir,
                &roots,
                client_roots,
            )?,
            None => self.inner.cwd.clone(),
        };
        let include = options
            .include_directories
            .iter()
            .map(|d| {
                policy::check_path(
                    "include_directories",
                    d,
                    &cwd,
                    policy::Expect::Dir,
                    &roots,
                    client_roots,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        // The CLI inlines an `@` reference only when the file exists inside its workspace and
        // drops it silently otherwise: every image is checked here instead.
        let mut images = Vec::new();
        for raw in &options.image_paths {
            let path = policy::check_path(
                "image_paths",
                raw,
                &cwd,
                policy::Expect::File,
                &roots,
                client_roots,
            )?;
            if !policy::is_supported_image(&path) {
                return Err(Failure::invalid_input(format!(
                    "image_paths {raw:?}: not an image type the Gemini CLI attaches ({})",
                    policy::IMAGE_EXTENSIONS.join(", ")
                )));
            }
            let reference = if let Ok(rel) = path.strip_prefix(&cwd) {
                rel.to_string_lossy().into_owned()
            } else if include.iter().any(|d| path.starts_with(d)) {
                path.to_string_lossy().into_owned()
            } else {
                return Err(Failure::invalid_input(format!(
                    "image_paths {raw:?}: resolves to {}, outside the workspace and its include directories, where the Gemini CLI would drop it silently",
                    path.display()
                )));
            };
            images.push(command::at_reference(&reference));
        }
        let save = options
            .save_file
            .as_ref()
            .map(|raw| policy::check_save_path(raw, &cwd, &roots, client_roots))
            .transpose()?;
        Ok((cwd, include, images, save))
    }

    /// A token that fires on the client's cancellation `ct` or on the server's shutdown; the
    /// guard ends the task that links them.
    fn run_token(&self, ct: CancellationToken) -> (CancellationToken, AbortOnDrop<()>) {
        let run_ct = self.inner.shutdown.child_token();
        let link = {
            let run_ct = run_ct.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = ct.cancelled() => run_ct.cancel(),
                    _ = run_ct.cancelled() => {}
                }
            })
        };
        (run_ct, AbortOnDrop(link))
    }

    /// Takes the start gate of `workspace` (see `Inner::starts`). `None` when `cancel` fired
    /// while waiting.
    async fn lock_start(
        &self,
        workspace: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        self.inner.starts.lock(workspace, cancel).await
    }

    /// Takes the lock of `workspace`: alone (`exclusive`) or shared. `None` when `cancel` fired
    /// while waiting.
    async fn lock_workspace(
        &self,
        workspace: &std::path::Path,
        exclusive: bool,
        cancel: &CancellationToken,
    ) -> Option<WorkspaceGuard> {
        let lock =
            session::workspace_entry(&mut lock(&self.inner.workspaces), workspace.to_path_buf());
        tokio::select! {
            guard = async {
                if exclusive {
                    WorkspaceGuard::Exclusive(lock.write_owned().await)
                } else {
                    WorkspaceGuard::Shared(lock.read_owned().await)
                }
            } => Some(guard),
            _ = cancel.cancelled() => None,
        }
    }

    fn render_success(&self, success: Success, json: Option<Value>) -> CallToolResult {
        let max = self.inner.config.max_result_chars;
        let total_chars = success.answer.chars().count();
        let (text, link) = if total_chars > max {
            let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let uri = format!("{ANSWER_URI_PREFIX}{}-{id}", std::process::id());
            let text = truncate_middle(&success.answer, max, total_chars, &uri);
            let full = Arc::new(success.answer);
            let size = full.len() as u64;
            lock(&self.inner.answers).insert(uri.clone(), full);
            let mut resource = Resource::new(uri, "full Gemini answer");
            resource.mime_type = Some("text/plain".into());
            resource.size = Some(size);
            resource.description = Some(format!("The complete answer ({total_chars} characters)"));
            (text, Some(resource))
        } else {
            (success.answer, None)
        };
        let mut structured = json!({
            "response": text,
            "sessionId": success.session_id,
            "model": success.model,
            "stats": success.stats,
            "durationMs": success.duration.as_millis() as u64,
            "exitCode": success.exit_code,
            "truncated": link.is_some(),
        });
        if let Some(value) = json {
            structured["json"] = value;
        }
        let mut content = vec![ContentBlock::text(text)];
        if let Some(resource) = link {
            content.push(ContentBlock::resource_link(resource));
        }
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(structured);
        result
    }
}

/// The exit code of a run killed by a deadline, as `timeout(1)` reports it.
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// Holds a new run's start gate until its session can no longer be deleted by another start:
/// its session file records the prompt, or content arrives (the CLI records the prompt before
/// sending it), or the run's `init` names a session without a file (a CLI that writes it later
/// has nothing to lose: 0.61 writes the header before `init`). The run's end drops the gate too
/// (this task is aborted).
async fn hold_start_gate(
    gate: tokio::sync::OwnedMutexGuard<()>,
    state: Arc<Mutex<ProgressState>>,
    workspace: PathBuf,
) {
    let arrived = lock(&state).content_arrived.clone();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        tokio::select! {
            _ = arrived.notified() => break,
            _ = tick.tick() => {}
        }
        let (content, id) = {
            let s = lock(&state);
            (s.first_content.is_some(), s.session_id.clone())
        };
        if content {
            break;
        }
        let Some(id) = id else { continue };
        // A new session's file is a few hundred bytes: read in place.
        let exposed = session::gemini_dir()
            .and_then(|g| session::chats_dir(&g, &workspace))
            .and_then(|chats| session::prompt_recorded(&chats, &id))
            == Some(false);
        if !exposed {
            break;
        }
    }
    tracing::debug!(workspace = %workspace.display(), "start gate released");
    drop(gate);
}

/// Watches one run's deadlines from its start; the first to pass is recorded in `fired` and
/// kills the run through `kill`.
async fn watch_deadlines(
    state: Arc<Mutex<ProgressState>>,
    activity: process::Activity,
    limits: policy::Deadlines,
    kill: CancellationToken,
    fired: Arc<Mutex<Option<&'static str>>>,
) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tick.tick().await;
        let first = lock(&state).first_content;
        let last = activity.last();
        let now = Instant::now();
        let limit = if limits.total.is_some_and(|t| now - started >= t) {
            Some("total")
        } else if limits
            .first_content
            .is_some_and(|t| first.is_none() && now - started >= t)
        {
            Some("first_content")
        } else if limits
            .inactivity
            .is_some_and(|t| now - last.unwrap_or(started) >= t)
        {
            Some("inactivity")
        } else {
            None
        };
        if let Some(limit) = limit {
            *lock(&fired) = Some(limit);
            tracing::debug!(limit, "deadline passed: killing the run");
            kill.cancel();
            return;
        }
    }
}

/// How long a client that advertises MCP roots may take to list them.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// The client's MCP roots as canonical local paths, when it advertises the capability. A client
/// that advertises roots but does not list them gets its path arguments refused: its roots are a
/// limit the server must not skip. (Roots are deprecated by SEP-2577 but still what clients of
/// 2025-06-18 send.)
#[allow(deprecated)]
pub(crate) async fn client_roots(
    peer: Option<&Peer<RoleServer>>,
) -> Result<Option<Vec<PathBuf>>, Failure> {
    let Some(peer) = peer else { return Ok(None) };
    let advertised = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !advertised {
        return Ok(None);
    }
    let listed = tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await;
    match listed {
        Ok(Ok(result)) => Ok(Some(
            result
                .roots
                .iter()
                .filter_map(|r| policy::file_uri_path(&r.uri))
                .filter_map(|p| policy::canonical(&p).ok())
                .collect(),
        )),
        Ok(Err(e)) => Err(Failure::invalid_input(format!(
            "the client advertises MCP roots but roots/list failed ({e}); path arguments need them"
        ))),
        Err(_) => Err(Failure::invalid_input(format!(
            "the client advertises MCP roots but did not answer roots/list within {} s; path arguments need them",
            ROOTS_TIMEOUT.as_secs()
        ))),
    }
}

/// What a call's optional `full_output`, `debug`, `save_file` and `task_note` add to its result.
#[derive(Default)]
struct Report {
    /// Every stream-json event of the run (`full_output`).
    events: Option<Vec<Value>>,
    /// argv, exit, timings, stderr tail (`debug`).
    debug: Option<Value>,
    /// Where the answer goes (`save_file`, checked before the run).
    save_path: Option<PathBuf>,
    /// The outcome of writing it: the path, or why it failed.
    saved: Option<Result<PathBuf, String>>,
    /// Whether a tool ran in the run (the quota policy's guard).
    tools_ran: bool,
    /// The run's approval mode.
    approval: Option<policy::ApprovalMode>,
    /// What the quota policy did (retry, fallbacks, the model used).
    policy: Option<Value>,
}

impl Report {
    /// Adds the report to `structuredContent` (success and error alike) and the task note to
    /// the text.
    fn decorate(self, call: &Call, result: &mut CallToolResult) {
        if let Some(Value::Object(sc)) = result.structured_content.as_mut() {
            if let Some(note) = &call.options.task_note {
                sc.insert("taskNote".into(), json!(note));
            }
            if let Some(events) = self.events {
                sc.insert("events".into(), Value::Array(events));
            }
            if let Some(debug) = self.debug {
                sc.insert("debug".into(), debug);
            }
            if let Some(p) = self.policy {
                sc.insert("retryPolicy".into(), p);
            }
            match self.saved {
                Some(Ok(path)) => {
                    sc.insert("savedFile".into(), json!(path.display().to_string()));
                }
                Some(Err(e)) => {
                    sc.insert("savedFile".into(), Value::Null);
                    sc.insert("saveError".into(), json!(e));
                }
                None => {}
            }
        }
        if let Some(note) = &call.options.task_note {
            result
                .content
                .push(ContentBlock::text(format!("[task note] {note}")));
        }
    }
}

/// The ACP tool set's calls (issue 6): counted as calls in progress, like the CLI path's.
impl GeminiServer {
    async fn call_acp(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let _active = ActiveGuard::new(&self.inner.active);
        let env = crate::acp::tools::Env {
            config: &self.inner.config,
            cwd: &self.inner.cwd,
            pool: &self.inner.acp,
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token(),
            client_roots: tokio::sync::OnceCell::new(),
        };
        let mut result = crate::acp::tools::call(
            env,
            &request.name,
            request.arguments.as_ref(),
            context.ct.clone(),
        )
        .await;
        if is_legacy(context.protocol_version().as_ref()) {
            result.structured_content = None;
        }
        result
    }
}

/// Writes `answer` to `path` atomically: a temporary file in the same directory, then a rename,
/// so a reader never sees half an answer.
pub(crate) fn save_answer(path: &std::path::Path, answer: &str) -> Result<PathBuf, String> {
    use std::io::Write;
    let dir = path.parent().ok_or("the path has no directory")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(answer.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(path.to_path_buf())
}

/// A held workspace lock (released on drop).
#[allow(dead_code)]
enum WorkspaceGuard {
    Shared(tokio::sync::OwnedRwLockReadGuard<()>),
    Exclusive(tokio::sync::OwnedRwLockWriteGuard<()>),
}

/// Removes the stub the CLI leaves when a session is resumed in a later minute (see
/// `gemini::session`), so the next start in the workspace does not delete the session.
fn remove_session_stubs(workspace: &std::path::Path, session_id: &str) {
    let Some(chats) = session::gemini_dir().and_then(|g| session::chats_dir(&g, workspace)) else {
        return;
    };
    for path in session::remove_stubs(&chats, session_id) {
        tracing::debug!(path = %path.display(), "removed a resumed session's stub file");
    }
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn shutting_down() -> Failure {
    Failure::new(ErrorKind::Cancelled, 130, "the server is shutting down")
}

fn spawn_failure(e: SpawnError) -> Failure {
    let (code, hint) = match &e {
        SpawnError::NotFound(_) => (
            127,
            " — install the Gemini CLI (npm install -g @google/gemini-cli) or set GEMINI_CLI_BIN to its absolute path",
        ),
        SpawnError::NotExecutable(_) => (126, " — check GEMINI_CLI_BIN and the file's permissions"),
        SpawnError::Other(_) => (126, ""),
    };
    Failure::new(ErrorKind::SpawnFailed, code, format!("{e}{hint}"))
}

/// Finds the CLI for a run, per call (a CLI installed, or PATH fixed, after start-up is found):
/// not found is `spawn_failed` with the resolver's fix.
pub(crate) fn resolve_cli(config: &Config) -> Result<resolve::Resolved, Failure> {
    resolve::resolve_on_host(config.gemini_bin.as_deref())
        .map_err(|e| Failure::new(ErrorKind::SpawnFailed, e.exit_code(), e.to_string()))
}

/// Keeps the head and tail of `text` (`max` characters in all) around a marker saying how much
/// was left out: for partial answers and raw responses in error results.
pub fn cut_middle(text: &str, max: usize, total_chars: usize) -> String {
    keep_ends(text, max, total_chars, |omitted| {
        format!("[… {omitted} characters omitted …]")
    })
}

/// `max` characters of `text` in all, half from its head and half from its tail, around the
/// `marker` made from the number of characters left out.
fn keep_ends(
    text: &str,
    max: usize,
    total_chars: usize,
    marker: impl FnOnce(usize) -> String,
) -> String {
    let head = max / 2;
    let tail = max - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total_chars.saturating_sub(tail))
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n\n{}\n\n{}",
        &text[..head_end],
        marker(total_chars - head - tail),
        &text[tail_start..]
    )
}

/// Keeps the head and tail of `text` (`max` characters in all) around a marker that names the
/// resource holding the whole answer.
pub fn truncate_middle(text: &str, max: usize, total_chars: usize, uri: &str) -> String {
    keep_ends(text, max, total_chars, |omitted| {
        format!(
            "[… {omitted} characters omitted; the full answer ({total_chars} characters) is the resource {uri} (resources/read) …]"
        )
    })
}

/// What progress notifications report, updated as events arrive.
#[derive(Debug, Default)]
struct ProgressState {
    queued: bool,
    started: Option<Instant>,
    chars: usize,
    preview: String,
    tools: Vec<String>,
    /// The caller's `task_note`, prefixed to every message.
    note: Option<String>,
    /// When the first assistant text or tool event arrived (the first-content deadline).
    first_content: Option<Instant>,
    /// The session id of the run's `init` event.
    session_id: Option<String>,
    /// Notified when `first_content` is set (a new run's start gate opens at once).
    content_arrived: Arc<tokio::sync::Notify>,
    /// The CLI's latest failed API attempt: (attempt, HTTP status, last attempt).
    retry: Option<(u32, Option<u16>, bool)>,
    dirty: bool,
    urgent: bool,
}

impl ProgressState {
    fn observe(&mut self, hint: Hint) {
        match hint {
            Hint::Text { chars, tail } => {
                self.chars += chars;
                self.preview.push_str(&tail);
                let n = self.preview.chars().count();
                if n > PREVIEW_CHARS {
                    let cut = self
                        .preview
                        .char_indices()
                        .nth(n - PREVIEW_CHARS)
                        .map_or(0, |(i, _)| i);
                    self.preview.drain(..cut);
                }
            }
            Hint::Tool(name) => {
                self.tools.push(name);
                self.urgent = true;
            }
            // Not urgent: the 1 s throttle applies, so a burst of attempts is one message.
            Hint::Retry {
                attempt,
                status,
                last,
            } => self.retry = Some((attempt, status, last)),
        }
        self.dirty = true;
    }

    fn message(&self) -> String {
        match &self.note {
            Some(note) => format!("[{note}] {}", self.status()),
            None => self.status(),
        }
    }

    fn status(&self) -> String {
        if self.queued {
            return "queued: waiting for a free Gemini slot (GEMINICLI_MCP_MAX_CONCURRENCY)".into();
        }
        let secs = self.started.map_or(0, |s| s.elapsed().as_secs());
        let mut m = format!("running {secs}s");
        if self.chars > 0 {
            m.push_str(&format!(", {} chars", self.chars));
        }
        if !self.tools.is_empty() {
            m.push_str(&format!(", tools: {}", self.tools.join(", ")));
        }
        if let Some((attempt, status, last)) = self.retry {
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
        let preview = self.preview.replace(['\n', '\r'], " ");
        let preview = preview.trim();
        if !preview.is_empty() {
            m.push_str(&format!(": …{preview}"));
        }
        m
    }
}

/// Whether a progress notification goes out now, `since` the last one: a change waits for
/// [`PROGRESS_MIN_INTERVAL`] unless it is urgent (queued/started, a tool call); without changes
/// only the heartbeat speaks.
fn progress_due(dirty: bool, urgent: bool, since: Duration, heartbeat: Duration) -> bool {
    (dirty && (urgent || since >= PROGRESS_MIN_INTERVAL)) || since >= heartbeat
}

/// Where one call's progress notifications go.
#[derive(Clone)]
pub struct ProgressSink {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    /// Notifications sent for this token so far: shared by the clones of a call's attempts, so
    /// `progress` keeps increasing across a retry.
    sent: Arc<std::sync::atomic::AtomicU32>,
}

impl ProgressSink {
    /// A sink for `token`, sending through `peer`.
    pub fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        ProgressSink {
            peer,
            token,
            sent: Arc::default(),
        }
    }

    /// Sends one message now (waits, retries and fallbacks of the quota policy).
    async fn say(&self, message: String) {
        let n = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        let param =
            ProgressNotificationParam::new(self.token.clone(), f64::from(n)).with_message(message);
        let _ = self.peer.notify_progress(param).await;
    }

    async fn report(
        self,
        state: Arc<Mutex<ProgressState>>,
        stop: CancellationToken,
        heartbeat: Duration,
    ) {
        let mut last: Option<Instant> = None;
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let message = {
                let mut s = lock(&state);
                let since = last.map_or(Duration::MAX, |l| l.elapsed());
                if !progress_due(s.dirty, s.urgent, since, heartbeat) {
                    continue;
                }
                s.dirty = false;
                s.urgent = false;
                s.message()
            };
            let sent = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
            last = Some(Instant::now());
            let param = ProgressNotificationParam::new(self.token.clone(), f64::from(sent))
                .with_message(message);
            if self.peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    }
}

/// Protocol versions before 2025-06-18 know neither `outputSchema`, `structuredContent` nor
/// `resource_link` content.
fn is_legacy(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() < ProtocolVersion::V_2025_06_18.as_str())
}

impl ServerHandler for GeminiServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // Logging: the server's warnings reach the client as notifications/message.
            #[allow(deprecated)]
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_logging()
                .build(),
        )
        .with_server_info(
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
                .with_title("Gemini CLI MCP server"),
        )
        .with_instructions(
            "Three tools run Google's Gemini CLI headlessly: gemini_prompt (plain prompt), \
             gemini_prompt_with_context (prompt plus a <context> block) and gemini_prompt_structured \
             (JSON validated against a JSON Schema). Failures are results whose text starts with \
             `[error exit=N] KIND: message`. Answers longer than the inline limit are cut in the \
             middle and readable in full as resources.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let version = context.protocol_version();
        let mut tools = tools::definitions_for(
            !is_legacy(version.as_ref()),
            self.inner.config.policy.approval_ceiling,
        );
        tools.extend(toolsets::definitions(
            self.inner.config.policy.toolsets,
            !is_legacy(version.as_ref()),
        ));
        if self.inner.config.acp.enabled {
            tools.extend(crate::acp::tools::definitions(
                !is_legacy(version.as_ref()),
                self.inner.config.policy.approval_ceiling,
            ));
        }
        // Tool annotations arrived with 2025-03-26.
        if version.is_some_and(|v| v.as_str() < ProtocolVersion::V_2025_03_26.as_str()) {
            for tool in &mut tools {
                tool.annotations = None;
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.inner.config.acp.enabled && crate::acp::tools::is_acp_tool(&request.name) {
            return Ok(CallToolResponse::Complete(
                self.call_acp(request, context).await,
            ));
        }
        if let Some(extra) = ExtraTool::from_name(&request.name, self.inner.config.policy.toolsets)
        {
            let legacy = is_legacy(context.protocol_version().as_ref());
            let mut result = match context.meta.get(INVALID_ARGUMENTS_META) {
                Some(_) => Failure::invalid_input("`arguments` must be a JSON object")
                    .into_call_tool_result(),
                None => self
                    .call_extra(extra, request.arguments.as_ref(), &context)
                    .await
                    .unwrap_or_else(Failure::into_call_tool_result),
            };
            if legacy {
                result.structured_content = None;
            }
            return Ok(CallToolResponse::Complete(result));
        }
        let Some(tool) = ToolKind::from_name(&request.name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", request.name),
                Some(
                    json!({"tools": [tools::GEMINI_PROMPT, tools::GEMINI_PROMPT_WITH_CONTEXT, tools::GEMINI_PROMPT_STRUCTURED]}),
                ),
            ));
        };
        let legacy = is_legacy(context.protocol_version().as_ref());
        let decoded = match context.meta.get(INVALID_ARGUMENTS_META) {
            Some(kind) => Err(Failure::invalid_input(format!(
                "`arguments` must be a JSON object, got {}",
                kind.as_str().unwrap_or("something else")
            ))),
            None => tools::decode(tool, request.arguments.as_ref()),
        };
        let mut result = match decoded {
            Err(failure) => failure.into_call_tool_result(),
            Ok(mut call) => {
                call.options.client = Some(context.peer.clone());
                let progress = context
                    .meta
                    .get_progress_token()
                    .map(|token| ProgressSink::new(context.peer.clone(), token));
                self.run_call(call, context.ct.clone(), progress).await
            }
        };
        if legacy {
            result.structured_content = None;
            result.content.retain(|c| c.as_resource_link().is_none());
        }
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        crate::logging::register(context.peer);
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        crate::logging::set_level(&context.peer, request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let store = lock(&self.inner.answers);
        let resources = store
            .entries
            .iter()
            .map(|(uri, text)| {
                let mut r = Resource::new(uri.clone(), "full Gemini answer");
                r.mime_type = Some("text/plain".into());
                r.size = Some(text.len() as u64);
                r
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let text = lock(&self.inner.answers).get(&request.uri);
        match text {
            Some(text) => Ok(ReadResourceResponse::Complete(ReadResourceResult::new(vec![
                ResourceContents::text(text.as_str(), request.uri.clone())
                    .with_mime_type("text/plain"),
            ]))),
            None => Err(McpError::resource_not_found(
                format!(
                    "no stored answer at {} (answers are kept in memory, at most {MAX_STORED_ANSWERS}, oldest evicted first)",
                    request.uri
                ),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail() {
        let text: String = ('a'..='z').cycle().take(1000).collect();
        let out = truncate_middle(&text, 100, 1000, "geminicli-mcp://answers/1");
        assert!(out.starts_with(&text[..50]));
        assert!(out.ends_with(&text[950..]));
        assert!(out.contains("900 characters omitted"));
        assert!(out.contains("geminicli-mcp://answers/1"));
    }

    #[test]
    fn store_evicts_oldest_first() {
        let mut store = AnswerStore::default();
        for i in 0..(MAX_STORED_ANSWERS + 2) {
            store.insert(format!("u{i}"), Arc::new("x".into()));
        }
        assert!(store.get("u0").is_none());
        assert!(store.get("u1").is_none());
        assert!(store.get("u2").is_some());
        assert_eq!(store.entries.len(), MAX_STORED_ANSWERS);
    }

    #[test]
    fn legacy_versions() {
        assert!(is_legacy(Some(&ProtocolVersion::V_2025_03_26)));
        assert!(!is_legacy(Some(&ProtocolVersion::V_2025_06_18)));
        assert!(!is_legacy(None));
    }

    #[test]
    fn progress_is_throttled_with_a_heartbeat() {
        let hb = Duration::from_secs(10);
        let ms = Duration::from_millis;
        assert!(
            progress_due(true, false, Duration::MAX, hb),
            "the first change goes out"
        );
        assert!(!progress_due(true, false, ms(300), hb), "text changes wait");
        assert!(progress_due(true, false, ms(1000), hb));
        assert!(
            progress_due(true, true, ms(10), hb),
            "tool calls and queueing do not wait"
        );
        assert!(
            !progress_due(false, false, ms(9_999), hb),
            "nothing new: silence"
        );
        assert!(progress_due(false, false, hb, hb), "until the heartbeat");
    }

    #[test]
    fn progress_message_has_content() {
        let mut s = ProgressState {
            started: Some(Instant::now()),
            ..Default::default()
        };
        s.observe(Hint::Tool("list_directory".into()));
        s.observe(Hint::Text {
            chars: 11,
            tail: "Hello\nthere".into(),
        });
        s.observe(Hint::Retry {
            attempt: 2,
            status: Some(429),
            last: false,
        });
        let m = s.message();
        assert!(m.contains("tools: list_directory"), "{m}");
        assert!(m.contains("…Hello there"), "{m}");
        assert!(
            m.contains("Attempt 2 failed with status 429, the CLI is retrying"),
            "{m}"
        );
        s.queued = true;
        assert!(s.message().starts_with("queued"));
    }
}
