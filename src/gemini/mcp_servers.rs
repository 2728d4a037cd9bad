//! The MCP servers a Gemini CLI 0.61 started by the server would start itself: the `mcpServers`
//! of its settings layers (a name's entry taken from the highest layer that has it), of the
//! user's extensions and `mcp.serverCommand`, less those `mcp.allowed` and `mcp.excluded` keep
//! out; which of them are this server (by command, under any name); and the names the server
//! hands the CLI (`--allowed-mcp-server-names`) to leave some out.
//!
//! The CLI's own switches, as read in its 0.61 bundle and checked against it: `mcp.excluded`
//! keeps a server from starting, but only from a settings layer, and the one layer the server may
//! add (a system-defaults file) is read only as root; `--allowed-mcp-server-names` works for every
//! user, one-shot and `--acp` alike, and replaces both `mcp.allowed` and `mcp.excluded` (so the
//! server applies them to the names it hands); an empty value is refused (`Not enough arguments`
//! or a policy error), so "none" is a name no server has. A name handed also makes the CLI allow
//! that server's tools without asking outside `plan` mode, as the CLI's `mcp.allowed` does: the
//! server hands names only when it must leave a server out, never otherwise.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::gemini::settings::{self, LayerFile};

/// The name of this server's binary and packages.
pub(crate) const OURS: &str = "geminicli-mcp";

/// The name handed when no server may start: one no configured server has.
const NONE: &str = "geminicli-mcp-none";

/// Programs that start a package or a script named after their argument.
const LAUNCHERS: [&str; 16] = [
    "npx", "pnpx", "bunx", "uvx", "pipx", "npm", "pnpm", "yarn", "bun", "uv", "node", "deno",
    "python", "python3", "env", "cmd",
];

/// One server entry of the settings.
#[derive(Debug, Clone)]
pub(crate) struct Configured {
    /// Its name (the key of `mcpServers`).
    pub name: String,
    /// Its entry (`command`, `args`, `env`, `cwd`, `url`, `httpUrl`, `timeout`, …).
    pub entry: Map<String, Value>,
    /// The file it was read from.
    pub from: PathBuf,
}

/// The servers of the settings and the lists that decide which of them the CLI starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Servers {
    /// Every entry, one per name.
    pub configured: Vec<Configured>,
    /// `mcp.allowed` of every layer that sets it, intersected; `None` where none sets it.
    pub allowed: Option<Vec<String>>,
    /// `mcp.excluded` of every layer, together.
    pub excluded: Vec<String>,
}

/// The servers a CLI started in `workspace` with the environment `var` would find.
pub(crate) fn read(
    workspace: &Path,
    var: impl Fn(&str) -> Option<std::ffi::OsString> + Copy,
) -> Servers {
    let layers = settings::layers(workspace, var);
    let mut servers = of_layers(&layers);
    if let Some(user) = settings::user_settings_path(var) {
        if let Some(dir) = user.parent() {
            add_extensions(&mut servers, &dir.join("extensions"));
        }
    }
    servers
}

/// The servers of settings layers, highest first.
pub(crate) fn of_layers(layers: &[LayerFile]) -> Servers {
    let mut out = Servers::default();
    let mut allowed: Vec<Vec<String>> = Vec::new();
    for l in layers {
        let Ok(Some(s)) = &l.content else { continue };
        if let Some(Value::Object(map)) = s.get("mcpServers") {
            for (name, entry) in map {
                let (Value::Object(entry), false) = (entry, out.has(name)) else {
                    continue;
                };
                out.configured.push(Configured {
                    name: name.clone(),
                    entry: entry.clone(),
                    from: l.path.clone(),
                });
            }
        }
        let mcp = s.get("mcp");
        if let Some(cmd) = mcp
            .and_then(|m| m.get("serverCommand"))
            .and_then(Value::as_str)
        {
            if !out.has("mcp") {
                let mut words = cmd.split_whitespace().map(|w| Value::from(w.to_owned()));
                let mut entry = Map::new();
                entry.extend(words.next().map(|c| ("command".to_owned(), c)));
                entry.insert("args".into(), Value::Array(words.collect()));
                out.configured.push(Configured {
                    name: "mcp".into(),
                    entry,
                    from: l.path.clone(),
                });
            }
        }
        let names = |key: &str| -> Option<Vec<String>> {
            let list = mcp?.get(key)?.as_array()?;
            Some(
                list.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
            )
        };
        allowed.extend(names("allowed"));
        out.excluded.extend(names("excluded").unwrap_or_default());
    }
    out.allowed = allowed.into_iter().reduce(|acc, next| {
        let norm = |s: &str| s.trim().to_lowercase();
        acc.into_iter()
            .filter(|a| next.iter().any(|n| norm(n) == norm(a)))
            .collect()
    });
    out
}

/// The servers of the user's extensions (`<dir>/<extension>/gemini-extension.json`), after the
/// settings' own (a name the settings have keeps the settings' entry).
fn add_extensions(servers: &mut Servers, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join("gemini-extension.json"))
        .collect();
    files.sort();
    for file in files {
        let Ok(Some(manifest)) = settings::read(&file) else {
            continue;
        };
        let Some(Value::Object(map)) = manifest.get("mcpServers") else {
            continue;
        };
        for (name, entry) in map {
            if let (Value::Object(entry), false) = (entry, servers.has(name)) {
                servers.configured.push(Configured {
                    name: name.clone(),
                    entry: entry.clone(),
                    from: file.clone(),
                });
            }
        }
    }
}

impl Servers {
    fn has(&self, name: &str) -> bool {
        self.configured.iter().any(|c| c.name == name)
    }

    /// The entries the CLI starts when it is handed no names: those with a command or a URL that
    /// `mcp.allowed` lets in and `mcp.excluded` does not keep out.
    pub(crate) fn started(&self) -> impl Iterator<Item = &Configured> {
        self.configured.iter().filter(|c| {
            let e = &c.entry;
            let runnable = ["command", "url", "httpUrl"].iter().any(|k| {
                e.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty())
            });
            let allowed = self
                .allowed
                .as_ref()
                .is_none_or(|a| a.is_empty() || a.contains(&c.name));
            runnable && allowed && !self.excluded.contains(&c.name)
        })
    }

    /// The names of the entries that start this server.
    pub(crate) fn ours(&self) -> Vec<String> {
        self.started()
            .filter(|c| is_ours(&c.entry))
            .map(|c| c.name.clone())
            .collect()
    }

    /// What the CLI is handed so that it starts none of `leave_out` (this server's entries and
    /// servers found not to answer): `None` when nothing needs leaving out (the call's own names,
    /// if any, go as they are); otherwise the names it may start — the call's, or every server
    /// the CLI would start — without those, or a name no server has when none is left. A server
    /// whose name cannot be handed on the command line (see [`crate::names`]) is left out too.
    pub(crate) fn allowed_names(
        &self,
        call: &[String],
        leave_out: &[String],
    ) -> Option<Vec<String>> {
        let kept: Vec<String> = if call.is_empty() {
            let started: Vec<&str> = self.started().map(|c| c.name.as_str()).collect();
            if !started.iter().any(|n| leave_out.iter().any(|l| l == n)) {
                return None;
            }
            started
                .into_iter()
                .filter(|n| !leave_out.iter().any(|l| l == n))
                .filter(|n| crate::names::validate_server_name(n).is_ok())
                .map(String::from)
                .collect()
        } else {
            if !call.iter().any(|n| leave_out.contains(n)) {
                return None;
            }
            call.iter()
                .filter(|n| !leave_out.contains(n))
                .cloned()
                .collect()
        };
        if !kept.is_empty() {
            return Some(kept);
        }
        let mut none = NONE.to_owned();
        while self.has(&none) {
            none.push('_');
        }
        Some(vec![none])
    }
}

/// The file name of a command or path without its folder and its extension, lower case.
fn stem(word: &str) -> String {
    let base = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
        .to_lowercase();
    for ext in [".exe", ".cmd", ".bat", ".ps1", ".js", ".mjs", ".cjs"] {
        if let Some(s) = base.strip_suffix(ext) {
            return s.to_owned();
        }
    }
    base
}

/// A package argument without its version (`geminicli-mcp@1.2.0`, `geminicli-mcp==1.2.0`).
fn package(word: &str) -> String {
    let word = stem(word);
    let word = word.split("==").next().unwrap_or(&word).to_owned();
    match word.rfind('@') {
        Some(at) if at > 0 => word[..at].to_owned(),
        _ => word,
    }
}

/// Whether an entry starts this server: its command is the `geminicli-mcp` binary (or a copy of
/// this very executable), or a launcher (`npx`, `uvx`, `node`, `pipx run`, …) handed the
/// `geminicli-mcp` package or script.
pub(crate) fn is_ours(entry: &Map<String, Value>) -> bool {
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return false;
    };
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A command written as one string with its arguments (`"npx -y geminicli-mcp"`).
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let rest: Vec<&str> = words.chain(args.iter().copied()).collect();
    if stem(program) == OURS || same_file_as_this_executable(program) {
        return true;
    }
    LAUNCHERS.contains(&stem(program).as_str())
        && rest
            .iter()
            .filter(|a| !a.starts_with('-'))
            .any(|a| package(a) == OURS)
}

fn same_file_as_this_executable(program: &str) -> bool {
    let path = Path::new(program);
    if !path.is_absolute() {
        return false;
    }
    match (std::fs::canonicalize(path), std::env::current_exe()) {
        (Ok(a), Ok(b)) => std::fs::canonicalize(b).is_ok_and(|b| a == b),
        _ => false,
    }
}

/// Set in every CLI process the server starts (and so inherited by the MCP servers that CLI
/// starts, which the CLI 0.61 hands its own environment, secrets redacted): a server that finds
/// it in its own environment was started by a CLI another server runs.
pub(crate) const NESTED_MARK: &str = crate::gemini::inputs::env::RUN_MARK;

/// Why this server refuses to start Gemini runs and agents, when it was started by a Gemini CLI
/// that a geminicli-mcp server runs: a model would be calling itself through the server, each
/// level starting agents of its own.
pub(crate) fn nested(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<String> {
    let mark = var(NESTED_MARK).filter(|v| !v.is_empty())?;
    Some(format!(
        "this geminicli-mcp was started as an MCP server by a Gemini CLI that another geminicli-mcp runs ({NESTED_MARK}={} in its environment), so it starts no Gemini runs or agents: a model would be calling itself, each level starting agents of its own",
        mark.to_string_lossy()
    ))
}

#[cfg(test)]
mod tests;
