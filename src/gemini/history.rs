//! What Gemini CLI 0.61's `session/load` replays, read from the session's own file: the agent
//! answers the load after the first replayed update and streams the rest while it answers later
//! requests (its `streamHistory` is not awaited; a full stdout pipe lets a later answer overtake
//! the rest), so only the replay's length says where it ends. The agent builds the replay from
//! the messages its session loader reads (`loadConversationRecord`), one `session/update` per
//! non-empty user message, per thought, per non-empty answer and per tool call, in order; this
//! module reads the same file the same way and lists the same updates.
//!
//! The file is the one the CLI picks for the id: among the project's `session-*.json[l]` files
//! whose records name the session and hold resumable content, the one updated last.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

/// One update of a replay: its `sessionUpdate` kind and what identifies it (the text of a
/// message or thought chunk, the `toolCallId` of a tool call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replayed {
    /// `user_message_chunk`, `agent_thought_chunk`, `agent_message_chunk` or `tool_call`.
    pub kind: &'static str,
    /// The chunk's text, or the tool call's id.
    pub key: String,
}

/// The `sessionUpdate` kinds a replay is made of.
pub(crate) const REPLAY_KINDS: [&str; 4] = [
    "user_message_chunk",
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
];

impl Replayed {
    /// Whether `update` (a `session/update`'s `update` object) is this one.
    pub(crate) fn matches(&self, update: &Value) -> bool {
        if update["sessionUpdate"] != self.kind {
            return false;
        }
        match self.kind {
            "tool_call" => update["toolCallId"].as_str() == Some(self.key.as_str()),
            _ => update["content"]["text"].as_str() == Some(self.key.as_str()),
        }
    }
}

/// The updates a `session/load` of `session_id` replays, from the files in `chats` (the
/// project's chat directory); `None` when no readable file holds the session.
pub(crate) fn replay_of(chats: &Path, session_id: &str) -> Option<Vec<Replayed>> {
    let id8: String = session_id.chars().take(8).collect();
    let mut names: Vec<String> = fs::read_dir(chats)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| {
            n.starts_with("session-")
                && (n.ends_with(&format!("-{id8}.jsonl")) || n.ends_with(&format!("-{id8}.json")))
        })
        .collect();
    // The CLI reads the files in name order and keeps a later one only when it was updated
    // strictly later.
    names.sort();
    let mut best: Option<(String, Vec<Value>)> = None;
    for name in names {
        let Ok(text) = fs::read_to_string(chats.join(&name)) else {
            continue;
        };
        let Some(record) = load_record(&text) else {
            continue;
        };
        if record.session_id != session_id
            || record.kind.as_deref() == Some("subagent")
            || !record.messages.iter().any(resumable)
        {
            continue;
        }
        if best.as_ref().is_none_or(|(t, _)| record.last_updated > *t) {
            best = Some((record.last_updated, record.messages));
        }
    }
    best.map(|(_, messages)| messages.iter().flat_map(updates_of).collect())
}

/// A session file as the CLI's loader reads it.
struct Record {
    session_id: String,
    last_updated: String,
    kind: Option<String>,
    messages: Vec<Value>,
}

/// Reads a session file as `loadConversationRecord` does: JSON lines of a header, messages (by
/// `id`: a later record of an id replaces the earlier in its place), `$rewindTo` (drops that
/// message and all after it; all when it names none), `$set` (metadata; its `messages` replace
/// all); a file without a session id and project hash in its lines is one legacy JSON object.
fn load_record(text: &str) -> Option<Record> {
    let mut meta = Map::new();
    let mut messages: Vec<(String, Value)> = Vec::new();
    let put = |messages: &mut Vec<(String, Value)>, m: &Value| {
        let Some(id) = m.get("id").and_then(Value::as_str) else {
            return;
        };
        match messages.iter_mut().find(|(i, _)| i == id) {
            Some(slot) => slot.1 = m.clone(),
            None => messages.push((id.to_owned(), m.clone())),
        }
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(to) = record.get("$rewindTo").and_then(Value::as_str) {
            let at = messages.iter().position(|(i, _)| i == to).unwrap_or(0);
            messages.truncate(at);
        } else if record.get("id").is_some_and(Value::is_string) {
            put(&mut messages, &Value::Object(record));
        } else if let Some(Value::Object(set)) = record.get("$set") {
            if let Some(Value::Array(list)) = set.get("messages") {
                messages.clear();
                list.iter().for_each(|m| put(&mut messages, m));
            }
            meta.extend(set.clone());
        } else if record.get("sessionId").is_some_and(Value::is_string)
            && record.get("projectHash").is_some_and(Value::is_string)
        {
            if let Some(Value::Array(list)) = record.get("messages") {
                list.iter().for_each(|m| put(&mut messages, m));
            }
            meta.extend(record);
        }
    }
    let str_of =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    if str_of(&meta, "sessionId").is_none() || str_of(&meta, "projectHash").is_none() {
        // The legacy format: the whole file one object.
        let Ok(Value::Object(legacy)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        let messages = legacy
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return Some(Record {
            session_id: str_of(&legacy, "sessionId")?,
            last_updated: str_of(&legacy, "lastUpdated")
                .or_else(|| str_of(&legacy, "startTime"))
                .unwrap_or_default(),
            kind: str_of(&legacy, "kind"),
            messages,
        });
    }
    Some(Record {
        session_id: str_of(&meta, "sessionId")?,
        last_updated: str_of(&meta, "lastUpdated")
            .or_else(|| str_of(&meta, "startTime"))
            .unwrap_or_default(),
        kind: str_of(&meta, "kind"),
        messages: messages.into_iter().map(|(_, m)| m).collect(),
    })
}

/// `partListUnionToString` (verbose): a string as it is, parts joined, non-text parts by name.
fn part_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(part_text).collect(),
        Value::Object(p) => {
            let has = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
            if has("videoMetadata") {
                "[Video Metadata]".into()
            } else if has("thought") {
                format!("[Thought: {}]", p["thought"])
            } else if has("codeExecutionResult") {
                "[Code Execution Result]".into()
            } else if has("executableCode") {
                "[Executable Code]".into()
            } else if has("fileData") {
                "[File Data]".into()
            } else if has("functionCall") {
                format!("[Function Call: {}]", name_of(&p["functionCall"]))
            } else if has("functionResponse") {
                format!("[Function Response: {}]", name_of(&p["functionResponse"]))
            } else if has("inlineData") {
                media(&p["inlineData"])
            } else {
                p.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            }
        }
        _ => String::new(),
    }
}

/// An inline media part: `[Image: image/png, 1.5 KB]` (its size from the base64 data's length).
fn media(data: &Value) -> String {
    let mime = data["mimeType"].as_str().unwrap_or("unknown");
    let chars = data["data"].as_str().map_or(0, str::len) as u64;
    let kb = (chars * 3).div_ceil(4) as f64 / 1024.0;
    let category = ["audio/", "video/", "image/"]
        .iter()
        .zip(["Audio", "Video", "Image"])
        .find(|(prefix, _)| mime.starts_with(**prefix))
        .map_or("Media", |(_, c)| c);
    format!("[{category}: {mime}, {kb:.1} KB]")
}

fn name_of(call: &Value) -> String {
    match &call["name"] {
        Value::String(s) => s.clone(),
        Value::Null => "undefined".into(),
        other => other.to_string(),
    }
}

/// Whether a message gives the file resumable content (`isResumableMessageRecord`).
fn resumable(m: &Value) -> bool {
    let text = part_text(&m["content"]);
    let text = text.trim();
    let count = |k: &str| m[k].as_array().map_or(0, Vec::len);
    match m["type"].as_str() {
        Some("user") => {
            !(text.is_empty()
                || text.starts_with('/')
                || text.starts_with('?')
                || text.starts_with("<session_context>")
                || text.starts_with("<hook_context>"))
        }
        Some("gemini") => !text.is_empty() || count("toolCalls") > 0 || count("thoughts") > 0,
        _ => false,
    }
}

/// The updates `streamHistory` sends for one message.
fn updates_of(m: &Value) -> Vec<Replayed> {
    let text = part_text(&m["content"]);
    let chunk = |kind, key: String| Replayed { kind, key };
    let mut out = Vec::new();
    match m["type"].as_str() {
        Some("user") if !text.trim().is_empty() => out.push(chunk("user_message_chunk", text)),
        Some("gemini") => {
            for t in m["thoughts"].as_array().into_iter().flatten() {
                let s = |k: &str| match &t[k] {
                    Value::String(s) => s.clone(),
                    Value::Null => "undefined".into(),
                    v => v.to_string(),
                };
                out.push(chunk(
                    "agent_thought_chunk",
                    format!("**{}**\n{}", s("subject"), s("description")),
                ));
            }
            if !text.trim().is_empty() {
                out.push(chunk("agent_message_chunk", text));
            }
            for c in m["toolCalls"].as_array().into_iter().flatten() {
                let id = c["id"].as_str().unwrap_or_default().to_owned();
                out.push(chunk("tool_call", id));
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests;
