//! The MCP servers of the settings, started as the real CLI 0.61 starts them: in a trusted folder
//! only, before a headless run's first request and before `--acp` answers anything. Which ones:
//! `mcpServers` of every layer (a name's entry from the highest layer that has it), less those
//! `mcp.allowed` (every layer's list intersected) leaves out and `mcp.excluded` (every layer's
//! together) keeps out — or, given `--allowed-mcp-server-names` (its values split at commas),
//! exactly those names, the settings' lists ignored. Each stdio server is spawned with its
//! `command`, `args`, `cwd` and `env` (`$VAR` expanded) on top of the CLI's environment with
//! `GEMINI_CLI=1`, sent `initialize` and waited for, all at once, each for its `timeout` in
//! milliseconds or 10 minutes (`MCP_DEFAULT_TIMEOUT_MSEC`): a server that never answers holds
//! the run that long. One that cannot start, ends, or does not answer in time makes the CLI
//! print `MCP issues detected. Run /mcp list for status.` once, and the run goes on. Not
//! emulated: `url`/`httpUrl` servers (not connected), extensions' servers, the environment's
//! secret redaction, the servers' tools; the servers are stopped once they have answered.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cli::Args;

/// The CLI's wait for a server's `initialize` when its entry sets no `timeout`.
const DEFAULT_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// The line the CLI prints when a server failed (once per run).
pub const ISSUES: &str = "MCP issues detected. Run /mcp list for status.";

/// `--allowed-mcp-server-names` as the CLI coerces it: `None` when not given.
fn allowed_flag(args: &Args) -> Option<Vec<String>> {
    if !args.values.contains_key("allowed-mcp-server-names") {
        return None;
    }
    Some(coerce(args.array("allowed-mcp-server-names")))
}

/// `--allowed-mcp-server-names` of a command line (`=value` or the next argument), coerced as
/// the CLI coerces it: `None` when not given.
pub fn allowed_in(argv: &[String]) -> Option<Vec<String>> {
    let name = "--allowed-mcp-server-names";
    let mut values = Vec::new();
    let mut given = false;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            (given, values) = (true, [values, vec![v.to_owned()]].concat());
        } else if a == name {
            given = true;
            values.extend(it.next().cloned());
        }
    }
    given.then(|| coerce(&values))
}

fn coerce(values: &[String]) -> Vec<String> {
    if values.len() == 1 && values[0].is_empty() {
        return vec![String::new()];
    }
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The servers the CLI starts in `cwd`, by name, with their entries.
pub fn started(cwd: &Path, args: &Args) -> Vec<(String, Map<String, Value>)> {
    started_for(cwd, allowed_flag(args))
}

/// [`started`] given the flag's names (`None`: not given).
fn started_for(cwd: &Path, flag: Option<Vec<String>>) -> Vec<(String, Map<String, Value>)> {
    let layers = crate::settings::layer_values(cwd);
    let mut servers: Vec<(String, Map<String, Value>)> = Vec::new();
    let (mut allowed, mut excluded): (Option<Vec<String>>, Vec<String>) = (None, Vec::new());
    let names = |v: &Value| -> Option<Vec<String>> {
        Some(
            v.as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        )
    };
    for layer in &layers {
        if let Some(map) = layer["mcpServers"].as_object() {
            for (name, entry) in map {
                if let (Some(entry), false) =
                    (entry.as_object(), servers.iter().any(|(n, _)| n == name))
                {
                    servers.push((name.clone(), entry.clone()));
                }
            }
        }
        if let Some(list) = names(&layer["mcp"]["allowed"]) {
            let norm = |s: &str| s.trim().to_lowercase();
            allowed = Some(match allowed {
                None => list,
                Some(acc) => acc
                    .into_iter()
                    .filter(|a| list.iter().any(|l| norm(l) == norm(a)))
                    .collect(),
            });
        }
        excluded.extend(names(&layer["mcp"]["excluded"]).unwrap_or_default());
    }
    if let Some(flag) = flag {
        (allowed, excluded) = (Some(flag), Vec::new());
    }
    servers
        .into_iter()
        .filter(|(name, entry)| {
            let runnable = ["command", "url", "httpUrl"].iter().any(|k| {
                entry
                    .get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty())
            });
            let allowed = allowed
                .as_ref()
                .is_none_or(|a| a.is_empty() || a.contains(name));
            runnable && allowed && !excluded.contains(name)
        })
        .collect()
}

/// `$NAME` and `${NAME}` replaced by the variable's value (empty when unset).
fn expand(text: &str) -> String {
    let re = regex::Regex::new(r"\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)").expect("a regex");
    re.replace_all(text, |c: &regex::Captures| {
        let name = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        std::env::var(name).unwrap_or_default()
    })
    .into_owned()
}

/// Starts the stdio servers of `started` and waits for each one's answer to `initialize` (at
/// once, each within its own timeout); returns whether any failed.
pub fn discover(cwd: &Path, args: &Args) -> bool {
    discover_for(cwd, allowed_flag(args))
}

/// [`discover`] given the flag's names (`None`: not given).
pub fn discover_for(cwd: &Path, flag: Option<Vec<String>>) -> bool {
    let mut waits = Vec::new();
    let mut failed = false;
    for (_, entry) in started_for(cwd, flag) {
        let Some(command) = entry
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        let timeout = entry
            .get("timeout")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        match spawn(command, &entry, cwd) {
            Some(child) => waits.push((child, Duration::from_millis(timeout))),
            None => failed = true,
        }
    }
    let handles: Vec<_> = waits
        .into_iter()
        .map(|(child, timeout)| std::thread::spawn(move || handshake(child, timeout)))
        .collect();
    for h in handles {
        failed |= !h.join().unwrap_or(false);
    }
    failed
}

fn spawn(command: &str, entry: &Map<String, Value>, cwd: &Path) -> Option<Child> {
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(
            entry
                .get("cwd")
                .and_then(Value::as_str)
                .map_or(cwd, Path::new),
        )
        .env("GEMINI_CLI", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(env) = entry.get("env").and_then(Value::as_object) {
        for (k, v) in env {
            cmd.env(k, v.as_str().map(expand).unwrap_or_default());
        }
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().ok()
}

/// Sends `initialize` and waits up to `timeout` for its answer; the server is stopped after.
fn handshake(mut child: Child, timeout: Duration) -> bool {
    let request = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gemini-cli-mcp-client","version":"0.0.1"}}}"#;
    let (tx, rx) = mpsc::channel();
    if let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) {
        let _ = writeln!(stdin, "{request}");
        std::thread::spawn(move || {
            let _keep = stdin;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if v["id"] == 0 {
                        let _ = tx.send(v.get("result").is_some());
                        return;
                    }
                }
            }
            let _ = tx.send(false);
        });
    }
    let answered = rx.recv_timeout(timeout).unwrap_or(false);
    #[cfg(unix)]
    // SAFETY: kill(2) on the process group made for this server.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
    answered
}
