//! The prompt tools on the warm backend (`GEMINICLI_MCP_BACKEND=acp`): each call is one prompt in
//! a fresh session of the workspace's agent — a spare made ahead of time when there is one — or,
//! with `session_id`, in that session (held by the agent, else loaded). Calls in one workspace
//! prompt their sessions at once; `GEMINICLI_MCP_MAX_PROMPTS` bounds them server-wide, and a
//! rate-limit delay the API gave one call holds back the next prompts of every call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::agent::{cancelled, one_shot_may_answer, Key};
use super::call::{Answer, Call, Ran};
use super::slots::{Mailbox, Opening, Origin, Ready, Session, Slot, Spare, Spared, Using, Whose};
use super::turn::{
    deadline_failure, output_cap_failure, prompt_blocks, start_turn, turn_failure, Stop, Turn,
};
use super::Pool;
use crate::acp::client::Connection;
use crate::acp::departures::PromptAnswer;
use crate::approval::ApprovalMode;
use crate::error::{ErrorKind, Failure, RunFacts};
use crate::gemini::gate::{self, Waiter};
use crate::gemini::outcome::Success;
use crate::gemini::retention;
use crate::gemini::session as cli_session;
use crate::progress::Progress;
use crate::sync::lock;

/// A warm call's end: the answer as a one-shot run reports it, or the failure.
pub type WarmRan = Ran<Success>;

/// Whether a CLI started in `cwd` may delete session files that hold no message yet.
fn cleanup_may_run(cwd: &std::path::Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    retention::cleanup_may_run(cwd, home.as_deref())
}

impl Pool {
    /// Runs a prompt-tool call on a warm agent: one attempt (the retry policy lives in `run`).
    pub async fn warm(
        self: &Arc<Self>,
        call: Call,
        ct: &CancellationToken,
        progress: &Progress,
    ) -> WarmRan {
        let started = Instant::now();
        let _permit = match self.prompt_permit(ct, progress).await {
            Ok(p) => p,
            Err(f) => return WarmRan::refused(f),
        };
        if let Err(f) = self.cool_down(ct, progress).await {
            return WarmRan::refused(f);
        }
        let slot = self.slot(Key {
            cwd: call.cwd.clone(),
            servers: call.servers.clone(),
            dirs: call.dirs.clone(),
        });
        let using = Using::new(&slot);
        let queued = started.elapsed();
        let mut ran = match self
            .warm_turn(&slot, call.clone(), ct, progress, started, queued)
            .await
        {
            // The agent died before the prompt was sent (a crash, a hang past the request
            // timeout): nothing ran, so the call goes to a new agent once.
            Err(_) if !ct.is_cancelled() => {
                tracing::debug!("the agent ended before the prompt was sent: starting a new one");
                progress
                    .say(
                        "the Gemini agent ended before the prompt was sent: starting a new one"
                            .into(),
                    )
                    .await;
                self.warm_turn(&slot, call, ct, progress, started, queued)
                    .await
                    .unwrap_or_else(WarmRan::refused)
            }
            Err(lost) => WarmRan::refused(lost),
            Ok(ran) => ran,
        };
        ran.result = ran.result.map_err(|f| self.login_fix(&slot.key, f));
        drop(using);
        ran
    }

    /// A slot under `GEMINICLI_MCP_MAX_PROMPTS`; a call that has to wait says so.
    async fn prompt_permit(
        &self,
        ct: &CancellationToken,
        progress: &Progress,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, Failure> {
        if let Ok(p) = self.prompts.clone().try_acquire_owned() {
            return Ok(p);
        }
        progress.queued();
        tokio::select! {
            p = self.prompts.clone().acquire_owned() => p.map_err(|_| Failure::shutting_down()),
            _ = ct.cancelled() => Err(self.stopped("while queued")),
        }
    }

    /// Waits out the delay the API last asked for, announced as progress.
    async fn cool_down(&self, ct: &CancellationToken, progress: &Progress) -> Result<(), Failure> {
        let until = lock(&self.registry).cooldown;
        let Some(until) = until.filter(|u| *u > tokio::time::Instant::now()) else {
            return Ok(());
        };
        let left = until - tokio::time::Instant::now();
        progress
            .say(format!(
                "rate limited: another call was asked to wait; waiting {} ms before prompting",
                left.as_millis()
            ))
            .await;
        tokio::select! {
            _ = tokio::time::sleep_until(until) => Ok(()),
            _ = ct.cancelled() => Err(self.stopped("while waiting out the API's rate limit")),
        }
    }

    /// The failure of a call ended before its prompt was sent: a cancellation or the shutdown.
    fn stopped(&self, when: &str) -> Failure {
        if self.shutdown.is_cancelled() {
            Failure::shutting_down()
        } else {
            cancelled(when)
        }
    }

    async fn warm_turn(
        self: &Arc<Self>,
        slot: &Arc<Slot>,
        call: Call,
        ct: &CancellationToken,
        progress: &Progress,
        started: Instant,
        queued: Duration,
    ) -> Result<WarmRan, Failure> {
        if let Some(f) = slot.failed_lately().await {
            return Ok(WarmRan::no_agent(f));
        }
        let agent = match self.agent(slot, ct).await {
            Ok(a) => a,
            Err(f) if one_shot_may_answer(&f) && !ct.is_cancelled() => {
                return Ok(WarmRan::no_agent(f))
            }
            Err(f) => return Ok(WarmRan::refused(f)),
        };
        let opening = Opening::of(&call, false, progress, ct);
        let ready = match slot.open(agent.clone(), opening).await {
            Ok(r) => r,
            // Err: the agent is gone and nothing was sent; a failure of its own is the answer.
            Err(f) if agent.is_dead() => return Err(f),
            Err(f) => return Ok(WarmRan::refused(f)),
        };
        let prepared = started.elapsed();
        // Kept across the prompt: the session's lock, and the start gate until it is recorded.
        let Ready {
            session,
            origin,
            lock: _lock,
            gate,
        } = ready;
        let sid = session.id.clone();
        let blocks = match prompt_blocks(&call.blocks).await {
            Ok(b) => b,
            Err(f) => return Ok(WarmRan::refused(f)),
        };
        let (_gate, fold) = start_turn(slot, &agent, &session, gate, progress, call.full_output);
        let turn = match self
            .prompting(&agent, &session, &call)
            .turn(blocks, fold, ct, progress)
            .await
        {
            Ok(t) => t,
            Err(f) if agent.is_dead() => return Err(f),
            Err(f) => return Ok(WarmRan::refused(f)),
        };
        let tools_ran = turn.fold.tools_ran();
        let approvals = turn.fold.approvals();
        slot.prompted(&sid, false);
        if agent.is_dead() {
            slot.died(&agent);
        }
        let end = turn.end();
        let outcome = self.outcome(slot, &agent, &session, turn, &call, started);
        let debug = call.debug.then(|| {
            let took = [queued, prepared, started.elapsed()];
            debug_report(&agent, &sid, origin, took, end)
        });
        Ok(WarmRan {
            result: outcome.0,
            tools_ran,
            events: outcome.1,
            debug,
            approvals,
            no_agent: false,
        })
    }

    /// The call's session, locked: the one it continues (held by the agent, else loaded), else a
    /// spare, else a new one. Run by the slot's task, as a child task ([`super::slots::Work::open`]),
    /// which hands the call the guards it keeps across its prompt.
    pub(super) async fn ready(
        &self,
        slot: &Mailbox,
        agent: &Connection,
        opening: &Opening,
    ) -> Result<Ready, Failure> {
        let (ct, progress) = (&opening.ct, &opening.progress);
        let (mut session, origin, lock_guard, gate) = match &opening.asked {
            Some(asked) => {
                let guard = tokio::select! {
                    g = self.session_lock(asked).lock_owned() => g,
                    _ = ct.cancelled() => return Err(cancelled("while another prompt ran in this session")),
                };
                let (_, held) = slot.sessions(Some(asked)).await?;
                match held {
                    Some(s) => (s, Origin::Held, guard, None),
                    None => {
                        self.wait_out_session_minute(&slot.key.cwd, asked, ct, progress)
                            .await?;
                        (
                            self.load(slot, agent, asked).await?,
                            Origin::Loaded,
                            guard,
                            None,
                        )
                    }
                }
            }
            None => {
                let spare = tokio::select! {
                    s = slot.take_spare(true) => s?,
                    _ = ct.cancelled() => return Err(cancelled("while its session was being made")),
                };
                // A session that holds no message is what a CLI start's clean-up deletes: the
                // workspace's start gate keeps the server's own starts out from here until the
                // prompt is recorded, and a spare whose file went meanwhile is not used.
                let gate = if cleanup_may_run(&slot.key.cwd) {
                    self.start_gate(&slot.key.cwd, ct, Waiter::new(progress, opening.limits))
                        .await?
                } else {
                    gate::unshared_gate()
                };
                let (session, origin) = match usable_spare(slot, spare).await {
                    Some(s) => (s, Origin::Spare),
                    None => (self.new_session(slot, agent).await?, Origin::New),
                };
                let guard = self.session_lock(&session.id).lock_owned().await;
                (session, origin, guard, Some(gate))
            }
        };
        let barrier = matches!(origin, Origin::Loaded);
        self.align(
            agent,
            &mut session,
            opening.mode,
            opening.model.as_deref(),
            barrier,
        )
        .await?;
        // Spares are made from now on, in this call's mode.
        slot.record(session.clone(), Whose::Warm(opening.mode));
        Ok(Ready {
            session,
            origin,
            lock: lock_guard,
            gate,
        })
    }

    /// One spare session of `agent` (the agent of `key`), in approval mode `mode`; `None` when
    /// the agent fails it or the server shuts down. Run by the slot's task, as a child task
    /// ([`super::slots::Work::spare`]). The `session/new` passes the workspace's start gate, as
    /// a call's would: whether the spare's message-less file is on disk is read before any
    /// start of the server's can delete it.
    pub(super) async fn make_spare(
        &self,
        key: &Key,
        agent: &Connection,
        mode: ApprovalMode,
    ) -> Option<Spared> {
        let (mut session, models, file) = {
            let _gate = if cleanup_may_run(&key.cwd) {
                self.start_gate(&key.cwd, &self.shutdown, Waiter::default())
                    .await
                    .ok()?
            } else {
                gate::unshared_gate()
            };
            let (session, models) = self.open_session(key, agent).await.ok()?;
            let file = cli_session::exposed(&key.cwd, &session.id);
            (session, models, file)
        };
        let ready = self
            .align(agent, &mut session, mode, None, false)
            .await
            .is_ok();
        Some(Spared {
            spare: Spare { session, file },
            models,
            ready,
        })
    }

    /// The turn as a one-shot run's outcome: the answer with the session, model and token
    /// counts, or the failure with what the turn left; and the transcript.
    fn outcome(
        &self,
        slot: &Slot,
        agent: &Connection,
        session: &Session,
        turn: Turn,
        call: &Call,
        started: Instant,
    ) -> (Result<Success, Failure>, Option<Vec<Value>>) {
        let end = turn.end();
        let Turn {
            fold,
            outcome,
            cancelled: by_client,
            stopped,
        } = turn;
        let (mut answer, events) = fold.finish(end);
        let duration = started.elapsed();
        // Shared by a failure's partial answer and a success's text: one copy of the messages.
        let messages = std::sync::Arc::new(std::mem::take(&mut answer.messages));
        let facts = RunFacts {
            session_id: Some(session.id.clone()),
            model: Some(session.model.clone()).filter(|m| !m.is_empty()),
            partial_response: Some(messages.clone()).filter(|m| !m.is_empty()),
            duration_ms: duration.as_millis() as u64,
            ..RunFacts::default()
        };
        if let Some(Stop::OutputCap(cap, what)) = stopped {
            return (Err(output_cap_failure(cap, what).with_run(facts)), events);
        }
        if let Some(Stop::Deadline(limit)) = stopped {
            return (
                Err(deadline_failure(call.limits, limit).with_run(facts)),
                events,
            );
        }
        if by_client {
            let f = if self.shutdown.is_cancelled() {
                Failure::cancelled("the server is shutting down; the agent's prompt was cancelled")
            } else {
                Failure::cancelled("the request was cancelled; the agent's prompt was cancelled")
            };
            return (Err(f.with_run(facts)), events);
        }
        let result = match outcome {
            Ok(result) => answered(
                &slot.key.cwd,
                &result,
                &answer,
                messages,
                session,
                duration,
                facts,
            ),
            Err(e) => {
                let f = turn_failure(slot, agent, &session.id, e, facts);
                if let (ErrorKind::RateLimited, Some(ms)) = (f.kind, f.retry_delay_ms) {
                    let until = tokio::time::Instant::now() + Duration::from_millis(ms);
                    let c = &mut lock(&self.registry).cooldown;
                    *c = Some(c.map_or(until, |u| u.max(until)));
                }
                Err(f)
            }
        };
        (result, events)
    }
}

/// `first`, else another spare of the slot's agent, whose chat file is still what it was
/// made with: a spare whose file a CLI start's clean-up deleted (another agent's start, a
/// listing, the user's own `gemini` in the project) would record its prompt in a file
/// without a header, which the next start deletes with the session. Called with the
/// workspace's start gate held (where a start could delete anything), so no start of the
/// server's falls between this look and the prompt; the agent keeps a dropped spare in
/// memory, unused.
async fn usable_spare(slot: &Mailbox, first: Option<Spare>) -> Option<Session> {
    let mut next = first;
    loop {
        let spare = match next.take() {
            Some(s) => s,
            None => slot.take_spare(false).await.ok()??,
        };
        if !spare.file || cli_session::exposed(&slot.key.cwd, &spare.session.id) {
            return Some(spare.session);
        }
        tracing::debug!("a spare session's file was deleted by a CLI start: not used");
    }
}

/// `debug` of a warm call: the agent, the session and how the call got it, the times until the
/// call had its turn, its session, and its end (`took`), how the turn ended, the stderr tail.
fn debug_report(
    agent: &Connection,
    sid: &str,
    origin: Origin,
    took: [Duration; 3],
    end: Value,
) -> Value {
    let [queued, ready, total] = took.map(|d| d.as_millis() as u64);
    json!({
        "backend": "acp",
        "agentPid": agent.pid(),
        "sessionId": sid,
        "session": origin.as_str(),
        "queuedMs": queued,
        "sessionReadyMs": ready,
        "durationMs": total,
        "end": end,
        "stderrTail": agent.stderr_tail(),
    })
}

/// A turn the agent answered, as a one-shot run's outcome: the last model turn's text, or the
/// failure its stop reason means (`cancelled` by the agent itself, `max_turn_requests`, a prompt
/// too large to send, no answer text).
fn answered(
    cwd: &std::path::Path,
    result: &PromptAnswer,
    answer: &Answer,
    messages: std::sync::Arc<String>,
    session: &Session,
    duration: Duration,
    facts: RunFacts,
) -> Result<Success, Failure> {
    let stop = result.stop_reason.as_str();
    let refused =
        |kind: ErrorKind, message: String| Err(Failure::new(kind, message).with_run(facts.clone()));
    match stop {
        "cancelled" => refused(
            ErrorKind::Error,
            "the agent cancelled the prompt on its own (stop reason `cancelled`)".into(),
        ),
        "max_turn_requests" => {
            let (kind, message) = turn_requests_limited(cwd);
            refused(kind, message)
        }
        "max_tokens" if messages.is_empty() => refused(
            ErrorKind::InputTooLarge,
            "the prompt does not fit the model's context window: the agent sent nothing to the model (stop reason `max_tokens`); shorten the prompt or its context".into(),
        ),
        _ if messages[answer.last_turn_start..].trim().is_empty() => refused(
            ErrorKind::EmptyResponse,
            format!("the agent's turn ended without answer text (stop reason `{stop}`)"),
        ),
        _ => Ok(Success {
            answer: {
                // The failure's copy of the messages is gone: take them, keep the last turn.
                drop(facts);
                let mut text =
                    std::sync::Arc::try_unwrap(messages).unwrap_or_else(|m| m.as_ref().clone());
                text.drain(..answer.last_turn_start);
                text
            },
            session_id: Some(session.id.clone()),
            model: Some(session.model.clone()).filter(|m| !m.is_empty()),
            stats: stats(result, answer.context),
            duration,
            exit_code: 0,
        }),
    }
}

/// What stop reason `max_turn_requests` means for an agent started in `cwd`. 0.61 gives it to a
/// turn `model.maxSessionTurns` ended and to one its loop detection ended: where no settings
/// layer sets that limit, only the loop detection can have ended it.
fn turn_requests_limited(cwd: &std::path::Path) -> (ErrorKind, String) {
    let layers = crate::gemini::settings::layers(cwd, |k| std::env::var_os(k));
    if crate::gemini::settings::session_turns_may_be_limited(&layers) {
        (
            ErrorKind::TurnLimit,
            "the agent ended the turn early (stop reason `max_turn_requests`): the session reached model.maxSessionTurns of the CLI's settings, or the CLI's loop detection saw the model repeat itself".into(),
        )
    } else {
        (
            ErrorKind::LoopDetected,
            crate::gemini::outcome::loop_detected("stop reason `max_turn_requests`"),
        )
    }
}

/// The turn's token counts as statistics: totals first, then the per-model counts (`_meta.quota`
/// of the prompt's answer), then what the agent's `usage_update` said of the context window. ACP's
/// own `usage` (CLI 0.64 and later, by its release notes) is preferred for the totals, which then
/// also count thoughts and cached reads where it gives them.
fn stats(result: &PromptAnswer, context: Option<(u64, u64)>) -> Option<Value> {
    let (quota, usage) = (result.quota.as_ref(), result.usage.as_ref());
    if quota.is_none() && usage.is_none() && context.is_none() {
        return None;
    }
    let count = quota.map(|q| &q.token_count);
    let input = usage
        .map(|u| u.input_tokens)
        .or_else(|| count?.input_tokens);
    let output = usage
        .map(|u| u.output_tokens)
        .or_else(|| count?.output_tokens);
    let mut stats = json!({
        "total_tokens": usage.map_or(input.unwrap_or(0) + output.unwrap_or(0), |u| u.total_tokens),
        "input_tokens": input,
        "output_tokens": output,
        "models": quota.map_or(Value::Null, |q| q.model_usage.clone()),
    });
    for (n, name) in [
        (usage.and_then(|u| u.thought_tokens), "thought_tokens"),
        (
            usage.and_then(|u| u.cached_read_tokens),
            "cached_read_tokens",
        ),
        (
            usage.and_then(|u| u.cached_write_tokens),
            "cached_write_tokens",
        ),
    ] {
        if let Some(n) = n {
            stats[name] = json!(n);
        }
    }
    if let Some((used, size)) = context {
        stats["context"] = json!({"used": used, "size": size});
    }
    Some(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_becomes_the_statistics() {
        let result = json!({"stopReason": "end_turn", "_meta": {"quota": {
            "token_count": {"input_tokens": 12, "output_tokens": 30},
            "model_usage": [{"model": "gemini-2.5-flash", "token_count": {"input_tokens": 12, "output_tokens": 30}}]}}});
        let s = stats(&PromptAnswer::read(&result), None).expect("stats");
        assert_eq!(s["total_tokens"], 42);
        assert_eq!(s["models"][0]["model"], "gemini-2.5-flash");
        assert_eq!(s.get("context"), None);
        assert_eq!(
            stats(
                &PromptAnswer::read(&json!({"stopReason": "end_turn"})),
                None
            ),
            None
        );
    }

    #[test]
    fn acp_usage_and_the_context_window_join_the_statistics() {
        let result = json!({"stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 19, "thoughtTokens": 4},
            "_meta": {"quota": {"token_count": {"input_tokens": 10, "output_tokens": 5},
                "model_usage": [{"model": "m", "token_count": {"input_tokens": 10, "output_tokens": 5}}]}}});
        let s = stats(&PromptAnswer::read(&result), Some((19, 1_048_576))).expect("stats");
        assert_eq!(s["total_tokens"], 19, "ACP's total counts the thoughts");
        assert_eq!(s["thought_tokens"], 4);
        assert_eq!(s["models"][0]["model"], "m");
        assert_eq!(s["context"], json!({"used": 19, "size": 1_048_576}));
        assert_eq!(s.get("cached_read_tokens"), None);
    }
}
