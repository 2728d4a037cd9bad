//! The cargo harness: every case file becomes its own test (libtest-mimic), run against this
//! workspace's `geminicli-mcp` and judged against `baseline/geminicli-mcp.toml`, and again (as
//! `backend-acp/<id>`) with its warm backend, judged against `baseline/geminicli-mcp-acp.toml`, and
//! (as `era-2026/<id>`, the one-shot backend) at protocol version 2026-07-28 when the case pins no
//! version of its own and with fake-gemini playing the newest CLI release it knows when the case
//! sets no version, judged against `baseline/geminicli-mcp-2026.toml`; plus the self-test, which runs chosen cases against the deliberately broken target and checks they fail
//! (and pass when it is not broken).
//!
//! Baseline mapping: a listed case that fails is reported as ignored with the baseline's reason; a
//! listed case that passes fails (stale entry); an unlisted failure or bug fails; a `should` that
//! failed passes with a warning on stderr; a skip is reported as ignored with its reason, except a
//! skip for a gap of the built-in profile, which fails.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gemini_mcp_conformance::case::{self, Case};
use gemini_mcp_conformance::{
    bins, run_case, tracker, Baseline, Outcome, Profile, RunConfig, Target,
};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// The backends of this workspace's server the cases run against: test-name prefix, profile,
/// baseline file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Oneshot,
    Acp,
    /// The one-shot backend, every case that pins no protocol version run at 2026-07-28.
    Era2026,
}

impl Backend {
    fn prefix(self) -> &'static str {
        match self {
            Backend::Oneshot => "",
            Backend::Acp => "backend-acp/",
            Backend::Era2026 => "era-2026/",
        }
    }

    fn profile(self) -> Profile {
        match self {
            Backend::Oneshot | Backend::Era2026 => Profile::geminicli_mcp(),
            Backend::Acp => Profile::geminicli_mcp_acp(),
        }
    }

    /// The baseline file of this backend.
    fn baseline_path(self) -> PathBuf {
        let name = match self {
            Backend::Oneshot => "geminicli-mcp.toml",
            Backend::Acp => "geminicli-mcp-acp.toml",
            Backend::Era2026 => "geminicli-mcp-2026.toml",
        };
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baseline")
            .join(name)
    }
}

/// The newest CLI release fake-gemini plays (from its release notes), which the `era-2026/` lane
/// runs every case against.
const NEWEST_CLI: &str = "0.64.0-preview.0";

/// The baseline file of this workspace's server (one-shot backend).
fn baseline_path() -> PathBuf {
    Backend::Oneshot.baseline_path()
}

/// The timeout scale from `GEMINI_MCP_CONFORMANCE_TIMEOUT_SCALE` (default 1).
fn timeout_scale() -> f64 {
    std::env::var("GEMINI_MCP_CONFORMANCE_TIMEOUT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|x: &f64| *x > 0.0)
        .unwrap_or(1.0)
}

/// The run configuration against geminicli-mcp, located once and lazily (listing tests must not
/// build anything).
fn server_config(backend: Backend) -> Result<&'static RunConfig, String> {
    static ONESHOT: OnceLock<Result<RunConfig, String>> = OnceLock::new();
    static ACP: OnceLock<Result<RunConfig, String>> = OnceLock::new();
    static ERA_2026: OnceLock<Result<RunConfig, String>> = OnceLock::new();
    let cell = match backend {
        Backend::Oneshot => &ONESHOT,
        Backend::Acp => &ACP,
        Backend::Era2026 => &ERA_2026,
    };
    cell.get_or_init(|| {
        let target = bins::try_locate("geminicli-mcp")?;
        let fake = bins::try_locate("fake-gemini")?;
        Ok(RunConfig {
            target: Target {
                command: vec![target.to_string_lossy().into_owned()],
                profile: backend.profile(),
            },
            fake_gemini: fake,
            timeout_scale: timeout_scale(),
            keep_dirs: std::env::var_os("GEMINI_MCP_CONFORMANCE_KEEP_DIRS").is_some(),
            era_override: (backend == Backend::Era2026)
                .then(|| gemini_mcp_conformance::profile::NO_INITIALIZE_ERA.to_string()),
            // The newest protocol with the newest CLI release fake-gemini plays.
            cli_version: (backend == Backend::Era2026).then(|| NEWEST_CLI.to_string()),
            real_cli: None,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The run configuration against the broken target in `mode` ("" = not broken).
fn broken_config(mode: &str) -> RunConfig {
    let mut profile = Profile::geminicli_mcp();
    profile.name = format!("broken-target[{mode}]");
    profile.env.insert("BROKEN_TARGET_MODE".into(), mode.into());
    RunConfig {
        target: Target {
            command: vec![env!("CARGO_BIN_EXE_gemini-mcp-conformance-broken-target").into()],
            profile,
        },
        // The self-test cases never reach gemini; any existing file stands in for the fake.
        fake_gemini: std::env::current_exe().expect("the test executable has a path"),
        // A target that ignores EOF is only ever waited out (its expected exit, then the
        // teardown's): a tenth of every bound shows that as well, in a tenth of the time.
        timeout_scale: if mode == "ignore-eof" {
            timeout_scale() / 10.0
        } else {
            timeout_scale()
        },
        keep_dirs: false,
        era_override: None,
        cli_version: None,
        real_cli: None,
    }
}

/// (mode, case id, the outcome the broken target must get, whether the case runs fake-gemini):
/// each mode breaks exactly the rule its case checks. With no mode, every one of these cases
/// must pass.
#[rustfmt::skip]
const SELF_TEST: &[(&str, &str, Outcome, bool)] = &[
    ("stdout-noise", "lifecycle/ping", Outcome::Fail, false),
    ("bad-args-protocol-error", "arguments/missing-prompt", Outcome::Fail, false),
    ("fixed-version", "lifecycle/initialize-version/2025-06-18", Outcome::Fail, false),
    ("ignore-eof", "lifecycle/exit-on-stdin-eof", Outcome::Fail, false),
    ("output-schema-always", "lifecycle/no-output-schema-before-2025-06-18/2025-03-26", Outcome::Fail, false),
    ("unknown-tool-result", "lifecycle/unknown-tool-is-protocol-error", Outcome::Fail, false),
    ("silent-parse-error", "lifecycle/malformed-json-gets-parse-error", Outcome::Warn, false),
    ("prompt-on-argv", "transport/prompt-on-stdin", Outcome::Warn, true),
    ("context-unescaped", "tools/context-cannot-close-its-block", Outcome::Fail, true),
    ("no-yolo", "transport/headless-flags", Outcome::Fail, true),
    ("roots-request", "era/prompt-call-answers", Outcome::Fail, true),
    // Linux only: elsewhere the runner cannot see a double-forked process (see the README).
    ("leak-orphan", "lifecycle/server-info-has-name-and-version", Outcome::Fail, false),
];

/// Trials that wait out real time by their nature, each with why: ignored by the README's test
/// command, run by `.ci/run`'s slow step (`--run-ignored only` on this package's `cases` binary).
/// Every other trial finishes within seconds.
#[rustfmt::skip]
const SLOW: &[(&str, &str)] = &[
    ("acp/load-waits-out-session-minute", WAITS_FOR_THE_MINUTE),
    ("backend-acp/acp/load-waits-out-session-minute", WAITS_FOR_THE_MINUTE),
    ("era-2026/acp/load-waits-out-session-minute", WAITS_FOR_THE_MINUTE),
    ("lifecycle/over-long-line-answered", LINE_OF_65_MIB),
    ("backend-acp/lifecycle/over-long-line-answered", LINE_OF_65_MIB),
    ("era-2026/lifecycle/over-long-line-answered", LINE_OF_65_MIB),
    ("termination/call-longer-than-20s", RUNS_21_S),
    ("backend-acp/termination/call-longer-than-20s", RUNS_21_S),
    ("era-2026/termination/call-longer-than-20s", RUNS_21_S),
    ("backend-acp/acp/agent-start-spares-resumed-session", WAITS_FOR_A_SECOND_CLI),
    ("backend-acp/sessions/one-session-calls-do-not-overlap", WAITS_FOR_A_SECOND_CLI),
    ("backend-acp/sessions/listing-waits-for-session-calls", WAITS_FOR_A_SECOND_CLI),
];
const WAITS_FOR_THE_MINUTE: &str =
    "waits for the wall clock's next minute (up to 60 s): the server's clock is not scripted";
const LINE_OF_65_MIB: &str = "writes a line of 65 MiB through a debug build (about 40 s)";
const RUNS_21_S: &str = "a call that runs 21 s, past the 20 s other servers cut calls at";
const WAITS_FOR_A_SECOND_CLI: &str = "an expected failure on the warm backend that waits out its \
    step's 30 s for a second CLI process, which that backend does not start";

fn main() {
    let args = Arguments::from_args();
    let loaded =
        case::load_dir(&case::default_cases_dir()).expect("the cases directory is readable");
    let baseline = Arc::new(Baseline::load(&baseline_path()).unwrap_or_else(|e| panic!("{e}")));
    let acp_baseline =
        Arc::new(Baseline::load(&Backend::Acp.baseline_path()).unwrap_or_else(|e| panic!("{e}")));
    let era_baseline = Arc::new(
        Baseline::load(&Backend::Era2026.baseline_path()).unwrap_or_else(|e| panic!("{e}")),
    );
    let mut trials = Vec::new();
    let mut ids = Vec::new();
    let mut by_id = std::collections::BTreeMap::new();
    let mut era_ids = Vec::new();
    for c in loaded {
        match c {
            Ok(case) => {
                ids.push(case.id.clone());
                by_id.insert(case.id.clone(), case.clone());
                trials.push(case_trial(case.clone(), Backend::Acp, acp_baseline.clone()));
                // A case pinning its protocol version runs at it in the one-shot run already.
                if case.spec.protocol_version.is_none() {
                    era_ids.push(case.id.clone());
                    trials.push(case_trial(
                        case.clone(),
                        Backend::Era2026,
                        era_baseline.clone(),
                    ));
                }
                trials.push(case_trial(case, Backend::Oneshot, baseline.clone()));
            }
            Err((id, e)) => {
                ids.push(id.clone());
                trials.push(Trial::test(id, move || {
                    Err(format!("BUG: the case file is invalid: {e}").into())
                }));
            }
        }
    }
    let unknown: Vec<String> = baseline
        .unknown_entries(&ids)
        .into_iter()
        .chain(acp_baseline.unknown_entries(&ids))
        .chain(era_baseline.unknown_entries(&era_ids))
        .map(String::from)
        .collect();
    trials.push(Trial::test(
        "baseline/entries-name-existing-cases",
        move || {
            if unknown.is_empty() {
                Ok(())
            } else {
                Err(format!("stale baseline entries name no case: {unknown:?}").into())
            }
        },
    ));
    for (mode, id, want, fake) in SELF_TEST {
        let Some(case) = by_id.get(*id) else {
            let id = id.to_string();
            trials.push(Trial::test(format!("self-test/missing/{id}"), move || {
                Err(format!("the self-test names case {id}, which does not exist").into())
            }));
            continue;
        };
        if *mode == "leak-orphan" && !tracker::sees_escaped_descendants() {
            continue;
        }
        trials.push(self_test_trial(mode, case.clone(), *want, *fake));
        trials.push(self_test_trial("", case.clone(), Outcome::Pass, *fake));
    }
    trials.extend(harness_self_tests());
    trials.extend(path_mode_self_tests(&by_id));
    trials.extend(copied_runner_self_tests(ids.clone()));
    trials.extend(allowlist_self_tests(&by_id));
    let trials = with_slow_ones_ignored(trials);
    libtest_mimic::run(&args, trials).exit();
}

/// `trials` with those of [`SLOW`] ignored, plus a trial that fails on a [`SLOW`] entry naming no
/// trial.
fn with_slow_ones_ignored(trials: Vec<Trial>) -> Vec<Trial> {
    let names: std::collections::BTreeSet<String> =
        trials.iter().map(|t| t.name().to_string()).collect();
    trials
        .into_iter()
        .map(|t| {
            let slow = SLOW.iter().any(|(name, _)| *name == t.name());
            t.with_ignored_flag(slow)
        })
        .chain(std::iter::once(Trial::test(
            "slow-list/entries-name-existing-trials",
            move || {
                let stale: Vec<&str> = SLOW
                    .iter()
                    .map(|(name, _)| *name)
                    .filter(|name| !names.contains(*name))
                    .collect();
                if stale.is_empty() {
                    Ok(())
                } else {
                    Err(format!("the slow list names no trial: {stale:?}").into())
                }
            },
        )))
        .collect()
}

/// A case written inline for the harness's own self-tests.
fn inline_case(id: &str, text: &str) -> Case {
    case::parse_case(text, Path::new("<self-test>"), id)
        .expect("the self-test case parses")
        .remove(0)
}

/// Self-tests of the harness itself (not of a rule): a fixture failure must be a `bug`, and a
/// timeout must say how to raise the bound.
fn harness_self_tests() -> Vec<Trial> {
    let fixture_bug = Trial::test("self-test/harness/fake-exit-99-is-a-bug", || {
        let mut cfg = broken_config("");
        cfg.fake_gemini = bins::try_locate("fake-gemini").map_err(|e| format!("BUG: {e}"))?;
        let case = inline_case(
            "self-test/fake-exit-99",
            r#"
description = "a prompt marker naming a scenario that does not exist"
requirement = "fake-gemini's own failure (exit 99) must be reported as bug, never pass or fail."
level = "must"

[[step]]
call = "prompt"
arguments = { prompt = "[[fake-gemini:no-such-scenario-for-sure]]" }
expect = { result = { content = [{ type = "text", text = "Hello there! How can I help?" }] } }
"#,
        );
        let r = run_case(&cfg, &case);
        if r.outcome == Outcome::Bug {
            Ok(())
        } else {
            Err(format!(
                "fake-gemini's exit 99 ended as {} instead of bug:\n{}",
                r.outcome, r.message
            )
            .into())
        }
    });
    let timeout = Trial::test("self-test/harness/timeout-says-how-to-raise-it", || {
        let case = inline_case(
            "self-test/timeout",
            r#"
description = "a target that never exits, waited for briefly"
requirement = "A timeout's message must say how to raise the bound."
level = "must"

[[step]]
close-stdin = true

[[step]]
expect-exit = true
within-ms = 200
"#,
        );
        let r = run_case(&broken_config("ignore-eof"), &case);
        if r.outcome == Outcome::Fail && r.message.contains("--timeout-scale") {
            Ok(())
        } else {
            Err(format!(
                "expected a fail naming --timeout-scale, got {}: {}",
                r.outcome, r.message
            )
            .into())
        }
    });
    let stderr_attached = Trial::test("self-test/harness/stderr-attached-to-failures", || {
        let case = inline_case(
            "self-test/stderr",
            r#"
description = "a ping expecting a wrong answer"
requirement = "A failure carries the target's stderr."
level = "must"

[[step]]
request = { method = "ping" }
expect = { result = { nonexistent = true } }
"#,
        );
        let r = run_case(&broken_config(""), &case);
        match (r.outcome, &r.stderr) {
            (Outcome::Fail, Some(_)) => Ok(()),
            other => Err(format!("expected a fail with stderr attached, got {other:?}").into()),
        }
    });
    vec![fixture_bug, timeout, stderr_attached, poll_self_test()]
}

/// `poll-every-ms`: a poll whose response matches ends at once, and one that never matches fails
/// at the step's timeout showing the last response.
fn poll_self_test() -> Trial {
    Trial::test("self-test/harness/poll-until-expect", || {
        let case = |expect: &str| {
            inline_case(
                "self-test/poll",
                &format!(
                    r#"
description = "a ping polled until its answer matches"
requirement = "A poll ends at the first matching response, or fails with the last one."
level = "must"

[[step]]
request = {{ method = "ping" }}
poll-every-ms = 100
timeout-ms = 600
expect = {expect}
save = {{ id = "/id" }}
"#
                ),
            )
        };
        let matching = run_case(&broken_config(""), &case("{ result = {} }"));
        let never = run_case(&broken_config(""), &case("{ result = { never = true } }"));
        let polled = never
            .message
            .contains("the last response of a poll every 100 ms")
            && never.message.contains(r#""result":{}"#);
        if matching.outcome == Outcome::Pass && never.outcome == Outcome::Fail && polled {
            Ok(())
        } else {
            Err(format!(
                "a matching poll ended {} ({}); a poll that never matches ended {}: {}",
                matching.outcome, matching.message, never.outcome, never.message
            )
            .into())
        }
    })
}

/// Self-tests of the PATH profile mode: fake-gemini placed as `gemini` in a directory prepended to
/// `PATH` is found, and a case wanting it missing gets it missing.
fn path_mode_self_tests(by_id: &std::collections::BTreeMap<String, Case>) -> Vec<Trial> {
    let mut trials = Vec::new();
    for id in ["transport/headless-flags", "errors/binary-not-found"] {
        let Some(case) = by_id.get(id).cloned() else {
            let id = id.to_string();
            trials.push(Trial::test(
                format!("self-test/path-mode/{id}"),
                move || Err(format!("the self-test names case {id}, which does not exist").into()),
            ));
            continue;
        };
        trials.push(Trial::test(
            format!("self-test/path-mode/{id}"),
            move || {
                let mut cfg = broken_config("");
                cfg.target.profile.gemini = gemini_mcp_conformance::profile::GeminiLocation::Path;
                cfg.fake_gemini =
                    bins::try_locate("fake-gemini").map_err(|e| format!("BUG: {e}"))?;
                let r = run_case(&cfg, &case);
                // A real `gemini` on the runner's PATH makes "missing" impossible: that is a skip.
                if r.outcome == Outcome::Pass
                    || (r.outcome == Outcome::Skip && case.id.starts_with("errors/"))
                {
                    Ok(())
                } else {
                    Err(format!(
                        "in PATH mode, {} ended {}:\n{}",
                        case.id, r.outcome, r.message
                    )
                    .into())
                }
            },
        ));
    }
    trials
}

/// The runner binary copied alone into an empty directory and run from another one, as a package
/// installs it: the cases built into it are listed and run without `--cases`.
fn copied_runner_self_tests(ids: Vec<String>) -> Vec<Trial> {
    let list = Trial::test("self-test/copied-runner/lists-embedded-cases", move || {
        let (_dirs, runner, cwd) = copied_runner()?;
        let out = std::process::Command::new(&runner)
            .arg("--list")
            .current_dir(cwd)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", runner.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let listed: Vec<String> = stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect();
        if out.status.success() && listed == ids {
            Ok(())
        } else {
            Err(format!(
                "the copied runner ({}) listed {} cases, the case directory has {}:\n{stdout}{}",
                out.status,
                listed.len(),
                ids.len(),
                String::from_utf8_lossy(&out.stderr)
            )
            .into())
        }
    });
    let run = Trial::test("self-test/copied-runner/runs-embedded-case", || {
        let (_dirs, runner, cwd) = copied_runner()?;
        let out = std::process::Command::new(&runner)
            .args(["--run", "lifecycle/ping", "--json", "-", "--target"])
            .arg(env!("CARGO_BIN_EXE_gemini-mcp-conformance-broken-target"))
            // lifecycle/ping never reaches gemini; any existing file stands in for the fake.
            .arg("--fake-gemini")
            .arg(std::env::current_exe().map_err(|e| e.to_string())?)
            .current_dir(cwd)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", runner.display()))?;
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "no JSON report ({e}, {}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        let ran: Vec<&str> = report["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["id"].as_str())
            .collect();
        if out.status.success()
            && ran == ["lifecycle/ping"]
            && report["summary"] == serde_json::json!({"pass": 1})
        {
            Ok(())
        } else {
            Err(format!("the copied runner ({}) reported {report:#}", out.status).into())
        }
    });
    vec![list, run]
}

/// A temp dir holding a copy of the runner binary and nothing else, and an empty temp dir to run it
/// from: (the dirs, kept alive by the caller; the copy; the working directory).
///
/// The copy's record of this package's directory, from which it could reach `cases/` on this
/// machine, is overwritten with a path of the same length that does not exist, so the cases it
/// lists can only be the ones built into it. Not on macOS, where a changed byte breaks the
/// binary's signature and the system kills it.
fn copied_runner() -> Result<([tempfile::TempDir; 2], PathBuf, PathBuf), Failed> {
    let io = |e: std::io::Error| Failed::from(format!("BUG: {e}"));
    let bin = tempfile::tempdir().map_err(io)?;
    let cwd = tempfile::tempdir().map_err(io)?;
    let src = PathBuf::from(env!("CARGO_BIN_EXE_gemini-mcp-conformance"));
    let runner = bin
        .path()
        .join(src.file_name().expect("a binary has a file name"));
    let mut bytes = std::fs::read(&src).map_err(io)?;
    if !cfg!(target_os = "macos") {
        let dir = env!("CARGO_MANIFEST_DIR").as_bytes();
        let mut elsewhere = dir.to_vec();
        *elsewhere.last_mut().expect("a directory has a name") ^= 0x01;
        let mut at = 0;
        while let Some(i) = bytes[at..]
            .windows(dir.len())
            .position(|w| w[0] == dir[0] && w == dir)
        {
            bytes[at + i..at + i + dir.len()].copy_from_slice(&elsewhere);
            at += i + dir.len();
        }
    }
    std::fs::write(&runner, bytes).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    let cwd_path = cwd.path().to_path_buf();
    Ok(([bin, cwd], runner, cwd_path))
}

/// Self-tests of the launcher: a target that starts gemini with only `PATH` and `HOME` (the
/// broken target's `env-allowlist`) still gets the case's scenario, and its log-based checks hold,
/// with gemini found through the profile's variable and on `PATH`.
fn allowlist_self_tests(by_id: &std::collections::BTreeMap<String, Case>) -> Vec<Trial> {
    use gemini_mcp_conformance::profile::GeminiLocation;
    let scenario = inline_case(
        "self-test/scenario-through-an-allowlist",
        r#"
description = "a scenario chosen by FAKE_GEMINI_SCENARIO, behind an environment allowlist"
requirement = "The case's scenario MUST reach fake-gemini however the target filters its environment."
level = "must"

[fake]
scenario = "answer.toml"
[fake.files]
"answer.toml" = '''
[[model.turns]]
text = "The scenario of the launcher."
'''

[[step]]
call = "prompt"
arguments = { prompt = "which scenario?" }
expect.result = { content = [{ type = "text", text = "The scenario of the launcher." }] }

[[log.invocation]]
argv-flags = { "--skip-trust" = true }
"#,
    );
    let mut cases = vec![scenario];
    cases.extend(by_id.get("transport/headless-flags").cloned());
    let mut trials = Vec::new();
    for (where_, location) in [
        ("env", GeminiLocation::Env("GEMINI_CLI_BIN".into())),
        ("path", GeminiLocation::Path),
    ] {
        for case in cases.clone() {
            let location = location.clone();
            trials.push(Trial::test(
                format!("self-test/env-allowlist/{where_}/{}", case.id),
                move || {
                    let mut cfg = broken_config("env-allowlist");
                    cfg.target.profile.gemini = location;
                    cfg.fake_gemini =
                        bins::try_locate("fake-gemini").map_err(|e| format!("BUG: {e}"))?;
                    let r = run_case(&cfg, &case);
                    if r.outcome == Outcome::Pass {
                        Ok(())
                    } else {
                        Err(format!(
                            "behind an environment allowlist, {} ended {}:\n{}\n---- stderr ----\n{}",
                            case.id,
                            r.outcome,
                            r.message,
                            r.stderr.unwrap_or_default()
                        )
                        .into())
                    }
                },
            ));
        }
    }
    trials
}

/// One case against geminicli-mcp on `backend`, judged against that backend's baseline.
fn case_trial(case: Case, backend: Backend, baseline: Arc<Baseline>) -> Trial {
    let id = case.id.clone();
    Trial::ignorable_test(format!("{}{id}", backend.prefix()), move || {
        let cfg = server_config(backend)
            .map_err(|e| Failed::from(format!("BUG: cannot locate the binaries: {e}")))?;
        let r = run_case(cfg, &case);
        let listed = baseline.reason(&id);
        let detail = || {
            let mut m = format!(
                "{} {}\nrequirement: {}\n{}",
                r.outcome.to_string().to_uppercase(),
                id,
                r.requirement,
                r.message
            );
            if let Some(s) = r.stderr.as_deref().filter(|s| !s.is_empty()) {
                m.push_str(&format!("\n---- target stderr ----\n{s}\n----"));
            }
            m
        };
        match (r.outcome, listed) {
            (Outcome::Pass, None) => Ok(Completion::Completed),
            (Outcome::Pass, Some(_)) => Err(format!(
                "{id} passes now but is listed in {}: remove the entry (the baseline is strict both ways)",
                backend.baseline_path().display()
            )
            .into()),
            (Outcome::Fail | Outcome::Bug | Outcome::Warn, Some(reason)) => {
                Ok(Completion::ignored_with(format!("expected failure (baseline): {reason}")))
            }
            // The built-in profile claims every feature (but the warm backend's, on the one-shot
            // one) and maps every tool, argument and setting: a skip for a gap of the profile is
            // the suite's own mistake.
            (Outcome::Skip, _)
                if r.message.starts_with("profile geminicli-mcp ")
                    && !(backend != Backend::Acp
                        && r.message.ends_with("lacks feature \"warm-backend\""))
                    && !r.message.contains(" claims feature ") =>
            {
                Err(format!(
                    "{id} is skipped against the built-in profile, which should cover it: {}",
                    r.message
                )
                .into())
            }
            (Outcome::Skip, _) => Ok(Completion::ignored_with(format!("skipped: {}", r.message))),
            (Outcome::Warn, None) => {
                eprintln!("warning: {}", detail());
                Ok(Completion::Completed)
            }
            (Outcome::Fail | Outcome::Bug, None) => Err(detail().into()),
        }
    })
}

/// One self-test: `case` against the broken target in `mode` must end as `want` (`fake`: the case
/// runs the real fake-gemini).
fn self_test_trial(mode: &'static str, case: Case, want: Outcome, fake: bool) -> Trial {
    let name = format!(
        "self-test/{}/{}",
        if mode.is_empty() { "not-broken" } else { mode },
        case.id
    );
    Trial::test(name, move || {
        let mut cfg = broken_config(mode);
        if fake {
            cfg.fake_gemini = bins::try_locate("fake-gemini").map_err(|e| format!("BUG: {e}"))?;
        }
        let r = run_case(&cfg, &case);
        if r.outcome == want {
            Ok(())
        } else {
            Err(format!(
                "against the broken target in mode {mode:?}, case {} ended {} instead of {want}:\n{}\n---- stderr ----\n{}",
                case.id,
                r.outcome,
                r.message,
                r.stderr.unwrap_or_default()
            )
            .into())
        }
    })
}
