//! How a run ends, as the supervisor and its parts report it: which pipe, why the supervisor killed
//! the tree, how the direct child ended, and why it could not start.

use crate::deadline::Limit;

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
    /// The caller's cancellation token fired (MCP cancellation, client gone, shutdown).
    Cancelled,
    /// One of the run's deadlines passed (set by the caller, which killed the run for it).
    Deadline(Limit),
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

/// The child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist (reported as exit 127).
    #[error("gemini binary not found: {0}")]
    NotFound(String),
    /// The program exists but cannot be executed (reported as exit 126).
    #[error("gemini binary is not executable: {0}")]
    NotExecutable(String),
    /// The command line with its environment is longer than the system allows (`E2BIG`): a
    /// caller's input problem, found before the spawn.
    #[error("{0}")]
    TooLong(String),
    /// Any other spawn failure.
    #[error("failed to start gemini: {0}")]
    Other(String),
}
