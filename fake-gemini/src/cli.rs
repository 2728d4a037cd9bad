//! The command-line surface of Gemini CLI 0.61 as yargs parses it, from the option table
//! (`options`): values, `nargs`, arrays, short groups, `--`, the positional query, strict
//! unknown-argument errors, choices and coercions, the CLI's own conflict checks, the deprecation
//! warnings, and the help text of an older emulated CLI without the flags it did not have yet.

use std::collections::BTreeMap;

use crate::options::{self, Coerce};
use crate::{ids, texts};

pub use crate::options::{Flag, Kind, FLAGS};

/// The subcommands listed by `--help`; fake-gemini does not emulate them.
pub const COMMANDS: &[&str] = &[
    "mcp",
    "extensions",
    "extension",
    "skills",
    "skill",
    "hooks",
    "hook",
    "gemma",
];

/// A parsed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A boolean flag.
    Bool(bool),
    /// A string flag (the last occurrence wins).
    Str(String),
    /// An array flag, commas already split.
    Array(Vec<String>),
}

/// The parsed command line.
#[derive(Debug, Default, Clone)]
pub struct Args {
    /// Options by long name.
    pub values: BTreeMap<&'static str, Value>,
    /// The positional query words (`gemini [query..]`).
    pub query: Vec<String>,
    /// String options given more than once: an array to yargs, which the CLI then reads as it
    /// reads no format (`-o json -o stream-json` prints text); `values` keeps the last.
    pub repeated: std::collections::BTreeSet<&'static str>,
}

/// An argument error: the message line printed before the usage text (exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

/// A `major.minor.patch` CLI version.
pub type Version = (u32, u32, u32);

/// Parses `0.61.0` (a pre-release suffix such as `-preview.1` is ignored).
pub fn parse_version(s: &str) -> Option<Version> {
    let core = s.trim().split(['-', '+']).next()?;
    let mut it = core.split('.').map(|p| p.parse::<u32>().ok());
    let v = (
        it.next()??,
        it.next().flatten().unwrap_or(0),
        it.next().flatten().unwrap_or(0),
    );
    Some(v)
}

impl Args {
    /// A boolean option (absent = false).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(Value::Bool(true)))
    }
    /// Whether a boolean option was given at all (`--sandbox=false` counts).
    pub fn bool_given(&self, name: &str) -> Option<bool> {
        match self.values.get(name) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }
    /// A string option.
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.values.get(name) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }
    /// A string option that is present and not empty (yargs truthiness).
    pub fn nonempty(&self, name: &str) -> Option<&str> {
        self.str(name).filter(|s| !s.is_empty())
    }
    /// An array option (absent = empty).
    pub fn array(&self, name: &str) -> &[String] {
        match self.values.get(name) {
            Some(Value::Array(v)) => v,
            _ => &[],
        }
    }
    /// The positional query joined as yargs does (`query..` joined by spaces).
    pub fn query_text(&self) -> Option<String> {
        if self.query.is_empty() {
            None
        } else {
            Some(self.query.join(" "))
        }
    }
}

/// yargs-parser's `negative`: `-5`, `-1.5`, `-.5` are values wherever a word starting with `-`
/// would be an option.
fn is_negative(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('-') else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    match rest.split_once('.') {
        None => digits(rest),
        Some((int, frac)) => digits(frac) && (int.is_empty() || digits(int)),
    }
}

/// A word that ends an option's values: it starts with `-` and is not a negative number.
fn is_option_like(s: &str) -> bool {
    s.starts_with('-') && !is_negative(s)
}

/// `/^-?\d+(\.\d*)?(e-?\d+)?$/`: the rest of a short group that is the letter's value (`-m5`).
fn is_number(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exp) = match s.split_once('e') {
        Some((m, e)) => (m, Some(e.strip_prefix('-').unwrap_or(e))),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && (frac.is_empty() || frac.bytes().all(|b| b.is_ascii_digit()))
        && exp.is_none_or(digits)
}

/// `--flag="value"` loses its quotes, as yargs-parser's `stripQuotes` does for a plain value.
fn strip_quotes(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// What yargs-parser's `setArg` is handed for a key.
enum Raw {
    /// A word of the command line (or the part after `=`).
    Word(String),
    /// The flag alone: `true` for a boolean, `""` for a string, nothing for an array.
    Default,
    /// `--no-<flag>`.
    False,
}

/// One pass over argv in yargs-parser's order of tests; `error` keeps the last parse error, as
/// yargs-parser does, and `unknown` the keys strict mode will report.
struct Parser<'a> {
    argv: &'a [String],
    version: Version,
    args: Args,
    unknown: Vec<String>,
    error: Option<String>,
}

impl Parser<'_> {
    fn flag(&self, key: &str) -> Option<&'static Flag> {
        options::lookup(key, self.version)
    }

    /// `setArg`: a value for the option `key` names, or an unknown key for strict mode.
    fn set(&mut self, key: &str, raw: Raw) {
        let Some(f) = self.flag(key) else {
            self.unknown.push(key.to_string());
            let c = options::camel(key);
            if c != key {
                self.unknown.push(c);
            }
            return;
        };
        let value = match (f.kind, raw) {
            (Kind::Bool, Raw::Word(w)) => Value::Bool(w == "true"),
            (Kind::Bool, Raw::Default) => Value::Bool(true),
            (Kind::Bool, Raw::False) => Value::Bool(false),
            (Kind::Str, Raw::Word(w)) => Value::Str(w),
            (Kind::Str, Raw::Default) => Value::Str(String::new()),
            (Kind::Array, Raw::Word(w)) => Value::Array(vec![w]),
            (Kind::Array, Raw::Default) => Value::Array(Vec::new()),
            (Kind::Str, Raw::False) => {
                // The value is `false`; a coercion that trims it throws.
                self.args.values.remove(f.long);
                if matches!(f.coerce, Coerce::ResumeLatest | Coerce::SessionId) {
                    self.error = Some("value.trim is not a function".into());
                }
                return;
            }
            (Kind::Array, Raw::False) => {
                // `[false]`, which coerceCommaSeparated cannot split.
                self.error = Some("v.split is not a function".into());
                return;
            }
        };
        match (self.args.values.get_mut(f.long), value) {
            (Some(Value::Array(old)), Value::Array(mut new)) => old.append(&mut new),
            (old, v) => {
                if matches!(old, Some(Value::Str(_))) && f.kind == Kind::Str {
                    self.args.repeated.insert(f.long);
                }
                self.args.values.insert(f.long, v);
            }
        }
    }

    /// Reads the word at `i`; returns the index of the last word it consumed, `None` after `--`.
    fn word(&mut self, i: usize) -> Option<usize> {
        let argv = self.argv;
        let a = argv[i].as_str();
        let dashes = a.len() - a.trim_start_matches('-').len();
        if dashes >= 3 && (a.len() == dashes || a[dashes..].starts_with('=')) {
            self.args.query.push(a.to_string());
            return Some(i);
        }
        if a == "--" {
            self.args.query.extend(argv[i + 1..].iter().cloned());
            return None;
        }
        if let Some(body) = a.strip_prefix("--").filter(|b| !b.is_empty()) {
            if let Some((key, v)) = body.split_once('=').filter(|(k, _)| !k.is_empty()) {
                return Some(self.with_value(i, key, v));
            }
            if let Some(key) = body.strip_prefix("no-").filter(|k| !k.is_empty()) {
                self.set(key, Raw::False);
                return Some(i);
            }
            return Some(self.last_key(i, body, true));
        }
        if a.len() > 1 && !a.starts_with("--") && a.starts_with('-') && !is_negative(a) {
            return Some(self.short_group(i));
        }
        self.args.query.push(a.to_string());
        Some(i)
    }

    /// `--key=value` and `-k=value`.
    fn with_value(&mut self, i: usize, key: &str, v: &str) -> usize {
        match self.flag(key) {
            Some(f) if f.kind == Kind::Array => self.eat_array(i, key, Some(v)),
            Some(f) if f.nargs.is_some() => self.eat_nargs(i, key, Some(v)),
            _ => {
                self.set(key, Raw::Word(strip_quotes(v).to_string()));
                i
            }
        }
    }

    /// A key whose value, if any, is the next word: `--key` or the last letter of `-abc`.
    fn last_key(&mut self, i: usize, key: &str, long: bool) -> usize {
        let f = self.flag(key);
        if f.is_some_and(|f| f.kind == Kind::Array) {
            return self.eat_array(i, key, None);
        }
        if f.is_some_and(|f| f.nargs.is_some()) {
            return self.eat_nargs(i, key, None);
        }
        let is_bool = f.is_some_and(|f| f.kind == Kind::Bool);
        let next = self.argv.get(i + 1).map(String::as_str);
        let takes = |n: &str| {
            // A long key refuses any word starting with `-`; a short one only `-x` and `--x`.
            let option = if long {
                n.starts_with('-')
            } else {
                n.len() > 1 && n.starts_with('-') && !n.trim_start_matches('-').is_empty()
            };
            !option || is_negative(n)
        };
        match next {
            Some(n) if !is_bool && takes(n) => {
                self.set(key, Raw::Word(n.to_string()));
                i + 1
            }
            Some(n @ ("true" | "false")) => {
                self.set(key, Raw::Word(n.to_string()));
                i + 1
            }
            _ => {
                self.set(key, Raw::Default);
                i
            }
        }
    }

    /// `-abc`: each letter but the last is a flag unless the rest is its value (`-m=x`, `-m5`,
    /// `-m/x`); the last letter takes the next word as `--c` would.
    fn short_group(&mut self, mut i: usize) -> usize {
        let a: Vec<char> = self.argv[i].chars().collect();
        let letters = &a[1..a.len() - 1];
        for j in 0..letters.len() {
            let key = letters[j].to_string();
            let next: String = a[j + 2..].iter().collect();
            if letters.get(j + 1) == Some(&'=') {
                let value: String = a[j + 3..].iter().collect();
                return self.with_value(i, &key, &value);
            }
            if next == "-" {
                self.set(&key, Raw::Word(next));
                continue;
            }
            let value_follows = (letters[j].is_ascii_alphabetic() && is_number(&next))
                || letters
                    .get(j + 1)
                    .is_some_and(|c| !(c.is_ascii_alphanumeric() || *c == '_'));
            if value_follows {
                self.set(&key, Raw::Word(next));
                return i;
            }
            self.set(&key, Raw::Default);
        }
        let last = a[a.len() - 1];
        if last != '-' {
            i = self.last_key(i, &last.to_string(), false);
        }
        i
    }

    /// `eatNargs`: up to `nargs` following words that are not options.
    fn eat_nargs(&mut self, i: usize, key: &str, inline: Option<&str>) -> usize {
        let n = self.flag(key).and_then(|f| f.nargs).unwrap_or(1) as usize;
        let argv = self.argv;
        let mut available = usize::from(inline.is_some());
        for w in &argv[i + 1..] {
            let option = w.len() > 1 && w.starts_with('-') && !w.as_bytes()[1].is_ascii_digit();
            if option && !is_negative(w) {
                break;
            }
            available += 1;
        }
        if available < n {
            self.error = Some(format!("Not enough arguments following: {key}"));
        }
        let mut consumed = available.min(n);
        if let Some(v) = inline.filter(|_| consumed > 0) {
            self.set(key, Raw::Word(v.to_string()));
            consumed -= 1;
        }
        for w in &argv[i + 1..i + 1 + consumed] {
            self.set(key, Raw::Word(w.clone()));
        }
        i + consumed
    }

    /// `eatArray`: the value after `=`, then following words up to the next option or `nargs`.
    fn eat_array(&mut self, mut i: usize, key: &str, inline: Option<&str>) -> usize {
        let nargs = self.flag(key).and_then(|f| f.nargs).map(usize::from);
        let argv = self.argv;
        // `argAfterEqualSign || args[i + 1]`: an empty `--key=` looks at the next word.
        let next = inline
            .filter(|v| !v.is_empty())
            .or(argv.get(i + 1).map(String::as_str));
        let mut vals: Vec<String> = Vec::new();
        let no_value = match next {
            None => true,
            Some(n) => inline.is_none() && is_option_like(n),
        };
        if !no_value {
            vals.extend(inline.map(str::to_string));
            for (ii, w) in argv.iter().enumerate().skip(i + 1) {
                if nargs.is_some_and(|n| vals.len() >= n) || is_option_like(w) {
                    break;
                }
                i = ii;
                vals.push(w.clone());
            }
        }
        if nargs.is_some_and(|n| vals.len() < n) {
            self.error = Some(format!("Not enough arguments following: {key}"));
        }
        // The (possibly empty) list is there even when no value came, as `setArg(key, [])`.
        self.set(key, Raw::Default);
        let long = self.flag(key).map(|f| f.long);
        if let Some(Value::Array(old)) = long.and_then(|l| self.args.values.get_mut(l)) {
            old.extend(vals);
        }
        i
    }

    /// Defaults and coercions, after the pass (`applyDefaultsAndAliases`, `applyCoercions`).
    fn finish(&mut self) {
        for f in FLAGS.iter().filter(|f| f.since <= self.version) {
            let present = self.args.values.contains_key(f.long);
            if let (Some(d), false) = (f.default, present) {
                self.args.values.insert(f.long, Value::Bool(d));
            }
            let Some(v) = self.args.values.get_mut(f.long) else {
                continue;
            };
            match (f.coerce, v) {
                // A lone empty value stays `[""]`.
                (Coerce::CommaSeparated, Value::Array(vals)) if vals.as_slice() != [""] => {
                    *vals = vals
                        .iter()
                        .flat_map(|v| v.split(','))
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                }
                (Coerce::ResumeLatest, Value::Str(s)) => {
                    let t = s.trim();
                    *s = if t.is_empty() { "latest" } else { t }.to_string();
                }
                (Coerce::WorktreeName, Value::Str(s)) => {
                    let t = s.trim().to_string();
                    *s = if t.is_empty() {
                        ids::uuid_v4()[..8].to_string()
                    } else {
                        t
                    };
                }
                (Coerce::SessionId, Value::Str(s)) => {
                    let t = s.trim().to_string();
                    if t.is_empty() {
                        self.error = Some("The --session-id option cannot be empty.".into());
                    } else if !t
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    {
                        self.error = Some(format!("Invalid session ID \"{t}\": Only alphanumeric characters, dashes, and underscores are allowed."));
                    }
                    *s = t;
                }
                _ => {}
            }
        }
    }

    /// yargs' validation after the parse: the parse error, then strict mode's unknown keys,
    /// then choices. `--help` and `--version` skip it.
    fn validate(self) -> Result<Args, ArgError> {
        let args = self.args;
        if args.flag("help") || args.flag("version") {
            return Ok(args);
        }
        if let Some(e) = self.error {
            return Err(ArgError(e));
        }
        let mut unknown = self.unknown;
        if !unknown.is_empty() {
            let mut seen = std::collections::HashSet::new();
            unknown.retain(|k| seen.insert(k.clone()));
            let word = if unknown.len() == 1 {
                "argument"
            } else {
                "arguments"
            };
            return Err(ArgError(format!("Unknown {word}: {}", unknown.join(", "))));
        }
        for f in FLAGS.iter().filter(|f| !f.choices.is_empty()) {
            if let Some(Value::Str(v)) = args.values.get(f.long) {
                if !f.choices.contains(&v.as_str()) {
                    let choices: Vec<String> =
                        f.choices.iter().map(|c| format!("\"{c}\"")).collect();
                    return Err(ArgError(format!(
                        "Invalid values:\n  Argument: {}, Given: \"{v}\", Choices: {}",
                        f.long,
                        choices.join(", ")
                    )));
                }
            }
        }
        Ok(args)
    }
}

/// Parses argv (without argv0) as the emulated CLI `version` would, from the option table
/// ([`FLAGS`]): one word per occurrence of an array option (`nargs: 1`), occurrences accumulated
/// and split at commas, `--key=value`, camelCase twins, `--no-<key>`, short groups, `--` ending
/// the options. Unknown options are reported after the whole line was read, as yargs' strict
/// mode does; `--help` and `--version` are parsed but never fail.
pub fn parse(argv: &[String], version: Version) -> Result<Args, ArgError> {
    let mut p = Parser {
        argv,
        version,
        args: Args::default(),
        unknown: Vec::new(),
        error: None,
    };
    let mut i = 0;
    while i < argv.len() {
        match p.word(i) {
            Some(last) => i = last + 1,
            None => break,
        }
    }
    p.finish();
    p.validate()
}

/// The deprecation warnings of the options given with a value (an array that is not empty, a
/// string, a boolean that is true), in table order.
pub fn deprecations(args: &Args) -> Vec<&'static str> {
    FLAGS
        .iter()
        .filter(|f| match args.values.get(f.long) {
            Some(Value::Array(v)) => !v.is_empty(),
            Some(Value::Bool(b)) => *b,
            Some(Value::Str(_)) => true,
            None => false,
        })
        .filter_map(|f| f.deprecation)
        .collect()
}

/// The CLI's own `.check()` rules, run after yargs' validation.
pub fn check_conflicts(args: &Args) -> Result<(), ArgError> {
    let prompt = args.nonempty("prompt").is_some();
    if prompt && args.query_text().is_some_and(|q| !q.is_empty()) {
        return Err(ArgError(
            "Cannot use both a positional prompt and the --prompt (-p) flag together".into(),
        ));
    }
    if prompt && args.nonempty("prompt-interactive").is_some() {
        return Err(ArgError(
            "Cannot use both --prompt (-p) and --prompt-interactive (-i) together".into(),
        ));
    }
    if args.flag("yolo") && args.str("approval-mode").is_some() {
        return Err(ArgError(
            "Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead."
                .into(),
        ));
    }
    let sessions = [
        args.str("resume").is_some(),
        args.str("session-id").is_some(),
        args.str("session-file").is_some(),
    ];
    if sessions.iter().filter(|b| **b).count() > 1 {
        return Err(ArgError(
            "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one."
                .into(),
        ));
    }
    Ok(())
}

/// Subcommand lines of `--help` and the first version listing them (0.39.0 has no `gemma`).
const COMMANDS_SINCE: &[(&str, Version)] = &[("gemini gemma ", (0, 40, 0))];

/// `--help` for `version`: the 0.61.0 text without the options and commands that version lacked.
pub fn help_text(version: Version) -> String {
    let mut out = String::with_capacity(texts::HELP_0_61.len());
    for line in texts::HELP_0_61.split_inclusive('\n') {
        let t = line.trim_start();
        let missing = COMMANDS_SINCE
            .iter()
            .any(|(cmd, since)| *since > version && t.starts_with(cmd))
            || FLAGS.iter().any(|f| {
                f.since > version
                    && (t.starts_with(&format!("--{} ", f.long))
                        || f.short
                            .is_some_and(|c| t.starts_with(&format!("-{c}, --{} ", f.long))))
            });
        if !missing {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const V: Version = (0, 61, 0);

    fn p(s: &[&str]) -> Result<Args, ArgError> {
        parse(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>(), V)
    }

    #[rstest]
    #[case(&["--bogus-flag"], "Unknown arguments: bogus-flag, bogusFlag")]
    #[case(&["--checkpointing"], "Unknown argument: checkpointing")]
    #[case(&["--session-summary"], "Unknown arguments: session-summary, sessionSummary")]
    #[case(&["-o", "xml"], "Invalid values:\n  Argument: output-format, Given: \"xml\", Choices: \"text\", \"json\", \"stream-json\"")]
    fn parse_errors_match_yargs(#[case] argv: &[&str], #[case] msg: &str) {
        assert_eq!(p(argv).unwrap_err().0, msg);
    }

    #[test]
    fn values_inline_short_and_camel_case_are_accepted() {
        let a = p(&[
            "--output-format=json",
            "-m=flash",
            "--skipTrust",
            "-dy",
            "hello",
            "world",
        ])
        .unwrap();
        assert_eq!(a.str("output-format"), Some("json"));
        assert_eq!(a.str("model"), Some("flash"));
        assert!(a.flag("skip-trust") && a.flag("debug") && a.flag("yolo"));
        assert_eq!(a.query_text().as_deref(), Some("hello world"));
    }

    /// `-mflash` is the short group `-m -f -l -a -s -h` to yargs, not `-m flash`: help wins.
    #[test]
    fn a_short_group_is_letters_not_a_value() {
        let a = p(&["-mflash"]).unwrap();
        assert!(a.flag("help") && a.flag("sandbox") && a.flag("list-extensions"));
        assert_eq!(a.str("model"), Some(""));
        assert_eq!(p(&["-m5"]).unwrap().str("model"), Some("5"));
        assert_eq!(p(&["-m/x"]).unwrap().str("model"), Some("/x"));
    }

    #[rstest]
    #[case(&["--allowed-tools", "read_file,list_directory", "hi"], "allowed-tools", &["read_file", "list_directory"], "hi")]
    #[case(&["--include-directories", "/tmp", "hi"], "include-directories", &["/tmp"], "hi")]
    #[case(&["--allowedTools", "a", "b", "c"], "allowed-tools", &["a"], "b c")]
    #[case(&["--include-directories=a", "b"], "include-directories", &["a"], "b")]
    #[case(&["-e", "x", "-e=y,z", "q"], "extensions", &["x", "y", "z"], "q")]
    #[case(&["--policy", "a , b,,", "--policy", "c", "q"], "policy", &["a", "b", "c"], "q")]
    #[case(&["--allowed-tools=", "-y"], "allowed-tools", &[""], "")]
    fn arrays_take_one_word_per_occurrence(
        #[case] argv: &[&str],
        #[case] name: &str,
        #[case] values: &[&str],
        #[case] query: &str,
    ) {
        let a = p(argv).unwrap();
        assert_eq!(a.array(name), values);
        assert_eq!(a.query_text().unwrap_or_default(), query);
    }

    #[test]
    fn a_double_dash_ends_the_options() {
        let a = p(&["--include-directories", "a,b", "--", "-p", "x"]).unwrap();
        assert_eq!(a.array("include-directories"), ["a", "b"]);
        assert_eq!(a.query, ["-p", "x"]);
        assert!(a.str("prompt").is_none());
    }

    #[rstest]
    #[case(&["--allowed-tools"], "Not enough arguments following: allowed-tools")]
    #[case(&["--include-directories", "-y"], "Not enough arguments following: include-directories")]
    #[case(&["--allowed-tools="], "Not enough arguments following: allowed-tools")]
    #[case(&["-m"], "Not enough arguments following: m")]
    #[case(&["-p", "-y"], "Not enough arguments following: p")]
    #[case(&["--no-allowed-tools"], "v.split is not a function")]
    #[case(&["--session-id", " "], "The --session-id option cannot be empty.")]
    #[case(&["--session-id", "a/b"], "Invalid session ID \"a/b\": Only alphanumeric characters, dashes, and underscores are allowed.")]
    fn missing_and_bad_values_are_yargs_errors(#[case] argv: &[&str], #[case] msg: &str) {
        assert_eq!(p(argv).unwrap_err().0, msg);
    }

    #[test]
    fn booleans_negate_and_take_only_true_or_false() {
        let a = p(&[
            "--no-sandbox",
            "--yolo=yes",
            "--debug",
            "false",
            "--skip-trust",
            "q",
        ])
        .unwrap();
        assert_eq!(a.bool_given("sandbox"), Some(false));
        assert!(!a.flag("yolo") && !a.flag("debug") && a.flag("skip-trust"));
        assert_eq!(a.query_text().as_deref(), Some("q"));
        // Declared defaults are there when the option is not.
        assert_eq!(p(&[]).unwrap().bool_given("yolo"), Some(false));
        assert_eq!(p(&[]).unwrap().bool_given("sandbox"), None);
    }

    #[test]
    fn values_are_coerced_as_declared() {
        assert_eq!(p(&["--resume"]).unwrap().str("resume"), Some("latest"));
        assert_eq!(p(&["--resume", " 3 "]).unwrap().str("resume"), Some("3"));
        assert_eq!(
            p(&["--session-id", " ab_C-1 "]).unwrap().str("session-id"),
            Some("ab_C-1")
        );
        assert_eq!(
            p(&["--worktree"]).unwrap().str("worktree").map(str::len),
            Some(8)
        );
        assert_eq!(
            p(&["--delete-session=\"2\""])
                .unwrap()
                .str("delete-session"),
            Some("2")
        );
    }

    #[test]
    fn only_the_deprecated_option_warns() {
        let warned = |argv: &[&str]| deprecations(&p(argv).unwrap());
        assert_eq!(
            warned(&["--allowed-tools", "read_file"]),
            [texts::ALLOWED_TOOLS_DEPRECATED]
        );
        assert_eq!(
            warned(&["--allowedTools=read_file"]),
            [texts::ALLOWED_TOOLS_DEPRECATED]
        );
        assert!(warned(&["--include-directories", "/tmp", "--experimental-acp"]).is_empty());
        assert!(warned(&[]).is_empty());
    }

    #[test]
    fn a_repeated_string_keeps_the_last_value_and_says_so() {
        let a = p(&["-m", "flash", "-m", "pro", "-o", "json"]).unwrap();
        assert_eq!(a.str("model"), Some("pro"));
        assert!(a.repeated.contains("model") && !a.repeated.contains("output-format"));
    }

    #[test]
    fn hidden_options_are_accepted() {
        let a = p(&["--fake-responses", "f.json", "--isCommand"]).unwrap();
        assert_eq!(a.str("fake-responses"), Some("f.json"));
        assert!(a.flag("is-command"));
    }

    #[test]
    fn old_versions_reject_newer_flags_and_hide_them_from_help() {
        let argv = vec!["--session-id".to_string(), "x".to_string()];
        assert_eq!(
            parse(&argv, (0, 40, 0)).unwrap_err().0,
            "Unknown arguments: session-id, sessionId"
        );
        assert!(parse(&["--skip-trust".to_string()], (0, 39, 0)).is_err());
        assert!(parse(&["--acp".to_string()], (0, 39, 0)).is_ok());
        let h = help_text((0, 40, 0));
        assert!(!h.contains("--session-id") && h.contains("--skip-trust"));
        assert!(h.contains("  gemini gemma "));
        let h = help_text((0, 39, 0));
        assert!(!h.contains("--skip-trust") && !h.contains("gemini gemma") && h.contains("--acp"));
        assert_eq!(help_text(V), texts::HELP_0_61);
    }

    #[rstest]
    #[case(&["-p", "a", "b"], "Cannot use both a positional prompt and the --prompt (-p) flag together")]
    #[case(&["-p", "a", "-i", "b"], "Cannot use both --prompt (-p) and --prompt-interactive (-i) together")]
    #[case(&["-y", "--approval-mode", "default"], "Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead.")]
    #[case(&["--resume", "latest", "--session-id", "x"], "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one.")]
    fn conflicts_use_the_real_messages(#[case] argv: &[&str], #[case] msg: &str) {
        assert_eq!(check_conflicts(&p(argv).unwrap()).unwrap_err().0, msg);
    }
}
