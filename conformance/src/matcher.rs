//! JSON subset matching, the one way a case states what it expects of a message: every key the
//! case names must be present and match, `[..]` inside a string matches any run of characters
//! (cargo's pattern), and a few `$`-operators cover what a plain subset cannot say.
//!
//! | expected | matches |
//! |---|---|
//! | `{ a = 1 }` | an object with `a == 1` and any other keys |
//! | `[x, y]` | an array of exactly two elements matching `x` and `y` in order |
//! | `"ab[..]"` | a string starting with `ab` (`[..]` may appear anywhere, any number of times) |
//! | `{ "$absent" = true }` | (as an object value) the key is not present |
//! | `{ "$contains" = [x, …] }` | an array with, for each `x`, some element matching it |
//! | `{ "$each" = x }` | an array whose every element matches `x` |
//! | `{ "$len" = n }` | an array, object or string (in characters) of that length |
//! | `{ "$regex" = "…" }` | a string the regular expression finds a match in |
//! | `{ "$one-of" = [x, …] }` | a value matching one of the alternatives (`{ "$absent" = true }` among them allows absence) |
//! | `{ "$not" = x }` | a value that does not match `x` |
//! | `{ "$type" = "string" }` | a value of that JSON type (`null`, `boolean`, `number`, `integer`, `string`, `array`, `object`) |
//! | `{ "$json" = x }` | a string that parses as JSON matching `x` |
//! | `{ "$supported-protocol-version" = true }` | a string among the profile's protocol versions |
//! | `{ "$all" = [x, …] }` | a value matching every alternative |

use serde_json::Value;

/// What the matcher needs to know beyond the two values.
#[derive(Debug, Clone, Default)]
pub struct MatchContext {
    /// The protocol versions the target's profile says it supports.
    pub protocol_versions: Vec<String>,
}

/// Checks that `actual` matches the pattern `expected`; on mismatch returns the JSON path of every
/// difference and what was wrong there, one per line.
///
/// ```
/// use gemini_mcp_conformance::matcher::{matches, MatchContext};
/// use serde_json::json;
/// let ctx = MatchContext::default();
/// assert!(matches(&json!({"text": "[error exit=42] [..]"}), &json!({"text": "[error exit=42] input_validation: x", "n": 1}), &ctx).is_ok());
/// assert!(matches(&json!({"n": {"$absent": true}}), &json!({"n": 1}), &ctx).is_err());
/// ```
pub fn matches(expected: &Value, actual: &Value, ctx: &MatchContext) -> Result<(), String> {
    match_at("$", expected, Some(actual), ctx)
}

/// The single `$`-operator of an object pattern, if it is one.
fn operator(expected: &Value) -> Option<(&str, &Value)> {
    let obj = expected.as_object()?;
    if obj.len() != 1 {
        return None;
    }
    let (k, v) = obj.iter().next()?;
    k.starts_with('$').then_some((k.as_str(), v))
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "nothing (key absent)".to_string(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 400 {
                let head: String = s.chars().take(400).collect();
                format!("{head}… ({} bytes)", s.len())
            } else {
                s
            }
        }
    }
}

/// Every failure of `checks`, one per line, or Ok when none failed.
fn all_of(checks: impl Iterator<Item = Result<(), String>>) -> Result<(), String> {
    let failed: Vec<String> = checks.filter_map(Result::err).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n  "))
    }
}

fn match_at(
    path: &str,
    expected: &Value,
    actual: Option<&Value>,
    ctx: &MatchContext,
) -> Result<(), String> {
    if let Some((op, arg)) = operator(expected) {
        return match_operator(path, op, arg, actual, ctx);
    }
    let Some(actual) = actual else {
        return Err(format!(
            "{path}: expected {}, found nothing (key absent)",
            show(Some(expected))
        ));
    };
    let mismatch = || {
        format!(
            "{path}: expected {}, found {}",
            show(Some(expected)),
            show(Some(actual))
        )
    };
    match (expected, actual) {
        // Every key and element is checked, so a report names each difference, not the first.
        (Value::Object(e), Value::Object(a)) => all_of(
            e.iter()
                .map(|(k, ev)| match_at(&format!("{path}.{k}"), ev, a.get(k), ctx)),
        ),
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{path}: expected an array of {} elements, found {}: {}",
                    e.len(),
                    a.len(),
                    show(Some(actual))
                ));
            }
            all_of(
                e.iter()
                    .zip(a)
                    .enumerate()
                    .map(|(i, (ev, av))| match_at(&format!("{path}[{i}]"), ev, Some(av), ctx)),
            )
        }
        (Value::String(e), Value::String(a)) => {
            if wildcard_match(e, a) {
                Ok(())
            } else {
                Err(mismatch())
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            // TOML and JSON disagree on integer vs float spelling; compare by value.
            let same = match (e.as_i64(), a.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => e.as_f64() == a.as_f64(),
            };
            if same {
                Ok(())
            } else {
                Err(mismatch())
            }
        }
        (e, a) if e == a => Ok(()),
        _ => Err(mismatch()),
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one arm per `$` operator of the case format, side by side so they stay consistent"
)]
fn match_operator(
    path: &str,
    op: &str,
    arg: &Value,
    actual: Option<&Value>,
    ctx: &MatchContext,
) -> Result<(), String> {
    if op == "$absent" {
        let want_absent = arg.as_bool().unwrap_or(true);
        return match (want_absent, actual) {
            (true, None) | (false, Some(_)) => Ok(()),
            (true, Some(a)) => Err(format!(
                "{path}: expected no such key, found {}",
                show(Some(a))
            )),
            (false, None) => Err(format!("{path}: expected the key to be present")),
        };
    }
    if op == "$one-of" {
        let alts = arg
            .as_array()
            .ok_or_else(|| format!("{path}: $one-of needs an array (case bug)"))?;
        return if alts
            .iter()
            .any(|alt| match_at(path, alt, actual, ctx).is_ok())
        {
            Ok(())
        } else {
            Err(format!(
                "{path}: expected one of {}, found {}",
                show(Some(arg)),
                show(actual)
            ))
        };
    }
    if op == "$all" {
        let alts = arg
            .as_array()
            .ok_or_else(|| format!("{path}: $all needs an array (case bug)"))?;
        return alts
            .iter()
            .try_for_each(|alt| match_at(path, alt, actual, ctx));
    }
    if op == "$not" {
        return match match_at(path, arg, actual, ctx) {
            Ok(()) => Err(format!(
                "{path}: expected anything but {}, found {}",
                show(Some(arg)),
                show(actual)
            )),
            Err(_) => Ok(()),
        };
    }
    let Some(actual) = actual else {
        return Err(format!(
            "{path}: expected a value ({op}), found nothing (key absent)"
        ));
    };
    match op {
        "$contains" => {
            let Some(items) = actual.as_array() else {
                return Err(format!(
                    "{path}: expected an array, found {}",
                    show(Some(actual))
                ));
            };
            let wanted = arg.as_array().cloned().unwrap_or_else(|| vec![arg.clone()]);
            for (n, w) in wanted.iter().enumerate() {
                if !items
                    .iter()
                    .any(|a| match_at(path, w, Some(a), ctx).is_ok())
                {
                    return Err(format!(
                        "{path}: no element matches $contains[{n}] {}; the array is {}",
                        show(Some(w)),
                        show(Some(actual))
                    ));
                }
            }
            Ok(())
        }
        "$len" => {
            let want = arg
                .as_u64()
                .ok_or_else(|| format!("{path}: $len needs a number (case bug)"))?;
            let len = match actual {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                Value::String(s) => s.chars().count(),
                _ => return Err(format!("{path}: $len on {}", show(Some(actual)))),
            };
            if len as u64 == want {
                Ok(())
            } else {
                Err(format!(
                    "{path}: expected length {want}, found {len}: {}",
                    show(Some(actual))
                ))
            }
        }
        "$regex" => {
            let pattern = arg
                .as_str()
                .ok_or_else(|| format!("{path}: $regex needs a string (case bug)"))?;
            let re = regex::Regex::new(pattern)
                .map_err(|e| format!("{path}: bad $regex (case bug): {e}"))?;
            match actual.as_str() {
                Some(s) if re.is_match(s) => Ok(()),
                _ => Err(format!(
                    "{path}: expected a string matching /{pattern}/, found {}",
                    show(Some(actual))
                )),
            }
        }
        "$each" => {
            let Some(items) = actual.as_array() else {
                return Err(format!(
                    "{path}: expected an array, found {}",
                    show(Some(actual))
                ));
            };
            items
                .iter()
                .enumerate()
                .try_for_each(|(i, a)| match_at(&format!("{path}[{i}]"), arg, Some(a), ctx))
        }
        "$type" => {
            let want = arg.as_str().unwrap_or_default();
            let ok = match want {
                "null" => actual.is_null(),
                "boolean" => actual.is_boolean(),
                "number" => actual.is_number(),
                "integer" => actual.is_i64() || actual.is_u64(),
                "string" => actual.is_string(),
                "array" => actual.is_array(),
                "object" => actual.is_object(),
                other => return Err(format!("{path}: unknown $type {other:?} (case bug)")),
            };
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "{path}: expected a {want}, found {}",
                    show(Some(actual))
                ))
            }
        }
        "$json" => {
            let Some(text) = actual.as_str() else {
                return Err(format!(
                    "{path}: expected a string holding JSON, found {}",
                    show(Some(actual))
                ));
            };
            let parsed: Value = serde_json::from_str(text).map_err(|e| {
                format!(
                    "{path}: expected a string holding JSON ({e}), found {}",
                    show(Some(actual))
                )
            })?;
            match_at(&format!("{path}<json>"), arg, Some(&parsed), ctx)
        }
        "$supported-protocol-version" => match actual.as_str() {
            Some(v) if ctx.protocol_versions.iter().any(|p| p == v) => Ok(()),
            _ => Err(format!(
                "{path}: expected one of the profile's protocol versions {:?}, found {}",
                ctx.protocol_versions,
                show(Some(actual))
            )),
        },
        other => Err(format!(
            "{path}: unknown matcher operator {other} (case bug)"
        )),
    }
}

/// Whether `text` matches `pattern`, where each `[..]` in the pattern matches any run of
/// characters (including none and including newlines) and everything else matches literally.
///
/// ```
/// use gemini_mcp_conformance::matcher::wildcard_match;
/// assert!(wildcard_match("[error exit=1[..]] [..]", "[error exit=127] spawn_failed: x"));
/// assert!(!wildcard_match("abc", "abcd"));
/// ```
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let first = parts[0];
    let last = parts[parts.len() - 1];
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    // Greedy leftmost search for the middle parts is exact for literal pieces separated by `.*`.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(e: Value, a: Value) -> bool {
        matches(&e, &a, &MatchContext::default()).is_ok()
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("[..]", ""));
        assert!(wildcard_match("a[..]b[..]c", "a--b--c"));
        assert!(!wildcard_match("a[..]b[..]c", "a--c--b"));
        assert!(!wildcard_match("ab[..]ba", "aba"));
        assert!(wildcard_match("x[..]", "x\ny"));
    }

    #[test]
    fn subsets_and_operators() {
        assert!(ok(json!({"a": 1}), json!({"a": 1.0, "b": 2})));
        assert!(!ok(json!({"a": [1]}), json!({"a": [1, 2]})));
        assert!(ok(
            json!({"a": {"$contains": [{"n": "x"}]}}),
            json!({"a": [{"n": "y"}, {"n": "x", "m": 1}]})
        ));
        assert!(ok(json!({"a": {"$absent": true}}), json!({"b": 1})));
        assert!(ok(
            json!({"a": {"$not": {"$type": "null"}}}),
            json!({"a": 3})
        ));
        assert!(ok(json!({"$json": {"k": [1]}}), json!("{\"k\":[1]}")));
        assert!(!ok(json!({"$regex": "^a$"}), json!("ab")));
        assert!(ok(json!({"$one-of": [1, "x"]}), json!("x")));
        assert!(ok(json!({"$len": 2}), json!("é!")));
        assert!(ok(
            json!({"e": {"$one-of": [false, {"$absent": true}]}}),
            json!({})
        ));
        assert!(!ok(
            json!({"$each": {"o": {"$absent": true}}}),
            json!([{}, {"o": 1}])
        ));
    }
}
