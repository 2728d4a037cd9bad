use super::book::{Book, Command};
use super::message::permission_answer;
use super::*;
use serde_json::json;

/// The answer to a permission request as it goes on the wire, and whether it allows.
fn permission(mode: ApprovalMode, params: &Value) -> (Value, bool) {
    let (outcome, allowed) = super::permission(mode, params);
    (serde_json::to_value(outcome).expect("JSON"), allowed)
}

fn request(kind: &str) -> Value {
    json!({"toolCall": {"kind": kind}, "options": [
        {"optionId": "proceed_always", "kind": "allow_always"},
        {"optionId": "proceed_once", "kind": "allow_once"},
        {"optionId": "cancel", "kind": "reject_once"}
    ]})
}

#[test]
fn agent_lines_are_classified() {
    let parse = |line: &str| Message::parse(line.as_bytes());
    assert_eq!(
        parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":429,"message":"quota"}}"#),
        Message::Response {
            id: 3,
            answer: Err(AcpError::Rpc {
                code: 429,
                message: "quota".into()
            })
        }
    );
    assert_eq!(
        parse("{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"stopReason\":\"end_turn\"}}\n"),
        Message::Response {
            id: 4,
            answer: Ok(json!({"stopReason": "end_turn"}))
        }
    );
    assert_eq!(
        parse(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan"}}}"#
        ),
        Message::Update {
            session: "s".into(),
            update: json!({"sessionUpdate": "plan"})
        }
    );
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s"}}"#),
        Message::Permission { id, session, .. } if id == acp::RequestId::Number(0) && session == "s"
    ));
    assert_eq!(
        parse(r#"{"jsonrpc":"2.0","id":"r","method":"fs/read_text_file","params":{}}"#),
        Message::Unsupported {
            id: acp::RequestId::Str("r".into()),
            method: "fs/read_text_file".into()
        }
    );
    for ignored in [
        "not json",
        r#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#,
        "[1,2]",
    ] {
        assert_eq!(parse(ignored), Message::Ignored, "{ignored}");
    }
}

#[test]
fn permissions_follow_the_mode_never_the_first_option() {
    let chosen = |mode, kind| permission(mode, &request(kind)).0["optionId"].clone();
    assert_eq!(chosen(ApprovalMode::Yolo, "execute"), "proceed_once");
    assert_eq!(chosen(ApprovalMode::AutoEdit, "edit"), "proceed_once");
    assert_eq!(chosen(ApprovalMode::AutoEdit, "execute"), "cancel");
    assert_eq!(chosen(ApprovalMode::Default, "edit"), "cancel");
    assert_eq!(chosen(ApprovalMode::Plan, "read"), "cancel");
    let none = json!({"toolCall": {"kind": "edit"}, "options": []});
    assert_eq!(
        permission(ApprovalMode::Default, &none).0,
        json!({"outcome": "cancelled"})
    );
}

/// Found by the `acp_messages` fuzz target (its input's permission request, verbatim): the
/// id `cancel` is offered twice, once without a kind. Answering it would leave the agent to
/// guess which one was meant; the reject must be unambiguous, else the answer is `cancelled`.
#[test]
fn an_option_id_offered_with_two_kinds_is_never_chosen() {
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"660fcb53-e1c0-4116-95a7-d3dd7ef2dfa8","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Re_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"write_file__write_file_1796006629215_0","status":"pending","title":"Writing to notes.txt","content":[{"type":"diff","path":"<CWD>/notes.txt","oldText":"","newText":"hi","_meta":{"kind":"add"}}],"locations":[{"path":"<CWD>/notes.txt"}],"kind":"edit"}}}"#;
    let Message::Permission { params, .. } = Message::parse(line.as_bytes()) else {
        panic!("not a permission request");
    };
    assert_eq!(
        permission(ApprovalMode::Default, &params),
        (json!({"outcome": "cancelled"}), false)
    );
    // The same id twice with one kind is no ambiguity.
    assert_eq!(
        permission(ApprovalMode::Yolo, &params).0,
        json!({"outcome": "selected", "optionId": "proceed_once"})
    );
    // A reject id that is also "allow always" must not be sent as the refusal.
    let trap = json!({"toolCall": {"kind": "edit"}, "options": [
        {"optionId": "x", "kind": "allow_always"},
        {"optionId": "x", "kind": "reject_once"},
        {"optionId": "no", "kind": "reject_always"}
    ]});
    assert_eq!(
        permission(ApprovalMode::Plan, &trap).0,
        json!({"outcome": "selected", "optionId": "no"})
    );
}

#[test]
fn lines_that_are_not_utf8_are_read_lossily() {
    let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"caf\xE9 \xFF\xFE ok\"}}}}\n";
    assert_eq!(
        Message::parse(line),
        Message::Update {
            session: "s".into(),
            update: json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "caf\u{FFFD} \u{FFFD}\u{FFFD} ok"}})
        }
    );
    // Not JSON either way: still skipped.
    assert_eq!(Message::parse(b"{\"jsonrpc\":\xFF\n"), Message::Ignored);
}

#[test]
fn the_lines_sent_are_the_ones_the_cli_reads() {
    let answer = permission_answer(
        acp::RequestId::Number(7),
        acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(
            "proceed_once",
        )),
    );
    assert_eq!(
        String::from_utf8(answer).expect("UTF-8"),
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"proceed_once\"}}}\n"
    );
    let request = line(&acp::JsonRpcMessage::wrap(acp::Request {
        id: acp::RequestId::Number(2),
        method: "session/set_mode".into(),
        params: Some(acp::SetSessionModeRequest::new("s".to_string(), "yolo")),
    }));
    assert_eq!(
        String::from_utf8(request).expect("UTF-8"),
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"s\",\"modeId\":\"yolo\"}}\n"
    );
}

#[test]
fn initialize_names_no_capability() {
    let init = acp::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
        .client_info(acp::Implementation::new("geminicli-mcp", "1.0.0"));
    assert_eq!(
        serde_json::to_value(init).expect("JSON"),
        json!({"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false,
                "auth": {"terminal": false}},
            "clientInfo": {"name": "geminicli-mcp", "version": "1.0.0"}}),
        "no file system and no terminal for the agent"
    );
}

/// The reader's book: a cancel counts only while its prompt waits (an answer read first leaves
/// nothing to settle), and the last cancelled prompt's answer settles the agent.
#[test]
fn a_cancel_counts_while_its_prompt_waits_and_its_answer_settles_the_agent() {
    let mut book = Book::default();
    let ask = |book: &mut Book, command: fn(oneshot::Sender<bool>) -> Command| {
        let (tx, mut rx) = oneshot::channel();
        book.apply(command(tx));
        rx.try_recv().expect("answered at once")
    };
    let (waiter, mut answer) = oneshot::channel();
    book.apply(Command::Await(1, waiter));
    book.apply(Command::Cancel(2));
    assert!(
        !ask(&mut book, Command::Unsettled),
        "prompt 2 was answered already"
    );
    book.apply(Command::Cancel(1));
    assert!(ask(&mut book, Command::Unsettled));
    assert!(ask(&mut book, |tx| Command::Waiting(1, tx)));
    let (tx, mut settled) = oneshot::channel();
    book.apply(Command::Settled(tx));
    assert!(settled.try_recv().is_err(), "prompt 1 not answered yet");

    book.answered(1, Ok(json!({"stopReason": "cancelled"})));
    assert_eq!(
        answer.try_recv(),
        Ok(Ok(json!({"stopReason": "cancelled"})))
    );
    assert_eq!(settled.try_recv(), Ok(()));
    assert!(!ask(&mut book, Command::Unsettled));
    assert!(!ask(&mut book, |tx| Command::Waiting(1, tx)));
    let (tx, mut settled) = oneshot::channel();
    book.apply(Command::Settled(tx));
    assert_eq!(settled.try_recv(), Ok(()), "settled already");
}
