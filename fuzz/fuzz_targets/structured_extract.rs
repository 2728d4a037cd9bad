//! `structured::extract_and_validate` on arbitrary answers, against a few fixed schemas (one
//! chosen by the first input byte): it must return, never panic, and keep its own promises.
#![no_main]

use std::sync::OnceLock;

use geminicli_mcp::structured::{extract_and_validate, PreparedSchema, Schema, MAX_ISSUES};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn schemas() -> &'static [PreparedSchema] {
    static SCHEMAS: OnceLock<Vec<PreparedSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        [
            json!({}),
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
            json!({"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                   "properties": {"s": {"type": "string", "maxLength": 8}},
                   "additionalProperties": {"type": "number"}}),
            json!({"anyOf": [{"type": "number", "minimum": 0}, {"const": "x"}],
                   "$defs": {"t": {"$ref": "#/$defs/t"}}}),
            json!({"type": "object", "patternProperties": {"^k[0-9]+$": {"type": "boolean"}},
                   "additionalProperties": false}),
        ]
        .iter()
        .map(|s| Schema::prepare(s).expect("a fixture schema prepares"))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let schemas = schemas();
    let schema = &schemas[pick as usize % schemas.len()];
    let answer = String::from_utf8_lossy(rest);
    match extract_and_validate(schema, &answer) {
        Ok(ok) => {
            // The canonical text is JSON, and it is what the validated value prints as.
            let reparsed: serde_json::Value =
                serde_json::from_str(&ok.canonical).expect("canonical text is JSON");
            assert_eq!(reparsed, ok.value);
        }
        Err(failure) => {
            assert!(!failure.errors.is_empty());
            assert!(failure.errors.len() <= MAX_ISSUES);
            assert_eq!(failure.raw, answer);
        }
    }
});
