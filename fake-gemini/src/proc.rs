//! The process model: the launcher that relaunches the worker and ignores SIGINT/SIGTERM/SIGHUP,
//! the worker's graceful exit 0 on those signals, descendants that hold the inherited pipes, and
//! dying by a signal. Unix specifics sit behind `cfg(unix)`; Windows gets thin equivalents.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::sys::{exit_now, LAUNCHER_ENV};

/// The env var that turns a spawned copy of the binary into a descendant holding the pipes (`MS[:setsid]`).
pub const HOLDER_ENV: &str = "FAKE_GEMINI_HOLDER";
/// The worker's "please relaunch me" exit code.
pub const RELAUNCH_EXIT_CODE: i32 = 199;

#[cfg(unix)]
extern "C" fn graceful(_sig: libc::c_int) {
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(0) }
}

#[cfg(unix)]
extern "C" fn ignore(_sig: libc::c_int) {}

#[cfg(unix)]
fn install(sig: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: installing a handler that only calls async-signal-safe functions (or nothing).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// The worker's cleanup handlers: SIGINT/SIGTERM/SIGHUP end it with exit 0 and no further output.
pub fn worker_signals(ignore_sigterm: bool) {
    #[cfg(unix)]
    {
        let g = graceful as extern "C" fn(libc::c_int) as libc::sighandler_t;
        install(libc::SIGINT, g);
        install(libc::SIGHUP, g);
        install(
            libc::SIGTERM,
            if ignore_sigterm { libc::SIG_IGN } else { g },
        );
    }
    #[cfg(not(unix))]
    let _ = ignore_sigterm;
}

/// The launcher's no-op handlers (not SIG_IGN, so the worker starts with default dispositions).
fn launcher_signals() {
    #[cfg(unix)]
    {
        let h = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
        install(libc::SIGINT, h);
        install(libc::SIGTERM, h);
        install(libc::SIGHUP, h);
    }
}

/// Whether this process should act as the launcher.
pub fn should_relaunch() -> bool {
    std::env::var_os("GEMINI_CLI_NO_RELAUNCH").is_none()
        && std::env::var_os("SANDBOX").is_none()
        && std::env::var_os(LAUNCHER_ENV).is_none()
}

/// The launcher: spawn the worker with the same argv and inherited stdio, wait, relaunch on 199,
/// exit with the worker's code (1 when it died by a signal, as Node's `code ?? 1`).
pub fn launcher(argv: &[String]) -> ! {
    crate::log::check();
    launcher_signals();
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            crate::sys::err_line(&format!("Error: Failed to start child process: {e}"));
            exit_now(1);
        }
    };
    let me = std::process::id();
    let mut attempt = 0u32;
    loop {
        let child = Command::new(&exe)
            .args(argv)
            .env(LAUNCHER_ENV, format!("{me}:{attempt}"))
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                crate::sys::err_line(&format!("Error: Failed to start child process: {e}"));
                exit_now(1);
            }
        };
        crate::log::spawned(child.id(), me, "worker");
        let status = loop {
            match child.wait() {
                Ok(s) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => exit_now(1),
            }
        };
        let code = status.code().unwrap_or(1);
        if code != RELAUNCH_EXIT_CODE {
            exit_now(code);
        }
        attempt += 1;
    }
}

/// Sleeps until a signal ends the process.
pub fn hang() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Dies by `signal` (Unix); elsewhere aborts.
pub fn die_by_signal(signal: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: resetting to the default disposition and raising are plain syscalls.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    let _ = signal;
    std::process::abort()
}

/// Spawns a copy of this binary that holds the inherited stdout/stderr for `hold_ms`
/// (in a new session when `setsid`), logs it, and returns its pid.
pub fn spawn_holder(hold_ms: u64, setsid: bool) -> std::io::Result<u32> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.env(
        HOLDER_ENV,
        format!("{hold_ms}{}", if setsid { ":setsid" } else { "" }),
    )
    .env_remove(LAUNCHER_ENV)
    .stdin(Stdio::null());
    #[cfg(windows)]
    if setsid {
        use std::os::windows::process::CommandExt;
        // CREATE_NEW_PROCESS_GROUP: the nearest Windows analogue of a new session.
        cmd.creation_flags(0x0000_0200);
    }
    let child = cmd.spawn()?;
    let pid = child.id();
    crate::log::spawned(
        pid,
        std::process::id(),
        if setsid {
            "setsid-grandchild"
        } else {
            "grandchild"
        },
    );
    // The child is deliberately not waited for: it must outlive this process.
    std::mem::forget(child);
    Ok(pid)
}

/// Runs the holder role when this process was spawned as one; returns otherwise.
pub fn holder_role() {
    let Some(v) = std::env::var_os(HOLDER_ENV) else {
        return;
    };
    let v = v.to_string_lossy().into_owned();
    let (ms, setsid) = match v.split_once(':') {
        Some((ms, _)) => (ms.to_string(), true),
        None => (v.clone(), false),
    };
    #[cfg(unix)]
    if setsid {
        // SAFETY: setsid has no memory-safety preconditions.
        unsafe {
            libc::setsid();
        }
    }
    let _ = setsid;
    std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(600_000)));
    exit_now(0);
}
