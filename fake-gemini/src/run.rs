//! One invocation of the worker, in the real CLI's order: argument errors (1) → settings (52) →
//! sandbox command (44) → auth (41) → sandbox image (1) → session listing/deletion → trust (55) →
//! session resolution (42) → start-up noise → stdin → no input (42) → the model run derived from
//! the scenario, or a process fault. Each phase is a function; an `Err` is the exit code the
//! invocation ends with.

use std::time::{Duration, Instant};

use crate::answer::Runner;
use crate::checks::{
    include_dirs_check, pre_input_checks, terminal_warnings, trust_check, two_api_keys, Approval,
};
use crate::cli::{self, Args};
use crate::invocation::{check_expect, resolve, Ctx};
use crate::output::Format;
use crate::scenario::{self, Auth, Scenario, StdinTiming};
use crate::session::{self, Store};
use crate::sys::{env_is, env_ms, err, err_line, out, sleep_ms};
use crate::{clock, ids, input, proc, texts, timing};

/// An invocation's phase result: go on with `T`, or end with this exit code.
type Phase<T> = Result<T, i32>;

/// Runs the worker; returns the exit code.
pub fn worker(argv: Vec<String>) -> i32 {
    // The real worker's cleanup handlers are in place long before its first output.
    proc::worker_signals(false);
    match run(argv) {
        Ok(code) | Err(code) => code,
    }
}

fn run(argv: Vec<String>) -> Phase<i32> {
    let (mut ctx, marker_from_args) = start(argv)?;
    let args = parse(&ctx)?;
    if args.flag("acp") || args.flag("experimental-acp") {
        // ACP mode: no prompt, no stdin window, no exit 41/55; the agent serves JSON-RPC on stdio
        // (once it no longer asks for a restart: `FAKE_GEMINI_SCENARIO`'s `relaunches`).
        if let Some(code) = asks_for_restart(&ctx) {
            return Err(code);
        }
        return Ok(crate::acp::serve(&ctx, &args));
    }
    headless(&ctx, &args)?;
    if timing::real(&ctx.scenario.environment) {
        // Nothing appears before the real CLI's start-up is done, whatever the run's outcome.
        let first = Duration::from_millis(timing::FIRST_OUTPUT_MS);
        std::thread::sleep(first.saturating_sub(ctx.start.elapsed()));
    }
    // A repeated `-o` is an array, which the CLI's format check lets through as text.
    let format = if args.repeated.contains("output-format") {
        Format::Text
    } else {
        Format::from_flag(args.str("output-format"))
    };
    let approval = Approval::of(&ctx, &args);
    if let Some(c) = pre_input_checks(&ctx, &args, format, &approval, true) {
        return Err(ctx.exit(c));
    }
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let mut sessions = Sessions::open(&cwd, &args);
    sessions.list_or_delete(&ctx, &args)?;
    if args.flag("list-extensions") {
        return Err(ctx.fake_error("--list-extensions is not emulated"));
    }
    if let Some(c) = trust_check(&ctx, &approval) {
        return Err(ctx.exit(c));
    }
    let fresh_notice = sessions.resolve(&ctx, &args)?;
    startup_noise(&ctx, &args, &approval, fresh_notice)?;
    read_input(&mut ctx, &args, format, marker_from_args)?;
    if let Err(e) = check_expect(&ctx, &cwd) {
        return Err(ctx.fake_error(&format!("expectation failed: {e}")));
    }
    if ctx.prompt.is_empty() || ctx.scenario.environment.stdin == StdinTiming::NoInput {
        err_line(texts::NO_INPUT);
        return Err(ctx.exit(42));
    }
    if let Some(code) = asks_for_restart(&ctx) {
        return Err(code);
    }
    if let Some(code) = scripted_process(&ctx) {
        return Ok(code);
    }
    proc::worker_signals(ctx.scenario.process.ignore_sigterm);
    Ok(model_run(&ctx, &args, format, &approval, sessions))
}

/// The scenario (from `FAKE_GEMINI_SCENARIO`, then a marker in the arguments), the emulated
/// version, the start-up delay and the launcher's relaunches. Also says whether the arguments
/// held the marker (a stdin marker then does not count).
fn start(argv: Vec<String>) -> Phase<(Ctx, bool)> {
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
            let (n, s) = resolve(&reference, &[]).map_err(|e| ctx.fake_error(&e))?;
            ctx.scenario_name = Some(n);
            ctx.scenario = s;
        }
    }
    // A marker in -p / the positional query is known before stdin is read.
    let early_prompt: String = ctx.argv.join(" ");
    let mut marker_from_args = false;
    if let Some(m) = scenario::find_marker(&early_prompt) {
        let m = m.map_err(|e| ctx.fake_error(&e.to_string()))?;
        let (n, s) = resolve(&m.name, &m.params).map_err(|e| ctx.fake_error(&e))?;
        ctx.scenario_name = Some(n);
        ctx.scenario = s;
        ctx.params = m.params;
        marker_from_args = true;
    }
    if let Some(v) = &ctx.scenario.environment.cli_version {
        ctx.version = v.clone();
    }
    timing::check_env().map_err(|e| ctx.fake_error(&e))?;
    if ctx.scenario.environment.startup_delay_ms > 0 {
        sleep_ms(ctx.scenario.environment.startup_delay_ms);
    }
    if let Some((_, attempt)) = crate::sys::launcher_info() {
        if attempt < ctx.scenario.process.relaunches {
            return Err(ctx.exit(proc::RELAUNCH_EXIT_CODE));
        }
    }
    Ok((ctx, marker_from_args))
}

/// The arguments as the CLI's parser reads them (an error is exit 1 with the help text);
/// `--help`, then `--version`, answered before anything is validated.
fn parse(ctx: &Ctx) -> Phase<Args> {
    let version = ctx.version();
    let usage_error = |e: cli::ArgError| {
        err(format!("{}\n{}", e.0, cli::help_text(version)).as_bytes());
        ctx.exit(1)
    };
    let args = cli::parse(&ctx.argv, version).map_err(usage_error)?;
    if args.flag("help") {
        out(cli::help_text(version).as_bytes());
        return Err(ctx.exit(0));
    }
    if args.flag("version") {
        out(format!("{}\n", ctx.version).as_bytes());
        return Err(ctx.exit(0));
    }
    cli::check_conflicts(&args).map_err(usage_error)?;
    Ok(args)
}

/// Only headless runs are emulated: a prompt, or stdin or stdout not a terminal, or CI.
fn headless(ctx: &Ctx, args: &Args) -> Phase<()> {
    if let Some(cmd) = args
        .query
        .first()
        .filter(|q| cli::COMMANDS.contains(&q.as_str()))
    {
        return Err(ctx.fake_error(&format!("the `{cmd}` command is not emulated")));
    }
    let has_prompt =
        args.nonempty("prompt").is_some() || args.query_text().is_some_and(|q| !q.is_empty());
    let headless = has_prompt
        || !input::is_tty()
        || !std::io::IsTerminal::is_terminal(&std::io::stdout())
        || env_is("CI", "true")
        || env_is("GITHUB_ACTIONS", "true");
    if args.str("prompt-interactive").is_some() || !headless {
        return Err(ctx.fake_error("interactive mode is not emulated (use -p or pipe stdin)"));
    }
    Ok(())
}

/// The project's session store, when the run needs it, and the session a run resumes.
struct Sessions {
    cwd: String,
    /// `FAKE_GEMINI_SESSION_LOSS=1`: the CLI's start-up clean-up and header-only files.
    loss: bool,
    store: Option<Store>,
    resumed: Option<session::Session>,
}

impl Sessions {
    /// Opens the store now when the run needs it before answering (opening touches the disk; a
    /// plain run does it only after answering), and runs the start-up clean-up of the loss bug.
    fn open(cwd: &str, args: &Args) -> Sessions {
        let loss = env_is("FAKE_GEMINI_SESSION_LOSS", "1");
        let needs_store_now = loss
            || args.flag("list-sessions")
            || args.str("delete-session").is_some()
            || args.str("resume").is_some()
            || args.str("session-id").is_some();
        let mut s = Sessions {
            cwd: cwd.to_string(),
            loss,
            store: None,
            resumed: None,
        };
        if needs_store_now {
            s.store = s.open_store();
        }
        if loss {
            if let Some(st) = &s.store {
                let _l = st.lock();
                st.cleanup_invalid();
            }
        }
        s
    }

    fn open_store(&self) -> Option<Store> {
        match Store::open(&session::state_dir(), &self.cwd) {
            Ok(s) => Some(s),
            Err(e) => {
                err_line(&format!("fake-gemini: session state unavailable: {e}"));
                None
            }
        }
    }

    /// `--list-sessions` and `--delete-session` end the run here (no trust needed).
    fn list_or_delete(&self, ctx: &Ctx, args: &Args) -> Phase<()> {
        if args.flag("list-sessions") {
            let now = clock::now_ms();
            let list = self.store.as_ref().map(|s| s.list()).unwrap_or_default();
            out(session::listing(&list, now).as_bytes());
            return Err(ctx.exit(0));
        }
        let Some(ident) = args.str("delete-session") else {
            return Ok(());
        };
        if let Some(st) = &self.store {
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
        Err(ctx.exit(0))
    }

    /// `--resume` (42 when there is no such session) and `--session-id` (42 when it exists).
    /// Returns whether `--resume latest` found nothing (a notice, then a fresh session).
    fn resolve(&mut self, ctx: &Ctx, args: &Args) -> Phase<bool> {
        let list = || self.store.as_ref().map(|s| s.list()).unwrap_or_default();
        let mut fresh_notice = false;
        if let Some(ident) = args.str("resume") {
            let list = list();
            if list.is_empty() {
                if ident != "latest" {
                    err_line(
                        "Error resuming session: No previous sessions found for this project.",
                    );
                    return Err(ctx.exit(42));
                }
                fresh_notice = true;
            } else if let Some(i) = self.store.as_ref().and_then(|s| s.find(&list, ident)) {
                self.resumed = Some(list[i].clone());
            } else {
                let chats = self
                    .store
                    .as_ref()
                    .map(|s| s.chats.display().to_string())
                    .unwrap_or_default();
                err_line(&format!("Error resuming session: Invalid session identifier \"{ident}\".\n  Searched for sessions in {chats}.\n  Use --list-sessions to see available sessions, then use --resume {{number}}, --resume {{uuid}}, or --resume latest."));
                return Err(ctx.exit(42));
            }
        }
        if let Some(id) = args.str("session-id") {
            if list().iter().any(|s| s.id == id) {
                err_line(&format!("Error starting session: Session ID \"{id}\" already exists. Use --resume to resume it, or provide a different ID."));
                return Err(ctx.exit(42));
            }
        }
        Ok(fresh_notice)
    }
}

/// The start-up noise, in the order the real CLI prints it (terminal warnings, skipped system
/// settings files, the fresh-session notice, deprecation warnings, the configuration loads' lines,
/// the ripgrep notice), with the include-directory check among it.
fn startup_noise(ctx: &Ctx, args: &Args, approval: &Approval, fresh_notice: bool) -> Phase<()> {
    terminal_warnings();
    for l in crate::settings::skipped_system_files() {
        err_line(&l);
    }
    if fresh_notice {
        err_line("No previous sessions found for this project.");
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut deprecated = cli::deprecations(args);
    if crate::settings::tools_allowed_nonempty(&cwd)
        && !deprecated.contains(&texts::ALLOWED_TOOLS_DEPRECATED)
    {
        deprecated.push(texts::ALLOWED_TOOLS_DEPRECATED);
    }
    for w in deprecated {
        err_line(w);
    }
    // Telemetry starts between the two configuration loads (observed: its notice falls between
    // their YOLO notices).
    approval.config_load(true);
    if crate::settings::telemetry_enabled(&cwd) {
        err_line(texts::METRIC_READER_DEPRECATED);
    }
    approval.config_load(true);
    let refused = ctx.scenario.environment.auth == Auth::Unsupported;
    if refused {
        err(texts::sunset_report().as_bytes());
    }
    if let Some(c) = include_dirs_check(ctx, args) {
        return Err(ctx.exit(c));
    }
    err_line(texts::RIPGREP);
    // The settings' MCP servers: the run waits for every one's `initialize` (observed).
    if crate::mcp::discover(&cwd, args) {
        err_line(crate::mcp::ISSUES);
    }
    if two_api_keys() {
        // The run's own auth and its client warn once each.
        err_line(texts::TWO_API_KEYS);
        err_line(texts::TWO_API_KEYS);
    }
    if refused {
        // The second `refreshAuth`, just before the prompt runs: an uncaught error, exit 1,
        // nothing on stdout whatever the output format.
        err(texts::sunset_critical().as_bytes());
        return Err(ctx.exit(1));
    }
    if crate::settings::include_directory_tree(&cwd) {
        let mut roots = vec![cwd.clone()];
        roots.extend(
            args.array("include-directories")
                .iter()
                .map(|d| cwd.join(d)),
        );
        for w in crate::tree::unreadable_folder_warnings(&roots) {
            err_line(&w);
        }
    }
    if ctx.scenario.environment.startup_noise {
        for l in texts::STARTUP_NOISE {
            err_line(l);
        }
    }
    Ok(())
}

/// Reads stdin as the CLI does and assembles the prompt; a marker found there selects the
/// scenario, whose pre-input checks then run as the real CLI would have run them.
fn read_input(ctx: &mut Ctx, args: &Args, format: Format, marker_from_args: bool) -> Phase<()> {
    // The real CLI reaches readStdin ≈2.2 s after spawn and then waits 500 ms for a first chunk;
    // bytes written before it starts reading sit in the pipe. FAKE_GEMINI_STDIN_START_MS models
    // that start (default 0: the fake reads at once; the real-timing preset: 2300 ms).
    let env = &ctx.scenario.environment;
    let start = Duration::from_millis(timing::knob(
        "FAKE_GEMINI_STDIN_START_MS",
        env,
        timing::STDIN_START_MS,
        0,
    ));
    let wait = start.saturating_sub(ctx.start.elapsed())
        + Duration::from_millis(env_ms("FAKE_GEMINI_STDIN_WAIT_MS").unwrap_or(500));
    let stdin = input::read(wait, ctx.scenario.environment.stdin != StdinTiming::Real);
    let flag_prompt = args
        .nonempty("prompt")
        .map(String::from)
        .or_else(|| args.query_text().filter(|q| !q.is_empty()));
    ctx.prompt = match (stdin.text.is_empty(), flag_prompt) {
        (false, Some(p)) => format!("{}\n\n{p}", stdin.text),
        (false, None) => stdin.text.clone(),
        (true, Some(p)) => p,
        (true, None) => String::new(),
    };
    ctx.stdin = stdin.bytes;
    if marker_from_args {
        return Ok(());
    }
    let Some(m) = scenario::find_marker(&stdin.text) else {
        return Ok(());
    };
    let m = m.map_err(|e| ctx.fake_error(&e.to_string()))?;
    let (n, s) = resolve(&m.name, &m.params).map_err(|e| ctx.fake_error(&e))?;
    ctx.scenario_name = Some(n);
    ctx.scenario = s;
    ctx.params = m.params;
    // The stdin marker decides the checks the real CLI makes before reading stdin.
    let approval = Approval::of(ctx, args);
    if let Some(c) = pre_input_checks(ctx, args, format, &approval, false) {
        return Err(ctx.exit(c));
    }
    if let Some(c) = trust_check(ctx, &approval) {
        return Err(ctx.exit(c));
    }
    if ctx.scenario.environment.auth == Auth::Unsupported {
        // The stdin marker stands for a login the CLI checked before reading stdin.
        err(texts::sunset_report().as_bytes());
        err(texts::sunset_critical().as_bytes());
        return Err(ctx.exit(1));
    }
    sleep_ms(ctx.scenario.environment.startup_delay_ms);
    Ok(())
}

/// A scenario that scripts the process's output and exit code directly.
/// Under `GEMINI_CLI_NO_RELAUNCH` no launcher restarts the CLI: the process itself exits 199
/// ("restart me", what the launcher would act on) the scenario's `relaunches` times, counted per
/// prompt (an agent's, `--acp`, has none) across runs in `<FAKE_GEMINI_STATE>/tmp/fake-gemini/`, before
/// a run goes on. Returns the exit code when the run ends here.
fn asks_for_restart(ctx: &Ctx) -> Option<i32> {
    let wanted = ctx.scenario.process.relaunches;
    if wanted == 0 || std::env::var_os("GEMINI_CLI_NO_RELAUNCH").is_none() {
        return None;
    }
    let dir = crate::session::state_dir().join("tmp").join("fake-gemini");
    let file = dir.join(format!(
        "relaunches-{}",
        crate::ids::sha256_hex(ctx.prompt.as_bytes())
    ));
    let done: u32 = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    if done >= wanted {
        return None;
    }
    let counted =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, (done + 1).to_string()));
    Some(match counted {
        Ok(()) => ctx.exit(proc::RELAUNCH_EXIT_CODE),
        Err(e) => ctx.fake_error(&format!(
            "cannot count the restarts in {}: {e}",
            dir.display()
        )),
    })
}

fn scripted_process(ctx: &Ctx) -> Option<i32> {
    let p = &ctx.scenario.process;
    if p.stdout.is_none() && p.stderr.is_none() && p.exit_code.is_none() {
        return None;
    }
    let code = p.exit_code.unwrap_or(0);
    ctx.log(Some(code));
    if let Some(s) = &p.stderr {
        err(s.as_bytes());
    }
    if let Some(s) = &p.stdout {
        out(s.as_bytes());
    }
    Some(code)
}

/// The model run, with the session it belongs to recorded as the CLI records it.
fn model_run(ctx: &Ctx, args: &Args, format: Format, approval: &Approval, mut s: Sessions) -> i32 {
    let session_id = match (&s.resumed, args.str("session-id")) {
        (Some(r), _) => r.id.clone(),
        (None, Some(id)) => id.to_string(),
        _ => ids::uuid_v4(),
    };
    let mut runner = Runner::new(ctx, args, format, approval.yolo(), session_id);
    if approval.mode == "plan" {
        runner.plan_mode();
    }
    // The loss bug's other half: a new session's file holds only its header until the prompt is
    // sent, and another run starting meanwhile deletes it (its start-up clean-up).
    let begun = match (&s.store, &s.resumed) {
        (Some(st), None) if s.loss => {
            let _l = st.lock();
            st.begin(&runner.session_id, clock::now_ms()).ok()
        }
        // A resume opens its recording as the run starts: the new header goes into the
        // session's file then, and in a later minute the stub exists for the whole run.
        (Some(st), Some(r)) if s.loss => {
            let _l = st.lock();
            st.begin_resume(r, clock::now_ms()).ok()
        }
        _ => None,
    };
    if let (Some(st), Some(path)) = (s.store.clone(), begun.clone()) {
        let prompt = ctx.prompt.clone();
        runner.on_sent = Some(Box::new(move || {
            let _l = st.lock();
            let _ = st.record_prompt(&path, &prompt, clock::now_ms());
        }));
    }
    let replies = &ctx.scenario.model.replies;
    if s.store.is_none() && !replies.is_empty() {
        s.store = s.open_store();
    }
    if let (Some(st), false) = (&s.store, replies.is_empty()) {
        let _l = st.lock();
        let n = st.next_reply_index() as usize;
        runner.reply = Some(replies[n % replies.len()].clone());
    }
    if timing::real(&ctx.scenario.environment) {
        sleep_ms(timing::ANSWER_AFTER_MS);
    }
    let code = runner.run();
    if s.store.is_none() && code == Some(0) && !runner.never_sent {
        s.store = s.open_store();
    }
    if let (Some(st), Some(0), false) = (&s.store, code, runner.never_sent) {
        let _l = st.lock();
        let now = clock::now_ms();
        let answer = runner.full_text.clone();
        let model = runner.main_model.clone();
        let _ = match (&s.resumed, &begun) {
            (Some(_), Some(path)) => st.finish(path, &answer, &model, now),
            (Some(r), None) => st.resume(r, &ctx.prompt, &answer, &model, now, s.loss),
            (None, Some(path)) => st.finish(path, &answer, &model, now),
            (None, None) => st.create(&runner.session_id, &ctx.prompt, &answer, &model, now),
        };
    }
    code.unwrap_or(0)
}
