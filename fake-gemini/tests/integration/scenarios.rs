//! Every built-in scenario's observable behaviour (exit code, output shapes), selected the three
//! ways a wrapper can: FAKE_GEMINI_SCENARIO, a prompt marker, or a marker in stdin.

use rstest::rstest;
use serde_json::Value;

use crate::support::Sandbox;

fn sb() -> Sandbox {
    let mut sb = Sandbox::new("proj");
    sb.set("NO_COLOR", Some("1"))
        .set("FAKE_GEMINI_ATTEMPT_DELAY_MS", Some("0"));
    sb
}

fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect()
}

/// (scenario marker, format, exit code, text expected in stdout, text expected in stderr)
#[rstest]
#[case("success", "text", 0, "Hello there! How can I help?\n", "Ripgrep")]
#[case("tool-call", "text", 0, "Let me list files.\nHello there!", "")]
#[case(
    "tool-error",
    "stream-json",
    0,
    "\"status\":\"error\"",
    "Error executing tool run_shell_command"
)]
#[case(
    "thinking",
    "json",
    0,
    "\"response\": \"Hello there! How can I help?\"",
    ""
)]
#[case("auth-missing", "json", 41, "", "\"code\": 41")]
#[case("auth-invalid", "text", 41, "", "Invalid auth method selected.")]
#[case(
    "untrusted-workspace",
    "text",
    55,
    "",
    "not running in a trusted directory"
)]
#[case("no-input", "text", 42, "", "No input provided via stdin")]
#[case("bad-at-reference", "text", 0, "Hello there!", "")]
#[case(
    "include-dir-missing",
    "text",
    1,
    "",
    "[WARN] Skipping unreadable directory: /nonexistent/dir"
)]
#[case(
    "quota-daily",
    "json",
    173,
    "",
    "You have exhausted your daily quota on this model."
)]
#[case(
    "quota-daily",
    "text",
    1,
    "",
    "An unexpected critical error occurred:[object Object]"
)]
#[case(
    "rate-limit-retry",
    "stream-json",
    173,
    "Resource has been exhausted",
    "Attempt 10 failed: Resource has been exhausted"
)]
#[case("api-400", "json", 144, "", "\"code\": 400")]
#[case("api-401", "stream-json", 145, "UNAUTHENTICATED", "")]
#[case("api-403", "stream-json", 147, "PERMISSION_DENIED", "")]
#[case(
    "model-not-found",
    "stream-json",
    1,
    "models/gemini-3.8-flash is not found",
    ""
)]
#[case("model-not-found", "json", 1, "", "ModelNotFoundError")]
#[case(
    "api-500",
    "stream-json",
    244,
    "INTERNAL",
    "Attempt 9 failed with status 500"
)]
#[case("api-503", "json", 247, "", "Attempt 10 failed")]
#[case("empty-response", "json", 0, "INVALID_STREAM", "")]
#[case("malformed-stream", "stream-json", 1, "partial ", "SyntaxError")]
#[case("turn-limit", "json", 53, "", "[ERROR] {")]
#[case("loop-detected", "json", 0, "Loop detected, stopping execution", "")]
#[case("tool-fatal", "stream-json", 54, "no_space_left", "")]
#[case(
    "sandbox-error",
    "text",
    1,
    "",
    "Fatal error: Failed to relaunch the CLI process."
)]
#[case(
    "sandbox-command-missing",
    "text",
    44,
    "",
    "GEMINI_SANDBOX is true but failed to determine command for sandbox"
)]
#[case(
    "config-error",
    "json",
    52,
    "",
    "Please fix the configuration file(s) and try again."
)]
#[case(
    "cancelled",
    "stream-json",
    130,
    "FatalCancellationError",
    "Cancelling..."
)]
#[case("session-not-found", "text", 0, "Hello", "")]
#[case("input-too-large", "stream-json", 0, "\"models\":{}", "")]
#[case("memory-show", "json", 0, "Memory is currently empty.\n{", "")]
#[case("slow-start", "text", 0, "Hello", "")]
#[case("trickle", "text", 0, "tick1 tick2 ", "")]
#[case("long-line", "text", 0, "lorem", "")]
#[case(
    "invalid-json",
    "stream-json",
    0,
    "{\"type\":\"message\",\"timestamp\":\n",
    ""
)]
#[case("flood-stderr", "text", 0, "Hello", "Attempt 1 failed")]
fn builtin_via_prompt_marker(
    #[case] name: &str,
    #[case] fmt: &str,
    #[case] rc: i32,
    #[case] out: &str,
    #[case] err: &str,
) {
    let sb = sb();
    let marker = match name {
        "slow-start" => format!("[[fake-gemini:{name} delay-ms=10]]"),
        "trickle" => format!("[[fake-gemini:{name} count=3 interval-ms=1]]"),
        "long-line" => format!("[[fake-gemini:{name} bytes=5000]]"),
        "flood-stderr" => format!("[[fake-gemini:{name} bytes=100000]]"),
        _ => format!("[[fake-gemini:{name}]]"),
    };
    let mut args = vec!["-p", &marker, "-o", fmt, "--skip-trust"];
    if name.starts_with("sandbox-") {
        args.push("--sandbox");
    }
    let o = sb.run(&args, None);
    let (so, se) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(rc), "{name}: stdout {so} stderr {se}");
    assert!(so.contains(out), "{name}: stdout lacks {out:?}: {so}");
    assert!(se.contains(err), "{name}: stderr lacks {err:?}: {se}");
    if fmt == "stream-json"
        && !matches!(name, "invalid-json")
        && rc != 41
        && rc != 55
        && rc != 42
        && rc != 52
    {
        assert!(
            lines(&o.stdout).iter().all(|v| v.is_object()),
            "{name}: every line is JSON"
        );
    }
}

#[test]
fn flood_stdout_writes_exactly_the_requested_bytes() {
    let sb = sb();
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:flood-stdout bytes=1000000]]",
            "--skip-trust",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        o.stdout.len(),
        1_000_000 + 1,
        "the content plus the ensured trailing newline"
    );
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:flood-stdout bytes=200000]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        None,
    );
    let content: usize = lines(&o.stdout)
        .iter()
        .filter(|v| v["role"] == "assistant")
        .map(|v| v["content"].as_str().unwrap().len())
        .sum();
    assert_eq!(content, 200_000);
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:flood-stdout bytes=70000]]",
            "-o",
            "json",
            "--skip-trust",
        ],
        None,
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("a valid document");
    assert_eq!(doc["response"].as_str().unwrap().len(), 70_000);
}

#[test]
fn flood_stderr_writes_the_requested_bytes_before_answering() {
    let sb = sb();
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:flood-stderr bytes=3000000]]",
            "--skip-trust",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let noise = sb.run(&["-p", "x", "--skip-trust"], None).stderr.len();
    assert_eq!(o.stderr.len(), noise + 3_000_000);
}

#[test]
fn long_line_is_one_line_of_the_requested_size() {
    let sb = sb();
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:long-line bytes=300000]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        None,
    );
    let deltas: Vec<Value> = lines(&o.stdout)
        .into_iter()
        .filter(|v| v["role"] == "assistant")
        .collect();
    assert_eq!(deltas.len(), 1);
    assert_eq!(deltas[0]["content"].as_str().unwrap().len(), 300_000);
}

#[rstest]
#[case("text")]
#[case("stream-json")]
#[case("json")]
fn non_utf8_bytes_reach_stdout_in_every_format(#[case] fmt: &str) {
    let sb = sb();
    let o = sb.run(
        &["-p", "[[fake-gemini:non-utf8]]", "-o", fmt, "--skip-trust"],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        std::str::from_utf8(&o.stdout).is_err(),
        "stdout is not UTF-8"
    );
    assert!(o.stdout.windows(2).any(|w| w == [0xFF, 0xFE]));
    assert!(
        std::str::from_utf8(&o.stderr).is_err(),
        "stderr is not UTF-8"
    );
}

#[test]
fn invalid_json_truncates_the_json_document() {
    let sb = sb();
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:invalid-json]]",
            "-o",
            "json",
            "--skip-trust",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(serde_json::from_slice::<Value>(&o.stdout).is_err());
    assert!(o.stdout.starts_with(b"{\n  \"session_id\""));
}

#[test]
fn stdin_late_ignores_stdin_but_keeps_the_prompt() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_SCENARIO", Some("stdin-late"));
    let o = sb.run(
        &["-p", "x", "-o", "stream-json", "--skip-trust"],
        Some(b"late"),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(lines(&o.stdout)[1]["content"], "x");
    let o = sb.run(&["--skip-trust"], Some(b"late"));
    assert_eq!(o.status.code(), Some(42));
}

#[test]
fn oauth_wait_fails_fast_with_no_browser() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_SCENARIO", Some("oauth-wait"))
        .set("NO_BROWSER", Some("true"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(41));
}

#[test]
fn a_refused_login_exits_1_with_nothing_on_stdout_in_every_format() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_SCENARIO", Some("auth-unsupported"));
    for format in ["text", "json", "stream-json"] {
        let o = sb.run(&["-p", "x", "-o", format, "--skip-trust"], None);
        assert_eq!(o.status.code(), Some(1), "{format}");
        assert!(o.stdout.is_empty(), "{format}: {:?}", o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let report = stderr
            .find("Error authenticating: IneligibleTierError: This client is no longer supported")
            .expect("the first report");
        let ripgrep = stderr.find("Ripgrep is not available").expect("the notice");
        let critical = stderr
            .find("An unexpected critical error occurred:IneligibleTierError: ")
            .expect("the uncaught error");
        assert!(report < ripgrep && ripgrep < critical, "{stderr}");
        assert!(
            stderr.contains("reasonCode: 'UNSUPPORTED_CLIENT'"),
            "{stderr}"
        );
    }
    // Without trust the run stops at the trust check, after the first report.
    let o = sb.run(&["-p", "x"], None);
    assert_eq!(o.status.code(), Some(55));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("Error authenticating: IneligibleTierError")
    );
}

#[test]
fn old_version_rejects_skip_trust_and_reports_its_version() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_SCENARIO", Some("old-version"));
    assert_eq!(sb.run(&["--version"], None).stdout, b"0.39.0\n");
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr)
        .starts_with("Unknown arguments: skip-trust, skipTrust\nUsage: gemini"));
}

#[test]
fn a_marker_in_stdin_selects_the_scenario_and_wins_over_the_env_var() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_SCENARIO", Some("api-400"));
    let o = sb.run(
        &["--skip-trust"],
        Some(b"please [[fake-gemini:success text=\"from \\\"stdin\\\"\\nmarker\"]]"),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout, b"from \"stdin\"\nmarker\n");
    // Without the marker the env var decides.
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(1)
    );
}

#[test]
fn scenario_files_resolve_by_path_and_in_the_scenario_dir() {
    let mut sb = sb();
    let dir = sb.dir.path().join("scen");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.toml"),
        "[[model.turns]]\ntext = \"from a file\"\n",
    )
    .unwrap();
    sb.set("FAKE_GEMINI_SCENARIO_DIR", Some(dir.to_str().unwrap()));
    let o = sb.run(&["-p", "[[fake-gemini:mine]]", "--skip-trust"], None);
    assert_eq!(o.stdout, b"from a file\n");
    sb.set(
        "FAKE_GEMINI_SCENARIO",
        Some(dir.join("mine.toml").to_str().unwrap()),
    );
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).stdout,
        b"from a file\n"
    );
}

#[rstest]
#[case(
    "[[fake-gemini:no-such-scenario]]",
    "unknown scenario `no-such-scenario`"
)]
#[case("[[fake-gemini:success bogus=1]]", "unknown parameter `bogus`")]
#[case("[[fake-gemini:success text=\"unterminated]]", "unterminated")]
fn the_fakes_own_failures_exit_99(#[case] prompt: &str, #[case] msg: &str) {
    let o = sb().run(&["-p", prompt, "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(99));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("fake-gemini: ") && e.contains(msg), "{e}");
}

#[test]
fn an_invalid_scenario_file_exits_99() {
    let mut sb = sb();
    let f = sb.dir.path().join("bad.toml");
    std::fs::write(&f, "[model]\nnot-a-key = 1\n").unwrap();
    sb.set("FAKE_GEMINI_SCENARIO", Some(f.to_str().unwrap()));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(99));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown field `not-a-key`"));
}

#[test]
fn expectations_on_argv_stdin_env_and_cwd() {
    let mut sb = sb();
    let cwd = sb.cwd.display().to_string();
    let f = sb.dir.path().join("expect.toml");
    std::fs::write(
        &f,
        format!("[expect]\nargv-contains = [\"--skip-trust\"]\nstdin = \"in\"\nenv = {{ TERM = \"dumb\" }}\nenv-present = [\"GEMINI_API_KEY\"]\nenv-absent = [\"SECRET\"]\ncwd = {cwd:?}\n"),
    )
    .unwrap();
    sb.set("FAKE_GEMINI_SCENARIO", Some(f.to_str().unwrap()));
    assert_eq!(
        sb.run(&["--skip-trust"], Some(b"in")).status.code(),
        Some(0)
    );
    let o = sb.run(&["--skip-trust"], Some(b"other"));
    assert_eq!(o.status.code(), Some(99));
    assert!(String::from_utf8_lossy(&o.stderr).contains("fake-gemini: expectation failed: stdin"));
    sb.set("SECRET", Some("x"));
    assert_eq!(
        sb.run(&["--skip-trust"], Some(b"in")).status.code(),
        Some(99)
    );
}

#[test]
fn ordered_replies_advance_per_project() {
    let mut sb = sb();
    let f = sb.dir.path().join("replies.toml");
    std::fs::write(&f, "[model]\nreplies = [\"one\", \"two\"]\n").unwrap();
    sb.set("FAKE_GEMINI_SCENARIO", Some(f.to_str().unwrap()));
    let got: Vec<Vec<u8>> = (0..3)
        .map(|_| sb.run(&["-p", "x", "--skip-trust"], None).stdout)
        .collect();
    assert_eq!(
        got,
        [b"one\n".to_vec(), b"two\n".to_vec(), b"one\n".to_vec()]
    );
}

#[test]
fn auth_env_mode_applies_the_real_check() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_AUTH", Some("env"))
        .set("GEMINI_API_KEY", None);
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(41)
    );
    sb.set("GOOGLE_GENAI_USE_GCA", Some("true"));
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(0)
    );
    sb.set("GOOGLE_GENAI_USE_GCA", None)
        .set("GEMINI_API_KEY", Some("k"))
        .set("GOOGLE_GEMINI_BASE_URL", Some("http://x"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(41));
    assert_eq!(o.stderr, b"Invalid auth method selected.\n");
    // Authenticated by default, whatever the environment.
    sb.set("FAKE_GEMINI_AUTH", None).set("GEMINI_API_KEY", None);
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(0)
    );
}

/// Trust as 0.61 decides it: `--skip-trust`, `GEMINI_CLI_TRUST_WORKSPACE`, trustedFolders.json
/// (the longest rule wins), settings' `security.folderTrust.enabled: false`; never an approval
/// mode, whose request is overridden in an untrusted folder (observed: -y, plan, auto_edit).
#[test]
fn trust_comes_from_the_flag_the_env_var_settings_or_trusted_folders_never_yolo() {
    const OVERRIDE: &str =
        "Approval mode overridden to \"default\" because the current folder is not trusted.\n";
    let mut sb = sb();
    assert_eq!(sb.run(&["-p", "x"], None).status.code(), Some(55));
    for mode in [
        &["-y"][..],
        &["--approval-mode", "plan"],
        &["--approval-mode", "auto_edit"],
    ] {
        let o = sb.run(&[&["-p", "x"][..], mode].concat(), None);
        assert_eq!(
            o.status.code(),
            Some(55),
            "{mode:?} does not trust the folder"
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches(OVERRIDE).count(), 2, "{mode:?}: {err}");
    }
    let o = sb.run(&["-p", "x", "--approval-mode", "default"], None);
    assert!(!String::from_utf8_lossy(&o.stderr).contains(OVERRIDE));
    sb.set("GEMINI_CLI_TRUST_WORKSPACE", Some("true"));
    assert_eq!(sb.run(&["-p", "x"], None).status.code(), Some(0));
    sb.set("GEMINI_RESTRICTED_MODE", Some("true"));
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(55),
        "restricted mode wins over --skip-trust (observed)"
    );
    sb.set("GEMINI_RESTRICTED_MODE", None)
        .set("GEMINI_CLI_TRUST_WORKSPACE", Some("false"));
    assert_eq!(sb.run(&["-p", "x"], None).status.code(), Some(55));
    assert_eq!(
        sb.run(&["-p", "x", "--skip-trust"], None).status.code(),
        Some(0),
        "--skip-trust sets the variable over its value (observed)"
    );
    sb.set("GEMINI_CLI_TRUST_WORKSPACE", None)
        .set("NO_COLOR", None);
    let o = sb.run(&["-p", "x"], None);
    assert!(
        o.stderr.starts_with(b"\x1b[31mGemini CLI is not running"),
        "red without NO_COLOR"
    );
    let gem = sb.home.join(".gemini");
    std::fs::create_dir_all(&gem).unwrap();
    let cwd = sb.cwd.display().to_string();
    std::fs::write(
        gem.join("trustedFolders.json"),
        format!("{{{cwd:?}: \"TRUST_FOLDER\"}}"),
    )
    .unwrap();
    assert_eq!(sb.run(&["-p", "x"], None).status.code(), Some(0));
    std::fs::write(
        gem.join("trustedFolders.json"),
        format!("{{{cwd:?}: \"DO_NOT_TRUST\", {:?}: \"TRUST_FOLDER\"}}", "/"),
    )
    .unwrap();
    assert_eq!(
        sb.run(&["-p", "x"], None).status.code(),
        Some(55),
        "the longest rule wins"
    );
    std::fs::remove_file(gem.join("trustedFolders.json")).unwrap();
    std::fs::write(
        gem.join("settings.json"),
        r#"{"security": {"folderTrust": {"enabled": false}}}"#,
    )
    .unwrap();
    assert_eq!(sb.run(&["-p", "x"], None).status.code(), Some(0));
}

#[test]
fn failure_precedence_is_args_auth_trust_input() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_AUTH", Some("env"))
        .set("GEMINI_API_KEY", None);
    assert_eq!(sb.run(&["--bogus"], None).status.code(), Some(1));
    assert_eq!(
        sb.run(&[], None).status.code(),
        Some(41),
        "auth before trust and input"
    );
    sb.set("GEMINI_API_KEY", Some("k"));
    assert_eq!(
        sb.run(&[], None).status.code(),
        Some(55),
        "trust before input"
    );
    assert_eq!(sb.run(&["--skip-trust"], None).status.code(), Some(42));
}

/// settings.json as the CLI reads it: comments allowed; an empty, unparsable or non-object file
/// is exit 52 with JSON.parse's own words, and that real error is printed even under the
/// `config-error` scenario (whose scripted message stands for a file that parses).
#[test]
fn settings_json_is_read_as_the_cli_reads_it() {
    let sb = sb();
    let file = sb.home.join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let run = |text: &str, prompt: &str| {
        std::fs::write(&file, text).unwrap();
        let o = sb.run(&["-p", prompt, "-o", "json", "--skip-trust"], None);
        (o.status.code(), sb.mask(&o.stderr), o.stdout)
    };
    let (rc, _, out) = run("// mine\n{\"ui\": {/* no */ \"hideBanner\": true}}\n", "x");
    assert_eq!(rc, Some(0));
    assert!(String::from_utf8_lossy(&out).contains("Hello there!"));
    for (text, msg) in [
        ("", "Unexpected end of JSON input"),
        (
            "{\"a\": 1,}",
            "Expected double-quoted property name in JSON at position 8",
        ),
        ("[]", "Settings file is not a valid JSON object."),
    ] {
        let (rc, err, out) = run(text, "x");
        assert_eq!(rc, Some(52), "{text:?}");
        assert!(out.is_empty(), "{text:?}");
        assert_eq!(
            err,
            format!("Error in <HOME>/.gemini/settings.json: {msg}\nPlease fix the configuration file(s) and try again.\n"),
            "{text:?}"
        );
    }
    let (rc, err, _) = run("{}}}", "[[fake-gemini:config-error]]");
    assert_eq!(rc, Some(52));
    assert!(
        err.contains("Unexpected non-whitespace character after JSON at position 2\n"),
        "{err}"
    );
    let (rc, err, _) = run("{}", "[[fake-gemini:config-error]]");
    assert_eq!(rc, Some(52));
    assert!(
        err.contains("at position 85\n"),
        "the scripted message: {err}"
    );
}

/// The sandbox command is resolved as the CLI's `getSandboxCommand` does, before the auth check
/// (exit 44); a found command then meets the missing image after auth (exit 1).
#[cfg(unix)]
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one story: the same run under each sandbox setting, checked in the CLI's order"
)]
fn sandbox_command_is_resolved_before_auth() {
    use std::os::unix::fs::PermissionsExt;
    let mut sb = sb();
    let bin = sb.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    sb.set("PATH", Some(bin.to_str().unwrap()))
        .set("FAKE_GEMINI_AUTH", Some("env"))
        .set("GEMINI_API_KEY", None);
    let run = |sb: &Sandbox, args: &[&str]| {
        let o = sb.run(args, None);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (rc, err) = run(
        &sb,
        &[
            "-p",
            "[[fake-gemini:sandbox-command-missing]]",
            "--skip-trust",
            "--sandbox",
        ],
    );
    assert_eq!(rc, Some(44), "44 before auth's 41: {err}");
    assert_eq!(err, "GEMINI_SANDBOX is true but failed to determine command for sandbox; install docker or podman or specify command in GEMINI_SANDBOX\n");
    assert_eq!(
        run(&sb, &["-p", "x", "--skip-trust", "--sandbox"]),
        (Some(44), err),
        "without a scenario, as the machine is: neither docker nor podman on PATH"
    );
    let docker = bin.join("docker");
    std::fs::write(&docker, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        run(&sb, &["-p", "x", "--skip-trust", "--sandbox"]).0,
        Some(41),
        "docker on PATH: auth first"
    );
    std::fs::remove_file(&docker).unwrap();

    sb.set("GEMINI_SANDBOX", Some("vm"));
    let (rc, err) = run(&sb, &["-p", "x", "--skip-trust"]);
    assert_eq!(rc, Some(44));
    assert_eq!(err, "Invalid sandbox command 'vm'. Must be one of docker, podman, sandbox-exec, runsc, lxc, windows-native\n");
    sb.set("GEMINI_SANDBOX", Some(" Podman "));
    let (rc, err) = run(&sb, &["-p", "x", "--skip-trust"]);
    assert_eq!(rc, Some(44));
    assert_eq!(
        err,
        "Missing sandbox command 'podman' (from GEMINI_SANDBOX)\n"
    );
    let podman = bin.join("podman");
    std::fs::write(&podman, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&podman, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.set("GEMINI_API_KEY", Some("k"));
    let (rc, err) = run(&sb, &["-p", "x", "--skip-trust"]);
    assert_eq!(rc, Some(1), "found, then the image is missing: {err}");
    assert!(
        err.starts_with("Fatal error: Failed to relaunch the CLI process.\n"),
        "{err}"
    );
    sb.set("NO_COLOR", None).set("GEMINI_SANDBOX", Some("vm"));
    assert!(
        run(&sb, &["-p", "x", "--skip-trust"])
            .1
            .starts_with("\x1b[31mInvalid sandbox command"),
        "red without NO_COLOR"
    );
    // Already inside a sandbox: nothing to resolve.
    sb.set("SANDBOX", Some("sandbox-exec"));
    assert_eq!(run(&sb, &["-p", "x", "--skip-trust"]).0, Some(0));

    // settings.json's tools.sandbox, which --sandbox=false overrides.
    sb.set("SANDBOX", None)
        .set("GEMINI_SANDBOX", None)
        .set("NO_COLOR", Some("1"));
    let file = sb.home.join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for (settings, args, rc) in [
        (
            r#"{"tools": {"sandbox": true}}"#,
            &["-p", "x", "--skip-trust"][..],
            1,
        ),
        (
            r#"{"tools": {"sandbox": "podman"}}"#,
            &["-p", "x", "--skip-trust"],
            1,
        ),
        (
            r#"{"tools": {"sandbox": {"enabled": true, "command": "lxc"}}}"#,
            &["-p", "x", "--skip-trust"],
            44,
        ),
        (
            r#"{"tools": {"sandbox": {"enabled": false}}}"#,
            &["-p", "x", "--skip-trust"],
            0,
        ),
        (
            r#"{"tools": {"sandbox": 1}}"#,
            &["-p", "x", "--skip-trust"],
            0,
        ),
        (
            r#"{"tools": {"sandbox": true}}"#,
            &["-p", "x", "--skip-trust", "--sandbox=false"],
            0,
        ),
    ] {
        std::fs::write(&file, settings).unwrap();
        let (got, err) = run(&sb, args);
        assert_eq!(got, Some(rc), "{settings} {args:?}: {err}");
    }
}

#[test]
fn input_too_large_limit_is_configurable() {
    let mut sb = sb();
    // The session context alone is estimated at 123 tokens: "short" fits 200, 2,000 chars don't.
    sb.set("FAKE_GEMINI_CONTEXT_TOKENS", Some("200"));
    let o = sb.run(
        &["-p", &"word ".repeat(400), "-o", "json", "--skip-trust"],
        None,
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["response"], "");
    assert_eq!(doc["stats"]["models"], serde_json::json!({}));
    let o = sb.run(&["-p", "short", "-o", "json", "--skip-trust"], None);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["response"], "Hello there! How can I help?");
}

#[test]
fn models_resolve_as_the_real_cli_and_init_echoes_the_request() {
    let sb = sb();
    for (m, version) in [
        ("pro", "gemini-3.1-pro-preview"),
        ("flash", "gemini-3.8-flash"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
    ] {
        let o = sb.run(
            &["-m", m, "-p", "x", "-o", "stream-json", "--skip-trust"],
            None,
        );
        let ev = lines(&o.stdout);
        assert_eq!(ev[0]["model"], m);
        assert!(
            ev.last().unwrap()["stats"]["models"].get(version).is_some(),
            "{m}"
        );
    }
    let o = sb.run(
        &[
            "-p",
            "x [[fake-gemini:success model=my-model]]",
            "-o",
            "json",
            "--skip-trust",
        ],
        None,
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["stats"]["models"].get("my-model").is_some());
    assert!(
        doc["stats"]["models"]
            .get("gemini-3.5-flash-lite")
            .is_some(),
        "auto routes through flash-lite"
    );
}

#[test]
fn the_attempt_delay_param_wins_over_the_env_var() {
    // A marker delay of 0 beats an env delay that would make ten attempts take minutes.
    let mut sb = sb();
    sb.set("FAKE_GEMINI_ATTEMPT_DELAY_MS", Some("60000"));
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:api-500 attempts=3 attempt-delay-ms=0]]",
            "-o",
            "json",
            "--skip-trust",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(244));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("Attempt 2 failed with status 500") && e.contains("Attempt 3 failed: "),
        "{e}"
    );
}

/// A system defaults (or settings) file under a directory others may write to — every temp
/// directory — is skipped with the CLI's `Security Warning` line and its settings are not applied;
/// a missing one is skipped silently (all observed on 0.61.0).
#[test]
fn system_files_in_an_insecure_directory_are_skipped_with_a_warning() {
    let mut sb = sb();
    let defaults = sb.dir.path().join("system-defaults.json");
    std::fs::write(&defaults, r#"{"tools": {"allowed": ["read_file"]}}"#).unwrap();
    let settings = sb.dir.path().join("missing-settings.json");
    sb.set(
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
        Some(&defaults.display().to_string()),
    )
    .set(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        Some(&settings.display().to_string()),
    );
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    // The nearest ancestor that fails: the temp directory itself for an unprivileged user (not
    // root's), else /tmp (mode 1777).
    let want = format!(
        "Security Warning: Skipping system defaults file '{}': Parent directory '",
        defaults.display()
    );
    assert_eq!(err.matches("Security Warning").count(), 1, "{err}");
    assert!(err.contains(&want), "{err}");
    assert!(
        !err.contains("--allowed-tools"),
        "the skipped file's tools.allowed is not applied"
    );
    let warning_line = err
        .lines()
        .position(|l| l.starts_with("Security Warning"))
        .unwrap();
    assert_eq!(warning_line, 2, "after the two terminal warnings: {err}");
    // An untrusted run prints it before the trust failure.
    let o = sb.run(&["-p", "x"], None);
    assert_eq!(o.status.code(), Some(55));
    assert!(String::from_utf8_lossy(&o.stderr)
        .starts_with("Security Warning: Skipping system defaults"));
}

/// The warnings 0.61.0 adds to stderr (observed): the true-colour warning for a 256-colour TERM,
/// `TERM=vt100` counted as basic, and both API keys set (twice before the ripgrep notice, twice
/// after it; with yolo each follows a YOLO notice).
#[test]
fn terminal_and_api_key_warnings_are_the_clis() {
    let mut sb = sb();
    sb.set("TERM", Some("xterm-256color"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "Warning: True color (24-bit) support not detected. Using a terminal with true color enabled will result in a better visual experience.\nRipgrep is not available. Falling back to GrepTool.\n"
    );
    sb.set("COLORTERM", Some("truecolor"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "Ripgrep is not available. Falling back to GrepTool.\n"
    );
    sb.set("COLORTERM", None).set("TERM", Some("vt100"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert!(String::from_utf8_lossy(&o.stderr)
        .starts_with("Warning: Basic terminal detected (TERM=vt100)."));
    sb.set("TERM", Some("xterm-256color"))
        .set("COLORTERM", Some("24bit"))
        .set("GOOGLE_API_KEY", Some("g"));
    let o = sb.run(&["-p", "x", "--skip-trust", "-y"], None);
    let keys = "Both GOOGLE_API_KEY and GEMINI_API_KEY are set. Using GOOGLE_API_KEY.\n";
    let yolo = "YOLO mode is enabled. All tool calls will be automatically approved.\n";
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("{yolo}{keys}{yolo}{keys}Ripgrep is not available. Falling back to GrepTool.\n{keys}{keys}")
    );
}

/// Tool-call ids have the real CLI's shape (`<name>__<name>_<ms>_<n>`) and never repeat within a
/// run, even when turns share a millisecond (here: a frozen clock), since wrappers key by id.
#[test]
fn tool_call_ids_are_unique_per_call_in_the_clis_format() {
    let mut sb = sb();
    sb.set("FAKE_GEMINI_NOW", Some("2030-01-01T00:00:00Z"));
    let o = sb.run(
        &[
            "-p",
            "[[fake-gemini:loop-detected]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let ids: Vec<String> = lines(&o.stdout)
        .iter()
        .filter(|e| e["type"] == "tool_use")
        .map(|e| e["tool_id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.len() >= 2, "{ids:?}");
    let shape = regex::Regex::new(r"^list_directory__list_directory_\d{13}_\d+$").unwrap();
    assert!(ids.iter().all(|i| shape.is_match(i)), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

/// Runs `args` with stdin written `after` the spawn; returns the exit code and the user message
/// the stream-json output reports (`None`: none).
fn stdin_written_after(
    sb: &Sandbox,
    args: &[&str],
    after: std::time::Duration,
) -> (Option<i32>, Option<String>) {
    use std::io::Write as _;
    let mut child = sb
        .cmd(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let mut stdin = child.stdin.take().unwrap();
    // The fake may have exited already (42): a broken pipe is part of the answer.
    let _ = stdin.write_all(b"late hello");
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let user = lines(&o.stdout)
        .into_iter()
        .find(|e| e["type"] == "message" && e["role"] == "user")
        .map(|e| e["content"].as_str().unwrap_or_default().to_string());
    (o.status.code(), user)
}

/// The real-timing preset opens the stdin window when the real CLI does (≈2.3 s after spawn, for
/// 500 ms), so stdin written 1.2 s late is still read, as by the real CLI; the fast default has
/// given up by then. The preset is chosen by `FAKE_GEMINI_TIMING=real` or a marker's `timing=real`.
#[test]
fn real_timing_reads_stdin_that_arrives_as_late_as_the_real_cli_allows() {
    let late = std::time::Duration::from_millis(1200);
    let args = ["-o", "stream-json", "--skip-trust"];
    let mut sb = sb();
    assert_eq!(
        stdin_written_after(&sb, &args, late),
        (Some(42), None),
        "fast: too late"
    );
    sb.set("FAKE_GEMINI_TIMING", Some("real"));
    assert_eq!(
        stdin_written_after(&sb, &args, late),
        (Some(0), Some("late hello".into()))
    );
    sb.set("FAKE_GEMINI_TIMING", Some("slow"));
    let o = sb.run(&["-p", "x", "--skip-trust"], None);
    assert_eq!(
        o.status.code(),
        Some(99),
        "an unknown timing is the fake's own failure"
    );
    sb.set("FAKE_GEMINI_TIMING", None);
    let o = sb.run(
        &["-p", "[[fake-gemini:success timing=slow]]", "--skip-trust"],
        None,
    );
    assert_eq!(o.status.code(), Some(99));
}

/// Plan mode in a trusted folder under `auto`: no router call, the pro model with custom tools
/// answers (observed on 0.61.0 by the differential suite).
#[test]
fn plan_mode_skips_the_router() {
    let sb = sb();
    let o = sb.run(
        &[
            "-p",
            "x",
            "-o",
            "json",
            "--skip-trust",
            "--approval-mode",
            "plan",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let models: Vec<&String> = doc["stats"]["models"].as_object().unwrap().keys().collect();
    assert_eq!(models, ["gemini-3.1-pro-preview-customtools"]);
}
