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

/// Settings (52), the sandbox command (44), auth (41), the sandbox image (1). `first` = printing
/// the YOLO notice is allowed.
pub(crate) fn pre_input_checks(
    ctx: &Ctx,
    args: &Args,
    format: Format,
    yolo: bool,
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
        if yolo && first {
            err_line(texts::YOLO);
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
    if sandbox.is_some() && env.sandbox == Sandbox::ImageMissing {
        err(texts::fill(texts::SANDBOX_FAILED, &ctx.version).as_bytes());
        return Some(1);
    }
    None
}

/// The sandbox command as the CLI's `getSandboxCommand` picks it (`None`: no sandbox), or its
/// FatalSandboxError. `--sandbox` (else `tools.sandbox` of settings.json: a boolean, a command or
/// `{enabled, command}`), overridden by `GEMINI_SANDBOX`; `SANDBOX` set means "already inside".
/// A named command must be a known one and on `PATH`; `true` takes docker or podman from `PATH` —
/// unless the scenario scripts the machine: `command-missing` finds neither, `invalid-command`
/// fails as a bad `GEMINI_SANDBOX` does, and the default (`image-missing`) and `available` find
/// docker.
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
        Sandbox::CommandMissing => Err("GEMINI_SANDBOX is true but failed to determine command for sandbox; install docker or podman or specify command in GEMINI_SANDBOX".into()),
        Sandbox::InvalidCommand => Err(format!("Invalid sandbox command 'docker'. Must be one of {VALID}")),
        Sandbox::ImageMissing | Sandbox::Available => Ok(Some("docker".into())),
    }
}

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

/// Whether the folder is trusted, as the scenario says or by the CLI's rules: `--skip-trust`,
/// `GEMINI_CLI_TRUST_WORKSPACE=true`, `yolo` when it counts (headless runs; not in ACP mode, where
/// yolo is downgraded instead), or the settings and trustedFolders.json.
pub(crate) fn folder_trusted(ctx: &Ctx, args: &Args, yolo: bool) -> bool {
    match ctx.scenario.environment.trust {
        Trust::Trusted => true,
        Trust::Untrusted => false,
        Trust::Rules => {
            args.flag("skip-trust")
                || env_is("GEMINI_CLI_TRUST_WORKSPACE", "true")
                || yolo
                || folder_trusted_by_files()
        }
    }
}

/// The trust check (55).
pub(crate) fn trust_check(ctx: &Ctx, args: &Args, yolo: bool) -> Option<i32> {
    if folder_trusted(ctx, args, yolo) {
        None
    } else {
        // The refused login's first report comes before the trust check's exit.
        if ctx.scenario.environment.auth == Auth::Unsupported {
            err(texts::sunset_report().as_bytes());
        }
        fatal_red(texts::UNTRUSTED);
        Some(55)
    }
}

/// `security.folderTrust.enabled = false`, or the cwd (or its parent) in trustedFolders.json.
fn folder_trusted_by_files() -> bool {
    let settings = load_settings().unwrap_or_default();
    if settings["security"]["folderTrust"]["enabled"] == json!(false) {
        return true;
    }
    let Ok(text) = std::fs::read_to_string(home_dir().join(".gemini").join("trustedFolders.json"))
    else {
        return false;
    };
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    let Ok(cwd) = std::env::current_dir() else {
        return false;
    };
    map.iter().any(|(path, level)| {
        let p = std::path::Path::new(path);
        match level.as_str() {
            Some("TRUST_FOLDER") => cwd.starts_with(p),
            Some("TRUST_PARENT") => p.parent().is_some_and(|pp| cwd.starts_with(pp)),
            _ => false,
        }
    })
}

/// The terminal warnings every run starts its stderr with.
pub(crate) fn terminal_warnings() {
    let term = std::env::var("TERM").unwrap_or_default();
    let colorterm = std::env::var("COLORTERM").unwrap_or_default();
    if term == "dumb" {
        err_line(texts::TERM_DUMB);
    }
    if !(term.contains("256color") || colorterm == "truecolor" || colorterm == "24bit") {
        err_line(texts::NO_256);
    }
}

/// The yolo notice, printed twice.
pub(crate) fn yolo_warnings(yolo: bool) {
    if yolo {
        err_line(texts::YOLO);
        err_line(texts::YOLO);
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
