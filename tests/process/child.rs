//! The integration-test binary doubles as the child program of the process tests: run with
//! `GEMINICLI_MCP_TEST_CHILD=<mode>` and the filter of [`child_program`], it behaves as the mode
//! says (a tree that ignores SIGTERM, a descendant that outlives it, floods…). Portable, no shell,
//! no dependence on a fixture still being written.
//!
//! libtest prints a `running 1 test` banner on stdout before the mode runs; modes end with
//! `std::process::exit`, so nothing follows.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use geminicli_mcp::gemini::process::RunSpec;

/// The variable selecting the mode.
pub const MODE_VAR: &str = "GEMINICLI_MCP_TEST_CHILD";

/// Argument list that makes the test binary run [`child_program`] alone.
fn harness_args() -> Vec<OsString> {
    [
        "process::child::child_program",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

fn this_binary() -> PathBuf {
    std::env::current_exe().expect("the test binary knows its path")
}

/// A [`RunSpec`] that runs this test binary as the child in `mode`, 1 MiB cap, 2 s grace.
pub fn spec(mode: &str) -> RunSpec {
    RunSpec {
        program: this_binary(),
        args: harness_args(),
        env_clear: false,
        env: vec![(MODE_VAR.into(), mode.into())],
        env_remove: Vec::new(),
        cwd: std::env::temp_dir(),
        stdin: Vec::new(),
        max_output_bytes: 1 << 20,
        kill_grace: Duration::from_secs(2),
        private_tmp: false,
    }
}

/// Parses a `pids A B` line printed by the tree modes.
#[cfg_attr(not(unix), allow(dead_code))]
pub fn parse_pids(line: &[u8]) -> Option<Vec<i32>> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = text.strip_prefix("pids ")?;
    rest.split(' ').map(|p| p.parse().ok()).collect()
}

/// Starts a descendant that sleeps forever and keeps this process's stdout open.
fn spawn_sleeper(setsid: bool) -> u32 {
    let mut command = Command::new(this_binary());
    command
        .args(harness_args())
        .env(MODE_VAR, "sleep")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::null());
    #[cfg(unix)]
    if setsid {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = setsid;
    command.spawn().expect("spawn the sleeper").id()
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes()).unwrap();
    out.write_all(b"\n").unwrap();
    out.flush().unwrap();
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The child program itself; does nothing unless [`MODE_VAR`] is set.
#[test]
#[ignore = "child program of the process tests, which run it with GEMINICLI_MCP_TEST_CHILD set"]
#[expect(
    clippy::too_many_lines,
    reason = "the child program's modes, one arm each, read by the process tests"
)]
fn child_program() {
    let Ok(mode) = std::env::var(MODE_VAR) else {
        return;
    };
    match mode.as_str() {
        "sleep" => sleep_forever(),
        "exit" => std::process::exit(0),
        // A short-lived daemon: own session, empty environment (so no run marker), no pipes.
        #[cfg(unix)]
        "setsid-daemon" => {
            use std::os::unix::process::CommandExt;
            let mut command = Command::new("/bin/sleep");
            command
                .arg("0.2")
                .env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: setsid is async-signal-safe.
            unsafe {
                command.pre_exec(|| {
                    libc::setsid();
                    Ok(())
                });
            }
            let daemon = command.spawn().expect("spawn the daemon").id();
            say(&format!("pids {} {daemon}", std::process::id()));
            std::process::exit(0)
        }
        "hang" => {
            say(&format!("pids {}", std::process::id()));
            sleep_forever()
        }
        // Leader and descendant both ignore SIGTERM (an ignored disposition survives exec): only
        // the kill after the grace ends them, as with the real CLI's launcher.
        "tree-ignore-sigterm" => {
            #[cfg(unix)]
            // SAFETY: setting a signal disposition to SIG_IGN.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            let descendant = spawn_sleeper(false);
            say(&format!("pids {} {descendant}", std::process::id()));
            sleep_forever()
        }
        // Exits at once, its descendant still holding stdout.
        "leave-descendant" => {
            let descendant = spawn_sleeper(false);
            say(&format!("pids {} {descendant}", std::process::id()));
            std::process::exit(0)
        }
        // As above, the descendant in its own session, out of the process group.
        "setsid-descendant" => {
            let descendant = spawn_sleeper(true);
            say(&format!("pids {} {descendant}", std::process::id()));
            std::process::exit(0)
        }
        // Numbered 9-byte lines on stderr, forever.
        "flood-stderr" => {
            let mut err = std::io::stderr().lock();
            for n in 0u64.. {
                if writeln!(err, "e{n:07}").is_err() {
                    std::process::exit(1);
                }
            }
            unreachable!()
        }
        // 64 KiB to each stream in turn, forever: each write blocks until that pipe is drained,
        // so a supervisor reading one stream at a time stalls the child for good.
        "flood-both" => {
            let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
            loop {
                if out.write_all(&[b'o'; 64 * 1024]).is_err()
                    || err.write_all(&[b'e'; 64 * 1024]).is_err()
                {
                    std::process::exit(1);
                }
            }
        }
        // 1 MiB on stderr before anything on stdout: a reader that drains stdout first would
        // wait forever for a child blocked on a full stderr pipe.
        "stderr-then-stdout" => {
            std::io::stderr().write_all(&[b'e'; 1 << 20]).unwrap();
            std::io::stdout().write_all(&[b'o'; 1 << 20]).unwrap();
            std::io::stdout().flush().unwrap();
            std::process::exit(0)
        }
        // Reports its temporary directory and the directory's mode, leaves a file in it.
        "tmpdir" | "tmpdir-hang" => {
            let dir = std::env::temp_dir();
            std::fs::write(dir.join("gemini-client-error-test.json"), b"{}").unwrap();
            #[cfg(unix)]
            let perm = {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777
            };
            #[cfg(not(unix))]
            let perm = 0o700;
            say(&format!("tmpdir {:o} {}", perm, dir.display()));
            if mode == "tmpdir-hang" {
                sleep_forever()
            }
            std::process::exit(0)
        }
        other => panic!("unknown child mode {other}"),
    }
}
