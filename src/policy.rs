//! A call checked against the operator's limits (the rows `policy.*` of `config::settings`): its
//! approval mode against the ceiling, and its paths against the allowed roots.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::approval::ApprovalMode;
use crate::config::settings;
use crate::error::Failure;

pub(crate) use crate::config::settings::{Policy, QuotaPolicy};

impl Policy {
    /// The allowed roots, canonicalised; `cwd` when none are configured. Roots that do not exist
    /// are left out (nothing can lie under them).
    pub fn roots(&self, cwd: &Path) -> Vec<PathBuf> {
        let configured: Vec<&Path> = if self.allowed_roots.is_empty() {
            vec![cwd]
        } else {
            self.allowed_roots.iter().map(PathBuf::as_path).collect()
        };
        configured
            .into_iter()
            .filter_map(|p| canonical(&cwd.join(p)).ok())
            .collect()
    }

    /// The approval mode of a call that asked for `asked` through `argument` (`approval_mode` or
    /// `permission`; none: the ceiling); refused, not clamped, above the ceiling.
    pub fn approval(
        &self,
        asked: Option<ApprovalMode>,
        argument: &str,
    ) -> Result<ApprovalMode, Failure> {
        match asked {
            None => Ok(self.approval_ceiling),
            Some(mode) if mode <= self.approval_ceiling => Ok(mode),
            Some(mode) => Err(Failure::invalid_input(format!(
                "{argument} asks for approval mode {}, above this server's ceiling {} ({}); ask for {} or less (plan < default < auto_edit < yolo)",
                mode.as_str(),
                self.approval_ceiling.as_str(),
                settings::APPROVAL_MODE.name,
                self.approval_ceiling.as_str()
            ))),
        }
    }
}

/// `path` made absolute and resolved (symlinks, `..`), without the `\\?\` prefix Windows adds.
pub(crate) fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    let p = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    {
        if let Some(s) = p.to_str() {
            if let Some(rest) = s.strip_prefix(r"\\?\") {
                if !rest.starts_with("UNC\\") {
                    return Ok(PathBuf::from(rest));
                }
            }
        }
    }
    Ok(p)
}

/// File extensions of the images the Gemini CLI attaches from an `@` reference (its inline
/// image types; any case).
pub(crate) const IMAGE_EXTENSIONS: [&str; 7] =
    ["png", "jpg", "jpeg", "gif", "webp", "heic", "heif"];

/// Whether `path` has an image extension the CLI attaches.
pub(crate) fn is_supported_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// What a checked path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// An existing directory.
    Dir,
    /// An existing regular file.
    File,
    /// An existing file or directory.
    Any,
}

/// Checks a path argument: relative paths are taken from `base`; it must exist as `expect`
/// says, contain no comma (the CLI splits its array flags on commas), and lie under one of
/// `roots` and, when the client advertised MCP roots, under one of `client_roots` too. Returns
/// the canonical path. A refusal names the argument, the path and the rule.
pub(crate) fn check_path(
    argument: &str,
    raw: &str,
    base: &Path,
    expect: Expect,
    roots: &[PathBuf],
    client_roots: Option<&[PathBuf]>,
) -> Result<PathBuf, Failure> {
    let refuse = |rule: String| Failure::invalid_input(format!("{argument} {raw:?}: {rule}"));
    if raw.is_empty() {
        return Err(refuse("must not be empty".into()));
    }
    if raw.contains(',') {
        return Err(refuse(
            "contains a comma, which the Gemini CLI would split the path at".into(),
        ));
    }
    if raw.contains('\0') || raw.contains('\n') || raw.contains('\r') {
        return Err(refuse("contains a control character".into()));
    }
    let path = canonical(&base.join(raw))
        .map_err(|e| refuse(format!("does not exist or cannot be resolved ({e})")))?;
    let is_ok = match expect {
        Expect::Dir => path.is_dir(),
        Expect::File => path.is_file(),
        Expect::Any => path.is_file() || path.is_dir(),
    };
    if !is_ok {
        return Err(refuse(match expect {
            Expect::Dir => "is not a directory".into(),
            Expect::File => "is not a regular file".into(),
            Expect::Any => "is neither a regular file nor a directory".into(),
        }));
    }
    if path.to_string_lossy().contains(',') {
        return Err(refuse(format!(
            "resolves to {}, which contains a comma the Gemini CLI would split the path at",
            path.display()
        )));
    }
    if !roots.iter().any(|r| path.starts_with(r)) {
        return Err(refuse(format!(
            "resolves to {}, outside the allowed roots ({}; {}, default the server's working directory)",
            path.display(),
            join(roots),
            settings::ALLOWED_ROOTS.name
        )));
    }
    if let Some(client) = client_roots {
        if !client.iter().any(|r| path.starts_with(r)) {
            return Err(refuse(format!(
                "resolves to {}, outside the client's MCP roots ({})",
                path.display(),
                join(client)
            )));
        }
    }
    Ok(path)
}

/// Where `save_file` writes: a directory under a root, and a file name in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SaveTarget {
    /// The root the directory lies under (canonical).
    pub root: PathBuf,
    /// The directory (canonical, under `root`).
    pub dir: PathBuf,
    /// The file's name in `dir`.
    pub name: OsString,
}

impl SaveTarget {
    /// The file's path.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }
}

/// Checks `save_file`: its directory must exist and lie under the roots (as [`check_path`]);
/// the file itself may be new, and must not be a directory. Returns where to write, with the root
/// the write starts from again ([`crate::save`]).
pub(crate) fn check_save_path(
    raw: &str,
    base: &Path,
    roots: &[PathBuf],
    client_roots: Option<&[PathBuf]>,
) -> Result<SaveTarget, Failure> {
    let refuse = |rule: &str| Failure::invalid_input(format!("save_file {raw:?}: {rule}"));
    let joined = base.join(raw);
    let name = joined
        .file_name()
        .filter(|n| *n != "." && *n != "..")
        .ok_or_else(|| refuse("names no file"))?
        .to_owned();
    let parent = joined.parent().ok_or_else(|| refuse("has no directory"))?;
    let dir = check_path(
        "save_file",
        &parent.to_string_lossy(),
        base,
        Expect::Dir,
        roots,
        client_roots,
    )?;
    let path = dir.join(&name);
    if path.is_dir() {
        return Err(refuse("is a directory"));
    }
    // The closest root: the fewest components to walk at write time. `check_path` found one.
    let root = roots
        .iter()
        .filter(|r| dir.starts_with(r))
        .max_by_key(|r| r.components().count())
        .ok_or_else(|| refuse("is outside the allowed roots"))?
        .clone();
    Ok(SaveTarget { root, dir, name })
}

/// Checks again, right before the CLI gets it, that a checked path still resolves to itself. A
/// call may wait minutes for its slot; a directory on the path swapped for a symlink meanwhile
/// would hand the CLI a place the check never saw. (The CLI receives paths, so a swap after this
/// still reaches it: the roots limit what a caller may name, not what the CLI can touch.)
pub(crate) fn unchanged(argument: &str, path: &Path) -> Result<(), Failure> {
    match canonical(path) {
        Ok(now) if now == path => Ok(()),
        Ok(now) => Err(Failure::invalid_input(format!(
            "{argument} {}: changed while the call waited (it now resolves to {}); nothing was run",
            path.display(),
            now.display()
        ))),
        Err(e) => Err(Failure::invalid_input(format!(
            "{argument} {}: gone while the call waited ({e}); nothing was run",
            path.display()
        ))),
    }
}

fn join(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The local path of a `file://` root URI (percent-decoded); `None` for other schemes.
pub(crate) fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only an empty host or localhost is this machine.
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(i) if &rest[..i] == "localhost" => &rest[i..],
        _ => return None,
    };
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).ok()?;
    // `file:///C:/x` on Windows.
    #[cfg(windows)]
    let s = s
        .strip_prefix('/')
        .filter(|r| r.get(1..2) == Some(":"))
        .map(str::to_owned)
        .unwrap_or(s);
    Some(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::Vars;
    use crate::config::policy::Toolsets;
    use crate::error::ErrorKind;

    #[test]
    fn toolsets_parse() {
        assert_eq!(Toolsets::parse("").0, Toolsets::default());
        let (t, unknown) = Toolsets::parse(" Sessions , nope");
        assert!(t.sessions && !t.models);
        assert_eq!(unknown, ["nope"]);
        let (t, _) = Toolsets::parse("all");
        assert!(t.sessions && t.models);
    }

    #[test]
    fn approval_is_refused_above_the_ceiling() {
        let p = Policy {
            approval_ceiling: ApprovalMode::AutoEdit,
            ..Policy::default()
        };
        assert_eq!(
            p.approval(None, "approval_mode").unwrap(),
            ApprovalMode::AutoEdit
        );
        assert_eq!(
            p.approval(Some(ApprovalMode::Plan), "approval_mode")
                .unwrap(),
            ApprovalMode::Plan
        );
        let f = p
            .approval(Some(ApprovalMode::Yolo), "permission")
            .unwrap_err();
        assert!(f.message.starts_with("permission "), "{}", f.message);
        assert_eq!(f.kind, ErrorKind::InputValidation);
        assert!(f.message.contains("ceiling auto_edit"), "{}", f.message);
    }

    #[test]
    fn ceiling_from_env() {
        let p = |v: &str| {
            let v = OsString::from(v);
            let lookup = move |n: &str| (n == "GEMINICLI_MCP_APPROVAL_MODE").then(|| v.clone());
            Policy::read(&Vars::new(&lookup))
        };
        assert_eq!(p("plan").approval_ceiling, ApprovalMode::Plan);
        assert_eq!(p(" AUTO_EDIT ").approval_ceiling, ApprovalMode::AutoEdit);
        assert_eq!(p("").approval_ceiling, ApprovalMode::Yolo);
        assert_eq!(p("nonsense").approval_ceiling, ApprovalMode::Plan);
        assert_eq!(
            Policy::read(&Vars::new(&|_| None)).approval_ceiling,
            ApprovalMode::Yolo
        );
    }

    #[test]
    fn paths_must_lie_under_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("c,d")).unwrap();
        std::fs::write(root.join("a/f.png"), b"x").unwrap();
        let roots = vec![root.join("a")];
        let ok = check_path("workspace", "a/b", &root, Expect::Dir, &roots, None).unwrap();
        assert_eq!(ok, root.join("a/b"));
        for (raw, why) in [
            ("c,d", "comma"),
            ("a/missing", "does not exist"),
            ("a/f.png", "not a directory"),
            (".", "outside the allowed roots"),
            ("a/b/../..", "outside the allowed roots"),
        ] {
            let f = check_path("workspace", raw, &root, Expect::Dir, &roots, None).unwrap_err();
            assert!(f.message.contains(why), "{raw}: {}", f.message);
            assert!(f.message.contains(raw), "{raw}: {}", f.message);
        }
        let client = vec![root.join("a/b")];
        let f =
            check_path("workspace", "a", &root, Expect::Dir, &roots, Some(&client)).unwrap_err();
        assert!(f.message.contains("MCP roots"), "{}", f.message);
        assert!(check_path("image_paths", "a/f.png", &root, Expect::File, &roots, None).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_resolved_before_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("inside")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("inside/link")).unwrap();
        let roots = vec![root.join("inside")];
        let f =
            check_path("workspace", "inside/link", &root, Expect::Dir, &roots, None).unwrap_err();
        assert!(
            f.message.contains("outside the allowed roots"),
            "{}",
            f.message
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_path_swapped_after_its_check_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = canonical(dir.path()).unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        assert!(unchanged("workspace", &ws).is_ok());
        std::fs::rename(&ws, dir.path().join("ws-old")).unwrap();
        std::os::unix::fs::symlink("/", &ws).unwrap();
        let f = unchanged("workspace", &ws).unwrap_err();
        assert_eq!(f.kind, crate::error::ErrorKind::InputValidation);
        assert!(
            f.message.contains("changed while the call waited"),
            "{}",
            f.message
        );
        std::fs::remove_file(&ws).unwrap();
        let f = unchanged("workspace", &ws).unwrap_err();
        assert!(
            f.message.contains("gone while the call waited"),
            "{}",
            f.message
        );
    }

    #[test]
    fn file_uris() {
        assert_eq!(
            file_uri_path("file:///home/u/my%20project"),
            Some(PathBuf::from("/home/u/my project"))
        );
        assert_eq!(
            file_uri_path("file://localhost/x"),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(file_uri_path("file://elsewhere/x"), None);
        assert_eq!(file_uri_path("https://x/y"), None);
    }
}
