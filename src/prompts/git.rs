//! The `review` prompt's diff, gathered with `git` in the workspace: no shell, every user path
//! after `--` as a literal pathspec, revisions checked so they cannot be options, the repository's
//! external diff and textconv programs and its fsmonitor never run, and the output read under a
//! byte bound — a diff past it is reported as too large, never cut.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The largest diff one review takes, in bytes: the client's model copies it into a tool call, so
/// it must fit one model turn with room to spare.
pub(crate) const MAX_DIFF_BYTES: usize = 64 * 1024;
/// Most untracked files one review shows as new files.
pub(crate) const MAX_UNTRACKED: usize = 100;
/// Longest revision or range accepted.
const MAX_REV_CHARS: usize = 200;

/// Which changes a review covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changes {
    /// Staged and unstaged changes against HEAD, and untracked files (the default).
    Uncommitted,
    /// The index against HEAD.
    Staged,
    /// The working tree against the index, and untracked files.
    Unstaged,
    /// A commit range, `A..B`, `A...B` or `A..` (to HEAD).
    Range(String),
    /// One commit's own change.
    Commit(String),
}

impl Changes {
    /// Reads the `changes` argument (`None`: uncommitted). A revision must be plain: letters,
    /// digits and `._/~^@{}+-`, not starting with `-`, so git cannot read it as an option.
    pub(crate) fn parse(raw: Option<&str>) -> Result<Changes, String> {
        let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Changes::Uncommitted);
        };
        match raw {
            "uncommitted" => return Ok(Changes::Uncommitted),
            "staged" => return Ok(Changes::Staged),
            "unstaged" => return Ok(Changes::Unstaged),
            _ => {}
        }
        let plain = |rev: &str| {
            !rev.starts_with('-')
                && rev
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._/~^@{}+-".contains(c))
        };
        let sides: Vec<&str> = if raw.contains("...") {
            raw.splitn(2, "...").collect()
        } else {
            raw.splitn(2, "..").collect()
        };
        let ok = raw.chars().count() <= MAX_REV_CHARS
            && sides.iter().all(|s| plain(s))
            && !sides.iter().all(|s| s.is_empty());
        if !ok {
            return Err(format!(
                "changes {raw:?}: give `uncommitted`, `staged`, `unstaged`, a commit range (`main..HEAD`, `HEAD~3..`) or one commit"
            ));
        }
        Ok(if sides.len() == 2 {
            Changes::Range(raw.to_owned())
        } else {
            Changes::Commit(raw.to_owned())
        })
    }

    /// The revisions to check exist (the non-empty sides of a range).
    fn revisions(&self) -> Vec<&str> {
        match self {
            Changes::Range(r) => r
                .split("..")
                .map(|s| s.trim_start_matches('.'))
                .filter(|s| !s.is_empty())
                .collect(),
            Changes::Commit(c) => vec![c.as_str()],
            _ => Vec::new(),
        }
    }

    /// How the message names these changes.
    pub(crate) fn label(&self) -> String {
        match self {
            Changes::Uncommitted => "the uncommitted changes".into(),
            Changes::Staged => "the staged changes".into(),
            Changes::Unstaged => "the unstaged changes".into(),
            Changes::Range(r) => format!("the commits {r}"),
            Changes::Commit(c) => format!("the commit {c}"),
        }
    }

    fn with_untracked(&self) -> bool {
        matches!(self, Changes::Uncommitted | Changes::Unstaged)
    }
}

/// What `git` gave for a review.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Gathered {
    /// The whole diff, within [`MAX_DIFF_BYTES`]; `skipped` names untracked entries left out
    /// (symbolic links, nested repositories).
    Diff { text: String, skipped: Vec<String> },
    /// More than one review takes: `stat` is git's summary of the files, to narrow by.
    TooLarge { stat: String },
}

/// Why a diff could not be gathered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GitError {
    /// The user's input (not a repository, an unknown revision): what to fix.
    Input(String),
    /// git itself failed (missing, killed).
    Failed(String),
}

/// The diff of `changes` in the repository around `workspace`, limited to `pathspecs` (relative to
/// the workspace; none: the workspace itself).
pub(crate) fn gather(
    workspace: &Path,
    changes: &Changes,
    pathspecs: &[String],
) -> Result<Gathered, GitError> {
    let git = Git { cwd: workspace };
    git.capture(&["rev-parse", "--is-inside-work-tree"], 64)
        .map_err(|e| GitError::Input(format!("the workspace is not in a git work tree ({e})")))?;
    for rev in changes.revisions() {
        let verify = format!("{rev}^{{commit}}");
        git.capture(
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &verify,
            ],
            256,
        )
        .map_err(|_| GitError::Input(format!("changes: {rev:?} is not a commit here")))?;
    }
    let has_head = git
        .capture(&["rev-parse", "--verify", "--quiet", "HEAD"], 256)
        .is_ok();
    let specs: Vec<String> = if pathspecs.is_empty() {
        vec![":(literal).".into()]
    } else {
        pathspecs.iter().map(|p| format!(":(literal){p}")).collect()
    };
    let runs = runs(changes, has_head, &specs);
    let mut text = String::new();
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match git.capture(&args, MAX_DIFF_BYTES - text.len()) {
            Ok(out) => text.push_str(&out),
            Err(Capture::TooLarge) => return Ok(too_large(&git, &runs)),
            Err(e) => return Err(GitError::Failed(e.to_string())),
        }
    }
    let mut skipped = Vec::new();
    if changes.with_untracked() {
        let listed = git
            .capture(
                &[
                    &["ls-files", "--others", "--exclude-standard", "-z", "--"][..],
                    &specs.iter().map(String::as_str).collect::<Vec<_>>(),
                ]
                .concat(),
                MAX_DIFF_BYTES,
            )
            .map_err(|e| GitError::Failed(e.to_string()))?;
        let files: Vec<&str> = listed.split('\0').filter(|f| !f.is_empty()).collect();
        if files.len() > MAX_UNTRACKED {
            return Ok(too_large(&git, &runs));
        }
        for file in files {
            let meta = std::fs::symlink_metadata(workspace.join(file));
            if !meta.is_ok_and(|m| m.is_file()) {
                skipped.push(file.to_owned());
                continue;
            }
            let args = [
                "diff",
                "--no-index",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--",
                "/dev/null",
                file,
            ];
            match git.capture_diff(&args, MAX_DIFF_BYTES - text.len()) {
                Ok(out) => text.push_str(&out),
                Err(Capture::TooLarge) => return Ok(too_large(&git, &runs)),
                Err(e) => return Err(GitError::Failed(e.to_string())),
            }
        }
    }
    Ok(Gathered::Diff { text, skipped })
}

/// The git command lines whose output, in order, is the diff of `changes` limited to `specs`.
fn runs(changes: &Changes, has_head: bool, specs: &[String]) -> Vec<Vec<String>> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    let diff = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"]
            .iter()
            .chain(args)
            .map(|s| (*s).to_owned())
            .collect();
        v.push("--".into());
        v.extend(specs.iter().cloned());
        v
    };
    match changes {
        Changes::Uncommitted if has_head => runs.push(diff(&["HEAD"])),
        Changes::Uncommitted => {
            runs.push(diff(&["--cached"]));
            runs.push(diff(&[]));
        }
        Changes::Staged => runs.push(diff(&["--cached"])),
        Changes::Unstaged => runs.push(diff(&[])),
        Changes::Range(r) => runs.push(diff(&[r.as_str()])),
        Changes::Commit(c) => {
            let mut v: Vec<String> = ["diff-tree", "-p", "-r", "-M", "--root", "--no-commit-id"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            v.extend(["--end-of-options".into(), c.clone(), "--".into()]);
            v.extend(specs.iter().cloned());
            runs.push(v);
        }
    }
    runs
}

/// The answer for a diff past the bound: git's `--stat` of the same runs, itself bounded.
fn too_large(git: &Git<'_>, runs: &[Vec<String>]) -> Gathered {
    let mut stat = String::new();
    for args in runs {
        let mut args: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| *a != "-p")
            .collect();
        args.insert(1, "--stat=100");
        args.insert(2, "--stat-count=30");
        if let Ok(out) = git.capture(&args, 8 * 1024) {
            stat.push_str(&out);
        }
    }
    Gathered::TooLarge { stat }
}

/// Why one git run gave no output.
#[derive(Debug)]
enum Capture {
    /// Its output passed the bound (the process was killed).
    TooLarge,
    /// It could not start, or exited with a failure: its stderr's first line.
    Failed(String),
}

impl std::fmt::Display for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capture::TooLarge => f.write_str("output too large"),
            Capture::Failed(why) => f.write_str(why),
        }
    }
}

/// git in one directory, with the repository's programs kept from running.
struct Git<'a> {
    cwd: &'a Path,
}

impl Git<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        // A repository's own config must not start programs on a read: no fsmonitor hook, no
        // pager; quoted paths off so names read as they are.
        cmd.args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.quotepath=off",
            "-c",
            "diff.noprefix=false",
        ])
        .args(args)
        .current_dir(self.cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_EXTERNAL_DIFF",
            "GIT_CONFIG_PARAMETERS",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs git, its stdout read up to `limit` bytes; exit 0 only.
    fn capture(&self, args: &[&str], limit: usize) -> Result<String, Capture> {
        self.run(args, limit, false)
    }

    /// As [`Git::capture`], for `diff --no-index`, whose exit 1 means "the files differ".
    fn capture_diff(&self, args: &[&str], limit: usize) -> Result<String, Capture> {
        self.run(args, limit, true)
    }

    fn run(&self, args: &[&str], limit: usize, differ_ok: bool) -> Result<String, Capture> {
        let mut child = self
            .command(args)
            .spawn()
            .map_err(|e| Capture::Failed(format!("git could not start: {e}")))?;
        // stderr drains on its own thread, so a chatty git never blocks on a full pipe.
        let stderr = child.stderr.take().map(|stderr| {
            std::thread::spawn(move || {
                let mut err = Vec::new();
                let mut stderr = stderr;
                let _ = (&mut stderr).take(4096).read_to_end(&mut err);
                let _ = std::io::copy(&mut stderr, &mut std::io::sink());
                err
            })
        });
        let mut out = Vec::new();
        let read = child.stdout.take().map_or(Ok(0), |stdout| {
            stdout.take(limit as u64 + 1).read_to_end(&mut out)
        });
        if out.len() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Capture::TooLarge);
        }
        let status = child
            .wait()
            .map_err(|e| Capture::Failed(format!("git: {e}")))?;
        read.map_err(|e| Capture::Failed(format!("git: {e}")))?;
        let ok = status.success() || (differ_ok && status.code() == Some(1));
        if !ok {
            let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
            let first = String::from_utf8_lossy(&err);
            let first = first.lines().next().unwrap_or("").trim();
            return Err(Capture::Failed(if first.is_empty() {
                format!("git exited with {status}")
            } else {
                first.to_owned()
            }));
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// `path` (canonical) as a pathspec relative to `workspace` (canonical): `None` when outside it.
pub(crate) fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rel: PathBuf = path.strip_prefix(workspace).ok()?.to_path_buf();
    let s = rel.to_string_lossy().replace('\\', "/");
    Some(if s.is_empty() { ".".into() } else { s })
}
