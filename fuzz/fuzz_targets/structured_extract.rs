//! `structured::extract_and_validate` on arbitrary answers, against a few fixed schemas (one
//! chosen by the first input byte): it must return, never panic, and keep its own promises: the
//! same answer as `structured::reference` (the plain algorithm) on inputs under 4 KiB, and a peak
//! of heap memory, counted by the global allocator, of at most 2 × the answer + 16 MiB when it
//! holds no JSON (JSON adds its tree: at most 200 bytes a value).
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use geminicli_mcp::structured::{
    canonical_json, extract_and_validate, reference, FailureReason, PreparedSchema, Schema,
    MAX_ISSUES,
};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// The system allocator, counting the bytes live and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Both blocks may be live during the copy.
        let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        let moved = System.realloc(ptr, layout, new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Inputs up to this size are also run through the reference, which is quadratic.
const REFERENCE_MAX_BYTES: usize = 4096;

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
    let answer = String::from_utf8_lossy(rest).into_owned();

    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let got = extract_and_validate(schema, &answer);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    // No JSON: the answer's copy and the scan. JSON: also a tree of at most 200 bytes a value,
    // and there is at most one value per byte.
    let no_json = matches!(
        &got,
        Err(f) if matches!(f.reason, FailureReason::NoJsonFound | FailureReason::InvalidJson)
    );
    let per_byte = if no_json { 2 } else { 2 + 200 };
    assert!(
        peak <= per_byte * answer.len() + (16 << 20),
        "{peak} bytes at peak for a {}-byte answer",
        answer.len()
    );

    match &got {
        Ok(ok) => {
            // The canonical text is JSON, and it is what the validated value prints as.
            let reparsed: serde_json::Value =
                serde_json::from_str(&ok.canonical).expect("canonical text is JSON");
            assert_eq!(canonical_json(&reparsed), ok.canonical);
            assert_eq!(canonical_json(&ok.value), ok.canonical);
        }
        Err(failure) => {
            assert!(!failure.errors.is_empty());
            assert!(failure.errors.len() <= MAX_ISSUES);
        }
    }
    if answer.len() <= REFERENCE_MAX_BYTES {
        let expected = reference::extract_and_validate(schema, &answer);
        match (&got, &expected) {
            (Ok(a), Ok(b)) => assert_eq!(a.canonical, b.canonical),
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("{got:?} where the reference gives {expected:?}"),
        }
    }
});
