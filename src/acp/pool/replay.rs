//! The history a `session/load` replays, taken in full before the session is used. Gemini CLI
//! 0.61 answers the load after the first replayed update and streams the rest while it answers
//! later requests: once its stdout pipe is full, an answer to a request sent after the load
//! overtakes the rest of the replay, so no round trip marks the replay's end. The replay is
//! what the agent read from the session's file, so the server reads that file before the load
//! ([`crate::gemini::history`]), routes the session to itself, and takes the updates it listed
//! — however slowly they come — before anything else goes to the session.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use super::super::client::{Inbound, Routed};
use crate::gemini::history::{self, Replayed, REPLAY_KINDS};
use crate::gemini::session as cli_session;

/// The replay a load of `id` in `cwd` will send, read off the async threads; `None` when the
/// server cannot read the session's file (no chat directory it knows, no file of the session).
pub(super) async fn expected(cwd: PathBuf, id: String) -> Option<Vec<Replayed>> {
    tokio::task::spawn_blocking(move || {
        let chats = cli_session::gemini_dir().and_then(|g| cli_session::chats_dir(&g, &cwd))?;
        history::replay_of(&chats, &id)
    })
    .await
    .ok()
    .flatten()
}

/// How a replay ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// Every listed update came (`differed`: how many were not the one listed at their place,
    /// counted all the same: nothing else goes to a session being loaded).
    All { differed: usize },
    /// The agent ended (its routes went) with this many still to come.
    Ended { missing: usize },
    /// Nothing came for `quiet` with this many still to come.
    Quiet { missing: usize },
}

/// Takes the replay `expected` from `rx` (the loaded session's route, made before the load was
/// sent): every update of a replayed kind counts, in order; others (the agent's
/// `available_commands_update`, which can come in the middle of a replay) are dropped. `quiet`
/// bounds the wait for each update, for a replay that lists more than the agent sends.
pub(super) async fn take(
    rx: &mut mpsc::UnboundedReceiver<Routed>,
    expected: &[Replayed],
    quiet: Duration,
) -> Taken {
    let mut differed = 0;
    for (at, want) in expected.iter().enumerate() {
        loop {
            let next = tokio::time::timeout(quiet, rx.recv()).await;
            let update = match next {
                Err(_) => {
                    return Taken::Quiet {
                        missing: expected.len() - at,
                    }
                }
                Ok(None) => {
                    return Taken::Ended {
                        missing: expected.len() - at,
                    }
                }
                Ok(Some(routed)) => match routed.inbound {
                    Inbound::Update(u) => u,
                    // Nothing of the session asks a question while it is replayed.
                    _ => continue,
                },
            };
            let kind = crate::acp::wire::update_kind(&update);
            if !REPLAY_KINDS.contains(&kind) {
                continue;
            }
            if !want.matches(&update) {
                differed += 1;
            }
            break;
        }
    }
    Taken::All { differed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(kind: &str, text: &str) -> Routed {
        Routed::made(Inbound::Update(
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        ))
    }

    fn listed() -> Vec<Replayed> {
        vec![
            Replayed {
                kind: "user_message_chunk",
                key: "q".into(),
            },
            Replayed {
                kind: "agent_message_chunk",
                key: "a".into(),
            },
        ]
    }

    #[tokio::test]
    async fn the_replay_is_taken_to_its_last_update_whatever_comes_between() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(chunk("user_message_chunk", "q")).unwrap();
        tx.send(Routed::made(Inbound::Update(
            json!({"sessionUpdate": "available_commands_update"}),
        )))
        .unwrap();
        tx.send(chunk("agent_message_chunk", "a")).unwrap();
        tx.send(chunk("agent_message_chunk", "the next turn's"))
            .unwrap();
        let taken = take(&mut rx, &listed(), Duration::from_secs(5)).await;
        assert_eq!(taken, Taken::All { differed: 0 });
        match rx.try_recv().map(|r| r.inbound) {
            Ok(Inbound::Update(u)) => assert_eq!(u["content"]["text"], "the next turn's"),
            other => panic!("the update after the replay is left: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_replay_that_comes_slowly_is_waited_for() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(chunk("user_message_chunk", "q")).unwrap();
        let late = tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send(chunk("agent_message_chunk", "other text")).unwrap();
            tx
        });
        let taken = take(&mut rx, &listed(), Duration::from_secs(5)).await;
        assert_eq!(taken, Taken::All { differed: 1 });
        drop(late.await.unwrap());
        let taken = take(&mut rx, &listed(), Duration::from_secs(5)).await;
        assert_eq!(taken, Taken::Ended { missing: 2 });
    }
}
