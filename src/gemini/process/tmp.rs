//! The per-run private temporary directory: the CLI writes error reports with request context into
//! `os.tmpdir()`, so each run gets its own 0700 directory, removed once the run is over.
//!
//! The file system work happens on one background thread, off the path of a call: removing a
//! directory can take milliseconds on a journalling file system (2–4 ms measured on ext4 with
//! discard), creating one a tenth of that, both more than the rest of what a call adds to the
//! CLI's own time. So a run's directory is removed after its answer ([`remove_later`]), and the
//! next run's directory is made ahead of time, right after that removal: [`PrivateTmp::new`] takes
//! that spare when there is one (each directory still serves one run only). [`finish`] removes the spare and waits for the
//! removals handed over, so nothing is left behind when the server exits.

use crate::sync::lock;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A private temporary directory (mode 0700 on Unix) for one run, removed when dropped.
#[derive(Debug)]
pub struct PrivateTmp {
    dir: tempfile::TempDir,
}

impl PrivateTmp {
    /// A fresh directory under the system temporary directory: the spare made ahead of time when
    /// there is one, else one made now.
    pub fn new() -> io::Result<Self> {
        if !SPARES.load(Ordering::Relaxed) {
            return PrivateTmp::create();
        }
        // The next spare is asked for when this directory is handed back (`remove_later`): the
        // keeper's file system work then runs after the answer, not next to the spawn.
        let spare = lock(&keeper().spare).take();
        match spare {
            // A spare that something removed meanwhile (a temp cleaner) is not used.
            Some(tmp) if tmp.path().is_dir() => Ok(tmp),
            _ => PrivateTmp::create(),
        }
    }

    fn create() -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix(&own_prefix()).tempdir()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(PrivateTmp { dir })
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The variables that point a child at the directory: `TMPDIR` (Unix, Node's `os.tmpdir()`),
    /// `TEMP` and `TMP` (Windows).
    pub fn env(&self) -> [(OsString, OsString); 3] {
        let p = OsString::from(self.dir.path());
        crate::gemini::inputs::env::TMP.map(|name| (name.into(), p.clone()))
    }

    /// Removes the directory now, reporting a failure (dropping removes it silently).
    pub fn close(self) -> io::Result<()> {
        self.dir.close()
    }
}

/// The start of the name of every temporary directory of the server with pid `server`: the
/// watchdog finds by it what a server killed outright left ([`remove_left_by`]).
fn prefix_of(server: u32) -> String {
    format!("geminicli-mcp-{server}-")
}

/// The start of the name every temporary directory of this server's takes, so that the watchdog
/// removes it if the server is killed outright.
fn own_prefix() -> String {
    prefix_of(std::process::id())
}

/// Removes the run directories the server with pid `server` left under `root` (the temporary
/// directory it used): the watchdog's part once that server died without its clean-up. Only
/// directories of this user's named after that server are touched, never through a symlink.
/// Returns how many were removed.
pub(super) fn remove_left_by(server: u32, root: &Path) -> usize {
    let prefix = prefix_of(server);
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || !owned_by_me(&meta) {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(unix)]
fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    meta.uid() == unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn owned_by_me(_: &std::fs::Metadata) -> bool {
    true
}

/// Whether [`PrivateTmp::new`] keeps a spare directory made ahead (see [`keep_spares`]).
static SPARES: AtomicBool = AtomicBool::new(false);

/// From now on a spare directory is made ahead for the next run. For a program that calls
/// [`finish`] before it exits (the server does), so the spare does not outlive it; off by default.
pub fn keep_spares() {
    SPARES.store(true, Ordering::Relaxed);
}

/// What the keeper thread is asked to do.
enum Job {
    /// Remove a run's directory.
    Remove(PrivateTmp),
    /// Make the spare directory, unless there is one or the keeper is closed.
    MakeSpare,
}

/// The keeper thread's queue, the spare directory, and the count of directories handed over for
/// removal but not yet removed.
struct Keeper {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    spare: Mutex<Option<PrivateTmp>>,
    /// Set by [`finish`]: no spare is made any more.
    closed: Mutex<bool>,
    pending: Mutex<usize>,
    idle: Condvar,
}

fn keeper() -> &'static Keeper {
    static KEEPER: OnceLock<Keeper> = OnceLock::new();
    KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("tmpdir-keeper".into())
            .spawn(move || {
                for job in rx {
                    let keeper = keeper();
                    match job {
                        Job::Remove(tmp) => {
                            remove_now(tmp);
                            keeper.done();
                        }
                        Job::MakeSpare => keeper.make_spare(),
                    }
                }
            });
        Keeper {
            // Without the thread, directories are made and removed in place.
            queue: Mutex::new(started.ok().map(|_| tx)),
            spare: Mutex::new(None),
            closed: Mutex::new(false),
            pending: Mutex::new(0),
            idle: Condvar::new(),
        }
    })
}

impl Keeper {
    /// Hands `job` to the thread; gives it back when there is no thread.
    fn send(&self, job: Job) -> Option<Job> {
        match lock(&self.queue).as_ref() {
            Some(queue) => queue.send(job).err().map(|mpsc::SendError(job)| job),
            None => Some(job),
        }
    }

    fn make_spare(&self) {
        let closed = lock(&self.closed);
        if *closed || lock(&self.spare).is_some() {
            return;
        }
        // Made while `closed` is held, so `finish` cannot miss it.
        match PrivateTmp::create() {
            Ok(tmp) => *lock(&self.spare) = Some(tmp),
            Err(e) => {
                tracing::debug!(error = %e, "could not make a spare private temporary directory")
            }
        }
        drop(closed);
    }

    /// One directory handed over for removal is dealt with.
    fn done(&self) {
        let mut pending = lock(&self.pending);
        *pending -= 1;
        if *pending == 0 {
            self.idle.notify_all();
        }
    }
}

fn remove_now(tmp: PrivateTmp) {
    let path = tmp.path().to_owned();
    if let Err(e) = tmp.close() {
        tracing::warn!(path = %path.display(), error = %e, "could not remove a private temporary directory");
    }
}

/// Removes `tmp` on the keeper thread, so the caller does not wait for the file system. Falls back
/// to removing it in place when the thread could not be started.
pub(super) fn remove_later(tmp: PrivateTmp) {
    let keeper = keeper();
    *lock(&keeper.pending) += 1;
    if let Some(Job::Remove(tmp)) = keeper.send(Job::Remove(tmp)) {
        remove_now(tmp);
        keeper.done();
    }
    if SPARES.load(Ordering::Relaxed) {
        keeper.send(Job::MakeSpare);
    }
}

/// Waits until every directory handed to [`remove_later`] so far is removed, at most `timeout`.
/// Returns whether none is left. Blocking: call it outside the async runtime (at exit, in tests).
pub fn wait_removed(timeout: Duration) -> bool {
    let keeper = keeper();
    let until = Instant::now() + timeout;
    let mut pending = lock(&keeper.pending);
    while *pending > 0 {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        pending = keeper
            .idle
            .wait_timeout(pending, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// At exit: no more spares; the spare is removed and the removals handed over are waited for, at
/// most `timeout`. Returns whether none is left.
pub fn finish(timeout: Duration) -> bool {
    let keeper = keeper();
    *lock(&keeper.closed) = true;
    if let Some(spare) = lock(&keeper.spare).take() {
        remove_now(spare);
    }
    wait_removed(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_dead_server_left_is_removed_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let dead = prefix_of(4242);
        for name in ["a1", "b2"] {
            std::fs::create_dir_all(root.path().join(format!("{dead}{name}/sub"))).unwrap();
            std::fs::write(root.path().join(format!("{dead}{name}/sub/f")), "x").unwrap();
        }
        // Another server's (42420 starts with the same digits), a file, a foreign name.
        std::fs::create_dir(root.path().join(format!("{}x", prefix_of(42420)))).unwrap();
        std::fs::write(root.path().join(format!("{dead}file")), "x").unwrap();
        std::fs::create_dir(root.path().join("geminicli-mcp-other")).unwrap();
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("keep"), "x").unwrap();
            std::os::unix::fs::symlink(outside.path(), root.path().join(format!("{dead}link")))
                .unwrap();
            assert_eq!(remove_left_by(4242, root.path()), 2);
            assert!(outside.path().join("keep").exists(), "followed a symlink");
        }
        #[cfg(not(unix))]
        assert_eq!(remove_left_by(4242, root.path()), 2);
        let mut left: Vec<String> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![
            format!("{}x", prefix_of(42420)),
            format!("{dead}file"),
            "geminicli-mcp-other".to_owned(),
        ];
        if cfg!(unix) {
            want.push(format!("{dead}link"));
        }
        want.sort();
        assert_eq!(left, want);
    }

    #[test]
    fn a_directory_handed_over_is_gone_once_the_keeper_is_idle() {
        let dirs: Vec<PrivateTmp> = (0..8).map(|_| PrivateTmp::new().unwrap()).collect();
        let paths: Vec<_> = dirs.iter().map(|d| d.path().to_owned()).collect();
        for (i, dir) in dirs.into_iter().enumerate() {
            std::fs::write(dir.path().join(format!("report-{i}.json")), b"{}").unwrap();
            remove_later(dir);
        }
        assert!(wait_removed(Duration::from_secs(30)));
        for path in paths {
            assert!(!path.exists(), "{} was left behind", path.display());
        }
    }

    #[test]
    fn with_spares_every_run_still_gets_a_fresh_directory_and_finish_leaves_none() {
        keep_spares();
        let dirs: Vec<PrivateTmp> = (0..16).map(|_| PrivateTmp::new().unwrap()).collect();
        let mut paths: Vec<_> = dirs.iter().map(|d| d.path().to_owned()).collect();
        for dir in &dirs {
            assert!(dir.path().is_dir());
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o700, "{}", dir.path().display());
            }
        }
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), 16);
        for dir in dirs {
            remove_later(dir);
        }
        // Wait for the last spare asked for, then finish: it must go too.
        let made = Instant::now() + Duration::from_secs(30);
        while lock(&keeper().spare).is_none() && Instant::now() < made {
            std::thread::sleep(Duration::from_millis(5));
        }
        let spare = lock(&keeper().spare).as_ref().map(|t| t.path().to_owned());
        let spare = spare.expect("a spare directory was made ahead");
        assert!(spare.is_dir());
        assert!(finish(Duration::from_secs(30)));
        assert!(
            !spare.exists(),
            "the spare {} was left behind",
            spare.display()
        );
        for path in paths {
            assert!(!path.exists(), "{} was left behind", path.display());
        }
        // Closed: no new spare is made.
        let last = PrivateTmp::new().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(lock(&keeper().spare).is_none());
        last.close().unwrap();
    }
}
