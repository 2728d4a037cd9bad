//! Writing to the inherited stdout/stderr as the real CLI does: unbuffered event by event, ANSI
//! stripped from model text, stdout EPIPE ending the process with exit 0, and the stats shapes of
//! `-o json` and `-o stream-json`.

use serde_json::{json, Map, Value};

/// `-o` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text` (default)
    Text,
    /// `json`
    Json,
    /// `stream-json`
    StreamJson,
}

impl Format {
    /// From the `-o` value (already validated by the parser).
    pub fn from_flag(v: Option<&str>) -> Format {
        match v {
            Some("json") => Format::Json,
            Some("stream-json") => Format::StreamJson,
            _ => Format::Text,
        }
    }
}

/// Removes ANSI escape sequences (CSI, OSC, two-byte ESC), keeping other control bytes.
pub fn strip_ansi(s: &str) -> String {
    if !s.contains('\x1b') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match it.peek() {
            Some('[') => {
                it.next();
                for c in it.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                it.next();
                while let Some(c) = it.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' && it.peek() == Some(&'\\') {
                        it.next();
                        break;
                    }
                }
            }
            Some(_) => {
                it.next();
            }
            None => {}
        }
    }
    out
}

/// Token counts of one or more responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// prompt
    pub prompt: u64,
    /// candidates
    pub candidates: u64,
    /// thoughts
    pub thoughts: u64,
    /// cached
    pub cached: u64,
    /// tool
    pub tool: u64,
}

impl Tokens {
    fn add(&mut self, o: &Tokens) {
        self.prompt += o.prompt;
        self.candidates += o.candidates;
        self.thoughts += o.thoughts;
        self.cached += o.cached;
        self.tool += o.tool;
    }
    fn total(&self) -> u64 {
        self.prompt + self.candidates + self.thoughts + self.tool
    }
    fn json(&self) -> Value {
        json!({
            "input": self.prompt.saturating_sub(self.cached),
            "prompt": self.prompt,
            "candidates": self.candidates,
            "total": self.total(),
            "cached": self.cached,
            "thoughts": self.thoughts,
            "tool": self.tool,
        })
    }
}

#[derive(Debug, Clone, Default)]
struct RoleStats {
    requests: u64,
    errors: u64,
    latency: u64,
    tokens: Tokens,
}

#[derive(Debug, Clone, Default)]
struct ModelStats {
    all: RoleStats,
    errors_by_type: Vec<(String, u64)>,
    roles: Vec<(String, RoleStats)>,
}

#[derive(Debug, Clone, Default)]
struct ToolStats {
    count: u64,
    success: u64,
    fail: u64,
    duration: u64,
    accept: u64,
    auto_accept: u64,
}

/// Session statistics, in the insertion order the real CLI reports them.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    models: Vec<(String, ModelStats)>,
    tools: Vec<(String, ToolStats)>,
}

impl Stats {
    fn model(&mut self, name: &str) -> &mut ModelStats {
        if let Some(i) = self.models.iter().position(|(n, _)| n == name) {
            &mut self.models[i].1
        } else {
            self.models.push((name.to_string(), ModelStats::default()));
            &mut self.models.last_mut().expect("pushed").1
        }
    }

    /// Makes a model appear (with zero counts) without a request.
    pub fn touch(&mut self, model: &str) {
        self.model(model);
    }

    /// Records one API response.
    pub fn response(&mut self, model: &str, role: &str, tokens: Tokens, latency: u64) {
        let m = self.model(model);
        m.all.requests += 1;
        m.all.latency += latency;
        m.all.tokens.add(&tokens);
        let role_stats = if let Some(i) = m.roles.iter().position(|(n, _)| n == role) {
            &mut m.roles[i].1
        } else {
            m.roles.push((role.to_string(), RoleStats::default()));
            &mut m.roles.last_mut().expect("pushed").1
        };
        role_stats.requests += 1;
        role_stats.latency += latency;
        role_stats.tokens.add(&tokens);
    }

    /// The API latencies of every model, added up.
    pub fn latency_total(&self) -> u64 {
        self.models.iter().map(|(_, m)| m.all.latency).sum()
    }

    /// Records `attempts` requests of `role` that ended in one API error of `kind`
    /// (e.g. NO_RESPONSE_TEXT after the empty-response retries).
    pub fn api_error(&mut self, model: &str, role: &str, kind: &str, attempts: u64) {
        let m = self.model(model);
        m.all.requests += attempts;
        m.all.errors += 1;
        if let Some(e) = m.errors_by_type.iter_mut().find(|(k, _)| k == kind) {
            e.1 += 1;
        } else {
            m.errors_by_type.push((kind.to_string(), 1));
        }
        if let Some(r) = m.roles.iter_mut().find(|(n, _)| n == role) {
            r.1.requests += attempts;
        } else {
            m.roles.push((
                role.to_string(),
                RoleStats {
                    requests: attempts,
                    ..RoleStats::default()
                },
            ));
        }
    }

    /// Records one tool call.
    pub fn tool(&mut self, name: &str, ok: bool, duration: u64, yolo: bool) {
        let t = if let Some(i) = self.tools.iter().position(|(n, _)| n == name) {
            &mut self.tools[i].1
        } else {
            self.tools.push((name.to_string(), ToolStats::default()));
            &mut self.tools.last_mut().expect("pushed").1
        };
        t.count += 1;
        if ok {
            t.success += 1;
        } else {
            t.fail += 1;
        }
        t.duration += duration;
        // Observed: a tool that ran counts as `accept` in default and yolo mode alike.
        if ok {
            t.accept += 1;
        }
        let _ = yolo;
    }

    /// Number of tool calls.
    pub fn tool_calls(&self) -> u64 {
        self.tools.iter().map(|(_, t)| t.count).sum()
    }

    /// `stats` of the `-o json` document.
    pub fn json(&self) -> Value {
        let mut models = Map::new();
        for (name, m) in &self.models {
            let mut roles = Map::new();
            for (r, s) in &m.roles {
                roles.insert(
                    r.clone(),
                    json!({
                        "totalRequests": s.requests,
                        "totalErrors": s.errors,
                        "totalLatencyMs": s.latency,
                        "tokens": s.tokens.json(),
                    }),
                );
            }
            let mut by_type = Map::new();
            for (k, v) in &m.errors_by_type {
                by_type.insert(k.clone(), json!(v));
            }
            let mut entry = Map::new();
            entry.insert(
                "api".into(),
                json!({
                    "totalRequests": m.all.requests,
                    "totalErrors": m.all.errors,
                    "totalLatencyMs": m.all.latency,
                    "errorsByType": by_type,
                }),
            );
            entry.insert("tokens".into(), m.all.tokens.json());
            entry.insert("roles".into(), Value::Object(roles));
            models.insert(name.clone(), Value::Object(entry));
        }
        let mut by_name = Map::new();
        let mut tot = ToolStats::default();
        for (n, t) in &self.tools {
            tot.count += t.count;
            tot.success += t.success;
            tot.fail += t.fail;
            tot.duration += t.duration;
            tot.accept += t.accept;
            tot.auto_accept += t.auto_accept;
            by_name.insert(
                n.clone(),
                json!({
                    "count": t.count,
                    "success": t.success,
                    "fail": t.fail,
                    "durationMs": t.duration,
                    "decisions": {"accept": t.accept, "reject": 0, "modify": 0, "auto_accept": t.auto_accept},
                }),
            );
        }
        json!({
            "models": models,
            "tools": {
                "totalCalls": tot.count,
                "totalSuccess": tot.success,
                "totalFail": tot.fail,
                "totalDurationMs": tot.duration,
                "totalDecisions": {"accept": tot.accept, "reject": 0, "modify": 0, "auto_accept": tot.auto_accept},
                "byName": by_name,
            },
            "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
        })
    }

    /// `stats` of the stream-json `result` event.
    pub fn stream_json(&self, duration_ms: u64) -> Value {
        let mut models = Map::new();
        let mut sum = Tokens::default();
        for (name, m) in &self.models {
            let t = &m.all.tokens;
            sum.add(t);
            models.insert(
                name.clone(),
                json!({
                    "total_tokens": t.total(),
                    "input_tokens": t.prompt,
                    "output_tokens": t.candidates,
                    "cached": t.cached,
                    "input": t.prompt.saturating_sub(t.cached),
                }),
            );
        }
        json!({
            "total_tokens": sum.total(),
            "input_tokens": sum.prompt,
            "output_tokens": sum.candidates,
            "cached": sum.cached,
            "input": sum.prompt.saturating_sub(sum.cached),
            "duration_ms": duration_ms,
            "tool_calls": self.tool_calls(),
            "models": models,
        })
    }
}

/// One stream-json event line: `{"type":…,"timestamp":…, …fields}` + `\n`.
pub fn event(kind: &str, fields: Value) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("type".into(), json!(kind));
    m.insert("timestamp".into(), json!(crate::clock::iso_now()));
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    let mut line = serde_json::to_vec(&Value::Object(m)).expect("serializes");
    line.push(b'\n');
    line
}

/// The fatal-error document of `-o json` (pretty, newline added by the caller).
pub fn error_doc(session_id: &str, kind: &str, message: &str, code: Option<i64>) -> String {
    let mut e = Map::new();
    e.insert("type".into(), json!(kind));
    e.insert("message".into(), json!(message));
    if let Some(c) = code.filter(|c| *c != 0) {
        e.insert("code".into(), json!(c));
    }
    serde_json::to_string_pretty(&json!({"session_id": session_id, "error": e}))
        .expect("serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_is_stripped_but_other_controls_pass() {
        assert_eq!(
            strip_ansi("red:\x1b[31mRED\x1b[0m bell:\x07 \x1b]0;t\x07x é"),
            "red:RED bell:\x07 x é"
        );
    }

    #[test]
    fn stats_shapes_sum_models() {
        let mut s = Stats::default();
        let t = Tokens {
            prompt: 100,
            candidates: 7,
            thoughts: 13,
            ..Tokens::default()
        };
        s.response("lite", "utility_router", t, 5);
        s.response("main", "main", t, 5);
        let v = s.stream_json(9);
        assert_eq!(v["total_tokens"], 240);
        assert_eq!(v["models"]["main"]["input"], 100);
        assert_eq!(
            s.json()["models"]["lite"]["roles"]["utility_router"]["tokens"]["total"],
            120
        );
    }
}
