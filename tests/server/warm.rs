//! The warm backend (`GEMINICLI_MCP_BACKEND=acp`) against the one-shot one: a session made on one
//! continues on the other, as both read and write the CLI's own chat files.

use serde_json::json;

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

#[test]
fn an_agent_too_old_for_a_flag_fails_the_call_as_cli_too_old_naming_the_flag() {
    let mut env = backend("acp");
    env.push(("FAKE_GEMINI_SCENARIO", "old-version"));
    let mut h = Harness::start(&env);
    let r = h.call("gemini_prompt", json!({"prompt": "hello"}));
    assert_eq!(r["isError"], json!(true), "{r}");
    let s = &r["structuredContent"];
    assert_eq!(s["errorKind"], "cli_too_old", "{r}");
    let error = s["error"].as_str().unwrap_or_default();
    assert!(error.contains("skip-trust"), "the CLI's own words: {r}");
    assert!(error.contains("ACP agent"), "said of the warm agent: {r}");
}
