//! One prompt of the `acp` set's `gemini` on its workspace's agent: the session it runs in (the
//! workspace's, or one loaded for a `session_id`), its model and mode aligned, and the turn.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::acp::client::Connection;
use crate::error::{Failure, RunFacts};
use crate::gemini::gate::{StartGuard, Waiter};
use crate::progress::Progress;

use super::agent::{cancelled, Key};
use super::call::{Answer, Call, Ran};
use super::slots::{Mailbox, Opening, Origin, Ready, Session, Slot, Using, Whose};
use super::turn::{
    deadline_failure, output_cap_failure, prompt_blocks, start_turn, turn_failure, Stop,
};
use super::Pool;

impl Pool {
    /// Runs one prompt in the workspace's session (or the one `call` names): one attempt, never
    /// re-run here (a prompt whose agent died is reported, not repeated; the retry policy lives
    /// in `run`). With `full_output` the turn's messages come back, success or failure.
    pub async fn prompt(
        self: &Arc<Self>,
        call: Call,
        ct: &CancellationToken,
        progress: &Progress,
    ) -> Ran<Answer> {
        let slot = self.slot(Key {
            cwd: call.cwd.clone(),
            servers: call.servers.clone(),
            dirs: call.dirs.clone(),
        });
        let using = Using::new(&slot);
        let lease = tokio::select! {
            l = slot.lease() => match l {
                Ok(l) => l,
                Err(f) => return Ran::refused(f),
            },
            _ = ct.cancelled() => return Ran::refused(cancelled("while another prompt ran in this workspace")),
        };
        let mut ran = Ran::refused(cancelled("before its turn"));
        ran.result = self
            .prompt_locked(&slot, call, ct, progress, &mut ran)
            .await
            .map_err(|f| self.login_fix(&slot.key, f));
        drop((lease, using));
        ran
    }

    async fn prompt_locked(
        &self,
        slot: &Slot,
        call: Call,
        ct: &CancellationToken,
        progress: &Progress,
        ran: &mut Ran<Answer>,
    ) -> Result<Answer, Failure> {
        let agent = self.agent(slot, ct).await?;
        let opening = Opening::of(&call, true, progress, ct);
        // Kept across the prompt: the session's lock, and the start gate until it is recorded.
        let Ready {
            session,
            lock: _one_prompt,
            gate: fresh_gate,
            ..
        } = slot.open(agent.clone(), opening).await?;
        let blocks = prompt_blocks(&call.blocks).await?;
        let sid = session.id.clone();
        let (_gate, fold) = start_turn(
            slot,
            &agent,
            &session,
            fresh_gate,
            progress,
            call.full_output,
        );
        let turn = self
            .prompting(&agent, &session, &call)
            .turn(blocks, fold, ct, progress)
            .await?;
        ran.tools_ran = turn.fold.tools_ran();
        ran.approvals = turn.fold.approvals();
        let end = turn.end();
        let (mut answer, events) = turn.fold.finish(end);
        ran.events = events;
        slot.prompted(&sid, true);
        if agent.is_dead() {
            slot.died(&agent);
        }
        let facts = |answer: Answer| RunFacts {
            session_id: Some(sid.clone()),
            model: Some(answer.model),
            partial_response: Some(answer.messages)
                .filter(|m| !m.is_empty())
                .map(std::sync::Arc::new),
            ..RunFacts::default()
        };
        if turn.cancelled {
            let mut facts = facts(answer);
            facts.model = None;
            let f = if self.shutdown.is_cancelled() {
                Failure::cancelled("the server is shutting down; the agent's prompt was cancelled")
            } else {
                cancelled("by the client")
            };
            return Err(f.with_run(facts));
        }
        match turn.stopped {
            Some(Stop::OutputCap(cap, what)) => {
                return Err(output_cap_failure(cap, what).with_run(facts(answer)))
            }
            Some(Stop::Deadline(limit)) => {
                return Err(deadline_failure(call.limits, limit).with_run(facts(answer)))
            }
            None => {}
        }
        match turn.outcome {
            Ok(result) => {
                answer.stop_reason = result.stop_reason;
                Ok(answer)
            }
            Err(e) => Err(turn_failure(slot, &agent, &sid, e, facts(answer))),
        }
    }

    /// The call's session ([`Pool::session`]), locked for it. Run by the slot's task, as a child
    /// task ([`super::slots::Work::open`]), which hands the call the guards it keeps across its
    /// prompt.
    pub(super) async fn workspace_ready(
        &self,
        slot: &Mailbox,
        agent: &Connection,
        opening: &Opening,
    ) -> Result<Ready, Failure> {
        let (session, origin, gate) = self.session(slot, agent, opening).await?;
        let lock = tokio::select! {
            g = self.session_lock(&session.id).lock_owned() => g,
            _ = opening.ct.cancelled() => return Err(cancelled("while another prompt ran in this session")),
        };
        Ok(Ready {
            session,
            origin,
            lock,
            gate,
        })
    }

    /// The session a prompt runs in — the one asked for (loaded when this agent does not hold
    /// it), else the workspace's own until it has served `max_turns` prompts, else a new one —
    /// in the call's approval mode and model. A session whose file may still hold no message
    /// comes with the workspace's start gate, taken.
    async fn session(
        &self,
        slot: &Mailbox,
        agent: &Connection,
        call: &Opening,
    ) -> Result<(Session, Origin, Option<StartGuard>), Failure> {
        let (ct, progress) = (&call.ct, &call.progress);
        let (current, held) = slot.sessions(call.asked.as_deref()).await?;
        let mut origin = Origin::Held;
        let mut fresh_gate = None;
        let mut session = match (&call.asked, current) {
            (Some(asked), Some(s)) if s.id == *asked => s,
            (Some(_), _) if held.is_some() => held.expect("checked"),
            (Some(asked), _) => {
                self.wait_out_session_minute(&slot.key.cwd, asked, ct, progress)
                    .await?;
                origin = Origin::Loaded;
                self.load(slot, agent, asked).await?
            }
            (None, Some(s)) if s.turns < self.config.acp.max_turns => {
                if s.turns == 0 {
                    // Made (by list_models) but never prompted: its file may still hold no
                    // message.
                    let waiter = Waiter::new(progress, call.limits);
                    fresh_gate = Some(self.start_gate(&slot.key.cwd, ct, waiter).await?);
                }
                s
            }
            (None, _) => {
                // A new session's file holds no message until the agent records the first
                // prompt, and any CLI start in the project meanwhile deletes it.
                let waiter = Waiter::new(progress, call.limits);
                fresh_gate = Some(self.start_gate(&slot.key.cwd, ct, waiter).await?);
                origin = Origin::New;
                self.new_session(slot, agent).await?
            }
        };
        slot.record(session.clone(), Whose::Workspace);
        self.align(
            agent,
            &mut session,
            call.mode,
            call.model.as_deref(),
            matches!(origin, Origin::Loaded),
        )
        .await?;
        slot.record(session.clone(), Whose::Workspace);
        Ok((session, origin, fresh_gate))
    }
}
