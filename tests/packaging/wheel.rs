//! The PyPI wheels `fake-gemini` and `geminicli-mcp` for this platform, built by
//! `packaging/pypi/build_wheel.py` and installed with pip from the file into a fresh virtualenv,
//! offline.

use std::path::Path;
use std::process::Command;

use super::{
    assert_lists_embedded_cases, assert_runs_a_case_with_the_fake_beside_it,
    assert_serves_a_client, available, binaries_dir, platform, run_ok, workspace, BINARIES,
    EMULATED_CLI_VERSION,
};

/// Where a virtualenv puts its commands.
fn scripts(venv: &Path) -> std::path::PathBuf {
    if cfg!(windows) {
        venv.join("Scripts")
    } else {
        venv.join("bin")
    }
}

/// Whether python3 with venv is here and a wheel is built for this platform (which it returns);
/// says why not otherwise.
fn wheel_platform() -> Option<&'static str> {
    if !available("python3", &["-c", "import venv, ensurepip"]) {
        eprintln!("python3 with venv not found: skipping");
        return None;
    }
    let platform = platform();
    if platform.is_none() {
        eprintln!("no wheel is built for this platform: skipping");
    }
    platform
}

/// Builds `product`'s wheel for `platform` under `root` and installs it into a new virtualenv
/// there; returns the virtualenv's command directory.
fn install(root: &Path, product: &str, platform: &str) -> std::path::PathBuf {
    let out = run_ok(
        Command::new("python3")
            .arg(workspace().join("packaging/pypi/build_wheel.py"))
            .arg("--out")
            .arg(root.join("dist"))
            .args(["--product", product])
            .arg(format!("{platform}={}", binaries_dir().display())),
    );
    let wheel = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dist = product.replace('-', "_");
    assert!(
        Path::new(&wheel)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{dist}-"))),
        "{wheel}"
    );
    if platform.starts_with("linux") {
        assert!(wheel.contains("-py3-none-manylinux_2_"), "{wheel}");
    }
    let venv = root.join("venv");
    run_ok(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    let bin = scripts(&venv);
    run_ok(
        Command::new(bin.join("python"))
            .args(["-m", "pip", "install", "--no-index", "--no-deps", "--quiet"])
            .arg(&wheel),
    );
    bin
}

/// The installed wheel's `Project-URL`s (what PyPI's page links to), as read by Python.
fn project_urls(bin: &Path, product: &str) -> Vec<String> {
    let out = run_ok(Command::new(bin.join("python")).args([
        "-c",
        "import importlib.metadata, sys; print('\\n'.join(importlib.metadata.metadata(sys.argv[1]).get_all('Project-URL')))",
        product,
    ]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
#[ignore = "builds and installs the wheel (python3 with venv); see tests/packaging"]
fn installed_wheel_runs_its_binaries() {
    let Some(platform) = wheel_platform() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let bin = install(root.path(), "fake-gemini", platform);
    let repo = env!("CARGO_PKG_REPOSITORY");
    assert_eq!(
        project_urls(&bin, "fake-gemini"),
        [
            format!("Homepage, {repo}/tree/main/fake-gemini#readme"),
            format!("Source, {repo}"),
            format!("Documentation, {repo}/blob/main/fake-gemini/README.md"),
            format!("Issues, {repo}/issues"),
        ]
    );

    let version = run_ok(Command::new(bin.join("fake-gemini")).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        EMULATED_CLI_VERSION
    );
    let list = run_ok(Command::new(bin.join("gemini-mcp-conformance")).arg("--list"));
    assert_lists_embedded_cases(&list);
    assert_runs_a_case_with_the_fake_beside_it(Command::new(bin.join("gemini-mcp-conformance")));
    // Each command is the binary itself, with no launcher in front.
    let exe = std::env::consts::EXE_SUFFIX;
    for b in BINARIES {
        let installed = std::fs::read(bin.join(format!("{b}{exe}"))).unwrap();
        let built = std::fs::read(binaries_dir().join(format!("{b}{exe}"))).unwrap();
        assert!(installed == built, "{b} is not the built binary");
    }
}

#[test]
#[ignore = "builds and installs the wheel (python3 with venv); see tests/packaging"]
fn installed_server_wheel_serves_mcp() {
    let Some(platform) = wheel_platform() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let bin = install(root.path(), "geminicli-mcp", platform);
    let repo = env!("CARGO_PKG_REPOSITORY");
    assert_eq!(
        project_urls(&bin, "geminicli-mcp"),
        [
            format!("Homepage, {repo}#readme"),
            format!("Source, {repo}"),
            format!("Documentation, {repo}/tree/main/docs"),
            format!("Issues, {repo}/issues"),
        ]
    );
    let exe = std::env::consts::EXE_SUFFIX;
    let version = run_ok(Command::new(bin.join(format!("geminicli-mcp{exe}"))).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("geminicli-mcp {}", env!("CARGO_PKG_VERSION"))
    );
    let mut server = Command::new(bin.join(format!("geminicli-mcp{exe}")));
    server.env("HOME", root.path());
    assert_serves_a_client(server);
}
