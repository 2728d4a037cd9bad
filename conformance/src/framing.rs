//! A case states a result's text as geminicli-mcp writes it; this module reads that expectation
//! the way the target's profile says the target frames its text, so a case about the answer (or
//! about the CLI's reason for a failure) does not fail on a wrapper's framing:
//!
//! - without the `error-prefix` feature, an expected text `[error exit=N] KIND: REASON` reads as
//!   "some text carrying REASON" (`[..]REASON`): the failure's reason must reach the client, in
//!   any words around it; for `input_validation`, whose reason is the server's own wording about
//!   the arguments, any text will do (the call must still be an error);
//! - with `answer = "contained"`, an expected text reads as "contained in one of the text
//!   blocks": a header, a footer or more blocks around the answer are fine, and so is trimmed
//!   whitespace at its ends.
//!
//! Only the `text` of elements of `content` arrays is read this way; everything else is matched
//! as written.

use serde_json::{json, Map, Value};

use crate::profile::{AnswerRule, Profile};

/// The expectation `expected` as the target's framing reads it (see the module header).
pub fn adapt(expected: &Value, profile: &Profile) -> Value {
    let rule = Rule {
        prefix: profile.claims("error-prefix"),
        contained: profile.answer == AnswerRule::Contained,
    };
    if !rule.prefix || rule.contained {
        rule.walk(expected)
    } else {
        expected.clone()
    }
}

#[derive(Clone, Copy)]
struct Rule {
    prefix: bool,
    contained: bool,
}

impl Rule {
    fn walk(self, v: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| {
                        let x = if k == "content" {
                            self.content(x)
                        } else {
                            self.walk(x)
                        };
                        (k.clone(), x)
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.walk(x)).collect()),
            other => other.clone(),
        }
    }

    /// A `content` pattern: an array of blocks, or an operator over them.
    fn content(self, v: &Value) -> Value {
        match v {
            Value::Array(blocks) => {
                let blocks: Vec<Value> = blocks.iter().map(|b| self.block(b)).collect();
                if self.contained && !blocks.is_empty() {
                    json!({ "$contains": blocks })
                } else {
                    Value::Array(blocks)
                }
            }
            Value::Object(o) if o.len() == 1 => {
                let (op, arg) = o.iter().next().expect("one entry");
                let arg = match (op.as_str(), arg) {
                    ("$contains" | "$one-of" | "$all", Value::Array(a)) => {
                        Value::Array(a.iter().map(|b| self.block(b)).collect())
                    }
                    ("$each", b) => self.block(b),
                    _ => arg.clone(),
                };
                Value::Object(Map::from_iter([(op.clone(), arg)]))
            }
            other => self.walk(other),
        }
    }

    fn block(self, b: &Value) -> Value {
        let Value::Object(o) = b else {
            return b.clone();
        };
        let mut o = o.clone();
        if let Some(Value::String(text)) = o.get("text") {
            let text = self.text(text);
            o.insert("text".into(), Value::String(text));
        }
        Value::Object(o)
    }

    fn text(self, text: &str) -> String {
        if !self.prefix {
            if let Some(reason) = error_reason(text) {
                return format!("[..]{reason}");
            }
        }
        if self.contained && !text.starts_with("[error exit=") {
            // A wrapper may trim the answer: whitespace around it is framing too.
            let text = text.trim();
            let head = if text.starts_with("[..]") { "" } else { "[..]" };
            let tail = if text.ends_with("[..]") { "" } else { "[..]" };
            return format!("{head}{text}{tail}");
        }
        text.to_string()
    }
}

/// The reason part of a geminicli-mcp error text pattern `[error exit=N] KIND: REASON` (or of
/// `[error exit=N] [..]`), without a leading `[..]`.
fn error_reason(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("[error exit=")?;
    let (_, rest) = rest.split_once("] ")?;
    let rest = match rest.split_once(": ") {
        // A refusal of the call's arguments is in the server's own words, not the CLI's.
        Some(("input_validation", _)) => "",
        Some((kind, reason))
            if !kind.is_empty() && kind.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            reason
        }
        _ if rest.chars().all(|c| c.is_ascii_lowercase() || c == '_') => "",
        _ => rest,
    };
    Some(rest.strip_prefix("[..]").unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(features: &[&str], answer: AnswerRule) -> Profile {
        let mut p = Profile::geminicli_mcp();
        p.features = features.iter().map(|f| f.to_string()).collect();
        p.answer = answer;
        p
    }

    #[test]
    fn reference_profile_reads_the_case_as_written() {
        let e = json!({"result": {"content": [{"type": "text", "text": "[error exit=53] quota: [..]"}]}});
        assert_eq!(adapt(&e, &Profile::geminicli_mcp()), e);
    }

    #[test]
    fn without_the_prefix_a_failure_needs_its_reason_only() {
        let p = profile(&[], AnswerRule::Exact);
        let e = json!({"content": [{"text": "[error exit=53] quota: [..]quota exceeded[..]"}]});
        assert_eq!(
            adapt(&e, &p),
            json!({"content": [{"text": "[..]quota exceeded[..]"}]})
        );
        let e = json!({"content": [{"text": "[error exit=42] input_validation"}]});
        assert_eq!(adapt(&e, &p), json!({"content": [{"text": "[..]"}]}));
        let e = json!({"content": [{"text": "[error exit=42] input_validation: [..]model[..]"}]});
        assert_eq!(adapt(&e, &p), json!({"content": [{"text": "[..]"}]}));
    }

    #[test]
    fn a_contained_answer_tolerates_framing_and_more_blocks() {
        let p = profile(&["error-prefix"], AnswerRule::Contained);
        let e = json!({"result": {"content": [{"type": "text", "text": "The answer is 42."}]}});
        assert_eq!(
            adapt(&e, &p),
            json!({"result": {"content": {"$contains": [{"type": "text", "text": "[..]The answer is 42.[..]"}]}}})
        );
    }
}
