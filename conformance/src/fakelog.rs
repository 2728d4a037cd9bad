//! Reading fake-gemini's invocation log (`FAKE_GEMINI_LOG`, one JSON object per line; the format
//! is fixed in CONTRIBUTING.md): invocation records, the descendants the fake spawned, and the
//! fake's own failures (exit 99).

use std::path::Path;

use serde_json::Value;

/// The parsed log of one case run.
#[derive(Debug, Clone, Default)]
pub struct FakeLog {
    /// `"event":"invocation"` records (records without `event` count as invocations too), in order.
    pub invocations: Vec<Value>,
    /// `"event":"spawned"` records: descendants the fake started.
    pub spawned: Vec<Value>,
    /// `"event":"acp-request"` records of `session/prompt` requests an ACP agent received.
    pub acp_prompts: Vec<Value>,
    /// Lines that are not JSON (a broken log is a fixture problem).
    pub unparsed: Vec<String>,
    /// Records of the fake's own failures (`exit` 99 or an error event).
    pub fixture_failures: Vec<Value>,
}

impl FakeLog {
    /// Reads the log file; a missing file is an empty log (the fake never ran).
    pub fn read(path: &Path) -> FakeLog {
        let bytes = std::fs::read(path).unwrap_or_default();
        FakeLog::parse(&String::from_utf8_lossy(&bytes))
    }

    /// Parses log text.
    pub fn parse(text: &str) -> FakeLog {
        let mut log = FakeLog::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                log.unparsed.push(line.to_string());
                continue;
            };
            if v.get("exit").and_then(Value::as_i64) == Some(99) {
                log.fixture_failures.push(v.clone());
            }
            match v.get("event").and_then(Value::as_str) {
                None | Some("invocation") => log.invocations.push(v),
                Some("spawned") => log.spawned.push(v),
                Some("acp-request") if v["method"] == "session/prompt" => log.acp_prompts.push(v),
                Some("error") | Some("fixture-error") | Some("bug") => log.fixture_failures.push(v),
                // Later versions of the fake may log more kinds of events; they check nothing here.
                Some(_) => {}
            }
        }
        log
    }

    /// Every pid of the run's process tree the log names: each invocation's `pid` and
    /// `launcher_pid`, and every spawned descendant.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = Vec::new();
        let mut add = |v: Option<&Value>| {
            if let Some(p) = v.and_then(Value::as_u64) {
                if p > 1 && !pids.contains(&(p as u32)) {
                    pids.push(p as u32);
                }
            }
        };
        for r in &self.invocations {
            add(r.get("pid"));
            add(r.get("launcher_pid"));
        }
        for r in &self.spawned {
            add(r.get("pid"));
        }
        pids
    }
}

/// The env entry of an invocation record: `Some(Ok(value))` when the fake logged the value,
/// `Some(Err(sha256))` when it logged only the hash, `None` when the variable was absent.
pub fn env_entry(record: &Value, name: &str) -> Option<Result<String, String>> {
    let e = record.get("env")?.get(name)?;
    if let Some(v) = e.get("value").and_then(Value::as_str) {
        return Some(Ok(v.to_string()));
    }
    e.get("sha256")
        .and_then(Value::as_str)
        .map(|h| Err(h.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_and_pids() {
        let log = FakeLog::parse(concat!(
            "{\"event\":\"invocation\",\"pid\":10,\"launcher_pid\":9,\"exit\":0,\"env\":{\"TERM\":{\"value\":\"dumb\"},\"K\":{\"sha256\":\"ab\"}}}\n",
            "{\"event\":\"spawned\",\"pid\":11,\"by\":10,\"kind\":\"grandchild\"}\n",
            "{\"event\":\"invocation\",\"pid\":12,\"launcher_pid\":null,\"exit\":99}\n",
        ));
        assert_eq!(log.invocations.len(), 2);
        assert_eq!(log.pids(), vec![10, 9, 12, 11]);
        assert_eq!(log.fixture_failures.len(), 1);
        assert_eq!(
            env_entry(&log.invocations[0], "TERM"),
            Some(Ok("dumb".into()))
        );
        assert_eq!(env_entry(&log.invocations[0], "K"), Some(Err("ab".into())));
    }
}
