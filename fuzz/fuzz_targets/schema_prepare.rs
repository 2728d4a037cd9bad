//! `Schema::prepare` (limits, then compilation) on arbitrary JSON, then one validation with the
//! schema it accepted: neither step may panic.
#![no_main]

use geminicli_mcp::structured::{extract_and_validate, Schema};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The tail after the first NUL, if any, is the answer validated against the schema.
    let (schema, answer) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{\"a\": [1, \"x\"]}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(schema) else {
        return;
    };
    if let Ok(prepared) = Schema::prepare(&schema) {
        let _ = extract_and_validate(&prepared, &String::from_utf8_lossy(answer));
    }
});
