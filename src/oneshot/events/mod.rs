//! The CLI's `-o stream-json` output: one JSON event per line, parsed tolerantly (non-JSON noise
//! lines such as `/memory show` output are counted and skipped), folded into a [`Transcript`].

pub use crate::progress::Hint;

mod rawtext;
use serde_json::Value;

/// One stream-json event, reduced to what the server uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `init`: the session id and the model as requested.
    Init {
        /// `session_id`.
        session_id: Option<String>,
        /// `model` (the requested name, e.g. `auto`).
        model: Option<String>,
    },
    /// A `message` with role `user` (the prompt echoed back).
    UserMessage,
    /// A `message` with role `assistant`: one streamed chunk of model text.
    AssistantText(String),
    /// `tool_use`: the model called a tool; the text before it is not part of the answer.
    ToolUse {
        /// `tool_name`.
        name: String,
    },
    /// `tool_result`.
    ToolResult {
        /// `status` (`success` / `error`).
        status: String,
    },
    /// `error`: a non-fatal event (loop detected, empty response, …).
    Error {
        /// `severity` (`warning` / `error`).
        severity: String,
        /// `message`.
        message: String,
    },
    /// `result`: the end of the run.
    Result(ResultEvent),
    /// A JSON object of an unknown type (newer CLI versions): ignored.
    Other,
}

/// The final `result` event.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultEvent {
    /// `status`: `success` or `error`.
    pub status: String,
    /// `error.type`, when present.
    pub error_type: Option<String>,
    /// `error.message`, when present.
    pub error_message: Option<String>,
    /// `stats`, as sent.
    pub stats: Option<Value>,
}

impl ResultEvent {
    /// True when the CLI reported success.
    pub fn is_success(&self) -> bool {
        self.status == "success"
    }

    /// True for the CLI's "input never sent" success: no tokens at all and no model used
    /// (what 0.61 does with a prompt it silently drops as too large).
    pub fn nothing_was_sent(&self) -> bool {
        let Some(stats) = &self.stats else {
            return false;
        };
        let tokens = stats.get("total_tokens").and_then(Value::as_u64);
        let models_empty = stats
            .get("models")
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty());
        tokens == Some(0) && models_empty
    }
}

/// The fields of a stream-json event that [`parse_line`] reads; the rest are skipped.
#[derive(serde::Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", default)]
    kind: Text,
    #[serde(default)]
    session_id: Text,
    #[serde(default)]
    model: Text,
    #[serde(default)]
    role: Text,
    /// Left where it lies until it is known to be the answer's: then decoded once.
    #[serde(default, borrow)]
    content: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    tool_name: Text,
    #[serde(default)]
    status: Text,
    #[serde(default)]
    severity: Text,
    #[serde(default)]
    message: Text,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    stats: Option<Value>,
}

/// A field that counts when it is a string; any other JSON value reads as absent.
#[derive(Default)]
struct Text(Option<String>);

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess};
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, v: &str) -> Result<Text, E> {
                Ok(Text(Some(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text, E> {
                Ok(Text(Some(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Parses one stdout line. `None` for a line that is not a JSON object (noise).
pub fn parse_line(line: &[u8]) -> Option<Event> {
    let (mut event, raw) = parse_line_raw(line)?;
    if let (Event::AssistantText(text), Some(raw)) = (&mut event, raw) {
        let raw = std::str::from_utf8(&line[raw]).expect("a range of a valid UTF-8 line");
        *text = rawtext::decode(raw);
    }
    Some(event)
}

/// [`parse_line`], with an assistant text left where it lies in `line` when it can be: the event
/// then carries no text, and the range is that of its JSON string literal in `line` (quotes
/// included), for the caller to decode where it wants it.
fn parse_line_raw(line: &[u8]) -> Option<(Event, Option<std::ops::Range<usize>>)> {
    // Only a whole object can be an event; this also skips a line the output cap cut, without
    // copying it.
    let bytes = line.trim_ascii();
    if !(bytes.starts_with(b"{") && bytes.ends_with(b"}")) {
        return None;
    }
    let lossy = String::from_utf8_lossy(bytes);
    let text = lossy.trim();
    if !text.starts_with('{') {
        return None;
    }
    // Read into fields, not a `Value`: an answer's text, as long as the output cap, is decoded
    // once, never copied out of a tree.
    let raw: RawEvent = serde_json::from_str(text).ok()?;
    let content = raw.content.map(|c| c.get()).filter(|c| c.starts_with('"'));
    // Where the text lies in `line`; nowhere when invalid UTF-8 made the text a copy.
    let range = match (&lossy, content) {
        (std::borrow::Cow::Borrowed(_), Some(c)) => {
            let start = c.as_ptr() as usize - line.as_ptr() as usize;
            Some(start..start + c.len())
        }
        _ => None,
    };
    let event = match raw.kind.0.as_deref()? {
        "init" => Event::Init {
            session_id: raw.session_id.0,
            model: raw.model.0,
        },
        "message" => match raw.role.0.as_deref() {
            Some("assistant") if range.is_some() => {
                return Some((Event::AssistantText(String::new()), range));
            }
            Some("assistant") => {
                Event::AssistantText(content.map(rawtext::decode).unwrap_or_default())
            }
            Some("user") => Event::UserMessage,
            _ => Event::Other,
        },
        "tool_use" => Event::ToolUse {
            name: raw.tool_name.0.unwrap_or_default(),
        },
        "tool_result" => Event::ToolResult {
            status: raw.status.0.unwrap_or_default(),
        },
        "error" => Event::Error {
            severity: raw.severity.0.unwrap_or_else(|| "error".into()),
            message: raw.message.0.unwrap_or_default(),
        },
        "result" => {
            let error = raw.error.as_ref().and_then(Value::as_object);
            let es = |key: &str| {
                error
                    .and_then(|e| e.get(key))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            Event::Result(ResultEvent {
                status: raw.status.0.unwrap_or_default(),
                error_type: es("type"),
                error_message: es("message"),
                stats: raw.stats,
            })
        }
        _ => Event::Other,
    };
    Some((event, None))
}

/// Reads the CLI's retry message from one stderr line: `Attempt 3 failed with status 429.
/// Retrying with backoff...`, `Attempt 2 failed. Retrying with backoff... Error: … fetch failed`,
/// and the final `Attempt 10 failed: …. Max attempts reached`.
pub fn retry_hint(line: &[u8]) -> Option<Hint> {
    let rest = line.trim_ascii().strip_prefix(b"Attempt ")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let attempt: u32 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b" failed")?;
    let status = rest.strip_prefix(b" with status ").and_then(|r| {
        let n = r.iter().take_while(|b| b.is_ascii_digit()).count();
        std::str::from_utf8(&r[..n]).ok()?.parse().ok()
    });
    let last = rest
        .windows(b"Max attempts reached".len())
        .any(|w| w == b"Max attempts reached");
    Some(Hint::Retry {
        attempt,
        status,
        last,
    })
}

/// Reads the progress [`Hint`] of one stdout line, keeping at most `tail` trailing characters:
/// the streamed text chunk or the tool called, read without building a JSON tree — much cheaper
/// than [`parse_line`] on large deltas, so progress keeps up with a flood instead of queueing it.
pub fn progress_hint(line: &[u8], tail: usize) -> Option<Hint> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
        #[serde(default, borrow)]
        role: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        content: Option<&'a serde_json::value::RawValue>,
        #[serde(default, borrow)]
        tool_name: Option<std::borrow::Cow<'a, str>>,
    }
    let bytes = line.trim_ascii();
    if !(bytes.starts_with(b"{") && bytes.ends_with(b"}")) {
        return None;
    }
    let raw: Raw<'_> = serde_json::from_slice(bytes).ok()?;
    match (raw.kind.as_ref(), raw.role.as_deref()) {
        ("message", Some("assistant")) => {
            // Counted and previewed where it lies: the text is never decoded into a buffer here.
            let content = raw.content.map_or("", |c| c.get());
            let (chars, tail) = match content.starts_with('"') {
                true => rawtext::count_and_tail(content, tail),
                false => (0, String::new()),
            };
            Some(Hint::Text { chars, tail })
        }
        ("tool_use", _) => Some(Hint::Tool(raw.tool_name.unwrap_or_default().into_owned())),
        _ => None,
    }
}

/// Every stream-json event of a run's stdout as JSON values, in order (`full_output`); lines
/// that are not a JSON object (noise, raw text) are left out.
pub fn all_events(stdout: &[u8]) -> Vec<serde_json::Value> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = line.trim_ascii();
            if !line.starts_with(b"{") {
                return None;
            }
            serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .filter(serde_json::Value::is_object)
        })
        .collect()
}

/// Everything read from one run's stdout, accumulated event by event.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// From `init`.
    pub session_id: Option<String>,
    /// From `init` (the requested model).
    pub model: Option<String>,
    /// All assistant text of the run, turns separated by a newline: what survives a failure.
    pub all_text: String,
    /// Where the current (last) model turn starts in `all_text`: moved by every `tool_use`,
    /// exactly as `-o json` builds `response`. An offset, not a copy: answers can be megabytes.
    pub last_turn_start: usize,
    /// Names of the tools the model called, in order.
    pub tools: Vec<String>,
    /// Non-fatal `error` events (severity, message).
    pub errors: Vec<(String, String)>,
    /// The `result` event, if the run got that far.
    pub result: Option<ResultEvent>,
    /// Lines that were not JSON events (CLI noise such as `/memory show` output).
    pub noise_lines: usize,
    /// Events seen.
    pub events: usize,
}

impl Transcript {
    /// Folds one stdout line in.
    pub fn push_line(&mut self, line: &[u8]) {
        match parse_line(line) {
            Some(event) => self.push(event),
            None => {
                if !line.iter().all(u8::is_ascii_whitespace) {
                    self.noise_lines += 1;
                }
            }
        }
    }

    /// Folds one event in.
    pub fn push(&mut self, event: Event) {
        let mut text = std::mem::take(&mut self.all_text);
        self.fold(event, &mut text);
        self.all_text = text;
    }

    /// Folds one event in, its text going to `text` (which stands for `all_text`).
    fn fold(&mut self, event: Event, text: &mut impl TextSink) {
        self.events += 1;
        match event {
            Event::Init { session_id, model } => {
                self.session_id = session_id.or(self.session_id.take());
                self.model = model.or(self.model.take());
            }
            Event::AssistantText(chunk) => text.push_str(&chunk),
            Event::ToolUse { name } => {
                if text.len() > 0 && !text.ends_with_newline() {
                    text.push_str("\n");
                }
                self.last_turn_start = text.len();
                self.tools.push(name);
            }
            Event::Error { severity, message } => self.errors.push((severity, message)),
            Event::Result(r) => self.result = Some(r),
            Event::UserMessage | Event::ToolResult { .. } | Event::Other => {}
        }
    }

    /// Parses a whole stdout buffer (lines split on `\n`, the last one even without it).
    pub fn from_stdout(stdout: &[u8]) -> Self {
        // The text is at most the output: one exact allocation instead of doubling growth, which
        // would hold up to twice a flood's size.
        let mut t = Transcript {
            all_text: String::with_capacity(stdout.len()),
            ..Transcript::default()
        };
        for line in stdout.split(|b| *b == b'\n') {
            if !line.is_empty() {
                t.push_line(line);
            }
        }
        t
    }

    /// Parses a whole stdout buffer exactly as [`Transcript::from_stdout`] does, building the text
    /// in the buffer itself: each line's text is written over lines already read, so the kept
    /// output and its text are never held side by side (a flood at the cap costs one cap of
    /// memory here, not two). A text that outgrows the bytes read so far (invalid UTF-8 becomes
    /// three-byte U+FFFD) moves to its own buffer from then on.
    pub fn from_stdout_owned(mut stdout: Vec<u8>) -> Self {
        let mut t = Transcript::default();
        let mut text = InPlace {
            len: 0,
            free_until: 0,
            spill: None,
        };
        let mut pos = 0;
        while pos < stdout.len() {
            let end = stdout[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(stdout.len(), |i| pos + i);
            let line = &stdout[pos..end];
            let parsed = match line.is_empty() {
                true => None,
                false => parse_line_raw(line),
            };
            if parsed.is_none() && !line.iter().all(u8::is_ascii_whitespace) {
                t.noise_lines += 1;
            }
            let line_start = pos;
            // From here on this line is read: its bytes may take text.
            pos = (end + 1).min(stdout.len());
            text.free_until = pos;
            match parsed {
                // An answer's text is decoded where it lies, into the front of the buffer.
                Some((_, Some(raw))) if text.spill.is_none() => {
                    let raw = line_start + raw.start..line_start + raw.end;
                    text.len += rawtext::decode_in_place(&mut stdout, raw, text.len);
                    t.events += 1;
                }
                Some((_, Some(raw))) => {
                    let raw = line_start + raw.start..line_start + raw.end;
                    let literal = std::str::from_utf8(&stdout[raw]).expect("a valid UTF-8 range");
                    let event = Event::AssistantText(rawtext::decode(literal));
                    t.fold(event, &mut (&mut text, &mut stdout));
                }
                Some((event, None)) => t.fold(event, &mut (&mut text, &mut stdout)),
                None => {}
            }
        }
        t.all_text = match text.spill {
            Some(spill) => spill,
            None => {
                stdout.truncate(text.len);
                stdout.shrink_to_fit();
                String::from_utf8(stdout).expect("only whole UTF-8 strings were written")
            }
        };
        t
    }

    /// The answer: the text of the last model turn, as `-o json` would put in `response`.
    pub fn answer(&self) -> &str {
        &self.all_text[self.last_turn_start..]
    }

    /// All text seen, when there is any: the partial answer reported with a failure (which cuts
    /// it, once, when it renders the failure: `error::clip`). Taken out: no copy is made.
    pub fn into_partial(self) -> Option<String> {
        (!self.all_text.is_empty()).then_some(self.all_text)
    }

    /// [`Transcript::answer`], taken out of the text in place: no copy of it is made.
    pub fn into_answer(self) -> String {
        let mut text = self.all_text;
        text.drain(..self.last_turn_start);
        text
    }
}

/// Where [`Transcript::fold`] appends text: a `String`, or the stdout buffer being parsed.
trait TextSink {
    fn len(&self) -> usize;
    fn ends_with_newline(&self) -> bool;
    fn push_str(&mut self, s: &str);
}

impl TextSink for String {
    fn len(&self) -> usize {
        String::len(self)
    }

    fn ends_with_newline(&self) -> bool {
        self.ends_with('\n')
    }

    fn push_str(&mut self, s: &str) {
        String::push_str(self, s)
    }
}

/// The text being built at the front of the stdout buffer, over lines already read.
struct InPlace {
    /// Text bytes at the buffer's front.
    len: usize,
    /// The buffer's bytes before this index are read and free to overwrite.
    free_until: usize,
    /// Once the text does not fit: the whole text so far, and all that follows.
    spill: Option<String>,
}

impl TextSink for (&mut InPlace, &mut Vec<u8>) {
    fn len(&self) -> usize {
        match &self.0.spill {
            Some(spill) => spill.len(),
            None => self.0.len,
        }
    }

    fn ends_with_newline(&self) -> bool {
        match &self.0.spill {
            Some(spill) => spill.ends_with('\n'),
            None => self.0.len > 0 && self.1[self.0.len - 1] == b'\n',
        }
    }

    fn push_str(&mut self, s: &str) {
        let (text, buf) = (&mut *self.0, &mut *self.1);
        if let Some(spill) = &mut text.spill {
            spill.push_str(s);
        } else if text.len + s.len() <= text.free_until {
            buf[text.len..text.len + s.len()].copy_from_slice(s.as_bytes());
            text.len += s.len();
        } else {
            let written = std::str::from_utf8(&buf[..text.len])
                .expect("only whole UTF-8 strings were written");
            let mut spill = String::with_capacity(written.len() + s.len());
            spill.push_str(written);
            spill.push_str(s);
            text.spill = Some(spill);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL_STREAM: &str = r#"{"type":"init","timestamp":"t","session_id":"s-1","model":"auto"}
{"type":"message","timestamp":"t","role":"user","content":"TOOLCALL please"}
{"type":"message","timestamp":"t","role":"assistant","content":"Let me list files.","delta":true}
{"type":"tool_use","timestamp":"t","tool_name":"list_directory","tool_id":"x","parameters":{"dir_path":"."}}
{"type":"tool_result","timestamp":"t","tool_id":"x","status":"success","output":"Directory is empty."}
{"type":"message","timestamp":"t","role":"assistant","content":"Hello","delta":true}
{"type":"message","timestamp":"t","role":"assistant","content":" there! How can I help?","delta":true}
{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":360,"models":{"m":{}}}}
"#;

    #[test]
    fn retry_lines_are_recognised() {
        let hint = |l: &str| retry_hint(l.as_bytes());
        assert_eq!(
            hint("Attempt 3 failed with status 429. Retrying with backoff... _ApiError: {}"),
            Some(Hint::Retry {
                attempt: 3,
                status: Some(429),
                last: false
            })
        );
        assert_eq!(
            hint("Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch failed"),
            Some(Hint::Retry { attempt: 2, status: None, last: false })
        );
        assert_eq!(
            hint("Attempt 10 failed: Resource has been exhausted (e.g. check quota).. Max attempts reached"),
            Some(Hint::Retry { attempt: 10, status: None, last: true })
        );
        assert_eq!(hint("    at Attempt 3 failed"), None);
        assert_eq!(hint("Attempts failed"), None);
    }

    /// Asserts that the in-place parse gives the same transcript as the copying one.
    fn assert_in_place_matches(stdout: &[u8]) {
        let a = Transcript::from_stdout(stdout);
        let b = Transcript::from_stdout_owned(stdout.to_vec());
        assert_eq!(a.all_text, b.all_text);
        assert_eq!(a.last_turn_start, b.last_turn_start);
        assert_eq!(
            (&a.session_id, &a.model, &a.tools, &a.errors, &a.result),
            (&b.session_id, &b.model, &b.tools, &b.errors, &b.result)
        );
        assert_eq!((a.noise_lines, a.events), (b.noise_lines, b.events));
    }

    #[test]
    fn in_place_parse_matches_the_copying_parse() {
        assert_in_place_matches(TOOL_STREAM.as_bytes());
        assert_in_place_matches(TOOL_STREAM.trim_end().as_bytes());
        assert_in_place_matches(b"");
        assert_in_place_matches(b"\n\n  \nnoise\r\n{\"type\":\"init\"}");
        // Tool calls between chunks: the newline before each new turn is written in place too.
        let turns = [
            r#"{"type":"message","role":"assistant","content":"a"}"#,
            r#"{"type":"tool_use","tool_name":"t1"}"#,
            r#"{"type":"tool_use","tool_name":"t2"}"#,
            r#"{"type":"message","role":"assistant","content":"b\n"}"#,
            r#"{"type":"tool_use","tool_name":"t3"}"#,
            r#"{"type":"message","role":"assistant","content":"\u00e9\n\tc"}"#,
            r#"{"type":"message","role":"assistant","content":"\"q\" \ud83d\ude00 \\ \ud800 end"}"#,
            r#"{"type":"message","role":"assistant","content":5}"#,
        ]
        .join("\n");
        assert_in_place_matches(turns.as_bytes());
    }

    #[test]
    fn in_place_text_that_outgrows_the_read_bytes_moves_out() {
        // Each invalid byte becomes a three-byte U+FFFD: this line's text is longer than the line.
        let mut out = br#"{"type":"message","role":"assistant","content":"ok "}"#.to_vec();
        out.push(b'\n');
        out.extend_from_slice(br#"{"type":"message","role":"assistant","content":""#);
        out.extend_from_slice(&[0xff; 300]);
        out.extend_from_slice(b"\"}\n");
        out.extend_from_slice(br#"{"type":"tool_use","tool_name":"t"}"#);
        out.extend_from_slice(b"\n");
        out.extend_from_slice(br#"{"type":"message","role":"assistant","content":"end"}"#);
        assert_in_place_matches(&out);
        let t = Transcript::from_stdout_owned(out);
        assert_eq!(t.all_text.chars().filter(|&c| c == '\u{fffd}').count(), 300);
        assert_eq!(t.answer(), "end");
    }

    #[test]
    fn answer_is_the_last_turn_only() {
        let t = Transcript::from_stdout(TOOL_STREAM.as_bytes());
        assert_eq!(t.answer(), "Hello there! How can I help?");
        assert_eq!(
            t.clone().into_partial().unwrap(),
            "Let me list files.\nHello there! How can I help?"
        );
        assert_eq!(t.session_id.as_deref(), Some("s-1"));
        assert_eq!(t.model.as_deref(), Some("auto"));
        assert_eq!(t.tools, vec!["list_directory"]);
        assert!(t.result.as_ref().unwrap().is_success());
        assert!(!t.result.as_ref().unwrap().nothing_was_sent());
    }

    #[test]
    fn noise_and_invalid_utf8_are_tolerated() {
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"type\":\"init\",\"session_id\":\"s\",\"model\":\"auto\"}\n");
        out.extend_from_slice(b"Memory is currently empty.\n");
        out.extend_from_slice(b"\xff\xfe garbage {not json\n");
        out.extend_from_slice(
            b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"caf\xc3\xa9 \xff\"}\n",
        );
        out.extend_from_slice(b"{\"type\":\"result\",\"status\":\"success\",\"stats\":{}}");
        let t = Transcript::from_stdout(&out);
        assert_eq!(t.noise_lines, 2);
        assert_eq!(t.answer(), "café \u{fffd}");
        assert!(
            t.result.is_some(),
            "a last line without newline still counts"
        );
    }

    #[test]
    fn dropped_input_is_recognised() {
        let line = br#"{"type":"result","status":"success","stats":{"total_tokens":0,"input_tokens":0,"models":{}}}"#;
        let Some(Event::Result(r)) = parse_line(line) else {
            panic!("not a result")
        };
        assert!(r.nothing_was_sent());
    }

    #[test]
    fn result_error_fields() {
        let line = br#"{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"},"stats":{}}"#;
        let Some(Event::Result(r)) = parse_line(line) else {
            panic!("not a result")
        };
        assert!(!r.is_success());
        assert_eq!(r.error_type.as_deref(), Some("FatalTurnLimitedError"));
        assert_eq!(
            r.error_message.as_deref(),
            Some("Reached max session turns")
        );
    }

    #[test]
    fn the_partial_answer_is_all_text_seen() {
        let mut t = Transcript::default();
        assert_eq!(t.clone().into_partial(), None);
        t.push(Event::AssistantText("a".repeat(300_000)));
        assert_eq!(t.clone().into_partial().map(|p| p.len()), Some(300_000));
    }

    #[test]
    fn progress_hints() {
        let line = br#"{"type":"message","timestamp":"t","role":"assistant","content":"h\u00e9llo world","delta":true}"#;
        assert_eq!(
            progress_hint(line, 5),
            Some(Hint::Text {
                chars: 11,
                tail: "world".into()
            })
        );
        let tool = br#"{"type":"tool_use","tool_name":"list_directory","tool_id":"x","parameters":{"a":[1,{"b":2}]}}"#;
        assert_eq!(
            progress_hint(tool, 5),
            Some(Hint::Tool("list_directory".into()))
        );
        assert_eq!(
            progress_hint(br#"{"type":"result","status":"success","stats":{}}"#, 5),
            None
        );
        assert_eq!(progress_hint(b"noise", 5), None);
    }

    #[test]
    fn unknown_event_types_are_ignored() {
        assert_eq!(
            parse_line(br#"{"type":"thought","x":1}"#),
            Some(Event::Other)
        );
        assert_eq!(parse_line(b"[1,2]"), None);
        assert_eq!(parse_line(br#"{"no_type":1}"#), None);
    }
}
