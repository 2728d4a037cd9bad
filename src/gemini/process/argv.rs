//! The size of a command line against the system's limit, checked before the spawn: an argv the
//! kernel refuses (`E2BIG`, e.g. tens of thousands of `--allowed-mcp-server-names`) is the
//! caller's input, not a CLI that cannot start.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::status::SpawnError;

/// What a spawn hands the kernel: the program, its arguments and how its environment is made.
pub(crate) struct CommandLine<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: &'a [OsString],
    pub(crate) env_clear: bool,
    pub(crate) env: &'a [(OsString, OsString)],
    pub(crate) env_remove: &'a [OsString],
}

/// Room kept under the limit for what the spawn adds after the check (the private `TMPDIR`
/// variables, the run marker) and for the kernel's own accounting.
const MARGIN: usize = 8 * 1024;

/// Linux's limit on one argument or variable (`MAX_ARG_STRLEN`, 32 pages).
#[cfg(target_os = "linux")]
const MAX_ONE: Option<usize> = Some(32 * 4096);
#[cfg(not(target_os = "linux"))]
const MAX_ONE: Option<usize> = None;

/// What the kernel counts for one string of argv or envp: its bytes, its NUL and its pointer.
fn cost(s: &OsStr) -> usize {
    s.len() + 1 + std::mem::size_of::<usize>()
}

/// The environment the child gets: the server's (unless cleared) without the removed names, with
/// the spec's variables over it.
fn child_env(spec: &CommandLine<'_>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = if spec.env_clear {
        Vec::new()
    } else {
        std::env::vars_os()
            .filter(|(k, _)| !spec.env_remove.contains(k))
            .collect()
    };
    for (k, v) in spec.env {
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), v.clone()));
    }
    env
}

/// Bytes of argv and envp together, as the kernel counts them, and the longest single string.
pub(crate) fn size(spec: &CommandLine<'_>) -> (usize, usize) {
    let mut total = cost(spec.program.as_os_str());
    let mut longest = 0;
    for a in spec.args {
        total += cost(a);
        longest = longest.max(a.len());
    }
    for (k, v) in child_env(spec) {
        let mut var = k;
        var.push("=");
        var.push(v);
        total += cost(&var);
        longest = longest.max(var.len());
    }
    (total, longest)
}

/// The system's limit on argv and envp together (`sysconf(_SC_ARG_MAX)`; on Windows the
/// 32,767-character command line, counted here in bytes, which is stricter).
fn limit() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads a system constant.
        let n = unsafe { libc::sysconf(libc::_SC_ARG_MAX) };
        usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(256 * 1024)
    }
    #[cfg(not(unix))]
    {
        32_767
    }
}

/// Refuses a command line the system would refuse, before anything is spawned.
pub(crate) fn check(spec: &CommandLine<'_>) -> Result<(), SpawnError> {
    let (total, longest) = size(spec);
    check_against(total, longest, limit(), MAX_ONE)
}

fn check_against(
    total: usize,
    longest: usize,
    limit: usize,
    max_one: Option<usize>,
) -> Result<(), SpawnError> {
    if let Some(max) = max_one.filter(|max| longest >= *max) {
        return Err(SpawnError::TooLong(format!(
            "one argument or variable of the Gemini CLI's command line would be {longest} bytes; the system allows {}",
            max - 1
        )));
    }
    if total + MARGIN > limit {
        return Err(SpawnError::TooLong(format!(
            "the Gemini CLI's command line and environment would be {total} bytes; the system allows {limit} (less {MARGIN} kept for the run)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line of `/bin/gemini` with `args` in an environment of `A=1` alone.
    fn line<'a>(args: &'a [OsString], env: &'a [(OsString, OsString)]) -> CommandLine<'a> {
        CommandLine {
            program: Path::new("/bin/gemini"),
            args,
            env_clear: true,
            env,
            env_remove: &[],
        }
    }

    fn a_equals_1() -> Vec<(OsString, OsString)> {
        vec![("A".into(), "1".into())]
    }

    #[test]
    fn the_size_counts_every_string_with_its_nul_and_pointer() {
        let p = std::mem::size_of::<usize>();
        let env = a_equals_1();
        let (total, longest) = size(&line(&["-x".into()], &env));
        assert_eq!(total, (11 + 1 + p) + (2 + 1 + p) + (3 + 1 + p));
        assert_eq!(longest, 3);
    }

    #[test]
    fn thirty_thousand_server_names_are_refused_before_the_spawn() {
        let env = a_equals_1();
        let args: Vec<OsString> = (0..30_000)
            .map(|i| format!("--allowed-mcp-server-names={i:0>128}").into())
            .collect();
        let err = check(&line(&args, &env)).unwrap_err();
        assert!(matches!(err, SpawnError::TooLong(_)), "{err}");
        assert!(check(&line(&["--acp".into()], &env)).is_ok());
    }

    #[test]
    fn one_string_over_the_per_argument_limit_is_refused() {
        let err = check_against(1000, 200_000, 2 << 20, Some(131_072)).unwrap_err();
        assert!(err.to_string().contains("200000 bytes"), "{err}");
        assert!(check_against(1000, 100, 2 << 20, None).is_ok());
        assert!(check_against(2 << 20, 100, 2 << 20, None).is_err());
    }
}
