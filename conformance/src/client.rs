//! A minimal newline-delimited JSON-RPC 2.0 client over a child's stdio, written with std threads
//! only so it runs the same on every OS and tests the wire itself (no MCP SDK in between).
//!
//! One thread writes stdin (so a target that stops reading cannot block a step past its timeout),
//! one reads stdout line by line and one collects stderr. Every stdout line is checked: the
//! protocol channel must carry nothing but JSON-RPC messages.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One message the target sent, with when it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// Time since the client started.
    pub at: Duration,
    /// The parsed message.
    pub message: Value,
    /// Whether a step has already claimed it (responses and notifications are claimed once).
    pub consumed: bool,
}

enum Incoming {
    Line(Vec<u8>),
    Eof,
}

/// A JSON-RPC connection to a spawned target.
pub struct Client {
    child: Child,
    writer: Option<Sender<Vec<u8>>>,
    rx: Receiver<Incoming>,
    stderr: Arc<Mutex<Vec<u8>>>,
    write_error: Arc<Mutex<Option<String>>>,
    disconnected: Arc<AtomicBool>,
    /// Every message received so far, in arrival order.
    pub received: Vec<Received>,
    /// What `roots/list` answers (`{"uri", "name"}` objects).
    pub roots: Vec<Value>,
    /// What `elicitation/create` requests get, in order (see the case's `elicitation-answers`).
    pub elicitation_answers: std::collections::VecDeque<Value>,
    /// Lines on the target's stdout that are not JSON-RPC messages (the first few, shortened).
    pub violations: Vec<String>,
    /// The method of every request the target sent to the client, in order.
    pub target_requests: Vec<String>,
    stdout_eof: bool,
    next_id: i64,
    started: Instant,
    exit_status: Option<std::process::ExitStatus>,
}

/// Longest stretch of a non-JSON-RPC stdout line quoted in a report.
const QUOTE: usize = 200;

impl Client {
    /// Wraps a child spawned with piped stdin, stdout and stderr.
    pub fn new(mut child: Child) -> Client {
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr_pipe = child.stderr.take().expect("stderr piped");
        let (wtx, wrx) = mpsc::channel::<Vec<u8>>();
        let write_error = Arc::new(Mutex::new(None));
        spawn_writer(stdin, wrx, write_error.clone());
        let (tx, rx) = mpsc::channel();
        let disconnected = Arc::new(AtomicBool::new(false));
        spawn_reader(stdout, tx, disconnected.clone());
        let stderr = Arc::new(Mutex::new(Vec::new()));
        spawn_stderr(stderr_pipe, stderr.clone());
        Client {
            child,
            writer: Some(wtx),
            rx,
            stderr,
            write_error,
            disconnected,
            received: Vec::new(),
            roots: Vec::new(),
            elicitation_answers: std::collections::VecDeque::new(),
            violations: Vec::new(),
            target_requests: Vec::new(),
            stdout_eof: false,
            next_id: 1,
            started: Instant::now(),
            exit_status: None,
        }
    }

    /// The target's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the target wrote on stderr so far (lossy UTF-8).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// The error of the last failed write to the target's stdin, if any.
    pub fn write_error(&self) -> Option<String> {
        self.write_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Queues raw bytes for the target's stdin (a newline is not added).
    pub fn send_raw(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        match &self.writer {
            Some(w) => w
                .send(bytes)
                .map_err(|_| "the stdin writer has stopped".to_string()),
            None => Err("stdin is already closed".into()),
        }
    }

    /// Sends one JSON-RPC message (one line).
    pub fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.send_raw(line)
    }

    /// Sends a request with a fresh numeric id and returns the id.
    pub fn request(&mut self, method: &str, params: Option<Value>) -> Result<Value, String> {
        let id = json!(self.next_id);
        self.next_id += 1;
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.send(&msg)?;
        Ok(id)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), String> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.send(&msg)
    }

    /// Closes the target's stdin once everything queued has been written.
    pub fn close_stdin(&mut self) {
        self.writer = None;
    }

    /// Behaves like a client that went away: stdin is closed and stdout is no longer read, so the
    /// target sees EOF and then a broken pipe (after what the pipe buffer already holds).
    pub fn disconnect(&mut self) {
        self.writer = None;
        self.disconnected.store(true, Ordering::SeqCst);
    }

    /// Receives messages until `deadline` or until one arrives; returns false at the deadline or
    /// at stdout EOF.
    fn pump(&mut self, deadline: Instant) -> bool {
        if self.stdout_eof {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        match self.rx.recv_timeout(deadline - now) {
            Ok(Incoming::Line(line)) => {
                self.accept(line);
                true
            }
            Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                self.stdout_eof = true;
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
        }
    }

    /// Receives everything already waiting, without blocking.
    pub fn drain(&mut self) {
        while !self.stdout_eof {
            match self.rx.try_recv() {
                Ok(Incoming::Line(line)) => self.accept(line),
                Ok(Incoming::Eof) => self.stdout_eof = true,
                Err(_) => break,
            }
        }
    }

    fn accept(&mut self, mut line: Vec<u8>) {
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let parsed: Option<Value> = serde_json::from_slice(&line).ok();
        let valid = parsed
            .as_ref()
            .is_some_and(|v| v.is_object() && v.get("jsonrpc") == Some(&json!("2.0")));
        if !valid {
            if self.violations.len() < 5 {
                let text = String::from_utf8_lossy(&line);
                let quoted: String = text.chars().take(QUOTE).collect();
                let more = if text.chars().count() > QUOTE {
                    "…"
                } else {
                    ""
                };
                self.violations
                    .push(format!("{quoted:?}{more} ({} bytes)", line.len()));
            }
            return;
        }
        let message = parsed.expect("checked above");
        // The MCP spec lets the server send requests (ping, roots/list); a client must answer.
        if message.get("method").is_some() && message.get("id").is_some() {
            let id = message["id"].clone();
            let method = message["method"].as_str().unwrap_or("(not a string)");
            self.target_requests.push(method.to_string());
            let reply = match message["method"].as_str() {
                Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                Some("roots/list") => {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"roots": self.roots}})
                }
                Some("elicitation/create") => match self.elicitation_answers.pop_front() {
                    Some(Value::String(s)) if s == "no-answer" => Value::Null,
                    Some(answer) => json!({"jsonrpc": "2.0", "id": id, "result": answer}),
                    None => json!({"jsonrpc": "2.0", "id": id, "result": {"action": "cancel"}}),
                },
                _ => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not supported by the conformance client"}})
                }
            };
            if !reply.is_null() {
                let _ = self.send(&reply);
            }
        }
        self.received.push(Received {
            at: self.started.elapsed(),
            message,
            consumed: false,
        });
    }

    /// Waits until a message satisfying `pred` (not yet consumed) arrives, marks it consumed and
    /// returns it; `None` at the deadline or when stdout ended first.
    pub fn wait_for(
        &mut self,
        deadline: Instant,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Option<Value> {
        let mut scanned = 0;
        loop {
            for r in self.received[scanned..].iter_mut() {
                if !r.consumed && pred(&r.message) {
                    r.consumed = true;
                    return Some(r.message.clone());
                }
            }
            scanned = self.received.len();
            if !self.pump(deadline) && (self.stdout_eof || Instant::now() >= deadline) {
                // One last look: pump may have stored a message before reporting EOF.
                for r in self.received[scanned..].iter_mut() {
                    if !r.consumed && pred(&r.message) {
                        r.consumed = true;
                        return Some(r.message.clone());
                    }
                }
                return None;
            }
        }
    }

    /// Waits for the response to request `id`.
    pub fn response(&mut self, id: &Value, deadline: Instant) -> Option<Value> {
        self.wait_for(deadline, |m| is_response(m) && m.get("id") == Some(id))
    }

    /// Keeps receiving until `deadline` (for "nothing arrives within N ms" checks).
    pub fn listen_until(&mut self, deadline: Instant) {
        while Instant::now() < deadline {
            if !self.pump(deadline) && self.stdout_eof {
                // Nothing more can come; sleeping out the window would only slow the run.
                return;
            }
        }
    }

    /// Whether the target's stdout has ended.
    pub fn stdout_ended(&self) -> bool {
        self.stdout_eof
    }

    /// Waits up to `deadline` for the target to exit; returns its status.
    pub fn wait_exit(&mut self, deadline: Instant) -> Option<std::process::ExitStatus> {
        loop {
            if let Some(s) = self.exit_status {
                return Some(s);
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                self.exit_status = Some(s);
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            // Keep stdout flowing so a target writing its last answers is not blocked on the pipe.
            self.drain();
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the target process alone with SIGKILL (not its group) and reaps it: a server that
    /// dies without a chance to clean up. Unix only; elsewhere it is [`Client::kill`].
    pub fn kill_target_only(&mut self) {
        if self.exit_status.is_some() {
            return;
        }
        #[cfg(unix)]
        {
            // SAFETY: plain syscall on a pid we spawned and have not reaped yet.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGKILL);
            }
            if let Ok(s) = self.child.wait() {
                self.exit_status = Some(s);
            }
        }
        #[cfg(not(unix))]
        self.kill();
    }

    /// Kills the target (and, on Unix, the process group the runner put it in) and reaps it.
    pub fn kill(&mut self) {
        if self.exit_status.is_some() {
            return;
        }
        #[cfg(unix)]
        {
            // The runner spawns the target as the leader of its own process group.
            // SAFETY: plain syscall on a pid we spawned and have not reaped yet.
            unsafe {
                libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        if let Ok(s) = self.child.wait() {
            self.exit_status = Some(s);
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether a message is a JSON-RPC response (has `result` or `error`, no `method`).
pub fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
}

fn spawn_writer(mut stdin: ChildStdin, rx: Receiver<Vec<u8>>, error: Arc<Mutex<Option<String>>>) {
    thread::spawn(move || {
        for chunk in rx {
            if let Err(e) = stdin.write_all(&chunk).and_then(|()| stdin.flush()) {
                *error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                return;
            }
        }
        // Dropping stdin here closes the pipe: the target sees EOF after every queued write.
    });
}

fn spawn_reader(stdout: ChildStdout, tx: Sender<Incoming>, disconnected: Arc<AtomicBool>) {
    thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 16, stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if disconnected.load(Ordering::SeqCst) {
                        // A vanished client reads nothing more: dropping the pipe makes the
                        // target's next write fail with EPIPE.
                        return;
                    }
                    if tx.send(Incoming::Line(line)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Incoming::Eof);
    });
}

fn spawn_stderr(mut stderr: ChildStderr, sink: Arc<Mutex<Vec<u8>>>) {
    // Bounded: a target forwarding a flood must not exhaust the runner's memory.
    const MAX: usize = 4 << 20;
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                    if s.len() < MAX {
                        let take = n.min(MAX - s.len());
                        s.extend_from_slice(&buf[..take]);
                    }
                }
            }
        }
    });
}
