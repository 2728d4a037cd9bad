//! The warm ACP row of BENCHMARKS.md, in one run: with fake-gemini's start-up delay at 2 s, a
//! cold one-shot `gemini_prompt` call (which pays the start-up every time) against a follow-up
//! `gemini` call on a warm ACP session (goal: under 1 % of the start-up delay, 20 ms).
//!
//! `cargo run --example bench_acp`. Offline: fake-gemini answers every call.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// fake-gemini's start-up delay, both for the one-shot run and for the ACP agent.
const START_DELAY_MS: u64 = 2_000;
/// Warm follow-up calls measured.
const WARM_ROUNDS: usize = 30;
/// Cold one-shot calls measured (each costs the whole delay).
const COLD_ROUNDS: usize = 3;

struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> (Duration, Value) {
        let t = Instant::now();
        let v = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let d = t.elapsed();
        assert_ne!(v["result"]["isError"], json!(true), "{tool} failed: {v}");
        (d, v)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let server = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let fake = gemini_mcp_conformance::bins::locate("fake-gemini");
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(&server)
        .current_dir(state.path())
        .env("GEMINI_CLI_BIN", &fake)
        .env("FAKE_GEMINI_STATE", state.path())
        .env("GEMINICLI_MCP_TOOLSETS", "acp")
        .env("GEMINICLI_MCP_ACP_MAX_TURNS", "1000")
        .env("FAKE_GEMINI_ACP_START_DELAY_MS", START_DELAY_MS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the server");
    let mut c = Client {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        next: 0,
    };
    c.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
    );
    writeln!(
        c.stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();

    let cold: Vec<Duration> = (0..COLD_ROUNDS)
        .map(|_| {
            c.call(
                "gemini_prompt",
                json!({"prompt": format!("[[fake-gemini:slow-start delay-ms={START_DELAY_MS}]]")}),
            )
            .0
        })
        .collect();
    let (first, _) = c.call("gemini", json!({"prompt": "hi"}));
    let warm: Vec<Duration> = (0..WARM_ROUNDS)
        .map(|_| c.call("gemini", json!({"prompt": "hi"})).0)
        .collect();
    drop(c);
    let _ = child.wait();

    let (cold, warm) = (median(cold), median(warm));
    let goal = Duration::from_millis(START_DELAY_MS) / 100;
    println!("start-up delay of fake-gemini: {START_DELAY_MS} ms (one-shot and --acp)");
    println!(
        "cold one-shot gemini_prompt (median of {COLD_ROUNDS}): {:.2} ms",
        ms(cold)
    );
    println!(
        "first ACP gemini call (agent start-up): {:.2} ms",
        ms(first)
    );
    println!(
        "warm ACP follow-up gemini call (median of {WARM_ROUNDS}): {:.2} ms = {:.3} % of the start-up delay (goal < 1 %, {:.0} ms): {}",
        ms(warm),
        ms(warm) / START_DELAY_MS as f64 * 100.0,
        ms(goal),
        if warm < goal { "met" } else { "missed" }
    );
}
