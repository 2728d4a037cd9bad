//! Measures what BENCHMARKS.md reports, in one run, as ratios against baselines measured the same
//! way on the same machine (Linux: memory figures come from `/proc`).
//!
//! `cargo run --example bench` (add `--release` for numbers that mean something outside a debug
//! build). Offline: fake-gemini answers every call.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ROUNDS: usize = 30;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(server: &Path, fake: &Path, state: &Path) -> Server {
        let mut child = Command::new(server)
            .env("GEMINI_CLI_BIN", fake)
            .env("FAKE_GEMINI_STATE", state)
            .current_dir(state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start geminicli-mcp");
        Server {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 0,
        }
    }

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
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
    }

    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(field))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let server_bin = gemini_mcp_conformance::bins::locate("geminicli-mcp");
    let fake = gemini_mcp_conformance::bins::locate("fake-gemini");
    let state = tempfile::tempdir().unwrap();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "geminicli-mcp bench ({profile} build of this example; binaries from {})\n",
        server_bin.parent().unwrap().display()
    );

    // 1. A tools/call through the server vs the same fake-gemini run started directly.
    let mut server = Server::start(&server_bin, &fake, state.path());
    server.initialize();
    let prompt = "Say hello.";
    let mut through = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let r = server.request(
            "tools/call",
            json!({"name": "gemini_prompt", "arguments": {"prompt": prompt}}),
        );
        through.push(t.elapsed());
        assert_eq!(r["result"]["isError"], json!(false), "{r}");
    }
    let mut direct = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let mut child = Command::new(&fake)
            .args([
                "--output-format=stream-json",
                "--approval-mode=yolo",
                "--skip-trust",
            ])
            .env("FAKE_GEMINI_STATE", state.path())
            .current_dir(state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        direct.push(t.elapsed());
        assert!(out.status.success());
    }
    let (through, direct) = (median(through), median(direct));
    let overhead = through.saturating_sub(direct);
    println!("| measure | server | baseline | result |");
    println!("|---|---:|---:|---:|");
    println!(
        "| tools/call vs fake-gemini run directly (median of {ROUNDS}) | {} | {} | +{} (goal ≤ 1 ms) |",
        ms(through),
        ms(direct),
        ms(overhead)
    );

    // 2. Spawn → initialize reply vs spawning /bin/true.
    let mut init = Vec::new();
    let mut truth = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let mut s = Server::start(&server_bin, &fake, state.path());
        s.initialize();
        init.push(t.elapsed());
        drop(s);
        let t = Instant::now();
        Command::new("/bin/true").status().unwrap();
        truth.push(t.elapsed());
    }
    let (init, truth) = (median(init), median(truth));
    println!(
        "| spawn → initialize reply vs spawn of /bin/true (median of {ROUNDS}) | {} | {} | ×{:.1} |",
        ms(init),
        ms(truth),
        init.as_secs_f64() / truth.as_secs_f64()
    );

    // 3. Idle RSS, then 4. peak RSS under a 1 GiB stdout flood with the default 32 MiB cap.
    let idle = server.status_kib("VmRSS:");
    let r = server.request(
        "tools/call",
        json!({"name": "gemini_prompt", "arguments": {"prompt": "flood [[fake-gemini:flood-stdout]]"}}),
    );
    let kind = r["result"]["structuredContent"]["errorKind"].clone();
    let peak = server.status_kib("VmHWM:");
    let cap_mib = 32.0;
    match (idle, peak) {
        (Some(idle), Some(peak)) => {
            println!(
                "| idle RSS after initialize and {ROUNDS} calls | {:.1} MiB | | |",
                idle as f64 / 1024.0
            );
            println!(
                "| peak RSS, 1 GiB stdout flood, default cap (ended as {kind}) | {:.1} MiB | 2 × cap + 16 = {:.0} MiB | {} |",
                peak as f64 / 1024.0,
                2.0 * cap_mib + 16.0,
                if (peak as f64 / 1024.0) <= 2.0 * cap_mib + 16.0 { "within goal" } else { "over goal" }
            );
        }
        _ => println!("| memory | n/a (no /proc on this platform) | | |"),
    }
}
