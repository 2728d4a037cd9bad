//! One `session/prompt`: the scenario's model behaviour turned into the `session/update` stream the
//! real agent sends (message and thought chunks, tool calls with their permission round trips),
//! the result with its stop reason and `_meta.quota`, or the JSON-RPC error an API failure becomes.
//! Also the history replay of `session/load`.

use std::path::Path;

use agent_client_protocol_schema::v1::StopReason;
use serde_json::{json, Value};

use super::agent::{freeze, AcpSession, Agent, Pending};
use super::commands;
use super::wire;
use crate::answer::{over_context_window, resolve_model};
use crate::scenario::{
    self, Descendant, FailureKind, Hang, Scenario, Then, ToolCall, Turn, UnknownModel,
};
use crate::sys::env_ms;
use crate::{clock, log, proc, session, texts};

/// Shell commands the CLI runs without asking (its `isSafeToCallWithExec` list, from source).
const SAFE_COMMANDS: &[&str] = &[
    "__read", "__write", "cat", "cd", "cut", "echo", "expr", "false", "grep", "head", "id", "ls",
    "nl", "paste", "pwd", "rev", "seq", "stat", "tail", "tr", "true", "uname", "uniq", "wc",
    "which", "whoami", "numfmt", "tac",
];

/// The outcomes a permission answer may select (`ToolConfirmationOutcome`).
const OUTCOMES: &[&str] = &[
    "proceed_once",
    "proceed_always",
    "proceed_always_and_save",
    "proceed_always_server",
    "proceed_always_tool",
    "modify_with_editor",
    "cancel",
];

/// Token totals and per-model usage of one prompt, in first-use order (a JS `Map`).
#[derive(Default)]
struct Usage {
    input: u64,
    output: u64,
    models: Vec<(String, u64, u64)>,
}

impl Usage {
    fn add(&mut self, model: &str, input: u64, output: u64) {
        self.input += input;
        self.output += output;
        if input == 0 && output == 0 {
            return;
        }
        match self.models.iter_mut().find(|m| m.0 == model) {
            Some(m) => {
                m.1 += input;
                m.2 += output;
            }
            None => self.models.push((model.to_string(), input, output)),
        }
    }

    fn result(&self, stop: StopReason) -> Value {
        let usage: Vec<Value> = self
            .models
            .iter()
            .map(|(m, i, o)| json!({"model": m, "token_count": {"input_tokens": i, "output_tokens": o}}))
            .collect();
        wire::prompt_answer(
            stop,
            json!({"token_count": {"input_tokens": self.input, "output_tokens": self.output},
                "model_usage": usage}),
        )
    }
}

fn cancelled() -> Result<Value, Value> {
    Ok(wire::cancelled_answer())
}

/// The tool's ACP kind (`toAcpToolKind` of the tool's `Kind`).
fn kind(name: &str) -> &'static str {
    match name {
        "list_directory" | "glob" | "search_file_content" | "grep_search" | "google_web_search" => {
            "search"
        }
        "read_file" | "read_many_files" => "read",
        "run_shell_command" => "execute",
        "write_file" | "replace" | "edit" => "edit",
        "web_fetch" => "fetch",
        _ => "other",
    }
}

fn arg<'a>(call: &'a ToolCall, key: &str) -> Option<&'a str> {
    call.args.get(key).and_then(Value::as_str)
}

/// The tool's display name, as policy messages name it (`WriteFile` observed).
fn display_name(name: &str) -> &str {
    match name {
        "write_file" => "WriteFile",
        "replace" | "edit" => "Edit",
        "run_shell_command" => "Shell",
        "read_file" => "ReadFile",
        "list_directory" => "ReadFolder",
        "glob" => "FindFiles",
        "search_file_content" | "grep_search" => "SearchText",
        "web_fetch" => "WebFetch",
        "google_web_search" => "GoogleSearch",
        other => other,
    }
}

/// The session's model as a prompt resolves it: (router, resolved model, known). Plan mode under
/// `auto` skips the classifier and uses the pro model (observed in ACP).
fn session_model(s: &AcpSession) -> (Option<&'static str>, String, bool) {
    let requested = s.model.lock().expect("lock").clone();
    let plan = s.mode.lock().expect("lock").as_str() == "plan";
    if plan && requested == "auto" {
        (None, "gemini-3.1-pro-preview-customtools".to_string(), true)
    } else {
        resolve_model(&requested)
    }
}

/// Whether a prompt of this session goes through the classifier router.
fn routes(s: &AcpSession) -> bool {
    session_model(s).0.is_some()
}

/// The router's complaint, once per routed prompt.
fn router_notice(agent: &Agent) {
    agent.stderr_line(&format!("Could not find promptId in context for classifier-router. This is unexpected. Using a fallback ID: classifier-router-fallback-{}-{}", clock::now_ms(), &crate::ids::uuid_v4().replace('-', "")[..13]));
}

/// A thought as the chat records it: the bold first line is the subject, the rest the description.
fn thought_record(t: &str) -> Value {
    let (subject, description) = match t.strip_prefix("**").and_then(|r| r.split_once("**")) {
        Some((subject, rest)) => (subject.trim(), rest.trim()),
        None => ("", t.trim()),
    };
    json!({"subject": subject, "description": description})
}

/// Whether every command of a shell line starts with a command the CLI deems safe.
fn shell_is_safe(command: &str) -> bool {
    command
        .split(['&', '|', ';', '\n'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .all(|c| SAFE_COMMANDS.contains(&c.split_whitespace().next().unwrap_or_default()))
}

fn text_content(t: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": t}})
}

/// The prompt's text as the model sees it: text blocks, and the text of embedded resources.
fn prompt_text(blocks: &[Value]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => s.push_str(b["text"].as_str().unwrap_or_default()),
            Some("resource") => {
                if let Some(t) = b["resource"]["text"].as_str() {
                    s.push('\n');
                    s.push_str(t);
                }
            }
            _ => {}
        }
    }
    s
}

/// Runs one prompt; `Ok` is the result, `Err` a JSON-RPC error object.
pub(super) fn run(
    agent: &Agent,
    s: &AcpSession,
    id: &Value,
    params: &Value,
    p: &Pending,
) -> Result<Value, Value> {
    let Some(blocks) = params["prompt"].as_array() else {
        return Err(wire::invalid_params("prompt", "Required"));
    };
    if blocks.is_empty() {
        // The schema allows it; the router still runs, then building the request's parts fails
        // (observed on 0.61.0).
        if routes(s) {
            router_notice(agent);
        }
        return Err(wire::error(
            500,
            "partOrString cannot be an empty array",
            None,
        ));
    }
    let text = prompt_text(blocks);
    // A command runs before the model (and any marker) is looked at: the model gets nothing.
    if let Some(result) = commands::run(agent, s, blocks, p, |command| {
        log::record(&json!({"event": "acp-request", "pid": std::process::id(),
            "method": "session/prompt", "id": id, "sessionId": s.id, "prompt": text,
            "blocks": blocks, "scenario": null, "params": {}, "command": command}));
    }) {
        return result;
    }
    let marked = scenario::find_marker(&text);
    let from_marker = marked.is_some();
    let (name, sc, marker_params) = match marked {
        Some(Ok(m)) => match crate::invocation::resolve(&m.name, &m.params) {
            Ok((n, sc)) => (Some(n), sc, m.params),
            Err(e) => agent.fake_error(&e),
        },
        Some(Err(e)) => agent.fake_error(&e.to_string()),
        None => (
            agent.scenario_name.clone(),
            agent.scenario.clone(),
            Vec::new(),
        ),
    };
    let mut logged = serde_json::Map::new();
    for (k, v) in &marker_params {
        logged.insert(k.clone(), json!(v));
    }
    // The blocks as received (an image's data by its length), so a client's block types show.
    let shapes: Vec<Value> = blocks
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("image") | Some("audio") => json!({"type": b["type"], "mimeType": b["mimeType"],
                "dataChars": b["data"].as_str().map_or(0, str::len)}),
            _ => b.clone(),
        })
        .collect();
    log::record(&json!({"event": "acp-request", "pid": std::process::id(),
        "method": "session/prompt", "id": id, "sessionId": s.id,
        "prompt": text, "blocks": shapes, "scenario": name, "params": logged}));
    // `expect` self-checks: argv and env of the agent, `cwd` against the session's cwd, and
    // `stdin`/`stdin-contains` against the prompt's text (ACP has no stdin prompt).
    let check = crate::invocation::Ctx {
        argv: agent.argv.clone(),
        version: agent.version.clone(),
        scenario_name: name.clone(),
        scenario: sc.clone(),
        params: marker_params.clone(),
        stdin: text.as_bytes().to_vec(),
        prompt: text.clone(),
        start: std::time::Instant::now(),
    };
    if let Err(e) = crate::invocation::check_expect(&check, &s.cwd) {
        agent.fake_error(&format!("expectation failed: {e}"));
    }
    // A marker's start-up latency (`slow-start`) delays this answer: the process has long
    // started (FAKE_GEMINI_SCENARIO's delay was spent before serving).
    if from_marker && p.sleep(sc.environment.startup_delay_ms) {
        return cancelled();
    }
    let mut history = vec![json!({"type": "user", "content": [{"text": text}]})];
    // `failing-model=` is this prompt's (the agent outlives many prompts, each with its marker).
    let failing_model = marker_params
        .iter()
        .find(|(k, _)| k == "failing-model")
        .map(|(_, v)| v.as_str());
    let result = model_run(agent, s, &sc, &text, p, &mut history, failing_model);
    if result.is_ok() {
        record(s, &history);
    }
    result
}

/// With a file `session/new` began (FAKE_GEMINI_SESSION_LOSS=1), appends the user message to it
/// as the prompt is sent; false when there is no such file (the whole exchange is recorded at
/// the end).
fn record_sent(s: &AcpSession, user: &Value) -> bool {
    let Some(path) = s.file.lock().expect("lock").clone() else {
        return false;
    };
    let Ok(store) = session::Store::open(&session::state_dir(), &s.cwd) else {
        return false;
    };
    let _l = store.lock();
    // Appended like the CLI's appendFileSync (a file deleted meanwhile comes back headless).
    store
        .append_messages(&path, std::slice::from_ref(user), clock::now_ms())
        .is_ok()
}

/// Appends the exchange (what [`record_sent`] has not recorded yet) to the session store so
/// `session/load` can replay it.
fn record(s: &AcpSession, history: &[Value]) {
    if history.is_empty() {
        return;
    }
    // A store that cannot be opened only costs the replay; the answer was already given.
    if let Ok(store) = session::Store::open(&session::state_dir(), &s.cwd) {
        let _l = store.lock();
        let begun = s.file.lock().expect("lock").clone();
        let _ = match begun {
            // Appended like the CLI's appendFileSync: a file deleted meanwhile comes back
            // without its header, and the next start's clean-up deletes it.
            Some(path) => store.append_messages(&path, history, clock::now_ms()),
            None => store.record(&s.id, history, clock::now_ms()),
        };
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "the real agent's turn in its order (router, stream, tool calls, failures), as observed"
)]
fn model_run(
    agent: &Agent,
    s: &AcpSession,
    sc: &Scenario,
    text: &str,
    p: &Pending,
    history: &mut Vec<Value>,
    failing_model: Option<&str>,
) -> Result<Value, Value> {
    let pr = &sc.process;
    if pr.stdout.is_some() || pr.stderr.is_some() || pr.exit_code.is_some() {
        // Raw mode: exactly these bytes, protocol or not, then the exit.
        agent.flush_stderr();
        if let Some(e) = &pr.stderr {
            crate::sys::err(e.as_bytes());
        }
        if let Some(o) = &pr.stdout {
            crate::sys::out(o.as_bytes());
        }
        crate::sys::exit_now(pr.exit_code.unwrap_or(0));
    }
    super::faults::before_answer(agent, sc);
    if pr.hang == Some(Hang::BeforeOutput) {
        freeze();
    }
    let mut usage = Usage::default();
    let limit = sc
        .environment
        .context_window_tokens
        .or_else(|| env_ms("FAKE_GEMINI_CONTEXT_TOKENS"))
        .unwrap_or(1_048_576);
    if over_context_window(text, limit) {
        // ContextWindowWillOverflow: nothing is sent.
        return Ok(usage.result(StopReason::MaxTokens));
    }
    let requested = s.model.lock().expect("lock").clone();
    let (router, resolved, known) = session_model(s);
    // Once per routed prompt (observed: two prompts, two lines).
    if router.is_some() {
        router_notice(agent);
    }
    // The CLI records the user message once the router has answered, before the main call
    // (observed on 0.61.0 over ACP); the answer follows at the end of the turn.
    if record_sent(s, &history[0]) {
        history.remove(0);
    }
    if p.sleep(sc.model.delay_ms)
        || !crate::sys::wait_for_file(sc.model.until_file.as_deref(), |ms| !p.sleep(ms))
    {
        return cancelled();
    }
    let main = sc.model.version.clone().unwrap_or(resolved);
    // The API failure hits only the model `failing-model=` names (the session's model, as
    // `session/set_model` left it), so a client's fallback to another model is answered.
    let api_failure = sc
        .model
        .failure
        .as_ref()
        .filter(|_| failing_model.is_none_or(|m| m == requested));
    // `after-turns`: the responses before it are streamed and their tools run, then the next
    // API call of the turn fails (the prompt's error, as when the quota runs out mid-turn).
    let after = api_failure.map_or(0, |f| f.after_turns.unwrap_or(0));
    if let Some(f) = api_failure.filter(|_| after == 0) {
        return failure(agent, f, p, &usage, router.is_some(), &requested);
    }
    if !known
        && api_failure.is_none()
        && sc.model.version.is_none()
        && sc.model.unknown_model == UnknownModel::NotFound
    {
        return Err(api_error(404, None, &requested));
    }
    if super::faults::answer(agent, &s.id, sc) {
        return Ok(usage.result(StopReason::EndTurn));
    }

    let mut turns: Vec<Turn> = if sc.model.turns.is_empty() {
        vec![Turn {
            chunks: vec!["Hello".into(), " there! How can I help?".into()],
            ..Turn::default()
        }]
    } else {
        sc.model.turns.clone()
    };
    if !sc.model.replies.is_empty() {
        if let Ok(store) = session::Store::open(&session::state_dir(), &s.cwd) {
            let _l = store.lock();
            let n = store.next_reply_index() as usize;
            let last = turns.last_mut().expect("one turn");
            last.text = Some(sc.model.replies[n % sc.model.replies.len()].clone());
            last.chunks.clear();
        }
    }
    // The turn the model keeps repeating, when it does.
    let mut repeated = None;
    if sc.model.loop_detected {
        // The model repeats its tool call: the CLI's loop detection stops the 5th response.
        if let Some(t) = turns
            .iter()
            .rev()
            .find(|t| !t.tool_calls.is_empty())
            .cloned()
        {
            let calls: usize = turns.iter().map(|t| t.tool_calls.len()).sum();
            turns.retain(|t| !t.tool_calls.is_empty());
            for _ in calls..4 {
                turns.push(t.clone());
            }
            repeated = Some(t);
        }
    }
    let max_turns = sc.environment.max_session_turns;
    let mut written = 0u32;
    for (i, turn) in turns.iter().enumerate() {
        if let Some(f) = api_failure.filter(|_| after > 0 && i as u32 >= after) {
            return failure(agent, f, p, &usage, false, &requested);
        }
        if max_turns.is_some_and(|m| i as u32 + 1 > m) {
            return Ok(usage.result(StopReason::MaxTurnRequests));
        }
        if p.is_aborted() {
            return cancelled();
        }
        // The first response reports the routed model; later ones the configured id (observed).
        let model = if i == 0 {
            main.clone()
        } else {
            requested.clone()
        };
        if let Some(t) = &turn.thought {
            // The CLI splits a thought into its bold subject and the rest, and sends both
            // (observed on 0.61: "Planning." arrives as "****\nPlanning.").
            let r = thought_record(t);
            let text = format!(
                "**{}**\n{}",
                r["subject"].as_str().unwrap_or_default(),
                r["description"].as_str().unwrap_or_default()
            );
            agent.update(&s.id, json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}));
        }
        let chunks: Vec<String> = if turn.chunks.is_empty() {
            turn.text
                .iter()
                .filter(|t| !t.is_empty())
                .cloned()
                .collect()
        } else {
            turn.chunks.clone()
        };
        for (k, c) in chunks.iter().enumerate() {
            if k > 0 && p.sleep(sc.model.chunk_interval_ms) {
                return cancelled();
            }
            if p.is_aborted() {
                return cancelled();
            }
            let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": c}});
            if written == 0 && sc.process.hang == Some(Hang::AfterOutput) {
                agent.send_then_freeze(&super::agent::update_message(&s.id, &chunk));
            }
            agent.update(&s.id, chunk);
            written += 1;
            if let Some(r) = after_chunk(agent, sc, written, p) {
                return r;
            }
        }
        usage.add(&model, sc.model.usage.prompt, sc.model.usage.candidates);
        let mut calls = Vec::new();
        let ms = clock::call_stamp_ms();
        for (n, call) in turn.tool_calls.iter().enumerate() {
            calls.push(tool(agent, s, call, (ms, n), p));
        }
        let thoughts: Vec<Value> = turn.thought.iter().map(|t| thought_record(t)).collect();
        let mut msg = json!({"type": "gemini", "content": chunks.concat(), "thoughts": thoughts, "model": model});
        if !calls.is_empty() {
            msg["toolCalls"] = json!(calls);
        }
        history.push(msg);
        if !calls.is_empty() {
            // The tool results go back to the model as the user's function responses, and the
            // chat records them so (replayed as `[Function Response: <name>]`).
            let parts: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"functionResponse": {"id": c["id"], "name": c["name"],
                    "response": {"output": c["resultDisplay"]}}})
                })
                .collect();
            history.push(json!({"type": "user", "content": parts}));
        }
    }
    if let Some(f) = api_failure.filter(|_| after > 0) {
        return failure(agent, f, p, &usage, false, &requested);
    }
    if sc.model.loop_detected {
        // The 5th response's words reach the client before its repeated call is suppressed;
        // the model, nudged ("Potential loop detected …"), says them once more with the same
        // call, and the turn ends (observed on 0.61).
        let words: Vec<&String> = repeated
            .iter()
            .flat_map(|t| {
                if t.chunks.is_empty() {
                    t.text.iter().collect::<Vec<_>>()
                } else {
                    t.chunks.iter().collect()
                }
            })
            .filter(|c| !c.is_empty())
            .collect();
        for c in words.iter().chain(&words) {
            agent.update(&s.id, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": c}}));
        }
        return Ok(usage.result(StopReason::MaxTurnRequests));
    }
    if max_turns.is_some_and(|m| turns.len() as u32 > m) {
        return Ok(usage.result(StopReason::MaxTurnRequests));
    }
    if p.is_aborted() {
        return cancelled();
    }
    Ok(usage.result(StopReason::EndTurn))
}

/// Process faults and the scripted cancel after an answer chunk.
fn after_chunk(
    agent: &Agent,
    sc: &Scenario,
    written: u32,
    p: &Pending,
) -> Option<Result<Value, Value>> {
    let pr = &sc.process;
    if written == 1 {
        if let Some(sig) = pr.crash_signal {
            proc::die_by_signal(sig);
        }
        if let Some(d) = pr.descendant {
            let hold = pr.descendant_hold_ms.unwrap_or(600_000);
            if let Err(e) = proc::spawn_holder(hold, d == Descendant::SetsidGrandchild) {
                agent.fake_error(&format!("cannot spawn the descendant: {e}"));
            }
            if pr.then == Then::Hang {
                freeze();
            }
        }
    }
    if pr.hang_after_chunks == Some(written) {
        // A stalled API stream: the agent stays responsive and a cancel aborts the request.
        while !p.sleep(3_600_000) {}
        return Some(cancelled());
    }
    if sc.environment.cancel_after_chunks == Some(written) {
        return Some(cancelled());
    }
    None
}

/// The API error body the CLI passes on as the JSON-RPC message (observed for 400; a 404 goes as
/// code 500 with its text).
fn api_error(status: u16, message: Option<&str>, model: &str) -> Value {
    // The same defaults the headless run prints (answer.rs).
    let (state, default_msg) = match status {
        400 => ("INVALID_ARGUMENT", "Invalid argument provided.".to_string()),
        401 => ("UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.".into()),
        403 => ("PERMISSION_DENIED", "The caller does not have permission".into()),
        404 => ("NOT_FOUND", format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.")),
        503 => ("UNAVAILABLE", "The model is overloaded. Please try again later.".into()),
        _ => ("INTERNAL", "Internal error encountered.".into()),
    };
    let m = message.map(String::from).unwrap_or(default_msg);
    if status == 404 {
        // The agent answers an unknown model's 404 as code 500 with the API's text alone
        // (observed with 0.61 through the server's real-CLI lane).
        return wire::error(500, &m, None);
    }
    let body = json!({"error": {"code": status, "message": m, "status": state}}).to_string();
    wire::error(status as i64, &body, None)
}

/// An API failure: the JSON-RPC error carrying the HTTP status, or what the CLI makes of it.
fn failure(
    agent: &Agent,
    f: &scenario::Failure,
    p: &Pending,
    usage: &Usage,
    routed: bool,
    requested: &str,
) -> Result<Value, Value> {
    let delay = f.attempt_delay_ms.unwrap_or(20);
    // Retries sleep between attempts; a cancel ends them (the request is aborted).
    let retry = |attempts: u32| -> bool {
        for _ in 1..attempts.max(1) {
            if p.sleep(delay) {
                return true;
            }
        }
        p.is_aborted()
    };
    match f.kind {
        FailureKind::QuotaDaily => {
            let m = f.message.as_deref().unwrap_or(texts::QUOTA_DAILY);
            let trailer = "  cause: {\n    code: 429,\n    message: 'Resource has been exhausted (e.g. check quota).',\n    details: [ [Object], [Object] ]\n  },\n  retryDelayMs: undefined,\n  reason: undefined,\n  status: 429\n}";
            api_error_noise(
                agent,
                routed,
                &format!("TerminalQuotaError: {m}"),
                m,
                trailer,
            );
            Err(wire::error(429, m, None))
        }
        FailureKind::RateLimit => {
            if retry(f.attempts.unwrap_or(10)) {
                return cancelled();
            }
            let m = f.message.as_deref().unwrap_or(texts::QUOTA_RETRYABLE);
            agent.stderr_line(&format!(
                "Error when talking to Gemini API RetryableQuotaError: {m}"
            ));
            Err(wire::error(429, m, None))
        }
        FailureKind::Status => {
            let status = f.status.unwrap_or(500);
            if (status >= 500 || status == 429) && retry(f.attempts.unwrap_or(10)) {
                return cancelled();
            }
            let e = api_error(status, f.message.as_deref(), requested);
            let body = e["message"].as_str().unwrap_or_default();
            let trailer = format!("  status: {status}\n}}");
            api_error_noise(agent, routed, &format!("_ApiError: {body}"), body, &trailer);
            Err(e)
        }
        FailureKind::EmptyResponse => {
            if retry(f.attempts.unwrap_or(4)) {
                return cancelled();
            }
            // InvalidStreamError ends the turn quietly (from source).
            Ok(usage.result(StopReason::EndTurn))
        }
        FailureKind::MalformedStream => Err(wire::error(
            500,
            "Expected property name or '}' in JSON at position 1",
            None,
        )),
        FailureKind::Network => loop {
            // `fetch failed` retried forever; only a cancel ends the prompt.
            if p.sleep(delay.max(1)) {
                return cancelled();
            }
        },
    }
}

/// The CLI's stderr for a failed API call (observed for 400 and the daily quota): under `auto` the
/// router's classifier call fails first and is reported, then the main call. Report files are
/// named, not written.
fn api_error_noise(agent: &Agent, routed: bool, error: &str, message: &str, trailer: &str) {
    let report = |kind: &str| {
        std::env::temp_dir()
            .join(format!(
                "gemini-client-error-{kind}-{}.json",
                clock::report_stamp(clock::now_ms())
            ))
            .display()
            .to_string()
    };
    let frame = |f: &str| {
        format!(
            "    at {f} (file://{}/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js)",
            texts::CLI_ROOT
        )
    };
    if routed {
        agent.stderr_line(&format!(
            "Error generating content via API. Full report available at: {} {error}\n{} {{\n{trailer}",
            report("generateJson-api"),
            frame("async NumericalClassifierStrategy.route")
        ));
        agent.stderr_line(&format!(
            "[Routing] NumericalClassifierStrategy failed: Error: Failed to generate content: {message}\n{}",
            frame("async NumericalClassifierStrategy.route")
        ));
    }
    agent.stderr_line(&format!(
        "Error when talking to Gemini API Full report available at: {} {error}\n{} {{\n{trailer}",
        report("Turn.run-sendMessageStream"),
        frame("async Turn.run")
    ));
}

/// Runs one tool call as `runTool` does; returns its record for the session history.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per tool the real agent runs, each with its observed permission and output"
)]
fn tool(agent: &Agent, s: &AcpSession, call: &ToolCall, id: (i64, usize), p: &Pending) -> Value {
    let name = call.name.as_str();
    // The turn's stamp and the call's place in it (`<name>__<name>_<ms>_<n>`).
    let call_id = format!("{name}__{name}_{}_{}", id.0, id.1);
    let k = kind(name);
    let command = arg(call, "command").unwrap_or_default();
    let file = arg(call, "file_path").unwrap_or_default();
    let title = match name {
        "run_shell_command" => command.to_string(),
        "list_directory" => arg(call, "dir_path").unwrap_or(".").to_string(),
        // The path relative to the workspace (observed: `Writing to notes.txt`).
        "write_file" => format!(
            "Writing to {}",
            Path::new(file)
                .strip_prefix(&s.cwd)
                .unwrap_or(Path::new(file))
                .display()
        ),
        _ if !file.is_empty() => file.to_string(),
        _ => call
            .args
            .values()
            .find_map(Value::as_str)
            .unwrap_or(name)
            .to_string(),
    };
    let explanation =
        (name == "run_shell_command").then(|| format!("[current working directory {}]", s.cwd));
    let locations = if k == "edit" && !file.is_empty() {
        json!([{"path": Path::new(&s.cwd).join(file).display().to_string()}])
    } else {
        json!([])
    };
    let edit = k == "edit";
    let mutating = edit || (name == "run_shell_command" && !shell_is_safe(command));
    let mode = s.mode.lock().expect("lock").clone();
    let record = |status: &str, display: &str| {
        json!({"id": call_id, "name": name, "args": call.args, "status": status,
            "resultDisplay": display, "description": title, "displayName": display_name(name)})
    };
    let key = if name == "run_shell_command" {
        command
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    } else {
        name.to_string()
    };
    let needs_ok = match mode.as_str() {
        "yolo" => false,
        "autoEdit" => mutating && !edit,
        _ => mutating,
    } && !s.always_allowed.lock().expect("lock").contains(&key);
    let failed = |msg: &str| {
        agent.update(
            &s.id,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
            "status": "failed", "content": [text_content(msg)], "kind": k}),
        );
        record("error", msg)
    };
    if mode == "plan" && mutating {
        // The policy denies it before any confirmation (observed: no tool_call, one failed update).
        return failed(&format!(
            "Tool execution for \"{}\" denied by policy.",
            display_name(name)
        ));
    }
    // An edit's confirmation and result both show the file diff, with the absolute path (observed).
    // write_file works on the disk as the real tool does: the diff starts from the file's
    // current content (observed: a second write of notes.txt shows `oldText` "hi", `modify`).
    let target = Path::new(&s.cwd).join(file);
    let current = (name == "write_file")
        .then(|| std::fs::read_to_string(&target).ok())
        .flatten()
        .unwrap_or_default();
    let diff = edit.then(|| {
        let (old, new) = match name {
            "write_file" => (current.as_str(), arg(call, "content").unwrap_or_default()),
            _ => (
                arg(call, "old_string").unwrap_or_default(),
                arg(call, "new_string").unwrap_or_default(),
            ),
        };
        let change = if old.is_empty() {
            "add"
        } else if new.is_empty() {
            "delete"
        } else {
            "modify"
        };
        json!({"type": "diff", "path": Path::new(&s.cwd).join(file).display().to_string(),
            "oldText": old, "newText": new, "_meta": {"kind": change}})
    });
    if needs_ok {
        let content = if let Some(d) = &diff {
            json!([d])
        } else {
            json!(explanation
                .iter()
                .map(|e| text_content(e))
                .collect::<Vec<_>>())
        };
        let options = json!([
            {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}
        ]);
        let tool_call = json!({"toolCallId": call_id, "status": "pending", "title": title,
            "content": content, "locations": locations, "kind": k});
        if crate::releases::has(&agent.version, crate::releases::PENDING_TOOL_CALL_FIRST) {
            let mut update = tool_call.clone();
            update["sessionUpdate"] = json!("tool_call");
            agent.update(&s.id, update);
        }
        let answer = agent.client_request(
            "session/request_permission",
            json!({"sessionId": s.id, "options": options, "toolCall": tool_call}),
        );
        if answer.get("error").is_some() {
            // The SDK rejects with the plain error object; `String(e)` is all that is left.
            return failed("[object Object]");
        }
        let outcome = &answer["result"]["outcome"];
        let chosen = match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("cancelled"), _) => "cancel",
            (Some("selected"), Some(o)) if OUTCOMES.contains(&o) => o,
            (Some("selected"), Some(o)) => {
                return failed(&format!(
                    "Invalid enum value. Expected {}, received '{o}'",
                    OUTCOMES
                        .iter()
                        .map(|x| format!("'{x}'"))
                        .collect::<Vec<_>>()
                        .join(" | ")
                ));
            }
            _ => return failed("Invalid permission response"),
        };
        match chosen {
            // Rejected: the model is told; 0.61 sends the client no update (as the source does),
            // 0.62 a failed one (PR#29439).
            "cancel" => {
                if crate::releases::has(&agent.version, crate::releases::PENDING_TOOL_CALL_FIRST) {
                    agent.update(
                        &s.id,
                        json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                        "status": "failed", "content": [text_content(&format!("Tool \"{name}\" was canceled by the user."))], "kind": k}),
                    );
                }
                return record(
                    "cancelled",
                    &format!("Tool \"{name}\" was canceled by the user."),
                );
            }
            "proceed_once" | "modify_with_editor" => {}
            // "Allow for this session" on an edit switches the session to autoEdit, a privileged
            // mode: refused in an untrusted folder, and the tool does not run (observed).
            "proceed_always" if edit => {
                if !agent.trusted {
                    return failed(
                        "Cannot enable privileged approval modes in an untrusted folder.",
                    );
                }
                *s.mode.lock().expect("lock") = "autoEdit".into();
                agent.update(
                    &s.id,
                    json!({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "[MODE_UPDATE] autoEdit"}}),
                );
            }
            _ => s.always_allowed.lock().expect("lock").push(key),
        }
    } else {
        agent.update(
            &s.id,
            json!({"sessionUpdate": "tool_call", "toolCallId": call_id,
            "status": "in_progress", "title": title,
            "content": explanation.iter().map(|e| text_content(e)).collect::<Vec<_>>(),
            "locations": locations, "kind": k}),
        );
    }
    let _ = p;
    if call.error_type.is_some() || call.error_message.is_some() {
        let msg = call
            .error_message
            .clone()
            .unwrap_or_else(|| format!("Tool \"{name}\" failed."));
        return failed(&msg);
    }
    let display = match name {
        "list_directory" => call
            .output
            .clone()
            .unwrap_or_else(|| "Directory is empty.".into()),
        // The shell's result display stays empty in ACP (observed).
        "run_shell_command" => String::new(),
        _ => call.output.clone().unwrap_or_default(),
    };
    if name == "write_file" {
        let _ = std::fs::write(&target, arg(call, "content").unwrap_or_default());
    }
    let content: Vec<Value> = match &diff {
        Some(d) => vec![d.clone()],
        None if display.is_empty() => vec![],
        None => vec![text_content(&display)],
    };
    agent.update(
        &s.id,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
        "status": "completed", "title": title, "content": content,
        "locations": locations, "kind": k}),
    );
    record("success", &display)
}

/// The updates `streamHistory` sends for one stored message.
pub(super) fn replay(m: &Value) -> Vec<Value> {
    let text = part_text(&m["content"]);
    let chunk = |kind: &str, text: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    let mut out = Vec::new();
    if m["type"] == "user" {
        if !text.trim().is_empty() {
            out.push(chunk("user_message_chunk", &text));
        }
        return out;
    }
    if m["type"] != "gemini" {
        return out;
    }
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "undefined".to_string(),
        v => v.to_string(),
    };
    for t in m["thoughts"].as_array().into_iter().flatten() {
        let text = format!("**{}**\n{}", s(&t["subject"]), s(&t["description"]));
        out.push(chunk("agent_thought_chunk", &text));
    }
    if !text.trim().is_empty() {
        out.push(chunk("agent_message_chunk", &text));
    }
    for c in m["toolCalls"].as_array().into_iter().flatten() {
        let display = c["resultDisplay"].as_str().unwrap_or_default();
        let content: Vec<Value> = if display.is_empty() {
            vec![]
        } else {
            vec![text_content(display)]
        };
        let name = c["name"].as_str().unwrap_or_default();
        let title = c["displayName"]
            .as_str()
            .filter(|t| !t.is_empty())
            .unwrap_or(name);
        out.push(json!({"sessionUpdate": "tool_call", "toolCallId": c["id"],
            "status": if c["status"] == "success" { "completed" } else { "failed" },
            "title": title, "content": content, "kind": kind(name)}));
    }
    out
}

/// `partListUnionToString` (verbose): text parts as they are, other parts by what they are.
fn part_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(part_text).collect(),
        Value::Object(p) => {
            let name = |k: &str| p[k]["name"].as_str().unwrap_or("undefined").to_string();
            if p.contains_key("thought") {
                format!("[Thought: {}]", p["thought"])
            } else if p.contains_key("functionCall") {
                format!("[Function Call: {}]", name("functionCall"))
            } else if p.contains_key("functionResponse") {
                format!("[Function Response: {}]", name("functionResponse"))
            } else {
                p.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            }
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_shell_commands_need_no_approval() {
        assert!(shell_is_safe("echo hello-from-shell"));
        assert!(shell_is_safe("ls -la && wc -l x | head"));
        assert!(!shell_is_safe("rm -rf build"));
        assert!(!shell_is_safe("echo hi; touch x"));
    }

    #[test]
    fn usage_keeps_first_use_order_and_skips_empty_turns() {
        let mut u = Usage::default();
        u.add("gemini-3.8-flash", 100, 7);
        u.add("auto", 100, 7);
        u.add("none", 0, 0);
        let r = u.result(StopReason::EndTurn);
        assert_eq!(
            r["_meta"]["quota"]["token_count"],
            json!({"input_tokens": 200, "output_tokens": 14})
        );
        assert_eq!(r["_meta"]["quota"]["model_usage"][1]["model"], "auto");
        assert_eq!(
            r["_meta"]["quota"]["model_usage"].as_array().map(Vec::len),
            Some(2)
        );
    }
}
