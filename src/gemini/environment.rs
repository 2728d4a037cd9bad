//! The environment a Gemini run starts from under `GEMINICLI_MCP_ENV`: the server's whole
//! environment (`inherit`), or only the variables the CLI needs on this OS (`minimal`), so that
//! secrets meant for other programs never reach a process that runs with yolo.

use std::ffi::{OsStr, OsString};

use crate::config::EnvPolicy;
use crate::gemini::resolve::Platform;

/// Prefixes kept by `minimal` on every OS: the CLI's own settings and credentials, Google Cloud's
/// (Vertex AI, ADC), Node's (`NODE_OPTIONS`, `NODE_EXTRA_CA_CERTS`), and the locale categories.
pub(crate) const MINIMAL_PREFIXES: [&str; 5] = ["GEMINI_", "GOOGLE_", "CLOUDSDK_", "NODE_", "LC_"];

/// Names kept by `minimal` on every OS: home and user (the CLI keeps its state in `~/.gemini`),
/// `PATH` (node, git and the tools the CLI runs), proxies (both spellings, as Node's tools read
/// either), the locale, and the temp directories.
pub(crate) const MINIMAL_NAMES: [&str; 20] = [
    "HOME",
    "USER",
    "LOGNAME",
    "PATH",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Names `minimal` also keeps on Windows, where Node and the CLI cannot start without them.
pub(crate) const MINIMAL_WINDOWS_NAMES: [&str; 10] = [
    "SystemRoot",
    "SystemDrive",
    "windir",
    "PATHEXT",
    "COMSPEC",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
];

/// Whether `minimal` keeps the variable `name`. `extra` are the operator's additions
/// (`GEMINICLI_MCP_ENV_PASS`): exact names, or prefixes ending in `*`. Windows compares names
/// without regard to case, as Windows does.
pub(crate) fn keeps(name: &OsStr, extra: &[String], platform: Platform) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let fold = |s: &str| match platform {
        Platform::Windows => s.to_ascii_uppercase(),
        Platform::Unix => s.to_owned(),
    };
    let name = fold(name);
    let exact = |candidate: &str| fold(candidate) == name;
    let prefix = |candidate: &str| name.starts_with(&fold(candidate));
    MINIMAL_PREFIXES.iter().any(|p| prefix(p))
        || MINIMAL_NAMES.iter().any(|n| exact(n))
        || (platform == Platform::Windows && MINIMAL_WINDOWS_NAMES.iter().any(|n| exact(n)))
        || extra.iter().any(|e| match e.strip_suffix('*') {
            Some(p) => !p.is_empty() && prefix(p),
            None => exact(e),
        })
}

/// The variables a run starts from: `None` for `inherit` (the child inherits the server's
/// environment), or the kept subset of `vars` for `minimal` (the child's environment is cleared
/// first). The run's own additions (`NO_COLOR`, the private `TMPDIR`, …) come on top either way.
pub(crate) fn base(
    policy: EnvPolicy,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
    platform: Platform,
) -> Option<Vec<(OsString, OsString)>> {
    match policy {
        EnvPolicy::Inherit => None,
        EnvPolicy::Minimal => Some(
            vars.into_iter()
                .filter(|(name, _)| keeps(name, extra, platform))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(names: &[&str], extra: &[&str], platform: Platform) -> Vec<String> {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let vars = names
            .iter()
            .map(|n| (OsString::from(n), OsString::from("v")));
        base(EnvPolicy::Minimal, vars, &extra, platform)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect()
    }

    #[test]
    fn inherit_keeps_everything() {
        let vars = vec![(OsString::from("AWS_SECRET_ACCESS_KEY"), OsString::from("x"))];
        assert!(base(EnvPolicy::Inherit, vars, &[], Platform::Unix).is_none());
    }

    #[test]
    fn minimal_keeps_what_the_cli_needs_and_drops_the_rest() {
        let names = [
            "GEMINI_API_KEY",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CLOUDSDK_CONFIG",
            "NODE_OPTIONS",
            "HOME",
            "USER",
            "PATH",
            "HTTPS_PROXY",
            "no_proxy",
            "LANG",
            "LC_ALL",
            "TMPDIR",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "GEMINICLI_MCP_HTTP_TOKEN",
            "SystemRoot",
        ];
        let unix = kept(&names, &[], Platform::Unix);
        assert_eq!(unix, names[..13].to_vec(), "unix");
        let windows = kept(&names, &[], Platform::Windows);
        assert!(windows.contains(&"SystemRoot".to_string()));
        assert!(!windows.contains(&"GITHUB_TOKEN".to_string()));
    }

    #[test]
    fn windows_names_ignore_case() {
        let kept = kept(
            &["Path", "SYSTEMROOT", "Appdata", "Gemini_Api_Key"],
            &[],
            Platform::Windows,
        );
        assert_eq!(kept.len(), 4, "{kept:?}");
    }

    #[test]
    fn the_server_token_never_passes_by_prefix() {
        // GEMINICLI_ is not GEMINI_: the server's own settings, the HTTP token included, stay.
        assert!(!keeps(
            OsStr::new("GEMINICLI_MCP_HTTP_TOKEN"),
            &[],
            Platform::Unix
        ));
    }

    #[test]
    fn operator_additions_are_names_or_prefixes() {
        let kept = kept(
            &[
                "FAKE_GEMINI_LOG",
                "FAKE_GEMINI_STATE",
                "MY_CA",
                "MY_CAX",
                "OTHER",
            ],
            &["FAKE_GEMINI_*", "MY_CA", "*"],
            Platform::Unix,
        );
        assert_eq!(kept, ["FAKE_GEMINI_LOG", "FAKE_GEMINI_STATE", "MY_CA"]);
    }
}
