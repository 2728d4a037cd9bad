//! The EOF grace and the one answer per id over stdio. [`GraceTransport`] reports stdin's EOF to
//! rmcp only once every request read has been answered (or cancelled by the client), or once
//! `GEMINICLI_MCP_EOF_GRACE_MS` has passed — then the remaining runs are killed, answered as
//! cancelled, and only then does the server stop. rmcp alone gives in-flight calls 5 s after EOF,
//! which breaks `cat requests.jsonl | geminicli-mcp`. It also refuses a request whose id is
//! already in flight, which would otherwise leave one of the two unanswered, and a request past
//! [`MAX_IN_FLIGHT`] requests in flight, which would otherwise cost memory for each one a client
//! sends faster than the server answers.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Extra time, after the grace expired and the runs were told to die, for their cancelled answers
/// to be written (the kill itself takes up to the kill grace).
const ANSWER_AFTER_KILL: Duration = Duration::from_secs(3);
/// How often the server checks, after EOF, whether the client closed its end of stdout too.
const CLIENT_GONE_POLL: Duration = Duration::from_millis(100);

/// Most requests in flight at once over stdio. rmcp runs each request read as a task of its own
/// (a few KiB each, the handler's future whatever the method), so a client that writes requests
/// faster than they are answered, 100,000 pings at once, would grow the server by hundreds of MiB;
/// past this bound a request is answered at once with an error under its id instead, and the
/// messages that end requests (answers to the server's own requests, cancellations) still pass.
/// No client has anywhere near this many requests in flight: each tool call runs a Gemini CLI.
pub(crate) const MAX_IN_FLIGHT: usize = 1024;

/// The JSON-RPC error code of a request refused for [`MAX_IN_FLIGHT`]: one of the codes the
/// specification leaves to the server (-32000 to -32099).
const SERVER_BUSY: ErrorCode = ErrorCode(-32000);

/// Why a request was not passed on.
#[derive(Debug)]
enum Refusal {
    /// Its id is that of a request in flight.
    IdInUse(RequestId),
    /// [`MAX_IN_FLIGHT`] requests are in flight.
    Busy(RequestId),
}

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
        let mut ids = crate::sync::lock(&self.ids);
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
    /// Cancelled when stdin reaches EOF (the server cancels its tasks then).
    eof: CancellationToken,
    /// The error answer of the last request refused, while it is written: the next message is
    /// read only after it, so a client that floods requests without reading the answers is held
    /// up by its own pipe, not answered by a growing pile of writes. It lives here because
    /// rmcp may drop `receive` midway and call it again: a write is never abandoned halfway.
    refusing: Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>,
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
            eof: CancellationToken::new(),
            refusing: None,
        }
    }

    /// `eof` is cancelled as soon as stdin reaches EOF, before the grace.
    pub fn on_eof(mut self, eof: CancellationToken) -> Self {
        self.eof = eof;
        self
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
        while self.eof_deadline.is_none() {
            if let Some(refusing) = self.refusing.as_mut() {
                refusing.await;
                self.refusing = None;
            }
            match self.inner.receive().await {
                Some(message) => match self.track(&message) {
                    Ok(()) => return Some(message),
                    Err(refusal) => self.refuse(refusal),
                },
                None => {
                    tracing::info!(
                        in_flight = self.in_flight.len(),
                        grace_ms = self.eof_grace.as_millis() as u64,
                        "stdin closed"
                    );
                    self.eof_deadline = Some(Instant::now() + self.eof_grace);
                    self.eof.cancel();
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

impl<T> GraceTransport<T>
where
    T: Transport<RoleServer>,
{
    /// Notes a request as in flight, or a cancellation as ending one. A request whose id is
    /// already in flight, or past [`MAX_IN_FLIGHT`], is not passed on.
    fn track(&self, message: &RxJsonRpcMessage<RoleServer>) -> Result<(), Refusal> {
        match message {
            JsonRpcMessage::Request(r) => {
                let mut refusal = None;
                self.in_flight.update(|ids| {
                    if ids.contains(&r.id) {
                        refusal = Some(Refusal::IdInUse(r.id.clone()));
                    } else if ids.len() >= MAX_IN_FLIGHT {
                        refusal = Some(Refusal::Busy(r.id.clone()));
                    } else {
                        ids.insert(r.id.clone());
                    }
                });
                if let Some(refusal) = refusal {
                    return Err(refusal);
                }
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
        Ok(())
    }

    /// Answers a request that is not passed on, with an error under its id, which is all JSON-RPC
    /// lets a server say about it. A request that reused the id of one in flight: the first
    /// request runs on and gets its own answer, and the id stays in flight for it. The error goes
    /// straight to the inner transport, written before the next message is read (`refusing`).
    fn refuse(&mut self, refusal: Refusal) {
        let (id, error) = match refusal {
            Refusal::IdInUse(id) => {
                tracing::warn!(%id, "refused a request whose id is already in flight");
                let message = format!(
                    "Invalid Request: id {} is already in use by a request in flight; every request needs an id of its own until it is answered",
                    serde_json::to_string(&id).unwrap_or_default()
                );
                (id, ErrorData::invalid_request(message, None))
            }
            Refusal::Busy(id) => {
                tracing::warn!(%id, limit = MAX_IN_FLIGHT, "refused a request: too many in flight");
                let message = format!(
                    "Server busy: {MAX_IN_FLIGHT} requests are in flight, the most this server takes at once; send this request again once some of them are answered"
                );
                (id, ErrorData::new(SERVER_BUSY, message, None))
            }
        };
        let send = self.inner.send(JsonRpcMessage::error(error, Some(id)));
        self.refusing = Some(Box::pin(async move {
            let _ = send.await;
        }));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An inner transport that yields `messages`, then EOF, and keeps what is sent.
    struct Scripted(
        std::collections::VecDeque<RxJsonRpcMessage<RoleServer>>,
        Arc<Mutex<Vec<TxJsonRpcMessage<RoleServer>>>>,
    );

    impl Transport<RoleServer> for Scripted {
        type Error = std::io::Error;
        fn send(
            &mut self,
            item: TxJsonRpcMessage<RoleServer>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.1.lock().unwrap().push(item);
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
            Scripted(messages.into(), Arc::default()),
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
    async fn a_request_reusing_an_id_in_flight_is_refused() {
        let (mut t, in_flight, _shutdown) = grace(vec![call(1), call(1), call(2)], 60_000);
        assert!(t.receive().await.is_some());
        let next = t.receive().await.expect("the third request");
        let JsonRpcMessage::Request(r) = next else {
            panic!("a request")
        };
        assert_eq!(r.id, RequestId::Number(2), "the clash is not passed on");
        assert_eq!(in_flight.len(), 2, "the first call stays in flight");
        let sent = t.inner.1.lock().unwrap().clone();
        let [JsonRpcMessage::Error(e)] = sent.as_slice() else {
            panic!("one error: {sent:?}")
        };
        assert_eq!(e.id, Some(RequestId::Number(1)));
        assert_eq!(e.error.code.0, -32600);
        assert!(
            e.error.message.contains("id 1 is already in use"),
            "{}",
            e.error.message
        );
    }

    #[tokio::test]
    async fn a_request_past_the_bound_in_flight_is_refused_and_the_next_after_an_answer_passes() {
        let mut messages: Vec<_> = (0..MAX_IN_FLIGHT as i64 + 2).map(call).collect();
        let cancel: RxJsonRpcMessage<RoleServer> = serde_json::from_value(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}}),
        )
        .unwrap();
        messages.insert(MAX_IN_FLIGHT + 1, cancel);
        messages.push(call(MAX_IN_FLIGHT as i64 + 2));
        let (mut t, in_flight, _shutdown) = grace(messages, 60_000);
        for _ in 0..MAX_IN_FLIGHT {
            assert!(matches!(
                t.receive().await,
                Some(JsonRpcMessage::Request(_))
            ));
        }
        assert_eq!(in_flight.len(), MAX_IN_FLIGHT);
        // The request past the bound is answered, and the cancellation behind it still passes.
        let next = t.receive().await.expect("the cancellation");
        assert!(matches!(next, JsonRpcMessage::Notification(_)), "{next:?}");
        tokio::task::yield_now().await;
        let sent = t.inner.1.lock().unwrap().clone();
        let [JsonRpcMessage::Error(e)] = sent.as_slice() else {
            panic!("one error: {sent:?}")
        };
        assert_eq!(e.id, Some(RequestId::Number(MAX_IN_FLIGHT as i64)));
        assert_eq!(e.error.code, SERVER_BUSY);
        assert!(
            e.error.message.contains("Server busy"),
            "{}",
            e.error.message
        );
        // The cancellation made room: the next request passes.
        assert_eq!(in_flight.len(), MAX_IN_FLIGHT - 1);
        let JsonRpcMessage::Request(r) = t.receive().await.expect("a request") else {
            panic!("a request")
        };
        assert_eq!(r.id, RequestId::Number(MAX_IN_FLIGHT as i64 + 1));
        assert_eq!(in_flight.len(), MAX_IN_FLIGHT);
    }
}
