//! fake-gemini's inputs from a test author: scenario TOML (`scenario::parse`) and the prompt
//! marker (`find_marker`, then `apply_params` on a built-in scenario).
#![no_main]

use fake_gemini::scenario::{apply_params, find_marker, load, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse("fuzz.toml", &text);
    if let Some(Ok(marker)) = find_marker(&text) {
        // Only built-in names: `load` would read a file for a path-like name.
        for name in ["success", "flood-stdout", "rate-limit-retry", "slow-start"] {
            let (name, mut scenario) = load(name, None).expect("a built-in scenario loads");
            let _ = apply_params(&name, &mut scenario, &marker.params);
        }
    }
});
