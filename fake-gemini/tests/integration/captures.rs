//! Every capture of the real CLI in `tests/captures/` whose invocation is known, replayed against
//! fake-gemini with the mock API's behaviour as the scenario: stdout, stderr and the exit code
//! must agree after masking.

use crate::support::{capture, mock, Sandbox};
use fake_gemini::scenario::{Scenario, Usage};

fn as_is(_: &mut Scenario) {}

/// The mock counted one prompt and one output token for this answer.
fn mock_usage_1_1(s: &mut Scenario) {
    s.model.usage = Usage {
        prompt: 1,
        candidates: 1,
        thoughts: 0,
        cached: 0,
    };
}
use rstest::rstest;

/// How a capture run was set up.
#[derive(Clone, Copy)]
enum Env {
    /// First round: TERM=dumb, GEMINI_API_KEY=fake.
    First,
    /// First round without an API key (auth decided by the real env check).
    NoKey,
    /// Second round (`s_*`): adds NO_COLOR=1.
    Second,
}

#[allow(clippy::too_many_arguments)]
fn replay(
    cap: &str,
    env: Env,
    extra_env: &[(&str, &str)],
    scenario: &str,
    text: Option<&str>,
    tweak: fn(&mut Scenario),
    args: &[&str],
    stdin: Option<&[u8]>,
    rc: i32,
) {
    let mut sb = Sandbox::new("sw1");
    match env {
        Env::First => {}
        Env::NoKey => {
            sb.set("GEMINI_API_KEY", None)
                .set("FAKE_GEMINI_AUTH", Some("env"));
        }
        Env::Second => {
            sb.set("NO_COLOR", Some("1"));
        }
    }
    for (k, v) in extra_env {
        sb.set(k, Some(v));
    }
    let mut s = mock(scenario);
    if let Some(t) = text {
        fake_gemini::scenario::apply_params(scenario, &mut s, &[("text".into(), t.into())])
            .unwrap();
    }
    tweak(&mut s);
    sb.use_scenario(&s);
    let o = sb.run(args, stdin);
    assert_eq!(
        sb.mask(&o.stdout),
        capture(&format!("{cap}.out")),
        "{cap}: stdout"
    );
    assert_eq!(
        sb.mask(&o.stderr),
        capture(&format!("{cap}.err")),
        "{cap}: stderr"
    );
    assert_eq!(o.status.code(), Some(rc), "{cap}: exit code");
}

#[rstest]
#[case("help", &["--help"], 0)]
#[case("version", &["--version"], 0)]
#[case("unk", &["--bogus-flag"], 1)]
#[case("unk2", &["-p", "hi", "--bogus-flag"], 1)]
#[case("f_ckpt", &["--checkpointing"], 1)]
#[case("f_ss", &["--session-summary"], 1)]
#[case("f_allfiles", &["--all-files"], 1)]
#[case("f_telemetry", &["--telemetry"], 1)]
#[case("badchoice", &["-o", "xml"], 1)]
#[case("p_and_i", &["-p", "hi", "-i", "there"], 1)]
#[case("p_and_pos", &["-p", "hi", "there"], 1)]
#[case("yolo_and_mode", &["--yolo", "--approval-mode", "default"], 1)]
#[case("s_sess2_resume_and_sessionid", &["--resume", "latest", "--session-id", "22222222-2222-4333-8444-555555555555", "-p", "x", "-o", "stream-json", "--skip-trust"], 1)]
fn command_line(#[case] cap: &str, #[case] args: &[&str], #[case] rc: i32) {
    replay(cap, Env::First, &[], "success", None, as_is, args, None, rc);
}

#[rstest]
#[case("v40_version", &["--version"], 0)]
#[case("v40_help", &["--help"], 0)]
fn version_0_40(#[case] cap: &str, #[case] args: &[&str], #[case] rc: i32) {
    replay(
        cap,
        Env::First,
        &[("FAKE_GEMINI_VERSION", "0.40.0")],
        "success",
        None,
        as_is,
        args,
        None,
        rc,
    );
}

#[rstest]
#[case("p_text", Env::NoKey, &[], &["-p", "hi"], 41)]
#[case("p_json", Env::NoKey, &[], &["-p", "hi", "-o", "json"], 41)]
#[case("pos_sjson", Env::NoKey, &[], &["hi", "-o", "stream-json"], 41)]
#[case("nc_auth", Env::NoKey, &[("NO_COLOR", "1")], &["-p", "hi"], 41)]
#[case("empty_p", Env::NoKey, &[], &["-p", ""], 41)]
#[case("listext", Env::NoKey, &[], &["--list-extensions"], 41)]
#[case("listsess", Env::NoKey, &[], &["--list-sessions"], 41)]
#[case("yolo_json", Env::NoKey, &[], &["-y", "-p", "hi", "-o", "json"], 41)]
#[case("v40_p_json", Env::NoKey, &[("FAKE_GEMINI_VERSION", "0.40.0")], &["-p", "hi", "-o", "json"], 41)]
#[case("listsess_k", Env::First, &[], &["--list-sessions"], 0)]
#[case("k_text", Env::First, &[], &["-p", "hi"], 55)]
#[case("k_json", Env::First, &[], &["-p", "hi", "-o", "json"], 55)]
#[case("k_sjson", Env::First, &[], &["-p", "hi", "-o", "stream-json"], 55)]
#[case("nc_untrusted", Env::First, &[("NO_COLOR", "1")], &["-p", "hi"], 55)]
#[case("s_sess_resume_latest_json_no_skip_trust", Env::Second, &[], &["--resume", "latest", "-p", "resume with json", "-o", "json"], 55)]
#[case("noargs_nostdin", Env::First, &[], &["--skip-trust"], 42)]
#[case("env_trust", Env::First, &[("GEMINI_CLI_TRUST_WORKSPACE", "true")], &["-p", "hi"], 0)]
#[case("incdir_missing", Env::First, &[], &["--include-directories", "/nonexistent/dir", "-p", "hi", "--skip-trust"], 1)]
#[case("sandbox", Env::First, &[], &["-s", "-p", "hi", "--skip-trust"], 1)]
fn before_the_model(
    #[case] cap: &str,
    #[case] env: Env,
    #[case] extra: &[(&str, &str)],
    #[case] args: &[&str],
    #[case] rc: i32,
) {
    replay(cap, env, extra, "success", None, as_is, args, None, rc);
}

#[rstest]
#[case("m_text", &["-p", "hi", "--skip-trust"], None)]
#[case("m_json", &["-p", "hi", "-o", "json", "--skip-trust"], None)]
#[case("m_sjson", &["-p", "hi", "-o", "stream-json", "--skip-trust"], None)]
#[case("model_pro", &["-m", "pro", "-p", "hi", "-o", "stream-json", "--skip-trust"], None)]
#[case("model_flash", &["-m", "flash", "-p", "hi", "-o", "stream-json", "--skip-trust"], None)]
#[case("model_flashlite", &["-m", "flash-lite", "-p", "hi", "-o", "stream-json", "--skip-trust"], None)]
#[case("model_bogus", &["-m", "not-a-model", "-p", "hi", "-o", "json", "--skip-trust"], None)]
#[case("stdin_only", &["-m", "gemini-2.5-flash", "-o", "stream-json", "--skip-trust"], Some(&b"from-stdin-XYZ"[..]))]
#[case("stdin_and_p", &["-m", "gemini-2.5-flash", "-p", "flag-prompt-ABC", "-o", "stream-json", "--skip-trust"], Some(&b"from-stdin-XYZ"[..]))]
#[case("stdin_and_pos", &["-m", "gemini-2.5-flash", "positional-DEF", "-o", "stream-json", "--skip-trust"], Some(&b"from-stdin-XYZ"[..]))]
fn plain_answers(#[case] cap: &str, #[case] args: &[&str], #[case] stdin: Option<&[u8]>) {
    replay(cap, Env::First, &[], "success", None, as_is, args, stdin, 0);
}

#[rstest]
#[case("t_text", "tool-call", &["-y", "-p", "TOOLCALL please", "--skip-trust"])]
#[case("t_json", "tool-call", &["-y", "-p", "TOOLCALL please", "-o", "json", "--skip-trust"])]
#[case("t_sjson", "tool-call", &["-y", "-p", "TOOLCALL please", "-o", "stream-json", "--skip-trust"])]
#[case("sh_sjson", "tool-error", &["--approval-mode", "yolo", "-p", "SHELLCALL please", "-o", "stream-json", "--skip-trust"])]
#[case("sh_default_sjson", "tool-error", &["-p", "SHELLCALL please", "-o", "stream-json", "--skip-trust"])]
#[case("th_sjson", "thinking", &["-p", "THINK please", "-o", "stream-json", "--skip-trust"])]
fn agent_first_round(#[case] cap: &str, #[case] scenario: &str, #[case] args: &[&str]) {
    replay(cap, Env::First, &[], scenario, None, as_is, args, None, 0);
}

#[rstest]
#[case("s_json_toolcall_default", "tool-call", &["-p", "TOOLCALL please", "-o", "json", "--skip-trust"], 0)]
#[case("s_text_toolcall_default", "tool-call", &["-p", "TOOLCALL please", "--skip-trust"], 0)]
#[case("s_json_think", "thinking", &["-p", "THINK please", "-o", "json", "--skip-trust"], 0)]
#[case("s_text_think", "thinking", &["-p", "THINK please", "--skip-trust"], 0)]
#[case("s_json_maxturns1_toolcall", "turn-limit", &["-p", "TOOLCALL please", "-o", "json", "--skip-trust"], 53)]
#[case("s_sjson_maxturns1_toolcall", "turn-limit", &["-p", "TOOLCALL please", "-o", "stream-json", "--skip-trust"], 53)]
#[case("s_text_maxturns1_toolcall", "turn-limit", &["-p", "TOOLCALL please", "--skip-trust"], 53)]
#[case("s_json_loop_detected", "loop-detected", &["-p", "LOOPCALL please", "-o", "json", "--skip-trust"], 0)]
#[case("s_sjson_loop_detected", "loop-detected", &["-p", "LOOPCALL please", "-o", "stream-json", "--skip-trust"], 0)]
#[case("s_text_loop_detected", "loop-detected", &["-p", "LOOPCALL please", "--skip-trust"], 0)]
#[case("s_settings_invalid_json_o_json", "config-error", &["-p", "TOOLCALL please", "-o", "json", "--skip-trust"], 52)]
#[case("s_slash_memory_show_sjson", "memory-show", &["-p", "/memory show", "-o", "stream-json", "--skip-trust"], 0)]
#[case("s_slash_memory_show_json", "memory-show", &["-p", "/memory show", "-o", "json", "--skip-trust"], 0)]
#[case("s_slash_memory_show_text", "memory-show", &["-p", "/memory show", "--skip-trust"], 0)]
#[case("s_slash_help_sjson", "success", &["-p", "/help", "-o", "stream-json", "--skip-trust"], 0)]
#[case("s_at_missing_sjson", "bad-at-reference", &["-p", "please read @missing.txt", "-o", "stream-json", "--skip-trust"], 0)]
#[case("s_at_missing_text", "bad-at-reference", &["-p", "please read @missing.txt", "--skip-trust"], 0)]
#[case("s_at_email_sjson", "success", &["-p", "email me at a@b.com", "-o", "stream-json", "--skip-trust"], 0)]
#[case("s_p_only_text_stdoutpipe", "success", &["-p", "what is two plus two", "--skip-trust"], 0)]
fn agent_second_round(
    #[case] cap: &str,
    #[case] scenario: &str,
    #[case] args: &[&str],
    #[case] rc: i32,
) {
    replay(cap, Env::Second, &[], scenario, None, as_is, args, None, rc);
}

#[rstest]
#[case("s_slash_memory_show_sjson", "stream-json")]
#[case("s_slash_memory_show_json", "json")]
#[case("s_slash_memory_show_text", "text")]
fn memory_show_runs_without_a_scenario(#[case] cap: &str, #[case] fmt: &str) {
    replay(
        cap,
        Env::Second,
        &[],
        "success",
        None,
        as_is,
        &["-p", "/memory show", "-o", fmt, "--skip-trust"],
        None,
        0,
    );
}

#[test]
fn memory_show_prints_the_projects_gemini_md() {
    let mut sb = Sandbox::new("sw1");
    sb.set("NO_COLOR", Some("1"));
    std::fs::write(
        sb.cwd.join("GEMINI.md"),
        "# Project rules\nAlways answer in haiku.\n",
    )
    .unwrap();
    sb.use_scenario(&mock("success"));
    let o = sb.run(
        &["-p", "/memory show", "-o", "stream-json", "--skip-trust"],
        None,
    );
    assert_eq!(
        sb.mask(&o.stdout),
        capture("s_slash_memory_show_gemini_md_sjson.out")
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn stdin_prompt_with_trailing_newline_is_sent_verbatim() {
    replay(
        "s_stdin_only_nl_text_stdoutpipe",
        Env::Second,
        &[],
        "success",
        None,
        as_is,
        &["--skip-trust"],
        Some(b"what is two plus two\n"),
        0,
    );
}

#[rstest]
#[case("s_stdin_9MiB_sjson", &["--skip-trust", "-o", "stream-json"])]
#[case("s_stdin_9MiB_json", &["--skip-trust", "-o", "json"])]
#[case("s_stdin_9MiB_text", &["--skip-trust"])]
fn nine_mib_of_stdin_is_truncated_and_never_sent(#[case] cap: &str, #[case] args: &[&str]) {
    let mut data = Vec::with_capacity(9 << 20);
    let mut n = 0;
    while data.len() < 9 << 20 {
        data.extend_from_slice(format!("{n:08} abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzAB\n").as_bytes());
        n += 1;
    }
    data.truncate(9 << 20);
    replay(
        cap,
        Env::Second,
        &[],
        "success",
        None,
        as_is,
        args,
        Some(&data),
        0,
    );
}

#[rstest]
#[case("ansi_text", &["-m", "gemini-2.5-flash", "-p", "ANSI please", "--skip-trust"])]
#[case("ansi_json", &["-m", "gemini-2.5-flash", "-p", "ANSI please", "-o", "json", "--skip-trust"])]
fn ansi_is_stripped_controls_pass(#[case] cap: &str, #[case] args: &[&str]) {
    replay(
        cap,
        Env::First,
        &[],
        "success",
        Some("red:\x1b[31mRED\x1b[0m bell:\x07 ctrl:\x01 é ✓"),
        mock_usage_1_1,
        args,
        None,
        0,
    );
}

#[rstest]
#[case("q_text", "quota-daily", "QUOTA please", "text", 1)]
#[case("q_json", "quota-daily", "QUOTA please", "json", 173)]
#[case("q_sjson", "quota-daily", "QUOTA please", "stream-json", 173)]
#[case("e400_text", "api-400", "ERR400 please", "text", 1)]
#[case("e400_json", "api-400", "ERR400 please", "json", 144)]
#[case("e400_sjson", "api-400", "ERR400 please", "stream-json", 144)]
#[case("e500b_text", "api-500", "ERR500 please", "text", 1)]
#[case("e500b_sjson", "api-500", "ERR500 please", "stream-json", 244)]
#[case("r429_json", "rate-limit-retry", "RATE429 please", "json", 173)]
#[case("r429_sjson", "rate-limit-retry", "RATE429 please", "stream-json", 173)]
#[case("empty_json", "empty-response", "EMPTY please", "json", 0)]
#[case("empty_sjson", "empty-response", "EMPTY please", "stream-json", 0)]
#[case(
    "badjson_sjson",
    "malformed-stream",
    "BADJSON please",
    "stream-json",
    1
)]
fn api_failures(
    #[case] cap: &str,
    #[case] scenario: &str,
    #[case] prompt: &str,
    #[case] format: &str,
    #[case] rc: i32,
) {
    let args = [
        "-m",
        "gemini-2.5-flash",
        "-p",
        prompt,
        "-o",
        format,
        "--skip-trust",
    ];
    replay(
        cap,
        Env::First,
        &[("FAKE_GEMINI_ATTEMPT_DELAY_MS", "0")],
        scenario,
        None,
        as_is,
        &args,
        None,
        rc,
    );
}

/// Replays a capture whose stdin was written in timed chunks; the real CLI's timing (reads from
/// ≈2.2 s after spawn, 500 ms window) is scaled down with FAKE_GEMINI_STDIN_START_MS/WAIT_MS.
fn replay_timed(cap: &str, args: &[&str], chunks: &[(u64, &'static [u8])], rc: i32) {
    use std::io::Write;
    let mut sb = Sandbox::new("sw1");
    sb.set("NO_COLOR", Some("1"))
        .set("FAKE_GEMINI_STDIN_START_MS", Some("600"))
        .set("FAKE_GEMINI_STDIN_WAIT_MS", Some("200"));
    sb.use_scenario(&mock("success"));
    let mut c = sb.cmd(args);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let chunks: Vec<(u64, &'static [u8])> = chunks.to_vec();
    let writer = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        for (at, data) in chunks {
            let due = std::time::Duration::from_millis(at);
            std::thread::sleep(due.saturating_sub(t0.elapsed()));
            if stdin.write_all(data).is_err() {
                return;
            }
        }
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        sb.mask(&o.stdout),
        capture(&format!("{cap}.out")),
        "{cap}: stdout"
    );
    assert_eq!(
        sb.mask(&o.stderr),
        capture(&format!("{cap}.err")),
        "{cap}: stderr"
    );
    assert_eq!(o.status.code(), Some(rc), "{cap}: exit code");
}

#[rstest]
// Real: data at 0.6 s / 2.5 s is read (window ends ≈2.7 s); at 3 s, 4 s, 5 s the CLI has exited 42.
#[case("s_stdin_delay_0_6s_sjson", &["--skip-trust", "-o", "stream-json"], &[(150, &b"hi"[..])], 0)]
#[case("s_stdin_delay_2_5s_sjson", &["--skip-trust", "-o", "stream-json"], &[(650, &b"hi"[..])], 0)]
#[case("s_stdin_delay_5s_sjson", &["--skip-trust", "-o", "stream-json"], &[(2000, &b"hi"[..])], 42)]
#[case("s_stdin_delay_2_0s_sjson_py", &["--skip-trust", "-o", "stream-json"], &[(450, &b"hi"[..])], 0)]
#[case("s_stdin_delay_3_0s_sjson_py", &["--skip-trust", "-o", "stream-json"], &[(1200, &b"hi"[..])], 42)]
#[case("s_stdin_delay_4_0s_sjson_py", &["--skip-trust", "-o", "stream-json"], &[(1600, &b"hi"[..])], 42)]
#[case("s_stdin_delay_0_6s_with_p_sjson", &["-p", "x", "--skip-trust", "-o", "stream-json"], &[(150, &b"hi"[..])], 0)]
#[case("s_stdin_delay_4_0s_with_p_sjson", &["-p", "x", "--skip-trust", "-o", "stream-json"], &[(2000, &b"hi"[..])], 0)]
#[case("s_stdin_firstchunk_then_rest_after_4s_sjson", &["--skip-trust", "-o", "stream-json"], &[(0, &b"he"[..]), (1500, &b"llo"[..])], 0)]
fn stdin_timing(
    #[case] cap: &str,
    #[case] args: &[&str],
    #[case] chunks: &[(u64, &'static [u8])],
    #[case] rc: i32,
) {
    replay_timed(cap, args, chunks, rc);
}

#[rstest]
#[case("s_at_dir_sjson", &["-p", "list @./sub/", "-o", "stream-json", "--skip-trust"])]
#[case("s_at_exists_sjson", &["-p", "@./exists.txt summarize", "-o", "stream-json", "--skip-trust"])]
#[case("s_at_exists_json", &["-p", "@./exists.txt summarize", "-o", "json", "--skip-trust"])]
#[case("s_at_outside_sjson", &["-p", "summarize @/etc/hostname", "-o", "stream-json", "--skip-trust"])]
#[case("s_at_override_sjson", &["-p", "@Override public void x()", "-o", "stream-json", "--skip-trust"])]
#[case("s_at_two_sjson", &["-p", "compare @exists.txt and @sub/inner.txt", "-o", "stream-json", "--skip-trust"])]
#[case("s_slash_about_sjson", &["-p", "/about", "-o", "stream-json", "--skip-trust"])]
#[case("s_slash_nonexistent_sjson", &["-p", "/nonexistent", "-o", "stream-json", "--skip-trust"])]
fn at_references_and_slash_commands_are_sent_as_typed(#[case] cap: &str, #[case] args: &[&str]) {
    replay(cap, Env::Second, &[], "success", None, as_is, args, None, 0);
}

#[test]
fn stdin_only_prompt_in_text_mode() {
    replay(
        "s_stdin_only_text_stdoutpipe",
        Env::Second,
        &[],
        "success",
        None,
        as_is,
        &["--skip-trust"],
        Some(b"what is two plus two"),
        0,
    );
}

#[rstest]
#[case("s_json_toolcall_yolo", &["-p", "TOOLCALL please", "-o", "json", "--skip-trust", "--approval-mode", "yolo"])]
#[case("s_json_think_toolcall", &["-p", "THINK TOOLCALL please", "-o", "json", "--skip-trust"])]
fn tool_call_json_variants(#[case] cap: &str, #[case] args: &[&str]) {
    replay(
        cap,
        Env::Second,
        &[],
        "tool-call",
        None,
        as_is,
        args,
        None,
        0,
    );
}

#[test]
fn two_mib_of_stdin_is_sent() {
    let mut data = Vec::with_capacity(2 << 20);
    let mut n = 0;
    while data.len() < 2 << 20 {
        data.extend_from_slice(format!("{n:08} abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzAB\n").as_bytes());
        n += 1;
    }
    data.truncate(2 << 20);
    replay(
        "s_stdin_2MiB_sjson",
        Env::Second,
        &[],
        "success",
        None,
        as_is,
        &["--skip-trust", "-o", "stream-json"],
        Some(&data),
        0,
    );
}
