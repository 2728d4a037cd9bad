//! Spawning one Gemini CLI run as a supervised process tree: stdin fed, both pipes drained
//! concurrently under caps, cancellation and shutdown ending in a whole-tree kill.
//!
//! The tree is a process group (Unix) or a Job Object (Windows). On Linux the child also gets a
//! parent-death signal, and with [`init_subreaper`] descendants that escaped the group are swept
//! after each run; elsewhere such escaped descendants are out of reach (the run still ends).

mod argv;
mod capture;
mod status;
#[cfg(target_os = "linux")]
mod sweep;
/// The variable that marks the processes of a run (the watchdog and the sweep find them by it;
/// named on every platform, set on Linux).
pub use crate::gemini::inputs::env::RUN_MARK as RUN_MARKER_VAR;
mod tmp;
mod tree;
#[cfg(unix)]
mod watchdog;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use process_wrap::tokio::CommandWrap;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

use crate::deadline::Limit;

pub use capture::Activity;
pub use capture::LineFn;
use capture::{pump, Head, Tail};
pub use status::{KillReason, SpawnError, Stream, Termination};
pub use tmp::{finish as finish_tmp, keep_spares as keep_spare_tmp, wait_removed, PrivateTmp};
use tree::Tree;

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
    /// When true the child gets its own 0700 temporary directory (`TMPDIR`, `TEMP`, `TMP`),
    /// removed after the run, cancelled or not. These variables win over `env`.
    pub private_tmp: bool,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How the direct child ended (`None` if it could not be reaped in time after a kill, or
    /// the call was cancelled before anything was spawned).
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

/// After the direct child exits, how long the pipes may take to reach EOF before the rest of the
/// tree is killed. Everything the CLI printed is in the pipe once it has exited; a pipe still
/// open after this is held by a descendant (a tool's background job, a daemon) whose output is
/// no part of the answer, and the call must not wait for it.
const DESCENDANT_EOF_GRACE: Duration = Duration::from_millis(500);

/// After SIGKILL, how long the direct child may take to be reaped. SIGKILL cannot be caught, but
/// a process in uninterruptible I/O dies only when that I/O ends; the run is answered anyway
/// (`status: None`).
const REAP_TIMEOUT: Duration = Duration::from_secs(2);

/// After the final tree kill, how long the readers may take to reach EOF. Only a process outside
/// the tree (escaped where no sweep reaches) keeps a pipe open past the kill.
const POST_KILL_DRAIN: Duration = Duration::from_millis(500);

/// The run marker for a process the server starts outside a run (an MCP server probed before
/// a call): with it, the watchdog finds and kills the process if the server dies before it does
/// (Linux); `None` where no sweep runs.
pub(crate) fn outside_run_marker() -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    sweep::Marker::new().env()
}

/// Makes the server a child subreaper (Linux), so that descendants escaping a run's process group
/// are reparented to the server and swept after their run. Call once at start-up, before the
/// first run; a no-op elsewhere, where escaped descendants are out of reach.
pub fn init_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        sweep::init_subreaper()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(())
    }
}

/// Starts the process watchdog (Unix; see `watchdog`): once per server, from the main thread
/// before the runtime. A no-op elsewhere: on Windows each run's Job Object dies with the server.
pub fn start_watchdog() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        watchdog::start()
    }
    #[cfg(not(unix))]
    {
        Ok(())
    }
}

/// Lets the watchdog go at the server's clean exit.
pub fn stop_watchdog() {
    #[cfg(unix)]
    watchdog::stop();
}

/// When the process was started as the watchdog (its first argument is the watchdog's), runs it
/// and returns its exit code.
pub fn watchdog_main(args: &[OsString]) -> Option<i32> {
    #[cfg(unix)]
    {
        (args.get(1).is_some_and(|a| a == watchdog::ARG)).then(|| {
            let rest: Vec<String> = args[2..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            watchdog::main(&rest)
        })
    }
    #[cfg(not(unix))]
    {
        let _ = args;
        None
    }
}

/// Runs one supervised child to its end.
///
/// stdin gets `spec.stdin` and is closed; stdout and stderr are drained concurrently, each up to
/// `spec.max_output_bytes` (stdout keeps its head, stderr its tail); at the cap, on cancellation
/// (polite signal, `kill_grace`, then kill) and in every case once the direct child has exited,
/// the whole tree is killed. Never waits for EOF unboundedly: a descendant that keeps the pipes
/// open delays the result by a fraction of a second, not forever. Dropping the future kills the
/// tree too.
///
/// Every line (without its `\n`, bytes as printed, `\r` included) is also handed to `lines`, when
/// given, as it arrives, tagged with its [`Stream`], so the caller can parse stream-json events and
/// the CLI's retry messages and report progress. The unterminated rest of the kept stdout, if
/// any, is handed over last, so the stdout lines joined by `\n` are exactly `RunOutput::stdout` (a line
/// longer than the cap arrives cut at the cap). stderr lines come from the first `max_output_bytes`
/// of stderr, each cut at 4 KiB: they serve progress, not the result.
///
/// Spawn from a long-lived thread: on Linux the child's parent-death signal fires when the
/// thread that spawned it exits, so never call this inside `spawn_blocking`.
pub async fn run(
    spec: RunSpec,
    cancel: CancellationToken,
    lines: Option<LineFn>,
) -> Result<RunOutput, SpawnError> {
    let watch = Watch {
        lines,
        ..Watch::default()
    };
    run_observed(spec, cancel, watch).await
}

/// What a caller watches a run with, besides its cancellation token.
#[derive(Default)]
pub struct Watch {
    /// Every line of either stream as it arrives (see [`run`]).
    pub lines: Option<LineFn>,
    /// Stamped each time either pipe delivers bytes (a line need not be complete): what an
    /// inactivity deadline watches.
    pub activity: Option<Activity>,
    /// Resolves when a deadline of the run passes: the tree is then ended as for a cancellation,
    /// and the run reports [`KillReason::Deadline`] with that limit.
    pub deadline: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Limit> + Send>>>,
}

/// [`run`] with a [`Watch`]: lines, activity and a deadline.
#[expect(
    clippy::too_many_lines,
    reason = "a run's phases in order (spawn, supervise, drain, collect), each its own function; this is their sequence"
)]
pub async fn run_observed(
    spec: RunSpec,
    cancel: CancellationToken,
    watch: Watch,
) -> Result<RunOutput, SpawnError> {
    let Watch {
        lines,
        activity,
        deadline: limit,
    } = watch;
    let mut limit = limit.unwrap_or_else(|| Box::pin(std::future::pending()));
    let started = Instant::now();
    if cancel.is_cancelled() {
        return Ok(RunOutput {
            status: None,
            killed: Some(KillReason::Cancelled),
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdout_total: 0,
            stderr_total: 0,
            duration: started.elapsed(),
        });
    }
    let Prepared {
        command,
        tmp,
        #[cfg(target_os = "linux")]
        marker,
    } = prepare(&spec)?;
    let max = spec.max_output_bytes;
    let grace = spec.kill_grace;
    let stdin_bytes = spec.stdin;
    let program = spec.program;

    #[cfg(target_os = "linux")]
    let mut abort_sweep = AbortSweep {
        marker: marker.clone(),
        pgid: None,
    };
    let mut tree = Tree::spawn(command).map_err(|e| tree::spawn_error(e, &program))?;
    let pid = tree.pid();
    #[cfg(target_os = "linux")]
    {
        abort_sweep.pgid = Some(pid as i32);
    }
    tracing::debug!(
        pid,
        program = %program.display(),
        args = spec.args.len(),
        stdin_bytes = stdin_bytes.len(),
        private_tmp = tmp.is_some(),
        "gemini spawned"
    );

    let Pumps {
        mut out,
        mut err,
        mut feeder,
        mut trip_rx,
        stop,
    } = pumps(&mut tree, stdin_bytes, max, lines, activity)?;
    let Supervised {
        mut killed,
        status,
        phase,
    } = supervise(&mut tree, &mut trip_rx, &cancel, &mut limit, grace, max).await;
    if phase == Phase::Running {
        // The child exited on its own: its output is complete once the pipes reach EOF, unless
        // a descendant holds them. A cap or a cancellation still counts meanwhile.
        let until = tokio::time::Instant::now() + DESCENDANT_EOF_GRACE;
        tokio::select! {
            _ = eof(&mut out, &mut err) => {}
            Some(stream) = trip_rx.recv() => killed = Some(KillReason::OutputLimit(stream)),
            _ = cancel.cancelled() => killed = Some(KillReason::Cancelled),
            _ = sleep_until(until) => tracing::debug!(pid, "a descendant holds the pipes after gemini exited"),
        }
    }
    // Whatever is left of the tree goes: stragglers in the group, a daemonised tool. (While any
    // member lives the group id cannot be reused; once none does, killpg finds no group, unless
    // the whole pid space wrapped around within these few milliseconds.)
    tree.kill();
    #[cfg(target_os = "linux")]
    {
        sweep::sweep(&marker, pid as i32, pid as i32).await;
        abort_sweep.pgid = None;
    }
    let _ = tokio::time::timeout(POST_KILL_DRAIN, eof(&mut out, &mut err)).await;
    stop.cancel();
    eof(&mut out, &mut err).await;
    feeder.join().await;
    tree.finish();

    let (stdout, stdout_total) = out.take().into_parts();
    let (stderr, stderr_total) = err.take().into_parts();
    // Bytes went past the cap after the last look at the trip channel (a descendant writing
    // during the final drain): the output is still cut, and must say so.
    let killed = killed.or(if stdout_total > max as u64 {
        Some(KillReason::OutputLimit(Stream::Stdout))
    } else if stderr_total > max as u64 {
        Some(KillReason::OutputLimit(Stream::Stderr))
    } else {
        None
    });
    if let Some(tmp) = tmp {
        tmp::remove_later(tmp);
    }
    let duration = started.elapsed();
    tracing::debug!(
        pid,
        status = ?status,
        killed = ?killed,
        stdout_total,
        stderr_total,
        duration_ms = duration.as_millis() as u64,
        "gemini finished"
    );
    Ok(RunOutput {
        status,
        killed,
        stdout,
        stderr,
        stdout_total,
        stderr_total,
        duration,
    })
}

/// The tasks that move a run's bytes: stdout and stderr drained under the cap (a stream past
/// it reports on `trip_rx`), stdin fed; `stop` abandons them all.
struct Pumps {
    out: Task<Head>,
    err: Task<Tail>,
    feeder: Task<()>,
    trip_rx: mpsc::UnboundedReceiver<Stream>,
    stop: CancellationToken,
}

fn pumps(
    tree: &mut Tree,
    stdin_bytes: Vec<u8>,
    max: usize,
    lines: Option<LineFn>,
    activity: Option<Activity>,
) -> Result<Pumps, SpawnError> {
    let (stdin, stdout, stderr) = tree.take_pipes();
    let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
        return Err(SpawnError::Other(
            "the child's pipes were not set up".into(),
        ));
    };
    let (trip_tx, trip_rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let out = Task::spawn(pump(
        stdout,
        Head::new(max, lines.clone()),
        Stream::Stdout,
        trip_tx.clone(),
        stop.clone(),
        activity.clone(),
    ));
    let err = Task::spawn(pump(
        stderr,
        Tail::new(max, lines),
        Stream::Stderr,
        trip_tx,
        stop.clone(),
        activity,
    ));
    let feeder = Task::spawn(feed(stdin, stdin_bytes, stop.clone()));
    Ok(Pumps {
        out,
        err,
        feeder,
        trip_rx,
        stop,
    })
}

/// How supervision of a live tree ended.
struct Supervised {
    killed: Option<KillReason>,
    status: Option<Termination>,
    phase: Phase,
}

/// Watches the tree until its leader exits (or is given up on after the kill): a stream past the
/// cap kills the tree at once; a cancellation or a deadline terminates it politely, then kills it
/// after `grace`.
async fn supervise(
    tree: &mut Tree,
    trip_rx: &mut mpsc::UnboundedReceiver<Stream>,
    cancel: &CancellationToken,
    limit: &mut std::pin::Pin<Box<dyn std::future::Future<Output = Limit> + Send>>,
    grace: Duration,
    max: usize,
) -> Supervised {
    let pid = tree.pid();
    let mut killed: Option<KillReason> = None;
    let mut status: Option<Termination> = None;
    let mut phase = Phase::Running;
    let mut timer: Option<tokio::time::Instant> = None;
    let after = |d: Duration| Some(tokio::time::Instant::now() + d);
    loop {
        let event = tokio::select! {
            exited = tree.wait_leader() => Event::Exited(exited),
            Some(stream) = trip_rx.recv() => Event::Tripped(stream),
            _ = cancel.cancelled(), if killed.is_none() => Event::Stopped(KillReason::Cancelled),
            passed = &mut *limit, if killed.is_none() => Event::Stopped(KillReason::Deadline(passed)),
            _ = sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => Event::Timer,
        };
        match event {
            Event::Exited(Ok(exit)) => {
                status = Some(tree::termination(exit));
                break;
            }
            Event::Exited(Err(e)) => {
                tracing::warn!(pid, error = %e, "waiting for gemini failed");
                break;
            }
            Event::Tripped(stream) => {
                killed.get_or_insert(KillReason::OutputLimit(stream));
                if phase != Phase::Killed {
                    tracing::debug!(pid, ?stream, max, "output cap reached: killing the tree");
                    tree.kill();
                    phase = Phase::Killed;
                    timer = after(REAP_TIMEOUT);
                }
            }
            Event::Stopped(reason) => {
                killed = Some(reason);
                tracing::debug!(
                    pid,
                    ?reason,
                    grace_ms = grace.as_millis() as u64,
                    "stopped: terminating the tree"
                );
                (phase, timer) = if tree.terminate() {
                    (Phase::Grace, after(grace))
                } else {
                    (Phase::Killed, after(REAP_TIMEOUT))
                };
            }
            Event::Timer if phase == Phase::Grace => {
                tracing::debug!(pid, "grace over: killing the tree");
                tree.kill();
                phase = Phase::Killed;
                timer = after(REAP_TIMEOUT);
            }
            Event::Timer => {
                tracing::warn!(
                    pid,
                    "gemini was not reaped after the kill; answering without its status"
                );
                break;
            }
        }
    }
    Supervised {
        killed,
        status,
        phase,
    }
}

/// Where supervision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing sent to the tree yet.
    Running,
    /// The polite signal was sent; the kill follows at the deadline.
    Grace,
    /// The tree was killed; the deadline bounds the reaping.
    Killed,
}

/// What woke the supervisor.
enum Event {
    Exited(std::io::Result<std::process::ExitStatus>),
    Tripped(Stream),
    /// The caller's cancellation or a deadline.
    Stopped(KillReason),
    /// The grace or the reaping bound is over.
    Timer,
}

/// Writes the prompt, then closes stdin (dropping it) so the CLI sees EOF.
async fn feed(stdin: Option<ChildStdin>, bytes: Vec<u8>, stop: CancellationToken) {
    let Some(mut stdin) = stdin else { return };
    if bytes.is_empty() {
        return;
    }
    tokio::select! {
        _ = stop.cancelled() => {}
        // A child that exits or closes stdin early makes the write fail with EPIPE: not an error
        // of the run, whose exit status and output tell what happened.
        _ = async {
            if stdin.write_all(&bytes).await.is_ok() {
                let _ = stdin.shutdown().await;
            }
        } => {}
    }
}

/// Waits until both readers have ended (EOF, or abandoned after `stop`). Cancel-safe.
async fn eof(out: &mut Task<Head>, err: &mut Task<Tail>) {
    out.join().await;
    err.join().await;
}

/// A spawned task that is aborted when dropped, so an abandoned run leaves no reader behind.
struct Task<T> {
    handle: JoinHandle<T>,
    output: Option<T>,
}

impl<T: Send + 'static> Task<T> {
    fn spawn(future: impl std::future::Future<Output = T> + Send + 'static) -> Self {
        Task {
            handle: tokio::spawn(future),
            output: None,
        }
    }

    /// Waits for the task to end and keeps its output. Cancel-safe, may be called again.
    async fn join(&mut self) {
        if self.output.is_some() {
            return;
        }
        match (&mut self.handle).await {
            Ok(output) => self.output = Some(output),
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => panic!("a process supervision task was cancelled: {e}"),
            },
        }
    }

    /// The output of a task that was joined.
    fn take(&mut self) -> T {
        self.output.take().expect("task joined before take")
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// Linux: sweeps a run's escaped descendants when its future is dropped mid-run, since the sweep
/// at the end of `run` will not happen then.
#[cfg(target_os = "linux")]
struct AbortSweep {
    marker: sweep::Marker,
    pgid: Option<i32>,
}

#[cfg(target_os = "linux")]
impl Drop for AbortSweep {
    fn drop(&mut self) {
        let Some(pgid) = self.pgid else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let marker = self.marker.clone();
            runtime.spawn(async move { sweep::sweep(&marker, pgid, pgid).await });
        }
    }
}

/// What both spawn paths ([`run`], [`Live::spawn`]) set up before the tree starts: the command
/// with its pipes and environment, the private temporary directory, and (Linux) the sweep marker.
struct Prepared {
    command: CommandWrap,
    tmp: Option<PrivateTmp>,
    #[cfg(target_os = "linux")]
    marker: sweep::Marker,
}

fn prepare(spec: &RunSpec) -> Result<Prepared, SpawnError> {
    // A missing working directory fails the spawn with NotFound, which would read as "gemini not
    // found" (127).
    if !spec.cwd.is_dir() {
        return Err(SpawnError::Other(format!(
            "working directory {} is not a directory",
            spec.cwd.display()
        )));
    }
    argv::check(&argv::CommandLine {
        program: &spec.program,
        args: &spec.args,
        env_clear: spec.env_clear,
        env: &spec.env,
        env_remove: &spec.env_remove,
    })?;
    let tmp = match spec.private_tmp {
        true => Some(PrivateTmp::new().map_err(|e| {
            SpawnError::Other(format!("cannot create a private temporary directory: {e}"))
        })?),
        false => None,
    };
    #[cfg(target_os = "linux")]
    let marker = sweep::Marker::new();

    let command = CommandWrap::with_new(&spec.program, |c| {
        c.args(&spec.args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if spec.env_clear {
            c.env_clear();
        }
        for name in &spec.env_remove {
            c.env_remove(name);
        }
        c.envs(spec.env.iter().map(|(k, v)| (k, v)));
        if let Some(tmp) = &tmp {
            c.envs(tmp.env());
        }
        #[cfg(target_os = "linux")]
        if let Some((k, v)) = marker.env() {
            c.env(k, v);
        }
    });
    Ok(Prepared {
        command,
        tmp,
        #[cfg(target_os = "linux")]
        marker,
    })
}

/// A long-lived child with its three pipes handed to the caller (the ACP agent): the same tree,
/// parent-death signal and sweep as [`run`], without the one-shot supervision. Dropping it kills
/// the tree.
pub struct Live {
    tree: Tree,
    #[cfg(target_os = "linux")]
    marker: sweep::Marker,
    _tmp: Option<PrivateTmp>,
    /// The child's stdin.
    pub stdin: Option<ChildStdin>,
    /// The child's stdout.
    pub stdout: Option<tokio::process::ChildStdout>,
    /// The child's stderr.
    pub stderr: Option<tokio::process::ChildStderr>,
}

impl Live {
    /// Spawns `spec` (its `stdin` bytes and output cap are ignored: the caller owns the pipes).
    /// Spawn from a long-lived thread, as for [`run`].
    pub fn spawn(spec: &RunSpec) -> Result<Live, SpawnError> {
        let Prepared {
            command,
            tmp,
            #[cfg(target_os = "linux")]
            marker,
        } = prepare(spec)?;
        let mut tree = Tree::spawn(command).map_err(|e| tree::spawn_error(e, &spec.program))?;
        let (stdin, stdout, stderr) = tree.take_pipes();
        tracing::debug!(pid = tree.pid(), program = %spec.program.display(), "long-lived gemini spawned");
        Ok(Live {
            tree,
            #[cfg(target_os = "linux")]
            marker,
            _tmp: tmp,
            stdin,
            stdout,
            stderr,
        })
    }

    /// The leader's pid.
    pub fn pid(&self) -> u32 {
        self.tree.pid()
    }

    /// Waits for the direct child to exit. Cancel-safe.
    pub async fn wait(&mut self) -> Option<Termination> {
        self.tree.wait_leader().await.ok().map(tree::termination)
    }

    /// Ends the whole tree: the polite signal, `grace` for the leader to exit, the kill, then (on
    /// Linux) the sweep of escaped descendants. Returns how the leader ended, when known.
    pub async fn shutdown(mut self, grace: Duration) -> Option<Termination> {
        let mut status = None;
        if self.tree.terminate() {
            if let Ok(s) = tokio::time::timeout(grace, self.tree.wait_leader()).await {
                status = s.ok().map(tree::termination);
            }
        }
        self.tree.kill();
        if status.is_none() {
            if let Ok(s) = tokio::time::timeout(REAP_TIMEOUT, self.tree.wait_leader()).await {
                status = s.ok().map(tree::termination);
            }
        }
        #[cfg(target_os = "linux")]
        {
            let pid = self.tree.pid() as i32;
            sweep::sweep(&self.marker, pid, pid).await;
        }
        self.tree.finish();
        status
    }
}
