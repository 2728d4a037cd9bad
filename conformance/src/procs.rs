//! Process checks: is any process of a run's tree still alive, and cleaning up after a target that
//! left some behind. Unix only (signal 0 plus, on Linux, a zombie check through `/proc`); other
//! systems report that the check cannot be made.

use std::time::{Duration, Instant};

/// Why process checks cannot run here, or `None` when they can.
pub fn unsupported_reason() -> Option<&'static str> {
    if cfg!(unix) {
        None
    } else {
        Some("process-tree checks need Unix (kill(pid, 0)); not checked on this OS")
    }
}

/// Whether `pid` is a live process (a zombie counts as gone: it runs nothing and holds no pipe).
#[cfg(unix)]
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    if r != 0 {
        // EPERM means it exists but is not ours: still a live process.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    }
    !is_zombie(pid)
}

/// Whether `pid` is a live process (unknowable here: reported as gone).
#[cfg(not(unix))]
pub fn alive(_pid: u32) -> bool {
    false
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    // /proc/PID/stat: "pid (comm) S …"; comm may hold spaces and parens, so split at the last ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.trim_start().starts_with('Z') || rest.trim_start().starts_with('X')
            })
            .unwrap_or(false),
        Err(_) => true,
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn is_zombie(_pid: u32) -> bool {
    false
}

/// Polls until none of `pids` is alive or `within` has passed; returns the pids still alive.
pub fn wait_gone(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Kills whatever of `pids` is still alive (the runner's cleanup, so one case's leftovers cannot
/// disturb the next or the test runner's leak detection).
pub fn kill_all(pids: &[u32]) {
    #[cfg(unix)]
    for &p in pids {
        if alive(p) {
            // SAFETY: plain syscall; the pid came from the fake's log of this very run.
            unsafe {
                libc::kill(p as libc::pid_t, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = pids;
}

/// A short description of a pid for failure messages (its command name where the OS tells).
pub fn describe(pid: u32) -> String {
    #[cfg(target_os = "linux")]
    if let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        return format!("{pid} ({})", comm.trim());
    }
    pid.to_string()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn sees_a_live_child_and_its_end() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        child.kill().unwrap();
        // Not yet reaped: a zombie, which counts as gone on Linux.
        if cfg!(target_os = "linux") {
            assert!(wait_gone(&[pid], Duration::from_secs(5)).is_empty());
        }
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}
