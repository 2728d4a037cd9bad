//! Every option Gemini CLI 0.61 declares to yargs, as it declares it: type, `nargs`, alias,
//! choices, default, coercion, hidden, the run-time deprecation warning, and the first version
//! that has it. The parser (`cli`) reads nothing else.

use crate::texts;

/// The kind of value an option takes, as declared to yargs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `type: "boolean"`
    Bool,
    /// `type: "string"`
    Str,
    /// `type: "array", string: true` (every occurrence adds to the list)
    Array,
}

/// The `coerce` function of a declaration, run on the parsed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coerce {
    /// No coercion.
    None,
    /// `coerceCommaSeparated`: each value split at commas, parts trimmed, empty parts dropped; a
    /// lone empty value stays `[""]`.
    CommaSeparated,
    /// `--resume`: trimmed; empty (given without a value) is `latest`.
    ResumeLatest,
    /// `--session-id`: trimmed; empty or anything but `[a-zA-Z0-9-_]` is an argument error.
    SessionId,
    /// `--worktree`: trimmed; empty is a generated eight-character name.
    WorktreeName,
}

/// One declared option.
#[derive(Debug)]
pub struct Flag {
    /// Long name, kebab-case (yargs also accepts its camelCase twin, [`Flag::camel`]).
    pub long: &'static str,
    /// Short alias.
    pub short: Option<char>,
    /// Value kind.
    pub kind: Kind,
    /// `nargs`: how many words one occurrence takes at most (`None`: undeclared; an array is
    /// then greedy, a string takes the next word unless it starts with `-`). A declared `nargs`
    /// also makes a missing value an argument error ("Not enough arguments following").
    pub nargs: Option<u8>,
    /// Allowed values (`choices`).
    pub choices: &'static [&'static str],
    /// The declared default (only booleans have one in 0.61: `false`).
    pub default: Option<bool>,
    /// The declared coercion.
    pub coerce: Coerce,
    /// Not listed by `--help`.
    pub hidden: bool,
    /// The warning a run prints on stderr when the option is used (the CLI's own deprecation
    /// notice, not yargs' `deprecated` key, which 0.61 does not use).
    pub deprecation: Option<&'static str>,
    /// First CLI version that has it (see the README: only 0.39.0, 0.40.0 and 0.61.0 were observed;
    /// an option 0.39.0 already had is dated 0.39.0, though it may be older).
    pub since: (u32, u32, u32),
}

impl Flag {
    /// The camelCase twin yargs' `camel-case-expansion` accepts (`allowedTools`), the long name
    /// itself when it has no dash.
    pub fn camel(&self) -> String {
        camel(self.long)
    }
}

/// `allowed-tools` → `allowedTools`, as yargs-parser's `camelCase` does for dashed keys.
pub fn camel(name: &str) -> String {
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

const V1: (u32, u32, u32) = (0, 1, 0);
const V39: (u32, u32, u32) = (0, 39, 0);

const fn boolean(long: &'static str, short: Option<char>, since: (u32, u32, u32)) -> Flag {
    Flag {
        long,
        short,
        kind: Kind::Bool,
        nargs: None,
        choices: &[],
        default: None,
        coerce: Coerce::None,
        hidden: false,
        deprecation: None,
        since,
    }
}

/// `type: "string", nargs: 1`.
const fn string1(long: &'static str, short: Option<char>, since: (u32, u32, u32)) -> Flag {
    Flag {
        kind: Kind::Str,
        nargs: Some(1),
        ..boolean(long, short, since)
    }
}

/// `type: "string"` without `nargs`.
const fn string(long: &'static str, short: Option<char>, since: (u32, u32, u32)) -> Flag {
    Flag {
        kind: Kind::Str,
        ..boolean(long, short, since)
    }
}

/// `type: "array", string: true, nargs: 1, coerce: coerceCommaSeparated`: one word per
/// occurrence, occurrences accumulate, commas split.
const fn array1(long: &'static str, short: Option<char>, since: (u32, u32, u32)) -> Flag {
    Flag {
        kind: Kind::Array,
        nargs: Some(1),
        coerce: Coerce::CommaSeparated,
        ..boolean(long, short, since)
    }
}

const fn hidden(f: Flag) -> Flag {
    Flag { hidden: true, ..f }
}

const fn default_false(f: Flag) -> Flag {
    Flag {
        default: Some(false),
        ..f
    }
}

/// Every option of Gemini CLI 0.61.0 (`parseArguments` in the bundle), in declaration order,
/// hidden ones included; `--version` and `--help` are yargs' own.
pub static FLAGS: &[Flag] = &[
    hidden(boolean("is-command", None, V39)),
    default_false(boolean("debug", Some('d'), V1)),
    string1("model", Some('m'), V1),
    string1("prompt", Some('p'), V1),
    string1("prompt-interactive", Some('i'), V1),
    default_false(boolean("skip-trust", None, (0, 40, 0))),
    Flag {
        coerce: Coerce::WorktreeName,
        ..string("worktree", Some('w'), V39)
    },
    boolean("sandbox", Some('s'), V1),
    default_false(boolean("yolo", Some('y'), V1)),
    Flag {
        choices: &["default", "auto_edit", "yolo", "plan"],
        ..string1("approval-mode", None, V1)
    },
    array1("policy", None, V39),
    array1("admin-policy", None, V39),
    boolean("acp", None, V39),
    boolean("experimental-acp", None, V1),
    array1("allowed-mcp-server-names", None, V1),
    Flag {
        deprecation: Some(texts::ALLOWED_TOOLS_DEPRECATED),
        ..array1("allowed-tools", None, V1)
    },
    array1("extensions", Some('e'), V1),
    boolean("list-extensions", Some('l'), V1),
    Flag {
        coerce: Coerce::ResumeLatest,
        ..string("resume", Some('r'), V1)
    },
    string1("session-file", None, (0, 41, 0)),
    Flag {
        coerce: Coerce::SessionId,
        ..string1("session-id", None, (0, 41, 0))
    },
    boolean("list-sessions", None, V1),
    string("delete-session", None, V1),
    array1("include-directories", None, V1),
    boolean("screen-reader", None, V1),
    Flag {
        choices: &["text", "json", "stream-json"],
        ..string1("output-format", Some('o'), V1)
    },
    hidden(string("fake-responses", None, V39)),
    hidden(string("fake-responses-non-strict", None, V39)),
    hidden(string("record-responses", None, V39)),
    boolean("raw-output", None, V1),
    boolean("accept-raw-output-risk", None, V1),
    boolean("version", Some('v'), V1),
    boolean("help", Some('h'), V1),
];

/// The option a long name (kebab-case or its camelCase twin) or a one-letter alias names in
/// CLI `version`.
pub fn lookup(name: &str, version: (u32, u32, u32)) -> Option<&'static Flag> {
    let mut chars = name.chars();
    let short = match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    };
    FLAGS.iter().find(|f| {
        f.since <= version
            && (f.long == name || (short.is_some() && f.short == short) || f.camel() == name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_array_takes_one_word_and_splits_commas() {
        for f in FLAGS.iter().filter(|f| f.kind == Kind::Array) {
            assert_eq!(f.nargs, Some(1), "{}", f.long);
            assert_eq!(f.coerce, Coerce::CommaSeparated, "{}", f.long);
        }
    }

    #[test]
    fn names_twins_and_aliases_find_the_option() {
        let v = (0, 61, 0);
        assert_eq!(
            lookup("allowedTools", v).map(|f| f.long),
            Some("allowed-tools")
        );
        assert_eq!(
            lookup("allowed-tools", v).map(|f| f.long),
            Some("allowed-tools")
        );
        assert_eq!(lookup("e", v).map(|f| f.long), Some("extensions"));
        assert_eq!(lookup("isCommand", v).map(|f| f.long), Some("is-command"));
        assert!(lookup("allowed_tools", v).is_none());
        assert!(lookup("session-id", (0, 40, 0)).is_none());
    }
}
