//! `save_file`: an answer also written to a file the call named, checked against the roots before
//! the run.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `answer` to `path` atomically: a temporary file in the same directory, then a rename,
/// so a reader never sees half an answer. Returns the path written, or why it failed.
pub fn save_answer(path: &Path, answer: &str) -> Result<PathBuf, String> {
    let dir = path.parent().ok_or("the path has no directory")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(answer.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "old and longer").unwrap();
        assert_eq!(save_answer(&path, "new").unwrap(), path);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let missing = dir.path().join("no/such/dir/a.md");
        assert!(save_answer(&missing, "x").is_err());
    }
}
