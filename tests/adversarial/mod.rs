//! The server under hostile input and faults, over stdio and HTTP: malformed, oversized, deeply
//! nested and out-of-order messages, and a SIGKILL at every phase of a call, on both backends
//! (the warm one's cancels, stdin EOF and crashes are in `warm`). Each test asserts
//! what must hold whatever arrives: the server stays up (where it should), its stdout carries
//! only JSON-RPC, every request with an id gets exactly one answer, no process of a run is left,
//! and memory stays bounded. The slow members (lines of 64 MiB and more, a gibibyte without a
//! newline, 30 MiB hostile structured answers, a warm agent's floods) are ignored by default: `cargo nextest run -p geminicli-mcp --run-ignored only -E
//! 'test(/^adversarial::slow/)'`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gemini_mcp_conformance::client::Client;
use rstest::rstest;
use serde_json::{json, Value};

use crate::server::{deadline, read_log, server_command, Harness};

mod warm;

/// What one hostile line must get back.
#[derive(Debug, Clone)]
enum Owed {
    /// One answer under this id.
    Answer(Value),
    /// One error under `id: null`.
    NullError,
    /// No answer at all (a notification, a response, a blank line).
    Nothing,
}

/// The hostile lines of the barrage: a name, the bytes (a newline is added), what is owed.
fn barrage() -> Vec<(&'static str, Vec<u8>, Owed)> {
    let id = |s: &str| Owed::Answer(json!(s));
    let deep = |levels: usize, id: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"gemini_prompt","arguments":{{"prompt":"x","deep":{}{}}}}},"id":"{id}"}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
        .into_bytes()
    };
    let long_id = "i".repeat(2000);
    vec![
        ("not JSON", b"hello there".to_vec(), Owed::NullError),
        ("cut short", br#"{"jsonrpc":"2.0","id":"cut","method":"ping""#.to_vec(), id("cut")),
        ("method a number", br#"{"jsonrpc":"2.0","id":"num-method","method":12}"#.to_vec(), id("num-method")),
        ("method null", br#"{"jsonrpc":"2.0","id":"null-method","method":null}"#.to_vec(), id("null-method")),
        ("jsonrpc 1.0", br#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#.to_vec(), id("v1")),
        ("id null", br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#.to_vec(), Owed::NullError),
        ("id an array", br#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#.to_vec(), Owed::NullError),
        ("id an object", br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.to_vec(), Owed::NullError),
        ("id a boolean", br#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#.to_vec(), Owed::NullError),
        ("id a fraction", br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#.to_vec(), Owed::Answer(json!(1.5))),
        ("an id of 2,000 characters", format!(r#"{{"jsonrpc":"2.0","id":"{long_id}","method":"ping"}}"#).into_bytes(), Owed::Answer(json!(long_id))),
        ("nested 1,000 levels", deep(1000, "deep"), id("deep")),
        ("nested 100,000 levels, no id", "[".repeat(100_000).into_bytes(), Owed::NullError),
        ("a lone high surrogate in a prompt", br#"{"jsonrpc":"2.0","id":"high","method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":"[[fake-gemini:success text=ok]] \ud83d"}}}"#.to_vec(), id("high")),
        ("a lone low surrogate in a method", br#"{"jsonrpc":"2.0","id":"low","method":"ping\udc00"}"#.to_vec(), id("low")),
        ("invalid UTF-8", b"{\"jsonrpc\":\"2.0\",\"id\":\"utf8\",\"method\":\"ping\",\"x\":\"\xff\xfe\"}".to_vec(), id("utf8")),
        ("a NUL after the message", b"{\"jsonrpc\":\"2.0\",\"id\":\"nul\",\"method\":\"ping\"}\0".to_vec(), id("nul")),
        ("CRLF", b"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r".to_vec(), id("crlf")),
        ("a byte-order mark", b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"bom\",\"method\":\"ping\"}".to_vec(), id("bom")),
        ("a batch", br#"[{"jsonrpc":"2.0","id":"batched","method":"ping"}]"#.to_vec(), Owed::NullError),
        ("an unknown method", br#"{"jsonrpc":"2.0","id":"unknown","method":"no/such"}"#.to_vec(), id("unknown")),
        ("params a number", br#"{"jsonrpc":"2.0","id":"params","method":"tools/list","params":5}"#.to_vec(), id("params")),
        ("arguments a string", br#"{"jsonrpc":"2.0","id":"args","method":"tools/call","params":{"name":"gemini_prompt","arguments":"hi"}}"#.to_vec(), id("args")),
        ("no tool name", br#"{"jsonrpc":"2.0","id":"noname","method":"tools/call","params":{"arguments":{}}}"#.to_vec(), id("noname")),
        ("an unknown tool", br#"{"jsonrpc":"2.0","id":"notool","method":"tools/call","params":{"name":"rm_rf","arguments":{}}}"#.to_vec(), id("notool")),
        ("a slash command after a space", br#"{"jsonrpc":"2.0","id":"slash-space","method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":" /init [[fake-gemini:success text=\"as text\"]]"}}}"#.to_vec(), id("slash-space")),
        ("a dollar command", br#"{"jsonrpc":"2.0","id":"slash-dollar","method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":"$help [[fake-gemini:success text=\"as text\"]]"}}}"#.to_vec(), id("slash-dollar")),
        ("a slash command after a byte-order mark", "{\"jsonrpc\":\"2.0\",\"id\":\"slash-bom\",\"method\":\"tools/call\",\"params\":{\"name\":\"gemini_prompt\",\"arguments\":{\"prompt\":\"\u{FEFF}/memory show [[fake-gemini:success text=\\\"as text\\\"]]\"}}}".as_bytes().to_vec(), id("slash-bom")),
        ("a prompt that is a flag", br#"{"jsonrpc":"2.0","id":"flag","method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":"--yolo [[fake-gemini:success text=ok]]","model":"--sandbox"}}}"#.to_vec(), id("flag")),
        ("an unknown notification", br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#.to_vec(), Owed::Nothing),
        ("a response nobody asked for", br#"{"jsonrpc":"2.0","id":"zz","result":{}}"#.to_vec(), Owed::Nothing),
        ("a cancel of nothing", br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never"}}"#.to_vec(), Owed::Nothing),
        ("a blank line", b"   \t".to_vec(), Owed::Nothing),
    ]
}

/// The peak resident memory of `pid` (Linux's `VmHWM`), in bytes.
#[cfg(target_os = "linux")]
fn peak_memory(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Sends `ping` under `id` and waits for its answer: everything sent before it has been read.
fn ping_through(client: &mut Client, id: &str) {
    client
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .expect("send the ping");
    let answer = client.response(&json!(id), deadline());
    assert!(
        answer.is_some(),
        "the server stopped answering; stderr: {}",
        client.stderr()
    );
}

/// Every answer received under each id, and the number of `id: null` errors.
fn answers(client: &Client) -> (BTreeMap<String, usize>, usize) {
    let mut by_id = BTreeMap::new();
    let mut nulls = 0;
    for r in &client.received {
        let m = &r.message;
        if m.get("method").is_some() {
            continue;
        }
        match m.get("id") {
            Some(Value::Null) => nulls += 1,
            Some(id) => *by_id.entry(id.to_string()).or_insert(0) += 1,
            None => {}
        }
    }
    (by_id, nulls)
}

#[test]
fn a_barrage_of_malformed_lines_gets_one_answer_per_id_and_nothing_but_json_rpc() {
    let mut h = Harness::start(&[]);
    let lines = barrage();
    for (_, bytes, _) in &lines {
        let mut line = bytes.clone();
        line.push(b'\n');
        h.client.send_raw(line).expect("send");
    }
    ping_through(&mut h.client, "after-the-barrage");
    // Tool calls in the barrage answer after the ping: wait for each owed id.
    for (name, _, owed) in &lines {
        if let Owed::Answer(id) = owed {
            let got = h.client.wait_for(deadline(), |m| m.get("id") == Some(id));
            assert!(got.is_some(), "{name}: no answer under {id}");
        }
    }
    h.client
        .listen_until(Instant::now() + Duration::from_millis(500));
    assert!(
        h.client.violations.is_empty(),
        "stdout carried something other than JSON-RPC: {:?}",
        h.client.violations
    );
    let (by_id, nulls) = answers(&h.client);
    for (name, _, owed) in &lines {
        if let Owed::Answer(id) = owed {
            assert_eq!(
                by_id.get(&id.to_string()),
                Some(&1),
                "{name}: answers under {id}"
            );
        }
    }
    let owed_nulls = lines
        .iter()
        .filter(|(_, _, o)| matches!(o, Owed::NullError))
        .count();
    assert_eq!(nulls, owed_nulls, "errors under id null");
    // Slash-led prompts reach the model as text on the default (warm) backend: the model's
    // answer comes back, and `/init` wrote no GEMINI.md.
    for id in ["slash-space", "slash-dollar", "slash-bom"] {
        let answer = h
            .client
            .received
            .iter()
            .map(|r| &r.message)
            .find(|m| m["id"] == id && m.get("method").is_none())
            .expect("answered");
        assert_eq!(
            answer["result"]["content"][0]["text"], "as text",
            "{id}: {answer}"
        );
    }
    let work = h.log.parent().expect("the harness's folder").join("work");
    assert!(
        !work.join("GEMINI.md").exists(),
        "a prompt ran the CLI's /init"
    );
    assert!(
        !by_id.contains_key("\"zz\"") && !by_id.contains_key("\"never\""),
        "a response or a cancel was answered: {by_id:?}"
    );
    assert!(
        h.client.wait_exit(Instant::now()).is_none(),
        "the server exited"
    );
    #[cfg(target_os = "linux")]
    {
        let peak = peak_memory(h.client.pid()).expect("the server's VmHWM");
        eprintln!("peak memory after the barrage: {} MiB", peak >> 20);
        assert!(peak < 256 << 20, "peak memory {peak} bytes");
    }
}

/// On both backends; the test counts the prompts that reached the CLI in the fake's log: one-shot
/// runs, or `session/prompt`s sent to the agent.
#[rstest]
fn a_second_call_under_an_id_in_flight_is_refused_and_the_first_answered(
    #[values("oneshot", "acp")] backend: &str,
) {
    let mut h = Harness::start(&[("GEMINICLI_MCP_BACKEND", backend)]);
    let prompted = |h: &Harness| {
        h.log_records()
            .iter()
            .filter(|r| backend == "oneshot" || r["method"] == "session/prompt")
            .count()
    };
    let call = |text: &str| {
        json!({"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": {"name": "gemini_prompt",
            "arguments": {"prompt": format!("[[fake-gemini:success text={text} delay-ms=1000]]")}}})
    };
    h.client.send(&call("first")).unwrap();
    let end = deadline();
    while prompted(&h) < 1 {
        assert!(Instant::now() < end, "the first call never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    h.client.send(&call("second")).unwrap();
    let refused = h
        .client
        .wait_for(deadline(), |m| m["id"] == "dup" && m.get("error").is_some())
        .expect("the second call refused");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let answered = h
        .client
        .wait_for(deadline(), |m| {
            m["id"] == "dup" && m.get("result").is_some()
        })
        .expect("the first call answered");
    assert_eq!(answered["result"]["content"][0]["text"], "first");
    // After EOF the first call's answer is not lost either: close with one in flight.
    h.client.send(&call("third")).unwrap();
    h.client.close_stdin();
    let third = h
        .client
        .wait_for(deadline(), |m| {
            m["id"] == "dup" && m.get("result").is_some()
        })
        .expect("the call in flight at EOF answered");
    assert_eq!(third["result"]["content"][0]["text"], "third");
    assert_eq!(prompted(&h), 2, "the refused call never ran");
}

#[test]
fn nothing_sent_before_initialize_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = server_command(dir.path());
    cmd.current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = Client::new(cmd.spawn().expect("spawn"));
    for line in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":"r","result":{}}"#,
        br#"{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"x"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        b"not json",
        br#"{"jsonrpc":"2.0","id":"early","method":"tools/list"}"#,
    ] {
        let mut line = line.to_vec();
        line.push(b'\n');
        client.send_raw(line).unwrap();
    }
    let early = client
        .response(&json!("early"), deadline())
        .expect("a 2025-era request before initialize is answered");
    assert!(early.get("error").is_some(), "{early}");
    ping_through(&mut client, "pre-init-ping");
    let init = client
        .request(
            "initialize",
            Some(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "adversarial", "version": "0"}})),
        )
        .unwrap();
    let init = client.response(&init, deadline()).expect("initialize");
    assert!(init.get("result").is_some(), "{init}");
    client.notify("notifications/initialized", None).unwrap();
    let list = client.request("tools/list", None).unwrap();
    let list = client.response(&list, deadline()).expect("tools/list");
    assert!(list["result"]["tools"].is_array(), "{list}");
    assert!(client.violations.is_empty(), "{:?}", client.violations);
}

#[test]
fn a_flood_of_pings_is_answered_whole_in_bounded_memory() {
    let mut h = Harness::start(&[]);
    const PINGS: usize = 20_000;
    // Above the ids the harness itself used.
    const FIRST: usize = 1_000_000;
    let mut bytes = Vec::new();
    for id in FIRST..FIRST + PINGS {
        bytes.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
        );
    }
    h.client.send_raw(bytes).unwrap();
    // The server answers requests concurrently, so in any order: wait for every ping's answer,
    // not for the last one's (under load, others still come after it).
    let ids = FIRST as u64..(FIRST + PINGS) as u64;
    let mut seen = 0;
    let all = h.client.wait_for(deadline(), |m| {
        if m.get("method").is_none() && m["id"].as_u64().is_some_and(|id| ids.contains(&id)) {
            seen += 1;
        }
        seen == PINGS
    });
    assert!(all.is_some(), "{seen} of {PINGS} pings answered");
    // A second answer to any of them would come soon after.
    h.client
        .listen_until(Instant::now() + Duration::from_millis(200));
    let (by_id, _) = answers(&h.client);
    let answered = (FIRST..FIRST + PINGS)
        .filter(|n| by_id.get(&n.to_string()) == Some(&1))
        .count();
    assert_eq!(answered, PINGS, "pings answered exactly once");
    #[cfg(target_os = "linux")]
    {
        let peak = peak_memory(h.client.pid()).expect("VmHWM");
        eprintln!("peak memory after 20,000 pings: {} MiB", peak >> 20);
        assert!(peak < 128 << 20, "peak memory {peak} bytes");
    }
}

/// The pids a fake-gemini log names: each run's process, its launcher and every descendant.
fn logged_pids(log: &std::path::Path) -> Vec<i64> {
    let mut pids = Vec::new();
    for r in read_log(log) {
        for key in ["pid", "launcher_pid"] {
            if let Some(p) = r.get(key).and_then(Value::as_i64) {
                pids.push(p);
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The fake-gemini processes among the descendants of `root` (from `ps`): a run that has not
/// logged itself yet (it logs once its start-up is over) is found here.
#[cfg(unix)]
fn fake_gemini_descendants(root: u32) -> Vec<i64> {
    let out = std::process::Command::new("ps")
        .args(["-A", "-o", "pid=,ppid=,comm="])
        .output()
        .expect("ps");
    let mut parent = BTreeMap::new();
    let mut fake = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut words = line.split_whitespace();
        let (Some(pid), Some(ppid), Some(comm)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let (Ok(pid), Ok(ppid)) = (pid.parse::<i64>(), ppid.parse::<i64>()) else {
            continue;
        };
        parent.insert(pid, ppid);
        if comm.rsplit('/').next() == Some("fake-gemini") {
            fake.push(pid);
        }
    }
    fake.retain(|&pid| {
        let mut p = pid;
        while let Some(&up) = parent.get(&p) {
            if up == i64::from(root) {
                return true;
            }
            p = up;
        }
        false
    });
    fake
}

/// Whether fake-gemini's log record `r` shows a call at `phase`: `run` (any record: a one-shot
/// run or an agent started), `agent` (an agent's start), an ACP method the agent received
/// (`session/new`, `session/prompt`), or `spawned` (a descendant it left holding its pipes).
fn at_phase(r: &Value, phase: &str) -> bool {
    match phase {
        "run" => true,
        "agent" => r["argv"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("--acp"))),
        "spawned" => r["event"] == "spawned" && r["kind"] != "worker",
        method => r["method"] == method,
    }
}

/// A phase of a call at which the server is killed: the backend, what is set up, the prompt, how
/// many calls are made, the log record that shows the phase was reached (see [`at_phase`]; or
/// `process`: a fake-gemini process under the server, for a run still starting), and
/// whether the first call is cancelled first (its tree is then in the kill grace). One-shot: a CLI
/// process per call. Warm (the default): an agent starting (it reads nothing for a minute),
/// opening the session, frozen in its prompt, streaming, frozen after its first chunk, ignoring
/// SIGTERM in the kill grace, leaving a descendant (in its group, or in a session of its own), a
/// call queued behind `GEMINICLI_MCP_MAX_PROMPTS`, and the `acp` tool set's own agent.
#[cfg(unix)]
#[rstest]
#[case::queued_behind_another("oneshot", &[("GEMINICLI_MCP_MAX_CONCURRENCY", "1")], "hang", 2, "run", false)]
#[case::starting("oneshot", &[], "slow-start delay-ms=60000", 1, "process", false)]
#[case::streaming("oneshot", &[], "trickle count=100", 1, "run", false)]
#[case::hanging_after_output("oneshot", &[], "hang-after-output", 1, "run", false)]
#[case::in_the_kill_grace("oneshot", &[("GEMINICLI_MCP_KILL_GRACE_MS", "10000")], "ignore-sigterm", 1, "run", true)]
#[case::grandchild("oneshot", &[], "grandchild-holds-stdout", 1, "spawned", false)]
#[case::escaped_session("oneshot", &[], "setsid-grandchild", 1, "spawned", false)]
#[case::warm_agent_starting("acp", &[("FAKE_GEMINI_ACP_START_DELAY_MS", "60000")], "success", 1, "agent", false)]
#[case::warm_session_opening("acp", &[("FAKE_GEMINI_ACP_SESSION_NEW_MS", "60000")], "success", 1, "session/new", false)]
#[case::warm_agent_frozen("acp", &[], "hang", 1, "session/prompt", false)]
#[case::warm_streaming("acp", &[], "trickle count=1000", 1, "session/prompt", false)]
#[case::warm_frozen_after_output("acp", &[], "hang-after-output", 1, "session/prompt", false)]
#[case::warm_in_the_kill_grace("acp", &[("GEMINICLI_MCP_KILL_GRACE_MS", "10000")], "ignore-sigterm", 1, "session/prompt", true)]
#[case::warm_grandchild("acp", &[], "grandchild-holds-stdout", 1, "spawned", false)]
#[case::warm_escaped_session("acp", &[], "setsid-grandchild", 1, "spawned", false)]
#[case::warm_queued_behind_another("acp", &[("GEMINICLI_MCP_MAX_PROMPTS", "1")], "hang", 2, "session/prompt", false)]
#[case::acp_agent("acp", &[("GEMINICLI_MCP_TOOLSETS", "acp")], "hang", 1, "session/prompt", false)]
fn a_server_killed_at_any_phase_of_a_call_leaves_no_process(
    #[case] backend: &str,
    #[case] env: &[(&str, &str)],
    #[case] scenario: &str,
    #[case] calls: usize,
    #[case] phase: &str,
    #[case] cancel_first: bool,
) {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_path = tmp.path().to_str().unwrap().to_owned();
    let mut env = env.to_vec();
    env.push(("TMPDIR", &tmp_path));
    env.push(("GEMINICLI_MCP_BACKEND", backend));
    let env = &env[..];
    let mut h = Harness::start(env);
    let acp = env
        .iter()
        .any(|(k, v)| *k == "GEMINICLI_MCP_TOOLSETS" && *v == "acp");
    let tool = if acp { "gemini" } else { "gemini_prompt" };
    let mut ids = Vec::new();
    for n in 0..calls.max(1) {
        let prompt = format!("call {n} [[fake-gemini:{scenario}]]");
        ids.push(
            h.client
                .request(
                    "tools/call",
                    Some(json!({"name": tool, "arguments": {"prompt": prompt}})),
                )
                .unwrap(),
        );
    }
    // A queued call has not reached its phase: one call is what the fake can log. Two warm calls
    // share one agent.
    let queued = env
        .iter()
        .any(|(k, _)| *k == "GEMINICLI_MCP_MAX_CONCURRENCY" || *k == "GEMINICLI_MCP_MAX_PROMPTS");
    let reached = if queued || phase == "agent" { 1 } else { calls };
    let end = deadline();
    let mut starting = Vec::new();
    while if phase == "process" {
        starting = fake_gemini_descendants(h.client.pid());
        starting.is_empty()
    } else {
        h.log_records()
            .iter()
            .filter(|r| at_phase(r, phase))
            .count()
            < reached
    } {
        assert!(
            Instant::now() < end,
            "{phase} never reached: {:?}",
            h.log_records()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    if cancel_first {
        // The tree is signalled and ignores it; the kill grace (10 s) holds it alive.
        std::thread::sleep(Duration::from_millis(300));
        h.client
            .notify(
                "notifications/cancelled",
                Some(json!({"requestId": ids[0]})),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut pids = logged_pids(&h.log);
    pids.extend(starting);
    assert!(!pids.is_empty(), "the run logged no process");
    h.client.kill_target_only();
    let end = Instant::now() + Duration::from_secs(2);
    let mut left: Vec<i64> = pids.clone();
    while !left.is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        left.retain(|&p| crate::server::alive(p));
    }
    assert!(
        left.is_empty(),
        "alive 2 s after the server's SIGKILL: {left:?} (of {pids:?})"
    );
    // The runs' private temporary directories go too, once the watchdog's sweep is over.
    let end = Instant::now() + Duration::from_secs(10);
    let leftovers = loop {
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("geminicli-mcp-"))
            .collect();
        if names.is_empty() || Instant::now() >= end {
            break names;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        leftovers.is_empty(),
        "left in TMPDIR after the server's SIGKILL: {leftovers:?}"
    );
}

/// A raw HTTP exchange: sends `bytes`, reads until the server closes or 2 s pass (a half-sent
/// request is closed by the header timeout); returns what came back.
fn raw_http(addr: &str, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let _ = stream.write_all(bytes);
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    out
}

/// Starts the server on HTTP with `token` (and a 1 s header timeout); returns it, its address and
/// the file holding its stderr.
fn start_http(
    dir: &std::path::Path,
    token: &str,
) -> (std::process::Child, String, std::path::PathBuf) {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let stderr = dir.join("stderr");
    let mut cmd = server_command(dir);
    cmd.current_dir(&work)
        .args(["--http", "127.0.0.1:0", "--http-header-timeout-ms", "1000"])
        .env("GEMINICLI_MCP_HTTP_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut child = cmd.spawn().expect("spawn the HTTP server");
    let end = deadline();
    let addr = loop {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        // The whole line: the address may be half written.
        if let Some(rest) = log
            .split("Streamable HTTP at http://")
            .nth(1)
            .filter(|rest| rest.contains('\n'))
        {
            break rest.split('/').next().unwrap_or_default().to_owned();
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no address on stderr: {log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, addr, stderr)
}

#[test]
fn garbage_over_http_is_refused_and_the_server_keeps_serving() {
    const TOKEN: &str = "adversarial-token-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, port_file) = start_http(dir.path(), TOKEN);
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let post = |headers: &str, body: &[u8]| {
        let mut r = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    let huge_header = format!("X-Big: {}\r\n", "h".repeat(1 << 20));
    let probes: Vec<(&str, Vec<u8>)> = vec![
        ("not HTTP", b"GARBAGE GARBAGE\r\n\r\n".to_vec()),
        ("an HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec()),
        ("a request line of 100 KiB", format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(100 << 10)).into_bytes()),
        ("a header of 1 MiB", post(&huge_header, b"{}")),
        ("no token", post("", br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)),
        ("a body that is not JSON", post(&auth, b"{{{{")),
        ("a body nested 10,000 levels", post(&auth, "[".repeat(10_000).as_bytes())),
        ("a body shorter than its length", {
            let mut r = post(&auth, b"{}");
            r.truncate(r.len() - 1);
            r
        }),
        ("a bad chunk size", format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n").into_bytes()),
        ("a lone surrogate", post(&auth, br#"{"jsonrpc":"2.0","id":1,"method":"ping\ud800"}"#)),
        ("two Host headers", format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\n{auth}Content-Length: 2\r\n\r\n{{}}").into_bytes()),
    ];
    for (name, bytes) in &probes {
        let reply = raw_http(&addr, bytes);
        let head = String::from_utf8_lossy(&reply[..reply.len().min(200)]).into_owned();
        assert!(
            reply.is_empty() || head.starts_with("HTTP/1.1 "),
            "{name}: not an HTTP answer: {head:?}"
        );
        assert!(
            !head.starts_with("HTTP/1.1 2")
                || *name == "a lone surrogate"
                || *name == "a body nested 10,000 levels"
                || *name == "a body that is not JSON",
            "{name}: accepted: {head:?}"
        );
    }
    for _ in 0..100 {
        drop(TcpStream::connect(&addr).expect("connect"));
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "adversarial", "version": "0"}}});
    let reply = raw_http(&addr, &post(&auth, init.to_string().as_bytes()));
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "initialize after the probes: {text}"
    );
    assert!(text.contains("\"serverInfo\""), "{text}");
    assert!(child.try_wait().unwrap().is_none(), "the server exited");
    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(&port_file).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Requests of methods the server knows whose params are of the wrong type (`logging/setLevel`
/// only on the revisions before 2026-07-28, which removed it).
fn undecodable_params() -> Vec<(&'static str, Value)> {
    vec![
        ("tasks/get", json!({"taskId": 5})),
        ("tasks/get", json!({"taskId": null})),
        ("tasks/get", json!({"taskId": [1]})),
        ("tasks/get", json!({})),
        ("tasks/cancel", json!({"taskId": 5})),
        (
            "tasks/update",
            json!({"taskId": "t", "inputResponses": "yes"}),
        ),
        ("tasks/update", json!({"taskId": "t"})),
        ("resources/read", json!({"uri": 5})),
        ("logging/setLevel", json!({"level": 5})),
    ]
}

#[test]
fn params_of_the_wrong_type_are_invalid_params_over_stdio_and_http_never_an_unknown_method() {
    let mut h = Harness::start(&[]);
    for (method, params) in undecodable_params() {
        let answer = h.rpc(method, Some(params.clone()));
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
    }
    ping_through(&mut h.client, "after-bad-params");

    const TOKEN: &str = "adversarial-token-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, _) = start_http(dir.path(), TOKEN);
    let of_2026 = undecodable_params()
        .into_iter()
        .filter(|(method, _)| *method != "logging/setLevel");
    for (n, (method, params)) in of_2026.enumerate() {
        // Sessionless 2026-07-28 requests: the answer a client reads as "session gone" is a 404.
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "adversarial", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let body =
            json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: t\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let reply = String::from_utf8_lossy(&raw_http(&addr, request.as_bytes())).into_owned();
        assert!(reply.starts_with("HTTP/1.1 200"), "{method}: {reply}");
        assert!(reply.contains("-32602"), "{method}: {reply}");
    }
    assert!(child.try_wait().unwrap().is_none(), "the server exited");
    let _ = child.kill();
    let _ = child.wait();
}

/// A chunked body of 64 MiB that never ends (no last chunk) is refused with 413 once past the
/// body limit, and what it cost the server is bounded by the limit, not by what was sent.
#[cfg(target_os = "linux")]
#[test]
fn a_chunked_body_that_never_ends_gets_413_in_bounded_memory() {
    const TOKEN: &str = "adversarial-token-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, stderr) = start_http(dir.path(), TOKEN);
    let idle = peak_memory(child.id()).expect("VmHWM");
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    // Written while the answer is read: the server answers before the 64 MiB are through and
    // then stops reading (write errors are expected from then on).
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        writer.write_all(head.as_bytes())?;
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..64 {
            writer.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
            writer.write_all(&chunk)?;
            writer.write_all(b"\r\n")?;
        }
        // No last chunk: the body never ends.
        std::thread::sleep(Duration::from_secs(2));
        Ok(())
    });
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
        }
    }
    let _ = sender.join();
    let head = String::from_utf8_lossy(&reply).into_owned();
    assert!(head.starts_with("HTTP/1.1 413"), "not refused: {head:?}");
    let peak = peak_memory(child.id()).expect("VmHWM");
    eprintln!(
        "peak memory: idle {} MiB, after the endless body {} MiB",
        idle >> 20,
        peak >> 20
    );
    assert!(
        peak - idle < 32 << 20,
        "the endless body cost {} MiB",
        (peak - idle) >> 20
    );
    assert!(child.try_wait().unwrap().is_none(), "the server exited");
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
}

/// The size of each hostile answer: under the default 32 MiB output cap, which bounds an answer.
const HOSTILE_ANSWER: usize = 30 << 20;

/// What a hostile structured answer may cost the whole server over its idle memory: the bound of
/// 2 × the answer + 16 MiB less the 12 MiB a release server idles at (BENCHMARKS.md). The capture,
/// the events, the answer and the search for JSON in it together stay within it.
const HOSTILE_GROWTH_BOUND: u64 = 2 * HOSTILE_ANSWER as u64 + (4 << 20);

/// The bound on the warm backend: 3 × the answer + 8 MiB. The answer comes as one 30 MiB ACP
/// message (fake-gemini sends a scenario's text as one chunk; a real agent streams the model's
/// deltas, a few KiB each), and while that message is parsed its line buffer (grown by doubling to
/// 32 MiB), the parser's scratch copy of an escaped string (another 32 MiB: an answer with quotes)
/// and the text itself are held at once; the rest costs what it costs on the one-shot backend.
const WARM_HOSTILE_GROWTH_BOUND: u64 = 3 * HOSTILE_ANSWER as u64 + (8 << 20);

/// A scenario directory whose `NAME.toml` answers with `text`.
fn scenario_dir(answers: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in answers {
        // A TOML literal string: none of these answers holds a quote of its own kind or a newline.
        assert!(!text.contains('\'') && !text.contains('\n'));
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            format!("[[model.turns]]\ntext = '{text}'\n"),
        )
        .unwrap();
    }
    dir
}

/// The hostile answers: opening braces, opening brackets, and a string that never ends.
fn hostile_answers() -> Vec<(&'static str, String)> {
    let mut unterminated = String::from(r#"{"a": ""#);
    unterminated.push_str(&"x".repeat(HOSTILE_ANSWER - unterminated.len()));
    vec![
        ("braces", "{".repeat(HOSTILE_ANSWER)),
        ("brackets", "[".repeat(HOSTILE_ANSWER)),
        ("unterminated-string", unterminated),
    ]
}

/// Starts a server on `backend` whose fake-gemini finds the hostile scenarios; returns it and its
/// idle peak.
#[cfg(target_os = "linux")]
fn hostile_server(scenarios: &std::path::Path, backend: &str) -> (Harness, u64) {
    let dir = scenarios.to_str().unwrap();
    let h = Harness::start(&[
        ("FAKE_GEMINI_SCENARIO_DIR", dir),
        ("GEMINICLI_MCP_BACKEND", backend),
    ]);
    let idle = peak_memory(h.client.pid()).expect("VmHWM");
    (h, idle)
}

/// Calls `gemini_prompt_structured` with the scenario `name` under `id`, unanswered yet.
fn hostile_call(h: &mut Harness, name: &str) -> Value {
    h.client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt_structured", "arguments": {
                "prompt": format!("[[fake-gemini:{name}]]"), "schema": {"type": "object"}}})),
        )
        .unwrap()
}

/// The output cap of the warm floods (the default, 32 MiB), and what a flood may cost the whole
/// server over its idle memory: the one-shot backend's bound of 2 × the cap + 16 MiB less the
/// 12 MiB a release server idles at (BENCHMARKS.md).
const FLOOD_CAP: u64 = 32 << 20;
const FLOOD_GROWTH_BOUND: u64 = 2 * FLOOD_CAP + (4 << 20);

/// A warm server (the default backend, the default kill grace) whose agent floods as `marker`
/// says, ignoring the cancel: its answer, and how much the server grew over its idle peak.
#[cfg(target_os = "linux")]
fn warm_flood(marker: &str) -> (Value, u64) {
    let mut h = Harness::start(&[
        ("GEMINICLI_MCP_BACKEND", "acp"),
        ("GEMINICLI_MCP_KILL_GRACE_MS", "2000"),
    ]);
    let idle = peak_memory(h.client.pid()).expect("VmHWM");
    let id = h
        .client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt", "arguments": {"prompt": marker}})),
        )
        .unwrap();
    let answer = h
        .client
        .response(&id, Instant::now() + Duration::from_secs(300))
        .unwrap_or_else(|| panic!("{marker}: no answer"));
    let growth = peak_memory(h.client.pid()).expect("VmHWM") - idle;
    (answer, growth)
}

/// Lines of 64 MiB and more, a gibibyte without a newline, 30 MiB hostile answers, and warm
/// agents flooding up to a gibibyte: slow in a debug build.
mod slow {
    use super::*;

    #[cfg(target_os = "linux")]
    #[rstest]
    #[case::a_gibibyte_of_message_chunks("[[fake-gemini:flood-stdout]]")]
    #[case::thought_chunks("[[fake-gemini:flood-stdout bytes=314572800 update=thought]]")]
    #[case::tool_calls("[[fake-gemini:flood-stdout bytes=314572800 update=tool]]")]
    #[case::one_line_of_64_mib("[[fake-gemini:long-line bytes=67108864]]")]
    #[case::one_line_of_200_mib("[[fake-gemini:long-line bytes=209715200]]")]
    #[ignore = "slow: an agent floods the warm server with up to a gibibyte"]
    fn a_warm_agents_flood_ends_as_output_limit_within_the_one_shot_bound(#[case] marker: &str) {
        let (answer, growth) = warm_flood(marker);
        eprintln!("{marker}: the server grew by {} MiB", growth >> 20);
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(
            text.starts_with("[error exit=") && text.contains("] output_limit: "),
            "{marker}: {answer:.400}"
        );
        assert!(
            growth <= FLOOD_GROWTH_BOUND,
            "{marker}: the server grew by {} MiB, more than {} MiB",
            growth >> 20,
            FLOOD_GROWTH_BOUND >> 20
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[ignore = "slow: 30 MiB answers through fake-gemini and the server, about 90 s in a debug build"]
    fn a_hostile_30_mib_structured_answer_costs_twice_its_size_one_shot_and_three_times_warm() {
        let answers = hostile_answers();
        let scenarios = scenario_dir(&answers);
        for (backend, bound) in [
            ("oneshot", HOSTILE_GROWTH_BOUND),
            ("acp", WARM_HOSTILE_GROWTH_BOUND),
        ] {
            for (name, _) in &answers {
                let (mut h, idle) = hostile_server(scenarios.path(), backend);
                let id = hostile_call(&mut h, name);
                let answer = h
                    .client
                    .response(&id, Instant::now() + Duration::from_secs(120))
                    .unwrap_or_else(|| panic!("{backend} {name}: no answer"));
                let text = answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("");
                assert!(
                    text.contains("schema_mismatch"),
                    "{backend} {name}: {answer:.300}"
                );
                let growth = peak_memory(h.client.pid()).expect("VmHWM") - idle;
                eprintln!("{backend} {name}: the server grew by {} KiB", growth >> 10);
                assert!(
                    growth <= bound,
                    "{backend} {name}: the server grew by {} KiB, more than {} KiB",
                    growth >> 10,
                    bound >> 10
                );
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[ignore = "slow: 30 MiB answers through fake-gemini and the server, about 90 s in a debug build"]
    fn four_hostile_answers_at_once_cost_at_most_four_times_the_bound() {
        let answers = hostile_answers();
        let scenarios = scenario_dir(&answers);
        for (backend, bound) in [
            ("oneshot", HOSTILE_GROWTH_BOUND),
            ("acp", WARM_HOSTILE_GROWTH_BOUND),
        ] {
            let (mut h, idle) = hostile_server(scenarios.path(), backend);
            let ids: Vec<Value> = ["braces", "brackets", "unterminated-string", "braces"]
                .iter()
                .map(|name| hostile_call(&mut h, name))
                .collect();
            for id in &ids {
                let answer = h
                    .client
                    .response(id, Instant::now() + Duration::from_secs(180))
                    .unwrap_or_else(|| panic!("{backend}: no answer under {id}"));
                assert_eq!(answer["result"]["isError"], true, "{answer:.300}");
            }
            let growth = peak_memory(h.client.pid()).expect("VmHWM") - idle;
            eprintln!(
                "{backend}, four at once: the server grew by {} MiB",
                growth >> 20
            );
            assert!(
                growth <= 4 * bound,
                "{backend}, four at once: the server grew by {} MiB",
                growth >> 20
            );
        }
    }

    #[test]
    #[ignore = "slow: writes about 1.3 GiB through the server's stdin"]
    fn oversized_lines_are_answered_and_memory_stays_bounded() {
        let mut h = Harness::start(&[]);
        let long = |id: &str, bytes: usize| {
            let mut line = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":""#.to_vec();
            line.resize(line.len() + bytes, b'a');
            line.extend_from_slice(format!(r#""}}}},"id":"{id}"}}"#).as_bytes());
            line.push(b'\n');
            line
        };
        for (n, size) in [(0, 65 << 20), (1, 100 << 20), (2, 200 << 20)] {
            let id = format!("long-{n}");
            h.client.send_raw(long(&id, size)).unwrap();
            let answer = h
                .client
                .response(&json!(id), Instant::now() + Duration::from_secs(300))
                .unwrap_or_else(|| panic!("no answer for {id}"));
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
        }
        // A gibibyte with no newline at all, then the newline and a ping.
        let chunk = vec![b'x'; 16 << 20];
        for _ in 0..64 {
            h.client.send_raw(chunk.clone()).unwrap();
        }
        h.client.send_raw(b"\n".to_vec()).unwrap();
        h.client
            .send(&json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
            .unwrap();
        assert!(
            h.client
                .response(&json!("after"), Instant::now() + Duration::from_secs(600))
                .is_some(),
            "the server stopped answering"
        );
        assert!(h.client.violations.is_empty(), "{:?}", h.client.violations);
        #[cfg(target_os = "linux")]
        {
            let peak = peak_memory(h.client.pid()).expect("VmHWM");
            eprintln!("peak memory after the oversized lines: {} MiB", peak >> 20);
            assert!(peak < 512 << 20, "peak memory {peak} bytes");
        }
    }
}
