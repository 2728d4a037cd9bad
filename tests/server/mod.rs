//! End-to-end checks of the server binary over stdio against fake-gemini, for what the
//! conformance suite does not pin: each tool's happy path, one error kind, the argument/stdin
//! split, cancellation leaving no process, piped stdin EOF, truncation into a resource, older
//! protocol versions, and every result validating against its tool's `outputSchema`.

mod auth;
mod doctor;
mod http;
mod smoke;
mod warm;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gemini_mcp_conformance::client::Client;
use serde_json::{json, Value};
use tempfile::TempDir;

/// The server binary in a clean environment: nothing of the developer's own (no
/// `GEMINICLI_MCP_*`, no `~/.gemini`), only `PATH`, a private `HOME` under `dir`, and the
/// fake-gemini CLI with its state under `dir` too. Tests add what they need on top.
pub fn server_command(dir: &Path) -> Command {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("private HOME");
    let mut cmd = Command::new(gemini_mcp_conformance::bins::locate("geminicli-mcp"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env(
            "GEMINI_CLI_BIN",
            gemini_mcp_conformance::bins::locate("fake-gemini"),
        )
        .env("FAKE_GEMINI_STATE", dir.join("state"));
    cmd
}

/// The root package's directory, where the tests' fixtures are: `CARGO_MANIFEST_DIR` as cargo and
/// nextest set it for the running test (nextest points it at the copy of the workspace that an
/// archive of the tests runs against, `--workspace-remap`), else where the package was compiled.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// How long any single step may take before the test fails.
pub const STEP: Duration = Duration::from_secs(30);

/// A running server with its own fake-gemini log, state and working directory.
pub struct Harness {
    /// The JSON-RPC connection.
    pub client: Client,
    /// fake-gemini's invocation log (one JSON object per run).
    pub log: PathBuf,
    /// Output schemas by tool name, from `tools/list`.
    pub output_schemas: Vec<(String, Value)>,
    _dir: Option<TempDir>,
}

impl Harness {
    /// Starts the server with `env` on top of the test defaults and completes `initialize`
    /// with `protocol_version`.
    pub fn start_with(env: &[(&str, &str)], protocol_version: &str) -> Harness {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut h = Harness::start_in(dir.path(), env, protocol_version);
        h._dir = Some(dir);
        h
    }

    /// Starts the server in `dir` (its HOME, fake-gemini state, log and working directory, which
    /// a later server may share), as [`Harness::start_with`] does.
    pub fn start_in(dir: &Path, env: &[(&str, &str)], protocol_version: &str) -> Harness {
        let log = dir.join("fake-gemini.log");
        let work = dir.join("work");
        std::fs::create_dir_all(&work).expect("work dir");
        let mut cmd = server_command(dir);
        cmd.current_dir(&work)
            .env("FAKE_GEMINI_LOG", &log)
            .env("GEMINICLI_MCP_KILL_GRACE_MS", "300")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // The client's kill() signals the whole group it leads.
            cmd.process_group(0);
        }
        let mut client = Client::new(cmd.spawn().expect("spawn geminicli-mcp"));
        let id = client
            .request(
                "initialize",
                Some(json!({
                    "protocolVersion": protocol_version,
                    "capabilities": {},
                    "clientInfo": {"name": "server-tests", "version": "0"}
                })),
            )
            .expect("send initialize");
        let init = client
            .response(&id, deadline())
            .expect("initialize answered");
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        client
            .notify("notifications/initialized", None)
            .expect("send initialized");
        let mut h = Harness {
            client,
            log,
            output_schemas: Vec::new(),
            _dir: None,
        };
        let tools = h.rpc("tools/list", None);
        for tool in tools["result"]["tools"].as_array().expect("tools") {
            if let Some(schema) = tool.get("outputSchema") {
                h.output_schemas
                    .push((tool["name"].as_str().unwrap().to_owned(), schema.clone()));
            }
        }
        h
    }

    /// Starts the server on protocol 2025-06-18 with `env`.
    pub fn start(env: &[(&str, &str)]) -> Harness {
        Harness::start_with(env, "2025-06-18")
    }

    /// Sends a request and waits for its response.
    pub fn rpc(&mut self, method: &str, params: Option<Value>) -> Value {
        let id = self.client.request(method, params).expect("send");
        self.client
            .response(&id, deadline())
            .unwrap_or_else(|| panic!("no response to {method}; stderr: {}", self.client.stderr()))
    }

    /// Calls `tool` and returns its `result`, after checking it against the tool's output schema.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.rpc(
            "tools/call",
            Some(json!({"name": tool, "arguments": arguments})),
        );
        let result = response
            .get("result")
            .unwrap_or_else(|| panic!("tools/call was a JSON-RPC error: {response}"))
            .clone();
        self.check_output_schema(tool, &result);
        result
    }

    /// Asserts that `structuredContent` validates against the tool's advertised `outputSchema`.
    pub fn check_output_schema(&self, tool: &str, result: &Value) {
        let Some((_, schema)) = self.output_schemas.iter().find(|(n, _)| n == tool) else {
            return;
        };
        let structured = result
            .get("structuredContent")
            .expect("structuredContent on every result");
        let validator = jsonschema::validator_for(schema).expect("outputSchema compiles");
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{tool} result breaks its outputSchema: {errors:?}\n{structured}"
        );
    }

    /// fake-gemini's log records so far.
    pub fn log_records(&self) -> Vec<Value> {
        read_log(&self.log)
    }

    /// Waits until fake-gemini has logged `n` runs and returns them.
    pub fn wait_for_runs(&self, n: usize) -> Vec<Value> {
        let end = deadline();
        loop {
            let records = self.log_records();
            if records.len() >= n || Instant::now() >= end {
                return records;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Harness {
    /// Waits until fake-gemini has logged a record that `wanted` accepts and returns it.
    pub fn wait_for_record(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let end = deadline();
        loop {
            if let Some(r) = self.log_records().into_iter().find(|r| wanted(r)) {
                return r;
            }
            assert!(
                Instant::now() < end,
                "no such record: {:?}",
                self.log_records()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A test that panics with a server running shows what the server said on stderr.
impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- the server's stderr ---\n{}", self.client.stderr());
        }
    }
}

/// A step deadline from now.
pub fn deadline() -> Instant {
    Instant::now() + STEP
}

/// The records of a fake-gemini log file.
pub fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The text of a tool result's first content block.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The fields of `/proc/{pid}/stat` after the parenthesised command name (the state first).
#[cfg(target_os = "linux")]
fn stat_fields(pid: i64) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit(')').next()?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` still exists as a live (not zombie) process.
#[cfg(target_os = "linux")]
pub fn alive(pid: i64) -> bool {
    stat_fields(pid).is_some_and(|f| !matches!(f.first().map(String::as_str), Some("Z" | "X")))
}

/// The start time of `pid` (field 22 of its stat): with the pid, it names one process, so a pid
/// the kernel handed out again (it wraps at `pid_max`, 32768 on many machines, within seconds
/// on a busy one with many cores) is not taken for the process that had it.
#[cfg(target_os = "linux")]
fn started_at(pid: i64) -> Option<String> {
    stat_fields(pid)?.get(19).cloned()
}

/// Whether `pid` still exists.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn alive(pid: i64) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// What `/proc` says of `pid` (its state, parent, group and threads), for a failure's message.
#[cfg(target_os = "linux")]
pub fn process_facts(pid: i64) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let wanted = [
        "Name:", "State:", "Tgid:", "PPid:", "Uid:", "Threads:", "SigIgn:", "SigCgt:",
    ];
    let lines: Vec<&str> = status
        .lines()
        .filter(|l| wanted.iter().any(|w| l.starts_with(w)))
        .collect();
    format!(
        "{} | stat: {} | cmdline: {}",
        lines.join(", "),
        stat.trim(),
        String::from_utf8_lossy(&cmdline).replace('\0', " ")
    )
}

/// What is known of `pid` where `/proc` is not there.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn process_facts(pid: i64) -> String {
    format!("pid {pid} (no /proc here)")
}

/// Waits up to [`STEP`] for `pid` to be gone: on Linux, the process that has it when this is
/// called (a later process given the same pid does not count).
#[cfg(unix)]
pub fn gone(pid: i64) -> bool {
    let end = deadline();
    #[cfg(target_os = "linux")]
    let same = {
        let first = started_at(pid);
        move || first.is_some() && started_at(pid) == first
    };
    #[cfg(not(target_os = "linux"))]
    let same = || true;
    while alive(pid) && same() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}
