//! The check the CLI makes before it reads a system settings or system defaults file
//! (`isFileAndDirectorySecureSync` of 0.61): the file and every ancestor directory must be owned
//! by root and writable by nobody else, or the file is skipped with a `Security Warning` line.
//! A wrapper that hands the CLI such a file in `$TMPDIR` (mode 1777) finds it ignored; a fake
//! that read it anyway would hide that.

use std::path::{Component, Path, PathBuf};

/// What the check reads of one `stat`: the owner and the whole `st_mode` (type bits included,
/// which the CLI prints in octal: `41777` for `/tmp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// `st_uid`.
    pub uid: u32,
    /// `st_mode`, type bits included.
    pub mode: u32,
}

/// `checkPosixStatsSecurity`: the owner first (root only), then the group/other write bits; the
/// sticky bit is no exception. `Err` is the CLI's reason, naming `path` as a `Directory` or a
/// `File`.
///
/// ```
/// use fake_gemini::security::{posix_check, Owner};
/// assert!(posix_check(Owner { uid: 0, mode: 0o40755 }, "/etc", true).is_ok());
/// assert_eq!(
///     posix_check(Owner { uid: 0, mode: 0o41777 }, "/tmp", true).unwrap_err(),
///     "Directory '/tmp' is writable by group or others (mode: 41777). To fix this, run: sudo chmod g-w,o-w \"/tmp\""
/// );
/// ```
pub fn posix_check(owner: Owner, path: &str, is_dir: bool) -> Result<(), String> {
    let item = if is_dir { "Directory" } else { "File" };
    if owner.uid != 0 {
        return Err(format!(
            "{item} '{path}' is not owned by root (uid 0). Current uid: {}. To fix this, run: sudo chown root:root \"{path}\"",
            owner.uid
        ));
    }
    const S_IWGRP: u32 = 0o20;
    const S_IWOTH: u32 = 0o2;
    if owner.mode & (S_IWGRP | S_IWOTH) != 0 {
        return Err(format!(
            "{item} '{path}' is writable by group or others (mode: {:o}). To fix this, run: sudo chmod g-w,o-w \"{path}\"",
            owner.mode
        ));
    }
    Ok(())
}

/// The `Security Warning` line the CLI prints when it skips a system file, or `None` when the
/// file is read (it is secure, or missing: a missing file is skipped silently). `label` is
/// `system settings` or `system defaults`.
pub fn skip_warning(path: &Path, label: &str) -> Option<String> {
    if !path.exists() {
        return None;
    }
    file_and_directories_secure(path).err().map(|reason| {
        format!(
            "Security Warning: Skipping {label} file '{}': {reason}",
            path.display()
        )
    })
}

/// `path.resolve`: absolute, `.` and `..` folded away lexically (symlinks are not followed).
fn resolve(path: &Path) -> PathBuf {
    let base = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().unwrap_or_default()
    };
    let mut out = PathBuf::new();
    for c in base.join(path).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The directory and each of its ancestors up to the root, nearest first (`getAncestors`).
fn ancestors(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors().map(Path::to_path_buf).collect()
}

/// `isFileAndDirectorySecureSync` for an existing file: the ancestors' symlinks, the ancestors
/// (nearest first), the file, then — when the file resolves elsewhere — the target and its
/// ancestors. The first failure is the reason.
fn file_and_directories_secure(file: &Path) -> Result<(), String> {
    let file = resolve(file);
    let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
    let dirs = ancestors(file.parent().unwrap_or(Path::new("/")));
    let show = |p: &Path| p.display().to_string();
    for dir in &dirs {
        let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        if link {
            path_secure(dir, true).map_err(|r| {
                format!("Parent directory symlink '{}' is insecure: {r}", show(dir))
            })?;
        }
    }
    for dir in &dirs {
        path_secure(dir, true)
            .map_err(|r| format!("Parent directory '{}' is insecure: {r}", show(dir)))?;
    }
    path_secure(&file, false).map_err(|r| format!("File is insecure: {r}"))?;
    if canonical != file {
        path_secure(&canonical, false)
            .map_err(|r| format!("Resolved target file is insecure: {r}"))?;
        for dir in ancestors(canonical.parent().unwrap_or(Path::new("/"))) {
            path_secure(&dir, true).map_err(|r| {
                format!(
                    "Resolved target parent directory '{}' is insecure: {r}",
                    show(&dir)
                )
            })?;
        }
    }
    Ok(())
}

/// `isPathSecureSync`: a missing path passes; the expected type, a symlink's own owner, then
/// [`posix_check`] on what it points to.
#[cfg(unix)]
fn path_secure(path: &Path, want_dir: bool) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("Failed to access path: {e}")),
    };
    if want_dir && !meta.is_dir() {
        return Err("Not a directory".into());
    }
    if !want_dir && !meta.is_file() {
        return Err("Not a file".into());
    }
    let shown = path.display().to_string();
    if let Ok(l) = std::fs::symlink_metadata(path) {
        if l.file_type().is_symlink() && l.uid() != 0 {
            return Err(format!(
                "Symlink '{shown}' is not owned by root (uid 0). Current uid: {}. To fix this, run: sudo chown -h root:root \"{shown}\"",
                l.uid()
            ));
        }
    }
    let owner = Owner {
        uid: meta.uid(),
        mode: meta.mode(),
    };
    posix_check(owner, &shown, meta.is_dir())
}

/// Elsewhere the real CLI asks PowerShell for the ACLs; the fake does not emulate that and
/// reads the file.
#[cfg(not(unix))]
fn path_secure(_path: &Path, _want_dir: bool) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_is_checked_before_mode() {
        let r = posix_check(
            Owner {
                uid: 1001,
                mode: 0o100666,
            },
            "/x/f.json",
            false,
        );
        assert_eq!(
            r.unwrap_err(),
            "File '/x/f.json' is not owned by root (uid 0). Current uid: 1001. To fix this, run: sudo chown root:root \"/x/f.json\""
        );
    }

    #[test]
    fn group_or_other_write_fails_whatever_else_is_set() {
        for mode in [0o40775, 0o40757, 0o41777, 0o100664, 0o100622] {
            let r = posix_check(Owner { uid: 0, mode }, "/p", mode & 0o40000 != 0);
            let msg = r.expect_err("writable by group or others");
            assert!(msg.contains(&format!("(mode: {mode:o})")), "{msg}");
        }
        for mode in [0o40755, 0o41755, 0o100644, 0o100600, 0o100444] {
            assert!(posix_check(Owner { uid: 0, mode }, "/p", false).is_ok());
        }
    }

    #[test]
    fn paths_are_resolved_lexically() {
        assert_eq!(resolve(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(
            ancestors(Path::new("/a/b")),
            [
                PathBuf::from("/a/b"),
                PathBuf::from("/a"),
                PathBuf::from("/")
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_under_a_world_writable_directory_is_skipped_and_a_missing_one_is_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let file = open.join("system-defaults.json");
        assert_eq!(
            skip_warning(&file, "system defaults"),
            None,
            "missing: silent"
        );
        std::fs::write(&file, "{}").unwrap();
        let w = skip_warning(&file, "system defaults").expect("skipped");
        let want = format!(
            "Security Warning: Skipping system defaults file '{0}': Parent directory '{1}' is insecure: ",
            file.display(),
            open.display()
        );
        assert!(w.starts_with(&want), "{w}");
    }
}
