//! The command a client should run to start this server: the one that started this process.

use std::path::{Component, Path, PathBuf};

/// How this process was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The npm launcher script, when the npm package started this binary.
    pub launcher: Option<PathBuf>,
    /// This binary (`std::env::current_exe`).
    pub exe: PathBuf,
}

impl Launch {
    /// Read from this process: `current_exe`, and `launcher`, the value of the variable the npm
    /// launcher (`packaging/npm/lib/launch.js`) sets for the binary it spawns: the path of the
    /// launcher script that was run (the setting `LAUNCHER`, read by the caller: this ground
    /// room reads no settings).
    pub fn from_process(launcher: Option<std::ffi::OsString>) -> Self {
        let launcher = launcher
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("geminicli-mcp"));
        Self { launcher, exe }
    }

    /// The entry's command and arguments:
    /// - started by `npx` (the launcher sits in npx's cache, a folder named `_npx`):
    ///   `npx -y geminicli-mcp`, since that cache is not a place to run from later;
    /// - started by the npm launcher otherwise (a global or project install): the launcher's path
    ///   on Unix, which survives upgrades of the package; on Windows, where a client cannot run a
    ///   `.js` file, this binary;
    /// - otherwise the absolute path of this binary.
    pub fn command(&self) -> (String, Vec<String>) {
        if let Some(launcher) = &self.launcher {
            if in_npx_cache(launcher) {
                return ("npx".into(), vec!["-y".into(), "geminicli-mcp".into()]);
            }
            if !cfg!(windows) {
                return (launcher.display().to_string(), Vec::new());
            }
        }
        (self.exe.display().to_string(), Vec::new())
    }
}

fn in_npx_cache(path: &Path) -> bool {
    path.components()
        .any(|c| matches!(c, Component::Normal(n) if n == "_npx"))
}
