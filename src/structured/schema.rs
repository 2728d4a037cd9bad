//! The caller's JSON Schema: the reference's size limits, checked before the model runs, then
//! compilation by `boon` (every draft, offline, `pattern` on the linear-time `regex` engine after
//! its ECMA-262 translation). The validator has no hook for a keyword of the caller's: the
//! server's limits on `pattern` are checked in a walk of the schema before it compiles, and the
//! per-string limit and per-answer budget are a `format` of the server's own, which the validator
//! runs just before `pattern` in every schema object that has one.

use std::cell::Cell;
use std::io;

use serde_json::Value;

/// Largest accepted schema, in bytes of its compact JSON serialization (1 MiB).
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;
/// Most JSON objects and arrays a schema may contain (scalars are not counted).
pub const MAX_SCHEMA_NODES: usize = 10_000;
/// Deepest nesting of JSON objects and arrays in a schema; the root container is level 1.
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// Longest string, in characters (Unicode scalar values), that is tested against a `pattern`.
pub const MAX_PATTERN_INPUT_CHARS: usize = 65_536;
/// Characters that all `pattern` evaluations of one response may examine together. Property
/// names matched by `patternProperties` go through the same linear-time engine but are not counted.
pub const PATTERN_BUDGET_CHARS: usize = 262_144;
/// Compiled-program size limit per `pattern` (the `regex` crate's default is 10 MiB).
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Lazy-DFA cache limit per `pattern`: exceeding it costs speed, never correctness.
const REGEX_DFA_SIZE_LIMIT: usize = 1 << 20;

/// Why a schema was refused. Every variant is the caller's fault, reported as `input_validation`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The compact serialization exceeds [`MAX_SCHEMA_BYTES`].
    #[error(
        "schema is larger than {MAX_SCHEMA_BYTES} bytes (1 MiB) when serialized as compact JSON"
    )]
    TooLarge,
    /// More than [`MAX_SCHEMA_NODES`] objects and arrays.
    #[error("schema has more than {MAX_SCHEMA_NODES} nodes (JSON objects and arrays)")]
    TooManyNodes,
    /// Nested deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("schema nests JSON objects and arrays deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
    /// A `pattern` (or `patternProperties` key) the linear-time engine cannot compile.
    #[error(
        "schema regular expression at {pointer} cannot be compiled by the linear-time regex engine \
         (lookaround, backreferences and patterns compiling past 1 MiB are not supported): {reason}"
    )]
    Pattern {
        /// JSON pointer into the schema, e.g. `/properties/a/pattern` or `/patternProperties/^x`.
        pointer: String,
        /// The engine's own complaint.
        reason: String,
    },
    /// A `$ref` that points outside the schema document.
    #[error(
        "schema `$ref` cannot be resolved offline (remote and file references are never fetched; \
         put the definition under `$defs` and refer to it as `#/$defs/…`): {reason}"
    )]
    RemoteRef {
        /// What the resolver said.
        reason: String,
    },
    /// A `$schema` that is none of the five drafts' meta-schemas.
    #[error(
        "schema `$schema` {uri} is not a known draft (custom meta-schemas are never fetched); use \
         the URI of draft-04, draft-06, draft-07, 2019-09 or 2020-12, or leave `$schema` out for \
         2020-12"
    )]
    UnknownMetaSchema {
        /// The `$schema` value.
        uri: String,
    },
    /// Anything else the compiler refused (not valid under its draft's meta-schema, …).
    #[error("invalid schema at {pointer}: {reason}")]
    Invalid {
        /// JSON pointer of the offending part (empty for the root).
        pointer: String,
        /// The compiler's message.
        reason: String,
    },
}

/// A schema that passed the limits and compiled: ready to validate answers.
pub struct PreparedSchema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    draft: boon::Draft,
    schema: Value,
}

impl std::fmt::Debug for PreparedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSchema")
            .field("draft", &self.draft)
            .finish_non_exhaustive()
    }
}

/// Namespace for schema preparation.
pub struct Schema;

/// Where the caller's schema sits for the compiler: a URI nothing can be fetched from, against
/// which a relative `$ref` resolves to another document (refused by [`Offline`]).
const LOCATION: &str = "urn:geminicli-mcp:schema";

/// The `format` the compiler sees in place of the caller's in every schema object that has a
/// `pattern`: its check charges the string to the pattern limits ([`charge`]) just before the
/// `pattern` itself is evaluated (the validator runs `format` first).
const PATTERN_INPUT: &str = "geminicli-mcp-pattern-input";

/// The loader of every document but the caller's: refuses, so no reference is ever fetched.
struct Offline;

impl boon::UrlLoader for Offline {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is never fetched").into())
    }
}

impl Schema {
    /// Checks the limits and compiles `schema`. The draft comes from `$schema` (default 2020-12);
    /// `format` is an annotation; no reference is ever fetched.
    pub fn prepare(schema: &Value) -> Result<PreparedSchema, SchemaError> {
        check_shape(schema)?;
        check_size(schema)?;
        let draft = match schema.get("$schema").and_then(Value::as_str) {
            None => boon::Draft::V2020_12,
            Some(uri) => {
                boon::Draft::from_url(uri).ok_or_else(|| SchemaError::UnknownMetaSchema {
                    uri: uri.to_owned(),
                })?
            }
        };
        let mut compiled = schema.clone();
        let mut pointer = String::new();
        bound_patterns(&mut compiled, &mut pointer)?;

        // The compiler recurses for each level of the schema (its check against the meta-schema
        // more than once), several times deeper than a worker thread's stack allows at 64 levels
        // in a debug build: it runs on a thread of its own with room to spare (address space,
        // touched only as deep as the schema goes).
        let (schemas, index) = with_validator_stack(|| compile(compiled, draft))?;
        Ok(PreparedSchema {
            schemas,
            index,
            draft,
            schema: schema.clone(),
        })
    }
}

/// The stack of the thread the compiler and the validator run on: a 64-level schema takes under
/// 4 MiB to compile in a debug build, an answer at serde_json's 128 levels under a recursive
/// schema a few MiB to validate. Address space: only as much is touched as the recursion goes.
const VALIDATOR_STACK_BYTES: usize = 64 << 20;

/// Runs `f` on a thread with [`VALIDATOR_STACK_BYTES`] of stack and waits for it. The compiler
/// and the validator recurse for each level of the schema and of the answer (several frames
/// each), deeper than a worker thread's 2 MiB allows at the limits; one thread per schema or
/// answer costs tens of microseconds. Where no thread can be started, `f` runs here.
pub(crate) fn with_validator_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let mut f = Some(f);
    let ran = std::thread::scope(|scope| {
        let run = &mut f;
        let spawned = std::thread::Builder::new()
            .name("schema-validator".to_owned())
            .stack_size(VALIDATOR_STACK_BYTES)
            .spawn_scoped(scope, move || run.take().map(|f| f()));
        spawned.ok().map(|thread| thread.join())
    });
    match ran {
        Some(Ok(Some(value))) => value,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        // Not started: the closure is still here.
        Some(Ok(None)) | None => (f.take().expect("the closure ran nowhere"))(),
    }
}

/// Compiles the caller's schema (its copy with the pattern limits' `format`) offline.
fn compile(
    schema: Value,
    draft: boon::Draft,
) -> Result<(boon::Schemas, boon::SchemaIndex), SchemaError> {
    let mut compiler = boon::Compiler::new();
    compiler.use_loader(Box::new(Offline));
    compiler.set_default_draft(draft);
    // Every `format` but ours was taken out of the compiled copy, so this asserts ours alone.
    compiler.enable_format_assertions();
    compiler.register_format(boon::Format {
        name: PATTERN_INPUT,
        func: |v| match v {
            Value::String(s) => charge(s).map_err(Into::into),
            _ => Ok(()),
        },
    });
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource(LOCATION, schema)
        .and_then(|()| compiler.compile(LOCATION, &mut schemas))
        .map(|index| (schemas, index))
        .map_err(|err| classify_build_error(&err))
}

impl PreparedSchema {
    /// The schema as given (the instruction quotes it to the model).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The draft the schema is read under (from `$schema`, default 2020-12).
    pub fn draft(&self) -> boon::Draft {
        self.draft
    }

    /// Validates `instance`, returning at most `max` issues (empty when valid). The pattern budget
    /// is whatever the caller's [`PatternBudget`] scope says (unlimited outside one).
    ///
    /// A valid instance is the common case: the validator builds no error for it. An invalid one
    /// gives a tree of errors (`anyOf` failed, because of each branch's own); its leaves are the
    /// issues, each with the instance path it is about.
    pub(crate) fn issues(&self, instance: &Value, max: usize) -> Vec<(String, String)> {
        let Err(err) = self.schemas.validate(instance, self.index) else {
            return Vec::new();
        };
        let mut issues = Vec::new();
        let mut stack = vec![&err];
        while let Some(e) = stack.pop() {
            if issues.len() >= max {
                break;
            }
            if e.causes.is_empty() {
                issues.push((e.instance_location.to_string(), message(&e.kind)));
            }
            stack.extend(e.causes.iter().rev());
        }
        issues
    }
}

/// An issue's message: the validator's own, but for the pattern limits, which say only why (the
/// validator's wording would quote the whole string first).
fn message(kind: &boon::ErrorKind<'_, '_>) -> String {
    match kind {
        boon::ErrorKind::Format { want, err, .. } if *want == PATTERN_INPUT => err.to_string(),
        _ => kind.to_string(),
    }
}

fn classify_build_error(err: &boon::CompileError) -> SchemaError {
    use boon::CompileError as E;
    let reason = format!("{err:#}");
    match err {
        // For a schema the meta-schema refuses, the "instance" is the caller's schema itself: the
        // first leaf's instance location points into what the caller wrote.
        E::ValidationError { src, .. } => {
            let mut leaf = src;
            while let Some(cause) = leaf.causes.first() {
                leaf = cause;
            }
            SchemaError::Invalid {
                pointer: leaf.instance_location.to_string(),
                reason: leaf.kind.to_string(),
            }
        }
        E::UnsupportedDraft { url } | E::InvalidMetaSchemaUrl { url, .. } => {
            SchemaError::UnknownMetaSchema { uri: url.clone() }
        }
        E::InvalidRegex { url, .. } => SchemaError::Pattern {
            pointer: fragment(url),
            reason,
        },
        E::LoadUrlError { .. } | E::UnsupportedUrlScheme { .. } | E::ParseUrlError { .. } => {
            SchemaError::RemoteRef { reason }
        }
        E::JsonPointerNotFound(url) | E::AnchorNotFound { url, .. }
            if !url.starts_with(LOCATION) =>
        {
            SchemaError::RemoteRef { reason }
        }
        _ => SchemaError::Invalid {
            pointer: String::new(),
            reason,
        },
    }
}

/// The JSON pointer of a location in the caller's document (`urn:…#/properties/a`), percent
/// escapes undone.
fn fragment(url: &str) -> String {
    let Some((_, fragment)) = url.split_once('#') else {
        return String::new();
    };
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if bytes[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of schemas (`items` too, before 2020-12).
const SCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas (`dependencies`' arrays of names are skipped).
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Keywords whose values are data, never a schema, not even through a `$ref` (one into them
/// would be refused by the validator as no schema).
const DATA: &[&str] = &["const", "enum", "default", "examples"];

/// Walks the schema's subschemas and, in each object: compiles `pattern` and the
/// `patternProperties` names with the server's limits ([`SchemaError::Pattern`] where one fails),
/// and gives the compiler [`PATTERN_INPUT`] as the object's `format` where it has a `pattern`, none
/// where it has not (`format` is an annotation here). `pointer` is the object's JSON pointer.
fn bound_patterns(schema: &mut Value, pointer: &mut String) -> Result<(), SchemaError> {
    walk(schema, pointer, false)
}

/// [`bound_patterns`]' walk. The subschemas are found by their keywords; the values of `const`,
/// `enum`, `default` and `examples` are data. The value of a keyword the walk does not know is
/// data too, unless a `$ref` points into it: it is walked as well (`unknown`), so that no schema
/// the validator may compile from it escapes the limits or has its `format` asserted, but a
/// pattern there is refused only when it is too big to compile, not when it is no regex (it may
/// be no schema at all).
fn walk(schema: &mut Value, pointer: &mut String, unknown: bool) -> Result<(), SchemaError> {
    let map = match schema {
        Value::Object(map) => map,
        Value::Array(items) if unknown => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(item, pointer, true)?;
                pointer.truncate(len);
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    map.remove("format");
    if let Some(Value::String(pattern)) = map.get("pattern") {
        check_pattern(pattern, pointer, "pattern", unknown)?;
        map.insert("format".to_owned(), Value::String(PATTERN_INPUT.to_owned()));
    }
    for (key, value) in map.iter_mut() {
        let len = pointer.len();
        push_token(pointer, key);
        let key = key.as_str();
        let known =
            ONE_SCHEMA.contains(&key) || SCHEMA_ARRAYS.contains(&key) || SCHEMA_MAPS.contains(&key);
        if ONE_SCHEMA.contains(&key) {
            walk(value, pointer, unknown)?;
        }
        match value {
            Value::Array(items) if SCHEMA_ARRAYS.contains(&key) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    walk(item, pointer, unknown)?;
                    pointer.truncate(len);
                }
            }
            Value::Object(entries) if SCHEMA_MAPS.contains(&key) => {
                for (name, item) in entries.iter_mut() {
                    if key == "patternProperties" {
                        check_pattern(name, pointer, name, unknown)?;
                    }
                    let len = pointer.len();
                    push_token(pointer, name);
                    walk(item, pointer, unknown)?;
                    pointer.truncate(len);
                }
            }
            Value::Object(_) | Value::Array(_) if !known && !DATA.contains(&key) => {
                walk(value, pointer, true)?;
            }
            _ => {}
        }
        pointer.truncate(len);
    }
    Ok(())
}

/// Appends `/token` to a JSON pointer, escaped (`~` as `~0`, `/` as `~1`).
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

/// Compiles a pattern with the server's size limits, after the ECMA-262 class escapes the
/// validator reads as ASCII (`\d`, `\w` and their negations) are written as such, so that the
/// limits weigh the program the validator builds, not the larger Unicode one. Lookaround and
/// backreferences are refused here, as the validator's engine would refuse them. `unknown`: the
/// pattern is in a keyword's value that may be no schema (see [`walk`]), refused only when it is
/// too big to compile.
fn check_pattern(pattern: &str, at: &str, token: &str, unknown: bool) -> Result<(), SchemaError> {
    let mut ascii = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            ascii.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => ascii.push_str("[0-9]"),
            Some('D') => ascii.push_str("[^0-9]"),
            Some('w') => ascii.push_str("[a-zA-Z0-9_]"),
            Some('W') => ascii.push_str("[^a-zA-Z0-9_]"),
            Some(other) => {
                ascii.push('\\');
                ascii.push(other);
            }
            None => ascii.push('\\'),
        }
    }
    regex::RegexBuilder::new(&ascii)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map(drop)
        .or_else(|e| match e {
            regex::Error::CompiledTooBig(_) => Err(e),
            _ if unknown => Ok(()),
            _ => Err(e),
        })
        .map_err(|e| {
            let mut pointer = at.to_owned();
            push_token(&mut pointer, token);
            SchemaError::Pattern {
                pointer,
                reason: e.to_string(),
            }
        })
}

/// Node count and depth, iteratively: the value may not have come from a depth-limited parser,
/// and the walk stops as soon as a limit is passed.
fn check_shape(schema: &Value) -> Result<(), SchemaError> {
    let mut nodes = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(schema, 1)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        nodes += 1;
        if nodes > MAX_SCHEMA_NODES {
            return Err(SchemaError::TooManyNodes);
        }
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep);
        }
        // Scalars are neither counted nor stacked: a huge `enum` costs time, not memory.
        stack.extend(
            children
                .filter(|child| child.is_object() || child.is_array())
                .map(|child| (child, depth + 1)),
        );
    }
    Ok(())
}

/// Serializes into a counter that gives up one byte past the limit, so a huge schema is never
/// copied into memory just to be measured.
fn check_size(schema: &Value) -> Result<(), SchemaError> {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            if self.0 > MAX_SCHEMA_BYTES {
                return Err(io::Error::other("schema too large"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, schema) {
        Ok(()) => Ok(()),
        Err(_) => Err(SchemaError::TooLarge),
    }
}

thread_local! {
    /// Characters left for `pattern` evaluations in the current response; `None` = no scope.
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
}

/// While alive, `pattern` evaluations on this thread share [`PATTERN_BUDGET_CHARS`].
/// Validation is synchronous, so a thread-local is exactly "this response".
pub(crate) struct PatternBudget {
    previous: Option<usize>,
}

impl PatternBudget {
    /// Opens a fresh budget for one response.
    pub(crate) fn start() -> Self {
        let previous = BUDGET.with(|b| b.replace(Some(PATTERN_BUDGET_CHARS)));
        PatternBudget { previous }
    }
}

impl Drop for PatternBudget {
    fn drop(&mut self) {
        BUDGET.with(|b| b.set(self.previous));
    }
}

/// Charges one string to the budget; the error is the issue message.
fn charge(s: &str) -> Result<(), String> {
    let chars = s.chars().count();
    if chars > MAX_PATTERN_INPUT_CHARS {
        return Err(format!(
            "string of {chars} characters is longer than the {MAX_PATTERN_INPUT_CHARS}-character \
             limit for strings tested against `pattern`"
        ));
    }
    BUDGET.with(|b| match b.get() {
        None => Ok(()),
        Some(left) if chars <= left => {
            b.set(Some(left - chars));
            Ok(())
        }
        Some(_) => {
            b.set(Some(0));
            Err(format!(
                "the {PATTERN_BUDGET_CHARS}-character budget for `pattern` evaluation in one \
                 response is exhausted"
            ))
        }
    })
}
