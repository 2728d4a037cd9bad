//! A deliberately small MCP server over stdio that the suite's self-test runs the cases against:
//! with `BROKEN_TARGET_MODE` unset it behaves for the lifecycle and argument cases, and each mode
//! breaks one rule, so the self-test can prove the cases that check that rule fail (as the MCP
//! conformance suite does with its `*-broken` examples). Not a usable server.
//!
//! Modes (comma-separated in `BROKEN_TARGET_MODE`):
//! - `stdout-noise`: prints a log line on stdout before serving;
//! - `bad-args-protocol-error`: answers invalid tool arguments with a JSON-RPC error;
//! - `fixed-version`: answers every `initialize` with protocol version 2024-11-05;
//! - `ignore-eof`: keeps running after stdin closes;
//! - `output-schema-always`: lists `outputSchema` whatever version the client negotiated;
//! - `unknown-tool-result`: answers an unknown tool with a tool result instead of an error;
//! - `silent-parse-error`: ignores lines that are not JSON instead of answering -32700;
//! - `prompt-on-argv`: passes the prompt as `-p PROMPT` instead of on stdin;
//! - `context-unescaped`: lets a context close its `<context>` block early;
//! - `no-yolo`: leaves out `--approval-mode=yolo`;
//! - `roots-request`: asks the client for its roots (`roots/list`) before each tool call, on a
//!   2026-07-28 connection too, where the server sends no request to the client;
//! - `env-allowlist`: starts gemini with only `PATH` and `HOME` in its environment, as wrappers
//!   with an environment allowlist do (not a broken rule: the runner's launcher must cope).
//! - `leak-orphan`: at `initialize`, starts a copy of itself that starts a sleeper in a process
//!   group of its own and exits at once (a double fork), so the sleeper outlives the server.
//!
//! Notifications and the client's answers get no reply. Unbroken, a call runs gemini
//! (`GEMINI_CLI_BIN`) with `-o json`, the prompt on stdin, and answers with its `response`: enough
//! for the self-test's cases, synchronous and with no supervision.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The roles a copy of this binary plays for `leak-orphan`: the launcher that exits at once, and
/// the sleeper it leaves behind.
fn orphan_roles() {
    match std::env::var("BROKEN_TARGET_ROLE").as_deref() {
        Ok("launcher") => {
            if let Ok(me) = std::env::current_exe() {
                let mut sleeper = Command::new(me);
                sleeper
                    .env("BROKEN_TARGET_ROLE", "sleeper")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                #[cfg(unix)]
                std::os::unix::process::CommandExt::process_group(&mut sleeper, 0);
                let _ = sleeper.spawn();
            }
            std::process::exit(0);
        }
        Ok("sleeper") => {
            std::thread::sleep(std::time::Duration::from_secs(120));
            std::process::exit(0);
        }
        _ => {}
    }
}

/// Starts the launcher of `leak-orphan` and waits for it, so only the sleeper is left.
fn leave_an_orphan() {
    if let Ok(me) = std::env::current_exe() {
        let launched = Command::new(me)
            .env("BROKEN_TARGET_ROLE", "launcher")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Err(e) = launched {
            eprintln!("broken-target: cannot start the launcher: {e}");
        }
    }
}

fn main() {
    orphan_roles();
    let modes: Vec<String> = std::env::var("BROKEN_TARGET_MODE")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let broken = |m: &str| modes.iter().any(|x| x == m);
    let stdout = std::io::stdout();
    if broken("stdout-noise") {
        println!("broken-target: starting up");
    }
    let mut version = VERSIONS[VERSIONS.len() - 1].to_string();
    let send = |v: Value| {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    };
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                if !broken("silent-parse-error") {
                    send(
                        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
                    );
                }
                continue;
            }
        };
        let (Some(id), true) = (msg.get("id").cloned(), msg.get("method").is_some()) else {
            continue;
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        let reply = match method {
            "initialize" => {
                if broken("leak-orphan") {
                    leave_an_orphan();
                }
                version = negotiated(&params, broken("fixed-version"));
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "broken-target", "version": "0.0.0"}
                }))
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools(&version, broken("output-schema-always"))})),
            "tools/call" => {
                if broken("roots-request") {
                    send(json!({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"}));
                }
                call(&params, &broken)
            }
            _ => Err((-32601, format!("method not found: {method}"))),
        };
        send(match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        });
    }
    if broken("ignore-eof") {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// The version `initialize` answers: the client's when known, else the newest (always 2024-11-05
/// when `fixed`).
fn negotiated(params: &Value, fixed: bool) -> String {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if fixed {
        "2024-11-05".into()
    } else if VERSIONS.contains(&asked) {
        asked.into()
    } else {
        VERSIONS[VERSIONS.len() - 1].into()
    }
}

fn tools(version: &str, output_schema_always: bool) -> Vec<Value> {
    let out = json!({"type": "object", "properties": {"response": {"type": "string"}}});
    let with_prompt = |extra: Value, required: Vec<&str>| {
        let mut props = json!({"prompt": {"type": "string"}, "model": {"type": "string"}});
        for (k, v) in extra.as_object().into_iter().flatten() {
            props[k] = v.clone();
        }
        json!({"type": "object", "properties": props, "required": required})
    };
    let mut list = vec![
        json!({"name": "gemini_prompt", "description": "Ask Gemini.", "inputSchema": with_prompt(json!({}), vec!["prompt"])}),
        json!({"name": "gemini_prompt_with_context", "description": "Ask Gemini with context.",
               "inputSchema": with_prompt(json!({"context": {"type": "string"}}), vec!["prompt", "context"])}),
        json!({"name": "gemini_prompt_structured", "description": "Ask Gemini for JSON.",
               "inputSchema": with_prompt(json!({"context": {"type": "string"}, "schema": {"type": "object"}}), vec!["prompt", "schema"])}),
    ];
    if output_schema_always || version >= "2025-06-18" {
        for t in &mut list {
            t["outputSchema"] = out.clone();
        }
    }
    list
}

fn tool_error(code: i32, kind: &str, message: &str) -> Value {
    json!({"isError": true, "content": [{"type": "text", "text": format!("[error exit={code}] {kind}: {message}")}]})
}

#[expect(
    clippy::too_many_lines,
    reason = "one match arm per deliberately broken behaviour, each next to the rule it breaks"
)]
fn call(params: &Value, broken: &dyn Fn(&str) -> bool) -> Result<Value, (i64, String)> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let required: &[&str] = match name {
        "gemini_prompt" => &["prompt"],
        "gemini_prompt_with_context" => &["prompt", "context"],
        "gemini_prompt_structured" => &["prompt", "schema"],
        _ if broken("unknown-tool-result") => return Ok(tool_error(1, "error", "unknown tool")),
        _ => return Err((-32602, format!("unknown tool: {name}"))),
    };
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    for r in required {
        let ok = match *r {
            "schema" => args.get(r).is_some_and(Value::is_object),
            _ => args.get(r).is_some_and(Value::is_string),
        };
        if !ok {
            let msg = format!(
                "`{r}` is required and must be a {}",
                if *r == "schema" {
                    "JSON object"
                } else {
                    "string"
                }
            );
            if broken("bad-args-protocol-error") {
                return Err((-32602, msg));
            }
            return Ok(tool_error(42, "input_validation", &msg));
        }
    }
    let mut prompt = args["prompt"].as_str().unwrap_or_default().to_string();
    if let Some(ctx) = args.get("context").and_then(Value::as_str) {
        let ctx = if broken("context-unescaped") {
            ctx.to_string()
        } else {
            ctx.replace("</context", "<\\/context")
        };
        prompt = format!("<context>\n{ctx}\n</context>\n\n{prompt}");
    }
    let bin = std::env::var("GEMINI_CLI_BIN").unwrap_or_else(|_| "gemini".into());
    let mut argv = vec![
        "--output-format=json".to_string(),
        "--skip-trust".to_string(),
    ];
    if !broken("no-yolo") {
        argv.push("--approval-mode=yolo".into());
    }
    let on_argv = broken("prompt-on-argv");
    if on_argv {
        argv.push("-p".into());
        argv.push(prompt.clone());
    }
    let mut cmd = Command::new(&bin);
    if broken("env-allowlist") {
        cmd.env_clear();
        for k in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
    }
    let child = cmd
        .args(&argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Ok(tool_error(127, "spawn_failed", &e.to_string())),
    };
    if let Some(mut stdin) = child.stdin.take() {
        if !on_argv {
            let _ = stdin.write_all(prompt.as_bytes());
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| (-32603, e.to_string()))?;
    let code = out.status.code().unwrap_or(1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    match doc.get("response").and_then(Value::as_str) {
        Some(text) if code == 0 => Ok(json!({"content": [{"type": "text", "text": text}]})),
        _ => Ok(tool_error(
            code,
            "error",
            String::from_utf8_lossy(&out.stderr).trim(),
        )),
    }
}
