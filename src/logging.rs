//! Logs: `tracing` to stderr under a filter (`--log` / `GEMINICLI_MCP_LOG`), and the server's own
//! warnings and errors mirrored to every connected client as MCP `notifications/message`, each
//! client at the level it chose with `logging/setLevel` (default: warning). On the 2026-07-28
//! revision there is no session to register: a request asks for log messages with
//! `io.modelcontextprotocol/logLevel` in its `_meta`, and gets those of its own handling
//! ([`for_request`]), none without it. Events with the target [`STDERR_ONLY`] stay on stderr.
//!
//! rmcp marks MCP logging deprecated (SEP-2577, a later protocol revision); the protocol versions
//! this server speaks still define it, hence the `allow(deprecated)` below.
#![allow(deprecated)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The filter without `--log`/`GEMINICLI_MCP_LOG`. rmcp's own debug logs quote requests and
/// answers, so it stays at `warn` even in debug mode: prompt text must never reach the log.
pub fn default_filter(debug: bool) -> &'static str {
    if debug {
        "geminicli_mcp=debug,rmcp=warn"
    } else {
        "geminicli_mcp=warn,rmcp=error"
    }
}

/// The target of events that go to stderr only, never to clients: what anyone who can reach the
/// HTTP port can cause as often as they like (a failed accept when descriptors run out) must not
/// reach every connected client's log. Use it as `tracing::warn!(target: logging::STDERR_ONLY, …)`;
/// the stderr filter sees it as part of `geminicli_mcp`.
pub const STDERR_ONLY: &str = "geminicli_mcp::stderr_only";

/// The level a client gets before it sends `logging/setLevel`.
pub const DEFAULT_CLIENT_LEVEL: LoggingLevel = LoggingLevel::Warning;

/// Sets up the global subscriber: stderr (JSON lines in debug mode) filtered by `filter` (the
/// default when `None` or invalid, with a note on stderr), plus the client mirror.
pub fn init(filter: Option<&str>, debug: bool) {
    let (env_filter, bad) = match filter.map(str::trim).filter(|f| !f.is_empty()) {
        None => (EnvFilter::new(default_filter(debug)), None),
        Some(f) => match EnvFilter::try_new(f) {
            Ok(parsed) => (parsed, None),
            Err(e) => (EnvFilter::new(default_filter(debug)), Some(e.to_string())),
        },
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let stderr = if debug {
        stderr.json().flatten_event(true).boxed()
    } else {
        stderr.boxed()
    };
    let _ = tracing_subscriber::registry()
        .with(stderr.with_filter(env_filter))
        .with(ClientMirror)
        .try_init();
    if let Some(e) = bad {
        tracing::warn!(error = %e, "invalid log filter (--log / {}); using the default", crate::config::settings::LOG.name);
    }
}

/// A connected client that receives log notifications.
struct Listener {
    id: u64,
    peer: Peer<RoleServer>,
    level: LoggingLevel,
}

fn listeners() -> &'static Mutex<Vec<Listener>> {
    static LISTENERS: OnceLock<Mutex<Vec<Listener>>> = OnceLock::new();
    LISTENERS.get_or_init(Mutex::default)
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Listener>> {
    crate::sync::lock(listeners())
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Adds a client (at its `initialize`); closed connections are dropped as they are seen. A
/// client registered already (a `logging/setLevel` came first) keeps its level.
pub fn register(peer: Peer<RoleServer>) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut all = lock();
    all.retain(|l| !l.peer.is_transport_closed());
    if all.iter().any(|l| same_peer(&l.peer, &peer)) {
        return;
    }
    all.push(Listener {
        id,
        peer,
        level: DEFAULT_CLIENT_LEVEL,
    });
}

/// `logging/setLevel` from the client behind `peer`: registers it if need be.
pub fn set_level(peer: &Peer<RoleServer>, level: LoggingLevel) {
    let mut all = lock();
    all.retain(|l| !l.peer.is_transport_closed());
    // Peers have no identity of their own; the one sharing this peer's channel is this client.
    match all.iter_mut().find(|l| same_peer(&l.peer, peer)) {
        Some(l) => l.level = level,
        None => all.push(Listener {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            peer: peer.clone(),
            level,
        }),
    }
}

tokio::task_local! {
    /// The client of the request being handled and the level its `_meta` asked for
    /// ([`for_request`]).
    static REQUEST_LISTENER: (Peer<RoleServer>, LoggingLevel);
}

/// Handles one request (`handling`) so that the server's warnings and errors logged while it runs
/// reach the client behind `peer` at `level` or above: logging on the 2026-07-28 revision, where
/// the request's `_meta` names the level (`io.modelcontextprotocol/logLevel`). Without a level it
/// runs as is, and that request gets no log message.
pub async fn for_request<F: Future>(
    peer: &Peer<RoleServer>,
    level: Option<LoggingLevel>,
    handling: F,
) -> F::Output {
    match level {
        Some(level) => {
            REQUEST_LISTENER
                .scope((peer.clone(), level), handling)
                .await
        }
        None => handling.await,
    }
}

fn same_peer(a: &Peer<RoleServer>, b: &Peer<RoleServer>) -> bool {
    // Two handles of one connection share its peer info allocation once initialized.
    match (a.peer_info(), b.peer_info()) {
        (Some(x), Some(y)) => std::sync::Arc::ptr_eq(&x, &y),
        _ => false,
    }
}

/// MCP severity rank (RFC 5424 order).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The MCP level of a tracing level.
pub fn mcp_level(level: &Level) -> LoggingLevel {
    match *level {
        Level::ERROR => LoggingLevel::Error,
        Level::WARN => LoggingLevel::Warning,
        Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// Whether an event of this level and target is mirrored to clients: only this crate's (never
/// rmcp's, which can quote requests), only WARN and above (the debug diagnostics stay on stderr),
/// and never one marked [`STDERR_ONLY`].
fn mirrored(level: &Level, target: &str) -> bool {
    *level <= Level::WARN && target.starts_with("geminicli_mcp") && target != STDERR_ONLY
}

/// The layer that mirrors the server's warnings and errors to clients (those [`mirrored`] lets
/// through).
struct ClientMirror;

impl<S: Subscriber> Layer<S> for ClientMirror {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        if !mirrored(meta.level(), meta.target()) {
            return;
        }
        let level = mcp_level(meta.level());
        let mut targets: Vec<(u64, Peer<RoleServer>)> = lock()
            .iter()
            .filter(|l| rank(level) >= rank(l.level) && !l.peer.is_transport_closed())
            .map(|l| (l.id, l.peer.clone()))
            .collect();
        let asked = REQUEST_LISTENER
            .try_with(|(peer, at)| (rank(level) >= rank(*at)).then(|| peer.clone()))
            .ok()
            .flatten();
        targets.extend(asked.map(|peer| (0, peer)));
        if targets.is_empty() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut fields = FieldsJson::default();
        event.record(&mut fields);
        let data = json!(fields.0);
        for (_, peer) in targets {
            let param = LoggingMessageNotificationParam::new(level, data.clone())
                .with_logger(meta.target());
            handle.spawn(async move {
                let _ = peer.notify_logging_message(param).await;
            });
        }
    }
}

/// An event's fields as a JSON object (`message` plus the structured fields).
#[derive(Default)]
struct FieldsJson(Map<String, Value>);

impl Visit for FieldsJson {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), json!(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_rank_in_rfc5424_order() {
        assert!(rank(mcp_level(&Level::ERROR)) > rank(mcp_level(&Level::WARN)));
        assert!(rank(LoggingLevel::Warning) > rank(LoggingLevel::Info));
        assert_eq!(mcp_level(&Level::TRACE), LoggingLevel::Debug);
    }

    #[test]
    fn only_this_crates_warnings_not_marked_stderr_only_are_mirrored() {
        assert!(mirrored(&Level::WARN, "geminicli_mcp::run"));
        assert!(mirrored(&Level::ERROR, "geminicli_mcp"));
        assert!(!mirrored(&Level::INFO, "geminicli_mcp::http"));
        assert!(!mirrored(&Level::WARN, "rmcp::transport"));
        assert!(!mirrored(&Level::WARN, STDERR_ONLY));
        assert!(!mirrored(&Level::ERROR, STDERR_ONLY));
    }

    #[test]
    fn default_filter_keeps_rmcp_quiet() {
        assert!(default_filter(true).contains("rmcp=warn"));
        assert!(default_filter(false).contains("geminicli_mcp=warn"));
    }
}
