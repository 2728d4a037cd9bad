//! What the real agent says that never depends on a scenario: the `initialize` payload, the mode,
//! model and command lists of `session/new`, JSON-RPC error shapes, and Node's `util.inspect`
//! rendering of the messages it logs on stderr.

use agent_client_protocol_schema::v1::{PromptResponse, StopReason};
use serde_json::{json, Map, Value};

/// `initialize`'s result, byte for byte as observed on 0.61.0 (`version` is the emulated CLI's).
pub fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "authMethods": [
            {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"},
            {"id": "gemini-api-key", "name": "Gemini API key", "description": "Use an API key with Gemini Developer API", "_meta": {"api-key": {"provider": "google"}}},
            {"id": "vertex-ai", "name": "Vertex AI", "description": "Use an API key with Vertex AI GenAI API"},
            {"id": "gateway", "name": "AI API Gateway", "description": "Use a custom AI API Gateway", "_meta": {"gateway": {"protocol": "google", "restartRequired": "false"}}}
        ],
        "agentInfo": {"name": "gemini-cli", "title": "Gemini CLI", "version": version},
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": true, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": true}
        }
    })
}

/// A `session/prompt` answer: the schema's `PromptResponse`, with the CLI's token counts in
/// `_meta.quota` (no ACP `usage` before 0.64).
pub fn prompt_answer(stop: StopReason, quota: Value) -> Value {
    let mut meta = Map::new();
    meta.insert("quota".into(), quota);
    serde_json::to_value(PromptResponse::new(stop).meta(meta)).expect("serializes")
}

/// The answer to a cancelled prompt: stop reason `cancelled`, no counts.
pub fn cancelled_answer() -> Value {
    serde_json::to_value(PromptResponse::new(StopReason::Cancelled)).expect("serializes")
}

/// The auth method ids `authenticate` accepts (the CLI's `AuthType` enum, from source).
pub const AUTH_TYPES: &[&str] = &[
    "oauth-personal",
    "gemini-api-key",
    "vertex-ai",
    "cloud-shell",
    "compute-default-credentials",
    "gateway",
];

/// The approval modes of `session/new` (observed; `plan` is listed on 0.61.0).
pub const MODES: &[(&str, &str, &str)] = &[
    ("default", "Default", "Prompts for approval"),
    ("autoEdit", "Auto Edit", "Auto-approves edit tools"),
    ("yolo", "YOLO", "Auto-approves all tools"),
    ("plan", "Plan", "Read-only mode"),
];

/// `modes` of `session/new` / `session/load`.
pub fn modes(current: &str) -> Value {
    let list: Vec<Value> = MODES
        .iter()
        .map(|(id, name, d)| json!({"id": id, "name": name, "description": d}))
        .collect();
    json!({"availableModes": list, "currentModeId": current})
}

/// `models` of `session/new` / `session/load` (the list observed on 0.61.0).
pub fn models(current: &str) -> Value {
    json!({
        "availableModels": [
            {"modelId": "auto", "name": "Auto", "description": "Let Gemini CLI decide the best model for the task: gemini-3.1-pro-preview, gemini-3.8-flash"},
            {"modelId": "gemini-3.1-pro-preview-customtools", "name": "gemini-3.1-pro-preview"},
            {"modelId": "gemini-3-flash-preview", "name": "gemini-3-flash-preview"},
            {"modelId": "gemini-2.5-pro", "name": "gemini-2.5-pro"},
            {"modelId": "gemini-3.8-flash", "name": "gemini-3.8-flash"},
            {"modelId": "gemini-3.5-flash-lite", "name": "gemini-3.5-flash-lite"}
        ],
        "currentModelId": current
    })
}

/// The slash commands of `available_commands_update` (observed).
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("memory", "Manage memory."),
    ("memory show", "Shows the current memory contents."),
    ("memory refresh", "Refreshes the memory from the source."),
    ("memory list", "Lists the paths of the GEMINI.md files in use."),
    ("memory inbox", "Lists memory items extracted from past sessions that are pending review."),
    ("extensions", "Manage extensions."),
    ("extensions list", "Lists all installed extensions."),
    ("extensions explore", "Explore available extensions."),
    ("extensions enable", "Enable an extension."),
    ("extensions disable", "Disable an extension."),
    ("extensions install", "Install an extension from a git repo or local path."),
    ("extensions link", "Link an extension from a local path."),
    ("extensions uninstall", "Uninstall an extension."),
    ("extensions restart", "Restart an extension."),
    ("extensions update", "Update an extension."),
    ("init", "Analyzes the project and creates a tailored GEMINI.md file"),
    ("restore", "Restore to a previous checkpoint, or list available checkpoints to restore. This will reset the conversation and file history to the state it was in when the checkpoint was created"),
    ("restore list", "Lists all available checkpoints."),
    ("about", "Show version and environment info"),
    ("help", "Show available commands"),
];

/// The `available_commands_update` payload.
pub fn available_commands() -> Value {
    let list: Vec<Value> = COMMANDS
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d}))
        .collect();
    json!({"sessionUpdate": "available_commands_update", "availableCommands": list})
}

/// A JSON-RPC error object; `data` is left out when absent, as `JSON.stringify` drops `undefined`.
pub fn error(code: i64, message: &str, data: Option<Value>) -> Value {
    let mut e = Map::new();
    e.insert("code".into(), json!(code));
    e.insert("message".into(), json!(message));
    if let Some(d) = data {
        e.insert("data".into(), d);
    }
    Value::Object(e)
}

/// An agent method's error as 0.62 sends it (`crate::releases::ACP_ERRORS_AS_TEXT`): an API
/// error (its HTTP status as the code) becomes `-32000` with the message alone; the SDK's own
/// errors (parse, method not found, parameters against the schema) stay.
pub fn as_text_error(e: Value) -> Value {
    let code = e["code"].as_i64().unwrap_or_default();
    let message = e["message"].as_str().unwrap_or_default();
    if (400..=599).contains(&code) {
        error(-32000, message, None)
    } else {
        e
    }
}

/// The context window of the emulated models, in tokens.
const CONTEXT_WINDOW: u64 = 1_048_576;

/// A prompt's answer as 0.64 ends it (`crate::releases::USAGE_UPDATE`): the turn's token counts
/// also as ACP's `usage` (`inputTokens`, `outputTokens`, `totalTokens`); returns the
/// `usage_update` session update sent before the answer (`used`: the turn's tokens, `size`: the
/// model's context window), or `None` for an answer without counts (a cancelled turn).
pub fn with_usage(answer: &mut Value) -> Option<Value> {
    let count = &answer["_meta"]["quota"]["token_count"];
    let (input, output) = (
        count["input_tokens"].as_u64()?,
        count["output_tokens"].as_u64()?,
    );
    answer["usage"] = json!({"inputTokens": input, "outputTokens": output,
        "totalTokens": input + output});
    Some(
        json!({"sessionUpdate": "usage_update", "used": input + output,
        "size": CONTEXT_WINDOW}),
    )
}

/// The SDK's `RequestError.methodNotFound`.
pub fn method_not_found(method: &str) -> Value {
    error(
        -32601,
        &format!("\"Method not found\": {method}"),
        Some(json!({"method": method})),
    )
}

/// A plain `Error` thrown by a handler: `-32603 Internal error` with `data.details`.
pub fn internal(details: &str) -> Value {
    error(-32603, "Internal error", Some(json!({"details": details})))
}

/// The params schema of each request the SDK validates before the agent sees it: the required
/// fields in the schema's (alphabetical) order and the type zod expects (observed on 0.61.0).
const SCHEMAS: &[(&str, &[(&str, &str)])] = &[
    ("initialize", &[("protocolVersion", "number")]),
    ("authenticate", &[("methodId", "string")]),
    ("session/new", &[("cwd", "string"), ("mcpServers", "array")]),
    (
        "session/load",
        &[
            ("cwd", "string"),
            ("mcpServers", "array"),
            ("sessionId", "string"),
        ],
    ),
    (
        "session/prompt",
        &[("prompt", "array"), ("sessionId", "string")],
    ),
    (
        "session/set_mode",
        &[("modeId", "string"), ("sessionId", "string")],
    ),
    (
        "session/set_model",
        &[("modelId", "string"), ("sessionId", "string")],
    ),
];

/// zod v4's name for the type of a value (`None`: absent, JavaScript's `undefined`).
fn zod_type(v: Option<&Value>) -> &'static str {
    match v {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

fn has_type(v: Option<&Value>, expected: &str) -> bool {
    let t = zod_type(v);
    t == expected || (expected == "record" && t == "object")
}

/// One zod v4 `invalid_type` issue.
fn invalid_type(path: &[&str], expected: &str, got: Option<&Value>) -> Value {
    json!({"expected": expected, "code": "invalid_type", "path": path,
        "message": format!("Invalid input: expected {expected}, received {}", zod_type(got))})
}

/// A schema failure as 0.61's SDK answers it: `-32603 Internal error` with zod's issue list as
/// `data` (observed; not the `-32602 Invalid params` of older SDKs).
fn schema_error(issues: Vec<Value>) -> Value {
    error(-32603, "Internal error", Some(Value::Array(issues)))
}

/// The SDK's validation of a request's params: `Err` with every issue, in schema order, for
/// params that are not an object or fields of the wrong type (observed: missing and wrongly
/// typed fields, `_meta` that is not a record, params absent, `null` or an array).
pub fn check_params(method: &str, params: Option<&Value>) -> Result<(), Value> {
    let Some((_, fields)) = SCHEMAS.iter().find(|(m, _)| *m == method) else {
        return Ok(());
    };
    let Some(obj) = params.and_then(Value::as_object) else {
        return Err(schema_error(vec![invalid_type(&[], "object", params)]));
    };
    let mut issues = Vec::new();
    if let Some(meta) = obj.get("_meta").filter(|m| !m.is_null()) {
        if !has_type(Some(meta), "record") {
            issues.push(invalid_type(&["_meta"], "record", Some(meta)));
        }
    }
    for (field, expected) in *fields {
        if !has_type(obj.get(*field), expected) {
            issues.push(invalid_type(&[field], expected, obj.get(*field)));
        }
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(schema_error(issues))
    }
}

/// A required field that is missing, as the schema check reports it (callers past
/// [`check_params`] keep it as a guard).
pub fn invalid_params(field: &str, _problem: &str) -> Value {
    let expected = SCHEMAS
        .iter()
        .flat_map(|(_, f)| f.iter())
        .find(|(name, _)| *name == field)
        .map_or("string", |(_, t)| *t);
    schema_error(vec![invalid_type(&[field], expected, None)])
}

/// Stands for JavaScript's `undefined` (a RequestError without data) inside [`inspect`].
const UNDEFINED: &str = "\u{0}undefined";

/// Node's `util.inspect` of a JSON value, as `console.error` prints it: objects past depth 2 as
/// `[Object]`, an object on one line when its entries fit the 80-column rule of
/// `reduceToSingleString`, else one entry per line indented by two.
pub fn inspect(v: &Value) -> String {
    fn string(s: &str) -> String {
        if s == UNDEFINED {
            return "undefined".into();
        }
        // Single quotes unless the text has some; then double quotes, then backticks.
        let q = if !s.contains('\'') {
            '\''
        } else if !s.contains('"') {
            '"'
        } else {
            '`'
        };
        let body = s.replace('\\', "\\\\").replace('\n', "\\n");
        format!("{q}{body}{q}")
    }
    fn key(k: &str) -> String {
        let plain = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
            && !k.starts_with(|c: char| c.is_ascii_digit());
        if plain {
            k.to_string()
        } else {
            string(k)
        }
    }
    fn go(v: &Value, depth: usize, indent: usize) -> String {
        let (open, close, entries): (&str, &str, Vec<String>) = match v {
            Value::Null => return "null".into(),
            Value::Bool(b) => return b.to_string(),
            Value::Number(n) => return n.to_string(),
            // formatPrimitive: a long string with line breaks is cut after each one into
            // quoted pieces joined by ` +` on indented lines.
            Value::String(s) if s.contains('\n') && s.encode_utf16().count() + indent + 4 > 80 => {
                return s
                    .split_inclusive('\n')
                    .map(string)
                    .collect::<Vec<_>>()
                    .join(&format!(" +\n{}", " ".repeat(indent + 2)))
            }
            Value::String(s) => return string(s),
            Value::Array(a) if a.is_empty() => return "[]".into(),
            Value::Object(o) if o.is_empty() => return "{}".into(),
            Value::Array(_) if depth > 2 => return "[Array]".into(),
            Value::Object(_) if depth > 2 => return "[Object]".into(),
            Value::Array(a) => (
                "[",
                "]",
                a.iter().map(|x| go(x, depth + 1, indent + 2)).collect(),
            ),
            Value::Object(o) => (
                "{",
                "}",
                o.iter()
                    .map(|(k, x)| format!("{}: {}", key(k), go(x, depth + 1, indent + 2)))
                    .collect(),
            ),
        };
        // isBelowBreakLength: entries + start + the entries' lengths within 80 columns.
        let start = entries.len() + indent + open.len() + 10;
        let total = entries.len() + start + entries.iter().map(String::len).sum::<usize>();
        let one_line =
            entries.len() + start <= 80 && total <= 80 && !entries.iter().any(|e| e.contains('\n'));
        if one_line {
            format!("{open} {} {close}", entries.join(", "))
        } else {
            let pad = " ".repeat(indent);
            format!(
                "{open}\n{pad}  {}\n{pad}{close}",
                entries.join(&format!(",\n{pad}  "))
            )
        }
    }
    go(v, 0, 0)
}

/// The stderr line for a request answered with an error, as the SDK logs it.
pub fn error_log_line(kind: &str, message: &Value, error: &Value) -> String {
    let mut e = error.clone();
    if let Some(o) = e.as_object_mut() {
        o.entry("data").or_insert(json!(UNDEFINED));
    }
    format!("Error handling {kind} {} {}", inspect(message), inspect(&e))
}

/// `JSON.parse`'s message for a line that is not JSON (V8's wording for a bad first token).
pub fn parse_error_line(line: &str) -> String {
    let frames = format!(
        "\n    at JSON.parse (<anonymous>)\n    at Object.start (file://{}/node_modules/@google/gemini-cli/bundle/gemini-3HFX2LNT.js:13401:38)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
        crate::texts::CLI_ROOT
    );
    // A line that is JSON cut short (observed: `{"half": `).
    if serde_json::from_str::<Value>(line).is_err_and(|e| e.is_eof()) {
        return format!(
            "Failed to parse JSON message: {line} SyntaxError: Unexpected end of JSON input{frames}"
        );
    }
    // V8 reads `t`/`f`/`n` as the start of true/false/null and blames the first byte that breaks it.
    let mut first = line.chars().next().unwrap_or(' ');
    for lit in ["true", "false", "null"] {
        if line.starts_with(&lit[..1]) {
            if let Some((c, _)) = line.chars().zip(lit.chars()).find(|(a, b)| a != b) {
                first = c;
            }
        }
    }
    let shown: String = if line.chars().count() > 31 {
        format!("{}...", line.chars().take(10).collect::<String>())
    } else {
        line.to_string()
    };
    format!(
        "Failed to parse JSON message: {line} SyntaxError: Unexpected token '{first}', \"{shown}\" is not valid JSON{frames}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_renders_like_node() {
        let m = json!({"jsonrpc": "2.0", "id": 9, "method": "no/such_method", "params": {}});
        assert_eq!(
            inspect(&m),
            "{ jsonrpc: '2.0', id: 9, method: 'no/such_method', params: {} }"
        );
        let e = json!({"code": -32601, "message": "\"Method not found\": no/such_method", "data": {"method": "no/such_method"}});
        assert_eq!(
            inspect(&e),
            "{\n  code: -32601,\n  message: '\"Method not found\": no/such_method',\n  data: { method: 'no/such_method' }\n}"
        );
        let p = json!({"params": {"prompt": [{"type": "text"}]}});
        assert_eq!(inspect(&p), "{ params: { prompt: [ [Object] ] } }");
    }

    #[test]
    fn schema_failures_are_zod_issue_lists() {
        // As the real 0.61.0 agent answered and logged them.
        let msg =
            json!({"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": {"cwd": "/p"}});
        let e = check_params("session/new", msg.get("params")).unwrap_err();
        assert_eq!(
            e,
            json!({"code": -32603, "message": "Internal error", "data": [{"expected": "array",
                "code": "invalid_type", "path": ["mcpServers"],
                "message": "Invalid input: expected array, received undefined"}]})
        );
        assert_eq!(
            error_log_line("request", &msg, &e),
            "Error handling request {\n  jsonrpc: '2.0',\n  id: 10,\n  method: 'session/new',\n  params: { cwd: '/p' }\n} {\n  code: -32603,\n  message: 'Internal error',\n  data: [\n    {\n      expected: 'array',\n      code: 'invalid_type',\n      path: [Array],\n      message: 'Invalid input: expected array, received undefined'\n    }\n  ]\n}"
        );
        let paths = |e: Value| -> Vec<String> {
            e["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| format!("{} {}", i["path"], i["message"].as_str().unwrap()))
                .collect()
        };
        assert_eq!(
            paths(check_params("session/load", Some(&json!({}))).unwrap_err()),
            [
                r#"["cwd"] Invalid input: expected string, received undefined"#,
                r#"["mcpServers"] Invalid input: expected array, received undefined"#,
                r#"["sessionId"] Invalid input: expected string, received undefined"#
            ]
        );
        assert_eq!(
            paths(
                check_params("session/new", Some(&json!({"cwd": 5, "mcpServers": {}})))
                    .unwrap_err()
            ),
            [
                r#"["cwd"] Invalid input: expected string, received number"#,
                r#"["mcpServers"] Invalid input: expected array, received object"#
            ]
        );
        assert_eq!(
            paths(check_params("session/new", Some(&json!([]))).unwrap_err()),
            ["[] Invalid input: expected object, received array"]
        );
        assert_eq!(
            paths(check_params("session/new", None).unwrap_err()),
            ["[] Invalid input: expected object, received undefined"]
        );
        assert_eq!(
            paths(check_params("initialize", Some(&json!({"protocolVersion": "1"}))).unwrap_err()),
            [r#"["protocolVersion"] Invalid input: expected number, received string"#]
        );
        assert_eq!(
            paths(
                check_params(
                    "session/new",
                    Some(&json!({"cwd": "/p", "mcpServers": [], "_meta": 5}))
                )
                .unwrap_err()
            ),
            [r#"["_meta"] Invalid input: expected record, received number"#]
        );
        assert_eq!(
            check_params("session/new", Some(&json!({"cwd": "/p", "mcpServers": []}))),
            Ok(())
        );
        assert_eq!(check_params("no/such_method", None), Ok(()));
    }

    #[test]
    fn long_multi_line_strings_are_cut_like_node() {
        // As the real 0.61.0 agent logged a malformed gateway payload.
        let e = json!({"code": -32000, "message": "Malformed gateway payload: [\n  {\n    \"code\": \"invalid_type\",\n    \"expected\": \"string\"\n  }\n]"});
        assert_eq!(
            inspect(&e),
            "{\n  code: -32000,\n  message: 'Malformed gateway payload: [\\n' +\n    '  {\\n' +\n    '    \"code\": \"invalid_type\",\\n' +\n    '    \"expected\": \"string\"\\n' +\n    '  }\\n' +\n    ']'\n}"
        );
        // Short ones stay on one line.
        assert_eq!(inspect(&json!({"m": "a\nb"})), "{ m: 'a\\nb' }");
    }

    #[test]
    fn parse_error_names_the_first_token() {
        let l = parse_error_line("this is not json");
        assert!(l.starts_with("Failed to parse JSON message: this is not json SyntaxError: Unexpected token 'h', \"this is not json\" is not valid JSON\n"), "{l}");
        let l = parse_error_line("{\"half\": ");
        assert!(
            l.starts_with("Failed to parse JSON message: {\"half\":  SyntaxError: Unexpected end of JSON input\n    at JSON.parse"),
            "{l}"
        );
    }
}
