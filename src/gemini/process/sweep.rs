//! Linux: descendants that left the run's process group (`setsid`, daemons) are found and killed
//! after the run. The server is a child subreaper, so such a process is reparented to the server
//! when its parent dies instead of to init; the sweep then recognises it by the run's marker in
//! its environment (or its group / session) and kills and reaps it.
//!
//! Reaping is by pid (`waitpid(pid)`), never blanket: `waitpid(-1)` would steal the exit statuses
//! Tokio waits for on the server's own children. Those are the runs' leaders, each leading its
//! own process group in the server's session (the server starts children only through `run`).
//! So a dead child that is in another session (it called `setsid`, as a `detached` Node.js child
//! does), or in a foreign group it does not lead, was reparented to us and is reaped whatever its
//! run, even once its environment (and with it the marker) is gone. A dead child leading its own
//! group in our session is left alone unless it was seen alive with the run's marker.

use std::collections::HashSet;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The variable carrying the run marker into the child's environment.
pub(super) const MARKER_VAR: &str = crate::gemini::inputs::env::RUN_MARK;

/// Upper bound on one sweep: SIGKILLed processes die within milliseconds; one stuck in the
/// kernel (uninterruptible I/O) must not hold up the answer.
const SWEEP_TIMEOUT: Duration = Duration::from_secs(1);

/// Pause between scans while killed processes are still dying.
const SWEEP_POLL: Duration = Duration::from_millis(5);

static SUBREAPER: AtomicBool = AtomicBool::new(false);
static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// Makes this process a child subreaper. Idempotent.
pub(crate) fn init_subreaper() -> std::io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// Identifies one run's processes. Without a subreaper there is nothing to sweep: escaped
/// processes are reparented to init, out of reach, and no marker is set.
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    /// `NAME=VALUE` as it appears in `/proc/<pid>/environ`; `None` when no sweep will run.
    entry: Option<Vec<u8>>,
}

impl Marker {
    /// A new marker, unique within this server (and across servers: it carries the server's pid).
    pub(crate) fn new() -> Marker {
        if !SUBREAPER.load(Ordering::SeqCst) {
            return Marker { entry: None };
        }
        let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let value = format!("{}:{n}", std::process::id());
        Marker {
            entry: Some(format!("{MARKER_VAR}={value}").into_bytes()),
        }
    }

    /// The variable to set in the child's environment, if any.
    pub(crate) fn env(&self) -> Option<(OsString, OsString)> {
        let entry = self.entry.as_ref()?;
        let value = &entry[MARKER_VAR.len() + 1..];
        Some((
            MARKER_VAR.into(),
            String::from_utf8_lossy(value).into_owned().into(),
        ))
    }
}

/// One line of `/proc/<pid>/stat`, the fields the sweep needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) state: u8,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
    pub(crate) session: i32,
}

/// Parses `/proc/<pid>/stat`. The command name may hold spaces and parentheses, so fields are
/// counted from the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcStat {
        state,
        ppid,
        pgrp,
        session,
    })
}

/// The server's direct children with their stat. `/proc/self/task/*/children` names them
/// directly (a handful of threads to read instead of every process on the machine: this runs
/// after every call); a kernel without that file gets the full scan of `/proc`.
fn children() -> Vec<(i32, ProcStat)> {
    let me = std::process::id() as i32;
    let stat_of = |pid: i32| {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let stat = parse_stat(&text)?;
        (stat.ppid == me).then_some((pid, stat))
    };
    if let Some(pids) = listed_children() {
        return pids.into_iter().filter_map(stat_of).collect();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat_of)
        .collect()
}

/// The pids in `/proc/self/task/<tid>/children` of every thread, or `None` when the kernel
/// does not provide the file (it needs `CONFIG_PROC_CHILDREN`).
fn listed_children() -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("children");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // A thread that ended between the listing and the read has no children left.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.parent()?.exists() => {
                return None
            }
            Err(_) => continue,
        };
        pids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    pids.sort_unstable();
    pids.dedup();
    Some(pids)
}

fn has_marker(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|var| var == entry))
        .unwrap_or(false)
}

/// Kills and reaps what is left of a finished run: the server's children that carry the run's
/// marker or sit in its process group (`pgid`) or in a group or session one of them leads.
/// `leader` is never touched (Tokio reaps it). Returns within [`SWEEP_TIMEOUT`]; processes still
/// dying by then are left to a background task, so none stays a zombie for good.
pub(crate) async fn sweep(marker: &Marker, pgid: i32, leader: i32) {
    let Some(entry) = marker.entry.clone() else {
        return;
    };
    let mut sweep = Sweep {
        entry,
        leader,
        groups: HashSet::from([pgid]),
        sessions: HashSet::new(),
        signalled: HashSet::new(),
    };
    let deadline = Instant::now() + SWEEP_TIMEOUT;
    while sweep.step() {
        if Instant::now() >= deadline {
            tracing::debug!(
                pid = leader,
                killed = sweep.signalled.len(),
                "escaped descendants still dying after the sweep; reaping them in the background"
            );
            tokio::spawn(async move {
                let give_up = Instant::now() + LATE_LIMIT;
                while Instant::now() < give_up {
                    tokio::time::sleep(LATE_POLL).await;
                    if !sweep.step() {
                        break;
                    }
                }
            });
            return;
        }
        tokio::time::sleep(SWEEP_POLL).await;
    }
    if !sweep.signalled.is_empty() {
        tracing::debug!(
            pid = leader,
            killed = sweep.signalled.len(),
            "swept escaped descendants"
        );
    }
}

/// Pause between scans once the bounded sweep has returned.
const LATE_POLL: Duration = Duration::from_secs(1);

/// How long the background part of a sweep keeps trying.
const LATE_LIMIT: Duration = Duration::from_secs(600);

/// What one run's sweep knows: its marker, and the groups and sessions its processes lead.
struct Sweep {
    entry: Vec<u8>,
    leader: i32,
    groups: HashSet<i32>,
    sessions: HashSet<i32>,
    /// The live processes it sent SIGKILL to (for the log).
    signalled: HashSet<i32>,
}

impl Sweep {
    /// One scan: kills the run's live children, reaps its dead ones. Returns whether any was
    /// found (then another scan is due: reaping one may have reparented its own children to us).
    fn step(&mut self) -> bool {
        // SAFETY: plain queries about this process.
        let (own_pgrp, own_session) = unsafe { (libc::getpgrp(), libc::getsid(0)) };
        let mut pending = false;
        for (pid, stat) in children() {
            if pid == self.leader {
                continue;
            }
            let zombie = stat.state == b'Z';
            // See the module comment: such a dead child cannot be one Tokio waits for.
            let stray = zombie
                && (stat.session != own_session || (stat.pgrp != own_pgrp && stat.pgrp != pid));
            // A zombie's environment is gone: only its group or session can name its run.
            let ours = stray
                || self.groups.contains(&stat.pgrp)
                || self.sessions.contains(&stat.session)
                || (!zombie && has_marker(pid, &self.entry));
            if !ours {
                continue;
            }
            pending = true;
            if zombie {
                let mut status = 0;
                // SAFETY: `pid` is our own child and not one Tokio tracks (the run's leader is
                // skipped; other leaders lead their own group in our session); WNOHANG.
                unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                continue;
            }
            if stat.pgrp == pid {
                self.groups.insert(pid);
                // SAFETY: plain signal to a group this run's process leads.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
            }
            if stat.session == pid {
                self.sessions.insert(pid);
            }
            // SAFETY: plain signal; `pid` is our unreaped child, so it cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            self.signalled.insert(pid);
        }
        pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_paren() {
        let line = "4242 (we ird) (name) S 17 4242 99 0 -1 4194560 0 0";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                state: b'S',
                ppid: 17,
                pgrp: 4242,
                session: 99
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }
}
