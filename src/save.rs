//! `save_file`: an answer also written to a file the call named. The path is checked against the
//! roots before the run ([`crate::policy::check_save_path`]) and again where it is written: on Unix
//! the directory is reached from its root one component at a time, never through a symlink
//! (`openat` with `O_NOFOLLOW`), and the answer goes into a temporary file in that directory, then
//! renamed over the name (`renameat`), so a directory swapped for a symlink during the run cannot
//! send the answer outside the roots, and an existing symlink at the name is replaced, not
//! followed. On Windows the directory's canonical path is checked again just before the write.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub(crate) use crate::policy::SaveTarget;

/// Writes `answer` to the target atomically: a reader never sees half an answer. Returns the
/// path written, or why nothing was.
pub(crate) fn save_answer(target: &SaveTarget, answer: &str) -> Result<PathBuf, String> {
    write(target, answer.as_bytes())?;
    Ok(target.path())
}

#[cfg(unix)]
fn write(target: &SaveTarget, bytes: &[u8]) -> Result<(), String> {
    use rustix::fs::{openat, renameat, unlinkat, AtFlags, Mode, OFlags};
    use std::io::Write;

    let dir = open_dir(target)?;
    let temporary = temporary_name(&target.name);
    let created = openat(
        &dir,
        &temporary,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| format!("cannot create a file in {}: {e}", target.dir.display()))?;
    let mut file = std::fs::File::from(created);
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| e.to_string())
        .and_then(|()| {
            renameat(&dir, &temporary, &dir, &target.name).map_err(|e| match e {
                rustix::io::Errno::ISDIR => "is a directory".to_string(),
                e => e.to_string(),
            })
        });
    if written.is_err() {
        let _ = unlinkat(&dir, &temporary, AtFlags::empty());
    }
    written
}

/// Opens the target's directory from its root, one component at a time, following no symlink.
#[cfg(unix)]
fn open_dir(target: &SaveTarget) -> Result<rustix::fd::OwnedFd, String> {
    use rustix::fs::{open, openat, Mode, OFlags};
    use std::path::Component;

    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = open(&target.root, flags, Mode::empty())
        .map_err(|e| format!("cannot open the root {}: {e}", target.root.display()))?;
    let rest = target.dir.strip_prefix(&target.root).map_err(|_| {
        format!(
            "{} is not under {}",
            target.dir.display(),
            target.root.display()
        )
    })?;
    for component in rest.components() {
        let Component::Normal(name) = component else {
            return Err(format!("{} is not a plain path", target.dir.display()));
        };
        dir = openat(&dir, name, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
            match e {
                rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => format!(
                    "{} was replaced during the run ({} is no longer a directory but a link or a file); nothing was written",
                    target.dir.display(),
                    Path::new(name).display()
                ),
                e => format!("cannot open {}: {e}", target.dir.display()),
            }
        })?;
    }
    Ok(dir)
}

#[cfg(not(unix))]
fn write(target: &SaveTarget, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    // No directory handles here: the directory must still resolve to itself just before the write.
    match crate::policy::canonical(&target.dir) {
        Ok(now) if now == target.dir => {}
        Ok(now) => {
            return Err(format!(
                "{} was replaced during the run (it now resolves to {}); nothing was written",
                target.dir.display(),
                now.display()
            ))
        }
        Err(e) => return Err(format!("cannot open {}: {e}", target.dir.display())),
    }
    let mut tmp = tempfile::NamedTempFile::new_in(&target.dir).map_err(|e| e.to_string())?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| e.to_string())?;
    tmp.persist(target.path())
        .map_err(|e| e.error.to_string())?;
    Ok(())
}

/// A hidden name next to the file's, unique enough that `O_EXCL` does not collide.
#[cfg(unix)]
fn temporary_name(name: &std::ffi::OsStr) -> OsString {
    let mut bytes = [0u8; 8];
    let n = getrandom::fill(&mut bytes)
        .map_or(std::process::id().into(), |()| u64::from_le_bytes(bytes));
    let mut t = OsString::from(".");
    t.push(name);
    t.push(format!(".{n:016x}.tmp"));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(root: &Path, rel: &str, name: &str) -> SaveTarget {
        let root = crate::policy::canonical(root).unwrap();
        SaveTarget {
            dir: root.join(rel),
            root,
            name: name.into(),
        }
    }

    #[test]
    fn the_answer_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let t = target(dir.path(), "sub", "a.md");
        std::fs::write(t.path(), "old and longer").unwrap();
        assert_eq!(save_answer(&t, "new").unwrap(), t.path());
        assert_eq!(std::fs::read_to_string(t.path()).unwrap(), "new");
        let leftovers = std::fs::read_dir(&t.dir).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left");
        let missing = target(dir.path(), "no/such/dir", "a.md");
        assert!(save_answer(&missing, "x").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_swapped_for_a_symlink_gets_nothing() {
        let roots = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(roots.path().join("a/b")).unwrap();
        std::fs::create_dir_all(outside.path().join("b")).unwrap();
        let t = target(roots.path(), "a/b", "answer.md");
        // After the check, `a` becomes a link to a directory outside the root.
        std::fs::rename(roots.path().join("a"), roots.path().join("a-old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), roots.path().join("a")).unwrap();
        let err = save_answer(&t, "secret").unwrap_err();
        assert!(err.contains("was replaced during the run"), "{err}");
        assert!(!outside.path().join("b/answer.md").exists());
        assert_eq!(
            std::fs::read_dir(outside.path().join("b")).unwrap().count(),
            0
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_name_is_replaced_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, root.path().join("answer.md")).unwrap();
        let t = target(root.path(), "", "answer.md");
        save_answer(&t, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let written = root.path().join("answer.md");
        assert!(!written.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(written).unwrap(), "new");
    }
}
