//! The ACP client's reading side: every line through `Message::parse` (what the reader runs on
//! the agent's stdout), permission requests answered under each approval mode, and updates and
//! permission decisions folded into a prompt's answer and `full_output` transcript.
#![no_main]

use geminicli_mcp::acp::client::{permission, Inbound, Message};
use geminicli_mcp::acp::pool::{Answer, Fold};
use geminicli_mcp::approval::ApprovalMode;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const MODES: [ApprovalMode; 4] = [
    ApprovalMode::Plan,
    ApprovalMode::Default,
    ApprovalMode::AutoEdit,
    ApprovalMode::Yolo,
];

fuzz_target!(|data: &[u8]| {
    let mut fold = Fold::new(Answer::default(), true);
    let mut folded = 0usize;
    for line in data.split(|b| *b == b'\n') {
        let msg = Message::parse(line);
        // The reader hands lines over with their newline: it must not change the meaning.
        let mut with_newline = line.to_vec();
        with_newline.push(b'\n');
        assert_eq!(Message::parse(&with_newline), msg);
        match msg {
            Message::Update { update, .. } => {
                fold.absorb(Inbound::Update(update));
                folded += 1;
            }
            Message::Permission { params, .. } => {
                let offered = params["options"].as_array().cloned().unwrap_or_default();
                for mode in MODES {
                    let (outcome, allowed) = permission(mode, &params);
                    let outcome = serde_json::to_value(outcome).expect("an outcome is JSON");
                    if mode <= ApprovalMode::Default {
                        assert!(!allowed, "{mode:?} approved a tool call");
                    }
                    match outcome["outcome"].as_str() {
                        Some("selected") => {
                            let chosen = offered
                                .iter()
                                .find(|o| o["optionId"] == outcome["optionId"])
                                .expect("the option chosen was offered");
                            let kind = chosen["kind"].as_str().unwrap_or_default();
                            match allowed {
                                true => assert_eq!(kind, "allow_once"),
                                false => assert!(kind.starts_with("reject_"), "{kind}"),
                            }
                        }
                        Some("cancelled") => assert!(!allowed),
                        other => panic!("outcome {other:?}"),
                    }
                }
                let (outcome, allowed) = permission(ApprovalMode::AutoEdit, &params);
                let outcome = serde_json::to_value(outcome).expect("an outcome is JSON");
                fold.absorb(Inbound::Permission {
                    tool_call: params["toolCall"].clone(),
                    options: params["options"].clone(),
                    allowed,
                    outcome,
                    decided_by: None,
                });
                folded += 1;
            }
            Message::Response { .. } | Message::Unsupported { .. } | Message::Ignored => {}
        }
    }
    let ran = fold.tools_ran();
    let (answer, events) = fold.finish(json!({"kind": "stop", "stopReason": "end_turn"}));
    let events = events.expect("a transcript was asked for");
    assert_eq!(events.len(), folded + 1);
    assert_eq!(ran, !answer.tool_calls.is_empty());
    for call in &answer.tool_calls {
        assert!(call["id"].is_string(), "{call}");
    }
    assert_eq!(events[folded]["kind"], "stop");
});
