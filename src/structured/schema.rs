//! The caller's JSON Schema: the reference's size limits, checked before the model runs, then
//! compilation by `jsonschema` (every draft, offline, linear-time `pattern` engine).

use std::cell::Cell;
use std::io;
use std::sync::{Arc, Mutex};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Keyword, PatternOptions, ValidationError, Validator};
use serde_json::{json, Map, Value};

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
    validator: Validator,
    schema: Value,
}

impl std::fmt::Debug for PreparedSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSchema")
            .field("draft", &self.validator.draft())
            .finish_non_exhaustive()
    }
}

/// Namespace for schema preparation.
pub struct Schema;

impl Schema {
    /// Checks the limits and compiles `schema`. The draft comes from `$schema` (default 2020-12);
    /// `format` is an annotation; no reference is ever fetched.
    pub fn prepare(schema: &Value) -> Result<PreparedSchema, SchemaError> {
        check_shape(schema)?;
        check_size(schema)?;
        let refusals: Arc<Mutex<Vec<SchemaError>>> = Arc::default();
        let sink = Arc::clone(&refusals);
        let built = jsonschema::options()
            .offline()
            .should_validate_formats(false)
            .with_pattern_options(pattern_options())
            // Taking `pattern` over is the one hook where the reference's per-string limit and
            // per-response budget can sit; the matching itself stays the crate's own.
            .with_keyword(
                "pattern",
                move |_parent: &Map<String, Value>, value, location| {
                    BoundedPattern::compile(value).map_err(|reason| {
                        let refusal = SchemaError::Pattern {
                            pointer: location.as_str().to_owned(),
                            reason,
                        };
                        let message = refusal.to_string();
                        crate::sync::lock(&sink).push(refusal);
                        ValidationError::custom(message)
                    })
                },
            )
            .build(schema);
        match built {
            Ok(validator) => Ok(PreparedSchema {
                validator,
                schema: schema.clone(),
            }),
            Err(err) => {
                // Our own refusal is more precise than the compiler's wrapping of it.
                if let Some(first) = refusals
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain(..)
                    .next()
                {
                    return Err(first);
                }
                Err(classify_build_error(&err))
            }
        }
    }
}

impl PreparedSchema {
    /// The schema as given (the instruction quotes it to the model).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The draft the schema is read under (from `$schema`, default 2020-12).
    pub fn draft(&self) -> jsonschema::Draft {
        self.validator.draft()
    }

    /// Validates `instance`, returning at most `max` issues (empty when valid). The pattern budget
    /// is whatever the caller's [`PatternBudget`] scope says (unlimited outside one).
    ///
    /// A valid instance is the common case and is told by the validator's quick path, which builds
    /// no error; only an invalid one is walked again for its issues, from the same budget it
    /// started with, so the issues are those one walk would have found.
    pub(crate) fn issues(&self, instance: &Value, max: usize) -> Vec<(String, String)> {
        let budget = BUDGET.with(Cell::get);
        if self.validator.is_valid(instance) {
            return Vec::new();
        }
        BUDGET.with(|b| b.set(budget));
        self.validator
            .iter_errors(instance)
            .take(max)
            .map(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
            .collect()
    }
}

fn pattern_options() -> PatternOptions<jsonschema::Regex> {
    PatternOptions::regex()
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
}

fn classify_build_error(err: &ValidationError<'_>) -> SchemaError {
    let reason = err.to_string();
    // For a schema the compiler refuses, the "instance" is the caller's schema itself: its
    // instance path points into what the caller wrote, the schema path into the meta-schema.
    let pointer = err.instance_path().as_str().to_owned();
    match err.kind() {
        ValidationErrorKind::Referencing(jsonschema::ReferencingError::UnknownSpecification {
            specification,
        }) => SchemaError::UnknownMetaSchema {
            uri: specification.clone(),
        },
        ValidationErrorKind::Referencing(_) => SchemaError::RemoteRef { reason },
        ValidationErrorKind::Format { format } if format == "regex" => {
            SchemaError::Pattern { pointer, reason }
        }
        _ => SchemaError::Invalid { pointer, reason },
    }
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

/// `pattern`, with the reference's input limits in front of the crate's own matcher.
struct BoundedPattern {
    /// `{"pattern": …}` compiled with the same engine options: the crate's ECMA-262 translation and
    /// messages stay exactly the built-in ones.
    inner: Validator,
}

impl BoundedPattern {
    fn compile(pattern: &Value) -> Result<Box<dyn for<'i> Keyword<'i>>, String> {
        let inner = jsonschema::options()
            .offline()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(false)
            .with_pattern_options(pattern_options())
            .build(&json!({ "pattern": pattern }))
            .map_err(|e| e.to_string())?;
        Ok(Box::new(BoundedPattern { inner }))
    }
}

impl<'i> Keyword<'i> for BoundedPattern {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        let Value::String(s) = instance else {
            return Ok(());
        };
        charge(s).map_err(ValidationError::custom)?;
        self.inner
            .validate(instance)
            .map_err(|e| ValidationError::custom(e.to_string()))
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        let Value::String(s) = instance else {
            return true;
        };
        charge(s).is_ok() && self.inner.is_valid(instance)
    }
}
