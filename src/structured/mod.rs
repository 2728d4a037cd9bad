//! Structured output: schema limits and compilation, the instruction appended to the prompt, JSON
//! extraction from the model's prose, validation, and the canonical text of the result.
//!
//! The server calls [`Schema::prepare`] before spawning (a refusal is `input_validation`, exit 42),
//! sends [`structured_prompt`], then hands the answer to [`extract_and_validate`] (a failure is
//! `schema_mismatch`).
//!
//! ```
//! use geminicli_mcp::structured::{extract_and_validate, structured_prompt, Schema};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "required": ["n"]});
//! let prepared = Schema::prepare(&schema).expect("within the limits and compilable");
//! let prompt = structured_prompt("Count the moons of Mars.", None, prepared.schema());
//! assert!(prompt.ends_with(r#"{"type":"object","required":["n"]}"#));
//! let ok = extract_and_validate(&prepared, "Sure!\n```json\n{\"n\": 2.0}\n```").unwrap();
//! assert_eq!(ok.canonical, r#"{"n":2}"#);
//! ```

mod build;
mod canonical;
mod extract;
#[cfg(any(test, feature = "reference"))]
#[doc(hidden)]
pub mod reference;
mod schema;
mod spans;
mod template;
#[cfg(test)]
mod tests;

use std::ops::{ControlFlow, Range};

pub use build::MAX_ANSWER_VALUES;
pub use canonical::{canonical_json, format_number};
pub use schema::{
    PreparedSchema, Schema, SchemaError, MAX_PATTERN_INPUT_CHARS, MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, PATTERN_BUDGET_CHARS,
};
pub use template::{
    escape_context, instruction, repair_prompt, structured_prompt, wrap_context, CONTEXT_TEMPLATE,
    REPAIR_TEMPLATE, STRUCTURED_INSTRUCTION,
};

pub use crate::error::ValidationIssue;
use build::Built;
use serde_json::Value;
use spans::Span;

/// Most validation issues reported for one answer.
pub const MAX_ISSUES: usize = 20;
/// Longest issue message, in characters; the validator quotes instance values, which can be huge.
pub const MAX_ISSUE_MESSAGE_CHARS: usize = 1_000;

/// A validated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOk {
    /// The value as JavaScript's `JSON.parse` would hold it (numbers rounded to doubles), which is
    /// also what was validated.
    pub value: Value,
    /// What the reference's `JSON.stringify` prints for it: the tool's text result.
    pub canonical: String,
}

/// Why an answer was refused; the server reports it as `schema_mismatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructuredFailure {
    /// What went wrong.
    pub reason: FailureReason,
    /// At least one issue; for [`FailureReason::DoesNotValidate`] at most [`MAX_ISSUES`].
    /// (The answer itself is the caller's: a copy here would hold an answer as long as the output
    /// cap twice.)
    pub errors: Vec<ValidationIssue>,
}

/// The ways an answer can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// Neither the whole answer, a fenced block nor any `{…}`/`[…]` span looked like JSON.
    NoJsonFound,
    /// Something looked like JSON but none of it parsed.
    InvalidJson,
    /// JSON was found, and none of it conforms to the schema.
    DoesNotValidate,
    /// The JSON found first holds more than [`MAX_ANSWER_VALUES`] values, and nothing before it
    /// validated: it is not validated at all.
    TooLarge,
}

impl FailureReason {
    /// A one-line summary for the error text.
    pub fn summary(self) -> &'static str {
        match self {
            FailureReason::NoJsonFound => "no JSON found in the response",
            FailureReason::InvalidJson => "the response contains no valid JSON",
            FailureReason::DoesNotValidate => "the response's JSON does not match the schema",
            FailureReason::TooLarge => "the response's JSON is too large to validate",
        }
    }
}

/// Where a candidate came from; earlier stages are trusted more when choosing what to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Whole,
    Fence,
    Scan,
}

/// What became of one candidate.
enum Attempt {
    Valid(StructuredOk),
    /// Parsed, and did not validate or was too large to.
    Rejected,
    Unparsable,
}

/// The issues of the failing candidate chosen for the report.
struct Rejected {
    stage: Stage,
    len: usize,
    too_large: bool,
    issues: Vec<ValidationIssue>,
}

/// State of one search through one answer.
struct Search<'a> {
    schema: &'a PreparedSchema,
    response: &'a str,
    first_parse_error: Option<String>,
    rejected: Option<Rejected>,
    /// Fences that parsed, in order: spans starting inside them are not candidates.
    judged: Vec<Range<usize>>,
    /// The earliest balanced span that is not JSON (its error is reported if nothing parsed).
    first_not_json: Option<Range<usize>>,
    won: Option<StructuredOk>,
}

impl Search<'_> {
    fn attempt(&mut self, range: Range<usize>, stage: Stage) -> Attempt {
        let text = self.response[range].trim();
        let (value, canonical) = match build::build(text) {
            Built::Value(value, canonical) => (value, canonical),
            Built::Invalid(err) => {
                if stage != Stage::Scan {
                    self.first_parse_error
                        .get_or_insert_with(|| err.to_string());
                }
                return Attempt::Unparsable;
            }
            Built::TooLarge => {
                let issue = ValidationIssue {
                    instance_path: String::new(),
                    message: format!(
                        "the JSON holds more than {MAX_ANSWER_VALUES} values (each scalar, array, \
                         object and object key counts one); it was not validated"
                    ),
                };
                self.reject(stage, text.len(), true, vec![issue]);
                return Attempt::Rejected;
            }
        };
        let issues = self.schema.issues(&value, MAX_ISSUES);
        if issues.is_empty() {
            return Attempt::Valid(StructuredOk { value, canonical });
        }
        let issues = issues
            .into_iter()
            .map(|(instance_path, message)| ValidationIssue {
                instance_path,
                message: clip(message),
            })
            .collect();
        self.reject(stage, text.len(), false, issues);
        Attempt::Rejected
    }

    fn reject(&mut self, stage: Stage, len: usize, too_large: bool, issues: Vec<ValidationIssue>) {
        let better = match &self.rejected {
            None => true,
            Some(r) => r.stage == Stage::Scan && stage == Stage::Scan && len > r.len,
        };
        if better {
            self.rejected = Some(Rejected {
                stage,
                len,
                too_large,
                issues,
            });
        }
    }

    /// Records a fence that parsed. Spans start at brackets only, so a fence that follows the last
    /// one across text without a bracket extends it: a thousand judged fences in a row cost one.
    fn judge_fence(&mut self, block: Range<usize>) {
        if let Some(last) = self.judged.last_mut() {
            if !self.response[last.end..block.start].contains(['{', '[']) {
                last.end = block.end;
                return;
            }
        }
        self.judged.push(block);
    }

    fn in_judged_fence(&self, at: usize) -> bool {
        let i = self.judged.partition_point(|fence| fence.end <= at);
        self.judged.get(i).is_some_and(|fence| fence.start <= at)
    }

    fn span(&mut self, span: Span) -> ControlFlow<()> {
        match span {
            Span::Json(range) => self.judge(range),
            Span::NotJson(range) => {
                if !self.in_judged_fence(range.start)
                    && self
                        .first_not_json
                        .as_ref()
                        .is_none_or(|first| range.start < first.start)
                {
                    self.first_not_json = Some(range);
                }
                ControlFlow::Continue(())
            }
        }
    }

    /// A JSON span inside no larger one: a candidate, unless it starts in a fence already judged,
    /// where the spans directly inside it are the candidates instead.
    fn judge(&mut self, range: Range<usize>) -> ControlFlow<()> {
        let response = self.response;
        if self.in_judged_fence(range.start) {
            return spans::for_each_child(response, range.start + 1, range.end - 1, |child| {
                self.judge(child)
            });
        }
        match self.attempt(range.clone(), Stage::Scan) {
            Attempt::Valid(ok) => {
                self.won = Some(ok);
                ControlFlow::Break(())
            }
            Attempt::Rejected => ControlFlow::Continue(()),
            Attempt::Unparsable => {
                // The scan's grammar and serde_json disagree; serde_json decides.
                self.span(Span::NotJson(range.clone()))?;
                spans::for_each_child(response, range.start + 1, range.end - 1, |child| {
                    self.judge(child)
                })
            }
        }
    }

    fn failure(mut self) -> StructuredFailure {
        if self.rejected.is_none() && self.first_parse_error.is_none() {
            if let Some(range) = self.first_not_json.take() {
                if let Err(err) = build::check(&self.response[range]) {
                    self.first_parse_error = Some(err.to_string());
                }
            }
        }
        let (reason, errors) = match (self.rejected, self.first_parse_error) {
            (Some(rejected), _) if rejected.too_large => (FailureReason::TooLarge, rejected.issues),
            (Some(rejected), _) => (FailureReason::DoesNotValidate, rejected.issues),
            (None, Some(err)) => (
                FailureReason::InvalidJson,
                vec![ValidationIssue {
                    instance_path: String::new(),
                    message: clip(format!("invalid JSON: {err}")),
                }],
            ),
            (None, None) => (
                FailureReason::NoJsonFound,
                vec![ValidationIssue {
                    instance_path: String::new(),
                    message: "no JSON object, array or fenced block found in the response"
                        .to_owned(),
                }],
            ),
        };
        StructuredFailure { reason, errors }
    }
}

/// Finds the JSON in `response` and validates it against `schema`.
///
/// Candidates, in order: the whole trimmed answer (so a bare scalar works too), the contents of
/// ```` ```json ```` and ```` ``` ```` fences, then the balanced `{…}`/`[…]` spans of one bracket
/// scan that are JSON, outer spans before the spans nested in them. The first candidate that
/// parses **and** validates wins, so a `[1]` citation before the real object does no harm. A
/// candidate that parsed is judged as a whole: spans inside it are not tried on their own.
///
/// Time is linear in the answer's length: the scan reads it once and tells which spans are JSON
/// by serde_json's grammar without parsing them, so no text is parsed twice as a candidate. All
/// `pattern` checks together examine at most [`PATTERN_BUDGET_CHARS`] characters (each string at
/// most [`MAX_PATTERN_INPUT_CHARS`]); running out is reported as a validation issue, never a
/// hang. Memory: an answer with no JSON in it costs at most about its own size again (one byte per
/// open bracket, and the failure's copy of the answer); a candidate holding more than
/// [`MAX_ANSWER_VALUES`] values is refused as [`FailureReason::TooLarge`] before its tree is built.
///
/// On failure the issues are those of the whole answer or of the first fenced block that parsed,
/// else of the longest span that parsed.
///
/// Two things JavaScript's `JSON.parse` accepts are invalid JSON here, because serde_json refuses
/// them and a Rust string cannot hold the first: an escaped lone surrogate (`"\ud800"`) and a
/// number beyond the double range (`1e400`, which JavaScript reads as `Infinity`).
pub fn extract_and_validate(
    schema: &PreparedSchema,
    response: &str,
) -> Result<StructuredOk, StructuredFailure> {
    schema::with_validator_stack(|| search(schema, response))
}

fn search(schema: &PreparedSchema, response: &str) -> Result<StructuredOk, StructuredFailure> {
    let _budget = schema::PatternBudget::start();
    let mut search = Search {
        schema,
        response,
        first_parse_error: None,
        rejected: None,
        judged: Vec::new(),
        first_not_json: None,
        won: None,
    };

    let trimmed = response.trim_start();
    match search.attempt(0..response.len(), Stage::Whole) {
        Attempt::Valid(ok) => return Ok(ok),
        Attempt::Rejected => return Err(search.failure()),
        Attempt::Unparsable if !(trimmed.starts_with('{') || trimmed.starts_with('[')) => {
            // Prose around JSON is expected, not a parse failure worth reporting.
            search.first_parse_error = None;
        }
        Attempt::Unparsable => {}
    }

    let _ = extract::for_each_fenced_block(response, |block| {
        match search.attempt(block.clone(), Stage::Fence) {
            Attempt::Valid(ok) => {
                search.won = Some(ok);
                return ControlFlow::Break(());
            }
            Attempt::Rejected => search.judge_fence(block),
            Attempt::Unparsable => {}
        }
        ControlFlow::Continue(())
    });
    if search.won.is_none() {
        let _ = spans::scan(response, |span| search.span(span));
    }
    match search.won.take() {
        Some(ok) => Ok(ok),
        None => Err(search.failure()),
    }
}

/// Shortens a message to about [`MAX_ISSUE_MESSAGE_CHARS`] characters by eliding its middle: the
/// validator's messages quote the instance first and name the rule last, and both ends matter.
pub(crate) fn clip(message: String) -> String {
    let count = message.chars().count();
    if count <= MAX_ISSUE_MESSAGE_CHARS {
        return message;
    }
    let keep = MAX_ISSUE_MESSAGE_CHARS / 2;
    let head_end = message.char_indices().nth(keep).map_or(0, |(i, _)| i);
    let tail_start = message
        .char_indices()
        .nth(count - keep)
        .map_or(message.len(), |(i, _)| i);
    format!("{} … {}", &message[..head_end], &message[tail_start..])
}
