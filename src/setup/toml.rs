//! Edits one table of Codex's `config.toml` through toml_edit: comments, the order of keys and
//! tables, and every other table are written back as they were.

use serde_json::Value;
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

use super::change::{Edited, FormatError};
use super::clients::Entry;

const SERVERS: &str = "mcp_servers";

/// Sets (`entry` given) or removes `[mcp_servers.<name>]` in `text`.
pub(super) fn edit(text: &str, name: &str, entry: Option<&Entry>) -> Result<Edited, FormatError> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| FormatError::Parse(one_line(&e.to_string())))?;
    let not_table = |what: String| FormatError::Shape(format!("`{what}` is not a table"));
    if doc
        .get(SERVERS)
        .is_some_and(|s| s.as_table_like().is_none())
    {
        return Err(not_table(SERVERS.into()));
    }
    let before = match doc.get(SERVERS).and_then(|s| s.get(name)) {
        Some(item) if item.as_table_like().is_none() => {
            return Err(not_table(format!("{SERVERS}.{name}")))
        }
        item => item.map(|i| show(name, i)),
    };
    let after = match entry {
        None => {
            if let Some(servers) = doc.get_mut(SERVERS).and_then(Item::as_table_like_mut) {
                servers.remove(name);
            }
            None
        }
        Some(entry) => {
            let servers = doc.entry(SERVERS).or_insert_with(|| {
                let mut t = Table::new();
                t.set_implicit(true);
                Item::Table(t)
            });
            let inline = servers.is_inline_table();
            let servers = servers
                .as_table_like_mut()
                .ok_or_else(|| not_table(SERVERS.into()))?;
            if servers.get(name).is_none() {
                let fresh = if inline {
                    Item::Value(InlineTable::new().into())
                } else {
                    Item::Table(Table::new())
                };
                servers.insert(name, fresh);
            }
            let item = servers
                .get_mut(name)
                .ok_or_else(|| not_table(format!("{SERVERS}.{name}")))?;
            let table = item
                .as_table_like_mut()
                .ok_or_else(|| not_table(format!("{SERVERS}.{name}")))?;
            merge(table, entry);
            Some(show(name, item))
        }
    };
    let new_text = doc.to_string();
    Ok(Edited {
        changed: new_text != text,
        text: new_text,
        before,
        after,
    })
}

/// toml_edit's errors span several lines (the line quoted, a caret under it); the first names the
/// line and column.
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message.lines().map(str::trim_end).collect();
    let last = lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .copied()
        .unwrap_or("");
    match lines.first() {
        Some(first) if *first != last => format!("{first}: {}", last.trim()),
        _ => message.trim().to_owned(),
    }
}

/// The table as it appears in the file, under its header.
fn show(name: &str, item: &Item) -> String {
    let table = match item {
        Item::Value(toml_edit::Value::InlineTable(t)) => t.clone().into_table(),
        Item::Table(t) => t.clone(),
        _ => return item.to_string(),
    };
    let mut servers = Table::new();
    servers.set_implicit(true);
    let mut table = table;
    table.decor_mut().clear();
    servers.insert(name, Item::Table(table));
    let mut doc = DocumentMut::new();
    doc.insert(SERVERS, Item::Table(servers));
    doc.to_string().trim_end().to_owned()
}

/// Brings an existing table to `entry`, as the JSON merge does.
fn merge(table: &mut dyn TableLike, entry: &Entry) {
    for (k, v) in &entry.value {
        if entry.keep.contains(&k.as_str()) {
            add_missing(table, k, v);
        } else {
            set_key(table, k, v);
        }
    }
}

fn add_missing(table: &mut dyn TableLike, key: &str, want: &Value) {
    match (table.get_mut(key), want) {
        (None, _) => {
            table.insert(key, Item::Value(value(want)));
        }
        (Some(existing), Value::Object(map)) => {
            if let Some(inner) = existing.as_table_like_mut() {
                for (k, v) in map {
                    add_missing(inner, k, v);
                }
            }
        }
        (Some(_), _) => {}
    }
}

fn set_key(table: &mut dyn TableLike, key: &str, want: &Value) {
    if let Some(existing) = table.get_mut(key) {
        if let (Value::Object(map), Some(inner)) = (want, existing.as_table_like_mut()) {
            for (k, v) in map {
                set_key(inner, k, v);
            }
            return;
        }
        // `env_vars` lists variables to pass on: ours must be there, the user's may stay.
        if let (Value::Array(names), Some(have)) = (want, existing.as_array_mut()) {
            if key == "env_vars" {
                for name in names {
                    if !have.iter().any(|h| json(h).as_ref() == Some(name)) {
                        have.push(value(name));
                    }
                }
                return;
            }
        }
        if existing.as_value().and_then(json).as_ref() == Some(want) {
            return;
        }
    }
    table.insert(key, Item::Value(value(want)));
}

/// A TOML value as JSON, for comparing with the entry; `None` for what JSON cannot hold.
fn json(v: &toml_edit::Value) -> Option<Value> {
    Some(match v {
        toml_edit::Value::String(s) => Value::from(s.value().as_str()),
        toml_edit::Value::Integer(i) => Value::from(*i.value()),
        toml_edit::Value::Float(f) => serde_json::Number::from_f64(*f.value())?.into(),
        toml_edit::Value::Boolean(b) => Value::from(*b.value()),
        toml_edit::Value::Datetime(_) => return None,
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(json).collect::<Option<_>>()?),
        toml_edit::Value::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| Some((k.to_owned(), json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

fn value(v: &Value) -> toml_edit::Value {
    match v {
        // The entry holds no nulls; an empty string is the nearest TOML has.
        Value::Null => "".into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(a) => toml_edit::Value::Array(a.iter().map(value).collect()),
        Value::Object(m) => {
            toml_edit::Value::InlineTable(m.iter().map(|(k, v)| (k.as_str(), value(v))).collect())
        }
    }
}
