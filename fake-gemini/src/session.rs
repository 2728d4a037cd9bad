//! Sessions per project (the cwd), stored the way the real CLI stores them
//! (`<state>/projects.json`, `<state>/tmp/<project>/chats/session-<minute>-<id8>.jsonl`), plus the
//! ordered-reply counter. Every read-modify-write holds a lock file, so concurrent runs are safe.
//! Behind `FAKE_GEMINI_SESSION_LOSS=1`, the upstream start-up clean-up is reproduced with the
//! sessions it loses: one resumed in a later clock minute, and a new one whose prompt is not
//! recorded yet when another run starts in the project.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::clock;

/// A project's session store.
#[derive(Debug, Clone)]
pub struct Store {
    /// `<state>/tmp/<short>/chats`
    pub chats: PathBuf,
    project_dir: PathBuf,
    cwd: String,
}

/// One listed session.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session id.
    pub id: String,
    /// Start time of the latest header (ms).
    pub start: i64,
    /// Last update (ms).
    pub last: i64,
    /// The first user prompt.
    pub first_prompt: String,
    /// A summary, when one was recorded.
    pub summary: Option<String>,
    /// The files holding it.
    pub files: Vec<PathBuf>,
}

/// A held lock file; released on drop.
pub struct Lock(PathBuf);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn lock(path: PathBuf) -> std::io::Result<Lock> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                let _ = write!(f, "{}", std::process::id());
                return Ok(Lock(path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A holder that died (kill -9 mid-update) must not wedge every later run.
                let stale = fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(10));
                if stale || Instant::now() > deadline {
                    let _ = fs::remove_file(&path);
                }
                std::thread::sleep(Duration::from_millis(3));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes `data` to `path` atomically (temp file + rename).
fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, data)?;
    fs::rename(&tmp, path)
}

/// Appends `text` to `path`, creating it when missing.
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The state directory: FAKE_GEMINI_STATE, else `$HOME/.gemini`.
pub fn state_dir() -> PathBuf {
    if let Some(s) = std::env::var_os("FAKE_GEMINI_STATE") {
        return PathBuf::from(s);
    }
    crate::sys::home_dir().join(".gemini")
}

fn short_name(cwd: &str) -> String {
    let base = Path::new(cwd)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    base.to_lowercase().replace('.', "-")
}

impl Store {
    /// Opens (and registers) the project of `cwd`.
    pub fn open(state: &Path, cwd: &str) -> std::io::Result<Store> {
        fs::create_dir_all(state)?;
        let _l = lock(state.join(".fake-gemini-projects.lock"))?;
        let pj = state.join("projects.json");
        let mut doc: Value = fs::read(&pj)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({"projects": {}}));
        if !doc["projects"].is_object() {
            doc["projects"] = json!({});
        }
        let short = if let Some(s) = doc["projects"][cwd].as_str() {
            s.to_string()
        } else {
            let base = short_name(cwd);
            let taken: Vec<String> = doc["projects"]
                .as_object()
                .map(|m| {
                    m.values()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let mut name = base.clone();
            let mut n = 1;
            while taken.contains(&name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            doc["projects"][cwd] = json!(name);
            write_atomic(
                &pj,
                serde_json::to_string_pretty(&doc).expect("json").as_bytes(),
            )?;
            name
        };
        let project_dir = state.join("tmp").join(&short);
        let chats = project_dir.join("chats");
        fs::create_dir_all(&chats)?;
        Ok(Store {
            chats,
            project_dir,
            cwd: cwd.to_string(),
        })
    }

    /// Locks this project's sessions.
    pub fn lock(&self) -> std::io::Result<Lock> {
        lock(self.project_dir.join(".fake-gemini.lock"))
    }

    /// All sessions, oldest start first (the listing order).
    pub fn list(&self) -> Vec<Session> {
        let mut map: Vec<Session> = Vec::new();
        let Ok(rd) = fs::read_dir(&self.chats) else {
            return map;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("session-") && n.ends_with(".jsonl"))
            })
            .collect();
        files.sort();
        for f in files {
            let Ok(text) = fs::read_to_string(&f) else {
                continue;
            };
            let mut id = None;
            let (mut start, mut last) = (0i64, 0i64);
            let mut first = None;
            let mut summary = None;
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if let Some(s) = v["sessionId"].as_str() {
                    id = Some(s.to_string());
                    start = v["startTime"]
                        .as_str()
                        .and_then(clock::parse_time)
                        .unwrap_or(start);
                    last = last.max(
                        v["lastUpdated"]
                            .as_str()
                            .and_then(clock::parse_time)
                            .unwrap_or(0),
                    );
                } else if v["type"] == "user" && first.is_none() {
                    first = v["content"][0]["text"].as_str().map(String::from);
                } else if let Some(set) = v.get("$set") {
                    if let Some(l) = set["lastUpdated"].as_str().and_then(clock::parse_time) {
                        last = last.max(l);
                    }
                    if let Some(s) = set["summary"].as_str() {
                        summary = Some(s.to_string());
                    }
                }
            }
            let Some(id) = id else { continue };
            if let Some(s) = map.iter_mut().find(|s| s.id == id) {
                s.files.push(f.clone());
                if first.is_some() && (s.first_prompt.is_empty() || start < s.start) {
                    s.start = s.start.max(start);
                    s.last = s.last.max(last);
                    if s.first_prompt.is_empty() {
                        s.first_prompt = first.unwrap_or_default();
                    }
                }
                continue;
            }
            map.push(Session {
                id,
                start,
                last,
                first_prompt: first.unwrap_or_default(),
                summary,
                files: vec![f],
            });
        }
        map.retain(|s| !s.first_prompt.is_empty());
        map.sort_by_key(|s| s.start);
        map
    }

    /// Resolves `latest`, a 1-based index or an id.
    pub fn find(&self, sessions: &[Session], ident: &str) -> Option<usize> {
        if ident == "latest" {
            return sessions.len().checked_sub(1);
        }
        if let Ok(n) = ident.parse::<usize>() {
            if n >= 1 && n <= sessions.len() {
                return Some(n - 1);
            }
        }
        sessions.iter().position(|s| s.id == ident)
    }

    /// `now`, bumped past every recorded start so that a frozen clock (FAKE_GEMINI_NOW) still
    /// orders sessions by creation, as the real CLI's millisecond clock does.
    fn monotonic(&self, now: i64) -> i64 {
        self.list()
            .iter()
            .map(|s| s.start + 1)
            .max()
            .map_or(now, |m| m.max(now))
    }

    /// Records a new session with its first exchange.
    pub fn create(
        &self,
        id: &str,
        prompt: &str,
        answer: &str,
        model: &str,
        now: i64,
    ) -> std::io::Result<()> {
        let now = self.monotonic(now);
        let path = self.chat_file(id, now);
        let mut body = self.header(id, now);
        body.push_str(&exchange(prompt, answer, model, now));
        write_atomic(&path, body.as_bytes())
    }

    fn header(&self, id: &str, now: i64) -> String {
        let t = clock::iso(now);
        let mut s = json!({
            "sessionId": id,
            "projectHash": crate::ids::sha256_hex(self.cwd.as_bytes()),
            "startTime": t,
            "lastUpdated": t,
            "kind": "main",
        })
        .to_string();
        s.push('\n');
        let project_tmp = self.chats.parent().unwrap_or(&self.chats);
        let context = session_context(&self.cwd, project_tmp);
        s.push_str(
            &json!({"$set": {"messages": [{"id": crate::ids::uuid_v4(), "timestamp": t,
            "type": "user", "content": [{"text": context}]}]}})
            .to_string(),
        );
        s.push('\n');
        s
    }

    /// Appends a resumed exchange (a new header moves the session to the end of the listing).
    /// With `loss`, a resume in a later minute also writes the stub that the next start's
    /// clean-up treats as invalid, deleting the whole session (the upstream bug).
    pub fn resume(
        &self,
        s: &Session,
        prompt: &str,
        answer: &str,
        model: &str,
        now: i64,
        loss: bool,
    ) -> std::io::Result<()> {
        let now = self.monotonic(now);
        let file = s
            .files
            .first()
            .cloned()
            .expect("a listed session has a file");
        let mut body = fs::read_to_string(&file).unwrap_or_default();
        body.push_str(&self.header(&s.id, now));
        body.push_str(&exchange(prompt, answer, model, now));
        write_atomic(&file, body.as_bytes())?;
        let stub = self.chat_file(&s.id, now);
        if loss && stub != file && !stub.exists() {
            write_atomic(&stub, self.header(&s.id, now).as_bytes())?;
        }
        Ok(())
    }

    /// With the loss bug on, a resume is written as the CLI's recording writes it: when the run
    /// starts, the new header is appended to the session's file and, in a later minute, the stub
    /// (header and session context) named after the current minute is written; the prompt and
    /// the answer are appended later ([`Store::record_prompt`], [`Store::finish`]). Returns the
    /// session's file.
    pub fn begin_resume(&self, s: &Session, now: i64) -> std::io::Result<PathBuf> {
        let now = self.monotonic(now);
        let file = s
            .files
            .first()
            .cloned()
            .expect("a listed session has a file");
        append(&file, &self.header(&s.id, now))?;
        let stub = self.chat_file(&s.id, now);
        if !s.files.contains(&stub) && !stub.exists() {
            write_atomic(&stub, self.header(&s.id, now).as_bytes())?;
        }
        Ok(file)
    }

    /// The chat file a recording of session `id` opens at `now`: named after the clock minute and
    /// the id's first 8 characters, as the CLI names them.
    fn chat_file(&self, id: &str, now: i64) -> PathBuf {
        let id8: String = id.chars().take(8).collect();
        self.chats
            .join(format!("session-{}-{id8}.jsonl", clock::minute_stamp(now)))
    }

    /// With the loss bug on, a new session's file is written the way the real CLI writes it:
    /// the header when the run starts ([`Store::begin`]), the prompt once it is sent
    /// ([`Store::record_prompt`]), the answer at the end ([`Store::finish`]). Until the prompt is
    /// recorded the file is what another run's start-up clean-up deletes. Returns the file.
    pub fn begin(&self, id: &str, now: i64) -> std::io::Result<PathBuf> {
        let path = self.chat_file(id, now);
        write_atomic(&path, self.header(id, now).as_bytes())?;
        Ok(path)
    }

    /// `gemini --acp`'s `session/new`: the file [`Store::begin`] writes, then a second header and
    /// session context `gap_ms` later, in the file of that moment's minute (observed on 0.61.0:
    /// `config.initialize()` and then `startChat()` each open the recording, 6–8 ms apart, both
    /// before the response is sent). Within one minute the second header is appended to the first
    /// file; across a minute's end the first file keeps a header only and the session goes on in
    /// the second. Returns the file the session goes on in.
    pub fn begin_acp(&self, id: &str, now: i64, gap_ms: i64) -> std::io::Result<PathBuf> {
        let first = self.begin(id, now)?;
        let later = now.saturating_add(gap_ms);
        let path = self.chat_file(id, later);
        if path != first {
            write_atomic(&path, self.header(id, later).as_bytes())?;
        } else {
            append(&path, &self.header(id, later))?;
        }
        Ok(path)
    }

    /// Appends the user message to a file [`Store::begin`] wrote. Like the CLI's
    /// `appendFileSync`, it recreates a file that was deleted meanwhile, without its header.
    pub fn record_prompt(&self, path: &Path, prompt: &str, now: i64) -> std::io::Result<()> {
        let line = json!({"id": crate::ids::uuid_v4(), "timestamp": clock::iso(now), "type": "user", "content": [{"text": prompt}]});
        append(path, &format!("{line}\n"))
    }

    /// Appends the answer to a file [`Store::begin`] wrote (recreating it headless if it is gone).
    pub fn finish(&self, path: &Path, answer: &str, model: &str, now: i64) -> std::io::Result<()> {
        let t = clock::iso(now);
        let mut s = String::new();
        for v in [
            json!({"id": crate::ids::uuid_v4(), "timestamp": t, "type": "gemini", "content": answer, "model": model}),
            json!({"$set": {"lastUpdated": t}}),
        ] {
            s.push_str(&v.to_string());
            s.push('\n');
        }
        append(path, &s)
    }

    /// The start-of-command clean-up of the loss bug: a file with no user message, or with no
    /// header (one recreated after a delete), is invalid, and every file of its short id goes
    /// with it. The starting run's own session has no file yet.
    pub fn cleanup_invalid(&self) {
        // `general.sessionRetention.enabled: false` in any settings layer switches it off.
        if !crate::settings::session_retention_enabled(Path::new(&self.cwd)) {
            return;
        }
        let Ok(rd) = fs::read_dir(&self.chats) else {
            return;
        };
        let files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        for f in &files {
            let Ok(text) = fs::read_to_string(f) else {
                continue;
            };
            let has_header = text.lines().next().is_some_and(|l| {
                serde_json::from_str::<Value>(l).is_ok_and(|v| v["sessionId"].is_string())
            });
            if has_header
                && text
                    .lines()
                    .any(|l| l.contains("\"type\":\"user\"") && !l.contains("$set"))
            {
                continue;
            }
            let name = f
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            let Some(suffix) = name.rsplit('-').next().map(String::from) else {
                continue;
            };
            for g in &files {
                if g.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&format!("-{suffix}")))
                {
                    let _ = fs::remove_file(g);
                }
            }
        }
    }

    /// Deletes a session's files.
    pub fn delete(&self, s: &Session) {
        for f in &s.files {
            let _ = fs::remove_file(f);
        }
    }

    /// Returns and increments the ordered-reply counter.
    pub fn next_reply_index(&self) -> u64 {
        let p = self.project_dir.join("fake-gemini-replies");
        let n: u64 = fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let _ = write_atomic(&p, (n + 1).to_string().as_bytes());
        n
    }
}

/// Appends `messages` to a chat file's `body` as the CLI records them: each with a fresh id and the
/// timestamp `t`, then a `$set` of `lastUpdated`.
fn push_messages(body: &mut String, messages: &[Value], t: &str) {
    for m in messages {
        let mut m = m.clone();
        if let Some(o) = m.as_object_mut() {
            o.insert("id".into(), json!(crate::ids::uuid_v4()));
            o.insert("timestamp".into(), json!(t));
        }
        body.push_str(&m.to_string());
        body.push('\n');
    }
    body.push_str(&json!({"$set": {"lastUpdated": t}}).to_string());
    body.push('\n');
}

/// ACP mode records a session as its prompts end and replays it on `session/load`.
impl Store {
    /// Appends `messages` (`user` / `gemini` records without id and timestamp) to session `id`,
    /// creating the session file on first use. The caller holds the lock.
    pub fn record(&self, id: &str, messages: &[Value], now: i64) -> std::io::Result<()> {
        let existing = self.list().into_iter().find(|s| s.id == id);
        let now = self.monotonic(now);
        let t = clock::iso(now);
        let (path, mut body) = match existing.as_ref().and_then(|s| s.files.first()) {
            Some(f) => (f.clone(), fs::read_to_string(f).unwrap_or_default()),
            None => {
                let f = self.chat_file(id, now);
                (f, self.header(id, now))
            }
        };
        push_messages(&mut body, messages, &t);
        write_atomic(&path, body.as_bytes())
    }

    /// Appends `messages` (as [`Store::record`] takes them) to a file [`Store::begin`] wrote,
    /// recreating it without its header when it was deleted meanwhile.
    pub fn append_messages(
        &self,
        path: &Path,
        messages: &[Value],
        now: i64,
    ) -> std::io::Result<()> {
        let mut body = String::new();
        push_messages(&mut body, messages, &clock::iso(now));
        append(path, &body)
    }

    /// The messages a load of the session replays, as the CLI's loader reads them: from the
    /// session's file updated last among those with resumable content; a record of an id seen
    /// before replaces it in its place, `$rewindTo` drops its message and all after it, a `$set`
    /// of `messages` replaces them all.
    pub fn replayed(&self, s: &Session) -> Vec<Value> {
        let mut best: Option<(String, Vec<Value>)> = None;
        let mut files = s.files.clone();
        files.sort();
        for f in files {
            let Ok(text) = fs::read_to_string(&f) else {
                continue;
            };
            let (updated, messages) = loaded(&text);
            let resumable = messages.iter().any(|m| match m["type"].as_str() {
                Some("user") => m["content"][0]["text"].as_str().is_some_and(|t| {
                    !t.trim().is_empty() && !t.trim().starts_with("<session_context>")
                }),
                Some("gemini") => true,
                _ => false,
            });
            if resumable && best.as_ref().is_none_or(|(t, _)| updated > *t) {
                best = Some((updated, messages));
            }
        }
        best.map(|(_, m)| m).unwrap_or_default()
    }

    /// Every `user` and `gemini` message of a session, in file order.
    pub fn messages(&self, s: &Session) -> Vec<Value> {
        let mut out = Vec::new();
        for f in &s.files {
            let Ok(text) = fs::read_to_string(f) else {
                continue;
            };
            out.extend(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|v| v["type"] == "user" || v["type"] == "gemini"),
            );
        }
        out
    }
}

/// The `<session_context>` user message the CLI stores first in every session (its layout as
/// observed on 0.61.0 in an empty directory; the fake lists no files).
pub(crate) fn session_context(cwd: &str, project_tmp: &Path) -> String {
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let now = clock::now_ms();
    let iso = clock::iso(now);
    let (y, m, d) = (&iso[0..4], &iso[5..7], &iso[8..10]);
    let month = MONTHS[m.parse::<usize>().unwrap_or(1).clamp(1, 12) - 1];
    let day = DAYS[now.div_euclid(86_400_000).rem_euclid(7) as usize];
    let d = d.trim_start_matches('0');
    format!(
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is {day}, {month} {d}, {y} (formatted according to the user's locale).\nMy operating system is: {}\nThe project's temporary directory is: {}\n- **Workspace Directories:**\n  - {cwd}\n- **Directory Structure:**\n\nShowing up to 200 items (files + folders).\n\n{cwd}/\n\n\n\n</session_context>",
        std::env::consts::OS,
        project_tmp.display()
    )
}

fn exchange(prompt: &str, answer: &str, model: &str, now: i64) -> String {
    let t = clock::iso(now);
    let mut s = String::new();
    for v in [
        json!({"id": crate::ids::uuid_v4(), "timestamp": t, "type": "user", "content": [{"text": prompt}]}),
        json!({"id": crate::ids::uuid_v4(), "timestamp": t, "type": "gemini", "content": answer, "model": model}),
        json!({"$set": {"lastUpdated": t}}),
    ] {
        s.push_str(&v.to_string());
        s.push('\n');
    }
    s
}

/// The listing title: summary, else the first prompt (whitespace collapsed, non-ASCII removed, cut at 100).
pub fn title(s: &Session, use_summary: bool) -> String {
    let raw = if use_summary {
        s.summary.as_deref().unwrap_or(&s.first_prompt)
    } else {
        &s.first_prompt
    };
    let ascii: String = raw.chars().filter(|c| c.is_ascii()).collect();
    let t = ascii.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > 100 {
        format!("{}...", t.chars().take(97).collect::<String>())
    } else {
        t
    }
}

/// `Just now`, `N minute(s) ago`, `N hour(s) ago`, `N day(s) ago`.
pub fn relative(last: i64, now: i64) -> String {
    let mins = (now - last).max(0) / 60_000;
    let plural = |n: i64, u: &str| format!("{n} {u}{} ago", if n == 1 { "" } else { "s" });
    if mins < 1 {
        "Just now".into()
    } else if mins < 60 {
        plural(mins, "minute")
    } else if mins < 60 * 24 {
        plural(mins / 60, "hour")
    } else {
        plural(mins / 1440, "day")
    }
}

/// The `--list-sessions` text.
pub fn listing(sessions: &[Session], now: i64) -> String {
    if sessions.is_empty() {
        return "No previous sessions found for this project.".into();
    }
    let mut out = format!(
        "\nAvailable sessions for this project ({}):\n",
        sessions.len()
    );
    for (i, s) in sessions.iter().enumerate() {
        out.push_str(&format!(
            "  {}. {} ({}) [{}]\n",
            i + 1,
            title(s, true),
            relative(s.last, now),
            s.id
        ));
    }
    out
}

/// A session file's last update and its messages, as the CLI's loader reads them.
fn loaded(text: &str) -> (String, Vec<Value>) {
    let mut updated = String::new();
    let mut messages: Vec<Value> = Vec::new();
    let put = |messages: &mut Vec<Value>, m: &Value| {
        let Some(id) = m["id"].as_str() else { return };
        match messages.iter_mut().find(|x| x["id"] == id) {
            Some(x) => *x = m.clone(),
            None => messages.push(m.clone()),
        }
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(to) = v["$rewindTo"].as_str() {
            let at = messages.iter().position(|m| m["id"] == to).unwrap_or(0);
            messages.truncate(at);
        } else if v["id"].is_string() {
            put(&mut messages, &v);
        } else if v["$set"].is_object() {
            if let Some(list) = v["$set"]["messages"].as_array() {
                messages.clear();
                list.iter().for_each(|m| put(&mut messages, m));
            }
            if let Some(t) = v["$set"]["lastUpdated"].as_str() {
                updated = t.to_string();
            }
        } else if let Some(t) = v["lastUpdated"].as_str() {
            updated = t.to_string();
        }
    }
    (updated, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_list_resume_delete_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let st = Store::open(dir.path(), "/tmp/cap/Sw.1").unwrap();
        assert!(st.chats.ends_with("tmp/sw-1/chats"));
        let t0 = clock::parse_time("2026-11-30T00:11:00Z").unwrap();
        st.create(
            "aaaaaaaa-1111-4111-8111-111111111111",
            "first",
            "a",
            "m",
            t0,
        )
        .unwrap();
        st.create(
            "bbbbbbbb-1111-4111-8111-111111111111",
            "second\nline",
            "a",
            "m",
            t0 + 1000,
        )
        .unwrap();
        let l = st.list();
        assert_eq!(l.len(), 2);
        assert_eq!(title(&l[1], true), "second line");
        st.resume(&l[0], "again", "b", "m", t0 + 2000, false)
            .unwrap();
        let l = st.list();
        assert_eq!(
            l[1].id, "aaaaaaaa-1111-4111-8111-111111111111",
            "a resume moves the session to the end"
        );
        assert_eq!(relative(t0, t0 + 3 * 60_000), "3 minutes ago");
        assert_eq!(relative(t0, t0 + 61 * 60_000), "1 hour ago");
        st.delete(&l[0]);
        assert_eq!(st.list().len(), 1);
    }

    #[test]
    fn resume_in_a_later_minute_loses_the_session_with_the_switch() {
        let dir = tempfile::tempdir().unwrap();
        let st = Store::open(dir.path(), "/w/p").unwrap();
        let t0 = clock::parse_time("2026-11-30T00:11:30Z").unwrap();
        st.create("cccccccc-1111-4111-8111-111111111111", "x", "a", "m", t0)
            .unwrap();
        let s = st.list().remove(0);
        st.resume(&s, "y", "b", "m", t0 + 60_000, true).unwrap();
        assert_eq!(st.list().len(), 1);
        st.cleanup_invalid();
        assert!(st.list().is_empty());
    }
}
