//! The stdio transport. [`LineTransport`] frames JSON-RPC as one message per line and answers what
//! cannot be routed (a line that is not JSON: -32700; JSON that is not a message: -32600, with the
//! request's id when it has one). [`GraceTransport`] adds the EOF grace: stdin reaching EOF is
//! reported to rmcp only once every request read has been answered (or cancelled by the client),
//! or once `GEMINICLI_MCP_EOF_GRACE_MS` has passed — then the remaining runs are killed, answered
//! as cancelled, and only then does the server stop. rmcp alone gives in-flight calls 5 s after
//! EOF, which breaks `cat requests.jsonl | geminicli-mcp`.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Extra time, after the grace expired and the runs were told to die, for their cancelled answers
/// to be written (the kill itself takes up to the kill grace).
const ANSWER_AFTER_KILL: Duration = Duration::from_secs(3);
/// How often the server checks, after EOF, whether the client closed its end of stdout too.
const CLIENT_GONE_POLL: Duration = Duration::from_millis(100);

/// The ids of requests read but not yet answered.
#[derive(Debug, Default)]
pub struct InFlight {
    ids: Mutex<HashSet<RequestId>>,
    count: watch::Sender<usize>,
}

impl InFlight {
    /// An empty set.
    pub fn new() -> Arc<Self> {
        Arc::new(InFlight::default())
    }

    fn update(&self, f: impl FnOnce(&mut HashSet<RequestId>)) {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut ids);
        self.count.send_replace(ids.len());
    }

    /// Number of requests awaiting an answer.
    pub fn len(&self) -> usize {
        *self.count.borrow()
    }

    /// True when every request read has been answered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    async fn drained(&self) {
        let mut rx = self.count.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// Wraps rmcp's stdio transport; see the module documentation.
pub struct GraceTransport<T> {
    inner: T,
    in_flight: Arc<InFlight>,
    eof_grace: Duration,
    kill_grace: Duration,
    shutdown: CancellationToken,
    eof_deadline: Option<Instant>,
}

impl<T> GraceTransport<T> {
    /// `shutdown` is cancelled when the grace expires (it kills every run).
    pub fn new(
        inner: T,
        in_flight: Arc<InFlight>,
        eof_grace: Duration,
        kill_grace: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        GraceTransport {
            inner,
            in_flight,
            eof_grace,
            kill_grace,
            shutdown,
            eof_deadline: None,
        }
    }

    async fn after_eof(&mut self) {
        let deadline = *self
            .eof_deadline
            .get_or_insert_with(|| Instant::now() + self.eof_grace);
        if !self.shutdown.is_cancelled() {
            let mut poll = tokio::time::interval(CLIENT_GONE_POLL);
            loop {
                tokio::select! {
                    _ = self.in_flight.drained() => return,
                    _ = tokio::time::sleep_until(deadline) => {
                        tracing::warn!(in_flight = self.in_flight.len(), "stdin closed and the EOF grace expired: killing the remaining runs");
                        break;
                    }
                    _ = poll.tick() => {
                        if stdout_closed() {
                            tracing::info!(in_flight = self.in_flight.len(), "client closed stdout: nobody can read answers, killing the remaining runs");
                            break;
                        }
                    }
                }
            }
            self.shutdown.cancel();
        }
        let wait = self.kill_grace + ANSWER_AFTER_KILL;
        let _ = tokio::time::timeout(wait, self.in_flight.drained()).await;
    }
}

impl<T> Transport<RoleServer> for GraceTransport<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            self.in_flight.update(|ids| {
                ids.remove(&id);
            });
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if self.eof_deadline.is_none() {
            match self.inner.receive().await {
                Some(message) => {
                    self.track(&message);
                    return Some(message);
                }
                None => {
                    tracing::info!(
                        in_flight = self.in_flight.len(),
                        grace_ms = self.eof_grace.as_millis() as u64,
                        "stdin closed"
                    );
                    self.eof_deadline = Some(Instant::now() + self.eof_grace);
                }
            }
        }
        // `receive` runs inside rmcp's select!: this may be dropped and called again, so the
        // deadline lives in `self`.
        self.after_eof().await;
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

impl<T> GraceTransport<T> {
    fn track(&self, message: &RxJsonRpcMessage<RoleServer>) {
        match message {
            JsonRpcMessage::Request(r) => {
                let id = r.id.clone();
                self.in_flight.update(|ids| {
                    ids.insert(id);
                });
            }
            // A cancelled request gets no response: stop waiting for one.
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = c.params.request_id.clone() {
                        self.in_flight.update(|ids| {
                            ids.remove(&id);
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// True when stdout is a pipe whose reading end is closed (the client is gone). Linux and the
/// BSDs report that as `POLLERR`/`POLLHUP` on the writing end.
#[cfg(unix)]
pub fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout; poll only reads fd 1's state.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && (fd.revents & (libc::POLLERR | libc::POLLHUP)) != 0
}

/// Not detectable without a write elsewhere: the EOF grace applies.
#[cfg(not(unix))]
pub fn stdout_closed() -> bool {
    false
}

/// Longest accepted incoming line; longer lines are dropped (and answered as invalid requests)
/// without being buffered whole.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Newline-delimited JSON-RPC over a reader and a writer (the server's stdin and stdout).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    discarding: bool,
    write: Arc<tokio::sync::Mutex<W>>,
    /// Error replies still being written; awaited before EOF is reported.
    replies: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Frames `read` and `write`.
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(tokio::sync::Mutex::new(write)),
            replies: Vec::new(),
        }
    }

    /// Writes one line from a task of its own, so a write cut short by cancellation of the caller
    /// can never leave half a message on stdout.
    fn write_line(&self, mut bytes: Vec<u8>) -> tokio::task::JoinHandle<std::io::Result<()>> {
        bytes.push(b'\n');
        let write = self.write.clone();
        tokio::spawn(async move {
            let mut w = write.lock().await;
            w.write_all(&bytes).await?;
            w.flush().await
        })
    }

    /// Reads one line into `self.line`. Cancel-safe: `receive` runs inside rmcp's `select!`, so
    /// a partial line stays in `self.line` for the next call. `None` at EOF.
    async fn read_line(&mut self) -> Option<std::io::Result<bool>> {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            if available.is_empty() {
                return None;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut oversized = false;
            if !self.discarding {
                if self.line.len() + take > MAX_LINE_BYTES {
                    self.line.clear();
                    self.discarding = true;
                    oversized = true;
                } else {
                    self.line.extend_from_slice(&available[..take]);
                }
            }
            self.read.consume(take);
            if newline.is_some() {
                let was_discarding = std::mem::replace(&mut self.discarding, false);
                return Some(Ok(!(was_discarding || oversized)));
            }
        }
    }

    fn reply_error(&mut self, id: Value, code: i64, message: &str) {
        let reply =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.replies.retain(|r| !r.is_finished());
        let task = self.write_line(reply.to_string().into_bytes());
        self.replies.push(task);
    }
}

/// `_meta` key the transport sets on a `tools/call` whose `arguments` is not an object (the SDK
/// would reject the whole request as an unknown method); the value names the JSON type received.
/// The server answers such a call with an `input_validation` tool error, like any bad argument.
pub const INVALID_ARGUMENTS_META: &str = "geminicli-mcp/invalidArguments";

/// A `tools/call` whose `arguments` is a JSON value other than an object, rewritten to carry
/// empty arguments and [`INVALID_ARGUMENTS_META`].
pub fn repair_tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let mut value: Value = serde_json::from_slice(line).ok()?;
    if value.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = value.get_mut("params")?.as_object_mut()?;
    let kind = match params.get("arguments")? {
        Value::Object(_) | Value::Null => return None,
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    params.insert("arguments".into(), json!({}));
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    meta.as_object_mut()?
        .insert(INVALID_ARGUMENTS_META.into(), json!(kind));
    serde_json::from_value(value).ok()
}

/// What to do with a line that did not parse as a message.
fn unroutable(line: &[u8]) -> Option<(Value, i64, &'static str)> {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Some((Value::Null, -32700, "Parse error"));
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned();
    let method = value.get("method").and_then(Value::as_str);
    // Notifications nobody handles (another protocol's, or a newer MCP's) need no answer.
    if let (None, Some(_)) = (&id, method) {
        return None;
    }
    // A response we never asked for: nothing to answer either.
    if method.is_none() && (value.get("result").is_some() || value.get("error").is_some()) {
        return None;
    }
    Some((id.unwrap_or(Value::Null), -32600, "Invalid Request"))
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let bytes = serde_json::to_vec(&item);
        let write = bytes.map(|b| self.write_line(b));
        async move {
            match write {
                Ok(task) => task.await.map_err(std::io::Error::other)?,
                Err(e) => Err(std::io::Error::other(e)),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(read) = self.read_line().await else {
                // The answers to the last bad lines go out before the session can end.
                for reply in self.replies.drain(..) {
                    let _ = reply.await;
                }
                return None;
            };
            match read {
                Err(e) => {
                    tracing::warn!(error = %e, "reading stdin failed");
                    return None;
                }
                Ok(false) => {
                    tracing::warn!(
                        max = MAX_LINE_BYTES,
                        "dropped an incoming line longer than the limit"
                    );
                    self.reply_error(Value::Null, -32600, "Invalid Request: message too long");
                    continue;
                }
                Ok(true) => {}
            }
            let line = std::mem::take(&mut self.line);
            let mut text: &[u8] = line.strip_suffix(b"\n").unwrap_or(&line);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                // The SDK reads a `tools/call` it cannot decode as a custom request, which it
                // would answer "method not found".
                Ok(JsonRpcMessage::Request(r)) if matches!(&r.request, ClientRequest::CustomRequest(c) if c.method == "tools/call") =>
                {
                    if let Some(repaired) = repair_tool_call(text) {
                        return Some(repaired);
                    }
                    let id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
                    self.reply_error(
                        id,
                        -32602,
                        "Invalid params: tools/call needs `name` (a string) and `arguments` (an object)",
                    );
                }
                Ok(message) => return Some(message),
                Err(_) => {
                    if let Some((id, code, message)) = unroutable(text) {
                        self.reply_error(id, code, message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unroutable_lines() {
        assert_eq!(unroutable(b"not json").unwrap().1, -32700);
        assert_eq!(
            unroutable(b"{\"jsonrpc\":\"2.0\",\"id\":41}").unwrap(),
            (json!(41), -32600, "Invalid Request")
        );
        assert_eq!(unroutable(b"[1,2]").unwrap().0, Value::Null);
        assert!(unroutable(b"{\"jsonrpc\":\"2.0\",\"method\":\"$/lsp\"}").is_none());
        assert!(unroutable(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}").is_none());
    }

    #[test]
    fn tool_calls_with_non_object_arguments_are_repaired() {
        let line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gemini_prompt","arguments":"hi"}}"#;
        let Some(JsonRpcMessage::Request(r)) = repair_tool_call(line) else {
            panic!("not repaired")
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["params"]["arguments"], json!({}));
        assert_eq!(v["params"]["_meta"][INVALID_ARGUMENTS_META], "a string");
        let ok = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        assert!(repair_tool_call(ok).is_none());
    }

    /// An inner transport that yields `messages`, then EOF.
    struct Scripted(std::collections::VecDeque<RxJsonRpcMessage<RoleServer>>);

    impl Transport<RoleServer> for Scripted {
        type Error = std::io::Error;
        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleServer>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }
        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
            self.0.pop_front()
        }
        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn call(id: i64) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "gemini_prompt", "arguments": {}}}))
            .expect("a request")
    }

    fn grace(
        messages: Vec<RxJsonRpcMessage<RoleServer>>,
        eof_grace_ms: u64,
    ) -> (GraceTransport<Scripted>, Arc<InFlight>, CancellationToken) {
        let in_flight = InFlight::new();
        let shutdown = CancellationToken::new();
        let t = GraceTransport::new(
            Scripted(messages.into()),
            in_flight.clone(),
            Duration::from_millis(eof_grace_ms),
            Duration::ZERO,
            shutdown.clone(),
        );
        (t, in_flight, shutdown)
    }

    #[tokio::test]
    async fn eof_waits_for_the_answer() {
        let (mut t, in_flight, shutdown) = grace(vec![call(1)], 60_000);
        assert!(t.receive().await.is_some());
        assert_eq!(in_flight.len(), 1);
        let answer = {
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                in_flight.update(|ids| {
                    ids.remove(&RequestId::Number(1));
                });
            })
        };
        assert!(t.receive().await.is_none(), "EOF once the call is answered");
        answer.await.unwrap();
        assert!(!shutdown.is_cancelled(), "nothing had to be killed");
    }

    #[tokio::test]
    async fn eof_grace_expiry_kills_what_is_left() {
        let (mut t, in_flight, shutdown) = grace(vec![call(1), call(2)], 50);
        assert!(t.receive().await.is_some());
        assert!(t.receive().await.is_some());
        // The killed runs answer as soon as the shutdown reaches them.
        let killed = {
            let in_flight = in_flight.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                shutdown.cancelled().await;
                in_flight.update(|ids| ids.clear());
            })
        };
        assert!(t.receive().await.is_none());
        assert!(shutdown.is_cancelled(), "the grace expired");
        killed.await.unwrap();
        assert!(in_flight.is_empty());
    }

    #[tokio::test]
    async fn a_cancelled_request_is_not_waited_for() {
        let cancel: RxJsonRpcMessage<RoleServer> = serde_json::from_value(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        )
        .unwrap();
        let (mut t, in_flight, shutdown) = grace(vec![call(1), cancel], 60_000);
        assert!(t.receive().await.is_some());
        assert!(t.receive().await.is_some());
        assert!(in_flight.is_empty());
        assert!(t.receive().await.is_none());
        assert!(!shutdown.is_cancelled());
    }

    #[tokio::test]
    async fn lines_are_framed_and_errors_answered() {
        let input = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\nnope\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":5}\n".to_vec();
        let (out_w, mut out_r) = tokio::io::duplex(1 << 16);
        let mut t = LineTransport::new(&input[..], out_w);
        let first = t.receive().await.expect("a message");
        assert!(matches!(first, JsonRpcMessage::Request(_)));
        assert!(t.receive().await.is_none(), "EOF after the errors");
        drop(t);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_r, &mut out)
            .await
            .unwrap();
        let replies: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            replies.contains(
                &json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})
            ),
            "{out}"
        );
        assert!(replies.contains(&json!({"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Invalid Request"}})), "{out}");
    }
}
