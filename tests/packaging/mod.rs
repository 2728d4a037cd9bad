//! The npm packages (the server's and fake-gemini's) and fake-gemini's PyPI wheel, built from
//! this workspace's binaries by `packaging/npm/build.mjs` and `packaging/pypi/build_wheel.py` and
//! installed from the built files into a scratch project and a fresh virtualenv, as a user or a
//! wrapper author installs them: the installed commands run the binaries (the server answering
//! `initialize` through its launcher, the emulated CLI's version, the runner's embedded cases, a
//! case run with the fake-gemini installed beside the runner, exit codes and, for npm's launcher,
//! signals). The server's Claude Desktop bundle (`packaging/mcpb/build.mjs`) is built and
//! unpacked, and its manifest checked. Only this machine's platform is packed. The MCP Registry's
//! server.json is checked against the registry's schema (`registry`), the packages' READMEs
//! link to documents that exist (`readme`), and the Claude Code plugin agrees with the crate, the
//! npm package and the docs (`plugin`).
//!
//! Ignored by default, but for `registry`, `readme` and `plugin`: they need node and npm, or python3 with venv (each
//! test is skipped with a message without them), and pack about 100 MB of debug binaries.
//!
//! ```sh
//! packaging/test.sh     # builds the debug binaries, then runs these
//! ```

mod mcpb;
mod npm;
mod plugin;
mod readme;
mod registry;
mod wheel;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binaries every package carries.
const BINARIES: [&str; 3] = ["fake-gemini", "fake-gemini-api", "gemini-mcp-conformance"];

/// The version `fake-gemini --version` prints: the emulated CLI's, not the crate's.
const EMULATED_CLI_VERSION: &str = "0.61.0\n";

/// The workspace root, where `packaging/` is.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding this workspace's built fake-gemini, fake-gemini-api,
/// gemini-mcp-conformance and geminicli-mcp (built when missing).
fn binaries_dir() -> PathBuf {
    let dirs: Vec<PathBuf> = BINARIES
        .iter()
        .chain(&["geminicli-mcp"])
        .map(|b| {
            gemini_mcp_conformance::bins::locate(b)
                .parent()
                .expect("a binary has a directory")
                .to_path_buf()
        })
        .collect();
    assert!(
        dirs.iter().all(|d| d == &dirs[0]),
        "the binaries are not side by side: {dirs:?}"
    );
    dirs[0].clone()
}

/// This machine's package platform, in Node's `${process.platform}-${process.arch}` terms (the
/// names both build scripts take); `None` where no package is built for it.
fn platform() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("linux-x64"),
        ("linux", "aarch64") => Some("linux-arm64"),
        ("macos", "x86_64") => Some("darwin-x64"),
        ("macos", "aarch64") => Some("darwin-arm64"),
        ("windows", "x86_64") => Some("win32-x64"),
        _ => None,
    }
}

/// Whether `program args…` runs and exits 0 (a tool the test needs is there).
fn available(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `cmd` and returns its output, panicking with its stderr when it fails.
fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The ids of the cases built into the runner, in the order `--list` prints them.
fn embedded_ids() -> Vec<String> {
    gemini_mcp_conformance::case::load_embedded()
        .into_iter()
        .map(|c| match c {
            Ok(c) => c.id,
            Err((id, _)) => id,
        })
        .collect()
}

/// Asserts that the output of `gemini-mcp-conformance --list` lists exactly the embedded cases.
fn assert_lists_embedded_cases(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default())
        .collect();
    let want = embedded_ids();
    assert!(!want.is_empty(), "the runner embeds no case");
    assert_eq!(listed, want, "the installed runner's --list");
}

/// Runs the installed runner (`runner`, ready for its arguments) on one case that calls
/// fake-gemini, against this workspace's server and without `--fake-gemini`, and asserts that the
/// case passed: the runner found the fake-gemini installed beside it. Its other places to look
/// are taken away (the override, `CARGO_TARGET_DIR`, a cargo to build with); only a build into
/// the checkout's own `target/` stays visible to it.
fn assert_runs_a_case_with_the_fake_beside_it(mut runner: Command) {
    let out = runner
        .args([
            "--run",
            "transport/headless-flags",
            "--json",
            "-",
            "--target",
        ])
        .arg(gemini_mcp_conformance::bins::locate("geminicli-mcp"))
        .env_remove("GEMINI_MCP_CONFORMANCE_FAKE_GEMINI")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO", "/nonexistent/cargo")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {runner:?}: {e}"));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}, {}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        report["summary"],
        serde_json::json!({"pass": 1}),
        "{report:#}"
    );
    assert!(out.status.success(), "{}", out.status);
}

/// Runs the installed server (`server`, ready to start) as a client's session: `initialize`,
/// then stdin closed. Asserts that every line on its stdout is JSON-RPC, that `initialize` is
/// answered by geminicli-mcp, and that the command exits 0 once stdin is closed. Returns what it
/// printed.
fn assert_serves_a_client(mut server: Command) -> Output {
    use std::io::Write;
    use std::process::Stdio;

    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {server:?}: {e}"));
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "packaging-test", "version": "1"}}});
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, "{initialize}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {l:?}")))
        .collect();
    let answer = lines
        .iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("no answer to initialize: {lines:?}"));
    assert_eq!(answer["result"]["serverInfo"]["name"], "geminicli-mcp");
    assert!(lines.iter().all(|m| m["jsonrpc"] == "2.0"), "{lines:?}");
    out
}
