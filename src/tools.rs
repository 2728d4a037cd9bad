//! The three tools: their names, descriptions, input and output schemas and annotations, and the
//! hand-written decoding of raw arguments (bad arguments are `input_validation` tool errors, not
//! JSON-RPC errors, so the model can correct itself).

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{ErrorKind, Failure};
use crate::gemini::command::PromptRequest;

/// `gemini_prompt`.
pub const GEMINI_PROMPT: &str = "gemini_prompt";
/// `gemini_prompt_with_context`.
pub const GEMINI_PROMPT_WITH_CONTEXT: &str = "gemini_prompt_with_context";
/// `gemini_prompt_structured`.
pub const GEMINI_PROMPT_STRUCTURED: &str = "gemini_prompt_structured";

/// Optional arguments shared by the three prompt tools (issue 5). A caller that sends none of
/// them gets the reference behaviour.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommonArgs {
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
    pub approval_mode: Option<String>,
    /// cli-agent-mcp's names for approval levels: `read-only` (plan), `workspace-write`
    /// (auto_edit), `unlimited` (yolo). Not together with `approval_mode`.
    #[serde(default)]
    pub permission: Option<String>,
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
    pub timeout_first_content_ms: Option<u64>,
    /// … when the CLI printed nothing (no line on stdout or stderr) for this many milliseconds.
    #[serde(default)]
    pub timeout_inactivity_ms: Option<u64>,
    /// … when the run took this many milliseconds in all.
    #[serde(default)]
    pub timeout_total_ms: Option<u64>,
}

/// Longest accepted `task_note`, in characters.
pub const MAX_TASK_NOTE_CHARS: usize = 1000;

/// The issue-5 arguments of a call, decoded but not yet checked against the file system.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// `workspace`, as given.
    pub workspace: Option<String>,
    /// `include_directories`, as given.
    pub include_directories: Vec<String>,
    /// `approval_mode` or `permission`, mapped to a mode.
    pub approval_mode: Option<crate::policy::ApprovalMode>,
    /// Which of the two arguments gave it (for the refusal's text).
    pub approval_argument: &'static str,
    /// `sandbox`.
    pub sandbox: bool,
    /// `allowed_mcp_server_names`, as given.
    pub allowed_mcp_server_names: Vec<String>,
    /// `image_paths`, as given.
    pub image_paths: Vec<String>,
    /// `full_output`.
    pub full_output: bool,
    /// `save_file`, as given.
    pub save_file: Option<String>,
    /// `task_note`.
    pub task_note: Option<String>,
    /// `debug`.
    pub debug: bool,
    /// `timeout_first_content_ms`, `timeout_inactivity_ms`, `timeout_total_ms`.
    pub deadlines: crate::policy::Deadlines,
    /// The calling client, asked for its MCP roots when the call names a path.
    pub client: Option<rmcp::service::Peer<rmcp::service::RoleServer>>,
}

/// Arguments of `gemini_prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PromptArgs {
    /// Prompt text.
    pub prompt: String,
    /// Gemini model, e.g. `gemini-2.5-pro` (default: the CLI's own choice).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Arguments of `gemini_prompt_with_context`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PromptWithContextArgs {
    /// Prompt text.
    pub prompt: String,
    /// Text prepended to the prompt inside a `<context>` block.
    pub context: String,
    /// Gemini model, e.g. `gemini-2.5-pro` (default: the CLI's own choice).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Arguments of `gemini_prompt_structured`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PromptStructuredArgs {
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
    #[serde(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Which tool a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `gemini_prompt`.
    Prompt,
    /// `gemini_prompt_with_context`.
    WithContext,
    /// `gemini_prompt_structured`.
    Structured,
}

impl ToolKind {
    /// The tool named `name`, if it is one of ours.
    pub fn from_name(name: &str) -> Option<ToolKind> {
        match name {
            GEMINI_PROMPT => Some(ToolKind::Prompt),
            GEMINI_PROMPT_WITH_CONTEXT => Some(ToolKind::WithContext),
            GEMINI_PROMPT_STRUCTURED => Some(ToolKind::Structured),
            _ => None,
        }
    }

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Prompt => GEMINI_PROMPT,
            ToolKind::WithContext => GEMINI_PROMPT_WITH_CONTEXT,
            ToolKind::Structured => GEMINI_PROMPT_STRUCTURED,
        }
    }
}

/// A decoded call: the request, plus the schema for the structured tool.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tool.
    pub tool: ToolKind,
    /// Prompt, context, model.
    pub request: PromptRequest,
    /// The caller's JSON Schema (`gemini_prompt_structured` only).
    pub schema: Option<Value>,
    /// Workspace, include directories and approval mode (all optional).
    pub options: CallOptions,
}

fn field_ms(args: &JsonObject, name: &str) -> Result<Option<std::time::Duration>, Failure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64().filter(|v| *v > 0) {
            Some(v) => Ok(Some(std::time::Duration::from_millis(v))),
            None => Err(Failure::invalid_input(format!(
                "argument `{name}` must be a positive integer (milliseconds), got {n}"
            ))),
        },
        Some(other) => Err(Failure::invalid_input(format!(
            "argument `{name}` must be a positive integer (milliseconds), got {}",
            type_name(other)
        ))),
    }
}

fn field_bool(args: &JsonObject, name: &str) -> Result<bool, Failure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Failure::invalid_input(format!(
            "argument `{name}` must be a boolean, got {}",
            type_name(other)
        ))),
    }
}

fn field_str_list(args: &JsonObject, name: &str) -> Result<Vec<String>, Failure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(Failure::invalid_input(format!(
                    "argument `{name}` must be an array of strings, got an element that is {}",
                    type_name(other)
                ))),
            })
            .collect(),
        Some(other) => Err(Failure::invalid_input(format!(
            "argument `{name}` must be an array of strings, got {}",
            type_name(other)
        ))),
    }
}

fn decode_options(args: &JsonObject) -> Result<CallOptions, Failure> {
    use crate::policy::ApprovalMode;
    let workspace = field_str(args, "workspace", false)?.filter(|s| !s.is_empty());
    let include_directories = field_str_list(args, "include_directories")?;
    let mode = field_str(args, "approval_mode", false)?.filter(|s| !s.is_empty());
    let permission = field_str(args, "permission", false)?.filter(|s| !s.is_empty());
    let task_note = field_str(args, "task_note", false)?.filter(|s| !s.is_empty());
    if let Some(note) = &task_note {
        if note.chars().count() > MAX_TASK_NOTE_CHARS {
            return Err(Failure::invalid_input(format!(
                "task_note is longer than {MAX_TASK_NOTE_CHARS} characters"
            )));
        }
    }
    let approval_argument = if permission.is_some() {
        "permission"
    } else {
        "approval_mode"
    };
    let approval_mode = match (mode, permission) {
        (Some(_), Some(_)) => {
            return Err(Failure::invalid_input(
                "give either `approval_mode` or `permission`, not both",
            ))
        }
        (Some(m), None) => Some(ApprovalMode::parse(&m).ok_or_else(|| {
            Failure::invalid_input(format!(
                "approval_mode must be one of default, auto_edit, yolo, plan (got {:?})",
                m.chars().take(64).collect::<String>()
            ))
        })?),
        (None, Some(p)) => Some(ApprovalMode::from_permission(&p).ok_or_else(|| {
            Failure::invalid_input(format!(
                "permission must be one of read-only, workspace-write, unlimited (got {:?})",
                p.chars().take(64).collect::<String>()
            ))
        })?),
        (None, None) => None,
    };
    Ok(CallOptions {
        workspace,
        include_directories,
        approval_mode,
        approval_argument,
        sandbox: field_bool(args, "sandbox")?,
        allowed_mcp_server_names: field_str_list(args, "allowed_mcp_server_names")?,
        image_paths: field_str_list(args, "image_paths")?,
        full_output: field_bool(args, "full_output")?,
        save_file: field_str(args, "save_file", false)?.filter(|s| !s.is_empty()),
        task_note,
        debug: field_bool(args, "debug")?,
        deadlines: crate::policy::Deadlines {
            first_content: field_ms(args, "timeout_first_content_ms")?,
            inactivity: field_ms(args, "timeout_inactivity_ms")?,
            total: field_ms(args, "timeout_total_ms")?,
        },
        client: None,
    })
}

fn field_str(args: &JsonObject, name: &str, required: bool) -> Result<Option<String>, Failure> {
    match args.get(name) {
        None | Some(Value::Null) if required => Err(Failure::invalid_input(format!(
            "missing required argument `{name}` (a string)"
        ))),
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Failure::invalid_input(format!(
            "argument `{name}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes raw `arguments` for `tool`. Unknown extra arguments are ignored, as the reference's
/// validator does.
pub fn decode(tool: ToolKind, arguments: Option<&JsonObject>) -> Result<Call, Failure> {
    let empty = JsonObject::new();
    let args = arguments.unwrap_or(&empty);
    let prompt = field_str(args, "prompt", true)?.unwrap_or_default();
    let model = field_str(args, "model", false)?;
    let session_id = field_str(args, "session_id", false)?.filter(|s| !s.is_empty());
    if let Some(id) = &session_id {
        crate::gemini::session::validate_session_id(id)?;
    }
    let options = decode_options(args)?;
    let (context, schema) = match tool {
        ToolKind::Prompt => (None, None),
        ToolKind::WithContext => (field_str(args, "context", true)?, None),
        ToolKind::Structured => {
            let schema = match args.get("schema") {
                None | Some(Value::Null) => {
                    return Err(Failure::invalid_input(
                        "missing required argument `schema` (a JSON Schema object)",
                    ))
                }
                Some(v @ Value::Object(_)) => v.clone(),
                Some(other) => {
                    return Err(Failure::invalid_input(format!(
                        "argument `schema` must be a JSON Schema object, got {}",
                        type_name(other)
                    )))
                }
            };
            (field_str(args, "context", false)?, Some(schema))
        }
    };
    Ok(Call {
        tool,
        request: PromptRequest {
            prompt,
            context,
            model,
            resume: session_id,
            ..PromptRequest::default()
        },
        schema,
        options,
    })
}

fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let schema = settings.into_generator().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut map)) => {
            // Clients only need the object schema itself.
            map.remove("$schema");
            map.remove("title");
            Arc::new(map)
        }
        _ => Arc::new(JsonObject::new()),
    }
}

/// The output schema shared by the three tools: a success object or an error object, in one
/// `type: object` schema so strict clients can validate every `structuredContent`.
pub fn output_schema(structured: bool) -> Arc<JsonObject> {
    let nullable_string = json!({"type": ["string", "null"]});
    let mut success_props = json!({
        "response": {"type": "string", "description": "The answer: the assistant text of the last model turn (for gemini_prompt_structured, the canonical JSON text). Cut to head and tail when truncated."},
        "sessionId": {"type": ["string", "null"], "description": "Gemini CLI session id."},
        "model": {"type": ["string", "null"], "description": "Model as requested (`auto` when none was)."},
        "stats": {"type": ["object", "null"], "description": "The CLI's token and tool statistics."},
        "durationMs": {"type": "integer", "minimum": 0},
        "exitCode": {"type": "integer"},
        "truncated": {"type": "boolean", "description": "True when `response` was cut; the full answer is the resource linked in `content`."},
    });
    if structured {
        success_props["json"] = json!({"description": "The validated JSON value."});
    }
    let error_props = json!({
        "errorKind": {"type": "string", "enum": ErrorKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>()},
        "exitCode": {"type": "integer", "description": "The CLI's exit code; 128+signal; 127/126 when it could not start; 42 for arguments refused before spawning."},
        "message": {"type": "string"},
        "stderrTail": {"type": "string"},
        "partialResponse": nullable_string,
        "sessionId": {"type": ["string", "null"]},
        "model": {"type": ["string", "null"]},
        "stats": {"type": ["object", "null"]},
        "durationMs": {"type": "integer", "minimum": 0},
        "signal": {"type": ["integer", "null"]},
        "retryDelayMs": {"type": ["integer", "null"], "minimum": 0},
        "validationErrors": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {"instancePath": {"type": "string"}, "message": {"type": "string"}},
                "required": ["instancePath", "message"]
            }
        },
        "rawResponse": {"type": ["string", "null"]},
    });
    // Present only when the call asked for them (`task_note`, `full_output`, `debug`,
    // `save_file`), on both shapes.
    let optional = json!({
        "taskNote": {"type": "string", "description": "The call's task_note, echoed."},
        "events": {"type": "array", "items": {"type": "object"}, "description": "Every stream-json event of the run (full_output)."},
        "debug": {"type": "object", "description": "argv (flags only), cwd, exit, kill reason, timings, byte counts and stderr tail (debug)."},
        "savedFile": {"type": ["string", "null"], "description": "Where the answer was written (save_file); null when writing failed."},
        "saveError": {"type": "string", "description": "Why writing save_file failed."},
    });
    let (Value::Object(mut success_props), Value::Object(mut error_props), Value::Object(optional)) =
        (success_props, error_props, optional)
    else {
        unreachable!("json! object literals")
    };
    for (k, v) in optional {
        success_props.insert(k.clone(), v.clone());
        error_props.insert(k, v);
    }
    let mut success_required = vec![
        "response",
        "sessionId",
        "model",
        "stats",
        "durationMs",
        "exitCode",
        "truncated",
    ];
    if structured {
        success_required.push("json");
    }
    let schema = json!({
        "type": "object",
        "oneOf": [
            {
                "title": "success",
                "type": "object",
                "properties": success_props,
                "required": success_required,
            },
            {
                "title": "error",
                "type": "object",
                "properties": error_props,
                "required": ["errorKind", "exitCode", "message", "stderrTail", "partialResponse", "sessionId", "model", "stats", "durationMs", "signal", "retryDelayMs", "validationErrors", "rawResponse"],
            }
        ]
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("a json! object literal"),
    }
}

/// The annotations of every tool: the CLI runs with `--approval-mode=yolo`, so it may write files
/// and run commands (not read-only, possibly destructive); answers vary (not idempotent); it talks
/// to Google's API and whatever its tools reach (open world).
pub fn annotations(title: &str) -> ToolAnnotations {
    annotations_for(title, crate::policy::ApprovalMode::Yolo)
}

/// The annotations under an approval-mode ceiling (`GEMINICLI_MCP_APPROVAL_MODE`): no call can
/// run above it, so `plan` makes every tool read-only, and `default` (headless, nothing that
/// needs an approval runs) not destructive.
pub fn annotations_for(title: &str, ceiling: crate::policy::ApprovalMode) -> ToolAnnotations {
    use crate::policy::ApprovalMode;
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

/// The three tool definitions. `with_output_schema` is false for clients of protocol versions
/// before 2025-06-18, which have no `outputSchema` (nor tool titles).
pub fn definitions(with_output_schema: bool) -> Vec<Tool> {
    definitions_for(with_output_schema, crate::policy::ApprovalMode::Yolo)
}

/// The three tool definitions, annotated for the approval-mode `ceiling`.
pub fn definitions_for(
    with_output_schema: bool,
    ceiling: crate::policy::ApprovalMode,
) -> Vec<Tool> {
    static INPUTS: LazyLock<[Arc<JsonObject>; 3]> = LazyLock::new(|| {
        [
            input_schema::<PromptArgs>(),
            input_schema::<PromptWithContextArgs>(),
            input_schema::<PromptStructuredArgs>(),
        ]
    });
    let tools = [
        (GEMINI_PROMPT, "Ask Gemini", PROMPT_DESCRIPTION, false),
        (
            GEMINI_PROMPT_WITH_CONTEXT,
            "Ask Gemini with context",
            CONTEXT_DESCRIPTION,
            false,
        ),
        (
            GEMINI_PROMPT_STRUCTURED,
            "Ask Gemini for schema-valid JSON",
            STRUCTURED_DESCRIPTION,
            true,
        ),
    ];
    tools
        .into_iter()
        .zip(INPUTS.iter())
        .map(|((name, title, description, structured), input)| {
            let mut tool = Tool::new(name, description, input.clone())
                .annotate(annotations_for(title, ceiling));
            if with_output_schema {
                tool = tool
                    .with_title(title)
                    .with_raw_output_schema(output_schema(structured));
            }
            tool
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn decode_happy_paths() {
        let c = decode(
            ToolKind::Prompt,
            Some(&obj(json!({"prompt": "hi", "model": null}))),
        )
        .unwrap();
        assert_eq!(c.request.prompt, "hi");
        assert!(c.request.model.is_none());
        let c = decode(
            ToolKind::WithContext,
            Some(&obj(
                json!({"prompt": "q", "context": "c", "model": "flash"}),
            )),
        )
        .unwrap();
        assert_eq!(c.request.context.as_deref(), Some("c"));
        assert_eq!(c.request.model.as_deref(), Some("flash"));
        let c = decode(
            ToolKind::Structured,
            Some(&obj(json!({"prompt": "q", "schema": {"type": "object"}}))),
        )
        .unwrap();
        assert_eq!(c.schema, Some(json!({"type": "object"})));
    }

    #[test]
    fn bad_arguments_are_input_validation() {
        let cases = [
            (ToolKind::Prompt, None),
            (ToolKind::Prompt, Some(json!({"prompt": 5}))),
            (ToolKind::Prompt, Some(json!({"prompt": "x", "model": 1}))),
            (ToolKind::WithContext, Some(json!({"prompt": "x"}))),
            (ToolKind::Structured, Some(json!({"prompt": "x"}))),
            (
                ToolKind::Structured,
                Some(json!({"prompt": "x", "schema": "{}"})),
            ),
        ];
        for (tool, args) in cases {
            let args = args.map(obj);
            let f = decode(tool, args.as_ref()).unwrap_err();
            assert!(
                f.first_line()
                    .starts_with("[error exit=42] input_validation: "),
                "{f}"
            );
        }
    }

    #[test]
    fn definitions_advertise_the_reference_contract() {
        let tools = definitions(true);
        let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                GEMINI_PROMPT,
                GEMINI_PROMPT_WITH_CONTEXT,
                GEMINI_PROMPT_STRUCTURED
            ]
        );
        let required = |i: usize| tools[i].input_schema.get("required").cloned().unwrap();
        assert_eq!(required(0), json!(["prompt"]));
        assert_eq!(required(1), json!(["prompt", "context"]));
        assert_eq!(required(2), json!(["prompt", "schema"]));
        for t in &tools {
            assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
            assert_eq!(
                t.output_schema.as_ref().unwrap().get("type"),
                Some(&json!("object"))
            );
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(false));
            assert_eq!(a.idempotent_hint, Some(false));
            assert_eq!(a.open_world_hint, Some(true));
        }
        assert!(definitions(false).iter().all(|t| t.output_schema.is_none()));
    }

    #[test]
    fn readme_quotes_the_templates() {
        let readme = include_str!("../README.md");
        assert!(
            readme.contains(&format!(
                "```text\n{}\n```",
                crate::structured::CONTEXT_TEMPLATE
            )),
            "README's context block differs from structured::CONTEXT_TEMPLATE"
        );
        assert!(
            readme.contains(&format!(
                "```text\n{}\n```",
                crate::structured::STRUCTURED_INSTRUCTION
            )),
            "README's structured instruction differs from structured::STRUCTURED_INSTRUCTION"
        );
    }

    #[test]
    fn output_schema_accepts_both_shapes() {
        let schema = Value::Object((*output_schema(true)).clone());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let ok = json!({"response": "{}", "sessionId": null, "model": null, "stats": null, "durationMs": 1, "exitCode": 0, "truncated": false, "json": {}});
        assert!(validator.is_valid(&ok));
        let err = Failure::invalid_input("x").structured();
        assert!(validator.is_valid(&err), "{err}");
        assert!(!validator.is_valid(&json!({"response": 1})));
    }
}
