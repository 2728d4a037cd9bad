//! `fake-gemini --acp` against the real agent's captures (`tests/captures/acp_*.log`) and every
//! behaviour of the ACP mode, through a small newline-delimited JSON-RPC driver.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rstest::rstest;
use serde_json::{json, Value};

use crate::support::{log_records, mask_common, Sandbox};

/// How long the driver waits for a message before declaring the agent stuck (a guard against a
/// test hanging forever, not a timing assertion).
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `fake-gemini --acp` with its stdout split into JSON messages.
struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Driver {
    /// Starts the agent in the sandbox with `args` after `--acp`.
    fn start(sb: &Sandbox, args: &[&str]) -> Driver {
        let mut all = vec!["--acp"];
        all.extend_from_slice(args);
        // One process, no launcher: killing it at the end of a test leaves nothing behind (a
        // killed launcher would orphan its worker, as with the real CLI).
        let mut child = sb
            .cmd(&all)
            .env("GEMINI_CLI_NO_RELAUNCH", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fake-gemini --acp");
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Lossy: the `non-utf8` fault writes lines that are not UTF-8.
            for line in BufReader::new(out).split(b'\n') {
                let Ok(l) = line else { break };
                if tx.send(String::from_utf8_lossy(&l).into_owned()).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        });
        Driver {
            stdin: child.stdin.take(),
            child,
            rx,
            stderr: Some(stderr),
        }
    }

    /// Writes one raw line.
    fn send_raw(&mut self, line: &str) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(format!("{line}\n").as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// Writes one message.
    fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    /// The next stdout line, raw.
    fn recv_raw(&self) -> String {
        self.rx
            .recv_timeout(PATIENCE)
            .expect("the agent sent no message")
    }

    /// The next message.
    fn recv(&self) -> Value {
        let l = self.recv_raw();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))
    }

    /// Sends a request and collects every message up to and including its response.
    fn call(&mut self, id: u64, method: &str, params: Value) -> (Vec<Value>, Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut before = Vec::new();
        loop {
            let m = self.recv();
            if m["id"] == json!(id) && m.get("method").is_none() {
                return (before, m);
            }
            before.push(m);
        }
    }

    /// `initialize` then `session/new` in the sandbox cwd; returns the session id.
    fn open_session(&mut self, sb: &Sandbox) -> String {
        self.call(0, "initialize", json!({"protocolVersion": 1}));
        let (_, r) = self.call(
            1,
            "session/new",
            json!({"cwd": sb.cwd.to_str().unwrap(), "mcpServers": []}),
        );
        let sid = r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {r}"))
            .to_string();
        let cmds = self.recv();
        assert_eq!(
            cmds["params"]["update"]["sessionUpdate"],
            "available_commands_update"
        );
        sid
    }

    /// Closes stdin and waits: (exit code, stderr).
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let st = self.child.wait().expect("wait");
        (st.code(), self.stderr.take().unwrap().join().unwrap())
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn update_kinds(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| {
            m["params"]["update"]["sessionUpdate"]
                .as_str()
                .or(m["method"].as_str())
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

/// The stderr lines the fake reproduces exactly (notices and the parse failure; the SDK's
/// multi-line `util.inspect` dumps and stack frames are not compared).
fn notices(stderr: &str) -> Vec<String> {
    const PREFIXES: &[&str] = &[
        "Skipping project agents",
        "Ripgrep is not available",
        "Project hooks disabled",
        "YOLO mode is enabled",
        "Approval mode overridden",
        "Failed to parse JSON message",
    ];
    stderr
        .lines()
        .map(|l| l.strip_prefix("ERR ").unwrap_or(l))
        .filter(|l| PREFIXES.iter().any(|p| l.starts_with(p)))
        .map(String::from)
        .collect()
}

/// What the capture's mock API did for each prompt, as a marker for the fake.
fn scripted(prompt: &str) -> String {
    match prompt {
        "TOOLCALL please" => "[[fake-gemini:tool-call]]".into(),
        "THINK please" => "[[fake-gemini:thinking]]".into(),
        "SHELLCALL please" => "[[fake-gemini:tool-error]]".into(),
        // Five ticks, then the stream stalls until the client cancels.
        "SLOW please" => "[[fake-gemini:trickle count=5 interval-ms=1 after=5]]".into(),
        "ERR400 please" => "[[fake-gemini:api-400]]".into(),
        "QUOTA please" => "[[fake-gemini:quota-daily]]".into(),
        p => p.into(),
    }
}

#[rstest]
#[case::mock("acp_mock", &[], &[])]
#[case::tool("acp_tool", &["--yolo"], &[])]
#[case::think("acp_think", &[], &[])]
#[case::shell("acp_shell", &[], &[])]
#[case::cancel("acp_cancel", &[], &[])]
#[case::api_400("acp_400", &[], &[])]
#[case::quota("acp_quota", &[], &[])]
#[case::noauth("acp_noauth", &[], &[])]
#[case::nokey("acp_nokey", &[], &[("FAKE_GEMINI_AUTH", "env"), ("GEMINI_API_KEY", "")])]
#[case::perm_allow("acp_perm_allow", &[], &[])]
#[case::perm_reject("acp_perm_reject", &[], &[])]
#[case::perm_error("acp_perm_error", &[], &[])]
#[case::plan_write("acp_plan_write", &[], &[])]
#[case::perm_shell("acp_perm_shell", &[], &[])]
#[case::perm_cancel("acp_perm_cancel", &[], &[])]
#[case::perm_always("acp_perm_always", &[], &[])]
fn replays_the_acp_capture(
    #[case] name: &str,
    #[case] args: &[&str],
    #[case] env: &[(&str, &str)],
) {
    let mut sb = Sandbox::new("acp");
    // The acp_perm_* / acp_plan_write runs scripted the API with these scenarios.
    write_file_scenario(&mut sb);
    for (k, v) in env {
        sb.set(k, (!v.is_empty()).then_some(*v));
    }
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/captures")
            .join(format!("{name}.log")),
    )
    .unwrap();
    // (client message, agent messages that followed it)
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut real_stderr = String::new();
    for line in text.lines() {
        let rest = line.split_once(' ').map(|x| x.1).unwrap_or_default();
        if let Some(m) = rest.strip_prefix(">>> ") {
            steps.push((m.to_string(), Vec::new()));
        } else if let Some(m) = rest.strip_prefix("<<< ") {
            steps
                .last_mut()
                .expect("a request first")
                .1
                .push(m.to_string());
        } else if let Some(m) = rest.strip_prefix("ERR ") {
            real_stderr.push_str(m);
            real_stderr.push('\n');
        }
    }
    let mut d = Driver::start(&sb, args);
    let mut real_sid: Option<String> = None;
    let mut sid = String::new();
    for (msg, replies) in &steps {
        let mut m: Value = serde_json::from_str(msg).unwrap();
        m["params"]["cwd"].as_str().is_some().then(|| {
            m["params"]["cwd"] = json!(sb.cwd.to_str().unwrap());
        });
        if let (Some(r), Some(s)) = (&real_sid, m["params"]["sessionId"].as_str()) {
            if s == r {
                m["params"]["sessionId"] = json!(sid);
            }
        }
        if let Some(t) = m["params"]["prompt"][0]["text"].as_str() {
            m["params"]["prompt"][0]["text"] = json!(scripted(t));
        }
        d.send(&m);
        for want in replies {
            let got = d.recv_raw();
            if let Some(s) =
                serde_json::from_str::<Value>(want).unwrap()["result"]["sessionId"].as_str()
            {
                real_sid = Some(s.to_string());
                sid = serde_json::from_str::<Value>(&got).unwrap()["result"]["sessionId"]
                    .as_str()
                    .expect("a session id")
                    .to_string();
            }
            let got = sb.mask(got.as_bytes());
            assert_eq!(got, mask_common(want), "{name}: reply to {msg}");
        }
    }
    // Every capture ends with a line that is not JSON, then stdin closes.
    if real_stderr.contains("Failed to parse JSON message") {
        d.send_raw("this is not json");
    }
    let (code, stderr) = d.finish();
    assert_eq!(code, Some(0), "{name}: exit 0 on stdin EOF\n{stderr}");
    assert_eq!(
        notices(&stderr),
        notices(&real_stderr),
        "{name}: stderr notices"
    );
    // The whole stderr is the same text, stack frames and ids masked.
    {
        let fallback = regex::Regex::new(r"classifier-router-fallback-\d+-[0-9a-f]+").unwrap();
        let norm = |s: &str| {
            fallback
                .replace_all(s, "classifier-router-fallback-<ID>")
                .into_owned()
        };
        assert_eq!(
            norm(&sb.mask(stderr.as_bytes())),
            norm(&mask_common(&real_stderr)),
            "{name}: stderr"
        );
    }
}

#[test]
fn initialize_reports_the_emulated_version() {
    let mut sb = Sandbox::new("acp");
    sb.set("FAKE_GEMINI_VERSION", Some("0.62.1"));
    let mut d = Driver::start(&sb, &[]);
    let (_, r) = d.call(0, "initialize", json!({"protocolVersion": 1}));
    assert_eq!(r["result"]["agentInfo"]["version"], "0.62.1");
    assert_eq!(r["result"]["protocolVersion"], 1);
}

/// Points `sb` at the permission scenarios (`writer`, `rm`: see
/// [`crate::support::permission_scenarios`]).
fn write_file_scenario(sb: &mut Sandbox) {
    let dir = crate::support::permission_scenarios(sb.dir.path());
    sb.set("FAKE_GEMINI_SCENARIO_DIR", Some(dir.to_str().unwrap()));
}

fn prompt(d: &mut Driver, id: u64, sid: &str, text: &str) -> (Vec<Value>, Value) {
    d.call(
        id,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
    )
}

#[rstest]
#[case::allow("proceed_once", true)]
#[case::allow_always("proceed_always", false)]
#[case::reject("cancel", false)]
fn permission_round_trip_decides_whether_the_tool_runs(#[case] option: &str, #[case] runs: bool) {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let log = sb.dir.path().join("log.jsonl");
    sb.set("FAKE_GEMINI_LOG", Some(log.to_str().unwrap()));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:writer]]"}]}}));
    assert_eq!(d.recv()["params"]["update"]["content"]["text"], "Writing.");
    let ask = d.recv();
    assert_eq!(ask["method"], "session/request_permission");
    assert_eq!(ask["id"], 0, "agent request ids start at 0");
    let options: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["proceed_always", "proceed_once", "cancel"]);
    // As observed on 0.61.0 against the scripted API (write_file in default mode).
    let path = sb.cwd.join("notes.txt").display().to_string();
    let diff = json!({"type": "diff", "path": path, "oldText": "", "newText": "hi", "_meta": {"kind": "add"}});
    let call = &ask["params"]["toolCall"];
    assert_eq!(call["status"], "pending");
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "Writing to notes.txt");
    assert_eq!(call["content"], json!([diff]));
    assert_eq!(call["locations"], json!([{"path": path}]));
    d.send(&json!({"jsonrpc": "2.0", "id": 0,
        "result": {"outcome": {"outcome": "selected", "optionId": option}}}));
    let mut msgs = Vec::new();
    let result = loop {
        let m = d.recv();
        if m["id"] == 5 {
            break m;
        }
        msgs.push(m);
    };
    assert_eq!(result["result"]["stopReason"], "end_turn");
    let kinds = update_kinds(&msgs);
    if option == "proceed_always" {
        // Untrusted folder: "Allow for this session" would switch to autoEdit, which is refused.
        assert_eq!(kinds, ["tool_call_update", "agent_message_chunk"]);
        assert_eq!(msgs[0]["params"]["update"]["status"], "failed");
        assert_eq!(
            msgs[0]["params"]["update"]["content"][0]["content"]["text"],
            "Cannot enable privileged approval modes in an untrusted folder."
        );
    } else if runs {
        assert_eq!(kinds, ["tool_call_update", "agent_message_chunk"]);
        assert_eq!(msgs[0]["params"]["update"]["status"], "completed");
        assert_eq!(msgs[0]["params"]["update"]["content"], json!([diff]));
    } else {
        // A rejected tool sends the client nothing more; the model hears of it and answers.
        assert_eq!(kinds, ["agent_message_chunk"]);
    }
    drop(d);
    let recs = log_records(&log);
    assert!(recs
        .iter()
        .any(|r| r["event"] == "acp-response" && r["id"] == 0));
}

/// write_file works on the disk: the file is written, and a second write's diff starts from it
/// (observed on 0.61.0 by the ACP differential suite: `oldText` "hi", kind `modify`).
#[test]
fn write_file_writes_and_a_second_write_diffs_against_the_file() {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let ask = |d: &mut Driver, id: u64| {
        d.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:writer]]"}]}}));
        d.recv();
        let ask = d.recv();
        d.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}}));
        while d.recv()["id"] != id {}
        ask["params"]["toolCall"]["content"][0].clone()
    };
    let first = ask(&mut d, 5);
    assert_eq!(
        (&first["oldText"], &first["_meta"]["kind"]),
        (&json!(""), &json!("add"))
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes.txt")).unwrap(),
        "hi"
    );
    let second = ask(&mut d, 6);
    assert_eq!(
        (
            &second["oldText"],
            &second["newText"],
            &second["_meta"]["kind"]
        ),
        (&json!("hi"), &json!("hi"), &json!("modify"))
    );
}

#[test]
fn a_cancelled_permission_and_an_error_answer_fail_the_tool() {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    for (n, answer) in [
        json!({"result": {"outcome": {"outcome": "cancelled"}}}),
        json!({"error": {"code": -32603, "message": "nope"}}),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 10 + n as u64;
        d.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:writer]]"}]}}));
        d.recv();
        let ask = d.recv();
        let mut reply = answer.clone();
        reply["jsonrpc"] = json!("2.0");
        reply["id"] = ask["id"].clone();
        d.send(&reply);
        let mut msgs = Vec::new();
        loop {
            let m = d.recv();
            if m["id"] == id {
                break;
            }
            msgs.push(m);
        }
        if n == 0 {
            assert_eq!(update_kinds(&msgs), ["agent_message_chunk"]);
        } else {
            let u = &msgs[0]["params"]["update"];
            assert_eq!(u["sessionUpdate"], "tool_call_update");
            assert_eq!(u["status"], "failed");
            assert_eq!(u["content"][0]["content"]["text"], "[object Object]");
        }
    }
}

#[rstest]
#[case::yolo("yolo", true)]
#[case::auto_edit("autoEdit", true)]
#[case::plan("plan", false)]
fn modes_decide_without_asking(#[case] mode: &str, #[case] runs: bool) {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let mut d = Driver::start(&sb, &["--skip-trust"]);
    let sid = d.open_session(&sb);
    let (before, r) = d.call(
        2,
        "session/set_mode",
        json!({"sessionId": sid, "modeId": mode}),
    );
    assert_eq!(r["result"], json!({}));
    assert_eq!(
        before[0]["params"]["update"]["content"]["text"],
        format!("[MODE_UPDATE] {mode}")
    );
    let (msgs, r) = prompt(&mut d, 3, &sid, "[[fake-gemini:writer]]");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let kinds = update_kinds(&msgs);
    if runs {
        assert_eq!(
            kinds,
            [
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
    } else {
        // Denied by the policy: one failed update, no tool_call (observed).
        assert_eq!(
            kinds,
            [
                "agent_message_chunk",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
        assert_eq!(
            msgs[1]["params"]["update"]["content"][0]["content"]["text"],
            "Tool execution for \"WriteFile\" denied by policy."
        );
    }
}

#[test]
fn shell_commands_outside_the_safe_list_ask_in_default_mode() {
    let mut sb = Sandbox::new("acp");
    let dir = sb.dir.path().join("sc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("rm.toml"),
        "[[model.turns]]\n[[model.turns.tool-calls]]\nname = \"run_shell_command\"\nargs = { command = \"rm -rf build\" }\n[[model.turns]]\ntext = \"ok\"\n",
    )
    .unwrap();
    sb.set("FAKE_GEMINI_SCENARIO_DIR", Some(dir.to_str().unwrap()));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:rm]]"}]}}),
    );
    let ask = d.recv();
    assert_eq!(ask["method"], "session/request_permission");
    assert_eq!(ask["params"]["toolCall"]["kind"], "execute");
    assert_eq!(ask["params"]["toolCall"]["title"], "rm -rf build");
}

#[test]
fn cancel_resolves_the_pending_prompt_and_errors_without_one() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:hang-after-output after=1]]"}]}}));
    assert_eq!(
        d.recv()["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    // Other requests keep flowing while the prompt is stalled.
    let (_, r) = d.call(4, "session/list", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    d.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    assert_eq!(
        d.recv(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}})
    );
    d.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    let (code, stderr) = d.finish();
    assert_eq!(code, Some(0));
    assert!(stderr.contains("Error handling notification"), "{stderr}");
    assert!(stderr.contains("Not currently generating"), "{stderr}");
}

/// stdin EOF does not cut a running prompt short (observed on 0.61.0 by the ACP differential
/// suite): its remaining updates and its response still come, then the agent exits 0.
#[test]
fn eof_lets_a_running_prompt_finish_before_the_exit() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:trickle count=3 interval-ms=200]]"}]}}));
    assert_eq!(d.recv()["params"]["update"]["content"]["text"], "tick1 ");
    drop(d.stdin.take());
    let mut rest = Vec::new();
    let result = loop {
        let m = d.recv();
        if m["id"] == 3 {
            break m;
        }
        rest.push(m["params"]["update"]["content"]["text"].clone());
    };
    assert_eq!(rest, [json!("tick2 "), json!("tick3 ")]);
    assert_eq!(result["result"]["stopReason"], "end_turn");
    assert_eq!(d.child.wait().unwrap().code(), Some(0));
}

/// A prompt waiting for the client's answer to a permission request keeps nothing alive: at
/// EOF the agent exits 0 without it.
#[test]
fn eof_while_a_permission_request_waits_exits() {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:writer]]"}]}}));
    d.recv();
    assert_eq!(d.recv()["method"], "session/request_permission");
    let (code, _) = d.finish();
    assert_eq!(code, Some(0));
}

/// As 0.61 does (observed by the ACP differential suite): an answered prompt stays pending until
/// a cancel clears it, so the first cancel after it is silent and only the second one fails.
#[test]
fn the_first_cancel_after_an_answered_prompt_is_silent() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (_, r) = prompt(&mut d, 3, &sid, "hi");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}});
    d.send(&cancel);
    // A request after the cancel: its answer proves the cancel was handled.
    d.call(4, "session/list", json!({}));
    d.send(&cancel);
    d.call(5, "session/list", json!({}));
    let (code, stderr) = d.finish();
    assert_eq!(code, Some(0));
    assert_eq!(
        stderr.matches("Not currently generating").count(),
        1,
        "{stderr}"
    );
    let second = stderr
        .find("id: 4")
        .expect("the first session/list is logged");
    assert!(
        stderr[second..].contains("Not currently generating"),
        "only the second cancel fails: {stderr}"
    );
}

#[test]
fn a_new_prompt_on_the_same_session_cancels_the_old_one() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    for (id, text) in [
        (3, "[[fake-gemini:network-down attempt-delay-ms=5]]"),
        (4, "hi"),
    ] {
        d.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}}),
        );
    }
    let mut results = std::collections::BTreeMap::new();
    while results.len() < 2 {
        let m = d.recv();
        if let Some(id) = m["id"].as_u64() {
            results.insert(id, m["result"]["stopReason"].clone());
        }
    }
    assert_eq!(results[&3], "cancelled");
    assert_eq!(results[&4], "end_turn");
}

#[rstest]
#[case::session_list("session/list")]
#[case::session_fork("session/fork")]
#[case::session_resume("session/resume")]
#[case::session_close("session/close")]
#[case::set_config_option("session/set_config_option")]
#[case::extension("_vendor/thing")]
fn unimplemented_methods_are_method_not_found(#[case] method: &str) {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let (_, r) = d.call(1, method, json!({}));
    assert_eq!(
        r["error"],
        json!({"code": -32601, "message": format!("\"Method not found\": {method}"), "data": {"method": method}})
    );
}

#[test]
fn set_mode_and_set_model_errors_are_the_real_ones() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    for (mode, details) in [
        (
            "yolo",
            "Cannot enable privileged approval modes in an untrusted folder.",
        ),
        (
            "autoEdit",
            "Cannot enable privileged approval modes in an untrusted folder.",
        ),
        ("bogus", "Invalid or unavailable mode: bogus"),
    ] {
        let (_, r) = d.call(
            2,
            "session/set_mode",
            json!({"sessionId": sid, "modeId": mode}),
        );
        assert_eq!(
            r["error"],
            json!({"code": -32603, "message": "Internal error", "data": {"details": details}})
        );
    }
    let (_, r) = d.call(
        3,
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "plan"}),
    );
    assert_eq!(r["result"], json!({}));
    for m in ["session/set_mode", "session/set_model", "session/prompt"] {
        let (_, r) = d.call(
            4,
            m,
            json!({"sessionId": "nope", "modeId": "default", "modelId": "x", "prompt": []}),
        );
        assert_eq!(
            r["error"],
            json!({"code": -32602, "message": "Session not found: nope"})
        );
    }
    let (_, r) = d.call(
        5,
        "session/set_model",
        json!({"sessionId": sid, "modelId": "gemini-2.5-pro"}),
    );
    assert_eq!(r["result"], json!({}));
    let (_, r) = prompt(&mut d, 6, &sid, "hi");
    assert_eq!(
        r["result"]["_meta"]["quota"]["model_usage"][0]["model"],
        "gemini-2.5-pro"
    );
}

#[test]
fn yolo_in_a_trusted_folder_is_kept() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &["--yolo", "--skip-trust"]);
    d.call(0, "initialize", json!({"protocolVersion": 1}));
    let (_, r) = d.call(
        1,
        "session/new",
        json!({"cwd": sb.cwd.to_str().unwrap(), "mcpServers": []}),
    );
    assert_eq!(r["result"]["modes"]["currentModeId"], "yolo");
}

#[rstest]
#[case::turn_limit("[[fake-gemini:turn-limit]]", "max_turn_requests")]
#[case::loop_detected("[[fake-gemini:loop-detected]]", "max_turn_requests")]
#[case::too_large("[[fake-gemini:input-too-large]]", "max_tokens")]
#[case::empty("[[fake-gemini:empty-response attempt-delay-ms=1]]", "end_turn")]
#[case::scripted_cancel("[[fake-gemini:cancelled]]", "cancelled")]
#[case::slow_start("[[fake-gemini:slow-start delay-ms=10]]", "end_turn")]
fn stop_reasons(#[case] text: &str, #[case] stop: &str) {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (_, r) = prompt(&mut d, 2, &sid, text);
    assert_eq!(r["result"]["stopReason"], stop, "{r}");
    assert_eq!(r["result"].get("_meta").is_some(), stop != "cancelled");
}

#[rstest]
#[case::api_500("[[fake-gemini:api-500 attempts=2 attempt-delay-ms=1]]", 500)]
#[case::api_403("[[fake-gemini:api-403]]", 403)]
#[case::rate_limit("[[fake-gemini:rate-limit-retry attempts=2 attempt-delay-ms=1]]", 429)]
#[case::malformed("[[fake-gemini:malformed-stream]]", 500)]
fn api_errors_carry_the_http_status(#[case] text: &str, #[case] code: i64) {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (_, r) = prompt(&mut d, 2, &sid, text);
    assert_eq!(r["error"]["code"], code, "{r}");
    // The agent stays alive after an error.
    let (_, r) = prompt(&mut d, 3, &sid, "hi");
    assert_eq!(r["result"]["stopReason"], "end_turn");
}

/// With FAKE_GEMINI_SESSION_LOSS=1, the upstream bug: a load in the minute the session's file
/// was started in resets that file, so the session is not found, then or later (observed on
/// 0.61.0 by the ACP differential suite); a load in a later minute replays it.
#[test]
fn session_load_in_the_same_minute_loses_the_session_with_the_switch() {
    fn session(sb: &Sandbox) -> String {
        let mut d = Driver::start(sb, &[]);
        let sid = d.open_session(sb);
        prompt(&mut d, 2, &sid, "[[fake-gemini:tool-call]]");
        assert_eq!(d.finish().0, Some(0));
        sid
    }
    fn load(sb: &Sandbox, sid: &str) -> Value {
        let mut d = Driver::start(sb, &[]);
        d.call(0, "initialize", json!({"protocolVersion": 1}));
        let cwd = sb.cwd.to_str().unwrap();
        d.call(
            1,
            "session/load",
            json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
        )
        .1
    }
    let mut sb = Sandbox::new("acp");
    let state = sb.dir.path().join("state");
    sb.set("FAKE_GEMINI_STATE", Some(state.to_str().unwrap()))
        .set("FAKE_GEMINI_SESSION_LOSS", Some("1"))
        .set("FAKE_GEMINI_NOW", Some("2030-01-01T00:00:10Z"));
    let lost = session(&sb);
    let kept = session(&sb);
    sb.set("FAKE_GEMINI_NOW", Some("2030-01-01T00:00:40Z"));
    let r = load(&sb, &lost);
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let details = r["error"]["data"]["details"].as_str().unwrap();
    assert!(
        details.starts_with(&format!("Invalid session identifier \"{lost}\"")),
        "{r}"
    );
    // The other session of that minute was not loaded: it is still there a minute later.
    sb.set("FAKE_GEMINI_NOW", Some("2030-01-01T00:01:40Z"));
    let r = load(&sb, &kept);
    assert_eq!(r["result"]["modes"]["currentModeId"], "default", "{r}");
    // The lost one stays lost.
    let r = load(&sb, &lost);
    assert_eq!(r["error"]["code"], -32603, "{r}");
}

/// With FAKE_GEMINI_SESSION_LOSS=1, a new session's chat file as 0.61.0 writes it (observed):
/// two headers, each with the session context, and no message once `session/new` is answered;
/// the user message while the prompt's answer is still held (after the router call, before the
/// main call); the answer at the turn's end.
#[test]
fn a_new_session_file_records_the_prompt_before_the_answer_with_the_switch() {
    fn lines(state: &std::path::Path) -> Vec<Value> {
        let files: Vec<_> = std::fs::read_dir(state.join("tmp/acp/chats"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    fn kinds(lines: &[Value]) -> Vec<&str> {
        lines
            .iter()
            .map(|v| {
                if v.get("sessionId").is_some() {
                    "header"
                } else if v.get("$set").is_some() {
                    "$set"
                } else {
                    v["type"].as_str().unwrap_or("?")
                }
            })
            .collect()
    }
    let mut sb = Sandbox::new("acp");
    let state = sb.dir.path().join("state");
    sb.set("FAKE_GEMINI_STATE", Some(state.to_str().unwrap()))
        .set("FAKE_GEMINI_SESSION_LOSS", Some("1"));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let begun = lines(&state);
    assert_eq!(kinds(&begun), ["header", "$set", "header", "$set"]);
    assert_eq!(begun[0]["sessionId"], json!(sid));
    d.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:success delay-ms=1500]]"}]}}));
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        kinds(&lines(&state))[4..],
        ["user", "$set"],
        "the prompt is recorded while the answer is held"
    );
    loop {
        let m = d.recv();
        if m["id"] == json!(2) {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            break;
        }
    }
    assert_eq!(
        kinds(&lines(&state))[4..],
        ["user", "$set", "gemini", "$set"]
    );
    assert_eq!(d.finish().0, Some(0));
}

#[test]
fn session_load_replays_the_history() {
    let mut sb = Sandbox::new("acp");
    let state = sb.dir.path().join("state");
    sb.set("FAKE_GEMINI_STATE", Some(state.to_str().unwrap()));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    prompt(&mut d, 2, &sid, "[[fake-gemini:tool-call]] list it");
    assert_eq!(d.finish().0, Some(0));

    let mut d = Driver::start(&sb, &[]);
    d.call(0, "initialize", json!({"protocolVersion": 1}));
    let cwd = sb.cwd.to_str().unwrap();
    // The stored session context comes before the response, the history after it (observed).
    let (before, r) = d.call(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(update_kinds(&before), ["user_message_chunk"]);
    let context = before[0]["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        context.starts_with("<session_context>\nThis is the Gemini CLI."),
        "{context}"
    );
    assert!(context.contains(&format!("  - {cwd}\n")), "{context}");
    let replay: Vec<Value> = (0..5).map(|_| d.recv()).collect();
    assert_eq!(r["result"]["modes"]["currentModeId"], "default");
    assert!(r["result"].get("sessionId").is_none());
    assert_eq!(
        update_kinds(&replay),
        [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "user_message_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(
        replay[0]["params"]["update"]["content"]["text"],
        "[[fake-gemini:tool-call]] list it"
    );
    assert_eq!(replay[2]["params"]["update"]["status"], "completed");
    // As 0.61.0 replays it (observed by the ACP differential suite): the tool's display name,
    // then the function response the model got.
    assert_eq!(replay[2]["params"]["update"]["title"], "ReadFolder");
    assert_eq!(
        replay[3]["params"]["update"]["content"]["text"],
        "[Function Response: list_directory]"
    );
    assert_eq!(
        replay[4]["params"]["update"]["content"]["text"],
        "Hello there! How can I help?"
    );
    assert_eq!(
        d.recv()["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    // The loaded session takes prompts.
    let (_, r) = prompt(&mut d, 2, &sid, "again");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let (_, r) = d.call(
        3,
        "session/load",
        json!({"sessionId": "nope", "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(r["error"]["code"], -32603);
    assert!(r["error"]["data"]["details"]
        .as_str()
        .unwrap()
        .starts_with("Invalid session identifier \"nope\"."));
}

#[test]
fn auth_errors_and_authenticate() {
    let mut sb = Sandbox::new("acp");
    sb.set("FAKE_GEMINI_AUTH", Some("env"))
        .set("GEMINI_API_KEY", None);
    let mut d = Driver::start(&sb, &[]);
    let cwd = sb.cwd.to_str().unwrap();
    d.call(0, "initialize", json!({"protocolVersion": 1}));
    let (_, r) = d.call(1, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(
        r["error"],
        json!({"code": -32000, "message": "Gemini API key is missing or not configured."})
    );
    let (_, r) = d.call(
        2,
        "session/load",
        json!({"sessionId": "x", "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(
        r["error"],
        json!({"code": -32000, "message": "Authentication required"})
    );
    let (_, r) = d.call(3, "authenticate", json!({"methodId": "bogus"}));
    assert_eq!(r["error"]["code"], -32602);
    let (_, r) = d.call(
        4,
        "authenticate",
        json!({"methodId": "gemini-api-key", "_meta": {"api-key": "k"}}),
    );
    assert_eq!(r["result"], json!({}));
    let (_, r) = d.call(5, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert!(r["result"]["sessionId"].is_string(), "{r}");
}

#[test]
fn hang_freezes_the_whole_agent() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:hang-after-output]]"}]}}));
    assert_eq!(
        d.recv()["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    d.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": 1}}));
    d.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    drop(d.stdin.take());
    // Not even stdin EOF ends it: the process is still there to be killed.
    assert!(d.rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert!(d.child.try_wait().unwrap().is_none());
}

#[cfg(unix)]
#[test]
fn crash_kills_the_agent_mid_prompt() {
    let mut sb = Sandbox::new("acp");
    sb.set("GEMINI_CLI_NO_RELAUNCH", Some("1"));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:crash]]"}]}}));
    assert_eq!(
        d.recv()["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    let st = d.child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(9));
}

#[test]
fn the_log_records_the_invocation_and_each_request() {
    let mut sb = Sandbox::new("acp");
    let log = sb.dir.path().join("log.jsonl");
    sb.set("FAKE_GEMINI_LOG", Some(log.to_str().unwrap()))
        .set("FAKE_GEMINI_ACP_START_DELAY_MS", Some("20"));
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    prompt(
        &mut d,
        2,
        &sid,
        "[[fake-gemini:success text=\"4\"]] what is 2+2",
    );
    assert_eq!(d.finish().0, Some(0));
    let recs = log_records(&log);
    let inv = recs.iter().find(|r| r["event"] == "invocation").unwrap();
    assert_eq!(inv["argv"], json!(["--acp"]));
    assert_eq!(inv["exit"], Value::Null);
    let methods: Vec<&str> = recs
        .iter()
        .filter(|r| r["event"] == "acp-request")
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    let p = recs
        .iter()
        .find(|r| r["method"] == "session/prompt")
        .unwrap();
    assert_eq!(p["scenario"], "success");
    assert_eq!(p["params"], json!({"text": "4"}));
    assert_eq!(p["sessionId"], sid.as_str());
    assert_eq!(p["id"], 2);
}

#[test]
fn expectations_are_checked_per_prompt() {
    let mut sb = Sandbox::new("acp");
    let dir = sb.dir.path().join("sc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("strict.toml"),
        "[expect]\nargv-contains = [\"--acp\", \"--skip-trust\"]\nstdin-contains = \"Summarise\"\n",
    )
    .unwrap();
    sb.set("FAKE_GEMINI_SCENARIO_DIR", Some(dir.to_str().unwrap()));
    let mut d = Driver::start(&sb, &["--skip-trust"]);
    let sid = d.open_session(&sb);
    let (_, r) = prompt(&mut d, 2, &sid, "[[fake-gemini:strict]] Summarise this");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    // A failed expectation is the fake's own failure: exit 99, never a real code.
    d.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:strict]] other"}]}}));
    // The agent exits by itself; stdin stays open so EOF cannot be what ended it.
    let code = d.child.wait().unwrap().code();
    let stderr = d.stderr.take().unwrap().join().unwrap();
    assert_eq!(code, Some(99));
    assert!(
        stderr.contains("fake-gemini: expectation failed: stdin does not contain"),
        "{stderr}"
    );
}

#[rstest]
#[case::acp("--acp")]
#[case::deprecated_alias("--experimental-acp")]
fn the_launcher_passes_the_protocol_through(#[case] flag: &str) {
    // The default process model: a launcher relaunching itself as the worker, which serves ACP.
    let sb = Sandbox::new("acp");
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    let o = sb.run(&[flag], Some(input));
    assert_eq!(o.status.code(), Some(0));
    let reply: Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(reply["result"]["agentInfo"]["name"], "gemini-cli");
    assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
}

/// An empty prompt passes the schema but not the request building: `500` (observed on 0.61.0).
#[test]
fn an_empty_prompt_is_a_500() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (msgs, r) = d.call(2, "session/prompt", json!({"sessionId": sid, "prompt": []}));
    assert!(msgs.is_empty(), "{msgs:?}");
    assert_eq!(
        r["error"],
        json!({"code": 500, "message": "partOrString cannot be an empty array"})
    );
    // The router ran first (under `auto`).
    let (_, stderr) = d.finish();
    assert_eq!(
        stderr.matches("classifier-router-fallback-").count(),
        1,
        "{stderr}"
    );
}

/// The SDK's schema check, as 0.61.0 answers it (observed by the ACP differential suite):
/// `-32603 Internal error` with zod's issue list, before any session lookup.
#[test]
fn malformed_params_are_schema_errors() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let cwd = sb.cwd.to_str().unwrap();
    for (method, params, field, expected) in [
        ("session/new", json!({"cwd": cwd}), "mcpServers", "array"),
        (
            "session/load",
            json!({"sessionId": "x", "cwd": cwd}),
            "mcpServers",
            "array",
        ),
        (
            "session/prompt",
            json!({"sessionId": "nope"}),
            "prompt",
            "array",
        ),
        (
            "session/set_mode",
            json!({"sessionId": "nope"}),
            "modeId",
            "string",
        ),
        ("initialize", json!({}), "protocolVersion", "number"),
    ] {
        let (_, r) = d.call(1, method, params);
        assert_eq!(
            r["error"],
            json!({"code": -32603, "message": "Internal error", "data": [{
                "expected": expected, "code": "invalid_type", "path": [field],
                "message": format!("Invalid input: expected {expected}, received undefined")}]}),
            "{method}"
        );
    }
}

#[test]
fn allow_for_this_session_on_an_edit_switches_a_trusted_session_to_auto_edit() {
    let mut sb = Sandbox::new("acp");
    write_file_scenario(&mut sb);
    let mut d = Driver::start(&sb, &["--skip-trust"]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:writer]]"}]}}));
    d.recv();
    let ask = d.recv();
    d.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "proceed_always"}}}));
    let mode = d.recv();
    assert_eq!(
        mode["params"]["update"]["content"]["text"],
        "[MODE_UPDATE] autoEdit"
    );
    assert_eq!(d.recv()["params"]["update"]["status"], "completed");
    // Now in autoEdit: the next write runs without asking.
    let (msgs, r) = {
        let mut before = Vec::new();
        loop {
            let m = d.recv();
            if m["id"] == 5 {
                break (before, m);
            }
            before.push(m);
        }
    };
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(update_kinds(&msgs), ["agent_message_chunk"]);
    let (msgs, _) = prompt(&mut d, 6, &sid, "[[fake-gemini:writer]]");
    assert!(!msgs
        .iter()
        .any(|m| m["method"] == "session/request_permission"));
}

/// In an untrusted folder every mode but `default` is downgraded when the config loads, plan
/// included (the headless rule, observed there); a system file the CLI skips and both API keys
/// are reported on stderr as in a headless run (observed in ACP on 0.61.0).
#[test]
fn untrusted_plan_is_downgraded_and_startup_warnings_are_reported() {
    let mut sb = Sandbox::new("acp");
    let defaults = sb.dir.path().join("system-defaults.json");
    std::fs::write(&defaults, "{}").unwrap();
    sb.set(
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
        Some(defaults.to_str().unwrap()),
    )
    .set("GOOGLE_API_KEY", Some("g"));
    let mut d = Driver::start(&sb, &["--approval-mode", "plan"]);
    d.call(0, "initialize", json!({"protocolVersion": 1}));
    let (_, r) = d.call(
        1,
        "session/new",
        json!({"cwd": sb.cwd.to_str().unwrap(), "mcpServers": []}),
    );
    assert_eq!(r["result"]["modes"]["currentModeId"], "default");
    let (code, stderr) = d.finish();
    assert_eq!(code, Some(0));
    assert!(
        stderr.starts_with("Security Warning: Skipping system defaults file"),
        "{stderr}"
    );
    let count = |l: &str| stderr.lines().filter(|x| *x == l).count();
    assert_eq!(
        count("Approval mode overridden to \"default\" because the current folder is not trusted."),
        3,
        "{stderr}"
    );
    assert_eq!(
        count("Both GOOGLE_API_KEY and GEMINI_API_KEY are set. Using GOOGLE_API_KEY."),
        3,
        "{stderr}"
    );
}

/// A prompt's messages up to its response, raw, sending `session/cancel` after the first update.
fn prompt_cancelled_at_once(
    d: &mut Driver,
    id: u64,
    sid: &str,
    text: &str,
) -> (Vec<String>, Value) {
    d.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}}),
    );
    let mut lines = Vec::new();
    loop {
        let l = d.recv_raw();
        if lines.is_empty() {
            d.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
        }
        match serde_json::from_str::<Value>(&l) {
            Ok(m) if m["id"] == json!(id) && m.get("method").is_none() => return (lines, m),
            _ => lines.push(l),
        }
    }
}

#[rstest]
#[case::messages("", "agent_message_chunk")]
#[case::thoughts(" update=thought", "agent_thought_chunk")]
#[case::tool_calls(" update=tool", "tool_call")]
fn a_flood_goes_on_after_the_cancel(#[case] update: &str, #[case] kind: &str) {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let marker = format!("[[fake-gemini:flood-stdout bytes=655370{update}]]");
    let (lines, answer) = prompt_cancelled_at_once(&mut d, 2, &sid, &marker);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let updates: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON-RPC"))
        .collect();
    assert_eq!(updates.len(), 11, "ten blocks of 64 KiB and the rest");
    let mut text = 0;
    for u in &updates {
        let u = &u["params"]["update"];
        assert_eq!(u["sessionUpdate"], kind);
        text += u["content"]["text"]
            .as_str()
            .or(u["content"][0]["content"]["text"].as_str())
            .map_or(0, str::len);
    }
    assert_eq!(text, 655_370);
}

#[test]
fn a_long_line_is_one_update() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (before, answer) = prompt(&mut d, 2, &sid, "[[fake-gemini:long-line bytes=300000]]");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(before.len(), 1);
    let text = before[0]["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap();
    assert_eq!(text.len(), 300_000);
}

#[test]
fn bad_bytes_and_cut_lines_are_written_among_the_json_rpc() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (lines, answer) = prompt_cancelled_at_once(&mut d, 2, &sid, "[[fake-gemini:non-utf8]]");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Read lossily by the driver: the bad bytes are U+FFFD here, and were no UTF-8 on the wire.
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("caf\u{FFFD} "), "{}", lines[0]);
    assert!(lines[1].contains("\u{FFFD}\u{FFFD} ok"), "{}", lines[1]);
    let (lines, answer) = prompt_cancelled_at_once(&mut d, 3, &sid, "[[fake-gemini:invalid-json]]");
    assert!(answer["result"]["stopReason"].is_string(), "{answer}");
    assert!(
        serde_json::from_str::<Value>(&lines[0]).is_err(),
        "{}",
        lines[0]
    );
    let (_, stderr) = d.finish();
    assert!(
        stderr.contains("warning: \u{FFFD}\u{FFFD} not utf-8"),
        "{stderr}"
    );
}

#[test]
fn a_stderr_flood_is_written_as_it_goes_then_the_answer() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    let (_, answer) = prompt(&mut d, 2, &sid, "[[fake-gemini:flood-stderr bytes=300000]]");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let (_, stderr) = d.finish();
    assert!(stderr.len() >= 300_000, "{} bytes", stderr.len());
    assert!(stderr.contains("Retrying with backoff"));
}

#[cfg(unix)]
#[test]
fn ignore_sigterm_keeps_the_agent_running_past_sigterm() {
    let sb = Sandbox::new("acp");
    let mut d = Driver::start(&sb, &[]);
    let sid = d.open_session(&sb);
    d.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "[[fake-gemini:ignore-sigterm]]"}]}}));
    assert_eq!(
        d.recv()["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) };
    assert!(d.rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert!(d.child.try_wait().unwrap().is_none(), "SIGTERM ended it");
}
