//! Finding the program to execute for the Gemini CLI without a shell: `GEMINI_CLI_BIN` or `gemini`
//! on PATH, with npm's Windows shims (`.cmd`/`.ps1`) resolved to `node` plus the JS entry.
//!
//! Everything here is plain code over paths and strings, parameterised by [`Platform`], so the
//! Windows rules are unit-tested on Linux; only [`resolve_on_host`] looks at the host.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::config::settings::GEMINI_CLI_BIN as BIN;

/// The program name looked up when `GEMINI_CLI_BIN` is unset.
pub(crate) const DEFAULT_PROGRAM: &str = "gemini";
/// Windows' own default when `PATHEXT` is unset.
pub(crate) const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC";
/// Shims are a few hundred bytes; a bigger "shim" is something else and is not read whole.
const MAX_SHIM_BYTES: u64 = 64 * 1024;
/// How to spell the fix in every not-found message.
fn fix() -> String {
    format!(
        "install the CLI (`npm install -g @google/gemini-cli`) or set {} to the absolute path of \
         the `gemini` executable or of its JavaScript entry \
         (`<npm root -g>/@google/gemini-cli/bundle/gemini.js`)",
        BIN.name
    )
}

/// Whose lookup rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Platform {
    /// `:`-separated PATH, no extensions, any file is run directly.
    Unix,
    /// `;`-separated PATH, PATHEXT, and `.cmd`/`.bat`/`.ps1` never run (they need a shell).
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub(crate) fn current() -> Self {
        if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Unix
        }
    }
}

/// What to spawn: `program` with `prefix_args` before the server's own flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// An absolute path (or a path as the user gave it in `GEMINI_CLI_BIN`, made absolute).
    pub program: PathBuf,
    /// Arguments that come first: the JS entry when `program` is node, otherwise empty.
    pub prefix_args: Vec<OsString>,
    /// How it was found, for diagnostics (`GEMINI_CLI_BIN=…`, `PATH: …`, `npm .cmd shim …`).
    pub via: String,
}

/// Why no program could be chosen. Each message ends with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResolveError {
    /// Nothing to run where we looked.
    #[error("Gemini CLI not found: {detail}; {}", fix())]
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
        "{path} cannot be run without a shell ({reason}); set {bin} to the CLI's \
         JavaScript entry (`<npm root -g>\\@google\\gemini-cli\\bundle\\gemini.js`) or to an \
         executable",
        bin = BIN.name
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
    pub(crate) fn exit_code(&self) -> i32 {
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
pub(crate) fn resolve(
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
                        "{}={} is not an existing file{}",
                        BIN.name,
                        given.display(),
                        unexpanded_hint(bin)
                    ),
                })?;
            lookup.launch(file, format!("{}={}", BIN.name, given.display()))
        }
        Some(name) => {
            let file = lookup.search(name).ok_or_else(|| ResolveError::NotFound {
                detail: format!(
                    "{}={} is not on PATH ({})",
                    BIN.name,
                    name.to_string_lossy(),
                    lookup.describe_path()
                ),
            })?;
            let via = format!("{}={} on PATH", BIN.name, name.to_string_lossy());
            lookup.launch(file, via)
        }
        None => {
            let name = OsStr::new(DEFAULT_PROGRAM);
            let file = lookup.search(name).ok_or_else(|| ResolveError::NotFound {
                detail: format!(
                    "no `{DEFAULT_PROGRAM}` on PATH ({}) and {} is not set",
                    lookup.describe_path(),
                    BIN.name
                ),
            })?;
            lookup.launch(file, "PATH".to_owned())
        }
    }
}

/// [`resolve`] with the configured `GEMINI_CLI_BIN` (flag or env) and this process's `PATH`,
/// `PATHEXT` and platform.
pub(crate) fn resolve_on_host(gemini_cli_bin: Option<&OsStr>) -> Result<Resolved, ResolveError> {
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
mod tests;
