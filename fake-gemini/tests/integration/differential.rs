//! The differential suite: the real Gemini CLI, run against the scripted API (`fake_gemini::api`),
//! and fake-gemini, run with the same scenario marker, flags and environment, must agree on the
//! exit code, stdout and stderr after masking (the captures' own masking, `support::Sandbox::mask`).
//!
//! The real CLI is pinned in `fake-gemini/differential/CLI_VERSION` and installed from the npm
//! registry into `$HOME/.cache/fake-gemini/differential/gemini-cli-<version>` when missing, by
//! one test process while the others wait (`FAKE_GEMINI_REAL_CLI=/path/to/node_modules/.bin/gemini`
//! uses an existing install instead; its package.json must carry the pinned version). `old-version`'s cases run the real CLI of the
//! version that scenario emulates (`OLD_CLI`), cached and installed the same way. Runs are
//! sequential: one real CLI at a time.
//!
//! ```sh
//! cargo nextest run -p fake-gemini --run-ignored only -E 'test(differential::full)'    # every case
//! cargo nextest run -p fake-gemini --run-ignored only -E 'test(differential::smoke)'   # the CI subset
//! FAKE_GEMINI_DIFF_FILTER=quota cargo nextest run -p fake-gemini --run-ignored only -E 'test(differential::full)'
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_gemini::api::{ApiServer, Config};

use crate::inputs;
use crate::support::Sandbox;

/// The pinned real CLI version (one place: `fake-gemini/differential/CLI_VERSION`).
pub(crate) fn pinned_version() -> String {
    let path = crate::support::manifest_dir().join("differential/CLI_VERSION");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

/// The version in the `package.json` of the install that `gemini` (a `node_modules/.bin` link
/// or the bundle's script) belongs to.
fn installed_version(gemini: &Path) -> Option<String> {
    let script = std::fs::canonicalize(gemini).ok()?;
    let pkg = script
        .ancestors()
        .find(|d| d.join("package.json").is_file() && d.ends_with("gemini-cli"))?
        .join("package.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(pkg).ok()?).ok()?;
    v["version"].as_str().map(str::to_string)
}

/// The real CLI at the pinned version: `FAKE_GEMINI_REAL_CLI`, else the cached install, installed
/// with npm when missing.
pub(crate) fn real_cli() -> PathBuf {
    real_cli_at(&pinned_version(), true)
}

/// The real CLI at `version`: the cached install (installed with npm when missing), or
/// `FAKE_GEMINI_REAL_CLI` when `may_override` (the pinned version only).
fn real_cli_at(version: &str, may_override: bool) -> PathBuf {
    let version = version.to_string();
    let gemini = match std::env::var_os("FAKE_GEMINI_REAL_CLI").filter(|_| may_override) {
        Some(p) => PathBuf::from(p),
        None => {
            let home = std::env::var_os("HOME").expect("HOME is set");
            let dir = Path::new(&home)
                .join(".cache/fake-gemini/differential")
                .join(format!("gemini-cli-{version}"));
            let gemini = dir.join("node_modules/.bin/gemini");
            if installed_version(&gemini).as_deref() != Some(version.as_str()) {
                install(&dir, &version);
            }
            gemini
        }
    };
    assert_eq!(
        installed_version(&gemini).as_deref(),
        Some(version.as_str()),
        "{} is not @google/gemini-cli {version}",
        gemini.display()
    );
    gemini
}

/// Installs `@google/gemini-cli@version` from npm as `dir`, safely beside other test processes
/// doing the same (the differential tests run at once): under a lock beside `dir`, into a fresh
/// folder renamed into place, so none installs twice into one prefix or sees half an install.
fn install(dir: &Path, version: &str) {
    let beside = |suffix: String| {
        let mut name = dir.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    let _lock = InstallLock::take(&beside(".lock".into()));
    if installed_version(&dir.join("node_modules/.bin/gemini")).as_deref() == Some(version) {
        return; // another test process installed it while this one waited
    }
    let fresh = beside(format!(".partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    std::fs::create_dir_all(&fresh).expect("create the CLI cache dir");
    eprintln!(
        "installing @google/gemini-cli@{version} into {}",
        dir.display()
    );
    let st = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&fresh)
        .arg(format!("@google/gemini-cli@{version}"))
        .status()
        .expect("run npm (the differential suite needs node and npm)");
    assert!(st.success(), "npm install failed: {st}");
    // A stale or other-version install is replaced whole.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&fresh, dir).expect("move the install into place");
}

/// A lock held as a directory holding its owner's pid; one whose owner is gone is taken over.
struct InstallLock(PathBuf);

/// How long a lock may stand without its owner's pid before it counts as left behind.
const UNOWNED_LOCK: Duration = Duration::from_secs(10);

impl InstallLock {
    fn take(path: &Path) -> InstallLock {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the CLI cache dir");
        }
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => {
                    std::fs::write(path.join("pid"), std::process::id().to_string())
                        .expect("write the install lock's pid");
                    return InstallLock(path.to_path_buf());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(path.join("pid"))
                        .ok()
                        .and_then(|p| p.trim().parse::<u32>().ok());
                    // A lock whose pid never came (its owner died between the two steps) is
                    // as stale as one whose owner is gone.
                    let unowned = holder.is_none()
                        && std::fs::metadata(path)
                            .and_then(|m| m.modified())
                            .is_ok_and(|t| t.elapsed().unwrap_or_default() > UNOWNED_LOCK);
                    match holder {
                        Some(pid) if !alive(pid) => {
                            let _ = std::fs::remove_dir_all(path);
                        }
                        _ if unowned => {
                            let _ = std::fs::remove_dir_all(path);
                        }
                        // Held, or just made and its pid not yet written.
                        _ => std::thread::sleep(Duration::from_millis(500)),
                    }
                }
                Err(e) => panic!("take the install lock {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether a process of this pid runs (signal 0 checks without sending).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the pid exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Elsewhere a lock's owner is taken to run: a lock left by a killed run is removed by hand.
#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

/// One comparison: a prompt (carrying the scenario marker) and the flags, for both sides.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The prompt passed with `-p`.
    pub prompt: &'static str,
    /// `-o` value.
    pub format: &'static str,
    /// More flags after `-p PROMPT -o FORMAT [--skip-trust]`.
    pub args: &'static [&'static str],
    /// Part of the CI smoke subset.
    pub smoke: bool,
    /// Settings merged into both sides' `~/.gemini/settings.json`: how an environment fact of
    /// the scenario (e.g. `max-session-turns`) is set up for the real CLI.
    pub settings: Option<&'static str>,
    /// Pass `--skip-trust` (the default); without it a fresh cwd is untrusted.
    pub skip_trust: bool,
    /// Write `security.auth.selectedType` (the default); without it, and without
    /// `GEMINI_API_KEY`, the CLI finds no auth.
    pub selected_type: bool,
    /// Variables left out of both sides' environment.
    pub remove_env: &'static [&'static str],
    /// Variables set on both sides.
    pub set_env: &'static [(&'static str, &'static str)],
    /// The exact text of `~/.gemini/settings.json` (instead of the JSON built from
    /// `selected_type` and `settings`): an unparsable or commented file.
    pub settings_raw: Option<&'static str>,
    /// `PATH` holds only `node` and a stub executable per name here that fails every command
    /// (a `docker` without images that cannot pull); `None`: the host's `PATH`.
    pub path_stubs: Option<&'static [&'static str]>,
    /// This many `a`s on stdin before the `-p` prompt (0: stdin is /dev/null).
    pub stdin_chars: usize,
    /// Another real CLI version than the pinned one (for a scenario emulating that version).
    pub cli: Option<&'static str>,
    /// The prompt as the positional query after `args` instead of `-p PROMPT`.
    pub positional: bool,
    /// A system settings or defaults file both sides are pointed at.
    pub system_file: Option<SystemFile>,
    /// Rules of `~/.gemini/trustedFolders.json` (`CWD` stands for the run's cwd, `PARENT` for
    /// its parent directory).
    pub trusted_folders: &'static [(&'static str, &'static str)],
    /// How the command line is made: as a user types it, or as geminicli-mcp hands it.
    pub shape: Shape,
    /// A name the server's inventory of CLI inputs refers to (`server/…`).
    pub name: Option<&'static str>,
}

/// How a case's command line, stdin and environment are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `-p PROMPT -o FORMAT [--skip-trust] ARGS` (or the prompt positional), as a user types it.
    Cli,
    /// What geminicli-mcp's one-shot backend hands the CLI: its base flags (the approval mode
    /// replaced by an `--approval-mode=` of `args`), then `args`; the prompt on stdin; its child
    /// variables, a private `TMPDIR`/`TEMP`/`TMP` and the run's mark in the environment.
    Server,
    /// `ARGS` alone with the same environment: the server's session tools and doctor probes.
    ServerBare,
}

/// Where a case's system file lives: which ownership and mode check it meets.
#[derive(Debug, Clone, Copy)]
pub enum Place {
    /// A directory of its own (mode 755) in the system temp directory: /tmp (1777) fails the
    /// check, and so does the directory itself for a user other than root.
    Temp,
    /// A directory of its own (mode 755) under the build's target directory: secure when the
    /// suite runs as root in a tree root owns (the file is then read), else not owned by root.
    Target,
}

/// A system settings or defaults file: the variable naming it, where it is, its mode and text.
#[derive(Debug, Clone, Copy)]
pub struct SystemFile {
    /// `GEMINI_CLI_SYSTEM_SETTINGS_PATH` or `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`.
    pub var: &'static str,
    /// Its directory.
    pub place: Place,
    /// The file's mode.
    pub mode: u32,
    /// Its text.
    pub text: &'static str,
}

/// A system defaults file whose `tools.allowed` shows on stderr when it is read (the deprecation
/// warning), in `place`.
const fn defaults_file(place: Place, mode: u32) -> SystemFile {
    SystemFile {
        var: "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
        place,
        mode,
        text: r#"{"tools": {"allowed": ["read_file"]}}"#,
    }
}

const fn case(prompt: &'static str, format: &'static str, smoke: bool) -> Case {
    Case {
        prompt,
        format,
        args: &[],
        smoke,
        settings: None,
        skip_trust: true,
        selected_type: true,
        remove_env: &[],
        set_env: &[],
        settings_raw: None,
        path_stubs: None,
        stdin_chars: 0,
        cli: None,
        positional: false,
        system_file: None,
        trusted_folders: &[],
        shape: Shape::Cli,
        name: None,
    }
}

/// A case named `name` in `shape`, with the prompt `prompt` (stdin for [`Shape::Server`]).
const fn server(name: &'static str, shape: Shape, prompt: &'static str) -> Case {
    Case {
        shape,
        name: Some(name),
        ..case(prompt, "stream-json", false)
    }
}

/// The system-defaults file geminicli-mcp writes (the start-up clean-up of sessions off), in
/// `place`.
const fn server_defaults(place: Place) -> SystemFile {
    SystemFile {
        var: inputs::env::SYSTEM_DEFAULTS_PATH,
        place,
        mode: 0o644,
        text: "{\n  \"general\": {\n    \"sessionRetention\": {\n      \"enabled\": false\n    }\n  }\n}",
    }
}

/// The version `old-version` emulates (its `cli-version`), compared with that real CLI.
const OLD_CLI: &str = "0.39.0";

/// Every scenario both sides can express, in the formats that show its behaviour. The others,
/// and why, are listed in fake-gemini's README ("Fidelity").
pub const CASES: &[Case] = &[
    case("[[fake-gemini:success]]", "text", true),
    case("[[fake-gemini:success]]", "json", false),
    case("[[fake-gemini:success]]", "stream-json", false),
    case(r#"[[fake-gemini:success text="4"]]"#, "json", false),
    Case {
        args: &["-m", "flash"],
        ..case("[[fake-gemini:success]]", "json", true)
    },
    Case {
        args: &["-m", "pro"],
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    case("[[fake-gemini:tool-call]]", "text", false),
    case("[[fake-gemini:tool-call]]", "json", false),
    case("[[fake-gemini:tool-call]]", "stream-json", true),
    case("[[fake-gemini:tool-error]]", "text", false),
    case("[[fake-gemini:tool-error]]", "stream-json", true),
    Case {
        args: &["-y"],
        ..case("[[fake-gemini:tool-error]]", "stream-json", false)
    },
    case("[[fake-gemini:thinking]]", "text", false),
    case("[[fake-gemini:thinking]]", "json", true),
    case(
        "please read @missing.txt [[fake-gemini:bad-at-reference]]",
        "stream-json",
        false,
    ),
    case(
        "[[fake-gemini:trickle count=5 interval-ms=200]]",
        "stream-json",
        true,
    ),
    case("[[fake-gemini:quota-daily]]", "text", false),
    case("[[fake-gemini:quota-daily]]", "json", true),
    case("[[fake-gemini:quota-daily]]", "stream-json", false),
    case("[[fake-gemini:api-400]]", "text", false),
    case("[[fake-gemini:api-400]]", "json", false),
    case("[[fake-gemini:api-400]]", "stream-json", true),
    case("[[fake-gemini:api-401]]", "json", false),
    case("[[fake-gemini:api-401]]", "stream-json", false),
    case("[[fake-gemini:api-403]]", "json", false),
    case("[[fake-gemini:api-403]]", "stream-json", false),
    case("[[fake-gemini:model-not-found]]", "text", false),
    case("[[fake-gemini:model-not-found]]", "json", false),
    case("[[fake-gemini:model-not-found]]", "stream-json", false),
    Case {
        args: &["-m", "not-a-model"],
        ..case("unknown model", "stream-json", false)
    },
    case("[[fake-gemini:malformed-stream]]", "text", false),
    case("[[fake-gemini:malformed-stream]]", "json", true),
    case("[[fake-gemini:malformed-stream]]", "stream-json", false),
    case("[[fake-gemini:empty-response]]", "text", false),
    case("[[fake-gemini:empty-response]]", "json", false),
    case("[[fake-gemini:empty-response]]", "stream-json", true),
    case("[[fake-gemini:loop-detected]]", "json", false),
    case("[[fake-gemini:loop-detected]]", "stream-json", false),
    Case {
        settings: Some(r#"{"model":{"maxSessionTurns":1}}"#),
        ..case("[[fake-gemini:turn-limit]]", "text", false)
    },
    // Environment facts that flags alone set up for the real CLI.
    Case {
        args: &["--include-directories", "/nonexistent/dir"],
        ..case("[[fake-gemini:include-dir-missing]]", "text", false)
    },
    Case {
        args: &["--include-directories", "/nonexistent/dir"],
        ..case("[[fake-gemini:include-dir-missing]]", "json", false)
    },
    Case {
        args: &["--resume", "0b6c1a6e-0000-4000-8000-000000000000"],
        ..case("[[fake-gemini:session-not-found]]", "stream-json", false)
    },
    Case {
        skip_trust: false,
        ..case("[[fake-gemini:untrusted-workspace]]", "json", false)
    },
    Case {
        selected_type: false,
        ..case("[[fake-gemini:auth-invalid]]", "text", false)
    },
    Case {
        selected_type: false,
        // The base URL without a selected type would be "Invalid auth method selected.".
        remove_env: &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
        ..case("[[fake-gemini:auth-missing]]", "json", false)
    },
    Case {
        settings: Some(r#"{"model":{"maxSessionTurns":1}}"#),
        ..case("[[fake-gemini:turn-limit]]", "json", false)
    },
    Case {
        settings: Some(r#"{"model":{"maxSessionTurns":1}}"#),
        ..case("[[fake-gemini:turn-limit]]", "stream-json", false)
    },
    // An unparsable settings.json (the capture's three stray `}`): exit 52, plain text in every
    // format. The file's own parse error is what both sides print.
    Case {
        settings_raw: Some(concat!(
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            "}}}"
        )),
        ..case("[[fake-gemini:config-error]]", "text", true)
    },
    Case {
        settings_raw: Some(concat!(
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            "}}}"
        )),
        ..case("[[fake-gemini:config-error]]", "json", false)
    },
    Case {
        settings_raw: Some(concat!(
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            "}}}"
        )),
        ..case("[[fake-gemini:config-error]]", "stream-json", false)
    },
    // JSON.parse's other wordings (V8's, after comments are blanked) and an empty file.
    Case {
        settings_raw: Some(concat!(
            "// user settings\n",
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"hideBanner": tru}}"#
        )),
        ..case("a settings typo near a comment", "json", false)
    },
    Case {
        settings_raw: Some(r#"{"security": {"auth": {"selectedType": "gemini-api-key",}}}"#),
        ..case("a trailing comma in settings", "text", false)
    },
    Case {
        settings_raw: Some(""),
        ..case("an empty settings file", "text", false)
    },
    Case {
        settings_raw: Some(concat!(
            "/* managed */ {\n",
            r#"  "security": {"auth": {"selectedType": "gemini-api-key"}} // the API key"#,
            "\n}\n"
        )),
        ..case("settings with comments still parse", "stream-json", false)
    },
    // --sandbox: docker is there (a stub that has no image and cannot pull): exit 1.
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&["docker"]),
        ..case("[[fake-gemini:sandbox-error]]", "text", false)
    },
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&["docker"]),
        ..case("[[fake-gemini:sandbox-error]]", "json", false)
    },
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&["docker"]),
        ..case("[[fake-gemini:sandbox-error]]", "stream-json", false)
    },
    // Neither docker nor podman: exit 44, decided before the auth check.
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&[]),
        ..case("[[fake-gemini:sandbox-command-missing]]", "text", false)
    },
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&[]),
        ..case("[[fake-gemini:sandbox-command-missing]]", "json", false)
    },
    Case {
        args: &["--sandbox"],
        path_stubs: Some(&[]),
        selected_type: false,
        ..case(
            "[[fake-gemini:sandbox-command-missing]]",
            "stream-json",
            false,
        )
    },
    // GEMINI_SANDBOX naming a command: checked whatever the scenario says.
    Case {
        set_env: &[("GEMINI_SANDBOX", "podman")],
        path_stubs: Some(&["docker"]),
        ..case("GEMINI_SANDBOX names a missing command", "text", false)
    },
    Case {
        set_env: &[("GEMINI_SANDBOX", "vm")],
        ..case("GEMINI_SANDBOX names no sandbox command", "json", false)
    },
    // Beyond the context window (4,193,816 characters were refused in an empty directory): the
    // prompt is never sent, exit 0 with an empty answer.
    Case {
        stdin_chars: 4_200_000,
        ..case("[[fake-gemini:input-too-large]]", "text", false)
    },
    Case {
        stdin_chars: 4_200_000,
        ..case("[[fake-gemini:input-too-large]]", "json", false)
    },
    Case {
        stdin_chars: 4_200_000,
        ..case("[[fake-gemini:input-too-large]]", "stream-json", false)
    },
    // Without a marker the size alone decides, on both sides of the limit.
    Case {
        stdin_chars: 4_200_000,
        ..case("too large by size alone", "json", false)
    },
    Case {
        stdin_chars: 4_150_000,
        ..case("large but within the window", "json", false)
    },
    // An older CLI's argument surface, against that real CLI: 0.39.0 lacks --skip-trust and
    // --session-id (and lists no `gemma` command in the usage); --version wins over both.
    Case {
        cli: Some(OLD_CLI),
        ..case("[[fake-gemini:old-version]]", "json", false)
    },
    Case {
        cli: Some(OLD_CLI),
        args: &["--version"],
        ..case("[[fake-gemini:old-version]]", "text", false)
    },
    Case {
        cli: Some(OLD_CLI),
        skip_trust: false,
        args: &["--session-id", "0b6c1a6e-0000-4000-8000-000000000000"],
        ..case("[[fake-gemini:old-version]]", "stream-json", false)
    },
    // The option table: an array option takes one word per occurrence (`nargs: 1`), so a
    // positional prompt after it is the prompt; occurrences accumulate and split at commas;
    // `--flag=value` and the camelCase twin; the deprecation warning of `--allowed-tools`.
    Case {
        args: &["--allowed-tools", "read_file,list_directory"],
        positional: true,
        ..case("[[fake-gemini:success]]", "text", true)
    },
    Case {
        args: &["--include-directories", "/tmp"],
        positional: true,
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        args: &["--include-directories=/tmp"],
        positional: true,
        ..case("[[fake-gemini:success]]", "json", false)
    },
    Case {
        args: &[
            "--include-directories",
            "/tmp",
            "--include-directories",
            "/nonexistent/dir",
        ],
        ..case("repeated include directories", "text", false)
    },
    Case {
        args: &["--include-directories", " /tmp , /nonexistent/dir,"],
        ..case("a comma list of include directories", "text", false)
    },
    Case {
        args: &["--includeDirectories", "/nonexistent/dir"],
        ..case("the camelCase twin", "json", false)
    },
    Case {
        args: &["--allowed-tools", "read_file"],
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        args: &[
            "--allowedTools=read_file",
            "--allowed-tools",
            "list_directory",
        ],
        ..case("[[fake-gemini:tool-call]]", "json", false)
    },
    Case {
        settings: Some(r#"{"tools":{"allowed":["read_file"]}}"#),
        ..case("tools.allowed in settings", "text", false)
    },
    // The settings' MCP servers: the run waits for each one's `initialize`, up to its `timeout`
    // (here 2 s; 10 minutes without one), and warns once when one fails.
    Case {
        settings: Some(
            r#"{"mcpServers":{"slow":{"command":"sleep","args":["100000"],"timeout":2000}}}"#,
        ),
        name: Some("mcp-servers/silent-until-its-timeout"),
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        settings: Some(r#"{"mcpServers":{"gone":{"command":"/nonexistent/mcp-server"}}}"#),
        name: Some("mcp-servers/missing-command"),
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        settings: Some(
            r#"{"mcpServers":{"slow":{"command":"sleep","args":["100000"],"timeout":2000}},"mcp":{"excluded":["slow"]}}"#,
        ),
        name: Some("mcp-servers/excluded-in-settings"),
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        settings: Some(
            r#"{"mcpServers":{"slow":{"command":"sleep","args":["100000"],"timeout":2000}},"mcp":{"excluded":["slow"]}}"#,
        ),
        args: &["--allowed-mcp-server-names=slow"],
        name: Some("mcp-servers/the-flag-replaces-excluded"),
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        args: &["--allowed-tools"],
        ..case("an array option without a value", "text", false)
    },
    Case {
        args: &["--no-allowed-tools"],
        ..case("a negated array option", "text", false)
    },
    // A repeated string option: the last model is used; two formats print text.
    Case {
        args: &["-m", "flash", "-m", "pro"],
        ..case("[[fake-gemini:success]]", "stream-json", false)
    },
    Case {
        args: &["-o", "stream-json"],
        ..case("[[fake-gemini:success]]", "json", false)
    },
    Case {
        args: &["-y", "--resume", "--allowed-tools=read_file"],
        ..case("the order of the start-up notices", "text", false)
    },
    // Folder trust as 0.61 decides it: no approval mode trusts a folder; each asks for an
    // override line per configuration load, then exit 55 (or 41 first without auth).
    Case {
        skip_trust: false,
        args: &["-y"],
        ..case("yolo does not trust the folder", "json", true)
    },
    Case {
        skip_trust: false,
        args: &["--approval-mode", "plan"],
        ..case("plan in an untrusted folder", "text", false)
    },
    Case {
        skip_trust: false,
        args: &["--approval-mode", "auto_edit"],
        ..case("auto_edit in an untrusted folder", "stream-json", false)
    },
    Case {
        skip_trust: false,
        selected_type: false,
        remove_env: &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
        args: &["--approval-mode", "plan"],
        ..case("plan in an untrusted folder without auth", "json", false)
    },
    Case {
        set_env: &[("GEMINI_CLI_TRUST_WORKSPACE", "false")],
        ..case(
            "--skip-trust wins over GEMINI_CLI_TRUST_WORKSPACE=false",
            "json",
            false,
        )
    },
    Case {
        set_env: &[("GEMINI_RESTRICTED_MODE", "true")],
        ..case("restricted mode wins over --skip-trust", "json", false)
    },
    Case {
        skip_trust: false,
        settings_raw: Some(
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}}"#,
        ),
        ..case("folder trust turned off in settings", "json", false)
    },
    Case {
        skip_trust: false,
        trusted_folders: &[("CWD", "TRUST_FOLDER")],
        args: &["--approval-mode", "plan"],
        ..case("a trusted folder keeps plan", "json", false)
    },
    Case {
        skip_trust: false,
        trusted_folders: &[("PARENT", "TRUST_FOLDER"), ("CWD", "DO_NOT_TRUST")],
        ..case("the longest trusted-folders rule wins", "json", false)
    },
    // System settings files: read only when root owns them and every directory above, and no
    // one else may write there; else skipped with one warning line.
    Case {
        system_file: Some(defaults_file(Place::Temp, 0o644)),
        ..case("system defaults in a temp directory", "text", true)
    },
    Case {
        system_file: Some(defaults_file(Place::Target, 0o644)),
        ..case("system defaults in the target directory", "text", false)
    },
    Case {
        system_file: Some(defaults_file(Place::Target, 0o664)),
        ..case("group-writable system defaults", "json", false)
    },
    Case {
        system_file: Some(SystemFile {
            var: "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            ..defaults_file(Place::Temp, 0o644)
        }),
        ..case("system settings in a temp directory", "stream-json", false)
    },
    Case {
        skip_trust: false,
        args: &["-y"],
        system_file: Some(defaults_file(Place::Temp, 0o644)),
        ..case(
            "a skipped system file before the trust failure",
            "text",
            false,
        )
    },
    Case {
        set_env: &[(
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
            "/nonexistent/system-defaults.json",
        )],
        ..case("a missing system defaults file", "text", false)
    },
    // Warnings of the environment.
    Case {
        set_env: &[("GOOGLE_API_KEY", "fake-too")],
        ..case("[[fake-gemini:tool-call]]", "json", false)
    },
    Case {
        set_env: &[("GOOGLE_API_KEY", "fake-too")],
        args: &["-y"],
        ..case("both API keys under yolo", "text", false)
    },
    Case {
        set_env: &[("TERM", "xterm-256color")],
        ..case("a 256-colour terminal", "text", false)
    },
    Case {
        set_env: &[("TERM", "vt100")],
        ..case("a vt100 terminal", "json", false)
    },
    Case {
        set_env: &[("TERM", "xterm-256color"), ("COLORTERM", "truecolor")],
        ..case("a true-colour terminal", "text", false)
    },
    // Start-up latency (2 s; the scripted API delays the run's first response as long).
    case("[[fake-gemini:slow-start]]", "text", false),
    case("[[fake-gemini:slow-start]]", "stream-json", false),
    Case {
        skip_trust: false,
        args: &["-y", "--sandbox"],
        path_stubs: Some(&[]),
        system_file: Some(defaults_file(Place::Temp, 0o644)),
        ..case(
            "the configuration notices before a missing sandbox command",
            "text",
            false,
        )
    },
    // Every input geminicli-mcp hands the CLI, handed as it hands it (`src/gemini/inputs.rs`
    // names these cases; `every_input_of_the_server_has_its_cases` checks that they hand it).
    server("server/one-shot", Shape::Server, "[[fake-gemini:success]]"),
    server(
        "server/one-shot-tool-call",
        Shape::Server,
        "[[fake-gemini:tool-call]]",
    ),
    Case {
        args: &["--approval-mode=auto_edit"],
        ..server(
            "server/approval-auto-edit",
            Shape::Server,
            "[[fake-gemini:tool-call]]",
        )
    },
    Case {
        args: &["--approval-mode=default"],
        ..server(
            "server/approval-default",
            Shape::Server,
            "[[fake-gemini:tool-call]]",
        )
    },
    Case {
        args: &["--approval-mode=plan"],
        ..server(
            "server/approval-plan",
            Shape::Server,
            "[[fake-gemini:tool-call]]",
        )
    },
    Case {
        args: &["--sandbox=true"],
        path_stubs: Some(&[]),
        ..server(
            "server/sandbox-command-missing",
            Shape::Server,
            "[[fake-gemini:sandbox-command-missing]]",
        )
    },
    Case {
        args: &["--allowed-mcp-server-names=github"],
        ..server(
            "server/allowed-mcp-server-names",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        // How the server leaves out its own entries and silent servers: a name no server has.
        settings: Some(
            r#"{"mcpServers":{"slow":{"command":"sleep","args":["100000"],"timeout":2000}}}"#,
        ),
        args: &["--allowed-mcp-server-names=geminicli-mcp-none"],
        ..server(
            "server/allowed-mcp-server-names-leave-out",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        args: &["--include-directories=/tmp"],
        ..server(
            "server/include-directories",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        args: &["--model=gemini-2.5-flash"],
        ..server("server/model", Shape::Server, "[[fake-gemini:success]]")
    },
    Case {
        args: &["--resume=0b6c1a6e-0000-4000-8000-000000000000"],
        ..server(
            "server/resume-unknown-session",
            Shape::Server,
            "[[fake-gemini:session-not-found]]",
        )
    },
    Case {
        selected_type: false,
        remove_env: &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
        ..server(
            "server/no-browser-without-auth",
            Shape::Server,
            "[[fake-gemini:auth-missing]]",
        )
    },
    Case {
        args: &["--list-sessions"],
        ..server("server/list-sessions", Shape::ServerBare, "")
    },
    Case {
        args: &["--delete-session=0b6c1a6e-0000-4000-8000-000000000000"],
        ..server("server/delete-unknown-session", Shape::ServerBare, "")
    },
    Case {
        args: &["--version"],
        ..server("server/version", Shape::ServerBare, "")
    },
    Case {
        args: &["--help"],
        ..server("server/help", Shape::ServerBare, "")
    },
    Case {
        skip_trust: false,
        args: &["-y"],
        set_env: &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
        ..server(
            "server/trust-workspace-variable",
            Shape::Cli,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        set_env: &[
            ("GEMINI_TELEMETRY_ENABLED", "true"),
            ("GEMINI_TELEMETRY_TARGET", "local"),
            ("GEMINI_TELEMETRY_OUTFILE", "/dev/null"),
            ("GEMINI_TELEMETRY_LOG_PROMPTS", "false"),
        ],
        ..server(
            "server/telemetry-to-the-null-device",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        system_file: Some(server_defaults(Place::Target)),
        ..server(
            "server/system-defaults-where-root-owned",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
    Case {
        system_file: Some(server_defaults(Place::Temp)),
        ..server(
            "server/system-defaults-in-temp",
            Shape::Server,
            "[[fake-gemini:success]]",
        )
    },
];

/// Built-in scenarios the real CLI cannot be driven into through the API, by reason (the README's
/// "Not driven into the real CLI" table says more).
pub const NOT_DRIVABLE: &[(&str, &[&str])] = &[
    (
        "the CLI's own retry backoff takes minutes",
        &["rate-limit-retry", "api-500", "api-503"],
    ),
    ("a failure to connect, not an answer", &["network-down"]),
    ("a browser login, not the Gemini API", &["oauth-wait"]),
    (
        "Google's OAuth and Code Assist endpoints, not the Gemini API (reproduced once through a local TLS mock of them; README)",
        &["auth-unsupported"],
    ),
    (
        "no prompt to carry the marker",
        &["no-input", "stdin-late", "memory-show"],
    ),
    ("needs a full disk", &["tool-fatal"]),
    ("needs Ctrl+C on a TTY", &["cancelled"]),
    (
        "process faults of the CLI process, ended only by signals",
        &[
            "hang",
            "hang-after-output",
            "crash",
            "relaunch",
            "ignore-sigterm",
            "grandchild-holds-stdout",
            "exit-0-descendant-holds-stdout",
            "setsid-grandchild",
        ],
    ),
    (
        "raw faults of fake-gemini's own output",
        &[
            "flood-stdout",
            "flood-stderr",
            "long-line",
            "non-utf8",
            "invalid-json",
        ],
    ),
];

/// What one side printed, masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code (`None`: killed by a signal or the timeout).
    pub code: Option<i32>,
    /// Masked stdout.
    pub stdout: String,
    /// Masked stderr.
    pub stderr: String,
}

/// A real CLI that takes longer than this is stuck; the case fails instead of hanging CI.
const REAL_TIMEOUT: Duration = Duration::from_secs(180);

/// A sandbox with the environment both sides get: the real CLI's offline setup (API key,
/// `selectedType`, base URL), TERM=dumb and NO_COLOR.
fn sandbox(base_url: &str, c: &Case) -> Sandbox {
    let mut sb = Sandbox::new("proj");
    sb.set("NO_COLOR", Some("1"))
        .set("GOOGLE_GEMINI_BASE_URL", Some(base_url))
        // The fake applies the same auth check the real CLI does to this environment.
        .set("FAKE_GEMINI_AUTH", Some("env"));
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    if c.shape != Shape::Cli {
        for (k, v) in inputs::CHILD_ENV {
            sb.set(k, Some(v));
        }
        let tmp = sb.dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        for k in inputs::env::TMP {
            sb.set(k, Some(tmp.to_str().unwrap()));
        }
        sb.set(inputs::env::RUN_MARK, Some("4242:1"));
    }
    for k in c.remove_env {
        sb.set(k, None);
    }
    for (k, v) in c.set_env {
        sb.set(k, Some(v));
    }
    if let Some(stubs) = c.path_stubs {
        let bin = sb.dir.path().join("bin");
        stub_path(&bin, stubs);
        sb.set("PATH", Some(bin.to_str().unwrap()));
    }
    if let Some(f) = c.system_file {
        let path = system_file(c, f);
        sb.set(f.var, Some(path.to_str().unwrap()));
    }
    if !c.trusted_folders.is_empty() {
        let rules: serde_json::Map<String, serde_json::Value> = c
            .trusted_folders
            .iter()
            .map(|(p, level)| {
                let path = match *p {
                    "CWD" => sb.cwd.clone(),
                    "PARENT" => sb.cwd.parent().unwrap().to_path_buf(),
                    other => PathBuf::from(other),
                };
                (path.display().to_string(), serde_json::json!(level))
            })
            .collect();
        let text = serde_json::Value::Object(rules).to_string();
        std::fs::write(sb.home.join(".gemini/trustedFolders.json"), text).unwrap();
    }
    if let Some(raw) = c.settings_raw {
        std::fs::write(sb.home.join(".gemini/settings.json"), raw).unwrap();
        return sb;
    }
    let mut settings = if c.selected_type {
        serde_json::json!({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    } else {
        serde_json::json!({})
    };
    if let Some(extra) = c.settings {
        let extra: serde_json::Value = serde_json::from_str(extra).expect("case settings are JSON");
        for (k, v) in extra.as_object().expect("an object") {
            settings[k] = v.clone();
        }
    }
    std::fs::write(sb.home.join(".gemini/settings.json"), settings.to_string()).unwrap();
    sb
}

/// Writes a case's system file where its `place` says, in a directory of the case's own whose
/// path is the same for both sides (the CLI prints it), and returns the file's path.
#[cfg(unix)]
fn system_file(c: &Case, f: SystemFile) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = match f.place {
        Place::Temp => std::env::temp_dir(),
        Place::Target => target_place(),
    };
    let tag = ids_of(&label(c));
    let dir = root.join(format!(
        "fake-gemini-differential-{}-{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let name = if f.var.ends_with("DEFAULTS_PATH") {
        "system-defaults.json"
    } else {
        "settings.json"
    };
    let file = dir.join(name);
    std::fs::write(&file, f.text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(f.mode)).unwrap();
    file
}

#[cfg(not(unix))]
fn system_file(_: &Case, _: SystemFile) -> PathBuf {
    panic!("the system files of the differential suite rely on Unix modes");
}

/// Where [`Place::Target`] files go: the build's target directory, or, where this run cannot
/// write there (an archive of the tests run by another user), a directory in `$HOME`: both fail
/// the CLI's ownership check for anyone but root, as the place means.
#[cfg(unix)]
fn target_place() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if std::fs::create_dir_all(&built).is_ok() && tempfile::tempdir_in(&built).is_ok() {
        return built;
    }
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let dir = home.join(".cache/fake-gemini/differential-files");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A short stable digest of a case's label (a directory name).
fn ids_of(label: &str) -> String {
    fake_gemini::ids::sha256_hex(label.as_bytes())[..12].to_string()
}

/// The `node` on the host's `PATH` (the real CLI's script runs under `env node`).
#[cfg(unix)]
fn host_node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .expect("node on PATH (the differential suite needs node and npm)")
}

/// Fills `bin` with a link to the host's `node` and a failing `#!/bin/sh` stub per name.
#[cfg(unix)]
fn stub_path(bin: &Path, stubs: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(bin).unwrap();
    std::os::unix::fs::symlink(host_node(), bin.join("node")).unwrap();
    for name in stubs {
        let stub = bin.join(name);
        std::fs::write(&stub, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[cfg(not(unix))]
fn stub_path(_: &Path, _: &[&str]) {
    panic!("the PATH stubs of the differential suite are shell scripts (Unix only)");
}

/// The stdin of a case: the prompt when the server's shape, else `stdin_chars` `a`s.
fn stdin_bytes(c: &Case) -> Option<Vec<u8>> {
    if c.shape == Shape::Server {
        return Some(c.prompt.as_bytes().to_vec());
    }
    (c.stdin_chars > 0).then(|| vec![b'a'; c.stdin_chars])
}

fn argv(c: &Case) -> Vec<&str> {
    match c.shape {
        Shape::Cli => {}
        Shape::ServerBare => return c.args.to_vec(),
        Shape::Server => {
            let mut a = inputs::BASE_ARGS.to_vec();
            for arg in c.args {
                if inputs::flag_name(arg) == inputs::flag::APPROVAL_MODE {
                    a[1] = arg;
                } else {
                    a.push(arg);
                }
            }
            return a;
        }
    }
    let mut a = if c.positional {
        vec!["-o", c.format]
    } else {
        vec!["-p", c.prompt, "-o", c.format]
    };
    if c.skip_trust {
        a.push("--skip-trust");
    }
    a.extend_from_slice(c.args);
    if c.positional {
        a.push(c.prompt);
    }
    a
}

/// Runs the real CLI for a case, stdout and stderr into files (no pipes a straggler could hold).
fn run_real(gemini: &Path, base_url: &str, c: &Case) -> Outcome {
    let sb = sandbox(base_url, c);
    let out = sb.dir.path().join("stdout");
    let err = sb.dir.path().join("stderr");
    let stdin = match stdin_bytes(c) {
        Some(bytes) => {
            let path = sb.dir.path().join("stdin");
            std::fs::write(&path, bytes).unwrap();
            Stdio::from(std::fs::File::open(path).unwrap())
        }
        None => Stdio::null(),
    };
    let mut cmd = Command::new(gemini);
    cmd.args(argv(c))
        .current_dir(&sb.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .stdin(stdin)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    for (k, v) in &sb.env {
        if !k.starts_with("FAKE_GEMINI_") {
            cmd.env(k, v);
        }
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().expect("spawn the real gemini");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if start.elapsed() > REAL_TIMEOUT {
            // The launcher ignores SIGTERM: kill the whole group (launcher and worker).
            #[cfg(unix)]
            // SAFETY: kill(2) on the process group this test created.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Outcome {
        code: status.and_then(|s| s.code()),
        stdout: sb.mask(&std::fs::read(&out).unwrap()),
        stderr: sb.mask(&std::fs::read(&err).unwrap()),
    }
}

/// Runs fake-gemini for a case, with the same flags and environment.
fn run_fake(base_url: &str, c: &Case) -> Outcome {
    let sb = sandbox(base_url, c);
    let o = sb.run(&argv(c), stdin_bytes(c).as_deref());
    Outcome {
        code: o.status.code(),
        stdout: sb.mask(&o.stdout),
        stderr: sb.mask(&o.stderr),
    }
}

/// A line diff (longest common subsequence) in unified style: `-` real, `+` fake.
pub fn line_diff(real: &str, fake: &str) -> String {
    let a: Vec<&str> = real.split('\n').collect();
    let b: Vec<&str> = fake.split('\n').collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        } else {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        }
    }
    out
}

/// `Ok` when both sides agree, else a readable report: which streams differ, with their diffs.
pub fn compare(label: &str, real: &Outcome, fake: &Outcome) -> Result<(), String> {
    let mut report = String::new();
    if real.code != fake.code {
        let _ = writeln!(
            report,
            "exit code: real {:?}, fake {:?}",
            real.code, fake.code
        );
    }
    for (name, r, f) in [
        ("stdout", &real.stdout, &fake.stdout),
        ("stderr", &real.stderr, &fake.stderr),
    ] {
        if r != f {
            let _ = writeln!(
                report,
                "{name} differs (- real, + fake):\n{}",
                line_diff(r, f)
            );
        }
    }
    if report.is_empty() {
        Ok(())
    } else {
        Err(format!("== {label}\n{report}"))
    }
}

fn label(c: &Case) -> String {
    let mut l = String::new();
    if let Some(name) = c.name {
        let _ = write!(l, "[{name}] ");
    }
    for (k, v) in c.set_env {
        let _ = write!(l, "{k}={v} ");
    }
    if let Some(stubs) = c.path_stubs {
        let _ = write!(
            l,
            "PATH=node{} ",
            stubs.iter().map(|s| format!("+{s}")).collect::<String>()
        );
    }
    if let Some(f) = c.system_file {
        let _ = write!(l, "{}=<{:?} {:o}> ", f.var, f.place, f.mode);
    }
    for (p, level) in c.trusted_folders {
        let _ = write!(l, "trust[{p}]={level} ");
    }
    let _ = write!(
        l,
        "gemini{} {}",
        c.cli.map(|v| format!("@{v}")).unwrap_or_default(),
        argv(c).join(" ")
    );
    if c.stdin_chars > 0 {
        let _ = write!(l, " < {} chars", c.stdin_chars);
    }
    if let Some(raw) = c.settings_raw {
        let _ = write!(l, " (settings.json: {raw:?})");
    }
    l
}

/// Runs the cases one after the other (never two real CLIs at once) and fails with every diff.
fn differential(cases: &[Case]) {
    let gemini = real_cli();
    let api = ApiServer::start(0, Config::default()).expect("start the scripted API");
    let url = api.base_url();
    let mut failures = Vec::new();
    let mut others = std::collections::HashMap::new();
    for c in cases {
        let t = Instant::now();
        let gemini = match c.cli {
            Some(v) => others.entry(v).or_insert_with(|| real_cli_at(v, false)),
            None => &gemini,
        };
        let real = run_real(gemini, &url, c);
        let fake = run_fake(&url, c);
        let verdict = compare(&label(c), &real, &fake);
        eprintln!(
            "{} {} ({:.1} s)",
            if verdict.is_ok() {
                "agree  "
            } else {
                "DIFFER "
            },
            label(c),
            t.elapsed().as_secs_f64()
        );
        if let Err(e) = verdict {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from the real CLI {}:\n\n{}",
        failures.len(),
        cases.len(),
        pinned_version(),
        failures.join("\n")
    );
}

/// The CI subset: about ten fast cases, one format each (`.ci/run`, when node and npm exist).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm); see the module docs"]
fn smoke() {
    let cases: Vec<Case> = CASES.iter().filter(|c| c.smoke).copied().collect();
    differential(&cases);
}

/// Every case (or those whose command line contains `FAKE_GEMINI_DIFF_FILTER`).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm) for a few minutes; see the module docs"]
fn full() {
    let filter = std::env::var("FAKE_GEMINI_DIFF_FILTER").unwrap_or_default();
    let cases: Vec<Case> = CASES
        .iter()
        .filter(|c| label(c).contains(&filter))
        .copied()
        .collect();
    assert!(!cases.is_empty(), "no case matches `{filter}`");
    differential(&cases);
}

/// The cases the server's inventory of CLI inputs names (`server/…`), each input handed as the
/// server hands it (`.ci/run`, as root and as an unprivileged user with `TMPDIR=/tmp`).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm); see the module docs"]
fn inputs() {
    let cases: Vec<Case> = CASES
        .iter()
        .filter(|c| {
            c.name
                .is_some_and(|n| inputs::INVENTORY.iter().any(|i| i.cases.contains(&n)))
        })
        .copied()
        .collect();
    assert!(cases.len() >= 15, "{} cases", cases.len());
    differential(&cases);
}

/// Every entry of the server's inventory names cases that exist (here or among the ACP cases),
/// and one of its `server/…` cases hands the input: the flag on the command line, the variable
/// in the environment, the file (and so its key) through its variable.
#[test]
fn every_input_of_the_server_has_its_cases() {
    let acp: Vec<String> = crate::differential_acp::cases()
        .iter()
        .map(|c| format!("acp/{}", c.name))
        .collect();
    for input in inputs::INVENTORY {
        let mut handed = false;
        for name in input.cases {
            if name.starts_with("acp/") {
                assert!(
                    acp.iter().any(|a| a == name),
                    "{}: no ACP case {name}",
                    input.name
                );
                handed |= matches!(input.kind, inputs::Kind::AcpRequest | inputs::Kind::Flag);
                continue;
            }
            let c = CASES
                .iter()
                .find(|c| c.name == Some(*name))
                .unwrap_or_else(|| panic!("{}: no differential case {name}", input.name));
            let sb = sandbox("http://127.0.0.1:9", c);
            handed |= match input.kind {
                inputs::Kind::Flag => argv(c).iter().any(|a| inputs::flag_name(a) == input.name),
                inputs::Kind::Env => sb.env.iter().any(|(k, _)| k == input.name),
                inputs::Kind::SettingsFile | inputs::Kind::SettingsKey => c
                    .system_file
                    .is_some_and(|f| f.var == inputs::env::SYSTEM_DEFAULTS_PATH),
                inputs::Kind::AcpRequest => false,
            };
        }
        assert!(
            handed,
            "no case of {} hands it: {:?}",
            input.name, input.cases
        );
    }
}

/// The comparison is not vacuous: a deliberately altered fake output fails with a diff that
/// names the changed line, and an altered exit code is reported.
#[test]
fn a_difference_fails_with_a_readable_diff() {
    let api = ApiServer::start(0, Config::default()).expect("start the scripted API");
    let c = case("[[fake-gemini:tool-call]]", "text", false);
    let expected = run_fake(&api.base_url(), &c);
    assert_eq!(
        compare("same", &expected, &run_fake(&api.base_url(), &c)),
        Ok(())
    );
    let mut altered = run_fake(&api.base_url(), &c);
    altered.stdout = altered.stdout.replace("Hello there!", "Hullo there!");
    altered.code = Some(1);
    let report = compare("altered", &expected, &altered).expect_err("a difference");
    assert!(
        report.contains("exit code: real Some(0), fake Some(1)"),
        "{report}"
    );
    assert!(report.contains("stdout differs"), "{report}");
    assert!(
        report.contains("- Hello there! How can I help?"),
        "{report}"
    );
    assert!(
        report.contains("+ Hullo there! How can I help?"),
        "{report}"
    );
    assert!(report.contains("  Let me list files."), "{report}");
    assert!(!report.contains("stderr differs"), "{report}");
}

/// The scripted API serves fake-gemini's scenarios to any client: the answer, tool call and
/// follow-up, and failures, checked over plain HTTP without the real CLI.
#[test]
fn the_api_plays_scenarios() {
    use std::io::{Read, Write};
    let api = ApiServer::start(0, Config::default()).expect("start the scripted API");
    let post = |path: &str, body: serde_json::Value| -> (u16, String) {
        let mut s = std::net::TcpStream::connect(api.addr()).unwrap();
        let body = body.to_string();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        (status, out)
    };
    let ask =
        |text: &str| serde_json::json!({"contents": [{"role": "user", "parts": [{"text": text}]}]});
    let stream = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse";

    let (st, out) = post(stream, ask("[[fake-gemini:success text=\"hi there\"]]"));
    assert_eq!(st, 200);
    assert!(out.contains("text/event-stream"), "{out}");
    assert!(out.contains(r#""text":"hi there""#), "{out}");
    assert!(
        out.contains(r#""modelVersion":"gemini-3.8-flash""#),
        "{out}"
    );
    assert!(out.contains(r#""totalTokenCount":120"#), "{out}");

    let (_, out) = post(stream, ask("[[fake-gemini:tool-call]]"));
    assert!(
        out.contains(r#""functionCall":{"name":"list_directory","args":{"dir_path":"."}}"#),
        "{out}"
    );
    let mut follow = ask("[[fake-gemini:tool-call]]");
    follow["contents"].as_array_mut().unwrap().extend([
        serde_json::json!({"role": "model", "parts": [{"functionCall": {"name": "list_directory"}}]}),
        serde_json::json!({"role": "user", "parts": [{"functionResponse": {"name": "list_directory"}}]}),
    ]);
    let (_, out) = post(stream, follow);
    assert!(out.contains(r#""text":" there! How can I help?""#), "{out}");
    assert!(!out.contains("functionCall"), "{out}");

    let (st, out) = post(stream, ask("[[fake-gemini:quota-daily]]"));
    assert_eq!(st, 429);
    assert!(out.contains("PerDay"), "{out}");
    let (st, out) = post(stream, ask("[[fake-gemini:api-400]]"));
    assert_eq!(st, 400);
    assert!(out.contains("Invalid argument provided."), "{out}");
    let (_, out) = post(stream, ask("[[fake-gemini:malformed-stream]]"));
    assert!(out.ends_with("data: {x\r\n\r\n"), "{out}");
    let (st, out) = post(
        "/v1beta/models/gemini-3.5-flash-lite:generateContent",
        ask("route me"),
    );
    assert_eq!(st, 200);
    assert!(out.contains("model_choice"), "{out}");
    let (st, out) = post("/v1beta/models/not-a-model:streamGenerateContent", ask("x"));
    assert_eq!(st, 404);
    assert!(out.contains("models/not-a-model is not found"), "{out}");
    let (st, out) = post(stream, ask("[[fake-gemini:no-such-scenario]]"));
    assert_eq!(st, 400);
    assert!(out.contains("fake-gemini-api: unknown scenario"), "{out}");
    assert_eq!(api.seen().len(), 9);
}

/// The older real CLI the suite installs is the version `old-version` emulates.
#[test]
fn the_old_cli_is_the_one_old_version_emulates() {
    let (_, s) = fake_gemini::scenario::load("old-version", None).expect("builtin");
    assert_eq!(s.environment.cli_version.as_deref(), Some(OLD_CLI));
}

/// Every built-in scenario is either compared or listed as not drivable, and the README names
/// each one in its fidelity section: a new scenario cannot slip past the suite unnoticed.
#[test]
fn every_builtin_is_compared_or_excluded() {
    let readme = std::fs::read_to_string(crate::support::manifest_dir().join("README.md")).unwrap();
    let fidelity = readme
        .split("## Fidelity")
        .nth(1)
        .expect("README has a Fidelity section");
    for (name, _) in fake_gemini::scenario::BUILTINS {
        let compared = CASES.iter().any(|c| {
            c.prompt.contains(&format!("[[fake-gemini:{name}]]"))
                || c.prompt.contains(&format!("[[fake-gemini:{name} "))
        });
        let excluded = NOT_DRIVABLE.iter().any(|(_, names)| names.contains(name));
        assert!(
            compared ^ excluded,
            "`{name}`: compared {compared}, excluded {excluded}"
        );
        assert!(
            fidelity.contains(&format!("`{name}`")),
            "README fidelity section lacks `{name}`"
        );
    }
}

/// Stalls hold the stream open after the scripted chunks until the server stops (bounded by
/// `max_stall`); floods stream the requested number of answer bytes.
#[test]
fn the_api_stalls_and_floods() {
    use std::io::{BufRead, BufReader, Read, Write};
    let api = ApiServer::start(
        0,
        Config {
            max_stall: Duration::from_secs(30),
            ..Config::default()
        },
    )
    .expect("start the scripted API");
    let open = |text: &str| {
        let mut s = std::net::TcpStream::connect(api.addr()).unwrap();
        let body = serde_json::json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
            .to_string();
        write!(
            s,
            "POST /v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        s
    };

    // After the first chunk nothing more comes: a read times out instead of seeing the end.
    let s = open("[[fake-gemini:hang-after-output]]");
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut r = BufReader::new(s);
    let mut seen = String::new();
    let stalled = loop {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) => break false,
            Ok(_) => seen.push_str(&line),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                break true
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(stalled, "the stream ended: {seen}");
    assert!(seen.contains(r#""text":"Hello""#), "{seen}");
    assert!(!seen.contains("finishReason"), "{seen}");

    // A flood: the answer's text parts add up to the requested size.
    let mut out = String::new();
    open("[[fake-gemini:flood-stdout bytes=300000]]")
        .read_to_string(&mut out)
        .unwrap();
    let total: usize = out
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap())
        .map(|v| {
            v["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap_or("")
                .len()
        })
        .sum();
    assert_eq!(total, 300_000);
    // Dropping the server ends the stall that is still open.
    drop(r);
    drop(api);
}
