//! The command-line surface of Gemini CLI 0.61 as yargs parses it: flags, values, arrays, `--`,
//! positional query, strict unknown-argument errors, choices, the CLI's own conflict checks, and
//! the version table that makes an older emulated CLI reject flags it did not have yet.

use std::collections::BTreeMap;

use crate::texts;

/// The kind of value a flag takes, as declared to yargs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `[boolean]`
    Bool,
    /// `[string]`
    Str,
    /// `[array]` (greedy, repeatable, comma-separated)
    Array,
}

/// One declared option.
#[derive(Debug)]
pub struct Flag {
    /// Long name, kebab-case.
    pub long: &'static str,
    /// Short alias.
    pub short: Option<char>,
    /// Value kind.
    pub kind: Kind,
    /// Allowed values (`[choices: …]`).
    pub choices: &'static [&'static str],
    /// First CLI version that has it (see the README: only 0.39.0, 0.40.0 and 0.61.0 were observed;
    /// a flag 0.39.0 already had is dated 0.39.0, though it may be older).
    pub since: (u32, u32, u32),
}

const fn flag(long: &'static str, short: Option<char>, kind: Kind, since: (u32, u32, u32)) -> Flag {
    Flag {
        long,
        short,
        kind,
        choices: &[],
        since,
    }
}

/// Every option of `gemini --help` 0.61.0, in help order.
pub static FLAGS: &[Flag] = &[
    flag("debug", Some('d'), Kind::Bool, (0, 1, 0)),
    flag("model", Some('m'), Kind::Str, (0, 1, 0)),
    flag("prompt", Some('p'), Kind::Str, (0, 1, 0)),
    flag("prompt-interactive", Some('i'), Kind::Str, (0, 1, 0)),
    flag("skip-trust", None, Kind::Bool, (0, 40, 0)),
    flag("worktree", Some('w'), Kind::Str, (0, 39, 0)),
    flag("sandbox", Some('s'), Kind::Bool, (0, 1, 0)),
    flag("yolo", Some('y'), Kind::Bool, (0, 1, 0)),
    Flag {
        long: "approval-mode",
        short: None,
        kind: Kind::Str,
        choices: &["default", "auto_edit", "yolo", "plan"],
        since: (0, 1, 0),
    },
    flag("policy", None, Kind::Array, (0, 39, 0)),
    flag("admin-policy", None, Kind::Array, (0, 39, 0)),
    flag("acp", None, Kind::Bool, (0, 39, 0)),
    flag("experimental-acp", None, Kind::Bool, (0, 1, 0)),
    flag("allowed-mcp-server-names", None, Kind::Array, (0, 1, 0)),
    flag("allowed-tools", None, Kind::Array, (0, 1, 0)),
    flag("extensions", Some('e'), Kind::Array, (0, 1, 0)),
    flag("list-extensions", Some('l'), Kind::Bool, (0, 1, 0)),
    flag("resume", Some('r'), Kind::Str, (0, 1, 0)),
    flag("session-file", None, Kind::Str, (0, 41, 0)),
    flag("session-id", None, Kind::Str, (0, 41, 0)),
    flag("list-sessions", None, Kind::Bool, (0, 1, 0)),
    flag("delete-session", None, Kind::Str, (0, 1, 0)),
    flag("include-directories", None, Kind::Array, (0, 1, 0)),
    flag("screen-reader", None, Kind::Bool, (0, 1, 0)),
    Flag {
        long: "output-format",
        short: Some('o'),
        kind: Kind::Str,
        choices: &["text", "json", "stream-json"],
        since: (0, 1, 0),
    },
    flag("raw-output", None, Kind::Bool, (0, 1, 0)),
    flag("accept-raw-output-risk", None, Kind::Bool, (0, 1, 0)),
    flag("version", Some('v'), Kind::Bool, (0, 1, 0)),
    flag("help", Some('h'), Kind::Bool, (0, 1, 0)),
];

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

fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut up = false;
    for c in name.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn lookup_long(name: &str, version: Version) -> Option<&'static Flag> {
    let k = kebab(name);
    FLAGS.iter().find(|f| f.long == k && f.since <= version)
}

fn lookup_short(c: char, version: Version) -> Option<&'static Flag> {
    FLAGS
        .iter()
        .find(|f| f.short == Some(c) && f.since <= version)
}

fn looks_like_flag(s: &str) -> bool {
    s.len() > 1 && s.starts_with('-') && s.parse::<f64>().is_err()
}

fn split_array(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set(args: &mut Args, f: &'static Flag, v: Value) {
    match (f.kind, v) {
        (Kind::Array, Value::Array(mut new)) => {
            if let Some(Value::Array(old)) = args.values.get_mut(f.long) {
                old.append(&mut new);
            } else {
                args.values.insert(f.long, Value::Array(new));
            }
        }
        (_, v) => {
            args.values.insert(f.long, v);
        }
    }
}

/// Parses argv (without argv0) as the emulated CLI `version` would. Unknown options are collected
/// and reported after the whole line was read, as yargs' strict mode does.
#[expect(
    clippy::too_many_lines,
    reason = "the CLI's argument parser in yargs' order of passes"
)]
pub fn parse(argv: &[String], version: Version) -> Result<Args, ArgError> {
    let mut args = Args::default();
    let mut unknown: Vec<String> = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        if a == "--" {
            args.query.extend(argv[i..].iter().cloned());
            break;
        }
        if !looks_like_flag(a) {
            args.query.push(a.clone());
            continue;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let (flag, negated) = match lookup_long(name, version) {
                Some(f) => (Some(f), false),
                None => match name.strip_prefix("no-") {
                    Some(rest) => match lookup_long(rest, version) {
                        Some(f) if f.kind == Kind::Bool => (Some(f), true),
                        _ => (None, false),
                    },
                    None => (None, false),
                },
            };
            let Some(f) = flag else {
                let base = name
                    .strip_prefix("no-")
                    .filter(|_| inline.is_none())
                    .unwrap_or(name);
                unknown.push(base.to_string());
                let c = camel(base);
                if c != base {
                    unknown.push(c);
                }
                // yargs gives an unknown flag the next non-flag word as its value.
                if inline.is_none() && i < argv.len() && !looks_like_flag(&argv[i]) {
                    i += 1;
                }
                continue;
            };
            i = take_value(&mut args, f, inline, negated, argv, i);
        } else {
            // Short flags, possibly grouped (`-dy`) or with an attached value (`-mflash`).
            let body = &a[1..];
            let chars: Vec<char> = body.chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(f) = lookup_short(c, version) else {
                    unknown.push(c.to_string());
                    continue;
                };
                if f.kind == Kind::Bool {
                    if j == chars.len() {
                        i = take_value(&mut args, f, None, false, argv, i);
                    } else {
                        set(&mut args, f, Value::Bool(true));
                    }
                    continue;
                }
                let rest: String = chars[j..].iter().collect();
                let inline = if rest.is_empty() {
                    None
                } else {
                    Some(rest.strip_prefix('=').unwrap_or(&rest).to_string())
                };
                i = take_value(&mut args, f, inline, false, argv, i);
                break;
            }
        }
    }
    if !unknown.is_empty() {
        unknown.dedup();
        let word = if unknown.len() == 1 {
            "argument"
        } else {
            "arguments"
        };
        return Err(ArgError(format!("Unknown {word}: {}", unknown.join(", "))));
    }
    for f in FLAGS {
        if f.choices.is_empty() {
            continue;
        }
        if let Some(Value::Str(v)) = args.values.get(f.long) {
            if !f.choices.contains(&v.as_str()) {
                let choices: Vec<String> = f.choices.iter().map(|c| format!("\"{c}\"")).collect();
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

fn take_value(
    args: &mut Args,
    f: &'static Flag,
    inline: Option<String>,
    negated: bool,
    argv: &[String],
    mut i: usize,
) -> usize {
    match f.kind {
        Kind::Bool => {
            let v = match inline.as_deref() {
                Some(v) => v != "false",
                None => {
                    if i < argv.len() && (argv[i] == "true" || argv[i] == "false") {
                        i += 1;
                        argv[i - 1] == "true"
                    } else {
                        true
                    }
                }
            };
            set(args, f, Value::Bool(v != negated));
        }
        Kind::Str => {
            let v = match inline {
                Some(v) => v,
                None if i < argv.len() && !looks_like_flag(&argv[i]) => {
                    i += 1;
                    argv[i - 1].clone()
                }
                None => String::new(),
            };
            set(args, f, Value::Str(v));
        }
        Kind::Array => {
            let mut vals = Vec::new();
            if let Some(v) = inline {
                vals.extend(split_array(&v));
            } else {
                // yargs arrays are greedy: every following word up to the next flag.
                while i < argv.len() && !looks_like_flag(&argv[i]) && argv[i] != "--" {
                    vals.extend(split_array(&argv[i]));
                    i += 1;
                }
            }
            set(args, f, Value::Array(vals));
        }
    }
    i
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
            "-mflash",
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

    #[test]
    fn arrays_are_greedy_repeatable_and_comma_split() {
        let a = p(&[
            "--include-directories",
            "a,b",
            "c",
            "--include-directories=d",
            "--",
            "-p",
            "x",
        ])
        .unwrap();
        assert_eq!(a.array("include-directories"), ["a", "b", "c", "d"]);
        assert_eq!(a.query, ["-p", "x"]);
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
