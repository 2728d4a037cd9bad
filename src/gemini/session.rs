//! The CLI's sessions as the server sees them: session ids (UUIDs only), the project's chat
//! directory, the clean-up of the stub files behind the upstream "session lost after a resume in a
//! later minute" bug, and the parsing of `--list-sessions` / `--delete-session` output.
//!
//! The CLI keeps sessions per project (its cwd) under `<HOME>/.gemini`: `projects.json` maps the
//! cwd to a short name, and `tmp/<short>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl` holds each
//! conversation. A resume in a later clock minute than the session was made in writes the new turn
//! into the old file *and* creates a stub (header and session context only) named after the new
//! minute; the next CLI start in that project treats the stub as invalid and deletes every file of
//! that short id, the real conversation included (reference §11.1). Removing the stub right after
//! the resumed run, before any other start in the workspace, prevents the loss.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::Failure;

/// Checks a session id: a UUID in its canonical 8-4-4-4-12 hexadecimal form. `latest` and list
/// indexes are refused: indexes shift with every resume, and `latest` is whatever ran last.
pub(crate) fn validate_session_id(id: &str) -> Result<(), Failure> {
    let groups: Vec<&str> = id.split('-').collect();
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(Failure::invalid_input(format!(
            "session_id must be a session UUID (8-4-4-4-12 hexadecimal digits, as returned in structuredContent.sessionId), got {:?}; `latest` and list numbers are not accepted",
            id.chars().take(64).collect::<String>()
        )))
    }
}

/// The CLI's state directory: `$HOME/.gemini` (`USERPROFILE` on Windows), as the CLI computes it.
pub(crate) fn gemini_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()))?;
    Some(PathBuf::from(home).join(".gemini"))
}

/// The chat directory of the project `workspace` (the CLI's cwd), when the CLI has registered it.
pub(crate) fn chats_dir(gemini_dir: &Path, workspace: &Path) -> Option<PathBuf> {
    let doc: Value =
        serde_json::from_slice(&fs::read(gemini_dir.join("projects.json")).ok()?).ok()?;
    let key = workspace.to_str()?;
    let short = doc.get("projects")?.get(key)?.as_str()?;
    // A short name is a basename the CLI derived; anything path-like is not ours to follow.
    if short.is_empty() || short.contains(['/', '\\']) || short == ".." || short == "." {
        return None;
    }
    Some(gemini_dir.join("tmp").join(short).join("chats"))
}

/// Whether a session file holds no message at all: only header lines and `$set` updates (the
/// session context lives in a `$set`). That is the stub the CLI's clean-up deletes its session
/// for. Anything unreadable or unexpected counts as not a stub, so it is left alone.
pub(crate) fn is_stub(text: &str) -> bool {
    let mut lines = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        let header = obj.contains_key("sessionId") && !obj.contains_key("type");
        let update = obj.len() == 1 && obj.contains_key("$set");
        if !(header || update) {
            return false;
        }
    }
    lines > 0
}

/// Removes the stub files of `session_id` in `chats` (see the module docs) and returns them.
/// The caller holds the workspace's exclusive lock, so no CLI in that project is starting or
/// writing a new session meanwhile.
pub(crate) fn remove_stubs(chats: &Path, session_id: &str) -> Vec<PathBuf> {
    let id8: String = session_id.chars().take(8).collect();
    let suffix = format!("-{id8}.jsonl");
    let Ok(entries) = fs::read_dir(chats) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("session-") && name.ends_with(&suffix)) {
            continue;
        }
        let path = entry.path();
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        // The stub must belong to this session, not to another whose id shares 8 characters.
        let ours = text.lines().next().is_some_and(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|v| {
                    v.get("sessionId")
                        .and_then(Value::as_str)
                        .map(|s| s == session_id)
                })
                .unwrap_or(false)
        });
        if ours && is_stub(&text) && fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Whether the file of the new session `session_id` in `chats` has recorded a user message
/// (`Some(true)`): from then on another CLI start's clean-up keeps it. `Some(false)`: the file
/// holds only its header, and any other start in the project deletes it (the clean-up spares only
/// the starting run's own session). `None`: the session has no file (yet, or at all).
pub(crate) fn prompt_recorded(chats: &Path, session_id: &str) -> Option<bool> {
    let id8: String = session_id.chars().take(8).collect();
    let suffix = format!("-{id8}.jsonl");
    let entries = fs::read_dir(chats).ok()?;
    let mut found = None;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("session-") && name.ends_with(&suffix)) {
            continue;
        }
        let Ok(text) = fs::read_to_string(entry.path()) else {
            continue;
        };
        let mut lines = text.lines();
        let ours = lines.next().is_some_and(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v.get("sessionId").and_then(Value::as_str) == Some(session_id))
        });
        if !ours {
            continue;
        }
        let recorded = lines.any(|l| {
            l.contains("\"user\"")
                && serde_json::from_str::<Value>(l)
                    .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("user"))
        });
        if recorded {
            return Some(true);
        }
        found = Some(false);
    }
    found
}

/// Whether the new session `session_id` of `workspace` can still be deleted by another CLI
/// start: its file exists and holds no message yet (see [`prompt_recorded`]). No file, or no
/// known chat directory: nothing a start could delete.
pub(crate) fn exposed(workspace: &Path, session_id: &str) -> bool {
    gemini_dir()
        .and_then(|g| chats_dir(&g, workspace))
        .and_then(|chats| prompt_recorded(&chats, session_id))
        == Some(false)
}

/// Runs `remove` (a stub remover: [`remove_stubs`], [`remove_stubs_once_recorded`]) on the chat
/// directory of `workspace` for session `id`, off the async threads, and logs what it removed
/// (`what`: whose stubs they were). No known chat directory: nothing to remove.
pub(crate) async fn tidy_stubs(
    workspace: &Path,
    id: &str,
    remove: fn(&Path, &str) -> Vec<PathBuf>,
    what: &'static str,
) {
    let (workspace, id) = (workspace.to_path_buf(), id.to_string());
    let removed = tokio::task::spawn_blocking(move || {
        gemini_dir()
            .and_then(|g| chats_dir(&g, &workspace))
            .map(|chats| remove(&chats, &id))
            .unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    if !removed.is_empty() {
        tracing::debug!(stubs = removed.len(), "removed {what}");
    }
}

/// Removes the stubs of the new session `session_id` in `chats` once one of its files has recorded the
/// prompt, and returns them. Gemini CLI 0.61's `session/new` opens the session's recording twice,
/// a few milliseconds apart (`config.initialize()`, then `startChat()`), each time in the file
/// named after the current clock minute; when a minute ends between the two, the first file is
/// left with a header only while the conversation goes to the second, and the next CLI start in
/// the project deletes every file of the session, the conversation included. Nothing is removed
/// while no file holds the prompt: then the header-only file may be the session's own.
pub(crate) fn remove_stubs_once_recorded(chats: &Path, session_id: &str) -> Vec<PathBuf> {
    if prompt_recorded(chats, session_id) != Some(true) {
        return Vec::new();
    }
    remove_stubs(chats, session_id)
}

/// `YYYY-MM-DDTHH-MM` (UTC) of `t`: the minute the CLI names a session's file after
/// (`session-<minute>-<id8>.jsonl`).
pub(crate) fn minute_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The minutes (`YYYY-MM-DDTHH-MM`) in the names of the files of session `session_id` in `chats`
/// (files whose header names that session).
pub(crate) fn file_minutes(chats: &Path, session_id: &str) -> Vec<String> {
    let id8: String = session_id.chars().take(8).collect();
    let suffix = format!("-{id8}.jsonl");
    let Ok(entries) = fs::read_dir(chats) else {
        return Vec::new();
    };
    let mut minutes = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(minute) = name
            .to_str()
            .and_then(|n| n.strip_prefix("session-"))
            .and_then(|n| n.strip_suffix(suffix.as_str()))
        else {
            continue;
        };
        let Ok(text) = fs::read_to_string(entry.path()) else {
            continue;
        };
        let ours = text.lines().next().is_some_and(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v.get("sessionId").and_then(Value::as_str) == Some(session_id))
        });
        if ours {
            minutes.push(minute.to_owned());
        }
    }
    minutes
}

/// Past this many entries, a per-workspace lock map drops the locks nobody holds or waits for.
const PRUNE_AT: usize = 64;

/// The lock of `key` in a per-workspace lock map, made on first use. Once the map holds
/// [`PRUNE_AT`] entries, those nobody holds or waits for (the map's own reference is their only
/// one) are dropped first, so a server that sees many workspaces does not keep a lock for each
/// forever; a workspace that comes back gets a fresh one.
pub(crate) fn workspace_entry<T: Default>(
    map: &mut HashMap<PathBuf, Arc<T>>,
    key: PathBuf,
) -> Arc<T> {
    if map.len() >= PRUNE_AT {
        map.retain(|_, lock| Arc::strong_count(lock) > 1);
    }
    map.entry(key).or_default().clone()
}

/// One entry of `--list-sessions`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListedSession {
    /// The session UUID (what `session_id` takes).
    pub session_id: String,
    /// The title: the CLI's summary, else the first prompt (free text).
    pub title: String,
    /// The relative age the CLI printed (`Just now`, `8 minutes ago`).
    pub age: String,
    /// Whether the CLI marked it `current`.
    pub current: bool,
}

/// Parses `--list-sessions` output: `  <n>. <title> (<age>[, current]) [<id>]` per line. Titles
/// are free text, so each entry is read from the right: the last `[…]` is the id, the `(…)`
/// before it the age. The index is dropped: it shifts with every resume.
pub(crate) fn parse_listing(stdout: &str) -> Vec<ListedSession> {
    stdout
        .lines()
        .filter_map(|line| {
            let line = line.trim_end();
            let rest = line.trim_start();
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || !rest[digits..].starts_with(". ") {
                return None;
            }
            let rest = &rest[digits + 2..];
            let rest = rest.strip_suffix(']')?;
            let open = rest.rfind(" [")?;
            let id = &rest[open + 2..];
            let rest = rest[..open].strip_suffix(')')?;
            let paren = rest.rfind(" (")?;
            let age = &rest[paren + 2..];
            let title = &rest[..paren];
            let (age, current) = match age.strip_suffix(", current") {
                Some(a) => (a, true),
                None => (age, false),
            };
            Some(ListedSession {
                session_id: id.to_owned(),
                title: title.to_owned(),
                age: age.to_owned(),
                current,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_locks_nobody_holds_are_dropped_past_the_bound_and_held_ones_kept() {
        let mut map: HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>> = HashMap::new();
        let held = workspace_entry(&mut map, PathBuf::from("/w/held"));
        let guard = held.clone().try_lock_owned().unwrap();
        for n in 0..(PRUNE_AT * 4) {
            let lock = workspace_entry(&mut map, PathBuf::from(format!("/w/{n}")));
            drop(lock);
        }
        assert!(map.len() <= PRUNE_AT, "{} entries kept", map.len());
        // The held lock survived every prune: the same workspace still finds it taken.
        let again = workspace_entry(&mut map, PathBuf::from("/w/held"));
        assert!(Arc::ptr_eq(&again, &held));
        assert!(again.try_lock().is_err());
        drop(guard);
        assert!(again.try_lock().is_ok());
    }

    #[test]
    fn minute_stamps_are_utc_minutes() {
        let at = |secs: u64| UNIX_EPOCH + std::time::Duration::from_secs(secs);
        assert_eq!(minute_stamp(at(0)), "1970-01-01T00-00");
        // 2026-11-30T04:31:59Z and the next second.
        assert_eq!(minute_stamp(at(1_796_013_119)), "2026-11-30T04-31");
        assert_eq!(minute_stamp(at(1_796_013_120)), "2026-11-30T04-32");
        // 2024-02-29T23:59:00Z (a leap day).
        assert_eq!(minute_stamp(at(1_709_251_140)), "2024-02-29T23-59");
    }

    #[test]
    fn file_minutes_name_only_the_sessions_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let id = "4bbcbf8f-9030-45c0-bae1-d0d388862ff0";
        let other = "4bbcbf8f-1111-45c0-bae1-d0d388862ff0";
        let header = |sid: &str| format!("{{\"sessionId\":\"{sid}\",\"kind\":\"main\"}}\n");
        fs::write(
            dir.path().join("session-2026-11-30T04-31-4bbcbf8f.jsonl"),
            header(id),
        )
        .unwrap();
        fs::write(
            dir.path().join("session-2026-11-30T04-33-4bbcbf8f.jsonl"),
            header(other),
        )
        .unwrap();
        fs::write(
            dir.path().join("notes-2026-11-30T04-34-4bbcbf8f.jsonl"),
            header(id),
        )
        .unwrap();
        assert_eq!(
            file_minutes(dir.path(), id),
            vec!["2026-11-30T04-31".to_string()]
        );
    }

    #[test]
    fn only_uuids_are_session_ids() {
        assert!(validate_session_id("4bbcbf8f-9030-45c0-bae1-d0d388862ff0").is_ok());
        assert!(validate_session_id("4BBCBF8F-9030-45C0-BAE1-D0D388862FF0").is_ok());
        for bad in [
            "latest",
            "1",
            "",
            "--help",
            "4bbcbf8f-9030-45c0-bae1-d0d388862ff",
            "4bbcbf8f-9030-45c0-bae1-d0d388862ff0 ",
            "4bbcbf8f_9030-45c0-bae1-d0d388862ff0",
            "gbbcbf8f-9030-45c0-bae1-d0d388862ff0",
            "4bbcbf8f-9030-45c0-bae1-d0d388862ff0,x",
        ] {
            let f = validate_session_id(bad).unwrap_err();
            assert_eq!(f.exit_code, 42, "{bad}");
        }
    }

    #[test]
    fn listing_is_parsed_from_the_right() {
        let out = "\nAvailable sessions for this project (3):\n  1. first prompt alpha (Just now) [4bbcbf8f-9030-45c0-bae1-d0d388862ff0]\n  2. a (title) with [brackets] (8 minutes ago, current) [493bb64f-99ff-4cdc-8584-87d482912580]\n 10. {\"x\":1} (2 hours ago) [271e1853-5445-4b23-aaeb-baf3cddbe363]\n";
        let l = parse_listing(out);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].title, "first prompt alpha");
        assert_eq!(l[0].age, "Just now");
        assert_eq!(l[1].title, "a (title) with [brackets]");
        assert_eq!(l[1].age, "8 minutes ago");
        assert!(l[1].current);
        assert_eq!(l[2].session_id, "271e1853-5445-4b23-aaeb-baf3cddbe363");
        assert!(parse_listing("No previous sessions found for this project.").is_empty());
    }

    #[test]
    fn stubs_are_header_and_updates_only() {
        let header = r#"{"sessionId":"s","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#;
        let ctx =
            r#"{"$set":{"messages":[{"type":"user","content":[{"text":"<session_context>"}]}]}}"#;
        let msg = r#"{"id":"1","timestamp":"t","type":"user","content":"hi"}"#;
        assert!(is_stub(&format!("{header}\n{ctx}\n")));
        assert!(!is_stub(&format!("{header}\n{ctx}\n{msg}\n")));
        assert!(!is_stub(""));
        assert!(!is_stub(&format!("{header}\nnot json\n")));
    }

    #[test]
    fn a_prompt_is_recorded_once_the_sessions_file_has_a_user_message() {
        let dir = tempfile::tempdir().unwrap();
        let id = "bafbe03a-0000-4000-8000-000000000001";
        let header = format!(
            r#"{{"sessionId":"{id}","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}}"#
        );
        let ctx =
            r#"{"$set":{"messages":[{"type":"user","content":[{"text":"<session_context>"}]}]}}"#;
        let file = dir.path().join("session-2026-11-30T00-11-bafbe03a.jsonl");
        assert_eq!(prompt_recorded(dir.path(), id), None, "no file yet");
        fs::write(&file, format!("{header}\n{ctx}\n")).unwrap();
        assert_eq!(
            prompt_recorded(dir.path(), id),
            Some(false),
            "the header and context only"
        );
        let msg = r#"{"id":"1","timestamp":"t","type":"user","content":[{"text":"hi"}]}"#;
        fs::write(&file, format!("{header}\n{ctx}\n{msg}\n")).unwrap();
        assert_eq!(prompt_recorded(dir.path(), id), Some(true));
        assert_eq!(
            prompt_recorded(dir.path(), "bafbe03a-0000-4000-8000-000000000002"),
            None,
            "another session sharing the short id"
        );
    }

    #[test]
    fn remove_stubs_removes_only_this_sessions_stub() {
        let dir = tempfile::tempdir().unwrap();
        let id = "bafbe03a-0000-4000-8000-000000000001";
        let other = "bafbe03a-0000-4000-8000-000000000002";
        let header = |id: &str| {
            format!(
                r#"{{"sessionId":"{id}","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}}"#
            )
        };
        let ctx = r#"{"$set":{"messages":[]}}"#;
        let msg = r#"{"id":"1","timestamp":"t","type":"user","content":"hi"}"#;
        let real = dir.path().join("session-2026-01-01T00-11-bafbe03a.jsonl");
        let stub = dir.path().join("session-2026-01-01T00-12-bafbe03a.jsonl");
        let foreign = dir.path().join("session-2026-01-01T00-13-bafbe03a.jsonl");
        fs::write(&real, format!("{}\n{ctx}\n{msg}\n", header(id))).unwrap();
        fs::write(&stub, format!("{}\n{ctx}\n", header(id))).unwrap();
        fs::write(&foreign, format!("{}\n{ctx}\n", header(other))).unwrap();
        assert_eq!(remove_stubs(dir.path(), id), vec![stub.clone()]);
        assert!(real.exists() && !stub.exists() && foreign.exists());
    }

    #[test]
    fn a_new_sessions_stub_goes_only_once_another_file_holds_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let id = "c0ffee00-0000-4000-8000-000000000001";
        let header = format!(
            r#"{{"sessionId":"{id}","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}}"#
        );
        let ctx =
            r#"{"$set":{"messages":[{"type":"user","content":[{"text":"<session_context>"}]}]}}"#;
        // `session/new` opened the recording at 00:00:59.99 and again at 00:01:00.00.
        let first = dir.path().join("session-2030-01-01T00-00-c0ffee00.jsonl");
        let second = dir.path().join("session-2030-01-01T00-01-c0ffee00.jsonl");
        fs::write(&first, format!("{header}\n{ctx}\n")).unwrap();
        fs::write(&second, format!("{header}\n{ctx}\n")).unwrap();
        assert!(remove_stubs_once_recorded(dir.path(), id).is_empty());
        assert!(first.exists() && second.exists());
        let msg = r#"{"id":"1","timestamp":"t","type":"user","content":[{"text":"hi"}]}"#;
        fs::write(&second, format!("{header}\n{ctx}\n{msg}\n")).unwrap();
        assert_eq!(
            remove_stubs_once_recorded(dir.path(), id),
            vec![first.clone()]
        );
        assert!(!first.exists() && second.exists());
    }

    #[test]
    fn chats_dir_follows_projects_json() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("projects.json"),
            r#"{"projects":{"/w/p":"p","/w/evil":"../x"}}"#,
        )
        .unwrap();
        assert_eq!(
            chats_dir(dir.path(), Path::new("/w/p")),
            Some(dir.path().join("tmp/p/chats"))
        );
        assert_eq!(chats_dir(dir.path(), Path::new("/w/evil")), None);
        assert_eq!(chats_dir(dir.path(), Path::new("/w/none")), None);
    }
}
