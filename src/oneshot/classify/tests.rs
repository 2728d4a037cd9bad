use super::*;
use crate::gemini::outcome::retry_delay_ms;

fn run(status: Option<Termination>, stdout: &str, stderr: &str) -> (RunOutput, Transcript) {
    let out = RunOutput {
        status,
        killed: None,
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        stdout_total: stdout.len() as u64,
        stderr_total: stderr.len() as u64,
        duration: Duration::from_millis(5),
    };
    let t = Transcript::from_stdout(stdout.as_bytes());
    (out, t)
}

fn kind(status: Option<Termination>, stdout: &str, stderr: &str) -> (ErrorKind, i32) {
    let (o, t) = run(status, stdout, stderr);
    let f = classify(&o, t.clone(), CancelCause::Client, None).expect_err("a failure");
    (f.kind, f.exit_code)
}

const INIT: &str = "{\"type\":\"init\",\"session_id\":\"s\",\"model\":\"auto\"}\n";

#[test]
fn success_keeps_session_model_stats() {
    let stdout = format!("{INIT}{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"hi\"}}\n{{\"type\":\"result\",\"status\":\"success\",\"stats\":{{\"total_tokens\":3,\"models\":{{\"m\":{{}}}}}}}}\n");
    let (o, t) = run(
        Some(Termination::Exited(0)),
        &stdout,
        "YOLO mode is enabled.",
    );
    let s = classify(&o, t.clone(), CancelCause::Client, None).unwrap();
    assert_eq!(s.answer, "hi");
    assert_eq!(s.session_id.as_deref(), Some("s"));
    assert_eq!(s.stats.unwrap()["total_tokens"], 3);
}

#[test]
fn dropped_input_is_input_too_large() {
    let stdout = format!("{INIT}{{\"type\":\"result\",\"status\":\"success\",\"stats\":{{\"total_tokens\":0,\"models\":{{}}}}}}\n");
    assert_eq!(
        kind(
            Some(Termination::Exited(0)),
            &stdout,
            "Warning: stdin input truncated to 8388608 bytes.\n"
        ),
        (ErrorKind::InputTooLarge, 0)
    );
    assert_eq!(
        kind(Some(Termination::Exited(0)), &stdout, ""),
        (ErrorKind::InputTooLarge, 0)
    );
}

#[test]
fn a_success_the_loop_detection_ended_is_loop_detected_with_the_partial_answer() {
    // As 0.61 prints it (s_sjson_loop_detected): the warning, then a success.
    let stdout = format!("{INIT}{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"Listing again.\",\"delta\":true}}\n{{\"type\":\"error\",\"severity\":\"warning\",\"message\":\"Loop detected, stopping execution\"}}\n{{\"type\":\"result\",\"status\":\"success\",\"stats\":{{\"total_tokens\":600,\"models\":{{\"m\":{{}}}}}}}}\n");
    let (o, t) = run(Some(Termination::Exited(0)), &stdout, "");
    let f = classify(&o, t, CancelCause::Client, None).expect_err("not a success");
    assert_eq!((f.kind, f.exit_code), (ErrorKind::LoopDetected, 0));
    assert!(
        f.message.contains("Loop detected, stopping execution"),
        "{}",
        f.message
    );
    assert_eq!(
        f.run.partial_response.as_deref().map(String::as_str),
        Some("Listing again.")
    );
}

#[test]
fn empty_response() {
    let stdout = format!("{INIT}{{\"type\":\"error\",\"severity\":\"error\",\"message\":\"The model returned an empty response with no text or thoughts. This may be a transient API issue; please try again.\"}}\n{{\"type\":\"result\",\"status\":\"error\",\"stats\":{{}}}}\n");
    assert_eq!(
        kind(Some(Termination::Exited(0)), &stdout, ""),
        (ErrorKind::EmptyResponse, 0)
    );
}

#[test]
fn api_errors_by_message() {
    let r = |msg: &str| {
        format!("{INIT}{{\"type\":\"result\",\"status\":\"error\",\"error\":{{\"type\":\"unknown\",\"message\":{}}},\"stats\":{{}}}}\n", serde_json::to_string(msg).unwrap())
    };
    let daily = r("[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try again later.");
    assert_eq!(
        kind(Some(Termination::Exited(173)), &daily, ""),
        (ErrorKind::QuotaExhausted, 173)
    );
    let retryable = r("[API Error: Resource has been exhausted (e.g. check quota).]\nPlease wait");
    assert_eq!(
        kind(Some(Termination::Exited(173)), &retryable, ""),
        (ErrorKind::RateLimited, 173)
    );
    let bad = r("[API Error: {\"error\":{\"code\":400,\"message\":\"Invalid argument provided.\",\"status\":\"INVALID_ARGUMENT\"}}]");
    assert_eq!(
        kind(Some(Termination::Exited(144)), &bad, ""),
        (ErrorKind::BadRequest, 144)
    );
    let internal = r("[API Error: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}]");
    assert_eq!(
        kind(Some(Termination::Exited(244)), &internal, ""),
        (ErrorKind::ServerError, 244)
    );
    let notfound = r("[API Error: {\"error\":{\"code\":404,\"message\":\"models/x is not found\",\"status\":\"NOT_FOUND\"}}]");
    assert_eq!(
        kind(Some(Termination::Exited(1)), &notfound, ""),
        (ErrorKind::ModelNotFound, 1)
    );
    let denied = r("[API Error: {\"error\":{\"code\":403,\"message\":\"denied\",\"status\":\"PERMISSION_DENIED\"}}]");
    assert_eq!(
        kind(Some(Termination::Exited(147)), &denied, ""),
        (ErrorKind::PermissionDenied, 147)
    );
    let malformed = r("[API Error: Expected property name or '}' in JSON at position 1]");
    assert_eq!(
        kind(Some(Termination::Exited(1)), &malformed, ""),
        (ErrorKind::Error, 1)
    );
}

#[test]
fn retry_delay_is_read() {
    assert_eq!(retry_delay_ms("Please retry in 23.5s."), Some(23_500));
    assert_eq!(retry_delay_ms(r#""retryDelay": "30s""#), Some(30_000));
    assert_eq!(retry_delay_ms("retry after 250ms"), Some(250));
    assert_eq!(retry_delay_ms("no delay"), None);
}

#[test]
fn fatal_result_types() {
    let r = |t: &str| {
        format!("{INIT}{{\"type\":\"result\",\"status\":\"error\",\"error\":{{\"type\":\"{t}\",\"message\":\"m\"}},\"stats\":{{}}}}\n")
    };
    assert_eq!(
        kind(
            Some(Termination::Exited(53)),
            &r("FatalTurnLimitedError"),
            ""
        )
        .0,
        ErrorKind::TurnLimit
    );
    assert_eq!(
        kind(Some(Termination::Exited(54)), &r("no_space_left"), "").0,
        ErrorKind::ToolError
    );
    assert_eq!(
        kind(
            Some(Termination::Exited(130)),
            &r("FatalCancellationError"),
            ""
        )
        .0,
        ErrorKind::Cancelled
    );
}

#[test]
fn pre_run_failures_by_stderr() {
    assert_eq!(
        kind(Some(Termination::Exited(41)), "", "Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY\n"),
        (ErrorKind::AuthRequired, 41)
    );
    assert_eq!(
        kind(
            Some(Termination::Exited(55)),
            "",
            "\x1b[31mGemini CLI is not running in a trusted directory. To proceed\x1b[0m\n"
        ),
        (ErrorKind::UntrustedWorkspace, 55)
    );
    assert_eq!(
        kind(Some(Termination::Exited(52)), "", "Error in /h/.gemini/settings.json: Unexpected token\nPlease fix the configuration file(s) and try again.\n"),
        (ErrorKind::ConfigError, 52)
    );
    assert_eq!(
        kind(
            Some(Termination::Exited(1)),
            "",
            "Unknown arguments: skip-trust, skipTrust\nUsage: gemini\n"
        ),
        (ErrorKind::CliTooOld, 1)
    );
}

#[test]
fn a_skipped_settings_file_is_never_the_reason_of_a_failed_login() {
    // The real CLI 0.61's stderr: a leftover `oauth-personal` with GEMINI_API_KEY set and a
    // system-defaults file under /tmp.
    let stderr = include_str!("../../../tests/fixtures/real-cli/oauth_leftover_with_key.err");
    let (o, t) = run(Some(Termination::Exited(41)), "", stderr);
    let f = classify(&o, t.clone(), CancelCause::Client, None).expect_err("a failure");
    assert_eq!((f.kind, f.exit_code), (ErrorKind::AuthRequired, 41));
    assert!(
        f.message.starts_with(
            "Manual authorization is required but the current session is non-interactive."
        ),
        "{}",
        f.message
    );
    assert!(!f.message.contains("sudo") && !f.message.contains("Security Warning"));
}

#[test]
fn warnings_before_an_unknown_failure_are_skipped() {
    let stderr = "Warning: True color (24-bit) support not detected. Using a terminal with true color enabled will result in a better visual experience.\n\
        Both GOOGLE_API_KEY and GEMINI_API_KEY are set. Using GOOGLE_API_KEY.\n\
        Approval mode overridden to \"default\" because the current folder is not trusted.\n\
        Security Warning: Skipping system settings file '/etc/gemini-cli/settings.json': File is insecure: File '/etc/gemini-cli/settings.json' is writable by group or others (mode: 100666). To fix this, run: sudo chmod g-w,o-w \"/etc/gemini-cli/settings.json\"\n\
        Error: the disk caught fire\n    at main (file:///x.js:1:1)\n";
    let (o, t) = run(Some(Termination::Exited(1)), "", stderr);
    let f = classify(&o, t.clone(), CancelCause::Client, None).expect_err("a failure");
    assert_eq!(f.message, "Error: the disk caught fire");
}

#[test]
fn json_error_document_on_stderr() {
    let stderr = "Error when talking to Gemini API\n{\n  \"session_id\": \"x\",\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"You have exhausted your daily quota on this model.\",\n    \"code\": 429\n  }\n}\n";
    assert_eq!(
        kind(Some(Termination::Exited(173)), "", stderr),
        (ErrorKind::QuotaExhausted, 173)
    );
    let auth = "{\n  \"session_id\": \"x\",\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"Please set an Auth method {braces}\",\n    \"code\": 41\n  }\n}\n";
    assert_eq!(
        kind(Some(Termination::Exited(41)), "", auth),
        (ErrorKind::AuthRequired, 41)
    );
}

#[test]
fn exit_code_fallbacks() {
    assert_eq!(
        kind(Some(Termination::Exited(0)), INIT, ""),
        (ErrorKind::Incomplete, 0)
    );
    assert_eq!(
        kind(Some(Termination::Exited(44)), "", "boom\n"),
        (ErrorKind::SandboxError, 44)
    );
    assert_eq!(
        kind(Some(Termination::Exited(7)), "", ""),
        (ErrorKind::Unknown, 7)
    );
    assert_eq!(
        kind(Some(Termination::Signaled(11)), INIT, ""),
        (ErrorKind::Unknown, 139)
    );
}

#[test]
fn server_kills_win() {
    let (mut o, t) = run(
        Some(Termination::Signaled(9)),
        &format!("{INIT}{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"part\"}}\n"),
        "",
    );
    o.killed = Some(KillReason::OutputLimit(Stream::Stdout));
    let f = classify(&o, t.clone(), CancelCause::Client, None).unwrap_err();
    assert_eq!(
        (f.kind, f.exit_code, f.run.signal),
        (ErrorKind::OutputLimit, 137, Some(9))
    );
    assert_eq!(
        f.run.partial_response.as_deref().map(String::as_str),
        Some("part")
    );
    o.killed = Some(KillReason::Cancelled);
    o.status = Some(Termination::Exited(0));
    let f = classify(&o, t.clone(), CancelCause::Shutdown, None).unwrap_err();
    assert_eq!((f.kind, f.exit_code), (ErrorKind::Cancelled, 130));
    assert!(f.message.contains("shutting down"));
}
