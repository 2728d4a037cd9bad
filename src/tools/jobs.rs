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
pub(crate) use super::decl::JobTool;
use super::decl::{Decl, Listing, Route, Set};

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

/// `gemini_start`.
pub(crate) const START: Decl = JobTool::Start.decl(|l| definition(JobTool::Start, l));
/// `gemini_wait`.
pub(crate) const WAIT: Decl = JobTool::Wait.decl(|l| definition(JobTool::Wait, l));
/// `gemini_cancel`.
pub(crate) const CANCEL: Decl = JobTool::Cancel.decl(|l| definition(JobTool::Cancel, l));
/// `gemini_jobs`.
pub(crate) const JOBS: Decl = JobTool::Jobs.decl(|l| definition(JobTool::Jobs, l));

impl JobTool {
    /// The tool's declaration, in the `jobs` set, answering at once (a job runs apart from the
    /// call that started it), defined by `define`.
    const fn decl(self, define: fn(&Listing) -> Tool) -> Decl {
        let name = match self {
            JobTool::Start => GEMINI_START,
            JobTool::Wait => GEMINI_WAIT,
            JobTool::Cancel => GEMINI_CANCEL,
            JobTool::Jobs => GEMINI_JOBS,
        };
        Decl {
            name,
            set: Set::Jobs,
            runs_long: false,
            route: Route::Job(self),
            define,
        }
    }
}

/// Arguments of `gemini_start`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct CancelArgs {
    /// The job to cancel (a job_id of gemini_start).
    pub job_id: String,
}

/// Arguments of `gemini_jobs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct JobsArgs {}

/// A call of one of the job tools, its arguments decoded.
#[derive(Debug, Clone)]
pub(crate) enum JobCall {
    /// `gemini_start`; the call it starts is decoded when it starts.
    Start(StartArgs),
    /// `gemini_wait`.
    Wait(WaitArgs),
    /// `gemini_cancel`.
    Cancel(CancelArgs),
    /// `gemini_jobs` (it reads no arguments).
    Jobs,
}

/// Decodes a call's arguments.
pub(crate) fn decode(
    tool: JobTool,
    arguments: Option<&rmcp::model::JsonObject>,
) -> Result<JobCall, crate::error::Failure> {
    Ok(match tool {
        JobTool::Start => JobCall::Start(args::decode(arguments)?),
        JobTool::Wait => JobCall::Wait(args::decode(arguments)?),
        JobTool::Cancel => JobCall::Cancel(args::decode(arguments)?),
        JobTool::Jobs => JobCall::Jobs,
    })
}

/// `_meta` keys under which a client sends its own id of a tool call, the same when it sends the
/// call again (Claude Code after a transport error).
pub(crate) const CLIENT_CALL_IDS: &[&str] = &["claudecode/toolUseId"];

/// What makes a prompt call the job of a key, so that the call made again attaches to its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallKey {
    /// The call's own `idempotency_key`: its request's cancellation ends the wait, not the run.
    Given(String),
    /// The client's id of the call in `_meta`, under one of [`CLIENT_CALL_IDS`] (this name
    /// first): the call sent again attaches, and its cancellation ends the run, as a plain
    /// call's does, since it is the client's own.
    Client(String),
}

impl CallKey {
    /// The key the job is held under.
    pub(crate) fn text(&self) -> &str {
        match self {
            CallKey::Given(k) | CallKey::Client(k) => k,
        }
    }
}

/// A prompt call's key: its decoded `idempotency_key`, when it is not empty, else the client's
/// id of the call in `meta`.
pub(crate) fn call_key(
    idempotency_key: Option<&str>,
    meta: &Map<String, Value>,
) -> Option<CallKey> {
    let given = idempotency_key.filter(|k| !k.is_empty());
    if let Some(key) = given {
        return Some(CallKey::Given(key.to_string()));
    }
    CLIENT_CALL_IDS.iter().find_map(|name| {
        let id = meta.get(*name)?.as_str().filter(|id| !id.is_empty())?;
        Some(CallKey::Client(format!("{name} {id}")))
    })
}

const START_DESCRIPTION: &str = "Starts a Gemini prompt as a background job and returns its job_id at once: for long runs (an analysis of a repository, edits across files) that your client would cut, or to go on working while Gemini works. Pass the prompt tool's name as `tool` and its arguments as `arguments`. Then call gemini_wait with the job_id for its result. Jobs nobody waits on or lists for the server's retention time (10 min by default) are cancelled.";
const WAIT_DESCRIPTION: &str = "Waits until one of the given jobs has finished, or until timeout_s passes (0: look without waiting), and returns each job's state (working, input_required, completed, failed, cancelled), its elapsed seconds and its last progress message; a finished job's result is the result the prompt tool would have returned (a long answer read on with gemini_read_answer). Waiting does not stop a job: call again to wait longer.";
const CANCEL_DESCRIPTION: &str = "Cancels a job: its Gemini run is stopped (its processes killed, or its turn on a warm agent ended) and the job reads cancelled. A finished job stays as it finished.";
const JOBS_DESCRIPTION: &str = "Lists your jobs, oldest first: job_id, tool, state, elapsed seconds and last progress message (results through gemini_wait).";

/// The tool's definition; `gemini_start` annotated as the prompt tools are under the
/// approval-mode ceiling.
fn definition(tool: JobTool, listing: &Listing) -> Tool {
    let annotate = |title: &str, read_only: bool, destructive: bool| {
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(read_only)
            .open_world(!read_only)
    };
    match tool {
        JobTool::Start => Tool::new(
            GEMINI_START,
            START_DESCRIPTION,
            args::input_schema::<StartArgs>(),
        )
        .annotate(super::prompt::annotations(
            "Start a Gemini job",
            listing.ceiling,
        )),
        JobTool::Wait => Tool::new(
            GEMINI_WAIT,
            WAIT_DESCRIPTION,
            args::input_schema::<WaitArgs>(),
        )
        .annotate(annotate("Wait for Gemini jobs", true, false)),
        JobTool::Cancel => Tool::new(
            GEMINI_CANCEL,
            CANCEL_DESCRIPTION,
            args::input_schema::<CancelArgs>(),
        )
        .annotate(annotate("Cancel a Gemini job", false, true)),
        JobTool::Jobs => Tool::new(
            GEMINI_JOBS,
            JOBS_DESCRIPTION,
            args::input_schema::<JobsArgs>(),
        )
        .annotate(annotate("List Gemini jobs", true, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_idempotency_key_wins_over_the_clients_id() {
        let meta = object(json!({"claudecode/toolUseId": "toolu_1"}));
        assert_eq!(call_key(Some("k"), &meta), Some(CallKey::Given("k".into())));
    }

    #[test]
    fn the_clients_id_of_the_call_is_a_key_of_its_own_namespace() {
        let meta = object(json!({"claudecode/toolUseId": "toolu_1", "progressToken": 3}));
        let key = call_key(None, &meta).unwrap();
        assert_eq!(key, CallKey::Client("claudecode/toolUseId toolu_1".into()));
        assert_eq!(key.text(), "claudecode/toolUseId toolu_1");
    }

    #[test]
    fn an_empty_or_missing_key_is_none() {
        assert_eq!(call_key(Some(""), &Map::new()), None);
        let meta = object(json!({"claudecode/toolUseId": "", "other/id": "x"}));
        assert_eq!(call_key(None, &meta), None);
        let meta = object(json!({"claudecode/toolUseId": 7}));
        assert_eq!(call_key(None, &meta), None);
    }
}
