//! The checks the worker makes before the model runs, in the real CLI's order and with its exit
//! codes: settings (52), the sandbox command (44), auth (41), the sandbox image (1), trust (55),
//! include directories (1) — and the start-up noise printed among them.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::cli::Args;
use crate::invocation::Ctx;
use crate::output::{self, Format};
use crate::scenario::{Auth, Sandbox, Trust};
use crate::sys::{env_is, err, err_line, home_dir};
use crate::{ids, proc, texts};

/// The user's settings file.
fn settings_path() -> PathBuf {
    home_dir().join(".gemini").join("settings.json")
}

/// The user's settings, parsed as the CLI parses them (none: `{}`).
fn load_settings() -> Result<Value, String> {
    match std::fs::read(settings_path()) {
        // Read as Node reads it ("utf-8": invalid bytes become U+FFFD).
        Ok(bytes) => crate::settings::parse(&String::from_utf8_lossy(&bytes)),
        Err(_) => Ok(json!({})),
    }
}

/// Settings (52), the sandbox command (44), auth (41), the sandbox image (1). `first` = the
/// first configuration load's lines may be printed (not again for a stdin marker).
pub(crate) fn pre_input_checks(
    ctx: &Ctx,
    args: &Args,
    format: Format,
    approval: &Approval,
    first: bool,
) -> Option<i32> {
    let env = &ctx.scenario.environment;
    // A really unparsable file is reported as it is; the scripted error stands in for a file
    // that parses.
    let settings = match (load_settings(), env.settings_error.clone()) {
        (Err(m), _) | (Ok(_), Some(m)) => {
            err_line(&format!("Error in {}: {m}", settings_path().display()));
            err_line("Please fix the configuration file(s) and try again.");
            return Some(52);
        }
        (Ok(s), None) => s,
    };
    // The sandbox command is resolved while the config loads, before auth (observed: exit 44
    // without docker wins over a missing auth method); the image is looked for after auth.
    let sandbox = match sandbox_command(args, &settings, env.sandbox) {
        Ok(c) => c,
        Err(msg) => {
            // The configuration load has printed its notices by then (observed: the YOLO line).
            if first {
                for l in crate::settings::skipped_system_files() {
                    err_line(&l);
                }
                approval.config_load(false);
            }
            fatal_red(&msg);
            return Some(44);
        }
    };
    let mut auth = env.auth;
    if auth == Auth::Authenticated && env_is("FAKE_GEMINI_AUTH", "env") {
        auth = Auth::Env;
    }
    let failure = match auth {
        // Reported later, in the order the real CLI prints it (see `run`).
        Auth::Authenticated | Auth::Unsupported => None,
        Auth::Missing => {
            Some(texts::AUTH_MISSING.replace("{settings}", &settings_path().display().to_string()))
        }
        Auth::Invalid => Some(texts::AUTH_INVALID.to_string()),
        Auth::Env => auth_from_env(&settings),
        Auth::OauthWait => {
            if std::env::var_os("NO_BROWSER").is_some() {
                Some("Failed to authenticate with user code.".into())
            } else {
                err(b"\n\nCode Assist login required.\nAttempting to open authentication page in your browser.\nOtherwise navigate to:\n\nhttps://accounts.google.com/o/oauth2/v2/auth?fake-gemini=1\n\n\nWaiting for authentication...\n");
                ctx.log(None);
                proc::hang();
            }
        }
    };
    if let Some(msg) = failure {
        if first {
            for l in crate::settings::skipped_system_files() {
                err_line(&l);
            }
            approval.config_load(false);
        }
        if format == Format::Json {
            let doc = output::error_doc(&ids::uuid_v4(), "Error", &msg, Some(41));
            // 0.40 printed the document without a trailing newline.
            let nl = if ctx.version() >= (0, 41, 0) {
                "\n"
            } else {
                ""
            };
            err(format!("{doc}{nl}").as_bytes());
        } else {
            err_line(&msg);
        }
        return Some(41);
    }
    if sandbox.is_some() && matches!(env.sandbox, Sandbox::ImageMissing | Sandbox::FromPath) {
        err(texts::fill(texts::SANDBOX_FAILED, &ctx.version).as_bytes());
        return Some(1);
    }
    None
}

/// The sandbox command as the CLI's `getSandboxCommand` picks it (`None`: no sandbox), or its
/// FatalSandboxError. `--sandbox` (else `tools.sandbox` of settings.json: a boolean, a command or
/// `{enabled, command}`), overridden by `GEMINI_SANDBOX`; `SANDBOX` set means "already inside".
/// A named command must be a known one and on `PATH`; `true` takes docker or podman from `PATH`
/// (the default, `from-path`) unless the scenario scripts the machine: `command-missing` finds
/// neither, `invalid-command` fails as a bad `GEMINI_SANDBOX` does, and `image-missing` and
/// `available` find docker.
fn sandbox_command(
    args: &Args,
    settings: &Value,
    scripted: Sandbox,
) -> Result<Option<String>, String> {
    const VALID: &str = "docker, podman, sandbox-exec, runsc, lxc, windows-native";
    if std::env::var_os("SANDBOX").is_some() {
        return Ok(None);
    }
    let option = match args.bool_given("sandbox") {
        Some(b) => Value::Bool(b),
        None => settings["tools"]["sandbox"].clone(),
    };
    let mut value = match &option {
        Value::Object(o) if o.get("enabled").is_some_and(truthy) => {
            o.get("command").cloned().unwrap_or(Value::Bool(true))
        }
        Value::Object(_) => Value::Bool(false),
        v => v.clone(),
    };
    let from_env = std::env::var("GEMINI_SANDBOX")
        .unwrap_or_default()
        .trim()
        .to_lowercase();
    if !from_env.is_empty() {
        value = Value::String(from_env);
    }
    let on = match &value {
        Value::String(s) if s == "1" || s == "true" => true,
        Value::String(s) if s == "0" || s == "false" || s.is_empty() => false,
        Value::String(cmd) => {
            if !VALID.split(", ").any(|v| v == cmd) {
                return Err(format!(
                    "Invalid sandbox command '{cmd}'. Must be one of {VALID}"
                ));
            }
            if cmd == "runsc" && !cfg!(target_os = "linux") {
                return Err("gVisor (runsc) sandboxing is only supported on Linux".into());
            }
            if cmd == "windows-native" && !cfg!(windows) {
                return Err("Windows native sandboxing is only supported on Windows".into());
            }
            if cmd != "windows-native" && !on_path(cmd) {
                return Err(format!(
                    "Missing sandbox command '{cmd}' (from GEMINI_SANDBOX)"
                ));
            }
            if cmd == "runsc" && !on_path("docker") {
                return Err(
                    "runsc (gVisor) requires Docker. Install Docker, or use sandbox: 'docker'."
                        .into(),
                );
            }
            return Ok(Some(cmd.clone()));
        }
        // Only `true` itself enables it (a number or an object command does not).
        v => *v == Value::Bool(true),
    };
    if !on {
        return Ok(None);
    }
    match scripted {
        Sandbox::CommandMissing => Err(COMMAND_MISSING.into()),
        Sandbox::InvalidCommand => Err(format!(
            "Invalid sandbox command 'docker'. Must be one of {VALID}"
        )),
        Sandbox::FromPath if !on_path("docker") && !on_path("podman") => {
            Err(COMMAND_MISSING.into())
        }
        Sandbox::FromPath | Sandbox::ImageMissing | Sandbox::Available => Ok(Some("docker".into())),
    }
}

/// The CLI's FatalSandboxError when `--sandbox` finds neither docker nor podman.
const COMMAND_MISSING: &str = "GEMINI_SANDBOX is true but failed to determine command for sandbox; install docker or podman or specify command in GEMINI_SANDBOX";

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Whether an executable of that name is on `PATH` (the `command-exists` check).
fn on_path(name: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let p = dir.join(name);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            p.is_file() || p.with_extension("exe").is_file()
        }
    })
}

/// The auth failure the environment and settings imply (`FAKE_GEMINI_AUTH=env`), if any.
fn auth_from_env(settings: &Value) -> Option<String> {
    let selected = settings["security"]["auth"]["selectedType"]
        .as_str()
        .or_else(|| settings["selectedAuthType"].as_str());
    let set = |n: &str| std::env::var(n).is_ok_and(|v| !v.is_empty());
    match selected {
        Some("gemini-api-key") => (!set("GEMINI_API_KEY")).then(|| {
            "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\nUpdate your environment and try again (no reload needed if using .env)!".into()
        }),
        Some("vertex-ai") => {
            let ok = (set("GOOGLE_CLOUD_PROJECT") && set("GOOGLE_CLOUD_LOCATION")) || set("GOOGLE_API_KEY");
            (!ok).then(|| "When using Vertex AI, you must specify either:\n• GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION environment variables.\n• GOOGLE_API_KEY environment variable (if using express mode).\nUpdate your environment and try again (no reload needed if using .env)!".into())
        }
        Some("oauth-personal") | Some("compute-default-credentials") | Some("cloud-shell") => None,
        Some(_) => Some(texts::AUTH_INVALID.into()),
        None => {
            if env_is("GOOGLE_GENAI_USE_GCA", "true") || env_is("GOOGLE_GENAI_USE_VERTEXAI", "true") {
                None
            } else if set("GEMINI_API_KEY") {
                std::env::var_os("GOOGLE_GEMINI_BASE_URL").map(|_| texts::AUTH_INVALID.into())
            } else {
                Some(texts::AUTH_MISSING.replace("{settings}", &settings_path().display().to_string()))
            }
        }
    }
}

/// A FatalError through the top-level handler: red unless NO_COLOR.
fn fatal_red(msg: &str) {
    if std::env::var_os("NO_COLOR").is_some() {
        err_line(msg);
    } else {
        err_line(&format!("\x1b[31m{msg}\x1b[0m"));
    }
}

/// Whether the folder is trusted, as the scenario says or by the CLI's rules (`checkPathTrust`
/// of 0.61): `GEMINI_RESTRICTED_MODE=true` distrusts it whatever else is set; `--skip-trust`
/// (which sets `GEMINI_CLI_TRUST_WORKSPACE=true` over any value) or that variable trusts it, its
/// value `false` distrusts it; then `security.folderTrust.enabled=false` trusts every folder; then
/// the longest matching rule of trustedFolders.json. No approval mode trusts a folder (observed:
/// `-y`, `--approval-mode yolo|auto_edit|plan` in an untrusted folder exit 55).
pub(crate) fn folder_trusted(ctx: &Ctx, args: &Args) -> bool {
    match ctx.scenario.environment.trust {
        Trust::Trusted => true,
        Trust::Untrusted => false,
        Trust::Rules => {
            if env_is("GEMINI_RESTRICTED_MODE", "true") {
                false
            } else if args.flag("skip-trust") || env_is("GEMINI_CLI_TRUST_WORKSPACE", "true") {
                true
            } else if env_is("GEMINI_CLI_TRUST_WORKSPACE", "false") {
                false
            } else if !crate::settings::folder_trust_enabled() {
                true
            } else {
                folder_rule().unwrap_or(false)
            }
        }
    }
}

/// The trust check (55), after the lines of the two configuration loads that precede it.
pub(crate) fn trust_check(ctx: &Ctx, approval: &Approval) -> Option<i32> {
    if approval.trusted {
        None
    } else {
        // The refused login's first report comes before the trust check's exit.
        if ctx.scenario.environment.auth == Auth::Unsupported {
            err(texts::sunset_report().as_bytes());
        }
        for l in crate::settings::skipped_system_files() {
            err_line(&l);
        }
        approval.config_loads();
        fatal_red(texts::UNTRUSTED);
        Some(55)
    }
}

/// trustedFolders.json (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else `~/.gemini/trustedFolders.json`):
/// the verdict of the longest rule whose folder holds the cwd (`TRUST_PARENT` names a folder
/// whose parent is trusted; `DO_NOT_TRUST` distrusts), `None` when no rule matches.
fn folder_rule() -> Option<bool> {
    let path = std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home_dir().join(".gemini").join("trustedFolders.json"));
    let text = std::fs::read_to_string(path).ok()?;
    let Ok(Value::Object(map)) =
        serde_json::from_str::<Value>(&crate::settings::strip_comments(&text))
    else {
        return None;
    };
    let cwd = std::env::current_dir().ok()?;
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in &map {
        let Some(level) = level.as_str() else {
            continue;
        };
        let p = std::path::Path::new(rule);
        let folder = match level {
            "TRUST_PARENT" => p.parent().unwrap_or(p),
            "TRUST_FOLDER" | "DO_NOT_TRUST" => p,
            _ => continue,
        };
        if cwd.starts_with(real(folder)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    best.map(|(_, level)| level != "DO_NOT_TRUST")
}

/// The approval mode a headless run asks for and whether its folder is trusted: what the CLI's
/// configuration load prints on stderr each time it runs (twice before the trust check).
pub(crate) struct Approval {
    /// `default`, `yolo`, `auto_edit` or `plan`, as requested (`--approval-mode`, `-y`, else
    /// settings' `general.defaultApprovalMode`).
    pub(crate) mode: String,
    /// The folder trust decided by [`folder_trusted`].
    pub(crate) trusted: bool,
    /// `plan` requested while settings' `general.plan.enabled` is `false`.
    plan_disabled: bool,
}

impl Approval {
    /// The run's approval request and trust.
    pub(crate) fn of(ctx: &Ctx, args: &Args) -> Approval {
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut mode = args
            .str("approval-mode")
            .map(String::from)
            .or_else(|| args.flag("yolo").then(|| "yolo".to_string()))
            .or_else(|| crate::settings::default_approval_mode(&cwd))
            .unwrap_or_else(|| "default".into());
        let plan_disabled = mode == "plan" && !crate::settings::plan_enabled(&cwd);
        if plan_disabled {
            mode = "default".into();
        }
        Approval {
            mode,
            trusted: folder_trusted(ctx, args),
            plan_disabled,
        }
    }

    /// Whether tools run unasked (yolo in a trusted folder; elsewhere the run never gets that far).
    pub(crate) fn yolo(&self) -> bool {
        self.mode == "yolo"
    }

    /// What one configuration load prints: the plan fallback, the YOLO notice, the override of
    /// an untrusted folder's mode (observed on 0.61.0 for yolo, auto_edit and plan), and — when
    /// the load reaches auth — the warning of two API keys.
    pub(crate) fn config_load(&self, auth: bool) {
        if self.plan_disabled {
            err_line(texts::PLAN_DISABLED);
        }
        if self.mode == "yolo" {
            err_line(texts::YOLO);
        }
        if !self.trusted && self.mode != "default" {
            err_line(texts::APPROVAL_OVERRIDDEN);
        }
        if auth && two_api_keys() {
            err_line(texts::TWO_API_KEYS);
        }
    }

    /// The two configuration loads before the run (or its trust check).
    pub(crate) fn config_loads(&self) {
        self.config_load(true);
        self.config_load(true);
    }
}

/// `GOOGLE_API_KEY` and `GEMINI_API_KEY` both set (non-empty): the CLI warns at each
/// configuration load and each client it creates, and uses `GOOGLE_API_KEY`.
pub(crate) fn two_api_keys() -> bool {
    let set = |n: &str| std::env::var(n).is_ok_and(|v| !v.is_empty());
    set("GOOGLE_API_KEY") && set("GEMINI_API_KEY")
}

/// The terminal warnings every headless run prints among its start-up warnings, in the CLI's
/// order (`getCompatibilityWarnings` of 0.61; stdout is never a terminal here, so Node reports no
/// colour depth and only the variables decide).
pub(crate) fn terminal_warnings() {
    let var = |n: &str| std::env::var(n).unwrap_or_default();
    let (term, colorterm) = (var("TERM"), var("COLORTERM"));
    if std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
        && term.starts_with("screen")
        && colorterm.is_empty()
    {
        err_line(texts::LOW_COLOR_TMUX);
    }
    if std::env::var_os("STY").is_some_and(|v| !v.is_empty()) {
        err_line(texts::GNU_SCREEN);
    }
    if term == "dumb" || term == "vt100" {
        err_line(&texts::TERM_DUMB.replace("TERM=dumb", &format!("TERM={term}")));
    }
    let true_color = matches!(colorterm.as_str(), "truecolor" | "24bit" | "kmscon");
    if !(term.contains("256color") || true_color) {
        err_line(texts::NO_256);
    } else if !true_color && var("TERM_PROGRAM") != "Apple_Terminal" {
        err_line(texts::NO_TRUE_COLOR);
    }
}

/// A missing `--include-directories` entry (1).
pub(crate) fn include_dirs_check(ctx: &Ctx, args: &Args) -> Option<i32> {
    let dirs = args.array("include-directories");
    let forced = ctx
        .scenario
        .environment
        .missing_include_directory
        .as_deref();
    let missing = dirs
        .iter()
        .find(|d| forced == Some(d.as_str()) || !std::path::Path::new(d).is_dir())
        .cloned()
        .or_else(|| match forced {
            Some("*") => Some(
                dirs.first()
                    .cloned()
                    .unwrap_or_else(|| "/nonexistent/dir".into()),
            ),
            Some(d) if !d.is_empty() && dirs.is_empty() => Some(d.to_string()),
            _ => None,
        })?;
    err_line(&format!(
        "[WARN] Skipping unreadable directory: {missing} (Directory does not exist: {missing})"
    ));
    err(format!(
        "{}Error: Directory does not exist: {missing}\n{}",
        texts::CRITICAL,
        texts::fill(texts::INCLUDE_DIR_STACK, &ctx.version)
    )
    .as_bytes());
    Some(1)
}
