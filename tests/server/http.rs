//! The Streamable HTTP transport (`--http`): the bearer token refused and accepted, a foreign
//! `Origin` refused, a repeated `Host` or `Origin` refused, the body limit, and a tool call over
//! HTTP against fake-gemini. The client is a few lines of HTTP/1.1 over a `TcpStream`
//! (`Connection: close` unless a test keeps a connection), so the wire is what gets tested.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
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
    _dir: TempDir,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    /// Starts `geminicli-mcp --http 127.0.0.1:0` and reads the bound address from its stderr.
    fn start() -> HttpServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let stderr_path = dir.path().join("stderr.txt");
        let log = dir.path().join("fake-gemini.log");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let child = super::server_command(dir.path())
            .args(["--http", "127.0.0.1:0", "--kill-grace-ms", "300"])
            .current_dir(dir.path())
            .env("GEMINICLI_MCP_HTTP_TOKEN", TOKEN)
            .env("FAKE_GEMINI_LOG", &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn geminicli-mcp --http");
        let end = deadline();
        let addr = loop {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            if let Some(rest) = text.split("Streamable HTTP at http://").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
            assert!(Instant::now() < end, "no listening line; stderr: {text}");
            std::thread::sleep(Duration::from_millis(20));
        };
        HttpServer {
            child,
            addr,
            log,
            _dir: dir,
        }
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
    let body = body.to_string();
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
    request.push_str(&body);
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
    let server = HttpServer::start();
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

/// The body limit (the stdio line limit) as the 413 states it.
fn body_limit_text() -> String {
    let limit = geminicli_mcp::transport::MAX_LINE_BYTES;
    assert_eq!(limit % (1024 * 1024), 0, "the limit is whole MiB");
    format!("larger than {} MiB", limit / (1024 * 1024))
}

#[rstest::rstest]
#[case::announced_by_content_length(false)]
#[case::streamed_in_chunks(true)]
fn a_body_one_byte_over_the_limit_is_refused_with_413_naming_the_limit(#[case] chunked: bool) {
    let server = HttpServer::start();
    let limit = geminicli_mcp::transport::MAX_LINE_BYTES;
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
    let mut server = HttpServer::start();
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
    // SAFETY: plain signal to the server process this test spawned.
    assert_eq!(
        unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let end = deadline();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < end, "the server did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
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
