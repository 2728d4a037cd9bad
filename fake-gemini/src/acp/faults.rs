//! A scenario's raw process faults played over `--acp`, as a hostile or broken agent plays them
//! on the wire: a flood of `session/update`s that goes on whatever the client sends (a
//! `session/cancel` included), one huge JSON line, stdout bytes that are not JSON-RPC (invalid
//! UTF-8, a cut line), stderr flooded as it goes, SIGTERM ignored. The real agent does none of
//! these; a client must survive them all.

use serde_json::json;

use super::agent::Agent;
use crate::answer::{flood_stderr, pattern};
use crate::scenario::{FloodUpdate, Scenario};
use crate::sys::sleep_ms;

/// The text of one flooded update (as the one-shot flood's stream-json deltas).
const BLOCK: usize = 1 << 16;

/// What comes before the answer: SIGTERM ignored from here on (`ignore-sigterm`), `bytes` of
/// retry noise written straight to stderr (`flood-stderr`), a line cut short on stdout
/// (`invalid-json`).
pub(super) fn before_answer(agent: &Agent, sc: &Scenario) {
    let pr = &sc.process;
    if pr.ignore_sigterm {
        crate::proc::worker_signals(true);
    }
    if let Some(n) = pr.flood_stderr_bytes {
        flood_stderr(n, &agent.version);
    }
    if pr.invalid_json {
        agent.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":\n");
    }
}

/// The answer of a flooding or broken scenario, sent whole whatever the client says meanwhile;
/// true when it was one (the prompt then ends `end_turn`): `flood-stdout` (`bytes` of text in
/// updates of 64 KiB), `long-line` (one update of `bytes`; with `interval-ms`, written in ten
/// pieces that far apart), `non-utf8` (message chunks holding bytes that are not UTF-8, and such
/// bytes on stderr).
pub(super) fn answer(agent: &Agent, sid: &str, sc: &Scenario) -> bool {
    let pr = &sc.process;
    let kind = pr.flood_update.unwrap_or_default();
    if let Some(n) = pr.flood_stdout_bytes {
        let block = pattern(BLOCK, false);
        let line = update_line(sid, kind, 0, &block);
        let mut left = n;
        let mut k = 0;
        while left > 0 {
            let size = left.min(BLOCK as u64) as usize;
            k += 1;
            match (size == BLOCK, kind) {
                (true, FloodUpdate::Message | FloodUpdate::Thought) => agent.send_raw(&line),
                _ => agent.send_raw(&update_line(sid, kind, k, &block[..size])),
            }
            left -= size as u64;
        }
        return true;
    }
    if let Some(n) = pr.long_line_bytes {
        let line = update_line(sid, kind, 1, &pattern(n as usize, false));
        match sc.model.chunk_interval_ms {
            0 => agent.send_raw(&line),
            ms => {
                let piece = line.len().div_ceil(10).max(1);
                agent.send_pieces(line.chunks(piece), || sleep_ms(ms));
            }
        }
        return true;
    }
    if pr.non_utf8 {
        for text in ["caf\u{E000} ", "\u{E001} ok"] {
            let line = update_line(sid, FloodUpdate::Message, 0, text);
            agent.send_raw(&not_utf8(&line));
        }
        agent.stderr_bytes(b"warning: \xff\xfe not utf-8\n");
        return true;
    }
    false
}

/// One `session/update` line of `kind` carrying `text` (`n`: a tool call's number).
fn update_line(sid: &str, kind: FloodUpdate, n: u64, text: &str) -> Vec<u8> {
    let content = json!({"type": "text", "text": text});
    let update = match kind {
        FloodUpdate::Message => json!({"sessionUpdate": "agent_message_chunk", "content": content}),
        FloodUpdate::Thought => json!({"sessionUpdate": "agent_thought_chunk", "content": content}),
        FloodUpdate::Tool => {
            json!({"sessionUpdate": "tool_call", "toolCallId": format!("flood_{n}"),
            "title": "flood", "kind": "other", "status": "completed",
            "content": [{"type": "content", "content": content}]})
        }
    };
    let mut line =
        serde_json::to_vec(&super::agent::update_message(sid, &update)).expect("serializes");
    line.push(b'\n');
    line
}

/// `line` with U+E000 written as the lone byte 0xE9 and U+E001 as 0xFF 0xFE (as the one-shot
/// `non-utf8` answer has them).
fn not_utf8(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        match &line[i..] {
            [0xEE, 0x80, 0x80, ..] => {
                out.push(0xE9);
                i += 3;
            }
            [0xEE, 0x80, 0x81, ..] => {
                out.extend_from_slice(&[0xFF, 0xFE]);
                i += 3;
            }
            _ => {
                out.push(line[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_broken_lines_are_not_json_rpc_and_the_flood_lines_are() {
        let line = not_utf8(&update_line(
            "s",
            FloodUpdate::Message,
            0,
            "caf\u{E000} \u{E001}",
        ));
        assert!(std::str::from_utf8(&line).is_err());
        assert!(serde_json::from_slice::<serde_json::Value>(&line).is_err());
        assert!(line.windows(4).any(|w| w == b"caf\xE9"));
        for kind in [
            FloodUpdate::Message,
            FloodUpdate::Thought,
            FloodUpdate::Tool,
        ] {
            let line = update_line("s", kind, 3, "abc");
            let v: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
            assert_eq!(v["params"]["sessionId"], "s");
            assert!(line.ends_with(b"}\n"));
        }
    }
}
