//! The scripted Gemini API: a loopback HTTP server that answers the real CLI's REST calls
//! (`models/<m>:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`) from the same
//! scenarios that drive fake-gemini, selected per request by the `[[fake-gemini:NAME …]]` marker
//! in the run's prompt. It is the API side of the differential suite: the real CLI run against
//! it must print what fake-gemini prints for the same scenario.
//!
//! What a scenario's model half means on the wire:
//! * each `[[model.turns]]` entry is one streamed response: a thought part (`thought: true`), one
//!   event per chunk (`chunk-interval-ms` apart, the first after `delay-ms`), the function calls, then
//!   `finishReason` and `usageMetadata`; which turn a request gets is the number of model turns
//!   in the conversation since the user's last text, so the answer after a tool result follows by itself;
//! * `modelVersion` is the scenario's `version` (`router-version` for the router's `generateContent`),
//!   else the model the CLI asked for, as the real API reports it;
//! * `[model.failure]`: 429 daily quota (a `QuotaFailure` with a per-day quota id: terminal), 429
//!   retryable, any other status with the Google error body, empty responses, a malformed event
//!   after a partial delta — on every attempt, so the CLI's own retry policy decides;
//! * `[process]` hangs and floods become stalls and floods of the stream.
//! * `slow-start`'s start-up latency (`startup-delay-ms`) delays a run's first response.
//!
//! Environment facts and process faults of the CLI itself (auth, trust, signals, descendants) are
//! not the API's to script; the differential suite lists those scenarios as not drivable.

pub mod http;

use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use crate::scenario::{self, FailureKind, Hang, Scenario, Turn, UnknownModel};
use crate::texts;

/// How the server picks and plays scenarios.
#[derive(Debug, Clone)]
pub struct Config {
    /// The scenario of requests without a marker (a built-in name or a file path).
    pub default_scenario: String,
    /// Where a marker's `NAME` is also looked up as `NAME.toml` (like `FAKE_GEMINI_SCENARIO_DIR`).
    pub scenario_dir: Option<PathBuf>,
    /// The longest a stall (`hang`, `after`) holds a response open; it also bounds idle connections.
    pub max_stall: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            default_scenario: "success".into(),
            scenario_dir: None,
            max_stall: Duration::from_secs(600),
        }
    }
}

/// Which REST method a request called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Call {
    /// `:generateContent` (the router and other one-shot JSON calls).
    GenerateContent,
    /// `:streamGenerateContent` (the main conversation).
    StreamGenerateContent,
    /// `:countTokens`.
    CountTokens,
    /// Anything else (answered 404).
    Other,
}

/// One request as the server saw it (kept for tests and printed by `fake-gemini-api --verbose`).
#[derive(Debug, Clone, Serialize)]
pub struct Seen {
    /// HTTP method.
    pub method: String,
    /// Request target.
    pub target: String,
    /// The model named in the path.
    pub model: String,
    /// The REST method.
    pub call: Call,
    /// The scenario that answered (`None` when it could not be loaded).
    pub scenario: Option<String>,
    /// Which turn of the scenario was played.
    pub turn: usize,
    /// The HTTP status answered.
    pub status: u16,
}

/// A running server; dropping it stops accepting and ends stalls.
pub struct ApiServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    conversations: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

/// The records kept in memory: enough for any test, bounded for a long-running server.
const MAX_SEEN: usize = 10_000;

impl ApiServer {
    /// Binds `127.0.0.1:port` (0 = any free port) and serves on background threads.
    pub fn start(port: u16, config: Config) -> io::Result<ApiServer> {
        // Loopback only: this server answers anything, so it must never be reachable from outside.
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let conversations = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(Shared {
            config,
            stop: stop.clone(),
            seen: seen.clone(),
            conversations: conversations.clone(),
        });
        let accept = std::thread::Builder::new()
            .name("fake-gemini-api".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if shared.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let shared = shared.clone();
                    let _ = std::thread::Builder::new()
                        .name("fake-gemini-api-conn".into())
                        .spawn(move || serve_connection(conn, &shared));
                }
            })?;
        Ok(ApiServer {
            addr,
            stop,
            seen,
            conversations,
            accept: Some(accept),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests served so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// How many conversation requests (`:streamGenerateContent`) have arrived, answered or not
    /// yet (a scripted delay or stall holds the answer; [`ApiServer::seen`] lists a request once
    /// it is answered).
    pub fn conversation_requests(&self) -> usize {
        self.conversations.load(Ordering::SeqCst)
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

struct Shared {
    config: Config,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    conversations: Arc<AtomicUsize>,
}

impl Shared {
    fn record(&self, s: Seen) {
        if let Ok(mut v) = self.seen.lock() {
            if v.len() < MAX_SEEN {
                v.push(s);
            }
        }
    }

    /// Sleeps `ms` in small steps; false once the server stops (the response is abandoned).
    fn pause(&self, ms: u64) -> bool {
        let end = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < end {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            let left = end.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        !self.stop.load(Ordering::SeqCst)
    }

    /// Holds a response open: the stream stalls until the server stops or `max_stall` passes.
    fn stall(&self) {
        self.pause(self.config.max_stall.as_millis() as u64);
    }
}

fn serve_connection(conn: TcpStream, shared: &Shared) {
    let _ = conn.set_read_timeout(Some(shared.config.max_stall));
    let _ = conn.set_nodelay(true);
    let Ok(mut writer) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    loop {
        let req = match http::read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                let body = error_body(400, "INVALID_ARGUMENT", &format!("fake-gemini-api: {e}"));
                let _ = http::write_response(&mut writer, 400, "application/json", &body, true);
                return;
            }
        };
        match handle(&req, &mut writer, shared) {
            Ok(Keep::Open) if !req.wants_close() => continue,
            _ => return,
        }
    }
}

/// Whether the connection can serve another request.
enum Keep {
    Open,
    Close,
}

/// `/v1beta/models/<model>:<method>[?query]` → (model, method).
fn route(target: &str) -> Option<(String, Call)> {
    let path = target.split('?').next().unwrap_or("");
    let rest = path.split("/models/").nth(1)?;
    let (model, method) = rest.rsplit_once(':')?;
    let call = match method {
        "generateContent" => Call::GenerateContent,
        "streamGenerateContent" => Call::StreamGenerateContent,
        "countTokens" => Call::CountTokens,
        _ => Call::Other,
    };
    Some((model.to_string(), call))
}

fn handle(req: &http::Request, w: &mut TcpStream, shared: &Shared) -> io::Result<Keep> {
    let (model, call) = route(&req.target).unwrap_or((String::new(), Call::Other));
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let mut seen = Seen {
        method: req.method.clone(),
        target: req.target.clone(),
        model: model.clone(),
        call,
        scenario: None,
        turn: 0,
        status: 200,
    };
    if req.method != "POST" || call == Call::Other {
        seen.status = 404;
        shared.record(seen);
        let b = error_body(
            404,
            "NOT_FOUND",
            &format!(
                "fake-gemini-api: no route for {} {}",
                req.method, req.target
            ),
        );
        http::write_response(w, 404, "application/json", &b, false)?;
        return Ok(Keep::Open);
    }
    let (name, sc) = match select_with(&body, &shared.config) {
        Ok((name, mut sc, failing_model)) => {
            // `failing-model=`: the failure is the failing model's only, as in the fake, so a
            // wrapper's fallback to another model can be seen to succeed.
            if failing_model.is_some_and(|m| m != model) {
                sc.model.failure = None;
            }
            (name, sc)
        }
        Err(e) => {
            // The fixture's own failure: a 400 whose message names it, so it never looks like a
            // scripted outcome.
            seen.status = 400;
            shared.record(seen);
            let b = error_body(400, "INVALID_ARGUMENT", &format!("fake-gemini-api: {e}"));
            http::write_response(w, 400, "application/json", &b, false)?;
            return Ok(Keep::Open);
        }
    };
    seen.scenario = Some(name);
    match call {
        Call::CountTokens => {
            shared.record(seen);
            let n = req.body.len() as u64 / 4;
            let b = serde_json::to_vec(&json!({"totalTokens": n})).expect("json");
            http::write_response(w, 200, "application/json", &b, false)?;
            Ok(Keep::Open)
        }
        Call::GenerateContent => {
            // One-shot JSON calls: under `auto` this is the router, whose answer the CLI parses
            // as its classifier's JSON; it picks `flash`, the choice the captures observed.
            shared.record(seen);
            let version = sc.model.router_version.clone().unwrap_or(model);
            let verdict = json!({"reasoning": "A simple request.", "model_choice": "flash",
                "complexity_score": 10, "complexity_reasoning": "A simple request."});
            let b = serde_json::to_vec(&response(
                vec![json!({"text": verdict.to_string()})],
                Some(&sc),
                &version,
            ))
            .expect("json");
            http::write_response(w, 200, "application/json", &b, false)?;
            Ok(Keep::Open)
        }
        Call::StreamGenerateContent => {
            shared.conversations.fetch_add(1, Ordering::SeqCst);
            stream(&body, &model, &sc, seen, w, shared)
        }
        Call::Other => unreachable!("answered above"),
    }
}

/// The text parts of the run's prompt: the newest user content that has text (a tool's result
/// has none, so the answer after it keeps its prompt's scenario), newest part first. Earlier
/// prompts of a resumed session do not count: a new prompt without a marker gets the default
/// scenario, as fake-gemini, which reads only its own prompt, gives it.
fn prompt_texts(body: &Value) -> impl Iterator<Item = &str> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|c| is_prompt(c))
        .into_iter()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten().rev())
        .filter_map(|p| p["text"].as_str())
}

/// Whether a content is a prompt: the user's, with text, and not the CLI's loop detection
/// telling the model it repeats itself (the answer to that keeps its prompt's scenario and goes
/// on counting its turns, as a tool's result does).
fn is_prompt(content: &Value) -> bool {
    content["role"] == "user"
        && content["parts"].as_array().is_some_and(|ps| {
            ps.iter().any(|p| {
                p["text"]
                    .as_str()
                    .is_some_and(|t| !t.starts_with(crate::texts::LOOP_NUDGE))
            })
        })
}

/// The scenario of a request (the newest marker of its prompt, else the default), and the model a
/// marker's `failing-model=` limits the scripted failure to.
fn select_with(
    body: &Value,
    config: &Config,
) -> Result<(String, Scenario, Option<String>), scenario::ScenarioError> {
    let marker = prompt_texts(body).find_map(scenario::find_marker);
    let (reference, params) = match marker {
        Some(m) => {
            let m = m?;
            (m.name, m.params)
        }
        None => (config.default_scenario.clone(), Vec::new()),
    };
    let (name, mut sc) = scenario::load(&reference, config.scenario_dir.as_deref())?;
    scenario::apply_params(&name, &mut sc, &params)?;
    let failing_model = params
        .iter()
        .find(|(k, _)| k == "failing-model")
        .map(|(_, v)| crate::answer::resolve_model(v).1);
    Ok((name, sc, failing_model))
}

/// Which turn a request asks for: the model contents after the user's last text part.
fn turn_index(body: &Value) -> usize {
    let contents = body["contents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let last_prompt = contents.iter().rposition(is_prompt);
    let after = last_prompt.map_or(0, |i| i + 1);
    contents[after..]
        .iter()
        .filter(|c| c["role"] == "model")
        .count()
}

/// The scenario's usage as `usageMetadata`.
fn usage(sc: &Scenario) -> Value {
    let u = &sc.model.usage;
    let mut v = json!({
        "promptTokenCount": u.prompt,
        "candidatesTokenCount": u.candidates,
        "thoughtsTokenCount": u.thoughts,
        "totalTokenCount": u.prompt + u.candidates + u.thoughts,
    });
    if u.cached > 0 {
        v["cachedContentTokenCount"] = json!(u.cached);
    }
    v
}

/// A `GenerateContentResponse`; `final_of` (the scenario) adds `finishReason` and usage.
fn response(parts: Vec<Value>, final_of: Option<&Scenario>, version: &str) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut v = json!({"modelVersion": version});
    if let Some(sc) = final_of {
        candidate["finishReason"] = json!("STOP");
        v["usageMetadata"] = usage(sc);
    }
    v["candidates"] = json!([candidate]);
    v
}

/// The Google error body of a status.
fn error_body(status: u16, state: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"error": {"code": status, "message": message, "status": state}}))
        .expect("json")
}

/// Default messages per status, as the real API words them (and fake-gemini prints them).
fn status_error(status: u16, model: &str) -> (&'static str, String) {
    match status {
        400 => ("INVALID_ARGUMENT", "Invalid argument provided.".into()),
        401 => ("UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.".into()),
        403 => ("PERMISSION_DENIED", "The caller does not have permission".into()),
        404 => ("NOT_FOUND", format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.")),
        429 => ("RESOURCE_EXHAUSTED", texts::QUOTA_RETRYABLE.into()),
        503 => ("UNAVAILABLE", "The model is overloaded. Please try again later.".into()),
        _ => ("INTERNAL", "Internal error encountered.".into()),
    }
}

/// Text of `n` bytes in lines of 100 (flood and long-line answers).
fn filler(n: usize, lines: bool) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    (0..n)
        .map(|i| {
            if lines && i % 100 == 99 {
                '\n'
            } else {
                ALPHABET[i % ALPHABET.len()] as char
            }
        })
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "the scripted API's response stream in the order the real API sends it"
)]
fn stream(
    body: &Value,
    model: &str,
    sc: &Scenario,
    mut seen: Seen,
    w: &mut TcpStream,
    shared: &Shared,
) -> io::Result<Keep> {
    let version = sc
        .model
        .version
        .clone()
        .unwrap_or_else(|| model.to_string());
    let index = turn_index(body);
    seen.turn = index;
    let known = crate::answer::resolve_model(model).2;
    // `after-turns`: the responses before it are answered, the call after them fails.
    let failure = sc
        .model
        .failure
        .clone()
        .filter(|f| index as u64 >= u64::from(f.after_turns.unwrap_or(0)))
        .or_else(|| {
            (!known && sc.model.unknown_model == UnknownModel::NotFound)
                .then(|| scenario::Failure::status(404))
        });
    if sc.process.hang == Some(Hang::BeforeOutput) {
        shared.record(seen);
        shared.stall();
        return Ok(Keep::Close);
    }
    // `slow-start`: the start-up latency comes before the first response of a run, so the real
    // CLI's answer starts as late as fake-gemini's.
    let startup = if index == 0 {
        sc.environment.startup_delay_ms
    } else {
        0
    };
    if !shared.pause(sc.model.delay_ms + startup)
        || !crate::sys::wait_for_file(sc.model.until_file.as_deref(), |ms| shared.pause(ms))
    {
        return Ok(Keep::Close);
    }
    if let Some(f) = failure {
        let (status, b) = match f.kind {
            FailureKind::QuotaDaily => (
                429,
                serde_json::to_vec(&json!({"error": {
                    "code": 429,
                    "message": f.message.clone().unwrap_or_else(|| texts::QUOTA_RETRYABLE.into()),
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                         "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                         "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
                        {"@type": "type.googleapis.com/google.rpc.Help",
                         "links": [{"description": "Learn more about Gemini API quotas",
                                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}
                    ]}}))
                .expect("json"),
            ),
            FailureKind::RateLimit => (
                429,
                error_body(
                    429,
                    "RESOURCE_EXHAUSTED",
                    f.message.as_deref().unwrap_or(texts::QUOTA_RETRYABLE),
                ),
            ),
            FailureKind::Status => {
                let status = f.status.unwrap_or(500);
                let (state, msg) = status_error(status, model);
                (status, error_body(status, state, f.message.as_deref().unwrap_or(&msg)))
            }
            FailureKind::EmptyResponse => {
                seen.scenario = seen.scenario.map(|s| s + " (empty)");
                shared.record(seen);
                http::start_event_stream(w)?;
                let mut v = response(vec![json!({"text": ""})], Some(sc), &version);
                // No usage either: the response the captures observed counted no tokens.
                v.as_object_mut().expect("object").remove("usageMetadata");
                http::write_event(w, &v.to_string())?;
                return Ok(Keep::Close);
            }
            FailureKind::MalformedStream => {
                shared.record(seen);
                http::start_event_stream(w)?;
                let partial = f.partial.clone().unwrap_or_else(|| "partial ".into());
                http::write_event(w, &response(vec![json!({"text": partial})], None, &version).to_string())?;
                // `{x` fails JSON.parse with "Expected property name or '}' in JSON at position 1".
                http::write_event(w, "{x")?;
                return Ok(Keep::Close);
            }
            FailureKind::Network => {
                // A connection dropped before any byte: the nearest an HTTP server gets to "no network".
                shared.record(seen);
                return Ok(Keep::Close);
            }
        };
        seen.status = status;
        shared.record(seen);
        http::write_response(w, status, "application/json", &b, false)?;
        return Ok(Keep::Open);
    }
    shared.record(seen);
    http::start_event_stream(w)?;

    // Floods and long lines replace the answer, as they do in fake-gemini.
    if let Some(n) = sc.process.flood_stdout_bytes.or(sc.process.long_line_bytes) {
        let lines = sc.process.flood_stdout_bytes.is_some();
        const BLOCK: usize = 64 * 1024;
        let mut left = n as usize;
        while left > 0 && !shared.stop.load(Ordering::SeqCst) {
            let k = if lines { left.min(BLOCK) } else { left };
            http::write_event(
                w,
                &response(vec![json!({"text": filler(k, lines)})], None, &version).to_string(),
            )?;
            left -= k;
        }
        http::write_event(
            w,
            &response(vec![json!({"text": ""})], Some(sc), &version).to_string(),
        )?;
        return Ok(Keep::Close);
    }

    let mut turns = sc.model.turns.clone();
    if turns.is_empty() {
        turns.push(Turn {
            chunks: vec!["Hello".into(), " there! How can I help?".into()],
            ..Turn::default()
        });
    }
    let turn = match turns.get(index) {
        Some(t) => t.clone(),
        // A model that keeps repeating itself repeats its last turn; otherwise a conversation
        // longer than the script ends with the last turn's words and no further calls.
        None if sc.model.loop_detected => turns.last().cloned().expect("one turn"),
        None => Turn {
            tool_calls: Vec::new(),
            ..turns.last().cloned().expect("one turn")
        },
    };
    let mut chunks = turn.chunks.clone();
    if chunks.is_empty() {
        chunks.extend(turn.text.clone());
    }
    let stall_after = match sc.process.hang {
        Some(Hang::AfterOutput) => Some(1),
        _ => sc.process.hang_after_chunks.map(|n| n as usize),
    };
    if let Some(t) = &turn.thought {
        http::write_event(
            w,
            &response(vec![json!({"text": t, "thought": true})], None, &version).to_string(),
        )?;
    }
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|c| json!({"functionCall": {"name": c.name, "args": c.args}}))
        .collect();
    for (k, c) in chunks.iter().enumerate() {
        if k > 0 && !shared.pause(sc.model.chunk_interval_ms) {
            return Ok(Keep::Close);
        }
        http::write_event(
            w,
            &response(vec![json!({"text": c})], None, &version).to_string(),
        )?;
        if stall_after == Some(k + 1) {
            shared.stall();
            return Ok(Keep::Close);
        }
    }
    // The last event carries the calls (if any), the finish reason and the usage.
    http::write_event(w, &response(calls, Some(sc), &version).to_string())?;
    w.flush()?;
    Ok(Keep::Close)
}

/// Writes a JSON line for a served request (the binary's `--verbose`).
pub fn describe(seen: &Seen) -> String {
    serde_json::to_string(seen).expect("json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"),
            Some(("gemini-3.8-flash".into(), Call::StreamGenerateContent))
        );
        assert_eq!(
            route("/v1beta/models/m:countTokens"),
            Some(("m".into(), Call::CountTokens))
        );
        assert_eq!(route("/"), None);
    }

    #[test]
    fn turn_follows_tool_results() {
        let first =
            json!({"contents": [{"role": "user", "parts": [{"text": "ctx"}, {"text": "hi"}]}]});
        assert_eq!(turn_index(&first), 0);
        let second = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "x"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "x"}}]}
        ]});
        assert_eq!(turn_index(&second), 1);
        let resumed = json!({"contents": [
            {"role": "user", "parts": [{"text": "old"}]},
            {"role": "model", "parts": [{"text": "answer"}]},
            {"role": "user", "parts": [{"text": "new"}]}
        ]});
        assert_eq!(turn_index(&resumed), 0);
        let nudged = json!({"contents": [
            {"role": "user", "parts": [{"text": "[[fake-gemini:loop-detected]]"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "x"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "x"}}]},
            {"role": "model", "parts": [{"text": "[The previous response was interrupted before it completed.]"}]},
            {"role": "user", "parts": [{"text": "System: Potential loop detected. Details: Repeated tool call: x. Please take a step back."}]}
        ]});
        assert_eq!(turn_index(&nudged), 2, "the loop nudge is not a prompt");
        assert_eq!(
            select_with(&nudged, &Config::default()).unwrap().0,
            "loop-detected",
            "the answer to the loop nudge keeps its prompt's scenario"
        );
    }

    #[test]
    fn the_newest_marker_selects() {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "[[fake-gemini:thinking]]"}]},
            {"role": "model", "parts": [{"text": "a"}]},
            {"role": "user", "parts": [{"text": "[[fake-gemini:success text=\"x y\"]]"}]}
        ]});
        let (name, sc, _) = select_with(&body, &Config::default()).unwrap();
        assert_eq!(name, "success");
        assert_eq!(sc.model.turns[0].text.as_deref(), Some("x y"));
        let (name, _, _) = select_with(&json!({}), &Config::default()).unwrap();
        assert_eq!(name, "success");
        // A resumed session's new prompt without a marker: the default, not the old marker; the
        // answer after a tool's result keeps its prompt's.
        let resumed = json!({"contents": [
            {"role": "user", "parts": [{"text": "[[fake-gemini:thinking]]"}]},
            {"role": "model", "parts": [{"text": "a"}]},
            {"role": "user", "parts": [{"text": "fix it"}]}
        ]});
        assert_eq!(
            select_with(&resumed, &Config::default()).unwrap().0,
            "success"
        );
        let after_tool = json!({"contents": [
            {"role": "user", "parts": [{"text": "[[fake-gemini:thinking]]"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "x"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "x"}}]}
        ]});
        assert_eq!(
            select_with(&after_tool, &Config::default()).unwrap().0,
            "thinking"
        );
        assert!(select_with(
            &json!({"contents": [{"role": "user", "parts": [{"text": "[[fake-gemini:nope]]"}]}]}),
            &Config::default()
        )
        .is_err());
        let failing = json!({"contents": [{"role": "user", "parts": [{"text": "[[fake-gemini:quota-daily failing-model=pro]]"}]}]});
        let (_, sc, model) = select_with(&failing, &Config::default()).unwrap();
        assert!(sc.model.failure.is_some());
        assert_eq!(
            model.as_deref(),
            Some("gemini-3.1-pro-preview"),
            "the alias resolved"
        );
    }
}
