//! Calls held across rounds: the 2026-07-28 protocol's multi-round-trip results, for `ask` calls
//! of clients that can answer them but not tasks. The call runs on; when its agent asks a
//! question the pending `tools/call` is answered with an `InputRequiredResult` (the form as its
//! input request, `requestState` naming the held call), and the client's retry with the answer
//! resumes it, until the call's result answers the last retry.
//!
//! Bounds: a held call waits at most the ask timeout for the client's retry, then its run is
//! cancelled and it is forgotten; at most [`MAX_ROUNDS`] questions are asked per call (clients
//! stop at about 10), later ones are rejected without asking; at most [`MAX_HELD`] calls are held
//! at once, and the `requestState` is a random id nobody can guess, bound to the client's session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::CallToolResult;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::ask::{Asked, Asker, Question, Reply, Why};

/// Most questions one held call asks.
pub(crate) const MAX_ROUNDS: u32 = 8;
/// Most calls held at once.
pub(crate) const MAX_HELD: usize = 64;

/// What a held call's run reports.
pub(crate) enum Event {
    /// A question, and where its reply goes.
    Question(Question, oneshot::Sender<Reply>),
    /// The call's result.
    Done(CallToolResult),
}

/// A held call between two rounds.
pub(crate) struct Round {
    /// The run's events.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The question the client is answering, with its key and reply.
    pub pending: Option<(String, Question, oneshot::Sender<Reply>)>,
    /// Cancels the run.
    pub cancel: CancellationToken,
    /// Questions asked so far (the next key's number).
    pub asked: u32,
}

struct Entry {
    owner: Option<String>,
    round: Round,
    /// Which hold this is: the expiry timer of an earlier hold leaves a later one alone.
    hold: u64,
}

/// The held calls of one server.
#[derive(Clone, Default)]
pub(crate) struct Held {
    store: Arc<Mutex<HashMap<String, Entry>>>,
    holds: Arc<std::sync::atomic::AtomicU64>,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        crate::sync::lock(&self.store)
    }

    /// Holds `round` under a fresh id until the client's retry or `wait` (then its run is
    /// cancelled). `None` when [`MAX_HELD`] calls are held already.
    pub(crate) fn hold(
        &self,
        owner: Option<String>,
        round: Round,
        wait: Duration,
    ) -> Option<String> {
        let id = crate::tasks::new_id();
        let hold = self.holds.fetch_add(1, Ordering::Relaxed);
        {
            let mut store = self.lock();
            if store.len() >= MAX_HELD {
                round.cancel.cancel();
                return None;
            }
            store.insert(id.clone(), Entry { owner, round, hold });
        }
        let held = self.clone();
        let key = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let mut store = held.lock();
            if store.get(&key).is_some_and(|e| e.hold == hold) {
                if let Some(e) = store.remove(&key) {
                    e.round.cancel.cancel();
                }
            }
        });
        Some(id)
    }

    /// Takes the held call `id` back for `owner`'s retry.
    pub(crate) fn resume(&self, owner: Option<&str>, id: &str) -> Option<Round> {
        let mut store = self.lock();
        match store.get(id) {
            Some(e) if e.owner.as_deref() == owner => store.remove(id).map(|e| e.round),
            _ => None,
        }
    }

    /// Whether nothing is held (the tests look).
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Asks through the held call's rounds: each question goes to the pending request as an input
/// request; past [`MAX_ROUNDS`] questions are rejected without asking.
pub(crate) struct RoundAsker {
    events: mpsc::UnboundedSender<Event>,
    asked: AtomicU32,
    timeout: Duration,
}

impl RoundAsker {
    /// An asker sending its questions to `events`.
    pub(crate) fn new(events: mpsc::UnboundedSender<Event>, timeout: Duration) -> Self {
        RoundAsker {
            events,
            asked: AtomicU32::new(0),
            timeout,
        }
    }
}

impl Asker for RoundAsker {
    fn ask(&self, question: Question) -> Asked {
        let over = self.asked.fetch_add(1, Ordering::Relaxed) >= MAX_ROUNDS;
        let (tx, rx) = oneshot::channel();
        let sent = !over && self.events.send(Event::Question(question, tx)).is_ok();
        Box::pin(async move {
            match (over, sent) {
                (true, _) => Reply::Reject(Why::CannotAsk),
                (false, false) => Reply::Reject(Why::Gone),
                (false, true) => rx.await.unwrap_or(Reply::Reject(Why::Gone)),
            }
        })
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round() -> (Round, mpsc::UnboundedSender<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Round {
                events: rx,
                pending: None,
                cancel: CancellationToken::new(),
                asked: 0,
            },
            tx,
        )
    }

    #[tokio::test]
    async fn a_held_call_is_resumed_once_and_only_by_its_owner() {
        let held = Held::default();
        let (r, _tx) = round();
        let id = held
            .hold(Some("a".into()), r, Duration::from_secs(60))
            .unwrap();
        assert!(held.resume(Some("b"), &id).is_none());
        assert!(held.resume(None, &id).is_none());
        assert!(held.resume(Some("a"), &id).is_some());
        assert!(held.resume(Some("a"), &id).is_none());
    }

    #[tokio::test]
    async fn a_call_nobody_resumes_is_cancelled_and_forgotten() {
        let held = Held::default();
        let (r, _tx) = round();
        let cancel = r.cancel.clone();
        let id = held.hold(None, r, Duration::from_millis(50)).unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(cancel.is_cancelled());
        assert!(held.resume(None, &id).is_none());
        assert!(held.is_empty());
    }

    #[tokio::test]
    async fn questions_past_the_round_budget_are_rejected_unasked() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let asker = RoundAsker::new(tx, Duration::from_secs(1));
        let q = Question {
            title: "t".into(),
            kind: "edit".into(),
            locations: vec![],
            session_option: false,
        };
        for _ in 0..MAX_ROUNDS {
            let pending = asker.ask(q.clone());
            let Some(Event::Question(_, reply)) = rx.recv().await else {
                panic!("not asked");
            };
            reply.send(Reply::AllowOnce).unwrap();
            assert_eq!(pending.await, Reply::AllowOnce);
        }
        assert_eq!(asker.ask(q).await, Reply::Reject(Why::CannotAsk));
        assert!(rx.try_recv().is_err());
    }
}
