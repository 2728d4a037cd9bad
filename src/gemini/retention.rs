//! The CLI's start-up clean-up, and whether a start of the server's may run it. Every Gemini CLI
//! start (one-shot, `--acp`, `--list-sessions`) scans its project's chat files and deletes those
//! that hold no message yet — another run's new session, an ACP session made a moment ago, the
//! stub a resume leaves — unless `general.sessionRetention.enabled` is false in a settings layer
//! the CLI reads. No flag or variable of the CLI 0.61 turns it off for one run, and the server
//! writes into no file of the user's; the one layer it may add is a system-defaults file
//! (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`), which the CLI reads only when the file and every directory
//! above it are root's and not writable by group or others ([`settings::system_file`]). So only a
//! server running as root (its `$HOME` root's, mode 0755 or stricter, up to `/`) switches the
//! clean-up off; everywhere else its runs pass the workspace's start gate ([`cleanup_may_run`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use crate::gemini::settings::{self, Layer, LayerFile, SystemFile};

/// The variable that names the system-defaults file.
pub(crate) const DEFAULTS_ENV: &str = settings::DEFAULTS_ENV;

/// The file the children get, when the server has one the CLI reads.
static WRITTEN: Mutex<Option<PathBuf>> = Mutex::new(None);
static TRIED: std::sync::Once = std::sync::Once::new();

/// The machine's defaults with the clean-up switched off.
pub(crate) fn defaults_with_retention_off(machine: Option<Map<String, Value>>) -> Value {
    let mut settings = Value::Object(machine.unwrap_or_default());
    let general = settings
        .as_object_mut()
        .expect("an object")
        .entry("general")
        .or_insert_with(|| json!({}));
    if !general.is_object() {
        *general = json!({});
    }
    let retention = general
        .as_object_mut()
        .expect("an object")
        .entry("sessionRetention")
        .or_insert_with(|| json!({}));
    if !retention.is_object() {
        *retention = json!({});
    }
    retention
        .as_object_mut()
        .expect("an object")
        .insert("enabled".into(), json!(false));
    settings
}

/// Writes the file where the CLI would read it: `$HOME/.cache/geminicli-mcp/`, named after its
/// text, so every server of the user shares one file per content and a killed server leaves no
/// litter behind. `Ok(None)` when the CLI would not read it there: anyone but root stops at their
/// own `$HOME`, before anything is created.
fn write() -> Result<Option<PathBuf>, String> {
    let machine = settings::read(&settings::system_defaults_path(|k| std::env::var_os(k)))
        .map_err(|e| format!("the machine's system-defaults file cannot be read ({e})"))?;
    let text = serde_json::to_string_pretty(&defaults_with_retention_off(machine))
        .map_err(|e| e.to_string())?;
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Ok(None);
    };
    let home = PathBuf::from(home);
    if !settings::directory_passes(&home) {
        return Ok(None);
    }
    let dir = home.join(".cache").join("geminicli-mcp");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    if !settings::directory_passes(&dir) {
        return Ok(None);
    }
    let file = dir.join(format!("system-defaults-{:016x}.json", content_hash(&text)));
    if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
        // Written aside and renamed: a concurrent server never reads half a file.
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| e.to_string())?;
        std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| e.to_string())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .map_err(|e| e.to_string())?;
        }
        tmp.persist(&file).map_err(|e| e.to_string())?;
    }
    // The check itself decides, not what the server meant to write.
    Ok((settings::system_file(&file) == SystemFile::Read).then_some(file))
}

/// A name for a text that stays the same across runs and builds (FNV-1a).
fn content_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The variable every child gets, when the server has a system-defaults file the CLI reads
/// (written once per server; again if something removed it).
pub(crate) fn child_env() -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    TRIED.call_once(|| match write() {
        Ok(Some(file)) => *crate::sync::lock(&WRITTEN) = Some(file),
        Ok(None) => tracing::debug!("no place the CLI trusts for a system-defaults file: runs in one workspace pass its start gate"),
        Err(e) => tracing::warn!(error = %e, "the CLI's start-up clean-up stays on: runs in one workspace pass its start gate"),
    });
    let mut written = crate::sync::lock(&WRITTEN);
    let file = written.as_ref()?;
    if !file.exists() {
        // A cleaner took it: write it again rather than let the clean-up come back.
        *written = write().ok().flatten();
    }
    written
        .as_ref()
        .map(|f| (DEFAULTS_ENV.into(), f.clone().into_os_string()))
}

/// Whether the clean-up runs, given the layers the CLI reads (highest first): the highest layer
/// that sets `general.sessionRetention.enabled` decides, and it is on by default. A workspace's
/// `false` is not trusted (the CLI reads that file only in a trusted folder); an unreadable file
/// counts as on. Either caution costs only waiting at the gate.
pub(crate) fn retention_on(layers: &[LayerFile]) -> bool {
    for l in layers {
        let settings = match &l.content {
            Err(_) => return true,
            Ok(None) => continue,
            Ok(Some(s)) => s,
        };
        match (settings::retention_enabled(settings), l.layer) {
            (Some(true), _) => return true,
            (Some(false), Layer::Workspace) | (None, _) => {}
            (Some(false), _) => return false,
        }
    }
    true
}

/// Whether a CLI start in `workspace` may run the clean-up, read from the settings layers the CLI
/// will read: the system settings and system-defaults files only where they pass its check (the
/// server's own defaults file when it has one), the user's and the workspace's. `home` is the
/// `HOME` the children see.
pub(crate) fn cleanup_may_run(workspace: &Path, home: Option<&Path>) -> bool {
    let ours = child_env().map(|(_, v)| v);
    let var = |k: &str| match k {
        "HOME" => home.map(|h| h.as_os_str().to_owned()),
        DEFAULTS_ENV if ours.is_some() => ours.clone(),
        _ => std::env::var_os(k),
    };
    retention_on(&settings::layers(workspace, var))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_defaults_are_kept_and_retention_switched_off() {
        let machine = json!({"general": {"vimMode": true, "sessionRetention": {"maxAge": "7d", "enabled": true}}, "ui": {"theme": "x"}});
        let Value::Object(machine) = machine else {
            unreachable!()
        };
        let v = defaults_with_retention_off(Some(machine));
        assert_eq!(
            v,
            json!({"general": {"vimMode": true, "sessionRetention": {"maxAge": "7d", "enabled": false}}, "ui": {"theme": "x"}})
        );
        assert_eq!(
            defaults_with_retention_off(None),
            json!({"general": {"sessionRetention": {"enabled": false}}})
        );
    }

    #[test]
    fn the_children_get_a_defaults_file_only_where_the_cli_reads_it() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        match child_env() {
            // Only as root, in a directory chain of root's that nobody else may write.
            Some((_, file)) => {
                assert_eq!(settings::system_file(Path::new(&file)), SystemFile::Read);
                assert!(!cleanup_may_run(ws.path(), Some(home.path())));
            }
            // The CLI would skip any file the server could write: the gate must engage.
            None => assert!(cleanup_may_run(ws.path(), Some(home.path()))),
        }
    }

    #[test]
    fn the_users_own_setting_is_read_and_a_workspace_cannot_open_the_gate() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let write = |dir: &Path, text: &str| {
            std::fs::create_dir_all(dir.join(".gemini")).unwrap();
            std::fs::write(dir.join(".gemini/settings.json"), text).unwrap();
        };
        write(
            home.path(),
            r#"{ /* the user's */ "general": {"sessionRetention": {"enabled": false}}}"#,
        );
        assert!(!cleanup_may_run(ws.path(), Some(home.path())));
        write(
            ws.path(),
            r#"{"general": {"sessionRetention": {"enabled": true}}}"#,
        );
        assert!(cleanup_may_run(ws.path(), Some(home.path())));
        write(ws.path(), "{not json");
        assert!(
            cleanup_may_run(ws.path(), Some(home.path())),
            "unreadable: cautious"
        );
        std::fs::remove_file(home.path().join(".gemini/settings.json")).unwrap();
        write(
            ws.path(),
            r#"{"general": {"sessionRetention": {"enabled": false}}}"#,
        );
        assert_eq!(
            cleanup_may_run(ws.path(), Some(home.path())),
            child_env().is_none(),
            "a workspace's false counts only in a trusted folder"
        );
    }

    fn layer(layer: Layer, text: &str) -> LayerFile {
        LayerFile {
            layer,
            path: PathBuf::new(),
            content: serde_json::from_str::<Value>(text)
                .map(|v| v.as_object().cloned())
                .map_err(|e| e.to_string()),
            check: SystemFile::Read,
        }
    }

    #[test]
    fn the_highest_layer_that_says_decides_and_the_default_is_on() {
        let off = r#"{"general": {"sessionRetention": {"enabled": false}}}"#;
        let on = r#"{"general": {"sessionRetention": {"enabled": true}}}"#;
        let silent = r#"{"general": {"sessionRetention": {"maxAge": "1d"}}}"#;
        assert!(retention_on(&[]));
        assert!(retention_on(&[layer(Layer::User, silent)]));
        assert!(!retention_on(&[layer(Layer::SystemDefaults, off)]));
        assert!(retention_on(&[
            layer(Layer::User, on),
            layer(Layer::SystemDefaults, off)
        ]));
        assert!(!retention_on(&[
            layer(Layer::System, off),
            layer(Layer::User, on)
        ]));
        assert!(retention_on(&[layer(Layer::Workspace, off)]));
        assert!(retention_on(&[
            layer(Layer::User, "{oops"),
            layer(Layer::SystemDefaults, off)
        ]));
    }
}
