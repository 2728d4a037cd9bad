//! The commands the real agent runs from a prompt's text, before any model call (0.61's
//! `GeminiAgent.prompt` → `CommandHandler.handleCommand`, `packages/cli/src/acp/` in the
//! bundle): the text of the prompt's leading text blocks (a resource reads `@uri` there, a file
//! link `@path`; an image or audio block ends them), JavaScript-`trim()`med, starting with `/` or
//! `$`, its first word after that character (spaces allowed between) a command of the registry.
//! Each answers with one `agent_message_chunk` and the result `end_turn` with zero tokens; the
//! model API receives nothing. The answers are the real agent's in a fresh HOME (observed over
//! ACP, docs/acp.md "Commands in a prompt"); the fake keeps no memory files (`/memory` is always
//! empty) and no extensions.

use serde_json::{json, Value};

use super::agent::{AcpSession, Agent, Pending};

/// What `/init` offers as the prompt that fills the template (the CLI's `performInit` text).
const INIT_PROMPT: &str = include_str!("init-prompt.md");

/// The registry's top-level names and their subcommands (`CommandHandler.createRegistry`),
/// with the one alias (`memory reload`).
const COMMANDS: &[(&str, &[&str])] = &[
    ("memory", &["show", "refresh", "reload", "list", "inbox"]),
    (
        "extensions",
        &[
            "list",
            "explore",
            "enable",
            "disable",
            "install",
            "link",
            "uninstall",
            "restart",
            "update",
        ],
    ),
    ("init", &[]),
    ("restore", &["list"]),
    ("about", &[]),
    ("help", &[]),
];

/// The text the agent tests (`commandText`): the blocks' text up to the first image or audio.
fn command_text(blocks: &[Value]) -> String {
    let mut s = String::new();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => s.push_str(b["text"].as_str().unwrap_or_default()),
            Some("resource") => {
                s.push('@');
                s.push_str(b["resource"]["uri"].as_str().unwrap_or_default());
            }
            Some("resource_link") => {
                let uri = b["uri"].as_str().unwrap_or_default();
                s.push('@');
                s.push_str(uri.strip_prefix("file://").unwrap_or(uri));
            }
            _ => break,
        }
    }
    s
}

/// `parseSlashCommand`: the command (top-level name, subcommand) and its arguments, or `None`
/// when the text is not one.
fn parse(text: &str) -> Option<(&'static str, Option<&'static str>, Vec<String>)> {
    let trimmed = text.trim_matches(crate::settings::js_space);
    let rest = trimmed
        .strip_prefix('/')
        .or_else(|| trimmed.strip_prefix('$'))?;
    let parts: Vec<&str> = rest
        .split(crate::settings::js_space)
        .filter(|p| !p.is_empty())
        .collect();
    let (name, subs) = COMMANDS.iter().find(|(n, _)| Some(n) == parts.first())?;
    let sub = parts
        .get(1)
        .and_then(|p| subs.iter().find(|s| *s == p))
        .copied();
    let skip = if sub.is_some() { 2 } else { 1 };
    let args = parts.iter().skip(skip).map(|s| (*s).to_string()).collect();
    Some((name, sub, args))
}

/// Runs the prompt as a command when it is one: `Some` with the prompt's result (the model is
/// not called), `None` when the prompt goes to the model. `logged` gets the command's name
/// (`memory list`) first.
pub(super) fn run(
    agent: &Agent,
    s: &AcpSession,
    blocks: &[Value],
    p: &Pending,
    logged: impl FnOnce(&str),
) -> Option<Result<Value, Value>> {
    let (name, sub, args) = parse(&command_text(blocks))?;
    logged(&sub.map_or(name.to_string(), |sub| format!("{name} {sub}")));
    let text = match (name, sub) {
        ("init", _) => init(&s.cwd),
        ("memory", None | Some("show")) => "Memory is currently empty.".into(),
        ("memory", Some("refresh" | "reload")) => {
            "Memory reloaded successfully. No memory content found".into()
        }
        ("memory", Some("list")) => "No GEMINI.md files in use.".into(),
        ("memory", Some(_)) => "The memory inbox requires Auto Memory. Enable it with: experimental.autoMemory = true in settings.".into(),
        ("extensions", Some(sub)) if sub != "list" => match extensions(sub, &args) {
            Some(text) => text,
            // Installing or linking a source that exists asks a consent on the terminal first
            // (in an untrusted folder too): 0.61 writes `Do you want to continue? [Y/n]: ` into its
            // stdout, the ACP stream, and takes the client's next message on stdin for the
            // answer (observed: "Installation cancelled"). The fake holds the prompt until it
            // is cancelled.
            None => {
                while !p.sleep(60_000) {}
                return Some(Ok(super::wire::cancelled_answer()));
            }
        },
        ("extensions", _) => "No extensions installed.".into(),
        ("restore", _) => "Checkpointing is not enabled. Please enable it in your settings (`general.checkpointing.enabled: true`) to use /restore.".into(),
        ("about", _) => about(agent, s),
        _ => help(),
    };
    agent.update(
        &s.id,
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
    );
    Some(Ok(super::wire::prompt_answer(
        agent_client_protocol_schema::v1::StopReason::EndTurn,
        json!({"token_count": {"input_tokens": 0, "output_tokens": 0}, "model_usage": []}),
    )))
}

/// `/init`: an empty `GEMINI.md` in the session's directory and the prompt that would fill it,
/// or, when one exists, nothing.
fn init(cwd: &str) -> String {
    let path = std::path::Path::new(cwd).join("GEMINI.md");
    if path.exists() {
        return "A GEMINI.md file already exists in this directory. No changes were made.".into();
    }
    if let Err(e) = std::fs::write(&path, "") {
        return format!("Error: {e}");
    }
    format!(
        "A template GEMINI.md has been created at {}.\n\nTo populate it with project context, you can run the following prompt in a new chat:\n\n{INIT_PROMPT}",
        path.display()
    )
}

/// The `/extensions` subcommands with no extension installed; `None` for an install or a link of
/// a source that exists, which waits for a consent.
fn extensions(sub: &str, args: &[String]) -> Option<String> {
    let name = args.first().map(String::as_str);
    let source = args.join(" ");
    let local = !source.contains("://") && !source.starts_with("git@");
    let missing = local && std::fs::metadata(&source).is_err();
    Some(match (sub, name) {
        ("install", Some(_)) if source.contains([';', '&', '|', '`', '\'', '"']) => {
            "Invalid source: contains disallowed characters.".into()
        }
        ("install", Some(_)) if missing => {
            format!("Failed to install extension from \"{source}\": Install source not found.")
        }
        ("link", Some(_)) if missing => format!("Invalid source: {source}"),
        ("link", None) => "Usage: /extensions link <source>".into(),
        ("explore", _) => {
            "View or install available extensions at https://geminicli.com/extensions/".into()
        }
        ("enable" | "disable", None) => {
            format!("Usage: /extensions {sub} <extension> [--scope=<user|workspace|session>]")
        }
        ("enable" | "disable", Some(n)) => {
            format!("Failed to {sub} \"{n}\": Extension with name {n} does not exist.")
        }
        ("uninstall", Some(n)) => format!("Failed to uninstall extension \"{n}\": Extension not found."),
        ("update", _) => "Headless extension updating requires internal UI dispatches. Please use `gemini extensions update` directly in the terminal.".into(),
        ("restart", _) => "No active extensions matched the request.".into(),
        ("install", None) => "Usage: /extensions install <source>".into(),
        _ => return None,
    })
}

/// `/about`: the CLI's version and environment (no Google account, no tier: an API key).
fn about(agent: &Agent, s: &AcpSession) -> String {
    let sandbox = match std::env::var("SANDBOX").ok().as_deref() {
        None | Some("") => "no sandbox".to_string(),
        Some("sandbox-exec") => format!(
            "sandbox-exec ({})",
            std::env::var("SEATBELT_PROFILE").unwrap_or_else(|_| "unknown".into())
        ),
        Some(other) => other.to_string(),
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let model = s.model.lock().expect("lock").clone();
    let auth = super::agent::selected_auth_type().unwrap_or_default();
    let project = std::env::var("GOOGLE_CLOUD_PROJECT").unwrap_or_default();
    format!(
        "Gemini CLI Info:\n- Version: {}\n- OS: {os}\n- Sandbox: {sandbox}\n- Model: {model}\n- Auth Type: {auth}\n- GCP Project: {project}\n- IDE Client: \n- User Email: Unknown\n- Tier: Unknown",
        agent.version
    )
}

/// `/help`: every command of `available_commands_update`, sorted by name, with its description.
fn help() -> String {
    let mut commands: Vec<(&str, &str)> = super::wire::COMMANDS.to_vec();
    commands.sort_by(|a, b| a.0.cmp(b.0));
    let mut lines = vec![
        "Gemini CLI Help:".to_string(),
        String::new(),
        "### Basics".into(),
        "- **Add context**: Use `@` to specify files for context (e.g., `@src/myFile.ts`) to target specific files or folders.".into(),
        String::new(),
        "### Commands".into(),
    ];
    lines.extend(commands.iter().map(|(n, d)| format!("- **/{n}** - {d}")));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_forms_parse_as_it_parses_them() {
        for text in [
            " /init",
            "\u{3000}/init",
            "$ init",
            "/ init",
            "\n/memory show",
            "\u{feff}/memory list",
            "\t/about",
            "\u{a0}/help",
            "$help",
        ] {
            assert!(
                parse(&command_text(&[json!({"type": "text", "text": text})])).is_some(),
                "{text:?}"
            );
        }
        for text in [
            "\\/init",
            " \\/init",
            "/INIT",
            "/nosuch",
            "a /init",
            "\u{85}/init",
            "@x",
        ] {
            assert!(
                parse(&command_text(&[json!({"type": "text", "text": text})])).is_none(),
                "{text:?}"
            );
        }
        // Text blocks join; an image ends them; a resource reads `@uri`.
        let image = json!({"type": "image", "mimeType": "image/png", "data": ""});
        let text = |t: &str| json!({"type": "text", "text": t});
        assert!(parse(&command_text(&[text(" "), text("/about")])).is_some());
        assert!(parse(&command_text(&[image.clone(), text("/about")])).is_none());
        let res = json!({"type": "resource", "resource": {"uri": "x://c", "text": "t"}});
        assert_eq!(
            parse(&command_text(&[text("/memory list"), res])).map(|c| (c.0, c.1)),
            Some(("memory", None))
        );
    }
}
