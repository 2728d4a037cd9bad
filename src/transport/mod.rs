//! The stdio transport. [`LineTransport`] frames JSON-RPC as one message per line and answers
//! every request it cannot pass on under the request's own id, recovered from the raw line by a
//! streaming scan ([`scan`]) when the line cannot be decoded: text that is not JSON (-32700), JSON
//! that is not a message, an id that is not a string or an integer, nesting deeper than
//! [`MAX_DEPTH`] levels and lines longer than [`MAX_LINE_BYTES`] (-32600). A lone UTF-16
//! surrogate escape becomes U+FFFD. Until the client opens a session, notifications and responses
//! are dropped (rmcp would end the session on them). [`GraceTransport`] adds the EOF grace and
//! refuses a second request under an id still in flight.

mod grace;
pub mod scan;

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{ClientRequest, GetMeta, JsonRpcMessage, ProtocolVersion, RequestMetaObject};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

pub use grace::{stdout_closed, GraceTransport, InFlight};
use scan::{Found, Scan};

/// Longest accepted incoming line; a longer line is read to its end without being kept, and
/// answered under its id. The largest arguments fit under any JSON escaping: a prompt with its
/// context is at most 4 Mi UTF-16 units, 24 MiB written as `\uXXXX` escapes, and a structured
/// output schema 1 MiB, 6 MiB escaped.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Deepest nesting of arrays and objects a message may have (the JSON decoder's limit, which
/// keeps a hostile line from exhausting the stack).
pub const MAX_DEPTH: usize = 128;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line read.
enum Line {
    /// The line is in `LineTransport::line`.
    Kept,
    /// The line was longer than the limit; what its scan found.
    TooLong(Found),
}

/// Newline-delimited JSON-RPC over a reader and a writer (the server's stdin and stdout).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// The longest line kept ([`MAX_LINE_BYTES`]; smaller in tests).
    max_line: usize,
    /// The scan of a line past the limit, fed as it is read.
    overflow: Option<Scan>,
    /// Whether a request that opens rmcp's session (`initialize`, or one that names its protocol
    /// version in `_meta`) has been passed on.
    opened: bool,
    /// Whether that request was a 2026-07-28 one (no `initialize`): the connection is on that
    /// revision, which [`check_params`] reads for a request whose `_meta` names no version.
    revision_2026: bool,
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
        Self::with_limit(read, write, MAX_LINE_BYTES)
    }

    fn with_limit(read: R, write: W, max_line: usize) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line,
            overflow: None,
            opened: false,
            revision_2026: false,
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

    /// Reads one line. Cancel-safe: `receive` runs inside rmcp's `select!`, so a partial line
    /// stays in `self` for the next call. `None` at EOF.
    async fn read_line(&mut self) -> Option<std::io::Result<Line>> {
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
            let piece = &available[..take];
            match &mut self.overflow {
                Some(scan) => scan.feed(piece),
                None if self.line.len() + take > self.max_line => {
                    let mut scan = Scan::new();
                    scan.feed(&self.line);
                    scan.feed(piece);
                    self.line = Vec::new();
                    self.overflow = Some(scan);
                }
                None => self.line.extend_from_slice(piece),
            }
            self.read.consume(take);
            if newline.is_some() {
                return Some(Ok(match self.overflow.take() {
                    Some(scan) => Line::TooLong(scan.found()),
                    None => Line::Kept,
                }));
            }
        }
    }

    /// Answers a line that cannot be passed on, under the id `found` names; a notification or a
    /// response gets no answer.
    fn answer(&mut self, found: Found, code: i64, message: &str) {
        let id = match found {
            Found::Id(id) => id,
            Found::BadId | Found::Nothing => Value::Null,
            Found::Notification | Found::Response => return,
        };
        let reply =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.replies.retain(|r| !r.is_finished());
        let task = self.write_line(reply.to_string().into_bytes());
        self.replies.push(task);
    }

    /// The message a line holds, or `None` once it has been answered (or dropped) here.
    fn decode(&mut self, text: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
            Ok(message) => return self.pass(text, message),
            Err(e) => e,
        };
        if error.is_syntax() {
            if let Some(fixed) = scan::replace_lone_surrogates(text) {
                tracing::debug!("replaced lone UTF-16 surrogate escapes with U+FFFD");
                match serde_json::from_slice(&fixed) {
                    Ok(message) => return self.pass(&fixed, message),
                    Err(e) => {
                        self.refuse(&fixed, &e);
                        return None;
                    }
                }
            }
        }
        self.refuse(text, &error);
        None
    }

    /// Answers a line that does not decode as a message.
    fn refuse(&mut self, text: &[u8], error: &serde_json::Error) {
        let found = scan::scan(text);
        if error.to_string().starts_with("recursion limit exceeded") {
            let message = format!(
                "Invalid Request: the message nests arrays and objects deeper than {MAX_DEPTH} levels"
            );
            return self.answer(found, -32600, &message);
        }
        if error.is_syntax() || error.is_eof() {
            // JSON-RPC's parse error, under the id when the scan could still find one.
            let found = match found {
                Found::Id(id) => Found::Id(id),
                _ => Found::Nothing,
            };
            return self.answer(found, -32700, &format!("Parse error: {error}"));
        }
        let message = match &found {
            Found::BadId => "Invalid Request: the id must be a string or an integer",
            Found::Id(Value::Number(n)) if n.as_i64().is_none() => {
                "Invalid Request: the id must be a string or an integer"
            }
            _ => "Invalid Request",
        };
        self.answer(found, -32600, message);
    }

    /// Passes a decoded message on, after the repairs and checks rmcp does not make.
    fn pass(
        &mut self,
        text: &[u8],
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        if let JsonRpcMessage::Notification(_) = &message {
            // A request whose id is not a string or an integer decodes as a notification.
            if let found @ (Found::Id(_) | Found::BadId) = scan::scan(text) {
                self.answer(
                    found,
                    -32600,
                    "Invalid Request: the id must be a string or an integer",
                );
                return None;
            }
        }
        let JsonRpcMessage::Request(r) = &message else {
            if !self.opened {
                // Before a session, rmcp takes anything but a request as the end of it; the spec
                // has the client send nothing else then, so there is nothing to act on.
                tracing::debug!(
                    "dropped a notification or response sent before the session opened"
                );
                return None;
            }
            return Some(message);
        };
        let id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
        match check_params(text, message, self.revision_2026) {
            Checked::Pass(message) | Checked::Repaired(message) => {
                if let JsonRpcMessage::Request(r) = &message {
                    if !self.opened && opens_session(&r.request) {
                        self.opened = true;
                        self.revision_2026 = names_revision_2026(&r.request);
                    }
                }
                Some(message)
            }
            Checked::InvalidParams(text) => {
                self.answer(Found::Id(id), INVALID_PARAMS, &text);
                None
            }
        }
    }
}

/// JSON-RPC's code for params a method cannot take.
pub const INVALID_PARAMS: i64 = -32602;

/// What becomes of a decoded message ([`check_params`]).
pub enum Checked {
    /// Passed on to rmcp as it came.
    Pass(RxJsonRpcMessage<RoleServer>),
    /// Passed on to rmcp repaired: not what the client sent.
    Repaired(RxJsonRpcMessage<RoleServer>),
    /// Answered [`INVALID_PARAMS`] under the request's id with this message.
    InvalidParams(String),
}

/// The methods rmcp decodes into a request of their own. One of them that arrives as a custom
/// request is one whose params did not decode.
const TYPED_METHODS: &[&str] = {
    use rmcp::model::*;
    &[
        PingRequestMethod::VALUE,
        InitializeResultMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        GetTaskMethod::VALUE,
        UpdateTaskMethod::VALUE,
        CancelTaskMethod::VALUE,
        ListSkillsRequestMethod::VALUE,
        GetSkillRequestMethod::VALUE,
        ReadResourceDirectoryRequestMethod::VALUE,
    ]
};

/// The methods the 2026-07-28 revision removed: the handshake, `ping`, the session's log level
/// (a request names its own) and the subscriptions to one resource (`subscriptions/listen`
/// replaced them). rmcp still decodes them, for the sessions of older revisions.
pub const REMOVED_IN_2026: &[&str] = {
    use rmcp::model::*;
    &[
        InitializeResultMethod::VALUE,
        PingRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
    ]
};

/// Whether `method` does not exist on the revision of a request: it is one the 2026-07-28
/// revision removed ([`REMOVED_IN_2026`]), and the request is on that revision or a later one —
/// by the version its `_meta` names or, when it names none, by its transport's (`revision_2026`:
/// a stdio connection opened without `initialize`, a sessionless HTTP request whose
/// `MCP-Protocol-Version` header names 2026-07-28). Such a request is "method not found" whatever
/// its params (HTTP 404 when sessionless); on an older revision the method exists.
pub fn removed_from_revision(method: &str, meta: &RequestMetaObject, revision_2026: bool) -> bool {
    REMOVED_IN_2026.contains(&method)
        && meta
            .protocol_version()
            .map_or(revision_2026, |v| is_2026_or_later(v.as_str()))
}

/// Whether a protocol version (or a version string of a header) is 2026-07-28 or later. Dates
/// compare as text; a version the server does not know is answered by rmcp as such.
pub fn is_2026_or_later(version: &str) -> bool {
    version >= ProtocolVersion::V_2026_07_28.as_str()
}

/// The one check both transports (stdio and HTTP) make of a message rmcp decoded. rmcp reads a
/// request of a method it knows whose params do not decode (`tasks/get` with a numeric
/// `taskId`, `resources/read` with `uri: 5`) as a custom request, which it answers "method not
/// found" — and sessionless HTTP sends that as 404, which a client reads as "session gone". Such a
/// request is invalid params instead, except a `tools/call` whose `arguments` is not an object:
/// that one is repaired to an `input_validation` tool result ([`repair_tool_call`]), like any
/// bad argument. A method the request's revision does not have ([`removed_from_revision`]) is
/// passed on as it came, for rmcp's "method not found": its params cannot be wrong for a method
/// that is not there. `revision_2026` is what the transport knows of the request's revision.
pub fn check_params(
    text: &[u8],
    message: RxJsonRpcMessage<RoleServer>,
    revision_2026: bool,
) -> Checked {
    let JsonRpcMessage::Request(r) = &message else {
        return Checked::Pass(message);
    };
    let ClientRequest::CustomRequest(custom) = &r.request else {
        return Checked::Pass(message);
    };
    let method = custom.method.as_str();
    if !TYPED_METHODS.contains(&method)
        || removed_from_revision(method, r.request.get_meta(), revision_2026)
    {
        return Checked::Pass(message);
    }
    if method == "tools/call" {
        return match repair_tool_call(text) {
            Some(repaired) => Checked::Repaired(repaired),
            None => Checked::InvalidParams(
                "Invalid params: tools/call needs `name` (a string) and `arguments` (an object)"
                    .into(),
            ),
        };
    }
    Checked::InvalidParams(format!(
        "Invalid params: the params of {method} do not match its schema in the MCP specification"
    ))
}

/// Whether rmcp starts serving on this request: an `initialize`, or (in the 2026-07-28 revision,
/// which has no `initialize`) any request but `ping` and `server/discover` whose `_meta` names a
/// known protocol version with the fields that revision requires. Other requests rmcp answers
/// with an error and goes on waiting.
fn opens_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|v| ProtocolVersion::KNOWN_VERSIONS.contains(&v))
        }
    }
}

/// Whether a request that opens the session is a 2026-07-28 one: not `initialize`, and its
/// `_meta` names that revision or a later one.
fn names_revision_2026(request: &ClientRequest) -> bool {
    !matches!(request, ClientRequest::InitializeRequest(_))
        && request
            .get_meta()
            .protocol_version()
            .is_some_and(|v| is_2026_or_later(v.as_str()))
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
                Ok(Line::TooLong(found)) => {
                    tracing::warn!(
                        max = self.max_line,
                        "refused an incoming line longer than the limit"
                    );
                    let message = format!(
                        "Invalid Request: the message is longer than {} bytes",
                        self.max_line
                    );
                    self.answer(found, -32600, &message);
                    continue;
                }
                Ok(Line::Kept) => {}
            }
            let line = std::mem::take(&mut self.line);
            let mut text: &[u8] = line.strip_suffix(b"\n").unwrap_or(&line);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(message) = self.decode(text) {
                return Some(message);
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

    /// Feeds `input` through a transport with lines up to `max_line` bytes: the messages passed
    /// on, and the replies written.
    async fn exchange(input: &[u8], max_line: usize) -> (Vec<Value>, Vec<Value>) {
        let (out_w, mut out_r) = tokio::io::duplex(1 << 20);
        let mut t = LineTransport::with_limit(input, out_w, max_line);
        let mut passed = Vec::new();
        while let Some(m) = t.receive().await {
            passed.push(serde_json::to_value(&m).unwrap());
        }
        drop(t);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_r, &mut out)
            .await
            .unwrap();
        let replies = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (passed, replies)
    }

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    fn lines(lines: &[&str]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    fn answer_for(replies: &[Value], id: Value) -> &Value {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no answer for id {id}: {replies:?}"))
    }

    #[tokio::test]
    async fn params_a_known_method_cannot_take_are_invalid_params_not_an_unknown_method() {
        let requests = [
            ("get-num", r#""method":"tasks/get","params":{"taskId":5}"#),
            (
                "get-null",
                r#""method":"tasks/get","params":{"taskId":null}"#,
            ),
            ("get-none", r#""method":"tasks/get","params":{}"#),
            (
                "cancel-array",
                r#""method":"tasks/cancel","params":{"taskId":[1]}"#,
            ),
            (
                "update-string",
                r#""method":"tasks/update","params":{"taskId":"t","inputResponses":"x"}"#,
            ),
            (
                "read-num",
                r#""method":"resources/read","params":{"uri":5}"#,
            ),
            (
                "level-num",
                r#""method":"logging/setLevel","params":{"level":5}"#,
            ),
            (
                "call-noname",
                r#""method":"tools/call","params":{"arguments":{}}"#,
            ),
        ];
        let mut input = String::new();
        for (id, rest) in requests {
            input.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",{rest}}}\n"));
        }
        // Methods the SDK does not know stay custom requests: the server answers those.
        input.push_str(r#"{"jsonrpc":"2.0","id":"custom","method":"no/such","params":{"a":1}}"#);
        input.push('\n');
        let (passed, replies) = exchange(input.as_bytes(), MAX_LINE_BYTES).await;
        assert_eq!(replies.len(), requests.len(), "{replies:?}");
        for (id, _) in requests {
            let reply = answer_for(&replies, json!(id));
            assert_eq!(reply["error"]["code"], -32602, "{id}: {reply}");
        }
        assert!(
            answer_for(&replies, json!("level-num"))["error"]["message"]
                .as_str()
                .unwrap()
                .contains("logging/setLevel"),
            "{replies:?}"
        );
        assert_eq!(passed.len(), 1, "{passed:?}");
        assert_eq!(passed[0]["method"], "no/such");
    }

    #[tokio::test]
    async fn a_method_2026_removed_is_passed_on_for_method_not_found_whatever_its_params() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let input = lines(&[
            // Opens a 2026-07-28 connection.
            &format!(
                r#"{{"jsonrpc":"2.0","id":"open","method":"tools/list","params":{{{meta}}}}}"#
            ),
            &format!(
                r#"{{"jsonrpc":"2.0","id":"init","method":"initialize","params":{{{meta}}}}}"#
            ),
            &format!(
                r#"{{"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{{"uri":5,{meta}}}}}"#
            ),
            // No version in `_meta`: the connection's revision decides.
            r#"{"jsonrpc":"2.0","id":"level","method":"logging/setLevel","params":{"level":5}}"#,
            // A method the revision has: invalid params, answered here.
            &format!(
                r#"{{"jsonrpc":"2.0","id":"read","method":"resources/read","params":{{"uri":5,{meta}}}}}"#
            ),
        ]);
        let (passed, replies) = exchange(&input, MAX_LINE_BYTES).await;
        let ids: Vec<&Value> = passed.iter().map(|m| &m["id"]).collect();
        assert_eq!(
            ids,
            [
                &json!("open"),
                &json!("init"),
                &json!("sub"),
                &json!("level")
            ]
        );
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(answer_for(&replies, json!("read"))["error"]["code"], -32602);

        // On a connection opened by `initialize`, the same params are invalid params.
        let input = lines(&[
            INITIALIZE,
            r#"{"jsonrpc":"2.0","id":"level","method":"logging/setLevel","params":{"level":5}}"#,
            r#"{"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{"uri":5}}"#,
        ]);
        let (passed, replies) = exchange(&input, MAX_LINE_BYTES).await;
        assert_eq!(passed.len(), 1, "{passed:?}");
        for id in ["level", "sub"] {
            assert_eq!(
                answer_for(&replies, json!(id))["error"]["code"],
                -32602,
                "{id}"
            );
        }
    }

    #[tokio::test]
    async fn lines_are_framed_and_errors_answered() {
        let input = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\nnope\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":5}\n";
        let (passed, replies) = exchange(input, MAX_LINE_BYTES).await;
        assert_eq!(passed.len(), 1, "{passed:?}");
        assert_eq!(replies.len(), 2, "{replies:?}");
        assert_eq!(answer_for(&replies, Value::Null)["error"]["code"], -32700);
        assert_eq!(
            answer_for(&replies, json!("x"))["error"],
            json!({"code": -32600, "message": "Invalid Request"})
        );
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_answered_under_the_id_it_still_shows() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\n";
        let (_, replies) = exchange(input, 1024).await;
        let error = &answer_for(&replies, json!(3))["error"];
        assert_eq!(error["code"], -32700);
        assert!(error["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error: "));
    }

    #[tokio::test]
    async fn ids_that_are_not_strings_or_integers_get_an_answer() {
        let input = lines(&[
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
        ]);
        let (passed, replies) = exchange(&input, 1024).await;
        assert!(passed.is_empty(), "{passed:?}");
        assert_eq!(
            replies.len(),
            3,
            "no answer to the notification: {replies:?}"
        );
        let nulls = replies.iter().filter(|r| r["id"].is_null()).count();
        assert_eq!(nulls, 2, "{replies:?}");
        let float = &answer_for(&replies, json!(1.5))["error"];
        assert_eq!(float["code"], -32600);
        assert!(float["message"]
            .as_str()
            .unwrap()
            .contains("the id must be"));
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_answered_under_its_id_even_when_the_id_comes_last() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"gemini_prompt","arguments":{{"prompt":"{}"}}}},"id":"late"}}"#,
            "a".repeat(10_000)
        );
        let input = lines(&[&long, INITIALIZE]);
        let (passed, replies) = exchange(&input, 4096).await;
        assert_eq!(passed.len(), 1, "the next line is read: {passed:?}");
        let error = &answer_for(&replies, json!("late"))["error"];
        assert_eq!(error["code"], -32600);
        assert!(error["message"]
            .as_str()
            .unwrap()
            .contains("longer than 4096 bytes"));
    }

    #[tokio::test]
    async fn nesting_deeper_than_the_limit_is_answered_under_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"gemini_structured","arguments":{{"schema":{}1{}}}}}}}"#,
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let (_, replies) = exchange(&lines(&[&deep]), MAX_LINE_BYTES).await;
        let error = &answer_for(&replies, json!(9))["error"];
        assert_eq!(error["code"], -32600);
        assert!(error["message"]
            .as_str()
            .unwrap()
            .contains("deeper than 128"));
    }

    #[tokio::test]
    async fn a_lone_surrogate_becomes_the_replacement_character() {
        let input = lines(&[
            INITIALIZE,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gemini_prompt","arguments":{"prompt":"cut \ud83d"}}}"#,
        ]);
        let (passed, replies) = exchange(&input, MAX_LINE_BYTES).await;
        assert!(replies.is_empty(), "{replies:?}");
        assert_eq!(passed[1]["params"]["arguments"]["prompt"], "cut \u{fffd}");
    }

    #[tokio::test]
    async fn notifications_and_responses_before_the_session_are_dropped() {
        let input = lines(&[
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            INITIALIZE,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ]);
        let (passed, replies) = exchange(&input, MAX_LINE_BYTES).await;
        assert!(replies.is_empty(), "{replies:?}");
        let methods: Vec<_> = passed.iter().map(|m| m["method"].clone()).collect();
        assert_eq!(
            methods,
            [
                json!("ping"),
                json!("initialize"),
                json!("notifications/initialized")
            ]
        );
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
}
