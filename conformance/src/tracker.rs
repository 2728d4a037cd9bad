//! Every process a case starts, whatever the target does with its environment: on Linux the runner
//! is a child subreaper, so a process below it whose parent exits (a double fork, a `setsid`
//! daemon) is re-parented to the runner instead of init and stays in view; a thread per case
//! samples `/proc` for the target's descendants. At the case's end whatever is left is reported and
//! killed by pid. Other systems see only the pids fake-gemini logs (see the README).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::procs;

/// How often a case's thread samples the process table.
const SAMPLE: Duration = Duration::from_millis(40);

/// A process seen during a case: its pid and its start time (clock ticks since boot), so a pid
/// the system reused for something else is never blamed or killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    /// The process id.
    pub pid: u32,
    /// Its start time as `/proc/PID/stat` gives it (0 where unknown).
    pub start: u64,
}

/// The targets of the cases running now (their pids and temp roots), so a re-parented orphan can
/// be told apart from another case's target and attributed to its case.
fn registry() -> &'static Mutex<BTreeMap<u32, PathBuf>> {
    static R: OnceLock<Mutex<BTreeMap<u32, PathBuf>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Makes this process a child subreaper (Linux), once; returns whether it is one.
pub fn become_subreaper() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(procs::set_child_subreaper)
}

/// Whether descendants that left the target's tree stay visible here.
pub fn sees_escaped_descendants() -> bool {
    cfg!(target_os = "linux") && become_subreaper()
}

/// Watches one case's target and everything below it.
pub struct Tracker {
    target: u32,
    seen: Arc<Mutex<BTreeSet<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Spawns the target and starts tracking it. The spawn and the registration happen under the
/// registry's lock, so no other case's thread can take the new target for an orphan and reap it.
pub fn spawn_tracked(cmd: &mut Command, root: &Path) -> std::io::Result<(Child, Tracker)> {
    become_subreaper();
    let child = {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        let child = cmd.spawn()?;
        reg.insert(child.id(), root.to_path_buf());
        child
    };
    let target = child.id();
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let thread = procs::process_table_readable().then(|| {
        let (seen, stop, root) = (seen.clone(), stop.clone(), root.to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                sample(target, &root, &seen);
                std::thread::sleep(SAMPLE);
            }
        })
    });
    Ok((
        child,
        Tracker {
            target,
            seen,
            stop,
            thread,
        },
    ))
}

/// One look at the process table: the target's descendants, and orphans re-parented to the runner
/// that belong to this case (their cwd or environment names its temp root, or this is the only
/// case running).
fn sample(target: u32, root: &Path, seen: &Mutex<BTreeSet<Seen>>) {
    let table = procs::table();
    let me = std::process::id();
    let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    let mut found: Vec<u32> = vec![target];
    for p in table
        .iter()
        .filter(|p| p.ppid == me && !reg.contains_key(&p.pid))
    {
        if reg.len() == 1 || procs::refers_to(p.pid, root) {
            found.push(p.pid);
        }
        // An orphan of this case that has exited is the runner's to reap (no `Child` waits on
        // it); an unknown child is left alone, as something else in this process may wait on it.
        if p.zombie && seen.iter().any(|s| s.pid == p.pid) {
            procs::reap(p.pid);
        }
    }
    drop(reg);
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(table.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    for pid in found.into_iter().filter(|&p| p != target) {
        if let Some(p) = table.iter().find(|p| p.pid == pid && !p.zombie) {
            seen.insert(Seen {
                pid,
                start: p.start,
            });
        }
    }
}

impl Tracker {
    /// The processes of this case still alive now (one last sample first), the target excluded.
    pub fn alive(&self) -> Vec<Seen> {
        if self.thread.is_some() {
            let root = registry()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&self.target)
                .cloned();
            if let Some(root) = root {
                sample(self.target, &root, &self.seen);
            }
        }
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter()
            .copied()
            .filter(|s| procs::alive_since(s.pid, s.start))
            .collect()
    }

    /// Kills every process of this case still alive (by pid, checked against its start time),
    /// reaps those re-parented to the runner, and stops tracking.
    pub fn finish(mut self) -> Vec<Seen> {
        let left = self.alive();
        for s in &left {
            procs::kill_if_same(s.pid, s.start);
        }
        for s in &left {
            procs::reap_if_orphan(s.pid);
        }
        self.stop_thread();
        left
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.target);
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
