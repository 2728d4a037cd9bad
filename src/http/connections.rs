//! The HTTP connections: their limits (the header-read and idle timeouts, the cap), the registry
//! that admits a connection at the cap by closing the oldest one that has not sent an
//! authenticated request, and each connection's watch over its requests in progress.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Default time a connection has to send a request's complete headers.
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 10_000;
/// Default time a keep-alive connection may wait, with no request in progress, for its next one.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// The longest an accept waits for the connection closed to make room to be gone (its task runs
/// elsewhere and closes the socket at once; this only bounds a stuck one).
pub(super) const EVICTION_WAIT: Duration = Duration::from_millis(100);

/// How long connections may take and how many there may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Time to send a request's complete headers: from the accept for the first request, from
    /// the request's first byte for the later ones.
    pub header_timeout: Duration,
    /// Time a connection whose last request has ended may wait for the next one's first byte. A
    /// request in progress (its body being read, its response or SSE stream being written) is
    /// never cut.
    pub idle_timeout: Duration,
    /// The most connections at once; `None`: derived from the open-file limit when serving
    /// ([`crate::fd_limit::connection_cap`]).
    pub max_connections: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_millis(DEFAULT_HEADER_TIMEOUT_MS),
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS),
            max_connections: None,
        }
    }
}

impl Limits {
    /// The cap: the configured one, or the one the open-file limit leaves room for now.
    pub fn cap(&self) -> usize {
        self.max_connections
            .unwrap_or_else(|| crate::fd_limit::connection_cap(crate::fd_limit::soft()))
    }
}

/// Which connection to close for a new one: the oldest (lowest accept number) of those that have
/// not sent an authenticated request, given as `(accept number, authenticated)`. `None` when
/// every connection is authenticated: the operator's clients are never closed for a stranger.
pub(super) fn victim(connections: impl IntoIterator<Item = (u64, bool)>) -> Option<u64> {
    connections
        .into_iter()
        .filter(|(_, authenticated)| !authenticated)
        .map(|(id, _)| id)
        .min()
}

/// The live connections, by accept number (so oldest first), bounded by a cap.
#[derive(Debug)]
pub(super) struct Registry {
    cap: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    connections: BTreeMap<u64, Arc<Connection>>,
}

impl Registry {
    /// An empty registry admitting at most `cap` connections (at least one).
    pub(super) fn new(cap: usize) -> Arc<Registry> {
        Arc::new(Registry {
            cap: cap.max(1),
            inner: Mutex::default(),
        })
    }

    /// The cap.
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    /// Connections registered now.
    pub(super) fn len(&self) -> usize {
        self.lock().connections.len()
    }

    /// Registers a new connection, closing the [`victim`] first when the cap is reached; `None`
    /// (refuse the new one) when the cap is reached and every connection is authenticated. The
    /// membership leaves the registry when dropped.
    pub(super) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut inner = self.lock();
        let evicted = if inner.connections.len() >= self.cap {
            Some(inner.evict_victim()?)
        } else {
            None
        };
        let id = inner.next;
        inner.next += 1;
        let connection = Arc::new(Connection::new());
        inner.connections.insert(id, connection.clone());
        let membership = Membership {
            registry: self.clone(),
            id,
            connection,
        };
        Some(Admitted {
            membership,
            evicted,
        })
    }

    /// Closes the [`victim`] to free its descriptor (an accept failed for want of one); the
    /// connection closed, if there was one.
    pub(super) fn evict_oldest(&self) -> Option<Arc<Connection>> {
        self.lock().evict_victim()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }
}

impl Inner {
    fn evict_victim(&mut self) -> Option<Arc<Connection>> {
        let candidates = self
            .connections
            .iter()
            .map(|(id, c)| (*id, c.is_authenticated()));
        let connection = self.connections.remove(&victim(candidates)?)?;
        connection.evicted.cancel();
        Some(connection)
    }
}

/// A new connection's membership, and the connection closed to make room for it, if any: wait
/// for that one to be [`Connection::gone`] before the new one takes a descriptor, so the cap
/// bounds the descriptors in use too.
#[derive(Debug)]
pub(super) struct Admitted {
    /// The new connection's place.
    pub membership: Membership,
    /// The connection closed for it.
    pub evicted: Option<Arc<Connection>>,
}

/// A connection's place in the [`Registry`], given up on drop.
#[derive(Debug)]
pub(super) struct Membership {
    registry: Arc<Registry>,
    id: u64,
    connection: Arc<Connection>,
}

impl Membership {
    /// The connection's shared state.
    pub(super) fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.registry.lock().connections.remove(&self.id);
        self.connection.gone.cancel();
    }
}

/// What one connection's task, its reads and its requests share.
#[derive(Debug)]
pub(super) struct Connection {
    authenticated: AtomicBool,
    /// Cancelled when the registry closes the connection to admit another.
    pub evicted: CancellationToken,
    /// Cancelled when the membership is dropped, which the task does after closing the socket.
    gone: CancellationToken,
    activity: Mutex<Activity>,
    changed: Notify,
}

impl Connection {
    fn new() -> Connection {
        Connection {
            authenticated: AtomicBool::new(false),
            evicted: CancellationToken::new(),
            gone: CancellationToken::new(),
            activity: Mutex::new(Activity::new(Instant::now())),
            changed: Notify::new(),
        }
    }

    /// Resolves once the connection's task has closed its socket and left the registry, or after
    /// [`EVICTION_WAIT`].
    pub(super) async fn gone(&self) {
        let _ = tokio::time::timeout(EVICTION_WAIT, self.gone.cancelled()).await;
    }

    /// A request with the right token arrived: the connection is never closed to admit another.
    pub(super) fn authenticate(&self) {
        self.authenticated.store(true, Ordering::Relaxed);
    }

    /// Whether a request with the right token arrived on this connection.
    pub(super) fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Relaxed)
    }

    /// A request's headers are complete: it is in progress until the returned guard is dropped,
    /// which the response body does when it ends.
    pub(super) fn request_started(self: &Arc<Self>) -> InProgress {
        self.update(|a| a.request_started());
        InProgress(self.clone())
    }

    fn bytes_arrived(&self) {
        let mut activity = crate::sync::lock(&self.activity);
        if activity.bytes_arrived(Instant::now()) {
            drop(activity);
            self.changed.notify_one();
        }
    }

    fn update(&self, change: impl FnOnce(&mut Activity)) {
        change(&mut crate::sync::lock(&self.activity));
        self.changed.notify_one();
    }

    /// Resolves when one of the limits closes the connection, saying which.
    pub(super) async fn expired(&self, limits: &Limits) -> Expiry {
        loop {
            let next = self
                .activity
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .deadline(limits);
            match next {
                // A request in progress: nothing to time until it ends.
                None => self.changed.notified().await,
                Some((at, why)) => {
                    if at <= Instant::now() {
                        return why;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                        _ = self.changed.notified() => {}
                    }
                }
            }
        }
    }
}

/// Which limit closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// A request's headers did not arrive complete in time.
    Headers,
    /// No request came in time after the last one ended.
    Idle,
}

/// A connection's requests over time: what its deadline depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Activity {
    /// Requests whose headers arrived and whose response has not ended (more than one only if
    /// hyper reads ahead).
    in_flight: usize,
    /// The accept, or the end of the last request.
    since: Instant,
    /// Whether a request has ended on this connection (it is then a keep-alive connection).
    served: bool,
    /// The first byte that arrived since `since` with no request in progress: the next request
    /// has begun.
    first_byte: Option<Instant>,
}

impl Activity {
    /// A connection accepted at `now`.
    pub(super) fn new(now: Instant) -> Activity {
        Activity {
            in_flight: 0,
            since: now,
            served: false,
            first_byte: None,
        }
    }

    /// A request's headers are complete.
    pub(super) fn request_started(&mut self) {
        self.in_flight += 1;
        self.first_byte = None;
    }

    /// A request's response ended (or was dropped) at `now`.
    pub(super) fn request_ended(&mut self, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 {
            self.since = now;
            self.served = true;
            self.first_byte = None;
        }
    }

    /// Bytes were read at `now`; whether that began a new request (and so moved the deadline).
    pub(super) fn bytes_arrived(&mut self, now: Instant) -> bool {
        if self.in_flight > 0 || self.first_byte.is_some() {
            return false;
        }
        self.first_byte = Some(now);
        true
    }

    /// When the connection is to be closed and why; `None` while a request is in progress. A new
    /// connection has the header timeout for its first request; a keep-alive one the idle
    /// timeout until the next request's first byte, then the header timeout from that byte.
    pub(super) fn deadline(&self, limits: &Limits) -> Option<(Instant, Expiry)> {
        if self.in_flight > 0 {
            return None;
        }
        Some(match self.first_byte {
            Some(at) => (at + limits.header_timeout, Expiry::Headers),
            None if self.served => (self.since + limits.idle_timeout, Expiry::Idle),
            None => (self.since + limits.header_timeout, Expiry::Headers),
        })
    }
}

/// A request in progress; dropping it ends the request.
#[derive(Debug)]
pub(super) struct InProgress(Arc<Connection>);

impl Drop for InProgress {
    fn drop(&mut self) {
        let now = Instant::now();
        self.0.update(|a| a.request_ended(now));
    }
}

/// A response body that keeps its request in progress until it ends: an SSE stream keeps its
/// connection open however long it runs.
pub(super) struct Tracked<B> {
    body: B,
    _request: InProgress,
}

impl<B> Tracked<B> {
    /// `body`, keeping `request` in progress while it lives.
    pub(super) fn new(body: B, request: InProgress) -> Tracked<B> {
        Tracked {
            body,
            _request: request,
        }
    }
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket, telling the connection when bytes arrive (the start of a request's
/// headers, for the header timeout).
pub(super) struct Watched<S> {
    stream: S,
    connection: Arc<Connection>,
}

impl<S> Watched<S> {
    /// `stream`, reporting to `connection`.
    pub(super) fn new(stream: S, connection: Arc<Connection>) -> Watched<S> {
        Watched { stream, connection }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.connection.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: None,
        }
    }

    #[test]
    fn the_victim_is_the_oldest_unauthenticated_connection() {
        assert_eq!(victim([(3, false), (1, true), (2, false)]), Some(2));
        assert_eq!(victim([(7, false)]), Some(7));
        assert_eq!(victim([(1, true), (2, true)]), None, "authenticated stay");
        assert_eq!(victim([]), None);
    }

    #[test]
    fn at_the_cap_the_registry_closes_the_oldest_unauthenticated_or_refuses() {
        let registry = Registry::new(3);
        let admit = || registry.admit().map(|a| a.membership);
        let first = admit().unwrap();
        let second = admit().unwrap();
        let third = admit().unwrap();
        first.connection().authenticate();
        let admitted = registry.admit().expect("room made");
        let evicted = admitted.evicted.expect("one closed");
        assert!(
            Arc::ptr_eq(&evicted, second.connection()),
            "the oldest other"
        );
        assert!(second.connection().evicted.is_cancelled());
        assert!(!first.connection().evicted.is_cancelled(), "authenticated");
        assert!(!third.connection().evicted.is_cancelled());
        assert_eq!(registry.len(), 3);
        let fourth = admitted.membership;
        third.connection().authenticate();
        fourth.connection().authenticate();
        assert!(registry.admit().is_none(), "all authenticated: refused");
        assert!(registry.evict_oldest().is_none());
        drop(fourth);
        assert_eq!(registry.len(), 2, "a dropped membership leaves");
        assert!(admit().is_some());
    }

    #[test]
    fn a_new_connection_has_the_header_timeout_a_served_one_the_idle_timeout() {
        let t0 = Instant::now();
        let mut a = Activity::new(t0);
        let l = limits();
        assert_eq!(
            a.deadline(&l),
            Some((t0 + l.header_timeout, Expiry::Headers))
        );
        a.request_started();
        assert_eq!(a.deadline(&l), None, "a request in progress is never timed");
        assert!(!a.bytes_arrived(t0 + Duration::from_secs(1)), "its body");
        let t1 = t0 + Duration::from_secs(300);
        a.request_ended(t1);
        assert_eq!(a.deadline(&l), Some((t1 + l.idle_timeout, Expiry::Idle)));
        let t2 = t1 + Duration::from_secs(5);
        assert!(a.bytes_arrived(t2), "the next request begins");
        assert!(!a.bytes_arrived(t2 + Duration::from_secs(1)));
        assert_eq!(
            a.deadline(&l),
            Some((t2 + l.header_timeout, Expiry::Headers))
        );
    }

    #[test]
    fn a_stream_in_progress_is_not_timed_until_its_last_request_ends() {
        let t0 = Instant::now();
        let mut a = Activity::new(t0);
        a.request_started();
        a.request_started();
        a.request_ended(t0 + Duration::from_secs(1));
        assert_eq!(a.deadline(&limits()), None);
        let end = t0 + Duration::from_secs(2);
        a.request_ended(end);
        assert_eq!(
            a.deadline(&limits()),
            Some((end + limits().idle_timeout, Expiry::Idle))
        );
    }

    #[tokio::test]
    async fn the_watch_fires_at_the_idle_timeout_and_not_during_a_request() {
        let registry = Registry::new(1);
        let member = registry.admit().unwrap().membership;
        let connection = member.connection().clone();
        let limits = Limits {
            header_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(200),
            max_connections: None,
        };
        let request = connection.request_started();
        let watch = connection.expired(&limits);
        tokio::pin!(watch);
        // Five times both timeouts: in progress, neither applies.
        assert!(
            tokio::time::timeout(Duration::from_secs(1), watch.as_mut())
                .await
                .is_err(),
            "in progress: no expiry"
        );
        drop(request);
        let expiry = tokio::time::timeout(Duration::from_secs(30), watch).await;
        assert_eq!(expiry, Ok(Expiry::Idle));
    }
}
