//! The process model and process faults: launcher + worker, signals, relaunch on 199, crash,
//! hangs, descendants that hold the pipes, and EPIPE. Unix only (signals and process groups).
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{alive, kill_spawned, log_records, Sandbox};

struct Run {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    log: std::path::PathBuf,
}

impl Run {
    /// Starts the fake in its own process group, stdin /dev/null, logging to the sandbox.
    fn start(sb: &mut Sandbox, args: &[&str]) -> Run {
        let log = sb.dir.path().join("log.jsonl");
        sb.set("FAKE_GEMINI_LOG", Some(log.to_str().unwrap()));
        let mut c = sb.cmd(args);
        let err = std::fs::File::create(sb.dir.path().join("stderr.txt")).unwrap();
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .process_group(0);
        let mut child = c.spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Run { child, out, log }
    }

    /// A headless run of `prompt` (`-p`) in a trusted folder.
    fn prompt(sb: &mut Sandbox, prompt: &str) -> Run {
        Run::start(sb, &["-p", prompt, "--skip-trust"])
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).unwrap();
        l
    }

    /// Reads the first answer chunk of text mode (`Hello`, no newline).
    fn hello(&mut self) {
        let mut b = [0u8; 5];
        self.out.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"Hello");
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.log.with_file_name("stderr.txt")).unwrap_or_default()
    }

    fn signal_group(&self, sig: i32) {
        // SAFETY: signalling the process group this test created.
        unsafe {
            libc::kill(-(self.child.id() as i32), sig);
        }
    }

    fn signal(&self, pid: u32, sig: i32) {
        // SAFETY: signalling a process this test started.
        unsafe {
            libc::kill(pid as i32, sig);
        }
    }

    /// Waits up to 10 s for the exit.
    fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "the fake did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn rest(&mut self) -> String {
        let mut s = String::new();
        self.out.read_to_string(&mut s).unwrap();
        s
    }

    fn worker_pid(&self) -> u32 {
        wait_for(|| {
            log_records(&self.log)
                .into_iter()
                .find(|r| r["event"] == "spawned" && r["kind"] == "worker")
                .and_then(|r| r["pid"].as_u64())
        }) as u32
    }

    fn kill_all(&mut self) {
        self.signal_group(libc::SIGKILL);
        kill_spawned(&self.log);
        let _ = self.child.wait();
    }
}

impl Drop for Run {
    /// A failed assertion must not leave the fake's tree behind holding the test's pipes.
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn wait_for<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sandbox() -> Sandbox {
    let mut sb = Sandbox::new("proc");
    sb.set("NO_COLOR", Some("1"));
    sb
}

#[test]
fn the_launcher_spawns_a_logged_worker_that_logs_its_launcher() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "hi");
    assert_eq!(r.rest(), "Hello there! How can I help?\n");
    assert!(r.wait().success());
    let recs = log_records(&r.log);
    let spawned = recs
        .iter()
        .find(|x| x["event"] == "spawned")
        .expect("spawned record");
    assert_eq!(spawned["by"], r.child.id());
    let inv = recs
        .iter()
        .find(|x| x["event"] == "invocation")
        .expect("invocation record");
    assert_eq!(inv["launcher_pid"], r.child.id());
    assert_eq!(inv["pid"], spawned["pid"]);
    assert!(
        inv["env"].get("FAKE_GEMINI_LAUNCHER").is_none(),
        "the launcher's marker is not logged"
    );
}

#[test]
fn no_relaunch_runs_a_single_process() {
    let mut sb = sandbox();
    sb.set("GEMINI_CLI_NO_RELAUNCH", Some("true"));
    let mut r = Run::prompt(&mut sb, "hi");
    r.rest();
    assert!(r.wait().success());
    let recs = log_records(&r.log);
    assert!(recs.iter().all(|x| x["event"] != "spawned"));
    assert_eq!(recs[0]["launcher_pid"], serde_json::Value::Null);
    assert_eq!(recs[0]["pid"], r.child.id());
}

#[test]
fn exit_199_makes_the_launcher_relaunch_the_worker() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:success relaunches=2]]");
    assert_eq!(r.rest(), "Hello there! How can I help?\n");
    assert!(r.wait().success());
    let workers = log_records(&r.log)
        .iter()
        .filter(|x| x["kind"] == "worker")
        .count();
    assert_eq!(workers, 3);
}

#[rstest::rstest]
#[case(libc::SIGTERM)]
#[case(libc::SIGINT)]
#[case(libc::SIGHUP)]
fn a_group_signal_ends_the_run_with_exit_0_and_no_result(#[case] sig: i32) {
    let mut sb = sandbox();
    let mut r = Run::start(
        &mut sb,
        &[
            "-p",
            "[[fake-gemini:hang-after-output]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
    );
    let mut seen = String::new();
    while !seen.contains("\"role\":\"assistant\"") {
        seen.push_str(&r.line());
    }
    r.signal_group(sig);
    let status = r.wait();
    assert_eq!(status.code(), Some(0));
    assert!(!r.rest().contains("\"type\":\"result\""));
}

#[test]
fn json_mode_prints_nothing_when_signalled() {
    let mut sb = sandbox();
    let mut r = Run::start(
        &mut sb,
        &["-p", "[[fake-gemini:hang]]", "-o", "json", "--skip-trust"],
    );
    let worker = r.worker_pid();
    wait_for(|| {
        log_records(&r.log)
            .iter()
            .any(|x| x["event"] == "invocation")
            .then_some(())
    });
    r.signal(worker, libc::SIGTERM);
    assert_eq!(r.wait().code(), Some(0));
    assert_eq!(r.rest(), crate::support::capture("sig_term_child.out"));
    assert_eq!(
        sb.mask(r.stderr().as_bytes()),
        crate::support::capture("sig_term_child.err")
    );
}

#[test]
fn the_launcher_ignores_sigterm_and_killing_it_orphans_the_worker() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:relaunch]]");
    r.hello();
    let worker = r.worker_pid();
    r.signal(r.child.id(), libc::SIGTERM);
    r.signal(r.child.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        r.child.try_wait().unwrap().is_none(),
        "the launcher survives SIGTERM/SIGINT"
    );
    r.signal(r.child.id(), libc::SIGKILL);
    let _ = r.child.wait();
    std::thread::sleep(Duration::from_millis(50));
    assert!(alive(worker as i32), "the orphaned worker keeps running");
    r.kill_all();
    wait_for(|| (!alive(worker as i32)).then_some(()));
}

#[test]
fn crash_kills_the_worker_by_a_signal() {
    let mut sb = sandbox();
    let mut r = Run::start(
        &mut sb,
        &[
            "-p",
            "[[fake-gemini:crash]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
    );
    let out = r.rest();
    assert!(out.contains("\"role\":\"assistant\"") && !out.contains("\"type\":\"result\""));
    assert_eq!(
        r.wait().code(),
        Some(1),
        "the launcher reports a signalled worker as 1"
    );

    sb.set("GEMINI_CLI_NO_RELAUNCH", Some("1"));
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:crash signal=6]]");
    r.rest();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(r.wait().signal(), Some(6));
}

#[test]
fn ignore_sigterm_needs_another_signal() {
    let mut sb = sandbox();
    sb.set("GEMINI_CLI_NO_RELAUNCH", Some("1"));
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:ignore-sigterm]]");
    r.hello();
    r.signal_group(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(200));
    assert!(r.child.try_wait().unwrap().is_none(), "SIGTERM is ignored");
    r.signal_group(libc::SIGINT);
    assert_eq!(r.wait().code(), Some(0));
}

#[test]
fn hang_writes_nothing_until_killed() {
    let mut sb = sandbox();
    let mut r = Run::start(
        &mut sb,
        &[
            "-p",
            "[[fake-gemini:hang]]",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
    );
    wait_for(|| {
        log_records(&r.log)
            .iter()
            .any(|x| x["event"] == "invocation")
            .then_some(())
    });
    assert!(r.child.try_wait().unwrap().is_none());
    r.signal_group(libc::SIGTERM);
    assert_eq!(r.wait().code(), Some(0));
    assert_eq!(r.rest(), "");
}

fn spawned_of(log: &std::path::Path, kind: &str) -> i32 {
    wait_for(|| {
        log_records(log)
            .into_iter()
            .find(|r| r["kind"] == kind)
            .and_then(|r| r["pid"].as_i64())
    }) as i32
}

#[test]
fn grandchild_holds_stdout_and_dies_with_the_group() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:grandchild-holds-stdout]]");
    r.hello();
    let gc = spawned_of(&r.log, "grandchild");
    assert!(alive(gc));
    // SAFETY: getpgid on a pid this test's fake spawned.
    assert_eq!(
        unsafe { libc::getpgid(gc) },
        r.child.id() as i32,
        "same process group"
    );
    r.signal_group(libc::SIGKILL);
    let _ = r.child.wait();
    wait_for(|| (!alive(gc)).then_some(()));
    assert_eq!(r.rest(), "", "EOF once the whole group is gone");
}

#[test]
fn an_exit_0_descendant_keeps_stdout_open_after_the_exit() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:exit-0-descendant-holds-stdout]]");
    assert_eq!(r.wait().code(), Some(0));
    let gc = spawned_of(&r.log, "grandchild");
    assert!(alive(gc), "the descendant outlives the exit");
    // SAFETY: killing the descendant this test's fake spawned.
    unsafe {
        libc::kill(gc, libc::SIGKILL);
    }
    assert_eq!(r.rest(), "Hello there! How can I help?\n");
}

#[test]
fn a_setsid_grandchild_escapes_the_group_kill() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:setsid-grandchild]]");
    r.hello();
    let gc = spawned_of(&r.log, "setsid-grandchild");
    wait_for(|| {
        // SAFETY: getsid on a pid this test's fake spawned.
        (unsafe { libc::getsid(gc) } == gc).then_some(())
    });
    r.signal_group(libc::SIGKILL);
    let _ = r.child.wait();
    std::thread::sleep(Duration::from_millis(50));
    assert!(alive(gc), "a new session is not reached by the group kill");
    kill_spawned(&r.log);
    wait_for(|| (!alive(gc)).then_some(()));
    r.rest();
}

#[test]
fn a_closed_stdout_ends_the_run_with_exit_0() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:flood-stdout bytes=100000000]]");
    let mut buf = [0u8; 1024];
    r.out.read_exact(&mut buf).unwrap();
    drop(std::mem::replace(
        &mut r.out,
        BufReader::new(unsafe_dummy_stdout()),
    ));
    assert_eq!(r.wait().code(), Some(0));
}

/// A stdout handle to swap in after closing the real one.
fn unsafe_dummy_stdout() -> std::process::ChildStdout {
    let mut c = std::process::Command::new("true");
    c.stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let _ = child.wait();
    out
}

#[test]
fn oauth_wait_waits_for_a_browser_until_killed() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:oauth-wait]]");
    wait_for(|| {
        r.stderr()
            .contains("Waiting for authentication...")
            .then_some(())
    });
    assert!(r.child.try_wait().unwrap().is_none());
    r.signal_group(libc::SIGTERM);
    assert_eq!(r.wait().code(), Some(0));
    assert_eq!(r.rest(), "");
}

#[test]
fn network_down_retries_on_stderr_with_stdout_silent() {
    let mut sb = sandbox();
    sb.set("FAKE_GEMINI_ATTEMPT_DELAY_MS", Some("5"));
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:network-down]]");
    wait_for(|| {
        r.stderr().contains("Attempt 3 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request").then_some(())
    });
    r.signal_group(libc::SIGTERM);
    assert_eq!(r.wait().code(), Some(0));
    assert_eq!(r.rest(), "");
}

/// `s_sig_*_group_json`: a signal to the group during a slow answer in json mode.
#[rstest::rstest]
#[case("s_sig_term_group_json", libc::SIGTERM)]
#[case("s_sig_int_group_json", libc::SIGINT)]
#[case("s_sig_hup_group_json", libc::SIGHUP)]
fn group_signals_in_json_mode_match_the_captures(#[case] cap: &str, #[case] sig: i32) {
    let mut sb = sandbox();
    sb.set("FAKE_GEMINI_SCENARIO", Some("hang-after-output"));
    let mut r = Run::start(
        &mut sb,
        &["-p", "SLOW please", "-o", "json", "--skip-trust"],
    );
    wait_for(|| {
        log_records(&r.log)
            .iter()
            .any(|x| x["event"] == "invocation")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(50));
    r.signal_group(sig);
    assert_eq!(r.wait().code(), Some(0), "{cap}");
    assert_eq!(r.rest(), crate::support::capture(&format!("{cap}.out")));
    assert_eq!(
        sb.mask(r.stderr().as_bytes()),
        crate::support::capture(&format!("{cap}.err"))
    );
}

/// The first-round `sig_*` captures and `s_sig_term_group_sjson`: a slow `tickN ` stream signalled
/// after a known number of deltas (the stall stands in for the 500 ms cadence).
#[rstest::rstest]
#[case("sig_int_group", &["-m", "gemini-2.5-flash", "-o", "stream-json"], 7, libc::SIGINT, false)]
#[case("sig_term_group", &["-m", "gemini-2.5-flash", "-o", "stream-json"], 8, libc::SIGTERM, false)]
#[case("sig_int_group_text", &["-m", "gemini-2.5-flash"], 8, libc::SIGINT, false)]
#[case("s_sig_term_group_sjson", &["-o", "stream-json"], 6, libc::SIGTERM, true)]
fn signalled_streams_match_the_captures(
    #[case] cap: &str,
    #[case] extra: &[&str],
    #[case] after: u32,
    #[case] sig: i32,
    #[case] no_color: bool,
) {
    let mut sb = Sandbox::new("proc");
    if no_color {
        sb.set("NO_COLOR", Some("1"));
    }
    let mut s = crate::support::mock("trickle");
    fake_gemini::scenario::apply_params(
        "trickle",
        &mut s,
        &[
            ("count".into(), "60".into()),
            ("interval-ms".into(), "0".into()),
            ("after".into(), after.to_string()),
        ],
    )
    .unwrap();
    sb.use_scenario(&s);
    let mut args = vec!["-p", "SLOW please", "--skip-trust"];
    args.extend_from_slice(extra);
    let mut r = Run::start(&mut sb, &args);
    wait_for(|| {
        log_records(&r.log)
            .iter()
            .any(|x| x["event"] == "invocation")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(100));
    r.signal_group(sig);
    assert_eq!(r.wait().code(), Some(0), "{cap}");
    assert_eq!(
        sb.mask(r.rest().as_bytes()),
        crate::support::capture(&format!("{cap}.out")),
        "{cap}: stdout"
    );
    assert_eq!(
        sb.mask(r.stderr().as_bytes()),
        crate::support::capture(&format!("{cap}.err")),
        "{cap}: stderr"
    );
}

#[rstest::rstest]
#[case("sig_term_launcher", libc::SIGTERM)]
#[case("sig_int_launcher", libc::SIGINT)]
fn a_signal_to_the_launcher_alone_is_ignored_like_the_captures(
    #[case] cap: &str,
    #[case] sig: i32,
) {
    let mut sb = Sandbox::new("proc");
    let mut s = crate::support::mock("trickle");
    fake_gemini::scenario::apply_params(
        "trickle",
        &mut s,
        &[
            ("count".into(), "60".into()),
            ("interval-ms".into(), "0".into()),
            ("after".into(), "57".into()),
        ],
    )
    .unwrap();
    sb.use_scenario(&s);
    let mut r = Run::start(
        &mut sb,
        &[
            "-m",
            "gemini-2.5-flash",
            "-p",
            "SLOW please",
            "-o",
            "stream-json",
            "--skip-trust",
        ],
    );
    wait_for(|| {
        log_records(&r.log)
            .iter()
            .any(|x| x["event"] == "invocation")
            .then_some(())
    });
    r.signal(r.child.id(), sig);
    std::thread::sleep(Duration::from_millis(150));
    assert!(
        r.child.try_wait().unwrap().is_none(),
        "{cap}: the launcher ignores it"
    );
    r.signal_group(libc::SIGKILL);
    let _ = r.child.wait();
    assert_eq!(
        sb.mask(r.rest().as_bytes()),
        crate::support::capture(&format!("{cap}.out")),
        "{cap}: stdout"
    );
    assert_eq!(
        sb.mask(r.stderr().as_bytes()),
        crate::support::capture(&format!("{cap}.err")),
        "{cap}: stderr"
    );
}

#[test]
fn hang_after_output_can_stall_later() {
    let mut sb = sandbox();
    let mut r = Run::prompt(&mut sb, "[[fake-gemini:hang-after-output after=2]]");
    let mut b = [0u8; 28];
    r.out.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"Hello there! How can I help?");
    r.signal_group(libc::SIGTERM);
    assert_eq!(r.wait().code(), Some(0));
    assert_eq!(r.rest(), "", "no trailing newline after a signal");
}
