//! One invocation of the worker, in the real CLI's order: argument errors (1) → settings (52) →
//! sandbox command (44) → auth (41) → sandbox image (1) → session listing/deletion → trust (55) →
//! session resolution (42) → start-up noise → stdin → no input (42) → the model run derived from
//! the scenario, or a process fault.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::answer::Runner;
use crate::cli::{self, Args, Version};
use crate::output::{self, err, err_line, out, Format};
use crate::scenario::{self, Auth, Sandbox, Scenario, StdinTiming, Trust};
use crate::session::{self, Store};
use crate::{clock, ids, input, log, proc, texts};

/// The user's home directory (HOME, else USERPROFILE).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub(crate) fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == value)
}

pub(crate) fn env_ms(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

pub(crate) fn sleep_ms(ms: u64) {
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// Everything the stages share.
pub(crate) struct Ctx {
    pub(crate) argv: Vec<String>,
    pub(crate) version: String,
    pub(crate) scenario_name: Option<String>,
    pub(crate) scenario: Scenario,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) stdin: Vec<u8>,
    pub(crate) prompt: String,
    pub(crate) start: Instant,
}

impl Ctx {
    pub(crate) fn log(&self, exit: Option<i32>) {
        log::invocation(&log::Invocation {
            version: &self.version,
            argv: &self.argv,
            stdin: &self.stdin,
            prompt: &self.prompt,
            scenario: self.scenario_name.as_deref(),
            params: &self.params,
            exit,
        });
    }

    /// Ends the run with `code`, logging it first.
    fn exit(&self, code: i32) -> i32 {
        self.log(Some(code));
        code
    }

    /// The fake's own failure.
    fn fake_error(&self, msg: &str) -> i32 {
        err_line(&format!("fake-gemini: {msg}"));
        self.exit(99)
    }

    pub(crate) fn version(&self) -> Version {
        cli::parse_version(&self.version).unwrap_or((0, 61, 0))
    }
}

/// Loads a scenario by name or path and applies marker parameters (also used per ACP prompt).
pub(crate) fn resolve(
    reference: &str,
    params: &[(String, String)],
) -> Result<(String, Scenario), String> {
    let dir = std::env::var_os("FAKE_GEMINI_SCENARIO_DIR").map(PathBuf::from);
    let (name, mut s) = scenario::load(reference, dir.as_deref()).map_err(|e| e.to_string())?;
    // Precedence of the retry delay: marker parameter > FAKE_GEMINI_ATTEMPT_DELAY_MS > file.
    if let (Some(ms), Some(f)) = (
        env_ms("FAKE_GEMINI_ATTEMPT_DELAY_MS"),
        s.model.failure.as_mut(),
    ) {
        f.attempt_delay_ms = Some(ms);
    }
    scenario::apply_params(&name, &mut s, params).map_err(|e| e.to_string())?;
    Ok((name, s))
}

/// Runs the worker; returns the exit code.
pub fn worker(argv: Vec<String>) -> i32 {
    // The real worker's cleanup handlers are in place long before its first output.
    proc::worker_signals(false);
    let mut ctx = Ctx {
        argv,
        version: std::env::var("FAKE_GEMINI_VERSION").unwrap_or_else(|_| "0.61.0".into()),
        scenario_name: None,
        scenario: Scenario::default(),
        params: Vec::new(),
        stdin: Vec::new(),
        prompt: String::new(),
        start: Instant::now(),
    };
    if let Ok(reference) = std::env::var("FAKE_GEMINI_SCENARIO") {
        if !reference.is_empty() {
            match resolve(&reference, &[]) {
                Ok((n, s)) => {
                    ctx.scenario_name = Some(n);
                    ctx.scenario = s;
                }
                Err(e) => return ctx.fake_error(&e),
            }
        }
    }
    // A marker in -p / the positional query is known before stdin is read.
    let early_prompt: String = ctx.argv.join(" ");
    let mut marker_from_args = false;
    if let Some(m) = scenario::find_marker(&early_prompt) {
        let m = match m {
            Ok(m) => m,
            Err(e) => return ctx.fake_error(&e.to_string()),
        };
        match resolve(&m.name, &m.params) {
            Ok((n, s)) => {
                ctx.scenario_name = Some(n);
                ctx.scenario = s;
                ctx.params = m.params;
                marker_from_args = true;
            }
            Err(e) => return ctx.fake_error(&e),
        }
    }
    if let Some(v) = &ctx.scenario.environment.cli_version {
        ctx.version = v.clone();
    }
    if ctx.scenario.environment.startup_delay_ms > 0 {
        sleep_ms(ctx.scenario.environment.startup_delay_ms);
    }
    if let Some((_, attempt)) = proc::launcher_info() {
        if attempt < ctx.scenario.process.relaunches {
            return ctx.exit(proc::RELAUNCH_EXIT_CODE);
        }
    }

    let version = ctx.version();
    // yargs answers --help / --version before validating anything else.
    for a in ctx.argv.iter().take_while(|a| *a != "--") {
        match a.as_str() {
            "--help" | "-h" => {
                out(cli::help_text(version).as_bytes());
                return ctx.exit(0);
            }
            "--version" | "-v" => {
                out(format!("{}\n", ctx.version).as_bytes());
                return ctx.exit(0);
            }
            _ => {}
        }
    }
    let args =
        match cli::parse(&ctx.argv, version).and_then(|a| cli::check_conflicts(&a).map(|_| a)) {
            Ok(a) => a,
            Err(e) => {
                err(format!("{}\n{}", e.0, cli::help_text(version)).as_bytes());
                return ctx.exit(1);
            }
        };
    if args.flag("acp") || args.flag("experimental-acp") {
        // ACP mode: no prompt, no stdin window, no exit 41/55; the agent serves JSON-RPC on stdio.
        return crate::acp::serve(&ctx, &args);
    }
    if let Some(cmd) = args
        .query
        .first()
        .filter(|q| cli::COMMANDS.contains(&q.as_str()))
    {
        return ctx.fake_error(&format!("the `{cmd}` command is not emulated"));
    }
    let has_prompt =
        args.nonempty("prompt").is_some() || args.query_text().is_some_and(|q| !q.is_empty());
    let headless = has_prompt
        || !input::is_tty()
        || !std::io::IsTerminal::is_terminal(&std::io::stdout())
        || env_is("CI", "true")
        || env_is("GITHUB_ACTIONS", "true");
    if args.str("prompt-interactive").is_some() || !headless {
        return ctx.fake_error("interactive mode is not emulated (use -p or pipe stdin)");
    }
    let format = Format::from_flag(args.str("output-format"));
    let yolo = args.flag("yolo") || args.str("approval-mode") == Some("yolo");

    let code = pre_input_checks(&ctx, &args, format, yolo, true);
    if let Some(c) = code {
        return ctx.exit(c);
    }

    // Sessions: listing and deletion end here (no trust needed).
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let loss = env_is("FAKE_GEMINI_SESSION_LOSS", "1");
    let open_store = || match Store::open(&session::state_dir(), &cwd) {
        Ok(s) => Some(s),
        Err(e) => {
            err_line(&format!("fake-gemini: session state unavailable: {e}"));
            None
        }
    };
    // Opening the store touches the disk; a plain run does it only after answering.
    let needs_store_now = loss
        || args.flag("list-sessions")
        || args.str("delete-session").is_some()
        || args.str("resume").is_some()
        || args.str("session-id").is_some();
    let mut store = if needs_store_now { open_store() } else { None };
    if loss {
        if let Some(st) = &store {
            let _l = st.lock();
            st.cleanup_invalid();
        }
    }
    if args.flag("list-sessions") {
        let now = clock::now_ms();
        let list = store.as_ref().map(|s| s.list()).unwrap_or_default();
        out(session::listing(&list, now).as_bytes());
        return ctx.exit(0);
    }
    if let Some(ident) = args.str("delete-session") {
        if let Some(st) = &store {
            let _l = st.lock();
            let list = st.list();
            if list.is_empty() {
                err(b"No sessions found for this project.");
            } else if let Some(i) = st.find(&list, ident) {
                st.delete(&list[i]);
                out(format!(
                    "Deleted session {}: {} ({})",
                    i + 1,
                    session::title(&list[i], false),
                    session::relative(list[i].last, clock::now_ms())
                )
                .as_bytes());
            } else {
                err(format!("Invalid session identifier \"{ident}\". Use --list-sessions to see available sessions.").as_bytes());
            }
        }
        return ctx.exit(0);
    }
    if args.flag("list-extensions") {
        return ctx.fake_error("--list-extensions is not emulated");
    }
    if let Some(c) = trust_check(&ctx, &args, yolo) {
        return ctx.exit(c);
    }
    let mut resumed: Option<session::Session> = None;
    let mut fresh_notice = false;
    if let Some(ident) = args.str("resume") {
        let list = store.as_ref().map(|s| s.list()).unwrap_or_default();
        if list.is_empty() {
            if ident == "latest" {
                fresh_notice = true;
            } else {
                err_line("Error resuming session: No previous sessions found for this project.");
                return ctx.exit(42);
            }
        } else if let Some(i) = store.as_ref().and_then(|s| s.find(&list, ident)) {
            resumed = Some(list[i].clone());
        } else {
            let chats = store
                .as_ref()
                .map(|s| s.chats.display().to_string())
                .unwrap_or_default();
            err_line(&format!("Error resuming session: Invalid session identifier \"{ident}\".\n  Searched for sessions in {chats}.\n  Use --list-sessions to see available sessions, then use --resume {{number}}, --resume {{uuid}}, or --resume latest."));
            return ctx.exit(42);
        }
    }
    if let Some(id) = args.str("session-id") {
        let list = store.as_ref().map(|s| s.list()).unwrap_or_default();
        if list.iter().any(|s| s.id == id) {
            err_line(&format!("Error starting session: Session ID \"{id}\" already exists. Use --resume to resume it, or provide a different ID."));
            return ctx.exit(42);
        }
    }

    // Start-up noise, in the order the real CLI prints it.
    noise_before_ripgrep(yolo);
    if fresh_notice {
        err_line("No previous sessions found for this project.");
    }
    if let Some(c) = include_dirs_check(&ctx, &args) {
        return ctx.exit(c);
    }
    err_line(texts::RIPGREP);
    if ctx.scenario.environment.startup_noise {
        for l in texts::STARTUP_NOISE {
            err_line(l);
        }
    }

    // Input.
    // The real CLI reaches readStdin ≈2.2 s after spawn and then waits 500 ms for a first chunk;
    // bytes written before it starts reading sit in the pipe. FAKE_GEMINI_STDIN_START_MS models
    // that start (default 0: the fake reads at once).
    let start = Duration::from_millis(env_ms("FAKE_GEMINI_STDIN_START_MS").unwrap_or(0));
    let wait = start.saturating_sub(ctx.start.elapsed())
        + Duration::from_millis(env_ms("FAKE_GEMINI_STDIN_WAIT_MS").unwrap_or(500));
    let stdin = input::read(wait, ctx.scenario.environment.stdin != StdinTiming::Real);
    let flag_prompt = args
        .nonempty("prompt")
        .map(String::from)
        .or_else(|| args.query_text().filter(|q| !q.is_empty()));
    let prompt = match (stdin.text.is_empty(), flag_prompt) {
        (false, Some(p)) => format!("{}\n\n{p}", stdin.text),
        (false, None) => stdin.text.clone(),
        (true, Some(p)) => p,
        (true, None) => String::new(),
    };
    ctx.stdin = stdin.bytes;
    ctx.prompt = prompt.clone();
    if !marker_from_args {
        if let Some(m) = scenario::find_marker(&stdin.text) {
            match m {
                Ok(m) => match resolve(&m.name, &m.params) {
                    Ok((n, s)) => {
                        ctx.scenario_name = Some(n);
                        ctx.scenario = s;
                        ctx.params = m.params;
                        // The stdin marker decides the checks the real CLI makes before reading stdin.
                        if let Some(c) = pre_input_checks(&ctx, &args, format, yolo, false) {
                            return ctx.exit(c);
                        }
                        if let Some(c) = trust_check(&ctx, &args, yolo) {
                            return ctx.exit(c);
                        }
                        sleep_ms(ctx.scenario.environment.startup_delay_ms);
                    }
                    Err(e) => return ctx.fake_error(&e),
                },
                Err(e) => return ctx.fake_error(&e.to_string()),
            }
        }
    }
    if let Err(e) = check_expect(&ctx, &cwd) {
        return ctx.fake_error(&format!("expectation failed: {e}"));
    }
    if prompt.is_empty() || ctx.scenario.environment.stdin == StdinTiming::NoInput {
        err_line(texts::NO_INPUT);
        return ctx.exit(42);
    }

    let p = &ctx.scenario.process;
    if p.stdout.is_some() || p.stderr.is_some() || p.exit_code.is_some() {
        let code = p.exit_code.unwrap_or(0);
        ctx.log(Some(code));
        if let Some(s) = &p.stderr {
            err(s.as_bytes());
        }
        if let Some(s) = &p.stdout {
            out(s.as_bytes());
        }
        return code;
    }
    proc::worker_signals(p.ignore_sigterm);
    let session_id = match (&resumed, args.str("session-id")) {
        (Some(s), _) => s.id.clone(),
        (None, Some(id)) => id.to_string(),
        _ => ids::uuid_v4(),
    };
    let mut runner = Runner::new(&ctx, &args, format, yolo, session_id);
    // The loss bug's other half: a new session's file holds only its header until the prompt is
    // sent, and another run starting meanwhile deletes it (its start-up clean-up).
    let begun = match (&store, &resumed) {
        (Some(st), None) if loss => {
            let _l = st.lock();
            st.begin(&runner.session_id, clock::now_ms()).ok()
        }
        // A resume opens its recording as the run starts: the new header goes into the
        // session's file then, and in a later minute the stub exists for the whole run.
        (Some(st), Some(s)) if loss => {
            let _l = st.lock();
            st.begin_resume(s, clock::now_ms()).ok()
        }
        _ => None,
    };
    if let (Some(st), Some(path)) = (store.clone(), begun.clone()) {
        let prompt = ctx.prompt.clone();
        runner.on_sent = Some(Box::new(move || {
            let _l = st.lock();
            let _ = st.record_prompt(&path, &prompt, clock::now_ms());
        }));
    }
    if store.is_none() && !ctx.scenario.model.replies.is_empty() {
        store = open_store();
    }
    if let Some(st) = &store {
        if !ctx.scenario.model.replies.is_empty() {
            let _l = st.lock();
            let n = st.next_reply_index() as usize;
            let reply = ctx.scenario.model.replies[n % ctx.scenario.model.replies.len()].clone();
            runner.reply = Some(reply);
        }
    }
    let code = runner.run();
    if store.is_none() && code == Some(0) && !runner.never_sent {
        store = open_store();
    }
    if let (Some(st), Some(c)) = (&store, code) {
        if c == 0 && !runner.never_sent {
            let _l = st.lock();
            let now = clock::now_ms();
            let answer = runner.full_text.clone();
            let model = runner.main_model.clone();
            let _ = match (&resumed, &begun) {
                (Some(_), Some(path)) => st.finish(path, &answer, &model, now),
                (Some(s), None) => st.resume(s, &ctx.prompt, &answer, &model, now, loss),
                (None, Some(path)) => st.finish(path, &answer, &model, now),
                (None, None) => st.create(&runner.session_id, &ctx.prompt, &answer, &model, now),
            };
        }
    }
    code.unwrap_or(0)
}

fn settings_path() -> PathBuf {
    home_dir().join(".gemini").join("settings.json")
}

fn load_settings() -> Result<Value, String> {
    match std::fs::read(settings_path()) {
        // Read as Node reads it ("utf-8": invalid bytes become U+FFFD).
        Ok(bytes) => crate::settings::parse(&String::from_utf8_lossy(&bytes)),
        Err(_) => Ok(json!({})),
    }
}

/// Settings (52), the sandbox command (44), auth (41), the sandbox image (1). `first` = printing
/// the YOLO notice is allowed.
fn pre_input_checks(
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
        Auth::Authenticated => None,
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

fn trust_check(ctx: &Ctx, args: &Args, yolo: bool) -> Option<i32> {
    if folder_trusted(ctx, args, yolo) {
        None
    } else {
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

fn noise_before_ripgrep(yolo: bool) {
    let term = std::env::var("TERM").unwrap_or_default();
    let colorterm = std::env::var("COLORTERM").unwrap_or_default();
    if term == "dumb" {
        err_line(texts::TERM_DUMB);
    }
    if !(term.contains("256color") || colorterm == "truecolor" || colorterm == "24bit") {
        err_line(texts::NO_256);
    }
    if yolo {
        err_line(texts::YOLO);
        err_line(texts::YOLO);
    }
}

fn include_dirs_check(ctx: &Ctx, args: &Args) -> Option<i32> {
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

pub(crate) fn check_expect(ctx: &Ctx, cwd: &str) -> Result<(), String> {
    let e = &ctx.scenario.expect;
    if let Some(a) = &e.argv {
        if a != &ctx.argv {
            return Err(format!("argv is {:?}, expected {:?}", ctx.argv, a));
        }
    }
    for a in &e.argv_contains {
        if !ctx.argv.contains(a) {
            return Err(format!("argv {:?} lacks {a:?}", ctx.argv));
        }
    }
    for a in &e.argv_excludes {
        if ctx.argv.contains(a) {
            return Err(format!("argv {:?} contains {a:?}", ctx.argv));
        }
    }
    let stdin = String::from_utf8_lossy(&ctx.stdin);
    if let Some(s) = &e.stdin {
        if s.as_str() != stdin {
            return Err(format!(
                "stdin is {} bytes, not the expected {} bytes",
                ctx.stdin.len(),
                s.len()
            ));
        }
    }
    if let Some(s) = &e.stdin_contains {
        if !stdin.contains(s.as_str()) {
            return Err(format!("stdin does not contain {s:?}"));
        }
    }
    for (k, v) in &e.env {
        match std::env::var(k) {
            Ok(actual) if &actual == v => {}
            Ok(_) => return Err(format!("env {k} has another value")),
            Err(_) => return Err(format!("env {k} is not set")),
        }
    }
    for k in &e.env_present {
        if std::env::var_os(k).is_none() {
            return Err(format!("env {k} is not set"));
        }
    }
    for k in &e.env_absent {
        if std::env::var_os(k).is_some() {
            return Err(format!("env {k} is set"));
        }
    }
    if let Some(c) = &e.cwd {
        let want = std::fs::canonicalize(c).unwrap_or_else(|_| PathBuf::from(c));
        let have = std::fs::canonicalize(cwd).unwrap_or_else(|_| PathBuf::from(cwd));
        if want != have {
            return Err(format!("cwd is {cwd}, expected {c}"));
        }
    }
    Ok(())
}
