//! The per-run private temporary directory: the CLI writes error reports with request context into
//! `os.tmpdir()`, so each run gets its own 0700 directory, removed once the run is over.

use std::ffi::OsString;
use std::io;
use std::path::Path;

/// A private temporary directory (mode 0700 on Unix) for one run, removed when dropped.
#[derive(Debug)]
pub struct PrivateTmp {
    dir: tempfile::TempDir,
}

impl PrivateTmp {
    /// Creates the directory under the system temporary directory.
    pub fn new() -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("geminicli-mcp-")
            .tempdir()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(PrivateTmp { dir })
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The variables that point a child at the directory: `TMPDIR` (Unix, Node's `os.tmpdir()`),
    /// `TEMP` and `TMP` (Windows).
    pub fn env(&self) -> [(OsString, OsString); 3] {
        let p = OsString::from(self.dir.path());
        [
            ("TMPDIR".into(), p.clone()),
            ("TEMP".into(), p.clone()),
            ("TMP".into(), p),
        ]
    }

    /// Removes the directory now, reporting a failure (dropping removes it silently).
    pub fn close(self) -> io::Result<()> {
        self.dir.close()
    }
}
