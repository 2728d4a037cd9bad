//! `FAKE_GEMINI_LOG`: one JSON object per line, appended with a single `write(2)` on an
//! `O_APPEND` descriptor so concurrent runs never interleave. Records: `invocation` (the contract
//! in CONTRIBUTING.md plus `event` and `launcher_pid`) and `spawned` (every descendant the fake
//! starts, written as soon as it exists).

use std::io::Write;

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::ids::sha256_hex;

/// Env vars whose values are logged in clear.
pub fn value_logged(name: &str) -> bool {
    matches!(
        name,
        "NO_COLOR"
            | "TERM"
            | "NO_BROWSER"
            | "CI"
            | "GEMINI_TELEMETRY_ENABLED"
            | "GEMINI_TELEMETRY_TARGET"
            | "GEMINI_TELEMETRY_OUTFILE"
            | "GEMINI_TELEMETRY_LOG_PROMPTS"
    ) || name.starts_with("GEMINI_CLI_")
}

fn append(record: &Value) {
    let Some(path) = std::env::var_os("FAKE_GEMINI_LOG") else {
        return;
    };
    let mut line = serde_json::to_vec(record).expect("serializes");
    line.push(b'\n');
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path);
    match file {
        Ok(mut f) => {
            // One write call per record: O_APPEND makes it atomic with respect to other writers.
            match f.write(&line) {
                Ok(n) if n == line.len() => {}
                Ok(n) => {
                    let _ = f.write_all(&line[n..]);
                }
                Err(e) => fail(&format!("cannot write FAKE_GEMINI_LOG: {e}")),
            }
        }
        Err(e) => fail(&format!("cannot open FAKE_GEMINI_LOG: {e}")),
    }
}

/// A log that cannot be written is a fixture bug: it must not pass for a run without records.
fn fail(msg: &str) -> ! {
    crate::sys::err_line(&format!("fake-gemini: {msg}"));
    crate::sys::exit_now(99)
}

/// Fails (exit 99) unless FAKE_GEMINI_LOG, when set, can be opened for appending; the launcher
/// calls it before spawning so that a bad path never leaves a worker behind.
pub fn check() {
    if let Some(path) = std::env::var_os("FAKE_GEMINI_LOG") {
        if let Err(e) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            fail(&format!("cannot open FAKE_GEMINI_LOG: {e}"));
        }
    }
}

/// Appends one record of another kind (ACP mode logs an `acp-request` per incoming message).
pub fn record(record: &Value) {
    append(record);
}

/// Logs a descendant right after it was spawned.
pub fn spawned(pid: u32, by: u32, kind: &str) {
    append(&json!({"event": "spawned", "pid": pid, "by": by, "kind": kind}));
}

/// What the invocation record needs to know.
#[derive(Debug, Default)]
pub struct Invocation<'a> {
    /// Emulated CLI version.
    pub version: &'a str,
    /// argv without argv0.
    pub argv: &'a [String],
    /// stdin bytes read.
    pub stdin: &'a [u8],
    /// The assembled prompt.
    pub prompt: &'a str,
    /// Scenario name.
    pub scenario: Option<&'a str>,
    /// Marker parameters.
    pub params: &'a [(String, String)],
    /// The exit code, when determined.
    pub exit: Option<i32>,
}

/// Logs the invocation record (only once per process).
pub fn invocation(inv: &Invocation<'_>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut env = Map::new();
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .filter(|(k, _)| k != crate::sys::LAUNCHER_ENV)
        .collect();
    vars.sort();
    for (k, v) in vars {
        let entry = if value_logged(&k) {
            json!({"value": v})
        } else {
            json!({"sha256": sha256_hex(v.as_bytes())})
        };
        env.insert(k, entry);
    }
    let mut params = Map::new();
    for (k, v) in inv.params {
        params.insert(k.clone(), json!(v));
    }
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let record = json!({
        "event": "invocation",
        "version": inv.version,
        "pid": std::process::id(),
        "pgid": crate::sys::pgid(),
        "ppid": crate::sys::ppid(),
        "launcher_pid": crate::sys::launcher_info().map(|(p, _)| p),
        "argv": inv.argv,
        "cwd": cwd,
        "stdin": String::from_utf8_lossy(inv.stdin),
        "stdin_base64": base64::engine::general_purpose::STANDARD.encode(inv.stdin),
        "stdin_bytes": inv.stdin.len(),
        "prompt": inv.prompt,
        "scenario": inv.scenario,
        "params": params,
        "env": env,
        "exit": inv.exit,
    });
    append(&record);
}
