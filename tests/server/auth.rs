//! A failed login through the server: the message is the CLI's own reason, never a warning the CLI
//! printed before it, and the fix fits the situation (the real CLI 0.61's stderr, replayed by
//! fake-gemini).

use serde_json::json;

use super::{text, Harness};

/// The real CLI 0.61's stderr with `GEMINI_API_KEY` set, `selectedType: "oauth-personal"` left
/// in the user's settings, and a system-defaults file under /tmp (exit 41).
const LEFTOVER_LOGIN: &str = include_str!("../fixtures/real-cli/oauth_leftover_with_key.err");

/// A call on `backend` with `GEMINI_API_KEY` set, `selectedType: "oauth-personal"` left in the
/// user's settings and the real CLI's stderr for it replayed: the result and the settings file.
fn leftover_login_call(backend: &str) -> (serde_json::Value, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = dir.path().join("home/.gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"security": {"auth": {"selectedType": "oauth-personal"}}}"#,
    )
    .unwrap();
    let scenario = dir.path().join("leftover-login.toml");
    std::fs::write(
        &scenario,
        format!(
            "requirement = \"the real CLI's stderr for a leftover Google login beside a key\"\n[process]\nstderr = \"\"\"\n{}\"\"\"\nexit-code = 41\n",
            LEFTOVER_LOGIN.replace('\x1b', "\\u001b")
        ),
    )
    .unwrap();
    let mut h = Harness::start_in(
        dir.path(),
        &[
            ("GEMINI_API_KEY", "made-up-key"),
            ("FAKE_GEMINI_SCENARIO", scenario.to_str().unwrap()),
            ("GEMINICLI_MCP_BACKEND", backend),
        ],
        "2025-06-18",
    );
    let r = h.call("gemini_prompt", json!({"prompt": "hi"}));
    drop(h);
    (r, settings)
}

/// The fix a leftover `selectedType` beside a key needs: select the key in that file.
fn select_the_key_in(settings: &std::path::Path) -> String {
    format!(
        "set `security.auth.selectedType` to \"gemini-api-key\" in {}, or remove it",
        settings.display()
    )
}

#[test]
fn a_leftover_google_login_fails_with_the_clis_reason_and_a_fix_naming_its_file() {
    // The captured stderr is a one-shot run's.
    let (r, settings) = leftover_login_call("oneshot");
    let sc = &r["structuredContent"];
    assert_eq!(sc["errorKind"], "auth_required", "{r:#}");
    assert_eq!(sc["exitCode"], 41);
    assert_eq!(sc["fix"], select_the_key_in(&settings));
    let t = text(&r);
    let head: String = t.lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(
        head.starts_with("[error exit=41] auth_required: Manual authorization is required"),
        "{t}"
    );
    for word in ["Security Warning", "sudo", "chmod", "chown"] {
        assert!(!head.contains(word), "{word} in: {head}");
    }
}

#[test]
fn a_warm_agent_stopped_by_a_leftover_google_login_gets_the_same_fix() {
    let (r, settings) = leftover_login_call("acp");
    let sc = &r["structuredContent"];
    assert_eq!(sc["errorKind"], "auth_required", "{r:#}");
    assert_eq!(sc["fix"], select_the_key_in(&settings), "{r:#}");
    assert!(
        text(&r).contains("Manual authorization is required"),
        "the CLI's reason: {r:#}"
    );
    assert!(
        sc.get("ranOneShot").is_none(),
        "a one-shot run would fail alike: {r:#}"
    );
}
