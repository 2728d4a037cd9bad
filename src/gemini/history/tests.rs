use super::*;

const SID: &str = "0b7e5c1a-1111-4222-8333-944455556666";

fn write(dir: &Path, name: &str, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(dir.join(name), text).unwrap();
}

fn header(updated: &str) -> Value {
    serde_json::json!({"sessionId": SID, "projectHash": "h", "startTime": "2026-12-01T10:00:00.000Z", "lastUpdated": updated})
}

fn kinds(r: &[Replayed]) -> Vec<(&str, &str)> {
    r.iter().map(|r| (r.kind, r.key.as_str())).collect()
}

#[test]
fn a_session_file_replays_its_context_turns_thoughts_and_tool_calls_in_order() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "session-2026-12-01T10-00-0b7e5c1a.jsonl",
        &[
            header("2026-12-01T10:00:00.000Z"),
            serde_json::json!({"$set": {"messages": [{"id": "c", "type": "user", "content": [{"text": "<session_context>\nx"}]}]}}),
            serde_json::json!({"id": "u1", "type": "user", "content": [{"text": "hi"}]}),
            serde_json::json!({"id": "g1", "type": "gemini", "content": "", "thoughts": [{"subject": "S", "description": "D"}],
                "toolCalls": [{"id": "read-1", "name": "read_file", "status": "success"}]}),
            // A record of an id seen before replaces it where it was.
            serde_json::json!({"id": "g1", "type": "gemini", "content": [{"text": "answer"}, {"functionCall": {"name": "f"}}],
                "thoughts": [{"subject": "S", "description": "D"}],
                "toolCalls": [{"id": "read-1", "name": "read_file", "status": "success"}]}),
            serde_json::json!({"id": "i1", "type": "info", "content": "note"}),
            serde_json::json!({"id": "u2", "type": "user", "content": "  "}),
            serde_json::json!({"$set": {"lastUpdated": "2026-12-01T10:01:00.000Z"}}),
        ],
    );
    let r = replay_of(dir.path(), SID).unwrap();
    assert_eq!(
        kinds(&r),
        [
            ("user_message_chunk", "<session_context>\nx"),
            ("user_message_chunk", "hi"),
            ("agent_thought_chunk", "**S**\nD"),
            ("agent_message_chunk", "answer[Function Call: f]"),
            ("tool_call", "read-1"),
        ]
    );
    assert!(
        r[3].matches(&serde_json::json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "answer[Function Call: f]"}}))
    );
    assert!(
        !r[3].matches(&serde_json::json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "answer"}}))
    );
}

#[test]
fn a_rewind_drops_its_message_and_all_after_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "session-2026-12-01T10-00-0b7e5c1a.jsonl",
        &[
            header("2026-12-01T10:00:00.000Z"),
            serde_json::json!({"id": "u1", "type": "user", "content": "one"}),
            serde_json::json!({"id": "g1", "type": "gemini", "content": "uno"}),
            serde_json::json!({"id": "u2", "type": "user", "content": "two"}),
            serde_json::json!({"$rewindTo": "u2"}),
            serde_json::json!({"id": "u3", "type": "user", "content": "three"}),
        ],
    );
    let r = replay_of(dir.path(), SID).unwrap();
    assert_eq!(
        kinds(&r),
        [
            ("user_message_chunk", "one"),
            ("agent_message_chunk", "uno"),
            ("user_message_chunk", "three"),
        ]
    );
}

#[test]
fn of_several_files_the_one_updated_last_with_content_counts_and_a_stub_never() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "session-2026-12-01T10-00-0b7e5c1a.jsonl",
        &[
            header("2026-12-01T10:05:00.000Z"),
            serde_json::json!({"id": "u1", "type": "user", "content": "kept"}),
        ],
    );
    // A later stub (headers and context only): no resumable content, never picked.
    write(
        dir.path(),
        "session-2026-12-01T10-07-0b7e5c1a.jsonl",
        &[
            header("2026-12-01T10:07:00.000Z"),
            serde_json::json!({"$set": {"messages": [{"id": "c", "type": "user", "content": "<session_context>"}]}}),
        ],
    );
    // Another session sharing the 8 characters.
    let other = serde_json::json!({"sessionId": "0b7e5c1a-0000-4000-8000-000000000000", "projectHash": "h", "lastUpdated": "2026-12-09T00:00:00.000Z"});
    write(
        dir.path(),
        "session-2026-12-01T10-09-0b7e5c1a.jsonl",
        &[
            other,
            serde_json::json!({"id": "u9", "type": "user", "content": "not ours"}),
        ],
    );
    let r = replay_of(dir.path(), SID).unwrap();
    assert_eq!(kinds(&r), [("user_message_chunk", "kept")]);
    assert_eq!(
        replay_of(dir.path(), "99999999-0000-4000-8000-000000000000"),
        None
    );
}

#[test]
fn a_legacy_file_is_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = serde_json::json!({"sessionId": SID, "projectHash": "h", "lastUpdated": "x",
        "messages": [{"id": "u1", "type": "user", "content": "old"}, {"id": "g1", "type": "gemini", "content": "reply"}]});
    fs::write(
        dir.path().join("session-2026-12-01T10-00-0b7e5c1a.json"),
        serde_json::to_string_pretty(&legacy).unwrap(),
    )
    .unwrap();
    let r = replay_of(dir.path(), SID).unwrap();
    assert_eq!(
        kinds(&r),
        [
            ("user_message_chunk", "old"),
            ("agent_message_chunk", "reply")
        ]
    );
}

#[test]
fn parts_read_as_the_cli_reads_them() {
    let parts = serde_json::json!([
        {"text": "see "},
        {"inlineData": {"mimeType": "image/png", "data": "a".repeat(2048)}},
        {"functionResponse": {"name": "read_file"}},
        {"thought": true, "text": "hidden"},
    ]);
    assert_eq!(
        part_text(&parts),
        "see [Image: image/png, 1.5 KB][Function Response: read_file][Thought: true]"
    );
    assert_eq!(part_text(&serde_json::json!("plain")), "plain");
}
