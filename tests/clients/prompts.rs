//! The server's MCP prompts started by a user in real clients: the `review` scenario of
//! `scenarios.json`, one test per client. Each prints what its model received for the command
//! (the message's size and estimated tokens, and how many model requests carried it).

use super::{drive, scenario, Report};

/// The report of a `review` run, with its measurement printed.
fn review_run(client: &str) -> Option<Report> {
    let report = drive(client, "review")?;
    let m = report
        .prompt_message
        .as_ref()
        .expect("a prompt scenario reports its message");
    eprintln!(
        "{client}: the review message is {} characters, about {} tokens, in {} model request(s)",
        m.chars, m.tokens, m.requests
    );
    Some(report)
}

/// The user's review command gives the model the diff and the call to make; the model calls
/// `gemini_prompt_with_context` read-only in the project with the change, and the answer comes back.
fn review_reaches_gemini(client: &str) {
    let Some(report) = review_run(client) else {
        return;
    };
    let s = scenario("review");
    let m = report.prompt_message.as_ref().unwrap();
    let text = m
        .text
        .as_deref()
        .expect("the model received the prompt's message");
    assert!(
        text.contains("gemini_prompt_with_context"),
        "{client}: {text}"
    );
    assert!(
        m.tokens < 400,
        "{client}: a one-line change's review costs {} tokens",
        m.tokens
    );
    let [call] = report.calls.as_slice() else {
        panic!("{client}: expected one call, got {:#?}", report.calls);
    };
    assert_eq!(call.tool, "gemini_prompt_with_context", "{client}");
    assert_eq!(call.arguments["approval_mode"], "plan", "{client}");
    let context = call.arguments["context"].as_str().unwrap_or_default();
    assert!(
        context.contains("-    return a + b\n+    return a - b"),
        "{client}: the diff is not in the call: {context:?}"
    );
    let workspace = call.arguments["workspace"].as_str().unwrap_or_default();
    assert!(workspace.ends_with("/project"), "{client}: {workspace}");
    let answer = s["answer"].as_str().unwrap();
    assert!(call.seen().contains(answer), "{client}: {:?}", call.seen());
}

/// Codex 0.169.0 lists no MCP prompts: the command reaches its model as the text the user typed,
/// no prompt message, and the model (which follows only a prompt's message) calls nothing.
fn no_prompts_in_codex() {
    let Some(report) = review_run("codex") else {
        return;
    };
    let m = report.prompt_message.as_ref().unwrap();
    assert_eq!(
        m.text, None,
        "Codex now expands MCP prompts: make this a review test"
    );
    assert!(report.calls.is_empty(), "{:#?}", report.calls);
}

mod review {
    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn claude() {
        super::review_reaches_gemini("claude");
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn gemini() {
        super::review_reaches_gemini("gemini");
    }

    #[test]
    #[ignore = "runs a real MCP client (node, npm; installs it once); see tests/clients"]
    fn codex_has_no_prompts() {
        super::no_prompts_in_codex();
    }
}
