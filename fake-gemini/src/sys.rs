//! The process's own plain facilities, below everything else: writing to the inherited
//! stdout/stderr (a closed stdout ends the process with exit 0, as Node does), exiting at once,
//! its ids and launcher marker, and the environment helpers every stage reads.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Exits at once, without running destructors (stdout is unbuffered here, nothing is lost).
pub fn exit_now(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: _exit is always safe to call; it only ends the process.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// The env var naming the launcher's pid and the attempt number (`PID:N`) in the worker.
pub const LAUNCHER_ENV: &str = "FAKE_GEMINI_LAUNCHER";
/// `(launcher pid, attempt)` when this process is a relaunched worker.
pub fn launcher_info() -> Option<(u32, u32)> {
    let v = std::env::var(LAUNCHER_ENV).ok()?;
    let (pid, n) = v.split_once(':')?;
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// The process group id (Unix), else the pid.
pub fn pgid() -> u32 {
    #[cfg(unix)]
    // SAFETY: getpgrp cannot fail.
    unsafe {
        libc::getpgrp() as u32
    }
    #[cfg(not(unix))]
    std::process::id()
}

/// The parent pid (Unix), else 0.
pub fn ppid() -> u32 {
    #[cfg(unix)]
    // SAFETY: getppid cannot fail.
    unsafe {
        libc::getppid() as u32
    }
    #[cfg(not(unix))]
    0
}

/// Writes to stdout; a closed pipe ends the process with exit 0 and no output, as Node does.
pub fn out(bytes: &[u8]) {
    let mut o = std::io::stdout().lock();
    if o.write_all(bytes).and_then(|_| o.flush()).is_err() {
        exit_now(0);
    }
}

/// Writes to stderr; errors are ignored.
pub fn err(bytes: &[u8]) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(bytes);
    let _ = e.flush();
}

/// Writes one stderr line.
pub fn err_line(s: &str) {
    let mut b = Vec::with_capacity(s.len() + 1);
    b.extend_from_slice(s.as_bytes());
    b.push(b'\n');
    err(&b);
}

/// The user's home directory (HOME, else USERPROFILE).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Whether variable `name` is exactly `value`.
pub fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == value)
}

/// Variable `name` as a number of milliseconds.
pub fn env_ms(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Sleeps `ms` milliseconds (none for 0).
pub fn sleep_ms(ms: u64) {
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// How often [`wait_for_file`] looks for its file.
pub const FILE_POLL_MS: u64 = 10;

/// Waits until `path` exists (`until-file`), looking every [`FILE_POLL_MS`]; `pause(ms)` waits
/// between looks and returns false when the wait must end (the run was cancelled or the server
/// stops). Returns whether the file appeared. No path: returns at once.
pub fn wait_for_file(path: Option<&str>, mut pause: impl FnMut(u64) -> bool) -> bool {
    let Some(path) = path else { return true };
    let path = std::path::Path::new(path);
    while !path.exists() {
        if !pause(FILE_POLL_MS) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_for_a_file_ends_when_it_appears_or_when_told_to() {
        let dir = tempfile::tempdir().unwrap();
        let go = dir.path().join("go");
        let go_text = go.to_str().unwrap().to_owned();
        let mut looks = 0;
        let appeared = wait_for_file(Some(&go_text), |_| {
            looks += 1;
            if looks == 3 {
                std::fs::write(&go, "").unwrap();
            }
            true
        });
        assert!(appeared);
        assert_eq!(looks, 3, "it looks again until the file is there");
        let missing = dir.path().join("never").to_str().unwrap().to_owned();
        assert!(
            !wait_for_file(Some(&missing), |_| false),
            "a cancel ends the wait"
        );
        assert!(wait_for_file(None, |_| panic!("no file, no wait")));
    }
}
