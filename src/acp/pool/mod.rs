//! The agents and their sessions: one agent process per workspace (and start flags: MCP server
//! filter, include directories), started on first use, shut down when idle, replaced after it has
//! opened `max_sessions` sessions, restarted after a crash or a hang. The `acp` set's `gemini`
//! reuses one session per agent until it has served `max_turns` prompts; the prompt tools on the
//! warm backend (`warm`) take a fresh session per call, made ahead of time, and prompt many
//! sessions of one agent at once. One prompt per session at a time; `session/new` and
//! `session/load` one at a time server-wide (the CLI's `projects.json` lock backs off
//! exponentially when they overlap).

pub mod warm;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use super::client::{AcpError, Connection, Inbound};
use crate::approval::ApprovalMode;
use crate::config::Config;
use crate::deadline::{Deadlines, Limit};
use crate::error::{ErrorKind, Failure, RunFacts};
use crate::gemini::launch::{spawn_failure, Launch};
use crate::gemini::outcome::unsupported_login;
use crate::gemini::process::RunSpec;
use crate::gemini::session::{self as cli_session, StartGates};
use crate::gemini::{command, inputs};
use crate::progress::{preview, Progress};
use crate::sync::lock;

/// Which agent a call goes to: the workspace, the MCP servers it may load and the directories
/// it may read besides the workspace (start-up flags: ACP has no per-session field for either).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    cwd: PathBuf,
    servers: Vec<String>,
    dirs: Vec<PathBuf>,
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
    /// The `acp` set's session of this workspace.
    session: Option<Session>,
    /// Every session the running agent holds (made or loaded), by id.
    known: HashMap<String, Session>,
    /// Fresh sessions made ahead of time for the prompt tools, never prompted.
    spares: Vec<Session>,
    /// Whether a task is making spares.
    replenishing: bool,
    /// Sessions the running agent made or loaded (it is replaced past `max_sessions`).
    opened: u32,
    /// Calls using the agent now: it is not stopped while one runs.
    running: usize,
    last_used: Option<Instant>,
}

impl State {
    /// Forgets the agent and everything it held.
    fn drop_agent(&mut self) -> Option<Arc<Connection>> {
        self.session = None;
        self.known.clear();
        self.spares.clear();
        self.opened = 0;
        self.agent.take()
    }
}

struct Slot {
    key: Key,
    /// Held for a whole `acp`-set call: one prompt on the workspace's session at a time.
    busy: tokio::sync::Mutex<()>,
    /// Held while the agent starts: one start per slot.
    starting: tokio::sync::Mutex<()>,
    /// Told when a spare session is ready, or when making spares stops.
    spare_made: tokio::sync::Notify,
    state: Mutex<State>,
}

/// Counts a call as using its slot's agent while alive.
struct Using(Arc<Slot>);

impl Using {
    fn new(slot: &Arc<Slot>) -> Self {
        lock(&slot.state).running += 1;
        Using(slot.clone())
    }
}

impl Drop for Using {
    fn drop(&mut self) {
        let mut st = lock(&self.0.state);
        st.running = st.running.saturating_sub(1);
        st.last_used = Some(Instant::now());
    }
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
    /// `--include-directories` of the agent: canonical, checked.
    pub dirs: Vec<PathBuf>,
    /// `approval_mode: "ask"`: permission requests become questions to the client's user.
    pub asking: Option<crate::ask::Asking>,
    /// The operator's deadlines (`GEMINICLI_MCP_*_TIMEOUT_MS`) for the turn; the runner narrows
    /// `total` to what a retry leaves of it.
    pub limits: Deadlines,
}

/// A prompt's outcome.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The session the prompt ran in.
    pub session_id: String,
    /// The agent's message chunks, concatenated.
    pub messages: String,
    /// The message chunks since the last tool event: the last model turn's text, what a one-shot
    /// run answers.
    pub last_turn: String,
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
    opened: Mutex<HashMap<(PathBuf, String), SystemTime>>,
    /// Held around every `session/new` and `session/load`, server-wide.
    session_ops: tokio::sync::Mutex<()>,
    /// One lock per session in use: one prompt per session at a time.
    session_locks: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    /// Prompts of the prompt tools running at once (`GEMINICLI_MCP_MAX_PROMPTS`).
    prompts: Arc<tokio::sync::Semaphore>,
    /// Until when the API asked every prompt to wait (its last rate-limit delay).
    cooldown: Mutex<Option<tokio::time::Instant>>,
}

impl Pool {
    /// A pool; nothing starts before the first call. `shutdown` stops every agent; `starts`
    /// are the workspaces' start gates, shared with the one-shot runs.
    pub fn new(config: Config, shutdown: CancellationToken, starts: Arc<StartGates>) -> Self {
        Pool {
            slots: Mutex::default(),
            shutdown,
            reaper: AtomicBool::new(false),
            starts,
            opened: Mutex::default(),
            session_ops: tokio::sync::Mutex::new(()),
            session_locks: Mutex::default(),
            prompts: Arc::new(tokio::sync::Semaphore::new(config.acp.max_prompts.max(1))),
            cooldown: Mutex::default(),
            config,
        }
    }

    /// The lock of session `id` (one prompt per session at a time).
    fn session_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = lock(&self.session_locks);
        if let Some(l) = locks.get(id).and_then(Weak::upgrade) {
            return l;
        }
        locks.retain(|_, l| l.strong_count() > 0);
        let l = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(id.to_string(), Arc::downgrade(&l));
        l
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
        progress: &Progress,
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
                .get(&(cwd.to_path_buf(), id.to_string()))
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
        progress
            .say(format!(
                "waiting {} s for the clock minute to turn before loading session {id}: Gemini CLI 0.61 destroys a session loaded in the minute it was made",
                wait.as_millis().div_ceil(1000)
            ))
            .await;
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
                    starting: tokio::sync::Mutex::new(()),
                    spare_made: tokio::sync::Notify::new(),
                    state: Mutex::default(),
                })
            })
            .clone()
    }

    /// Stops agents unused for `idle`, and agents that have opened `max_sessions` sessions as
    /// soon as they run nothing (the next call starts a fresh one); never one in use.
    fn stop_idle(&self, idle: Duration) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        for slot in slots {
            let Ok(_busy) = slot.busy.try_lock() else {
                continue;
            };
            let mut st = lock(&slot.state);
            if st.agent.is_none() || st.running > 0 || st.replenishing {
                continue;
            }
            let worn = st.opened >= self.config.acp.max_sessions;
            if worn || st.last_used.is_some_and(|t| t.elapsed() >= idle) {
                tracing::debug!(cwd = %slot.key.cwd.display(), worn, "ACP agent idle or worn: stopping it");
                if let Some(agent) = st.drop_agent() {
                    agent.kill();
                }
            }
        }
    }

    /// Each real agent holds hundreds of MiB: with GEMINICLI_MCP_MAX_AGENTS agents running, the
    /// least recently used idle one is stopped before another starts. Agents running a prompt
    /// are never stopped for this, so a burst over the bound still runs.
    fn make_room(&self, starting: &Key) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        let running = slots
            .iter()
            .filter(|s| lock(&s.state).agent.as_ref().is_some_and(|a| !a.is_dead()))
            .count();
        let bound = self
            .config
            .acp
            .max_agents
            .unwrap_or(self.config.max_concurrency);
        if running < bound.max(1) {
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
            if st.running > 0 {
                continue;
            }
            tracing::debug!(cwd = %slot.key.cwd.display(), "ACP agent limit reached: stopping the least recently used agent");
            if let Some(agent) = st.drop_agent() {
                agent.kill();
            }
            return;
        }
    }

    /// Stops every agent (server shutdown).
    pub fn stop_all(&self) {
        for slot in lock(&self.slots).values() {
            if let Some(agent) = lock(&slot.state).drop_agent() {
                agent.kill();
            }
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

    /// Forgets session `id` of workspace `cwd` on every agent (it was deleted): a later call
    /// with its id loads it, and finds it gone.
    pub fn forget(&self, cwd: &std::path::Path, id: &str) {
        // Its files are gone: no clock minute to wait out before the load that finds it gone.
        lock(&self.opened).remove(&(cwd.to_path_buf(), id.to_string()));
        for slot in lock(&self.slots).values() {
            if slot.key.cwd == cwd {
                retire(slot, id);
                lock(&slot.state).spares.retain(|s| s.id != id);
            }
        }
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
            dirs: Vec::new(),
        });
        let _using = Using::new(&slot);
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
        let _starting = tokio::select! {
            g = slot.starting.lock() => g,
            _ = ct.cancelled() => return Err(cancelled("while the agent was starting")),
        };
        {
            let mut st = lock(&slot.state);
            match &st.agent {
                Some(a) if !a.is_dead() => return Ok(a.clone()),
                Some(_) => {
                    st.drop_agent();
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
        let agent = Connection::start(&spec, self.config.kill_grace)
            .map_err(|e| spawn_failure(e, "gemini --acp"))?;
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
        st.drop_agent();
        st.agent = Some(agent.clone());
        Ok(agent)
    }

    /// The command line and environment of an agent ([`agent_spec`]).
    fn spec(&self, key: &Key) -> Result<RunSpec, Failure> {
        crate::policy::unchanged("workspace", &key.cwd)?;
        agent_spec(&Launch::resolve(&self.config)?, &self.config, key)
    }

    /// `session/new`, authenticating first when the agent asks for it and the environment
    /// names a method that needs no browser.
    async fn new_session(&self, slot: &Slot, agent: &Connection) -> Result<Session, Failure> {
        let _one_at_a_time = self.session_ops.lock().await;
        let t = Some(self.config.acp.request_timeout);
        let params = json!({"cwd": slot.key.cwd, "mcpServers": []});
        let mut answer = agent.request("session/new", params.clone(), t).await;
        if let Err(AcpError::Rpc {
            code: -32000,
            message,
        }) = &answer
        {
            if let Some(refused) = unsupported_login(message) {
                return Err(Failure::new(ErrorKind::AuthUnsupported, refused));
            }
            let Some(method) = auth_method() else {
                let f = Failure::new(
                    ErrorKind::AuthRequired,
                    format!("the Gemini CLI has no usable authentication ({message}); the server never opens a browser"),
                );
                // The fix for what the agent's settings and environment hold, as on one-shot.
                return Err(match self.spec(&slot.key) {
                    Ok(spec) => crate::gemini::oneshot::with_auth_fix_for(f, &slot.key.cwd, &spec),
                    Err(_) => f,
                });
            };
            agent
                .request("authenticate", json!({"methodId": method}), t)
                .await
                .map_err(|e| agent_failure(agent, e, "authenticating"))?;
            answer = agent.request("session/new", params, t).await;
        }
        let result = answer.map_err(|e| agent_failure(agent, e, "creating a session"))?;
        let id = result["sessionId"].as_str().unwrap_or_default().to_string();
        lock(&self.opened).insert((slot.key.cwd.clone(), id.clone()), SystemTime::now());
        let model = result["models"]["currentModelId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        lock(&slot.state).models = result.get("models").cloned().unwrap_or(Value::Null);
        let mode = ApprovalMode::from_acp_id(result["modes"]["currentModeId"].as_str());
        let session = Session {
            id,
            turns: 0,
            model,
            mode,
        };
        let mut st = lock(&slot.state);
        st.opened += 1;
        st.known.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// Runs one prompt: one attempt, never re-run here (a prompt whose agent died is reported,
    /// not repeated; the retry policy lives in `run`). Returns the outcome and whether a tool
    /// ran (or was asked for). With `transcript` (`full_output`), every message of the turn is
    /// appended to it, success or failure.
    pub async fn prompt(
        self: &Arc<Self>,
        call: PromptCall,
        ct: &CancellationToken,
        progress: &Progress,
        transcript: Option<&mut Vec<Value>>,
    ) -> (Result<Answer, Failure>, bool) {
        let slot = self.slot(Key {
            cwd: call.cwd.clone(),
            servers: call.servers.clone(),
            dirs: call.dirs.clone(),
        });
        let _using = Using::new(&slot);
        let _busy = tokio::select! {
            g = slot.busy.lock() => g,
            _ = ct.cancelled() => return (Err(cancelled("while another prompt ran in this workspace")), false),
        };
        let mut tools_ran = false;
        let result = self
            .prompt_locked(&slot, call, ct, progress, &mut tools_ran, transcript)
            .await;
        (result, tools_ran)
    }

    async fn prompt_locked(
        &self,
        slot: &Slot,
        call: PromptCall,
        ct: &CancellationToken,
        progress: &Progress,
        tools_ran: &mut bool,
        transcript: Option<&mut Vec<Value>>,
    ) -> Result<Answer, Failure> {
        let agent = self.agent(slot, ct).await?;
        let (session, fresh_gate) = self.session(slot, &agent, &call, ct, progress).await?;
        let session_lock = self.session_lock(&session.id);
        let _one_prompt = tokio::select! {
            g = session_lock.lock() => g,
            _ = ct.cancelled() => return Err(cancelled("while another prompt ran in this session")),
        };
        let blocks = prompt_blocks(&call).await?;
        let sid = session.id.clone();
        let (_gate, fold) = start_turn(
            slot,
            &agent,
            &session,
            fresh_gate,
            progress,
            transcript.is_some(),
        );
        let turn = self
            .turn(
                &agent,
                &session,
                blocks,
                fold,
                call.limits,
                ct,
                progress,
                call.asking.as_ref(),
            )
            .await?;
        *tools_ran = turn.fold.tools_ran();
        let end = turn.end();
        let (mut answer, events) = turn.fold.finish(end);
        if let (Some(out), Some(events)) = (transcript, events) {
            out.extend(events);
        }
        {
            let mut st = lock(&slot.state);
            if let Some(s) = st.session.as_mut().filter(|s| s.id == sid) {
                s.turns += 1;
            }
            if agent.is_dead() {
                st.drop_agent();
            }
        }
        let facts = |answer: Answer| RunFacts {
            session_id: Some(sid.clone()),
            model: Some(answer.model),
            partial_response: Some(answer.messages)
                .filter(|m| !m.is_empty())
                .map(std::sync::Arc::new),
            ..RunFacts::default()
        };
        if turn.cancelled {
            let mut facts = facts(answer);
            facts.model = None;
            return Err(cancelled("by the client").with_run(facts));
        }
        match turn.stopped {
            Some(Stop::OutputCap(cap)) => {
                return Err(output_cap_failure(cap).with_run(facts(answer)))
            }
            Some(Stop::Deadline(limit)) => {
                return Err(deadline_failure(call.limits, limit).with_run(facts(answer)))
            }
            None => {}
        }
        match turn.outcome {
            Ok(result) => {
                answer.stop_reason = result["stopReason"]
                    .as_str()
                    .unwrap_or("end_turn")
                    .to_string();
                Ok(answer)
            }
            Err(e) => Err(turn_failure(slot, &agent, &sid, e, facts(answer))),
        }
    }

    /// The session a prompt runs in — the one asked for (loaded when this agent does not hold
    /// it), else the workspace's own until it has served `max_turns` prompts, else a new one —
    /// in the call's approval mode and model. A session whose file may still hold no message
    /// comes with the workspace's start gate, taken.
    async fn session(
        &self,
        slot: &Slot,
        agent: &Connection,
        call: &PromptCall,
        ct: &CancellationToken,
        progress: &Progress,
    ) -> Result<(Session, Option<OwnedMutexGuard<()>>), Failure> {
        let (current, held) = {
            let st = lock(&slot.state);
            let held = call
                .session_id
                .as_ref()
                .and_then(|id| st.known.get(id).cloned());
            (st.session.clone(), held)
        };
        let mut loaded = false;
        let mut fresh_gate = None;
        let mut session = match (&call.session_id, current) {
            (Some(asked), Some(s)) if s.id == *asked => s,
            (Some(_), _) if held.is_some() => held.expect("checked"),
            (Some(asked), _) => {
                self.wait_out_session_minute(&slot.key.cwd, asked, ct, progress)
                    .await?;
                loaded = true;
                self.load(slot, agent, asked).await?
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
                // prompt, and any CLI start in the project meanwhile deletes it.
                fresh_gate = Some(self.start_gate(slot, ct).await?);
                self.new_session(slot, agent).await?
            }
        };
        lock(&slot.state).session = Some(session.clone());
        self.align(
            agent,
            &mut session,
            call.mode,
            call.model.as_deref(),
            loaded,
        )
        .await?;
        let mut st = lock(&slot.state);
        st.known.insert(session.id.clone(), session.clone());
        st.session = Some(session.clone());
        Ok((session, fresh_gate))
    }

    /// Puts `session` in approval mode `mode` and on `model` (when given), each only when it
    /// differs — the mode also when `barrier`: after a load the agent may still be replaying
    /// history (0.61 sends it after the response), and one more round trip, answered in order
    /// after those lines, is the barrier past which they have all been dropped, before the
    /// prompt's route exists.
    async fn align(
        &self,
        agent: &Connection,
        session: &mut Session,
        mode: ApprovalMode,
        model: Option<&str>,
        barrier: bool,
    ) -> Result<(), Failure> {
        let t = Some(self.config.acp.request_timeout);
        if barrier || session.mode != mode {
            agent
                .request(
                    "session/set_mode",
                    json!({"sessionId": session.id, "modeId": mode.acp_id()}),
                    t,
                )
                .await
                .map_err(|e| agent_failure(agent, e, "setting the approval mode"))?;
            session.mode = mode;
        }
        if let Some(model) = model.filter(|m| *m != session.model) {
            agent
                .request(
                    "session/set_model",
                    json!({"sessionId": session.id, "modelId": model}),
                    t,
                )
                .await
                .map_err(|e| agent_failure(agent, e, "setting the model"))?;
            session.model = model.to_string();
        }
        Ok(())
    }

    /// `session/load` of `asked`; a session the agent does not know is `session_not_found`.
    async fn load(&self, slot: &Slot, agent: &Connection, asked: &str) -> Result<Session, Failure> {
        // History replayed during the load arrives before its answer, while nothing routes
        // this session: none of it leaks into the answer.
        agent.unroute(asked);
        let _one_at_a_time = self.session_ops.lock().await;
        let r = agent
            .request(
                "session/load",
                json!({"sessionId": asked, "cwd": slot.key.cwd, "mcpServers": []}),
                Some(self.config.acp.request_timeout),
            )
            .await;
        // A failed load leaves its stub too (in the wrong project, for a session of another).
        remove_load_stubs(&slot.key.cwd, asked).await;
        match r {
            Ok(result) => {
                lock(&self.opened)
                    .insert((slot.key.cwd.clone(), asked.to_string()), SystemTime::now());
                let session = Session {
                    id: asked.to_string(),
                    turns: 0,
                    model: result["models"]["currentModelId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    mode: ApprovalMode::from_acp_id(result["modes"]["currentModeId"].as_str()),
                };
                let mut st = lock(&slot.state);
                if let Some(m) = result.get("models") {
                    st.models = m.clone();
                }
                st.opened += 1;
                st.known.insert(session.id.clone(), session.clone());
                Ok(session)
            }
            Err(AcpError::Rpc { code, message }) if code == -32603 || code == -32602 => {
                Err(Failure::new(
                    ErrorKind::SessionNotFound,
                    format!("session {asked} cannot be loaded in this workspace: {message}"),
                ))
            }
            Err(e) => Err(agent_failure(agent, e, "loading the session")),
        }
    }

    /// Sends the prompt and follows the turn to its end: updates folded in and reported as
    /// progress, a cancellation (the client's, or a deadline of `limits` passing) sent on to the
    /// agent, and the agent killed when it ignores it past the grace.
    #[allow(clippy::too_many_arguments)]
    #[expect(
        clippy::too_many_lines,
        reason = "one select loop over the turn's sources (updates, the answer, the client's cancel, the deadlines, the output cap, the grace) reads best whole"
    )]
    async fn turn(
        &self,
        agent: &Arc<Connection>,
        session: &Session,
        blocks: Vec<Value>,
        mut fold: Fold,
        limits: Deadlines,
        ct: &CancellationToken,
        progress: &Progress,
        asking: Option<&crate::ask::Asking>,
    ) -> Result<Turn, Failure> {
        let started = Instant::now();
        let first_content: Mutex<Option<Instant>> = Mutex::default();
        let last_activity: Mutex<Option<Instant>> = Mutex::default();
        let watch = crate::deadline::first_to_pass(
            limits,
            started,
            || *lock(&first_content),
            || *lock(&last_activity),
        );
        tokio::pin!(watch);
        let mut stopped: Option<Stop> = None;
        let cap = self.config.max_output_bytes;
        let (tx, mut rx) = mpsc::unbounded_channel();
        agent.route(&session.id, session.mode, tx);
        agent.ask(&session.id, asking.map(|a| a.ceiling));
        // Questions being put to the user; dropped (a rejection) when the turn ends first.
        let mut questions: Vec<AbortOnDrop<()>> = Vec::new();
        let sid = session.id.clone();
        let (mut reply, request_id) = agent
            .start_request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": blocks}),
            )
            .map_err(|e| agent_failure(agent, e, "sending the prompt"))?;
        let mut guard = PromptGuard {
            agent: agent.clone(),
            session: sid.clone(),
            grace: self.config.kill_grace,
            request_id,
            armed: true,
        };
        let mut cancel_sent: Option<tokio::time::Instant> = None;
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
                    let inbound = match inbound {
                        Inbound::Question { question, reply } => {
                            questions.push(put(question, reply, asking, progress));
                            continue;
                        }
                        other => other,
                    };
                    let now = Instant::now();
                    *lock(&last_activity) = Some(now);
                    if is_content(&inbound) {
                        lock(&first_content).get_or_insert(now);
                    }
                    observe(&mut fold, inbound, progress);
                    if cancel_sent.is_none() && fold.bytes() > cap {
                        tracing::debug!(cap, "the turn's answer passed the output cap: cancelling the prompt");
                        agent.notify("session/cancel", json!({"sessionId": sid}));
                        cancel_sent = Some(tokio::time::Instant::now());
                        stopped = Some(Stop::OutputCap(cap));
                    }
                }
                r = &mut reply => {
                    // Updates sent before the answer are already queued: take them too.
                    while let Ok(inbound) = rx.try_recv() {
                        observe(&mut fold, inbound, progress);
                    }
                    break r.unwrap_or_else(|_| Err(AcpError::Exited(agent.exit().unwrap_or_default())));
                }
                _ = ct.cancelled(), if cancel_sent.is_none() => {
                    agent.notify("session/cancel", json!({"sessionId": sid}));
                    cancel_sent = Some(tokio::time::Instant::now());
                }
                passed = &mut watch, if cancel_sent.is_none() => {
                    tracing::debug!(deadline = passed.name(), "a deadline passed: cancelling the prompt");
                    agent.notify("session/cancel", json!({"sessionId": sid}));
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
        Ok(Turn {
            fold,
            outcome,
            cancelled: cancel_sent.is_some() && stopped.is_none(),
            stopped,
        })
    }
}

/// Puts a permission question to the call's user: the asker's reply within its timeout (then a
/// rejection), or `cannot_ask` when the client has no way to be asked.
fn put(
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
enum Stop {
    /// A deadline of the call passed.
    Deadline(Limit),
    /// The answer and thoughts passed `GEMINICLI_MCP_MAX_OUTPUT_BYTES` (this many bytes).
    OutputCap(usize),
}

/// A turn's end: what was folded in, the prompt's answer, whether the client cancelled it, and
/// why the server did, if it did.
struct Turn {
    fold: Fold,
    outcome: Result<Value, AcpError>,
    cancelled: bool,
    stopped: Option<Stop>,
}

/// The failure of a turn whose answer passed the output cap (`cap` bytes).
fn output_cap_failure(cap: usize) -> Failure {
    Failure::new(
        ErrorKind::OutputLimit,
        format!("the agent's answer passed the output cap ({cap} bytes); its prompt was cancelled. Raise GEMINICLI_MCP_MAX_OUTPUT_BYTES or ask for a shorter answer"),
    )
}

/// The failure of a turn that `limit` of `limits` ended.
fn deadline_failure(limits: Deadlines, limit: Limit) -> Failure {
    let ms = limits.of(limit).map_or(0, |d| d.as_millis());
    Failure::new(
        ErrorKind::Timeout,
        format!("{}; the agent's prompt was cancelled", limit.passed(ms)),
    )
}

impl Turn {
    /// How the turn ended, as the transcript's last event.
    fn end(&self) -> Value {
        match self.stopped {
            Some(Stop::Deadline(limit)) => {
                return json!({"kind": "timeout", "deadline": limit.name()})
            }
            Some(Stop::OutputCap(cap)) => return json!({"kind": "output_limit", "capBytes": cap}),
            None => {}
        }
        match (&self.outcome, self.cancelled) {
            (_, true) => json!({"kind": "cancelled"}),
            (Ok(result), false) => {
                json!({"kind": "stop", "stopReason": result["stopReason"].as_str().unwrap_or("end_turn")})
            }
            (Err(AcpError::Rpc { code, message }), false) => {
                json!({"kind": "error", "code": code, "message": message})
            }
            (Err(e), false) => json!({"kind": "error", "message": e.to_string()}),
        }
    }
}

/// Folds one inbound message in and reports it: content (text, thoughts, tool calls) counts as
/// arrived, and the message's note becomes the call's latest event (tool events at once).
fn observe(fold: &mut Fold, inbound: Inbound, progress: &Progress) {
    let (content, urgent) = match &inbound {
        Inbound::Update(u) => {
            let kind = u["sessionUpdate"].as_str().unwrap_or_default();
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
fn start_turn(
    slot: &Slot,
    agent: &Connection,
    session: &Session,
    gate: Option<OwnedMutexGuard<()>>,
    progress: &Progress,
    transcript: bool,
) -> (Option<cli_session::HeldGate>, Fold) {
    progress.set_session(session.id.clone());
    let held =
        gate.map(|gate| cli_session::hold_start_gate(gate, slot.key.cwd.clone(), progress.clone()));
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
fn turn_failure(
    slot: &Slot,
    agent: &Connection,
    sid: &str,
    e: AcpError,
    facts: RunFacts,
) -> Failure {
    let wedged = is_wedge(&e);
    let mut f = agent_failure(agent, e, "running the prompt");
    if wedged {
        retire(slot, sid);
        f = f.note(WEDGE_NOTE);
    }
    let stderr = f.run.stderr_tail.clone();
    f.with_run(RunFacts {
        stderr_tail: stderr,
        ..facts
    })
}

/// Said of a session retired because its history outgrew the model's context window.
const WEDGE_NOTE: &str = "the session's history no longer fits the model's context window (a tool output too large), and every later turn of it would fail the same way: the agent dropped it; the next call starts a fresh session, and its session_id loads it again with large tool outputs cut";

/// Whether a prompt's error is the API's context-window refusal, which a live session never
/// recovers from once a tool output put it there.
fn is_wedge(e: &AcpError) -> bool {
    matches!(e, AcpError::Rpc { message, .. }
        if message.contains("input token count") && message.contains("exceeds"))
}

/// Forgets session `id` on the slot's agent: the `acp` set's next call makes a fresh one, and a
/// continuation loads it again.
fn retire(slot: &Slot, id: &str) {
    let mut st = lock(&slot.state);
    st.known.remove(id);
    if st.session.as_ref().is_some_and(|s| s.id == id) {
        st.session = None;
    }
}

/// Whether a message is content for the first-content deadline: assistant text or a tool event.
fn is_content(inbound: &Inbound) -> bool {
    match inbound {
        Inbound::Update(u) => matches!(
            u["sessionUpdate"].as_str(),
            Some("agent_message_chunk" | "tool_call" | "tool_call_update")
        ),
        Inbound::Permission { .. } | Inbound::Question { .. } => true,
    }
}

/// Removes the stub that Gemini CLI 0.61's `session/load` leaves in the current minute's chat file
/// (two headers, no message; later prompts go to the session's own file): the next CLI start in
/// the project would otherwise delete every file of the session, the real one included.
async fn remove_load_stubs(cwd: &std::path::Path, id: &str) {
    let what = "the stub a session load left";
    cli_session::tidy_stubs(cwd, id, cli_session::remove_stubs, what).await;
}

/// The prompt's content blocks: the text, the context as an embedded resource, the image.
async fn prompt_blocks(call: &PromptCall) -> Result<Vec<Value>, Failure> {
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
            .map_err(|e| Failure::invalid_input(format!("image_path {}: {e}", path.display())))?;
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        blocks.push(json!({"type": "image", "mimeType": mime, "data": data}));
    }
    Ok(blocks)
}

/// Aborts a task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
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
    /// One entry per permission question decided, in order: a question is its own record, not
    /// its tool call's (two questions may name one tool-call id).
    approvals: Vec<Value>,
    events: Option<Vec<Value>>,
}

impl Fold {
    /// Starts from `answer` (its session, model and pid); `transcript`: keep every message.
    pub fn new(answer: Answer, transcript: bool) -> Self {
        Fold {
            answer,
            tools: Vec::new(),
            approvals: Vec::new(),
            events: transcript.then(Vec::new),
        }
    }

    /// Bytes of answer and thought text folded in so far.
    fn bytes(&self) -> usize {
        self.answer.messages.len() + self.answer.thought.len()
    }

    /// Whether a tool call (or a permission request for one) was seen.
    pub fn tools_ran(&self) -> bool {
        !self.tools.is_empty()
    }

    /// The permissions put to the user (`approval_mode: "ask"`), in order: the tool's title and
    /// kind, `approved` or `rejected`, and who decided (`user`, `timeout`, `declined`, …).
    pub fn approvals(&self) -> Vec<Value> {
        self.approvals.clone()
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
                    decided_by,
                } => {
                    let mut event = json!({"kind": "permission", "toolCall": tool_call,
                        "options": options, "outcome": outcome, "approved": allowed});
                    if let Some(by) = decided_by {
                        event["decidedBy"] = json!(by);
                    }
                    event
                }
                Inbound::Question { question, .. } => {
                    json!({"kind": "question", "title": question.title, "toolKind": question.kind})
                }
            });
        }
        if let Inbound::Permission {
            tool_call,
            allowed,
            decided_by: Some(by),
            ..
        } = &inbound
        {
            let permission = if *allowed { "approved" } else { "rejected" };
            self.approvals.push(
                json!({"title": tool_call["title"], "kind": tool_call["kind"],
                "permission": permission, "decidedBy": by}),
            );
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
                    answer.last_turn.push_str(text);
                    None
                }
                "agent_thought_chunk" => {
                    answer.thought.push_str(text);
                    Some(format!("thinking: {}", preview(text)))
                }
                "tool_call" | "tool_call_update" => {
                    answer.last_turn.clear();
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
        Inbound::Question { .. } => None,
        Inbound::Permission {
            tool_call,
            allowed,
            decided_by,
            ..
        } => {
            let id = tool_call["toolCallId"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let status = if allowed { "approved" } else { "rejected" };
            let mut entry = json!({"id": id, "title": tool_call["title"], "kind": tool_call["kind"],
                "status": status, "permission": status});
            if let Some(by) = decided_by {
                entry["decidedBy"] = json!(by);
            }
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

/// The command line and environment of an agent of `launch` for `key`: a call's environment,
/// trust given, no browser.
fn agent_spec(launch: &Launch, config: &Config, key: &Key) -> Result<RunSpec, Failure> {
    let mut args: Vec<std::ffi::OsString> = inputs::ACP_ARGS.iter().map(Into::into).collect();
    for name in &key.servers {
        command::validate_server_name(name)?;
        args.push(format!("{}={name}", inputs::flag::ALLOWED_MCP_SERVER_NAMES).into());
    }
    for dir in &key.dirs {
        crate::policy::unchanged("include_directories", dir)?;
        let mut arg = std::ffi::OsString::from(format!("{}=", inputs::flag::INCLUDE_DIRECTORIES));
        arg.push(dir.as_os_str());
        args.push(arg);
    }
    let mut spec = launch.spec(config, &key.cwd, args, Vec::new());
    spec.env
        .extend(inputs::ACP_ENV.iter().map(|(k, v)| (k.into(), v.into())));
    Ok(spec)
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
    Failure::cancelled(format!("the request was cancelled {when}"))
}

/// A failed ACP exchange as a tool failure: an API error carries its HTTP status as the code
/// and is classified as on the one-shot path (`ErrorKind::from_http`).
fn agent_failure(agent: &Connection, e: AcpError, doing: &str) -> Failure {
    let f = match &e {
        AcpError::Rpc { message, .. } if unsupported_login(message).is_some() => Failure::new(
            ErrorKind::AuthUnsupported,
            unsupported_login(message).unwrap_or_default(),
        ),
        AcpError::Rpc { code, message } => {
            let status = u16::try_from(*code).ok().filter(|c| (400..=599).contains(c));
            let kind = ErrorKind::from_http(status, message).unwrap_or(ErrorKind::Error);
            // As on the one-shot path: an API error's exit is its HTTP status & 0xFF.
            let exit = status.map_or(1, |s| i32::from(s & 0xFF));
            Failure::with_exit(kind, exit, format!("{doing}: {message} (ACP error {code})"))
                .with_retry_delay(crate::gemini::outcome::retry_delay_ms(message))
        }
        AcpError::Exited(how) => Failure::new(
            ErrorKind::Error,
            format!("the Gemini ACP agent ended while {doing} ({how}); it is restarted on the next call, and this prompt was not re-run"),
        ),
        AcpError::Timeout(method) => Failure::new(
            ErrorKind::Error,
            format!("the Gemini ACP agent did not answer {method} in time while {doing}; it was killed and is restarted on the next call"),
        ),
    };
    f.with_run(RunFacts {
        stderr_tail: agent.stderr_tail(),
        ..RunFacts::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag and variable of an agent with every option set is in the inventory.
    #[test]
    fn an_agents_inputs_are_all_in_the_inventory() {
        let launch = Launch {
            program: PathBuf::from("/bin/gemini"),
            prefix: Vec::new(),
            via: "test".into(),
        };
        let dir = std::env::temp_dir();
        let key = Key {
            cwd: dir.clone(),
            servers: vec!["github".into()],
            dirs: vec![dir],
        };
        let config = Config {
            env_policy: crate::config::EnvPolicy::Minimal,
            ..Config::default()
        };
        let spec = agent_spec(&launch, &config, &key).unwrap();
        assert_eq!(spec.args.len(), inputs::ACP_ARGS.len() + 2);
        for arg in &spec.args {
            inputs::check_arg(&arg.to_string_lossy(), inputs::By::Warm).unwrap();
        }
        let base = launch.spec(&config, &key.cwd, [], Vec::new());
        let mut with_acp = agent_spec(&launch, &config, &key).unwrap().env;
        with_acp.retain(|(k, _)| !base.env.iter().any(|(b, _)| b == k));
        assert!(!with_acp.is_empty(), "the agent's own variables");
        for (name, _) in with_acp {
            inputs::check_env(&name.to_string_lossy(), inputs::By::Warm).unwrap();
        }
    }

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
                decided_by: None,
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
    fn every_question_decided_is_one_approval_even_under_a_shared_tool_call_id() {
        let mut fold = Fold::new(Answer::default(), false);
        for (n, allowed) in [(0, true), (1, false), (2, true)] {
            fold.absorb(Inbound::Permission {
                tool_call: json!({"toolCallId": "same-ms", "title": format!("cmd {n}"), "kind": "execute"}),
                options: json!([]),
                allowed,
                outcome: json!({"outcome": "selected", "optionId": "x"}),
                decided_by: Some("user"),
            });
        }
        let approvals = fold.approvals();
        assert_eq!(approvals.len(), 3, "{approvals:?}");
        assert_eq!(approvals[1]["title"], "cmd 1");
        assert_eq!(approvals[1]["permission"], "rejected");
        assert_eq!(approvals[2]["permission"], "approved");
        assert_eq!(approvals[0]["decidedBy"], "user");
    }

    #[test]
    fn the_transcript_keeps_every_message_and_how_the_turn_ended() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        let permission = Inbound::Permission {
            tool_call: json!({"toolCallId": "t1", "kind": "edit"}),
            options: json!([{"optionId": "cancel", "kind": "reject_once"}]),
            allowed: false,
            outcome: json!({"outcome": "selected", "optionId": "cancel"}),
            decided_by: None,
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
