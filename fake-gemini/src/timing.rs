//! The real-timing preset (`FAKE_GEMINI_TIMING=real`, a scenario's `timing = "real"` or a
//! marker's `timing=real`): the real CLI's start-up and waits, as measured here, instead of the
//! fake's instant start. A wrapper's timeouts, "still starting" logic and stdin writer see what
//! they would see with the real 0.61.0.
//!
//! Measured on this repository's build machine (Linux, Node 20, 2 shared cores), real 0.61.0
//! against `fake-gemini-api`, fresh HOME and cwd, 2026-12-02: first stderr byte 1.8–3.5 s after
//! spawn (typically ≈2.2–2.5 s), first stdout byte 0.12–0.3 s after it; with stdin open and
//! silent, exit 42 at 2.4–3.3 s; ACP `initialize` answered after 3.3–3.7 s, each `session/new`
//! after 60–120 ms.

use crate::scenario::{Environment, Timing};
use crate::sys::env_ms;

/// When a headless run's first output appears, after the process starts.
pub const FIRST_OUTPUT_MS: u64 = 2200;
/// When the 500 ms stdin window opens (so stdin written up to ≈2.8 s late is still read).
pub const STDIN_START_MS: u64 = 2300;
/// From the start-up lines to the answer's first byte (the router's call, the stream's start).
pub const ANSWER_AFTER_MS: u64 = 250;
/// ACP: how long the agent reads and answers nothing after it starts.
pub const ACP_START_MS: u64 = 3000;
/// ACP: how long each `session/new` takes.
pub const ACP_SESSION_NEW_MS: u64 = 100;

/// Whether the preset applies: the scenario says so, or `FAKE_GEMINI_TIMING=real`.
pub fn real(env: &Environment) -> bool {
    env.timing == Timing::Real || std::env::var("FAKE_GEMINI_TIMING").is_ok_and(|v| v == "real")
}

/// `FAKE_GEMINI_TIMING` holds a value the fake knows (`real`, `fast`, or empty), else the
/// message of the fake's own failure.
pub fn check_env() -> Result<(), String> {
    match std::env::var("FAKE_GEMINI_TIMING") {
        Ok(v) if !matches!(v.as_str(), "" | "real" | "fast") => Err(format!(
            "FAKE_GEMINI_TIMING={v:?} is not a timing (real or fast)"
        )),
        _ => Ok(()),
    }
}

/// A delay knob: its variable when set (it wins), else the preset's value under real timing,
/// else the fake's default.
pub fn knob(var: &str, env: &Environment, real_ms: u64, fast_ms: u64) -> u64 {
    env_ms(var).unwrap_or(if real(env) { real_ms } else { fast_ms })
}

/// ACP: the start-up pause (`FAKE_GEMINI_ACP_START_DELAY_MS`, else the preset's, else none).
pub fn acp_start_ms(env: &Environment) -> u64 {
    knob("FAKE_GEMINI_ACP_START_DELAY_MS", env, ACP_START_MS, 0)
}

/// ACP: the time each `session/new` takes (`FAKE_GEMINI_ACP_SESSION_NEW_MS`, else the preset's,
/// else [`ACP_SESSION_NEW_FAST_MS`]).
pub fn acp_session_new_ms(env: &Environment) -> u64 {
    knob(
        "FAKE_GEMINI_ACP_SESSION_NEW_MS",
        env,
        ACP_SESSION_NEW_MS,
        ACP_SESSION_NEW_FAST_MS,
    )
}

/// ACP: the fake's own `session/new` time. Never none: the real agent reads on while it makes a
/// session, so a request sent right behind `session/new` is answered first (ACP differential
/// case `new-session-overtaken`).
pub const ACP_SESSION_NEW_FAST_MS: u64 = 10;
