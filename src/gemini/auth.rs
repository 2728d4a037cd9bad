//! How a headless CLI 0.61 start picks its credentials, and what it will do with them: the
//! selected type of the highest settings layer that names one, else the one its environment
//! implies (`validateNonInteractiveAuth`, `getAuthTypeFromEnv`, `validateAuthMethod`). The doctor
//! predicts a call with it; a run that failed `auth_required` takes its fix from it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Failure};
use crate::gemini::process::RunSpec;
use crate::gemini::settings::{self, LayerFile};

/// A headless start's credentials, as far as they can be read without running the CLI.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// `security.auth.selectedType` of the highest layer that sets it, and that file.
    pub selected: Option<(String, PathBuf)>,
    /// `GOOGLE_GENAI_USE_GCA=true`.
    pub use_gca: bool,
    /// `GOOGLE_GENAI_USE_VERTEXAI=true`.
    pub use_vertex: bool,
    /// `GOOGLE_GEMINI_BASE_URL` is set (the CLI then implies its `gateway` type).
    pub base_url: bool,
    /// `GEMINI_API_KEY` is set.
    pub gemini_key: bool,
    /// `GOOGLE_API_KEY` is set.
    pub google_key: bool,
    /// `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION` are both set.
    pub vertex_project: bool,
    /// `CLOUD_SHELL=true` or `GEMINI_CLI_USE_COMPUTE_ADC=true`.
    pub compute_adc: bool,
    /// The cached Google login, `~/.gemini/oauth_creds.json`, when it exists.
    pub cached_login: Option<PathBuf>,
    /// The user's settings file, where a type can be selected when no file selects one.
    pub user_settings: Option<PathBuf>,
}

/// What a call will do about its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The CLI will use these credentials (whether the API accepts them is not known here).
    Uses(String),
    /// The CLI will stop with exit 41 (`auth_required`): its reason, and the fix.
    Fails {
        /// What the CLI will say, or its gist.
        reason: String,
        /// What to change, naming the file or variable.
        fix: String,
    },
}

/// The fix for every start that has no credential at all.
const SET_A_KEY: &str = "set GEMINI_API_KEY (or configure Vertex AI) in the MCP server's environment; a Google login works only with a Code Assist Standard or Enterprise licence since 2026-06-18";

impl Seen {
    /// Reads the layers the CLI reads (highest first, [`settings::layers`]) and the environment
    /// `var` it gets.
    pub(crate) fn read(layers: &[LayerFile], var: impl Fn(&str) -> Option<OsString>) -> Seen {
        let set = |k: &str| var(k).is_some_and(|v| !v.is_empty());
        let is_true = |k: &str| var(k).is_some_and(|v| v == "true");
        // The workspace's file counts only in a trusted folder; the server passes --skip-trust,
        // which trusts the folder for the run.
        let selected = layers.iter().find_map(|l| {
            let s = l.content.as_ref().ok()?.as_ref()?;
            Some((settings::selected_type(s)?.to_owned(), l.path.clone()))
        });
        let user_settings = settings::user_settings_path(&var);
        let cached_login = user_settings
            .as_ref()
            .and_then(|p| p.parent().map(|d| d.join("oauth_creds.json")))
            .filter(|p| p.is_file());
        Seen {
            selected,
            use_gca: is_true("GOOGLE_GENAI_USE_GCA"),
            use_vertex: is_true("GOOGLE_GENAI_USE_VERTEXAI"),
            base_url: set("GOOGLE_GEMINI_BASE_URL"),
            gemini_key: set("GEMINI_API_KEY"),
            google_key: set("GOOGLE_API_KEY"),
            vertex_project: set("GOOGLE_CLOUD_PROJECT") && set("GOOGLE_CLOUD_LOCATION"),
            compute_adc: is_true("CLOUD_SHELL") || is_true("GEMINI_CLI_USE_COMPUTE_ADC"),
            cached_login,
            user_settings,
        }
    }

    /// What a start in `workspace` with the environment `var` will see.
    pub(crate) fn for_start(
        workspace: &Path,
        var: impl Fn(&str) -> Option<OsString> + Copy,
    ) -> Seen {
        Seen::read(&settings::layers(workspace, var), var)
    }

    /// The type the CLI will try, and where it came from (a settings file, or a variable).
    fn effective(&self) -> Option<(String, String)> {
        if let Some((t, path)) = &self.selected {
            return Some((
                t.clone(),
                format!("`security.auth.selectedType` in {}", path.display()),
            ));
        }
        let from_env = [
            (self.use_gca, "oauth-personal", "GOOGLE_GENAI_USE_GCA=true"),
            (
                self.use_vertex,
                "vertex-ai",
                "GOOGLE_GENAI_USE_VERTEXAI=true",
            ),
            (self.base_url, "gateway", "GOOGLE_GEMINI_BASE_URL"),
            (self.gemini_key, "gemini-api-key", "GEMINI_API_KEY"),
            (
                self.compute_adc,
                "compute-default-credentials",
                "CLOUD_SHELL or GEMINI_CLI_USE_COMPUTE_ADC",
            ),
        ];
        from_env
            .into_iter()
            .find(|(on, _, _)| *on)
            .map(|(_, t, why)| (t.to_owned(), why.to_owned()))
    }

    /// What a headless call will do.
    pub(crate) fn verdict(&self) -> Verdict {
        let Some((kind, origin)) = self.effective() else {
            let reason = match &self.cached_login {
                Some(p) => format!("no auth method is selected or implied (the cached Google login {} is not used without one)", p.display()),
                None => "no auth method is selected or implied, and no credential is set".to_owned(),
            };
            return Verdict::Fails {
                reason,
                fix: SET_A_KEY.to_owned(),
            };
        };
        match kind.as_str() {
            "oauth-personal" => self.google_login(&origin),
            "gemini-api-key" if self.gemini_key => {
                Verdict::Uses(format!("the Gemini API key GEMINI_API_KEY ({origin})"))
            }
            "gemini-api-key" => Verdict::Fails {
                reason: format!("{origin} selects the Gemini API key, and GEMINI_API_KEY is not set"),
                fix: "set GEMINI_API_KEY in the MCP server's environment".to_owned(),
            },
            "vertex-ai" if self.vertex_project || self.google_key => {
                Verdict::Uses(format!("Vertex AI ({origin})"))
            }
            "vertex-ai" => Verdict::Fails {
                reason: format!("{origin} selects Vertex AI without its variables"),
                fix: "set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY for express mode) in the MCP server's environment".to_owned(),
            },
            "compute-default-credentials" => {
                Verdict::Uses(format!("the machine's Application Default Credentials ({origin})"))
            }
            other => Verdict::Fails {
                reason: format!("Invalid auth method selected. ({origin} gives `{other}`, which a headless run cannot use)"),
                fix: self.select_the_key(&origin),
            },
        }
    }

    /// The Google login: only a cached one can work headless, and only for a licensed account.
    fn google_login(&self, origin: &str) -> Verdict {
        match &self.cached_login {
            Some(p) => Verdict::Uses(format!(
                "the cached Google login {} ({origin}): Google accepts it only for Code Assist Standard or Enterprise accounts since 2026-06-18; others fail auth_unsupported",
                p.display()
            )),
            None => Verdict::Fails {
                reason: format!("{origin} selects the Google login, which needs an interactive terminal (Manual authorization is required but the current session is non-interactive)"),
                fix: self.select_the_key(origin),
            },
        }
    }

    /// The fix when the selected type is the obstacle: select the key where it is selected.
    fn select_the_key(&self, origin: &str) -> String {
        let key = if self.gemini_key {
            ""
        } else {
            ", and set GEMINI_API_KEY in the MCP server's environment"
        };
        match &self.selected {
            Some((_, path)) => format!(
                "set `security.auth.selectedType` to \"gemini-api-key\" in {}, or remove it{key}",
                path.display()
            ),
            // A gateway URL is usually wanted: keep it and select the key where the CLI reads it.
            None if self.base_url && origin == "GOOGLE_GEMINI_BASE_URL" => format!(
                "set `security.auth.selectedType` to \"gemini-api-key\" in {}{key} (GOOGLE_GEMINI_BASE_URL alone implies the `gateway` type, which a headless run refuses), or unset GOOGLE_GEMINI_BASE_URL",
                self.user_settings
                    .as_ref()
                    .map_or("~/.gemini/settings.json".into(), |p| p.display().to_string())
            ),
            None => format!("unset {origin} in the MCP server's environment{key}"),
        }
    }
}

/// The environment a run's CLI saw, kept to explain a failed login after the run.
pub(crate) struct ChildEnv {
    clear: bool,
    set: Vec<(OsString, OsString)>,
    removed: Vec<OsString>,
}

impl ChildEnv {
    pub(crate) fn of(spec: &RunSpec) -> Self {
        ChildEnv {
            clear: spec.env_clear,
            set: spec.env.clone(),
            removed: spec.env_remove.clone(),
        }
    }

    fn var(&self, name: &str) -> Option<OsString> {
        if let Some((_, v)) = self.set.iter().rev().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        if self.clear || self.removed.iter().any(|k| k == name) {
            return None;
        }
        std::env::var_os(name)
    }
}

/// The login type the settings a CLI started from `spec` in `cwd` select
/// (`security.auth.selectedType` of the highest layer that sets one), and the file that does.
pub(crate) fn selected_type_for(cwd: &Path, spec: &RunSpec) -> Option<(String, PathBuf)> {
    let env = ChildEnv::of(spec);
    Seen::for_start(cwd, |k: &str| env.var(k)).selected
}

/// [`with_auth_fix`] for a CLI started from `spec` (the warm backend's agent).
pub(crate) fn with_auth_fix_for(f: Failure, cwd: &Path, spec: &RunSpec) -> Failure {
    with_auth_fix(f, cwd, &ChildEnv::of(spec))
}

/// An `auth_required` failure with the fix its situation needs (the kind's own fix cannot name
/// the settings file whose leftover `selectedType` stops the key from being used). The message
/// stays the CLI's own.
pub(crate) fn with_auth_fix(f: Failure, cwd: &Path, env: &ChildEnv) -> Failure {
    if f.kind != ErrorKind::AuthRequired {
        return f;
    }
    match Seen::for_start(cwd, |k: &str| env.var(k)).verdict() {
        Verdict::Fails { fix, .. } => f.with_fix(fix),
        Verdict::Uses(_) => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemini::settings::Layer;

    fn with(selected: Option<&str>) -> Seen {
        Seen {
            selected: selected.map(|t| (t.to_owned(), PathBuf::from("/h/.gemini/settings.json"))),
            ..Seen::default()
        }
    }

    fn fails(v: Verdict) -> (String, String) {
        match v {
            Verdict::Fails { reason, fix } => (reason, fix),
            Verdict::Uses(how) => panic!("predicted to work: {how}"),
        }
    }

    #[test]
    fn a_leftover_google_login_wins_over_the_key_and_the_fix_names_its_file() {
        let mut seen = with(Some("oauth-personal"));
        seen.gemini_key = true;
        let (reason, fix) = fails(seen.verdict());
        assert!(
            reason.contains("Manual authorization is required"),
            "{reason}"
        );
        assert_eq!(
            fix,
            "set `security.auth.selectedType` to \"gemini-api-key\" in /h/.gemini/settings.json, or remove it"
        );
        seen.gemini_key = false;
        let (_, fix) = fails(seen.verdict());
        assert!(
            fix.ends_with("and set GEMINI_API_KEY in the MCP server's environment"),
            "{fix}"
        );
        for f in [&fix, &reason] {
            assert!(!f.contains("chmod") && !f.contains("sudo") && !f.contains("chown"));
        }
    }

    #[test]
    fn a_base_url_without_a_selected_type_is_the_invalid_gateway_type() {
        let mut seen = with(None);
        seen.base_url = true;
        seen.gemini_key = true;
        let (reason, fix) = fails(seen.verdict());
        assert!(
            reason.starts_with("Invalid auth method selected."),
            "{reason}"
        );
        assert!(
            fix.starts_with("set `security.auth.selectedType` to \"gemini-api-key\" in ~/.gemini/settings.json (")
                && fix.ends_with("or unset GOOGLE_GEMINI_BASE_URL"),
            "{fix}"
        );
        seen.selected = Some(("gemini-api-key".into(), PathBuf::from("/s")));
        assert!(matches!(seen.verdict(), Verdict::Uses(_)));
    }

    #[test]
    fn a_cached_login_alone_is_not_used_and_nothing_at_all_fails() {
        let mut seen = with(None);
        assert_eq!(fails(seen.verdict()).1, SET_A_KEY);
        seen.cached_login = Some(PathBuf::from("/h/.gemini/oauth_creds.json"));
        let (reason, fix) = fails(seen.verdict());
        assert!(reason.contains("is not used without one"), "{reason}");
        assert_eq!(fix, SET_A_KEY);
        seen.selected = Some(("oauth-personal".into(), PathBuf::from("/s")));
        assert!(matches!(seen.verdict(), Verdict::Uses(how) if how.contains("auth_unsupported")));
    }

    #[test]
    fn keys_and_vertex_work_when_their_variables_are_set() {
        let mut seen = with(None);
        seen.gemini_key = true;
        assert!(matches!(seen.verdict(), Verdict::Uses(_)));
        let mut seen = with(Some("gemini-api-key"));
        assert!(fails(seen.verdict()).1.contains("GEMINI_API_KEY"));
        seen.selected = Some(("vertex-ai".into(), PathBuf::from("/s")));
        assert!(fails(seen.verdict()).1.contains("GOOGLE_CLOUD_PROJECT"));
        seen.google_key = true;
        assert!(matches!(seen.verdict(), Verdict::Uses(_)));
    }

    #[test]
    fn the_highest_layer_names_the_type() {
        let layer = |layer, path: &str, t: &str| LayerFile {
            layer,
            path: PathBuf::from(path),
            content: Ok(
                serde_json::json!({"security": {"auth": {"selectedType": t}}})
                    .as_object()
                    .cloned(),
            ),
            check: settings::SystemFile::Read,
        };
        let seen = Seen::read(
            &[
                layer(
                    Layer::Workspace,
                    "/w/.gemini/settings.json",
                    "gemini-api-key",
                ),
                layer(Layer::User, "/h/.gemini/settings.json", "oauth-personal"),
            ],
            |_| None,
        );
        assert_eq!(
            seen.selected,
            Some((
                "gemini-api-key".into(),
                PathBuf::from("/w/.gemini/settings.json")
            ))
        );
    }
}
