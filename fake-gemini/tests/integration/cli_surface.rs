//! The command line as yargs parses it, beyond the captured cases: value forms, arrays, `--`,
//! help/version precedence, version gating, and what fake-gemini does not emulate (exit 99).

use rstest::rstest;
use serde_json::Value;

use crate::support::Sandbox;

fn user_message(sb: &Sandbox, args: &[&str]) -> String {
    let mut a = vec!["-o", "stream-json", "--skip-trust"];
    a.extend_from_slice(args);
    let o = sb.run(&a, None);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let v: Value = serde_json::from_str(&line).unwrap();
    v["content"].as_str().unwrap().to_string()
}

#[rstest]
#[case(&["--prompt=a b"], "a b")]
#[case(&["-p=joined"], "joined")]
#[case(&["-p/x"], "/x")]
#[case(&["--allowed-tools", "read_file", "after", "an", "array"], "after an array")]
#[case(&["--include-directories", ".", "hi"], "hi")]
#[case(&["--", "-p", "x"], "-p x")]
#[case(&["two", "words"], "two words")]
#[case(&["--include-directories", ".", "--", "after"], "after")]
fn prompt_forms(#[case] args: &[&str], #[case] prompt: &str) {
    assert_eq!(user_message(&Sandbox::new("cli"), args), prompt);
}

#[test]
fn help_and_version_win_over_other_errors() {
    let sb = Sandbox::new("cli");
    let o = sb.run(&["--bogus", "--version"], None);
    assert_eq!((o.status.code(), o.stdout), (Some(0), b"0.61.0\n".to_vec()));
    let o = sb.run(&["-o", "xml", "-h"], None);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.starts_with(b"Usage: gemini [options] [command]"));
}

#[rstest]
#[case(&["-x"], "Unknown argument: x")]
#[case(&["--bogus=1", "--other"], "Unknown arguments: bogus, other")]
// A short group: `-p -j -o -i -n -e -d` (yargs), not `-p joined`.
#[case(&["-pjoined"], "Unknown arguments: j, n")]
#[case(&["-p", "x", "--include-directories"], "Not enough arguments following: include-directories")]
#[case(&["--approval-mode", "always"], "Invalid values:\n  Argument: approval-mode, Given: \"always\", Choices: \"default\", \"auto_edit\", \"yolo\", \"plan\"")]
fn argument_errors_print_usage_and_exit_1(#[case] args: &[&str], #[case] first: &str) {
    let o = Sandbox::new("cli").run(args, None);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.starts_with(&format!("{first}\nUsage: gemini")), "{e}");
}

#[rstest]
#[case("0.40.0", &["--session-id", "x"], Some("Unknown arguments: session-id, sessionId"))]
#[case("0.40.0", &["--skip-trust"], None)]
#[case("0.39.0", &["--skip-trust"], Some("Unknown arguments: skip-trust, skipTrust"))]
// 0.39.0 has --acp (observed); older versions are assumed not to.
#[case("0.38.9", &["--acp"], Some("Unknown argument: acp"))]
fn version_table(#[case] v: &str, #[case] args: &[&str], #[case] err: Option<&str>) {
    let mut sb = Sandbox::new("cli");
    sb.set("FAKE_GEMINI_VERSION", Some(v));
    let mut a = args.to_vec();
    a.extend_from_slice(&["-p", "x"]);
    let o = sb.run(&a, None);
    match err {
        Some(e) => {
            assert_eq!(o.status.code(), Some(1));
            assert!(String::from_utf8_lossy(&o.stderr).starts_with(e));
        }
        None => assert_ne!(o.status.code(), Some(1)),
    }
}

#[rstest]
#[case(&["mcp", "list"], "fake-gemini: the `mcp` command is not emulated")]
#[case(&["-i", "hi"], "fake-gemini: interactive mode is not emulated")]
fn what_is_not_emulated_exits_99(#[case] args: &[&str], #[case] msg: &str) {
    let o = Sandbox::new("cli").run(args, None);
    assert_eq!(o.status.code(), Some(99));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with(msg));
}

#[test]
fn stdin_and_prompt_are_joined_by_a_blank_line() {
    let sb = Sandbox::new("cli");
    let o = sb.run(
        &["-p", "P", "-o", "stream-json", "--skip-trust"],
        Some(b"S"),
    );
    let line = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(line.contains(r#""content":"S\n\nP""#), "{line}");
}

#[test]
fn stdin_after_the_window_is_ignored() {
    let mut sb = Sandbox::new("cli");
    sb.set("FAKE_GEMINI_STDIN_WAIT_MS", Some("50"));
    let mut c = sb.cmd(&["-p", "P", "-o", "stream-json", "--skip-trust"]);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    let line = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(line.contains(r#""content":"P""#), "{line}");
}

#[test]
fn the_yolo_notice_is_printed_twice() {
    let o = Sandbox::new("cli").run(&["-y", "-p", "x"], None);
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        e.matches("YOLO mode is enabled. All tool calls will be automatically approved.")
            .count(),
        2
    );
}

#[test]
fn the_stdin_cap_counts_utf8_bytes_and_cuts_on_a_character_boundary() {
    let sb = Sandbox::new("cli");
    // 4,000,000 × "é" is 8,000,000 bytes: under the 8 MiB cap, no warning.
    let o = sb.run(
        &["--skip-trust", "-o", "json"],
        Some("é".repeat(4_000_000).as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("truncated"));
    // 2,800,000 × "€" (3 bytes each) is 8.4 MB: cut to 2,796,202 characters (8,388,606 bytes),
    // never inside a character, with the warning (observed on 0.61.0).
    let o = sb.run(
        &["--skip-trust", "-o", "stream-json"],
        Some("€".repeat(2_800_000).as_bytes()),
    );
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("Warning: stdin input truncated to 8388608 bytes."));
    let user: Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().nth(1).unwrap()).unwrap();
    assert_eq!(user["content"].as_str().unwrap().chars().count(), 2_796_202);
}
