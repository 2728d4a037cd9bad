//! Edits one entry of a JSON or JSONC file through jsonc-parser's concrete syntax tree: every other
//! byte (comments, other keys, indentation, trailing commas) is written back as it was.

use jsonc_parser::cst::{CstInputValue, CstObject, CstObjectProp, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

use super::change::{Edited, FormatError};
use super::clients::Entry;

/// Sets (`entry` given) or removes the server `name` in the object under `key` of `text`.
pub(super) fn edit(
    text: &str,
    key: &str,
    name: &str,
    entry: Option<&Entry>,
) -> Result<Edited, FormatError> {
    let root = CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|e| FormatError::Parse(e.to_string()))?;
    let top = match root.value() {
        None => None,
        Some(node) => Some(
            node.as_object()
                .ok_or_else(|| FormatError::Shape("the top level is not an object".into()))?,
        ),
    };
    let servers = match top
        .as_ref()
        .map(|t| only(t, key, key))
        .transpose()?
        .flatten()
    {
        None => None,
        Some(prop) => Some(
            prop.object_value()
                .ok_or_else(|| FormatError::Shape(format!("`{key}` is not an object")))?,
        ),
    };
    let existing = match servers
        .as_ref()
        .map(|s| only(s, name, &format!("{key}.{name}")))
        .transpose()?
        .flatten()
    {
        None => None,
        Some(prop) => Some(
            prop.object_value()
                .ok_or_else(|| FormatError::Shape(format!("`{key}.{name}` is not an object")))?,
        ),
    };
    let before = existing.as_ref().and_then(CstObject::to_serde_value);
    let after = match entry {
        None => {
            if let Some(prop) = servers.as_ref().and_then(|s| s.get(name)) {
                prop.remove();
            }
            None
        }
        Some(entry) => {
            let target = match existing {
                Some(obj) => obj,
                None => {
                    let top = top.unwrap_or_else(|| root.object_value_or_set());
                    let servers = servers.unwrap_or_else(|| top.object_value_or_set(key));
                    servers.append(name, input(&Value::Object(entry.value.clone())));
                    servers.object_value(name).ok_or_else(|| {
                        FormatError::Shape(format!("`{key}.{name}` could not be added"))
                    })?
                }
            };
            merge(&target, entry);
            target.to_serde_value()
        }
    };
    let mut new_text = root.to_string();
    if text.is_empty() && !new_text.ends_with('\n') {
        new_text.push('\n');
    }
    let changed = new_text != text;
    Ok(Edited {
        text: new_text,
        changed,
        before: before.map(|v| pretty(&v)),
        after: after.map(|v| pretty(&v)),
    })
}

/// The property `name` of `obj`. A name given twice is an error: a client keeps the last one, so
/// an edit of the first would not take effect.
fn only(obj: &CstObject, name: &str, path: &str) -> Result<Option<CstObjectProp>, FormatError> {
    let mut found = obj
        .properties()
        .into_iter()
        .filter(|p| p.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some(name));
    let first = found.next();
    if found.next().is_some() {
        return Err(FormatError::Shape(format!(
            "`{path}` is given more than once"
        )));
    }
    Ok(first)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Brings an existing entry to `entry`: its keys set (objects merged key by key, so a user's
/// extra variables stay), the `keep` keys only filled in where missing.
fn merge(obj: &CstObject, entry: &Entry) {
    for (k, v) in &entry.value {
        if entry.keep.contains(&k.as_str()) {
            add_missing(obj, k, v);
        } else {
            set_key(obj, k, v);
        }
    }
}

fn add_missing(obj: &CstObject, key: &str, value: &Value) {
    match (obj.get(key), value) {
        (None, _) => {
            obj.append(key, input(value));
        }
        (Some(prop), Value::Object(map)) => {
            if let Some(inner) = prop.object_value() {
                for (k, v) in map {
                    add_missing(&inner, k, v);
                }
            }
        }
        (Some(_), _) => {}
    }
}

fn set_key(obj: &CstObject, key: &str, value: &Value) {
    let Some(prop) = obj.get(key) else {
        obj.append(key, input(value));
        return;
    };
    if let (Value::Object(map), Some(inner)) = (value, prop.object_value()) {
        for (k, v) in map {
            set_key(&inner, k, v);
        }
        return;
    }
    if prop.value().and_then(|n| n.to_serde_value()).as_ref() != Some(value) {
        prop.set_value(input(value));
    }
}

fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(m) => {
            CstInputValue::Object(m.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}
