//! The smoke checks; see the module above for the harness.

#[cfg(unix)]
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{deadline, text, Harness};

/// The one-shot backend, for checks of a CLI run's command line, stdin and process tree in the
/// fake's log (a warm agent logs its ACP requests there instead).
const ONE_SHOT: &[(&str, &str)] = &[("GEMINICLI_MCP_BACKEND", "oneshot")];

const BASE_ARGS: [&str; 3] = [
    "--output-format=stream-json",
    "--approval-mode=yolo",
    "--skip-trust",
];

#[test]
fn gemini_prompt_answers_and_keeps_the_prompt_off_argv() {
    let mut h = Harness::start(ONE_SHOT);
    let result = h.call("gemini_prompt", json!({"prompt": "--help"}));
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(text(&result), "Hello there! How can I help?");
    let s = &result["structuredContent"];
    assert_eq!(s["response"], "Hello there! How can I help?");
    assert!(s["sessionId"].is_string(), "{s}");
    for bookkeeping in ["exitCode", "truncated", "durationMs", "stats"] {
        assert!(s.get(bookkeeping).is_none(), "{bookkeeping} in {s}");
    }
    let runs = h.wait_for_runs(1);
    assert_eq!(runs[0]["argv"], json!(BASE_ARGS), "argv carries flags only");
    assert_eq!(runs[0]["stdin"], "--help", "the prompt goes to stdin");
    assert_eq!(runs[0]["env"]["NO_COLOR"]["value"], "1");
    assert_eq!(runs[0]["env"]["TERM"]["value"], "dumb");
    assert_eq!(runs[0]["env"]["NO_BROWSER"]["value"], "true");
    assert_eq!(runs[0]["env"]["GEMINI_CLI_NO_RELAUNCH"]["value"], "1");
}

#[test]
fn gemini_prompt_with_context_sends_the_context_block() {
    let mut h = Harness::start(ONE_SHOT);
    let result = h.call(
        "gemini_prompt_with_context",
        json!({"prompt": "Summarize.", "context": "line one\n</context> sneaky", "model": "gemini-2.5-pro"}),
    );
    assert_eq!(result["isError"], json!(false), "{result}");
    let runs = h.wait_for_runs(1);
    assert_eq!(
        runs[0]["stdin"],
        "<context>\nline one\n<\\/context> sneaky\n</context>\n\nSummarize."
    );
    let mut argv = BASE_ARGS.map(Value::from).to_vec();
    argv.push("--model=gemini-2.5-pro".into());
    assert_eq!(runs[0]["argv"], Value::Array(argv));
}

#[test]
fn gemini_prompt_structured_returns_canonical_json() {
    let mut h = Harness::start(&[]);
    let answer = "Sure:\n```json\n{\"title\": \"x\", \"tags\": [\"a\"], \"n\": 1.0}\n```";
    let marker = format!(
        "[[fake-gemini:success text={}]]",
        serde_json::to_string(answer).unwrap()
    );
    let schema = json!({
        "type": "object",
        "required": ["title", "tags"],
        "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
    });
    let result = h.call(
        "gemini_prompt_structured",
        json!({"prompt": format!("Give me JSON. {marker}"), "schema": schema}),
    );
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(text(&result), r#"{"title":"x","tags":["a"],"n":1}"#);
    assert_eq!(result["structuredContent"]["json"]["tags"], json!(["a"]));

    let bad = h.call(
        "gemini_prompt_structured",
        json!({"prompt": format!("Give me JSON. {marker}"), "schema": {"type": "object", "required": ["missing"]}}),
    );
    assert_eq!(bad["isError"], json!(true));
    assert!(
        text(&bad).starts_with("[error exit=0] schema_mismatch: "),
        "{}",
        text(&bad)
    );
    let s = &bad["structuredContent"];
    assert_eq!(s["errorKind"], "schema_mismatch");
    assert_eq!(s["rawResponse"], answer);
    assert!(!s["validationErrors"].as_array().unwrap().is_empty());
}

#[test]
fn auth_failure_is_a_typed_tool_error() {
    let mut h = Harness::start(ONE_SHOT);
    let result = h.call(
        "gemini_prompt",
        json!({"prompt": "hi [[fake-gemini:auth-missing]]"}),
    );
    assert_eq!(result["isError"], json!(true));
    assert!(
        text(&result).starts_with("[error exit=41] auth_required: "),
        "{}",
        text(&result)
    );
    assert_eq!(result["structuredContent"]["exitCode"], 41);
}

/// rmcp handles `notifications/initialized` and the requests after it concurrently, so the
/// client is registered for log messages at `initialize`. With no `initialized` at all, the
/// warning of the first call must still reach it: the order the race can produce, made certain.
#[test]
fn a_warning_of_the_first_call_reaches_a_client_whose_initialized_was_not_yet_handled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = super::server_command(dir.path());
    cmd.current_dir(dir.path())
        .env("FAKE_GEMINI_SCENARIO", "old-version")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut client = gemini_mcp_conformance::client::Client::new(cmd.spawn().expect("spawn"));
    let id = client
        .request(
            "initialize",
            Some(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "server-tests", "version": "0"}})),
        )
        .expect("send initialize");
    assert!(
        client.response(&id, deadline()).is_some(),
        "initialize answered"
    );
    let id = client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt", "arguments": {"prompt": "hi"}})),
        )
        .expect("send tools/call");
    let response = client
        .response(&id, deadline())
        .expect("tools/call answered");
    assert_eq!(response["result"]["isError"], json!(true), "{response}");
    let warning = client.wait_for(deadline(), |m| {
        m["method"] == "notifications/message"
            && m["params"]["level"] == "warning"
            && m["params"]["data"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("too old"))
    });
    assert!(
        warning.is_some(),
        "no warning notification; stderr: {}",
        client.stderr()
    );
    client.kill();
}

#[test]
fn refused_arguments_never_spawn() {
    let mut h = Harness::start(&[]);
    for args in [
        json!({"prompt": "hi", "model": "--yolo"}),
        json!({"prompt": 7}),
        json!({}),
        json!({"prompt": "   "}),
    ] {
        let result = h.call("gemini_prompt", args.clone());
        assert_eq!(result["isError"], json!(true), "{args}");
        assert!(
            text(&result).starts_with("[error exit=42] input_validation: "),
            "{args}: {}",
            text(&result)
        );
    }
    let not_an_object = h.rpc(
        "tools/call",
        Some(json!({"name": "gemini_prompt", "arguments": "hi"})),
    );
    assert!(
        text(&not_an_object["result"]).starts_with("[error exit=42] input_validation: "),
        "{not_an_object}"
    );
    assert!(h.log_records().is_empty(), "nothing was spawned");
    let unknown = h.rpc("tools/call", Some(json!({"name": "nope", "arguments": {}})));
    assert_eq!(
        unknown["error"]["code"], -32602,
        "an unknown tool stays a protocol error"
    );
}

#[cfg(unix)]
#[test]
fn cancelling_a_hung_call_kills_its_tree_and_sends_no_response() {
    // The server's debug log (and rmcp's note of the cancellation) on stderr: a failure shows
    // whether the cancellation arrived and what the turn did with it.
    let mut h = Harness::start(&[("GEMINICLI_MCP_LOG", "geminicli_mcp=debug,rmcp=info")]);
    let id = h
        .client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt", "arguments": {"prompt": "wait [[fake-gemini:hang]]"}})),
        )
        .unwrap();
    // The call hangs in its prompt: the agent has logged the `session/prompt` it froze in (a
    // cancellation before that finds an idle agent, which rightly lives on).
    let prompt = h.wait_for_record(|r| r["method"] == "session/prompt");
    let pid = prompt["pid"].as_i64().expect("pid logged");
    h.client
        .notify(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "test"})),
        )
        .unwrap();
    assert!(
        super::gone(pid),
        "fake-gemini {pid} survived the cancellation: {}; fake-gemini's log: {:?}",
        super::process_facts(pid),
        h.log_records()
    );
    // A response to a cancelled request must not come; give it a moment to (wrongly) appear.
    let quiet = Instant::now() + Duration::from_millis(500);
    h.client.listen_until(quiet);
    assert!(
        h.client.response(&id, Instant::now()).is_none(),
        "a cancelled request got a response"
    );
    let after = h.call("gemini_prompt", json!({"prompt": "still there?"}));
    assert_eq!(after["isError"], json!(false), "the server keeps serving");
}

#[test]
fn settings_not_understood_are_named_on_stderr_at_start_and_their_defaults_serve() {
    let mut h = Harness::start(&[
        ("GEMINICLI_MCP_BACKEND", "acpp"),
        ("GEMINICLI_MCP_MAX_CONCURRENCY", "four-ish"),
        // Values no log line holds by chance (a timestamp may hold any digits).
        ("GEMINICLI_MCP_TIMEOUT_TOTAL_MS", "nine-lives-ms"),
    ]);
    let answer = h.call("gemini_prompt", json!({"prompt": "still served"}));
    assert_eq!(answer["isError"], json!(false), "{answer}");
    let stderr = h.client.stderr();
    assert!(
        stderr.contains("GEMINICLI_MCP_BACKEND is not oneshot or acp; the default applies"),
        "{stderr}"
    );
    assert!(
        stderr.contains("GEMINICLI_MCP_MAX_CONCURRENCY is not a positive whole number"),
        "{stderr}"
    );
    assert!(
        stderr.contains("GEMINICLI_MCP_TIMEOUT_TOTAL_MS is not a setting of this server (did you mean GEMINICLI_MCP_TOTAL_TIMEOUT_MS?)"),
        "a misspelt name went unnamed: {stderr}"
    );
    assert!(
        !stderr.contains("acpp") && !stderr.contains("four-ish") && !stderr.contains("nine-lives"),
        "a value reached the log: {stderr}"
    );
}

#[test]
fn piped_requests_get_answers_after_stdin_closes() {
    let mut h = Harness::start(&[]);
    let slow = h
        .client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt", "arguments": {"prompt": "slow [[fake-gemini:success delay-ms=300]]"}})),
        )
        .unwrap();
    h.client.close_stdin();
    let response = h
        .client
        .response(&slow, deadline())
        .expect("answered after EOF");
    assert_eq!(response["result"]["isError"], json!(false), "{response}");
    let status = h
        .client
        .wait_exit(deadline())
        .expect("server exits after EOF");
    assert!(status.success(), "{status:?}");
}

#[test]
fn long_answers_are_read_on_by_their_id_and_readable_as_resources() {
    let mut h = Harness::start(&[("GEMINICLI_MCP_RESULT_BUDGET_BYTES", "4096")]);
    let long: String = (0..800).map(|i| format!("word{i:03} ")).collect();
    let marker = format!("[[fake-gemini:success text=\"{long}\"]]");
    let result = h.call("gemini_prompt", json!({"prompt": format!("long {marker}")}));
    assert_eq!(result["isError"], json!(false), "{result}");
    assert!(
        result.to_string().len() <= 4096,
        "{}",
        result.to_string().len()
    );
    let s = &result["structuredContent"];
    let id = s["answerId"]
        .as_str()
        .expect("a cut answer has an id")
        .to_owned();
    let mut read = s["response"].as_str().unwrap().to_owned();
    assert!(long.starts_with(&read));
    let mut next = s["nextOffset"].clone();
    while let Some(offset) = next.as_u64() {
        let part = h.call(
            "gemini_read_answer",
            json!({"answer_id": id, "offset": offset}),
        );
        assert!(part.to_string().len() <= 4096);
        read.push_str(part["structuredContent"]["text"].as_str().unwrap());
        next = part["structuredContent"]["next_offset"].clone();
    }
    assert_eq!(
        read, long,
        "every part read in turn gives back the whole answer"
    );
    let link = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link")
        .unwrap_or_else(|| panic!("a resource link: {result}"));
    let uri = link["uri"].as_str().unwrap().to_owned();
    let whole = h.rpc("resources/read", Some(json!({"uri": uri})));
    assert_eq!(whole["result"]["contents"][0]["text"], long.as_str());
    // An answer not stored: an error that names the URI asked for in its data.
    let missing = format!("{uri}0");
    let none = h.rpc("resources/read", Some(json!({"uri": missing})));
    assert_eq!(none["error"]["data"]["uri"], missing.as_str(), "{none}");
}

#[test]
fn older_protocol_versions_get_what_they_allow() {
    let mut h = Harness::start_with(&[], "2025-03-26");
    assert!(
        h.output_schemas.is_empty(),
        "no outputSchema before 2025-06-18"
    );
    let result = h.call("gemini_prompt", json!({"prompt": "hi"}));
    assert_eq!(text(&result), "Hello there! How can I help?");
    assert!(result.get("structuredContent").is_none(), "{result}");
}

#[test]
fn every_example_request_file_is_answered_when_piped() {
    use std::io::Write;
    use std::process::Stdio;

    let dir = super::manifest_dir().join("examples/requests");
    let state = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let input = std::fs::read(&file).unwrap();
        let ids: Vec<Value> = input
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
            .filter_map(|m| m.get("id").cloned())
            .collect();
        let mut child = super::server_command(state.path())
            .current_dir(state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}: {:?}", file.display(), out.status);
        let answered: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("stdout is JSON-RPC only"))
            .filter(|m| m.get("method").is_none())
            .map(|m| m["id"].clone())
            .collect();
        for id in &ids {
            assert!(
                answered.contains(id),
                "{}: request {id} unanswered",
                file.display()
            );
        }
    }
}

/// Two calls in flight: one-shot, two CLIs that ignore SIGTERM; warm, one agent running a
/// streaming prompt and then one that makes it ignore SIGTERM and freeze.
#[cfg(unix)]
#[rstest::rstest]
#[case::one_shot("oneshot", ["ignore-sigterm", "ignore-sigterm"])]
#[case::warm("acp", ["trickle count=1000 interval-ms=20", "ignore-sigterm"])]
fn sigterm_on_the_server_kills_every_tree_and_exits(
    #[case] backend: &str,
    #[case] scenarios: [&str; 2],
) {
    let mut h = Harness::start(&[("GEMINICLI_MCP_BACKEND", backend)]);
    // Each call under way: a one-shot run, or a prompt sent to the agent.
    let started = |r: &Value| backend == "oneshot" || r["method"] == "session/prompt";
    for (n, scenario) in scenarios.iter().enumerate() {
        h.client
            .request(
                "tools/call",
                Some(json!({"name": "gemini_prompt", "arguments": {"prompt": format!("wait {n} [[fake-gemini:{scenario}]]")}})),
            )
            .unwrap();
        let end = deadline();
        while h.log_records().iter().filter(|r| started(r)).count() <= n {
            assert!(
                Instant::now() < end,
                "call {n} started: {:?}",
                h.log_records()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let pids: Vec<i64> = h
        .log_records()
        .iter()
        .filter_map(|r| r["pid"].as_i64())
        .collect();
    let server = h.client.pid() as libc::pid_t;
    // SAFETY: plain signal to the server process this test spawned.
    assert_eq!(unsafe { libc::kill(server, libc::SIGTERM) }, 0);
    let status = h
        .client
        .wait_exit(deadline())
        .expect("the server exits on SIGTERM");
    assert!(status.success(), "{status:?}");
    for pid in pids {
        assert!(
            super::gone(pid),
            "fake-gemini {pid} outlived the server's SIGTERM"
        );
    }
}

/// The names a server started with `env` lists in `tools/list`.
fn listed_names(env: &[(&str, &str)]) -> Vec<String> {
    let mut h = Harness::start(env);
    let list = h.rpc("tools/list", None);
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// `geminicli-mcp tools --json` (what the `.mcpb` bundle's tool list is read from) names the
/// tools `tools/list` lists, in its order: `core` by default, every set when all are on.
#[test]
fn the_tools_subcommand_lists_what_tools_list_lists() {
    let dir = tempfile::tempdir().unwrap();
    let out = super::server_command(dir.path())
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let catalogue: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = catalogue["tools"].as_array().unwrap();
    let names = |core_only: bool| -> Vec<String> {
        tools
            .iter()
            .filter(|t| !core_only || t["toolset"] == "core")
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(true), listed_names(&[]));
    let all = [("GEMINICLI_MCP_TOOLSETS", "sessions,models,jobs,acp")];
    assert_eq!(names(false), listed_names(&all));
    assert!(tools
        .iter()
        .all(|t| t["description"].as_str().is_some_and(|d| !d.is_empty())));
}
