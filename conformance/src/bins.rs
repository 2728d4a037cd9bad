//! Locating the workspace's binaries (`fake-gemini`, `geminicli-mcp`) from tests, examples and the
//! runner, where `CARGO_BIN_EXE_*` is not available because the binary lives in another package.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Environment overrides, checked first: an absolute path to the binary.
fn override_var(name: &str) -> Option<&'static str> {
    match name {
        "fake-gemini" => Some("GEMINI_MCP_CONFORMANCE_FAKE_GEMINI"),
        "geminicli-mcp" => Some("GEMINI_MCP_CONFORMANCE_TARGET_BIN"),
        _ => None,
    }
}

/// The target directories a binary of this workspace may sit in, nearest first: the directory of
/// the running executable and its parent (`target/debug/deps/x` → `target/debug`).
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let mut dir = exe.parent().map(Path::to_path_buf);
        for _ in 0..3 {
            let Some(d) = dir else { break };
            dirs.push(d.clone());
            dir = d.parent().map(Path::to_path_buf);
        }
    }
    if let Ok(target) = std::env::var("CARGO_TARGET_DIR") {
        dirs.push(PathBuf::from(&target).join("debug"));
    }
    dirs.push(workspace_root().join("target").join("debug"));
    dirs
}

/// The workspace root: the parent of this package's manifest directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("conformance/ has a parent")
        .to_path_buf()
}

/// The workspace package that defines the binary `name`: `cargo build --bin` alone, run in the
/// workspace root, only looks in the default-run package.
fn package_of(name: &str) -> &str {
    match name {
        "fake-gemini" | "fake-gemini-api" => "fake-gemini",
        "gemini-mcp-conformance" | "gemini-mcp-conformance-broken-target" => {
            "gemini-mcp-conformance"
        }
        _ => "geminicli-mcp",
    }
}

fn exe_name(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

fn find(name: &str) -> Option<PathBuf> {
    let file = exe_name(name);
    candidate_dirs()
        .into_iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Returns the path of the workspace binary `name` (`"fake-gemini"` or `"geminicli-mcp"`).
///
/// Order: the override env var (`GEMINI_MCP_CONFORMANCE_FAKE_GEMINI`,
/// `GEMINI_MCP_CONFORMANCE_TARGET_BIN`), then the target directory of the running executable, then
/// `cargo build -p <package> --bin <name>` in the workspace (once per process), so a lone
/// `cargo test -p …` or a first `cargo run --example …` works.
///
/// # Panics
/// When the binary cannot be found or built: a test cannot run without it.
pub fn locate(name: &str) -> PathBuf {
    try_locate(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Like [`locate`], but returns the reason instead of panicking.
pub fn try_locate(name: &str) -> Result<PathBuf, String> {
    if let Some(var) = override_var(name) {
        if let Some(p) = std::env::var_os(var) {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!("{var}={} is not a file", p.display()))
            };
        }
    }
    if let Some(p) = find(name) {
        return Ok(p);
    }
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = find(name) {
        return Ok(p);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--quiet", "-p", package_of(name), "--bin", name])
        .status()
        .map_err(|e| format!("cannot run cargo to build {name}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cargo build -p {} --bin {name} failed ({status})",
            package_of(name)
        ));
    }
    find(name).ok_or_else(|| format!("{name} was built but not found in the target directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_binary_is_built_from_its_own_package() {
        assert_eq!(package_of("fake-gemini"), "fake-gemini");
        assert_eq!(package_of("fake-gemini-api"), "fake-gemini");
        assert_eq!(package_of("geminicli-mcp"), "geminicli-mcp");
        // Each name is really a binary of the package it maps to.
        for (name, manifest) in [
            ("fake-gemini", "fake-gemini/Cargo.toml"),
            ("fake-gemini-api", "fake-gemini/src/bin/fake-gemini-api.rs"),
            ("geminicli-mcp", "Cargo.toml"),
        ] {
            assert!(
                workspace_root().join(manifest).exists(),
                "{name}: {manifest}"
            );
        }
    }
}
