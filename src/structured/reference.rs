//! The plain algorithm the scan replaced, kept as the reference the tests and the `structured_extract`
//! fuzz target hold [`super::extract_and_validate`] to: every balanced span collected, then each
//! parsed by serde_json in turn. Quadratic in time and memory on hostile answers: small inputs only.

use std::ops::Range;

use serde_json::Value;

use super::{
    canonical_json, clip, FailureReason, PreparedSchema, StructuredFailure, StructuredOk,
    ValidationIssue, MAX_ISSUES,
};

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Whole,
    Fence,
    Scan,
}

/// What became of one candidate.
enum Attempt {
    Valid(StructuredOk),
    Rejected,
    Unparsable,
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
    first_parse_error: Option<String>,
    rejected: Option<Rejected>,
}

impl Search<'_> {
    fn attempt(&mut self, range: Range<usize>, stage: Stage) -> Attempt {
        let text = self.response[range].trim();
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
        let (reason, errors) = match (self.rejected, self.first_parse_error) {
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

/// The answer the plain algorithm gives for `response`.
pub fn extract_and_validate(
    schema: &PreparedSchema,
    response: &str,
) -> Result<StructuredOk, StructuredFailure> {
    let _budget = super::schema::PatternBudget::start();
    let mut search = Search {
        schema,
        response,
        first_parse_error: None,
        rejected: None,
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

    let mut judged: Vec<Range<usize>> = Vec::new();
    for block in super::extract::fenced_blocks(response) {
        match search.attempt(block.clone(), Stage::Fence) {
            Attempt::Valid(ok) => return Ok(ok),
            Attempt::Rejected => judged.push(block),
            Attempt::Unparsable => {}
        }
    }

    let mut judged = judged.into_iter().peekable();
    let mut judged_until = 0;
    for span in bracket_spans(response) {
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
        }
    }
    Err(search.failure())
}

/// Every balanced `{…}` or `[…]` span, ordered by start, nested ones included.
///
/// One pass over the bytes (brackets and quotes are ASCII, so UTF-8 needs no care). Quotes are
/// tracked only inside a bracket, so apostrophes and quotation marks in surrounding prose cannot
/// derail the scan. Inside brackets, a mismatched closer or a raw newline inside a string (which
/// JSON forbids) proves that none of the open spans is JSON: they are all dropped.
fn bracket_spans(text: &str) -> Vec<Range<usize>> {
    // Entries are pushed at their opening bracket, so `spans` is in start order for free; an end
    // of 0 marks a span that never closed.
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut stack: Vec<(usize, u8)> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            } else if b == b'\n' {
                in_string = false;
                stack.clear();
            }
            continue;
        }
        match b {
            b'{' | b'[' => {
                stack.push((spans.len(), if b == b'{' { b'}' } else { b']' }));
                spans.push(i..0);
            }
            b'}' | b']' => match stack.last() {
                Some(&(index, close)) if close == b => {
                    stack.pop();
                    spans[index].end = i + 1;
                }
                Some(_) => stack.clear(),
                None => {}
            },
            b'"' if !stack.is_empty() => in_string = true,
            _ => {}
        }
    }
    spans.retain(|span| span.end != 0);
    spans
}
