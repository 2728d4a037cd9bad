//! The agent as a connection: its sessions and their prompts in progress, the writer of its
//! JSON-RPC lines (one at a time; nothing once it is frozen), its buffered stderr, and its own
//! requests to the client. The request handlers are in `acp`, the prompt turns in `acp::prompt`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::{json, Value};

use super::wire;
use crate::proc;
use crate::scenario::Scenario;
use crate::sys::{err, out};

/// Set when a scenario freezes the agent (`hang`, `hang-after-output`): nothing is written or read
/// any more, as when Node's event loop is stuck.
pub(crate) static FROZEN: AtomicBool = AtomicBool::new(false);

/// Freezes the whole agent: this thread and every later writer sleep until a signal ends them.
pub(crate) fn freeze() -> ! {
    FROZEN.store(true, Ordering::SeqCst);
    proc::hang()
}

/// A prompt in progress: its abort flag, and a condition variable so sleeps end on cancel.
pub(crate) struct Pending {
    aborted: Mutex<bool>,
    wake: Condvar,
}

impl Pending {
    pub(crate) fn new() -> Arc<Pending> {
        Arc::new(Pending {
            aborted: Mutex::new(false),
            wake: Condvar::new(),
        })
    }

    pub(crate) fn abort(&self) {
        *self.aborted.lock().expect("lock") = true;
        self.wake.notify_all();
    }

    pub(crate) fn is_aborted(&self) -> bool {
        *self.aborted.lock().expect("lock")
    }

    /// Sleeps `ms`; returns true when the prompt was aborted meanwhile.
    pub(crate) fn sleep(&self, ms: u64) -> bool {
        let guard = self.aborted.lock().expect("lock");
        if ms == 0 {
            return *guard;
        }
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, Duration::from_millis(ms), |a| !*a)
            .expect("lock");
        *guard
    }
}

/// One ACP session held by the agent.
pub(crate) struct AcpSession {
    pub(crate) id: String,
    pub(crate) cwd: String,
    pub(crate) mode: Mutex<String>,
    pub(crate) model: Mutex<String>,
    pub(crate) pending: Mutex<Option<Arc<Pending>>>,
    /// Tools (or shell root commands) the client allowed "for this session".
    pub(crate) always_allowed: Mutex<Vec<String>>,
    /// With FAKE_GEMINI_SESSION_LOSS=1, the chat file `session/new` began (its header only,
    /// until a prompt is recorded into it).
    pub(crate) file: Mutex<Option<std::path::PathBuf>>,
}

/// The agent process: its configuration, sessions and the two channels.
pub(crate) struct Agent {
    pub(crate) version: String,
    /// The process-level scenario (FAKE_GEMINI_SCENARIO): environment facts and the default
    /// model behaviour of a prompt without a marker.
    pub(crate) scenario: Scenario,
    pub(crate) scenario_name: Option<String>,
    pub(crate) trusted: bool,
    pub(crate) initial_mode: String,
    pub(crate) initial_model: String,
    /// argv without argv0, for the scenarios' `expect` checks.
    pub(crate) argv: Vec<String>,
    pub(crate) sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// stdout's write chain.
    pub(crate) writer: super::writer::Writer,
    pub(crate) stderr: Mutex<Vec<u8>>,
    pub(crate) next_request_id: AtomicU64,
    pub(crate) client_waiters: Mutex<HashMap<u64, mpsc::Sender<Value>>>,
    /// `authenticate` succeeded (its method id).
    pub(crate) authenticated: Mutex<Option<String>>,
    pub(crate) api_key: Mutex<Option<String>>,
    pub(crate) startup_flushed: AtomicBool,
    /// Prompts still running, and how many of them wait for a client's answer: at stdin EOF the
    /// agent exits once every running prompt is done or waits for an answer that cannot come.
    pub(crate) running: AtomicUsize,
    pub(crate) awaiting_client: AtomicUsize,
}

/// How long a replayed line that waited for the client holds back the next one.
const REPLAY_YIELD_MS: u64 = 200;

impl Agent {
    /// Writes one JSON-RPC message as a line on stdout.
    pub(crate) fn send(&self, msg: &impl Serialize) {
        let mut line = serde_json::to_vec(msg).expect("serializes");
        line.push(b'\n');
        let ticket = self.writer.ticket();
        self.writer.wait(ticket);
        if FROZEN.load(Ordering::SeqCst) {
            proc::hang();
        }
        self.writer.write(&line);
        self.writer.release();
    }

    /// Sends `updates` of session `session_id` as `streamHistory` does: one after the other,
    /// from the place `ticket` in the write chain, each next one asked for once the one before
    /// is written — so what was asked for while a line waited for the client goes between.
    pub(crate) fn stream(&self, session_id: &str, updates: &[Value], ticket: u64) {
        let mut first = Some(ticket);
        let mut holding = false;
        for update in updates {
            let mut line =
                serde_json::to_vec(&update_message(session_id, update)).expect("serializes");
            line.push(b'\n');
            if !holding {
                let t = first.take().unwrap_or_else(|| self.writer.ticket());
                self.writer.wait(t);
                holding = true;
            }
            if FROZEN.load(Ordering::SeqCst) {
                proc::hang();
            }
            // Written at once: the next update is asked for before anything else runs; else
            // what was asked for meanwhile goes first.
            if !self.writer.write(&line) {
                self.writer.release();
                holding = false;
                self.yield_to_requests();
            }
        }
        match (holding, first) {
            (true, _) => self.writer.release(),
            // Nothing to send: the place is given up.
            (false, Some(t)) => {
                self.writer.wait(t);
                self.writer.release();
            }
            (false, None) => {}
        }
    }

    /// After a replayed line that waited for the client: the real agent reads and answers
    /// requests while it waits for `drain`, and its replay goes on at Node's pace, so a request
    /// sent after the load's answer is answered before the rest of a large replay, and a prompt
    /// sent after that one streams beside it (observed for every load of 409 KB and more). The
    /// replay's next line waits [`REPLAY_YIELD_MS`]; what is asked for meanwhile goes first.
    fn yield_to_requests(&self) {
        std::thread::sleep(Duration::from_millis(REPLAY_YIELD_MS));
    }

    /// Writes bytes on stdout as they are, JSON-RPC or not (a broken agent's faults).
    pub(crate) fn send_raw(&self, bytes: &[u8]) {
        let ticket = self.writer.ticket();
        self.writer.wait(ticket);
        if FROZEN.load(Ordering::SeqCst) {
            proc::hang();
        }
        out(bytes);
        self.writer.release();
    }

    /// Writes `pieces` on stdout one after the other, `between` each two, with no other message
    /// among them (one line that dribbles out).
    pub(crate) fn send_pieces<'a>(
        &self,
        pieces: impl Iterator<Item = &'a [u8]>,
        between: impl Fn(),
    ) {
        let ticket = self.writer.ticket();
        self.writer.wait(ticket);
        for (k, piece) in pieces.enumerate() {
            if k > 0 {
                between();
            }
            out(piece);
        }
        self.writer.release();
    }

    /// Sends a message and freezes the agent before anyone else can write or read (the
    /// `hang-after-output` fault: the chunk is the last thing the client ever sees).
    pub(crate) fn send_then_freeze(&self, msg: &impl Serialize) -> ! {
        let mut line = serde_json::to_vec(msg).expect("serializes");
        line.push(b'\n');
        let ticket = self.writer.ticket();
        self.writer.wait(ticket);
        out(&line);
        freeze()
    }

    /// A `session/update` notification.
    pub(crate) fn update(&self, session_id: &str, update: Value) {
        self.send(&update_message(session_id, &update));
    }

    pub(crate) fn respond(&self, id: &Value, result: Result<Value, Value>, msg: &Value) {
        match result {
            Ok(r) => self.send(&response(id, Ok(r))),
            Err(mut e) => {
                if crate::releases::has(&self.version, crate::releases::ACP_ERRORS_AS_TEXT) {
                    e = wire::as_text_error(e);
                }
                self.stderr_line(&wire::error_log_line("request", msg, &e));
                self.send(&response(id, Err(e)));
            }
        }
    }

    /// Buffers a stderr line; the real agent's stderr only arrives at exit.
    pub(crate) fn stderr_line(&self, s: &str) {
        let mut b = self.stderr.lock().expect("lock");
        b.extend_from_slice(s.as_bytes());
        b.push(b'\n');
    }

    /// Buffers stderr bytes as they are (UTF-8 or not).
    pub(crate) fn stderr_bytes(&self, bytes: &[u8]) {
        self.stderr.lock().expect("lock").extend_from_slice(bytes);
    }

    pub(crate) fn flush_stderr(&self) {
        let b = std::mem::take(&mut *self.stderr.lock().expect("lock"));
        err(&b);
    }

    /// Sends an agent→client request and waits for the client's response message.
    pub(crate) fn client_request(&self, method: &str, params: Value) -> Value {
        let id = self.next_request_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.client_waiters.lock().expect("lock").insert(id, tx);
        self.send(&acp::JsonRpcMessage::wrap(acp::Request {
            id: acp::RequestId::Number(i64::try_from(id).unwrap_or(i64::MAX)),
            method: method.into(),
            params: Some(params),
        }));
        // The reading thread ends the process at EOF, so an unanswered request just waits.
        self.awaiting_client.fetch_add(1, Ordering::SeqCst);
        let answer = rx.recv().unwrap_or(Value::Null);
        self.awaiting_client.fetch_sub(1, Ordering::SeqCst);
        answer
    }

    /// The fake's own failure inside ACP mode: the buffered stderr, the message, exit 99.
    pub(crate) fn fake_error(&self, msg: &str) -> ! {
        self.flush_stderr();
        err(format!("fake-gemini: {msg}\n").as_bytes());
        crate::sys::exit_now(99)
    }
}

/// `security.auth.selectedType` from `$HOME/.gemini/settings.json`.
pub(crate) fn selected_auth_type() -> Option<String> {
    let path = crate::sys::home_dir().join(".gemini").join("settings.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["security"]["auth"]["selectedType"]
        .as_str()
        .or_else(|| v["selectedAuthType"].as_str())
        .map(String::from)
}

/// The parameters of a `session/update`: the schema's `SessionNotification`, its update written
/// as the scenario's 0.61 shapes have it (with the fields and `_meta` the schema does not type).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    session_id: acp::SessionId,
    update: &'a Value,
}

/// A `session/update` notification of `session_id`.
pub(crate) fn update_message<'a>(session_id: &str, update: &'a Value) -> impl Serialize + 'a {
    acp::JsonRpcMessage::wrap(acp::Notification {
        method: acp::CLIENT_METHOD_NAMES.session_update.into(),
        params: Some(UpdateParams {
            session_id: acp::SessionId::new(session_id),
            update,
        }),
    })
}

/// The answer to the client's request `id`: its result, or its error (the CLI's shapes, some
/// of them not the schema's `Error`). An id the schema does not type (a fraction, a boolean) is
/// echoed as sent, as the real agent's SDK echoes any id.
pub(crate) fn response(id: &Value, answer: Result<Value, Value>) -> Value {
    match serde_json::from_value::<acp::RequestId>(id.clone()) {
        Ok(typed) if serde_json::to_value(&typed).ok().as_ref() == Some(id) => {
            serde_json::to_value(acp::JsonRpcMessage::wrap(acp::Response::new(typed, answer)))
                .expect("serializes")
        }
        _ => match answer {
            Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
        },
    }
}
