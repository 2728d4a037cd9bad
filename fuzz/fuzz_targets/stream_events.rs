//! The stream-json reader: one line through `parse_line` and `progress_hint`, the whole input
//! through `Transcript::from_stdout`, then the answer and the partial answer it yields; the
//! in-place parse (`from_stdout_owned`, what the server runs) must give the same transcript.
#![no_main]

use geminicli_mcp::oneshot::events::{parse_line, progress_hint, Transcript};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_line(data);
    let _ = progress_hint(data, 40);
    let transcript = Transcript::from_stdout(data);
    let answer = transcript.answer();
    assert!(transcript.all_text.ends_with(answer));
    let in_place = Transcript::from_stdout_owned(data.to_vec());
    assert_eq!(in_place.all_text, transcript.all_text);
    assert_eq!(in_place.last_turn_start, transcript.last_turn_start);
    assert_eq!(in_place.tools, transcript.tools);
    assert_eq!(in_place.errors, transcript.errors);
    assert_eq!(in_place.result, transcript.result);
    assert_eq!(
        (in_place.noise_lines, in_place.events),
        (transcript.noise_lines, transcript.events)
    );
    let text = transcript.all_text.clone();
    match transcript.into_partial() {
        Some(partial) => assert_eq!(partial, text),
        None => assert!(text.is_empty()),
    }
});
