//! The repository's Claude Code plugin (`plugins/geminicli-mcp/`, listed by the marketplace in
//! `.claude-plugin/marketplace.json`) through the real Claude Code, headless and offline
//! (`plugin.mjs`): `claude plugin validate --strict` passes for the marketplace and the plugin,
//! `claude plugin marketplace add <checkout>` and `claude plugin install geminicli-mcp@geminicli-mcp`
//! work, `claude plugin details` projects the skills' token cost, and `claude plugin eval` runs the
//! plugin's eval cases (`plugins/geminicli-mcp/evals/`) against a scripted model on loopback
//! (`plugin-model.mjs`), which decides from the skill listing and the skills' text Claude Code
//! shows it. The cases pass for a model that follows the plugin, and fail for one that calls
//! Gemini for everything or for nothing: the evals can fail. Then the user's
//! `/geminicli-mcp:review staged focus: the loop`, typed in `claude -p` in a repository with a
//! staged change, runs `git diff --cached` and the server's review tool without asking (the
//! command's `allowed-tools`), with the server started by the plugin's own `.mcp.json` (`npx -y
//! geminicli-mcp`, which runs this build as the npm-global command of a private npm prefix, with
//! fake-gemini as the CLI), and Gemini's answer reaches the model.

use std::process::Command;

use serde::Deserialize;

use super::{here, pinned, runs};

/// What the driver prints.
#[derive(Debug, Deserialize)]
struct Report {
    version: String,
    validate: Validate,
    marketplace_add: Step,
    install: Step,
    details: Details,
    #[serde(rename = "eval")]
    evals: Eval,
    /// The typed `/geminicli-mcp:review` run, when the driver was given the server.
    command: Option<TypedReview>,
    /// What the scripted model did in each conversation.
    decisions: Vec<Decision>,
}

#[derive(Debug, Deserialize)]
struct Validate {
    marketplace: Step,
    plugin: Step,
}

/// One Claude Code command: its exit status and what it printed.
#[derive(Debug, Deserialize)]
struct Step {
    status: Option<i32>,
    output: String,
}

#[derive(Debug, Deserialize)]
struct Details {
    status: Option<i32>,
    output: String,
    /// The projected always-on tokens of the whole plugin.
    always_on: Option<u64>,
    components: Vec<Component>,
}

/// One row of `claude plugin details`' per-component table, in tokens.
#[derive(Debug, Deserialize)]
struct Component {
    name: String,
    always_on: u64,
    on_invoke: u64,
}

#[derive(Debug, Deserialize)]
struct Eval {
    status: Option<i32>,
    output: String,
    cases: Vec<Case>,
}

/// One eval case: its mean score with the plugin and without it (the baseline arm).
#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    with: Option<f64>,
    without: Option<f64>,
}

/// `claude -p "/geminicli-mcp:review staged focus: the loop"` in a repository with a staged change.
#[derive(Debug, Deserialize)]
struct TypedReview {
    status: Option<i32>,
    output: String,
    /// `git diff --cached` in that repository.
    diff: String,
    /// The prompts fake-gemini was given.
    fake_prompts: Vec<String>,
}

/// One conversation of the scripted model: the skill it invoked and the tool it called, if any.
#[derive(Debug, Deserialize)]
struct Decision {
    request: String,
    skill: Option<String>,
    tool: Option<String>,
    arguments: Option<serde_json::Value>,
    /// The git command a typed command's conversation ran.
    git: Option<String>,
    /// What the model was shown as the Gemini call's result.
    seen: Option<String>,
}

/// Runs the driver under `policy` (with the server and fake-gemini when `review` is set, for the
/// typed review); `None` (after saying so) without node or npm.
fn drive_plugin(policy: &str, review: bool) -> Option<Report> {
    if !runs("node") || !runs("npm") {
        eprintln!("node or npm not found: skipping the plugin test");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new("node");
    cmd.arg(here().join("plugin.mjs"))
        .arg("--checkout")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .arg("--work")
        .arg(dir.path())
        .args(["--policy", policy]);
    if review {
        cmd.arg("--server")
            .arg(gemini_mcp_conformance::bins::locate("geminicli-mcp"))
            .arg("--fake")
            .arg(gemini_mcp_conformance::bins::locate("fake-gemini"));
    }
    let out = cmd.output().expect("run node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if std::env::var_os("GEMINICLI_MCP_KEEP_CLIENT_RUNS").is_some() {
        eprintln!("kept the run in {}", dir.keep().display());
    }
    assert!(
        out.status.success(),
        "plugin.mjs failed ({}):\n{stderr}",
        out.status
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "plugin.mjs printed no report ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(report.version, pinned("claude"));
    for (what, step) in [
        ("validate the marketplace", &report.validate.marketplace),
        ("validate the plugin", &report.validate.plugin),
        ("add the marketplace", &report.marketplace_add),
        ("install the plugin", &report.install),
    ] {
        assert_eq!(step.status, Some(0), "{what}:\n{}", step.output);
    }
    Some(report)
}

/// The score of `name` with the plugin and without it.
fn scores(report: &Report, name: &str) -> (f64, f64) {
    let case = report
        .evals
        .cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no eval case {name}:\n{}", report.evals.output));
    (case.with.unwrap(), case.without.unwrap())
}

#[test]
#[ignore = "runs the real Claude Code (node, npm; installs it once); see tests/clients"]
fn validates_installs_reviews_and_passes_its_evals() {
    let Some(report) = drive_plugin("follow", true) else {
        return;
    };
    assert!(
        report
            .validate
            .plugin
            .output
            .contains("mcpServers: gemini stdio npx"),
        "{}",
        report.validate.plugin.output
    );

    // Every skill's always-loaded part (its name and description) stays under 100 tokens.
    let details = &report.details;
    assert_eq!(details.status, Some(0), "{}", details.output);
    let names: Vec<&str> = details.components.iter().map(|c| c.name.as_str()).collect();
    for want in [
        "gemini-review",
        "gemini-second-opinion",
        "gemini-large-read",
        "gemini-delegate",
        "review",
    ] {
        assert!(
            names.contains(&want),
            "details lists no {want}:\n{}",
            details.output
        );
    }
    for c in &details.components {
        assert!(c.always_on < 100, "{}'s always-on cost: {c:?}", c.name);
        assert!(c.on_invoke > 0, "{c:?}");
    }
    assert!(
        details.always_on.is_some_and(|t| t < 500),
        "{}",
        details.output
    );

    assert_eq!(report.evals.status, Some(0), "{}", report.evals.output);
    assert_eq!(
        scores(&report, "review-change"),
        (1.0, 0.0),
        "{}",
        report.evals.output
    );
    assert_eq!(
        scores(&report, "one-line-question"),
        (1.0, 1.0),
        "{}",
        report.evals.output
    );
    // The review went through the review skill to its tool, read-only, with the diff.
    let review = report
        .decisions
        .iter()
        .find(|d| d.tool.is_some() && d.skill.as_deref() != Some("command"))
        .unwrap_or_else(|| panic!("no Gemini call: {:#?}", report.decisions));
    assert_eq!(review.skill.as_deref(), Some("geminicli-mcp:gemini-review"));
    assert_eq!(
        review.tool.as_deref(),
        Some("mcp__plugin_geminicli-mcp_gemini__gemini_prompt_with_context")
    );
    let args = review.arguments.as_ref().unwrap();
    assert_eq!(args["approval_mode"], "plan");
    assert!(
        args["context"].as_str().unwrap().contains("+    loop {"),
        "{args}"
    );
    assert!(
        report
            .decisions
            .iter()
            .filter(|d| d.request.contains("TCP port"))
            .all(|d| d.tool.is_none()),
        "{:#?}",
        report.decisions
    );
    typed_review(&report);
}

/// The typed `/geminicli-mcp:review staged focus: the loop`: the command's allowed tools run
/// without asking, the plugin's server starts from its `.mcp.json` (`npx -y geminicli-mcp` finding
/// the npm-global command), Gemini gets the staged diff read-only and its answer reaches the model.
fn typed_review(report: &Report) {
    let command = report.command.as_ref().expect("the typed review ran");
    assert_eq!(command.status, Some(0), "{}", command.output);
    let call = report
        .decisions
        .iter()
        .find(|d| d.skill.as_deref() == Some("command"))
        .unwrap_or_else(|| panic!("the command made no Gemini call: {:#?}", report.decisions));
    assert_eq!(call.git.as_deref(), Some("git diff --cached"));
    assert_eq!(
        call.tool.as_deref(),
        Some("mcp__plugin_geminicli-mcp_gemini__gemini_prompt_with_context")
    );
    let args = call.arguments.as_ref().unwrap();
    assert_eq!(args["approval_mode"], "plan");
    assert!(
        args["prompt"].as_str().unwrap().contains("the loop"),
        "{args}"
    );
    assert_eq!(
        args["context"].as_str().unwrap().trim_end(),
        command.diff.trim_end()
    );
    // fake-gemini's answer to the review reached the model, and the model's final answer.
    let seen = call
        .seen
        .as_deref()
        .expect("the model was shown the result");
    assert!(seen.contains("Hello there! How can I help?"), "{seen}");
    assert!(
        command.output.contains("Hello there! How can I help?"),
        "{}",
        command.output
    );
    assert!(
        command
            .fake_prompts
            .iter()
            .any(|p| p.contains("+    loop {")),
        "fake-gemini was not given the diff: {:#?}",
        command.fake_prompts
    );
}

#[test]
#[ignore = "runs the real Claude Code (node, npm; installs it once); see tests/clients"]
fn evals_fail_a_model_that_calls_gemini_for_a_one_line_question() {
    let Some(report) = drive_plugin("always-gemini", false) else {
        return;
    };
    assert_ne!(report.evals.status, Some(0), "{}", report.evals.output);
    let (with, _) = scores(&report, "one-line-question");
    assert!(with < 1.0, "{}", report.evals.output);
}

#[test]
#[ignore = "runs the real Claude Code (node, npm; installs it once); see tests/clients"]
fn evals_fail_a_model_that_never_calls_gemini() {
    let Some(report) = drive_plugin("never-gemini", false) else {
        return;
    };
    assert_ne!(report.evals.status, Some(0), "{}", report.evals.output);
    assert_eq!(
        scores(&report, "review-change").0,
        0.0,
        "{}",
        report.evals.output
    );
}
