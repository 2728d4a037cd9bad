//! `geminicli-mcp doctor` against fake-gemini's versions (`FAKE_GEMINI_VERSION` changes both
//! `--version` and which flags `--help` lists), a missing CLI, and a CLI that never answers.

use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

/// Runs `geminicli-mcp doctor ARGS` in a clean environment (a temp HOME and TMPDIR, the test's
/// PATH, a made-up GEMINI_API_KEY) plus `env`, with GEMINI_CLI_BIN at fake-gemini unless `env`
/// sets it. `("GEMINI_API_KEY", "")` leaves the key unset, as the CLI sees an empty one.
fn doctor(args: &[&str], env: &[(&str, &str)]) -> (Output, TempDir) {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(home.path().join("tmp")).unwrap();
    let mut cmd = Command::new(gemini_mcp_conformance::bins::locate("geminicli-mcp"));
    cmd.arg("doctor")
        .args(args)
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TMPDIR", home.path().join("tmp"))
        .env("GEMINI_API_KEY", "doctor-test-key")
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
fn a_cli_newer_than_the_tested_releases_is_a_warning_not_a_problem() {
    let (out, _home) = doctor(&["--json"], &[("FAKE_GEMINI_VERSION", "0.65.1")]);
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["problems"], serde_json::json!([]));
    assert_eq!(
        r["cli"]["testedVersions"]["observed"],
        serde_json::json!(["0.40.0", "0.61.0"])
    );
    let warnings = r["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| {
            let w = w.as_str().unwrap();
            w.contains("0.65.1, newer than the releases") && w.contains("up to 0.64.x")
        }),
        "{warnings:?}"
    );
    // The newest release known from its notes, a preview included, is no warning.
    let (out, _home) = doctor(&["--json"], &[("FAKE_GEMINI_VERSION", "0.64.0-preview.0")]);
    let r = json_report(&out);
    assert!(
        !r["warnings"]
            .to_string()
            .contains("newer than the releases"),
        "{r:#}"
    );
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
fn no_credentials_is_a_failure_not_an_ok() {
    let (out, _home) = doctor(&[], &[("GEMINI_API_KEY", "")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains("OK:"), "{text}");
    assert!(
        text.contains("x calls will fail auth_required: no auth method is selected or implied"),
        "{text}"
    );
    let (out, _home) = doctor(&["--json"], &[("GEMINI_API_KEY", "")]);
    let r = json_report(&out);
    assert_eq!(r["ok"], false);
    assert_eq!(r["auth"]["variables"], serde_json::json!([]));
    assert_eq!(r["auth"]["prediction"]["works"], false);
    assert!(r["problems"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("GEMINI_API_KEY"));
}

/// A HOME whose `.gemini/` holds `settings` (when given) and a cached Google login (when `creds`).
fn home_with(settings: Option<&str>, creds: bool) -> TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    if let Some(s) = settings {
        std::fs::write(home.path().join(".gemini/settings.json"), s).unwrap();
    }
    if creds {
        std::fs::write(home.path().join(".gemini/oauth_creds.json"), "{}").unwrap();
    }
    home
}

#[test]
fn a_cached_google_login_alone_is_not_used_so_calls_fail_auth_required() {
    // The real CLI 0.61 with only ~/.gemini/oauth_creds.json: exit 41, `Please set an Auth method`.
    let home = home_with(None, true);
    let (out, _dir) = doctor(
        &["--json"],
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("GEMINI_API_KEY", ""),
        ],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["auth"]["prediction"]["errorKind"], "auth_required");
    assert!(!r.to_string().contains("auth_unsupported"), "{r:#}");
}

#[test]
fn a_selected_google_login_with_its_cache_warns_of_the_individual_sunset() {
    let home = home_with(
        Some(r#"{"security": {"auth": {"selectedType": "oauth-personal"}}}"#),
        true,
    );
    let (out, _dir) = doctor(
        &["--json"],
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("GEMINI_API_KEY", ""),
        ],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert!(
        r["warnings"].to_string().contains("auth_unsupported"),
        "{r:#}"
    );
}

#[test]
fn a_leftover_google_login_beside_a_key_is_a_problem_naming_its_file() {
    // The real CLI 0.61 exits 41 (`Manual authorization is required …`): the key does not win.
    let home = home_with(
        Some(r#"{"security": {"auth": {"selectedType": "oauth-personal"}}}"#),
        false,
    );
    let (out, _dir) = doctor(&[], &[("HOME", home.path().to_str().unwrap())]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let settings = home.path().join(".gemini/settings.json");
    assert!(
        text.contains(&format!(
            "fix: set `security.auth.selectedType` to \"gemini-api-key\" in {}, or remove it",
            settings.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("selectedType oauth-personal"),
        "each layer's selectedType is shown: {text}"
    );
    for word in ["sudo", "chmod", "chown"] {
        assert!(!text.contains(word), "{word}: {text}");
    }
}

#[test]
fn a_base_url_without_a_selected_type_is_the_invalid_auth_method() {
    let (out, _home) = doctor(
        &["--json"],
        &[("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")],
    );
    let r = json_report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert!(r["auth"]["prediction"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("Invalid auth method selected."));
}

#[test]
fn the_doctor_says_whether_calls_in_one_workspace_start_one_at_a_time() {
    // HOME is under the world-writable /tmp: no system-defaults file the CLI would read.
    let (out, _home) = doctor(&["--json"], &[]);
    assert_eq!(json_report(&out)["sessions"]["startupCleanup"], true);
    let home = home_with(
        Some(r#"{"general": {"sessionRetention": {"enabled": false}}}"#),
        false,
    );
    let (out, _dir) = doctor(&[], &[("HOME", home.path().to_str().unwrap())]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("start-up clean-up off: calls in one workspace start together"),
        "{text}"
    );
}

#[test]
fn the_doctor_leaves_nothing_in_tmpdir() {
    let (out, home) = doctor(&[], &[]);
    assert_eq!(out.status.code(), Some(0));
    let left: Vec<_> = std::fs::read_dir(home.path().join("tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
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
