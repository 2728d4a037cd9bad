//! `geminicli-mcp doctor`: checks an installation without calling a model — which Gemini CLI
//! resolves and how, its version and flags (from `--version` and `--help`, each probe bounded),
//! which auth variables are set (names only, never values), which settings files the CLI reads and
//! what a call will do with its credentials, and the effective configuration.
//! Every problem comes with its fix; `main` exits non-zero when there is one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::config::{settings::GEMINI_CLI_BIN as BIN, table, Config, Given};
use crate::gemini::auth::{Seen, Verdict};
use crate::gemini::command::BASE_ARGS;
use crate::gemini::inputs::flag;
use crate::gemini::launch::Launch;
use crate::gemini::process;
use crate::gemini::resolve::{self, Platform};
use crate::gemini::retention;
use crate::gemini::settings::{self, Layer, SystemFile};

/// The oldest CLI the server works with: 0.40.0 brought `--skip-trust`.
pub const MIN_VERSION: (u64, u64, u64) = (0, 40, 0);
/// The newest CLI the server was run against (the real CLI, in the test suites).
pub const OBSERVED_VERSION: (u64, u64, u64) = (0, 61, 0);
/// The newest CLI release whose changes the server handles from its release notes (fake-gemini
/// plays them; not run against the real release here).
pub const NEWEST_KNOWN_VERSION: (u64, u64, u64) = (0, 64, 0);
/// Most bytes kept of a probe's output: `--help` is about 10 KiB.
const PROBE_OUTPUT_CAP: usize = 1024 * 1024;
/// The upgrade command, in every fix that needs it.
const UPGRADE: &str = "npm install -g @google/gemini-cli@latest";

/// Variables that select or carry the CLI's credentials. Only their names are ever reported.
pub const AUTH_VARIABLES: [&str; 8] = [
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_ACCESS_TOKEN",
];

/// A flag (or value) looked for in `--help`.
#[derive(Debug, Clone, Copy)]
pub struct Capability {
    /// The name reported (`--skip-trust`, `stream-json`, …).
    pub name: &'static str,
    /// Whether the server cannot work without it.
    pub required: bool,
    /// What it is for, in the report.
    pub purpose: &'static str,
}

/// The capabilities the doctor reports, required ones first.
pub const CAPABILITIES: [Capability; 5] = [
    Capability {
        name: flag::SKIP_TRUST,
        required: true,
        purpose: "headless runs in any folder (0.40.0)",
    },
    Capability {
        name: "stream-json",
        required: true,
        purpose: "-o stream-json: answers, session ids and stats that survive failures",
    },
    Capability {
        name: flag::APPROVAL_MODE,
        required: true,
        purpose:
            "approval mode yolo (--approval-mode=yolo): no confirmation prompt nobody could answer",
    },
    Capability {
        name: flag::ACP,
        required: false,
        purpose: "Agent Client Protocol mode: the warm agents of the prompt tools (without it they run one-shot) and of the `acp` tool set",
    },
    Capability {
        name: "--session-id",
        required: false,
        purpose: "choosing a new session's id (0.41.0)",
    },
];

/// One thing that stops the server from working, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// How one probe of the CLI went.
#[derive(Debug, Clone)]
pub enum Probe {
    /// The CLI was not run (it could not be resolved).
    Skipped,
    /// The CLI ended within the bound.
    Finished {
        /// Its exit code (128 + signal when a signal ended it).
        exit_code: Option<i32>,
        /// What it printed on stdout, lossily decoded.
        stdout: String,
        /// The end of what it printed on stderr.
        stderr: String,
        /// How long it took.
        duration: Duration,
    },
    /// The bound passed; the CLI's tree was killed.
    TimedOut(Duration),
    /// It could not be started.
    SpawnFailed(String),
}

impl Probe {
    fn json(&self) -> Value {
        match self {
            Probe::Skipped => json!({"status": "skipped"}),
            Probe::Finished {
                exit_code,
                duration,
                ..
            } => {
                json!({"status": "finished", "exitCode": exit_code, "durationMs": duration.as_millis() as u64})
            }
            Probe::TimedOut(bound) => {
                json!({"status": "timed_out", "timeoutMs": bound.as_millis() as u64})
            }
            Probe::SpawnFailed(e) => json!({"status": "spawn_failed", "error": e}),
        }
    }

    /// stdout when the probe exited 0.
    fn output(&self) -> Option<&str> {
        match self {
            Probe::Finished {
                exit_code: Some(0),
                stdout,
                ..
            } => Some(stdout),
            _ => None,
        }
    }
}

/// Everything the doctor found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The program that would run, with its leading arguments (the JS entry for node).
    pub program: Option<(PathBuf, Vec<OsString>)>,
    /// How it was found (`GEMINI_CLI_BIN=…`, `PATH: …`, an npm shim …).
    pub via: Option<String>,
    /// The `--version` probe.
    pub version_probe: Probe,
    /// The version `--version` printed, when it printed one.
    pub version: Option<String>,
    /// The `--help` probe.
    pub help_probe: Probe,
    /// Each capability and whether `--help` lists it (`None`: `--help` gave nothing to read).
    pub capabilities: Vec<(Capability, Option<bool>)>,
    /// Names of the auth variables set in the server's environment.
    pub auth_variables: Vec<&'static str>,
    /// Whether the CLI's cached OAuth login (`~/.gemini/oauth_creds.json`) exists.
    pub oauth_credentials: Option<PathBuf>,
    /// The settings files the CLI would consult, highest layer first, with their `selectedType`.
    pub settings: Vec<SettingsRow>,
    /// What a call will do about its credentials.
    pub verdict: Verdict,
    /// Whether a call's CLI start may run the start-up clean-up that deletes message-less
    /// sessions, so that calls in one workspace pass its start gate one at a time.
    pub session_cleanup: bool,
    /// The effective configuration, by setting name.
    pub config: Vec<(&'static str, Value)>,
    /// The MCP servers the CLI would start, each checked (`doctor/mcp.rs`).
    pub(crate) mcp_servers: Vec<mcp::McpRow>,
    /// What stops the server from working.
    pub problems: Vec<Problem>,
    /// What may go wrong but does not always (no credentials visible, …).
    pub warnings: Vec<String>,
}

impl Report {
    /// True when nothing stops the server from working.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report as one JSON document (`--json`).
    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "server": {"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")},
            "cli": {
                "program": self.program.as_ref().map(|(p, _)| p.display().to_string()),
                "prefixArgs": self.program.as_ref().map(|(_, a)| a.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>()),
                "via": self.via,
                "version": self.version,
                "minimumVersion": format_version(MIN_VERSION),
                "testedVersions": {"observed": [format_version(MIN_VERSION), format_version(OBSERVED_VERSION)],
                    "fromReleaseNotes": format!("{}.x", minor(NEWEST_KNOWN_VERSION))},
                "versionProbe": self.version_probe.json(),
                "helpProbe": self.help_probe.json(),
                "capabilities": self.capabilities.iter().map(|(c, found)| {
                    (c.name.to_owned(), json!({"present": found, "required": c.required}))
                }).collect::<serde_json::Map<_, _>>(),
            },
            "auth": {
                "variables": self.auth_variables,
                "oauthCredentialsFile": self.oauth_credentials.as_ref().map(|p| p.display().to_string()),
                "settings": self.settings.iter().map(SettingsRow::json).collect::<Vec<_>>(),
                "prediction": match &self.verdict {
                    Verdict::Uses(how) => json!({"works": true, "uses": how}),
                    Verdict::Fails { reason, fix } => json!({"works": false, "errorKind": "auth_required", "reason": reason, "fix": fix}),
                },
            },
            "sessions": {"startupCleanup": self.session_cleanup},
            "mcpServers": mcp::json(&self.mcp_servers),
            "config": self.config.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect::<serde_json::Map<_, _>>(),
            "problems": self.problems.iter().map(|p| json!({"message": p.message, "fix": p.fix})).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }

    /// The report as text for a person.
    #[expect(
        clippy::too_many_lines,
        reason = "the report's sections in the order they print"
    )]
    pub fn to_text(&self) -> String {
        let mut t = format!(
            "geminicli-mcp {} doctor\n\nGemini CLI\n",
            env!("CARGO_PKG_VERSION")
        );
        match (&self.program, &self.via) {
            (Some((program, prefix)), via) => {
                let mut line = program.display().to_string();
                for a in prefix {
                    line.push(' ');
                    line.push_str(&a.to_string_lossy());
                }
                t.push_str(&format!("  program          {line}\n"));
                if let Some(via) = via {
                    t.push_str(&format!("  found via        {via}\n"));
                }
            }
            (None, _) => t.push_str("  program          not found\n"),
        }
        t.push_str(&format!(
            "  version          {}\n",
            match (&self.version, &self.version_probe) {
                (Some(v), Probe::Finished { duration, .. }) =>
                    format!("{v} (--version took {:.1} s)", duration.as_secs_f64()),
                (_, probe) => probe_text(probe),
            }
        ));
        t.push_str(&format!(
            "  tested with      {} to {} (run here); up to {}.x (from release notes)\n",
            format_version(MIN_VERSION),
            format_version(OBSERVED_VERSION),
            minor(NEWEST_KNOWN_VERSION)
        ));
        t.push_str(&format!(
            "  --help           {}\n",
            match &self.help_probe {
                Probe::Finished {
                    exit_code: Some(0),
                    duration,
                    ..
                } => format!("read (took {:.1} s)", duration.as_secs_f64()),
                probe => probe_text(probe),
            }
        ));
        for (c, found) in &self.capabilities {
            let state = match found {
                Some(true) => "yes",
                Some(false) if c.required => "MISSING",
                Some(false) => "no",
                None => "unknown",
            };
            t.push_str(&format!("  {:<16} {state:<8} {}\n", c.name, c.purpose));
        }
        t.push_str("\nAuth (names only, never values)\n");
        if self.auth_variables.is_empty() {
            t.push_str("  variables        none set\n");
        } else {
            t.push_str(&format!(
                "  variables        {}\n",
                self.auth_variables.join(", ")
            ));
        }
        t.push_str(&format!(
            "  cached login     {}\n",
            self.oauth_credentials
                .as_ref()
                .map_or("none".to_owned(), |p| p.display().to_string())
        ));
        for row in &self.settings {
            t.push_str(&format!("  {:<16} {}\n", row.label(), row.text()));
        }
        t.push_str(&format!(
            "  a call           {}\n",
            match &self.verdict {
                Verdict::Uses(how) => format!("uses {how}"),
                Verdict::Fails { reason, .. } => format!("FAILS auth_required: {reason}"),
            }
        ));
        t.push_str(if self.session_cleanup {
            "\nSessions\n  start-up clean-up on: calls in one workspace start one at a time (docs/sessions.md)\n"
        } else {
            "\nSessions\n  start-up clean-up off: calls in one workspace start together\n"
        });
        t.push_str(&mcp::text(&self.mcp_servers));
        t.push_str("\nConfiguration (flags over environment over defaults)\n");
        // The HTTP limits' names are the longest; the values stay in one column past them.
        let width = self.config.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (name, value) in &self.config {
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Null => "(unset)".to_owned(),
                other => other.to_string(),
            };
            t.push_str(&format!("  {name:<width$} {value}\n"));
        }
        if !self.warnings.is_empty() {
            t.push_str("\nWarnings\n");
            for w in &self.warnings {
                t.push_str(&format!("  ! {w}\n"));
            }
        }
        if self.problems.is_empty() {
            t.push_str("\nOK: the server can run the Gemini CLI.\n");
        } else {
            t.push_str(&format!("\n{} problem(s)\n", self.problems.len()));
            for p in &self.problems {
                t.push_str(&format!("  x {}\n    fix: {}\n", p.message, p.fix));
            }
        }
        t
    }
}

fn probe_text(probe: &Probe) -> String {
    match probe {
        Probe::Skipped => "not run".into(),
        Probe::Finished {
            exit_code, stderr, ..
        } => {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            format!(
                "failed (exit {}){}",
                exit_code.map_or("?".into(), |c| c.to_string()),
                last.map_or(String::new(), |l| format!(": {}", l.trim()))
            )
        }
        Probe::TimedOut(bound) => format!("timed out after {:.1} s", bound.as_secs_f64()),
        Probe::SpawnFailed(e) => format!("could not start: {e}"),
    }
}

/// `X.Y.Z` as numbers, from the first such token in `text` (`0.61.0`, `v0.40.0-preview.1`).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split(|c: char| c.is_whitespace() || c == 'v')
        .find_map(|token| {
            let core = token.split(['-', '+']).next()?;
            let mut parts = core.split('.');
            let v = (
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
            );
            parts.next().is_none().then_some(v)
        })
}

/// `X.Y`, the release line of a version.
fn minor((a, b, _): (u64, u64, u64)) -> String {
    format!("{a}.{b}")
}

/// The warning for a CLI newer than every release the server knows (it may still work: the
/// server reads what it does not know leniently).
fn untested(text: &str, v: (u64, u64, u64)) -> Option<String> {
    (minor_of(v) > minor_of(NEWEST_KNOWN_VERSION)).then(|| {
        format!(
            "the Gemini CLI is {text}, newer than the releases this server was tested with ({} to {} run here, up to {}.x from their release notes); it may well work, and if calls misbehave, docs/cli-releases.md says what each release changed",
            format_version(MIN_VERSION),
            format_version(OBSERVED_VERSION),
            minor(NEWEST_KNOWN_VERSION),
        )
    })
}

fn minor_of((a, b, _): (u64, u64, u64)) -> (u64, u64) {
    (a, b)
}

fn format_version((a, b, c): (u64, u64, u64)) -> String {
    format!("{a}.{b}.{c}")
}

/// Whether `help` (the CLI's `--help` text) lists `name`: a flag only where yargs defines it (a
/// line starting with it, after an optional `-x, ` alias), since descriptions mention other
/// flags (`--experimental-acp … use --acp instead`); a value such as `stream-json` anywhere.
pub fn help_lists(help: &str, name: &str) -> bool {
    if !name.starts_with("--") {
        return help.contains(name);
    }
    help.lines().any(|line| {
        let line = line.trim_start();
        let line = match line.split_once(", ") {
            Some((alias, rest)) if alias.len() == 2 && alias.starts_with('-') => rest,
            _ => line,
        };
        line.strip_prefix(name).is_some_and(
            |rest| !matches!(rest.chars().next(), Some(c) if c.is_ascii_alphanumeric() || c == '-'),
        )
    })
}

/// Inputs of a doctor run, taken from the process by `main` (tests pass their own).
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The effective configuration.
    pub config: Config,
    /// Bound on each probe.
    pub timeout: Duration,
    /// The server's environment (auth names, PATH, the child's environment).
    pub vars: Vec<(OsString, OsString)>,
    /// The directory probes run in.
    pub cwd: PathBuf,
    /// The settings given as flags (the listing shows them over the environment).
    pub given: Given,
    /// Settings to show as the HTTP transport reads them, by name, over the listing's.
    pub extra_config: Vec<(&'static str, Value)>,
    /// Problems found outside the doctor (an HTTP setting the server would refuse).
    pub extra_problems: Vec<Problem>,
}

impl Inputs {
    /// Reads the process: its environment and working directory.
    pub fn from_process(config: Config, timeout: Duration) -> Self {
        Inputs {
            config,
            timeout,
            vars: std::env::vars_os().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            given: Given::default(),
            extra_config: Vec::new(),
            extra_problems: Vec::new(),
        }
    }

    fn var(&self, name: &str) -> Option<&OsString> {
        let windows = Platform::current() == Platform::Windows;
        self.vars
            .iter()
            .find(|(k, _)| {
                if windows {
                    k.to_string_lossy().eq_ignore_ascii_case(name)
                } else {
                    k == name
                }
            })
            .map(|(_, v)| v)
    }
}

/// Runs every check. The two probes run at once: each real CLI start takes seconds.
pub async fn run(inputs: Inputs) -> Report {
    let config = &inputs.config;
    let mut problems = Vec::new();
    let mut warnings = Vec::new();

    let resolved = resolve::resolve(
        config.gemini_bin.as_deref(),
        inputs.var("PATH").map(OsString::as_os_str),
        inputs.var("PATHEXT").map(OsString::as_os_str),
        Platform::current(),
    );
    let (program, via, version_probe, help_probe) = match resolved {
        Err(e) => {
            let text = e.to_string();
            let (message, fix) = match text.split_once("; ") {
                Some((m, f)) => (m.to_owned(), f.to_owned()),
                None => (text, format!("`{UPGRADE}`, or set {BIN}")),
            };
            problems.push(Problem { message, fix });
            (None, None, Probe::Skipped, Probe::Skipped)
        }
        Ok(r) => {
            let (version, help) = tokio::join!(
                probe(&inputs, &r.program, &r.prefix_args, flag::VERSION),
                probe(&inputs, &r.program, &r.prefix_args, flag::HELP),
            );
            (Some((r.program, r.prefix_args)), Some(r.via), version, help)
        }
    };

    let version = version_problems(&version_probe, &help_probe, &mut problems);
    if let Some(w) = version.as_ref().and_then(|(text, v)| untested(text, *v)) {
        warnings.push(w);
    }
    let capabilities = capability_problems(help_probe.output(), &mut problems);
    warnings.extend(config.unread.iter().cloned());
    let (auth_variables, oauth_credentials) = auth_variables(&inputs);
    let (settings, verdict) = auth(&inputs, &mut problems, &mut warnings);
    let session_cleanup = session_cleanup(&inputs);
    let (mcp_rows, nested) = mcp::check(&inputs.vars, &inputs.cwd, &mut warnings, config).await;
    problems.extend(nested.map(|(message, fix)| Problem { message, fix }));
    problems.extend(inputs.extra_problems.iter().cloned());
    let mut config_rows =
        table::effective(config, inputs.given.over(|name| inputs.var(name).cloned()));
    for (name, value) in &inputs.extra_config {
        match config_rows.iter_mut().find(|(n, _)| n == name) {
            Some(row) => row.1 = value.clone(),
            None => config_rows.push((name, value.clone())),
        }
    }
    Report {
        program,
        via,
        version_probe,
        version: version.map(|(text, _)| text),
        help_probe,
        capabilities,
        auth_variables,
        oauth_credentials,
        settings,
        verdict,
        session_cleanup,
        mcp_servers: mcp_rows,
        config: config_rows,
        problems,
        warnings,
    }
}

/// The problems of the two probes, and the version `--version` printed (text and number).
fn version_problems(
    version_probe: &Probe,
    help_probe: &Probe,
    problems: &mut Vec<Problem>,
) -> Option<(String, (u64, u64, u64))> {
    let version = version_probe
        .output()
        .and_then(|out| parse_version(out).map(|v| (out.trim().to_owned(), v)));
    for (what, p) in [(flag::VERSION, version_probe), (flag::HELP, help_probe)] {
        match p {
            Probe::TimedOut(bound) => problems.push(Problem {
                message: format!(
                    "`gemini {what}` did not finish within {:.1} s (timed out; its process tree was killed)",
                    bound.as_secs_f64()
                ),
                fix: "run `gemini --version` by hand to see what it waits for; on a loaded machine \
                      raise the bound with --doctor-timeout SECONDS"
                    .into(),
            }),
            Probe::SpawnFailed(e) => problems.push(Problem {
                message: format!("`gemini {what}` could not be started: {e}"),
                fix: format!("check {BIN} and the file's permissions, or reinstall the CLI"),
            }),
            Probe::Finished {
                exit_code, stderr, ..
            } if *exit_code != Some(0) => problems.push(Problem {
                message: format!(
                    "`gemini {what}` failed (exit {}){}",
                    exit_code.map_or("?".into(), |c| c.to_string()),
                    stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map_or(String::new(), |l| format!(": {}", l.trim()))
                ),
                fix: format!("reinstall the CLI (`{UPGRADE}`) and run `gemini --version` by hand"),
            }),
            _ => {}
        }
    }
    if let (Some(out), None) = (version_probe.output(), &version) {
        problems.push(Problem {
            message: format!(
                "`gemini --version` printed no version number ({:?})",
                out.trim().chars().take(80).collect::<String>()
            ),
            fix: format!("{BIN} may point at something other than the Gemini CLI; `{UPGRADE}`"),
        });
    }
    if let Some((text, v)) = &version {
        if *v < MIN_VERSION {
            problems.push(Problem {
                message: format!(
                    "the Gemini CLI is {text}, older than {}",
                    format_version(MIN_VERSION)
                ),
                fix: format!(
                    "upgrade it: `{UPGRADE}` (the server needs --skip-trust, which came with {}), then run `geminicli-mcp doctor` again",
                    format_version(MIN_VERSION)
                ),
            });
        }
    }

    version
}

/// Which capabilities `--help` lists, and a problem for each required one it lacks.
fn capability_problems(
    help: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Vec<(Capability, Option<bool>)> {
    let capabilities: Vec<(Capability, Option<bool>)> = CAPABILITIES
        .iter()
        .map(|c| (*c, help.map(|h| help_lists(h, c.name))))
        .collect();
    let missing: Vec<&str> = capabilities
        .iter()
        .filter(|(c, found)| c.required && *found == Some(false))
        .map(|(c, _)| c.name)
        .collect();
    if !missing.is_empty() {
        problems.push(Problem {
            message: format!(
                "the Gemini CLI's --help lacks {} (the server passes {})",
                missing.join(", "),
                BASE_ARGS.join(" ")
            ),
            fix: format!("upgrade the CLI: `{UPGRADE}`"),
        });
    }

    capabilities
}

/// The auth variables set (names only) and the cached login.
fn auth_variables(inputs: &Inputs) -> (Vec<&'static str>, Option<PathBuf>) {
    let auth_variables: Vec<&'static str> = AUTH_VARIABLES
        .iter()
        .copied()
        .filter(|n| inputs.var(n).is_some_and(|v| !v.is_empty()))
        .collect();
    let oauth_credentials = settings::user_settings_path(|k| inputs.var(k).cloned())
        .and_then(|p| p.parent().map(|d| d.join("oauth_creds.json")))
        .filter(|p| p.is_file());
    (auth_variables, oauth_credentials)
}

/// One settings file the CLI would consult, as the doctor reports it.
#[derive(Debug, Clone)]
pub struct SettingsRow {
    /// Which layer.
    pub layer: Layer,
    /// Where.
    pub path: PathBuf,
    /// Whether the CLI reads it (system files pass a security check first).
    pub check: SystemFile,
    /// Its `security.auth.selectedType`; `Err` when it cannot be read.
    pub selected_type: Result<Option<String>, String>,
}

impl SettingsRow {
    fn label(&self) -> &'static str {
        match self.layer {
            Layer::System => "system settings",
            Layer::Workspace => "workspace",
            Layer::User => "user settings",
            Layer::SystemDefaults => "system defaults",
        }
    }

    fn state(&self) -> &'static str {
        match (&self.check, &self.selected_type) {
            (SystemFile::Missing, _) => "missing",
            (_, Ok(None)) if !self.path.exists() => "missing",
            (SystemFile::Skipped(_), _) => "skipped by the CLI",
            (_, Err(_)) => "unreadable",
            (SystemFile::Unknown, _) => "read (its security check is not made here)",
            (SystemFile::Read, _) => "read",
        }
    }

    fn text(&self) -> String {
        let mut t = format!("{}: {}", self.path.display(), self.state());
        match (&self.check, &self.selected_type) {
            (SystemFile::Skipped(why), _) => t.push_str(&format!(" ({why})")),
            (_, Ok(Some(sel))) => t.push_str(&format!(", selectedType {sel}")),
            (_, Err(e)) => t.push_str(&format!(" ({e})")),
            _ => {}
        }
        t
    }

    fn json(&self) -> Value {
        json!({
            "layer": self.label(),
            "path": self.path.display().to_string(),
            "state": self.state(),
            "skippedBecause": match &self.check { SystemFile::Skipped(why) => Some(why), _ => None },
            "selectedType": self.selected_type.as_ref().ok().cloned().flatten(),
        })
    }
}

/// The settings layers (each one's `selectedType`) and what a call will do with its credentials:
/// a call that cannot authenticate is a problem, a cached Google login a warning.
fn auth(
    inputs: &Inputs,
    problems: &mut Vec<Problem>,
    warnings: &mut Vec<String>,
) -> (Vec<SettingsRow>, Verdict) {
    let var = |k: &str| inputs.var(k).cloned();
    let layers = settings::layers(&inputs.cwd, var);
    let verdict = Seen::read(&layers, var).verdict();
    let rows: Vec<SettingsRow> = layers
        .iter()
        .map(|l| SettingsRow {
            layer: l.layer,
            path: l.path.clone(),
            check: l.check.clone(),
            selected_type: l.content.clone().map(|c| {
                c.as_ref()
                    .and_then(|c| settings::selected_type(c))
                    .map(str::to_owned)
            }),
        })
        .collect();
    match &verdict {
        Verdict::Fails { reason, fix } => problems.push(Problem {
            message: format!("calls will fail auth_required: {reason}"),
            fix: fix.clone(),
        }),
        Verdict::Uses(how) if how.contains("cached Google login") => warnings.push(format!(
            "calls will use {how}. Unless the account has such a licence, set GEMINI_API_KEY or configure Vertex AI in the server's environment and set `security.auth.selectedType` to match"
        )),
        Verdict::Uses(_) => {}
    }
    (rows, verdict)
}

/// Whether the CLI a call starts runs its start-up clean-up, read from the layers it will read
/// (with the server's own system-defaults file, where the server has one the CLI reads).
fn session_cleanup(inputs: &Inputs) -> bool {
    let ours = retention::child_env().map(|(_, v)| v);
    let var = |k: &str| match k {
        settings::DEFAULTS_ENV if ours.is_some() => ours.clone(),
        _ => inputs.var(k).cloned(),
    };
    retention::retention_on(&settings::layers(&inputs.cwd, var))
}

/// Runs `program prefix… flag` with the environment a call would get, bounded by the timeout;
/// on expiry the whole tree is killed, as for a cancelled call.
async fn probe(inputs: &Inputs, program: &Path, prefix: &[OsString], flag: &str) -> Probe {
    let launch = Launch {
        program: program.to_owned(),
        prefix: prefix.to_vec(),
        via: String::new(),
    };
    // The probe's environment is exactly `inputs.vars` (not the doctor's own), so tests and the
    // report agree on what the CLI saw.
    let mut spec = launch.spec_from_vars(
        &inputs.config,
        &inputs.cwd,
        [flag.into()],
        inputs.vars.clone(),
    );
    spec.max_output_bytes = PROBE_OUTPUT_CAP;
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        let bound = inputs.timeout;
        tokio::spawn(async move {
            tokio::time::sleep(bound).await;
            cancel.cancel();
        })
    };
    let result = process::run(spec, cancel.clone(), None).await;
    timer.abort();
    match result {
        Err(e) => Probe::SpawnFailed(e.to_string()),
        Ok(_) if cancel.is_cancelled() => Probe::TimedOut(inputs.timeout),
        Ok(out) => Probe::Finished {
            exit_code: out.status.map(|s| s.code()),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: crate::error::tail_lossy(&out.stderr, 2048),
            duration: out.duration,
        },
    }
}

mod mcp;
#[cfg(test)]
mod tests;
