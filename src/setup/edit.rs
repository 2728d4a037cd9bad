//! One client's file, changed safely: read (missing is empty), edited by its format, backed up,
//! and replaced atomically with the original's permissions.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::change::{Edited, FormatError};
use super::clients::{Entry, Format};

/// Why a client's file was not changed.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file's text could not be edited.
    #[error("{path}: {source}; left untouched")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its text.
        source: FormatError,
    },
    /// Reading, backing up or writing failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file is not text.
    #[error("{path}: not UTF-8 text (invalid byte at offset {offset}); left untouched")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The first byte that is not UTF-8.
        offset: usize,
    },
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The edit (its text is what was or would be written).
    pub edited: Edited,
    /// The file existed before.
    pub existed: bool,
    /// The copy of the old file, when one was made.
    pub backup: Option<PathBuf>,
}

const BOM: char = '\u{feff}';

/// Sets (`entry` given) or removes the server `name` in `path`; writes only when something changed
/// and `write` is true.
pub fn apply(
    path: &Path,
    format: Format,
    name: &str,
    entry: Option<&Entry>,
    write: bool,
) -> Result<Applied, FileError> {
    // Edit the file a symlink points to, so the link (a dotfiles checkout, say) stays a link.
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let io_err = |what, source| FileError::Io {
        path: path.clone(),
        what,
        source,
    };
    let (text, existed) = match fs::read(&path) {
        Ok(bytes) => (
            String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
                path: path.clone(),
                offset: e.utf8_error().valid_up_to(),
            })?,
            true,
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (String::new(), false),
        Err(e) => return Err(io_err("cannot read it", e)),
    };
    if existed && !path.is_file() {
        return Err(io_err(
            "cannot edit it",
            io::Error::other("not a regular file"),
        ));
    }
    let bom = text.starts_with(BOM);
    let body = text.strip_prefix(BOM).unwrap_or(&text);
    let mut edited = match format {
        Format::Json { key } => super::json::edit(body, key, name, entry),
        Format::Toml => super::toml::edit(body, name, entry),
    }
    .map_err(|source| FileError::Format {
        path: path.clone(),
        source,
    })?;
    if bom {
        edited.text.insert(0, BOM);
    }
    // Removing from a file that does not exist changes nothing: do not create it.
    let mut applied = Applied {
        edited,
        existed,
        backup: None,
    };
    if !write || !applied.edited.changed || (!existed && entry.is_none()) {
        return Ok(applied);
    }
    if existed {
        applied.backup = Some(backup(&path).map_err(|e| io_err("cannot back it up", e))?);
    }
    replace(&path, applied.edited.text.as_bytes()).map_err(|e| io_err("cannot write it", e))?;
    Ok(applied)
}

/// Copies `path` to `<path>.bak-<UTC time>` (a number added if that exists), permissions kept.
fn backup(path: &Path) -> io::Result<PathBuf> {
    let stamp = timestamp();
    let mut n = 0u32;
    loop {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".bak-{stamp}"));
        if n > 0 {
            name.push(format!("-{n}"));
        }
        let candidate = PathBuf::from(name);
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => {
                drop(file);
                fs::copy(path, &candidate)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

fn timestamp() -> String {
    use chrono::{Datelike, Timelike};
    let t = chrono::Utc::now();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`: a reader (the
/// client, running) sees the old file or the new one, never half of one. The new file keeps the
/// old one's permissions; a new file is private to the user (clients keep secrets in these files),
/// and so are the folders made for it.
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        create_private_dirs(dir)?;
    }
    let permissions = fs::metadata(path).map(|m| m.permissions()).ok();
    let mut tmp = tempfile::Builder::new()
        .prefix(".geminicli-mcp-setup")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // Without an old file the temporary file's own mode stays: 0600 on Unix.
    if let Some(p) = permissions {
        fs::set_permissions(tmp.path(), p)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

pub(super) fn create_private_dirs(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}
