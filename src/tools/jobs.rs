//! The `jobs` tool set: a prompt call run as a background job the model starts
//! (`gemini_start`), waits on or peeks at (`gemini_wait`), cancels (`gemini_cancel`) and lists
//! (`gemini_jobs`) — for clients that cut a call after a fixed time, and for work the model hands
//! off while it goes on. Their arguments and definitions; the MCP layer runs them, since a job is
//! a task of its task store.

use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::args;
use super::prompt::{GEMINI_PROMPT, GEMINI_PROMPT_STRUCTURED, GEMINI_PROMPT_WITH_CONTEXT};

/// `gemini_start`.
pub(crate) const GEMINI_START: &str = "gemini_start";
/// `gemini_wait`.
pub(crate) const GEMINI_WAIT: &str = "gemini_wait";
/// `gemini_cancel`.
pub(crate) const GEMINI_CANCEL: &str = "gemini_cancel";
/// `gemini_jobs`.
pub(crate) const GEMINI_JOBS: &str = "gemini_jobs";

/// `gemini_wait`'s wait when `timeout_s` is not given, in seconds: under the shortest tool-call
/// timeout of the common clients (30 s), so a plain wait is never cut.
pub(crate) const DEFAULT_WAIT_S: u64 = 25;
/// The longest wait `gemini_wait` takes, in seconds: under the 300 s most clients that cut at all
/// allow (a wait a client cuts earlier leaves its jobs running).
pub(crate) const MAX_WAIT_S: u64 = 240;
/// Most jobs one `gemini_wait` waits on.
pub(crate) const MAX_WAIT_JOBS: usize = 16;

/// One of the job tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobTool {
    /// `gemini_start`.
    Start,
    /// `gemini_wait`.
    Wait,
    /// `gemini_cancel`.
    Cancel,
    /// `gemini_jobs`.
    Jobs,
}

impl JobTool {
    /// The tool named `name`, if it is one of the set.
    pub(crate) fn from_name(name: &str) -> Option<JobTool> {
        match name {
            GEMINI_START => Some(JobTool::Start),
            GEMINI_WAIT => Some(JobTool::Wait),
            GEMINI_CANCEL => Some(JobTool::Cancel),
            GEMINI_JOBS => Some(JobTool::Jobs),
            _ => None,
        }
    }
}

/// Arguments of `gemini_start`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct StartArgs {
    /// The prompt tool the job runs: gemini_prompt (default), gemini_prompt_with_context or
    /// gemini_prompt_structured (and gemini, when the acp tool set is on).
    #[serde(default)]
    pub tool: Option<String>,
    /// That tool's arguments, exactly as a direct call takes them (prompt, workspace, …).
    pub arguments: Map<String, Value>,
    /// A key of yours for this job: a start with a key already used attaches to that job (no
    /// second run) while it is kept; the same key with other arguments is refused.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `gemini_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WaitArgs {
    /// The jobs to wait on (1 to 16 job_ids of gemini_start): the wait ends when one of them has
    /// finished.
    pub job_ids: Vec<String>,
    /// Seconds to wait at most (default 25, at most 240); 0 looks without waiting. Keep it under
    /// your client's tool-call timeout: a wait the client cuts leaves the jobs running.
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// Arguments of `gemini_cancel`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CancelArgs {
    /// The job to cancel (a job_id of gemini_start).
    pub job_id: String,
}

/// Arguments of `gemini_jobs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct JobsArgs {}

/// A prompt call's `idempotency_key`, when its arguments carry one (a non-empty string; another
/// type is the tool's own argument error).
pub(crate) fn call_key(arguments: Option<&rmcp::model::JsonObject>) -> Option<String> {
    let key = arguments?.get("idempotency_key")?.as_str()?;
    (!key.is_empty()).then(|| key.to_string())
}

/// The tools a job may run: the prompt tools, and the `acp` set's `gemini` when it is on.
pub(crate) fn runnable(acp: bool) -> Vec<&'static str> {
    let mut tools = vec![
        GEMINI_PROMPT,
        GEMINI_PROMPT_WITH_CONTEXT,
        GEMINI_PROMPT_STRUCTURED,
    ];
    if acp {
        tools.push(super::agent::GEMINI);
    }
    tools
}

const START_DESCRIPTION: &str = "Starts a Gemini prompt as a background job and returns its job_id at once: for long runs (an analysis of a repository, edits across files) that your client would cut, or to go on working while Gemini works. Pass the prompt tool's name as `tool` and its arguments as `arguments`. Then call gemini_wait with the job_id for its result. Jobs nobody waits on or lists for the server's retention time (10 min by default) are cancelled.";
const WAIT_DESCRIPTION: &str = "Waits until one of the given jobs has finished, or until timeout_s passes (0: look without waiting), and returns each job's state (working, input_required, completed, failed, cancelled), its elapsed seconds and its last progress message; a finished job's result is the result the prompt tool would have returned (a long answer read on with gemini_read_answer). Waiting does not stop a job: call again to wait longer.";
const CANCEL_DESCRIPTION: &str = "Cancels a job: its Gemini run is stopped (its processes killed, or its turn on a warm agent ended) and the job reads cancelled. A finished job stays as it finished.";
const JOBS_DESCRIPTION: &str = "Lists your jobs, oldest first: job_id, tool, state, elapsed seconds and last progress message (results through gemini_wait).";

/// The four tools; `gemini_start` annotated as the prompt tools are under the approval-mode
/// `ceiling`.
pub(crate) fn definitions(ceiling: crate::approval::ApprovalMode) -> Vec<Tool> {
    let annotate = |title: &str, read_only: bool, destructive: bool| {
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(read_only)
            .open_world(!read_only)
    };
    vec![
        Tool::new(
            GEMINI_START,
            START_DESCRIPTION,
            args::input_schema::<StartArgs>(),
        )
        .annotate(super::prompt::annotations("Start a Gemini job", ceiling)),
        Tool::new(
            GEMINI_WAIT,
            WAIT_DESCRIPTION,
            args::input_schema::<WaitArgs>(),
        )
        .annotate(annotate("Wait for Gemini jobs", true, false)),
        Tool::new(
            GEMINI_CANCEL,
            CANCEL_DESCRIPTION,
            args::input_schema::<CancelArgs>(),
        )
        .annotate(annotate("Cancel a Gemini job", false, true)),
        Tool::new(
            GEMINI_JOBS,
            JOBS_DESCRIPTION,
            args::input_schema::<JobsArgs>(),
        )
        .annotate(annotate("List Gemini jobs", true, false)),
    ]
}
