//! The one path of every call that runs Gemini: admit (workspace lock, start gate, a slot), run
//! the backend under the one retry and fallback policy, finish (validate a structured answer,
//! save the answer) — and the bookkeeping around it: calls in flight, and a cancellation that is
//! the client's or the server's shutdown.

pub(crate) mod admit;
mod guards;
pub(crate) mod retry;
mod servers;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::acp::pool::{self, Block, Pool};
use crate::approval::ApprovalMode;
use crate::config::{Backend, Config};
use crate::deadline::Deadlines;
use crate::error::{ErrorKind, Failure, RunFacts};
use crate::gemini::command::{self, PromptRequest, Reader};
use crate::gemini::gate::{self, Waiter};
use crate::gemini::launch::{spawn_failure, Launch};
use crate::gemini::outcome::Success;
use crate::gemini::process::{self, RunOutput, RunSpec};
use crate::oneshot::{self, Attempt, CancelCause};
use crate::progress::Progress;
use crate::structured::{self, PreparedSchema};
use admit::Admission;
use guards::{AbortOnDrop, ActiveGuard};
use retry::{Attempted, Context, Try};

/// Which contract a prompt call answers under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surface {
    /// The reference's prompt tools: a fresh conversation per call unless `session_id` continues
    /// one; the answer is the last model turn's text; a stop reason other than the end of the
    /// turn is a failure.
    Reference,
    /// The `acp` set's `gemini` (gemini_mcp's contract): always a warm agent, the workspace's
    /// session continued; the answer is every message of the turn, whatever its stop reason.
    Agent,
}

/// A prompt call, decoded and checked against the operator's policy: what a backend runs.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// The tool, for the logs.
    pub tool: &'static str,
    /// The contract the call answers under.
    pub surface: Surface,
    /// Prompt, context, model, session; the approval mode and the checked paths filled in.
    pub request: PromptRequest,
    /// The caller's schema (`gemini_prompt_structured`), prepared.
    pub schema: Option<Arc<PreparedSchema>>,
    /// The approval mode, under the ceiling.
    pub mode: ApprovalMode,
    /// The workspace, canonical and under the roots.
    pub cwd: PathBuf,
    /// Where the answer is also written (`save_file`), checked; checked again when written.
    pub save: Option<crate::save::SaveTarget>,
    /// The call's own deadlines (the operator's apply on top).
    pub deadlines: Deadlines,
    /// Keep every event of the run (`full_output`).
    pub full_output: bool,
    /// Report the run's argv, exit and timings (`debug`).
    pub debug: bool,
    /// A structured answer that does not validate gets one repair turn (`repair`).
    pub repair: bool,
    /// `approval_mode: "ask"`: the agent's permission requests are questions to the client's
    /// user (the call runs on a warm agent whatever the backend).
    pub asking: Option<crate::ask::Asking>,
}

impl Job {
    /// The most the call's tools may do: its mode, or with `ask` the ceiling the user's answers
    /// are bounded by (what the retry and repair guards must assume ran).
    pub(crate) fn writing_mode(&self) -> ApprovalMode {
        match &self.asking {
            Some(a) => a.ceiling.max(self.mode),
            None => self.mode,
        }
    }
}

/// A prompt call's answer: the success, and the validated value of a structured answer.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// The answer text and what the run reported with it.
    pub success: Success,
    /// `gemini_prompt_structured`: the value that validated.
    pub json: Option<Value>,
    /// The `acp` set's `gemini`: the agent's turn (thought, stop reason, tool calls, plan, pid);
    /// its messages are `success.answer`.
    pub turn: Option<pool::Answer>,
}

impl Answer {
    /// A prompt tool's answer, before its validation.
    fn of(success: Success) -> Self {
        Answer {
            success,
            json: None,
            turn: None,
        }
    }

    /// The `acp` set's answer: every message of the agent's turn is the answer text (moved, not
    /// held twice), the rest of the turn kept as it came.
    fn turn(mut turn: pool::Answer) -> Self {
        let success = Success {
            answer: std::mem::take(&mut turn.messages),
            session_id: Some(turn.session_id.clone()),
            model: Some(turn.model.clone()).filter(|m| !m.is_empty()),
            stats: None,
            duration: std::time::Duration::ZERO,
            exit_code: 0,
        };
        Answer {
            success,
            json: None,
            turn: Some(turn),
        }
    }
}

/// What a call's optional arguments and the retry policy add to its result, on success and on
/// failure alike.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Every event of the last attempt (`full_output`).
    pub events: Option<Vec<Value>>,
    /// argv, exit, timings and stderr tail of the last attempt (`debug`).
    pub debug: Option<Value>,
    /// What the retry policy did.
    pub policy: Option<Value>,
    /// The fallback models tried, in order (the last one answered when the call succeeded).
    pub fallbacks: Vec<String>,
    /// Where the answer was written, or why it could not be (`save_file`).
    pub saved: Option<Result<PathBuf, String>>,
    /// Whether a repair turn ran, and made the answer validate (`repaired`).
    pub repaired: Option<bool>,
    /// `approval_mode: "ask"`: each permission the agent asked for, and who decided it.
    pub approvals: Vec<Value>,
    /// The call ran one-shot on the warm backend: why its agent could not.
    pub ran_one_shot: Option<String>,
    /// Why another CLI start may have deleted the run's new session (its gate's lease ran out).
    pub session_at_risk: Option<String>,
    /// The user's MCP servers the call's CLI was not let start, why, and the fix.
    pub servers_left_out: Option<String>,
}

impl Finished {
    /// A call that failed before any attempt ran.
    fn failed(job: &Job, f: Failure, started: Instant) -> Finished {
        let result = Err(failed(job, f, started));
        let report = Report::default();
        Finished { result, report }
    }
}

impl Report {
    /// What the attempts left for the report: the last one's debug report and approvals; its
    /// events, or for the `acp` set (`full_output`) every attempt's, in order.
    fn of(job: &Job, retried: &mut retry::Retried<Answer, Last>) -> Report {
        let Last {
            events,
            debug,
            approvals,
            no_agent: _,
            ran_one_shot,
        } = std::mem::take(&mut retried.left);
        let events = match job.surface {
            // Every attempt's messages, in order: the transcript of the whole call.
            Surface::Agent => job.full_output.then(|| {
                let mut all: Vec<Value> = std::mem::take(&mut retried.earlier)
                    .into_iter()
                    .flat_map(|l| l.events.unwrap_or_default())
                    .collect();
                all.extend(events.unwrap_or_default());
                all
            }),
            // The last run's stream-json events, as the CLI printed them.
            Surface::Reference => events,
        };
        Report {
            events,
            debug,
            policy: retried.report.take(),
            fallbacks: std::mem::take(&mut retried.fallbacks),
            saved: None,
            repaired: None,
            approvals,
            ran_one_shot,
            session_at_risk: None,
            servers_left_out: None,
        }
    }
}

/// A failed call's failure with its duration, logged; a CLI too old for a flag the server passes
/// is also the operator's warning.
fn failed(job: &Job, mut f: Failure, started: Instant) -> Failure {
    if f.run.duration_ms == 0 && f.kind != ErrorKind::InputValidation {
        f.run.duration_ms = started.elapsed().as_millis() as u64;
    }
    tracing::debug!(tool = job.tool, kind = %f.kind, exit = f.exit_code, "call failed");
    if f.kind == ErrorKind::CliTooOld {
        // An operator problem, not a caller's: it goes to the log (and so to the client as a log
        // notification) besides the result.
        tracing::warn!(
            "the Gemini CLI refused a flag the server passes: it is too old; upgrade it (npm install -g @google/gemini-cli@latest) and run `geminicli-mcp doctor`"
        );
    }
    f
}

/// What the last attempt left for the report.
#[derive(Debug, Default)]
struct Last {
    events: Option<Vec<Value>>,
    debug: Option<Value>,
    approvals: Vec<Value>,
    /// The warm attempt found no agent, for a reason a one-shot run does not share.
    no_agent: bool,
    /// The attempt ran one-shot on the warm backend: why its agent could not.
    ran_one_shot: Option<String>,
}

/// A finished prompt call.
pub(crate) struct Finished {
    /// The answer or the failure.
    pub result: Result<Answer, Failure>,
    /// What the call's options asked to see.
    pub report: Report,
}

/// The call's workspace and include directories still lie where they were checked (a call may
/// have waited while one was swapped for a link elsewhere).
fn paths_unchanged(job: &Job, request: &PromptRequest) -> Result<(), Failure> {
    crate::policy::unchanged("workspace", &job.cwd)?;
    request
        .include_directories
        .iter()
        .try_for_each(|d| crate::policy::unchanged("include_directories", d))
}

/// Runs every call that starts Gemini. Shared by all clients of the server.
pub(crate) struct Runner {
    config: Config,
    shutdown: CancellationToken,
    admission: Admission,
    pool: Arc<Pool>,
    active: watch::Sender<usize>,
}

impl Runner {
    /// A runner; cancelling `shutdown` ends every run and every wait.
    pub(crate) fn new(config: Config, shutdown: CancellationToken) -> Self {
        let admission = Admission::new(config.max_concurrency, config.start_gate, shutdown.clone());
        let pool = Arc::new(Pool::new(
            config.clone(),
            shutdown.clone(),
            admission.start_gates(),
        ));
        Runner {
            config,
            shutdown,
            admission,
            pool,
            active: watch::Sender::new(0),
        }
    }

    /// The warm agents (for the `acp` set's listings and resets).
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Waits until no call is in progress.
    pub(crate) async fn idle(&self) {
        let mut rx = self.active.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// A token that fires on the client's cancellation `ct` or on the server's shutdown; the
    /// guard ends the task that links them.
    fn run_token(&self, ct: CancellationToken) -> (CancellationToken, AbortOnDrop<()>) {
        let run_ct = self.shutdown.child_token();
        let link = {
            let run_ct = run_ct.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = ct.cancelled() => run_ct.cancel(),
                    _ = run_ct.cancelled() => {}
                }
            })
        };
        (run_ct, AbortOnDrop(link))
    }

    /// Whose cancellation ended a run.
    fn cause(&self) -> CancelCause {
        if self.shutdown.is_cancelled() {
            CancelCause::Shutdown
        } else {
            CancelCause::Client
        }
    }

    /// Whether a prompt call goes to a warm agent: the `acp` set's always; a prompt tool's on the
    /// warm backend or with `ask`, unless it asks for the sandbox (`gemini --acp --sandbox` reads
    /// stdin to its end before it relaunches, so no ACP message ever reaches the agent: those
    /// calls run one-shot).
    fn warm(&self, job: &Job, request: &PromptRequest) -> bool {
        job.surface == Surface::Agent
            || ((self.config.acp.backend == Backend::Acp || job.asking.is_some())
                && !request.sandbox)
    }

    /// One attempt of `job` with `request` on its backend.
    async fn attempt(
        &self,
        job: &Job,
        request: PromptRequest,
        limits: Deadlines,
        run_ct: &CancellationToken,
        progress: &Progress,
        started: Instant,
    ) -> Attempted<Answer, Last> {
        if !self.warm(job, &request) {
            return self
                .oneshot_attempt(job, request, limits, run_ct, progress, started)
                .await;
        }
        let warm = self
            .warm_attempt(job, request.clone(), limits, run_ct, progress)
            .await;
        // An agent that cannot start leaves a prompt tool's call to a one-shot run, said in the
        // result; `ask` needs the agent, and the `acp` set is the agent.
        if !warm.left.no_agent || job.surface != Surface::Reference || job.asking.is_some() {
            return warm;
        }
        let why = warm.result.err().map(|f| f.message).unwrap_or_default();
        progress
            .say(format!(
                "the Gemini ACP agent could not start; running this call one-shot ({why})"
            ))
            .await;
        let mut done = self
            .oneshot_attempt(job, request, limits, run_ct, progress, started)
            .await;
        done.left.ran_one_shot = Some(format!(
            "the warm backend's agent could not start, so this call ran one-shot (one CLI process, its start-up paid): {why}"
        ));
        done
    }

    /// Runs a prompt call to its end (its CLI's MCP servers decided first), on its backend, under
    /// the retry and fallback policy; then the structured answer validated (with one repair turn
    /// when asked for) and the answer saved. `ct` is the request's cancellation.
    pub(crate) async fn prompt(
        &self,
        mut job: Job,
        ct: CancellationToken,
        progress: Progress,
    ) -> Finished {
        let _active = ActiveGuard::new(&self.active);
        let started = Instant::now();
        let (run_ct, _unlink) = self.run_token(ct);
        let _reporter = progress.report(self.config.heartbeat, run_ct.clone());
        let limits = self.config.policy.deadlines.with(job.deadlines);
        let bound = self.config.mcp_server_timeout;
        let widening = servers::widening(job.asking.is_some(), job.mode);
        let (cwd, request) = (&job.cwd, &mut job.request);
        let left_out = match servers::apply(cwd, request, widening, bound, &progress, &run_ct).await
        {
            Ok(note) => note,
            Err(f) => return Finished::failed(&job, f, started),
        };
        let ctx = Context {
            quota: &self.config.policy.quota,
            mode: job.writing_mode(),
            total: limits.total,
            progress: &progress,
            stop: &run_ct,
        };
        let mut retried = retry::with_policy(ctx, job.request.model.clone(), |t: Try| {
            let limits = Deadlines {
                total: t.total,
                ..limits
            };
            let (job, run_ct, progress) = (&job, &run_ct, &progress);
            async move {
                let mut request = job.request.clone();
                let fallback = (t.attempt > 0).then(|| t.model.clone()).flatten();
                request.model = t.model;
                let mut done = self
                    .attempt(job, request, limits, run_ct, progress, started)
                    .await;
                if let (Some(model), Some(events), Surface::Agent) =
                    (fallback, done.left.events.as_mut(), job.surface)
                {
                    // The transcript says where the next attempt starts and on which model.
                    events.insert(0, serde_json::json!({"kind": "fallback", "model": model}));
                }
                done
            }
        })
        .await;
        progress.flush().await;
        let (mut report, tools_ran) = (Report::of(&job, &mut retried), retried.tools_ran);
        report.session_at_risk = progress.at_risk();
        report.servers_left_out = left_out;
        let result = match retried.result {
            Ok(answer) => match self.finish(&job, answer).await {
                Err(f) if self.may_repair(&job, &f, tools_ran) => {
                    let (result, repaired) = self.repair(&job, f, limits, &run_ct, &progress).await;
                    report.repaired = Some(repaired);
                    result
                }
                done => done,
            },
            Err(f) => Err(f),
        };
        let result = result
            .map(|mut answer| {
                if job.surface == Surface::Agent {
                    // gemini_mcp's duration is the call's, start-up and retries included.
                    answer.success.duration = started.elapsed();
                }
                answer
            })
            .map_err(|f| failed(&job, f, started));
        if let (Ok(answer), Some(path)) = (&result, &job.save) {
            report.saved = Some(crate::save::save_answer(path, &answer.success.answer));
        }
        Finished { result, report }
    }

    /// One attempt on the one-shot backend: the command line built, then the workspace's lock,
    /// its start gate and a slot, then the run.
    async fn oneshot_attempt(
        &self,
        job: &Job,
        request: PromptRequest,
        limits: Deadlines,
        run_ct: &CancellationToken,
        progress: &Progress,
        started: Instant,
    ) -> Attempted<Answer, Last> {
        let refused = |f: Failure| Attempted {
            result: Err(f),
            tools_ran: false,
            left: Last::default(),
        };
        let escape = self.escape(job, Reader::Headless);
        let invocation = match command::build(&request, job.schema.as_deref(), escape) {
            Ok(i) => i,
            Err(f) => return refused(f),
        };
        // Resolved per call: a CLI installed (or PATH fixed) after start-up is found.
        let launch = match Launch::resolve(&self.config) {
            Ok(l) => l,
            Err(f) => return refused(f),
        };
        tracing::debug!(
            tool = job.tool,
            prompt_bytes = request.prompt.len(),
            context_bytes = request.context.as_ref().map_or(0, String::len),
            stdin_bytes = invocation.stdin.len(),
            slash_escaped = invocation.slash_escaped,
            program = %launch.program.display(),
            via = %launch.via,
            args = ?invocation.args,
            "call"
        );
        let resume = request.resume.as_deref();
        // Session runs hold their workspace alone; every other run shares it. Taken before the
        // concurrency slot, so a call waiting for its workspace does not hold a slot.
        let admitted = async {
            let workspace = self
                .admission
                .workspace(&job.cwd, resume.is_some(), run_ct)
                .await?;
            let waiter = Waiter::new(progress, limits);
            let (gate, waited) = self.admission.start_gate(&job.cwd, run_ct, waiter).await?;
            let permit = self.admission.slot(progress, run_ct).await?;
            Ok::<_, Failure>((workspace, (gate, waited), permit))
        };
        let (_workspace, (gate, waited), _permit) = match admitted.await {
            Ok(a) => a,
            Err(f) => return refused(f),
        };
        let limits = limits.less(waited); // the wait counts against first content and total
        if let Err(f) = paths_unchanged(job, &request) {
            return refused(f);
        }
        // New runs start one at a time per workspace until their session's prompt is recorded;
        // a resumed run holds the gate to its end (its stub exists from its start, and an ACP
        // agent starting meanwhile would delete it).
        let (_held, _release) = match resume {
            Some(_) => (Some(gate), None),
            None => (
                None,
                Some(gate::hold_start_gate(
                    gate,
                    job.cwd.clone(),
                    progress.clone(),
                )),
            ),
        };
        let spec = launch.spec(&self.config, &job.cwd, invocation.args, invocation.stdin);
        let attempt = || Attempt {
            progress,
            limits,
            resume,
            full_output: job.full_output,
            debug: job.debug,
            queued_for: started.elapsed(),
        };
        let ran = self.run_restarting(spec, attempt, run_ct).await;
        Attempted {
            result: ran.result.map(Answer::of),
            tools_ran: ran.tools_ran,
            left: Last {
                events: ran.events,
                debug: ran.debug,
                ..Last::default()
            },
        }
    }

    /// Runs `spec` once, and again (at most [`retry::RESTARTS`] times) while the CLI ends asking to be
    /// restarted.
    async fn run_restarting<'a>(
        &self,
        spec: RunSpec,
        attempt: impl Fn() -> Attempt<'a>,
        run_ct: &CancellationToken,
    ) -> oneshot::Ran {
        let mut restarts = 0;
        loop {
            let next = attempt();
            let progress = next.progress;
            let ran = oneshot::run(spec.clone(), next, run_ct.child_token(), || self.cause()).await;
            if restarts == retry::RESTARTS
                || !retry::asks_for_restart(&ran)
                || run_ct.is_cancelled()
            {
                return ran;
            }
            restarts += 1;
            tracing::info!(restarts, "the CLI asked to be restarted (exit 199)");
            progress.event(
                "the Gemini CLI asked to be restarted; restarting it".into(),
                false,
            );
        }
    }

    /// One attempt on a warm agent: the workspace's lock shared (listings and deletions hold it
    /// alone), the paths checked again, then the prompt — a prompt tool's in a fresh session of
    /// the workspace's agent, its text built and checked as for a one-shot run (images go as file
    /// links, not `@` references); the `acp` set's in the workspace's session, as given.
    async fn warm_attempt(
        &self,
        job: &Job,
        request: PromptRequest,
        limits: Deadlines,
        run_ct: &CancellationToken,
        progress: &Progress,
    ) -> Attempted<Answer, Last> {
        let refused = |f: Failure| Attempted {
            result: Err(f),
            tools_ran: false,
            left: Last::default(),
        };
        let blocks = match self.blocks(job, &request) {
            Ok(blocks) => blocks,
            Err(f) => return refused(f),
        };
        let _workspace = match self.admission.workspace(&job.cwd, false, run_ct).await {
            Ok(w) => w,
            Err(f) => return refused(f),
        };
        if let Err(f) = paths_unchanged(job, &request) {
            return refused(f);
        }
        tracing::debug!(tool = job.tool, blocks = blocks.len(), "warm call");
        let call = pool::Call {
            blocks,
            model: request.model.filter(|m| !m.is_empty()),
            mode: job.mode,
            session_id: request.resume,
            cwd: job.cwd.clone(),
            dirs: request.include_directories,
            servers: request.allowed_mcp_server_names,
            limits,
            full_output: job.full_output,
            debug: job.debug,
            asking: job.asking.clone(),
        };
        let ran = match job.surface {
            Surface::Reference => self.pool.warm(call, run_ct, progress).await.map(Answer::of),
            Surface::Agent => self
                .pool
                .prompt(call, run_ct, progress)
                .await
                .map(Answer::turn),
        };
        Attempted {
            result: ran.result,
            tools_ran: ran.tools_ran,
            left: Last {
                events: ran.events,
                debug: ran.debug,
                approvals: ran.approvals,
                no_agent: ran.no_agent,
                ran_one_shot: None,
            },
        }
    }

    /// The call's command escape for `reader` ([`command::escape_for`], for both backends).
    fn escape(&self, job: &Job, reader: Reader) -> Option<Reader> {
        let asking = job.asking.is_some();
        command::escape_for(self.config.slash_commands, reader, job.mode, asking)
    }

    /// The prompt's blocks on a warm agent. A prompt tool's text is what a one-shot run would
    /// read on stdin (context block, structured instructions), its command forms escaped for
    /// the ACP agent, its images file links; the `acp` set's prompt goes as given but for that
    /// escape, its context as an embedded resource and its image as an image block. Only the
    /// first block can start a command: every later one reads `@…` there (docs/acp.md).
    fn blocks(&self, job: &Job, request: &PromptRequest) -> Result<Vec<Block>, Failure> {
        command::check_names(request)?;
        let escape = self.escape(job, Reader::Acp);
        if job.surface == Surface::Agent {
            let (text, _) = command::escape_command(request.prompt.clone(), escape);
            let mut blocks = vec![Block::Text(text)];
            blocks.extend(request.context.clone().map(Block::Context));
            blocks.extend(request.images.iter().cloned().map(Block::Image));
            return Ok(blocks);
        }
        let mut text_only = request.clone();
        text_only.image_refs.clear();
        let (text, _) = command::prompt_text(&text_only, job.schema.as_deref(), escape)?;
        let mut blocks = vec![Block::Text(text)];
        blocks.extend(request.images.iter().cloned().map(Block::Link));
        Ok(blocks)
    }

    /// Whether a structured answer that failed validation (`f`) gets a repair turn: asked for,
    /// in a session that can be continued, and no tool ran that may have written (the turn
    /// could run it again).
    fn may_repair(&self, job: &Job, f: &Failure, tools_ran: bool) -> bool {
        job.repair
            && f.kind == ErrorKind::SchemaMismatch
            && f.run.session_id.is_some()
            && crate::approval::may_repeat(tools_ran, job.writing_mode())
    }

    /// One follow-up turn in the answer's session naming the validation errors and asking for
    /// the corrected JSON only, then the validation again; returns the outcome and whether the
    /// answer now validates. A failed repair keeps the first failure, noted.
    async fn repair(
        &self,
        job: &Job,
        first: Failure,
        limits: Deadlines,
        run_ct: &CancellationToken,
        progress: &Progress,
    ) -> (Result<Answer, Failure>, bool) {
        progress
            .say("the answer does not validate: asking once more for the corrected JSON".into())
            .await;
        let mut request = job.request.clone();
        let issues: Vec<(&str, &str)> = first
            .invalid
            .iter()
            .flat_map(|i| &i.errors)
            .map(|e| (e.instance_path.as_str(), e.message.as_str()))
            .collect();
        let schema = job
            .schema
            .as_ref()
            .map(|s| s.schema().clone())
            .unwrap_or_default();
        request.prompt = structured::repair_prompt(&first.message, &issues, &schema);
        request.context = None;
        request.image_refs.clear();
        request.images.clear();
        request.resume = first.run.session_id.clone();
        // The follow-up carries its own instructions: no schema block again.
        let follow_up = Job {
            request: request.clone(),
            schema: None,
            ..job.clone()
        };
        let ran = self
            .attempt(
                &follow_up,
                request,
                limits,
                run_ct,
                progress,
                Instant::now(),
            )
            .await;
        let again = match ran.result {
            Ok(answer) => self.finish(job, answer).await,
            Err(f) => Err(f),
        };
        match again {
            Ok(answer) => (Ok(answer), true),
            Err(f) => {
                let why = format!("one repair turn did not fix it: {}", f.message);
                (Err(first.note(&why)), false)
            }
        }
    }

    /// A structured answer validated against its schema; the answer becomes its canonical JSON.
    async fn finish(&self, job: &Job, answer: Answer) -> Result<Answer, Failure> {
        let Some(schema) = job.schema.clone() else {
            return Ok(answer);
        };
        let success = answer.success;
        // Extraction and validation are CPU-bound on answers of up to the output cap: off the
        // async workers, so other calls' progress and cancellations are not held up.
        let (checked, mut success) = tokio::task::spawn_blocking(move || {
            let checked = structured::extract_and_validate(&schema, &success.answer);
            (checked, success)
        })
        .await
        .map_err(|e| {
            Failure::new(
                ErrorKind::Unknown,
                format!("validating the structured answer failed: {e}"),
            )
        })?;
        match checked {
            Ok(ok) => {
                success.answer = ok.canonical;
                Ok(Answer {
                    json: Some(ok.value),
                    ..Answer::of(success)
                })
            }
            Err(err) => Err(Failure::with_exit(
                ErrorKind::SchemaMismatch,
                success.exit_code,
                err.reason.summary(),
            )
            .with_run(RunFacts {
                session_id: success.session_id,
                model: success.model,
                stats: success.stats,
                duration_ms: success.duration.as_millis() as u64,
                ..RunFacts::default()
            })
            // The answer moves into the failure as its raw response: never held twice.
            .with_invalid(err.errors, success.answer)),
        }
    }

    /// Runs the CLI with `args` and no prompt in `cwd` (a session listing or deletion), holding
    /// the workspace alone: a listing writes titles into session files and a deletion removes
    /// them, and the CLI's start-up clean-up would delete a new ACP session meanwhile.
    pub(crate) async fn cli(
        &self,
        cwd: &Path,
        args: Vec<std::ffi::OsString>,
        ct: CancellationToken,
    ) -> Result<RunOutput, Failure> {
        let _active = ActiveGuard::new(&self.active);
        let launch = Launch::resolve(&self.config)?;
        let (run_ct, _unlink) = self.run_token(ct);
        let untracked = Progress::new(None, crate::progress::Style::Summary, None);
        let _workspace = self.admission.workspace(cwd, true, &run_ct).await?;
        let _gate = self.admission.untracked_gate(cwd, &run_ct).await?;
        let _permit = self.admission.slot(&untracked, &run_ct).await?;
        let spec = launch.spec(&self.config, cwd, args, Vec::new());
        let out = process::run(spec, run_ct, None)
            .await
            .map_err(|e| spawn_failure(e, "gemini"))?;
        if out.killed.is_some() {
            return Err(Failure::cancelled("the CLI was stopped before it finished"));
        }
        Ok(out)
    }
}
