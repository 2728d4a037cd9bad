//! Tool arguments: one `Deserialize + JsonSchema` struct per tool is both the advertised
//! `inputSchema` and the decoder. A decoding error becomes an `input_validation` failure that
//! names the argument and what it must be (read from the same schema), so the model can fix its
//! call. Unknown arguments are ignored, as the reference's validator does.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Failure;

/// The JSON Schema of `T` as a tool's `inputSchema`, in the plainest dialect every client
/// accepts: one `type` per property (an optional argument is simply not `required`, never
/// `["string", "null"]`), enums as `enum` lists, no `$ref`/`$defs`, no `anyOf`/`oneOf`, no
/// `$schema` or `title`. Gemini's own function declarations and OpenAPI 3.0 subsets reject the
/// rest.
pub(crate) fn schema_of<T: JsonSchema>() -> JsonObject {
    let (map, defs) = generated::<T>(schemars::generate::SchemaSettings::draft2020_12());
    let mut root = Value::Object(map);
    simplify(&mut root, &defs);
    match root {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `node` (one plain type) or `null`: its description stays on top, the rest is the first branch.
fn or_null(node: Value) -> Value {
    let Value::Object(mut branch) = node else {
        return node;
    };
    let mut top = serde_json::Map::new();
    if let Some(d) = branch.remove("description") {
        top.insert("description".into(), d);
    }
    let null = serde_json::json!({"type": "null"});
    top.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(branch), null]),
    );
    Value::Object(top)
}

/// `T`'s schema as schemars makes it under `settings`, without `$schema` and `title`, and its
/// `$defs` apart (for [`simplify`] to inline).
fn generated<T: JsonSchema>(settings: schemars::generate::SchemaSettings) -> (JsonObject, Value) {
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let Ok(Value::Object(mut map)) = serde_json::to_value(schema) else {
        return (JsonObject::new(), Value::Null);
    };
    let defs = map.remove("$defs").unwrap_or(Value::Null);
    map.remove("$schema");
    map.remove("title");
    (map, defs)
}

/// Rewrites one schema node (and those below it) into the plain dialect of [`schema_of`].
fn simplify(node: &mut Value, defs: &Value) {
    let Value::Object(map) = node else { return };
    // `$ref` into `$defs`: inlined, the referring node's own keys (its description) kept.
    if let Some(Value::String(r)) = map.remove("$ref") {
        if let Some(Value::Object(def)) = r.strip_prefix("#/$defs/").and_then(|name| defs.get(name))
        {
            for (k, v) in def {
                map.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    // `anyOf: [X, {"type": "null"}]` (an `Option` of a named type): X.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.get(key) {
            let not_null: Vec<Value> = options
                .iter()
                .filter(|o| o.get("type") != Some(&Value::String("null".into())))
                .cloned()
                .collect();
            if not_null.len() == 1 && not_null.len() < options.len() {
                map.remove(key);
                if let Value::Object(only) = &not_null[0] {
                    for (k, v) in only {
                        map.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                return simplify(node, defs);
            }
        }
    }
    // A `oneOf` of string constants (a Rust enum): an `enum` list.
    if let Some(Value::Array(options)) = map.get("oneOf") {
        let consts: Option<Vec<Value>> = options.iter().map(|o| o.get("const").cloned()).collect();
        if let Some(values) = consts.filter(|v| v.iter().all(Value::is_string)) {
            map.remove("oneOf");
            map.insert("type".into(), Value::String("string".into()));
            map.insert("enum".into(), Value::Array(values));
        }
    }
    // `"type": [X, "null"]`: X; an optional argument's `"default": null` says nothing.
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            map.insert("type".into(), kept[0].clone());
        }
    }
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    // A doc comment's line breaks are the source's wrapping, not the text's: one paragraph is one
    // line for the model.
    if let Some(Value::String(d)) = map.get_mut("description") {
        *d = unwrap_lines(d);
    }
    // Rust's integer formats (`uint64`, `int32`, …) are no JSON Schema format: validators that
    // do not know them warn on every call (the Gemini CLI does, twelve times a call).
    if map.get("format").and_then(Value::as_str).is_some_and(|f| {
        f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
    }) {
        map.remove("format");
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for prop in props.values_mut() {
            simplify(prop, defs);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            simplify(child, defs);
        }
    }
}

/// The JSON Schema of a result type `T` as a tool's `outputSchema`: what `T` serializes to, in
/// the dialect of [`schema_of`], except that a field always present may be `null`: then it is
/// `anyOf` its type and `null`, each branch of one `type` (a `type` array is legal, but linters and
/// single-type dialects refuse it). A field left out when empty is not `required` and has one type.
pub(crate) fn output_schema_of<T: JsonSchema>() -> JsonObject {
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let (mut map, defs) = generated::<T>(settings);
    let required: Vec<Value> = match map.get("required") {
        Some(Value::Array(r)) => r.clone(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            let nullable = prop
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|t| t == "null"));
            simplify(prop, &defs);
            if nullable && required.contains(&Value::String(name.clone())) {
                *prop = or_null(std::mem::take(prop));
            }
        }
    }
    map
}

/// `text` with each paragraph (lines up to a blank one) joined into one line.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.lines().map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// [`schema_of`] shared.
pub(crate) fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    Arc::new(schema_of::<T>())
}

/// Decodes `arguments` (none: `{}`) as `T`.
pub(crate) fn decode<T: DeserializeOwned + JsonSchema>(
    arguments: Option<&JsonObject>,
) -> Result<T, Failure> {
    let object = Value::Object(arguments.cloned().unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(&object)
        .map_err(|e| Failure::invalid_input(describe(&e, &object, &schema_of::<T>())))
}

/// The message of a decoding error: which argument, what it must be, what came.
fn describe(
    e: &serde_path_to_error::Error<serde_json::Error>,
    arguments: &Value,
    schema: &JsonObject,
) -> String {
    let inner = e.inner().to_string();
    // The argument is the path's first segment; a missing field names itself in the message.
    let path: Vec<String> = e
        .path()
        .iter()
        .map(|s| match s {
            serde_path_to_error::Segment::Map { key } => key.clone(),
            serde_path_to_error::Segment::Seq { index } => index.to_string(),
            _ => String::new(),
        })
        .collect();
    let missing = inner
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next());
    let name = missing
        .map(str::to_owned)
        .or_else(|| path.first().cloned())
        .unwrap_or_default();
    let property = schema
        .get("properties")
        .and_then(|p| p.get(&name))
        .unwrap_or(&Value::Null);
    let expected = expected(property);
    let given = arguments.get(&name);
    if missing.is_some() || given.is_none_or(Value::is_null) {
        return format!("missing required argument `{name}` ({expected})");
    }
    if inner.starts_with("invalid type")
        || inner.starts_with("invalid value")
        || inner.starts_with("unknown variant")
    {
        let got = match (path.get(1), given) {
            (Some(index), Some(Value::Array(items))) => {
                let element = index.parse::<usize>().ok().and_then(|i| items.get(i));
                format!(
                    "an element that is {}",
                    element.map_or("something else", |v| type_name(v))
                )
            }
            (_, Some(v)) => got(v),
            _ => "something else".into(),
        };
        return format!("argument `{name}` must be {expected}, got {got}");
    }
    format!("argument `{name}`: {inner}")
}

/// What a schema property asks for, in words: "a string", "an array of strings", "one of a, b".
fn expected(property: &Value) -> String {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let names: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        return format!("one of {}", names.join(", "));
    }
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let kind = types.into_iter().find(|t| *t != "null");
    let positive = property
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|m| m >= 1.0);
    match kind {
        Some("string") => "a string".into(),
        Some("boolean") => "a boolean".into(),
        Some("integer") if positive => "a positive integer".into(),
        Some("integer") => "an integer".into(),
        Some("number") => "a number".into(),
        Some("object") => "an object".into(),
        Some("array") => match property.pointer("/items/type").and_then(Value::as_str) {
            Some("string") => "an array of strings".into(),
            Some(other) => format!("an array of {other}s"),
            None => "an array".into(),
        },
        _ => "a valid value".into(),
    }
}

/// A given value in an error message: numbers as written, other values by their type.
fn got(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{:?}", s.chars().take(64).collect::<String>()),
        other => type_name(other).to_owned(),
    }
}

/// "a string", "an array", … for a JSON value.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An optional string argument with the empty string meaning "not given" (clients fill
/// optional fields with "").
pub(crate) fn given(value: Option<String>) -> Option<String> {
    value.filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        prompt: String,
        #[serde(default)]
        dirs: Option<Vec<String>>,
        #[serde(default)]
        wait_ms: Option<std::num::NonZeroU64>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        flag: Option<bool>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Plan,
        Yolo,
    }

    fn message(args: Value) -> String {
        let Value::Object(map) = args else {
            panic!("an object")
        };
        decode::<Args>(Some(&map)).unwrap_err().message
    }

    #[test]
    fn each_error_names_the_argument_and_what_it_must_be() {
        assert_eq!(
            message(json!({})),
            "missing required argument `prompt` (a string)"
        );
        assert_eq!(
            message(json!({"prompt": null})),
            "missing required argument `prompt` (a string)"
        );
        assert_eq!(
            message(json!({"prompt": 5})),
            "argument `prompt` must be a string, got 5"
        );
        assert_eq!(
            message(json!({"prompt": "x", "dirs": ["a", 3]})),
            "argument `dirs` must be an array of strings, got an element that is a number"
        );
        assert_eq!(
            message(json!({"prompt": "x", "dirs": "a"})),
            "argument `dirs` must be an array of strings, got \"a\""
        );
        assert_eq!(
            message(json!({"prompt": "x", "wait_ms": 0})),
            "argument `wait_ms` must be a positive integer, got 0"
        );
        assert_eq!(
            message(json!({"prompt": "x", "wait_ms": -5})),
            "argument `wait_ms` must be a positive integer, got -5"
        );
        assert_eq!(
            message(json!({"prompt": "x", "mode": "all"})),
            "argument `mode` must be one of plan, yolo, got \"all\""
        );
        assert_eq!(
            message(json!({"prompt": "x", "flag": "yes"})),
            "argument `flag` must be a boolean, got \"yes\""
        );
    }

    #[test]
    fn schemas_are_plain_one_type_per_property() {
        let schema = Value::Object(schema_of::<Args>());
        let text = schema.to_string();
        for banned in ["$ref", "$defs", "anyOf", "oneOf", "\"null\"", "uint64"] {
            assert!(!text.contains(banned), "{banned} in {text}");
        }
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            json!(["plan", "yolo"])
        );
        assert_eq!(schema["properties"]["dirs"]["type"], "array");
        assert_eq!(schema["properties"]["dirs"]["items"]["type"], "string");
        assert_eq!(schema["properties"]["wait_ms"]["type"], "integer");
        assert_eq!(schema["required"], json!(["prompt"]));
    }

    #[test]
    fn unknown_arguments_and_nulls_for_optional_ones_pass() {
        let Value::Object(map) = json!({"prompt": "x", "dirs": null, "other": 1}) else {
            unreachable!()
        };
        let args: Args = decode(Some(&map)).unwrap();
        assert_eq!(args.prompt, "x");
        assert!(args.dirs.is_none());
        assert!(decode::<Args>(None).is_err());
    }
}
