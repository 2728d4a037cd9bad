//! The runner's command line: runs the case files against a target and reports, judged against an
//! optional expected-failures baseline.
//!
//! Exit codes: 0 every case did what it should (or failed as the baseline expects), 1 an unexpected
//! failure or bug or a stale baseline entry, 2 a usage or setup error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use clap::Parser;
use gemini_mcp_conformance::case;
use gemini_mcp_conformance::report::{Report, ReportedCase};
use gemini_mcp_conformance::select::{split_command, Selection};
use gemini_mcp_conformance::{
    bins, run_case, Baseline, CaseResult, Outcome, Profile, RunConfig, Target, Verdict,
};

/// Runs the gemini-mcp-conformance cases against an MCP server that wraps the Gemini CLI.
///
/// The target is spawned once per case, without a shell, in a private temp dir, with fake-gemini
/// where its profile says it looks for gemini.
#[derive(Parser, Debug)]
#[command(version, after_help = AFTER_HELP)]
struct Args {
    /// The target's command line, e.g. --target "node dist/index.js" (split into words, no shell).
    /// Default: the geminicli-mcp binary of this workspace.
    #[arg(long)]
    target: Option<String>,
    /// A built-in profile name (geminicli-mcp: its one-shot backend; geminicli-mcp-acp: its warm
    /// backend, the default) or a profile TOML file.
    #[arg(long, default_value = "geminicli-mcp")]
    profile: String,
    /// The fake-gemini executable. Default: the one beside this runner (as the npm and PyPI
    /// packages install it), else the one of this workspace.
    #[arg(long, env = "GEMINI_MCP_CONFORMANCE_FAKE_GEMINI")]
    fake_gemini: Option<PathBuf>,
    /// The case directory. Default: the cases built into this runner (the suite's cases/ when it
    /// was compiled).
    #[arg(long)]
    cases: Option<PathBuf>,
    /// Run only cases whose id matches this glob (repeatable), e.g. --run 'termination/*'.
    #[arg(long = "run", value_name = "GLOB")]
    run: Vec<String>,
    /// Skip cases whose id matches this glob (repeatable).
    #[arg(long = "skip", value_name = "GLOB")]
    skip: Vec<String>,
    /// An expected-failures baseline (TOML), strict both ways.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Writes the JSON report to FILE ("-": stdout).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Lists the selected cases (id, level, requirement) and exits.
    #[arg(long)]
    list: bool,
    /// Prints a baseline listing this run's failures (to bootstrap a baseline file).
    #[arg(long)]
    print_baseline: bool,
    /// Runs every case that pins no protocol version of its own at this one, e.g. --era 2026-07-28
    /// (no `initialize`: the client's context goes in every request's `_meta`); a version the
    /// profile does not list skips those cases.
    #[arg(long, value_name = "VERSION")]
    era: Option<String>,
    /// The Gemini CLI version fake-gemini reports in every case that sets none of its own, e.g.
    /// --cli-version 0.64.0-preview.0: the changes of the releases after 0.61 that fake-gemini
    /// plays (its README) are then played in every case.
    #[arg(long, value_name = "VERSION")]
    cli_version: Option<String>,
    /// Multiplies every timeout and window: raise it on a slow or loaded machine.
    #[arg(
        long,
        env = "GEMINI_MCP_CONFORMANCE_TIMEOUT_SCALE",
        default_value_t = 1.0
    )]
    timeout_scale: f64,
    /// Cases run at once.
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// Keeps each case's temp dir and prints where.
    #[arg(long)]
    keep_dirs: bool,
    /// Prints the message of passing cases' notes and of warnings too.
    #[arg(long, short)]
    verbose: bool,
    /// Runs the cases against the real Gemini CLI at this path instead of fake-gemini, offline:
    /// each case gets a scripted API of its own (fake-gemini-api, in process) that plays its
    /// scenario and prompt markers, and the CLI a fake key pointed at it. Cases marked
    /// `fake-only` are skipped; the checks of fake-gemini's invocation log are not made.
    #[arg(long, value_name = "GEMINI")]
    real_cli: Option<PathBuf>,
}

const AFTER_HELP: &str = "Outcomes: pass, fail (a MUST failed), warn (a SHOULD failed), skip (not applicable), \
bug (fixture or harness problem, e.g. fake-gemini exit 99).\nExit codes: 0 ok, 1 unexpected failure/bug or stale \
baseline entry, 2 usage or setup error.";

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gemini-mcp-conformance: {e}");
            ExitCode::from(2)
        }
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "the runner's command line in the order it is applied: listing, selection, baseline, report"
)]
fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = match Profile::builtin(&args.profile) {
        Some(p) => p,
        None => Profile::load(args.profile.as_ref()).map_err(anyhow::Error::msg)?,
    };
    let selection = Selection::new(&args.run, &args.skip).map_err(anyhow::Error::msg)?;
    let loaded = match &args.cases {
        Some(dir) => case::load_dir(dir)?,
        None => case::load_embedded(),
    };
    let all_ids: Vec<String> = loaded
        .iter()
        .map(|c| match c {
            Ok(c) => c.id.clone(),
            Err((id, _)) => id.clone(),
        })
        .collect();
    let selected: Vec<&case::LoadedCase> = loaded
        .iter()
        .filter(|c| {
            selection.selects(match c {
                Ok(c) => &c.id,
                Err((id, _)) => id,
            })
        })
        .collect();
    if args.list {
        let mut out = std::io::stdout().lock();
        for c in &selected {
            let written = match c {
                Ok(c) => writeln!(out, "{}\t{}\t{}", c.id, c.spec.level, c.spec.requirement),
                Err((id, e)) => writeln!(out, "{id}\tINVALID\t{e}"),
            };
            match written {
                // `--list | head` is fine: the reader has seen enough.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                other => other?,
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let baseline = match &args.baseline {
        Some(p) => Baseline::load(p).map_err(anyhow::Error::msg)?,
        None => Baseline::default(),
    };
    let command = match &args.target {
        Some(t) => split_command(t).map_err(anyhow::Error::msg)?,
        None => vec![bins::try_locate("geminicli-mcp")
            .map_err(anyhow::Error::msg)?
            .to_string_lossy()
            .into_owned()],
    };
    anyhow::ensure!(!command.is_empty(), "--target is empty");
    let fake_gemini = match &args.fake_gemini {
        Some(p) => p.clone(),
        None => bins::try_locate("fake-gemini").map_err(anyhow::Error::msg)?,
    };
    let cfg = RunConfig {
        target: Target {
            command: command.clone(),
            profile: profile.clone(),
        },
        fake_gemini,
        timeout_scale: args.timeout_scale,
        keep_dirs: args.keep_dirs,
        era_override: args.era.clone(),
        cli_version: args.cli_version.clone(),
        real_cli: match &args.real_cli {
            Some(p) => Some(
                std::fs::canonicalize(p)
                    .map_err(|e| anyhow::anyhow!("--real-cli {}: {e}", p.display()))?,
            ),
            None => None,
        },
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(4)
        })
        .max(1);

    let results: Mutex<Vec<CaseResult>> = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(c) = selected.get(i) else { return };
                let r = match c {
                    Ok(case) => run_case(&cfg, case),
                    Err((id, e)) => CaseResult {
                        id: id.clone(),
                        level: gemini_mcp_conformance::Level::Must,
                        requirement: String::new(),
                        outcome: Outcome::Bug,
                        message: format!("BUG: the case file is invalid: {e}"),
                        stderr: None,
                        duration_ms: 0,
                    },
                };
                print_line(&r, baseline.verdict(&r.id, r.outcome), args.verbose);
                results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by(|a, b| a.id.cmp(&b.id));

    let unknown: Vec<String> = baseline
        .unknown_entries(&all_ids)
        .into_iter()
        .map(String::from)
        .collect();
    let reported: Vec<ReportedCase> = results
        .iter()
        .map(|r| ReportedCase {
            verdict: baseline.verdict(&r.id, r.outcome),
            result: r.clone(),
        })
        .collect();
    let failed = !unknown.is_empty() || reported.iter().any(|r| r.verdict.fails_run());
    let mut summary = std::collections::BTreeMap::new();
    for r in &results {
        *summary.entry(r.outcome.to_string()).or_insert(0) += 1;
    }
    for r in &reported {
        if r.verdict == Verdict::ExpectedFailure {
            *summary.entry("expected-failure".to_string()).or_insert(0) += 1;
        }
    }
    print_details(&reported);
    for u in &unknown {
        eprintln!("STALE baseline entry names no case: {u}");
    }
    eprintln!(
        "\n{} cases: {}{}",
        results.len(),
        summary
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        if failed { " — FAILED" } else { " — ok" }
    );
    if args.print_baseline {
        print!("{}", Baseline::from_results(&results).to_toml());
    }
    if let Some(dest) = &args.json {
        let report = Report {
            target: command,
            profile: profile.name.clone(),
            summary,
            failed,
            unknown_baseline_entries: unknown,
            cases: reported,
        };
        let text = serde_json::to_string_pretty(&report)?;
        if dest == "-" {
            println!("{text}");
        } else {
            std::fs::write(dest, text)?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_line(r: &CaseResult, verdict: Verdict, verbose: bool) {
    let tag = match (r.outcome, verdict) {
        (_, Verdict::ExpectedFailure) => {
            format!("{} (expected)", r.outcome.to_string().to_uppercase())
        }
        (_, Verdict::Stale) => "PASS (STALE baseline entry)".to_string(),
        (o, _) => o.to_string().to_uppercase(),
    };
    let mut line = format!("{tag:<20} {} ({} ms)", r.id, r.duration_ms);
    if r.outcome == Outcome::Skip || (verbose && !r.message.is_empty()) {
        line.push_str(&format!(
            " — {}",
            r.message.lines().next().unwrap_or_default()
        ));
    }
    eprintln!("{line}");
}

fn print_details(reported: &[ReportedCase]) {
    for r in reported {
        if !(r.verdict.fails_run() || r.result.outcome == Outcome::Warn) {
            continue;
        }
        let res = &r.result;
        eprintln!(
            "\n==== {} {} ({:?})",
            res.outcome.to_string().to_uppercase(),
            res.id,
            r.verdict
        );
        eprintln!("requirement: {}", res.requirement);
        if r.verdict == Verdict::Stale {
            eprintln!("listed in the baseline but passes now: remove the entry");
            continue;
        }
        eprintln!("{}", res.message);
        if let Some(stderr) = res.stderr.as_deref().filter(|s| !s.is_empty()) {
            let tail: String = {
                let chars: Vec<char> = stderr.chars().collect();
                let start = chars.len().saturating_sub(4000);
                chars[start..].iter().collect()
            };
            eprintln!("---- target stderr (last 4000 characters) ----\n{tail}\n----");
        }
    }
}
