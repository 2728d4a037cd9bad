//! Finding the program to execute for the Gemini CLI without a shell: `GEMINI_CLI_BIN` or `gemini`
//! on PATH, with npm's Windows shims (`.cmd`/`.ps1`) resolved to `node` plus the JS entry.
//!
//! Everything here is plain code over paths and strings, parameterised by [`Platform`], so the
//! Windows rules are unit-tested on Linux; only [`resolve_on_host`] looks at the host.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The program name looked up when `GEMINI_CLI_BIN` is unset.
pub const DEFAULT_PROGRAM: &str = "gemini";
/// Windows' own default when `PATHEXT` is unset.
pub const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC";
/// Shims are a few hundred bytes; a bigger "shim" is something else and is not read whole.
const MAX_SHIM_BYTES: u64 = 64 * 1024;
/// How to spell the fix in every not-found message.
const FIX: &str = "install the CLI (`npm install -g @google/gemini-cli`) or set GEMINI_CLI_BIN to \
                   the absolute path of the `gemini` executable or of its JavaScript entry \
                   (`<npm root -g>/@google/gemini-cli/bundle/gemini.js`)";

/// Whose lookup rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// `:`-separated PATH, no extensions, any file is run directly.
    Unix,
    /// `;`-separated PATH, PATHEXT, and `.cmd`/`.bat`/`.ps1` never run (they need a shell).
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub fn current() -> Self {
        if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Unix
        }
    }
}

/// What to spawn: `program` with `prefix_args` before the server's own flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// An absolute path (or a path as the user gave it in `GEMINI_CLI_BIN`, made absolute).
    pub program: PathBuf,
    /// Arguments that come first: the JS entry when `program` is node, otherwise empty.
    pub prefix_args: Vec<OsString>,
    /// How it was found, for diagnostics (`GEMINI_CLI_BIN=…`, `PATH: …`, `npm .cmd shim …`).
    pub via: String,
}

/// Why no program could be chosen. Each message ends with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Nothing to run where we looked.
    #[error("Gemini CLI not found: {detail}; {FIX}")]
    NotFound {
        /// Where we looked.
        detail: String,
    },
    /// A JavaScript entry was found but no `node` to run it.
    #[error(
        "`node` not found on PATH, needed to run the Gemini CLI's JavaScript entry {entry}; \
         install Node.js 20 or later, or add its directory to PATH in the MCP client's `env` block"
    )]
    NodeNotFound {
        /// The entry that needs node.
        entry: PathBuf,
    },
    /// A file that only a shell could run, and that is not an npm shim we can see through.
    #[error(
        "{path} cannot be run without a shell ({reason}); set GEMINI_CLI_BIN to the CLI's \
         JavaScript entry (`<npm root -g>\\@google\\gemini-cli\\bundle\\gemini.js`) or to an \
         executable"
    )]
    NeedsShell {
        /// The file found.
        path: PathBuf,
        /// What it is and why it was refused.
        reason: String,
    },
}

impl ResolveError {
    /// The shell-style exit code the server reports: 127 for "not found", 126 for "found but
    /// cannot be executed".
    pub fn exit_code(&self) -> i32 {
        match self {
            ResolveError::NotFound { .. } | ResolveError::NodeNotFound { .. } => 127,
            ResolveError::NeedsShell { .. } => 126,
        }
    }
}

/// Chooses the program for `GEMINI_CLI_BIN` (`gemini_cli_bin`), `PATH` and `PATHEXT` under
/// `platform`'s rules.
///
/// - `GEMINI_CLI_BIN` containing a path separator is a file path (relative ones are taken from the
///   current directory); a bare name is looked up on PATH; unset or empty means `gemini` on PATH.
/// - A `.js`/`.cjs`/`.mjs` file runs as `node <entry>`, with `node` from PATH, on both platforms.
/// - Windows: PATH entries are tried in order and, in each, the name with every PATHEXT extension
///   and then `.ps1`; empty and quoted entries are handled as Windows does, except that the current
///   directory is never searched. An npm `.cmd`/`.bat` or `.ps1` shim becomes node (the `node.exe`
///   next to the shim if there is one, as the shim itself prefers) plus the entry the shim names.
///   Any other batch or script file is refused: it would need a shell.
pub fn resolve(
    gemini_cli_bin: Option<&OsStr>,
    path: Option<&OsStr>,
    pathext: Option<&OsStr>,
    platform: Platform,
) -> Result<Resolved, ResolveError> {
    let lookup = Lookup::new(path, pathext, platform);
    match gemini_cli_bin.filter(|bin| !bin.is_empty()) {
        Some(bin) if has_separator(bin, platform) => {
            let given = Path::new(bin);
            let file = lookup
                .existing(given)
                .ok_or_else(|| ResolveError::NotFound {
                    detail: format!(
                        "GEMINI_CLI_BIN={} is not an existing file{}",
                        given.display(),
                        unexpanded_hint(bin)
                    ),
                })?;
            lookup.launch(file, format!("GEMINI_CLI_BIN={}", given.display()))
        }
        Some(name) => {
            let file = lookup.search(name).ok_or_else(|| ResolveError::NotFound {
                detail: format!(
                    "GEMINI_CLI_BIN={} is not on PATH ({})",
                    name.to_string_lossy(),
                    lookup.describe_path()
                ),
            })?;
            let via = format!("GEMINI_CLI_BIN={} on PATH", name.to_string_lossy());
            lookup.launch(file, via)
        }
        None => {
            let name = OsStr::new(DEFAULT_PROGRAM);
            let file = lookup.search(name).ok_or_else(|| ResolveError::NotFound {
                detail: format!(
                    "no `{DEFAULT_PROGRAM}` on PATH ({}) and GEMINI_CLI_BIN is not set",
                    lookup.describe_path()
                ),
            })?;
            lookup.launch(file, "PATH".to_owned())
        }
    }
}

/// [`resolve`] with the configured `GEMINI_CLI_BIN` (flag or env) and this process's `PATH`,
/// `PATHEXT` and platform.
pub fn resolve_on_host(gemini_cli_bin: Option<&OsStr>) -> Result<Resolved, ResolveError> {
    resolve(
        gemini_cli_bin,
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("PATHEXT").as_deref(),
        Platform::current(),
    )
}

/// Nothing expands `~`, `$HOME` or `%APPDATA%` without a shell: say so when the value has them.
fn unexpanded_hint(bin: &OsStr) -> &'static str {
    let text = bin.to_string_lossy();
    if text.starts_with('~') || text.contains('$') || text.contains('%') {
        " (no shell runs here, so `~`, `$VAR` and `%VAR%` are not expanded: write the full path)"
    } else {
        ""
    }
}

fn has_separator(bin: &OsStr, platform: Platform) -> bool {
    let bytes = bin.as_encoded_bytes();
    match platform {
        Platform::Unix => bytes.contains(&b'/'),
        Platform::Windows => bytes.iter().any(|b| matches!(b, b'/' | b'\\' | b':')),
    }
}

/// Lowercase extension of `path`, if any.
fn extension(path: &Path) -> Option<String> {
    path.extension()
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
}

/// PATH and PATHEXT, split once.
struct Lookup {
    dirs: Vec<PathBuf>,
    /// Lowercase, with the dot: `.exe`. Empty on Unix.
    extensions: Vec<String>,
    platform: Platform,
}

impl Lookup {
    fn new(path: Option<&OsStr>, pathext: Option<&OsStr>, platform: Platform) -> Self {
        let separator = match platform {
            Platform::Unix => ':',
            Platform::Windows => ';',
        };
        let dirs = match path {
            None => Vec::new(),
            Some(path) => match path.to_str() {
                Some(text) => text
                    .split(separator)
                    // Windows allows a quoted entry (`"C:\Program Files\nodejs"`).
                    .map(|entry| entry.trim_matches('"'))
                    // An empty entry would mean the current directory: a planted `gemini` there
                    // must not win.
                    .filter(|entry| !entry.is_empty())
                    .map(PathBuf::from)
                    .collect(),
                // Not Unicode: only a Unix PATH can be, and the host's splitter is then right.
                None => std::env::split_paths(path)
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .collect(),
            },
        };
        let extensions = match platform {
            Platform::Unix => Vec::new(),
            Platform::Windows => {
                let pathext = pathext
                    .and_then(OsStr::to_str)
                    .filter(|text| !text.trim().is_empty())
                    .unwrap_or(DEFAULT_PATHEXT);
                let mut extensions: Vec<String> = pathext
                    .split(';')
                    .map(str::trim)
                    .filter(|ext| ext.starts_with('.') && ext.len() > 1)
                    .map(str::to_ascii_lowercase)
                    .collect();
                // Not in PATHEXT by default, but npm writes one next to every .cmd.
                if !extensions.iter().any(|ext| ext == ".ps1") {
                    extensions.push(".ps1".to_owned());
                }
                extensions
            }
        };
        Lookup {
            dirs,
            extensions,
            platform,
        }
    }

    fn describe_path(&self) -> String {
        if self.dirs.is_empty() {
            "PATH is empty or unset".to_owned()
        } else {
            format!("searched {} PATH directories", self.dirs.len())
        }
    }

    /// The names a file may have in one directory, in the order Windows tries them.
    fn candidates(&self, dir: &Path, name: &OsStr) -> Vec<PathBuf> {
        let plain = dir.join(name);
        match self.platform {
            Platform::Unix => vec![plain],
            Platform::Windows => {
                let mut out = Vec::with_capacity(self.extensions.len() + 1);
                // A name that already has an extension is tried as given first, as cmd.exe does.
                if Path::new(name).extension().is_some() {
                    out.push(plain.clone());
                }
                for ext in &self.extensions {
                    let mut with = plain.clone().into_os_string();
                    with.push(ext);
                    out.push(PathBuf::from(with));
                }
                out
            }
        }
    }

    /// `given` if it is a file, else (Windows, no extension) `given` plus a PATHEXT extension.
    fn existing(&self, given: &Path) -> Option<PathBuf> {
        if given.is_file() {
            return Some(given.to_path_buf());
        }
        if self.platform == Platform::Windows && given.extension().is_none() {
            let dir = given.parent().unwrap_or(Path::new(""));
            let name = given.file_name()?;
            return self
                .candidates(dir, name)
                .into_iter()
                .find(|candidate| candidate.is_file());
        }
        None
    }

    /// The first file called `name` (with Windows' extensions) in a PATH directory.
    fn search(&self, name: &OsStr) -> Option<PathBuf> {
        self.dirs
            .iter()
            .flat_map(|dir| self.candidates(dir, name))
            .find(|candidate| candidate.is_file())
    }

    /// `node` on PATH; on Windows only a real executable will do (a `node.cmd` would need a shell).
    fn node(&self) -> Option<PathBuf> {
        match self.platform {
            Platform::Unix => self.search(OsStr::new("node")),
            Platform::Windows => self
                .dirs
                .iter()
                .flat_map(|dir| [dir.join("node.exe"), dir.join("node.com")])
                .find(|candidate| candidate.is_file()),
        }
    }

    /// How to start `file`, found by `via`.
    fn launch(&self, file: PathBuf, via: String) -> Result<Resolved, ResolveError> {
        // A relative GEMINI_CLI_BIN or PATH entry means the server's current directory; say so
        // in the path itself rather than leave it to the spawn.
        let file = std::path::absolute(&file).unwrap_or(file);
        let ext = extension(&file);
        match (ext.as_deref(), self.platform) {
            (Some("js" | "cjs" | "mjs"), _) => {
                let node = self.node().ok_or_else(|| ResolveError::NodeNotFound {
                    entry: file.clone(),
                })?;
                Ok(Resolved {
                    via: format!(
                        "{via}: JavaScript entry {}, run with {}",
                        file.display(),
                        node.display()
                    ),
                    program: node,
                    prefix_args: vec![file.into_os_string()],
                })
            }
            (Some(kind @ ("cmd" | "bat" | "ps1")), Platform::Windows) => {
                let text = read_small(&file).map_err(|reason| ResolveError::NeedsShell {
                    path: file.clone(),
                    reason,
                })?;
                let parsed = if kind == "ps1" {
                    parse_ps1_shim(&text)
                } else {
                    parse_cmd_shim(&text)
                };
                let shim = parsed.map_err(|reason| ResolveError::NeedsShell {
                    path: file.clone(),
                    reason,
                })?;
                self.through_shim(&file, kind, shim, via)
            }
            (Some("vbs" | "vbe" | "jse" | "wsf" | "wsh" | "msc"), Platform::Windows) => {
                Err(ResolveError::NeedsShell {
                    path: file,
                    reason: "a Windows Script Host or console file".to_owned(),
                })
            }
            _ => Ok(Resolved {
                via: format!("{via}: {}", file.display()),
                program: file,
                prefix_args: Vec::new(),
            }),
        }
    }

    fn through_shim(
        &self,
        shim_path: &Path,
        kind: &str,
        shim: Shim,
        via: String,
    ) -> Result<Resolved, ResolveError> {
        let dir = shim_path.parent().unwrap_or(Path::new(""));
        let mut entry = dir.to_path_buf();
        entry.extend(&shim.entry);
        if !entry.is_file() {
            return Err(ResolveError::NotFound {
                detail: format!(
                    "the npm shim {} runs {}, which does not exist (a broken or partial install)",
                    shim_path.display(),
                    entry.display()
                ),
            });
        }
        // The shim runs the node.exe next to it when there is one, else node from PATH.
        let adjacent = dir.join("node.exe");
        let node = if adjacent.is_file() {
            adjacent
        } else {
            self.node().ok_or_else(|| ResolveError::NodeNotFound {
                entry: entry.clone(),
            })?
        };
        Ok(Resolved {
            via: format!(
                "{via}: npm .{kind} shim {} → {} {}",
                shim_path.display(),
                node.display(),
                entry.display()
            ),
            program: node,
            prefix_args: vec![entry.into_os_string()],
        })
    }
}

/// Reads a shim, refusing anything too large to be one.
fn read_small(path: &Path) -> Result<String, String> {
    let file = fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_SHIM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SHIM_BYTES {
        return Err("a batch or script file far larger than an npm shim".to_owned());
    }
    // Shims are ASCII apart from the path; a lossy read at worst spoils a path we then fail to find.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// What an npm shim runs: node with `entry`, a path relative to the shim's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shim {
    entry: Vec<String>,
}

/// Every `"…"` on a line, in order.
fn quoted(line: &str) -> impl Iterator<Item = &str> {
    line.split('"').skip(1).step_by(2)
}

/// Splits a shim-relative path (`\node_modules\@google\…`) into components, dropping empty ones.
fn components(relative: &str) -> Vec<String> {
    relative
        .split(['\\', '/'])
        .filter(|part| !part.is_empty() && *part != ".")
        .map(str::to_owned)
        .collect()
}

/// Parses an npm cmd-shim `.cmd`: the layout npm 7+ writes (`SET "_prog=node"` …
/// `"%_prog%"  "%dp0%\<entry>" %*`) and the npm 6 one (`node  "%~dp0\<entry>" %*`).
fn parse_cmd_shim(text: &str) -> Result<Shim, String> {
    let not_npm = || "a batch file that is not an npm shim for node".to_owned();
    // The interpreter the shim falls back to when no node.exe sits next to it.
    let interpreter = text
        .lines()
        .find_map(|line| {
            let line = line.trim().trim_start_matches('@');
            let value = line
                .strip_prefix("SET \"_prog=")
                .or_else(|| line.strip_prefix("set \"_prog="))?;
            let value = value.strip_suffix('"')?;
            (!value.contains("dp0")).then_some(value)
        })
        .or_else(|| {
            text.lines().find_map(|line| {
                let line = line.trim().trim_start_matches('@');
                let word = line.split_whitespace().next()?;
                (line.contains("dp0") && line.ends_with("%*") && !word.starts_with('"'))
                    .then_some(word)
            })
        })
        .ok_or_else(not_npm)?;
    if !interpreter.eq_ignore_ascii_case("node") {
        return Err(format!("an npm shim that runs `{interpreter}`, not node"));
    }
    let run_line = text
        .lines()
        .find(|line| line.trim_end().ends_with("%*") && line.contains("dp0"))
        .ok_or_else(not_npm)?;
    let entry = quoted(run_line)
        .filter_map(|token| {
            token
                .strip_prefix("%dp0%")
                .or_else(|| token.strip_prefix("%~dp0"))
        })
        .find(|rest| {
            !rest
                .trim_start_matches(['\\', '/'])
                .eq_ignore_ascii_case("node.exe")
        })
        .ok_or_else(not_npm)?;
    let entry = components(entry);
    if entry.is_empty() {
        return Err(not_npm());
    }
    Ok(Shim { entry })
}

/// Parses an npm cmd-shim `.ps1`: `& "node$exe"  "$basedir/<entry>" $args`.
fn parse_ps1_shim(text: &str) -> Result<Shim, String> {
    let not_npm = || "a PowerShell script that is not an npm shim for node".to_owned();
    let run_line = text
        .lines()
        .find(|line| line.contains('&') && line.trim_end().ends_with("$args"))
        .ok_or_else(not_npm)?;
    let mut tokens = quoted(run_line.split_once('&').map_or(run_line, |(_, rest)| rest));
    let program = tokens.next().ok_or_else(not_npm)?;
    let program = program
        .strip_prefix("$basedir/")
        .or_else(|| program.strip_prefix("$basedir\\"))
        .unwrap_or(program);
    let program = program.strip_suffix("$exe").unwrap_or(program);
    if !program.eq_ignore_ascii_case("node") {
        return Err(format!("an npm shim that runs `{program}`, not node"));
    }
    let entry = tokens
        .next()
        .and_then(|token| {
            token
                .strip_prefix("$basedir/")
                .or_else(|| token.strip_prefix("$basedir\\"))
        })
        .ok_or_else(not_npm)?;
    let entry = components(entry);
    if entry.is_empty() {
        return Err(not_npm());
    }
    Ok(Shim { entry })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use tempfile::TempDir;

    const NPM_CMD: &str = include_str!("../../tests/fixtures/shims/gemini.cmd");
    const NPM6_CMD: &str = include_str!("../../tests/fixtures/shims/gemini-npm6.cmd");
    const NPM_PS1: &str = include_str!("../../tests/fixtures/shims/gemini.ps1");
    const HANDWRITTEN_CMD: &str = include_str!("../../tests/fixtures/shims/handwritten.cmd");
    /// Where npm's shims say the CLI lives, relative to the shim.
    const ENTRY: &[&str] = &[
        "node_modules",
        "@google",
        "gemini-cli",
        "bundle",
        "gemini.js",
    ];

    /// A scratch tree of directories and files standing in for PATH entries.
    struct Tree(TempDir);

    impl Tree {
        /// An empty tree.
        fn new() -> Self {
            Tree(tempfile::tempdir().expect("temp dir"))
        }

        /// Writes `contents` at `relative`, creating directories; returns the absolute path.
        fn file(&self, relative: &str, contents: &str) -> PathBuf {
            let path = self.0.path().join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, contents).unwrap();
            path
        }

        /// Creates and returns the directory at `relative`.
        fn dir(&self, relative: &str) -> PathBuf {
            let path = self.0.path().join(relative);
            fs::create_dir_all(&path).unwrap();
            path
        }

        /// `dirs` joined as `platform` joins PATH.
        fn path(&self, platform: Platform, dirs: &[&str]) -> OsString {
            let separator = if platform == Platform::Windows {
                ";"
            } else {
                ":"
            };
            let joined: Vec<String> = dirs
                .iter()
                .map(|d| self.dir(d).to_string_lossy().into_owned())
                .collect();
            OsString::from(joined.join(separator))
        }

        /// An npm global prefix on Windows: the shims and the entry they point at.
        fn npm_prefix(&self, dir: &str) -> PathBuf {
            self.file(&format!("{dir}/gemini.cmd"), NPM_CMD);
            self.file(&format!("{dir}/gemini.ps1"), NPM_PS1);
            self.file(
                &format!("{dir}/gemini"),
                "#!/bin/sh\n# the shim for Git Bash\n",
            );
            self.file(&format!("{dir}/{}", ENTRY.join("/")), "// the CLI\n")
        }
    }

    fn win(bin: Option<&OsStr>, path: &OsStr) -> Result<Resolved, ResolveError> {
        resolve(bin, Some(path), None, Platform::Windows)
    }

    #[test]
    fn unix_finds_gemini_on_path_in_order() {
        let tree = Tree::new();
        let second = tree.file("b/gemini", "");
        tree.dir("a");
        let path = tree.path(Platform::Unix, &["a", "b"]);
        let resolved = resolve(None, Some(&path), None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, second);
        assert!(resolved.prefix_args.is_empty());
        assert!(resolved.via.starts_with("PATH"), "{}", resolved.via);

        let first = tree.file("a/gemini", "");
        assert_eq!(
            resolve(None, Some(&path), None, Platform::Unix)
                .unwrap()
                .program,
            first
        );
    }

    #[test]
    fn unix_skips_directories_named_gemini_and_empty_entries() {
        let tree = Tree::new();
        tree.dir("a/gemini");
        let real = tree.file("b/gemini", "");
        let path = format!("::{}::{}", tree.dir("a").display(), tree.dir("b").display());
        let resolved = resolve(None, Some(OsStr::new(&path)), None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, real);
    }

    #[rstest]
    #[case(None)]
    #[case(Some(""))]
    fn unset_or_empty_bin_means_gemini_on_path(#[case] bin: Option<&str>) {
        let tree = Tree::new();
        let gemini = tree.file("bin/gemini", "");
        let path = tree.path(Platform::Unix, &["bin"]);
        let resolved = resolve(bin.map(OsStr::new), Some(&path), None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, gemini);
    }

    #[rstest]
    #[case(Platform::Unix)]
    #[case(Platform::Windows)]
    fn not_found_is_127_and_names_the_fix(#[case] platform: Platform) {
        let tree = Tree::new();
        let path = tree.path(platform, &["empty"]);
        let err = resolve(None, Some(&path), None, platform).unwrap_err();
        assert!(matches!(err, ResolveError::NotFound { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 127);
        assert!(err.to_string().contains("set GEMINI_CLI_BIN"), "{err}");
        let err = resolve(None, None, None, platform).unwrap_err();
        assert!(err.to_string().contains("PATH is empty or unset"), "{err}");
    }

    #[test]
    fn gemini_cli_bin_as_an_absolute_path_wins_over_path() {
        let tree = Tree::new();
        tree.file("bin/gemini", "");
        let chosen = tree.file("custom/my-gemini", "");
        let path = tree.path(Platform::Unix, &["bin"]);
        let resolved =
            resolve(Some(chosen.as_os_str()), Some(&path), None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, chosen);
        assert!(
            resolved.via.starts_with("GEMINI_CLI_BIN="),
            "{}",
            resolved.via
        );
    }

    #[test]
    fn gemini_cli_bin_relative_path_is_made_absolute() {
        let tree = Tree::new();
        let file = tree.file("rel/gemini", "");
        let cwd = std::env::current_dir().unwrap();
        // A relative spelling of the same file, from the test's working directory.
        let up = cwd.components().count() - 1;
        let relative = PathBuf::from("../".repeat(up)).join(file.strip_prefix("/").unwrap());
        let resolved = resolve(Some(relative.as_os_str()), None, None, Platform::Unix).unwrap();
        assert!(resolved.program.is_absolute());
        assert_eq!(
            fs::canonicalize(&resolved.program).unwrap(),
            fs::canonicalize(&file).unwrap()
        );
    }

    #[test]
    fn gemini_cli_bin_missing_file_is_not_found() {
        let tree = Tree::new();
        let missing = tree.dir("x").join("gemini");
        let err = resolve(Some(missing.as_os_str()), None, None, Platform::Unix).unwrap_err();
        assert_eq!(err.exit_code(), 127);
        assert!(err.to_string().contains("is not an existing file"), "{err}");
    }

    #[rstest]
    #[case("~/bin/gemini")]
    #[case("$HOME/bin/gemini")]
    #[case("%APPDATA%/npm/gemini.cmd")]
    fn shell_syntax_in_gemini_cli_bin_gets_a_hint(#[case] bin: &str) {
        let err = resolve(Some(OsStr::new(bin)), None, None, Platform::Unix).unwrap_err();
        assert!(err.to_string().contains("not expanded"), "{err}");
    }

    #[test]
    fn gemini_cli_bin_bare_name_is_looked_up_on_path() {
        let tree = Tree::new();
        let other = tree.file("bin/gemini-nightly", "");
        let path = tree.path(Platform::Unix, &["bin"]);
        let name = OsStr::new("gemini-nightly");
        let resolved = resolve(Some(name), Some(&path), None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, other);
        let err = resolve(Some(OsStr::new("nope")), Some(&path), None, Platform::Unix).unwrap_err();
        assert!(
            err.to_string()
                .contains("GEMINI_CLI_BIN=nope is not on PATH"),
            "{err}"
        );
    }

    #[rstest]
    #[case(Platform::Unix, "gemini.js", "node")]
    #[case(Platform::Unix, "gemini.mjs", "node")]
    #[case(Platform::Unix, "gemini.cjs", "node")]
    #[case(Platform::Windows, "gemini.js", "node.exe")]
    #[case(Platform::Windows, "GEMINI.MJS", "node.exe")]
    fn a_javascript_entry_runs_with_node_from_path(
        #[case] platform: Platform,
        #[case] entry_name: &str,
        #[case] node_name: &str,
    ) {
        let tree = Tree::new();
        let entry = tree.file(&format!("cli/{entry_name}"), "");
        let node = tree.file(&format!("nodejs/{node_name}"), "");
        let path = tree.path(platform, &["nodejs"]);
        let resolved = resolve(Some(entry.as_os_str()), Some(&path), None, platform).unwrap();
        assert_eq!(resolved.program, node);
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    }

    #[rstest]
    #[case(Platform::Unix)]
    #[case(Platform::Windows)]
    fn a_javascript_entry_without_node_says_so(#[case] platform: Platform) {
        let tree = Tree::new();
        let entry = tree.file("cli/gemini.js", "");
        let path = tree.path(platform, &["empty"]);
        let err = resolve(Some(entry.as_os_str()), Some(&path), None, platform).unwrap_err();
        assert_eq!(err, ResolveError::NodeNotFound { entry });
        assert_eq!(err.exit_code(), 127);
        assert!(err.to_string().contains("Node.js"), "{err}");
    }

    #[test]
    fn windows_never_takes_a_node_cmd_for_node() {
        let tree = Tree::new();
        let entry = tree.file("cli/gemini.js", "");
        tree.file("shims/node.cmd", "@node.exe %*\r\n");
        let real = tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["shims", "nodejs"]);
        let resolved = win(Some(entry.as_os_str()), &path).unwrap();
        assert_eq!(resolved.program, real);
    }

    #[test]
    fn windows_resolves_the_npm_cmd_shim_to_node_and_the_entry() {
        let tree = Tree::new();
        let entry = tree.npm_prefix("npm");
        let node = tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["nodejs", "npm"]);
        let resolved = win(None, &path).unwrap();
        assert_eq!(resolved.program, node);
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
        assert!(resolved.via.contains("npm .cmd shim"), "{}", resolved.via);
    }

    #[test]
    fn windows_prefers_the_node_exe_next_to_the_shim_as_the_shim_does() {
        let tree = Tree::new();
        let entry = tree.npm_prefix("npm");
        let adjacent = tree.file("npm/node.exe", "");
        tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["nodejs", "npm"]);
        let resolved = win(None, &path).unwrap();
        // nodejs/ comes first on PATH, but holds no gemini; npm/ holds both.
        assert_eq!(resolved.program, adjacent);
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    }

    #[test]
    fn windows_uses_the_ps1_shim_when_there_is_no_cmd() {
        let tree = Tree::new();
        let entry = tree.npm_prefix("npm");
        fs::remove_file(tree.0.path().join("npm/gemini.cmd")).unwrap();
        let node = tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
        let resolved = win(None, &path).unwrap();
        assert_eq!(resolved.program, node);
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
        assert!(resolved.via.contains("npm .ps1 shim"), "{}", resolved.via);
    }

    #[test]
    fn windows_follows_pathext_order_and_path_order() {
        let tree = Tree::new();
        tree.npm_prefix("npm");
        tree.file("nodejs/node.exe", "");
        let exe = tree.file("tools/gemini.exe", "");
        // .EXE comes before .CMD in PATHEXT, but PATH order comes first.
        let path = tree.path(Platform::Windows, &["npm", "tools", "nodejs"]);
        assert!(win(None, &path).unwrap().via.contains(".cmd shim"));
        let path = tree.path(Platform::Windows, &["tools", "npm", "nodejs"]);
        assert_eq!(win(None, &path).unwrap().program, exe);
        // Within one directory PATHEXT decides.
        let both = tree.file("npm/gemini.exe", "");
        let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
        assert_eq!(win(None, &path).unwrap().program, both);
        let cmd_first = OsStr::new(".CMD;.EXE");
        let resolved = resolve(None, Some(&path), Some(cmd_first), Platform::Windows).unwrap();
        assert!(resolved.via.contains(".cmd shim"), "{}", resolved.via);
    }

    #[test]
    fn windows_never_runs_the_extensionless_sh_shim() {
        let tree = Tree::new();
        tree.file("npm/gemini", "#!/bin/sh\n");
        let path = tree.path(Platform::Windows, &["npm"]);
        assert!(matches!(
            win(None, &path),
            Err(ResolveError::NotFound { .. })
        ));
    }

    #[test]
    fn windows_handles_quoted_and_empty_path_entries() {
        let tree = Tree::new();
        let exe = tree.file("Program Files/Gemini/gemini.exe", "");
        let path = format!(";\"{}\";", exe.parent().unwrap().display());
        assert_eq!(win(None, OsStr::new(&path)).unwrap().program, exe);
    }

    #[test]
    fn windows_gemini_cli_bin_without_extension_gets_pathext() {
        let tree = Tree::new();
        let entry = tree.npm_prefix("npm");
        tree.file("nodejs/node.exe", "");
        fs::remove_file(tree.0.path().join("npm/gemini")).unwrap();
        let path = tree.path(Platform::Windows, &["nodejs"]);
        let bin = tree.0.path().join("npm").join("gemini");
        let resolved = win(Some(bin.as_os_str()), &path).unwrap();
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    }

    #[test]
    fn windows_gemini_cli_bin_pointing_at_the_cmd_shim_is_seen_through() {
        let tree = Tree::new();
        let entry = tree.npm_prefix("npm");
        let node = tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["nodejs"]);
        let shim = tree.0.path().join("npm/gemini.cmd");
        let resolved = win(Some(shim.as_os_str()), &path).unwrap();
        assert_eq!(resolved.program, node);
        assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    }

    #[rstest]
    #[case("gemini.cmd", HANDWRITTEN_CMD)]
    #[case("gemini.bat", "@echo off\r\ngemini-real.exe %*\r\n")]
    #[case("gemini.ps1", "Write-Host hello\n")]
    #[case("gemini.vbs", "WScript.Echo 1\n")]
    fn windows_refuses_files_that_need_a_shell(#[case] name: &str, #[case] text: &str) {
        let tree = Tree::new();
        tree.file(&format!("bin/{name}"), text);
        tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["bin", "nodejs"]);
        let err = win(None, &path).unwrap_err();
        assert!(matches!(err, ResolveError::NeedsShell { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 126);
        assert!(err.to_string().contains("GEMINI_CLI_BIN"), "{err}");
    }

    #[test]
    fn windows_reports_a_shim_whose_entry_is_missing() {
        let tree = Tree::new();
        tree.file("npm/gemini.cmd", NPM_CMD);
        tree.file("nodejs/node.exe", "");
        let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
        let err = win(None, &path).unwrap_err();
        assert!(matches!(err, ResolveError::NotFound { .. }), "{err:?}");
        assert!(
            err.to_string().contains("broken or partial install"),
            "{err}"
        );
    }

    #[test]
    fn unix_runs_a_cmd_file_like_any_other_file() {
        // Not a Windows shim there; running it directly gives the honest exec error.
        let tree = Tree::new();
        let file = tree.file("bin/gemini.cmd", NPM_CMD);
        let resolved = resolve(Some(file.as_os_str()), None, None, Platform::Unix).unwrap();
        assert_eq!(resolved.program, file);
    }

    #[rstest]
    #[case::npm7(NPM_CMD)]
    #[case::npm6(NPM6_CMD)]
    #[case::lf_endings(&NPM_CMD.replace("\r\n", "\n"))]
    fn cmd_shims_name_their_entry(#[case] text: &str) {
        assert_eq!(parse_cmd_shim(text).unwrap().entry, ENTRY);
    }

    #[test]
    fn ps1_shim_names_its_entry() {
        assert_eq!(parse_ps1_shim(NPM_PS1).unwrap().entry, ENTRY);
    }

    #[rstest]
    #[case(HANDWRITTEN_CMD, "not an npm shim")]
    #[case("", "not an npm shim")]
    #[case(&NPM_CMD.replace("_prog=node", "_prog=sh").replace("node.exe", "sh.exe"), "runs `sh`")]
    fn other_batch_files_are_not_shims(#[case] text: &str, #[case] reason: &str) {
        let err = parse_cmd_shim(text).unwrap_err();
        assert!(err.contains(reason), "{err}");
    }

    #[test]
    fn a_ps1_shim_for_another_interpreter_is_refused() {
        let text = NPM_PS1.replace("node$exe", "deno$exe");
        assert!(parse_ps1_shim(&text).unwrap_err().contains("runs `deno`"));
    }

    #[test]
    fn an_oversized_shim_is_not_read_whole() {
        let tree = Tree::new();
        let big = tree.file("bin/gemini.cmd", &"REM padding\r\n".repeat(10_000));
        assert!(read_small(&big)
            .unwrap_err()
            .contains("larger than an npm shim"));
    }

    #[test]
    fn resolve_on_host_uses_this_process() {
        // Whatever the host has, the call must not panic and errors must carry the fix.
        if let Err(err) = resolve_on_host(std::env::var_os("GEMINI_CLI_BIN").as_deref()) {
            assert!(err.to_string().contains("GEMINI_CLI_BIN"), "{err}");
        }
    }

    #[test]
    fn current_platform_matches_the_build() {
        assert_eq!(Platform::current() == Platform::Windows, cfg!(windows));
    }
}
