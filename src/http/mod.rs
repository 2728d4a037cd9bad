//! The Streamable HTTP transport (`--http ADDR`): rmcp's `StreamableHttpService` on hyper's
//! HTTP/1 server, behind a bearer token, with the MCP spec's `Origin` and `Host` checks, and
//! connections bounded in time and number (`connections`). Off by default; loopback only unless
//! `--http-allow-remote`. One server then serves several clients, which share the concurrency
//! bound, the working directory and the environment (docs/http.md).

use std::convert::Infallible;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::parse::{parse_flag, parse_positive, split_list};
use crate::config::settings;
use crate::server::GeminiServer;

mod accept;
mod connections;

use connections::{Admitted, Connection, Membership, Registry, Tracked, Watched};
pub use connections::{Limits, DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS};

/// The one path MCP is served on.
pub const MCP_PATH: &str = "/mcp";
/// The variable holding the bearer token itself.
pub const TOKEN_ENV: &str = settings::HTTP_TOKEN.name;
/// The variable naming a file whose first line is the token.
pub const TOKEN_FILE_ENV: &str = settings::HTTP_TOKEN_FILE.name;
/// Shortest token accepted: a guessable token on a port any local process can reach is no lock.
pub const MIN_TOKEN_BYTES: usize = 16;
/// Names accepted in `Host` besides the operator's: DNS rebinding needs a name that is not these.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// The variable of the header-read timeout ([`Limits::header_timeout`]).
pub const HEADER_TIMEOUT_ENV: &str = settings::HTTP_HEADER_TIMEOUT_MS.name;
/// The variable of the idle timeout ([`Limits::idle_timeout`]).
pub const IDLE_TIMEOUT_ENV: &str = settings::HTTP_IDLE_TIMEOUT_MS.name;
/// The variable of the connection cap ([`Limits::max_connections`]).
pub const MAX_CONNECTIONS_ENV: &str = settings::HTTP_MAX_CONNECTIONS.name;

/// Why the HTTP transport cannot start. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    /// `--http` is not an address.
    #[error("--http {0:?} is not an address like 127.0.0.1:8765 or [::1]:8765")]
    BadAddress(String),
    /// A non-loopback address without the opt-in.
    #[error(
        "--http {0} is not a loopback address; anyone who can reach it could run Gemini with yolo \
         in this server's folder. Pass --http-allow-remote (and --http-allowed-host NAME) if you mean it"
    )]
    NotLoopback(SocketAddr),
    /// No token anywhere.
    #[error(
        "--http needs a bearer token: set {TOKEN_ENV}, or put it in a file named by \
         --http-token-file / {TOKEN_FILE_ENV} (e.g. `openssl rand -hex 32`)"
    )]
    NoToken,
    /// The token file cannot be read.
    #[error("cannot read the token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A token too short to resist guessing.
    #[error(
        "the bearer token is shorter than {MIN_TOKEN_BYTES} bytes; use e.g. `openssl rand -hex 32`"
    )]
    WeakToken,
    /// A connection limit's variable that is not a positive whole number. Unlike the other
    /// variables this stops the server: a limit it silently replaced would protect nothing.
    #[error(
        "{name}={value:?} is not a positive whole number; fix it, or unset it for the default"
    )]
    BadLimit {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
}

/// Where the token came from (for the log and the doctor; never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `GEMINICLI_MCP_HTTP_TOKEN`.
    Env,
    /// A file.
    File(PathBuf),
}

/// Everything the HTTP transport needs.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token clients must send.
    token: Arc<str>,
    /// Where the token came from.
    pub token_source: TokenSource,
    /// Browser origins allowed (`scheme://host:port`); any other `Origin` is refused with 403.
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// The connections' timeouts and cap.
    pub limits: Limits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: never in a Debug string.
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token_source", &self.token_source)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl HttpOptions {
    /// The options when `--http` / `GEMINICLI_MCP_HTTP` is set (`Ok(None)` otherwise), read
    /// through `lookup`: the environment with the flags over it ([`crate::config::Given::over`]).
    pub fn read(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<Self>, HttpConfigError> {
        let text = |name: &str| lookup(name).map(|v| v.to_string_lossy().into_owned());
        let Some(addr) = text(settings::HTTP.name).filter(|a| !a.trim().is_empty()) else {
            return Ok(None);
        };
        let addr: SocketAddr = addr
            .trim()
            .parse()
            .map_err(|_| HttpConfigError::BadAddress(addr.clone()))?;
        let allow_remote = text(settings::HTTP_ALLOW_REMOTE.name).is_some_and(|v| parse_flag(&v));
        if !addr.ip().is_loopback() && !allow_remote {
            return Err(HttpConfigError::NotLoopback(addr));
        }
        let file = lookup(TOKEN_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let (token, token_source) = match file {
            Some(path) => (read_token_file(&path)?, TokenSource::File(path)),
            None => match text(TOKEN_ENV) {
                Some(t) => (t.trim().to_owned(), TokenSource::Env),
                None => return Err(HttpConfigError::NoToken),
            },
        };
        if token.is_empty() {
            return Err(HttpConfigError::NoToken);
        }
        if token.len() < MIN_TOKEN_BYTES {
            return Err(HttpConfigError::WeakToken);
        }
        let list =
            |var: &str| -> Vec<String> { text(var).map(|v| split_list(&v)).unwrap_or_default() };
        Ok(Some(HttpOptions {
            addr,
            token: token.into(),
            token_source,
            allowed_origins: list(settings::HTTP_ALLOWED_ORIGINS.name),
            allowed_hosts: list(settings::HTTP_ALLOWED_HOSTS.name),
            limits: limits(&text)?,
        }))
    }

    /// The settings for the doctor's report, by variable name; the token only by its source.
    pub fn describe(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        let token = match &self.token_source {
            TokenSource::Env => format!("set in {TOKEN_ENV}"),
            TokenSource::File(path) => format!("read from {}", path.display()),
        };
        vec![
            (settings::HTTP.name, json!(self.addr.to_string())),
            (TOKEN_ENV, json!(token)),
            (
                settings::HTTP_ALLOWED_ORIGINS.name,
                json!(self.allowed_origins.join(",")),
            ),
            (
                settings::HTTP_ALLOWED_HOSTS.name,
                json!(self.allowed_hosts.join(",")),
            ),
            (
                HEADER_TIMEOUT_ENV,
                json!(self.limits.header_timeout.as_millis()),
            ),
            (
                IDLE_TIMEOUT_ENV,
                json!(self.limits.idle_timeout.as_millis()),
            ),
            // The cap in effect: when not set, what the open-file limit leaves room for.
            (MAX_CONNECTIONS_ENV, json!(self.limits.cap())),
        ]
    }

    /// Whether an `Authorization` header value carries the token.
    pub fn authorized(&self, header: Option<&[u8]>) -> bool {
        let Some(value) = header else {
            return false;
        };
        // RFC 6750: the scheme is case-insensitive, one space, then the token.
        let Some((scheme, token)) = value.split_at_checked(7) else {
            return false;
        };
        scheme.eq_ignore_ascii_case(b"Bearer ") && constant_time_eq(token, self.token.as_bytes())
    }
}

/// The connection limits: each variable (or its flag) over the default. A variable that is set
/// (not empty) must be a positive whole number.
fn limits(lookup: &impl Fn(&str) -> Option<String>) -> Result<Limits, HttpConfigError> {
    let number = |name: &'static str| -> Result<Option<u64>, HttpConfigError> {
        match lookup(name) {
            Some(value) if !value.trim().is_empty() => parse_positive(value.trim())
                .map(Some)
                .ok_or(HttpConfigError::BadLimit { name, value }),
            _ => Ok(None),
        }
    };
    let d = Limits::default();
    Ok(Limits {
        header_timeout: number(HEADER_TIMEOUT_ENV)?.map_or(d.header_timeout, Duration::from_millis),
        idle_timeout: number(IDLE_TIMEOUT_ENV)?.map_or(d.idle_timeout, Duration::from_millis),
        max_connections: number(MAX_CONNECTIONS_ENV)?
            .map(|v| usize::try_from(v).unwrap_or(usize::MAX)),
    })
}

fn read_token_file(path: &Path) -> Result<String, HttpConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| HttpConfigError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// Compares without an early exit, so the time taken does not say how much of a guess matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    use http_body_util::BodyExt;
    let mut response =
        Response::new(http_body_util::Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The body read within [`MAX_BODY_BYTES`] ([`read_body`]), then the answers stdio gives
/// (`transport::LineTransport`) to what the SDK cannot decode, through the same
/// [`crate::transport::check_params`]: a `tools/call` whose arguments are not an object repaired to
/// an `input_validation` result, any other request of a method the request's revision has whose
/// params do not decode answered -32602. Every other request is handed on unchanged (a method a
/// sessionless 2026-07-28 request's revision removed included: rmcp answers it 404, -32601).
async fn repair(request: Request<Incoming>) -> Result<Request<Body>, Response<Body>> {
    let (mut parts, body) = request.into_parts();
    let mut bytes = match read_body(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => {
            let text = format!(
                "the request body is larger than {}: send less",
                size_text(MAX_BODY_BYTES)
            );
            return Err(plain(StatusCode::PAYLOAD_TOO_LARGE, &text));
        }
        Err(BodyError::Broken) => {
            let text = "the request body was cut short or malformed";
            return Err(plain(StatusCode::BAD_REQUEST, text));
        }
    };
    // A lone UTF-16 surrogate escape reads as U+FFFD, as over stdio: the decoder would refuse the
    // whole request. Only a body with a `\u` escape is scanned.
    if contains(&bytes, b"\\u") {
        if let Some(fixed) = crate::transport::scan::replace_lone_surrogates(&bytes) {
            bytes = Bytes::from(fixed);
            parts.headers.remove(hyper::header::CONTENT_LENGTH);
        }
    }
    // The checks stdio makes of a request rmcp decoded (`transport::check_params`).
    if parts.method == hyper::Method::POST {
        use crate::transport::{check_params, Checked};
        use rmcp::model::JsonRpcMessage;
        if let Ok(message) = serde_json::from_slice::<
            rmcp::service::RxJsonRpcMessage<rmcp::service::RoleServer>,
        >(&bytes)
        {
            let id = match &message {
                JsonRpcMessage::Request(r) => serde_json::to_value(&r.id).unwrap_or_default(),
                _ => serde_json::Value::Null,
            };
            match check_params(&bytes, message, sessionless_2026(&parts.headers)) {
                Checked::Repaired(repaired) => {
                    if let Ok(text) = serde_json::to_vec(&repaired) {
                        bytes = Bytes::from(text);
                        parts.headers.remove(hyper::header::CONTENT_LENGTH);
                    }
                }
                Checked::Pass(_) => {}
                Checked::InvalidParams(text) => {
                    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": crate::transport::INVALID_PARAMS, "message": text}});
                    let mut response = plain(StatusCode::OK, &error.to_string());
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    return Err(response);
                }
            }
        }
    }
    Ok(Request::from_parts(
        parts,
        http_body_util::BodyExt::boxed(http_body_util::Full::new(bytes)),
    ))
}

/// Whether the headers say a request is a sessionless 2026-07-28 one: no `Mcp-Session-Id` (that
/// revision has no sessions) and an `MCP-Protocol-Version` of 2026-07-28 or later. The version in
/// the request's `_meta`, when it names one, goes before this ([`crate::transport::check_params`]).
fn sessionless_2026(headers: &hyper::HeaderMap) -> bool {
    !headers.contains_key("mcp-session-id")
        && headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(crate::transport::is_2026_or_later)
}

/// Longest request body over HTTP. Every argument at its largest fits as UTF-8 (a prompt with its
/// context of 4 Mi UTF-16 units is at most 12 MiB, an output schema 1 MiB); stdio's lines may be
/// longer ([`crate::transport::MAX_LINE_BYTES`]) because a line is read by one client of the
/// operator's, while a body is held in memory whole and any holder of the token may send several
/// at once: a body that never ends costs at most this much before it is refused.
pub const MAX_BODY_BYTES: usize = 24 * 1024 * 1024;

/// Why a request body was not read.
#[derive(Debug, PartialEq, Eq)]
enum BodyError {
    /// Longer than the limit (said by its `Content-Length`, or counted as its chunks came).
    TooLarge,
    /// The connection broke, or the chunked framing was malformed.
    Broken,
}

/// The request body in one buffer, read frame by frame as it arrives and refused the moment it
/// passes `limit`: a `Content-Length` over it before any byte is read, a chunked body (which
/// declares no length) once its chunks add up past it. Nothing past the limit is buffered, and
/// the body is copied once (a collection of frames joined at the end would hold it twice).
async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    use http_body_util::BodyExt;
    let hint = hyper::body::Body::size_hint(&body);
    let limit64 = u64::try_from(limit).unwrap_or(u64::MAX);
    if hint.lower() > limit64 {
        return Err(BodyError::TooLarge);
    }
    let mut body = body;
    // A declared length is allocated once; a chunked body grows with what came.
    let declared = hint
        .exact()
        .map_or(0, |n| usize::try_from(n).unwrap_or(limit));
    let mut buffer: Vec<u8> = Vec::with_capacity(declared.min(limit));
    let mut first: Option<Bytes> = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers carry no body
        };
        let held = first.as_ref().map_or(0, Bytes::len) + buffer.len();
        if held + data.len() > limit {
            return Err(BodyError::TooLarge);
        }
        // The usual body is one frame: kept as it came, with no copy.
        if first.is_none() && buffer.is_empty() {
            first = Some(data);
            continue;
        }
        if let Some(head) = first.take() {
            buffer.extend_from_slice(&head);
        }
        buffer.extend_from_slice(&data);
    }
    Ok(match first {
        Some(head) => head,
        None => Bytes::from(buffer),
    })
}

/// A byte count as the docs state limits: in MiB when it is a whole number of them.
fn size_text(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The name of a header that must come once and came more often: the checks (rmcp's `Host`
/// allow-list against DNS rebinding, its `Origin` check) read only the first one, and whatever
/// reads the request after them may take another.
fn repeated_header(headers: &hyper::HeaderMap) -> Option<&'static str> {
    [
        (hyper::header::HOST, "Host"),
        (hyper::header::ORIGIN, "Origin"),
    ]
    .into_iter()
    .find(|(name, _)| headers.get_all(name).iter().nth(1).is_some())
    .map(|(_, text)| text)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Connections the kernel may hold for the accept loop. The usual 128 fills in a burst of
/// connections while the loop closes others to make room, and a client whose SYN finds it full
/// waits a second for the retry.
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR` on unix, as std sets it).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

type Mcp = StreamableHttpService<GeminiServer, LocalSessionManager>;

/// What every connection's requests share.
struct Shared {
    mcp: Mcp,
    options: HttpOptions,
}

/// rmcp's service for `server`, with the `Host` and `Origin` allow-lists and the body limit.
fn mcp_service(
    port: u16,
    options: &HttpOptions,
    server: GeminiServer,
    shutdown: &CancellationToken,
) -> Mcp {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
    hosts.extend(options.allowed_hosts.iter().cloned());
    // The server's own loopback origins: no page is served from them, so nothing hostile runs
    // there; a rebinding page keeps its own origin (http://evil.example:PORT) and is refused.
    let mut origins = options.allowed_origins.clone();
    origins.extend(["localhost", "127.0.0.1", "[::1]"].map(|h| format!("http://{h}:{port}")));
    // The spec: servers MUST validate Origin; a present Origin not on the list gets 403. rmcp
    // makes the check (and the Host check against DNS rebinding) once told to enforce it.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        // rmcp's default (4 MiB) is below the prompt sizes stdio accepts.
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(shutdown.child_token());
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves MCP on `listener` until `shutdown` is cancelled. Every session gets a handle of the
/// same `server`: one concurrency bound, one working directory, one environment. At most
/// [`Limits::cap`] connections at once: at the cap a new one takes the place of the oldest that
/// has not sent the token, or is closed when every connection has.
pub async fn serve(
    listener: TcpListener,
    options: HttpOptions,
    server: GeminiServer,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mcp = mcp_service(listener.local_addr()?.port(), &options, server, &shutdown);
    let registry = Registry::new(options.limits.cap());
    tracing::debug!(
        max_connections = registry.cap(),
        header_timeout_ms = options.limits.header_timeout.as_millis() as u64,
        idle_timeout_ms = options.limits.idle_timeout.as_millis() as u64,
        "HTTP connection limits"
    );
    let shared = Arc::new(Shared { mcp, options });
    let mut errors = accept::AcceptErrors::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                errors.succeeded();
                accepted
            }
            Err(e) => {
                // Out of descriptors or similar: keep serving the connections we have. A
                // connection closed for its descriptor lets the next try succeed at once; any
                // other failure waits longer each time.
                let retry = async {
                    match accept_failed(&e, &mut errors, &registry) {
                        Some(evicted) => evicted.gone().await,
                        None => tokio::time::sleep(errors.backoff()).await,
                    }
                };
                tokio::select! {
                    _ = retry => continue,
                    _ = shutdown.cancelled() => return Ok(()),
                }
            }
        };
        let Some(Admitted {
            membership,
            evicted,
        }) = registry.admit()
        else {
            // The operator's own clients fill the cap: not a stranger's doing, so not rate-limited.
            tracing::info!(
                %peer,
                max_connections = registry.cap(),
                "HTTP connection refused: the cap is reached and every connection has sent the token"
            );
            continue;
        };
        if let Some(evicted) = evicted {
            // Its descriptor is free before the new connection holds one more.
            evicted.gone().await;
        }
        tokio::spawn(connection(
            stream,
            peer,
            membership,
            shared.clone(),
            shutdown.clone(),
        ));
    }
}

/// Serves one connection until it ends, one of its timeouts closes it, the registry closes it to
/// admit another, or the server shuts down.
async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    membership: Membership,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) {
    let conn = membership.connection().clone();
    serve_connection(stream, peer, &conn, &shared, &shutdown).await;
    // After the socket is closed: the registry's count and `Connection::gone` mean that.
    drop(membership);
}

/// The hyper connection of [`connection`], run to its end or until one of the others.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    conn: &Arc<Connection>,
    shared: &Arc<Shared>,
    shutdown: &CancellationToken,
) {
    let service = {
        let conn = conn.clone();
        let shared = shared.clone();
        hyper::service::service_fn(move |request: Request<Incoming>| {
            // Called once the request's headers are complete: from here until its response
            // ends, the connection is busy, and no timeout applies.
            let in_progress = conn.request_started();
            let conn = conn.clone();
            let shared = shared.clone();
            async move {
                let response = handle(request, &shared, &conn, peer).await;
                Ok::<_, Infallible>(response.map(|body| Tracked::new(body, in_progress)))
            }
        })
    };
    // Not hyper's header_read_timeout: its timer also runs while a keep-alive connection waits
    // for its next request, which would close it at the header timeout, not the idle timeout.
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(Watched::new(stream, conn.clone())), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
        }
        expiry = conn.expired(&shared.options.limits) => {
            tracing::debug!(%peer, ?expiry, "HTTP connection closed by its timeout");
        }
        _ = conn.evicted.cancelled() => {
            tracing::debug!(%peer, "HTTP connection closed to make room for a new one");
        }
        _ = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
        }
    }
}

/// One request: the repeated-header check, the path, the token, the repair of a `tools/call`
/// the SDK cannot decode, then rmcp.
async fn handle(
    request: Request<Incoming>,
    shared: &Shared,
    conn: &Connection,
    peer: SocketAddr,
) -> Response<Body> {
    // Before the token: a request no check can judge is malformed for everyone.
    if let Some(name) = repeated_header(request.headers()) {
        tracing::info!(%peer, header = name, "HTTP request refused: a repeated header");
        let text = format!("more than one {name} header: send exactly one");
        return plain(StatusCode::BAD_REQUEST, &text);
    }
    if request.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, "not found: MCP is served on /mcp");
    }
    let auth = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !shared.options.authorized(auth) {
        // Info, not warn: warnings reach every connected client, and whoever can reach the port
        // must not be able to flood them.
        tracing::info!(%peer, "HTTP request refused: missing or wrong bearer token");
        let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
        response.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    // The operator's client: never closed to make room for another connection.
    conn.authenticate();
    let request = match repair(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let mut mcp = shared.mcp.clone();
    match tower_service::Service::call(&mut mcp, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Logs a failed accept on stderr only, at most once per [`accept::LOG_INTERVAL`]: whoever can
/// reach the port can make accepts fail as often as they like, and warnings otherwise reach every
/// connected client's log. Out of descriptors, the oldest connection that has not sent the token
/// is closed to free one; it is returned, to wait until it is gone.
fn accept_failed(
    error: &std::io::Error,
    errors: &mut accept::AcceptErrors,
    registry: &Registry,
) -> Option<Arc<Connection>> {
    if let Some(suppressed) = errors.note(std::time::Instant::now()) {
        tracing::warn!(
            target: crate::logging::STDERR_ONLY,
            %error,
            suppressed,
            connections = registry.len(),
            "accepting an HTTP connection failed (at most one such line every 10 s; `suppressed`: \
             the failures since the last one)"
        );
    }
    if accept::out_of_descriptors(error) {
        registry.evict_oldest()
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
