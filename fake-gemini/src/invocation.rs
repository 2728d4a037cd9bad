//! What every stage of one invocation shares: its argv, the scenario it runs (from the
//! environment or a marker), its input, its log record; the loading of a scenario by name with
//! its marker parameters; and the scenario's `expect` checks.

use std::path::PathBuf;
use std::time::Instant;

use crate::cli::{self, Version};
use crate::log;
use crate::scenario::{self, Scenario};
use crate::sys::{env_ms, err_line};

/// Everything the stages share.
pub(crate) struct Ctx {
    pub(crate) argv: Vec<String>,
    pub(crate) version: String,
    pub(crate) scenario_name: Option<String>,
    pub(crate) scenario: Scenario,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) stdin: Vec<u8>,
    pub(crate) prompt: String,
    pub(crate) start: Instant,
}

impl Ctx {
    pub(crate) fn log(&self, exit: Option<i32>) {
        log::invocation(&log::Invocation {
            version: &self.version,
            argv: &self.argv,
            stdin: &self.stdin,
            prompt: &self.prompt,
            scenario: self.scenario_name.as_deref(),
            params: &self.params,
            exit,
        });
    }

    /// Ends the run with `code`, logging it first.
    pub(crate) fn exit(&self, code: i32) -> i32 {
        self.log(Some(code));
        code
    }

    /// The fake's own failure.
    pub(crate) fn fake_error(&self, msg: &str) -> i32 {
        err_line(&format!("fake-gemini: {msg}"));
        self.exit(99)
    }

    pub(crate) fn version(&self) -> Version {
        cli::parse_version(&self.version).unwrap_or((0, 61, 0))
    }
}

/// Loads a scenario by name or path and applies marker parameters (also used per ACP prompt).
pub(crate) fn resolve(
    reference: &str,
    params: &[(String, String)],
) -> Result<(String, Scenario), String> {
    let dir = std::env::var_os("FAKE_GEMINI_SCENARIO_DIR").map(PathBuf::from);
    let (name, mut s) = scenario::load(reference, dir.as_deref()).map_err(|e| e.to_string())?;
    // Precedence of the retry delay: marker parameter > FAKE_GEMINI_ATTEMPT_DELAY_MS > file.
    if let (Some(ms), Some(f)) = (
        env_ms("FAKE_GEMINI_ATTEMPT_DELAY_MS"),
        s.model.failure.as_mut(),
    ) {
        f.attempt_delay_ms = Some(ms);
    }
    scenario::apply_params(&name, &mut s, params).map_err(|e| e.to_string())?;
    Ok((name, s))
}

/// The scenario's `expect` checks against this invocation (argv, stdin, environment, cwd).
pub(crate) fn check_expect(ctx: &Ctx, cwd: &str) -> Result<(), String> {
    let e = &ctx.scenario.expect;
    if let Some(a) = &e.argv {
        if a != &ctx.argv {
            return Err(format!("argv is {:?}, expected {:?}", ctx.argv, a));
        }
    }
    for a in &e.argv_contains {
        if !ctx.argv.contains(a) {
            return Err(format!("argv {:?} lacks {a:?}", ctx.argv));
        }
    }
    for a in &e.argv_excludes {
        if ctx.argv.contains(a) {
            return Err(format!("argv {:?} contains {a:?}", ctx.argv));
        }
    }
    let stdin = String::from_utf8_lossy(&ctx.stdin);
    if let Some(s) = &e.stdin {
        if s.as_str() != stdin {
            return Err(format!(
                "stdin is {} bytes, not the expected {} bytes",
                ctx.stdin.len(),
                s.len()
            ));
        }
    }
    if let Some(s) = &e.stdin_contains {
        if !stdin.contains(s.as_str()) {
            return Err(format!("stdin does not contain {s:?}"));
        }
    }
    for (k, v) in &e.env {
        match std::env::var(k) {
            Ok(actual) if &actual == v => {}
            Ok(_) => return Err(format!("env {k} has another value")),
            Err(_) => return Err(format!("env {k} is not set")),
        }
    }
    for k in &e.env_present {
        if std::env::var_os(k).is_none() {
            return Err(format!("env {k} is not set"));
        }
    }
    for k in &e.env_absent {
        if std::env::var_os(k).is_some() {
            return Err(format!("env {k} is set"));
        }
    }
    if let Some(c) = &e.cwd {
        let want = std::fs::canonicalize(c).unwrap_or_else(|_| PathBuf::from(c));
        let have = std::fs::canonicalize(cwd).unwrap_or_else(|_| PathBuf::from(cwd));
        if want != have {
            return Err(format!("cwd is {cwd}, expected {c}"));
        }
    }
    Ok(())
}
