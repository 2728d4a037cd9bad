//! An agent process: its command line and environment, the auth method it is told to use, and
//! the failure its death or a refused request reports; which agent a call goes to (its key).

use std::path::PathBuf;

use crate::acp::client::{AcpError, Connection};
use crate::config::Config;
use crate::error::{ErrorKind, Failure, RunFacts};
use crate::gemini::launch::Launch;
use crate::gemini::outcome::unsupported_login;
use crate::gemini::process::RunSpec;
use crate::gemini::{command, inputs};

/// Whether an agent that failed to start with `f` leaves a one-shot run a chance: it refused
/// ACP mode or a flag of it, died or hung before answering `initialize`. A missing CLI, a login
/// it cannot use, a refused path or a cancellation would fail a one-shot run alike.
pub(super) fn one_shot_may_answer(f: &Failure) -> bool {
    matches!(
        f.kind,
        ErrorKind::Error | ErrorKind::Unknown | ErrorKind::CliTooOld
    )
}

/// Which agent a call goes to: the workspace, the MCP servers it may load and the directories
/// it may read besides the workspace (start-up flags: ACP has no per-session field for either).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) cwd: PathBuf,
    pub(super) servers: Vec<String>,
    pub(super) dirs: Vec<PathBuf>,
}

/// The command line and environment of an agent of `launch` for `key`: a call's environment,
/// trust given, no browser.
pub(super) fn agent_spec(launch: &Launch, config: &Config, key: &Key) -> Result<RunSpec, Failure> {
    let mut args: Vec<std::ffi::OsString> = inputs::ACP_ARGS.iter().map(Into::into).collect();
    for name in &key.servers {
        command::validate_server_name(name)?;
        args.push(format!("{}={name}", inputs::flag::ALLOWED_MCP_SERVER_NAMES).into());
    }
    for dir in &key.dirs {
        crate::policy::unchanged("include_directories", dir)?;
        let mut arg = std::ffi::OsString::from(format!("{}=", inputs::flag::INCLUDE_DIRECTORIES));
        arg.push(dir.as_os_str());
        args.push(arg);
    }
    let mut spec = launch.spec(config, &key.cwd, args, Vec::new());
    spec.env
        .extend(inputs::ACP_ENV.iter().map(|(k, v)| (k.into(), v.into())));
    spec.env.extend(
        crate::gemini::telemetry::agent_env(&key.cwd)
            .iter()
            .map(|(k, v)| (k.into(), v.into())),
    );
    Ok(spec)
}

/// The resident memory of process `pid` in MiB, where the platform lets the server read it
/// without another process: Linux's `/proc/<pid>/status`. Elsewhere `None`, and agents are
/// replaced by their session count alone.
pub(super) fn resident_mib(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        vm_rss_mib(&status)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// `VmRSS` of a `/proc/<pid>/status` text, in MiB (the kernel writes it in kB).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn vm_rss_mib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}

/// The browser-free method to authenticate with, from the environment the agent inherits.
pub(super) fn auth_method() -> Option<&'static str> {
    let set = |n: &str| std::env::var_os(n).is_some_and(|v| !v.is_empty());
    if set("GEMINI_API_KEY") {
        Some("gemini-api-key")
    } else if std::env::var("GOOGLE_GENAI_USE_VERTEXAI").is_ok_and(|v| v == "true") {
        Some("vertex-ai")
    } else if set("GOOGLE_GEMINI_BASE_URL") {
        Some("gateway")
    } else {
        None
    }
}

pub(super) fn cancelled(when: &str) -> Failure {
    Failure::cancelled(format!("the request was cancelled {when}"))
}

/// The HTTP status of an API error the agent passed on: its code on CLI 0.61; from 0.62, which
/// sends every such error as `-32000` with its text only (release notes), the status the text
/// carries (the API's JSON error body, or a leading `429 `).
fn http_status(code: i64, message: &str) -> Option<u16> {
    let status = |n: i64| u16::try_from(n).ok().filter(|c| (400..=599).contains(c));
    status(code)
        .or_else(|| status(crate::acp::departures::api_status(message)?))
        .or_else(|| {
            let (head, _) = message.split_once(' ')?;
            status(head.trim_end_matches(':').parse().ok()?)
        })
}

/// An API error the agent answered a request with, as a tool failure: its HTTP status as the
/// code, classified as on the one-shot path (`ErrorKind::from_http`).
fn rpc_failure(code: i64, message: &str, doing: &str) -> Failure {
    let mut status = http_status(code, message);
    // CLI 0.61's agent answers an API error whose status it does not read as 500, its text
    // the API's (an unknown model's 404, observed): that text decides when it names the
    // error.
    if status == Some(500) && ErrorKind::from_http(None, message).is_some() {
        status = None;
    }
    let kind = ErrorKind::from_http(status, message)
        .or_else(|| (code == 500).then_some(ErrorKind::ServerError))
        .unwrap_or(ErrorKind::Error);
    // As on the one-shot path: an API error's exit is its HTTP status & 0xFF; a status
    // the text does not carry is its kind's (a 429 told by its words is still 173).
    let exit = status.map_or(kind.exit_code(), |s| i32::from(s & 0xFF));
    Failure::with_exit(kind, exit, format!("{doing}: {message} (ACP error {code})"))
        .with_retry_delay(crate::gemini::outcome::retry_delay_ms(message))
}

/// The signal an agent died by, from how it ended (`killed by signal 9`), when the server did not
/// stop it (`stopped by the server, killed by signal 9` is the server's own kill).
fn signal_of(how: &str) -> Option<i32> {
    if how.starts_with("stopped by the server") {
        return None;
    }
    how.strip_prefix("killed by signal ")?.parse().ok()
}

/// A failed ACP exchange as a tool failure: an API error carries its HTTP status as the code
/// and is classified as on the one-shot path (`ErrorKind::from_http`).
pub(super) fn agent_failure(agent: &Connection, e: AcpError, doing: &str) -> Failure {
    let signal = match &e {
        AcpError::Exited(how) => signal_of(how),
        _ => None,
    };
    let f = match &e {
        AcpError::Rpc { message, .. } if unsupported_login(message).is_some() => Failure::new(
            ErrorKind::AuthUnsupported,
            unsupported_login(message).unwrap_or_default(),
        ),
        AcpError::Rpc { code, message } => rpc_failure(*code, message, doing),
        // Died by a signal the server did not send (the OOM killer, a user's `kill`): as the
        // one-shot CLI's death by a signal reads, `unknown` with 128 + the signal.
        AcpError::Exited(how) if signal.is_some() => {
            Failure::with_exit(
                ErrorKind::Unknown,
                128 + signal.unwrap_or_default(),
                format!("the Gemini ACP agent ended while {doing} ({how}); it is restarted on the next call, and this prompt was not re-run"),
            )
        }
        AcpError::Exited(how) => {
            // What the CLI printed as it ended says why, as on the one-shot path: a CLI too old
            // for a flag of the agent's command line, a login it cannot use, a broken settings
            // file.
            // `exit 1`, or `stopped by the server, exit 1`.
            let code = how
                .rsplit_once("exit ")
                .and_then(|(_, c)| c.parse::<i32>().ok());
            let signature = code.and_then(|c| {
                crate::gemini::outcome::stderr_signature(&agent.stderr_tail(), c)
                    .map(|found| (c, found))
            });
            match signature {
                Some((code, (kind, message, retry))) => Failure::with_exit(
                    kind,
                    code,
                    format!("the Gemini ACP agent ended while {doing}: {message}"),
                )
                .with_retry_delay(retry),
                None => Failure::new(
                    ErrorKind::Error,
                    format!("the Gemini ACP agent ended while {doing} ({how}); it is restarted on the next call, and this prompt was not re-run"),
                ),
            }
        }
        AcpError::Unreadable(method) => Failure::new(
            ErrorKind::Error,
            format!("the Gemini ACP agent answered {method} with a result ACP does not define while {doing}"),
        ),
        AcpError::Timeout(method) => Failure::new(
            ErrorKind::Error,
            format!("the Gemini ACP agent did not answer {method} in time while {doing}; it was killed and is restarted on the next call"),
        ),
    };
    f.with_run(RunFacts {
        stderr_tail: agent.stderr_tail(),
        signal,
        ..RunFacts::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_the_agents_death_only_when_the_server_did_not_send_it() {
        assert_eq!(signal_of("killed by signal 9"), Some(9));
        assert_eq!(signal_of("killed by signal 15"), Some(15));
        assert_eq!(signal_of("stopped by the server, killed by signal 9"), None);
        assert_eq!(signal_of("exit 1"), None);
        assert_eq!(
            signal_of("killed: it went on sending past the output cap"),
            None
        );
    }

    #[test]
    fn resident_memory_is_read_from_vm_rss() {
        let status = "Name:\tnode\nVmPeak:\t 999999 kB\nVmRSS:\t  262144 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(vm_rss_mib(status), Some(256));
        assert_eq!(vm_rss_mib("Name:\tzombie\n"), None, "a zombie has no VmRSS");
        #[cfg(target_os = "linux")]
        assert!(
            resident_mib(std::process::id()).is_some(),
            "this test's own process"
        );
    }

    #[test]
    fn an_api_errors_status_is_its_code_or_what_its_text_carries() {
        assert_eq!(http_status(503, "Service Unavailable"), Some(503));
        let body =
            r#"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#;
        assert_eq!(http_status(-32000, body), Some(500));
        assert_eq!(http_status(-32000, "429 Too Many Requests"), Some(429));
        assert_eq!(http_status(-32000, "Session not found: abc"), None);
        assert_eq!(http_status(-32000, "1000 tokens exceed the limit"), None);
        assert_eq!(http_status(-32603, "Internal error"), None);
    }

    /// What CLI 0.61's agent sent for an unknown model through the real-CLI lane: code 500, the
    /// API's text.
    #[test]
    fn an_unknown_models_404_sent_as_500_is_model_not_found() {
        let f = rpc_failure(
            500,
            "models/gemini-3.8-flash is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
            "running the prompt",
        );
        assert_eq!(f.kind, ErrorKind::ModelNotFound, "{}", f.message);
        let f = rpc_failure(500, "Internal error encountered.", "running the prompt");
        assert_eq!((f.kind, f.exit_code), (ErrorKind::ServerError, 244));
    }
    use std::path::PathBuf;

    /// Every flag and variable of an agent with every option set is in the inventory.
    #[test]
    fn an_agents_inputs_are_all_in_the_inventory() {
        let launch = Launch {
            program: PathBuf::from("/bin/gemini"),
            prefix: Vec::new(),
            via: "test".into(),
        };
        let dir = std::env::temp_dir();
        let key = Key {
            cwd: dir.clone(),
            servers: vec!["github".into()],
            dirs: vec![dir],
        };
        let config = Config {
            env_policy: crate::config::EnvPolicy::Minimal,
            ..Config::default()
        };
        let spec = agent_spec(&launch, &config, &key).unwrap();
        assert_eq!(spec.args.len(), inputs::ACP_ARGS.len() + 2);
        for arg in &spec.args {
            inputs::check_arg(&arg.to_string_lossy(), inputs::By::Warm).unwrap();
        }
        let base = launch.spec(&config, &key.cwd, [], Vec::new());
        let mut with_acp = agent_spec(&launch, &config, &key).unwrap().env;
        with_acp.retain(|(k, _)| !base.env.iter().any(|(b, _)| b == k));
        assert!(!with_acp.is_empty(), "the agent's own variables");
        for (name, _) in with_acp {
            inputs::check_env(&name.to_string_lossy(), inputs::By::Warm).unwrap();
        }
    }
}
