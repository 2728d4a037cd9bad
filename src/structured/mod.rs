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

mod canonical;
mod extract;
mod schema;
mod template;
#[cfg(test)]
mod tests;

use std::ops::Range;

use serde_json::Value;

pub use canonical::{canonical_json, format_number};
pub use schema::{
    PreparedSchema, Schema, SchemaError, MAX_PATTERN_INPUT_CHARS, MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, PATTERN_BUDGET_CHARS,
};
pub use template::{
    escape_context, instruction, repair_prompt, structured_prompt, wrap_context, CONTEXT_TEMPLATE,
    REPAIR_TEMPLATE, STRUCTURED_INSTRUCTION,
};

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
    pub errors: Vec<ValidationIssue>,
    /// The model's answer as received.
    pub raw: String,
}

/// The three ways an answer can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// Neither the whole answer, a fenced block nor any `{…}`/`[…]` span looked like JSON.
    NoJsonFound,
    /// Something looked like JSON but none of it parsed.
    InvalidJson,
    /// JSON was found, and none of it conforms to the schema.
    DoesNotValidate,
}

impl FailureReason {
    /// A one-line summary for the error text.
    pub fn summary(self) -> &'static str {
        match self {
            FailureReason::NoJsonFound => "no JSON found in the response",
            FailureReason::InvalidJson => "the response contains no valid JSON",
            FailureReason::DoesNotValidate => "the response's JSON does not match the schema",
        }
    }
}

/// One problem with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationIssue {
    /// JSON pointer into the candidate value (empty for the root or when nothing parsed).
    pub instance_path: String,
    /// What is wrong, long quotes elided to about [`MAX_ISSUE_MESSAGE_CHARS`] characters.
    pub message: String,
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
    /// Parsed, did not validate.
    Rejected,
    Unparsable,
    /// The parse budget cannot cover it; the search ends.
    OverBudget,
}

/// The issues of the failing candidate chosen for the report.
struct Rejected {
    stage: Stage,
    len: usize,
    issues: Vec<ValidationIssue>,
}

/// State of one search through one answer.
struct Search<'a> {
    schema: &'a PreparedSchema,
    response: &'a str,
    parse_left: usize,
    first_parse_error: Option<String>,
    rejected: Option<Rejected>,
    out_of_budget: bool,
}

impl Search<'_> {
    fn attempt(&mut self, range: Range<usize>, stage: Stage) -> Attempt {
        let text = self.response[range].trim();
        if text.len() > self.parse_left {
            self.out_of_budget = true;
            return Attempt::OverBudget;
        }
        self.parse_left -= text.len();
        let parsed: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                self.first_parse_error
                    .get_or_insert_with(|| err.to_string());
                return Attempt::Unparsable;
            }
        };
        let canonical = canonical_json(&parsed);
        // Validate what the reference validated: the value JSON.parse gives, doubles and all.
        let value = serde_json::from_str(&canonical).unwrap_or(parsed);
        let issues = self.schema.issues(&value, MAX_ISSUES);
        if issues.is_empty() {
            return Attempt::Valid(StructuredOk { value, canonical });
        }
        let better = match &self.rejected {
            None => true,
            Some(r) => r.stage == Stage::Scan && stage == Stage::Scan && text.len() > r.len,
        };
        if better {
            self.rejected = Some(Rejected {
                stage,
                len: text.len(),
                issues: issues
                    .into_iter()
                    .map(|(instance_path, message)| ValidationIssue {
                        instance_path,
                        message: clip(message),
                    })
                    .collect(),
            });
        }
        Attempt::Rejected
    }

    fn failure(self) -> StructuredFailure {
        let budget_note = if self.out_of_budget {
            " (the search stopped early: parsing is limited to 4 bytes per byte of response)"
        } else {
            ""
        };
        let (reason, errors) = match (self.rejected, self.first_parse_error) {
            (Some(rejected), _) => (FailureReason::DoesNotValidate, rejected.issues),
            (None, Some(err)) => (
                FailureReason::InvalidJson,
                vec![ValidationIssue {
                    instance_path: String::new(),
                    message: clip(format!("invalid JSON: {err}{budget_note}")),
                }],
            ),
            (None, None) => (
                FailureReason::NoJsonFound,
                vec![ValidationIssue {
                    instance_path: String::new(),
                    message: format!(
                        "no JSON object, array or fenced block found in the response{budget_note}"
                    ),
                }],
            ),
        };
        StructuredFailure {
            reason,
            errors,
            raw: self.response.to_owned(),
        }
    }
}

/// Finds the JSON in `response` and validates it against `schema`.
///
/// Candidates, in order: the whole trimmed answer (so a bare scalar works too), the contents of
/// ```` ```json ```` and ```` ``` ```` fences, then every balanced `{…}`/`[…]` span from one bracket
/// scan, outer spans before the spans nested in them. The first candidate that parses **and**
/// validates wins, so a `[1]` citation before the real object does no harm. A candidate that
/// parsed is judged as a whole: spans inside it are not tried on their own.
///
/// Everything is linear in the answer's length: parsing stops after 4 × its length plus 64 KiB
/// bytes in total, and all `pattern` checks together examine at most [`PATTERN_BUDGET_CHARS`]
/// characters (each string at most [`MAX_PATTERN_INPUT_CHARS`]); running out is reported as a
/// validation issue, never a hang.
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
    let _budget = schema::PatternBudget::start();
    let mut search = Search {
        schema,
        response,
        parse_left: response.len().saturating_mul(4).saturating_add(64 * 1024),
        first_parse_error: None,
        rejected: None,
        out_of_budget: false,
    };

    let trimmed = response.trim_start();
    match search.attempt(0..response.len(), Stage::Whole) {
        Attempt::Valid(ok) => return Ok(ok),
        Attempt::Rejected => return Err(search.failure()),
        Attempt::Unparsable if !(trimmed.starts_with('{') || trimmed.starts_with('[')) => {
            // Prose around JSON is expected, not a parse failure worth reporting.
            search.first_parse_error = None;
        }
        Attempt::Unparsable | Attempt::OverBudget => {}
    }

    let mut judged: Vec<Range<usize>> = Vec::new();
    for block in extract::fenced_blocks(response) {
        match search.attempt(block.clone(), Stage::Fence) {
            Attempt::Valid(ok) => return Ok(ok),
            Attempt::Rejected => judged.push(block),
            Attempt::Unparsable => {}
            Attempt::OverBudget => return Err(search.failure()),
        }
    }

    let mut judged = judged.into_iter().peekable();
    let mut judged_until = 0;
    for span in extract::bracket_spans(response) {
        if span.start < judged_until {
            continue;
        }
        while judged.next_if(|block| block.end <= span.start).is_some() {}
        if judged.peek().is_some_and(|block| block.start <= span.start) {
            continue;
        }
        match search.attempt(span.clone(), Stage::Scan) {
            Attempt::Valid(ok) => return Ok(ok),
            Attempt::Rejected => judged_until = span.end,
            Attempt::Unparsable => {}
            Attempt::OverBudget => break,
        }
    }
    Err(search.failure())
}

/// Shortens a message to about [`MAX_ISSUE_MESSAGE_CHARS`] characters by eliding its middle: the
/// validator's messages quote the instance first and name the rule last, and both ends matter.
fn clip(message: String) -> String {
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
