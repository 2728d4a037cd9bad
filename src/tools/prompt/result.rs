//! The prompt tools' result, on success and failure alike: one `Serialize + JsonSchema` type that
//! is both what `structuredContent` holds and, through `args::output_schema_of`, the tools'
//! `outputSchema`. Each field is present only when it says something and has one plain type (no
//! `null`, no `oneOf`), so strict single-type dialects accept the schema.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ErrorKind;

/// A prompt tool's result (`gemini_prompt_structured`'s adds `json`: [`StructuredResult`]).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct PromptResult {
    /// Present when the answer is cut: how to read on (gemini_read_answer).
    #[serde(rename = "readOn", skip_serializing_if = "Option::is_none")]
    pub read_on: Option<String>,
    /// The answer: the assistant text of the last model turn, or its first part when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// The Gemini CLI session; pass it as session_id to continue the conversation.
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model that answered (`auto` when none was asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens the run used.
    #[serde(rename = "totalTokens", skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Where the answer continues, when it is cut.
    #[serde(flatten)]
    pub page: PageFields,
    /// A failure's first line: `[error exit=N] KIND: message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What a failure says besides its first line.
    #[serde(flatten)]
    pub failure: FailureFields,
    /// Answer text that came before the failure.
    #[serde(rename = "partialResponse", skip_serializing_if = "Option::is_none")]
    pub partial_response: Option<String>,
    /// gemini_prompt_structured: where the answer does not validate, and why.
    #[serde(rename = "validationErrors", skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<ValidationError>>,
    /// gemini_prompt_structured: the answer that did not validate.
    #[serde(rename = "rawResponse", skip_serializing_if = "Option::is_none")]
    pub raw_response: Option<String>,
    /// The signal that ended the CLI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i64>,
    /// The call's task_note, echoed.
    #[serde(rename = "taskNote", skip_serializing_if = "Option::is_none")]
    pub task_note: Option<String>,
    /// full_output: the CLI's per-model token and tool statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Map<String, Value>>,
    /// full_output: every stream-json event of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<Map<String, Value>>>")]
    pub events: Option<Vec<Value>>,
    /// full_output: the events were too long for the result; how to read them.
    #[serde(rename = "eventsReadOn", skip_serializing_if = "Option::is_none")]
    pub events_read_on: Option<String>,
    /// debug: argv (flags only), cwd, exit, kill reason, timings, byte counts and stderr tail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<Map<String, Value>>,
    /// What the retry and fallback policy did.
    #[serde(rename = "retryPolicy", skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<Map<String, Value>>,
    /// The warm backend's agent could not start and this call ran one-shot: why.
    #[serde(rename = "ranOneShot", skip_serializing_if = "Option::is_none")]
    pub ran_one_shot: Option<String>,
    /// The run's CLI had not recorded the prompt when its workspace's start gate opened for the
    /// next call (GEMINICLI_MCP_START_GATE_MS): why its session may have been deleted.
    #[serde(rename = "sessionAtRisk", skip_serializing_if = "Option::is_none")]
    pub session_at_risk: Option<String>,
    /// MCP servers of the Gemini CLI's settings the call's CLI was not let start (one that does
    /// not answer `initialize` would have held the run): which, why, and the fix.
    #[serde(rename = "mcpServersLeftOut", skip_serializing_if = "Option::is_none")]
    pub mcp_servers_left_out: Option<String>,
    /// gemini_prompt_structured with repair: whether the one repair turn made the answer validate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<bool>,
    /// approval_mode ask: each tool the agent asked to run, in order, whether it ran and who
    /// decided (user, timeout, declined, cancelled, cannot_ask, ceiling, call_ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<ApprovalRecord>>")]
    pub approvals: Option<Vec<Value>>,
    /// Where save_file wrote the answer, or why it could not.
    #[serde(flatten)]
    pub saved: SaveFields,
}

/// What a failure says besides its first line — in both prompt surfaces' results, filled by the
/// renderer under these names.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct FailureFields {
    /// The failure's kind.
    #[serde(rename = "errorKind", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "error_kinds")]
    pub error_kind: Option<String>,
    /// The CLI's exit code; 128+signal; 127/126 when it could not start; the kind's own code when
    /// no process decided it.
    #[serde(rename = "exitCode", skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// What to do about the failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// How long the API asked to wait.
    #[serde(rename = "retryDelayMs", skip_serializing_if = "Option::is_none")]
    pub retry_delay_ms: Option<u64>,
    /// The end of the CLI's stderr, without its routine notices.
    #[serde(rename = "stderrTail", skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

/// Where a cut answer continues — in both prompt surfaces' results, filled by the renderer under
/// these names.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct PageFields {
    /// Present when the answer is cut: the id gemini_read_answer reads on by.
    #[serde(rename = "answerId", skip_serializing_if = "Option::is_none")]
    pub answer_id: Option<String>,
    /// Present when the answer is cut: the offset to read on from.
    #[serde(rename = "nextOffset", skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Present when the answer is cut: the answer's length in characters.
    #[serde(rename = "totalChars", skip_serializing_if = "Option::is_none")]
    pub total_chars: Option<u64>,
    /// Present when the answer is cut: how to read on (gemini_read_answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continued: Option<String>,
}

/// Where `save_file` wrote the answer, or why it could not — in both prompt surfaces' results.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct SaveFields {
    /// save_file: where the answer was written.
    #[serde(rename = "savedFile", skip_serializing_if = "Option::is_none")]
    pub saved_file: Option<String>,
    /// save_file: why writing it failed.
    #[serde(rename = "saveError", skip_serializing_if = "Option::is_none")]
    pub save_error: Option<String>,
}

impl SaveFields {
    /// What the run's report says of the save (none: nothing was asked).
    pub(crate) fn of(saved: Option<Result<std::path::PathBuf, String>>) -> Self {
        match saved {
            Some(Ok(path)) => SaveFields {
                saved_file: Some(path.display().to_string()),
                save_error: None,
            },
            Some(Err(e)) => SaveFields {
                saved_file: None,
                save_error: Some(e),
            },
            None => SaveFields::default(),
        }
    }
}

/// `gemini_prompt_structured`'s result: a prompt tool's, with the value that validated.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct StructuredResult {
    /// The validated JSON value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_json")]
    pub json: Option<Value>,
    /// The fields every prompt tool's result has.
    #[serde(flatten)]
    pub common: PromptResult,
}

/// One validation error of a structured answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ValidationError {
    /// Where in the answer (a JSON pointer; empty for the root).
    #[serde(rename = "instancePath")]
    pub instance_path: String,
    /// What is wrong there.
    pub message: String,
}

// The schema of the records the agent's turn makes (`approvals`), which are kept as made.
/// A tool the agent asked to run: its title and kind, whether it ran, and who decided.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ApprovalRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    permission: Permission,
    #[serde(rename = "decidedBy")]
    decided_by: String,
}

/// Whether the tool ran.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Permission {
    Approved,
    Rejected,
}

impl PromptResult {
    /// The fields set, as `structuredContent`'s object.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// `errorKind`: a string, one of the kinds.
fn error_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    schemars::json_schema!({
        "type": "string",
        "description": "The failure's kind.",
        "enum": kinds,
    })
}

/// `json`: any JSON value, each type named (strict dialects refuse a bare `true`).
fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The validated JSON value.",
        "anyOf": [
            {"type": "object"}, {"type": "array"}, {"type": "string"},
            {"type": "number"}, {"type": "boolean"}, {"type": "null"}
        ],
    })
}
