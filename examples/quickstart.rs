//! The offline demo: starts the `geminicli-mcp` server with fake-gemini standing in for the Gemini
//! CLI, initializes, lists the tools and calls each of them, printing what comes back.
//!
//! Run with `cargo run --example quickstart`. No network, no Google account: fake-gemini answers.
//! Against the real CLI you would drop `GEMINI_CLI_BIN` (or point it at `gemini`) and the
//! `[[fake-gemini:…]]` markers, which only the fake understands.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// A minimal MCP client: one JSON-RPC message per line over the server's stdio.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Mcp {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").expect("write request");
        self.stdin.flush().expect("flush");
        loop {
            let mut buf = String::new();
            if self.stdout.read_line(&mut buf).expect("read") == 0 {
                panic!("the server closed stdout before answering {method}");
            }
            let message: Value = serde_json::from_str(&buf).expect("stdout carries JSON-RPC only");
            // Progress notifications and the like have no id; skip them.
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn notify(&mut self, method: &str) {
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": method})
        )
        .expect("write");
    }
}

fn show_call(mcp: &mut Mcp, tool: &str, arguments: Value) {
    println!("\n── tools/call {tool}");
    let response = mcp.request("tools/call", json!({"name": tool, "arguments": arguments}));
    let result = &response["result"];
    let status = if result["isError"] == json!(true) {
        "error"
    } else {
        "ok"
    };
    println!("   isError: {}  ({status})", result["isError"]);
    for block in result["content"].as_array().into_iter().flatten() {
        if let Some(text) = block["text"].as_str() {
            for (i, line) in text.lines().enumerate() {
                println!("   {} {line}", if i == 0 { "text:" } else { "     " });
            }
        }
    }
    // The same facts, machine-readable; long values shortened for the screen.
    let mut structured = String::from("   structuredContent:");
    for (key, value) in result["structuredContent"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let mut shown = value.to_string();
        if shown.chars().count() > 60 {
            shown = shown.chars().take(57).collect::<String>() + "...";
        }
        structured.push_str(&format!("\n     {key}: {shown}"));
    }
    println!("{structured}");
}

#[expect(
    clippy::too_many_lines,
    reason = "the demo reads top to bottom as the story a newcomer follows"
)]
fn main() {
    let server = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let fake = gemini_mcp_conformance::bins::locate("fake-gemini");
    // fake-gemini keeps sessions under FAKE_GEMINI_STATE; keep them out of your home directory.
    let state = tempfile::tempdir().expect("temp dir");

    let mut child = Command::new(&server)
        .env("GEMINI_CLI_BIN", &fake)
        .env("FAKE_GEMINI_STATE", state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start geminicli-mcp");
    let mut mcp = Mcp {
        stdin: child.stdin.take().expect("stdin"),
        stdout: BufReader::new(child.stdout.take().expect("stdout")),
        child,
        next_id: 0,
    };

    println!(
        "server: {}\nCLI:    {} (fake-gemini)",
        server.display(),
        fake.display()
    );
    let init = mcp.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "quickstart", "version": "1"}
        }),
    );
    let info = &init["result"]["serverInfo"];
    println!(
        "\n── initialize\n   {} {} (protocol {})",
        info["name"], info["version"], init["result"]["protocolVersion"]
    );
    mcp.notify("notifications/initialized");

    let tools = mcp.request("tools/list", json!({}));
    println!("\n── tools/list");
    for tool in tools["result"]["tools"].as_array().into_iter().flatten() {
        let required = tool["inputSchema"]["required"].to_string();
        println!(
            "   {:<28} required {required}",
            tool["name"].as_str().unwrap_or_default()
        );
    }

    show_call(&mut mcp, "gemini_prompt", json!({"prompt": "Say hello."}));
    show_call(
        &mut mcp,
        "gemini_prompt_with_context",
        json!({"prompt": "What does this function do?", "context": "fn add(a: i32, b: i32) -> i32 { a + b }"}),
    );
    // The marker makes fake-gemini answer with this text; the real model would write its own.
    let answer =
        "Here you go:\n```json\n{\"title\": \"Quickstart\", \"tags\": [\"mcp\", \"gemini\"]}\n```";
    let marker = format!(
        "[[fake-gemini:success text={}]]",
        serde_json::to_string(answer).unwrap()
    );
    show_call(
        &mut mcp,
        "gemini_prompt_structured",
        json!({
            "prompt": format!("Describe this project as JSON. {marker}"),
            "schema": {
                "type": "object",
                "required": ["title", "tags"],
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "additionalProperties": false
            }
        }),
    );
    // A failure, to show the error format: fake-gemini plays an unauthenticated CLI.
    show_call(
        &mut mcp,
        "gemini_prompt",
        json!({"prompt": "Hi [[fake-gemini:auth-missing]]"}),
    );

    // Closing stdin ends the session; the server exits once every call is answered.
    drop(mcp.stdin);
    let status = mcp.child.wait().expect("wait for the server");
    println!("\nserver exited: {status}");
}
