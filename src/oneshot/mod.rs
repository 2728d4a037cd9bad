//! One attempt of the one-shot backend: one supervised CLI process for one prompt, its stream-json
//! lines fed to the call's progress as they arrive, its deadlines watched, and its end classified
//! into the answer or a typed failure.

mod classify;
pub mod events;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::deadline::{self, Deadlines};
use crate::error::{tail_lossy, ErrorKind, Failure, STDERR_TAIL_BYTES};
use crate::gemini::auth;
use crate::gemini::launch::spawn_failure;
use crate::gemini::outcome::Success;
use crate::gemini::process::{self, Activity, KillReason, RunSpec, Stream, Watch};
use crate::gemini::session;
use crate::progress::{Hint, Progress, PREVIEW_CHARS};
pub(crate) use classify::CancelCause;
use events::Transcript;

/// What one attempt is asked to do besides running `spec`.
pub(crate) struct Attempt<'a> {
    /// The call's progress: fed with every line, read by the deadlines and the start gate.
    pub progress: &'a Progress,
    /// The deadlines of this attempt (a retry has less of the total left).
    pub limits: Deadlines,
    /// The session the prompt resumes (`--resume`), if any.
    pub resume: Option<&'a str>,
    /// Keep every stream-json event (`full_output`).
    pub full_output: bool,
    /// Report argv, exit, timings and the stderr tail (`debug`).
    pub debug: bool,
    /// How long the call waited before this attempt (`debug`).
    pub queued_for: Duration,
}

/// One attempt's end.
pub(crate) struct Ran {
    /// The answer, or what went wrong.
    pub result: Result<Success, Failure>,
    /// Whether the model called a tool.
    pub tools_ran: bool,
    /// Every stream-json event (`full_output`).
    pub events: Option<Vec<Value>>,
    /// argv, exit, kill reason, timings, byte counts and the stderr tail (`debug`).
    pub debug: Option<Value>,
}

/// Runs `spec` to its end; `kill` ends it as a cancellation, `cause` says whose.
pub(crate) async fn run(
    spec: RunSpec,
    attempt: Attempt<'_>,
    kill: CancellationToken,
    cause: impl Fn() -> CancelCause,
) -> Ran {
    let Attempt {
        progress,
        limits,
        resume,
        full_output,
        debug,
        queued_for,
    } = attempt;
    let cwd = spec.cwd.clone();
    let child_env = auth::ChildEnv::of(&spec);
    let argv = debug.then(|| (spec.program.clone(), spec.args.clone()));
    // Streamed lines only feed progress; the transcript is parsed once at the end from the
    // kept stdout, which holds the same lines (the supervisor hands over exactly what it keeps).
    // Each line is read where it lies in the kept bytes and only what progress needs is sent on,
    // so a line as long as the cap is held once, not twice.
    let (tx, rx) = mpsc::unbounded_channel::<Observed>();
    let activity = Activity::new();
    let started = Instant::now();
    let watch = Watch {
        lines: Some(observer(tx)),
        activity: Some(activity.clone()),
        deadline: limits.any().then(|| {
            let progress = progress.clone();
            let activity = activity.clone();
            let passed: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
                Box::pin(async move {
                    deadline::first_to_pass(
                        limits,
                        started,
                        || progress.first_content(),
                        || activity.last(),
                    )
                    .await
                });
            passed
        }),
    };
    progress.started();
    let (run, ()) = tokio::join!(
        process::run_observed(spec, kill, watch),
        observe(rx, progress)
    );
    let mut out = match run {
        Ok(out) => out,
        Err(e) => {
            return Ran {
                result: Err(spawn_failure(e, "gemini")),
                tools_ran: false,
                events: None,
                debug: None,
            }
        }
    };
    tracing::debug!(
        exit = ?out.status,
        killed = ?out.killed,
        duration_ms = out.duration.as_millis() as u64,
        stdout_bytes = out.stdout_total,
        stderr_bytes = out.stderr_total,
        "run finished"
    );
    let events = full_output.then(|| events::all_events(&out.stdout));
    let debug = argv.map(|(program, args)| debug_report(&program, &args, &cwd, &out, queued_for));
    // The text is built inside the kept stdout's own buffer: a flood at the cap is held once
    // while it is parsed, not twice (raw bytes and their text side by side).
    let transcript = Transcript::from_stdout_owned(std::mem::take(&mut out.stdout));
    if let Some(id) = resume {
        // Still under the workspace's exclusive lock: no other start can clean up first.
        remove_session_stubs(&cwd, id);
    }
    let deadline_ms = match out.killed {
        Some(KillReason::Deadline(limit)) => limits.of(limit),
        _ => None,
    };
    let tools_ran = !transcript.tools.is_empty();
    let result = classify::classify(&out, transcript, cause(), deadline_ms)
        .map_err(|f| auth::with_auth_fix(f, &cwd, &child_env))
        .and_then(|success| same_session(success, resume));
    Ran {
        result,
        tools_ran,
        events,
        debug,
    }
}

/// What `debug` shows of a run: argv (flags only: the prompt is on stdin), cwd, exit, kill
/// reason, timings, byte counts and the stderr tail.
fn debug_report(
    program: &Path,
    args: &[std::ffi::OsString],
    cwd: &Path,
    out: &process::RunOutput,
    queued_for: Duration,
) -> Value {
    json!({
        "program": program.display().to_string(),
        "argv": args.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "cwd": cwd.display().to_string(),
        "exit": out.status.map(|t| t.code()),
        "killed": out.killed.map(|k| format!("{k:?}")),
        "queuedMs": queued_for.as_millis() as u64,
        "runMs": out.duration.as_millis() as u64,
        "stdoutBytes": out.stdout_total,
        "stderrBytes": out.stderr_total,
        "stderrTail": tail_lossy(&out.stderr, STDERR_TAIL_BYTES),
    })
}

/// What one streamed line tells progress.
enum Observed {
    /// Text, a tool, a retry.
    Hint(Hint),
    /// The session id of an `init` event.
    Session(String),
}

/// What `line` of `stream` tells progress: text and tools from stdout, the CLI's retry notes from
/// stderr (it retries failed API calls for minutes, saying so only there), and the session id of
/// the `init` event.
fn observed(stream: Stream, line: &[u8]) -> Vec<Observed> {
    let mut found = Vec::new();
    if stream == Stream::Stdout && line.starts_with(b"{\"type\":\"init\"") {
        if let Some(events::Event::Init {
            session_id: Some(id),
            ..
        }) = events::parse_line(line)
        {
            found.push(Observed::Session(id));
        }
    }
    let hint = match stream {
        Stream::Stdout => events::progress_hint(line, PREVIEW_CHARS),
        Stream::Stderr => events::retry_hint(line),
    };
    found.extend(hint.map(Observed::Hint));
    found
}

/// What the run's lines are handed to: what each tells progress goes to `tx`.
fn observer(tx: mpsc::UnboundedSender<Observed>) -> process::LineFn {
    std::sync::Arc::new(move |stream, line| {
        // A receiver that went away only means nobody wants progress any more.
        for observed in observed(stream, line) {
            let _ = tx.send(observed);
        }
    })
}

/// Feeds what the streamed lines told to `progress`; the first session id counts.
async fn observe(mut rx: mpsc::UnboundedReceiver<Observed>, progress: &Progress) {
    let mut session_seen = false;
    while let Some(observed) = rx.recv().await {
        match observed {
            Observed::Session(id) if !session_seen => {
                progress.set_session(id);
                session_seen = true;
            }
            Observed::Session(_) => {}
            Observed::Hint(hint) => progress.observe(hint),
        }
    }
}

/// A resumed run must answer in the session it was asked to resume.
fn same_session(success: Success, asked: Option<&str>) -> Result<Success, Failure> {
    let Some(asked) = asked else {
        return Ok(success);
    };
    if success
        .session_id
        .as_deref()
        .is_some_and(|id| id.eq_ignore_ascii_case(asked))
    {
        return Ok(success);
    }
    let message = format!(
        "asked to resume session {asked}, but the CLI answered in session {}",
        success.session_id.as_deref().unwrap_or("(none)")
    );
    Err(
        Failure::with_exit(ErrorKind::SessionNotFound, success.exit_code, message).with_run(
            crate::error::RunFacts {
                partial_response: Some(std::sync::Arc::new(success.answer)),
                session_id: success.session_id,
                model: success.model,
                stats: success.stats,
                duration_ms: success.duration.as_millis() as u64,
                ..Default::default()
            },
        ),
    )
}

/// Removes the stub the CLI leaves when a session is resumed in a later minute (see
/// `gemini::session`), so the next start in the workspace does not delete the session.
fn remove_session_stubs(workspace: &Path, session_id: &str) {
    let Some(chats) = session::gemini_dir().and_then(|g| session::chats_dir(&g, workspace)) else {
        return;
    };
    for path in session::remove_stubs(&chats, session_id) {
        tracing::debug!(path = %path.display(), "removed a resumed session's stub file");
    }
}
