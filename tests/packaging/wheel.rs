//! The PyPI wheel `fake-gemini` for this platform, built by `packaging/pypi/build_wheel.py` and
//! installed with pip from the file into a fresh virtualenv, offline.

use std::path::Path;
use std::process::Command;

use super::{
    assert_lists_embedded_cases, assert_runs_a_case_with_the_fake_beside_it, available,
    binaries_dir, platform, run_ok, workspace, BINARIES, EMULATED_CLI_VERSION,
};

/// Where a virtualenv puts its commands.
fn scripts(venv: &Path) -> std::path::PathBuf {
    if cfg!(windows) {
        venv.join("Scripts")
    } else {
        venv.join("bin")
    }
}

#[test]
#[ignore = "builds and installs the wheel (python3 with venv); see tests/packaging"]
fn installed_wheel_runs_its_binaries() {
    if !available("python3", &["-c", "import venv, ensurepip"]) {
        eprintln!("python3 with venv not found: skipping");
        return;
    }
    let Some(platform) = platform() else {
        eprintln!("no wheel is built for this platform: skipping");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let binaries = binaries_dir();
    let out = run_ok(
        Command::new("python3")
            .arg(workspace().join("packaging/pypi/build_wheel.py"))
            .arg("--out")
            .arg(root.path().join("dist"))
            .arg(format!("{platform}={}", binaries.display())),
    );
    let wheel = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if platform.starts_with("linux") {
        assert!(wheel.contains("-py3-none-manylinux_2_"), "{wheel}");
    }
    let venv = root.path().join("venv");
    run_ok(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    let bin = scripts(&venv);
    run_ok(
        Command::new(bin.join("python"))
            .args(["-m", "pip", "install", "--no-index", "--no-deps", "--quiet"])
            .arg(&wheel),
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
        let built = std::fs::read(binaries.join(format!("{b}{exe}"))).unwrap();
        assert!(installed == built, "{b} is not the built binary");
    }
}
