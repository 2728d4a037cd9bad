//! Server configuration: the command line (`--help`, `--version`) and the `GEMINI_CLI_BIN` /
//! `GEMINICLI_MCP_*` environment variables, parsed leniently into one [`Config`]. Each setting is
//! declared once, as a row of [`settings`], which makes [`Config`] too; [`table`] makes the
//! command line, `--help` and the doctor's listing of them.

use std::ffi::OsString;

use clap::Parser;

mod acp;
pub mod item;
pub mod parse;
pub(crate) mod policy;
mod read;
pub mod settings;
#[cfg(test)]
mod spelling;
pub mod table;
mod values;

pub use acp::Backend;
pub use settings::{AcpConfig, Config, TaskLimits};
pub use table::{known_names, Given};
pub use values::{
    EnvPolicy, SlashCommands, DEFAULT_BUDGET_BYTES, DEFAULT_EOF_GRACE_MS, DEFAULT_HEARTBEAT_MS,
    DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_START_GATE_MS,
};

/// Command line of the server binary. Every setting is also an environment variable (MCP clients
/// set those in their `env` blocks); a flag given wins over its variable.
#[derive(Debug, Parser)]
#[command(
    name = "geminicli-mcp",
    version,
    about = "MCP server (stdio, or Streamable HTTP with --http) that runs Google's headless Gemini CLI as a tool"
)]
pub struct Cli {
    /// `doctor`, `setup`, or none to serve.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The settings given as flags (from [`settings::SETTINGS`]).
    #[arg(skip)]
    pub given: Given,
}

impl Cli {
    /// The command line with the settings' flags and `--help`'s list of variables, from the
    /// table of settings.
    pub fn command() -> clap::Command {
        <Cli as clap::CommandFactory>::command()
            .args(table::flag_args())
            .after_help(table::env_help())
    }

    /// Parses `args` (the program's name first).
    pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
        cli.given = Given::from_matches(&matches);
        Ok(cli)
    }

    /// Parses the process's arguments; on a bad one, or `--help`, prints and exits as clap does.
    pub fn parse() -> Cli {
        Cli::try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check the installation: which gemini runs, its version and flags, auth variables (names
    /// only), the effective configuration. Never calls a model. Exits 1 on a problem.
    Doctor(DoctorArgs),
    /// Register this server in MCP clients' configuration files, or remove it (--remove).
    ///
    /// Clients: claude-code, codex, gemini-cli, cursor, claude-desktop, vscode; none named: every
    /// client found installed. Each file is edited in place (other entries, comments and layout
    /// kept), backed up first as <file>.bak-<UTC time> beside it, and replaced atomically; a second
    /// run changes nothing. The entry runs the command that ran setup: `npx -y geminicli-mcp`
    /// under npx, the npm launcher's path, or else this binary's absolute path. Secrets are passed
    /// by name (GEMINI_API_KEY), never written. For the clients that load Agent Skills (Claude
    /// Code: ~/.claude/skills, Codex: $CODEX_HOME/skills, the Gemini CLI: ~/.gemini/skills) it
    /// also installs the skills gemini-review, gemini-second-opinion, gemini-large-read and
    /// gemini-delegate (--no-skills: not); --remove takes out only those, and leaves one edited
    /// since setup wrote it. Exits 1 when any client's file could not be changed. docs/install.md
    /// and docs/clients.md have the details.
    Setup(crate::setup::SetupArgs),
    /// List every tool the server declares, whatever the configuration turns on: its name, its
    /// description and its tool set (`core` always listed; `sessions`, `models`, `jobs` and `acp`
    /// turned on by GEMINICLI_MCP_TOOLSETS). The bundle builder reads this list.
    Tools(ToolsArgs),
}

/// Options of `geminicli-mcp tools`.
#[derive(Debug, Clone, clap::Args)]
pub struct ToolsArgs {
    /// Print one JSON document (`{"tools": [{"name", "description", "toolset"}]}`) instead of
    /// text.
    #[arg(long)]
    pub json: bool,
}

/// Options of `geminicli-mcp doctor`.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Bound on each probe of the CLI (`--version`, `--help`), in seconds: the real CLI takes
    /// 5-9 s to start, longer on a loaded machine.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = parse_seconds)]
    pub doctor_timeout: f64,
}

fn parse_seconds(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("a positive number of seconds".into()),
    }
}

impl Config {
    /// The environment's configuration with the command line's flags on top (flags > env >
    /// defaults): a flag is read as the value of the variable it stands for. A variable under
    /// the server's prefix that no setting reads (a misspelt name, which would silently leave its
    /// setting at the default) is noted too.
    pub fn from_env_and_flags(given: &Given) -> Self {
        let mut config = Self::from_lookup(given.over(|name| std::env::var_os(name)));
        config.unread.extend(parse::unknown_names(
            std::env::vars_os().map(|(name, _)| name),
            &known_names(),
        ));
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Duration;

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn the_items_are_what_the_docs_describe() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let known = known_names();
        let docs = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
        let documented: std::collections::BTreeSet<&str> =
            regex::Regex::new(r"GEMINI(?:CLI_MCP_[A-Z0-9_]*[A-Z0-9]|_CLI_BIN)")
                .unwrap()
                .find_iter(&docs)
                .map(|m| m.as_str())
                .collect();
        let undocumented: Vec<_> = settings::SETTINGS
            .iter()
            .filter(|s| !matches!(s.kind, item::Kind::Internal))
            .filter(|s| !documented.contains(s.name))
            .map(|s| s.name)
            .collect();
        assert!(
            undocumented.is_empty(),
            "not in docs/environment.md: {undocumented:?}"
        );
        let stale: Vec<_> = documented
            .iter()
            .filter(|n| !known.contains(n))
            // The docs show what a misspelt name is told.
            .filter(|n| !docs.contains(&format!("{n} is not a setting")))
            .collect();
        assert!(
            stale.is_empty(),
            "docs/environment.md names settings that do not exist: {stale:?}"
        );
        let flags_undocumented: Vec<_> = settings::SETTINGS
            .iter()
            .filter_map(|s| Some((s.name, s.flag.as_ref()?.long)))
            .filter(|(name, long)| {
                !docs.lines().any(|l| {
                    (l.starts_with(&format!("| `--{long} "))
                        || l.starts_with(&format!("| `--{long}`")))
                        && l.contains(&format!("`{name}`"))
                })
            })
            .map(|(_, long)| long)
            .collect();
        assert!(
            flags_undocumented.is_empty(),
            "flags not in docs/environment.md: {flags_undocumented:?}"
        );
    }

    #[test]
    fn the_run_mark_is_the_one_the_launch_sets() {
        assert_eq!(settings::RUN.name, crate::gemini::process::RUN_MARKER_VAR);
    }

    #[test]
    fn help_is_drawn_from_the_table_within_its_width() {
        let help = table::env_help();
        for s in settings::SETTINGS {
            let listed = help.contains(&format!("  {} ", s.name));
            assert_eq!(
                listed,
                !matches!(s.kind, item::Kind::Internal),
                "{}",
                s.name
            );
        }
        let long: Vec<&str> = help.lines().filter(|l| l.chars().count() > 98).collect();
        assert!(long.is_empty(), "{long:?}");
        let text = Cli::command().render_long_help().to_string();
        for s in settings::SETTINGS {
            if let Some(f) = &s.flag {
                assert!(text.contains(&format!("--{}", f.long)), "{}", f.long);
                assert!(text.contains(&format!("[env: {}]", s.name)), "{}", s.name);
            }
        }
        assert!(text.contains("Environment:"), "{text}");
    }

    #[test]
    fn a_flag_is_read_as_its_variable_so_both_give_the_same_setting() {
        let pairs: [(&[&str], &str, &str); 5] = [
            (
                &["--max-output-bytes", "77"],
                "GEMINICLI_MCP_MAX_OUTPUT_BYTES",
                "77",
            ),
            (&["--backend", "acp"], "GEMINICLI_MCP_BACKEND", "acp"),
            (
                &["--result-budget-bytes", "5000"],
                "GEMINICLI_MCP_RESULT_BUDGET_BYTES",
                "5000",
            ),
            (&["--gemini-bin", "/x/g"], "GEMINI_CLI_BIN", "/x/g"),
            (
                &["--http-allowed-host", "a", "--http-allowed-host", "b:1"],
                "GEMINICLI_MCP_HTTP_ALLOWED_HOSTS",
                "a,b:1",
            ),
        ];
        for (args, name, value) in pairs {
            let cli =
                Cli::try_parse_from(std::iter::once("geminicli-mcp").chain(args.iter().copied()))
                    .unwrap();
            assert_eq!(
                cli.given.get(name),
                Some(&OsString::from(value)),
                "{args:?}"
            );
            let by_flag = Config::from_lookup(cli.given.over(|_| None));
            let by_var = config(&[(name, value)]);
            assert_eq!(format!("{by_flag:?}"), format!("{by_var:?}"), "{args:?}");
        }
        let none = Cli::try_parse_from(["geminicli-mcp", "--gemini-bin", ""]).unwrap();
        assert_eq!(none.given.get("GEMINI_CLI_BIN"), None, "empty is not given");
    }

    #[test]
    fn values_not_understood_are_noted_by_name_never_by_value() {
        let c = config(&[
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "four"),
            ("GEMINICLI_MCP_BACKEND", "acpp"),
            ("GEMINICLI_MCP_APPROVAL_MODE", "yolo!"),
            ("GEMINICLI_MCP_TOOLSETS", "sessions,sesions"),
            ("GEMINICLI_MCP_TOTAL_TIMEOUT_MS", "-5"),
            ("GEMINICLI_MCP_ENV", "secret-looking-value"),
            // A field of `Config` read before `acp`'s, noted in `--help`'s order all the same.
            ("GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS", "soon"),
            // Blank is unset, and these are understood: nothing to say of them.
            ("GEMINICLI_MCP_KILL_GRACE_MS", " "),
            ("GEMINICLI_MCP_SLASH_COMMANDS", "Pass"),
            ("GEMINICLI_MCP_ACP_SPARE_SESSIONS", "0"),
        ]);
        assert_eq!(c.max_concurrency, 4, "the default applies");
        assert_eq!(c.acp.backend, Backend::Acp, "the default applies");
        let named: Vec<&str> = c
            .unread
            .iter()
            .map(|n| n.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            named,
            [
                "GEMINICLI_MCP_MAX_CONCURRENCY",
                "GEMINICLI_MCP_ENV",
                "GEMINICLI_MCP_APPROVAL_MODE",
                "GEMINICLI_MCP_TOOLSETS",
                "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
                "GEMINICLI_MCP_BACKEND",
                "GEMINICLI_MCP_MCP_SERVER_TIMEOUT_MS",
            ],
            "{:?}",
            c.unread
        );
        assert!(c.unread[0].ends_with("is not a positive whole number; the default applies"));
        assert!(c.unread[2].contains("plan, the narrowest, applies"));
        assert!(c.unread[3].contains("left out: sesions"), "{}", c.unread[3]);
        assert!(c.unread[5].contains("oneshot or acp"));
        assert!(
            !c.unread.iter().any(|n| n.contains("secret-looking-value")),
            "{:?}",
            c.unread
        );
        assert!(config(&[]).unread.is_empty());
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = config(&[]);
        assert_eq!(c.max_output_bytes, 33_554_432);
        assert!(!c.debug);
        assert_eq!(c.kill_grace, Duration::from_millis(2000));
        assert_eq!(c.eof_grace, Duration::from_millis(120_000));
        assert_eq!(c.max_concurrency, 4);
        assert_eq!(c.heartbeat, Duration::from_millis(10_000));
        assert_eq!(c.result_budget, 40_000);
        assert_eq!(c.slash_commands, SlashCommands::Escape);
        assert!(c.gemini_bin.is_none());
    }

    #[test]
    fn invalid_numbers_fall_back_to_the_default() {
        for bad in [
            "0",
            "-5",
            "+5",
            " 5",
            "5 ",
            "0x10",
            "1e3",
            "",
            "abc",
            "99999999999999999999999",
        ] {
            let c = config(&[("GEMINICLI_MCP_MAX_OUTPUT_BYTES", bad)]);
            assert_eq!(
                c.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES,
                "value {bad:?}"
            );
        }
        let c = config(&[("GEMINICLI_MCP_MAX_OUTPUT_BYTES", "1024")]);
        assert_eq!(c.max_output_bytes, 1024);
    }

    #[test]
    fn debug_accepts_the_reference_spellings() {
        for yes in ["1", "true", "TRUE", "yes", "Yes"] {
            assert!(config(&[("GEMINICLI_MCP_DEBUG", yes)]).debug, "{yes}");
        }
        for no in ["0", "false", "no", "on", ""] {
            assert!(!config(&[("GEMINICLI_MCP_DEBUG", no)]).debug, "{no}");
        }
    }

    #[test]
    fn slash_commands_mode() {
        let c = config(&[("GEMINICLI_MCP_SLASH_COMMANDS", "passthrough")]);
        assert_eq!(c.slash_commands, SlashCommands::Passthrough);
        let c = config(&[("GEMINICLI_MCP_SLASH_COMMANDS", "nonsense")]);
        assert_eq!(c.slash_commands, SlashCommands::Escape);
    }

    #[test]
    fn empty_bin_is_unset() {
        assert!(config(&[("GEMINI_CLI_BIN", "")]).gemini_bin.is_none());
        assert_eq!(
            config(&[("GEMINI_CLI_BIN", "/x/gemini")]).gemini_bin,
            Some(OsString::from("/x/gemini"))
        );
    }

    #[test]
    fn help_lists_every_variable() {
        for name in [
            "GEMINI_CLI_BIN",
            "GEMINICLI_MCP_MAX_OUTPUT_BYTES",
            "GEMINICLI_MCP_DEBUG",
            "GEMINICLI_MCP_KILL_GRACE_MS",
            "GEMINICLI_MCP_EOF_GRACE_MS",
            "GEMINICLI_MCP_MAX_CONCURRENCY",
            "GEMINICLI_MCP_HEARTBEAT_MS",
            "GEMINICLI_MCP_RESULT_BUDGET_BYTES",
            "GEMINICLI_MCP_SLASH_COMMANDS",
            "GEMINICLI_MCP_ENV",
            "GEMINICLI_MCP_LOG",
            "GEMINICLI_MCP_HTTP",
            "GEMINICLI_MCP_HTTP_TOKEN",
            "GEMINICLI_MCP_HTTP_TOKEN_FILE",
            "GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS",
            "GEMINICLI_MCP_HTTP_ALLOWED_HOSTS",
            "GEMINICLI_MCP_HTTP_ALLOW_REMOTE",
            "GEMINICLI_MCP_HTTP_HEADER_TIMEOUT_MS",
            "GEMINICLI_MCP_HTTP_IDLE_TIMEOUT_MS",
            "GEMINICLI_MCP_HTTP_MAX_CONNECTIONS",
            "GEMINICLI_MCP_ALLOWED_ROOTS",
            "GEMINICLI_MCP_APPROVAL_MODE",
            "GEMINICLI_MCP_TOOLSETS",
            "GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS",
            "GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS",
            "GEMINICLI_MCP_TOTAL_TIMEOUT_MS",
            "GEMINICLI_MCP_RATE_LIMIT_RETRY",
            "GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS",
            "GEMINICLI_MCP_FALLBACK_MODELS",
            "GEMINICLI_MCP_STRUCTURED_REPAIR",
            "GEMINICLI_MCP_BACKEND",
            "GEMINICLI_MCP_ASK_TIMEOUT_MS",
            "GEMINICLI_MCP_START_GATE_MS",
            "GEMINICLI_MCP_TASKS",
            "GEMINICLI_MCP_TASK_RETENTION_MS",
            "GEMINICLI_MCP_MAX_TASKS",
        ] {
            assert!(table::env_help().contains(name), "{name}");
        }
    }

    #[test]
    fn task_settings_and_the_ask_timeout_are_read() {
        let d = config(&[]);
        assert!(d.tasks.enabled);
        assert_eq!(d.tasks.retention, Duration::from_millis(600_000));
        assert_eq!(d.tasks.max_tasks, 64);
        assert_eq!(d.ask_timeout, Duration::from_millis(120_000));
        assert_eq!(d.start_gate, Duration::from_millis(15_000));
        let c = config(&[
            ("GEMINICLI_MCP_START_GATE_MS", "1500"),
            ("GEMINICLI_MCP_TASKS", "Off"),
            ("GEMINICLI_MCP_TASK_RETENTION_MS", "1500"),
            ("GEMINICLI_MCP_MAX_TASKS", "3"),
            ("GEMINICLI_MCP_ASK_TIMEOUT_MS", "2500"),
        ]);
        assert!(!c.tasks.enabled);
        assert_eq!(c.tasks.retention, Duration::from_millis(1500));
        assert_eq!(c.tasks.max_tasks, 3);
        assert_eq!(c.ask_timeout, Duration::from_millis(2500));
        assert_eq!(c.start_gate, Duration::from_millis(1500));
        // A typo keeps tasks on and the defaults.
        let t = config(&[
            ("GEMINICLI_MCP_TASKS", "maybe"),
            ("GEMINICLI_MCP_MAX_TASKS", "-1"),
        ]);
        assert!(t.tasks.enabled);
        assert_eq!(t.tasks.max_tasks, 64);
    }

    #[test]
    fn env_policy_defaults_to_inherit() {
        assert_eq!(config(&[]).env_policy, EnvPolicy::Inherit);
        let c = config(&[("GEMINICLI_MCP_ENV", " Minimal ")]);
        assert_eq!(c.env_policy, EnvPolicy::Minimal);
        let c = config(&[("GEMINICLI_MCP_ENV", "none")]);
        assert_eq!(c.env_policy, EnvPolicy::Inherit);
    }

    #[test]
    fn flags_win_over_env_which_wins_over_defaults() {
        let env: HashMap<&str, OsString> = [
            ("GEMINICLI_MCP_MAX_CONCURRENCY", "7"),
            ("GEMINICLI_MCP_KILL_GRACE_MS", "900"),
            ("GEMINICLI_MCP_ENV", "minimal"),
            ("GEMINICLI_MCP_DEBUG", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k, OsString::from(v)))
        .collect();
        let cli = Cli::try_parse_from([
            "geminicli-mcp",
            "--max-concurrency",
            "2",
            "--env",
            "inherit",
            "--slash-commands",
            "passthrough",
            "--debug",
        ])
        .unwrap();
        let c = Config::from_lookup(cli.given.over(|name| env.get(name).cloned()));
        assert_eq!(c.max_concurrency, 2, "flag over env");
        assert_eq!(c.env_policy, EnvPolicy::Inherit, "flag over env");
        assert_eq!(c.kill_grace, Duration::from_millis(900), "env over default");
        assert_eq!(c.heartbeat, Duration::from_millis(DEFAULT_HEARTBEAT_MS));
        assert_eq!(c.slash_commands, SlashCommands::Passthrough);
        assert!(c.debug, "a switch over its variable's 0");
    }

    #[test]
    fn flags_are_checked_strictly() {
        for bad in [
            &["geminicli-mcp", "--max-concurrency", "0"][..],
            &["geminicli-mcp", "--env", "all"],
            &["geminicli-mcp", "--http-token", "x"],
            &["geminicli-mcp", "doctor", "--doctor-timeout", "-1"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
        let cli = Cli::try_parse_from([
            "geminicli-mcp",
            "doctor",
            "--json",
            "--max-concurrency",
            "3",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, Some(Command::Doctor(ref d)) if d.json && d.doctor_timeout == 30.0)
        );
        assert_eq!(
            cli.given.get("GEMINICLI_MCP_MAX_CONCURRENCY"),
            Some(&OsString::from("3")),
            "settings are global"
        );
    }
}
