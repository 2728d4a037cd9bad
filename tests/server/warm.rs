//! The warm backend (`GEMINICLI_MCP_BACKEND=acp`) against the one-shot one: a session made on one
//! continues on the other, as both read and write the CLI's own chat files.

use serde_json::{json, Value};

use super::{text, Harness};

/// The backend's environment on top of the test defaults.
fn backend(name: &str) -> Vec<(&str, &str)> {
    vec![("GEMINICLI_MCP_BACKEND", name)]
}

#[test]
fn a_warm_session_continues_on_the_one_shot_backend() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut warm = Harness::start_in(dir.path(), &backend("acp"), "2025-06-18");
    let first = warm.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:success text=\"made warm\"]]"}),
    );
    assert_eq!(text(&first), "made warm", "{first}");
    let sid = first["structuredContent"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let agents = warm.log_records();
    assert!(
        agents[0]["argv"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("--acp"))),
        "the warm call ran on an agent: {agents:?}"
    );
    drop(warm);
    let mut cold = Harness::start_in(dir.path(), &backend("oneshot"), "2025-06-18");
    let next = cold.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:success text=\"continued cold\"]]", "session_id": sid}),
    );
    assert_eq!(text(&next), "continued cold", "{next}");
    assert_eq!(next["structuredContent"]["sessionId"], json!(sid), "{next}");
    let runs = cold.log_records();
    let resumed = runs.last().expect("the one-shot run");
    assert!(
        resumed["argv"]
            .as_array()
            .is_some_and(|a| a.contains(&json!(format!("--resume={sid}")))),
        "the one-shot run resumed the warm session: {resumed}"
    );
}

#[test]
fn sandboxed_calls_run_one_shot_on_the_warm_backend() {
    let mut h = Harness::start(&backend("acp"));
    let r = h.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:success text=boxed]]", "sandbox": true}),
    );
    let runs = h.log_records();
    let argv = runs
        .iter()
        .filter_map(|r| r["argv"].as_array())
        .next()
        .expect("a run")
        .clone();
    assert!(argv.contains(&json!("--sandbox=true")), "{argv:?} / {r}");
    assert!(!argv.contains(&json!("--acp")), "{argv:?}");
}

/// An agent refused for a flag leaves the call to a one-shot run; a CLI that old refuses that
/// run's flags too, and the result names both.
#[test]
fn an_agent_too_old_for_a_flag_leaves_the_call_to_one_shot_and_both_name_the_flag() {
    let mut env = backend("acp");
    env.push(("FAKE_GEMINI_SCENARIO", "old-version"));
    let mut h = Harness::start(&env);
    let r = h.call("gemini_prompt", json!({"prompt": "hello"}));
    assert_eq!(r["isError"], json!(true), "{r}");
    let s = &r["structuredContent"];
    assert_eq!(s["errorKind"], "cli_too_old", "{r}");
    let error = s["error"].as_str().unwrap_or_default();
    assert!(error.contains("skip-trust"), "the CLI's own words: {r}");
    let why = s["ranOneShot"].as_str().unwrap_or_default();
    assert!(
        why.contains("ACP agent") && why.contains("skip-trust"),
        "the agent's failure: {r}"
    );
    let argvs: Vec<Value> = h
        .log_records()
        .into_iter()
        .filter_map(|r| r.get("argv").cloned())
        .collect();
    assert_eq!(argvs.len(), 2, "the agent, then one run: {argvs:?}");
    assert!(argvs[0]
        .as_array()
        .is_some_and(|a| a.contains(&json!("--acp"))));
    assert!(argvs[1]
        .as_array()
        .is_some_and(|a| !a.contains(&json!("--acp"))));
}

/// Whether process `pid` is still running (a zombie is not).
#[cfg(target_os = "linux")]
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// An agent past `GEMINICLI_MCP_ACP_MAX_AGENT_MB` is stopped once it runs nothing, and the next
/// call gets a new one; under the bound the same agent answers again.
#[cfg(target_os = "linux")]
#[test]
fn an_agent_grown_past_its_memory_bound_is_replaced_when_idle() {
    for (bound, replaced) in [("1", true), ("100000", false)] {
        let mut env = backend("acp");
        // The idle stop checks every quarter of the idle time: 500 ms.
        env.extend([
            ("GEMINICLI_MCP_ACP_MAX_AGENT_MB", bound),
            ("GEMINICLI_MCP_ACP_IDLE_MS", "2000"),
        ]);
        let mut h = Harness::start(&env);
        let pid_of = |r: &Value| r["structuredContent"]["debug"]["agentPid"].as_u64();
        let call = json!({"prompt": "[[fake-gemini:success text=hi]]", "debug": true});
        let first = h.call("gemini_prompt", call.clone());
        let pid = pid_of(&first).expect("the agent's pid");
        if replaced {
            let end = std::time::Instant::now() + super::STEP;
            while alive(pid) {
                assert!(std::time::Instant::now() < end, "agent {pid} never stopped");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        } else {
            // Two checks pass, well before the idle stop.
            std::thread::sleep(std::time::Duration::from_millis(1200));
            assert!(alive(pid), "an agent under its bound was stopped");
        }
        let second = h.call("gemini_prompt", call);
        assert_eq!(text(&second), "hi", "{second}");
        assert_eq!(
            pid_of(&second) != Some(pid),
            replaced,
            "bound {bound} MiB: {first} / {second}"
        );
    }
}
