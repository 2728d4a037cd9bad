//! The child as a whole tree: a process group on Unix, a Job Object on Windows (through
//! `process-wrap`), with a guard that kills the tree when dropped.

use std::io;
use std::process::ExitStatus;

use process_wrap::tokio::{ChildWrapper, CommandWrap};

use super::status::{SpawnError, Termination};

/// A spawned child and everything it started, killed as one when dropped unless finished.
#[derive(Debug)]
pub(crate) struct Tree {
    child: Box<dyn ChildWrapper>,
    pid: u32,
    finished: bool,
}

impl Tree {
    /// Spawns `command` as the leader of a new process group (Unix) or inside a new Job Object
    /// (Windows).
    pub(crate) fn spawn(mut command: CommandWrap) -> io::Result<Tree> {
        #[cfg(unix)]
        command.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        {
            // On Windows KillOnDrop sets JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: the whole job dies
            // with its handle, even if this process is killed. (On Unix it would kill the
            // leader only, so the guard's Drop does the group kill there.)
            command.wrap(process_wrap::tokio::JobObject);
            command.wrap(process_wrap::tokio::KillOnDrop);
        }
        #[cfg(target_os = "linux")]
        set_parent_death_signal(&mut command);
        let child = command.spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the child was reaped before its pid was read"))?;
        #[cfg(unix)]
        super::watchdog::live(pid);
        Ok(Tree {
            child,
            pid,
            finished: false,
        })
    }

    /// The leader's pid (on Unix also the process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Takes the child's ends of the three pipes.
    pub(crate) fn take_pipes(
        &mut self,
    ) -> (
        Option<tokio::process::ChildStdin>,
        Option<tokio::process::ChildStdout>,
        Option<tokio::process::ChildStderr>,
    ) {
        (
            self.child.stdin().take(),
            self.child.stdout().take(),
            self.child.stderr().take(),
        )
    }

    /// Waits for the direct child only, not for the rest of the tree. Cancel-safe.
    pub(crate) async fn wait_leader(&mut self) -> io::Result<ExitStatus> {
        // SAFETY: the wrappers' own `wait`/`try_wait` are never called on this tree, so the
        // invariants they keep (a cached exit status; on Unix a `waitpid(-pgid)` loop that would
        // block until every group member exits, the very thing a descendant holding the pipes
        // must not cause) are not bypassed behind their back. Tokio's `Child::wait` caches the
        // status itself and may be called again.
        let leader = unsafe { self.child.try_inner_child_mut() }
            .ok_or_else(|| io::Error::other("process-wrap returned no native child"))?;
        leader.wait().await
    }

    /// Asks the whole tree to stop. Returns false when the platform has no polite request and the
    /// tree was killed outright (Windows).
    pub(crate) fn terminate(&mut self) -> bool {
        #[cfg(unix)]
        {
            // To the group, not the leader: the real CLI's launcher ignores SIGTERM, its worker
            // exits cleanly on it.
            let _ = self.child.signal(libc::SIGTERM);
            true
        }
        #[cfg(not(unix))]
        {
            self.kill();
            false
        }
    }

    /// Kills the whole tree (`killpg(SIGKILL)` / `TerminateJobObject`). Idempotent; a tree
    /// already gone is not an error.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Marks the run as supervised to its end: dropping no longer kills.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !self.finished {
            // The supervising future was dropped mid-run (task aborted, server shutting down).
            self.kill();
        }
        #[cfg(unix)]
        super::watchdog::ended(self.pid);
    }
}

/// Linux: the child gets SIGKILL when its parent dies, so a server killed by SIGKILL leaves
/// no CLI behind.
///
/// The kernel sends the signal when the *thread* that forked the child exits, not the process.
/// `run` forks from the thread polling it: a Tokio worker thread or a `block_on` thread, which
/// live as long as the runtime. Never call `run` from `spawn_blocking` (idle blocking threads
/// exit after a few seconds and would kill the child mid-run). Not inherited across fork:
/// a CLI that relaunches itself as a worker needs `GEMINI_CLI_NO_RELAUNCH=1` for the worker to
/// be covered.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(command: &mut CommandWrap) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe system
    // calls (prctl, getppid); it allocates nothing.
    unsafe {
        command.command_mut().pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; the signal would then never
            // come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// How the direct child ended, from its exit status.
pub(crate) fn termination(status: ExitStatus) -> Termination {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Termination::Signaled(signal);
        }
    }
    Termination::Exited(status.code().unwrap_or(-1))
}

/// `ENOEXEC` (no shebang, not a binary) on Unix, `ERROR_BAD_EXE_FORMAT` on Windows: the file is
/// there but cannot be executed, which a shell reports as 126.
const NOT_EXECUTABLE_OS_ERROR: i32 = if cfg!(windows) { 193 } else { 8 };

/// Maps a spawn failure to the shell-style classes the server reports (127, 126, other).
pub(crate) fn spawn_error(error: io::Error, program: &std::path::Path) -> SpawnError {
    let shown = program.display().to_string();
    match error.kind() {
        io::ErrorKind::NotFound => {
            // ENOENT also comes from a missing `#!` interpreter or ELF loader: say so when the
            // file itself exists.
            if program.is_absolute() && program.is_file() {
                SpawnError::NotFound(format!("{shown} (its interpreter was not found)"))
            } else {
                SpawnError::NotFound(shown)
            }
        }
        io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(shown),
        io::ErrorKind::ArgumentListTooLong => SpawnError::TooLong(format!(
            "the system refused the Gemini CLI's command line and environment as too long ({error})"
        )),
        _ if error.raw_os_error() == Some(NOT_EXECUTABLE_OS_ERROR) => {
            SpawnError::NotExecutable(format!("{shown} ({error})"))
        }
        _ => SpawnError::Other(format!("{shown}: {error}")),
    }
}
