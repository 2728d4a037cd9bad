//! The one way a Gemini CLI process is started: the program resolved per call, its environment
//! under `GEMINICLI_MCP_ENV` with the headless variables on top, the caps and the private
//! `TMPDIR` — for one-shot prompt runs, session listings and deletions, ACP agents and the
//! doctor's probes alike.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::settings;
use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::gemini::command::CHILD_ENV;
use crate::gemini::environment;
use crate::gemini::mcp_servers;
use crate::gemini::process::{RunSpec, SpawnError};
use crate::gemini::resolve::{self, Platform};
use crate::gemini::retention;

/// What the model (or the user) does about a nested server: the work is the model's own.
const NESTED_FIX: &str = "do the task yourself without this tool: you are the model such a call would start. A person stops the nesting by taking this entry out of the Gemini CLI's MCP servers, or by running a geminicli-mcp that leaves its own entries out of the CLI it runs (it recognises them by command: the geminicli-mcp binary, npx/uvx geminicli-mcp)";

/// A resolved CLI: what to execute and the arguments that come before the run's own.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    /// The program (an absolute path, or `node` for a JS entry).
    pub program: PathBuf,
    /// The JS entry when `program` is node, otherwise empty.
    pub prefix: Vec<OsString>,
    /// How it was found (`GEMINI_CLI_BIN=…`, `PATH: …`), for diagnostics.
    pub via: String,
}

impl Launch {
    /// Finds the CLI for a run, per call (a CLI installed, or PATH fixed, after start-up is
    /// found): not found is `spawn_failed` with the resolver's fix.
    /// A server started as an MCP server by a CLI another server runs starts no CLI at all
    /// ([`mcp_servers::nested`]).
    pub(crate) fn resolve(config: &Config) -> Result<Launch, Failure> {
        if let Some(why) = mcp_servers::nested(|k| std::env::var_os(k)) {
            return Err(Failure::new(ErrorKind::ConfigError, why).with_fix(NESTED_FIX));
        }
        let found = resolve::resolve_on_host(config.gemini_bin.as_deref()).map_err(|e| {
            Failure::with_exit(ErrorKind::SpawnFailed, e.exit_code(), e.to_string())
        })?;
        Ok(Launch {
            program: found.program,
            prefix: found.prefix_args,
            via: found.via,
        })
    }

    /// A run of this CLI in `cwd` with `args` (after the prefix) and `stdin`, in the environment
    /// a call gets: the server's own under the policy, plus the headless variables.
    pub(crate) fn spec(
        &self,
        config: &Config,
        cwd: &Path,
        args: impl IntoIterator<Item = OsString>,
        stdin: Vec<u8>,
    ) -> RunSpec {
        let (env_clear, env) = environment_of(config, None);
        self.spec_with(config, cwd, args, stdin, env_clear, env)
    }

    /// [`Launch::spec`] starting from exactly `vars` instead of the server's environment (the
    /// doctor reports what the CLI would see from a given environment).
    pub(crate) fn spec_from_vars(
        &self,
        config: &Config,
        cwd: &Path,
        args: impl IntoIterator<Item = OsString>,
        vars: Vec<(OsString, OsString)>,
    ) -> RunSpec {
        let (env_clear, env) = environment_of(config, Some(vars));
        self.spec_with(config, cwd, args, Vec::new(), env_clear, env)
    }

    fn spec_with(
        &self,
        config: &Config,
        cwd: &Path,
        args: impl IntoIterator<Item = OsString>,
        stdin: Vec<u8>,
        env_clear: bool,
        env: Vec<(OsString, OsString)>,
    ) -> RunSpec {
        let mut all = self.prefix.clone();
        all.extend(args);
        let mut env = env;
        // The CLI's start-up clean-up off, where the server has a defaults file the CLI reads.
        env.extend(retention::child_env());
        RunSpec {
            program: self.program.clone(),
            args: all,
            env_clear,
            env,
            env_remove: Vec::new(),
            cwd: cwd.to_path_buf(),
            stdin,
            max_output_bytes: config.max_output_bytes,
            kill_grace: config.kill_grace,
            private_tmp: true,
        }
    }
}

/// Whether a child's environment is cleared first, and what is set: the policy's base (from
/// `vars`, else the server's environment), then [`CHILD_ENV`]. Given `vars`, the child sees those
/// and nothing of the server's.
fn environment_of(
    config: &Config,
    vars: Option<Vec<(OsString, OsString)>>,
) -> (bool, Vec<(OsString, OsString)>) {
    let (clear, mut env) = match vars {
        Some(vars) => {
            let kept = environment::base(
                config.env_policy,
                vars.iter().cloned(),
                &config.env_pass,
                Platform::current(),
            );
            (true, kept.unwrap_or(vars))
        }
        None => {
            let kept = environment::base(
                config.env_policy,
                std::env::vars_os(),
                &config.env_pass,
                Platform::current(),
            );
            (kept.is_some(), kept.unwrap_or_default())
        }
    };
    env.extend(
        CHILD_ENV
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    (clear, env)
}

/// A CLI that could not be started as a tool failure: 127 when it is missing, 126 otherwise,
/// with the fix. `what` names the process (`gemini`, `gemini --acp`).
pub(crate) fn spawn_failure(e: SpawnError, what: &str) -> Failure {
    let (code, hint) = match &e {
        SpawnError::NotFound(_) => (
            127,
            format!(" — install the Gemini CLI (npm install -g @google/gemini-cli) or set {} to its absolute path", settings::GEMINI_CLI_BIN.name),
        ),
        SpawnError::NotExecutable(_) => (126, format!(" — check {} and the file's permissions", settings::GEMINI_CLI_BIN.name)),
        SpawnError::Other(_) => (126, String::new()),
        SpawnError::TooLong(_) => {
            return Failure::invalid_input(format!(
                "{e} ({what}): name fewer MCP servers or include directories, or start the server with a smaller environment ({}=minimal)",
                settings::ENV.name
            ))
        }
    };
    Failure::with_exit(ErrorKind::SpawnFailed, code, format!("{e} ({what}){hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EnvPolicy;

    fn launch() -> Launch {
        Launch {
            program: PathBuf::from("/bin/gemini"),
            prefix: vec!["entry.js".into()],
            via: "test".into(),
        }
    }

    #[test]
    fn a_spec_puts_the_prefix_first_and_the_headless_variables_last() {
        let config = Config::default();
        let spec = launch().spec(&config, Path::new("/w"), ["--acp".into()], b"hi".to_vec());
        assert_eq!(spec.args, ["entry.js", "--acp"]);
        assert!(!spec.env_clear, "inherit: the server's environment");
        let defaults = spec.env.iter().find(|(k, _)| k == retention::DEFAULTS_ENV);
        // Only a file the CLI would read is handed over (as root, in a directory of root's).
        assert_eq!(defaults.is_some(), retention::child_env().is_some());
        assert_eq!(
            spec.env.len(),
            CHILD_ENV.len() + usize::from(defaults.is_some())
        );
        if let Some((_, file)) = defaults {
            let text = std::fs::read_to_string(file).unwrap();
            assert!(text.contains("\"sessionRetention\""), "{text}");
            assert_eq!(
                crate::gemini::settings::system_file(Path::new(file)),
                crate::gemini::settings::SystemFile::Read
            );
        }
        assert!(spec.private_tmp);
        assert_eq!(spec.stdin, b"hi");
    }

    /// Every flag and variable a one-shot run, a session tool's run and a doctor's probe can be
    /// handed, with every option of a call set, is in the inventory (`gemini::inputs`); so is
    /// what the process layer adds (the private temporary directory, the run's mark).
    #[test]
    fn every_input_a_launch_hands_the_cli_is_in_the_inventory() {
        use crate::approval::ApprovalMode;
        use crate::gemini::command::{self, PromptRequest};
        use crate::gemini::inputs::{self, By};
        let dir = std::env::temp_dir();
        let mut seen = std::collections::BTreeSet::new();
        for mode in [
            None,
            Some(ApprovalMode::Yolo),
            Some(ApprovalMode::AutoEdit),
            Some(ApprovalMode::Default),
            Some(ApprovalMode::Plan),
        ] {
            let request = PromptRequest {
                prompt: "hi".into(),
                model: Some("gemini-2.5-pro".into()),
                resume: Some("0b6c1a6e-0000-4000-8000-000000000000".into()),
                approval_mode: mode,
                include_directories: vec![dir.clone()],
                sandbox: true,
                allowed_mcp_server_names: vec!["github".into()],
                ..PromptRequest::default()
            };
            let inv = command::build(&request, None, Some(command::Reader::Headless)).unwrap();
            for arg in &inv.args {
                let arg = arg.to_string_lossy();
                inputs::check_arg(&arg, By::OneShot).unwrap();
                seen.insert(inputs::flag_name(&arg).to_owned());
            }
        }
        for arg in [
            crate::tools::sessions::cli_arg(None),
            crate::tools::sessions::cli_arg(Some("0b6c1a6e-0000-4000-8000-000000000000")),
        ] {
            inputs::check_arg(&arg, By::Sessions).unwrap();
        }
        for arg in [inputs::flag::VERSION, inputs::flag::HELP] {
            inputs::check_arg(arg, By::Doctor).unwrap();
        }
        // Every one-shot flag of the inventory is one a call can get.
        for i in inputs::INVENTORY {
            if i.kind == inputs::Kind::Flag && i.by.contains(&By::OneShot) {
                assert!(seen.contains(i.name), "{} is never handed", i.name);
            }
        }
        let config = Config::default();
        let spec = launch().spec_from_vars(&config, &dir, [], Vec::new());
        let mut names: Vec<String> = spec
            .env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        names.push(retention::DEFAULTS_ENV.to_owned());
        let tmp = crate::gemini::process::PrivateTmp::new().unwrap();
        names.extend(tmp.env().map(|(k, _)| k.to_string_lossy().into_owned()));
        names.push(crate::gemini::process::RUN_MARKER_VAR.to_owned());
        for name in names {
            for by in [By::OneShot, By::Sessions, By::Doctor] {
                inputs::check_env(&name, by).unwrap();
            }
        }
    }

    #[test]
    fn given_variables_are_all_the_child_sees() {
        let mut config = Config::default();
        let vars = vec![
            (OsString::from("PATH"), OsString::from("/bin")),
            (OsString::from("SECRET"), OsString::from("x")),
        ];
        let spec = launch().spec_from_vars(&config, Path::new("/w"), [], vars.clone());
        assert!(spec.env_clear);
        assert!(spec.env.iter().any(|(k, _)| k == "SECRET"));
        config.env_policy = EnvPolicy::Minimal;
        let spec = launch().spec_from_vars(&config, Path::new("/w"), [], vars);
        assert!(spec.env.iter().any(|(k, _)| k == "PATH"));
        assert!(!spec.env.iter().any(|(k, _)| k == "SECRET"));
    }

    #[test]
    fn spawn_failures_carry_the_shell_codes() {
        let f = spawn_failure(SpawnError::NotFound("/x".into()), "gemini");
        assert_eq!((f.kind, f.exit_code), (ErrorKind::SpawnFailed, 127));
        assert!(f.message.contains("GEMINI_CLI_BIN"), "{}", f.message);
        let f = spawn_failure(SpawnError::NotExecutable("/x".into()), "gemini --acp");
        assert_eq!(f.exit_code, 126);
        assert!(f.message.contains("(gemini --acp)"), "{}", f.message);
    }
}
