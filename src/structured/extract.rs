//! Where JSON may sit in a model's answer: Markdown code fences, found by one linear scan that
//! parses nothing (the balanced `{…}`/`[…]` spans are `spans`' business).

use std::ops::{ControlFlow, Range};

/// [`for_each_fenced_block`]'s blocks, collected (for the reference algorithm and the tests).
#[cfg(any(test, feature = "reference"))]
pub(crate) fn fenced_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let _ = for_each_fenced_block(text, |block| {
        blocks.push(block);
        ControlFlow::Continue(())
    });
    blocks
}

/// Calls `each` with the byte range of the non-blank contents of every fenced code block whose
/// info string is empty or `json` (any case), in document order, until it breaks. An unclosed
/// fence runs to the end of the text, since a truncated answer still deserves a look.
pub(crate) fn for_each_fenced_block(
    text: &str,
    mut each: impl FnMut(Range<usize>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    // (fence length, content start, wanted) while inside a fence.
    let mut open: Option<(usize, usize, bool)> = None;
    // Only a line holding three backticks after at most three spaces can be a fence: the scan
    // jumps from one "```" to the next instead of walking every line.
    let ticks = memchr::memmem::Finder::new("```");
    let mut pos = 0;
    while let Some(found) = ticks.find(&text.as_bytes()[pos..]) {
        let at = pos + found;
        let Some(line_start) = fence_line_start(text, at) else {
            pos = at + 3;
            continue;
        };
        let line_end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
        let next = (line_end + 1).min(text.len());
        let line = &text[line_start..line_end];
        match open {
            None => {
                if let Some((ticks, info)) = fence_line(line) {
                    let first_word = info.split_whitespace().next().unwrap_or("");
                    let wanted = first_word.is_empty() || first_word.eq_ignore_ascii_case("json");
                    open = Some((ticks, next, wanted));
                }
            }
            Some((ticks, start, wanted)) => {
                if let Some((closing, info)) = fence_line(line) {
                    if closing >= ticks && info.is_empty() {
                        if wanted && !text[start..line_start].trim().is_empty() {
                            each(start..line_start)?;
                        }
                        open = None;
                    }
                }
            }
        }
        if line_end == text.len() {
            break;
        }
        pos = next;
    }
    if let Some((_, start, true)) = open {
        if !text[start..].trim().is_empty() {
            each(start..text.len())?;
        }
    }
    ControlFlow::Continue(())
}

/// The start of the line whose backticks begin at `at`, when only up to three spaces come before
/// them on it (where a fence line starts).
fn fence_line_start(text: &str, at: usize) -> Option<usize> {
    let before = &text.as_bytes()[at.saturating_sub(4)..at];
    let spaces = before.iter().rev().take_while(|b| **b == b' ').count();
    let start = at - spaces;
    let at_line_start = start == 0 || text.as_bytes()[start - 1] == b'\n';
    (spaces <= 3 && at_line_start).then_some(start)
}

/// A CommonMark backtick fence line: up to three spaces, three or more backticks, an info string.
/// Returns the backtick count and the trimmed info string.
fn fence_line(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ticks = rest.len() - rest.trim_start_matches('`').len();
    if ticks < 3 {
        return None;
    }
    let info = rest[ticks..].trim();
    // CommonMark: a backtick fence's info string may not contain a backtick.
    if info.contains('`') {
        return None;
    }
    Some((ticks, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn fences_text(text: &str) -> Vec<&str> {
        fenced_blocks(text).into_iter().map(|r| &text[r]).collect()
    }

    #[rstest]
    #[case("```json\n{\"a\":1}\n```\n", &["{\"a\":1}\n"])]
    #[case("text\n```\n[1]\n```", &["[1]\n"])]
    #[case("```JSON\n1\n```", &["1\n"])]
    #[case("```python\nx = {}\n```\n```json\n{}\n```", &["{}\n"])]
    #[case("````json\n```\n{}\n````", &["```\n{}\n"])]
    #[case("   ```json\n{}\n   ```", &["{}\n"])]
    #[case("    ```json\n{}\n```", &[])]
    #[case("```json\n{\"truncated\":", &["{\"truncated\":"])]
    #[case("inline ```json {}``` only", &[])]
    fn fences_are_found_with_their_contents(#[case] text: &str, #[case] expected: &[&str]) {
        assert_eq!(fences_text(text), expected);
    }
}
