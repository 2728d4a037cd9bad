//! A prompt's inbound ACP messages folded, as they arrive, into its answer: message and thought
//! chunks, tool calls with their last status, plan entries, approvals, and (for `full_output`)
//! the transcript.

use serde_json::{json, Value};

use crate::acp::client::Inbound;
use crate::acp::wire::{update_kind, SessionUpdate, ToolCall};
use crate::progress::preview;

use super::call::Answer;

/// A prompt's inbound messages folded, as they arrive, into its answer (and, for `full_output`,
/// its transcript).
#[derive(Debug, Default)]
pub struct Fold {
    answer: Answer,
    tools: Vec<(String, Value)>,
    /// One entry per permission question decided, in order: a question is its own record, not
    /// its tool call's (two questions may name one tool-call id).
    approvals: Vec<Value>,
    events: Option<Vec<Value>>,
    /// What the fold holds, as [`Fold::charge`] counted it.
    held: usize,
}

/// What a tool call's entry, a permission's record or a transcript's event costs besides its
/// text, counted against the output cap.
const ENTRY_OVERHEAD: usize = 256;

impl Fold {
    /// Starts from `answer` (its session, model and pid); `transcript`: keep every message.
    pub fn new(answer: Answer, transcript: bool) -> Self {
        Fold {
            answer,
            tools: Vec::new(),
            approvals: Vec::new(),
            events: transcript.then(Vec::new),
            held: 0,
        }
    }

    /// Bytes the fold holds of what was charged to it ([`Fold::cost`]).
    pub(super) fn bytes(&self) -> usize {
        self.held
    }

    /// What folding `inbound`, which came in a line of `line` bytes, costs against the output
    /// cap: a message's or thought's text; a tool call's line (its title and output) and a
    /// permission, each with [`ENTRY_OVERHEAD`]; with the transcript, every message's line too.
    pub(super) fn cost(&self, inbound: &Inbound, line: usize) -> usize {
        let kept = match inbound {
            Inbound::Update(u) => match update_kind(u) {
                "agent_message_chunk" | "agent_thought_chunk" => match SessionUpdate::read(u) {
                    SessionUpdate::AgentMessageChunk { content }
                    | SessionUpdate::AgentThoughtChunk { content } => content.text().len(),
                    _ => 0,
                },
                "tool_call" | "tool_call_update" => line + ENTRY_OVERHEAD,
                _ => 0,
            },
            Inbound::Permission { .. } => ENTRY_OVERHEAD,
            Inbound::Question { .. } => 0,
        };
        match self.events {
            Some(_) => kept + line + ENTRY_OVERHEAD,
            None => kept,
        }
    }

    /// Counts `bytes` as held ([`Fold::cost`] of a message about to be absorbed).
    pub(super) fn charge(&mut self, bytes: usize) {
        self.held += bytes;
    }

    /// Whether a tool call (or a permission request for one) was seen.
    pub fn tools_ran(&self) -> bool {
        !self.tools.is_empty()
    }

    /// The permissions put to the user (`approval_mode: "ask"`), in order: the tool's title and
    /// kind, `approved` or `rejected`, and who decided (`user`, `timeout`, `declined`, …).
    pub fn approvals(&self) -> Vec<Value> {
        self.approvals.clone()
    }

    /// The answer, its tool calls in order, and the transcript ending with `end` (how the turn
    /// ended: `{"kind": "stop", "stopReason": …}`, `error` or `cancelled`).
    pub fn finish(mut self, end: Value) -> (Answer, Option<Vec<Value>>) {
        self.answer.tool_calls = self.tools.into_iter().map(|(_, v)| v).collect();
        let events = self.events.map(|mut e| {
            e.push(end);
            e
        });
        (self.answer, events)
    }

    /// Folds one inbound message in; returns a progress note for it.
    pub fn absorb(&mut self, inbound: Inbound) -> Option<String> {
        if let Some(events) = self.events.as_mut() {
            events.push(match &inbound {
                Inbound::Update(u) => json!({"kind": "update", "update": u}),
                Inbound::Permission {
                    tool_call,
                    options,
                    allowed,
                    outcome,
                    decided_by,
                } => {
                    let mut event = json!({"kind": "permission", "toolCall": tool_call,
                        "options": options, "outcome": outcome, "approved": allowed});
                    if let Some(by) = decided_by {
                        event["decidedBy"] = json!(by);
                    }
                    event
                }
                Inbound::Question { question, .. } => {
                    json!({"kind": "question", "title": question.title, "toolKind": question.kind})
                }
            });
        }
        if let Inbound::Permission {
            tool_call,
            allowed,
            decided_by: Some(by),
            ..
        } = &inbound
        {
            let permission = if *allowed { "approved" } else { "rejected" };
            let call = ToolCall::read(tool_call);
            self.approvals
                .push(json!({"title": call.title, "kind": call.kind,
                "permission": permission, "decidedBy": by}));
        }
        absorb(&mut self.answer, &mut self.tools, inbound)
    }
}

/// Folds one inbound message into the answer; returns a progress note for it.
pub(super) fn absorb(
    answer: &mut Answer,
    tools: &mut Vec<(String, Value)>,
    inbound: Inbound,
) -> Option<String> {
    match inbound {
        Inbound::Update(u) => match SessionUpdate::read(&u) {
            SessionUpdate::AgentMessageChunk { content } => {
                answer.messages.push_str(content.text());
                None
            }
            SessionUpdate::AgentThoughtChunk { content } => {
                answer.thought.push_str(content.text());
                Some(format!("thinking: {}", preview(content.text())))
            }
            SessionUpdate::ToolCall(call) | SessionUpdate::ToolCallUpdate(call) => {
                answer.last_turn_start = answer.messages.len();
                let id = call.tool_call_id.clone();
                let entry = match tools.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, v)) => v,
                    None => {
                        tools.push((id.clone(), json!({"id": id})));
                        &mut tools.last_mut().expect("pushed").1
                    }
                };
                // An update changes only the fields it names; a call the user rejected stays
                // rejected when the agent then reports it failed (CLI 0.62 and later do).
                let rejected = entry["permission"] == "rejected";
                for (key, value) in [
                    ("title", call.title.as_ref().map(|v| json!(v))),
                    ("kind", call.kind.as_ref().map(|v| json!(v))),
                    ("status", call.status.as_ref().map(|v| json!(v))),
                    ("locations", call.locations.as_ref().map(|v| json!(v))),
                ] {
                    if let Some(value) = value {
                        if !(rejected && key == "status" && value == "failed") {
                            entry[key] = value;
                        }
                    }
                }
                let output = call.output();
                if !output.is_empty() {
                    entry["output"] = json!(output);
                }
                Some(format!(
                    "tool {}: {}",
                    entry["status"].as_str().unwrap_or("pending"),
                    preview(entry["title"].as_str().unwrap_or_default())
                ))
            }
            SessionUpdate::Plan { entries } => {
                answer.plan = entries;
                None
            }
            SessionUpdate::UsageUpdate { used, size } => {
                answer.context = Some((used, size));
                None
            }
            SessionUpdate::Other => None,
        },
        Inbound::Question { .. } => None,
        Inbound::Permission {
            tool_call,
            allowed,
            decided_by,
            ..
        } => {
            let call = ToolCall::read(&tool_call);
            let id = call.tool_call_id;
            let status = if allowed { "approved" } else { "rejected" };
            let mut entry = json!({"id": id, "title": call.title, "kind": call.kind,
                "status": status, "permission": status});
            if let Some(by) = decided_by {
                entry["decidedBy"] = json!(by);
            }
            let note = format!(
                "permission {status}: {}",
                preview(call.title.as_deref().unwrap_or_default())
            );
            match tools.iter_mut().find(|(i, _)| *i == id) {
                Some((_, v)) => *v = entry,
                None => tools.push((id, entry)),
            }
            Some(note)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_fold_into_the_answer() {
        let mut answer = Answer::default();
        let mut tools = Vec::new();
        let updates = [
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "in_progress", "title": "ls", "kind": "execute"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "a b"}}]}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        ];
        for u in updates {
            absorb(&mut answer, &mut tools, Inbound::Update(u));
        }
        let note = absorb(
            &mut answer,
            &mut tools,
            Inbound::Permission {
                tool_call: json!({"toolCallId": "t2", "title": "out.txt", "kind": "edit"}),
                options: json!([]),
                allowed: false,
                outcome: json!({"outcome": "cancelled"}),
                decided_by: None,
            },
        );
        assert_eq!(answer.messages, "Hello");
        assert_eq!(answer.thought, "hmm");
        assert_eq!(note.as_deref(), Some("permission rejected: out.txt"));
        let calls: Vec<&Value> = tools.iter().map(|(_, v)| v).collect();
        assert_eq!(calls[0]["status"], "completed");
        assert_eq!(calls[0]["title"], "ls");
        assert_eq!(calls[0]["output"], "a b");
        assert_eq!(calls[1]["status"], "rejected");
    }

    #[test]
    fn a_rejected_call_the_agent_then_reports_failed_stays_rejected() {
        // CLI 0.62 and later: the pending tool call first, the question, then a failed update.
        let mut answer = Answer::default();
        let mut tools = Vec::new();
        absorb(
            &mut answer,
            &mut tools,
            Inbound::Update(json!({"sessionUpdate": "tool_call",
            "toolCallId": "t1", "status": "pending", "title": "rm -rf build", "kind": "execute"})),
        );
        absorb(
            &mut answer,
            &mut tools,
            Inbound::Permission {
                tool_call: json!({"toolCallId": "t1", "title": "rm -rf build", "kind": "execute"}),
                options: json!([]),
                allowed: false,
                outcome: json!({"outcome": "selected", "optionId": "cancel"}),
                decided_by: Some("user"),
            },
        );
        absorb(
            &mut answer,
            &mut tools,
            Inbound::Update(json!({"sessionUpdate": "tool_call_update",
            "toolCallId": "t1", "status": "failed", "kind": "execute"})),
        );
        assert_eq!(tools.len(), 1, "{tools:?}");
        assert_eq!(tools[0].1["status"], "rejected");
        assert_eq!(tools[0].1["permission"], "rejected");
    }

    #[test]
    fn every_question_decided_is_one_approval_even_under_a_shared_tool_call_id() {
        let mut fold = Fold::new(Answer::default(), false);
        for (n, allowed) in [(0, true), (1, false), (2, true)] {
            fold.absorb(Inbound::Permission {
                tool_call: json!({"toolCallId": "same-ms", "title": format!("cmd {n}"), "kind": "execute"}),
                options: json!([]),
                allowed,
                outcome: json!({"outcome": "selected", "optionId": "x"}),
                decided_by: Some("user"),
            });
        }
        let approvals = fold.approvals();
        assert_eq!(approvals.len(), 3, "{approvals:?}");
        assert_eq!(approvals[1]["title"], "cmd 1");
        assert_eq!(approvals[1]["permission"], "rejected");
        assert_eq!(approvals[2]["permission"], "approved");
        assert_eq!(approvals[0]["decidedBy"], "user");
    }

    #[test]
    fn the_transcript_keeps_every_message_and_how_the_turn_ended() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        let permission = Inbound::Permission {
            tool_call: json!({"toolCallId": "t1", "kind": "edit"}),
            options: json!([{"optionId": "cancel", "kind": "reject_once"}]),
            allowed: false,
            outcome: json!({"outcome": "selected", "optionId": "cancel"}),
            decided_by: None,
        };
        let mut quiet = Fold::new(Answer::default(), false);
        quiet.absorb(Inbound::Update(chunk.clone()));
        assert_eq!(quiet.finish(json!({"kind": "cancelled"})).1, None);

        let mut fold = Fold::new(Answer::default(), true);
        fold.absorb(Inbound::Update(chunk.clone()));
        fold.absorb(permission);
        assert!(fold.tools_ran());
        let (answer, events) = fold.finish(json!({"kind": "stop", "stopReason": "end_turn"}));
        assert_eq!(answer.messages, "hi");
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(
            events,
            Some(vec![
                json!({"kind": "update", "update": chunk}),
                json!({"kind": "permission", "toolCall": {"toolCallId": "t1", "kind": "edit"},
                    "options": [{"optionId": "cancel", "kind": "reject_once"}],
                    "outcome": {"outcome": "selected", "optionId": "cancel"}, "approved": false}),
                json!({"kind": "stop", "stopReason": "end_turn"}),
            ])
        );
    }
}
