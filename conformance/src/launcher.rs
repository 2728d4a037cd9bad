//! The `gemini` a case's target is pointed at: a fake-gemini launcher (`fake_gemini::launcher`,
//! what `fake-gemini --write-launcher` writes) in a directory of the case's own, with the fake's
//! settings baked in, so a target that hands the CLI an environment allowlist still runs the
//! case's scenario, writes the log and keeps the state the checks read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::case::GeminiBinary;

/// The launcher for a case whose target runs fake-gemini, written into `root/launcher/` with every
/// `FAKE_GEMINI_*` entry of `env` (the environment prepared for the target); its path. A missing
/// or not-executable `gemini` stays as `gemini` was, and so does everything off Unix, where a
/// `.cmd` launcher needs a shell that targets need not start.
pub(crate) fn prepare(
    fake: &Path,
    binary: GeminiBinary,
    root: &Path,
    env: &BTreeMap<String, String>,
    gemini: &Path,
) -> Result<PathBuf, String> {
    if binary != GeminiBinary::Fake || !cfg!(unix) {
        return Ok(gemini.to_path_buf());
    }
    let settings: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k.starts_with("FAKE_GEMINI_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    fake_gemini::launcher::write_launcher(&root.join("launcher"), fake, &settings)
        .map_err(|e| format!("cannot write the fake-gemini launcher: {e}"))
}
