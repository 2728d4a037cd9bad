//! The CLI's scan of the workspace's folder structure (`getFolderStructure`, run for the first
//! request's directory context when `context.includeDirectoryTree` is on, its default): a
//! breadth-first walk of each workspace directory, at most 200 items in all per directory,
//! skipping `node_modules`, `.git`, `dist` and `__pycache__`. A folder it may not read is not an
//! error: the CLI prints `Warning: Could not read directory <path>: <Node's error message>` on
//! stderr and goes on. An unprivileged user's `--include-directories=/tmp` meets other users'
//! private folders there (observed on 0.61.0).

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// Items (files and folders) one directory's scan takes in before it stops descending.
const MAX_ITEMS: usize = 200;

/// Folders listed but never entered.
const IGNORED: [&str; 4] = ["node_modules", ".git", "dist", "__pycache__"];

/// One workspace directory's scan in progress.
struct Scan {
    queue: VecDeque<PathBuf>,
    seen: HashSet<PathBuf>,
    items: usize,
}

impl Scan {
    fn new(root: &Path) -> Self {
        Scan {
            queue: VecDeque::from([root.to_path_buf()]),
            seen: HashSet::new(),
            items: 0,
        }
    }

    /// Reads the next folder of the queue; returns its warning if it could not be read, `None`
    /// when there was nothing to warn about (or nothing left: see `done`).
    fn step(&mut self) -> Option<String> {
        let dir = self.queue.pop_front()?;
        if !self.seen.insert(dir.clone()) || self.items >= MAX_ITEMS {
            return None;
        }
        let mut entries: Vec<(String, std::fs::FileType)> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(Result::ok)
                .filter_map(|e| {
                    Some((
                        e.file_name().to_string_lossy().into_owned(),
                        e.file_type().ok()?,
                    ))
                })
                .collect(),
            Err(e) => return warning(&dir, &e),
        };
        entries.sort_by(|a, b| collate(&a.0, &b.0));
        // Files are counted first, then folders, each stopping at the limit (a symlink is
        // neither: readdir's entry types do not follow links).
        for _ in entries.iter().filter(|(_, t)| t.is_file()) {
            if self.items >= MAX_ITEMS {
                break;
            }
            self.items += 1;
        }
        for (name, _) in entries.iter().filter(|(_, t)| t.is_dir()) {
            if self.items >= MAX_ITEMS {
                break;
            }
            self.items += 1;
            if !IGNORED.contains(&name.as_str()) {
                self.queue.push_back(dir.join(name));
            }
        }
        None
    }

    fn done(&self) -> bool {
        self.queue.is_empty()
    }
}

/// The warning for a folder that could not be read, as Node words the error (`EACCES`,
/// `ENOENT` and `EPERM` are warned about; other errors end the scan silently here).
fn warning(dir: &Path, e: &std::io::Error) -> Option<String> {
    let what = node_error(e)?;
    let path = dir.display();
    Some(format!(
        "Warning: Could not read directory {path}: {what}, scandir '{path}'"
    ))
}

/// Node's message for the errors the scan warns about.
#[cfg(unix)]
fn node_error(e: &std::io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::EACCES => Some("EACCES: permission denied"),
        libc::ENOENT => Some("ENOENT: no such file or directory"),
        libc::EPERM => Some("EPERM: operation not permitted"),
        _ => None,
    }
}

/// Node's message for the errors the scan warns about.
#[cfg(not(unix))]
fn node_error(e: &std::io::Error) -> Option<&'static str> {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Some("EPERM: operation not permitted"),
        std::io::ErrorKind::NotFound => Some("ENOENT: no such file or directory"),
        _ => None,
    }
}

/// ICU's root order of the ASCII punctuation and symbols, which all sort before digits and
/// letters.
const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// `String.prototype.localeCompare` with ICU's root collation, as far as file names need it:
/// white space, then punctuation and symbols in ICU's order, then digits, then letters; letters
/// compared without case first, then lower case before upper.
fn collate(a: &str, b: &str) -> std::cmp::Ordering {
    fn primary(c: char) -> (u8, u32) {
        if c.is_whitespace() {
            (0, u32::from(c))
        } else if let Some(i) = PUNCTUATION.find(c) {
            (1, u32::try_from(i).unwrap_or(u32::MAX))
        } else if c.is_numeric() {
            (3, u32::from(c))
        } else if c.is_alphabetic() {
            (4, u32::from(c.to_lowercase().next().unwrap_or(c)))
        } else {
            (2, u32::from(c))
        }
    }
    let key = |s: &str| s.chars().map(primary).collect::<Vec<_>>();
    let upper = |s: &str| s.chars().map(char::is_uppercase).collect::<Vec<_>>();
    key(a)
        .cmp(&key(b))
        .then_with(|| upper(a).cmp(&upper(b)))
        .then_with(|| a.cmp(b))
}

/// The warnings of the scans of `roots` (the working directory, then the included ones), which
/// the CLI runs side by side: one folder of each in turn.
pub fn unreadable_folder_warnings(roots: &[PathBuf]) -> Vec<String> {
    let mut distinct = HashSet::new();
    let mut scans: Vec<Scan> = roots
        .iter()
        .filter(|r| distinct.insert(*r))
        .map(|r| Scan::new(r))
        .collect();
    let mut warnings = Vec::new();
    while scans.iter().any(|s| !s.done()) {
        for scan in &mut scans {
            warnings.extend(scan.step());
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_locale_compare_does() {
        // Node 20's `[…].sort((a, b) => a.localeCompare(b))` of the same names.
        let node = [
            "_z",
            "10",
            "2",
            "a b",
            "a_x",
            "a-x",
            "a.b",
            "a~",
            "a$",
            "a1",
            "alpha",
            "b",
            "B",
            "cc-socks",
            "ci-target",
            "claude-0",
            "tmp.x",
            "Zeta",
        ];
        let mut names = node.to_vec();
        names.reverse();
        names.sort_by(|a, b| collate(a, b));
        assert_eq!(names, node);
    }

    #[test]
    fn a_missing_root_is_warned_about_as_node_words_it() {
        let w = unreadable_folder_warnings(&[PathBuf::from("/nonexistent/fake-gemini-dir")]);
        assert_eq!(
            w,
            ["Warning: Could not read directory /nonexistent/fake-gemini-dir: ENOENT: no such file or directory, scandir '/nonexistent/fake-gemini-dir'"]
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_folder_denied_is_warned_about_and_other_errors_are_not() {
        let dir = Path::new("/tmp/private");
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            warning(dir, &denied).as_deref(),
            Some("Warning: Could not read directory /tmp/private: EACCES: permission denied, scandir '/tmp/private'")
        );
        assert!(warning(dir, &std::io::Error::from_raw_os_error(libc::ENOTDIR)).is_none());
    }

    #[test]
    fn the_scan_stops_entering_folders_once_200_items_are_counted() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..MAX_ITEMS {
            std::fs::write(d.path().join(format!("f{i:03}")), "").unwrap();
        }
        // Counted after the files, so past the limit: listed as truncated, never read.
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let mut scan = Scan::new(d.path());
        while !scan.done() {
            scan.step();
        }
        assert_eq!(scan.items, MAX_ITEMS);
        assert_eq!(
            scan.seen.len(),
            1,
            "only the root was read: {:?}",
            scan.seen
        );
    }

    #[test]
    fn ignored_folders_are_counted_but_not_entered() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("node_modules/x")).unwrap();
        std::fs::create_dir_all(d.path().join("src/y")).unwrap();
        let mut scan = Scan::new(d.path());
        while !scan.done() {
            scan.step();
        }
        assert_eq!(scan.items, 3, "node_modules, src and src/y");
        assert!(!scan.seen.contains(&d.path().join("node_modules")));
        assert!(scan.seen.contains(&d.path().join("src/y")));
    }
}
