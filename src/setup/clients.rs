//! The MCP clients `setup` knows: where each keeps its configuration, how to tell it is installed,
//! and the entry it needs for this server.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::launch::Launch;

/// A client `setup` can register the server in, named as on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: user-scope servers in `~/.claude.json`.
    ClaudeCode,
    /// Codex: `~/.codex/config.toml` (or `$CODEX_HOME/config.toml`).
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json`.
    GeminiCli,
    /// Cursor: `~/.cursor/mcp.json`.
    Cursor,
    /// Claude Desktop: `claude_desktop_config.json` in the app's configuration folder.
    ClaudeDesktop,
    /// VS Code: the user profile's `mcp.json`.
    Vscode,
}

/// How a client's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, or JSONC where the client reads comments: one object of servers under `key`.
    Json { key: &'static str },
    /// Codex's TOML: one table under `[mcp_servers]`.
    Toml,
}

/// Where the user's files are: read from the process environment by [`Env::from_process`], given
/// directly by tests so they never touch the real home.
#[derive(Debug, Clone)]
pub struct Env {
    /// The user's home folder (`HOME`; `USERPROFILE` on Windows).
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME` (Linux: where VS Code and Claude Desktop keep their settings).
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows).
    pub appdata: Option<PathBuf>,
    /// `CODEX_HOME`: Codex's folder when not `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `PATH`, searched for the clients' commands.
    pub path: Option<OsString>,
    /// How this process was started, for the entry's command.
    pub launch: Launch,
}

impl Env {
    /// The environment of this process, `launcher` the npm launcher's path it was given
    /// ([`Launch::from_process`]); `None` when no home folder is set.
    pub fn from_process(launcher: Option<std::ffi::OsString>) -> Option<Self> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = if cfg!(windows) {
            var("USERPROFILE").or_else(|| var("HOME"))
        } else {
            var("HOME")
        }?;
        Some(Self {
            home: PathBuf::from(home),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            appdata: var("APPDATA").map(PathBuf::from),
            codex_home: var("CODEX_HOME").map(PathBuf::from),
            path: var("PATH"),
            launch: Launch::from_process(launcher),
        })
    }

    /// The folder desktop apps keep their settings in: `%APPDATA%` on Windows,
    /// `~/Library/Application Support` on macOS, `$XDG_CONFIG_HOME` or `~/.config` elsewhere.
    fn app_config_dir(&self) -> PathBuf {
        if cfg!(windows) {
            if let Some(dir) = &self.appdata {
                return dir.clone();
            }
            return self.home.join("AppData").join("Roaming");
        }
        if cfg!(target_os = "macos") {
            return self.home.join("Library").join("Application Support");
        }
        match &self.xdg_config_home {
            Some(dir) if dir.is_absolute() => dir.clone(),
            _ => self.home.join(".config"),
        }
    }

    /// Whether `command` is a file in one of `PATH`'s folders.
    fn on_path(&self, command: &str) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let names: Vec<String> = if cfg!(windows) {
            [".exe", ".cmd", ".bat", ""]
                .iter()
                .map(|ext| format!("{command}{ext}"))
                .collect()
        } else {
            vec![command.to_owned()]
        };
        std::env::split_paths(path).any(|dir| names.iter().any(|n| dir.join(n).is_file()))
    }
}

impl Client {
    /// Every client, in the order `setup` reports them.
    pub const ALL: [Client; 6] = [
        Client::ClaudeCode,
        Client::Codex,
        Client::GeminiCli,
        Client::Cursor,
        Client::ClaudeDesktop,
        Client::Vscode,
    ];

    /// The name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::GeminiCli => "gemini-cli",
            Client::Cursor => "cursor",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Vscode => "vscode",
        }
    }

    /// How the file is written.
    pub fn format(self) -> Format {
        match self {
            Client::Codex => Format::Toml,
            Client::Vscode => Format::Json { key: "servers" },
            _ => Format::Json { key: "mcpServers" },
        }
    }

    /// The folder whose presence shows the client is installed.
    fn config_dir(self, env: &Env) -> PathBuf {
        match self {
            Client::ClaudeCode => env.home.join(".claude"),
            Client::Codex => env
                .codex_home
                .clone()
                .unwrap_or_else(|| env.home.join(".codex")),
            Client::GeminiCli => env.home.join(".gemini"),
            Client::Cursor => env.home.join(".cursor"),
            Client::ClaudeDesktop => env.app_config_dir().join("Claude"),
            Client::Vscode => env.app_config_dir().join("Code").join("User"),
        }
    }

    /// The client's command, when it has one.
    fn command(self) -> Option<&'static str> {
        match self {
            Client::ClaudeCode => Some("claude"),
            Client::Codex => Some("codex"),
            Client::GeminiCli => Some("gemini"),
            Client::Cursor => Some("cursor"),
            Client::ClaudeDesktop => None,
            Client::Vscode => Some("code"),
        }
    }

    /// The configuration file `setup` edits.
    pub fn config_file(self, env: &Env) -> PathBuf {
        match self {
            // User scope lives beside `~/.claude`, not in it.
            Client::ClaudeCode => env.home.join(".claude.json"),
            Client::Codex => self.config_dir(env).join("config.toml"),
            Client::GeminiCli => self.config_dir(env).join("settings.json"),
            Client::Cursor | Client::Vscode => self.config_dir(env).join("mcp.json"),
            Client::ClaudeDesktop => self.config_dir(env).join("claude_desktop_config.json"),
        }
    }

    /// Why the client counts as installed (its folder, its file or its command), or `None`.
    pub fn installed(self, env: &Env) -> Option<String> {
        let dir = self.config_dir(env);
        if dir.is_dir() {
            return Some(dir.display().to_string());
        }
        let file = self.config_file(env);
        if file.exists() {
            return Some(file.display().to_string());
        }
        let command = self.command()?;
        env.on_path(command).then(|| format!("`{command}` on PATH"))
    }

    /// What was looked for when the client is not installed.
    pub fn looked_for(self, env: &Env) -> String {
        let dir = self.config_dir(env);
        match self.command() {
            Some(c) => format!("no {} and no `{c}` on PATH", dir.display()),
            None => format!("no {}", dir.display()),
        }
    }

    /// The entry this server needs. Secrets are passed by name, never by value.
    pub fn entry(self, launch: &Launch) -> Entry {
        let (command, args) = launch.command();
        let mut value = serde_json::Map::new();
        if matches!(self, Client::ClaudeCode | Client::Vscode) {
            value.insert("type".into(), json!("stdio"));
        }
        value.insert("command".into(), json!(command));
        if !args.is_empty() || self == Client::ClaudeCode {
            value.insert("args".into(), json!(args));
        }
        let keep: &'static [&'static str] = match self {
            // What `claude mcp add --scope user` writes. Claude Code gives a server its whole
            // environment, so the key needs no mention.
            Client::ClaudeCode => {
                value.insert("env".into(), json!({}));
                &["env"]
            }
            // Codex gives a server only a few variables plus those `env_vars` names; `codex exec`
            // refuses every call of a tool not read-only without the approval mode. Its default
            // tool timeout (300 s) is shorter than many Gemini runs.
            Client::Codex => {
                value.insert("default_tools_approval_mode".into(), json!("approve"));
                value.insert("env_vars".into(), json!(["GEMINI_API_KEY"]));
                value.insert("tool_timeout_sec".into(), json!(600));
                &["tool_timeout_sec"]
            }
            // The CLI strips variables that look like secrets from a server's environment and
            // expands `$NAME` in `env`. Headless, it declares only trusted servers' tools.
            Client::GeminiCli => {
                value.insert("env".into(), json!({"GEMINI_API_KEY": "$GEMINI_API_KEY"}));
                value.insert("trust".into(), json!(true));
                &["env"]
            }
            Client::Cursor | Client::ClaudeDesktop | Client::Vscode => &[],
        };
        Entry { value, keep }
    }

    /// The folder the client loads the user's Agent Skills from (`<dir>/<name>/SKILL.md`), for the
    /// clients that load skills. Measured, each listing the skills in the requests it sends its
    /// model: Claude Code 2.1.328 `~/.claude/skills`; Codex 0.169.0 `$CODEX_HOME/skills` (its own
    /// skill installer's folder; it also reads `~/.agents/skills`, which the Gemini CLI reads too,
    /// so a skill there would reach the Gemini CLI twice); the Gemini CLI 0.61.0 `~/.gemini/skills`.
    pub fn skills_dir(self, env: &Env) -> Option<PathBuf> {
        match self {
            Client::ClaudeCode | Client::Codex | Client::GeminiCli => {
                Some(self.config_dir(env).join("skills"))
            }
            Client::Cursor | Client::ClaudeDesktop | Client::Vscode => None,
        }
    }

    /// Something the user must still do, printed after the client's line.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Client::ClaudeDesktop => Some(
                "Claude Desktop starts servers without your shell's environment: add \
                 \"env\": {\"GEMINI_API_KEY\": \"…\"} to the entry yourself (setup never writes a \
                 secret), then restart Claude Desktop",
            ),
            Client::Cursor | Client::Vscode => Some(
                "the server gets the editor's environment: start the editor where GEMINI_API_KEY \
                 is set, or see docs/clients.md",
            ),
            _ => None,
        }
    }
}

/// The server's entry in one client, as a new entry holds it. Merged into an existing entry, its
/// keys get these values (objects merged key by key, so a user's other keys stay), except the
/// `keep` keys: there a value the user set wins, and only what is missing is added.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The whole entry, in the order a new one is written.
    pub value: serde_json::Map<String, Value>,
    /// Keys whose existing values stay (`env`: a user's own `GEMINI_API_KEY` setting; Codex's
    /// `tool_timeout_sec`).
    pub keep: &'static [&'static str],
}
