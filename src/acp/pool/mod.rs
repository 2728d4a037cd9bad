//! The agents and their sessions: one agent process per workspace (and start flags: MCP server
//! filter, include directories), started on first use, shut down when idle, replaced after it has
//! opened `max_sessions` sessions, restarted after a crash or a hang. The `acp` set's `gemini`
//! reuses one session per agent until it has served `max_turns` prompts; the prompt tools on the
//! warm backend (`warm`) take a fresh session per call, made ahead of time, and prompt many
//! sessions of one agent at once. One prompt per session at a time; `session/new` and
//! `session/load` one at a time server-wide (the CLI's `projects.json` lock backs off
//! exponentially when they overlap).
//!
//! By concern: this file holds the pool (its slots, agents started and stopped, sessions made);
//! `slots` a workspace's slot and what its agent holds; `agent` an agent's command line and
//! failures; `call` a prompt's request and answer; `turn` one turn on an agent, for both uses;
//! `fold` the turn's messages folded into the answer; `prompt` the `acp` set's prompt; `warm` the
//! prompt tools on the warm backend. Their imports run one way: `slots` and `call` at the
//! bottom, then `agent`, `fold` and `turn`, this file, and `prompt` and `warm` on top.

mod agent;
mod call;
mod fold;
mod prompt;
mod slots;
mod turn;
pub mod warm;

pub use call::{Answer, Block, Call, Ran};
pub use fold::Fold;

use agent::{agent_failure, agent_spec, auth_method, cancelled, resident_mib};
use slots::{retire, Key, Session, Slot, Using};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::client::{AcpError, Connection};
use super::wire::SessionResult;
use crate::approval::ApprovalMode;
use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::gemini::launch::{spawn_failure, Launch};
use crate::gemini::outcome::unsupported_login;
use crate::gemini::process::RunSpec;
use crate::gemini::session::{self as cli_session, StartGates};
use crate::progress::Progress;
use crate::sync::lock;

/// How many times an agent that exits 199 at start ("restart me") is started again.
const AGENT_RESTARTS: u32 = 2;

/// How long after an agent could not start its workspace's prompt-tool calls run one-shot
/// without trying again (each try may wait out `GEMINICLI_MCP_ACP_REQUEST_TIMEOUT_MS`).
const START_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Whether an agent that failed to start with `f` leaves a one-shot run a chance: it refused
/// ACP mode or a flag of it, died or hung before answering `initialize`. A missing CLI, a login
/// it cannot use, a refused path or a cancellation would fail a one-shot run alike.
fn one_shot_may_answer(f: &Failure) -> bool {
    matches!(
        f.kind,
        ErrorKind::Error | ErrorKind::Unknown | ErrorKind::CliTooOld
    )
}

/// The failure of an agent whose selected login does not work, where authenticating with the
/// environment's `method` would cost the user that login: the fix names both ways out.
fn kept_login(message: &str, selected: &str, file: &std::path::Path, method: &str) -> Failure {
    let file = file.display();
    let or_remove = if method == "gemini-api-key" {
        ", or remove it"
    } else {
        ""
    };
    Failure::new(
        ErrorKind::AuthRequired,
        format!(
            "the Gemini CLI cannot use the login its settings select (`security.auth.selectedType` \"{selected}\" in {file}): {}. The server does not switch the agent to {method}: that would delete the cached credentials of the selected login and rewrite the setting",
            message.trim_end_matches('.')
        ),
    )
    .with_fix(format!(
        "set `security.auth.selectedType` to \"{method}\" in {file}{or_remove} to use the server's {method}; or, to keep the {selected} login, run `gemini` in a terminal and log in again"
    ))
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

    /// Stops agents unused for `idle`, and worn ones ([`Pool::stop_if_worn`]).
    fn stop_idle(&self, idle: Duration) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        for slot in slots {
            self.stop_if_worn(&slot, Some(idle));
        }
    }

    /// Stops the slot's agent when it runs nothing (no call, no spare being made) and has opened
    /// `max_sessions` sessions, grown past `max_agent_mb` of resident memory or, given `idle`,
    /// been unused that long: the next call starts a fresh one. Called when a call ends and on
    /// the pool's tick; never stops an agent in use.
    fn stop_if_worn(&self, slot: &Slot, idle: Option<Duration>) {
        let Ok(_busy) = slot.busy.try_lock() else {
            return;
        };
        let mut st = lock(&slot.state);
        if st.agent.is_none() || st.running > 0 || st.replenishing {
            return;
        }
        let grown = st
            .agent
            .as_ref()
            .and_then(|a| resident_mib(a.pid()))
            .filter(|mib| *mib > self.config.acp.max_agent_mb);
        if let Some(mib) = grown {
            tracing::info!(cwd = %slot.key.cwd.display(), mib, "ACP agent past GEMINICLI_MCP_ACP_MAX_AGENT_MB: replacing it");
        }
        let worn = st.opened >= self.config.acp.max_sessions || grown.is_some();
        let unused = idle.is_some_and(|idle| st.last_used.is_some_and(|t| t.elapsed() >= idle));
        if worn || unused {
            tracing::debug!(cwd = %slot.key.cwd.display(), worn, "ACP agent idle or worn: stopping it");
            if let Some(agent) = st.drop_agent() {
                agent.kill();
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
                lock(&slot.state).spares.retain(|s| s.session.id != id);
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
        let init = json!({
            "protocolVersion": 1,
            // No `fs` (nor terminal) capability: the agent uses its own file system tools.
            "clientCapabilities": {},
            "clientInfo": {"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")},
        });
        let mut restarts = 0;
        let (agent, result) = loop {
            let agent = Connection::start(&spec, self.config.kill_grace)
                .map_err(|e| spawn_failure(e, "gemini --acp"))?;
            let answer = tokio::select! {
                r = agent.request("initialize", init.clone(), Some(self.config.acp.request_timeout)) => r,
                _ = ct.cancelled() => {
                    agent.kill();
                    return Err(cancelled("while the agent was starting"));
                }
            };
            match answer {
                Ok(r) => break (agent, r),
                // Exit 199: the CLI asks to be started again, as its own launcher would.
                Err(AcpError::Exited(how))
                    if how.ends_with("exit 199") && restarts < AGENT_RESTARTS =>
                {
                    restarts += 1;
                    tracing::info!(restarts, "the ACP agent asked to be restarted (exit 199)");
                }
                Err(e) => {
                    agent.kill();
                    let f = agent_failure(&agent, e, "starting the agent");
                    if one_shot_may_answer(&f) && !ct.is_cancelled() {
                        tracing::warn!(
                            workspace = %slot.key.cwd.display(),
                            "the Gemini ACP agent could not start ({}); the prompt tools run one-shot there for {} s",
                            f.message,
                            START_RETRY_AFTER.as_secs()
                        );
                        lock(&slot.state).start_failed = Some((Instant::now(), f.clone()));
                    }
                    return Err(f);
                }
            }
        };
        let mut st = lock(&slot.state);
        st.start_failed = None;
        st.agent_info = result.get("agentInfo").cloned().unwrap_or(Value::Null);
        st.drop_agent();
        st.agent = Some(agent.clone());
        Ok(agent)
    }

    /// An `auth_required` failure with the fix a one-shot run's would get: the settings file
    /// whose leftover `selectedType` stops the agent's key, when that is the obstacle.
    fn login_fix(&self, slot: &Slot, f: Failure) -> Failure {
        if f.kind != ErrorKind::AuthRequired || f.fix.is_some() {
            return f;
        }
        match self.spec(&slot.key) {
            Ok(spec) => crate::gemini::auth::with_auth_fix_for(f, &slot.key.cwd, &spec),
            Err(_) => f,
        }
    }

    /// Why the slot's agent could not start, when that was under [`START_RETRY_AFTER`] ago.
    fn failed_lately(&self, slot: &Slot) -> Option<Failure> {
        let st = lock(&slot.state);
        let (at, f) = st.start_failed.as_ref()?;
        (at.elapsed() < START_RETRY_AFTER).then(|| f.clone())
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
                return Err(self.login_fix(slot, f));
            };
            // `authenticate` with another type than the settings select deletes that type's
            // cached credentials and rewrites the user's setting (CLI 0.61's agent, read in its
            // source): the user's login is theirs to change, as on the one-shot path.
            if let Ok(spec) = self.spec(&slot.key) {
                if let Some((selected, file)) =
                    crate::gemini::auth::selected_type_for(&slot.key.cwd, &spec)
                        .filter(|(selected, _)| selected != method)
                {
                    return Err(kept_login(message, &selected, &file, method));
                }
            }
            agent
                .request("authenticate", json!({"methodId": method}), t)
                .await
                .map_err(|e| agent_failure(agent, e, "authenticating"))?;
            answer = agent.request("session/new", params, t).await;
        }
        let result = answer.map_err(|e| agent_failure(agent, e, "creating a session"))?;
        let read = SessionResult::read(&result);
        let id = read.session_id.clone();
        lock(&self.opened).insert((slot.key.cwd.clone(), id.clone()), SystemTime::now());
        let model = read.model();
        lock(&slot.state).models = result.get("models").cloned().unwrap_or(Value::Null);
        let mode = ApprovalMode::from_acp_id(read.mode());
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
}
