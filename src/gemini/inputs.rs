//! Every input the server hands the Gemini CLI, in one place: each flag, environment variable,
//! settings file and key, and ACP request; which part of the server hands it (the one-shot
//! backend, the warm backend, the session tools, `doctor`); what the real CLI 0.61 does with it;
//! and the differential cases that show the real CLI and fake-gemini giving it the same verdict.
//!
//! The launch code takes its flag and variable names from here ([`BASE_ARGS`], [`CHILD_ENV`],
//! [`flag`], [`env`]). Two tests hold it to that: one builds every launch the server can make and
//! fails on a flag or variable this list lacks (`gemini::launch`'s tests), one reads the launch
//! code's source and fails on a flag or variable written there as a literal.
//!
//! This file uses nothing of the crate: fake-gemini's differential suite compiles it too, checks
//! that every entry names cases it has, and runs them (`differential::inputs`), as root and as an
//! unprivileged user with `TMPDIR=/tmp` in `.ci/run`.

/// Flag names.
pub mod flag {
    /// `--output-format`: the server reads `stream-json`.
    pub const OUTPUT_FORMAT: &str = "--output-format";
    /// `--approval-mode`.
    pub const APPROVAL_MODE: &str = "--approval-mode";
    /// `--skip-trust`.
    pub const SKIP_TRUST: &str = "--skip-trust";
    /// `--sandbox`.
    pub const SANDBOX: &str = "--sandbox";
    /// `--allowed-mcp-server-names`.
    pub const ALLOWED_MCP_SERVER_NAMES: &str = "--allowed-mcp-server-names";
    /// `--include-directories`.
    pub const INCLUDE_DIRECTORIES: &str = "--include-directories";
    /// `--model`.
    pub const MODEL: &str = "--model";
    /// `--resume`.
    pub const RESUME: &str = "--resume";
    /// `--list-sessions`.
    pub const LIST_SESSIONS: &str = "--list-sessions";
    /// `--delete-session`.
    pub const DELETE_SESSION: &str = "--delete-session";
    /// `--acp`.
    pub const ACP: &str = "--acp";
    /// `--version`.
    pub const VERSION: &str = "--version";
    /// `--help`.
    pub const HELP: &str = "--help";
}

/// Variable names.
pub mod env {
    /// `NO_COLOR`.
    pub const NO_COLOR: &str = "NO_COLOR";
    /// `TERM`.
    pub const TERM: &str = "TERM";
    /// `NO_BROWSER`.
    pub const NO_BROWSER: &str = "NO_BROWSER";
    /// `GEMINI_CLI_NO_RELAUNCH`.
    pub const NO_RELAUNCH: &str = "GEMINI_CLI_NO_RELAUNCH";
    /// `GEMINI_CLI_TRUST_WORKSPACE`.
    pub const TRUST_WORKSPACE: &str = "GEMINI_CLI_TRUST_WORKSPACE";
    /// `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`.
    pub const SYSTEM_DEFAULTS_PATH: &str = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH";
    /// `TMPDIR`, `TEMP` and `TMP`: the run's private temporary directory.
    pub const TMP: [&str; 3] = ["TMPDIR", "TEMP", "TMP"];
    /// `GEMINI_TELEMETRY_ENABLED`.
    pub const TELEMETRY_ENABLED: &str = "GEMINI_TELEMETRY_ENABLED";
    /// `GEMINI_TELEMETRY_TARGET`.
    pub const TELEMETRY_TARGET: &str = "GEMINI_TELEMETRY_TARGET";
    /// `GEMINI_TELEMETRY_OUTFILE`.
    pub const TELEMETRY_OUTFILE: &str = "GEMINI_TELEMETRY_OUTFILE";
    /// `GEMINI_TELEMETRY_LOG_PROMPTS`.
    pub const TELEMETRY_LOG_PROMPTS: &str = "GEMINI_TELEMETRY_LOG_PROMPTS";
    /// The prefix of every variable of the CLI's telemetry.
    pub const TELEMETRY_PREFIX: &str = "GEMINI_TELEMETRY_";
    /// `GEMINICLI_MCP_RUN`: the mark by which the server finds a run's processes that left its
    /// process group (Linux).
    pub const RUN_MARK: &str = "GEMINICLI_MCP_RUN";
}

/// Flags every one-shot run gets, in this order, each a single `--flag=value` argument (the
/// second is replaced when a call asks for another approval mode).
pub const BASE_ARGS: [&str; 3] = [
    "--output-format=stream-json",
    "--approval-mode=yolo",
    "--skip-trust",
];

/// Variables set for every child, on top of the server's own environment.
pub const CHILD_ENV: [(&str, &str); 4] = [
    (env::NO_COLOR, "1"),
    (env::TERM, "dumb"),
    // Headless auth must fail fast instead of waiting for a browser nobody will see.
    (env::NO_BROWSER, "true"),
    // One process instead of launcher + worker: the launcher ignores SIGTERM, and a single
    // process is what the parent-death signal and the tree kill can reliably reach. The cost:
    // the worker runs with Node's default heap limit instead of the relaunch's 50 % of RAM.
    (env::NO_RELAUNCH, "1"),
];

/// The CLI's "restart me" exit: its launcher starts it again; under `GEMINI_CLI_NO_RELAUNCH`
/// there is no launcher, and whoever started it must.
pub const RESTART_EXIT_CODE: i32 = 199;

/// The warm backend's agent: its flags before the call's own, and the variable it adds.
pub const ACP_ARGS: [&str; 2] = [flag::ACP, flag::SKIP_TRUST];
/// Without trust an untrusted folder silently downgrades yolo and auto_edit to default.
pub const ACP_ENV: [(&str, &str); 1] = [(env::TRUST_WORKSPACE, "true")];

/// The null device, where the agents' telemetry goes.
#[cfg(not(windows))]
pub const NULL_DEVICE: &str = "/dev/null";
/// The null device, where the agents' telemetry goes.
#[cfg(windows)]
pub const NULL_DEVICE: &str = "NUL";

/// What an agent gets where the user configured no telemetry of their own: telemetry on, to a
/// local file that is the null device, prompts not logged. CLI 0.62 keeps each model request's
/// history in a buffer only the telemetry drains (its bug report: about 1.17 MB a turn with
/// telemetry off; the fix, #26404, was closed unmerged); this is that report's workaround. With an
/// outfile the CLI exports to the file only, whatever OTLP endpoint the environment names (0.61's
/// bundle: `useOtlp = !!endpoint && !outfile`); the target `local` rules out Google Cloud.
pub const TELEMETRY_ENV: [(&str, &str); 4] = [
    (env::TELEMETRY_ENABLED, "true"),
    (env::TELEMETRY_TARGET, "local"),
    (env::TELEMETRY_OUTFILE, NULL_DEVICE),
    (env::TELEMETRY_LOG_PROMPTS, "false"),
];

/// The settings key the server's system-defaults file sets.
pub const RETENTION_KEY: &str = "general.sessionRetention.enabled";

/// What kind of input an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A command-line flag (`--name` or `--name=value`).
    Flag,
    /// An environment variable.
    Env,
    /// A settings file the CLI reads.
    SettingsFile,
    /// A key inside such a file.
    SettingsKey,
    /// An ACP request or notification sent to the warm backend's agent.
    AcpRequest,
}

/// Which part of the server hands an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// The one-shot backend (`gemini_prompt` and the other prompt tools).
    OneShot,
    /// The warm backend (`gemini --acp` agents).
    Warm,
    /// The session tools (`gemini_list_sessions`, `gemini_delete_session`).
    Sessions,
    /// `geminicli-mcp doctor`'s probes.
    Doctor,
}

/// What the real CLI 0.61 does with an input as the server hands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Read and acted on, for every user.
    Honoured,
    /// Read only where the CLI's ownership check passes (the file and every directory above it
    /// root's, not writable by group or others), skipped with a warning elsewhere: the server
    /// hands it only where the check passes.
    HonouredWhereRootOwned,
}

/// One input.
#[derive(Debug, Clone, Copy)]
pub struct Input {
    /// The flag, variable, file or key (`--model`, `NO_COLOR`, `general.sessionRetention.enabled`,
    /// `session/new`).
    pub name: &'static str,
    /// What kind of input it is.
    pub kind: Kind,
    /// The values the server passes; empty when it passes a value of the call's (a path, a
    /// model name, a session id) or none.
    pub values: &'static [&'static str],
    /// Who hands it.
    pub by: &'static [By],
    /// What the real CLI does with it.
    pub verdict: Verdict,
    /// Why the server hands it.
    pub why: &'static str,
    /// The differential cases (fake-gemini's `differential` and `differential_acp`, by name)
    /// whose real and fake runs must agree with this input handed as the server hands it.
    pub cases: &'static [&'static str],
}

const fn input(
    name: &'static str,
    kind: Kind,
    values: &'static [&'static str],
    by: &'static [By],
    why: &'static str,
    cases: &'static [&'static str],
) -> Input {
    Input {
        name,
        kind,
        values,
        by,
        verdict: Verdict::Honoured,
        why,
        cases,
    }
}

use By::{Doctor, OneShot, Sessions, Warm};
use Kind::{AcpRequest, Env, Flag, SettingsFile, SettingsKey};

/// The inventory.
pub const INVENTORY: &[Input] = &[
    input(
        flag::OUTPUT_FORMAT,
        Flag,
        &["stream-json"],
        &[OneShot],
        "one JSON event per line: the answer, the session id and the stats survive a failure",
        &["server/one-shot", "server/one-shot-tool-call"],
    ),
    input(
        flag::APPROVAL_MODE,
        Flag,
        &["yolo", "auto_edit", "default", "plan"],
        &[OneShot],
        "no confirmation prompt nobody could answer (yolo), or the mode the call chose under the ceiling",
        &[
            "server/one-shot",
            "server/approval-auto-edit",
            "server/approval-default",
            "server/approval-plan",
        ],
    ),
    input(
        flag::SKIP_TRUST,
        Flag,
        &[],
        &[OneShot, Warm],
        "an untrusted folder would otherwise exit 55 (one-shot) or downgrade the approval mode (ACP)",
        &["server/one-shot", "acp/trusted-allow-always"],
    ),
    input(
        flag::SANDBOX,
        Flag,
        &["true"],
        &[OneShot],
        "the call asked for the CLI's sandbox",
        &["server/sandbox-command-missing"],
    ),
    input(
        flag::ALLOWED_MCP_SERVER_NAMES,
        Flag,
        &[],
        &[OneShot, Warm],
        "the call named the MCP servers the CLI may use; or the server leaves out its own entries and servers that do not answer `initialize` (a name no server has when none is left)",
        &[
            "server/allowed-mcp-server-names",
            "server/allowed-mcp-server-names-leave-out",
        ],
    ),
    input(
        flag::INCLUDE_DIRECTORIES,
        Flag,
        &[],
        &[OneShot, Warm],
        "directories of the client's roots the call added to the workspace",
        &["server/include-directories"],
    ),
    input(
        flag::MODEL,
        Flag,
        &[],
        &[OneShot],
        "the call chose a model",
        &["server/model"],
    ),
    input(
        flag::RESUME,
        Flag,
        &[],
        &[OneShot],
        "the call continues a session (a UUID, never an index or `latest`)",
        &["server/resume-unknown-session"],
    ),
    input(
        flag::LIST_SESSIONS,
        Flag,
        &[],
        &[Sessions],
        "gemini_list_sessions",
        &["server/list-sessions"],
    ),
    input(
        flag::DELETE_SESSION,
        Flag,
        &[],
        &[Sessions],
        "gemini_delete_session (a UUID)",
        &["server/delete-unknown-session"],
    ),
    input(
        flag::ACP,
        Flag,
        &[],
        &[Warm],
        "the warm backend's agent",
        &["acp/initialize-new-session"],
    ),
    input(
        flag::VERSION,
        Flag,
        &[],
        &[Doctor],
        "the doctor reports the CLI's version",
        &["server/version"],
    ),
    input(
        flag::HELP,
        Flag,
        &[],
        &[Doctor],
        "the doctor checks that the CLI lists the flags the server needs",
        &["server/help"],
    ),
    input(
        env::NO_COLOR,
        Env,
        &["1"],
        &[OneShot, Warm, Sessions, Doctor],
        "no colour codes in text the server parses",
        &["server/one-shot", "server/list-sessions"],
    ),
    input(
        env::TERM,
        Env,
        &["dumb"],
        &[OneShot, Warm, Sessions, Doctor],
        "no terminal features (and no colour warning) in a headless run",
        &["server/one-shot", "server/list-sessions"],
    ),
    input(
        env::NO_BROWSER,
        Env,
        &["true"],
        &[OneShot, Warm, Sessions, Doctor],
        "a login that needs a browser fails at once instead of waiting for one",
        &["server/one-shot", "server/no-browser-without-auth"],
    ),
    input(
        env::NO_RELAUNCH,
        Env,
        &["1"],
        &[OneShot, Warm, Sessions, Doctor],
        "one process, which the tree kill and the parent-death signal reach",
        &["server/one-shot", "server/list-sessions"],
    ),
    input(
        "TMPDIR",
        Env,
        &[],
        &[OneShot, Warm, Sessions, Doctor],
        "a private temporary directory per run, removed after it",
        &["server/one-shot"],
    ),
    input(
        "TEMP",
        Env,
        &[],
        &[OneShot, Warm, Sessions, Doctor],
        "the same directory under the name Windows tools read",
        &["server/one-shot"],
    ),
    input(
        "TMP",
        Env,
        &[],
        &[OneShot, Warm, Sessions, Doctor],
        "the same directory under its other common name",
        &["server/one-shot"],
    ),
    input(
        env::RUN_MARK,
        Env,
        &[],
        &[OneShot, Warm, Sessions, Doctor],
        "marks the run's processes so that the server finds any that left its process group (Linux)",
        &["server/one-shot"],
    ),
    input(
        env::TRUST_WORKSPACE,
        Env,
        &["true"],
        &[Warm],
        "trusts the agent's folder: without it an untrusted folder downgrades yolo and auto_edit",
        &["server/trust-workspace-variable"],
    ),
    input(
        env::TELEMETRY_ENABLED,
        Env,
        &["true"],
        &[Warm],
        "telemetry on where the user set none: CLI 0.62 keeps every request's history while it is off",
        &["server/telemetry-to-the-null-device"],
    ),
    input(
        env::TELEMETRY_TARGET,
        Env,
        &["local"],
        &[Warm],
        "the agent's telemetry stays on the machine",
        &["server/telemetry-to-the-null-device"],
    ),
    input(
        env::TELEMETRY_OUTFILE,
        Env,
        &[NULL_DEVICE],
        &[Warm],
        "the agent's telemetry goes to the null device, and to no OTLP endpoint",
        &["server/telemetry-to-the-null-device"],
    ),
    input(
        env::TELEMETRY_LOG_PROMPTS,
        Env,
        &["false"],
        &[Warm],
        "no prompt text in the telemetry",
        &["server/telemetry-to-the-null-device"],
    ),
    Input {
        verdict: Verdict::HonouredWhereRootOwned,
        ..input(
            env::SYSTEM_DEFAULTS_PATH,
            Env,
            &[],
            &[OneShot, Warm, Sessions, Doctor],
            "names the server's system-defaults file, only where the CLI reads it",
            &[
                "server/system-defaults-where-root-owned",
                "server/system-defaults-in-temp",
            ],
        )
    },
    Input {
        verdict: Verdict::HonouredWhereRootOwned,
        ..input(
            "$HOME/.cache/geminicli-mcp/system-defaults-<hash>.json",
            SettingsFile,
            &[],
            &[OneShot, Warm, Sessions, Doctor],
            "the machine's system defaults with the start-up clean-up of sessions switched off",
            &[
                "server/system-defaults-where-root-owned",
                "server/system-defaults-in-temp",
            ],
        )
    },
    Input {
        verdict: Verdict::HonouredWhereRootOwned,
        ..input(
            RETENTION_KEY,
            SettingsKey,
            &["false"],
            &[OneShot, Warm, Sessions, Doctor],
            "the CLI's start-up clean-up would delete concurrent runs' new sessions",
            &["server/system-defaults-where-root-owned"],
        )
    },
    input(
        "initialize",
        AcpRequest,
        &[],
        &[Warm],
        "starts the ACP conversation",
        &["acp/initialize-new-session"],
    ),
    input(
        "authenticate",
        AcpRequest,
        &["gemini-api-key", "vertex-ai", "gateway"],
        &[Warm],
        "when the agent asks, the method the environment names (never one needing a browser)",
        &["acp/authenticate"],
    ),
    input(
        "session/new",
        AcpRequest,
        &[],
        &[Warm],
        "a session per call, or a spare one",
        &["acp/initialize-new-session"],
    ),
    input(
        "session/load",
        AcpRequest,
        &[],
        &[Warm],
        "a call continues a session the agent does not hold",
        &["acp/load-after-restart"],
    ),
    input(
        "session/set_mode",
        AcpRequest,
        &["yolo", "autoEdit", "default", "plan"],
        &[Warm],
        "the call's approval mode",
        &["acp/modes-and-models", "acp/trusted-allow-always"],
    ),
    input(
        "session/set_model",
        AcpRequest,
        &[],
        &[Warm],
        "the call chose a model",
        &["acp/modes-and-models"],
    ),
    input(
        "session/prompt",
        AcpRequest,
        &[],
        &[Warm],
        "the call's prompt, context and images",
        &["acp/prompt-plain"],
    ),
    input(
        "session/cancel",
        AcpRequest,
        &[],
        &[Warm],
        "the call was cancelled or ran out of time",
        &["acp/cancel-mid-turn"],
    ),
];

/// The entry of `name` (a flag without its value, a variable, a key, a method).
pub fn find(name: &str) -> Option<&'static Input> {
    INVENTORY.iter().find(|i| i.name == name)
}

/// The flag name of a command-line argument: `--model=x` and `--model` give `--model`.
pub fn flag_name(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(name, _)| name)
}

/// Whether `arg` (a `--flag` or `--flag=value`) is in the inventory with a value the server may
/// pass; `Err` says what is missing.
pub fn check_arg(arg: &str, by: By) -> Result<(), String> {
    let name = flag_name(arg);
    let entry = find(name)
        .filter(|i| i.kind == Kind::Flag)
        .ok_or_else(|| format!("the flag {name} is not in the inventory (src/gemini/inputs.rs)"))?;
    if !entry.by.contains(&by) {
        return Err(format!(
            "the inventory does not list {by:?} as handing {name}"
        ));
    }
    match arg.split_once('=') {
        Some((_, value)) if !entry.values.is_empty() && !entry.values.contains(&value) => Err(
            format!("the inventory does not list {value:?} as a value of {name}"),
        ),
        _ => Ok(()),
    }
}

/// Whether the variable `name` is in the inventory as handed by `by`; `Err` says what is missing.
pub fn check_env(name: &str, by: By) -> Result<(), String> {
    let entry = find(name).filter(|i| i.kind == Kind::Env).ok_or_else(|| {
        format!("the variable {name} is not in the inventory (src/gemini/inputs.rs)")
    })?;
    if entry.by.contains(&by) {
        Ok(())
    } else {
        Err(format!(
            "the inventory does not list {by:?} as handing {name}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_entry_has_a_case() {
        for (i, a) in INVENTORY.iter().enumerate() {
            assert!(!a.cases.is_empty(), "{} has no differential case", a.name);
            assert!(!a.by.is_empty(), "{} is handed by nobody", a.name);
            for b in &INVENTORY[i + 1..] {
                assert_ne!(a.name, b.name, "listed twice");
            }
        }
    }

    #[test]
    fn the_constants_handed_as_a_whole_are_listed() {
        for arg in BASE_ARGS {
            check_arg(arg, By::OneShot).unwrap();
        }
        for arg in ACP_ARGS {
            check_arg(arg, By::Warm).unwrap();
        }
        for (name, value) in CHILD_ENV.iter().chain(&ACP_ENV).chain(&TELEMETRY_ENV) {
            let entry = find(name).unwrap();
            assert!(entry.values.contains(value), "{name}={value}");
        }
        for name in env::TMP {
            check_env(name, By::OneShot).unwrap();
        }
    }

    #[test]
    fn a_flag_or_value_not_listed_is_refused() {
        assert!(check_arg("--yolo", By::OneShot)
            .unwrap_err()
            .contains("--yolo"));
        assert!(check_arg("--approval-mode=nope", By::OneShot)
            .unwrap_err()
            .contains("\"nope\""));
        assert!(
            check_arg("--model=x", By::Warm).is_err(),
            "not the warm backend's"
        );
        assert!(check_arg("--model=anything", By::OneShot).is_ok());
        assert!(check_env("GEMINI_API_KEY", By::OneShot).is_err());
    }
}
