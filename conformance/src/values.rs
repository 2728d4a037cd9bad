//! Values a case sends: placeholders (`{tool.X}`, `{arg.X}`, `{cwd}`, `{home}`) resolved through
//! the profile, and generators (`$repeat`, `$concat`, `$array-of`, `$nest`) that build large
//! payloads without spelling them out in the case file.

use serde_json::{json, Map, Value};

use crate::profile::Profile;

/// Placeholders a case may use in strings (keys included): `{tool.X}`, `{arg.X}`, `{cwd}`,
/// `{home}`, and `{saved.NAME}` once a step's `save` took NAME from a response. A string that is
/// exactly `{saved.NAME}` becomes the saved value itself, a number staying a number.
pub(crate) struct Vars {
    map: Vec<(String, String)>,
    /// Values saved from responses while the case runs (a later step may use them).
    saved: std::cell::RefCell<Vec<(String, Value)>>,
}

impl Vars {
    pub(crate) fn new(profile: &Profile, work: &std::path::Path, home: &std::path::Path) -> Vars {
        let mut map = Vec::new();
        for (a, t) in &profile.tools {
            map.push((format!("{{tool.{a}}}"), t.clone()));
        }
        for a in crate::profile::ABSTRACT_ARGUMENTS {
            map.push((format!("{{arg.{a}}}"), profile.argument(a).to_string()));
        }
        map.push(("{cwd}".into(), work.to_string_lossy().into_owned()));
        map.push(("{home}".into(), home.to_string_lossy().into_owned()));
        Vars {
            map,
            saved: Default::default(),
        }
    }

    /// Makes `{saved.NAME}` stand for `value` from now on.
    pub(crate) fn save(&self, name: &str, value: Value) {
        let key = format!("{{saved.{name}}}");
        let mut saved = self.saved.borrow_mut();
        saved.retain(|(k, _)| *k != key);
        saved.push((key, value));
    }

    pub(crate) fn str(&self, s: &str) -> String {
        if !s.contains('{') {
            return s.to_string();
        }
        let saved = self.saved.borrow();
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let fixed = self
            .map
            .iter()
            .fold(s.to_string(), |acc, (k, v)| acc.replace(k, v));
        saved
            .iter()
            .fold(fixed, |acc, (k, v)| acc.replace(k, &text(v)))
    }

    pub(crate) fn value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => {
                let saved = self.saved.borrow();
                match saved.iter().find(|(k, _)| k == s) {
                    Some((_, value)) => value.clone(),
                    None => Value::String(self.str(s)),
                }
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (self.str(k), self.value(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// Expands the value generators of sent values, so a case can send a 1 MiB prompt or a schema of
/// 10,001 nodes without spelling it out:
/// - `{ "$repeat" = { text = "a", times = N } }`: the text N times (a string);
/// - `{ "$concat" = [ … ] }`: the parts joined (a string);
/// - `{ "$array-of" = { item = X, times = N } }`: an array of N copies of X;
/// - `{ "$nest" = { key = "items", depth = N, leaf = X, with = { type = "array" } } }`: `with`
///   plus `key` holding the next level, N levels deep, ending in X.
pub(crate) fn generate(v: &Value) -> Result<Value, String> {
    if let Value::Object(o) = v {
        if o.len() == 1 {
            if let Some(r) = o.get("$array-of") {
                let item = generate(r.get("item").ok_or("$array-of needs `item`")?)?;
                let times = r
                    .get("times")
                    .and_then(Value::as_u64)
                    .ok_or("$array-of needs `times`")?;
                return Ok(Value::Array(vec![item; times as usize]));
            }
            if let Some(r) = o.get("$nest") {
                let key = r
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or("$nest needs `key`")?;
                let depth = r
                    .get("depth")
                    .and_then(Value::as_u64)
                    .ok_or("$nest needs `depth`")?;
                let mut cur = generate(r.get("leaf").ok_or("$nest needs `leaf`")?)?;
                let with = r.get("with").cloned().unwrap_or_else(|| json!({}));
                for _ in 0..depth {
                    let mut level = with.clone();
                    let obj = level
                        .as_object_mut()
                        .ok_or("$nest `with` must be a table")?;
                    obj.insert(key.to_string(), cur);
                    cur = level;
                }
                return Ok(cur);
            }
            if let Some(r) = o.get("$repeat") {
                let text = r
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or("$repeat needs `text`")?;
                let times = r
                    .get("times")
                    .and_then(Value::as_u64)
                    .ok_or("$repeat needs `times`")?;
                return Ok(Value::String(text.repeat(times as usize)));
            }
            if let Some(parts) = o.get("$concat") {
                let parts = parts.as_array().ok_or("$concat needs an array")?;
                let mut s = String::new();
                for p in parts {
                    match generate(p)? {
                        Value::String(x) => s.push_str(&x),
                        other => s.push_str(&other.to_string()),
                    }
                }
                return Ok(Value::String(s));
            }
        }
        let mut out = Map::new();
        for (k, x) in o {
            out.insert(k.clone(), generate(x)?);
        }
        return Ok(Value::Object(out));
    }
    if let Value::Array(a) = v {
        return a
            .iter()
            .map(generate)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    Ok(v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_expand() {
        let v =
            generate(&json!({"p": {"$concat": ["x", {"$repeat": {"text": "ab", "times": 3}}]}}))
                .unwrap();
        assert_eq!(v, json!({"p": "xababab"}));
    }
}
