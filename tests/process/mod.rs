//! Process supervision (`geminicli_mcp::gemini::process`): output kept under caps without
//! deadlock, stdin delivered, whole-tree termination on cancel, cap, drop and exit, spawn errors,
//! the private temporary directory.

mod child;

use std::time::Duration;

use geminicli_mcp::gemini::process::{
    run, KillReason, RunOutput, RunSpec, SpawnError, Stream, Termination,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A spec for `program` found on PATH, with a 1 MiB cap and a 2 s grace.
#[cfg(unix)]
fn command(program: &str, args: &[&str]) -> RunSpec {
    RunSpec {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        env_clear: false,
        env: vec![("LC_ALL".into(), "C".into())],
        env_remove: Vec::new(),
        cwd: std::env::temp_dir(),
        stdin: Vec::new(),
        max_output_bytes: 1 << 20,
        kill_grace: Duration::from_secs(2),
        private_tmp: false,
    }
}

/// Runs `spec` to its end without cancellation.
async fn run_to_end(spec: RunSpec) -> RunOutput {
    run(spec, CancellationToken::new(), None)
        .await
        .expect("spawned")
}

/// A run in the background whose lines (tagged with their stream) the test reads as they come.
struct Background {
    task: tokio::task::JoinHandle<Result<RunOutput, SpawnError>>,
    lines: mpsc::UnboundedReceiver<(Stream, Vec<u8>)>,
    cancel: CancellationToken,
}

impl Background {
    fn start(spec: RunSpec) -> Self {
        let (tx, lines) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let forward: geminicli_mcp::gemini::process::LineFn =
            std::sync::Arc::new(move |stream, line| {
                let _ = tx.send((stream, line.to_vec()));
            });
        let task = tokio::spawn(run(spec, cancel.clone(), Some(forward)));
        Background {
            task,
            lines,
            cancel,
        }
    }

    /// The pids the child reports on its `pids …` line.
    #[cfg_attr(not(unix), allow(dead_code))]
    async fn pids(&mut self) -> Vec<i32> {
        while let Some((stream, line)) = self.lines.recv().await {
            if stream != Stream::Stdout {
                continue;
            }
            if let Some(pids) = child::parse_pids(&line) {
                return pids;
            }
        }
        panic!("the child ended without reporting its pids");
    }

    /// The `tmpdir MODE PATH` line of the tmpdir modes.
    async fn tmpdir(&mut self) -> (String, std::path::PathBuf) {
        while let Some((stream, line)) = self.lines.recv().await {
            if stream != Stream::Stdout {
                continue;
            }
            let line = String::from_utf8(line).unwrap();
            if let Some(rest) = line.strip_prefix("tmpdir ") {
                let (mode, path) = rest.split_once(' ').unwrap();
                return (mode.to_owned(), path.into());
            }
        }
        panic!("the child ended without reporting its temporary directory");
    }
}

/// Whether `pid` is dead: gone, or a zombie waiting for a reaper that is not us (init).
#[cfg(unix)]
fn dead(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } == -1 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Waits (bounded) for every pid to be dead; the processes were killed, init may reap them
/// a moment later.
#[cfg(unix)]
async fn all_dead(pids: &[i32]) -> bool {
    for _ in 0..1000 {
        if pids.iter().all(|&p| dead(p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[cfg(unix)]
#[tokio::test]
async fn normal_exit_keeps_both_streams_and_the_code() {
    let out = run_to_end(command("ls", &["-d", "/", "/nonexistent-geminicli-mcp"])).await;
    assert_eq!(out.status, Some(Termination::Exited(2)));
    assert_eq!(out.killed, None);
    assert_eq!(out.stdout, b"/\n");
    assert_eq!(out.stdout_total, 2);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("/nonexistent-geminicli-mcp"), "{stderr}");
    assert_eq!(out.stderr_total, stderr.len() as u64);
}

#[cfg(unix)]
#[tokio::test]
async fn stdin_is_delivered_exactly_and_lines_add_up() {
    let mut spec = command("cat", &[]);
    // 1 MiB of varied bytes in lines of varied length, the last one unterminated.
    let mut input = Vec::with_capacity(1 << 20);
    let mut n: u32 = 1;
    while input.len() < (1 << 20) {
        n = n.wrapping_mul(1_103_515_245).wrapping_add(12345);
        input.push(if n.is_multiple_of(97) {
            b'\n'
        } else {
            (n >> 16) as u8 | 1
        });
    }
    input.truncate(1 << 20);
    *input.last_mut().unwrap() = b'x';
    spec.stdin = input.clone();
    spec.max_output_bytes = 2 << 20;

    let mut bg = Background::start(spec);
    let out = bg.finish_collecting().await;
    assert_eq!(out.0.status, Some(Termination::Exited(0)));
    assert_eq!(out.0.killed, None);
    assert!(out.0.stdout == input, "stdout differs from stdin");
    assert_eq!(out.1.join(&b'\n'), input, "lines joined by \\n are stdout");
}

#[cfg(unix)]
#[tokio::test]
async fn stderr_lines_are_forwarded_tagged() {
    // A shell as the test's child only, for one line on each stream in a known order.
    let spec = command(
        "sh",
        &["-c", "echo out1; echo 'Attempt 1 failed' >&2; echo out2"],
    );
    let mut bg = Background::start(spec);
    let (out, lines) = bg.finish_collecting_all().await;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    let stdout: Vec<_> = lines
        .iter()
        .filter(|(s, _)| *s == Stream::Stdout)
        .map(|(_, l)| l.as_slice())
        .collect();
    let stderr: Vec<_> = lines
        .iter()
        .filter(|(s, _)| *s == Stream::Stderr)
        .map(|(_, l)| l.as_slice())
        .collect();
    assert_eq!(stdout, [b"out1".as_slice(), b"out2".as_slice()]);
    assert_eq!(stderr, [b"Attempt 1 failed".as_slice()]);
}

impl Background {
    /// Ends the run and returns it with every stdout line it forwarded.
    async fn finish_collecting(&mut self) -> (RunOutput, Vec<Vec<u8>>) {
        let (out, mut lines) = self.finish_collecting_all().await;
        lines.retain(|(stream, _)| *stream == Stream::Stdout);
        (out, lines.into_iter().map(|(_, line)| line).collect())
    }

    /// Ends the run and returns it with every line it forwarded, from both streams.
    async fn finish_collecting_all(&mut self) -> (RunOutput, Vec<(Stream, Vec<u8>)>) {
        let out = (&mut self.task).await.unwrap().expect("spawned");
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.try_recv() {
            lines.push(line);
        }
        (out, lines)
    }
}

#[cfg(unix)]
#[tokio::test]
async fn stdout_cap_kills_the_tree_and_keeps_the_head() {
    let mut spec = command("yes", &[]);
    spec.max_output_bytes = 100_001;
    let out = run_to_end(spec).await;
    assert_eq!(out.killed, Some(KillReason::OutputLimit(Stream::Stdout)));
    assert_eq!(out.status, Some(Termination::Signaled(libc::SIGKILL)));
    assert_eq!(out.stdout.len(), 100_001);
    assert!(out.stdout_total > 100_001);
    assert!(out.stdout.chunks(2).all(|c| c == b"y\n" || c == b"y"));
}

#[tokio::test]
async fn stderr_cap_kills_the_tree_and_keeps_the_tail() {
    let mut spec = child::spec("flood-stderr");
    spec.max_output_bytes = 90_000;
    let out = run_to_end(spec).await;
    assert_eq!(out.killed, Some(KillReason::OutputLimit(Stream::Stderr)));
    assert_eq!(out.stderr.len(), 90_000);
    assert!(out.stderr_total > 90_000);
    // The tail: consecutive numbered lines, none of the first ones, up to the last one written
    // in full (the kill may cut a line anywhere, the writes being unbuffered).
    let text = String::from_utf8(out.stderr).unwrap();
    let numbers: Vec<u64> = text
        .split_inclusive('\n')
        .filter(|l| l.len() == 9 && l.starts_with('e') && l.ends_with('\n'))
        .map(|l| l[1..8].parse().unwrap())
        .collect();
    assert!(numbers.len() > 9000);
    assert!(numbers[0] > 0, "the head was kept, not the tail");
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
    assert_eq!(*numbers.last().unwrap() + 1, out.stderr_total / 9);
}

#[tokio::test]
async fn both_streams_flooding_end_at_a_cap() {
    let mut spec = child::spec("flood-both");
    spec.max_output_bytes = 256 * 1024;
    let out = run_to_end(spec).await;
    assert!(
        matches!(out.killed, Some(KillReason::OutputLimit(_))),
        "{:?}",
        out.killed
    );
    assert!(out.stdout_total > 0 && out.stderr_total > 0);
    assert!(out.stdout.len() <= 256 * 1024 && out.stderr.len() <= 256 * 1024);
}

#[tokio::test]
async fn both_streams_are_drained_concurrently() {
    let mut spec = child::spec("stderr-then-stdout");
    spec.max_output_bytes = 4 << 20;
    let out = run_to_end(spec).await;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert_eq!(out.killed, None);
    assert!(out.stderr == vec![b'e'; 1 << 20]);
    assert!(out.stdout.ends_with(&vec![b'o'; 1 << 20]));
}

#[cfg(unix)]
#[tokio::test]
async fn cancel_is_a_polite_signal_first() {
    let mut bg = Background::start(command("sleep", &["1000"]));
    // Nothing to wait for on stdout: give the child a moment to exist, then cancel.
    tokio::time::sleep(Duration::from_millis(50)).await;
    bg.cancel.cancel();
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.killed, Some(KillReason::Cancelled));
    assert_eq!(out.status, Some(Termination::Signaled(libc::SIGTERM)));
}

#[cfg(unix)]
#[tokio::test]
async fn cancel_kills_a_tree_that_ignores_sigterm() {
    let mut spec = child::spec("tree-ignore-sigterm");
    spec.kill_grace = Duration::from_millis(200);
    let mut bg = Background::start(spec);
    let pids = bg.pids().await;
    bg.cancel.cancel();
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.killed, Some(KillReason::Cancelled));
    assert_eq!(out.status, Some(Termination::Signaled(libc::SIGKILL)));
    assert!(all_dead(&pids).await, "left behind: {pids:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn dropping_the_run_kills_the_tree() {
    let mut bg = Background::start(child::spec("tree-ignore-sigterm"));
    let pids = bg.pids().await;
    bg.task.abort();
    assert!(bg.task.await.unwrap_err().is_cancelled());
    assert!(all_dead(&pids).await, "left behind: {pids:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_descendant_holding_stdout_does_not_hang_the_run() {
    let mut bg = Background::start(child::spec("leave-descendant"));
    let pids = bg.pids().await;
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert_eq!(out.killed, None);
    assert!(all_dead(&pids).await, "left behind: {pids:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_setsid_descendant_is_swept() {
    geminicli_mcp::gemini::process::init_subreaper().unwrap();
    let mut bg = Background::start(child::spec("setsid-descendant"));
    let pids = bg.pids().await;
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert_eq!(out.killed, None);
    // Killed and reaped by the sweep before `run` returned: not even a zombie.
    let descendant = pids[1];
    // SAFETY: signal 0 only checks for existence.
    let exists = unsafe { libc::kill(descendant, 0) } == 0;
    assert!(!exists, "descendant {descendant} survived the sweep");
}

/// A daemon that left its run's session and environment (no marker), outlived the run and then
/// exited by itself becomes the server's zombie (we are its subreaper): the next run's sweep
/// reaps it, since a dead child in another session cannot be one Tokio waits for.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_stray_zombie_is_reaped_by_a_later_sweep() {
    geminicli_mcp::gemini::process::init_subreaper().unwrap();
    let mut bg = Background::start(child::spec("setsid-daemon"));
    let daemon = bg.pids().await[1];
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    let zombie_of_ours = || {
        std::fs::read_to_string(format!("/proc/{daemon}/stat")).is_ok_and(|s| {
            let fields: Vec<&str> = s[s.rfind(')').unwrap() + 1..].split_whitespace().collect();
            fields[0] == "Z" && fields[1] == std::process::id().to_string()
        })
    };
    let mut waited = 0;
    while !zombie_of_ours() {
        assert!(waited < 1000, "daemon {daemon} never became our zombie");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    let out = run_to_end(child::spec("exit")).await;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    // SAFETY: signal 0 only checks for existence.
    let exists = unsafe { libc::kill(daemon, 0) } == 0;
    assert!(!exists, "zombie {daemon} was not reaped");
}

/// A path that does not exist: in a fresh directory of the test's own, not a fixed name in the
/// shared temporary directory, where any user could make it a program or a directory.
fn missing(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    assert!(!path.exists(), "{}", path.display());
    path
}

#[tokio::test]
async fn a_missing_program_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = child::spec("sleep");
    spec.program = missing(&dir, "no-such-program");
    let err = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotFound(_)), "{err:?}");
}

/// A single argument past Linux's 128 KiB per-string limit would fail the spawn with E2BIG: it is
/// refused before the spawn as too long (the caller's input), not reported as "not found".
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_argument_list_too_long_is_refused_before_the_spawn() {
    let mut spec = child::spec("sleep");
    spec.args.push("x".repeat(200 * 1024).into());
    let err = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(err, SpawnError::TooLong(_)), "{err:?}");
}

/// A missing working directory also makes the OS say "not found"; it must not read as a
/// missing CLI (127).
#[tokio::test]
async fn a_missing_working_directory_is_not_a_missing_program() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = child::spec("sleep");
    spec.cwd = missing(&dir, "no-such-directory");
    let err = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(err, SpawnError::Other(_)), "{err:?}");
}

/// A call cancelled before its run starts spawns nothing (the missing program would otherwise
/// fail the spawn).
#[tokio::test]
async fn a_run_cancelled_before_it_starts_spawns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = child::spec("sleep");
    spec.program = missing(&dir, "no-such-program");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = run(spec, cancel, None).await.expect("nothing spawned");
    assert_eq!(out.killed, Some(KillReason::Cancelled));
    assert_eq!(out.status, None);
}

#[cfg(unix)]
#[tokio::test]
async fn a_file_without_execute_permission_is_not_executable() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("gemini");
    std::fs::write(&program, b"#!/bin/sh\n").unwrap();
    let mut spec = child::spec("sleep");
    spec.program = program;
    let err = run(spec, CancellationToken::new(), None).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotExecutable(_)), "{err:?}");
}

#[tokio::test]
async fn the_private_tmpdir_is_private_and_removed() {
    let mut spec = child::spec("tmpdir");
    spec.private_tmp = true;
    let mut bg = Background::start(spec);
    let (mode, path) = bg.tmpdir().await;
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert_eq!(mode, "700");
    assert_ne!(path, std::env::temp_dir());
    assert!(geminicli_mcp::gemini::process::wait_removed(
        Duration::from_secs(30)
    ));
    assert!(!path.exists(), "{} was left behind", path.display());
}

#[tokio::test]
async fn the_private_tmpdir_is_removed_after_a_cancel() {
    let mut spec = child::spec("tmpdir-hang");
    spec.private_tmp = true;
    spec.kill_grace = Duration::from_millis(100);
    let mut bg = Background::start(spec);
    let (_, path) = bg.tmpdir().await;
    assert!(path.exists());
    bg.cancel.cancel();
    let out = bg.finish_collecting().await.0;
    assert_eq!(out.killed, Some(KillReason::Cancelled));
    assert!(geminicli_mcp::gemini::process::wait_removed(
        Duration::from_secs(30)
    ));
    assert!(!path.exists(), "{} was left behind", path.display());
}

/// The parent-death signal: when the thread that spawned the child exits with the run still in
/// flight (here: its runtime forgotten, so nothing is dropped and no kill comes from us), the
/// kernel kills the child. The same path covers a server killed by SIGKILL.
#[cfg(target_os = "linux")]
#[test]
fn the_child_dies_with_the_thread_that_spawned_it() {
    let leader = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (bg, pids) = runtime.block_on(async {
            let mut bg = Background::start(child::spec("hang"));
            let pids = bg.pids().await;
            (bg, pids)
        });
        std::mem::forget(bg);
        std::mem::forget(runtime);
        pids[0]
    })
    .join()
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(
        runtime.block_on(all_dead(&[leader])),
        "child {leader} outlived its spawning thread"
    );
}

/// A run outlives the runtime's idle blocking threads (Tokio lets one go after 10 s idle, this
/// runtime after 100 ms): spawning happens on the runtime's long-lived threads, so the
/// parent-death signal does not fire mid-run.
#[cfg(unix)]
#[test]
fn a_run_outlives_the_runtimes_idle_blocking_threads() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(Duration::from_millis(100))
        .enable_all()
        .build()
        .unwrap();
    let out = runtime.block_on(run_to_end(command("sleep", &["2"])));
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert_eq!(out.killed, None);
}

/// The real CLI's shape, from fake-gemini left to relaunch itself: a launcher that ignores
/// SIGTERM and a worker that exits 0 on it. The polite signal goes to the whole group, so the
/// worker ends cleanly and the launcher follows with its code, well before the kill.
#[cfg(unix)]
#[tokio::test]
async fn cancel_reaches_the_relaunched_worker_through_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fake-gemini.jsonl");
    let spec = RunSpec {
        program: gemini_mcp_conformance::bins::locate("fake-gemini"),
        args: vec!["--skip-trust".into()],
        env_clear: false,
        env: vec![
            ("FAKE_GEMINI_SCENARIO".into(), "hang".into()),
            ("FAKE_GEMINI_LOG".into(), log.clone().into()),
            ("FAKE_GEMINI_STATE".into(), dir.path().join("state").into()),
        ],
        env_remove: vec!["GEMINI_CLI_NO_RELAUNCH".into()],
        cwd: dir.path().to_owned(),
        stdin: b"hello".to_vec(),
        max_output_bytes: 1 << 20,
        // Long enough that a worker missed by the polite signal shows up as a SIGKILL status.
        kill_grace: Duration::from_secs(10),
        private_tmp: false,
    };
    let bg = Background::start(spec);
    let invocation = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let record = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|r| r["event"] == "invocation");
        if let Some(record) = record {
            break record;
        }
        assert!(!bg.task.is_finished(), "fake-gemini ended early");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let worker = invocation["pid"].as_i64().unwrap() as i32;
    let launcher = invocation["ppid"].as_i64().unwrap() as i32;
    assert_ne!(worker, launcher, "fake-gemini did not relaunch itself");
    bg.cancel.cancel();
    let out = bg.task.await.unwrap().unwrap();
    assert_eq!(out.killed, Some(KillReason::Cancelled));
    assert_eq!(out.status, Some(Termination::Exited(0)));
    assert!(all_dead(&[launcher, worker]).await);
}
