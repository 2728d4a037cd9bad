//! Real MCP clients — Claude Code, Codex and the Gemini CLI, at the versions pinned in
//! `tests/clients/VERSIONS` — run headless and offline against the server, which runs
//! fake-gemini; each test asserts on what the client's model was shown.
//!
//! `drive.mjs` installs the client with npm when missing (into
//! `~/.cache/geminicli-mcp/clients/`), configures it as `docs/clients.md` tells users to, plays
//! its model with a mock API on loopback (`model.mjs`: call `gemini_prompt`, then follow every
//! `gemini_read_answer answer_id=… offset=…` the results show) and reports each call's result as
//! the model received it. The scenarios (`scenarios.json`) are shared with the driver. Ignored by
//! default: they need node and npm (skipped with a message without them), install packages once
//! and take seconds each.
//!
//! `clients::claude_tasks` runs Claude Code the one way it calls a tool as a task headless (the
//! 2026-07-28 tasks extension): its feature flag `tengu_glowing_lark` forced on in the flag cache
//! of `~/.claude.json` (read with telemetry off only with
//! `CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1`), `CLAUDE_AUTO_BACKGROUND_TASKS=1`, and
//! `claude -p --input-format stream-json --output-format stream-json --verbose` with its stdin
//! kept open until the task's result has had its own turn. A 6 s answer under a 3 s
//! `MCP_TOOL_TIMEOUT` then reaches the model in a task notification, while the same call made
//! plainly is cut with Claude Code's timeout error.
//!
//! `clients::claude_ask` calls `gemini_prompt` with `approval_mode: "ask"` through Claude Code, on
//! fake-gemini's `shell` scenario (`fake-scenarios/shell.toml`: the agent runs `rm -rf build`,
//! which needs a permission). Claude Code connects at 2026-07-28 without tasks, so the server
//! answers the call with a multi-round-trip `input_required` result holding the permission form;
//! Claude Code `-p` puts it to its `Elicitation` command hook (the driver's `--elicit DECISION`
//! writes one into the run's folder, which logs what it is given and accepts with that decision)
//! and retries the call with the answer. Allowed, the tool runs and the answer is `Done.`;
//! rejected, `Cleaning.Done.`; each with the approval decided by `user`. Without a hook Claude Code
//! cancels: rejected, decided by `cancelled`. Either backend: ask always runs the warm agent.
//! `clients::codex_ask` and `clients::gemini_ask` make the same call through the other two: `codex
//! exec` declines the form (rejected, decided by `declined`), and the Gemini CLI declares no
//! elicitation, so it is never asked (its model reads the rejected run's answer).
//!
//! `clients::prompts` has each client's user start the server's `review` prompt in the client's
//! own spelling (`/mcp__gemini__review …` in Claude Code, `/review --focus=…` in the Gemini CLI)
//! in a repository with an uncommitted change; the model follows the message the prompt returned
//! (`model.mjs`: the `Call TOOL with:` lines) and calls `gemini_prompt_with_context` with the diff.
//! Codex 0.169.0 has no MCP prompts: the command reaches its model as the text typed.
//!
//! `clients::setup` runs `geminicli-mcp setup` for Claude Code, Codex and the Gemini CLI in a
//! private home and asks each client's own `mcp list` (and `gemini skills list`) what it sees,
//! then runs `setup --remove`. `clients::setup::skills::<client>` runs each client after `setup`
//! (the driver's `--skills installed`) and finds the four skills' descriptions in the request to
//! its model, and none after `setup --remove` (`--skills removed`).
//!
//! `clients::plugin` puts the repository's Claude Code plugin through Claude Code (`plugin.mjs`):
//! validate, marketplace add, install, details, and its eval cases against a scripted model
//! (`plugin-model.mjs`), which passes them by following the plugin and fails them when scripted to
//! call Gemini for everything or for nothing; and the typed `/geminicli-mcp:review`, the plugin's
//! server started by its own `.mcp.json`, through to Gemini's answer.
//!
//! ```sh
//! cargo nextest run -p geminicli-mcp --run-ignored only -E 'test(/^clients::/)'
//! GEMINICLI_MCP_KEEP_CLIENT_RUNS=1 cargo nextest run …   # keep each run's folder (config, logs)
//! GEMINICLI_MCP_BACKEND=oneshot cargo nextest run …    # the same through the one-shot backend
//! ```

mod plugin;
mod prompts;
mod setup;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

/// What the driver prints: one run of one client.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    client: String,
    version: String,
    calls: Vec<Call>,
    /// The task notifications the client showed the model in later turns (Claude Code).
    notifications: Vec<Notification>,
    /// What Claude Code's `Elicitation` hook was given, one object a run of the hook (`--elicit`).
    elicitations: Vec<Value>,
    done: bool,
    elapsed_ms: u64,
    /// fake-gemini's runs, when the scenario logs them (`jobs`): one-shot processes and the
    /// prompts of warm agents.
    fake_runs: Vec<FakeRun>,
    /// The pids of fake-gemini's log still alive 5 s after the client exited (`jobs`).
    left_running: Vec<u32>,
    /// With `--skills`: which of the plugin's skills a request to the model listed.
    skills: Option<Skills>,
    /// A prompt's scenario (`review`): the message the client gave its model for the user's
    /// command.
    prompt_message: Option<PromptMessage>,
}

/// The skills `setup` installed (or installed and removed) before the run (`--skills`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Skills {
    /// The skills whose description a request to the client's model carried.
    seen: Vec<String>,
    /// The skills whose whole body a request carried (the user invoked them).
    used: Vec<String>,
    /// What `setup` printed.
    setup: String,
}

/// The message a client gave its model for an MCP prompt the user started.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptMessage {
    /// Exactly the string the model received (`None`: no request held the prompt's text).
    text: Option<String>,
    chars: usize,
    /// Estimated as the Anthropic mock counts: 4 ASCII characters a token, others one each.
    tokens: usize,
    /// How many model requests carried it.
    requests: usize,
}

/// One run of fake-gemini, from its log.
#[derive(Debug, Deserialize)]
struct FakeRun {
    pid: u32,
    prompt: Option<String>,
}

/// One MCP tool call the model made, and what it was shown as the result.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    tool: String,
    arguments: Value,
    /// Exactly the string the model received (`None`: the client gave it no result).
    seen: Option<String>,
    /// Whether the client flagged the result as an error (`None`: it shows no flag).
    error: Option<bool>,
    /// When the model made the call, in milliseconds since the run started.
    at_ms: u64,
}

/// A background task's result, as the client showed it to the model in a turn of its own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Notification {
    /// Exactly the `<task-notification>…</task-notification>` text the model received.
    seen: String,
    /// When the model was shown it, in milliseconds since the run started.
    at_ms: u64,
}

impl Call {
    fn seen(&self) -> &str {
        self.seen
            .as_deref()
            .unwrap_or_else(|| panic!("the model was shown no result for {self:?}"))
    }
}

/// This folder: the driver, its mocks, the pins and the scenarios.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A scenario of `scenarios.json`.
fn scenario(name: &str) -> Value {
    let path = here().join("scenarios.json");
    let all: Value = serde_json::from_slice(&std::fs::read(&path).expect("scenarios.json"))
        .expect("scenarios.json is JSON");
    all[name].clone()
}

/// The version `VERSIONS` pins for `client`.
fn pinned(client: &str) -> String {
    let text = std::fs::read_to_string(here().join("VERSIONS")).expect("VERSIONS");
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() == 3 && f[0] == client)
        .map(|f| f[2].to_string())
        .unwrap_or_else(|| panic!("VERSIONS pins no {client}"))
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the driver for `client` and `scenario`; `None` (after saying so) without node or npm.
/// Fails unless the model got to its end and the client exited 0.
fn drive(client: &str, scenario: &str) -> Option<Report> {
    drive_with(client, scenario, &[])
}

/// [`drive`] with more arguments for the driver (`--stream-results N`, `--tasks`, `--elicit D`).
fn drive_with(client: &str, scenario: &str, more: &[&str]) -> Option<Report> {
    if !runs("node") || !runs("npm") {
        eprintln!("node or npm not found: skipping the {client} client test");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new("node")
        .arg(here().join("drive.mjs"))
        .args(["--client", client, "--scenario", scenario])
        .args(more)
        .arg("--server")
        .arg(gemini_mcp_conformance::bins::locate("geminicli-mcp"))
        .arg("--fake")
        .arg(gemini_mcp_conformance::bins::locate("fake-gemini"))
        .arg("--work")
        .arg(dir.path())
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if std::env::var_os("GEMINICLI_MCP_KEEP_CLIENT_RUNS").is_some() {
        eprintln!("kept the run in {}", dir.keep().display());
    }
    assert!(
        out.status.success(),
        "drive.mjs failed ({}):\n{stderr}",
        out.status
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "drive.mjs printed no report ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    eprintln!(
        "{} {}: {} call(s) in {} ms",
        report.client,
        report.version,
        report.calls.len(),
        report.elapsed_ms
    );
    assert_eq!(report.client, client);
    assert_eq!(report.version, pinned(client));
    assert!(
        report.done,
        "the model did not get to its end, or {client} failed:\n{report:#?}\n{stderr}"
    );
    Some(report)
}

/// The one call of a scenario that needs no more: `gemini_prompt` with the scenario's prompt.
fn only_call<'r>(report: &'r Report, scenario: &Value) -> &'r Call {
    match report.calls.as_slice() {
        [call]
            if call.tool == "gemini_prompt" && call.arguments["prompt"] == scenario["prompt"] =>
        {
            call
        }
        calls => panic!("expected one gemini_prompt call with {scenario}, got {calls:#?}"),
    }
}

/// A short answer reaches the model whole, with little around it.
fn plain(client: &str) {
    let Some(report) = drive(client, "plain") else {
        return;
    };
    let s = scenario("plain");
    let answer = s["answer"].as_str().unwrap().to_string();
    let seen = only_call(&report, &s).seen();
    assert!(seen.contains(&answer), "{client} showed {seen:?}");
    assert!(
        seen.chars().count() <= answer.chars().count() + 400,
        "{client} showed {} characters around a {}-character answer: {seen:?}",
        seen.chars().count() - answer.chars().count(),
        answer.chars().count()
    );
}

/// A failure reaches the model short, naming its kind and reason (and the partial answer, where
/// the scenario has one), without stack frames, and flagged as an error where the client has a
/// flag.
fn error(client: &str, name: &str) {
    let Some(report) = drive(client, name) else {
        return;
    };
    let s = scenario(name);
    let call = only_call(&report, &s);
    let seen = call.seen();
    for want in [&s["kind"], &s["reason"], &s["partial"]] {
        let Some(want) = want.as_str() else { continue };
        assert!(seen.contains(want), "{client} showed no {want:?}: {seen}");
    }
    assert!(
        seen.chars().count() <= 1_500,
        "{client} showed a {}-character failure:\n{seen}",
        seen.chars().count()
    );
    assert!(
        !seen.contains("    at "),
        "{client} showed a stack frame:\n{seen}"
    );
    // Codex shows its model no error flag at all (REPORT of the research: identical to a success).
    let flag = if client == "codex" { None } else { Some(true) };
    assert_eq!(call.error, flag, "{client}'s error flag");
}

/// What the clients show instead of a result too large for them (Claude Code's file, its token
/// check, Codex's middle cut, the Gemini CLI's head-and-tail cut): a step that shows one was not
/// inline.
const NOT_INLINE: [&str; 4] = [
    "<persisted-output>",
    "Output too large",
    "saved to",
    "tokens truncated",
];

/// A 200,000-character answer reaches the model whole, part by part, each part inline: the
/// parts joined are the answer.
fn long(client: &str, name: &str) {
    let Some(report) = drive(client, name) else {
        return;
    };
    let s = scenario(name);
    let answer = s["chunk"]
        .as_str()
        .unwrap()
        .repeat(usize::try_from(s["repeat"].as_u64().unwrap()).unwrap());
    let mut read = String::new();
    for (i, call) in report.calls.iter().enumerate() {
        let (tool, field) = if i == 0 {
            ("gemini_prompt", "response")
        } else {
            ("gemini_read_answer", "text")
        };
        assert_eq!(call.tool, tool, "call {i}: {call:?}");
        // Each read starts where the parts so far end.
        if i > 0 {
            let offset = call.arguments["offset"].as_u64().unwrap();
            assert_eq!(offset, read.chars().count() as u64, "call {i}: {call:?}");
        }
        let seen = call.seen();
        if let Some(cut) = NOT_INLINE.iter().find(|m| seen.contains(*m)) {
            panic!("call {i} ({tool}) was not inline in {client} ({cut:?}):\n{seen}");
        }
        read.push_str(&part_shown(seen, field));
    }
    if read != answer {
        let at = read
            .chars()
            .zip(answer.chars())
            .take_while(|(a, b)| a == b)
            .count();
        panic!(
            "{client}: the parts read in {} calls are {} characters, the answer {}; they differ from character {at}",
            report.calls.len(),
            read.chars().count(),
            answer.chars().count()
        );
    }
}

/// The part of the answer one result showed: `field` of the `structuredContent` JSON where the
/// client shows that (on the result's last line: Claude Code puts a resource link's line
/// before it, Codex its wall time), else the text block with the server's notes and the
/// client's wrapping (the Gemini CLI's `<untrusted_context>` tags) taken off.
fn part_shown(seen: &str, field: &str) -> String {
    let last_line = seen.rsplit('\n').next().unwrap_or(seen);
    if let Ok(Value::Object(v)) = serde_json::from_str(last_line) {
        if let Some(part) = v.get(field).and_then(Value::as_str) {
            return part.to_string();
        }
    }
    let text = seen
        .strip_prefix("<untrusted_context>\n")
        .and_then(|t| t.split_once("\n</untrusted_context>"))
        .map_or(seen, |(inner, _)| inner);
    let text = if text.starts_with("[This is characters ") || text.starts_with("[Characters ") {
        text.split_once("]\n\n").map_or(text, |(_, rest)| rest)
    } else {
        text
    };
    text.rfind("\n\n[Continued: ")
        .map_or(text, |end| &text[..end])
        .to_string()
}

/// The parser of the long tests finds the part in each client's shape of a result.
#[test]
fn part_shown_reads_each_client_shape() {
    let json = r#"{"readOn":"[This is …]","response":"a\nb","continued":"[Continued: …]"}"#;
    // Claude Code: the JSON alone, or after a resource link's line; Codex: after its wall time.
    assert_eq!(part_shown(json, "response"), "a\nb");
    let linked =
        format!("[Resource link: full Gemini answer] geminicli-mcp://answers/1 (…)\n{json}");
    assert_eq!(part_shown(&linked, "response"), "a\nb");
    let timed = format!("Wall time: 0.0119 seconds\nOutput:\n{json}");
    assert_eq!(part_shown(&timed, "response"), "a\nb");
    // The Gemini CLI: the text block in its tags, the server's notes around the part.
    let text = "<untrusted_context>\n[This is characters 0–4 of 9: … offset=4.]\n\na\nb\n\n\n[Continued: … (5 more characters).]\n</untrusted_context>\nResource Link: full Gemini answer at geminicli-mcp://answers/1";
    assert_eq!(part_shown(text, "response"), "a\nb\n");
    let end = "<untrusted_context>\n[Characters 4–9 of 9: the end of the answer.]\n\ncdefg\n</untrusted_context>";
    assert_eq!(part_shown(end, "text"), "cdefg");
}

/// The `slow` scenario's answer, its fake-gemini delay and Claude Code's tool timeout (ms).
fn slow() -> (Value, String, u64, u64) {
    let s = scenario("slow");
    let answer = s["answer"].as_str().unwrap().to_string();
    let delay = s["delayMs"].as_u64().unwrap();
    let timeout = s["toolTimeoutMs"].as_u64().unwrap();
    let prompt = s["prompt"].as_str().unwrap();
    assert!(
        prompt.contains(&format!("delay-ms={delay}")) && prompt.contains(&answer),
        "the slow scenario's prompt does not match its fields: {s}"
    );
    assert!(
        delay >= 2 * timeout,
        "the slow scenario's run must outlast its tool timeout: {s}"
    );
    (s, answer, delay, timeout)
}

/// With the three switches Claude Code 2.1.328 needs for tasks headless (its feature flag from
/// the local flag cache, `CLAUDE_AUTO_BACKGROUND_TASKS=1`, stream-json input kept open), a call
/// longer than `MCP_TOOL_TIMEOUT` runs as a task: the model is shown Claude Code's
/// background-task placeholder at once, and the answer later, in a task notification of a turn
/// of its own, after the tool timeout would have cut the call.
fn task_outlives_tool_timeout() {
    // Two turns: the call's (it ends on the placeholder), then the task notification's.
    let more = ["--tasks", "--stream-results", "2", "--timeout-ms", "60000"];
    let Some(report) = drive_with("claude", "slow", &more) else {
        return;
    };
    let (s, answer, delay, timeout) = slow();
    let call = only_call(&report, &s);
    let seen = call.seen();
    for want in ["started server-side task", "moved to the background"] {
        assert!(
            seen.contains(want),
            "no background-task placeholder ({want:?}): {seen}"
        );
    }
    assert!(
        !seen.contains(&answer),
        "the answer came as a plain result: {seen}"
    );
    assert!(!seen.contains("timed out"), "the call timed out: {seen}");
    assert_eq!(call.error, Some(false), "the placeholder's error flag");
    let note = match report.notifications.as_slice() {
        [note] => note,
        notes => panic!("expected one task notification, got {notes:#?}"),
    };
    assert!(
        note.seen.contains("<status>completed</status>") && note.seen.contains(&answer),
        "the notification shows no completed task with the answer: {}",
        note.seen
    );
    let waited = note.at_ms - call.at_ms;
    assert!(
        waited >= delay && waited > timeout,
        "the answer reached the model {waited} ms after the call ({delay} ms run, {timeout} ms tool timeout)"
    );
}

/// The same call without the switches, a plain call under the same `MCP_TOOL_TIMEOUT`: Claude
/// Code cuts it and shows the model its timeout error, never the answer.
fn plain_call_cut_at_tool_timeout() {
    let Some(report) = drive("claude", "slow") else {
        return;
    };
    let (s, answer, _, timeout) = slow();
    let call = only_call(&report, &s);
    let seen = call.seen();
    let want = format!("timed out after {}s", timeout / 1000);
    assert!(seen.contains(&want), "no timeout ({want:?}): {seen}");
    assert!(!seen.contains(&answer), "the answer arrived: {seen}");
    assert_eq!(call.error, Some(true), "the timeout's error flag");
    assert!(
        report.notifications.is_empty(),
        "{:#?}",
        report.notifications
    );
}

/// Claude Code's tasks, against its tool timeout: `clients::claude_tasks::<case>`.
mod claude_tasks {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn task_outlives_tool_timeout() {
        super::task_outlives_tool_timeout();
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn plain_call_cut_at_tool_timeout() {
        super::plain_call_cut_at_tool_timeout();
    }
}

/// The `ask` scenario's call made through `client`, with more arguments for the driver
/// (`--elicit DECISION`: Claude Code's `Elicitation` hook answers with that decision). Returns
/// what the model saw of the call, and what the hook was given.
fn ask_call(client: &str, more: &[&str]) -> Option<(String, Vec<Value>)> {
    let report = drive_with(client, "ask", more)?;
    let s = scenario("ask");
    let call = only_call(&report, &s);
    assert_eq!(call.arguments["approval_mode"], "ask", "{call:?}");
    let seen = call.seen();
    let flag = if client == "codex" { None } else { Some(false) };
    assert_eq!(call.error, flag, "{client}'s error flag: {seen}");
    Some((seen.to_string(), report.elicitations))
}

/// The structured result a client shows its model as JSON on the result's last line (Claude
/// Code alone, Codex after its wall time).
fn structured(seen: &str) -> Value {
    let last_line = seen.rsplit('\n').next().unwrap_or(seen);
    serde_json::from_str(last_line)
        .unwrap_or_else(|e| panic!("no structured result ({e}) in what the model saw: {seen}"))
}

/// [`ask_call`] through Claude Code; `decision`: its hook's answer (`None`: no hook).
fn ask_through_claude(decision: Option<&str>) -> Option<(Value, Vec<Value>)> {
    let more: Vec<&str> = decision.map_or(vec![], |d| vec!["--elicit", d]);
    let (seen, elicitations) = ask_call("claude", &more)?;
    Some((structured(&seen), elicitations))
}

/// The one approval of an `ask` result and the answer: `(permission, decidedBy, response)`.
fn only_approval(result: &Value) -> (&str, &str, &str) {
    let approvals = result["approvals"].as_array();
    let approval = match approvals.map(Vec::as_slice) {
        Some([a]) => a,
        _ => panic!("expected one approval: {result}"),
    };
    let s = scenario("ask");
    assert_eq!(approval["title"], s["command"], "{approval}");
    assert_eq!(approval["kind"], "execute", "{approval}");
    (
        approval["permission"].as_str().unwrap_or_default(),
        approval["decidedBy"].as_str().unwrap_or_default(),
        result["response"].as_str().unwrap_or_default(),
    )
}

/// The hook ran once, on the server's permission form: the command in its message, a form
/// whose one required field is the decision.
fn asked_once(elicitations: &[Value]) {
    let given = match elicitations {
        [given] => given,
        all => panic!("expected the hook to run once, got {all:#?}"),
    };
    let command = scenario("ask")["command"].as_str().unwrap().to_string();
    assert_eq!(given["hook_event_name"], "Elicitation", "{given}");
    assert_eq!(given["mcp_server_name"], "gemini", "{given}");
    assert_eq!(given["mode"], "form", "{given}");
    let message = given["message"].as_str().unwrap_or_default();
    assert!(message.contains(&command), "the form's message: {given}");
    assert_eq!(
        given["requested_schema"]["required"],
        serde_json::json!(["decision"]),
        "{given}"
    );
}

/// `approval_mode: "ask"` through Claude Code: the permission the Gemini agent asks for reaches
/// the Elicitation hook as a form, and the hook's `decision` decides (allowed: the shell tool ran,
/// the answer is the last turn's; rejected: the tool failed, the answer is both turns').
fn ask_decided_by_hook(decision: &str, permission: &str, answer_field: &str) {
    let Some((result, elicitations)) = ask_through_claude(Some(decision)) else {
        return;
    };
    asked_once(&elicitations);
    let (got, by, answer) = only_approval(&result);
    assert_eq!((got, by), (permission, "user"), "{result}");
    assert_eq!(answer, scenario("ask")[answer_field], "{result}");
}

/// Without a hook Claude Code `-p` cancels every elicitation: the tool is rejected, decided by
/// the cancel.
fn ask_cancelled_without_hook() {
    let Some((result, elicitations)) = ask_through_claude(None) else {
        return;
    };
    assert!(elicitations.is_empty(), "{elicitations:#?}");
    let (got, by, answer) = only_approval(&result);
    assert_eq!((got, by), ("rejected", "cancelled"), "{result}");
    assert_eq!(answer, scenario("ask")["rejectedAnswer"], "{result}");
}

/// `codex exec` declines every elicitation: the tool is rejected, decided by the decline.
fn ask_declined_by_codex() {
    let Some((seen, _)) = ask_call("codex", &[]) else {
        return;
    };
    let result = structured(&seen);
    let (got, by, answer) = only_approval(&result);
    assert_eq!((got, by), ("rejected", "declined"), "{result}");
    assert_eq!(answer, scenario("ask")["rejectedAnswer"], "{result}");
}

/// The Gemini CLI declares no elicitation: the server cannot ask, the tool is rejected, and the
/// model reads the rejected run's answer (the CLI shows it the text, not the approvals).
fn ask_not_asked_by_gemini() {
    let Some((seen, _)) = ask_call("gemini", &[]) else {
        return;
    };
    let s = scenario("ask");
    assert_eq!(part_shown(&seen, "response"), s["rejectedAnswer"], "{seen}");
}

/// Claude Code's elicitation, through `approval_mode: "ask"`: `clients::claude_ask::<case>`.
mod claude_ask {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn allowed_by_hook() {
        super::ask_decided_by_hook("allow_once", "approved", "allowedAnswer");
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn rejected_by_hook() {
        super::ask_decided_by_hook("reject", "rejected", "rejectedAnswer");
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn cancelled_without_hook() {
        super::ask_cancelled_without_hook();
    }
}

/// The other clients with `approval_mode: "ask"`: `clients::{codex,gemini}_ask::<case>`.
mod codex_ask {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn declined() {
        super::ask_declined_by_codex();
    }
}

mod gemini_ask {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn not_asked() {
        super::ask_not_asked_by_gemini();
    }
}

/// The `jobs` scenario: under a tool timeout the run outlasts twice over, the model starts the
/// prompt as a job (`gemini_start`, answered at once), waits on it (`gemini_wait`, each wait
/// shorter than the timeout) and is shown the answer once the job has finished; no call is cut.
fn job_outlives_tool_timeout(client: &str) {
    let Some(report) = drive(client, "jobs") else {
        return;
    };
    let s = scenario("jobs");
    let answer = s["answer"].as_str().unwrap();
    let (delay, timeout) = (
        s["delayMs"].as_u64().unwrap(),
        s["toolTimeoutMs"].as_u64().unwrap(),
    );
    assert!(
        delay >= 2 * timeout && s["waitS"].as_u64().unwrap() * 1000 < timeout,
        "the jobs scenario must outlast its tool timeout, and wait less than it: {s}"
    );
    let waits = job_opening(&report, &s);
    for call in &report.calls {
        assert!(
            !call.seen().contains("timed out"),
            "a call was cut: {call:?}"
        );
        assert_ne!(call.error, Some(true), "{call:?}");
    }
    assert!(
        !waits[0].seen().contains(answer),
        "the first wait already had the answer: {}",
        waits[0].seen()
    );
    let last = waits.last().unwrap();
    assert!(
        last.seen().contains(answer),
        "the answer never reached the model: {}",
        last.seen()
    );
    assert!(
        report.elapsed_ms >= delay,
        "the run took {} ms, its job {delay} ms",
        report.elapsed_ms
    );
    let runs_of = |prompt: &Value| {
        let prompt = prompt.as_str().unwrap();
        report
            .fake_runs
            .iter()
            .filter(|r| r.prompt.as_deref().is_some_and(|p| p.contains(prompt)))
            .count()
    };
    // The cancelled job's process may be killed before it logs its start (the cancel follows the
    // start at once, and a loaded machine can be slow to run a new process): at most one run.
    assert!(
        runs_of(&s["prompt"]) == 1 && runs_of(&s["cancelPrompt"]) <= 1,
        "expected one run of the attached job and at most one of the cancelled: {:?}",
        report.fake_runs
    );
    let left: Vec<&FakeRun> = report
        .fake_runs
        .iter()
        .filter(|r| report.left_running.contains(&r.pid))
        .collect();
    assert!(
        report.left_running.is_empty(),
        "processes ran on after the client had gone: {:?}, runs {left:?}",
        report.left_running
    );
}

/// Checks the jobs scenario's opening calls — the start, the same start again attaching, a
/// second job started and cancelled, the listing — and returns the waits that follow.
fn job_opening<'r>(report: &'r Report, s: &Value) -> &'r [Call] {
    let answer = s["answer"].as_str().unwrap();
    let tools: Vec<&str> = report.calls.iter().map(|c| c.tool.as_str()).collect();
    let opening = [
        "gemini_start",
        "gemini_start",
        "gemini_start",
        "gemini_cancel",
        "gemini_jobs",
    ];
    assert_eq!(
        tools[..opening.len().min(tools.len())],
        opening,
        "{tools:?}"
    );
    let (start, again, other, cancel) = (
        &report.calls[0],
        &report.calls[1],
        &report.calls[2],
        &report.calls[3],
    );
    assert_eq!(start.arguments["arguments"]["prompt"], s["prompt"]);
    assert_eq!(start.arguments["idempotency_key"], s["key"]);
    let id = job_id(start.seen()).expect("gemini_start showed no job id");
    assert!(
        !start.seen().contains(answer),
        "gemini_start did not answer at once with the job: {}",
        start.seen()
    );
    assert_eq!(again.arguments, start.arguments);
    assert!(
        job_id(again.seen()) == Some(id)
            && (again.seen().contains("Attached") || again.seen().contains(r#""attached":true"#)),
        "the same start under the same key did not attach to job {id}: {}",
        again.seen()
    );
    let second = job_id(other.seen()).expect("the second start showed no job id");
    assert_ne!(second, id);
    assert!(
        cancel.seen().contains(second) && cancel.seen().contains("cancelled"),
        "the second job was not cancelled: {}",
        cancel.seen()
    );
    let waits = &report.calls[opening.len()..];
    assert!(
        waits.len() >= 2 && waits.iter().all(|c| c.tool == "gemini_wait"),
        "expected the job waited on more than once: {tools:?}"
    );
    waits
}

/// The first job id (`gemini-` and 32 hex digits) in `text`.
fn job_id(text: &str) -> Option<&str> {
    let at = text.find("gemini-")?;
    let id = text.get(at..at + 39)?;
    id[7..].bytes().all(|b| b.is_ascii_hexdigit()).then_some(id)
}

/// One ignored test per scenario for each client: `clients::<client>::<scenario>`.
macro_rules! client_tests {
    ($($client:ident),*) => {$(
        mod $client {
            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn plain() {
                super::plain(stringify!($client));
            }

            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn error() {
                super::error(stringify!($client), "error");
            }

            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn loop_detected() {
                super::error(stringify!($client), "loop");
            }

            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn long() {
                super::long(stringify!($client), "long");
            }

            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn long_cjk() {
                super::long(stringify!($client), "long-cjk");
            }

            #[test]
            #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
            fn job_outlives_tool_timeout() {
                super::job_outlives_tool_timeout(stringify!($client));
            }
        }
    )*};
}

client_tests!(claude, codex, gemini);
