//! What is made of the settings' items (`super::settings`, each declared once: its variable, its
//! flag, its help, its default and its reading). From them come the `Environment:` part of `--help`, the flags and their strict checks,
//! the flags' values as the variables they stand for (a flag wins over its variable), the names a
//! misspelling is measured against, and the doctor's listing of the configuration in effect. The
//! readings themselves, lenient and typed, are the items' own; a test holds the code and
//! `docs/environment.md` to them.

use std::ffi::OsString;

use clap::{Arg, ArgAction, ArgMatches};
use serde_json::{json, Value};

use super::item::{FlagValue, Kind};
use super::settings::{Config, SETTINGS};

/// Every variable the server reads: what a set name is checked against before it is called a
/// misspelling.
pub fn known_names() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.name).collect()
}

/// Width of `--help`'s lines.
const WIDTH: usize = 98;
/// Column where a variable's help starts.
const HELP_COLUMN: usize = 34;

/// The text `--help` prints below the usage: every variable, with the rules all of them share.
pub fn env_help() -> String {
    let mut out = String::from("Environment:\n");
    for s in SETTINGS
        .iter()
        .filter(|s| !matches!(s.kind, Kind::Internal))
    {
        let head = format!("  {}", s.name);
        let mut line = if head.len() + 2 <= HELP_COLUMN {
            format!("{head:<HELP_COLUMN$}")
        } else {
            format!("{head}  ")
        };
        let mut fresh = true;
        for word in s.help.split_whitespace() {
            if !fresh && line.len() + 1 + word.len() > WIDTH {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(HELP_COLUMN);
                fresh = true;
            }
            if !fresh {
                line.push(' ');
            }
            line.push_str(word);
            fresh = false;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nA flag wins over its variable; a variable wins over the default.\n\n\
         The server speaks MCP over stdio (stdout carries only JSON-RPC; logs go to stderr), or \
         over\nStreamable HTTP with --http.",
    );
    out
}

/// The flags, one for each setting that has one; global, so they may follow a subcommand.
pub fn flag_args() -> Vec<Arg> {
    SETTINGS
        .iter()
        .filter_map(|s| Some((s, s.flag.as_ref()?)))
        .map(|(s, f)| {
            let arg = Arg::new(s.name)
                .long(f.long)
                .global(true)
                .help(format!("{} [env: {}]", f.help, s.name));
            match f.value {
                FlagValue::Switch => arg.action(ArgAction::SetTrue),
                FlagValue::Text => arg
                    .value_name(f.value_name)
                    .value_parser(clap::value_parser!(OsString)),
                FlagValue::Repeated => arg
                    .value_name(f.value_name)
                    .action(ArgAction::Append)
                    .value_parser(clap::value_parser!(OsString)),
                FlagValue::AtLeast(least) => arg
                    .value_name(f.value_name)
                    .value_parser(clap::value_parser!(u64).range(least..)),
                FlagValue::OneOf(words) => arg
                    .value_name(f.value_name)
                    .value_parser(clap::builder::PossibleValuesParser::new(words)),
            }
        })
        .collect()
}

/// The settings given as flags, as the values of the variables they stand for.
#[derive(Debug, Clone, Default)]
pub struct Given {
    values: Vec<(&'static str, OsString)>,
}

impl Given {
    /// The flags' values in `matches` (a flag given empty counts as not given).
    pub fn from_matches(matches: &ArgMatches) -> Given {
        let mut values = Vec::new();
        for s in SETTINGS {
            let Some(f) = &s.flag else { continue };
            let value: Option<OsString> = match f.value {
                FlagValue::Switch => matches.get_flag(s.name).then(|| "1".into()),
                FlagValue::Text => matches.get_one::<OsString>(s.name).cloned(),
                FlagValue::Repeated => matches.get_many::<OsString>(s.name).map(|v| {
                    v.cloned()
                        .collect::<Vec<_>>()
                        .join(std::ffi::OsStr::new(","))
                }),
                FlagValue::AtLeast(_) => {
                    matches.get_one::<u64>(s.name).map(|v| v.to_string().into())
                }
                FlagValue::OneOf(_) => matches.get_one::<String>(s.name).map(Into::into),
            };
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                values.push((s.name, value));
            }
        }
        Given { values }
    }

    /// The value a flag gave for `name`.
    pub fn get(&self, name: &str) -> Option<&OsString> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The flags over `env`: what every setting reads.
    pub fn over<'a>(
        &'a self,
        env: impl Fn(&str) -> Option<OsString> + 'a,
    ) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| self.get(name).cloned().or_else(|| env(name))
    }
}

/// The doctor's listing: every setting the operator sets, under its variable, with the value in
/// effect; one read elsewhere as given (`lookup`: flags over the environment), a secret only as set
/// or not.
pub fn effective(
    config: &Config,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Vec<(&'static str, Value)> {
    SETTINGS
        .iter()
        .filter_map(|s| {
            let value = match s.kind {
                Kind::Config(show) => show(config),
                Kind::Elsewhere => {
                    lookup(s.name).map_or(Value::Null, |v| json!(v.to_string_lossy()))
                }
                Kind::Secret => match lookup(s.name) {
                    Some(v) if !v.is_empty() => json!("set"),
                    _ => Value::Null,
                },
                Kind::Internal => return None,
            };
            Some((s.name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_doctor_lists_every_setting_but_the_internal_one_and_never_a_secret() {
        let env = lookup(&[
            ("GEMINICLI_MCP_HTTP_TOKEN", "do-not-print-this-token"),
            ("GEMINICLI_MCP_HTTP_ALLOWED_HOSTS", "from-env"),
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "5"),
        ]);
        let cli = super::super::Cli::try_parse_from([
            "geminicli-mcp",
            "--http-allowed-host",
            "from-flag",
        ])
        .unwrap();
        let config = Config::from_lookup(cli.given.over(&env));
        let rows = effective(&config, cli.given.over(&env));
        let names: Vec<&str> = rows.iter().map(|(n, _)| *n).collect();
        let listed: Vec<&str> = SETTINGS
            .iter()
            .filter(|s| !matches!(s.kind, Kind::Internal))
            .map(|s| s.name)
            .collect();
        assert_eq!(names, listed);
        let row = |name: &str| rows.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(row("GEMINICLI_MCP_HTTP_TOKEN"), json!("set"));
        assert_eq!(row("GEMINICLI_MCP_HTTP_ALLOWED_HOSTS"), json!("from-flag"));
        assert_eq!(row("GEMINICLI_MCP_MAX_CONCURRENCY"), json!(5));
        assert_eq!(
            row("GEMINICLI_MCP_MAX_AGENTS"),
            json!(5),
            "its default follows"
        );
        assert_eq!(row("GEMINICLI_MCP_TOTAL_TIMEOUT_MS"), Value::Null);
        assert_eq!(row("GEMINICLI_MCP_HTTP"), Value::Null);
        let all = serde_json::to_string(&rows).unwrap();
        assert!(!all.contains("do-not-print-this-token"), "{all}");
    }

    #[test]
    fn each_name_and_flag_is_declared_once() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        let mut flags: Vec<&str> = SETTINGS
            .iter()
            .filter_map(|s| Some(s.flag.as_ref()?.long))
            .collect();
        let (n, f) = (names.len(), flags.len());
        names.sort_unstable();
        names.dedup();
        flags.sort_unstable();
        flags.dedup();
        assert_eq!((names.len(), flags.len()), (n, f));
        for s in SETTINGS {
            assert_eq!(
                s.help.is_empty(),
                matches!(s.kind, Kind::Internal),
                "{}: every setting an operator sets has help",
                s.name
            );
        }
    }
}
