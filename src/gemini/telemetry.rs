//! The agents' telemetry. CLI 0.62 keeps each model request's history in a buffer that only its
//! telemetry drains, so an agent with telemetry off grows by about 1.17 MB a turn (its bug report;
//! not observable on 0.61, which has no such buffer). Where the user configured no telemetry of
//! their own, an agent gets the report's workaround ([`inputs::TELEMETRY_ENV`]) through its
//! environment: no file of the user's is written, and telemetry the user set up — a settings
//! layer with a `telemetry` object, or any `GEMINI_TELEMETRY_*` variable — is left as it is.

use std::ffi::OsString;
use std::path::Path;

use crate::gemini::inputs::{self, env};
use crate::gemini::settings::{self, LayerFile};

/// The variables an agent started in `workspace` gets for its telemetry: the workaround, or
/// nothing where the user configured telemetry (or a settings file cannot be read: it may).
pub(crate) fn agent_env(workspace: &Path) -> &'static [(&'static str, &'static str)] {
    let layers = settings::layers(workspace, |k| std::env::var_os(k));
    if users_own(std::env::vars_os().map(|(k, _)| k), &layers) {
        &[]
    } else {
        &inputs::TELEMETRY_ENV
    }
}

/// Whether the user configured telemetry: a variable of the CLI's telemetry among `names`, or a
/// settings layer with a `telemetry` key (an unreadable one counts: it may hold one).
fn users_own(mut names: impl Iterator<Item = OsString>, layers: &[LayerFile]) -> bool {
    names.any(|n| {
        n.to_str()
            .is_some_and(|n| n.starts_with(env::TELEMETRY_PREFIX))
    }) || layers.iter().any(|l| match &l.content {
        Err(_) => true,
        Ok(None) => false,
        Ok(Some(s)) => s.contains_key("telemetry"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemini::settings::{Layer, SystemFile};
    use serde_json::json;

    fn layer(content: Result<Option<serde_json::Value>, String>) -> LayerFile {
        LayerFile {
            layer: Layer::User,
            path: "/home/u/.gemini/settings.json".into(),
            content: content.map(|c| c.and_then(|v| v.as_object().cloned())),
            check: SystemFile::Read,
        }
    }

    fn names(n: &[&str]) -> impl Iterator<Item = OsString> {
        n.iter().map(OsString::from).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn no_telemetry_of_the_users_gets_the_workaround() {
        let plain = [
            layer(Ok(Some(json!({"general": {"vimMode": true}})))),
            layer(Ok(None)),
        ];
        assert!(!users_own(names(&["HOME", "GEMINI_API_KEY"]), &plain));
    }

    #[test]
    fn the_users_telemetry_is_left_alone() {
        let set = [layer(Ok(Some(json!({"telemetry": {"enabled": false}}))))];
        assert!(users_own(names(&[]), &set), "a settings layer");
        assert!(
            users_own(names(&["GEMINI_TELEMETRY_OTLP_ENDPOINT"]), &[]),
            "a variable"
        );
        assert!(
            users_own(names(&[]), &[layer(Err("bad JSON".into()))]),
            "an unreadable layer may hold it"
        );
    }
}
