//! The MCP prompts: workflows a user starts by name (`review`, `second-opinion`, `read`), each
//! with arguments a person types. Each answers messages that tell the client's model which tool
//! to call with what — workspace, `plan` approval, a deadline — and gathers what the server can
//! itself (a review's diff, bounded). Arguments are checked as tool arguments are; a refusal is
//! a JSON-RPC invalid-params error whose message says what to fix.

pub(crate) mod git;

use std::path::{Path, PathBuf};

use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

use crate::error::Failure;
use crate::policy::Expect;
use crate::roots::Roots;
use crate::tools::prompt::{GEMINI_PROMPT, GEMINI_PROMPT_WITH_CONTEXT};
use git::{Changes, Gathered, GitError, MAX_DIFF_BYTES};

/// `review`.
pub(crate) const REVIEW: &str = "review";
/// `second-opinion`.
pub(crate) const SECOND_OPINION: &str = "second-opinion";
/// `read`.
pub(crate) const READ: &str = "read";

/// The deadline a review or a read asks for (`timeout_total_ms`): long analyses of large inputs.
const LONG_MS: u64 = 900_000;
/// The deadline a second opinion asks for.
const SHORT_MS: u64 = 300_000;
/// Most paths one `read` or `review` names.
const MAX_PATHS: usize = 50;

fn argument(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument::new(name)
        .with_description(description)
        .with_required(required)
}

/// The prompts, as `prompts/list` shows them. Free text comes last and is optional: Claude Code
/// splits what the user types after the command at whitespace, hands the words out in this
/// order and drops the rest, so a question may also come from the conversation. No
/// `workspace` argument is listed (the server's working directory is the workspace; a call's
/// `workspace` argument is still read, for clients that name arguments).
pub(crate) fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            REVIEW,
            Some("Gemini reviews a change: uncommitted (default), staged, unstaged, a commit range or one commit, optionally limited to paths"),
            Some(vec![
                argument("changes", "uncommitted (default), staged, unstaged, a range like main..HEAD, or one commit", false),
                argument("paths", "Files or folders to limit the review to, separated by commas", false),
                argument("focus", "What to look at most, e.g. error handling", false),
            ]),
        )
        .with_title("Gemini: review a change"),
        Prompt::new(
            SECOND_OPINION,
            Some("Gemini gives an independent view on a question or a plan"),
            Some(vec![
                argument("question", "The question or plan (default: the one at hand in this conversation)", false),
            ]),
        )
        .with_title("Gemini: second opinion"),
        Prompt::new(
            READ,
            Some("Gemini reads whole files or folders itself (its 1M-token context) and answers a question about them"),
            Some(vec![
                argument("paths", "Files or folders in the workspace, separated by commas", true),
                argument("question", "What to find out from them (default: what this conversation asks)", false),
            ]),
        )
        .with_title("Gemini: read and answer"),
    ]
}

/// A prompt's arguments: strings, an empty one as absent. Unknown names are ignored, as tool
/// arguments are.
struct Args<'a>(Option<&'a JsonObject>);

impl Args<'_> {
    fn get(&self, name: &str) -> Result<Option<String>, McpError> {
        match self.0.and_then(|a| a.get(name)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("{name} must be a string"))),
        }
    }

    fn required(&self, name: &str) -> Result<String, McpError> {
        self.get(name)?
            .ok_or_else(|| invalid(format!("{name} is required")))
    }
}

fn invalid(message: impl Into<String>) -> McpError {
    McpError::invalid_params(message.into(), None)
}

fn refused(f: Failure) -> McpError {
    invalid(f.message)
}

/// The messages of the prompt `name`, its arguments checked.
pub(crate) async fn get(
    name: &str,
    arguments: Option<&JsonObject>,
    roots: &Roots<'_>,
) -> Result<GetPromptResult, McpError> {
    let args = Args(arguments);
    let text = match name {
        REVIEW => review(&args, roots).await?,
        SECOND_OPINION => second_opinion(&args, roots).await?,
        READ => read(&args, roots).await?,
        _ => {
            let names: Vec<String> = list().into_iter().map(|p| p.name).collect();
            return Err(McpError::invalid_params(
                format!("unknown prompt: {name}"),
                Some(json!({ "prompts": names })),
            ));
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

/// The workspace argument, checked (the server's working directory when absent).
async fn workspace(args: &Args<'_>, roots: &Roots<'_>) -> Result<PathBuf, McpError> {
    roots
        .workspace("workspace", args.get("workspace")?.as_deref())
        .await
        .map_err(refused)
}

/// The `paths` argument: each checked (exists, under the roots) and inside `workspace`, as
/// relative paths.
async fn paths(raw: &str, workspace: &Path, roots: &Roots<'_>) -> Result<Vec<String>, McpError> {
    let given: Vec<&str> = raw
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    if given.len() > MAX_PATHS {
        return Err(invalid(format!(
            "paths: {} given, at most {MAX_PATHS}: name their folders instead",
            given.len()
        )));
    }
    let mut out = Vec::new();
    for p in given {
        let path = roots
            .check("paths", p, workspace, Expect::Any)
            .await
            .map_err(refused)?;
        let rel = git::relative(workspace, &path).ok_or_else(|| {
            invalid(format!(
                "paths {p:?}: outside the workspace {}; set workspace to a folder that holds it",
                workspace.display()
            ))
        })?;
        out.push(rel);
    }
    Ok(out)
}

/// The lines that tell the model how to call: the tool's arguments besides the prompt.
fn call_lines(workspace: &Path, timeout_ms: u64) -> String {
    format!(
        "- workspace: {}\n- approval_mode: \"plan\" (read-only: nothing is changed)\n- timeout_total_ms: {timeout_ms}\n",
        json!(workspace.to_string_lossy())
    )
}

async fn review(args: &Args<'_>, roots: &Roots<'_>) -> Result<String, McpError> {
    let changes = Changes::parse(args.get("changes")?.as_deref()).map_err(invalid)?;
    let focus = args.get("focus")?;
    let ws = workspace(args, roots).await?;
    let specs = match args.get("paths")? {
        Some(raw) => paths(&raw, &ws, roots).await?,
        None => Vec::new(),
    };
    let (dir, what) = (ws.clone(), changes.clone());
    let gathered = tokio::task::spawn_blocking(move || git::gather(&dir, &what, &specs))
        .await
        .map_err(|e| McpError::internal_error(format!("the diff was not gathered: {e}"), None))?;
    let label = changes.label();
    let (diff, skipped) = match gathered {
        Ok(Gathered::Diff { text, skipped }) => (text, skipped),
        Ok(Gathered::TooLarge { stat }) => {
            return Ok(format!(
                "The diff of {label} is over {} KiB, more than one Gemini call takes; nothing was sent. \
Narrow it: give `paths` (files or folders) or a smaller `changes` range, and run the review again.\n\n{stat}",
                MAX_DIFF_BYTES / 1024
            ));
        }
        Err(GitError::Input(why)) => return Err(invalid(why)),
        Err(GitError::Failed(why)) => {
            return Err(McpError::internal_error(format!("git failed: {why}"), None));
        }
    };
    if diff.trim().is_empty() {
        return Ok(format!("There is nothing to review in {label}."));
    }
    let mut ask = String::from("Review this change: bugs, risks, missing tests; cite file:line.");
    if let Some(focus) = focus {
        ask.push_str(" Focus: ");
        ask.push_str(focus.trim());
    }
    let mut text = format!(
        "Have Gemini review {label}. Call {GEMINI_PROMPT_WITH_CONTEXT} with:\n- prompt: {}\n- context: the diff below, verbatim\n{}\
Then give me Gemini's findings, each checked against the code.\n",
        json!(ask),
        call_lines(&ws, LONG_MS)
    );
    if !skipped.is_empty() {
        text.push_str(&format!(
            "(Not in the diff: {} — links or nested repositories.)\n",
            skipped.join(", ")
        ));
    }
    text.push_str("\n<diff>\n");
    text.push_str(&diff);
    if !diff.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("</diff>");
    Ok(text)
}

async fn second_opinion(args: &Args<'_>, roots: &Roots<'_>) -> Result<String, McpError> {
    let question = args.get("question")?;
    let ws = workspace(args, roots).await?;
    let (which, quoted) = match &question {
        Some(q) => (
            "the question below",
            format!("\n\n<question>\n{}\n</question>", q.trim()),
        ),
        None => (
            "the question or plan at hand in this conversation",
            String::new(),
        ),
    };
    Ok(format!(
        "Get Gemini's independent view. Call {GEMINI_PROMPT} with:\n- prompt: {which} and the facts Gemini needs (it has not seen this conversation), not your own conclusion\n{}\
Then set Gemini's answer beside yours: where they agree, where they differ and why.{quoted}",
        call_lines(&ws, SHORT_MS),
    ))
}

async fn read(args: &Args<'_>, roots: &Roots<'_>) -> Result<String, McpError> {
    let raw = args.required("paths")?;
    let question = args.get("question")?;
    let ws = workspace(args, roots).await?;
    let paths = paths(&raw, &ws, roots).await?;
    let read = format!(
        "Read these in full, files and folders: {}.",
        paths.join(", ")
    );
    let prompt = match question {
        Some(q) => json!(format!("{read} Then answer: {}", q.trim())).to_string(),
        None => format!(
            "{} then the question this conversation asks about them",
            json!(read)
        ),
    };
    Ok(format!(
        "Have Gemini read these paths itself; do not read or paste them. Call {GEMINI_PROMPT} with:\n- prompt: {prompt}\n{}\
Then answer me from Gemini's reply.",
        call_lines(&ws, LONG_MS)
    ))
}

#[cfg(test)]
mod tests;
