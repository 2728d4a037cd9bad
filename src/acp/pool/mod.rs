//! The agents and their sessions: one agent process per workspace (and start flags: MCP server
//! filter, include directories), started on first use, shut down when idle, replaced after it has
//! opened `max_sessions` sessions, restarted after a crash or a hang. The `acp` set's `gemini`
//! reuses one session per agent until it has served `max_turns` prompts; the prompt tools on the
//! warm backend (`warm`) take a fresh session per call, made ahead of time, and prompt many
//! sessions of one agent at once. One prompt per session at a time; `session/new` and
//! `session/load` one at a time server-wide (the CLI's `projects.json` lock backs off
//! exponentially when they overlap).
//!
//! By concern: this file holds the pool (its slots; agents started; sessions made, loaded and
//! put in a call's mode and model; what spans agents: the start gates, the server-wide order of
//! `session/new` and `session/load`, the prompt bound, the rate-limit pause); `agent` an agent's
//! key, command line and failures;
//! `slots` a workspace's slot and the task that owns what its agent holds (its sessions, spares
//! and counts, its start and stop: calls send it commands; it starts the agent, makes its spares
//! and opens each call's session as child tasks, through the pool's side of them, `PoolWork`);
//! `call` a prompt's
//! request and answer; `turn` one turn on an agent, for both uses; `fold` the turn's messages
//! folded into the answer; `prompt` the `acp` set's prompt; `warm` the prompt tools on the warm
//! backend.
//! Their imports run one way: `agent` and `call` at the bottom, then `slots`, `fold` and
//! `turn`, this file, and `prompt` and `warm` on top.
//!
//! What an agent holds is owned by its slot's task; what spans agents is under three locks:
//! - `registry` (a plain mutex): the slots, the sessions made or loaded (for the clock minute a
//!   load must wait out), the sessions' locks and the rate-limit pause. Each is looked at or
//!   changed in a few steps and never held across a wait, so one lock serves them all.
//! - `session_ops` (async): `session/new` and `session/load` one at a time server-wide, held
//!   across the request, since the CLI's `projects.json` lock backs off exponentially when they
//!   overlap.
//! - a `SessionLock` per session in use (async): one prompt per session at a time, held across
//!   the prompt, the next call waiting its turn.
//!
//! A call sends its slot's task one command for the agent (`Agent`) and one for its session
//! (`Open`), and awaits one reply to each. The opening (the session's lock, the clock minute a
//! load waits out, the load, a spare or a new session behind the start gate, the mode and model,
//! the record) runs as the task's child task, on the pool's side (`Pool::ready` for the prompt
//! tools, `Pool::workspace_ready` for the `acp` set). What the call holds after is what the reply
//! hands it: the guard of its session's lock and, for a session never prompted, the start gate's
//! guard. It keeps them across its prompt, which runs in the call: the prompt's end, not the
//! task, is when the next prompt of the session may start and when a CLI start may delete files
//! again (the gate is let go of once the prompt is recorded). `list_models`' session, made when
//! the agent has said nothing of its models yet, is the task's child's too (`Describe`).

mod agent;
mod call;
mod fold;
mod prompt;
mod replay;
mod slots;
mod turn;
pub mod warm;

pub use call::{Answer, Block, Call, Ran};
pub use fold::Fold;

use agent::{agent_failure, agent_spec, auth_method, cancelled, Key};
use slots::{Io, Mailbox, Opening, Ready, Session, Slot, Spared, Using, Wear, Whose, Work};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::client::{AcpError, Connection};
use super::departures::{ModeOf, SetSessionModelRequest, AUTH_REQUIRED, LOAD_NOT_FOUND};
use crate::approval::ApprovalMode;
use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::gemini::gate::{self, GateWait, StartGates, StartGuard, Waiter};
use crate::gemini::launch::{spawn_failure, Launch};
use crate::gemini::outcome::unsupported_login;
use crate::gemini::process::RunSpec;
use crate::gemini::session as cli_session;
use crate::progress::Progress;
use crate::sync::lock;
use agent_client_protocol_schema::v1 as acp;

/// How many times an agent that exits 199 at start ("restart me") is started again.
const AGENT_RESTARTS: u32 = 2;

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

/// The sessions this server made or loaded, by workspace and id, with when. Only a session of
/// the current clock minute matters (a load in that minute is what the CLI gets wrong), so each
/// note forgets those of earlier minutes: with a fresh session a call, the map would grow by one
/// a call.
#[derive(Default)]
struct Opened(HashMap<(PathBuf, String), SystemTime>);

/// The clock minute of `t`, counted from the epoch.
fn minute_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 60)
}

impl Opened {
    fn note(&mut self, cwd: &std::path::Path, id: &str, at: SystemTime) {
        let minute = minute_of(at);
        self.0.retain(|_, t| minute_of(*t) >= minute);
        self.0.insert((cwd.to_path_buf(), id.to_string()), at);
    }

    /// Whether session `id` of `cwd` was made or loaded in the clock minute of `now`.
    fn in_minute_of(&self, cwd: &std::path::Path, id: &str, now: SystemTime) -> bool {
        self.0
            .get(&(cwd.to_path_buf(), id.to_string()))
            .is_some_and(|t| minute_of(*t) == minute_of(now))
    }

    fn forget(&mut self, cwd: &std::path::Path, id: &str) {
        self.0.remove(&(cwd.to_path_buf(), id.to_string()));
    }
}

/// The lock a prompt holds on its session: one prompt per session at a time, the next waiting
/// its turn.
type SessionLock = tokio::sync::Mutex<()>;

/// What the pool keeps across calls, under one lock ([`Pool`]'s `registry`): each part is looked
/// at or changed in a few steps and never held across a wait.
#[derive(Default)]
struct Registry {
    /// The slots by key; a vacant one no call holds is let go of when a new key comes.
    slots: HashMap<Key, Arc<Slot>>,
    /// When this server made (or last loaded) each session: the minute a load must not happen
    /// in, when the session's chat files cannot be read.
    opened: Opened,
    /// The lock of each session in use, while a call holds it.
    session_locks: HashMap<String, Weak<SessionLock>>,
    /// Until when the API asked every prompt to wait (its last rate-limit delay).
    cooldown: Option<tokio::time::Instant>,
}

/// All agents of the server: a slot per workspace (and start flags), each with the task that
/// starts and keeps its agent and sessions ([`slots`]); what spans agents stays here, and the
/// I/O a slot's task spawns reaches it through `PoolWork`.
pub struct Pool {
    config: Config,
    /// The slots, the sessions opened, the sessions' locks and the rate-limit pause.
    registry: Mutex<Registry>,
    shutdown: CancellationToken,
    /// The workspaces' start gates, shared with the one-shot runs: an agent's start-up deletes
    /// the project's session files that hold no message yet, as every CLI start does.
    starts: Arc<StartGates>,
    /// Held around every `session/new` and `session/load`, server-wide.
    session_ops: tokio::sync::Mutex<()>,
    /// Prompts of the prompt tools running at once (`GEMINICLI_MCP_MAX_PROMPTS`).
    prompts: Arc<tokio::sync::Semaphore>,
}

impl Pool {
    /// A pool; nothing starts before the first call. `shutdown` stops every agent; `starts`
    /// are the workspaces' start gates, shared with the one-shot runs.
    pub fn new(config: Config, shutdown: CancellationToken, starts: Arc<StartGates>) -> Self {
        Pool {
            registry: Mutex::default(),
            shutdown,
            starts,
            session_ops: tokio::sync::Mutex::new(()),
            prompts: Arc::new(tokio::sync::Semaphore::new(config.acp.max_prompts.max(1))),
            config,
        }
    }

    /// The lock of session `id` (one prompt per session at a time).
    fn session_lock(&self, id: &str) -> Arc<SessionLock> {
        let locks = &mut lock(&self.registry).session_locks;
        if let Some(l) = locks.get(id).and_then(Weak::upgrade) {
            return l;
        }
        locks.retain(|_, l| l.strong_count() > 0);
        let l = Arc::new(SessionLock::new(()));
        locks.insert(id.to_string(), Arc::downgrade(&l));
        l
    }

    /// Takes the start gate of workspace `cwd` (see `starts`).
    async fn start_gate(
        &self,
        cwd: &std::path::Path,
        ct: &CancellationToken,
        waiter: Waiter<'_>,
    ) -> Result<StartGuard, Failure> {
        let began = std::time::Instant::now();
        self.starts
            .lock(cwd, ct, waiter)
            .await
            .map_err(|w| match w {
                GateWait::Cancelled => {
                    cancelled("while another Gemini CLI started in this workspace")
                }
                GateWait::Deadline(limit) => gate::deadline_failure(limit, waiter, began),
            })
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
            lock(&self.registry).opened.in_minute_of(cwd, id, now)
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

    /// The slot of `key`, its task started on first use. A new key first lets go of the slots
    /// that keep nothing and that no call holds, so a server that sees many workspaces keeps a
    /// task only for those with an agent (or a failed start to remember).
    fn slot(self: &Arc<Self>, key: Key) -> Arc<Slot> {
        let slots = &mut lock(&self.registry).slots;
        if let Some(slot) = slots.get(&key) {
            return slot.clone();
        }
        slots::let_go_of_vacant(slots);
        let wear = Wear {
            max_sessions: self.config.acp.max_sessions,
            max_agent_mb: self.config.acp.max_agent_mb,
            idle: self.config.acp.idle,
            spares: self.config.acp.spare_sessions,
        };
        let work = Arc::new(PoolWork(Arc::downgrade(self)));
        let slot = Slot::start(key.clone(), wear, self.shutdown.clone(), work);
        slots.insert(key, slot.clone());
        slot
    }

    /// The slots, for a look at each.
    fn all_slots(&self) -> Vec<Arc<Slot>> {
        lock(&self.registry).slots.values().cloned().collect()
    }

    /// Each real agent holds hundreds of MiB: with GEMINICLI_MCP_MAX_AGENTS agents running, the
    /// least recently used idle one is stopped before another starts. Agents in use are never
    /// stopped for this, so a burst over the bound still runs.
    async fn make_room(&self, starting: &Key) {
        let bound = self
            .config
            .acp
            .max_agents
            .unwrap_or(self.config.max_concurrency);
        let mut running = 0;
        let mut candidates = Vec::new();
        for slot in self.all_slots() {
            let Some(facts) = slot.room_facts().await.filter(|f| f.alive) else {
                continue;
            };
            running += 1;
            if slot.key != *starting {
                candidates.push((facts.last_used, slot));
            }
        }
        if running < bound.max(1) {
            return;
        }
        candidates.sort_by_key(|(used, _)| *used);
        for (_, slot) in candidates {
            if slot.stop_for_room().await {
                return;
            }
        }
    }

    /// Forgets the session of `cwd` (every workspace when `None`); the next call starts a fresh
    /// one. Returns the workspaces and sessions dropped.
    pub async fn reset(&self, cwd: Option<&PathBuf>) -> Vec<(PathBuf, String)> {
        let mut dropped = Vec::new();
        for slot in self.all_slots() {
            if cwd.is_some_and(|c| *c != slot.key.cwd) {
                continue;
            }
            if let Some(id) = slot.reset().await {
                dropped.push((slot.key.cwd.clone(), id));
            }
        }
        dropped
    }

    /// Forgets session `id` of workspace `cwd` on every agent (it was deleted): a later call
    /// with its id loads it, and finds it gone.
    pub fn forget(&self, cwd: &std::path::Path, id: &str) {
        // Its files are gone: no clock minute to wait out before the load that finds it gone.
        lock(&self.registry).opened.forget(cwd, id);
        for slot in self.all_slots() {
            if slot.key.cwd == cwd {
                slot.forget(id);
            }
        }
    }

    /// The sessions held: workspace, id, turns, model, approval mode.
    pub async fn sessions(&self) -> Vec<Value> {
        let mut list = Vec::new();
        for slot in self.all_slots() {
            if let Some(mut s) = slot.listing().await {
                s["workspace"] = json!(slot.key.cwd.display().to_string());
                s["allowed_mcp_servers"] = json!(slot.key.servers);
                list.push(s);
            }
        }
        list.sort_by(|a, b| a["workspace"].as_str().cmp(&b["workspace"].as_str()));
        list
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
        let _lease = tokio::select! {
            l = slot.lease() => l?,
            _ = ct.cancelled() => return Err(cancelled("while waiting for the agent")),
        };
        let agent = self.agent(&slot, &ct).await?;
        slot.describe(agent).await
    }

    /// What `agent` said of its models and of itself; when it has said nothing of its models yet,
    /// a session made for the `acp` set first. Run by the slot's task, as a child task
    /// ([`Work::describe`]).
    async fn describe(
        &self,
        slot: &Mailbox,
        agent: &Connection,
    ) -> Result<(Value, Value), Failure> {
        if slot.described().await?.0.is_null() {
            let session = self.new_session(slot, agent).await?;
            slot.record(session, Whose::Workspace);
        }
        slot.described().await
    }

    /// The slot's agent: the running one, else the one its task starts (see [`Slot::agent`]);
    /// a call cancelled stops waiting, and a start no call waits for any more is stopped.
    async fn agent(&self, slot: &Slot, ct: &CancellationToken) -> Result<Arc<Connection>, Failure> {
        tokio::select! {
            a = slot.agent() => a,
            _ = ct.cancelled() => Err(cancelled("while the agent was starting")),
        }
    }

    /// Starts an agent for `key`: the process, and `initialize` answered; what it said of
    /// itself. Run by the slot's task, as a child task ([`Work::start`]).
    async fn start_agent(
        &self,
        key: &Key,
        ct: &CancellationToken,
    ) -> Result<(Arc<Connection>, Value), Failure> {
        // Held from before the spawn until `initialize` is answered: by then the agent's
        // start-up clean-up (which deletes the project's session files that hold no message
        // yet) is done, so it cannot take a new one-shot session with it, nor the reverse.
        let _gate = self.start_gate(&key.cwd, ct, Waiter::default()).await?;
        self.make_room(key).await;
        let spec = self.spec(key)?;
        // No `fs` (nor terminal) capability: the agent uses its own file system tools.
        let init = acp::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_info(acp::Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ));
        let mut restarts = 0;
        loop {
            let agent = Connection::start(&spec, self.config.kill_grace)
                .map_err(|e| spawn_failure(e, "gemini --acp"))?;
            let answer = tokio::select! {
                r = agent.call(&init, Some(self.config.acp.request_timeout)) => r,
                _ = ct.cancelled() => {
                    agent.kill();
                    return Err(cancelled("while the agent was starting"));
                }
            };
            match answer {
                Ok(r) => {
                    let info = r
                        .agent_info
                        .map_or(Value::Null, |i| serde_json::to_value(i).unwrap_or_default());
                    return Ok((agent, info));
                }
                // Exit 199: the CLI asks to be started again, as its own launcher would.
                Err(AcpError::Exited(how))
                    if how.ends_with("exit 199") && restarts < AGENT_RESTARTS =>
                {
                    restarts += 1;
                    tracing::info!(restarts, "the ACP agent asked to be restarted (exit 199)");
                }
                Err(e) => {
                    agent.kill();
                    return Err(agent_failure(&agent, e, "starting the agent"));
                }
            }
        }
    }

    /// A prompt of `call` in `session` of `agent`, under the server's grace and output cap.
    fn prompting<'a>(
        &self,
        agent: &'a Arc<Connection>,
        session: &'a Session,
        call: &'a Call,
    ) -> turn::Prompting<'a> {
        turn::Prompting {
            agent,
            session,
            call,
            grace: self.config.kill_grace,
            cap: self.config.max_output_bytes,
        }
    }

    /// An `auth_required` failure with the fix a one-shot run's would get: the settings file
    /// whose leftover `selectedType` stops the agent's key, when that is the obstacle.
    fn login_fix(&self, key: &Key, f: Failure) -> Failure {
        if f.kind != ErrorKind::AuthRequired || f.fix.is_some() {
            return f;
        }
        match self.spec(key) {
            Ok(spec) => crate::gemini::auth::with_auth_fix_for(f, &key.cwd, &spec),
            Err(_) => f,
        }
    }

    /// The command line and environment of an agent ([`agent_spec`]).
    fn spec(&self, key: &Key) -> Result<RunSpec, Failure> {
        crate::policy::unchanged("workspace", &key.cwd)?;
        agent_spec(&Launch::resolve(&self.config)?, &self.config, key)
    }

    /// `session/new` for a call, told to the slot.
    async fn new_session(&self, slot: &Mailbox, agent: &Connection) -> Result<Session, Failure> {
        let (session, models) = self.open_session(&slot.key, agent).await?;
        slot.opened(session.clone(), Some(models));
        Ok(session)
    }

    /// `session/new`, authenticating first when the agent asks for it and the environment
    /// names a method that needs no browser; the session and what the agent said of its
    /// models.
    async fn open_session(
        &self,
        key: &Key,
        agent: &Connection,
    ) -> Result<(Session, Value), Failure> {
        let _one_at_a_time = self.session_ops.lock().await;
        let t = Some(self.config.acp.request_timeout);
        let params = acp::NewSessionRequest::new(&key.cwd);
        let mut answer = agent.call(&params, t).await;
        if let Err(AcpError::Rpc {
            code: AUTH_REQUIRED,
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
                return Err(self.login_fix(key, f));
            };
            // `authenticate` with another type than the settings select deletes that type's
            // cached credentials and rewrites the user's setting (CLI 0.61's agent, read in its
            // source): the user's login is theirs to change, as on the one-shot path.
            if let Ok(spec) = self.spec(key) {
                if let Some((selected, file)) =
                    crate::gemini::auth::selected_type_for(&key.cwd, &spec)
                        .filter(|(selected, _)| selected != method)
                {
                    return Err(kept_login(message, &selected, &file, method));
                }
            }
            agent
                .call(&acp::AuthenticateRequest::new(method), t)
                .await
                .map_err(|e| agent_failure(agent, e, "authenticating"))?;
            answer = agent.call(&params, t).await;
        }
        let read = answer.map_err(|e| agent_failure(agent, e, "creating a session"))?;
        let id = read.acp.session_id.0.to_string();
        lock(&self.registry)
            .opened
            .note(&key.cwd, &id, SystemTime::now());
        let session = Session {
            id,
            turns: 0,
            model: read.model(),
            mode: ApprovalMode::from_acp_id(read.acp.mode()),
        };
        Ok((session, read.models))
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
                .call(
                    &acp::SetSessionModeRequest::new(session.id.clone(), mode.acp_id()),
                    t,
                )
                .await
                .map_err(|e| agent_failure(agent, e, "setting the approval mode"))?;
            session.mode = mode;
        }
        if let Some(model) = model.filter(|m| *m != session.model) {
            agent
                .call(
                    &SetSessionModelRequest {
                        session_id: session.id.clone().into(),
                        model_id: model.to_string(),
                    },
                    t,
                )
                .await
                .map_err(|e| agent_failure(agent, e, "setting the model"))?;
            session.model = model.to_string();
        }
        Ok(())
    }

    /// `session/load` of `asked`; a session the agent does not know is `session_not_found`.
    /// The history the agent replays is taken in full before the session is used: its updates
    /// come around and after the load's answer, and the file says how many ([`replay`]).
    async fn load(
        &self,
        slot: &Mailbox,
        agent: &Connection,
        asked: &str,
    ) -> Result<Session, Failure> {
        let _one_at_a_time = self.session_ops.lock().await;
        // Read before the load: the agent reads the same file, and nothing writes it meanwhile
        // (a prompt in the session waits for this load).
        let expected = replay::expected(slot.key.cwd.clone(), asked.to_string()).await;
        let (tx, mut replayed) = tokio::sync::mpsc::unbounded_channel();
        agent.route(asked, ApprovalMode::Plan, tx);
        let r = agent
            .call(
                &acp::LoadSessionRequest::new(asked.to_string(), &slot.key.cwd),
                Some(self.config.acp.request_timeout),
            )
            .await;
        if r.is_ok() {
            self.take_replay(asked, expected.as_deref(), &mut replayed)
                .await;
        }
        agent.unroute(asked);
        // A failed load leaves its stub too (in the wrong project, for a session of another).
        remove_load_stubs(&slot.key.cwd, asked).await;
        match r {
            Ok(result) => {
                lock(&self.registry)
                    .opened
                    .note(&slot.key.cwd, asked, SystemTime::now());
                let session = Session {
                    id: asked.to_string(),
                    turns: 0,
                    model: result.model(),
                    mode: ApprovalMode::from_acp_id(result.acp.mode()),
                };
                slot.opened(
                    session.clone(),
                    Some(result.models).filter(|m| !m.is_null()),
                );
                Ok(session)
            }
            Err(AcpError::Rpc { code, message }) if LOAD_NOT_FOUND.contains(&code) => {
                Err(Failure::new(
                    ErrorKind::SessionNotFound,
                    format!("session {asked} cannot be loaded in this workspace: {message}"),
                ))
            }
            Err(e) => Err(agent_failure(agent, e, "loading the session")),
        }
    }
}

impl Pool {
    /// Takes the replay of the loaded session `id` from its route ([`replay::take`]). Without
    /// the session's file the server cannot tell the replay's end: the updates still coming are
    /// dropped while nothing routes the session, and the caller's `session/set_mode` barrier is
    /// all that stands before the prompt.
    async fn take_replay(
        &self,
        id: &str,
        expected: Option<&[crate::gemini::history::Replayed]>,
        replayed: &mut tokio::sync::mpsc::UnboundedReceiver<super::client::Routed>,
    ) {
        let Some(expected) = expected else {
            tracing::warn!(
                session = id,
                "the session's file cannot be read: its replayed history is dropped up to the next answer only"
            );
            return;
        };
        let quiet = self.config.acp.request_timeout;
        match replay::take(replayed, expected, quiet).await {
            replay::Taken::All { differed: 0 } => {}
            replay::Taken::All { differed } => tracing::warn!(
                session = id,
                differed,
                "the replayed history differed from the session's file; all of it was taken"
            ),
            how => tracing::warn!(session = id, ?how, "the replayed history ended early"),
        }
    }
}

/// The pool's side of a slot's task ([`Work`]): the I/O it spawns runs with the pool's
/// configuration, start gates and other slots. Weak: the pool holds the slots, and a slot's task
/// ends with its slot, so the task holding the pool would keep both alive.
struct PoolWork(Weak<Pool>);

impl Work for PoolWork {
    fn start(
        &self,
        key: Key,
        ct: CancellationToken,
    ) -> Io<Result<(Arc<Connection>, Value), Failure>> {
        let pool = self.0.clone();
        Box::pin(async move {
            let pool = pool.upgrade().ok_or_else(Failure::shutting_down)?;
            pool.start_agent(&key, &ct).await
        })
    }

    fn spare(&self, key: Key, agent: Arc<Connection>, mode: ApprovalMode) -> Io<Option<Spared>> {
        let pool = self.0.clone();
        Box::pin(async move { pool.upgrade()?.make_spare(&key, &agent, mode).await })
    }

    fn describe(
        &self,
        mailbox: Mailbox,
        agent: Arc<Connection>,
    ) -> Io<Result<(Value, Value), Failure>> {
        let pool = self.0.clone();
        Box::pin(async move {
            let pool = pool.upgrade().ok_or_else(Failure::shutting_down)?;
            pool.describe(&mailbox, &agent).await
        })
    }

    fn open(
        &self,
        mailbox: Mailbox,
        agent: Arc<Connection>,
        opening: Opening,
    ) -> Io<Result<Ready, Failure>> {
        let pool = self.0.clone();
        Box::pin(async move {
            let pool = pool.upgrade().ok_or_else(Failure::shutting_down)?;
            if opening.workspace {
                pool.workspace_ready(&mailbox, &agent, &opening).await
            } else {
                pool.ready(&mailbox, &agent, &opening).await
            }
        })
    }
}

/// Removes the stub that Gemini CLI 0.61's `session/load` leaves in the current minute's chat file
/// (two headers, no message; later prompts go to the session's own file): the next CLI start in
/// the project would otherwise delete every file of the session, the real one included.
async fn remove_load_stubs(cwd: &std::path::Path, id: &str) {
    let what = "the stub a session load left";
    cli_session::tidy_stubs(cwd, id, cli_session::remove_stubs, what).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_session_is_remembered_for_its_clock_minute_and_forgotten_after_it() {
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        let mut opened = Opened::default();
        opened.note(Path::new("/w"), "a", at(600));
        opened.note(Path::new("/w"), "b", at(659));
        assert!(opened.in_minute_of(Path::new("/w"), "a", at(659)));
        assert!(
            !opened.in_minute_of(Path::new("/v"), "a", at(659)),
            "another workspace's"
        );
        assert!(
            !opened.in_minute_of(Path::new("/w"), "a", at(660)),
            "the minute turned"
        );
        opened.note(Path::new("/w"), "c", at(660));
        assert_eq!(
            opened.0.len(),
            1,
            "a note forgets the sessions of earlier minutes"
        );
        assert!(opened.in_minute_of(Path::new("/w"), "c", at(719)));
        opened.forget(Path::new("/w"), "c");
        assert!(!opened.in_minute_of(Path::new("/w"), "c", at(719)));
    }
}
