//! The agents and their sessions: one agent process per workspace (and MCP server filter),
//! started on first use, shut down when idle, restarted after a crash or a hang; one session per
//! agent, reused until it has served `max_turns` prompts, resumable with `session/load`; one
//! prompt per session at a time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::client::{AcpError, Connection, Inbound};
use super::mode_id;
use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::gemini::session::{self as cli_session, StartGates};
use crate::gemini::{command, environment, process::RunSpec};
use crate::policy::ApprovalMode;

/// Shortest interval between two progress notifications of one prompt.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// Which agent a call goes to: the workspace and the MCP servers it may load (a start-up flag).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    cwd: PathBuf,
    servers: Vec<String>,
}

/// One ACP session as the server tracks it.
#[derive(Debug, Clone)]
struct Session {
    id: String,
    turns: u32,
    model: String,
    mode: ApprovalMode,
}

#[derive(Default)]
struct State {
    agent: Option<Arc<Connection>>,
    agent_info: Value,
    models: Value,
    session: Option<Session>,
    last_used: Option<Instant>,
}

struct Slot {
    key: Key,
    /// Held for a whole call: one prompt per session (and per agent) at a time.
    busy: tokio::sync::Mutex<()>,
    state: Mutex<State>,
}

/// What a `gemini` call asks for, decoded and checked.
#[derive(Debug, Clone)]
pub struct PromptCall {
    /// The prompt text.
    pub prompt: String,
    /// Text sent as an embedded resource block.
    pub context: Option<String>,
    /// A model for the session (`session/set_model`).
    pub model: Option<String>,
    /// The approval mode, already under the ceiling.
    pub mode: ApprovalMode,
    /// An image, already checked: its MIME type and path.
    pub image: Option<(String, PathBuf)>,
    /// A session to continue (`SESSION_ID` of an earlier answer).
    pub session_id: Option<String>,
    /// The workspace, canonical and under the roots.
    pub cwd: PathBuf,
    /// `--allowed-mcp-server-names` of the agent, checked.
    pub servers: Vec<String>,
}

/// A prompt's outcome.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The session the prompt ran in.
    pub session_id: String,
    /// The agent's message chunks, concatenated.
    pub messages: String,
    /// Thought chunks, concatenated.
    pub thought: String,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub stop_reason: String,
    /// Tool calls, in order, with their last status.
    pub tool_calls: Vec<Value>,
    /// Plan entries (the CLI 0.61 sends none).
    pub plan: Vec<Value>,
    /// The session's model.
    pub model: String,
    /// The agent's pid and stderr tail, for `debug`.
    pub pid: u32,
    /// Milliseconds the call took, start-up included.
    pub duration_ms: u64,
    /// Fallback models tried after `quota_exhausted` (the last one answered).
    pub fallbacks: Vec<String>,
}

/// Progress notifications for one call.
pub struct Progress {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// Its token.
    pub token: ProgressToken,
}

impl Progress {
    async fn send(&self, n: u32, message: Option<String>) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), f64::from(n));
        if let Some(m) = message {
            param = param.with_message(m);
        }
        let _ = self.peer.notify_progress(param).await;
    }
}

/// All agents of the server.
pub struct Pool {
    config: Config,
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
    shutdown: CancellationToken,
    reaper: AtomicBool,
    /// The workspaces' start gates, shared with the one-shot runs: an agent's start-up deletes
    /// the project's session files that hold no message yet, as every CLI start does.
    starts: Arc<StartGates>,
    /// When this server made (or last loaded) each session: the minute a load must not happen
    /// in, when the session's chat files cannot be read.
    opened: Mutex<HashMap<String, SystemTime>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    /// A pool; nothing starts before the first call. `shutdown` stops every agent; `starts`
    /// are the workspaces' start gates, shared with the one-shot runs.
    pub fn new(config: Config, shutdown: CancellationToken, starts: Arc<StartGates>) -> Self {
        Pool {
            config,
            slots: Mutex::default(),
            shutdown,
            reaper: AtomicBool::new(false),
            starts,
            opened: Mutex::default(),
        }
    }

    /// Takes the start gate of the slot's workspace (see `starts`).
    async fn start_gate(
        &self,
        slot: &Slot,
        ct: &CancellationToken,
    ) -> Result<tokio::sync::OwnedMutexGuard<()>, Failure> {
        self.starts
            .lock(&slot.key.cwd, ct)
            .await
            .ok_or_else(|| cancelled("while another Gemini CLI started in this workspace"))
    }

    /// Waits, when session `id` was made (or last loaded) in the current clock minute, until
    /// that minute is over. Gemini CLI 0.61's `session/load` opens the session's recording in
    /// the chat file named after the current minute; when that is the session's own file, it
    /// appends a fresh header, resetting the history, and answers `No previous sessions found
    /// for this project.` (observed; every later load and listing fails the same way). A load in
    /// a later minute replays the session. The wait is at most a minute; it is announced as
    /// progress and ends early with a cancellation.
    async fn wait_out_session_minute(
        &self,
        cwd: &std::path::Path,
        id: &str,
        ct: &CancellationToken,
        progress: Option<&Progress>,
    ) -> Result<(), Failure> {
        let minutes = {
            let (cwd, id) = (cwd.to_path_buf(), id.to_string());
            tokio::task::spawn_blocking(move || {
                cli_session::gemini_dir()
                    .and_then(|g| cli_session::chats_dir(&g, &cwd))
                    .map(|chats| cli_session::file_minutes(&chats, &id))
                    .unwrap_or_default()
            })
            .await
            .unwrap_or_default()
        };
        let now = SystemTime::now();
        let this_minute = cli_session::minute_stamp(now);
        // The files are what the CLI looks at; without them, what this server itself did.
        let clash = if minutes.is_empty() {
            lock(&self.opened)
                .get(id)
                .is_some_and(|t| cli_session::minute_stamp(*t) == this_minute)
        } else {
            minutes.contains(&this_minute)
        };
        if !clash {
            return Ok(());
        }
        let into = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() % 60_000)
            .unwrap_or(0) as u64;
        // A little past the turn: the agent reads the same clock, later.
        let wait = Duration::from_millis(60_000 - into + 50);
        tracing::debug!(
            session = id,
            wait_ms = wait.as_millis() as u64,
            "loading a session made this minute: waiting for the next one"
        );
        if let Some(p) = progress {
            p.send(
                0,
                Some(format!(
                    "waiting {} s for the clock minute to turn before loading session {id}: Gemini CLI 0.61 destroys a session loaded in the minute it was made",
                    wait.as_millis().div_ceil(1000)
                )),
            )
            .await;
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => Ok(()),
            _ = ct.cancelled() => Err(cancelled("while waiting for the clock minute to turn before loading the session")),
        }
    }

    fn slot(self: &Arc<Self>, key: Key) -> Arc<Slot> {
        if !self.reaper.swap(true, Ordering::SeqCst) {
            let pool = Arc::downgrade(self);
            let shutdown = self.shutdown.clone();
            let idle = self.config.acp.idle;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(
                    (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30)),
                );
                loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => {
                            if let Some(pool) = pool.upgrade() { pool.stop_all(); }
                            return;
                        }
                        _ = tick.tick() => {}
                    }
                    let Some(pool) = pool.upgrade() else { return };
                    pool.stop_idle(idle);
                }
            });
        }
        lock(&self.slots)
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    key,
                    busy: tokio::sync::Mutex::new(()),
                    state: Mutex::default(),
                })
            })
            .clone()
    }

    /// Stops agents unused for `idle` (not those running a prompt).
    fn stop_idle(&self, idle: Duration) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        for slot in slots {
            let Ok(_busy) = slot.busy.try_lock() else {
                continue;
            };
            let mut st = lock(&slot.state);
            if st.agent.is_some() && st.last_used.is_some_and(|t| t.elapsed() >= idle) {
                tracing::debug!(cwd = %slot.key.cwd.display(), "ACP agent idle: stopping it");
                if let Some(agent) = st.agent.take() {
                    agent.kill();
                }
                st.session = None;
            }
        }
    }

    /// Each real agent holds hundreds of MiB: with GEMINICLI_MCP_MAX_CONCURRENCY agents running,
    /// the least recently used idle one is stopped before another starts. Agents running a prompt
    /// are never stopped for this, so a burst over the bound still runs.
    fn make_room(&self, starting: &Key) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        let running = slots
            .iter()
            .filter(|s| lock(&s.state).agent.as_ref().is_some_and(|a| !a.is_dead()))
            .count();
        if running < self.config.max_concurrency.max(1) {
            return;
        }
        let mut candidates: Vec<(Option<Instant>, Arc<Slot>)> = slots
            .iter()
            .filter(|s| s.key != *starting)
            .filter_map(|s| {
                let st = lock(&s.state);
                st.agent.as_ref().filter(|a| !a.is_dead())?;
                Some((st.last_used, s.clone()))
            })
            .collect();
        candidates.sort_by_key(|(used, _)| *used);
        for (_, slot) in candidates {
            let Ok(_busy) = slot.busy.try_lock() else {
                continue;
            };
            let mut st = lock(&slot.state);
            tracing::debug!(cwd = %slot.key.cwd.display(), "ACP agent limit reached: stopping the least recently used agent");
            if let Some(agent) = st.agent.take() {
                agent.kill();
            }
            st.session = None;
            return;
        }
    }

    /// Stops every agent (server shutdown).
    pub fn stop_all(&self) {
        for slot in lock(&self.slots).values() {
            let mut st = lock(&slot.state);
            if let Some(agent) = st.agent.take() {
                agent.kill();
            }
            st.session = None;
        }
    }

    /// Forgets the session of `cwd` (every workspace when `None`); the next call starts a fresh
    /// one. Returns the workspaces and sessions dropped.
    pub fn reset(&self, cwd: Option<&PathBuf>) -> Vec<(PathBuf, String)> {
        let mut dropped = Vec::new();
        for slot in lock(&self.slots).values() {
            if cwd.is_some_and(|c| *c != slot.key.cwd) {
                continue;
            }
            if let Some(s) = lock(&slot.state).session.take() {
                dropped.push((slot.key.cwd.clone(), s.id));
            }
        }
        dropped
    }

    /// The sessions held: workspace, id, turns, model, approval mode.
    pub fn sessions(&self) -> Vec<Value> {
        let mut list: Vec<Value> = lock(&self.slots)
            .values()
            .filter_map(|slot| {
                let st = lock(&slot.state);
                let s = st.session.as_ref()?;
                Some(json!({
                    "workspace": slot.key.cwd.display().to_string(),
                    "session_id": s.id,
                    "turn_count": s.turns,
                    "model": s.model,
                    "approval_mode": s.mode.as_str(),
                    "agent_pid": st.agent.as_ref().map(|a| a.pid()),
                    "allowed_mcp_servers": slot.key.servers,
                }))
            })
            .collect();
        list.sort_by(|a, b| a["workspace"].as_str().cmp(&b["workspace"].as_str()));
        list
    }

    /// What the agents said about themselves and their models (the first running one).
    pub fn models(&self) -> (Value, Value) {
        for slot in lock(&self.slots).values() {
            let st = lock(&slot.state);
            if st.agent.as_ref().is_some_and(|a| !a.is_dead()) && !st.models.is_null() {
                return (st.models.clone(), st.agent_info.clone());
            }
        }
        (Value::Null, Value::Null)
    }

    /// Makes sure an agent runs for `cwd` (for `list_models`), and returns its models and info.
    pub async fn probe(
        self: &Arc<Self>,
        cwd: PathBuf,
        ct: CancellationToken,
    ) -> Result<(Value, Value), Failure> {
        let slot = self.slot(Key {
            cwd,
            servers: Vec::new(),
        });
        let _busy = tokio::select! {
            g = slot.busy.lock() => g,
            _ = ct.cancelled() => return Err(cancelled("while waiting for the agent")),
        };
        let agent = self.agent(&slot, &ct).await?;
        if lock(&slot.state).models.is_null() {
            let session = self.new_session(&slot, &agent).await?;
            let mut st = lock(&slot.state);
            st.session = Some(session);
        }
        lock(&slot.state).last_used = Some(Instant::now());
        let st = lock(&slot.state);
        Ok((st.models.clone(), st.agent_info.clone()))
    }

    /// The slot's agent, started when there is none or it died.
    async fn agent(&self, slot: &Slot, ct: &CancellationToken) -> Result<Arc<Connection>, Failure> {
        {
            let mut st = lock(&slot.state);
            match &st.agent {
                Some(a) if !a.is_dead() => return Ok(a.clone()),
                Some(_) => {
                    st.agent = None;
                    st.session = None;
                }
                None => {}
            }
        }
        // Held from before the spawn until `initialize` is answered: by then the agent's
        // start-up clean-up (which deletes the project's session files that hold no message
        // yet) is done, so it cannot take a new one-shot session with it, nor the reverse.
        let _gate = self.start_gate(slot, ct).await?;
        self.make_room(&slot.key);
        let spec = self.spec(&slot.key)?;
        let agent = Connection::start(&spec, self.config.kill_grace).map_err(spawn_failure)?;
        let init = json!({
            "protocolVersion": 1,
            // No `fs` (nor terminal) capability: the agent uses its own file system tools.
            "clientCapabilities": {},
            "clientInfo": {"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = tokio::select! {
            r = agent.request("initialize", init, Some(self.config.acp.request_timeout)) => r,
            _ = ct.cancelled() => {
                agent.kill();
                return Err(cancelled("while the agent was starting"));
            }
        };
        let result = match answer {
            Ok(r) => r,
            Err(e) => {
                agent.kill();
                return Err(agent_failure(&agent, e, "starting the agent"));
            }
        };
        let mut st = lock(&slot.state);
        st.agent_info = result.get("agentInfo").cloned().unwrap_or(Value::Null);
        st.agent = Some(agent.clone());
        st.session = None;
        Ok(agent)
    }

    /// The command line and environment of an agent: the CLI path's environment policy and
    /// child variables, trust given, no browser.
    fn spec(&self, key: &Key) -> Result<RunSpec, Failure> {
        let config = &self.config;
        let resolved = crate::server::resolve_cli(config)?;
        let mut args = resolved.prefix_args;
        // Without trust an untrusted folder silently downgrades yolo and auto_edit to default.
        args.push("--acp".into());
        args.push("--skip-trust".into());
        for name in &key.servers {
            command::validate_server_name(name)?;
            args.push(format!("--allowed-mcp-server-names={name}").into());
        }
        let (env_clear, mut env) = environment::for_child(config.env_policy, &config.env_pass);
        env.push(("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()));
        Ok(RunSpec {
            program: resolved.program,
            args,
            env_clear,
            env,
            env_remove: Vec::new(),
            cwd: key.cwd.clone(),
            stdin: Vec::new(),
            max_output_bytes: config.max_output_bytes,
            kill_grace: config.kill_grace,
            private_tmp: true,
        })
    }

    /// `session/new`, authenticating first when the agent asks for it and the environment
    /// names a method that needs no browser.
    async fn new_session(&self, slot: &Slot, agent: &Connection) -> Result<Session, Failure> {
        let t = Some(self.config.acp.request_timeout);
        let params = json!({"cwd": slot.key.cwd, "mcpServers": []});
        let mut answer = agent.request("session/new", params.clone(), t).await;
        if let Err(AcpError::Rpc {
            code: -32000,
            message,
        }) = &answer
        {
            let Some(method) = auth_method() else {
                return Err(Failure::new(
                    ErrorKind::AuthRequired,
                    41,
                    format!("the Gemini CLI has no usable authentication ({message}); set GEMINI_API_KEY, configure Vertex AI, or log in once with `gemini` interactively so cached credentials exist (the server never opens a browser)"),
                ));
            };
            agent
                .request("authenticate", json!({"methodId": method}), t)
                .await
                .map_err(|e| agent_failure(agent, e, "authenticating"))?;
            answer = agent.request("session/new", params, t).await;
        }
        let result = answer.map_err(|e| agent_failure(agent, e, "creating a session"))?;
        let id = result["sessionId"].as_str().unwrap_or_default().to_string();
        lock(&self.opened).insert(id.clone(), SystemTime::now());
        let model = result["models"]["currentModelId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        lock(&slot.state).models = result.get("models").cloned().unwrap_or(Value::Null);
        let mode = mode_of(&result);
        Ok(Session {
            id,
            turns: 0,
            model,
            mode,
        })
    }

    /// Runs one prompt. Never re-runs it: a prompt whose agent died is reported, not repeated.
    /// With `transcript` (`full_output`), every message of the turn (of each attempt, when the
    /// quota fallback tried another model) is appended to it, success or failure.
    pub async fn prompt(
        self: &Arc<Self>,
        call: PromptCall,
        ct: CancellationToken,
        progress: Option<Progress>,
        mut transcript: Option<&mut Vec<Value>>,
    ) -> Result<Answer, Failure> {
        let started = Instant::now();
        let slot = self.slot(Key {
            cwd: call.cwd.clone(),
            servers: call.servers.clone(),
        });
        let _busy = tokio::select! {
            g = slot.busy.lock() => g,
            _ = ct.cancelled() => return Err(cancelled("while another prompt ran in this workspace")),
        };
        // The sessions issue's opt-in quota policy (GEMINICLI_MCP_FALLBACK_MODELS): after
        // `quota_exhausted`, the next model with every other argument kept, only while
        // `policy::may_repeat` allows (no tool ran, or the mode cannot write).
        let fallbacks = &self.config.policy.quota.fallback_models;
        let mut call = call;
        let mut tried: Vec<String> = Vec::new();
        let mut not_retried = false;
        let result = loop {
            let mut tools_ran = false;
            let result = self
                .prompt_locked(
                    &slot,
                    call.clone(),
                    &ct,
                    progress.as_ref(),
                    &mut tools_ran,
                    transcript.as_deref_mut(),
                )
                .await;
            match result {
                Err(f) if f.kind == ErrorKind::QuotaExhausted && tried.len() < fallbacks.len() => {
                    if !crate::policy::may_repeat(tools_ran, Some(call.mode)) {
                        // The failed attempt may have changed files: repeating it could do so twice.
                        not_retried = true;
                        break Err(f);
                    }
                    let next = fallbacks[tried.len()].clone();
                    tracing::debug!(model = %next, "quota exhausted: trying the next fallback model");
                    if let Some(events) = transcript.as_deref_mut() {
                        events.push(json!({"kind": "fallback", "model": next}));
                    }
                    tried.push(next.clone());
                    call.model = Some(next);
                }
                other => break other,
            }
        };
        lock(&slot.state).last_used = Some(Instant::now());
        match result {
            Ok(mut a) => {
                a.duration_ms = started.elapsed().as_millis() as u64;
                a.fallbacks = tried;
                Ok(a)
            }
            Err(mut f) => {
                if !tried.is_empty() {
                    f.message
                        .push_str(&format!(" (fallback models tried: {})", tried.join(", ")));
                }
                if not_retried {
                    f.message.push_str(" (not retried: tools ran)");
                }
                Err(f)
            }
        }
    }

    async fn prompt_locked(
        &self,
        slot: &Slot,
        call: PromptCall,
        ct: &CancellationToken,
        progress: Option<&Progress>,
        tools_ran: &mut bool,
        transcript: Option<&mut Vec<Value>>,
    ) -> Result<Answer, Failure> {
        let t = Some(self.config.acp.request_timeout);
        let agent = self.agent(slot, ct).await?;
        // The session: the one asked for, else the workspace's own until it has served
        // max_turns prompts, else a new one.
        let current = lock(&slot.state).session.clone();
        let mut loaded = false;
        let mut fresh_gate = None;
        let mut session = match (&call.session_id, current) {
            (Some(asked), Some(s)) if s.id == *asked => s,
            (Some(asked), _) => {
                self.wait_out_session_minute(&slot.key.cwd, asked, ct, progress)
                    .await?;
                // History replayed during the load arrives before its answer, while nothing
                // routes this session: none of it leaks into the answer.
                agent.unroute(asked);
                let r = agent
                    .request(
                        "session/load",
                        json!({"sessionId": asked, "cwd": slot.key.cwd, "mcpServers": []}),
                        t,
                    )
                    .await;
                match r {
                    Ok(result) => {
                        lock(&self.opened).insert(asked.clone(), SystemTime::now());
                        let model = result["models"]["currentModelId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        if let Some(m) = result.get("models") {
                            lock(&slot.state).models = m.clone();
                        }
                        let s = Session {
                            id: asked.clone(),
                            turns: 0,
                            model,
                            mode: mode_of(&result),
                        };
                        loaded = true;
                        s
                    }
                    Err(AcpError::Rpc { code, message }) if code == -32603 || code == -32602 => {
                        return Err(Failure::new(
                            ErrorKind::SessionNotFound,
                            42,
                            format!(
                                "session {asked} cannot be loaded in this workspace: {message}"
                            ),
                        ));
                    }
                    Err(e) => return Err(agent_failure(&agent, e, "loading the session")),
                }
            }
            (None, Some(s)) if s.turns < self.config.acp.max_turns => {
                if s.turns == 0 {
                    // Made (by list_models) but never prompted: its file may still hold no
                    // message.
                    fresh_gate = Some(self.start_gate(slot, ct).await?);
                }
                s
            }
            (None, _) => {
                // A new session's file holds no message until the agent records the first
                // prompt, and any CLI start in the project meanwhile deletes it: held until
                // the prompt is recorded (or the prompt ends).
                fresh_gate = Some(self.start_gate(slot, ct).await?);
                self.new_session(slot, &agent).await?
            }
        };
        lock(&slot.state).session = Some(session.clone());
        // After a load the agent may still be replaying history (0.61 sends it after the
        // response): one more round trip, answered in order after those lines, is the barrier
        // past which they have all been dropped, before the prompt's route exists.
        if loaded || session.mode != call.mode {
            agent
                .request(
                    "session/set_mode",
                    json!({"sessionId": session.id, "modeId": mode_id(call.mode)}),
                    t,
                )
                .await
                .map_err(|e| agent_failure(&agent, e, "setting the approval mode"))?;
            session.mode = call.mode;
        }
        if let Some(model) = call.model.as_deref().filter(|m| *m != session.model) {
            agent
                .request(
                    "session/set_model",
                    json!({"sessionId": session.id, "modelId": model}),
                    t,
                )
                .await
                .map_err(|e| agent_failure(&agent, e, "setting the model"))?;
            session.model = model.to_string();
        }
        lock(&slot.state).session = Some(session.clone());

        let mut blocks = vec![json!({"type": "text", "text": call.prompt})];
        if let Some(context) = &call.context {
            blocks.push(json!({"type": "resource", "resource": {
                "uri": "geminicli-mcp://context", "mimeType": "text/plain", "text": context}}));
        }
        if let Some((mime, path)) = &call.image {
            let read = {
                let path = path.clone();
                tokio::task::spawn_blocking(move || std::fs::read(path)).await
            };
            let bytes = read
                .map_err(|e| Failure::invalid_input(format!("image_path: {e}")))?
                .map_err(|e| {
                    Failure::invalid_input(format!("image_path {}: {e}", path.display()))
                })?;
            blocks.push(json!({"type": "image", "mimeType": mime, "data": super::base64(&bytes)}));
        }

        let (tx, mut rx) = mpsc::unbounded_channel();
        agent.route(&session.id, session.mode, tx);
        let sid = session.id.clone();
        let (mut reply, request_id) = agent
            .start_request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": blocks}),
            )
            .map_err(|e| agent_failure(&agent, e, "sending the prompt"))?;
        let mut guard = PromptGuard {
            agent: agent.clone(),
            session: sid.clone(),
            grace: self.config.kill_grace,
            request_id,
            armed: true,
        };
        let mut fold = Fold::new(
            Answer {
                session_id: sid.clone(),
                model: session.model.clone(),
                pid: agent.pid(),
                ..Answer::default()
            },
            transcript.is_some(),
        );
        let mut last_progress: Option<Instant> = None;
        let mut sent = 0u32;
        // Throttled, the latest note waits; whatever is still waiting goes out at the end, so
        // the client's last progress shows where the prompt ended.
        let mut unsent: Option<String> = None;
        let mut cancel_sent: Option<tokio::time::Instant> = None;
        let mut gate_tick = tokio::time::interval(Duration::from_millis(20));
        let outcome = loop {
            let grace_over = async {
                match cancel_sent {
                    Some(at) => tokio::time::sleep_until(at + self.config.kill_grace).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(inbound) = rx.recv() => {
                    if let Some(note) = fold.absorb(inbound) {
                        unsent = Some(note);
                    }
                    if let (Some(p), Some(_)) = (progress, &unsent) {
                        if last_progress.is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL) {
                            last_progress = Some(Instant::now());
                            sent += 1;
                            p.send(sent, unsent.take()).await;
                        }
                    }
                }
                r = &mut reply => {
                    // Updates sent before the answer are already queued: take them too.
                    while let Ok(inbound) = rx.try_recv() {
                        fold.absorb(inbound);
                    }
                    break r.unwrap_or_else(|_| Err(AcpError::Exited(agent.exit().unwrap_or_default())));
                }
                _ = ct.cancelled(), if cancel_sent.is_none() => {
                    agent.notify("session/cancel", json!({"sessionId": sid}));
                    cancel_sent = Some(tokio::time::Instant::now());
                }
                _ = grace_over => {
                    tracing::warn!(pid = agent.pid(), "the agent did not stop after session/cancel: killing it");
                    agent.kill();
                    agent.ended().await;
                    break Err(AcpError::Exited("killed after the cancel was ignored".into()));
                }
                _ = gate_tick.tick(), if fresh_gate.is_some() => {
                    // A new session's file is a few hundred bytes: read in place. No file (or
                    // no known chat directory): nothing a start could delete.
                    let exposed = cli_session::gemini_dir()
                        .and_then(|g| cli_session::chats_dir(&g, &slot.key.cwd))
                        .and_then(|chats| cli_session::prompt_recorded(&chats, &sid))
                        == Some(false);
                    if !exposed {
                        tracing::debug!(cwd = %slot.key.cwd.display(), "start gate released: the new ACP session recorded its prompt");
                        fresh_gate = None;
                    }
                }
            }
        };
        drop(fresh_gate);
        guard.armed = false;
        agent.unroute(&sid);
        if let (Some(p), Some(note)) = (progress, unsent) {
            p.send(sent + 1, Some(note)).await;
        }
        *tools_ran = fold.tools_ran();
        let end = match (&outcome, cancel_sent.is_some()) {
            (_, true) => json!({"kind": "cancelled"}),
            (Ok(result), false) => {
                json!({"kind": "stop", "stopReason": result["stopReason"].as_str().unwrap_or("end_turn")})
            }
            (Err(AcpError::Rpc { code, message }), false) => {
                json!({"kind": "error", "code": code, "message": message})
            }
            (Err(e), false) => json!({"kind": "error", "message": e.to_string()}),
        };
        let (mut answer, events) = fold.finish(end);
        if let (Some(out), Some(events)) = (transcript, events) {
            out.extend(events);
        }
        {
            let mut st = lock(&slot.state);
            if let Some(s) = st.session.as_mut().filter(|s| s.id == sid) {
                s.turns += 1;
            }
            if agent.is_dead() {
                st.agent = None;
                st.session = None;
            }
        }
        if cancel_sent.is_some() {
            let mut f = cancelled("by the client");
            f.session_id = Some(sid);
            f.partial_response = Some(answer.messages).filter(|m| !m.is_empty());
            return Err(f);
        }
        match outcome {
            Ok(result) => {
                answer.stop_reason = result["stopReason"]
                    .as_str()
                    .unwrap_or("end_turn")
                    .to_string();
                Ok(answer)
            }
            Err(e) => {
                let mut f = agent_failure(&agent, e, "running the prompt");
                f.session_id = Some(sid);
                f.model = Some(answer.model);
                f.partial_response = Some(answer.messages).filter(|m| !m.is_empty());
                Err(f)
            }
        }
    }
}

/// Ends a prompt whose call was dropped mid-flight (a transport gone, a task aborted), so the agent
/// does not go on running tools for nobody: `session/cancel`, then the tree kill if the agent is
/// still busy after the grace (it cannot be told apart from a hang from here).
struct PromptGuard {
    agent: Arc<Connection>,
    session: String,
    grace: Duration,
    request_id: u64,
    armed: bool,
}

impl Drop for PromptGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.agent.unroute(&self.session);
        self.agent
            .notify("session/cancel", json!({"sessionId": self.session}));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (agent, grace, id) = (self.agent.clone(), self.grace, self.request_id);
            runtime.spawn(async move {
                tokio::time::sleep(grace).await;
                // Answered meanwhile (cancelled or done): the agent is healthy and may be in
                // use by the next call.
                if agent.is_waiting(id) {
                    agent.kill();
                }
            });
        }
    }
}

/// A prompt's inbound messages folded, as they arrive, into its answer (and, for `full_output`,
/// its transcript).
#[derive(Debug, Default)]
pub struct Fold {
    answer: Answer,
    tools: Vec<(String, Value)>,
    events: Option<Vec<Value>>,
}

impl Fold {
    /// Starts from `answer` (its session, model and pid); `transcript`: keep every message.
    pub fn new(answer: Answer, transcript: bool) -> Self {
        Fold {
            answer,
            tools: Vec::new(),
            events: transcript.then(Vec::new),
        }
    }

    /// Whether a tool call (or a permission request for one) was seen.
    pub fn tools_ran(&self) -> bool {
        !self.tools.is_empty()
    }

    /// The answer, its tool calls in order, and the transcript ending with `end` (how the turn
    /// ended: `{"kind": "stop", "stopReason": …}`, `error` or `cancelled`).
    pub fn finish(mut self, end: Value) -> (Answer, Option<Vec<Value>>) {
        self.answer.tool_calls = self.tools.into_iter().map(|(_, v)| v).collect();
        let events = self.events.map(|mut e| {
            e.push(end);
            e
        });
        (self.answer, events)
    }

    /// Folds one inbound message in; returns a progress note for it.
    pub fn absorb(&mut self, inbound: Inbound) -> Option<String> {
        if let Some(events) = self.events.as_mut() {
            events.push(match &inbound {
                Inbound::Update(u) => json!({"kind": "update", "update": u}),
                Inbound::Permission {
                    tool_call,
                    options,
                    allowed,
                    outcome,
                } => json!({"kind": "permission", "toolCall": tool_call, "options": options,
                    "outcome": outcome, "approved": allowed}),
            });
        }
        absorb(&mut self.answer, &mut self.tools, inbound)
    }
}

/// Folds one inbound message into the answer; returns a progress note for it.
fn absorb(
    answer: &mut Answer,
    tools: &mut Vec<(String, Value)>,
    inbound: Inbound,
) -> Option<String> {
    match inbound {
        Inbound::Update(u) => {
            let text = u["content"]["text"].as_str().unwrap_or_default();
            match u["sessionUpdate"].as_str().unwrap_or_default() {
                "agent_message_chunk" => {
                    answer.messages.push_str(text);
                    None
                }
                "agent_thought_chunk" => {
                    answer.thought.push_str(text);
                    Some(format!("thinking: {}", preview(text)))
                }
                "tool_call" | "tool_call_update" => {
                    let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
                    let entry = match tools.iter_mut().find(|(i, _)| *i == id) {
                        Some((_, v)) => v,
                        None => {
                            tools.push((id.clone(), json!({"id": id})));
                            &mut tools.last_mut().expect("pushed").1
                        }
                    };
                    for key in ["title", "kind", "status", "locations"] {
                        if let Some(v) = u.get(key) {
                            entry[key] = v.clone();
                        }
                    }
                    let output: String = u["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["content"]["text"].as_str())
                        .collect();
                    if !output.is_empty() {
                        entry["output"] = json!(output);
                    }
                    Some(format!(
                        "tool {}: {}",
                        entry["status"].as_str().unwrap_or("pending"),
                        preview(entry["title"].as_str().unwrap_or_default())
                    ))
                }
                "plan" => {
                    answer.plan = u["entries"].as_array().cloned().unwrap_or_default();
                    None
                }
                _ => None,
            }
        }
        Inbound::Permission {
            tool_call, allowed, ..
        } => {
            let id = tool_call["toolCallId"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let status = if allowed { "approved" } else { "rejected" };
            let entry = json!({"id": id, "title": tool_call["title"], "kind": tool_call["kind"],
                "status": status, "permission": status});
            let note = format!(
                "permission {status}: {}",
                preview(tool_call["title"].as_str().unwrap_or_default())
            );
            match tools.iter_mut().find(|(i, _)| *i == id) {
                Some((_, v)) => *v = entry,
                None => tools.push((id, entry)),
            }
            Some(note)
        }
    }
}

fn preview(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    line.chars().take(60).collect()
}

/// The session's current mode from a `session/new` or `session/load` answer.
fn mode_of(result: &Value) -> ApprovalMode {
    match result["modes"]["currentModeId"].as_str() {
        Some("yolo") => ApprovalMode::Yolo,
        Some("autoEdit") => ApprovalMode::AutoEdit,
        Some("plan") => ApprovalMode::Plan,
        _ => ApprovalMode::Default,
    }
}

/// The browser-free method to authenticate with, from the environment the agent inherits.
fn auth_method() -> Option<&'static str> {
    let set = |n: &str| std::env::var_os(n).is_some_and(|v| !v.is_empty());
    if set("GEMINI_API_KEY") {
        Some("gemini-api-key")
    } else if std::env::var("GOOGLE_GENAI_USE_VERTEXAI").is_ok_and(|v| v == "true") {
        Some("vertex-ai")
    } else if set("GOOGLE_GEMINI_BASE_URL") {
        Some("gateway")
    } else {
        None
    }
}

fn cancelled(when: &str) -> Failure {
    Failure::new(
        ErrorKind::Cancelled,
        130,
        format!("the request was cancelled {when}"),
    )
}

fn spawn_failure(e: crate::gemini::process::SpawnError) -> Failure {
    use crate::gemini::process::SpawnError;
    let code = match e {
        SpawnError::NotFound(_) => 127,
        _ => 126,
    };
    Failure::new(ErrorKind::SpawnFailed, code, format!("{e} (gemini --acp)"))
}

/// A failed ACP exchange as a tool failure: API errors carry their HTTP status as the code.
fn agent_failure(agent: &Connection, e: AcpError, doing: &str) -> Failure {
    let mut f = match &e {
        AcpError::Rpc { code, message } => {
            // As on the CLI path: an API error's exit is its HTTP status & 0xFF (errors table).
            let kind = match code {
                429 if message.contains("quota") && message.contains("daily") => ErrorKind::QuotaExhausted,
                429 => ErrorKind::RateLimited,
                400 => ErrorKind::BadRequest,
                401 | 403 => ErrorKind::PermissionDenied,
                404 => ErrorKind::ModelNotFound,
                500..=599 => ErrorKind::ServerError,
                _ => ErrorKind::Error,
            };
            let exit = match code {
                400..=599 => (*code & 0xFF) as i32,
                _ => 1,
            };
            Failure::new(kind, exit, format!("{doing}: {message} (ACP error {code})"))
        }
        AcpError::Exited(how) => Failure::new(
            ErrorKind::Error,
            1,
            format!("the Gemini ACP agent ended while {doing} ({how}); it is restarted on the next call, and this prompt was not re-run"),
        ),
        AcpError::Timeout(method) => Failure::new(
            ErrorKind::Error,
            1,
            format!("the Gemini ACP agent did not answer {method} in time while {doing}; it was killed and is restarted on the next call"),
        ),
    };
    f.stderr_tail = agent.stderr_tail();
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_fold_into_the_answer() {
        let mut answer = Answer::default();
        let mut tools = Vec::new();
        let updates = [
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "in_progress", "title": "ls", "kind": "execute"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "a b"}}]}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        ];
        for u in updates {
            absorb(&mut answer, &mut tools, Inbound::Update(u));
        }
        let note = absorb(
            &mut answer,
            &mut tools,
            Inbound::Permission {
                tool_call: json!({"toolCallId": "t2", "title": "out.txt", "kind": "edit"}),
                options: json!([]),
                allowed: false,
                outcome: json!({"outcome": "cancelled"}),
            },
        );
        assert_eq!(answer.messages, "Hello");
        assert_eq!(answer.thought, "hmm");
        assert_eq!(note.as_deref(), Some("permission rejected: out.txt"));
        let calls: Vec<&Value> = tools.iter().map(|(_, v)| v).collect();
        assert_eq!(calls[0]["status"], "completed");
        assert_eq!(calls[0]["title"], "ls");
        assert_eq!(calls[0]["output"], "a b");
        assert_eq!(calls[1]["status"], "rejected");
    }

    #[test]
    fn the_transcript_keeps_every_message_and_how_the_turn_ended() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        let permission = Inbound::Permission {
            tool_call: json!({"toolCallId": "t1", "kind": "edit"}),
            options: json!([{"optionId": "cancel", "kind": "reject_once"}]),
            allowed: false,
            outcome: json!({"outcome": "selected", "optionId": "cancel"}),
        };
        let mut quiet = Fold::new(Answer::default(), false);
        quiet.absorb(Inbound::Update(chunk.clone()));
        assert_eq!(quiet.finish(json!({"kind": "cancelled"})).1, None);

        let mut fold = Fold::new(Answer::default(), true);
        fold.absorb(Inbound::Update(chunk.clone()));
        fold.absorb(permission);
        assert!(fold.tools_ran());
        let (answer, events) = fold.finish(json!({"kind": "stop", "stopReason": "end_turn"}));
        assert_eq!(answer.messages, "hi");
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(
            events,
            Some(vec![
                json!({"kind": "update", "update": chunk}),
                json!({"kind": "permission", "toolCall": {"toolCallId": "t1", "kind": "edit"},
                    "options": [{"optionId": "cancel", "kind": "reject_once"}],
                    "outcome": {"outcome": "selected", "optionId": "cancel"}, "approved": false}),
                json!({"kind": "stop", "stopReason": "end_turn"}),
            ])
        );
    }
}
