//! The Streamable HTTP transport (`--http`): the bearer token refused and accepted, a foreign
//! `Origin` refused, a repeated `Host` or `Origin` refused, the body limit, a tool call over
//! HTTP against fake-gemini, a task made, polled and cancelled over sessionless 2026-07-28
//! requests, the methods that revision removed (404, -32601) beside its own (-32602 for params
//! that do not decode), and the connections' limits: the header-read and idle timeouts, the cap with its
//! eviction, and a flood of idle connections under a known open-file limit. The client is a few
//! lines of HTTP/1.1 over a `TcpStream` (`Connection: close` unless a test keeps a connection,
//! [`Kept`]), so the wire is what gets tested.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::{deadline, read_log};

const TOKEN: &str = "http-test-token-5f0c2a9e71d4";

/// A server listening on a loopback port, killed on drop.
struct HttpServer {
    child: Child,
    addr: String,
    log: PathBuf,
    stderr: PathBuf,
    _dir: TempDir,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- the server's stderr ---\n{}", self.stderr());
        }
    }
}

impl HttpServer {
    /// Starts `geminicli-mcp --http 127.0.0.1:0` and reads the bound address from its stderr.
    fn start() -> HttpServer {
        HttpServer::start_with(&[], &[], None)
    }

    /// [`HttpServer::start`] on the one-shot backend, for tests that count the CLI runs in the
    /// fake's log (a warm agent logs its ACP requests there instead).
    fn one_shot() -> HttpServer {
        HttpServer::start_with(&["--backend", "oneshot"], &[], None)
    }

    /// [`HttpServer::start`] with `args` and `env` added and, on unix, the open-file limit (soft
    /// and hard) set to `fd_limit` in the child before it runs.
    fn start_with(args: &[&str], env: &[(&str, &str)], fd_limit: Option<u64>) -> HttpServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let stderr_path = dir.path().join("stderr.txt");
        let log = dir.path().join("fake-gemini.log");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let mut cmd = super::server_command(dir.path());
        cmd.args(["--http", "127.0.0.1:0", "--kill-grace-ms", "300"])
            .args(args)
            .current_dir(dir.path())
            .env("GEMINICLI_MCP_HTTP_TOKEN", TOKEN)
            .env("FAKE_GEMINI_LOG", &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .envs(env.iter().copied());
        if let Some(limit) = fd_limit {
            limit_descriptors(&mut cmd, limit);
        }
        let child = cmd.spawn().expect("spawn geminicli-mcp --http");
        let end = deadline();
        let addr = loop {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            // The whole line: the address may be half written.
            if let Some(rest) = text
                .split("Streamable HTTP at http://")
                .nth(1)
                .filter(|rest| rest.contains('\n'))
            {
                break rest.split('/').next().unwrap().to_owned();
            }
            assert!(Instant::now() < end, "no listening line; stderr: {text}");
            std::thread::sleep(Duration::from_millis(20));
        };
        HttpServer {
            child,
            addr,
            log,
            stderr: stderr_path,
            _dir: dir,
        }
    }

    /// What the server has written on stderr so far.
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// POSTs `body` to /mcp with `headers`; returns the status, the headers and the body.
    fn post(&self, headers: &[(&str, &str)], body: &Value) -> (u16, Vec<(String, String)>, String) {
        self.post_with_host(&self.addr, headers, body)
    }

    /// [`HttpServer::post`] with this `Host` header.
    fn post_with_host(
        &self,
        host: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> (u16, Vec<(String, String)>, String) {
        post_to(&self.addr, host, headers, body)
    }
}

/// A second connection source for the server at `addr`, usable from another thread.
#[cfg(unix)]
struct HttpClient {
    addr: String,
}

#[cfg(unix)]
impl HttpClient {
    /// POSTs `body` to /mcp with `headers`.
    fn post(&self, headers: &[(&str, &str)], body: &Value) -> (u16, Vec<(String, String)>, String) {
        post_to(&self.addr, &self.addr, headers, body)
    }
}

/// POSTs `body` to `http://addr/mcp` with `Host: host` and `headers` over a fresh connection;
/// returns the status, the headers and the (de-chunked) body.
fn post_to(
    addr: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, String) {
    post_raw_to(addr, host, headers, &body.to_string())
}

/// [`post_to`] with a body written out as is (JSON a serialiser would not write).
fn post_raw_to(
    addr: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        host,
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, dechunk(body, head))
}

/// Undoes `Transfer-Encoding: chunked` when the head says so.
fn dechunk(body: &str, head: &str) -> String {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_owned();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// The JSON-RPC messages in a response body: plain JSON, or the `data:` lines of an SSE stream.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return vec![v];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "0"}}})
}

const BEARER: &str = "Bearer http-test-token-5f0c2a9e71d4";

#[test]
fn a_missing_or_wrong_token_is_refused() {
    let server = HttpServer::start();
    let (status, headers, _) = server.post(&[], &initialize());
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
    let (status, _, _) = server.post(
        &[("Authorization", "Bearer http-test-token-5f0c2a9e71d5")],
        &initialize(),
    );
    assert_eq!(status, 401, "a token one character off");
    let (status, _, _) = server.post(&[("Authorization", TOKEN)], &initialize());
    assert_eq!(status, 401, "the token without the Bearer scheme");
}

#[test]
fn a_foreign_origin_is_refused_even_with_the_token() {
    let server = HttpServer::start();
    let (status, _, _) = server.post(
        &[
            ("Authorization", BEARER),
            ("Origin", "https://evil.example"),
        ],
        &initialize(),
    );
    assert_eq!(status, 403);
    let own = format!("http://{}", server.addr);
    let (status, _, body) = server.post(
        &[("Authorization", BEARER), ("Origin", own.as_str())],
        &initialize(),
    );
    assert_eq!(status, 200, "the server's own origin is fine: {body}");
}

#[test]
fn a_foreign_host_is_refused_even_with_the_token() {
    let server = HttpServer::start();
    // DNS rebinding: a browser sends the attacker's name in Host.
    let (status, _, _) = server.post_with_host(
        "evil.example.com",
        &[("Authorization", BEARER)],
        &initialize(),
    );
    assert_eq!(status, 403);
}

#[test]
fn a_tool_call_over_http_answers_and_the_token_stays_out_of_the_child() {
    let server = HttpServer::one_shot();
    let (status, headers, body) = server.post(&[("Authorization", BEARER)], &initialize());
    assert_eq!(status, 200, "{body}");
    let init = messages(&body);
    assert_eq!(
        init[0]["result"]["serverInfo"]["name"], "geminicli-mcp",
        "{body}"
    );
    let session = header(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let with_session = [
        ("Authorization", BEARER),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (status, _, _) = server.post(
        &with_session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    let (status, _, body) = server.post(
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "gemini_prompt", "arguments": {"prompt": "[[fake-gemini:success text=\"over http\"]]"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let response = messages(&body)
        .into_iter()
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no response to the call: {body}"));
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "over http");
    // Bad arguments get the answers stdio gives: an input_validation result, or -32602.
    let (_, _, body) = server.post(
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "gemini_prompt", "arguments": "not an object"}}),
    );
    let bad = messages(&body)
        .into_iter()
        .find(|m| m["id"] == 3)
        .unwrap_or_else(|| panic!("no response: {body}"));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(bad["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("[error exit=42] input_validation: "));
    let (_, _, body) = server.post(
        &with_session,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}}),
    );
    assert_eq!(messages(&body)[0]["error"]["code"], -32602, "{body}");
    let runs = read_log(&server.log);
    assert_eq!(runs.len(), 1);
    assert!(
        runs[0]["env"].get("GEMINICLI_MCP_HTTP_TOKEN").is_none(),
        "the bearer token reached the CLI: {}",
        runs[0]["env"]
    );
    // A lone surrogate escape (a string cut inside an emoji) reads as U+FFFD, as over stdio.
    let cut = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":"[[fake-gemini:success text=cut]] \ud83d"}}}"#;
    let (status, _, body) = post_raw_to(&server.addr, &server.addr, &with_session, cut);
    assert_eq!(status, 200, "{body}");
    let answer = messages(&body)
        .into_iter()
        .find(|m| m["id"] == 5)
        .unwrap_or_else(|| panic!("no response to the cut call: {body}"));
    assert_eq!(answer["result"]["content"][0]["text"], "cut", "{answer}");
}

/// A sessionless 2026-07-28 request: the routing headers the revision asks for (`Mcp-Name` is the
/// tool's name for `tools/call`, the task id for `tasks/*`), and the client's context (version,
/// info, capabilities with the tasks extension) in `_meta`.
fn stateless_request(
    id: u64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> (Vec<(&'static str, String)>, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let mut headers = vec![
        ("Authorization", BEARER.to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    (headers, body)
}

/// [`HttpServer::post`] of a [`stateless_request`]; returns its response message.
fn post_stateless(
    server: &HttpServer,
    id: u64,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> Value {
    let (headers, body) = stateless_request(id, method, name, params);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, text) = server.post(&headers, &body);
    assert_eq!(status, 200, "{method}: {text}");
    messages(&text)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response to {method}: {text}"))
}

/// `tasks/get` of `task` every 100 ms until its status satisfies `done`; returns that response.
fn poll_task(server: &HttpServer, task: &str, done: impl Fn(&str) -> bool) -> Value {
    let end = deadline();
    loop {
        let got = post_stateless(server, 2, "tasks/get", Some(task), json!({"taskId": task}));
        let status = got["result"]["status"]
            .as_str()
            .unwrap_or_else(|| panic!("tasks/get: {got}"));
        if done(status) {
            return got;
        }
        assert!(Instant::now() < end, "the task stayed {status}: {got}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_task_made_over_sessionless_http_is_polled_to_the_plain_calls_result_and_cancelled() {
    let server = HttpServer::one_shot();
    let call = post_stateless(
        &server,
        1,
        "tools/call",
        Some("gemini_prompt"),
        json!({"name": "gemini_prompt", "arguments": {"prompt": "[[fake-gemini:success text=\"a task over http\" delay-ms=800]]"}}),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let task = call["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let done = poll_task(&server, &task, |status| status != "working");
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "a task over http",
        "{done}"
    );
    assert_eq!(done["result"]["result"]["isError"], false, "{done}");

    // A second task, cancelled while it runs: its run is killed, and the task says so.
    let call = post_stateless(
        &server,
        3,
        "tools/call",
        Some("gemini_prompt"),
        json!({"name": "gemini_prompt", "arguments": {"prompt": "[[fake-gemini:hang]]"}}),
    );
    let task = call["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let end = deadline();
    let runs = loop {
        let runs = read_log(&server.log);
        if runs.len() == 2 {
            break runs;
        }
        assert!(Instant::now() < end, "the second run never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let cancelled = post_stateless(
        &server,
        4,
        "tasks/cancel",
        Some(&task),
        json!({"taskId": task}),
    );
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    poll_task(&server, &task, |status| status == "cancelled");
    #[cfg(unix)]
    {
        let pid = runs[1]["pid"].as_i64().expect("pid logged");
        assert!(super::gone(pid), "the cancelled task's run {pid} lives on");
    }
    let unknown = post_stateless(
        &server,
        6,
        "tasks/get",
        Some("no-such-task"),
        json!({"taskId": "no-such-task"}),
    );
    assert!(unknown.get("error").is_some(), "{unknown}");
    // Params that do not decode are invalid params under HTTP 200, not "method not found" (which
    // sessionless HTTP would send as 404, a session gone).
    for (id, params) in [
        (7, json!({"taskId": 5})),
        (8, json!({"taskId": null})),
        (9, json!({})),
    ] {
        let bad = post_stateless(&server, id, "tasks/get", Some("5"), params);
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
    }
}

/// Requests of the methods the 2026-07-28 revision removed, with params that decode and params
/// that do not.
fn removed_method_requests() -> Vec<(&'static str, Value)> {
    vec![
        ("initialize", json!({})),
        ("initialize", json!({"protocolVersion": 5})),
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "info"})),
        ("logging/setLevel", json!({"level": 5})),
        ("logging/setLevel", json!({})),
        ("resources/subscribe", json!({"uri": "gemini://answers/x"})),
        ("resources/subscribe", json!({"uri": 5})),
        (
            "resources/unsubscribe",
            json!({"uri": "gemini://answers/x"}),
        ),
        ("resources/unsubscribe", json!({})),
    ]
}

/// The response to `id` in a body.
fn response_to(id: u64, body: &str) -> Value {
    messages(body)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response to {id}: {body}"))
}

/// The prompts over HTTP: listed and got on sessionless 2026-07-28 requests (`Mcp-Name` the
/// prompt's name), a refused argument as invalid params under HTTP 200, and listed in a session of
/// an older revision.
#[test]
fn prompts_are_listed_and_got_over_http_on_both_eras() {
    let server = HttpServer::start();
    let listed = post_stateless(&server, 1, "prompts/list", None, json!({}));
    let names: Vec<&str> = listed["result"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["review", "second-opinion", "read"], "{listed}");
    let params = json!({"name": "second-opinion", "arguments": {"question": "Is X right?"}});
    let got = post_stateless(&server, 2, "prompts/get", Some("second-opinion"), params);
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{got}"));
    assert!(text.contains("Call gemini_prompt with"), "{text}");
    assert!(
        text.ends_with("<question>\nIs X right?\n</question>"),
        "{text}"
    );
    let params = json!({"name": "read", "arguments": {"question": "how?"}});
    let refused = post_stateless(&server, 3, "prompts/get", Some("read"), params);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"], "paths is required",
        "{refused}"
    );
    let session = new_session(&server);
    let request = json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/list"});
    let (status, _, text) = server.post(&with_session(&session), &request);
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        response_to(4, &text)["result"]["prompts"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "{text}"
    );
}

#[test]
fn a_method_the_2026_revision_removed_is_404_method_not_found_on_its_requests_whatever_the_params()
{
    let server = HttpServer::start();
    for (n, (method, params)) in removed_method_requests().into_iter().enumerate() {
        let id = 10 + n as u64;
        // `Mcp-Name` names the resource of a `resources/*` request, as the revision asks.
        let name = params["uri"].as_str().map(str::to_owned);
        let (headers, body) = stateless_request(id, method, name.as_deref(), params.clone());
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, _, text) = server.post(&headers, &body);
        assert_eq!(status, 404, "{method} {params}: {text}");
        let answer = response_to(id, &text);
        assert_eq!(
            answer["error"]["code"], -32601,
            "{method} {params}: {answer}"
        );
    }
    // A method the revision has answers params that do not decode with invalid params, under
    // HTTP 200 (`post_stateless` checks it): never a 404, which reads as a session gone.
    for (id, method, params) in [
        (30, "tasks/get", json!({"taskId": 5})),
        (31, "tasks/cancel", json!({"taskId": [1]})),
        (
            32,
            "tasks/update",
            json!({"taskId": "t", "inputResponses": "yes"}),
        ),
        (33, "resources/read", json!({"uri": 5})),
    ] {
        let answer = post_stateless(&server, id, method, Some("t"), params.clone());
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
    }
    // In a session of an older revision the methods exist: params that do not decode are invalid
    // params, and a level that decodes is set.
    let session = new_session(&server);
    for (id, method, params) in [
        (40, "logging/setLevel", json!({"level": 5})),
        (41, "resources/subscribe", json!({"uri": 5})),
        (42, "resources/unsubscribe", json!({})),
        (43, "initialize", json!({"protocolVersion": 5})),
    ] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, _, text) = server.post(&with_session(&session), &request);
        assert_eq!(status, 200, "{method} {params}: {text}");
        let answer = response_to(id, &text);
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
    }
    let request = json!({"jsonrpc": "2.0", "id": 44, "method": "logging/setLevel",
                         "params": {"level": "info"}});
    let (status, _, text) = server.post(&with_session(&session), &request);
    assert_eq!(status, 200, "{text}");
    assert_eq!(response_to(44, &text)["result"], json!({}), "{text}");
}

#[test]
fn a_second_host_header_is_refused_with_400_before_the_token_check() {
    let server = HttpServer::start();
    // The allow-list reads the first Host; a second one could name anything.
    let (status, _, body) = server.post(&[("Host", "evil.example")], &initialize());
    assert_eq!(status, 400, "without the token too: {body}");
    assert!(body.contains("more than one Host header"), "{body}");
    let (status, _, body) = server.post(
        &[("Authorization", BEARER), ("Host", server.addr.as_str())],
        &initialize(),
    );
    assert_eq!(status, 400, "the same value twice, with the token: {body}");
}

#[test]
fn a_second_origin_header_is_refused_with_400_before_the_token_check() {
    let server = HttpServer::start();
    let own = format!("http://{}", server.addr);
    let (status, _, body) = server.post(
        &[("Origin", own.as_str()), ("Origin", "https://evil.example")],
        &initialize(),
    );
    assert_eq!(status, 400, "without the token too: {body}");
    assert!(body.contains("more than one Origin header"), "{body}");
    let (status, _, body) = server.post(
        &[
            ("Authorization", BEARER),
            ("Origin", own.as_str()),
            ("Origin", own.as_str()),
        ],
        &initialize(),
    );
    assert_eq!(status, 400, "the same value twice, with the token: {body}");
}

/// The body limit as the 413 states it.
fn body_limit_text() -> String {
    let limit = geminicli_mcp::http::MAX_BODY_BYTES;
    assert_eq!(limit % (1024 * 1024), 0, "the limit is whole MiB");
    format!("larger than {} MiB", limit / (1024 * 1024))
}

#[rstest::rstest]
#[case::announced_by_content_length(false)]
#[case::streamed_in_chunks(true)]
fn a_body_one_byte_over_the_limit_is_refused_with_413_naming_the_limit(#[case] chunked: bool) {
    let server = HttpServer::start();
    let limit = geminicli_mcp::http::MAX_BODY_BYTES;
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_owned()
    } else {
        format!("Content-Length: {}", limit + 1)
    };
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {BEARER}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {framing}\r\nConnection: close\r\n\r\n",
        server.addr
    );
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    stream.set_read_timeout(Some(super::STEP)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    // The body is written while the response is read: the server may answer before it is all
    // sent, and then stops reading (write errors are expected then).
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        writer.write_all(head.as_bytes())?;
        let chunk = vec![b' '; 1024 * 1024];
        let mut left = limit + 1;
        while left > 0 {
            let n = left.min(chunk.len());
            if chunked {
                writer.write_all(format!("{n:x}\r\n").as_bytes())?;
            }
            writer.write_all(&chunk[..n])?;
            if chunked {
                writer.write_all(b"\r\n")?;
            }
            left -= n;
        }
        if chunked {
            writer.write_all(b"0\r\n\r\n")?;
        }
        Ok(())
    });
    let raw = read_until_closed(&mut stream);
    let _ = sender.join();
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains(&body_limit_text()), "{raw}");
}

/// Everything the server sends until it closes the connection (a reset after its answer counts
/// as closing: it comes when the server stops reading a body).
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return raw,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if closed_by_peer(&e) => return raw,
            Err(e) => panic!("reading the response: {e}; so far: {raw:?}"),
        }
    }
}

/// Whether a read error means the peer closed the connection (not a timeout).
fn closed_by_peer(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe)
}

#[test]
fn refuses_to_start_without_a_token_or_on_a_public_address() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = super::server_command(dir.path())
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bearer token"));
    let out = super::server_command(dir.path())
        .args(["--http", "0.0.0.0:0"])
        .env("GEMINICLI_MCP_HTTP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http-allow-remote"));
}

#[cfg(unix)]
#[test]
fn sigterm_kills_the_runs_of_every_http_client_and_exits_0() {
    let mut server = HttpServer::one_shot();
    // Two clients, each with a call whose CLI ignores SIGTERM, sent from threads (the raw client
    // blocks until its response ends, which here is when the server goes away).
    let mut calls = Vec::new();
    for n in 0..2 {
        let (status, headers, body) = server.post(&[("Authorization", BEARER)], &initialize());
        assert_eq!(status, 200, "{body}");
        let session = header(&headers, "mcp-session-id").unwrap().to_owned();
        let addr = server.addr.clone();
        calls.push(std::thread::spawn(move || {
            let probe = HttpClient { addr };
            let with_session = [
                ("Authorization", BEARER),
                ("Mcp-Session-Id", session.as_str()),
                ("MCP-Protocol-Version", "2025-06-18"),
            ];
            probe.post(
                &with_session,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            );
            probe.post(
                &with_session,
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini_prompt",
                        "arguments": {"prompt": format!("client {n} [[fake-gemini:ignore-sigterm]]")}}}),
            )
        }));
    }
    let end = deadline();
    let runs = loop {
        let runs = read_log(&server.log);
        if runs.len() >= 2 || Instant::now() >= end {
            break runs;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(runs.len(), 2, "both clients' calls started");
    let status = sigterm_and_wait(&mut server.child);
    assert!(status.success(), "{status:?}");
    for run in runs {
        let pid = run["pid"].as_i64().unwrap();
        assert!(
            super::gone(pid),
            "fake-gemini {pid} outlived the server's SIGTERM"
        );
    }
    for call in calls {
        let _ = call.join();
    }
}

/// Sets the child's open-file limit, soft and hard, to `limit` before it runs.
#[cfg(unix)]
fn limit_descriptors(cmd: &mut std::process::Command, limit: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only setrlimit runs (async-signal-safe), on a struct the
    // closure owns.
    unsafe {
        cmd.pre_exec(move || {
            let rlimit = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// An open-file limit is a unix setting.
#[cfg(not(unix))]
fn limit_descriptors(_: &mut std::process::Command, _: u64) {
    panic!("an open-file limit can only be set on unix");
}

/// Raises this test process's soft open-file limit to its hard one; panics when that is below
/// `needed` (the test could not hold its sockets).
#[cfg(unix)]
fn raise_own_fd_limit(needed: libc::rlim_t) {
    let mut rlimit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read or write the struct given, nothing else.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rlimit), 0);
        rlimit.rlim_cur = rlimit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit), 0);
    }
    assert!(
        rlimit.rlim_cur >= needed,
        "this test needs {needed} descriptors; the hard limit is {}",
        rlimit.rlim_cur
    );
}

/// A response read off a kept connection.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

/// A keep-alive connection: requests without `Connection: close`, each response read to its end
/// (by `Content-Length` or to the last chunk), the connection left open for the next.
struct Kept {
    reader: BufReader<TcpStream>,
    host: String,
}

impl Kept {
    /// Connects to `addr`.
    fn open(addr: &str) -> Kept {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(super::STEP)).unwrap();
        Kept {
            reader: BufReader::new(stream),
            host: addr.to_owned(),
        }
    }

    /// Sends `method /mcp` with `headers` and, if any, the JSON `body`.
    fn send(&mut self, method: &str, headers: &[(&str, &str)], body: Option<&Value>) {
        let request = request_text(method, &self.host, headers, body);
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .expect("send");
    }

    /// Reads a response's status line and headers.
    fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let mut status_line = String::new();
        self.reader
            .read_line(&mut status_line)
            .expect("a status line");
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("a header line");
            let line = line.trim_end();
            if line.is_empty() {
                return (status, headers);
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
    }

    /// Reads one whole response.
    fn reply(&mut self) -> Reply {
        let (status, headers) = self.head();
        let mut body = Vec::new();
        if header(&headers, "transfer-encoding") == Some("chunked") {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).expect("a chunk size");
                let n = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
                let mut chunk = vec![0; n + 2];
                self.reader.read_exact(&mut chunk).expect("a chunk");
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            let n = header(&headers, "content-length").map_or(0, |v| v.parse().unwrap());
            body.resize(n, 0);
            self.reader.read_exact(&mut body).expect("the body");
        }
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// POSTs `body` and reads the response.
    fn post(&mut self, headers: &[(&str, &str)], body: &Value) -> Reply {
        self.send("POST", headers, Some(body));
        self.reply()
    }

    /// Waits up to `within` for the server to close the connection: `Some(bytes it sent
    /// meanwhile)` when it did, `None` when the connection is still open.
    fn closed_within(&mut self, within: Duration) -> Option<Vec<u8>> {
        let end = Instant::now() + within;
        let mut received = self.reader.buffer().to_vec();
        self.reader.consume(received.len());
        let stream = self.reader.get_mut();
        let mut buf = [0u8; 4096];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            stream.set_read_timeout(Some(left)).unwrap();
            match stream.read(&mut buf) {
                Ok(0) => return Some(received),
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(e) if closed_by_peer(&e) => return Some(received),
                Err(e) if timed_out(&e) => return None,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("reading: {e}"),
            }
        }
    }
}

/// A keep-alive request, `method /mcp` with `Host: host`, `headers` and, if any, the JSON `body`.
fn request_text(
    method: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> String {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\n"
    );
    if method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    request
}

/// Whether a read error is the read timeout.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Initializes a session on `conn` and sends `notifications/initialized`; returns its id.
fn initialize_on(conn: &mut Kept) -> String {
    let reply = conn.post(&[("Authorization", BEARER)], &initialize());
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = header(&reply.headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let reply = conn.post(
        &with_session(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    session
}

/// The headers of a request in `session`: the token, the session id, the protocol version.
fn with_session(session: &str) -> [(&str, &str); 3] {
    [
        ("Authorization", BEARER),
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
    ]
}

/// A session's SSE stream (`GET /mcp`), read by a thread into a buffer as it arrives.
struct EventStream {
    received: Arc<Mutex<String>>,
    ended: Arc<std::sync::atomic::AtomicBool>,
}

impl EventStream {
    /// Opens the stream of `session` and checks that the server answered 200.
    fn open(addr: &str, session: &str) -> EventStream {
        let mut conn = Kept::open(addr);
        conn.send("GET", &with_session(session), None);
        let (status, _) = conn.head();
        assert_eq!(status, 200, "the SSE stream was refused");
        let received = Arc::new(Mutex::new(String::new()));
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (into, flag) = (received.clone(), ended.clone());
        std::thread::spawn(move || {
            let mut reader = conn.reader;
            reader.get_mut().set_read_timeout(None).unwrap();
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        EventStream { received, ended }
    }

    /// The JSON-RPC messages received so far with this `method`.
    #[cfg(unix)]
    fn messages(&self, method: &str) -> Vec<Value> {
        messages(&self.received.lock().unwrap())
            .into_iter()
            .filter(|m| m["method"] == method)
            .collect()
    }

    /// Whether the server has closed the stream.
    fn ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn a_connection_that_does_not_send_complete_headers_in_time_is_closed() {
    // The idle timeout (60 s by default) plays no part: only the header timeout can close these.
    let server = HttpServer::start_with(&["--http-header-timeout-ms", "1500"], &[], None);
    let mut silent = Kept::open(&server.addr);
    let mut half = Kept::open(&server.addr);
    half.reader
        .get_mut()
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .unwrap();
    // The control: headers completed within the timeout are served.
    let mut slow = Kept::open(&server.addr);
    let request = request_text("POST", &server.addr, &[], Some(&initialize()));
    let (start, rest) = request.as_bytes().split_at(20);
    slow.reader.get_mut().write_all(start).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    slow.reader.get_mut().write_all(rest).unwrap();
    let reply = slow.reply();
    assert_eq!(
        reply.status, 401,
        "served (and refused for its missing token)"
    );
    let bytes = half.closed_within(super::STEP);
    assert_eq!(bytes.as_deref(), Some(&b""[..]), "half-sent headers");
    let bytes = silent.closed_within(super::STEP);
    assert_eq!(
        bytes.as_deref(),
        Some(&b""[..]),
        "a connection sending nothing"
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout_but_a_slow_call_and_an_sse_stream_are_not(
) {
    let server = HttpServer::start_with(
        &[
            "--http-idle-timeout-ms",
            "1000",
            "--http-header-timeout-ms",
            "60000",
        ],
        &[],
        None,
    );
    let mut idle = Kept::open(&server.addr);
    let session = initialize_on(&mut idle);
    let events = EventStream::open(&server.addr, &session);
    // A call that takes three idle timeouts, on a kept connection of its own.
    let mut busy = Kept::open(&server.addr);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "gemini_prompt",
        "arguments": {"prompt": "[[fake-gemini:success text=\"slow\" delay-ms=3000]]"}}});
    let reply = busy.post(&with_session(&session), &call);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = messages(&reply.body)
        .into_iter()
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the slow call: {}", reply.body));
    assert_eq!(answer["result"]["content"][0]["text"], "slow", "{answer}");
    assert!(
        !events.ended(),
        "the SSE stream outlived three idle timeouts"
    );
    assert_eq!(
        idle.closed_within(super::STEP).as_deref(),
        Some(&b""[..]),
        "the idle keep-alive connection was closed"
    );
    assert_eq!(
        busy.closed_within(super::STEP).as_deref(),
        Some(&b""[..]),
        "the slow call's connection, idle once it was answered, was closed too"
    );
}

#[test]
fn at_the_cap_the_oldest_connection_without_the_token_makes_way_and_authenticated_ones_stay() {
    // The header timeout (60 s) plays no part: only the cap can close the idle sockets.
    let server = HttpServer::start_with(
        &[
            "--http-max-connections",
            "4",
            "--http-header-timeout-ms",
            "60000",
        ],
        &[],
        None,
    );
    let mut operator = Kept::open(&server.addr);
    let session = initialize_on(&mut operator);
    // With the operator's connection, three fill the cap; the fourth makes the first go.
    let mut strangers: Vec<Kept> = (0..4).map(|_| Kept::open(&server.addr)).collect();
    let (status, _, body) = server.post(&[("Authorization", BEARER)], &initialize());
    assert_eq!(status, 200, "a new client got in at the cap: {body}");
    for (n, stranger) in strangers.iter_mut().enumerate().take(2) {
        assert_eq!(
            stranger.closed_within(super::STEP).as_deref(),
            Some(&b""[..]),
            "idle socket {n}, among the oldest, was closed"
        );
    }
    assert_eq!(
        strangers[3].closed_within(Duration::from_millis(300)),
        None,
        "the newest idle socket is still open"
    );
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let reply = operator.post(&with_session(&session), &ping);
    assert_eq!(
        reply.status, 200,
        "the authenticated connection, the oldest of all, still serves: {}",
        reply.body
    );
}

#[test]
fn at_the_cap_with_every_connection_authenticated_a_new_one_is_closed_unanswered() {
    let server = HttpServer::start_with(&["--http-max-connections", "2"], &[], None);
    let mut first = Kept::open(&server.addr);
    initialize_on(&mut first);
    let mut second = Kept::open(&server.addr);
    initialize_on(&mut second);
    let mut third = Kept::open(&server.addr);
    third.send("POST", &[("Authorization", BEARER)], Some(&initialize()));
    assert_eq!(
        third.closed_within(super::STEP).as_deref(),
        Some(&b""[..]),
        "refused without an answer"
    );
    // Once one of them leaves, there is room again.
    drop(first);
    let end = deadline();
    loop {
        // Refused until the server has seen the close: then closed unanswered, or reset.
        let mut next = Kept::open(&server.addr);
        next.send("POST", &[("Authorization", BEARER)], Some(&initialize()));
        let mut status_line = String::new();
        let _ = next.reader.read_line(&mut status_line);
        if status_line.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < end, "no room after a connection closed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lines the server wrote about failed accepts.
#[cfg(unix)]
fn accept_failure_lines(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("accepting an HTTP connection failed"))
        .count()
}

#[cfg(unix)]
#[rstest::rstest]
#[case::with_the_cap_derived_from_the_fd_limit(None)]
#[case::with_a_cap_above_the_fd_limit_so_accepts_hit_emfile(Some("1000"))]
fn a_thousand_idle_connections_without_the_token_neither_keep_a_client_out_nor_reach_its_log(
    #[case] cap: Option<&str>,
) {
    /// The server's open-file limit, soft and hard: 1,000 sockets are far more than it allows.
    const FD_LIMIT: u64 = 512;
    const IDLE: usize = 1000;
    raise_own_fd_limit((IDLE + 256) as libc::rlim_t);
    let mut args = vec![];
    if let Some(cap) = cap {
        args.extend(["--http-max-connections", cap]);
    }
    // Every run's CLI is too old: the control at the end makes the server warn.
    let server = HttpServer::start_with(
        &args,
        &[("FAKE_GEMINI_SCENARIO", "old-version")],
        Some(FD_LIMIT),
    );
    let mut first = Kept::open(&server.addr);
    let session = initialize_on(&mut first);
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                       "params": {"level": "debug"}});
    let reply = first.post(&with_session(&session), &level);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let events = EventStream::open(&server.addr, &session);
    let flood_started = Instant::now();
    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|n| TcpStream::connect(&server.addr).unwrap_or_else(|e| panic!("socket {n}: {e}")))
        .collect();
    eprintln!(
        "{IDLE} idle connections opened in {:?}",
        flood_started.elapsed()
    );
    let started = Instant::now();
    let (status, headers, body) = server.post(&[("Authorization", BEARER)], &initialize());
    let took = started.elapsed();
    eprintln!(
        "initialize after {IDLE} idle connections (fd limit {FD_LIMIT}, cap {cap:?}): {took:?}"
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        messages(&body)[0]["result"]["serverInfo"]["name"],
        "geminicli-mcp"
    );
    assert!(took < Duration::from_secs(10), "initialize took {took:?}");
    // Time for any notification the flood caused to arrive.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!events.ended(), "the first client's stream stayed open");
    let logged = events.messages("notifications/message");
    assert!(
        logged.is_empty(),
        "log notifications reached the client: {logged:?}"
    );
    let lines = accept_failure_lines(&server.stderr());
    match cap {
        None => assert_eq!(lines, 0, "the derived cap keeps accepts from running out"),
        Some(_) => {
            assert!(
                lines >= 1,
                "accepts hit the limit and it was logged on stderr"
            );
            let most = 1 + flood_started.elapsed().as_secs() as usize / 10;
            assert!(
                lines <= most,
                "{lines} lines about failed accepts: not rate-limited"
            );
        }
    }
    drop(idle);
    // The control: the same stream does carry the server's warnings (a CLI too old for a flag).
    let second = header(&headers, "mcp-session-id").unwrap().to_owned();
    let mut other = Kept::open(&server.addr);
    let reply = other.post(
        &with_session(&second),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "gemini_prompt", "arguments": {"prompt": "hello"}}});
    let reply = other.post(&with_session(&second), &call);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let end = deadline();
    while events.messages("notifications/message").is_empty() {
        assert!(
            Instant::now() < end,
            "the warning never reached the first client's stream"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "the control's warning arrived {:?} after the flood began",
        flood_started.elapsed()
    );
}

/// Initializes a session over a connection of its own; returns its id.
fn new_session(server: &HttpServer) -> String {
    let (status, headers, body) = server.post(&[("Authorization", BEARER)], &initialize());
    assert_eq!(status, 200, "{body}");
    let session = header(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let (status, _, _) = server.post(
        &with_session(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    session
}

/// `tools/call` of `name` in `session`, over a connection of its own; returns the result.
fn call_in(server: &HttpServer, session: &str, id: u64, name: &str, arguments: Value) -> Value {
    let (status, _, body) = server.post(
        &with_session(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}),
    );
    assert_eq!(status, 200, "{body}");
    messages(&body)
        .into_iter()
        .find(|m| m["id"] == id)
        .map(|m| m["result"].clone())
        .unwrap_or_else(|| panic!("no answer to {name}: {body}"))
}

#[test]
fn a_job_outlives_the_connection_that_started_it_and_is_its_sessions_alone() {
    let server = HttpServer::start_with(&[], &[("GEMINICLI_MCP_TOOLSETS", "jobs")], None);
    let mine = new_session(&server);
    let theirs = new_session(&server);
    let started = call_in(
        &server,
        &mine,
        2,
        "gemini_start",
        json!({"arguments": {"prompt": "[[fake-gemini:success text=\"later\" delay-ms=500]]"}}),
    );
    let job = started["structuredContent"]["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    // Each post above and below is a connection of its own: the one that started the job is gone.
    let foreign = call_in(
        &server,
        &theirs,
        3,
        "gemini_wait",
        json!({"job_ids": [job], "timeout_s": 0}),
    );
    assert_eq!(foreign["isError"], true, "{foreign}");
    assert_eq!(
        foreign["structuredContent"]["errorKind"],
        "input_validation"
    );
    let done = call_in(
        &server,
        &mine,
        4,
        "gemini_wait",
        json!({"job_ids": [job], "timeout_s": 30}),
    );
    let entry = &done["structuredContent"]["jobs"][0];
    assert_eq!(entry["state"], "completed", "{done}");
    assert_eq!(
        entry["result"]["structuredContent"]["response"], "later",
        "{done}"
    );
}

/// A sessionless 2026-07-28 `tools/call` of `gemini_prompt` from a client that does not declare
/// the tasks extension (a plain call), posted from a thread: its response message, once the
/// server sends it or goes away.
fn plain_call_in_thread(
    server: &HttpServer,
    id: u64,
    prompt: &str,
) -> std::sync::mpsc::Receiver<Option<Value>> {
    let (headers, mut body) = stateless_request(
        id,
        "tools/call",
        Some("gemini_prompt"),
        json!({"name": "gemini_prompt", "arguments": {"prompt": prompt}}),
    );
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let probe = HttpClient {
        addr: server.addr.clone(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (_, _, text) = probe.post(&headers, &body);
        let _ = tx.send(messages(&text).into_iter().find(|m| m["id"] == id));
    });
    rx
}

/// Every pid the fake's log names (a one-shot run's, or the agent's on the warm backend).
fn logged_pids(log: &std::path::Path) -> Vec<i64> {
    let mut pids: Vec<i64> = read_log(log)
        .iter()
        .filter_map(|r| r["pid"].as_i64())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// A run stuck before its CLI recorded the prompt, as a task, holds the workspace's start gate
/// for GEMINICLI_MCP_START_GATE_MS at most: a plain call behind it starts and answers (one-shot:
/// on the warm backend `hang` freezes the agent the next call would share). Then, with the stuck
/// task and a stuck plain call in flight, SIGTERM ends the server with exit 0 and nothing left.
#[cfg(unix)]
#[rstest::rstest]
#[case::one_shot("oneshot")]
#[case::warm("acp")]
fn a_stuck_task_costs_only_its_own_call_and_sigterm_ends_everything(#[case] backend: &str) {
    let mut server = HttpServer::start_with(
        &["--backend", backend],
        &[("GEMINICLI_MCP_START_GATE_MS", "800")],
        None,
    );
    let call = post_stateless(
        &server,
        1,
        "tools/call",
        Some("gemini_prompt"),
        json!({"name": "gemini_prompt", "arguments": {"prompt": "[[fake-gemini:hang]]"}}),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let end = deadline();
    while read_log(&server.log).is_empty() {
        assert!(Instant::now() < end, "the stuck run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    if backend == "oneshot" {
        let next = plain_call_in_thread(
            &server,
            2,
            "[[fake-gemini:success text=\"past the stuck task\"]]",
        );
        let answered = next
            .recv_timeout(Duration::from_secs(5))
            .expect("the call behind the stuck task answered within 5 s")
            .expect("an answer");
        assert_eq!(
            answered["result"]["content"][0]["text"], "past the stuck task",
            "{answered}"
        );
    }
    let held = plain_call_in_thread(&server, 3, "[[fake-gemini:hang]]");
    std::thread::sleep(Duration::from_millis(300));
    let pids = logged_pids(&server.log);
    assert!(!pids.is_empty());
    let status = sigterm_and_wait(&mut server.child);
    assert!(status.success(), "{status:?}");
    for pid in logged_pids(&server.log) {
        assert!(
            super::gone(pid),
            "fake-gemini {pid} outlived the server's SIGTERM"
        );
    }
    let _ = held.recv_timeout(Duration::from_secs(5));
}

/// SIGTERM sent the moment the server says where it listens ends it cleanly (exit 0): its
/// handlers are in place before it says so, and the signal's default action (exit 143) never
/// applies.
#[cfg(unix)]
#[test]
fn sigterm_as_soon_as_the_server_listens_exits_0() {
    use std::os::unix::process::ExitStatusExt;
    let mut server = HttpServer::start();
    let status = sigterm_and_wait(&mut server.child);
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "{}",
        server.stderr()
    );
}

/// Sends SIGTERM to the server `child` and waits (up to the test deadline) for it to exit.
#[cfg(unix)]
fn sigterm_and_wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    // SAFETY: plain signal to the server process this test spawned.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let end = deadline();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < end, "the server did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}
