//! The operator's limits on what a call may ask for (issue 5): the allowed roots for `workspace`
//! and friends, the approval-mode ceiling, and the checks of paths against them. Read from
//! `GEMINICLI_MCP_ALLOWED_ROOTS` and `GEMINICLI_MCP_APPROVAL_MODE`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::Failure;

/// The CLI's approval modes, from the most restrictive to the least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApprovalMode {
    /// Read-only: the CLI plans and may not change anything.
    Plan,
    /// Tools that change things need an approval nobody can give headless: they are refused.
    Default,
    /// Edits are auto-approved, shell commands are not.
    AutoEdit,
    /// Everything is auto-approved (the reference's only mode).
    Yolo,
}

impl ApprovalMode {
    /// The CLI's spelling (`--approval-mode=<this>`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "auto_edit",
            ApprovalMode::Yolo => "yolo",
        }
    }

    /// A mode by the CLI's name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "plan" => Some(ApprovalMode::Plan),
            "default" => Some(ApprovalMode::Default),
            "auto_edit" => Some(ApprovalMode::AutoEdit),
            "yolo" => Some(ApprovalMode::Yolo),
            _ => None,
        }
    }

    /// A mode by cli-agent-mcp's `permission` names.
    pub fn from_permission(value: &str) -> Option<Self> {
        match value {
            "read-only" => Some(ApprovalMode::Plan),
            "workspace-write" => Some(ApprovalMode::AutoEdit),
            "unlimited" => Some(ApprovalMode::Yolo),
            _ => None,
        }
    }
}

/// The operator's limits.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `GEMINICLI_MCP_ALLOWED_ROOTS`: where `workspace`, `include_directories`, `image_paths` and
    /// `save_file` may point. Empty: the server's working directory and below.
    pub allowed_roots: Vec<PathBuf>,
    /// `GEMINICLI_MCP_APPROVAL_MODE`: the most permissive approval mode a call may ask for, and
    /// the mode of calls that ask for none (default `yolo`, as the reference).
    pub approval_ceiling: ApprovalMode,
    /// `GEMINICLI_MCP_TOOLSETS`: the opt-in tools listed besides the reference's three.
    pub toolsets: crate::toolsets::Toolsets,
    /// `GEMINICLI_MCP_*_TIMEOUT_MS`: the operator's deadlines (none by default).
    pub deadlines: Deadlines,
    /// The opt-in quota and retry policy (off by default).
    pub quota: QuotaPolicy,
}

/// What the server does about 429s on top of the CLI's own retries (off by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaPolicy {
    /// `GEMINICLI_MCP_RATE_LIMIT_RETRY`: after `rate_limited` with a known delay, wait and retry
    /// once.
    pub rate_limit_retry: bool,
    /// `GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS` (default 60000): the longest wait for that retry.
    pub max_wait: std::time::Duration,
    /// `GEMINICLI_MCP_FALLBACK_MODELS`: after `quota_exhausted`, the models to try next, in order.
    pub fallback_models: Vec<String>,
}

impl Default for QuotaPolicy {
    fn default() -> Self {
        QuotaPolicy {
            rate_limit_retry: false,
            max_wait: std::time::Duration::from_millis(60_000),
            fallback_models: Vec::new(),
        }
    }
}

impl QuotaPolicy {
    /// Reads the variables; model names that would be refused as `model` are left out.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> QuotaPolicy {
        let text = |n: &str| lookup(n).and_then(|v| v.into_string().ok());
        let d = QuotaPolicy::default();
        QuotaPolicy {
            rate_limit_retry: text("GEMINICLI_MCP_RATE_LIMIT_RETRY")
                .is_some_and(|v| crate::config::parse_flag(&v)),
            max_wait: text("GEMINICLI_MCP_RATE_LIMIT_MAX_WAIT_MS")
                .and_then(|v| crate::config::parse_positive(&v))
                .map_or(d.max_wait, std::time::Duration::from_millis),
            fallback_models: text("GEMINICLI_MCP_FALLBACK_MODELS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|m| crate::gemini::command::validate_model(m).is_ok())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A run's opt-in deadlines; none set means no timeout, as the reference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// From the spawn to the first content: an assistant message or a tool event.
    pub first_content: Option<std::time::Duration>,
    /// Longest time without a line on either stream.
    pub inactivity: Option<std::time::Duration>,
    /// From the spawn to the end of the run.
    pub total: Option<std::time::Duration>,
}

impl Deadlines {
    /// Reads `GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS`, `GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS` and
    /// `GEMINICLI_MCP_TOTAL_TIMEOUT_MS` (positive integers; anything else: unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Deadlines {
        let ms = |name: &str| {
            lookup(name)
                .and_then(|v| v.into_string().ok())
                .and_then(|v| crate::config::parse_positive(&v))
                .map(std::time::Duration::from_millis)
        };
        Deadlines {
            first_content: ms("GEMINICLI_MCP_FIRST_CONTENT_TIMEOUT_MS"),
            inactivity: ms("GEMINICLI_MCP_INACTIVITY_TIMEOUT_MS"),
            total: ms("GEMINICLI_MCP_TOTAL_TIMEOUT_MS"),
        }
    }

    /// The operator's limits with a call's on top: for each, the shorter of the two.
    pub fn with(self, call: Deadlines) -> Deadlines {
        let min = |a: Option<std::time::Duration>, b: Option<std::time::Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Deadlines {
            first_content: min(self.first_content, call.first_content),
            inactivity: min(self.inactivity, call.inactivity),
            total: min(self.total, call.total),
        }
    }

    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.first_content.is_some() || self.inactivity.is_some() || self.total.is_some()
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_roots: Vec::new(),
            approval_ceiling: ApprovalMode::Yolo,
            toolsets: crate::toolsets::Toolsets::default(),
            deadlines: Deadlines::default(),
            quota: QuotaPolicy::default(),
        }
    }
}

impl Policy {
    /// Reads the variables through `lookup`. An invalid approval mode means the most restrictive
    /// one (`plan`): a typo must not widen what callers may do.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let allowed_roots = lookup("GEMINICLI_MCP_ALLOWED_ROOTS")
            .filter(|v| !v.is_empty())
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let approval_ceiling = match lookup("GEMINICLI_MCP_APPROVAL_MODE")
            .and_then(|v| v.into_string().ok())
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => ApprovalMode::Yolo,
            Some(v) if v.is_empty() => ApprovalMode::Yolo,
            Some(v) => ApprovalMode::parse(&v).unwrap_or(ApprovalMode::Plan),
        };
        Policy {
            allowed_roots,
            approval_ceiling,
            toolsets: crate::toolsets::Toolsets::from_lookup(&lookup),
            deadlines: Deadlines::from_lookup(&lookup),
            quota: QuotaPolicy::from_lookup(&lookup),
        }
    }

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
                "{argument} asks for approval mode {}, above this server's ceiling {} (GEMINICLI_MCP_APPROVAL_MODE); ask for {} or less (plan < default < auto_edit < yolo)",
                mode.as_str(),
                self.approval_ceiling.as_str(),
                self.approval_ceiling.as_str()
            ))),
        }
    }
}

/// Whether a failed attempt may be run again (the quota policy's guard): a retry repeats whatever
/// the attempt's tools did, so only when none ran, or the approval mode cannot write (`plan`,
/// `default`: headless, nothing that needs an approval runs).
pub fn may_repeat(tools_ran: bool, mode: Option<ApprovalMode>) -> bool {
    !tools_ran || mode.is_some_and(|m| m <= ApprovalMode::Default)
}

/// `path` made absolute and resolved (symlinks, `..`), without the `\\?\` prefix Windows adds.
pub fn canonical(path: &Path) -> std::io::Result<PathBuf> {
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
pub const IMAGE_EXTENSIONS: [&str; 7] = ["png", "jpg", "jpeg", "gif", "webp", "heic", "heif"];

/// Whether `path` has an image extension the CLI attaches.
pub fn is_supported_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// What a checked path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// An existing directory.
    Dir,
    /// An existing regular file.
    File,
}

/// Checks a path argument: relative paths are taken from `base`; it must exist as `expect`
/// says, contain no comma (the CLI splits its array flags on commas), and lie under one of
/// `roots` and, when the client advertised MCP roots, under one of `client_roots` too. Returns
/// the canonical path. A refusal names the argument, the path and the rule.
pub fn check_path(
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
    };
    if !is_ok {
        return Err(refuse(match expect {
            Expect::Dir => "is not a directory".into(),
            Expect::File => "is not a regular file".into(),
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
            "resolves to {}, outside the allowed roots ({}; GEMINICLI_MCP_ALLOWED_ROOTS, default the server's working directory)",
            path.display(),
            join(roots)
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

/// Checks `save_file`: its directory must exist and lie under the roots (as [`check_path`]);
/// the file itself may be new, and must not be a directory. Returns the path to write.
pub fn check_save_path(
    raw: &str,
    base: &Path,
    roots: &[PathBuf],
    client_roots: Option<&[PathBuf]>,
) -> Result<PathBuf, Failure> {
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
    let path = dir.join(name);
    if path.is_dir() {
        return Err(refuse("is a directory"));
    }
    Ok(path)
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
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
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
    use crate::error::ErrorKind;

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
            Policy::from_lookup(move |n| (n == "GEMINICLI_MCP_APPROVAL_MODE").then(|| v.clone()))
        };
        assert_eq!(p("plan").approval_ceiling, ApprovalMode::Plan);
        assert_eq!(p(" AUTO_EDIT ").approval_ceiling, ApprovalMode::AutoEdit);
        assert_eq!(p("").approval_ceiling, ApprovalMode::Yolo);
        assert_eq!(p("nonsense").approval_ceiling, ApprovalMode::Plan);
        assert_eq!(
            Policy::from_lookup(|_| None).approval_ceiling,
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

    #[test]
    fn deadlines_take_the_shorter_limit() {
        let ms = |v| Some(std::time::Duration::from_millis(v));
        let env = Deadlines {
            total: ms(1000),
            inactivity: ms(300),
            ..Deadlines::default()
        };
        let call = Deadlines {
            total: ms(5000),
            first_content: ms(200),
            ..Deadlines::default()
        };
        let d = env.with(call);
        assert_eq!(
            (d.total, d.inactivity, d.first_content),
            (ms(1000), ms(300), ms(200))
        );
        assert!(!Deadlines::default().any());
        let from = Deadlines::from_lookup(|n| {
            (n == "GEMINICLI_MCP_TOTAL_TIMEOUT_MS").then(|| OsString::from("250"))
        });
        assert_eq!(from.total, ms(250));
        assert_eq!(from.inactivity, None);
    }

    #[test]
    fn a_retry_never_repeats_writing_tools() {
        assert!(may_repeat(false, Some(ApprovalMode::Yolo)));
        assert!(may_repeat(true, Some(ApprovalMode::Plan)));
        assert!(may_repeat(true, Some(ApprovalMode::Default)));
        assert!(!may_repeat(true, Some(ApprovalMode::AutoEdit)));
        assert!(!may_repeat(true, Some(ApprovalMode::Yolo)));
        assert!(!may_repeat(true, None));
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
