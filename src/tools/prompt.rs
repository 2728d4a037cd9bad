//! The reference's three tools — `gemini_prompt`, `gemini_prompt_with_context`,
//! `gemini_prompt_structured` — with the optional arguments every prompt tool shares: their
//! arguments (the schema and the decoder), descriptions, output schema, annotations, the checks
//! that turn a call into a [`Job`], and the rendering of an answer.

use std::num::NonZeroU64;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{self, given};
pub(crate) use super::decl::Kind;
use super::decl::{Decl, Listing, Route, Set};
use crate::approval::ApprovalMode;
use crate::deadline::Deadlines;
use crate::error::Failure;
use crate::gemini::command::PromptRequest;
use crate::gemini::session;
use crate::policy::Policy;
use crate::render::Render;
use crate::roots::{self, PathArgs, Roots};
use crate::run::{Answer, Job, Report, Surface};
use crate::structured;
use result::{PromptResult, SaveFields, StructuredResult};

pub(crate) mod result;

/// `gemini_prompt`.
pub(crate) const GEMINI_PROMPT: &str = "gemini_prompt";
/// `gemini_prompt_with_context`.
pub(crate) const GEMINI_PROMPT_WITH_CONTEXT: &str = "gemini_prompt_with_context";
/// `gemini_prompt_structured`.
pub(crate) const GEMINI_PROMPT_STRUCTURED: &str = "gemini_prompt_structured";

/// Longest accepted `task_note`, in characters.
pub(crate) const MAX_TASK_NOTE_CHARS: usize = 1000;

/// A call's `task_note`, checked for every tool that takes one: none when absent or empty, an
/// `input_validation` failure past [`MAX_TASK_NOTE_CHARS`] (it is echoed in the result and in
/// every progress message).
pub(crate) fn task_note(note: Option<String>) -> Result<Option<String>, Failure> {
    let note = given(note);
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_TASK_NOTE_CHARS)
    {
        return Err(Failure::invalid_input(format!(
            "task_note is longer than {MAX_TASK_NOTE_CHARS} characters"
        )));
    }
    Ok(note)
}

/// The approval modes by the CLI's names.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeArg {
    /// Read-only.
    Plan,
    /// Changes refused headless.
    Default,
    /// Edits approved, shell refused.
    AutoEdit,
    /// Everything approved.
    Yolo,
    /// Each tool that needs an approval is put to the client's user (allow once, allow for this
    /// session, reject), within what the server's ceiling allows; runs on a warm agent.
    Ask,
}

/// cli-agent-mcp's names for approval levels.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum PermissionArg {
    /// `plan`.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// `auto_edit`.
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
    /// `yolo`.
    #[serde(rename = "unlimited")]
    Unlimited,
}

impl From<ModeArg> for ApprovalMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Plan => ApprovalMode::Plan,
            ModeArg::Default => ApprovalMode::Default,
            ModeArg::AutoEdit => ApprovalMode::AutoEdit,
            ModeArg::Yolo => ApprovalMode::Yolo,
            // The agent's own mode when it asks: each change prompts (see `approval`).
            ModeArg::Ask => ApprovalMode::Default,
        }
    }
}

impl From<PermissionArg> for ApprovalMode {
    fn from(p: PermissionArg) -> Self {
        match p {
            PermissionArg::ReadOnly => ApprovalMode::Plan,
            PermissionArg::WorkspaceWrite => ApprovalMode::AutoEdit,
            PermissionArg::Unlimited => ApprovalMode::Yolo,
        }
    }
}

/// A call's approval: the agent's mode, and whether its permission requests are questions to the
/// client's user (`ask`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Approval {
    /// The CLI's approval mode, under the ceiling.
    pub mode: ApprovalMode,
    /// `approval_mode: "ask"`.
    pub ask: bool,
}

/// The approval a call asks for through `approval_mode` or `permission` (not both), under the
/// operator's ceiling. `ask` runs the agent in `default` (`plan` under a `plan` ceiling), so every
/// change prompts; each prompt is then put to the user only when the ceiling could allow it
/// (under `yolo` every one, under `auto_edit` edits, under `default` and `plan` none: those are
/// rejected as the ceiling would), and the user's allow is never more than that.
pub(crate) fn approval(
    policy: &Policy,
    mode: Option<ModeArg>,
    permission: Option<PermissionArg>,
) -> Result<Approval, Failure> {
    let plain = |mode| Approval { mode, ask: false };
    match (mode, permission) {
        (Some(_), Some(_)) => Err(Failure::invalid_input(
            "give either `approval_mode` or `permission`, not both",
        )),
        (Some(ModeArg::Ask), None) => Ok(Approval {
            mode: policy.approval_ceiling.min(ApprovalMode::Default),
            ask: true,
        }),
        (Some(m), None) => policy.approval(Some(m.into()), "approval_mode").map(plain),
        (None, Some(p)) => policy.approval(Some(p.into()), "permission").map(plain),
        (None, None) => policy.approval(None, "approval_mode").map(plain),
    }
}

/// The optional arguments shared by the three prompt tools. A caller that sends none of them
/// gets the reference behaviour.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CommonArgs {
    /// Continue an earlier conversation: the `sessionId` (a UUID) of an earlier answer. The CLI
    /// keeps sessions per working directory, so pass the same `workspace` as that call.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Directory the CLI runs in (default: the server's working directory). Must exist and lie
    /// under the server's allowed roots (GEMINICLI_MCP_ALLOWED_ROOTS) and the client's MCP roots.
    #[serde(default)]
    pub workspace: Option<String>,
    /// More directories the CLI may read and write (`--include-directories`), under the same roots.
    #[serde(default)]
    pub include_directories: Option<Vec<String>>,
    /// The CLI's approval mode: `plan` (read-only), `default` (changes refused headless),
    /// `auto_edit` (edits approved, shell refused) or `yolo` (everything approved). Default and
    /// upper limit: the server's GEMINICLI_MCP_APPROVAL_MODE (default yolo).
    #[serde(default)]
    pub approval_mode: Option<ModeArg>,
    /// cli-agent-mcp's names for approval levels: `read-only` (plan), `workspace-write`
    /// (auto_edit), `unlimited` (yolo). Not together with `approval_mode`.
    #[serde(default)]
    pub permission: Option<PermissionArg>,
    /// Run the CLI's tools in its sandbox (`--sandbox`; needs docker or podman where the server
    /// runs). The sandbox passes the prompt on the command line, so prompts of 128 KiB or more
    /// are refused with it.
    #[serde(default)]
    pub sandbox: Option<bool>,
    /// Only these of the CLI's configured MCP servers are loaded (`--allowed-mcp-server-names`).
    #[serde(default)]
    pub allowed_mcp_server_names: Option<Vec<String>>,
    /// Image files (png, jpg/jpeg, gif, webp, heic, heif) attached as `@path` references; each
    /// must be inside `workspace` or an include directory.
    #[serde(default)]
    pub image_paths: Option<Vec<String>>,
    /// Add the whole event transcript (messages, tool uses and results, errors, stats) to
    /// `structuredContent.events`.
    #[serde(default)]
    pub full_output: Option<bool>,
    /// Also write the answer to this file (atomically; under the allowed roots, its directory
    /// must exist; relative paths start at `workspace`). Overwrites an existing file.
    #[serde(default)]
    pub save_file: Option<String>,
    /// A note of yours, echoed in `structuredContent.taskNote` and in progress messages.
    #[serde(default)]
    pub task_note: Option<String>,
    /// Add the CLI's argv, exit, timings and stderr tail to `structuredContent.debug` (never the
    /// prompt).
    #[serde(default)]
    pub debug: Option<bool>,
    /// Kill the run and fail with `timeout` when no content (assistant text or a tool event)
    /// has come this many milliseconds after the start. The server's own limit wins when shorter.
    #[serde(default)]
    pub timeout_first_content_ms: Option<NonZeroU64>,
    /// … when the CLI printed nothing (no line on stdout or stderr) for this many milliseconds.
    #[serde(default)]
    pub timeout_inactivity_ms: Option<NonZeroU64>,
    /// … when the run took this many milliseconds in all.
    #[serde(default)]
    pub timeout_total_ms: Option<NonZeroU64>,
    /// A key of yours for this run: the call runs as a background job of that key, which a
    /// cancelled or cut-off call leaves running, and the same call made again with the key
    /// attaches to it and returns its result, with no second run (while the server keeps it: by
    /// default 10 min after it finished or was last asked about). The key with other arguments
    /// is refused.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `gemini_prompt` besides the common ones.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PromptArgs {
    /// Prompt text.
    pub prompt: String,
    /// Gemini model, e.g. `gemini-2.5-pro` (default: the CLI's own choice).
    #[serde(default)]
    pub model: Option<String>,
}

/// Arguments of `gemini_prompt_with_context` besides the common ones.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WithContextArgs {
    /// Prompt text.
    pub prompt: String,
    /// Text prepended to the prompt inside a `<context>` block.
    pub context: String,
    /// Gemini model, e.g. `gemini-2.5-pro` (default: the CLI's own choice).
    #[serde(default)]
    pub model: Option<String>,
}

/// Arguments of `gemini_prompt_structured` besides the common ones.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct StructuredArgs {
    /// Prompt text.
    pub prompt: String,
    /// JSON Schema the response must conform to.
    pub schema: Map<String, Value>,
    /// Optional context block prepended inside `<context>`.
    #[serde(default)]
    pub context: Option<String>,
    /// Gemini model, e.g. `gemini-2.5-pro` (default: the CLI's own choice).
    #[serde(default)]
    pub model: Option<String>,
    /// When the answer does not validate, ask once more in the same session for the corrected
    /// JSON only (one more model turn; never after tools ran under `auto_edit` or `yolo`).
    /// Default: the server's GEMINICLI_MCP_STRUCTURED_REPAIR (off).
    #[serde(default)]
    pub repair: Option<bool>,
}

/// A tool's whole argument set, for its schema: its own arguments and the common ones.
#[derive(JsonSchema)]
struct Full<T> {
    #[serde(flatten)]
    #[allow(dead_code)]
    own: T,
    #[serde(flatten)]
    #[allow(dead_code)]
    common: CommonArgs,
}

impl Kind {
    /// The tool's name.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Kind::Prompt => GEMINI_PROMPT,
            Kind::WithContext => GEMINI_PROMPT_WITH_CONTEXT,
            Kind::Structured => GEMINI_PROMPT_STRUCTURED,
        }
    }
}

/// What a prompt call asks for, decoded (paths not yet checked).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The tool.
    pub kind: Kind,
    /// Prompt, context, model and session.
    pub request: PromptRequest,
    /// `gemini_prompt_structured`'s schema, prepared.
    pub schema: Option<Arc<structured::PreparedSchema>>,
    /// The approval mode, under the ceiling.
    pub mode: ApprovalMode,
    /// `approval_mode: "ask"`.
    pub ask: bool,
    /// The path arguments, as given.
    pub paths: PathArgs,
    /// `task_note`.
    pub task_note: Option<String>,
    /// The call's deadlines.
    pub deadlines: Deadlines,
    /// `full_output`.
    pub full_output: bool,
    /// `debug`.
    pub debug: bool,
    /// `repair` (`gemini_prompt_structured`), the server's default filled in.
    pub repair: bool,
    /// `idempotency_key`: the key the MCP layer runs the call as a job of.
    pub idempotency_key: Option<String>,
}

/// Decodes a call's arguments and checks what can be checked without the file system.
pub(crate) fn decode(
    kind: Kind,
    arguments: Option<&JsonObject>,
    policy: &Policy,
) -> Result<Call, Failure> {
    let (prompt, context, model, schema, repair) = match kind {
        Kind::Prompt => {
            let a: PromptArgs = args::decode(arguments)?;
            (a.prompt, None, a.model, None, false)
        }
        Kind::WithContext => {
            let a: WithContextArgs = args::decode(arguments)?;
            (a.prompt, Some(a.context), a.model, None, false)
        }
        Kind::Structured => {
            let a: StructuredArgs = args::decode(arguments)?;
            let repair = a.repair.unwrap_or(policy.structured_repair);
            (
                a.prompt,
                a.context,
                a.model,
                Some(Value::Object(a.schema)),
                repair,
            )
        }
    };
    let common: CommonArgs = args::decode(arguments)?;
    let session_id = given(common.session_id);
    if let Some(id) = &session_id {
        session::validate_session_id(id)?;
    }
    let task_note = task_note(common.task_note)?;
    let Approval { mode, ask } = common_approval(
        common.approval_mode,
        common.permission,
        common.sandbox,
        policy,
    )?;
    let schema = schema
        .map(|s| {
            structured::Schema::prepare(&s)
                .map(Arc::new)
                .map_err(|e| Failure::invalid_input(e.to_string()))
        })
        .transpose()?;
    let ms = |v: Option<NonZeroU64>| v.map(|v| Duration::from_millis(v.get()));
    Ok(Call {
        kind,
        request: PromptRequest {
            prompt,
            context,
            model,
            resume: session_id,
            approval_mode: Some(mode),
            sandbox: common.sandbox.unwrap_or(false),
            allowed_mcp_server_names: common.allowed_mcp_server_names.unwrap_or_default(),
            ..PromptRequest::default()
        },
        schema,
        mode,
        ask,
        paths: PathArgs {
            workspace: given(common.workspace),
            include_directories: common.include_directories.unwrap_or_default(),
            image_paths: common.image_paths.unwrap_or_default(),
            save_file: given(common.save_file),
        },
        task_note,
        deadlines: Deadlines {
            first_content: ms(common.timeout_first_content_ms),
            inactivity: ms(common.timeout_inactivity_ms),
            total: ms(common.timeout_total_ms),
        },
        full_output: common.full_output.unwrap_or(false),
        debug: common.debug.unwrap_or(false),
        repair,
        idempotency_key: common.idempotency_key,
    })
}

/// The approval of a prompt call; `ask` (which runs on a warm agent) is refused with `sandbox`,
/// which a warm agent cannot run in.
fn common_approval(
    mode: Option<ModeArg>,
    permission: Option<PermissionArg>,
    sandbox: Option<bool>,
    policy: &Policy,
) -> Result<Approval, Failure> {
    let a = approval(policy, mode, permission)?;
    if a.ask && sandbox.unwrap_or(false) {
        return Err(Failure::invalid_input(
            "approval_mode `ask` runs on a warm ACP agent, which cannot run in the sandbox: \
             drop `sandbox` or choose another approval_mode",
        ));
    }
    Ok(a)
}

/// The call's job: its paths checked against the roots; `asking` is what a call with
/// `approval_mode: "ask"` asks through.
pub(crate) async fn job(
    call: &Call,
    roots: &Roots<'_>,
    asking: Option<crate::ask::Asking>,
) -> Result<Job, Failure> {
    let paths = roots::resolve(roots, &call.paths).await?;
    let mut request = call.request.clone();
    request.include_directories = paths.include_directories;
    request.image_refs = paths.image_refs;
    request.images = paths.images;
    Ok(Job {
        tool: call.kind.name(),
        surface: Surface::Reference,
        request,
        schema: call.schema.clone(),
        mode: call.mode,
        cwd: paths.cwd,
        save: paths.save,
        deadlines: call.deadlines,
        full_output: call.full_output,
        debug: call.debug,
        repair: call.repair,
        asking: asking.filter(|_| call.ask),
    })
}

/// What a call's options and the retry policy add to its result, success or failure alike: the
/// task note, the debug report, what the retry policy did, where the answer was saved, and with
/// `full_output` the run's statistics and events (kept and read on, when they would not fit).
pub(crate) fn extras(
    task_note: Option<&str>,
    report: Report,
    render: &Render<'_>,
) -> Map<String, Value> {
    let object = |v: Value| match v {
        Value::Object(map) => Some(map),
        _ => None,
    };
    let mut sc = PromptResult {
        task_note: task_note.map(str::to_owned),
        debug: report.debug.and_then(object),
        retry_policy: report.policy.and_then(object),
        repaired: report.repaired,
        ran_one_shot: report.ran_one_shot,
        session_at_risk: report.session_at_risk,
        mcp_servers_left_out: report.servers_left_out,
        approvals: Some(report.approvals).filter(|a| !a.is_empty()),
        saved: SaveFields::of(report.saved),
        ..PromptResult::default()
    };
    if let Some(events) = report.events {
        let text = Value::Array(events).to_string();
        // The transcript may be far longer than a result: kept whole, read on by its id.
        if text.len() > render.budget / 4 {
            let total = text.chars().count();
            let (id, _) = render.answers.keep(text, total);
            sc.events_read_on = Some(format!(
                "the run's {total}-character event transcript (JSON) is kept: {} answer_id={id} offset=0",
                crate::render::READ_ANSWER
            ));
        } else if let Ok(Value::Array(events)) = serde_json::from_str(&text) {
            sc.events = Some(events);
        }
    }
    sc.into_map()
}

/// The result of an answered call: the answer first, then only what a model can act on (the
/// session, the model, the tokens used); the per-model statistics only with `full_output`.
pub(crate) fn render(
    answer: Answer,
    full_output: bool,
    extras: Map<String, Value>,
    render: &Render<'_>,
) -> CallToolResult {
    let Answer {
        success,
        json: value,
        ..
    } = answer;
    let total_tokens = success
        .stats
        .as_ref()
        .and_then(|s| s.get("total_tokens"))
        .and_then(Value::as_u64);
    let stats = match (&success.stats, full_output) {
        (Some(Value::Object(stats)), true) => Some(stats.clone()),
        _ => None,
    };
    let mut facts = PromptResult {
        session_id: success.session_id.clone(),
        model: success.model.clone(),
        total_tokens,
        stats,
        ..PromptResult::default()
    }
    .into_map();
    facts.extend(extras);
    render.answer(&success.answer, &facts, value)
}

/// A task note also closes the text block, for clients that show only the text.
pub(crate) fn note_text(result: &mut CallToolResult, task_note: Option<&str>) {
    if let Some(note) = task_note {
        result
            .content
            .push(ContentBlock::text(format!("[task note] {note}")));
    }
}

/// The output schema of the three tools, derived from their result type ([`result`]): one object
/// whose fields are those of a success or a failure, each present only when it says something,
/// each of one plain type (no `null` types, no `oneOf`), so strict single-type dialects accept it.
pub(crate) fn output_schema(structured: bool) -> Arc<JsonObject> {
    static SCHEMAS: LazyLock<[Arc<JsonObject>; 2]> = LazyLock::new(|| {
        [
            Arc::new(args::output_schema_of::<PromptResult>()),
            Arc::new(args::output_schema_of::<StructuredResult>()),
        ]
    });
    SCHEMAS[usize::from(structured)].clone()
}

/// The annotations under an approval-mode ceiling (`GEMINICLI_MCP_APPROVAL_MODE`): no call can
/// run above it, so `plan` makes every tool read-only, and `default` (headless, nothing that
/// needs an approval runs) not destructive. Answers vary (not idempotent); the CLI talks to
/// Google's API and whatever its tools reach (open world).
pub(crate) fn annotations(title: &str, ceiling: ApprovalMode) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(ceiling == ApprovalMode::Plan)
        .destructive(ceiling >= ApprovalMode::AutoEdit)
        .idempotent(false)
        .open_world(true)
}

const PROMPT_DESCRIPTION: &str = "Send a prompt to Google's Gemini through the headless Gemini CLI and return the response text. \
The CLI runs in the server's working directory with auto-approved tools (--approval-mode yolo): it can read and change files there. \
Errors start with `[error exit=N] KIND: message`.";
const CONTEXT_DESCRIPTION: &str = "Send a prompt to Gemini with a block of context (for example a file's contents) prepended inside <context>…</context>, and return the response text. \
The CLI runs in the server's working directory with auto-approved tools (--approval-mode yolo). \
Errors start with `[error exit=N] KIND: message`.";
const STRUCTURED_DESCRIPTION: &str = "Send a prompt to Gemini and get JSON that conforms to the given JSON Schema. \
The server appends an instruction to answer with JSON only, extracts the JSON from the response (prose and ```json fences are tolerated), validates it, and returns the canonical JSON text. \
A response that does not validate is an error (`schema_mismatch`) listing each validation error and the raw response. \
Schema limits: 1 MiB, 10,000 nodes, 64 levels.";

/// `gemini_prompt`.
pub(crate) const PROMPT: Decl = Kind::Prompt.decl(|l| definition(Kind::Prompt, l));
/// `gemini_prompt_with_context`.
pub(crate) const WITH_CONTEXT: Decl = Kind::WithContext.decl(|l| definition(Kind::WithContext, l));
/// `gemini_prompt_structured`.
pub(crate) const STRUCTURED: Decl = Kind::Structured.decl(|l| definition(Kind::Structured, l));

impl Kind {
    /// The tool's declaration: in the core set, running long, defined by `define`.
    const fn decl(self, define: fn(&Listing) -> Tool) -> Decl {
        Decl {
            name: self.name(),
            set: Set::Core,
            runs_long: true,
            route: Route::Prompt(self),
            define,
        }
    }
}

/// The tool's definition, annotated for the approval-mode ceiling. Without `with_output_schema`
/// (clients of protocol versions before 2025-06-18) it has no `outputSchema` nor title.
fn definition(kind: Kind, listing: &Listing) -> Tool {
    static INPUTS: LazyLock<[Arc<JsonObject>; 3]> = LazyLock::new(|| {
        [
            args::input_schema::<Full<PromptArgs>>(),
            args::input_schema::<Full<WithContextArgs>>(),
            args::input_schema::<Full<StructuredArgs>>(),
        ]
    });
    let (title, description, input) = match kind {
        Kind::Prompt => ("Ask Gemini", PROMPT_DESCRIPTION, &INPUTS[0]),
        Kind::WithContext => ("Ask Gemini with context", CONTEXT_DESCRIPTION, &INPUTS[1]),
        Kind::Structured => (
            "Ask Gemini for schema-valid JSON",
            STRUCTURED_DESCRIPTION,
            &INPUTS[2],
        ),
    };
    let mut tool = Tool::new(kind.name(), description, input.clone())
        .annotate(annotations(title, listing.ceiling));
    if listing.with_output_schema {
        tool = tool
            .with_title(title)
            .with_raw_output_schema(output_schema(kind == Kind::Structured));
    }
    tool
}

#[cfg(test)]
mod tests;
