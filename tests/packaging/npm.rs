//! The npm packages, per product: the main package (`fake-gemini`, `geminicli-mcp`) and this
//! platform's `@geminicli-mcp/<product>-<platform>`, packed with `npm pack` and installed from the
//! two tarballs into a scratch project, offline.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{
    assert_lists_embedded_cases, assert_runs_a_case_with_the_fake_beside_it,
    assert_serves_a_client, available, binaries_dir, platform, run_ok, workspace,
    EMULATED_CLI_VERSION,
};

/// An npm command run in `dir`, offline and quiet about audits and funding.
fn npm(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("npm");
    let (command, rest) = args.split_first().expect("an npm command");
    cmd.arg(command)
        .args(["--offline", "--no-audit", "--no-fund"])
        .args(rest)
        .current_dir(dir);
    cmd
}

/// Builds and packs `product`'s main package and this platform's into `dist`, then installs both
/// tarballs into a new project under `root`; returns the project.
fn install(root: &Path, product: &str, platform: &str) -> PathBuf {
    let dist = root.join("dist");
    let out = run_ok(
        Command::new("node")
            .arg(workspace().join("packaging/npm/build.mjs"))
            .arg("--out")
            .arg(&dist)
            .arg("--pack")
            .args(["--product", product])
            .arg(format!("{platform}={}", binaries_dir().display())),
    );
    let tarballs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        tarballs.len(),
        2,
        "{product}'s main package and {platform}'s: {tarballs:?}"
    );
    let project = root.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{ "name": "wrapper-tests", "version": "1.0.0", "private": true }"#,
    )
    .unwrap();
    let mut args = vec!["install", "--save-dev"];
    args.extend(tarballs.iter().map(String::as_str));
    run_ok(&mut npm(&project, &args));
    project
}

/// The installed package's package.json points npm's page at the repository (`CARGO_PKG_REPOSITORY`,
/// the product's `folder` in it), its README and the issue tracker.
fn assert_links_the_repository(package: &Path, folder: Option<&str>) {
    let text = std::fs::read_to_string(package.join("package.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let repo = env!("CARGO_PKG_REPOSITORY");
    assert_eq!(
        json["repository"]["url"],
        format!("git+{repo}.git"),
        "{text}"
    );
    assert_eq!(json["repository"]["directory"].as_str(), folder, "{text}");
    let home = match folder {
        Some(f) => format!("{repo}/tree/main/{f}#readme"),
        None => format!("{repo}#readme"),
    };
    assert_eq!(json["homepage"], home, "{text}");
    assert_eq!(json["bugs"]["url"], format!("{repo}/issues"), "{text}");
}

/// Whether node and npm are here and a package is built for this platform (which it returns);
/// says why not otherwise.
fn npm_platform() -> Option<&'static str> {
    if !(available("node", &["--version"]) && available("npm", &["--version"])) {
        eprintln!("node/npm not found: skipping");
        return None;
    }
    let platform = platform();
    if platform.is_none() {
        eprintln!("no npm package is built for this platform: skipping");
    }
    platform
}

#[test]
#[ignore = "packs and installs the npm packages (node, npm); see tests/packaging"]
fn installed_package_runs_its_binaries() {
    let Some(platform) = npm_platform() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let project = install(root.path(), "fake-gemini", platform);
    assert_links_the_repository(
        &project.join("node_modules/fake-gemini"),
        Some("fake-gemini"),
    );
    assert_links_the_repository(
        &project.join(format!(
            "node_modules/@geminicli-mcp/fake-gemini-{platform}"
        )),
        Some("fake-gemini"),
    );

    let version = run_ok(&mut npm(
        &project,
        &["exec", "--", "fake-gemini", "--version"],
    ));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        EMULATED_CLI_VERSION
    );
    let list = run_ok(&mut npm(
        &project,
        &["exec", "--", "gemini-mcp-conformance", "--list"],
    ));
    assert_lists_embedded_cases(&list);
    assert_runs_a_case_with_the_fake_beside_it(npm(
        &project,
        &["exec", "--", "gemini-mcp-conformance"],
    ));

    // The launcher passes the binary's exit code on: an unknown flag is the CLI's exit 1.
    let bin = project.join("node_modules/.bin");
    let refused = Command::new(bin.join("fake-gemini"))
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Unknown argument"),
        "{refused:?}"
    );

    // binPath names the binary itself, for tests that must start it without the launcher.
    let path = run_ok(
        Command::new("node")
            .args([
                "-e",
                "console.log(require('fake-gemini').binPath('fake-gemini'))",
            ])
            .current_dir(&project),
    );
    let direct = PathBuf::from(String::from_utf8_lossy(&path.stdout).trim());
    let version = run_ok(Command::new(&direct).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        EMULATED_CLI_VERSION
    );
}

#[cfg(unix)]
#[test]
#[ignore = "packs and installs the npm packages (node, npm); see tests/packaging"]
fn launcher_passes_sigterm_to_the_binary_and_dies_of_it() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    let Some(platform) = npm_platform() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let project = install(root.path(), "fake-gemini", platform);
    // fake-gemini-api serves until a signal ends it; its first line is its base URL.
    let mut launcher = Command::new(project.join("node_modules/.bin/fake-gemini-api"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(launcher.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("no base URL first: {url:?}"))
        .to_string();
    std::net::TcpStream::connect(&addr).expect("the binary serves while the launcher runs");

    let pid = libc::pid_t::try_from(launcher.id()).unwrap();
    // The binary itself (Linux: the launcher's child by /proc), to look for once the launcher died;
    // elsewhere its port, which another test may take again as soon as it is free.
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = launcher.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    // The launcher waits for (and reaps) its child before dying, so the binary is gone.
    match children {
        Some(children) => {
            let alive: Vec<&str> = children
                .split_whitespace()
                .filter(|c| std::path::Path::new(&format!("/proc/{c}")).exists())
                .collect();
            assert!(
                alive.is_empty(),
                "fake-gemini-api outlived its launcher: {alive:?}"
            );
        }
        None => assert!(
            std::net::TcpStream::connect(&addr).is_err(),
            "fake-gemini-api outlived its launcher"
        ),
    }
}

#[test]
#[ignore = "packs and installs the npm packages (node, npm); see tests/packaging"]
fn installed_server_package_serves_mcp_through_its_launcher() {
    let Some(platform) = npm_platform() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let project = install(root.path(), "geminicli-mcp", platform);
    assert_links_the_repository(&project.join("node_modules/geminicli-mcp"), None);

    let version = run_ok(&mut npm(
        &project,
        &["exec", "--", "geminicli-mcp", "--version"],
    ));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("geminicli-mcp {}", env!("CARGO_PKG_VERSION"))
    );

    // A client's session through the launcher: its stdout holds JSON-RPC only, and the launcher
    // ends with the server's exit code once the server has ended.
    let mut server = Command::new(project.join("node_modules/.bin/geminicli-mcp"));
    server.env("HOME", root.path());
    let out = assert_serves_a_client(server);
    // Serving through the launcher, the server does not call the launcher's variable unknown.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("GEMINICLI_MCP_LAUNCHER"), "{stderr}");

    // `setup` through the launcher registers the launcher, which outlives upgrades of the package.
    let launcher = project.join("node_modules/.bin/geminicli-mcp");
    let dry_run = run_ok(
        Command::new(&launcher)
            .args(["setup", "--dry-run", "codex"])
            .env("HOME", root.path())
            .env_remove("CODEX_HOME"),
    );
    let shown = String::from_utf8_lossy(&dry_run.stdout);
    assert!(
        shown.contains(&format!("  + command = \"{}\"", launcher.display())),
        "{shown}"
    );

    // binPath names the binary itself, for a client that starts it without the launcher.
    let path = run_ok(
        Command::new("node")
            .args([
                "-e",
                "console.log(require('geminicli-mcp').binPath('geminicli-mcp'))",
            ])
            .current_dir(&project),
    );
    let direct = PathBuf::from(String::from_utf8_lossy(&path.stdout).trim());
    let version = run_ok(Command::new(&direct).arg("--version"));
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("geminicli-mcp "),
        "{version:?}"
    );
}
