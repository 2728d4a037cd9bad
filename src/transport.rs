//! The stdio transport with an EOF grace: stdin reaching EOF is reported to rmcp only once every
//! request read has been answered (or cancelled by the client), or once
//! `GEMINICLI_MCP_EOF_GRACE_MS` has passed — then the remaining runs are killed, answered as
//! cancelled, and only then does the server stop. rmcp alone gives in-flight calls 5 s after EOF,
//! which breaks `cat requests.jsonl | geminicli-mcp`.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
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
