//! The faults of the one-shot backend's adversarial tests, thrown at the warm one (the default): a
//! cancel at every phase of a warm call, stdin EOF with agents running, an agent that crashes
//! mid-turn. Each asserts one answer per id (none for a cancelled one), nothing but JSON-RPC on
//! stdout, and no agent or descendant left once the server exits.

use std::time::{Duration, Instant};

use gemini_mcp_conformance::client::Client;
use rstest::rstest;
use serde_json::{json, Value};

use super::{answers, at_phase, logged_pids};
use crate::server::{deadline, text, Harness};

/// A warm server with `env` on top of the test defaults.
fn warm(env: &[(&str, &str)]) -> Harness {
    let mut env = env.to_vec();
    env.push(("GEMINICLI_MCP_BACKEND", "acp"));
    Harness::start(&env)
}

/// Sends a `gemini_prompt` call and returns its id.
fn send_call(h: &mut Harness, prompt: &str) -> Value {
    h.client
        .request(
            "tools/call",
            Some(json!({"name": "gemini_prompt", "arguments": {"prompt": prompt}})),
        )
        .expect("send the call")
}

/// Waits until fake-gemini's log shows `phase` (see [`at_phase`]).
fn wait_phase(h: &Harness, phase: &str) {
    h.wait_for_record(|r| at_phase(r, phase));
}

/// Closes stdin, waits for the server's exit, and asserts that every process the fake logged
/// (agents, their launchers and descendants) is gone with it, and that stdout carried only
/// JSON-RPC.
#[cfg(unix)]
fn exits_leaving_nothing(h: &mut Harness) {
    h.client.close_stdin();
    let status = h.client.wait_exit(deadline()).expect("the server exits");
    assert!(status.success(), "{status:?}");
    for pid in logged_pids(&h.log) {
        assert!(crate::server::gone(pid), "{pid} outlived the server");
    }
    assert!(
        h.client.violations.is_empty(),
        "stdout carried something other than JSON-RPC: {:?}",
        h.client.violations
    );
}

/// The number of answers received under `id`.
fn answered(client: &Client, id: &Value) -> usize {
    answers(client).0.get(&id.to_string()).copied().unwrap_or(0)
}

/// A warm call cancelled at each phase: before its agent is up (the agent reads nothing for a
/// while), while its session opens, while the prompt streams (the agent ends the turn
/// `cancelled` and lives on), and while an agent that ignores SIGTERM is in its kill grace. The
/// cancelled call gets no answer; the next call is answered, by a fresh agent once the frozen one
/// is killed, after one kill grace (2 s here: the agent has that long to answer its cancel, and is
/// then killed outright, SIGTERM or not), not at the request timeout; the server leaves no process.
#[cfg(unix)]
#[rstest]
#[case::before_the_agent_is_up(&[("FAKE_GEMINI_ACP_START_DELAY_MS", "800")], "success text=never", "agent")]
#[case::while_the_session_opens(&[("FAKE_GEMINI_ACP_SESSION_NEW_MS", "800")], "success text=never", "session/new")]
#[case::while_the_prompt_streams(&[], "trickle count=1000 interval-ms=20", "session/prompt")]
#[case::in_the_kill_grace(&[("GEMINICLI_MCP_KILL_GRACE_MS", "2000")], "ignore-sigterm", "session/prompt")]
fn a_warm_call_cancelled_at_any_phase_gets_no_answer_and_the_next_one_does(
    #[case] env: &[(&str, &str)],
    #[case] scenario: &str,
    #[case] phase: &str,
) {
    let mut h = warm(env);
    let cancelled = send_call(&mut h, &format!("first [[fake-gemini:{scenario}]]"));
    wait_phase(&h, phase);
    if scenario == "ignore-sigterm" {
        // The agent turns SIGTERM off just after it logs the prompt (the fake logs no later
        // event of a prompt to wait on).
        std::thread::sleep(Duration::from_millis(200));
    }
    h.client
        .notify(
            "notifications/cancelled",
            Some(json!({"requestId": cancelled, "reason": "adversarial"})),
        )
        .unwrap();
    let started = Instant::now();
    let next = send_call(&mut h, "[[fake-gemini:success text=next]]");
    let answer = h
        .client
        .response(&next, deadline())
        .unwrap_or_else(|| panic!("the next call unanswered; stderr: {}", h.client.stderr()));
    assert_eq!(text(&answer["result"]), "next", "{answer}");
    // What this catches is a next call held until the agent's request timeout (120 s) or for
    // ever; the bound leaves a loaded machine room beyond the 2 s grace.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "the next call waited {:?}",
        started.elapsed()
    );
    h.client
        .listen_until(Instant::now() + Duration::from_millis(300));
    assert_eq!(
        answered(&h.client, &cancelled),
        0,
        "the cancelled call was answered"
    );
    assert_eq!(answered(&h.client, &next), 1);
    exits_leaving_nothing(&mut h);
}

/// stdin closes with an idle agent, a call about to finish and a call whose stream stalled: the
/// first is answered whole, the stalled one once the EOF grace ends, each once; the server exits
/// and no agent is left.
#[cfg(unix)]
#[test]
fn stdin_eof_with_agents_running_answers_every_call_and_leaves_no_agent() {
    let mut h = warm(&[("GEMINICLI_MCP_EOF_GRACE_MS", "1000")]);
    let first = h.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:success text=idle]]"}),
    );
    assert_eq!(text(&first), "idle", "{first}");
    let finishing = send_call(&mut h, "[[fake-gemini:success text=finished delay-ms=300]]");
    let stalled = send_call(&mut h, "[[fake-gemini:hang-after-output after=1]]");
    let end = deadline();
    while h
        .log_records()
        .iter()
        .filter(|r| r["method"] == "session/prompt")
        .count()
        < 3
    {
        assert!(Instant::now() < end, "{:?}", h.log_records());
        std::thread::sleep(Duration::from_millis(20));
    }
    h.client.close_stdin();
    let done = h
        .client
        .response(&finishing, deadline())
        .expect("the call in flight at EOF answered");
    assert_eq!(text(&done["result"]), "finished", "{done}");
    let cut = h
        .client
        .response(&stalled, deadline())
        .expect("the stalled call answered when the grace ended");
    assert_eq!(cut["result"]["isError"], json!(true), "{cut}");
    assert_eq!(
        cut["result"]["structuredContent"]["errorKind"], "cancelled",
        "the stalled call says the server stopped it: {cut}"
    );
    let status = h.client.wait_exit(deadline()).expect("the server exits");
    assert!(status.success(), "{status:?}");
    assert_eq!(answered(&h.client, &finishing), 1);
    assert_eq!(answered(&h.client, &stalled), 1);
    for pid in logged_pids(&h.log) {
        assert!(crate::server::gone(pid), "{pid} outlived the server");
    }
    assert!(h.client.violations.is_empty(), "{:?}", h.client.violations);
}

/// An agent killed by a signal mid-turn: the call fails saying how the agent ended, the prompt is
/// not sent again, and the next call is answered by a new agent.
#[cfg(unix)]
#[test]
fn a_warm_agent_that_crashes_mid_turn_fails_the_call_once_and_the_next_gets_a_new_agent() {
    let mut h = warm(&[]);
    let crashed = h.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:crash signal=9]]", "debug": true}),
    );
    assert_eq!(crashed["isError"], json!(true), "{crashed}");
    let error = crashed["structuredContent"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains("ended while running the prompt (killed by signal 9)")
            && error.contains("not re-run"),
        "the call says how the agent ended and that the prompt was not re-run: {crashed}"
    );
    let next = h.call(
        "gemini_prompt",
        json!({"prompt": "[[fake-gemini:success text=back]]", "debug": true}),
    );
    assert_eq!(text(&next), "back", "{next}");
    let prompts: Vec<Value> = h
        .log_records()
        .into_iter()
        .filter(|r| r["method"] == "session/prompt")
        .collect();
    assert_eq!(
        prompts.len(),
        2,
        "the crashed prompt was not sent again: {prompts:?}"
    );
    assert_ne!(prompts[0]["pid"], prompts[1]["pid"], "a new agent answered");
    exits_leaving_nothing(&mut h);
}
