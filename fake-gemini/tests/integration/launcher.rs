//! Launchers (`fake-gemini --write-launcher`): the settings baked into the `gemini` script reach
//! fake-gemini when its caller passes an environment that holds nothing but PATH.

use std::process::{Command, Stdio};

use crate::support::{bin, log_records};

/// Runs `fake-gemini --write-launcher DIR settings...`; returns the launcher path it printed.
fn write_launcher(dir: &std::path::Path, settings: &[String]) -> std::path::PathBuf {
    let o = Command::new(bin())
        .arg("--write-launcher")
        .arg(dir)
        .args(settings)
        .env_clear()
        .output()
        .expect("run fake-gemini --write-launcher");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let printed = String::from_utf8(o.stdout).unwrap();
    std::path::PathBuf::from(printed.trim_end())
}

#[cfg(unix)]
#[test]
fn scenario_log_and_state_survive_an_empty_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("calls.jsonl");
    let state = tmp.path().join("state");
    let cwd = tmp.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let launcher = write_launcher(
        &tmp.path().join("bin"),
        &[
            "FAKE_GEMINI_SCENARIO=tool-call".into(),
            format!("FAKE_GEMINI_LOG={}", log.display()),
            format!("FAKE_GEMINI_STATE={}", state.display()),
        ],
    );
    assert_eq!(launcher, tmp.path().join("bin").join("gemini"));
    let o = Command::new(&launcher)
        .args(["-p", "list the files", "--skip-trust"])
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .expect("run the launcher");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The scenario: tool-call's answer, not the default success text.
    assert!(stdout.contains("Let me list files."), "{stdout}");
    // The log: one invocation with the argv the caller gave.
    let recs: Vec<_> = log_records(&log)
        .into_iter()
        .filter(|r| r["event"] == "invocation")
        .collect();
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(
        recs[0]["argv"],
        serde_json::json!(["-p", "list the files", "--skip-trust"])
    );
    assert_eq!(recs[0]["scenario"], "tool-call");
    assert!(
        recs[0]["env"].get("FAKE_GEMINI_LOG").is_some(),
        "{}",
        recs[0]
    );
    // The state: the session of the run is kept in the baked-in directory.
    let kept = walk(&state);
    assert!(
        kept.iter()
            .any(|p| p.extension().is_some_and(|e| e == "json" || e == "jsonl")),
        "nothing kept in {}: {kept:?}",
        state.display()
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_setting_without_a_name_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(bin())
        .args(["--write-launcher"])
        .arg(tmp.path())
        .arg("not-a-setting")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME=VALUE"));
    assert!(!tmp
        .path()
        .join(fake_gemini::launcher::LAUNCHER_NAME)
        .exists());
}
