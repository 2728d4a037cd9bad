//! The Gemini CLI's settings layers as the CLI 0.61 reads them: which files it honours (a system
//! file only when it passes the CLI's ownership check), their JSON-with-comments text, and the
//! keys the server acts on (`general.sessionRetention.enabled`, `security.auth.selectedType`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The variable that names the system-defaults file (the lowest layer).
pub(crate) const DEFAULTS_ENV: &str = crate::gemini::inputs::env::SYSTEM_DEFAULTS_PATH;
/// The variable that names the system settings file (the highest layer).
pub(crate) const SYSTEM_SETTINGS_ENV: &str = "GEMINI_CLI_SYSTEM_SETTINGS_PATH";

/// Owner and mode of one path, as `stat` gives them (symlinks followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The owner's uid.
    pub uid: u32,
    /// `st_mode`, type bits included (the CLI prints it in octal: `41777` for `/tmp`).
    pub mode: u32,
}

/// Group- and world-write bits (`S_IWGRP | S_IWOTH`).
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// Why the CLI refuses one path of a system file's chain, in its own words
/// (`checkPosixStatsSecurity`): not owned by root, or writable by group or others. The sticky bit
/// is no exception, so `/tmp` (mode 41777) always fails.
pub(crate) fn insecure(path: &Path, owner: Owner, is_dir: bool) -> Option<String> {
    let what = if is_dir { "Directory" } else { "File" };
    let path = path.display();
    if owner.uid != 0 {
        return Some(format!(
            "{what} '{path}' is not owned by root (uid 0). Current uid: {}. To fix this, run: sudo chown root:root \"{path}\"",
            owner.uid
        ));
    }
    (owner.mode & WRITABLE_BY_OTHERS != 0).then(|| {
        format!(
            "{what} '{path}' is writable by group or others (mode: {:o}). To fix this, run: sudo chmod g-w,o-w \"{path}\"",
            owner.mode
        )
    })
}

/// The CLI's check of a system file (`isFileAndDirectorySecureSync`), over what `stat` said of
/// each ancestor directory (nearest first, up to and including `/`) and of the file itself: the
/// first failure's reason, as the CLI words it after `Skipping system … file '…': `.
pub(crate) fn chain_insecure(
    file: (&Path, Owner),
    ancestors: &[(PathBuf, Owner)],
) -> Option<String> {
    for (dir, owner) in ancestors {
        if let Some(why) = insecure(dir, *owner, true) {
            return Some(format!(
                "Parent directory '{}' is insecure: {why}",
                dir.display()
            ));
        }
    }
    insecure(file.0, file.1, false).map(|why| format!("File is insecure: {why}"))
}

/// Whether the CLI reads a system settings or system-defaults file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemFile {
    /// There is no such file: nothing to read.
    Missing,
    /// It passes the CLI's check: the CLI reads it.
    Read,
    /// It fails the check: the CLI skips it, printing a `Security Warning` with this reason.
    Skipped(String),
    /// The check cannot be made here (Windows: the CLI asks PowerShell for the file's ACL).
    Unknown,
}

/// How the CLI treats the system file at `path`: the file, each ancestor of the path as given and,
/// when the path leads through a symlink, of the resolved one too.
pub(crate) fn system_file(path: &Path) -> SystemFile {
    let Ok(abs) = std::path::absolute(path) else {
        return SystemFile::Unknown;
    };
    if !abs.exists() {
        return SystemFile::Missing;
    }
    let mut paths = vec![abs.clone()];
    if let Ok(real) = std::fs::canonicalize(&abs) {
        if real != abs {
            paths.push(real);
        }
    }
    for p in paths {
        match chain_of(&p) {
            Some(Ok((file, ancestors))) => {
                if let Some(why) = chain_insecure((&p, file), &ancestors) {
                    return SystemFile::Skipped(why);
                }
            }
            Some(Err(why)) => return SystemFile::Skipped(why),
            None => return SystemFile::Unknown,
        }
    }
    SystemFile::Read
}

/// The owners of `file` and of its ancestors; `None` where the platform's check is not `stat`'s.
#[cfg(unix)]
#[expect(clippy::type_complexity, reason = "a file's and its chain's owners")]
fn chain_of(file: &Path) -> Option<Result<(Owner, Vec<(PathBuf, Owner)>), String>> {
    use std::os::unix::fs::MetadataExt;
    let owner = |p: &Path| -> Result<Owner, String> {
        // A symlink in the chain must itself be root's (the CLI's lstat check).
        if let Ok(l) = std::fs::symlink_metadata(p) {
            if l.file_type().is_symlink() && l.uid() != 0 {
                return Err(format!(
                    "Symlink '{}' is not owned by root (uid 0). Current uid: {}.",
                    p.display(),
                    l.uid()
                ));
            }
        }
        std::fs::metadata(p)
            .map(|m| Owner {
                uid: m.uid(),
                mode: m.mode(),
            })
            .map_err(|e| format!("Failed to access path: {e}"))
    };
    let run = || {
        let ancestors = file
            .ancestors()
            .skip(1)
            .map(|d| owner(d).map(|o| (d.to_path_buf(), o)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((owner(file)?, ancestors))
    };
    Some(run())
}

#[cfg(not(unix))]
#[expect(clippy::type_complexity, reason = "a file's and its chain's owners")]
fn chain_of(_file: &Path) -> Option<Result<(Owner, Vec<(PathBuf, Owner)>), String>> {
    None
}

/// Whether `dir` and every directory above it pass the CLI's check: a file of root's placed in it
/// would be read. Never on platforms whose check is not `stat`'s.
pub(crate) fn directory_passes(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(dir) = std::path::absolute(dir) else {
            return false;
        };
        dir.ancestors().all(|d| {
            std::fs::symlink_metadata(d).is_ok_and(|l| !l.file_type().is_symlink() || l.uid() == 0)
                && std::fs::metadata(d).is_ok_and(|m| {
                    insecure(
                        d,
                        Owner {
                            uid: m.uid(),
                            mode: m.mode(),
                        },
                        true,
                    )
                    .is_none()
                })
        })
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        false
    }
}

/// The machine's system settings file, where the CLI looks for it given `var` (the environment
/// the CLI sees).
pub(crate) fn system_settings_path(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(p) = var(SYSTEM_SETTINGS_ENV).filter(|p| !p.is_empty()) {
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

/// The machine's system-defaults file, where the CLI looks for it given `var`.
pub(crate) fn system_defaults_path(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(p) = var(DEFAULTS_ENV).filter(|p| !p.is_empty()) {
        return p.into();
    }
    system_settings_path(var)
        .parent()
        .map_or_else(PathBuf::new, Path::to_path_buf)
        .join("system-defaults.json")
}

/// The user's settings file: `~/.gemini/settings.json`, where `GEMINI_CLI_HOME` moves the home.
pub(crate) fn user_settings_path(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let home = var("GEMINI_CLI_HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| var("HOME").filter(|h| !h.is_empty()))
        .or_else(|| var("USERPROFILE").filter(|h| !h.is_empty()))?;
    Some(Path::new(&home).join(".gemini").join("settings.json"))
}

/// `text` without `//` and `/* */` comments outside strings (the CLI reads its settings through
/// strip-json-comments).
pub(crate) fn strip_comments(text: &str) -> String {
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
pub(crate) fn read(path: &Path) -> Result<Option<Map<String, Value>>, String> {
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

/// Which layer a settings file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// `GEMINI_CLI_SYSTEM_SETTINGS_PATH` or the machine's: wins over every other.
    System,
    /// The workspace's `.gemini/settings.json` (read only in a trusted folder).
    Workspace,
    /// The user's `~/.gemini/settings.json`.
    User,
    /// `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` or the machine's: under every other.
    SystemDefaults,
}

/// One settings file the CLI would consult, highest layer first in [`layers`].
#[derive(Debug, Clone)]
pub(crate) struct LayerFile {
    /// Which layer.
    pub layer: Layer,
    /// Where.
    pub path: PathBuf,
    /// What the CLI would read: `Ok(None)` for a missing or skipped file.
    pub content: Result<Option<Map<String, Value>>, String>,
    /// A system file's check (`Read` for the user's and the workspace's files).
    pub check: SystemFile,
}

/// The settings files a CLI started in `workspace` with the environment `var` reads, highest layer
/// first. A system file that fails the CLI's check is listed with no content; one whose check
/// cannot be made here is read (the cautious guess: it is most likely an administrator's).
pub(crate) fn layers(
    workspace: &Path,
    var: impl Fn(&str) -> Option<std::ffi::OsString> + Copy,
) -> Vec<LayerFile> {
    let system = |layer, path: PathBuf| {
        let check = system_file(&path);
        let content = match check {
            SystemFile::Read | SystemFile::Unknown => read(&path),
            SystemFile::Missing | SystemFile::Skipped(_) => Ok(None),
        };
        LayerFile {
            layer,
            path,
            content,
            check,
        }
    };
    let plain = |layer, path: PathBuf| LayerFile {
        layer,
        content: read(&path),
        path,
        check: SystemFile::Read,
    };
    let mut out = vec![
        system(Layer::System, system_settings_path(var)),
        plain(Layer::Workspace, workspace.join(".gemini/settings.json")),
    ];
    if let Some(user) = user_settings_path(var) {
        out.push(plain(Layer::User, user));
    }
    out.push(system(Layer::SystemDefaults, system_defaults_path(var)));
    out
}

/// `general.sessionRetention.enabled` of a settings file, when it sets it.
pub(crate) fn retention_enabled(settings: &Map<String, Value>) -> Option<bool> {
    settings
        .get("general")?
        .get("sessionRetention")?
        .get("enabled")?
        .as_bool()
}

/// `security.auth.selectedType` of a settings file, when it sets it.
pub(crate) fn selected_type(settings: &Map<String, Value>) -> Option<&str> {
    settings
        .get("security")?
        .get("auth")?
        .get("selectedType")?
        .as_str()
}

/// Whether a CLI reading `layers` may end a turn at `model.maxSessionTurns`: a layer sets it to
/// a count (0 or more; the default -1 is no limit), or cannot be read (it may). 0.61 gives an ACP
/// turn that limit ended and one its loop detection ended the same stop reason, so this is what
/// tells them apart.
pub(crate) fn session_turns_may_be_limited(layers: &[LayerFile]) -> bool {
    layers.iter().any(|l| match &l.content {
        Err(_) => true,
        Ok(None) => false,
        Ok(Some(s)) => s
            .get("model")
            .and_then(|m| m.get("maxSessionTurns"))
            .and_then(Value::as_f64)
            .is_some_and(|n| n >= 0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT_DIR: Owner = Owner {
        uid: 0,
        mode: 0o40755,
    };
    const ROOT_FILE: Owner = Owner {
        uid: 0,
        mode: 0o100644,
    };

    fn chain(dirs: &[(&str, Owner)]) -> Vec<(PathBuf, Owner)> {
        dirs.iter().map(|(p, o)| (PathBuf::from(p), *o)).collect()
    }

    #[test]
    fn only_a_count_or_an_unreadable_layer_may_limit_session_turns() {
        let layer = |content: Result<Option<Value>, String>| LayerFile {
            layer: Layer::User,
            path: "/home/u/.gemini/settings.json".into(),
            content: content.map(|c| c.and_then(|v| v.as_object().cloned())),
            check: SystemFile::Read,
        };
        let unlimited = [
            layer(Ok(Some(json!({"model": {"maxSessionTurns": -1}})))),
            layer(Ok(Some(json!({"model": {"name": "gemini-2.5-pro"}})))),
            layer(Ok(None)),
        ];
        assert!(!session_turns_may_be_limited(&unlimited));
        let limited = [layer(Ok(Some(json!({"model": {"maxSessionTurns": 0}}))))];
        assert!(session_turns_may_be_limited(&limited), "0 is a limit");
        assert!(
            session_turns_may_be_limited(&[layer(Err("bad JSON".into()))]),
            "an unreadable layer may set it"
        );
    }

    #[test]
    fn a_file_under_tmp_is_skipped_for_tmps_sticky_world_writable_mode() {
        let tmp = Owner {
            uid: 0,
            mode: 0o41777,
        };
        let why = chain_insecure(
            (Path::new("/tmp/x/system-defaults.json"), ROOT_FILE),
            &chain(&[("/tmp/x", ROOT_DIR), ("/tmp", tmp), ("/", ROOT_DIR)]),
        )
        .expect("skipped");
        assert_eq!(
            why,
            "Parent directory '/tmp' is insecure: Directory '/tmp' is writable by group or others (mode: 41777). To fix this, run: sudo chmod g-w,o-w \"/tmp\""
        );
    }

    #[test]
    fn a_directory_of_another_user_fails_even_with_mode_0755() {
        let mine = Owner {
            uid: 1001,
            mode: 0o40755,
        };
        let why = chain_insecure(
            (Path::new("/home/me/d/s.json"), ROOT_FILE),
            &chain(&[
                ("/home/me/d", ROOT_DIR),
                ("/home/me", mine),
                ("/", ROOT_DIR),
            ]),
        )
        .expect("skipped");
        assert!(
            why.starts_with("Parent directory '/home/me' is insecure: Directory '/home/me' is not owned by root (uid 0). Current uid: 1001."),
            "{why}"
        );
    }

    #[test]
    fn the_file_itself_is_checked_after_its_ancestors() {
        let ancestors = chain(&[("/etc/gemini-cli", ROOT_DIR), ("/", ROOT_DIR)]);
        let file = Path::new("/etc/gemini-cli/settings.json");
        assert_eq!(chain_insecure((file, ROOT_FILE), &ancestors), None);
        for (owner, says) in [
            (
                Owner {
                    uid: 0,
                    mode: 0o100664,
                },
                "writable by group or others (mode: 100664)",
            ),
            (
                Owner {
                    uid: 0,
                    mode: 0o100646,
                },
                "writable by group or others",
            ),
            (
                Owner {
                    uid: 1001,
                    mode: 0o100600,
                },
                "not owned by root",
            ),
        ] {
            let why = chain_insecure((file, owner), &ancestors).expect("skipped");
            assert!(why.starts_with("File is insecure: File '"), "{why}");
            assert!(why.contains(says), "{why}");
        }
        let group_writable_parent = Owner {
            uid: 0,
            mode: 0o40775,
        };
        assert!(chain_insecure(
            (file, ROOT_FILE),
            &chain(&[("/etc/gemini-cli", group_writable_parent), ("/", ROOT_DIR)])
        )
        .is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_in_a_temp_dir_is_never_read_and_a_missing_one_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("system-defaults.json");
        assert_eq!(system_file(&file), SystemFile::Missing);
        std::fs::write(&file, "{}").unwrap();
        // /tmp is world-writable; a user's TMPDIR is not root's: skipped either way.
        assert!(matches!(system_file(&file), SystemFile::Skipped(_)));
    }

    #[test]
    fn layers_come_highest_first_and_read_the_users_file_from_gemini_cli_home() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"{"security": {"auth": {"selectedType": "oauth-personal"}}}"#,
        )
        .unwrap();
        let h = home.path().as_os_str().to_owned();
        let var = move |k: &str| (k == "GEMINI_CLI_HOME").then(|| h.clone());
        let l = layers(ws.path(), &var);
        let order: Vec<Layer> = l.iter().map(|f| f.layer).collect();
        assert_eq!(
            order,
            [
                Layer::System,
                Layer::Workspace,
                Layer::User,
                Layer::SystemDefaults
            ]
        );
        let user = l[2].content.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(selected_type(user), Some("oauth-personal"));
        assert_eq!(
            retention_enabled(
                json!({"general": {"sessionRetention": {"enabled": false}}})
                    .as_object()
                    .unwrap()
            ),
            Some(false)
        );
    }

    #[test]
    fn comments_go_and_strings_stay() {
        let text = "{ // a note\n \"a\": \"http://x/*y*/\", /* gone */ \"b\": 1 }";
        let v: Value = serde_json::from_str(&strip_comments(text)).unwrap();
        assert_eq!(v, json!({"a": "http://x/*y*/", "b": 1}));
    }
}
