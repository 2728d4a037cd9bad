//! A JSON string read where it lies in the CLI's output: its characters decoded one at a time,
//! so an answer as long as the output cap is counted and previewed without being decoded into a
//! buffer of its own, and decoded into one only once.

/// The characters of the JSON string literal `raw` (quotes included, as serde_json's `RawValue`
/// holds it), escapes decoded; a lone UTF-16 surrogate reads as U+FFFD, as the transports read it.
pub(super) fn chars(raw: &str) -> Chars<'_> {
    let inner = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or("");
    Chars {
        rest: inner.chars(),
    }
}

/// The iterator of [`chars`].
pub(super) struct Chars<'a> {
    rest: std::str::Chars<'a>,
}

impl Chars<'_> {
    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Option<u32> {
        let mut value = 0;
        for _ in 0..4 {
            value = value * 16 + self.rest.next()?.to_digit(16)?;
        }
        Some(value)
    }

    /// The character of a `\u` escape whose digits come next: a surrogate pair joined, a lone
    /// surrogate as U+FFFD.
    fn unicode(&mut self) -> char {
        let Some(first) = self.hex4() else {
            return char::REPLACEMENT_CHARACTER;
        };
        if !(0xD800..0xDC00).contains(&first) {
            return char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER);
        }
        let mut ahead = self.rest.clone();
        if ahead.next() == Some('\\') && ahead.next() == Some('u') {
            let mut low = Chars { rest: ahead };
            if let Some(second @ 0xDC00..0xE000) = low.hex4() {
                self.rest = low.rest;
                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
            }
        }
        char::REPLACEMENT_CHARACTER
    }
}

impl Iterator for Chars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c != '\\' {
            return Some(c);
        }
        Some(match self.rest.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'u' => self.unicode(),
            other => other, // `\"`, `\\`, `\/`
        })
    }
}

/// Decodes the JSON string literal at `raw` in `buf` (quotes included) into `buf` from `at`
/// on, and returns how many bytes it wrote. `at` must not lie after the literal's start: a
/// decoded string is never longer than its escaped form, so the writing never overtakes the
/// reading, and the text needs no buffer of its own. Decodes as [`chars`] does; the literal must
/// be valid UTF-8 (it is a range of a line serde_json read).
pub(super) fn decode_in_place(buf: &mut [u8], raw: std::ops::Range<usize>, at: usize) -> usize {
    assert!(at <= raw.start, "writing would overtake reading");
    let (mut read, end, mut write) = (raw.start + 1, raw.end.saturating_sub(1), at);
    let mut utf8 = [0u8; 4];
    while read < end {
        let b = buf[read];
        if b != b'\\' {
            buf[write] = b;
            read += 1;
            write += 1;
            continue;
        }
        // An escape: at most 12 bytes (a surrogate pair), decoded by the same code as `chars`.
        let stop = (read + 12).min(end);
        let piece = std::str::from_utf8(&buf[read..stop])
            .or_else(|e| std::str::from_utf8(&buf[read..read + e.valid_up_to()]))
            .expect("a valid prefix");
        let mut decoder = Chars {
            rest: piece.chars(),
        };
        let c = decoder.next().unwrap_or(char::REPLACEMENT_CHARACTER);
        read += piece.len() - decoder.rest.as_str().len();
        let encoded = c.encode_utf8(&mut utf8);
        buf[write..write + encoded.len()].copy_from_slice(encoded.as_bytes());
        write += encoded.len();
    }
    write - at
}

/// The decoded text of `raw`, in a buffer sized once (a decoded string is never longer than its
/// escaped form).
pub(super) fn decode(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    text.extend(chars(raw));
    text
}

/// The decoded length of `raw` in characters, and its last `n` characters.
pub(super) fn count_and_tail(raw: &str, n: usize) -> (usize, String) {
    let mut last = std::collections::VecDeque::with_capacity(n + 1);
    let mut count = 0;
    for c in chars(raw) {
        count += 1;
        if n > 0 {
            if last.len() == n {
                last.pop_front();
            }
            last.push_back(c);
        }
    }
    (count, last.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_as_serde_json_decodes_them() {
        for text in [
            "plain",
            "",
            "quote \" backslash \\ slash / \n\t\r\u{8}\u{c} end",
            "漢字 and 😀 and \u{1}",
            "{\"a\": \"x",
        ] {
            let raw = serde_json::to_string(text).unwrap();
            assert_eq!(decode(&raw), text, "{raw}");
            let escaped = raw.replace('😀', "\\ud83d\\ude00").replace('漢', "\\u6f22");
            assert_eq!(decode(&escaped), text, "{escaped}");
            let (count, tail) = count_and_tail(&raw, 3);
            assert_eq!(count, text.chars().count());
            let want: String = text.chars().skip(count.saturating_sub(3)).collect();
            assert_eq!(tail, want);
        }
    }

    #[test]
    fn decoding_in_place_writes_what_decoding_returns() {
        for text in [
            "plain",
            "",
            "quote \" backslash \\ \n\t 漢字 😀 \u{1}",
            "{\"a\": \"x",
        ] {
            let raw = serde_json::to_string(text).unwrap();
            let escaped = raw.replace('😀', "\\ud83d\\ude00");
            for literal in [raw, escaped, r#""a\ud83db\ude00""#.to_owned()] {
                let want = decode(&literal);
                for gap in [0, 3] {
                    let mut buf = format!("{}{literal}tail", "-".repeat(gap)).into_bytes();
                    let raw = gap..gap + literal.len();
                    let n = decode_in_place(&mut buf, raw, 0);
                    assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), want, "{literal}");
                    assert!(buf.ends_with(b"tail"));
                }
            }
        }
    }

    #[test]
    fn a_lone_surrogate_reads_as_the_replacement_character() {
        assert_eq!(decode(r#""a\ud83db""#), "a\u{FFFD}b");
        assert_eq!(decode(r#""\ude00""#), "\u{FFFD}");
        assert_eq!(decode(r#""\ud83d\u0041""#), "\u{FFFD}A");
    }
}
