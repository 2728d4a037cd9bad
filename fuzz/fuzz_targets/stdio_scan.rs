//! The stdio transport's raw-line scan on arbitrary bytes: it never panics, gives the same answer
//! however the line is cut into pieces, and finds the `id` a JSON decoder finds; the lone
//! surrogate repair leaves none behind.
#![no_main]

use geminicli_mcp::transport::scan::{replace_lone_surrogates, scan, Found, Scan};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let found = scan(data);
    let piece = 1 + data.first().map_or(0, |b| usize::from(*b % 7));
    let mut pieces = Scan::new();
    for chunk in data.chunks(piece) {
        pieces.feed(chunk);
    }
    assert_eq!(pieces.found(), found, "pieces of {piece}");
    if data.len() < 1024 {
        if let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(data) {
            match message.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => {
                    assert_eq!(found, Found::Id(id.clone()));
                }
                Some(_) => assert_eq!(found, Found::BadId),
                None => assert!(!matches!(found, Found::Id(_) | Found::BadId), "{found:?}"),
            }
        }
    }
    if let Some(fixed) = replace_lone_surrogates(data) {
        assert!(replace_lone_surrogates(&fixed).is_none(), "a lone surrogate left");
    }
});
