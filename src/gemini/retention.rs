//! The CLI's start-up clean-up, switched off for the processes the server starts. Every Gemini CLI
//! start (one-shot, `--acp`, `--list-sessions`) scans its project's chat files and deletes those
//! that hold no message yet — another run's new session, an ACP session made a moment ago, the
//! stub a resume leaves — unless `general.sessionRetention.enabled` is false. The server gives its
//! children a system-defaults file (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, the lowest settings layer,
//! so the user's own settings still win) that says so, keeping the rest of the machine's own
//! defaults file. Then no start of the server's deletes anything, and its runs need not wait for
//! each other's start-up in a workspace ([`cleanup_may_run`]); the CLI's retention by age still
//! runs in the user's own interactive sessions.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

/// The variable that names the system-defaults file.
pub const DEFAULTS_ENV: &str = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH";
/// The variable that names the system settings file (the highest layer).
const SYSTEM_SETTINGS_ENV: &str = "GEMINI_CLI_SYSTEM_SETTINGS_PATH";

/// The file the children get, in a directory of the server's own; `None` when it could not be
/// written (then the CLI reads the machine's defaults and its clean-up runs).
struct Written {
    dir: tempfile::TempDir,
    file: PathBuf,
}

static WRITTEN: Mutex<Option<Written>> = Mutex::new(None);
static TRIED: std::sync::Once = std::sync::Once::new();

/// The machine's system settings file, where the CLI looks for it.
fn system_settings_path() -> PathBuf {
    if let Some(p) = std::env::var_os(SYSTEM_SETTINGS_ENV).filter(|p| !p.is_empty()) {
        return p.into();
    }
    if cfg!(target_os = "macos") {
        "/Library/Application Support/GeminiCli/settings.json".into()
    } else if cfg!(windows) {
        r"C:\ProgramData\gemini-cli\settings.json".into()
    } else {
        "/etc/gemini-cli/settings.json".into()
    }
}

/// The machine's system-defaults file, where the CLI looks for it (the server's own environment).
fn machine_defaults_path() -> PathBuf {
    if let Some(p) = std::env::var_os(DEFAULTS_ENV).filter(|p| !p.is_empty()) {
        return p.into();
    }
    system_settings_path()
        .parent()
        .map_or_else(PathBuf::new, Path::to_path_buf)
        .join("system-defaults.json")
}

/// `text` without `//` and `/* */` comments outside strings (the CLI reads its settings through
/// strip-json-comments).
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for d in chars.by_ref() {
                    if last == '*' && d == '/' {
                        break;
                    }
                    last = d;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// A settings file as the CLI reads it: `Ok(None)` when it does not exist, `Err` when it cannot
/// be read as a JSON object.
fn read_settings(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    match serde_json::from_str::<Value>(&strip_comments(&text)) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `general.sessionRetention.enabled` of a settings file, when it sets it.
fn retention_setting(settings: &Map<String, Value>) -> Option<bool> {
    settings
        .get("general")?
        .get("sessionRetention")?
        .get("enabled")?
        .as_bool()
}

/// The machine's defaults with the clean-up switched off.
pub fn defaults_with_retention_off(machine: Option<Map<String, Value>>) -> Value {
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

fn write() -> Result<Written, String> {
    let machine = read_settings(&machine_defaults_path())
        .map_err(|e| format!("the machine's system-defaults file cannot be read ({e})"))?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}settings-", super::process::tmp_prefix()))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let file = dir.path().join("system-defaults.json");
    let text = serde_json::to_string_pretty(&defaults_with_retention_off(machine))
        .map_err(|e| e.to_string())?;
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    Ok(Written { dir, file })
}

/// The variable every child gets, when the file could be written (once per server; written again
/// if something removed it).
pub fn child_env() -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    TRIED.call_once(|| match write() {
        Ok(w) => *WRITTEN.lock().unwrap_or_else(|e| e.into_inner()) = Some(w),
        Err(e) => tracing::warn!(error = %e, "the CLI's start-up clean-up stays on: runs in one workspace start one at a time"),
    });
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    let w = written.as_mut()?;
    if !w.file.exists() {
        // A temp cleaner took it: write it again rather than let the clean-up come back.
        match write() {
            Ok(fresh) => *w = fresh,
            Err(_) => return None,
        }
    }
    Some((DEFAULTS_ENV.into(), w.file.clone().into_os_string()))
}

/// Removes the file at the server's exit.
pub fn remove() {
    if let Some(w) = WRITTEN.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = w.dir.close();
    }
}

/// Whether a CLI start in `workspace` may still run the clean-up: the server's defaults file is not
/// in effect, or a higher settings layer turns retention on again (the user's settings, the
/// workspace's `.gemini/settings.json`, the machine's system settings). `home` is the `HOME` the
/// children see. An unreadable file counts as turning it on: the caution costs only waiting.
pub fn cleanup_may_run(workspace: &Path, home: Option<&Path>) -> bool {
    if child_env().is_none() {
        return true;
    }
    let mut layers = vec![
        system_settings_path(),
        workspace.join(".gemini/settings.json"),
    ];
    if let Some(home) = home {
        layers.push(home.join(".gemini/settings.json"));
    }
    layers.iter().any(|path| match read_settings(path) {
        Ok(Some(s)) => retention_setting(&s) == Some(true),
        Ok(None) => false,
        Err(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_and_strings_stay() {
        let text = "{ // a note\n \"a\": \"http://x/*y*/\", /* gone */ \"b\": 1 }";
        let v: Value = serde_json::from_str(&strip_comments(text)).unwrap();
        assert_eq!(v, json!({"a": "http://x/*y*/", "b": 1}));
    }

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
    fn a_higher_layer_that_turns_retention_on_brings_the_clean_up_back() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        assert!(!cleanup_may_run(ws.path(), Some(home.path())));
        std::fs::create_dir_all(ws.path().join(".gemini")).unwrap();
        std::fs::write(
            ws.path().join(".gemini/settings.json"),
            r#"{ /* the user's */ "general": {"sessionRetention": {"enabled": true}}}"#,
        )
        .unwrap();
        assert!(cleanup_may_run(ws.path(), Some(home.path())));
        std::fs::write(ws.path().join(".gemini/settings.json"), "{not json").unwrap();
        assert!(
            cleanup_may_run(ws.path(), Some(home.path())),
            "unreadable: cautious"
        );
        std::fs::write(
            ws.path().join(".gemini/settings.json"),
            r#"{"general": {"sessionRetention": {"maxAge": "1d"}}}"#,
        )
        .unwrap();
        assert!(!cleanup_may_run(ws.path(), Some(home.path())));
    }
}
