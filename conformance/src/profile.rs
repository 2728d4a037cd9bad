//! Target profiles: how a wrapper under test learns where the gemini executable is, and how the
//! suite's abstract tool, argument and setting names map to the wrapper's own. The built-in profile
//! is geminicli-mcp's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The suite's abstract tool names; cases use these and the profile maps them.
pub const ABSTRACT_TOOLS: &[&str] = &[
    "prompt",
    "prompt_with_context",
    "prompt_structured",
    // Opt-in tools a target may offer; cases calling them skip where unmapped.
    "list_sessions",
    "delete_session",
    "list_models",
];

/// The suite's abstract argument names every wrapper is assumed to spell the same way unless its
/// profile maps them.
pub const CORE_ARGUMENTS: &[&str] = &["prompt", "context", "schema", "model"];

/// The suite's abstract argument names: the core ones, then arguments geminicli-mcp has that a
/// wrapper may lack; a case passing one of those is skipped unless the profile maps it.
pub const ABSTRACT_ARGUMENTS: &[&str] = &[
    "prompt",
    "context",
    "schema",
    "model",
    "session_id",
    "workspace",
    "save_file",
    "approval_mode",
    "permission",
    "include_directories",
    "sandbox",
    "allowed_mcp_server_names",
    "timeout_inactivity_ms",
    "timeout_first_content_ms",
    "timeout_total_ms",
    "image_paths",
    "debug",
    "task_note",
    "full_output",
    "repair",
    "idempotency_key",
];

/// The suite's abstract target settings (the values are strings, as env vars are).
pub const ABSTRACT_SETTINGS: &[&str] = &[
    "max-output-bytes",
    "kill-grace-ms",
    "eof-grace-ms",
    "max-concurrency",
    "heartbeat-ms",
    "result-budget-bytes",
    "debug",
    "env-policy",
    "env-pass",
];

/// Settings that only make cases faster (a short kill grace): a case applies them where the
/// profile maps them and runs without them elsewhere, its bounds being generous enough.
pub const SPEED_SETTINGS: &[&str] = &["kill-grace-ms"];

/// The first protocol revision without an `initialize` handshake: every request carries the
/// client's version, info and capabilities in its `_meta`, and the server sends no request to the
/// client.
pub const NO_INITIALIZE_ERA: &str = "2026-07-28";

/// Whether `version` belongs to the era without a handshake (versions are ISO dates, so they
/// compare as strings).
pub fn has_no_initialize(version: &str) -> bool {
    version >= NO_INITIALIZE_ERA
}

/// Where the answer sits in a successful result's text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerRule {
    /// The text block is the answer, exactly (geminicli-mcp).
    #[default]
    Exact,
    /// The answer is contained in one of the text blocks: the wrapper adds a header, a footer or
    /// more blocks around it.
    Contained,
}

/// How the target is told where the gemini executable is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GeminiLocation {
    /// An environment variable holding the executable's path (e.g. `GEMINI_CLI_BIN`).
    Env(String),
    /// `gemini` on `PATH`: the runner puts fake-gemini under that name in a temp dir it prepends.
    Path,
}

/// A target profile, loadable from TOML (`--profile FILE`).
///
/// ```toml
/// name = "my-wrapper"
/// gemini = { env = "MY_GEMINI" }        # or gemini = "path"
/// protocol-versions = ["2025-06-18"]
/// [tools]
/// prompt = "ask_gemini"
/// [arguments]
/// prompt = "question"
/// [settings]
/// max-output-bytes = "MY_WRAPPER_MAX_BYTES"
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Profile {
    /// A name for reports.
    pub name: String,
    /// How the target finds gemini.
    pub gemini: GeminiLocation,
    /// Protocol versions the target negotiates, oldest first; the newest one with an
    /// `initialize` handshake (before 2026-07-28) is used unless a case asks for another.
    pub protocol_versions: Vec<String>,
    /// Abstract tool name → the target's tool name; an unmapped tool skips the cases using it.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// Abstract argument name → the target's argument name (unmapped: the same name).
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
    /// Abstract setting → the env var the target reads it from; an unmapped setting skips the
    /// cases that need it.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Extra environment for the target in every case.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Arguments added to every `call` a case makes (by the target's own names, placeholders such
    /// as `{cwd}` allowed), for a target whose tools require arguments the suite does not know of;
    /// a case's own argument wins.
    #[serde(default)]
    pub call_arguments: BTreeMap<String, serde_json::Value>,
    /// Where the answer sits in a result's text (default `exact`).
    #[serde(default)]
    pub answer: AnswerRule,
    /// Capabilities the target claims beyond the core (e.g. `"structured-content"`,
    /// `"progress"`, `"process-group-kill"`); cases that `require` a missing one are skipped.
    #[serde(default)]
    pub features: Vec<String>,
}

impl Profile {
    /// The built-in profile of geminicli-mcp, the reference contract, on its one-shot backend (one
    /// CLI process per call, as the contract's own server runs them).
    pub fn geminicli_mcp() -> Profile {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        Profile {
            name: "geminicli-mcp".into(),
            gemini: GeminiLocation::Env("GEMINI_CLI_BIN".into()),
            protocol_versions: [
                "2024-11-05",
                "2025-03-26",
                "2025-06-18",
                "2025-11-25",
                NO_INITIALIZE_ERA,
            ]
            .map(String::from)
            .to_vec(),
            tools: map(&[
                ("prompt", "gemini_prompt"),
                ("prompt_with_context", "gemini_prompt_with_context"),
                ("prompt_structured", "gemini_prompt_structured"),
                ("list_sessions", "gemini_list_sessions"),
                ("delete_session", "gemini_delete_session"),
                ("list_models", "gemini_list_models"),
            ]),
            arguments: ABSTRACT_ARGUMENTS
                .iter()
                .map(|a| (a.to_string(), a.to_string()))
                .collect(),
            settings: map(&[
                ("max-output-bytes", "GEMINICLI_MCP_MAX_OUTPUT_BYTES"),
                ("kill-grace-ms", "GEMINICLI_MCP_KILL_GRACE_MS"),
                ("eof-grace-ms", "GEMINICLI_MCP_EOF_GRACE_MS"),
                ("max-concurrency", "GEMINICLI_MCP_MAX_CONCURRENCY"),
                ("heartbeat-ms", "GEMINICLI_MCP_HEARTBEAT_MS"),
                ("result-budget-bytes", "GEMINICLI_MCP_RESULT_BUDGET_BYTES"),
                ("debug", "GEMINICLI_MCP_DEBUG"),
                ("env-policy", "GEMINICLI_MCP_ENV"),
                ("env-pass", "GEMINICLI_MCP_ENV_PASS"),
            ]),
            // The contract's own run model, one CLI per call: the server's default is its warm
            // backend (`geminicli-mcp-acp`).
            env: BTreeMap::from([("GEMINICLI_MCP_BACKEND".to_string(), "oneshot".to_string())]),
            call_arguments: BTreeMap::new(),
            answer: AnswerRule::Exact,
            features: [
                "structured-content",
                "error-prefix",
                "prompt-on-stdin",
                "progress",
                "process-group-kill",
                "subreaper",
                "parent-death-signal",
                "no-orphans-after-kill",
                "eof-grace",
                "concurrency-bound",
                "log-notifications",
                "cancellation",
                "geminicli-mcp-env",
                "acp-tools",
                "headless-run",
                "tasks",
                "jobs",
                "ask",
                "prompts",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    /// geminicli-mcp with its warm backend answering the prompt tools
    /// (`GEMINICLI_MCP_BACKEND=acp`, its default): long-lived `gemini --acp` agents instead of one
    /// CLI per call.
    pub fn geminicli_mcp_acp() -> Profile {
        let mut p = Profile::geminicli_mcp();
        p.name = "geminicli-mcp-acp".into();
        p.env.insert("GEMINICLI_MCP_BACKEND".into(), "acp".into());
        p.features.push("warm-backend".into());
        p
    }

    /// A built-in profile by name: `geminicli-mcp`, `geminicli-mcp-acp`.
    pub fn builtin(name: &str) -> Option<Profile> {
        match name {
            "geminicli-mcp" => Some(Profile::geminicli_mcp()),
            "geminicli-mcp-acp" => Some(Profile::geminicli_mcp_acp()),
            _ => None,
        }
    }

    /// Reads a profile file (TOML).
    pub fn load(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read profile {}: {e}", path.display()))?;
        let profile: Profile =
            toml::from_str(&text).map_err(|e| format!("profile {}: {e}", path.display()))?;
        profile.validate()?;
        Ok(profile)
    }

    /// Checks that the profile only names abstract tools, arguments and settings the suite knows.
    pub fn validate(&self) -> Result<(), String> {
        for (kind, keys, known) in [
            (
                "tool",
                self.tools.keys().collect::<Vec<_>>(),
                ABSTRACT_TOOLS,
            ),
            (
                "argument",
                self.arguments.keys().collect(),
                ABSTRACT_ARGUMENTS,
            ),
            ("setting", self.settings.keys().collect(), ABSTRACT_SETTINGS),
        ] {
            if let Some(k) = keys.into_iter().find(|k| !known.contains(&k.as_str())) {
                return Err(format!(
                    "profile {}: unknown abstract {kind} {k:?} (known: {known:?})",
                    self.name
                ));
            }
        }
        if self.protocol_versions.is_empty() {
            return Err(format!("profile {}: protocol-versions is empty", self.name));
        }
        Ok(())
    }

    /// The protocol version used for the handshake when a case does not choose one: the newest
    /// listed one that has a handshake, so a case opts in to the era without one.
    pub fn default_protocol_version(&self) -> &str {
        self.protocol_versions
            .iter()
            .rev()
            .find(|v| !has_no_initialize(v))
            .map(String::as_str)
            .unwrap_or("2025-06-18")
    }

    /// The target's name for an abstract tool.
    pub fn tool(&self, abstract_name: &str) -> Option<&str> {
        self.tools.get(abstract_name).map(String::as_str)
    }

    /// Whether the target takes the abstract argument `name` (a core one, or one the profile maps).
    pub fn has_argument(&self, name: &str) -> bool {
        CORE_ARGUMENTS.contains(&name) || self.arguments.contains_key(name)
    }

    /// Whether the profile claims `feature`.
    pub fn claims(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }

    /// The target's name for an abstract argument.
    pub fn argument<'a>(&'a self, abstract_name: &'a str) -> &'a str {
        self.arguments
            .get(abstract_name)
            .map(String::as_str)
            .unwrap_or(abstract_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_is_valid_and_round_trips() {
        let p = Profile::geminicli_mcp();
        p.validate().unwrap();
        let text = toml::to_string(&p).unwrap();
        let back: Profile = toml::from_str(&text).unwrap();
        assert_eq!(back.tool("prompt"), Some("gemini_prompt"));
    }

    #[test]
    fn the_era_without_a_handshake_is_listed_but_never_the_default() {
        for p in [Profile::geminicli_mcp(), Profile::geminicli_mcp_acp()] {
            assert!(p.protocol_versions.iter().any(|v| v == NO_INITIALIZE_ERA));
            assert_eq!(p.default_protocol_version(), "2025-11-25");
        }
        assert!(has_no_initialize("2026-07-28"));
        assert!(!has_no_initialize("2025-11-25"));
    }

    #[test]
    fn path_mode_parses() {
        let p: Profile = toml::from_str(
            "name = \"x\"\ngemini = \"path\"\nprotocol-versions = [\"2025-06-18\"]\n[tools]\nprompt = \"ask\"\n",
        )
        .unwrap();
        assert_eq!(p.gemini, GeminiLocation::Path);
        assert_eq!(p.argument("prompt"), "prompt");
    }
}
