//! What can be learnt from a line that cannot be decoded whole: a streaming scan of its top-level
//! object ([`Scan`]) that finds the request's `id` however long the line and wherever the key
//! sits, and the repair of lone UTF-16 surrogate escapes ([`replace_lone_surrogates`]), which
//! JSON allows, JavaScript's `JSON.stringify` emits for a string cut inside an emoji, and a Rust
//! string cannot hold.

use serde_json::Value;

/// Longest `id` value kept; a longer one cannot be echoed and counts as unrecoverable.
const MAX_ID_BYTES: usize = 1024;
/// Longest top-level key compared (the keys looked for are all shorter).
const MAX_KEY_BYTES: usize = 16;

/// Where the scan stands in the top-level object.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Before the first byte that is not white space.
    #[default]
    Start,
    /// Inside the top-level object, where a key may come.
    Key,
    /// Reading a top-level key.
    InKey,
    /// After a key, before its `:` and its value.
    Colon,
    /// Before a top-level value.
    Value,
    /// Inside a top-level value.
    InValue,
    /// The top level is not an object, or its object ended: nothing more to learn.
    Done,
}

/// The keys of a JSON-RPC message a reply depends on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Answer,
    #[default]
    Other,
}

/// A streaming scan of a JSON-RPC message's top level, fed the raw bytes in any number of pieces.
/// It tracks strings and nesting only, so it works on text that is not valid JSON, on any depth
/// and on lines too long to keep.
#[derive(Debug, Default)]
pub struct Scan {
    place: Place,
    /// Nesting inside the current top-level value.
    depth: usize,
    in_string: bool,
    escaped: bool,
    key_bytes: Vec<u8>,
    key: Key,
    id_bytes: Vec<u8>,
    id_too_long: bool,
    /// The raw `id` value, when the key was seen (the last one wins, as in a decoder).
    id: Option<Result<Vec<u8>, ()>>,
    method: bool,
    answer: bool,
}

/// What the scan found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// An `id` that can be echoed (a string or a number).
    Id(Value),
    /// An `id` key whose value cannot be echoed (`null`, an array, an object, a boolean, too
    /// long, or cut): the reply carries `id: null`.
    BadId,
    /// No `id`, but a `method`: a notification, which gets no reply.
    Notification,
    /// No `id`, but a `result` or `error`: a response, which gets no reply.
    Response,
    /// Nothing to go by: the reply carries `id: null`.
    Nothing,
}

impl Scan {
    /// A scan of nothing yet.
    pub fn new() -> Self {
        Scan::default()
    }

    /// Scans `bytes`, the next piece of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.place == Place::Done {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        match self.place {
            Place::Start => match b {
                b'{' => self.place = Place::Key,
                _ if b.is_ascii_whitespace() => {}
                _ => self.place = Place::Done,
            },
            Place::Key => match b {
                b'"' => {
                    self.in_string = true;
                    self.key_bytes.clear();
                    self.place = Place::InKey;
                }
                b'}' => self.place = Place::Done,
                _ => {}
            },
            Place::Colon => {
                if b == b':' {
                    self.place = Place::Value;
                    self.id_bytes.clear();
                    self.id_too_long = false;
                }
            }
            Place::Value if b.is_ascii_whitespace() => {}
            Place::Value | Place::InValue => self.value_byte(b),
            Place::InKey | Place::Done => {}
        }
    }

    fn string_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
        }
        match self.place {
            Place::InKey if self.in_string => {
                if self.key_bytes.len() <= MAX_KEY_BYTES {
                    self.key_bytes.push(b);
                }
            }
            Place::InKey => {
                if self.key_bytes.contains(&b'\\') {
                    self.unescape_key();
                }
                self.key = match self.key_bytes.as_slice() {
                    b"id" => Key::Id,
                    b"method" => Key::Method,
                    b"result" | b"error" => Key::Answer,
                    _ => Key::Other,
                };
                self.place = Place::Colon;
            }
            _ => self.keep(b),
        }
    }

    /// Decodes the escapes of a key (`"i\u0064"` is `"id"`), as a decoder would.
    fn unescape_key(&mut self) {
        let mut quoted = Vec::with_capacity(self.key_bytes.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&self.key_bytes);
        quoted.push(b'"');
        if let Ok(key) = serde_json::from_slice::<String>(&quoted) {
            self.key_bytes = key.into_bytes();
        }
    }

    fn value_byte(&mut self, b: u8) {
        self.place = Place::InValue;
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 0 => self.depth -= 1,
            b',' | b'}' if self.depth == 0 => {
                self.end_value();
                self.place = if b == b',' { Place::Key } else { Place::Done };
                return;
            }
            _ => {}
        }
        self.keep(b);
    }

    /// Keeps a byte of the `id` value.
    fn keep(&mut self, b: u8) {
        if self.key != Key::Id || self.id_too_long {
            return;
        }
        if self.id_bytes.len() == MAX_ID_BYTES {
            self.id_too_long = true;
            self.id_bytes.clear();
        } else {
            self.id_bytes.push(b);
        }
    }

    fn end_value(&mut self) {
        match self.key {
            Key::Id if self.id_too_long => self.id = Some(Err(())),
            Key::Id => self.id = Some(Ok(std::mem::take(&mut self.id_bytes))),
            Key::Method => self.method = true,
            Key::Answer => self.answer = true,
            Key::Other => {}
        }
        self.key = Key::Other;
    }

    /// What the bytes fed so far say about the reply owed. An `id` whose value had not ended when
    /// the bytes stopped is unrecoverable.
    pub fn found(&self) -> Found {
        let pending_id = self.key == Key::Id && matches!(self.place, Place::InValue);
        match &self.id {
            _ if pending_id => Found::BadId,
            Some(Ok(raw)) => match serde_json::from_slice::<Value>(raw) {
                Ok(id @ (Value::String(_) | Value::Number(_))) => Found::Id(id),
                _ => Found::BadId,
            },
            Some(Err(())) => Found::BadId,
            None if self.method => Found::Notification,
            None if self.answer => Found::Response,
            None => Found::Nothing,
        }
    }
}

/// Scans a whole line.
pub fn scan(line: &[u8]) -> Found {
    let mut scan = Scan::new();
    scan.feed(line);
    scan.found()
}

/// `line` with every `\uXXXX` escape of a lone UTF-16 surrogate (one not part of a high-low pair)
/// replaced by `\ufffd`, the replacement character; `None` when there is none. Only escapes
/// inside strings count, and only where the backslash is not itself escaped.
pub fn replace_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if !in_string {
            in_string = b == b'"';
            copy(&mut out, line, i, 1);
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = false,
            b'\\' if line.get(i + 1) == Some(&b'u') => {
                let unit = hex4(line, i + 2);
                let lone = match unit {
                    Some(0xD800..=0xDBFF) => {
                        let next = (line.get(i + 6..i + 8) == Some(b"\\u"))
                            .then(|| hex4(line, i + 8))
                            .flatten();
                        if matches!(next, Some(0xDC00..=0xDFFF)) {
                            // A pair: both escapes stay.
                            copy(&mut out, line, i, 12);
                            i += 12;
                            continue;
                        }
                        true
                    }
                    Some(0xDC00..=0xDFFF) => true,
                    _ => false,
                };
                if lone {
                    let o = out.get_or_insert_with(|| line[..i].to_vec());
                    o.extend_from_slice(b"\\ufffd");
                } else {
                    copy(&mut out, line, i, 6.min(line.len() - i));
                }
                i += 6;
                continue;
            }
            b'\\' => {
                copy(&mut out, line, i, 2.min(line.len() - i));
                i += 2;
                continue;
            }
            _ => {}
        }
        copy(&mut out, line, i, 1);
        i += 1;
    }
    out
}

/// Appends `line[at..at + n]` to the output once the output has begun (before that, the input is
/// the output).
fn copy(out: &mut Option<Vec<u8>>, line: &[u8], at: usize, n: usize) {
    if let Some(o) = out {
        o.extend_from_slice(&line[at..(at + n).min(line.len())]);
    }
}

fn hex4(line: &[u8], at: usize) -> Option<u16> {
    let digits = std::str::from_utf8(line.get(at..at + 4)?).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_id_is_found_wherever_it_sits() {
        assert_eq!(
            scan(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Found::Id(json!(7))
        );
        assert_eq!(
            scan(br#"{"method":"tools/call","params":{"id":1,"a":[{"id":2}]},"id":"last"}"#),
            Found::Id(json!("last")),
            "only the top level counts"
        );
        assert_eq!(
            scan(br#" { "id" : "a\"b}" , "method": 1}"#),
            Found::Id(json!("a\"b}"))
        );
        assert_eq!(scan(br#"{"id":-1.5e3}"#), Found::Id(json!(-1.5e3)));
        assert_eq!(
            scan(br#"{"i\u0064":5,"method":"x"}"#),
            Found::Id(json!(5)),
            "an escaped key"
        );
    }

    /// The scan finds what a JSON decoder finds, for lines a decoder reads.
    #[test]
    fn the_scan_agrees_with_the_decoder() {
        let lines = [
            r#"{"id":1,"id":"second"}"#,
            r#"{"a":"}","id":2}"#,
            r#"{"a":"\"","id":3}"#,
            r#"{"a":{"id":0},"b":[{"id":9}],"id":4}"#,
            "{\n\t\"id\"\r\n:\n\"five\"\n}",
            r#"{"idx":1,"xid":2,"id":6}"#,
            r#"{"\u0069d":7}"#,
            r#"{"id":"\u00e9\ud83d\ude00"}"#,
            r#"{"id":-0}"#,
            r#"{"id":12345678901234567890}"#,
            r#"{"id":{}}"#,
            r#"{}"#,
            r#"{"method":"m","params":{"id":1}}"#,
        ];
        for line in lines {
            let decoded: Value = serde_json::from_str(line).expect(line);
            let want = match decoded.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => Found::Id(id.clone()),
                Some(_) => Found::BadId,
                None if decoded.get("method").is_some() => Found::Notification,
                None => Found::Nothing,
            };
            assert_eq!(scan(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn ids_that_cannot_be_echoed() {
        for line in [
            &br#"{"id":null,"method":"ping"}"#[..],
            br#"{"id":[1],"method":"ping"}"#,
            br#"{"id":{"a":1},"method":"ping"}"#,
            br#"{"id":true,"method":"ping"}"#,
            br#"{"method":"ping","id":"cut"#,
        ] {
            assert_eq!(
                scan(line),
                Found::BadId,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let long = format!(r#"{{"id":"{}","method":"ping"}}"#, "x".repeat(MAX_ID_BYTES));
        assert_eq!(scan(long.as_bytes()), Found::BadId);
    }

    #[test]
    fn messages_without_an_id() {
        assert_eq!(
            scan(br#"{"method":"notifications/x"}"#),
            Found::Notification
        );
        assert_eq!(scan(br#"{"result":{}}"#), Found::Response);
        assert_eq!(scan(b"[1,2]"), Found::Nothing);
        assert_eq!(scan(b"not json"), Found::Nothing);
        assert_eq!(scan(b"{\"params\":{\"id\":3}}"), Found::Nothing);
    }

    #[test]
    fn the_scan_takes_any_split_and_any_depth() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"schema":{}{}}},"id":99}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let bytes = deep.as_bytes();
        for piece in [1, 7, 4096] {
            let mut s = Scan::new();
            for chunk in bytes.chunks(piece) {
                s.feed(chunk);
            }
            assert_eq!(s.found(), Found::Id(json!(99)), "pieces of {piece}");
        }
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        let fixed = replace_lone_surrogates(br#"{"a":"x\ud800y","b":"\udc00"}"#).unwrap();
        let v: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v, json!({"a": "x\u{fffd}y", "b": "\u{fffd}"}));
        let pair = br#"{"a":"\ud83d\ude00 \ud83d"}"#;
        let v: Value = serde_json::from_slice(&replace_lone_surrogates(pair).unwrap()).unwrap();
        assert_eq!(v, json!({"a": "😀 \u{fffd}"}));
    }

    #[test]
    fn escaped_backslashes_and_clean_lines_are_left_alone() {
        assert!(replace_lone_surrogates(br#"{"a":"\\ud800","b":"\u00e9"}"#).is_none());
        assert!(replace_lone_surrogates(br#"{"a":"\ud83d\ude00"}"#).is_none());
        assert!(
            replace_lone_surrogates(b"ud800").is_none(),
            "outside strings"
        );
    }
}
