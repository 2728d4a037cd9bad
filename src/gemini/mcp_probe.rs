//! Whether one of the user's MCP servers answers `initialize` in bounded time, as the Gemini CLI
//! would start it: a stdio server spawned with its command, arguments, environment (the CLI's
//! `$VAR` expansion) and folder, sent `initialize`, waited for at most a bound (`GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS`), then its
//! process group killed; an `http://` server sent the same request. The CLI 0.61 waits for every
//! server's `initialize` before its first request (headless) or before it answers ACP's
//! `initialize`, up to the entry's `timeout` or 10 minutes (`MCP_DEFAULT_TIMEOUT_MSEC`): one that
//! never answers holds the whole run that long.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// What a server did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It answered `initialize` (after this long).
    Answered(Duration),
    /// It gave no answer within the bound: the CLI would wait for it.
    Silent,
    /// It could not start, or ended or refused without an answer: the CLI warns (`MCP issues
    /// detected`) and goes on without it.
    Failed(String),
    /// Not checked here (an `https://` or SSE server).
    NotChecked(&'static str),
}

/// The request a probe sends: what the CLI's client sends first.
fn initialize() -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "geminicli-mcp-probe", "version": env!("CARGO_PKG_VERSION")}}
    })
    .to_string()
}

/// `$NAME` and `${NAME}` of `text` replaced by the variable's value (empty when unset), as the
/// CLI expands an entry's `env` values.
pub(crate) fn expand(text: &str, var: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&var(name).unwrap_or_default());
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

/// Probes the server `entry` as a CLI started in `workspace` would start it.
pub(crate) async fn probe(
    entry: &Map<String, Value>,
    workspace: &Path,
    bound: Duration,
) -> Verdict {
    let s = |k: &str| {
        entry
            .get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(command) = s("command") {
        return stdio(entry, command, workspace, bound).await;
    }
    match s("httpUrl").or_else(|| s("url")) {
        Some(url) => http(url, bound).await,
        None => Verdict::Failed("no command or URL".into()),
    }
}

async fn stdio(
    entry: &Map<String, Value>,
    command: &str,
    workspace: &Path,
    bound: Duration,
) -> Verdict {
    let args: Vec<String> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&args)
        .current_dir(
            entry
                .get("cwd")
                .and_then(Value::as_str)
                .map_or(workspace, Path::new),
        )
        .env("GEMINI_CLI", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(Value::Object(env)) = entry.get("env") {
        for (k, v) in env {
            if let Some(v) = v.as_str() {
                cmd.env(k, expand(v, |n| std::env::var(n).ok()));
            }
        }
    }
    if let Some((k, v)) = crate::gemini::process::outside_run_marker() {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    // A probe dropped midway (the call cancelled) kills the server's whole group too.
    let mut child = match cmd.spawn() {
        Ok(c) => Group(c),
        Err(e) => return Verdict::Failed(format!("cannot start `{command}`: {e}")),
    };
    let child = &mut child.0;
    let started = Instant::now();
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Verdict::Failed("no pipes".into());
    };
    let talk = async {
        stdin
            .write_all(format!("{}\n", initialize()).as_bytes())
            .await
            .ok()?;
        stdin.flush().await.ok()?;
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("id") == Some(&Value::from(0)) {
                return Some(v.get("result").is_some());
            }
        }
        None
    };
    let verdict = match tokio::time::timeout(bound, talk).await {
        Ok(Some(true)) => Verdict::Answered(started.elapsed()),
        Ok(Some(false)) => Verdict::Failed("it answered `initialize` with an error".into()),
        Ok(None) => Verdict::Failed(match child.try_wait() {
            Ok(Some(status)) => format!("it ended ({status}) without answering `initialize`"),
            _ => "it closed its output without answering `initialize`".into(),
        }),
        Err(_) => Verdict::Silent,
    };
    verdict
}

/// A probed server's process, its group killed when the probe ends or is dropped.
struct Group(tokio::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        kill_tree(&mut self.0);
    }
}

/// Kills the probe's process group (the server and whatever it started), then the child.
fn kill_tree(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on the process group this probe created for the server.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
    let _ = child.start_kill();
}

/// A plain-HTTP server: the request written, the status line awaited. An `https://` one is not
/// checked (the server carries no TLS client).
async fn http(url: &str, bound: Duration) -> Verdict {
    let Some(rest) = url.strip_prefix("http://") else {
        return Verdict::NotChecked("only http:// servers are checked");
    };
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let body = initialize();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let talk = async {
        let addr = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:80")
        };
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = [0u8; 12];
        stream
            .read_exact(&mut head)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(String::from_utf8_lossy(&head[9..12]).into_owned())
    };
    match tokio::time::timeout(bound, talk).await {
        Ok(Ok(status)) if status.starts_with('2') => Verdict::Answered(started.elapsed()),
        Ok(Ok(status)) => Verdict::Failed(format!("it answered HTTP {status}")),
        Ok(Err(e)) => Verdict::Failed(e),
        Err(_) => Verdict::Silent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn variables_expand_as_the_cli_expands_them() {
        let var = |n: &str| (n == "HOME").then(|| "/h".to_owned());
        assert_eq!(expand("$HOME/x:${HOME}:$NOPE:$:${", var), "/h/x:/h::$:${");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_silent_and_killed() {
        let entry = json!({"command": "sleep", "args": ["100000"]});
        let dir = tempfile::tempdir().unwrap();
        let bound = Duration::from_millis(300);
        let v = probe(entry.as_object().unwrap(), dir.path(), bound).await;
        assert_eq!(v, Verdict::Silent);
    }

    #[tokio::test]
    async fn a_missing_command_or_an_early_exit_fails() {
        let dir = tempfile::tempdir().unwrap();
        let bound = Duration::from_secs(5);
        let missing = json!({"command": "/nonexistent/mcp"});
        let v = probe(missing.as_object().unwrap(), dir.path(), bound).await;
        assert!(
            matches!(v, Verdict::Failed(ref why) if why.contains("cannot start")),
            "{v:?}"
        );
        let exits = json!({"command": "true"});
        let v = probe(exits.as_object().unwrap(), dir.path(), bound).await;
        assert!(matches!(v, Verdict::Failed(_)), "{v:?}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_server_that_answers_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"read line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'; sleep 100000"#;
        let entry = json!({"command": "sh", "args": ["-c", script]});
        let v = probe(
            entry.as_object().unwrap(),
            dir.path(),
            Duration::from_secs(5),
        )
        .await;
        assert!(matches!(v, Verdict::Answered(_)), "{v:?}");
    }

    /// Whether process `pid` is gone (or a zombie nobody reaps yet).
    #[cfg(target_os = "linux")]
    fn gone(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_probe_dropped_midway_kills_the_servers_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        // The server starts a child of its own and never answers.
        let script = format!("sleep 100000 & echo $! > {}; wait", pid_file.display());
        let entry = json!({"command": "sh", "args": ["-c", script]});
        let probing = probe(
            entry.as_object().unwrap(),
            dir.path(),
            Duration::from_secs(600),
        );
        let pid = tokio::select! {
            _ = probing => panic!("the probe ended before it was dropped"),
            pid = async {
                loop {
                    match std::fs::read_to_string(&pid_file) {
                        Ok(p) if p.ends_with('\n') => break p.trim().to_owned(),
                        _ => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                }
            } => pid,
        };
        // The probe future is dropped here, as a cancelled call drops it.
        let end = Instant::now() + Duration::from_secs(10);
        while !gone(&pid) {
            assert!(
                Instant::now() < end,
                "the server's child {pid} outlived the probe"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
