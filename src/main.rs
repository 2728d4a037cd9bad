//! `geminicli-mcp`: parses the command line and environment, sets up logging on stderr, and serves
//! MCP over stdio until stdin closes (after the EOF grace) or a termination signal arrives.

use std::time::Duration;

use anyhow::Context;

use geminicli_mcp::config::{settings, Cli, Command, Config, DoctorArgs, Given};
use geminicli_mcp::doctor;
use geminicli_mcp::fd_limit;
use geminicli_mcp::gemini::process;
use geminicli_mcp::http::{self, HttpOptions};
use geminicli_mcp::logging;
use geminicli_mcp::serving;
use geminicli_mcp::setup;

/// How long the exit waits for the background removal of private temporary directories.
const REMOVAL_WAIT: Duration = Duration::from_secs(5);

fn main() -> anyhow::Result<()> {
    large_allocations_go_back();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = process::watchdog_main(&args) {
        std::process::exit(code);
    }
    let cli = Cli::parse();
    let config = Config::from_env_and_flags(&cli.given);
    let lookup = cli.given.over(|name| std::env::var_os(name));
    let log_filter = lookup(settings::LOG.name).map(|v| v.to_string_lossy().into_owned());
    logging::init(log_filter.as_deref(), config.debug);
    for note in &config.unread {
        tracing::warn!("{note} (docs/environment.md)");
    }
    // Every HTTP connection and every run's pipes take a descriptor; soft limits of 256 (macOS)
    // or 1024 are too few for a busy server. The doctor reports what serving would get.
    if let Some(Command::Setup(args)) = &cli.command {
        let Some(env) = setup::Env::from_process(lookup(settings::LAUNCHER.name)) else {
            anyhow::bail!("setup: no home folder (HOME is not set)");
        };
        let code = setup::run(args, &env, &mut std::io::stdout(), &mut std::io::stderr());
        std::process::exit(code);
    }
    if let Some(Command::Tools(args)) = &cli.command {
        print_tools(args.json);
        return Ok(());
    }
    fd_limit::raise();
    if let Some(Command::Doctor(args)) = &cli.command {
        let http = HttpOptions::read(&lookup);
        return doctor(config, cli.given.clone(), args, http);
    }
    let http = HttpOptions::read(&lookup)?;
    // The token must not reach a Gemini run (it inherits the environment by default), and the
    // server has it now. Still single-threaded here, so changing the environment is sound.
    std::env::remove_var(http::TOKEN_ENV);
    if let Err(e) = process::init_subreaper() {
        tracing::warn!(error = %e, "could not become a child subreaper: descendants that leave their process group cannot be swept");
    }
    if let Err(e) = process::start_watchdog() {
        tracing::warn!(error = %e, "could not start the process watchdog: a server killed outright may leave processes behind");
    }
    process::keep_spare_tmp();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let code = serving::run(&runtime, config, http)?;
    // A blocking stdin read cannot be cancelled; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    finish_removals();
    process::stop_watchdog();
    std::process::exit(code);
}

/// Runs' private temporary directories are removed in the background after their answers, and one
/// is made ahead for the next run: before the process exits, the spare goes and the last removals
/// are waited for, not abandoned.
fn finish_removals() {
    if !process::finish_tmp(REMOVAL_WAIT) {
        tracing::warn!("private temporary directories were still being removed at exit");
    }
}

/// `geminicli-mcp tools`: every declared tool, as JSON or one line each (`name (set): description`).
fn print_tools(json: bool) {
    let catalogue = geminicli_mcp::server::tool_catalogue();
    if json {
        println!("{catalogue}");
        return;
    }
    for tool in catalogue["tools"].as_array().into_iter().flatten() {
        let field = |k: &str| tool[k].as_str().unwrap_or_default().to_string();
        println!(
            "{} ({}): {}",
            field("name"),
            field("toolset"),
            field("description")
        );
    }
}

/// `geminicli-mcp doctor`: the report on stdout, exit 1 when it found a problem.
fn doctor(
    config: Config,
    given: Given,
    args: &DoctorArgs,
    http: Result<Option<HttpOptions>, http::HttpConfigError>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut inputs =
        doctor::Inputs::from_process(config, Duration::from_secs_f64(args.doctor_timeout));
    inputs.given = given;
    match http {
        Ok(None) => {}
        Ok(Some(o)) => inputs.extra_config.extend(o.describe()),
        Err(e) => inputs.extra_problems.push(doctor::Problem {
            message: format!("the HTTP transport would not start: {e}"),
            fix: "see `geminicli-mcp --help` (HTTP settings) and docs/http.md".into(),
        }),
    }
    let report = serving::doctor(&runtime, inputs);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_text());
    }
    runtime.shutdown_timeout(Duration::from_millis(100));
    finish_removals();
    process::stop_watchdog();
    std::process::exit(if report.ok() { 0 } else { 1 });
}

/// glibc serves an allocation from its heap instead of a mapping of its own once a freed mapping
/// has raised its threshold (up to 32 MiB), and a heap keeps freed memory and copies on growth:
/// a call that handles an answer as long as the output cap would then cost the server several
/// times that answer in resident memory, and keep it. A fixed threshold of 1 MiB keeps every
/// large buffer in a mapping of its own: grown in place (`mremap`) and handed back when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn large_allocations_go_back() {
    // SAFETY: mallopt before any thread exists; it only sets an allocator parameter.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20) };
}

/// Other allocators (musl's, the systems') give large blocks back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn large_allocations_go_back() {}
