//! `geminicli-mcp doctor` against fake-gemini's versions (`FAKE_GEMINI_VERSION` changes both
//! `--version` and which flags `--help` lists), a missing CLI, and a CLI that never answers.

use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

/// Runs `geminicli-mcp doctor ARGS` in a clean environment (a temp HOME, the test's PATH) plus
/// `env`, with GEMINI_CLI_BIN at fake-gemini unless `env` sets it.
fn doctor(args: &[&str], env: &[(&str, &str)]) -> (Output, TempDir) {
    let home = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(gemini_mcp_conformance::bins::locate("geminicli-mcp"));
    cmd.arg("doctor")
        .args(args)
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("FAKE_GEMINI_STATE", home.path().join("state"))
        .env(
            "GEMINI_CLI_BIN",
            gemini_mcp_conformance::bins::locate("fake-gemini"),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().expect("run the doctor"), home)
}

fn json_report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json printed no JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_current_cli_passes_with_every_capability() {
    let (out, _home) = doctor(&["--json"], &[("FAKE_GEMINI_VERSION", "0.61.0")]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["ok"], true);
    assert_eq!(r["cli"]["version"], "0.61.0");
    assert_eq!(r["cli"]["versionProbe"]["status"], "finished");
    for flag in [
        "--skip-trust",
        "stream-json",
        "--approval-mode",
        "--acp",
        "--session-id",
    ] {
        assert_eq!(r["cli"]["capabilities"][flag]["present"], true, "{flag}");
    }
    assert!(r["cli"]["via"]
        .as_str()
        .unwrap()
        .starts_with("GEMINI_CLI_BIN="));
    assert_eq!(r["problems"], serde_json::json!([]));
    assert_eq!(r["config"]["GEMINICLI_MCP_ENV"], "inherit");
}

#[test]
fn a_cli_older_than_0_40_fails_with_the_upgrade() {
    let (out, _home) = doctor(&["--json"], &[("FAKE_GEMINI_VERSION", "0.39.0")]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["ok"], false);
    assert_eq!(r["cli"]["version"], "0.39.0");
    assert_eq!(r["cli"]["capabilities"]["--skip-trust"]["present"], false);
    // The real 0.39.0 already has --acp (fake-gemini's version table follows it): an optional
    // capability, present, so not among the problems.
    assert_eq!(r["cli"]["capabilities"]["--acp"]["present"], true);
    let problems = r["problems"].as_array().unwrap();
    assert!(!problems
        .iter()
        .any(|p| p["message"].as_str().unwrap().contains("--acp")));
    assert!(
        problems.iter().any(
            |p| p["message"].as_str().unwrap().contains("older than 0.40.0")
                && p["fix"]
                    .as_str()
                    .unwrap()
                    .contains("npm install -g @google/gemini-cli@latest")
        ),
        "{problems:?}"
    );
    assert!(problems
        .iter()
        .any(|p| p["message"].as_str().unwrap().contains("--skip-trust")));
}

#[test]
fn version_0_40_passes_without_the_optional_session_id() {
    let (out, _home) = doctor(&["--json"], &[("FAKE_GEMINI_VERSION", "0.40.0")]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["cli"]["capabilities"]["--skip-trust"]["present"], true);
    assert_eq!(r["cli"]["capabilities"]["--session-id"]["present"], false);
}

#[test]
fn a_missing_cli_is_a_problem_with_its_fix() {
    let (out, _home) = doctor(&[], &[("GEMINI_CLI_BIN", "/nonexistent/dir/gemini")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("program          not found"), "{text}");
    assert!(text.contains("fix: "), "{text}");
    assert!(text.contains("GEMINI_CLI_BIN"), "{text}");
}

#[test]
fn auth_variables_are_named_never_shown() {
    let secret = "doctor-secret-value-7c1f";
    let (out, _home) = doctor(
        &[],
        &[
            ("GEMINI_API_KEY", secret),
            ("GOOGLE_CLOUD_PROJECT", "doctor-project-5d2e"),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("GEMINI_API_KEY, GOOGLE_CLOUD_PROJECT"),
        "{text}"
    );
    assert!(!text.contains(secret), "a value leaked: {text}");
    assert!(!text.contains("doctor-project-5d2e"), "a value leaked");
    let (out, _home) = doctor(&["--json"], &[("GEMINI_API_KEY", secret)]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
}

#[test]
fn a_setting_not_understood_is_a_warning_naming_it_not_a_failure() {
    let (out, _home) = doctor(
        &["--json"],
        &[
            ("GEMINICLI_MCP_ENV", "minimall"),
            ("GEMINICLI_MCP_MAX_CONCURENCY", "2"),
        ],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("GEMINICLI_MCP_ENV is not inherit or minimal; the default applies"),
        "{warnings}"
    );
    assert!(
        warnings.contains("GEMINICLI_MCP_MAX_CONCURENCY is not a setting of this server (did you mean GEMINICLI_MCP_MAX_CONCURRENCY?)"),
        "{warnings}"
    );
    assert!(!warnings.contains("minimall"), "{warnings}");
}

#[test]
fn no_credentials_is_a_warning_not_a_failure() {
    let (out, _home) = doctor(&["--json"], &[]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["auth"]["variables"], serde_json::json!([]));
    assert!(r["warnings"][0].as_str().unwrap().contains("auth_required"));
}

#[test]
fn a_cached_google_login_as_the_only_credential_warns_of_the_individual_sunset() {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(home.path().join(".gemini/oauth_creds.json"), "{}").unwrap();
    let (out, _dir) = doctor(&["--json"], &[("HOME", home.path().to_str().unwrap())]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("auth_unsupported") && w.contains("GEMINI_API_KEY")),
        "{warnings:?}"
    );
    // With an API key set there is nothing to warn about.
    let (out, _dir) = doctor(
        &["--json"],
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("GEMINI_API_KEY", "k"),
        ],
    );
    let r = json_report(&out);
    assert!(
        !r["warnings"].to_string().contains("auth_unsupported"),
        "{r:#}"
    );
}

#[test]
fn a_cli_that_never_answers_times_out_as_such() {
    // fake-gemini's start-up delay applies to --version and --help too.
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("slow.toml");
    std::fs::write(&scenario, "[environment]\nstartup-delay-ms = 600000\n").unwrap();
    let (out, _home) = doctor(
        &[
            "--json",
            "--doctor-timeout",
            "0.5",
            "--kill-grace-ms",
            "200",
        ],
        &[("FAKE_GEMINI_SCENARIO", scenario.to_str().unwrap())],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["cli"]["versionProbe"]["status"], "timed_out");
    assert_eq!(r["cli"]["helpProbe"]["status"], "timed_out");
    assert!(r["problems"][0]["message"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    assert!(r["problems"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("--doctor-timeout"));
}

#[test]
fn flags_override_the_environment_in_the_effective_configuration() {
    let (out, _home) = doctor(
        &["--json", "--max-concurrency", "2", "--env", "minimal"],
        &[
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "9"),
            ("GEMINICLI_MCP_HEARTBEAT_MS", "5000"),
            ("GEMINICLI_MCP_ENV_PASS", "FAKE_GEMINI_*"),
        ],
    );
    let r = json_report(&out);
    assert_eq!(r["config"]["GEMINICLI_MCP_MAX_CONCURRENCY"], 2);
    assert_eq!(r["config"]["GEMINICLI_MCP_HEARTBEAT_MS"], 5000);
    assert_eq!(r["config"]["GEMINICLI_MCP_ENV"], "minimal");
    assert_eq!(r["config"]["GEMINICLI_MCP_KILL_GRACE_MS"], 2000);
}

#[test]
fn http_settings_are_shown_without_the_token_and_checked() {
    let token = "doctor-http-token-0a1b2c3d4e5f";
    let (out, _home) = doctor(
        &["--json", "--http", "127.0.0.1:8765"],
        &[("GEMINICLI_MCP_HTTP_TOKEN", token)],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["config"]["GEMINICLI_MCP_HTTP"], "127.0.0.1:8765");
    assert_eq!(
        r["config"]["GEMINICLI_MCP_HTTP_TOKEN"],
        "set in GEMINICLI_MCP_HTTP_TOKEN"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(token));
    assert_eq!(r["config"]["GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS"], 10_000);
    assert_eq!(r["config"]["GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS"], 60_000);
    let cap = r["config"]["GEMINICLI_MCP_HTTP_MAX_CONNECTIONS"].as_u64();
    assert!(cap.is_some_and(|c| (1..=1024).contains(&c)), "{r:#}");
    let (out, _home) = doctor(
        &["--json", "--http", "127.0.0.1:8765"],
        &[
            ("GEMINICLI_MCP_HTTP_TOKEN", token),
            ("GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS", "soon"),
        ],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert!(r["problems"][0]["message"]
        .as_str()
        .unwrap()
        .contains("GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS=\"soon\""));
    let (out, _home) = doctor(
        &["--json", "--http", "0.0.0.0:8765"],
        &[("GEMINICLI_MCP_HTTP_TOKEN", token)],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert!(r["problems"][0]["message"]
        .as_str()
        .unwrap()
        .contains("--http-allow-remote"));
}

#[cfg(unix)]
#[test]
fn a_required_flag_missing_from_help_is_a_problem_even_on_a_new_version() {
    use std::os::unix::fs::PermissionsExt;
    // A CLI that says 0.61.0 but whose --help has no stream-json (a fork, a wrapper script).
    let dir = tempfile::tempdir().expect("temp dir");
    let cli = dir.path().join("gemini");
    std::fs::write(
        &cli,
        "#!/bin/sh\ncase \"$1\" in\n  --version) echo 0.61.0 ;;\n  --help) printf '  --skip-trust  x\\n  --approval-mode  y\\n  -o, --output-format  [choices: \"text\", \"json\"]\\n' ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, _home) = doctor(&["--json"], &[("GEMINI_CLI_BIN", cli.to_str().unwrap())]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["cli"]["version"], "0.61.0");
    assert_eq!(r["cli"]["capabilities"]["stream-json"]["present"], false);
    assert_eq!(r["cli"]["capabilities"]["--skip-trust"]["present"], true);
    let problem = &r["problems"][0];
    assert!(
        problem["message"].as_str().unwrap().contains("stream-json"),
        "{problem}"
    );
    assert!(problem["fix"]
        .as_str()
        .unwrap()
        .contains("npm install -g @google/gemini-cli@latest"));
}
