//! Spawning one Gemini CLI run as a supervised process tree: stdin fed, both pipes drained
//! concurrently under caps, cancellation and shutdown ending in a whole-tree kill.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Everything needed to start one run. Built by the pure command builder; no I/O here.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The program to execute (already resolved: an absolute path, or `node` for a JS entry).
    pub program: PathBuf,
    /// Arguments, flags only (`--flag=value`): the prompt never goes here.
    pub args: Vec<OsString>,
    /// When true the child starts from an empty environment plus `env`; otherwise the server's
    /// environment plus `env` (later entries win).
    pub env_clear: bool,
    /// Variables to set for the child.
    pub env: Vec<(OsString, OsString)>,
    /// Variables to remove from the child's environment.
    pub env_remove: Vec<OsString>,
    /// Working directory of the child.
    pub cwd: PathBuf,
    /// Bytes written to the child's stdin right after spawn; stdin is then closed.
    pub stdin: Vec<u8>,
    /// Cap per stream (stdout, stderr): past it the tree is killed and `OutputLimit` reported.
    pub max_output_bytes: usize,
    /// Time between the polite termination signal and the kill of the whole tree.
    pub kill_grace: Duration,
}

/// Which pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The child's stdout.
    Stdout,
    /// The child's stderr.
    Stderr,
}

/// Why the supervisor itself ended the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// A stream went past `max_output_bytes`.
    OutputLimit(Stream),
    /// The caller's cancellation token fired (MCP cancellation, client gone, deadline).
    Cancelled,
}

/// How the direct child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (Unix).
    Signaled(i32),
}

impl Termination {
    /// The shell-style code: the exit code, or 128 + signal.
    pub fn code(self) -> i32 {
        match self {
            Termination::Exited(c) => c,
            Termination::Signaled(s) => 128 + s,
        }
    }
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How the direct child ended (`None` if it could not be reaped in time after a kill).
    pub status: Option<Termination>,
    /// Set when the supervisor ended the run itself.
    pub killed: Option<KillReason>,
    /// stdout bytes kept (at most the cap).
    pub stdout: Vec<u8>,
    /// stderr bytes kept (at most the cap; when over, the tail is what is kept).
    pub stderr: Vec<u8>,
    /// Total bytes seen on stdout, kept or not.
    pub stdout_total: u64,
    /// Total bytes seen on stderr, kept or not.
    pub stderr_total: u64,
    /// Wall time from spawn to the end of supervision.
    pub duration: Duration,
}

/// The child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist (reported as exit 127).
    #[error("gemini binary not found: {0}")]
    NotFound(String),
    /// The program exists but cannot be executed (reported as exit 126).
    #[error("gemini binary is not executable: {0}")]
    NotExecutable(String),
    /// Any other spawn failure.
    #[error("failed to start gemini: {0}")]
    Other(String),
}

/// Runs one supervised child to its end.
///
/// Every complete stdout line (without its `\n`, bytes as printed) is also sent to `lines`, when
/// given, as it arrives, so the caller can parse stream-json events and report progress.
pub async fn run(
    spec: RunSpec,
    cancel: CancellationToken,
    lines: Option<mpsc::UnboundedSender<Vec<u8>>>,
) -> Result<RunOutput, SpawnError> {
    let _ = (spec, cancel, lines);
    Err(SpawnError::Other("not implemented yet".into()))
}
