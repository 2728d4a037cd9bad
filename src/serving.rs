//! Serving MCP to its end, on stdio or over Streamable HTTP, and the doctor's checks: the
//! binary's async code, run on the runtime `main` builds.
//!
//! Here and not in `main.rs` for the binary's size: an async function's body is compiled in every
//! crate that polls it, and generic code in every crate that uses it, so that serving from the
//! binary's crate compiled the server's whole call path (the tools, the runner, both backends) a
//! second time beside the library's copy. The binary calls these plain functions only.

use std::time::Duration;

use anyhow::Context;
use rmcp::service::ServerInitializeError;
use rmcp::ServiceExt;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::doctor;
use crate::http::{self, HttpOptions};
use crate::server::GeminiServer;
use crate::transport::{GraceTransport, InFlight, LineTransport};

/// Time, beyond the kill grace, that killed runs get to be reaped before the server exits.
const EXIT_SLACK: Duration = Duration::from_secs(2);

/// Serves MCP on `runtime` (over HTTP when `http` says so, else on stdio) until its end; the
/// process's exit code.
pub fn run(runtime: &Runtime, config: Config, http: Option<HttpOptions>) -> anyhow::Result<i32> {
    match http {
        Some(options) => runtime.block_on(serve_http(config, options)),
        None => runtime.block_on(serve(config)),
    }
}

/// The doctor's checks, run on `runtime`.
pub fn doctor(runtime: &Runtime, inputs: doctor::Inputs) -> doctor::Report {
    runtime.block_on(doctor::run(inputs))
}

async fn serve(config: Config) -> anyhow::Result<i32> {
    let signal = termination_signal();
    let shutdown = CancellationToken::new();
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let kill_wait = config.kill_grace + EXIT_SLACK;
    let server = GeminiServer::new(config.clone(), cwd, shutdown.clone());
    let (read, write) = rmcp::transport::stdio_pipes();
    let eof = CancellationToken::new();
    let transport = GraceTransport::new(
        LineTransport::new(read, write),
        InFlight::new(),
        config.eof_grace,
        config.kill_grace,
        shutdown.clone(),
    )
    .on_eof(eof.clone());
    // After EOF nobody can read a task's result: every running task is cancelled at once, and
    // the grace is left to the plain calls in flight.
    tokio::spawn({
        let (server, shutdown) = (server.clone(), shutdown.clone());
        async move {
            tokio::select! {
                _ = eof.cancelled() => server.cancel_tasks(),
                _ = shutdown.cancelled() => {}
            }
        }
    });
    tracing::debug!(
        version = env!("CARGO_PKG_VERSION"),
        max_concurrency = config.max_concurrency,
        max_output_bytes = config.max_output_bytes,
        "serving on stdio"
    );

    let session = async {
        match server.clone().serve(transport).await {
            Ok(running) => {
                let reason = running.waiting().await;
                tracing::debug!(?reason, "session ended");
                Ok(())
            }
            // stdin closed before `initialize`: nothing to do, not a failure.
            Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context("MCP initialization failed")),
        }
    };
    let code = tokio::select! {
        result = session => {
            result?;
            0
        }
        // Cancel inside the branch: leaving the select drops the session, which cancels every
        // request, and runs must see the shutdown (not a client cancellation) first.
        signal = async {
            let signal = signal.await;
            shutdown.cancel();
            signal
        } => {
            tracing::info!(signal, "terminating: killing every Gemini process tree");
            0
        }
    };
    shutdown.cancel();
    let _ = tokio::time::timeout(kill_wait, server.idle()).await;
    Ok(code)
}

/// Serves Streamable HTTP until a termination signal; then kills every run and exits 0.
async fn serve_http(config: Config, options: HttpOptions) -> anyhow::Result<i32> {
    let signal = termination_signal();
    let shutdown = CancellationToken::new();
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let kill_wait = config.kill_grace + EXIT_SLACK;
    let server = GeminiServer::new(config, cwd, shutdown.clone());
    let listener = http::bind(options.addr).with_context(|| format!("binding {}", options.addr))?;
    let local = listener.local_addr().context("reading the bound address")?;
    // Always printed (stdout is not the protocol channel here, but logs stay on stderr): the
    // operator, and tests binding port 0, learn the address from it.
    // One write, so that a reader of the stream never sees half the address (stderr is not
    // buffered: `eprintln!` writes each piece of its format on its own).
    let banner = format!(
        "geminicli-mcp: serving MCP over Streamable HTTP at http://{local}{}\n",
        http::MCP_PATH
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), banner.as_bytes());
    let serving = http::serve(listener, options, server.clone(), shutdown.clone());
    tokio::select! {
        result = serving => result.context("serving HTTP")?,
        signal = signal => {
            tracing::info!(signal, "terminating: killing every Gemini process tree");
        }
    }
    shutdown.cancel();
    let _ = tokio::time::timeout(kill_wait, server.idle()).await;
    Ok(0)
}

/// Resolves with the signal number on SIGTERM, SIGINT or SIGHUP. The handlers are installed when
/// this is called, not when the future is first polled: a signal sent as soon as the server says
/// it is listening still ends it cleanly, instead of by the signal's default action (exit 143).
#[cfg(unix)]
fn termination_signal() -> impl std::future::Future<Output = i32> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    async move {
        tokio::select! {
            _ = next(&mut term) => libc::SIGTERM,
            _ = next(&mut int) => libc::SIGINT,
            _ = next(&mut hup) => libc::SIGHUP,
        }
    }
}

/// Resolves on Ctrl+C.
#[cfg(not(unix))]
fn termination_signal() -> impl std::future::Future<Output = i32> {
    let ctrl_c = tokio::signal::ctrl_c();
    async move {
        let _ = ctrl_c.await;
        2
    }
}
