//! `settings.json` as the real CLI reads it: comments stripped (`strip-json-comments`, replaced by
//! spaces so positions stay put), then `JSON.parse`, whose errors are reported in V8's words
//! (Node 20; Node 22 appends ` (line L column C)`), then the check that the value is an object.
//! The message is the text after `Error in <path>: ` of the CLI's exit-52 report.

use serde_json::Value;

/// Parses a settings file's text, or returns the message the real CLI prints for it.
///
/// ```
/// use fake_gemini::settings::parse;
/// assert!(parse("// mine\n{\"model\": {\"name\": \"pro\"}}").is_ok());
/// assert_eq!(parse("{}}").unwrap_err(), "Unexpected non-whitespace character after JSON at position 2");
/// assert_eq!(parse("").unwrap_err(), "Unexpected end of JSON input");
/// assert_eq!(parse("[]").unwrap_err(), "Settings file is not a valid JSON object.");
/// ```
pub fn parse(text: &str) -> Result<Value, String> {
    let stripped = strip_comments(text);
    let units: Vec<u16> = stripped.encode_utf16().collect();
    if let Err(e) = (Parser {
        s: &units,
        pos: 0,
        depth: 0,
    })
    .document()
    {
        return Err(e.message(&units));
    }
    // The syntax is valid JSON, so serde agrees, except on what it refuses and V8 accepts (a lone
    // surrogate escape, nesting deeper than 128): such a file counts as empty settings.
    match serde_json::from_str::<Value>(&stripped) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("Settings file is not a valid JSON object.".into()),
        Err(_) => Ok(Value::Object(Default::default())),
    }
}

/// `strip-json-comments` with its default `whitespace: true`: `//` to the end of the line and
/// `/* … */` become spaces (other whitespace characters kept), strings are left alone.
pub fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // JavaScript's `replace(/\S/g, " ")`: per UTF-16 unit, with JavaScript's idea of a space.
    let blank = |s: &str| -> String {
        s.chars()
            .flat_map(|c| {
                if js_space(c) {
                    std::iter::repeat_n(c, 1)
                } else {
                    std::iter::repeat_n(' ', c.len_utf16())
                }
            })
            .collect()
    };
    let (mut in_string, mut offset, mut i) = (false, 0, 0);
    #[derive(PartialEq)]
    enum Comment {
        None,
        Line,
        Block,
    }
    let mut comment = Comment::None;
    while i < b.len() {
        let (c, next) = (b[i], b.get(i + 1).copied());
        if comment == Comment::None && c == b'"' {
            let backslashes = b[..i].iter().rev().take_while(|&&x| x == b'\\').count();
            if backslashes % 2 == 0 {
                in_string = !in_string;
            }
        }
        if in_string {
            i += 1;
            continue;
        }
        if comment == Comment::None && c == b'/' && next == Some(b'/') {
            out.push_str(&text[offset..i]);
            offset = i;
            comment = Comment::Line;
            i += 2;
            continue;
        } else if comment == Comment::Line && c == b'\r' && next == Some(b'\n') {
            i += 2;
            comment = Comment::None;
            out.push_str(&blank(&text[offset..i]));
            offset = i;
            continue;
        } else if comment == Comment::Line && c == b'\n' {
            comment = Comment::None;
            out.push_str(&blank(&text[offset..i]));
            offset = i;
        } else if comment == Comment::None && c == b'/' && next == Some(b'*') {
            out.push_str(&text[offset..i]);
            offset = i;
            comment = Comment::Block;
            i += 2;
            continue;
        } else if comment == Comment::Block && c == b'*' && next == Some(b'/') {
            i += 2;
            comment = Comment::None;
            out.push_str(&blank(&text[offset..i]));
            offset = i;
            continue;
        }
        i += 1;
    }
    if comment == Comment::None {
        out.push_str(&text[offset..]);
    } else {
        out.push_str(&blank(&text[offset..]));
    }
    out
}

/// JavaScript's `\s`, which is also what its `String.prototype.trim()` removes (WhiteSpace and
/// LineTerminator, the BOM included).
pub(crate) fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    ) || ('\u{2000}'..='\u{200a}').contains(&c)
}

/// Where `JSON.parse` gave up and which of V8's messages it chose.
#[derive(Debug)]
struct ParseError {
    /// The position in UTF-16 units.
    pos: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// A fixed message ending `in JSON at position N`.
    At(&'static str),
    /// The character at `pos` (or the end) where a value or a literal's next letter was due.
    Unexpected,
    NonWhitespaceAfter,
}

impl ParseError {
    fn message(&self, s: &[u16]) -> String {
        let at = |m: &str| format!("{m} in JSON at position {}", self.pos);
        match self.kind {
            Kind::At(m) => at(m),
            Kind::NonWhitespaceAfter => format!(
                "Unexpected non-whitespace character after JSON at position {}",
                self.pos
            ),
            Kind::Unexpected => match s.get(self.pos) {
                None => "Unexpected end of JSON input".into(),
                Some(&0x22) => at("Unexpected string"),
                Some(&c) if c == b'-' as u16 || (b'0' as u16..=b'9' as u16).contains(&c) => {
                    at("Unexpected number")
                }
                Some(&c) => {
                    let whole = String::from_utf16_lossy(s);
                    if ["NaN", "Infinity", "undefined", "[object Object]"].contains(&whole.as_str())
                    {
                        return format!("\"{whole}\" is not valid JSON");
                    }
                    let token = String::from_utf16_lossy(&[c]);
                    let (n, p) = (s.len(), self.pos);
                    const CONTEXT: usize = 10;
                    let text = |a: usize, b: usize| String::from_utf16_lossy(&s[a..b]);
                    if n < 2 * CONTEXT + 1 {
                        format!(
                            "Unexpected token '{token}', \"{}\" is not valid JSON",
                            text(0, n)
                        )
                    } else if p < CONTEXT {
                        format!(
                            "Unexpected token '{token}', \"{}\"... is not valid JSON",
                            text(0, p + CONTEXT)
                        )
                    } else if p < n - CONTEXT {
                        format!(
                            "Unexpected token '{token}', ...\"{}\"... is not valid JSON",
                            text(p - CONTEXT, p + CONTEXT)
                        )
                    } else {
                        format!(
                            "Unexpected token '{token}', ...\"{}\" is not valid JSON",
                            text(p - CONTEXT, n)
                        )
                    }
                }
            },
        }
    }
}

/// A validator that walks the text as V8's `JsonParser` does, failing where and how it fails.
struct Parser<'a> {
    s: &'a [u16],
    pos: usize,
    depth: usize,
}

/// Deeper nesting is not walked (V8 parses iteratively; this validator recurses): serde_json,
/// which refuses it, then decides.
const MAX_DEPTH: usize = 512;

type Step = Result<(), ParseError>;

impl Parser<'_> {
    fn peek(&self) -> Option<u16> {
        self.s.get(self.pos).copied()
    }

    fn fail(&self, kind: Kind) -> Step {
        Err(ParseError {
            pos: self.pos,
            kind,
        })
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(0x20 | 0x09 | 0x0a | 0x0d)) {
            self.pos += 1;
        }
    }

    fn is(&self, c: u8) -> bool {
        self.peek() == Some(c as u16)
    }

    fn digit(&self) -> bool {
        self.peek()
            .is_some_and(|c| (b'0' as u16..=b'9' as u16).contains(&c))
    }

    /// Skips whitespace, then requires `c` or fails with `message`.
    fn expect(&mut self, c: u8, message: &'static str) -> Step {
        self.skip_ws();
        if self.is(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(Kind::At(message))
        }
    }

    fn document(&mut self) -> Step {
        self.value()?;
        self.skip_ws();
        if self.peek().is_some() {
            return self.fail(Kind::NonWhitespaceAfter);
        }
        Ok(())
    }

    fn value(&mut self) -> Step {
        self.skip_ws();
        let Some(c) = self.peek() else {
            return self.fail(Kind::Unexpected);
        };
        match u8::try_from(c).unwrap_or(0) {
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'{' | b'[' if self.depth >= MAX_DEPTH => {
                self.pos = self.s.len();
                Ok(())
            }
            b'{' => {
                self.depth += 1;
                let r = self.object();
                self.depth -= 1;
                r
            }
            b'[' => {
                self.depth += 1;
                let r = self.array();
                self.depth -= 1;
                r
            }
            _ => self.fail(Kind::Unexpected),
        }
    }

    fn object(&mut self) -> Step {
        self.pos += 1;
        self.skip_ws();
        if self.is(b'}') {
            self.pos += 1;
            return Ok(());
        }
        let mut key_message = "Expected property name or '}'";
        loop {
            self.skip_ws();
            if !self.is(b'"') {
                return self.fail(Kind::At(key_message));
            }
            self.string()?;
            self.expect(b':', "Expected ':' after property name")?;
            self.value()?;
            self.skip_ws();
            if self.is(b',') {
                self.pos += 1;
                key_message = "Expected double-quoted property name";
                continue;
            }
            return self.expect(b'}', "Expected ',' or '}' after property value");
        }
    }

    fn array(&mut self) -> Step {
        self.pos += 1;
        self.skip_ws();
        if self.is(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_ws();
            if self.is(b',') {
                self.pos += 1;
                continue;
            }
            return self.expect(b']', "Expected ',' or ']' after array element");
        }
    }

    fn literal(&mut self, word: &str) -> Step {
        // The first letter matched already; each further one must follow, else the character
        // found (or the end) is the unexpected token.
        self.pos += 1;
        for w in word.bytes().skip(1) {
            if !self.is(w) {
                return self.fail(Kind::Unexpected);
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Step {
        if self.is(b'-') {
            self.pos += 1;
            if !self.digit() {
                return self.fail(Kind::At("No number after minus sign"));
            }
        }
        if self.is(b'0') {
            self.pos += 1;
            if self.digit() {
                return self.fail(Kind::Unexpected);
            }
        } else {
            while self.digit() {
                self.pos += 1;
            }
        }
        if self.is(b'.') {
            self.pos += 1;
            if !self.digit() {
                return self.fail(Kind::At("Unterminated fractional number"));
            }
            while self.digit() {
                self.pos += 1;
            }
        }
        if self.is(b'e') || self.is(b'E') {
            self.pos += 1;
            if self.is(b'-') || self.is(b'+') {
                self.pos += 1;
            }
            if !self.digit() {
                return self.fail(Kind::At("Exponent part is missing a number"));
            }
            while self.digit() {
                self.pos += 1;
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Step {
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else {
                return self.fail(Kind::At("Unterminated string"));
            };
            match c {
                0x22 => {
                    self.pos += 1;
                    return Ok(());
                }
                0x5c => {
                    self.pos += 1;
                    match self.peek() {
                        // The end, or a character beyond Latin-1: an unexpected token.
                        None => return self.fail(Kind::Unexpected),
                        Some(e) if e > 0xff => return self.fail(Kind::Unexpected),
                        Some(e) => match e as u8 {
                            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 1,
                            b'u' => {
                                for _ in 0..4 {
                                    self.pos += 1;
                                    if !self.peek().is_some_and(|h| {
                                        u8::try_from(h).is_ok_and(|h| h.is_ascii_hexdigit())
                                    }) {
                                        return self.fail(Kind::At("Bad Unicode escape"));
                                    }
                                }
                                self.pos += 1;
                            }
                            _ => return self.fail(Kind::At("Bad escaped character")),
                        },
                    }
                }
                c if c < 0x20 => {
                    return self.fail(Kind::At("Bad control character in string literal"))
                }
                _ => self.pos += 1,
            }
        }
    }
}

/// The machine's system settings file, where the CLI looks for it.
fn system_settings_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("GEMINI_CLI_SYSTEM_SETTINGS_PATH").filter(|p| !p.is_empty()) {
        return p.into();
    }
    if cfg!(target_os = "macos") {
        "/Library/Application Support/GeminiCli/settings.json".into()
    } else if cfg!(windows) {
        r"C:\ProgramData\gemini-cli\settings.json".into()
    } else {
        "/etc/gemini-cli/settings.json".into()
    }
}

/// The machine's system-defaults file, where the CLI looks for it.
fn system_defaults_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("GEMINI_CLI_SYSTEM_DEFAULTS_PATH").filter(|p| !p.is_empty()) {
        return p.into();
    }
    system_settings_path()
        .parent()
        .map(|d| d.join("system-defaults.json"))
        .unwrap_or_default()
}

/// The system settings file, then the system defaults file, each with its label in the CLI's
/// `Security Warning` and whether it is read (it passes [`crate::security`]'s check).
fn system_files() -> [(std::path::PathBuf, &'static str); 2] {
    [
        (system_settings_path(), "system settings"),
        (system_defaults_path(), "system defaults"),
    ]
}

/// The `Security Warning: Skipping …` lines the CLI prints for the system files it skips, system
/// settings first (observed on 0.61.0, as root and as an unprivileged user).
pub fn skipped_system_files() -> Vec<String> {
    system_files()
        .iter()
        .filter_map(|(path, label)| crate::security::skip_warning(path, label))
        .collect()
}

/// A settings file's value, `None` when it is missing, unreadable or does not parse; a system
/// file is read only when it passes the CLI's ownership and mode check.
fn read_layer(path: &std::path::Path, system: bool) -> Option<Value> {
    if system && crate::security::skip_warning(path, "").is_some() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    parse(&String::from_utf8_lossy(&bytes)).ok()
}

/// The value of the highest settings layer (the system's, the workspace's, the user's, the system
/// defaults) that `pick` finds a value in: how the CLI merges a setting without a merge strategy.
/// An unreadable file counts as empty, as it does for the CLI's merge; so does a system file the
/// CLI skips as insecure. `cwd: None` leaves the workspace layer out (what decides trust cannot
/// come from the workspace it decides on).
fn highest_layer<T>(
    cwd: Option<&std::path::Path>,
    pick: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    let [(system, _), (defaults, _)] = system_files();
    let user = crate::sys::home_dir().join(".gemini").join("settings.json");
    let workspace = cwd.map(|c| c.join(".gemini").join("settings.json"));
    let layers = [
        (Some(system), true),
        (workspace, false),
        (Some(user), false),
        (Some(defaults), true),
    ];
    layers.iter().find_map(|(path, system)| {
        let v = read_layer(path.as_ref()?, *system)?;
        pick(&v)
    })
}

/// Every settings layer's value the CLI reads in `cwd`, highest first (system, workspace, user,
/// system defaults); a missing, unreadable or skipped file is left out.
pub fn layer_values(cwd: &std::path::Path) -> Vec<Value> {
    let [(system, _), (defaults, _)] = system_files();
    let user = crate::sys::home_dir().join(".gemini").join("settings.json");
    [
        (system, true),
        (cwd.join(".gemini").join("settings.json"), false),
        (user, false),
        (defaults, true),
    ]
    .iter()
    .filter_map(|(path, system)| read_layer(path, *system))
    .collect()
}

/// `security.folderTrust.enabled` as the CLI merges it (system, user, system defaults), `true`
/// when none sets it: with `false` every folder is trusted.
pub fn folder_trust_enabled() -> bool {
    highest_layer(None, |v| v["security"]["folderTrust"]["enabled"].as_bool()).unwrap_or(true)
}

/// `general.defaultApprovalMode` as the CLI merges it, the mode a run without `--approval-mode`
/// or `--yolo` starts in (`yolo` there is ignored by the CLI).
pub fn default_approval_mode(cwd: &std::path::Path) -> Option<String> {
    highest_layer(Some(cwd), |v| {
        v["general"]["defaultApprovalMode"]
            .as_str()
            .map(String::from)
    })
    .filter(|m| m != "yolo")
}

/// `general.plan.enabled` as the CLI merges it, `true` when none sets it.
pub fn plan_enabled(cwd: &std::path::Path) -> bool {
    highest_layer(Some(cwd), |v| v["general"]["plan"]["enabled"].as_bool()).unwrap_or(true)
}

/// `general.sessionRetention.enabled` as the CLI merges its settings layers, `true` when none
/// sets it: whether a start runs the session clean-up.
pub fn session_retention_enabled(cwd: &std::path::Path) -> bool {
    highest_layer(Some(cwd), |v| {
        v["general"]["sessionRetention"]["enabled"].as_bool()
    })
    .unwrap_or(true)
}

/// `context.includeDirectoryTree` as the CLI merges it, `true` when none sets it: whether the
/// first request's context holds the workspace's folder structure (and so whether it is scanned).
pub fn include_directory_tree(cwd: &std::path::Path) -> bool {
    highest_layer(Some(cwd), |v| {
        v["context"]["includeDirectoryTree"].as_bool()
    })
    .unwrap_or(true)
}

/// Whether telemetry is on: `GEMINI_TELEMETRY_ENABLED` as the CLI parses a boolean flag (`true`
/// or `1`, `false` or `0`, anything else unset), else `telemetry.enabled` as the CLI merges it,
/// off when none sets it (0.61's `resolveTelemetrySettings`, read in its bundle).
pub fn telemetry_enabled(cwd: &std::path::Path) -> bool {
    let flag = std::env::var("GEMINI_TELEMETRY_ENABLED").ok();
    match flag
        .as_deref()
        .map(str::trim)
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("true" | "1") => true,
        Some("false" | "0") => false,
        _ => highest_layer(Some(cwd), |v| v["telemetry"]["enabled"].as_bool()).unwrap_or(false),
    }
}

/// Whether the merged `tools.allowed` is a non-empty list (it has no merge strategy: the highest
/// layer that sets it wins), which makes the CLI print the `--allowed-tools` deprecation warning.
pub fn tools_allowed_nonempty(cwd: &std::path::Path) -> bool {
    highest_layer(Some(cwd), |v| {
        v["tools"]["allowed"].as_array().map(|a| !a.is_empty())
    })
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages of Node 20's `JSON.parse` (V8 11.3), taken from `node -e`.
    #[test]
    #[expect(
        clippy::too_many_lines,
        reason = "a table of V8's JSON.parse messages, one row per input"
    )]
    fn errors_are_worded_and_placed_as_v8_does() {
        let table: &[(&str, &str)] = &[
            (
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}}}}"#,
                "Unexpected non-whitespace character after JSON at position 55",
            ),
            (r#"{"security":"#, "Unexpected end of JSON input"),
            (
                "{security:1}",
                "Expected property name or '}' in JSON at position 1",
            ),
            (
                r#"{"a":1,}"#,
                "Expected double-quoted property name in JSON at position 7",
            ),
            (
                "    \n{\"a\": tru}",
                "Unexpected token '}', \"    \n{\"a\": tru}\" is not valid JSON",
            ),
            (
                r#"{"a""#,
                "Expected ':' after property name in JSON at position 4",
            ),
            (
                r#"{"a" 1}"#,
                "Expected ':' after property name in JSON at position 5",
            ),
            (
                r#"{"a":1"#,
                "Expected ',' or '}' after property value in JSON at position 6",
            ),
            (
                r#"{"a":1 "b":2}"#,
                "Expected ',' or '}' after property value in JSON at position 7",
            ),
            (
                "[1 2]",
                "Expected ',' or ']' after array element in JSON at position 3",
            ),
            ("[1,", "Unexpected end of JSON input"),
            (r#"{"a":"x"#, "Unterminated string in JSON at position 7"),
            (
                "{\"a\":\"x\ty\"}",
                "Bad control character in string literal in JSON at position 7",
            ),
            (
                r#"{"a":"\q"}"#,
                "Bad escaped character in JSON at position 7",
            ),
            (
                r#"{"a":"\u12g4"}"#,
                "Bad Unicode escape in JSON at position 10",
            ),
            (
                r#"{"a":-}"#,
                "No number after minus sign in JSON at position 6",
            ),
            (r#"{"a":01}"#, "Unexpected number in JSON at position 6"),
            (
                r#"{"a":1.}"#,
                "Unterminated fractional number in JSON at position 7",
            ),
            (
                r#"{"a":1e}"#,
                "Exponent part is missing a number in JSON at position 7",
            ),
            (
                r#"{"a":1.5e+}"#,
                "Exponent part is missing a number in JSON at position 10",
            ),
            (r#"{"a":tr"}"#, "Unexpected string in JSON at position 7"),
            (r#"{"a":t1}"#, "Unexpected number in JSON at position 6"),
            ("nul", "Unexpected end of JSON input"),
            (
                r#"{"abcdefghijklmnopqrstuvwxyz": x}"#,
                r#"Unexpected token 'x', ..."tuvwxyz": x}" is not valid JSON"#,
            ),
            (
                r#"{"abcdefghijklmnopqrstuvwxyz": 1, "b": @, "cdefghijklmnopqrstuvwxyz": 2}"#,
                r#"Unexpected token '@', ...": 1, "b": @, "cdefgh"... is not valid JSON"#,
            ),
            ("x", r#"Unexpected token 'x', "x" is not valid JSON"#),
            ("", "Unexpected end of JSON input"),
            ("  ", "Unexpected end of JSON input"),
            (
                "\u{feff}{}",
                "Unexpected token '\u{feff}', \"\u{feff}{}\" is not valid JSON",
            ),
            (
                r#"{"a":[1,2,}"#,
                r#"Unexpected token '}', "{"a":[1,2,}" is not valid JSON"#,
            ),
            ("{,}", "Expected property name or '}' in JSON at position 1"),
            (
                r#"{"a":}"#,
                r#"Unexpected token '}', "{"a":}" is not valid JSON"#,
            ),
            (
                r#"{"é": 1} x"#,
                "Unexpected non-whitespace character after JSON at position 9",
            ),
            (
                r#"{"a": "😀"} @"#,
                "Unexpected non-whitespace character after JSON at position 12",
            ),
            (
                r#"{"a": 😀}"#,
                "Unexpected token '\u{fffd}', \"{\"a\": 😀}\" is not valid JSON",
            ),
            (
                r#"{"a":[]]}"#,
                "Expected ',' or '}' after property value in JSON at position 7",
            ),
            (
                r#"{"a":0x1}"#,
                "Expected ',' or '}' after property value in JSON at position 6",
            ),
            (r#"{"a":"\u"}"#, "Bad Unicode escape in JSON at position 8"),
            (
                "{\"a\":\"\u{1}\"}",
                "Bad control character in string literal in JSON at position 6",
            ),
            (
                r#"{"a":true false}"#,
                "Expected ',' or '}' after property value in JSON at position 10",
            ),
            (
                r#"{"a":nulL}"#,
                r#"Unexpected token 'L', "{"a":nulL}" is not valid JSON"#,
            ),
            (
                r#"{"a":[1,2,3,4,5,6,7,}"#,
                r#"Unexpected token '}', ..."3,4,5,6,7,}" is not valid JSON"#,
            ),
            (
                "x123456789012345678901234",
                r#"Unexpected token 'x', "x123456789"... is not valid JSON"#,
            ),
            (
                r#"{"ab":x,"cdefghijklmnopqrstuvwxyz":1}"#,
                r#"Unexpected token 'x', "{"ab":x,"cdefghi"... is not valid JSON"#,
            ),
            (
                r#"{"abcdefgh": x123456789}"#,
                r#"Unexpected token 'x', ..."bcdefgh": x123456789"... is not valid JSON"#,
            ),
            ("{", "Expected property name or '}' in JSON at position 1"),
            ("[", "Unexpected end of JSON input"),
            (r#"{"ab"#, "Unterminated string in JSON at position 4"),
            (r#"{"a":"\"#, "Unexpected end of JSON input"),
            (r#"{"a":"\u12"#, "Bad Unicode escape in JSON at position 10"),
            ("-", "No number after minus sign in JSON at position 1"),
            ("[1,]", r#"Unexpected token ']', "[1,]" is not valid JSON"#),
            ("NaN", r#""NaN" is not valid JSON"#),
            ("[object Object]", r#""[object Object]" is not valid JSON"#),
            ("null", "Settings file is not a valid JSON object."),
            ("1", "Settings file is not a valid JSON object."),
        ];
        for (input, want) in table {
            assert_eq!(parse(input).unwrap_err(), *want, "input {input:?}");
        }
    }

    /// Comments are blanked, positions kept (the CLI parses the stripped text).
    #[test]
    fn comments_are_blanked_in_place() {
        assert_eq!(strip_comments("{} // x\n"), "{}     \n");
        assert_eq!(strip_comments("/* a\nb */{}"), "    \n    {}");
        assert_eq!(
            strip_comments(r#"{"u": "http://x"}"#),
            r#"{"u": "http://x"}"#
        );
        assert_eq!(strip_comments("{\"a\\\"//\": 1}"), "{\"a\\\"//\": 1}");
        assert_eq!(strip_comments("{}\r\n// é\r\n"), "{}\r\n    \r\n");
        assert_eq!(
            parse("// c\n{\"a\": tru}").unwrap_err(),
            "Unexpected token '}', \"    \n{\"a\": tru}\" is not valid JSON"
        );
        assert_eq!(
            parse("{\"a\": 1} /* open").unwrap()["a"],
            serde_json::json!(1)
        );
    }
}

#[cfg(test)]
mod retention_tests {
    use super::*;

    /// One test changes HOME and the settings variables for its process (nextest runs each test
    /// in a process of its own).
    #[test]
    fn retention_follows_the_layers_the_cli_merges() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let defaults = home.path().join("system-defaults.json");
        std::env::set_var("HOME", home.path());
        std::env::set_var(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            home.path().join("none.json"),
        );
        std::env::set_var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", &defaults);
        assert!(
            session_retention_enabled(ws.path()),
            "on unless a layer says otherwise"
        );
        std::fs::write(
            &defaults,
            r#"{"general": {"sessionRetention": {"enabled": false}}}"#,
        )
        .unwrap();
        assert!(
            session_retention_enabled(ws.path()),
            "a system defaults file in a temp directory fails the CLI's ownership and mode check \
             and is skipped"
        );
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"{"general": {"sessionRetention": {"enabled": false}}}"#,
        )
        .unwrap();
        assert!(
            !session_retention_enabled(ws.path()),
            "off in the user's settings"
        );
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"// the user's
{"general": {"sessionRetention": {"enabled": true}}}"#,
        )
        .unwrap();
        assert!(
            session_retention_enabled(ws.path()),
            "on in the user's settings"
        );
        std::fs::create_dir_all(ws.path().join(".gemini")).unwrap();
        std::fs::write(
            ws.path().join(".gemini/settings.json"),
            r#"{"general": {"sessionRetention": {"enabled": false}}}"#,
        )
        .unwrap();
        assert!(
            !session_retention_enabled(ws.path()),
            "the workspace's win over the user's"
        );
    }
}
