//! Launchers: a `gemini` script that runs fake-gemini with its settings baked in, for wrappers
//! that hand the CLI an environment allowlist (and so strip `FAKE_GEMINI_*`). The settings travel
//! in the file the wrapper executes, which no environment filter reaches.

use std::io;
use std::path::{Path, PathBuf};

/// The file name of a launcher in its directory: `gemini` on Unix, `gemini.cmd` on Windows.
pub const LAUNCHER_NAME: &str = if cfg!(windows) {
    "gemini.cmd"
} else {
    "gemini"
};

/// Why a setting cannot be baked into a launcher.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// Not `NAME=VALUE`, or the name is not an environment variable name.
    #[error("not a NAME=VALUE setting with a variable name: {0:?}")]
    BadSetting(String),
    /// A value the Windows command interpreter cannot carry in a `set` line.
    #[error("{0}: a value with a newline or a double quote cannot go into a .cmd launcher")]
    BadValue(String),
    /// Writing the launcher failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// Parses `NAME=VALUE` (the arguments of `--write-launcher`).
pub fn parse_setting(s: &str) -> Result<(String, String), LauncherError> {
    let (name, value) = s
        .split_once('=')
        .filter(|(n, _)| is_var_name(n))
        .ok_or_else(|| LauncherError::BadSetting(s.to_string()))?;
    Ok((name.to_string(), value.to_string()))
}

fn is_var_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every `FAKE_GEMINI_*` variable of this process's environment (`--write-launcher DIR
/// --from-env`); a name or value that is not UTF-8 is left out.
pub fn settings_from_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("FAKE_GEMINI_"))
        .collect()
}

/// Writes `dir/gemini` (Windows: `dir\gemini.cmd`), which runs `fake` (made absolute) with the
/// arguments it was given and `settings` in its environment, whatever environment its caller
/// passed; returns the launcher's path. `dir` is created when missing; an existing launcher is
/// replaced.
pub fn write_launcher(
    dir: &Path,
    fake: &Path,
    settings: &[(String, String)],
) -> Result<PathBuf, LauncherError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source: io::Error| LauncherError::Io { path, source }
    };
    for (name, _) in settings {
        if !is_var_name(name) {
            return Err(LauncherError::BadSetting(name.clone()));
        }
    }
    let fake = std::path::absolute(fake).map_err(io_err(fake))?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let path = dir.join(LAUNCHER_NAME);
    let text = script(&fake, settings)?;
    // Written beside and renamed: a wrapper starting the launcher meanwhile sees the old or the
    // new file, never half of one.
    let tmp = dir.join(format!(".{LAUNCHER_NAME}.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(io_err(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
    Ok(path)
}

/// A POSIX sh script: each setting assigned and exported, then `exec` of fake-gemini, so the
/// wrapper's child is fake-gemini itself (same pid, same signals).
#[cfg(not(windows))]
fn script(fake: &Path, settings: &[(String, String)]) -> Result<String, LauncherError> {
    let mut s = String::from(
        "#!/bin/sh\n# Written by fake-gemini --write-launcher: runs fake-gemini with these settings,\n# whatever environment the caller passed.\n",
    );
    for (name, value) in settings {
        s.push_str(&format!("{name}={}\nexport {name}\n", sh_quote(value)));
    }
    s.push_str(&format!(
        "exec {} \"$@\"\n",
        sh_quote(&fake.to_string_lossy())
    ));
    Ok(s)
}

/// A `.cmd` file: `set` lines, then fake-gemini with every argument.
#[cfg(windows)]
fn script(fake: &Path, settings: &[(String, String)]) -> Result<String, LauncherError> {
    let mut s = String::from("@echo off\r\nsetlocal\r\n");
    for (name, value) in settings {
        if value.contains(['\r', '\n', '"']) {
            return Err(LauncherError::BadValue(name.clone()));
        }
        // `%` starts a variable reference inside a batch file; doubled, it is itself.
        s.push_str(&format!("set \"{name}={}\"\r\n", value.replace('%', "%%")));
    }
    s.push_str(&format!(
        "\"{}\" %*\r\nexit /b %ERRORLEVEL%\r\n",
        fake.display()
    ));
    Ok(s)
}

/// `value` in single quotes, each `'` written as `'\''`.
#[cfg(not(windows))]
fn sh_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// `fake-gemini --write-launcher DIR [--from-env] [NAME=VALUE...]`: writes the launcher for the
/// running fake-gemini and prints its path; returns the exit code (2 for a usage error).
pub fn command(args: &[String]) -> i32 {
    let usage = "usage: fake-gemini --write-launcher DIR [--from-env] [NAME=VALUE...]";
    let Some((dir, rest)) = args.split_first() else {
        eprintln!("{usage}");
        return 2;
    };
    let mut settings = Vec::new();
    for a in rest {
        if a == "--from-env" {
            settings.extend(settings_from_env());
            continue;
        }
        match parse_setting(a) {
            Ok(kv) => settings.push(kv),
            Err(e) => {
                eprintln!("fake-gemini: {e}\n{usage}");
                return 2;
            }
        }
    }
    let fake = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fake-gemini: cannot find its own executable: {e}");
            return 1;
        }
    };
    match write_launcher(Path::new(dir), &fake, &settings) {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(e) => {
            eprintln!("fake-gemini: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_names_and_values() {
        assert_eq!(
            parse_setting("FAKE_GEMINI_LOG=/a=b").unwrap(),
            ("FAKE_GEMINI_LOG".into(), "/a=b".into())
        );
        assert!(parse_setting("no-equals").is_err());
        assert!(parse_setting("1X=y").is_err());
        assert!(parse_setting("A B=y").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn values_are_quoted_for_sh() {
        let s = script(
            Path::new("/opt/it's/fake-gemini"),
            &[("FAKE_GEMINI_SCENARIO".into(), "a 'b' $c".into())],
        )
        .unwrap();
        assert!(
            s.contains("FAKE_GEMINI_SCENARIO='a '\\''b'\\'' $c'\nexport FAKE_GEMINI_SCENARIO\n"),
            "{s}"
        );
        assert!(
            s.ends_with("exec '/opt/it'\\''s/fake-gemini' \"$@\"\n"),
            "{s}"
        );
    }
}
