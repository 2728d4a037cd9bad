//! Process checks: is any process of a run's tree still alive, and cleaning up after a target that
//! left some behind. Unix only (signal 0 plus, on Linux, a zombie check through `/proc`); other
//! systems report that the check cannot be made.

use std::path::Path;
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

/// One row of the process table.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The process id.
    pub pid: u32,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its start time in clock ticks since boot.
    pub start: u64,
    /// Whether it has exited and waits to be reaped.
    pub zombie: bool,
}

/// Makes this process a child subreaper: orphans below it are re-parented to it rather than to
/// init. Linux only; elsewhere returns false.
pub fn set_child_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with an integer argument; changes only this process's own attribute.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Whether [`table`] can list the processes of this system (Linux's `/proc`).
pub fn process_table_readable() -> bool {
    cfg!(target_os = "linux") && Path::new("/proc/self/stat").exists()
}

/// The process table (Linux: every `/proc/PID/stat`); empty where it cannot be read.
pub fn table() -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Parses `/proc/PID/stat`: "pid (comm) S ppid …", where comm may hold spaces and parens, so the
/// fields are counted from the last ')'; the start time is field 22.
fn parse_stat(pid: u32, stat: &str) -> Option<Entry> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Entry {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: matches!(fields.first(), Some(&"Z" | &"X")),
    })
}

/// Whether `pid`'s cwd or environment names `root` (how a re-parented orphan is matched to the
/// case whose temp tree it runs in when several cases run at once).
pub fn refers_to(pid: u32, root: &Path) -> bool {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    if cwd.is_some_and(|c| c.starts_with(root)) {
        return true;
    }
    let needle = root.to_string_lossy().into_owned().into_bytes();
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.windows(needle.len()).any(|w| w == needle.as_slice()))
        .unwrap_or(false)
}

/// The start time of `pid`, where the OS tells (0 otherwise).
pub fn start_time(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_stat(pid, &s))
        .map_or(0, |e| e.start)
}

/// Whether `pid` is alive and is still the process that started at `start` (0: not checked).
pub fn alive_since(pid: u32, start: u64) -> bool {
    alive(pid) && (start == 0 || start_time(pid) == start)
}

/// SIGKILL to `pid` if it is still the process that started at `start`.
pub fn kill_if_same(pid: u32, start: u64) {
    if alive_since(pid, start) {
        kill_all(&[pid]);
    }
}

/// Reaps `pid` if it is an exited child of this process (an orphan re-parented to the runner).
pub fn reap(pid: u32) {
    #[cfg(unix)]
    // SAFETY: waitpid on one pid without blocking; the caller made sure it is not a `Child` that
    // something else waits on.
    unsafe {
        libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// After a kill: waits briefly for `pid` to die and reaps it if it is the runner's child.
pub fn reap_if_orphan(pid: u32) {
    let me = std::process::id();
    for _ in 0..50 {
        let entry = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_stat(pid, &s));
        match entry {
            Some(e) if e.ppid == me && e.zombie => return reap(pid),
            Some(e) if e.ppid == me => std::thread::sleep(Duration::from_millis(10)),
            _ => return,
        }
    }
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
