//! The JSON in prose: one pass over an answer finds, in start order, every balanced `{…}`/`[…]`
//! span that is a JSON value and lies inside no larger one that is, by the grammar serde_json
//! reads. Nothing is parsed, and memory is about one byte per open bracket however deep they nest.

use std::ops::{ControlFlow, Range};

use super::build::number_in_range;

/// Deepest nesting serde_json reads (its recursion limit): a span nesting deeper is not JSON.
pub(crate) const MAX_NESTING: usize = 127;

/// A balanced span, as the scan finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Span {
    /// JSON by serde_json's grammar, inside no larger JSON span; reported in start order.
    Json(Range<usize>),
    /// Not JSON; reported when it closes, so not in start order.
    NotJson(Range<usize>),
}

/// Reports the spans of `text` to `each` until it breaks.
///
/// Brackets pair as they always did here: quotes are tracked only inside a bracket (prose's
/// apostrophes cannot derail the scan), and a mismatched closer or a raw newline inside a string
/// drops every open span. On top of that pairing, the open brackets that can still be JSON (at
/// most [`MAX_NESTING`], the innermost ones) each follow JSON's grammar at their own level; a
/// JSON span is reported once it is known that no open bracket around it can still be JSON.
pub(crate) fn scan(text: &str, each: impl FnMut(Span) -> ControlFlow<()>) -> ControlFlow<()> {
    let mut scan = Scan {
        text,
        each,
        opens: Opens::default(),
        levels: Vec::new(),
        token: Token::None,
        in_string: false,
        escaped: false,
    };
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if scan.in_string {
            scan.string_byte(i, b)?;
        } else {
            scan.byte(i, b)?;
        }
    }
    scan.drop_levels(scan.levels.len(), text.len())
}

/// Calls `each` with every balanced span directly inside `from..to`, a stretch of one JSON array's
/// or object's contents (so brackets and strings in it are JSON's).
pub(crate) fn for_each_child(
    text: &str,
    from: usize,
    to: usize,
    mut each: impl FnMut(Range<usize>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let (mut depth, mut start) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in text.as_bytes()[from..to].iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                if depth == 0 {
                    start = from + i;
                }
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    each(start..from + i + 1)?;
                }
            }
            _ => {}
        }
    }
    ControlFlow::Continue(())
}

/// What a JSON array or object expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    ArrayFirst,
    ArrayItem,
    ArrayNext,
    ObjectFirst,
    ObjectKey,
    Colon,
    ObjectValue,
    ObjectNext,
}

impl Expect {
    fn takes_value(self) -> bool {
        matches!(
            self,
            Expect::ArrayFirst | Expect::ArrayItem | Expect::ObjectValue
        )
    }

    fn takes_key(self) -> bool {
        matches!(self, Expect::ObjectFirst | Expect::ObjectKey)
    }

    fn after_value(self) -> Expect {
        if matches!(self, Expect::ObjectValue) {
            Expect::ObjectNext
        } else {
            Expect::ArrayNext
        }
    }

    fn takes_close(self, close: u8) -> bool {
        match close {
            b']' => matches!(self, Expect::ArrayFirst | Expect::ArrayNext),
            _ => matches!(self, Expect::ObjectFirst | Expect::ObjectNext),
        }
    }
}

/// An open bracket that can still be JSON.
struct Level {
    start: usize,
    expect: Expect,
    /// A JSON span closed directly inside it: reported if this one turns out not to be JSON.
    has_children: bool,
}

/// Inside a string of a level that can still be JSON: what its escapes allow next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    Plain,
    /// After `\`; `low`: a high surrogate escape came before, so only `u` may follow.
    Backslash {
        low: bool,
    },
    Hex {
        left: u8,
        value: u16,
        low: bool,
    },
    /// After a high surrogate escape: serde_json wants its low half next.
    NeedLow,
}

/// Where a number is in JSON's number grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ExpSign,
    Exp,
}

/// The token in progress at the innermost level, when that level can still be JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    None,
    Str {
        key: bool,
        escape: Escape,
    },
    Number {
        start: usize,
        at: Number,
        exponent: bool,
    },
    Literal {
        rest: &'static [u8],
    },
}

struct Scan<'t, F> {
    text: &'t str,
    each: F,
    /// Every open bracket.
    opens: Opens,
    /// The innermost open brackets that can still be JSON (an outer one that cannot makes every
    /// one around it unable too, so these are always the top of `opens`).
    levels: Vec<Level>,
    token: Token,
    in_string: bool,
    escaped: bool,
}

impl<F: FnMut(Span) -> ControlFlow<()>> Scan<'_, F> {
    fn string_byte(&mut self, i: usize, b: u8) -> ControlFlow<()> {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
        } else if b == b'\n' {
            // JSON strings hold no raw newline: nothing open here is JSON.
            self.in_string = false;
            return self.clear(i);
        }
        if let Token::Str { key, escape } = self.token {
            match next_escape(escape, b) {
                Some(Escape::Plain) if b == b'"' && escape == Escape::Plain => {
                    self.token = Token::None;
                    let top = self
                        .levels
                        .last_mut()
                        .expect("a string token has its level");
                    top.expect = if key {
                        Expect::Colon
                    } else {
                        top.expect.after_value()
                    };
                }
                Some(escape) => self.token = Token::Str { key, escape },
                None => return self.drop_levels(self.levels.len(), i),
            }
        }
        ControlFlow::Continue(())
    }

    fn byte(&mut self, i: usize, b: u8) -> ControlFlow<()> {
        if !self.levels.is_empty() && self.token != Token::None && self.token_takes(i, b)? {
            return ControlFlow::Continue(());
        }
        match b {
            b'{' | b'[' => self.open(i, b),
            b'}' | b']' => self.close(i, b),
            b'"' if !self.opens.is_empty() => {
                self.in_string = true;
                if self.levels.is_empty() {
                    return ControlFlow::Continue(());
                }
                self.level_byte(i, b)
            }
            _ if !self.levels.is_empty() => self.level_byte(i, b),
            _ => ControlFlow::Continue(()),
        }
    }

    /// Feeds a number or literal in progress; `false` when `b` is not part of it (it ended).
    fn token_takes(&mut self, i: usize, b: u8) -> ControlFlow<(), bool> {
        match self.token {
            Token::Literal { rest } => {
                if rest.first() == Some(&b) {
                    self.token = Token::Literal { rest: &rest[1..] };
                    if rest.len() == 1 {
                        self.value_done();
                    }
                    return ControlFlow::Continue(true);
                }
                self.drop_levels(self.levels.len(), i)?;
                ControlFlow::Continue(false)
            }
            Token::Number {
                start,
                at,
                exponent,
            } => {
                if let Some(next) = next_number(at, b) {
                    let exponent = exponent || next == Number::E;
                    self.token = Token::Number {
                        start,
                        at: next,
                        exponent,
                    };
                    return ControlFlow::Continue(true);
                }
                let text = &self.text[start..i];
                let complete =
                    matches!(at, Number::Zero | Number::Int | Number::Frac | Number::Exp)
                        && !(at == Number::Zero && b.is_ascii_digit());
                // Only an exponent or hundreds of digits can leave the double range.
                let in_range = !(exponent || text.len() > 300) || number_in_range(text);
                if complete && in_range {
                    self.value_done();
                } else {
                    self.drop_levels(self.levels.len(), i)?;
                }
                ControlFlow::Continue(false)
            }
            Token::Str { .. } | Token::None => ControlFlow::Continue(false),
        }
    }

    /// A byte outside strings and tokens, at a level that can still be JSON.
    fn level_byte(&mut self, i: usize, b: u8) -> ControlFlow<()> {
        let top = self.levels.last_mut().expect("levels are not empty");
        let expect = top.expect;
        let next = match b {
            b' ' | b'\t' | b'\n' | b'\r' => return ControlFlow::Continue(()),
            b'"' if expect.takes_key() || expect.takes_value() => {
                self.token = Token::Str {
                    key: expect.takes_key(),
                    escape: Escape::Plain,
                };
                return ControlFlow::Continue(());
            }
            b',' if expect == Expect::ArrayNext => Expect::ArrayItem,
            b',' if expect == Expect::ObjectNext => Expect::ObjectKey,
            b':' if expect == Expect::Colon => Expect::ObjectValue,
            b'-' | b'0'..=b'9' if expect.takes_value() => {
                let at = match b {
                    b'-' => Number::Minus,
                    b'0' => Number::Zero,
                    _ => Number::Int,
                };
                self.token = Token::Number {
                    start: i,
                    at,
                    exponent: false,
                };
                return ControlFlow::Continue(());
            }
            b't' | b'f' | b'n' if expect.takes_value() => {
                let rest: &'static [u8] = match b {
                    b't' => b"rue",
                    b'f' => b"alse",
                    _ => b"ull",
                };
                self.token = Token::Literal { rest };
                return ControlFlow::Continue(());
            }
            _ => return self.drop_levels(self.levels.len(), i),
        };
        top.expect = next;
        ControlFlow::Continue(())
    }

    fn value_done(&mut self) {
        self.token = Token::None;
        let top = self.levels.last_mut().expect("a value has its level");
        top.expect = top.expect.after_value();
    }

    fn open(&mut self, i: usize, b: u8) -> ControlFlow<()> {
        match self.levels.last_mut() {
            Some(top) if top.expect.takes_value() => top.expect = top.expect.after_value(),
            Some(_) => self.drop_levels(self.levels.len(), i)?,
            None => {}
        }
        self.opens.push(i, b == b'{');
        self.levels.push(Level {
            start: i,
            expect: if b == b'{' {
                Expect::ObjectFirst
            } else {
                Expect::ArrayFirst
            },
            has_children: false,
        });
        if self.levels.len() > MAX_NESTING {
            self.drop_levels(1, i)?;
        }
        ControlFlow::Continue(())
    }

    fn close(&mut self, i: usize, b: u8) -> ControlFlow<()> {
        let Some(brace) = self.opens.top_is_brace() else {
            return ControlFlow::Continue(());
        };
        if brace != (b == b'}') {
            return self.clear(i);
        }
        if self
            .levels
            .last()
            .is_some_and(|top| self.token != Token::None || !top.expect.takes_close(b))
        {
            self.drop_levels(self.levels.len(), i)?;
        }
        let span = self.opens.pop()..i + 1;
        if self.levels.pop().is_none() {
            return (self.each)(Span::NotJson(span));
        }
        match self.levels.last_mut() {
            Some(parent) => {
                parent.has_children = true;
                ControlFlow::Continue(())
            }
            None => (self.each)(Span::Json(span)),
        }
    }

    /// Nothing open can close any more (a mismatched closer, a newline in a string).
    fn clear(&mut self, i: usize) -> ControlFlow<()> {
        self.drop_levels(self.levels.len(), i)?;
        self.opens.clear();
        ControlFlow::Continue(())
    }

    /// The outermost `n` levels cannot be JSON after all (found at byte `i`): the JSON spans that
    /// closed directly inside them are now the largest, so they are reported, in start order.
    fn drop_levels(&mut self, n: usize, i: usize) -> ControlFlow<()> {
        for j in 0..n {
            if self.levels[j].has_children {
                let end = self.levels.get(j + 1).map_or(i, |inner| inner.start);
                let each = &mut self.each;
                for_each_child(self.text, self.levels[j].start + 1, end, |span| {
                    each(Span::Json(span))
                })?;
            }
        }
        if n == self.levels.len() {
            self.token = Token::None;
        }
        self.levels.drain(..n);
        ControlFlow::Continue(())
    }
}

/// The escape state after byte `b` of a string; `None` when serde_json would refuse the string.
fn next_escape(escape: Escape, b: u8) -> Option<Escape> {
    match escape {
        Escape::Plain => match b {
            b'\\' => Some(Escape::Backslash { low: false }),
            0..=0x1f => None,
            _ => Some(Escape::Plain),
        },
        Escape::Backslash { low: true } => (b == b'u').then_some(Escape::Hex {
            left: 4,
            value: 0,
            low: true,
        }),
        Escape::Backslash { low: false } => match b {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(Escape::Plain),
            b'u' => Some(Escape::Hex {
                left: 4,
                value: 0,
                low: false,
            }),
            _ => None,
        },
        Escape::Hex { left, value, low } => {
            let digit = (b as char).to_digit(16)? as u16;
            let value = value << 4 | digit;
            if left > 1 {
                return Some(Escape::Hex {
                    left: left - 1,
                    value,
                    low,
                });
            }
            let is_low = (0xdc00..=0xdfff).contains(&value);
            match (low, is_low, (0xd800..=0xdbff).contains(&value)) {
                (true, true, _) => Some(Escape::Plain),
                (true, false, _) | (false, true, _) => None,
                (false, false, true) => Some(Escape::NeedLow),
                (false, false, false) => Some(Escape::Plain),
            }
        }
        Escape::NeedLow => (b == b'\\').then_some(Escape::Backslash { low: true }),
    }
}

/// The number state after byte `b`; `None` when `b` is not part of the number.
fn next_number(at: Number, b: u8) -> Option<Number> {
    match (at, b) {
        (Number::Minus, b'0') => Some(Number::Zero),
        (Number::Minus, b'1'..=b'9') => Some(Number::Int),
        (Number::Int, b'0'..=b'9') => Some(Number::Int),
        (Number::Zero | Number::Int, b'.') => Some(Number::Dot),
        (Number::Dot | Number::Frac, b'0'..=b'9') => Some(Number::Frac),
        (Number::Zero | Number::Int | Number::Frac, b'e' | b'E') => Some(Number::E),
        (Number::E, b'+' | b'-') => Some(Number::ExpSign),
        (Number::E | Number::ExpSign | Number::Exp, b'0'..=b'9') => Some(Number::Exp),
        _ => None,
    }
}

/// A stack of open brackets at about a byte each, or less: each entry is a run of `count` opens
/// of one kind, each its distance from the one below, as varints whose first byte is marked so
/// they read from the end (the value, whose lowest bit says a count comes before it). Runs are
/// what a hostile answer is made of: 30 MiB of `{` is one entry, not 30 MiB of them.
#[derive(Default)]
struct Opens {
    bytes: Vec<u8>,
    /// Start and kind of the top open.
    top: Option<(usize, bool)>,
}

/// One entry of [`Opens`].
#[derive(Clone, Copy)]
struct Run {
    distance: u64,
    brace: bool,
    count: u64,
}

impl Opens {
    fn is_empty(&self) -> bool {
        self.top.is_none()
    }

    fn top_is_brace(&self) -> Option<bool> {
        self.top.map(|(_, brace)| brace)
    }

    fn push(&mut self, start: usize, brace: bool) {
        if let Some((top, top_brace)) = self.top {
            let (run, at) = self.last();
            if top_brace == brace && run.distance == (start - top) as u64 {
                self.bytes.truncate(at);
                self.write(Run {
                    count: run.count + 1,
                    ..run
                });
                self.top = Some((start, brace));
                return;
            }
        }
        let below = self.top.map_or(0, |(s, _)| s);
        self.write(Run {
            distance: (start - below) as u64,
            brace,
            count: 1,
        });
        self.top = Some((start, brace));
    }

    /// Removes the top open and returns its start.
    fn pop(&mut self) -> usize {
        let (start, _) = self.top.expect("pop of an empty stack");
        let (run, at) = self.last();
        self.bytes.truncate(at);
        let below = start - run.distance as usize;
        self.top = if run.count > 1 {
            self.write(Run {
                count: run.count - 1,
                ..run
            });
            Some((below, run.brace))
        } else if self.bytes.is_empty() {
            None
        } else {
            Some((below, self.last().0.brace))
        };
        start
    }

    fn write(&mut self, run: Run) {
        if run.count > 1 {
            push_varint(&mut self.bytes, run.count - 2);
        }
        let value = run.distance << 2 | u64::from(run.brace) << 1 | u64::from(run.count > 1);
        push_varint(&mut self.bytes, value);
    }

    /// The last entry and where its bytes begin.
    fn last(&self) -> (Run, usize) {
        let (value, at) = varint_before(&self.bytes, self.bytes.len());
        let (distance, brace) = (value >> 2, value & 2 != 0);
        if value & 1 == 0 {
            return (
                Run {
                    distance,
                    brace,
                    count: 1,
                },
                at,
            );
        }
        let (count, at) = varint_before(&self.bytes, at);
        (
            Run {
                distance,
                brace,
                count: count + 2,
            },
            at,
        )
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.top = None;
    }
}

/// Appends `value` as a varint whose first byte is marked.
fn push_varint(bytes: &mut Vec<u8>, mut value: u64) {
    let mut groups = [0u8; 10];
    let mut n = 0;
    loop {
        groups[n] = (value & 0x7f) as u8;
        n += 1;
        value >>= 7;
        if value == 0 {
            break;
        }
    }
    bytes.push(groups[n - 1] | 0x80);
    bytes.extend(groups[..n - 1].iter().rev());
}

/// The varint that ends at `end`, and where it begins.
fn varint_before(bytes: &[u8], end: usize) -> (u64, usize) {
    let (mut value, mut shift) = (0u64, 0);
    for (at, &b) in bytes[..end].iter().enumerate().rev() {
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 != 0 {
            return (value, at);
        }
    }
    unreachable!("every varint starts with a marked byte")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn spans(text: &str) -> (Vec<&str>, Vec<&str>) {
        let (mut json, mut not) = (Vec::new(), Vec::new());
        let _ = scan(text, |span| {
            match span {
                Span::Json(r) => json.push(&text[r]),
                Span::NotJson(r) => not.push(&text[r]),
            }
            ControlFlow::Continue(())
        });
        (json, not)
    }

    #[rstest]
    #[case("no brackets", &[], &[])]
    #[case("see [1] then {\"a\":1}", &["[1]", "{\"a\":1}"], &[])]
    #[case("{\"a\":[1,{\"b\":2}]}", &["{\"a\":[1,{\"b\":2}]}"], &[])]
    #[case("{\"s\":\"} ] { [\"}", &["{\"s\":\"} ] { [\"}"], &[])]
    #[case("{\"s\":\"a\\\"}\"}", &["{\"s\":\"a\\\"}\"}"], &[])]
    #[case("it's \"quoted\" {\"a\":1}", &["{\"a\":1}"], &[])]
    #[case("{ oops ] {\"a\":1}", &["{\"a\":1}"], &[])]
    #[case("[\"unterminated\n{\"a\":1}", &["{\"a\":1}"], &[])]
    #[case("[[[", &[], &[])]
    #[case("]]] {}", &["{}"], &[])]
    #[case("héllo {\"é\":\"ü\"} wörld", &["{\"é\":\"ü\"}"], &[])]
    #[case("[x]", &[], &["[x]"])]
    #[case("[[1], x, {\"a\": [2]}]", &["[1]", "{\"a\": [2]}"], &["[[1], x, {\"a\": [2]}]"])]
    #[case("[[1],[2] [3]]", &["[1]", "[2]", "[3]"], &["[[1],[2] [3]]"])]
    #[case("{[1]}", &["[1]"], &["{[1]}"])]
    #[case("[1,]", &[], &["[1,]"])]
    #[case("[01]", &[], &["[01]"])]
    #[case("[1e400, [2]]", &["[2]"], &["[1e400, [2]]"])]
    #[case("[1e300]", &["[1e300]"], &[])]
    #[case("[\"\\ud800\"]", &[], &["[\"\\ud800\"]"])]
    #[case("[\"\\ud83d\\ude00\", \"\\u00e9\"]", &["[\"\\ud83d\\ude00\", \"\\u00e9\"]"], &[])]
    #[case("[\"\\udc00\"]", &[], &["[\"\\udc00\"]"])]
    #[case("[\"\\x\"]", &[], &["[\"\\x\"]"])]
    #[case("[\"a\tb\"]", &[], &["[\"a\tb\"]"])]
    #[case("[true, false, null, -0.5e+3]", &["[true, false, null, -0.5e+3]"], &[])]
    #[case("[tru]", &[], &["[tru]"])]
    #[case("[truex]", &[], &["[truex]"])]
    #[case("{\"a\" : 1 , \"b\":{}}", &["{\"a\" : 1 , \"b\":{}}"], &[])]
    #[case("{\"a\" 1}", &[], &["{\"a\" 1}"])]
    #[case("{1:2}", &[], &["{1:2}"])]
    fn json_spans_are_the_largest_and_in_start_order(
        #[case] text: &str,
        #[case] json: &[&str],
        #[case] not: &[&str],
    ) {
        let (got_json, got_not) = spans(text);
        assert_eq!(got_json, json, "JSON spans of {text:?}");
        assert_eq!(got_not, not, "other spans of {text:?}");
    }

    #[test]
    fn nesting_past_serde_jsons_limit_is_not_json() {
        let at = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert!(serde_json::from_str::<serde_json::Value>(&at).is_ok());
        assert_eq!(spans(&at).0, [at.as_str()]);
        let over = format!("[{at}]");
        assert!(serde_json::from_str::<serde_json::Value>(&over).is_err());
        let (json, not) = spans(&over);
        assert_eq!(json, [at.as_str()]);
        assert_eq!(not, [over.as_str()]);
    }

    #[test]
    fn deep_nesting_is_scanned_in_one_pass() {
        let text = format!("{}{}", "[".repeat(1 << 20), "]".repeat(1 << 20));
        let (json, not) = spans(&text);
        assert_eq!(json.len(), 1);
        assert_eq!(json[0].len(), 2 * MAX_NESTING);
        assert_eq!(not.len(), (1 << 20) - MAX_NESTING);
        assert_eq!(not.last().map(|s| s.len()), Some(text.len()));
    }

    #[test]
    fn the_open_stack_reads_back_what_was_pushed() {
        let mut opens = Opens::default();
        let starts = [0usize, 1, 2, 200, 70_000, 70_001, 1 << 40];
        for (k, &s) in starts.iter().enumerate() {
            opens.push(s, k % 2 == 0);
        }
        for (k, &s) in starts.iter().enumerate().rev() {
            assert_eq!(opens.top_is_brace(), Some(k % 2 == 0));
            assert_eq!(opens.pop(), s);
        }
        assert!(opens.is_empty());
    }

    #[test]
    fn runs_of_opens_read_back_and_take_a_few_bytes() {
        let mut opens = Opens::default();
        let mut pushed = Vec::new();
        // A run of braces a byte apart, one of brackets two apart, then alternating kinds.
        for s in 0..100_000 {
            pushed.push((s, true));
        }
        for k in 0..1000 {
            pushed.push((100_000 + 2 * k, false));
        }
        for k in 0..10 {
            pushed.push((200_000 + 3 * k, k % 2 == 0));
        }
        for &(s, brace) in &pushed {
            opens.push(s, brace);
        }
        assert!(opens.bytes.len() < 64, "{} bytes", opens.bytes.len());
        for &(s, brace) in pushed.iter().rev() {
            assert_eq!(opens.top_is_brace(), Some(brace));
            assert_eq!(opens.pop(), s);
        }
        assert!(opens.is_empty());
        // Pushes after pops continue a run that was cut short.
        for s in [5, 6, 7] {
            opens.push(s, true);
        }
        assert_eq!(opens.pop(), 7);
        opens.push(8, true);
        assert_eq!(opens.pop(), 8);
        assert_eq!(opens.pop(), 6);
        assert_eq!(opens.pop(), 5);
        assert!(opens.is_empty());
    }
}
