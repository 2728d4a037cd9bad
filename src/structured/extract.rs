//! Where JSON may sit in a model's answer: Markdown code fences, and balanced `{…}`/`[…]` spans
//! found by one string-aware pass. Both are single linear scans; nothing here parses JSON.

use std::ops::Range;

/// Byte ranges of the non-blank contents of fenced code blocks whose info string is empty or
/// `json` (any case), in document order. An unclosed fence runs to the end of the text, since a
/// truncated answer still deserves a look.
pub(crate) fn fenced_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    // (fence length, content start, wanted) while inside a fence.
    let mut open: Option<(usize, usize, bool)> = None;
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
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
                            blocks.push(start..line_start);
                        }
                        open = None;
                    }
                }
            }
        }
        if line_end == text.len() {
            break;
        }
        line_start = next;
    }
    if let Some((_, start, true)) = open {
        if !text[start..].trim().is_empty() {
            blocks.push(start..text.len());
        }
    }
    blocks
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

/// Every balanced `{…}` or `[…]` span, ordered by start, nested ones included.
///
/// One pass over the bytes (brackets and quotes are ASCII, so UTF-8 needs no care). Quotes are
/// tracked only inside a bracket, so apostrophes and quotation marks in surrounding prose cannot
/// derail the scan. Inside brackets, a mismatched closer or a raw newline inside a string (which
/// JSON forbids) proves that none of the open spans is JSON: they are all dropped.
pub(crate) fn bracket_spans(text: &str) -> Vec<Range<usize>> {
    // Entries are pushed at their opening bracket, so `spans` is in start order for free; an end
    // of 0 marks a span that never closed.
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut stack: Vec<(usize, u8)> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            } else if b == b'\n' {
                in_string = false;
                stack.clear();
            }
            continue;
        }
        match b {
            b'{' | b'[' => {
                stack.push((spans.len(), if b == b'{' { b'}' } else { b']' }));
                spans.push(i..0);
            }
            b'}' | b']' => match stack.last() {
                Some(&(index, close)) if close == b => {
                    stack.pop();
                    spans[index].end = i + 1;
                }
                Some(_) => stack.clear(),
                None => {}
            },
            b'"' if !stack.is_empty() => in_string = true,
            _ => {}
        }
    }
    spans.retain(|span| span.end != 0);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn spans_text(text: &str) -> Vec<&str> {
        bracket_spans(text).into_iter().map(|r| &text[r]).collect()
    }

    fn fences_text(text: &str) -> Vec<&str> {
        fenced_blocks(text).into_iter().map(|r| &text[r]).collect()
    }

    #[rstest]
    #[case("no brackets", &[])]
    #[case("see [1] then {\"a\":1}", &["[1]", "{\"a\":1}"])]
    #[case("{\"a\":[1,{\"b\":2}]}", &["{\"a\":[1,{\"b\":2}]}", "[1,{\"b\":2}]", "{\"b\":2}"])]
    #[case("{\"s\":\"} ] { [\"}", &["{\"s\":\"} ] { [\"}"])]
    #[case("{\"s\":\"a\\\"}\"}", &["{\"s\":\"a\\\"}\"}"])]
    #[case("it's \"quoted\" {\"a\":1}", &["{\"a\":1}"])]
    #[case("{ oops ] {\"a\":1}", &["{\"a\":1}"])]
    #[case("[\"unterminated\n{\"a\":1}", &["{\"a\":1}"])]
    #[case("[[[", &[])]
    #[case("]]] {}", &["{}"])]
    #[case("héllo {\"é\":\"ü\"} wörld", &["{\"é\":\"ü\"}"])]
    fn bracket_scan_finds_balanced_spans_in_start_order(
        #[case] text: &str,
        #[case] expected: &[&str],
    ) {
        assert_eq!(spans_text(text), expected);
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

    #[test]
    fn deep_nesting_is_scanned_in_one_pass() {
        let text = format!("{}{}", "[".repeat(1 << 20), "]".repeat(1 << 20));
        let spans = bracket_spans(&text);
        assert_eq!(spans.len(), 1 << 20);
        assert_eq!(spans[0], 0..text.len());
    }
}
