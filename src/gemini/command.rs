//! A tool request turned into the CLI's command line, environment additions and stdin bytes —
//! pure, no I/O — plus the refusals made before anything is spawned (`input_validation`, exit 42).

use std::ffi::OsString;

pub(crate) use crate::config::SlashCommands;
use crate::error::Failure;
use crate::gemini::inputs::flag;
use crate::names;
use crate::structured::{self, PreparedSchema};

/// Checks a model name before it reaches the CLI's argv (`input_validation` when refused).
pub(crate) fn validate_model(model: &str) -> Result<(), Failure> {
    names::validate_model(model).map_err(Failure::invalid_input)
}

/// Checks an MCP server name before it reaches the CLI's argv (`input_validation` when refused).
pub(crate) fn validate_server_name(name: &str) -> Result<(), Failure> {
    names::validate_server_name(name).map_err(Failure::invalid_input)
}

/// The CLI reads at most this many bytes of stdin (it truncates the rest and then drops the
/// prompt without calling the API), so longer prompts are refused before spawning.
pub(crate) const STDIN_CAP_BYTES: usize = 8 * 1024 * 1024;
/// Longest prompt sent, in UTF-16 code units (what JavaScript's `length` counts). Observed on the
/// real CLI 0.61.0: it silently skips the API call (exit 0, zero tokens, `models: {}`) when
/// floor(est(session context) + L/4) > 1,048,576 tokens, L being the prompt's UTF-16 length and the
/// session context (date, paths, a listing of up to 200 cwd entries, ~500 characters in an empty
/// directory) estimated at 0.25 token per character: 4,193,815 ASCII characters were sent,
/// 4,193,816 were not. The limit keeps 65,536 units (16,384 tokens) of that budget for the session
/// context, so a prompt above it is refused instead of dropped.
pub(crate) const MAX_PROMPT_UTF16_UNITS: usize = 4 * 1_048_576 - 65_536;

pub(crate) use crate::gemini::inputs::{BASE_ARGS, CHILD_ENV};

/// What the caller asked for, already decoded from the tool arguments.
#[derive(Debug, Clone, Default)]
pub(crate) struct PromptRequest {
    /// The prompt text.
    pub prompt: String,
    /// Text for the `<context>` block, if any.
    pub context: Option<String>,
    /// The model name, if any.
    pub model: Option<String>,
    /// The session to resume (`--resume=<uuid>`), already checked to be a UUID.
    pub resume: Option<String>,
    /// The approval mode (`None`: yolo, the reference's), already checked against the ceiling.
    pub approval_mode: Option<crate::approval::ApprovalMode>,
    /// `--include-directories` entries: canonical paths already checked against the roots.
    pub include_directories: Vec<std::path::PathBuf>,
    /// `--sandbox`.
    pub sandbox: bool,
    /// `--allowed-mcp-server-names` entries.
    pub allowed_mcp_server_names: Vec<String>,
    /// `@path` references appended to the prompt, already checked and escaped (see
    /// [`at_reference`]).
    pub image_refs: Vec<String>,
    /// The same images, canonical paths (what the warm backend sends as file links).
    pub images: Vec<std::path::PathBuf>,
}

/// With `--sandbox` the CLI relaunches itself inside the sandbox with the prompt moved from stdin
/// into one argv element, which Linux caps at 128 KiB (`MAX_ARG_STRLEN`).
pub(crate) const SANDBOX_MAX_PROMPT_BYTES: usize = 128 * 1024;

/// The CLI's `@` reference for `path`: a backslash before every character its `@` parser would
/// end the path at or treat specially (whitespace and shell metacharacters), so a path with a
/// space reaches the request whole.
pub(crate) fn at_reference(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1);
    out.push('@');
    for c in path.chars() {
        if c.is_whitespace() || "()[]{};|*?$`'\"#&<>!~,\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Everything needed to start the CLI for one request.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    /// Arguments after the program: flags only.
    pub args: Vec<OsString>,
    /// The bytes written to the child's stdin: the whole prompt.
    pub stdin: Vec<u8>,
    /// Whether a leading `/` was escaped.
    pub slash_escaped: bool,
}

/// Builds the invocation. `schema` is given for `gemini_prompt_structured` (already prepared, so
/// its limits were checked).
pub(crate) fn build(
    request: &PromptRequest,
    schema: Option<&PreparedSchema>,
    slash: SlashCommands,
) -> Result<Invocation, Failure> {
    let (text, slash_escaped) = prompt_text(request, schema, slash)?;
    check_names(request)?;
    let model = request.model.as_deref().filter(|m| !m.is_empty());
    if request.sandbox && text.len() >= SANDBOX_MAX_PROMPT_BYTES {
        return Err(Failure::invalid_input(format!(
            "prompt is {} bytes of UTF-8; with `sandbox` the Gemini CLI passes the prompt as one command-line argument, which is limited to {} bytes: send less or run without the sandbox",
            text.len(),
            SANDBOX_MAX_PROMPT_BYTES
        )));
    }
    let mut args: Vec<OsString> = BASE_ARGS.iter().map(OsString::from).collect();
    if request.sandbox {
        args.push(format!("{}=true", flag::SANDBOX).into());
    }
    for name in &request.allowed_mcp_server_names {
        args.push(format!("{}={name}", flag::ALLOWED_MCP_SERVER_NAMES).into());
    }
    if let Some(mode) = request.approval_mode {
        // BASE_ARGS[1] is the approval mode.
        args[1] = format!("{}={}", flag::APPROVAL_MODE, mode.as_str()).into();
    }
    for dir in &request.include_directories {
        let mut arg = OsString::from(format!("{}=", flag::INCLUDE_DIRECTORIES));
        arg.push(dir.as_os_str());
        args.push(arg);
    }
    if let Some(model) = model {
        args.push(format!("{}={model}", flag::MODEL).into());
    }
    if let Some(id) = request.resume.as_deref() {
        args.push(format!("{}={id}", flag::RESUME).into());
    }
    Ok(Invocation {
        args,
        stdin: text.into_bytes(),
        slash_escaped,
    })
}

/// The names and paths of a request checked as both backends hand them to the CLI: the model,
/// the MCP server names, the include directories (no comma: the CLI splits array values on
/// commas, so a path holding one would become two) and the session to resume.
pub(crate) fn check_names(request: &PromptRequest) -> Result<(), Failure> {
    if let Some(model) = request.model.as_deref().filter(|m| !m.is_empty()) {
        validate_model(model)?;
    }
    for name in &request.allowed_mcp_server_names {
        validate_server_name(name)?;
    }
    for dir in &request.include_directories {
        if dir.to_string_lossy().contains(',') {
            return Err(Failure::invalid_input(format!(
                "include directory {} contains a comma, which the Gemini CLI would split the path at",
                dir.display()
            )));
        }
    }
    if let Some(id) = request.resume.as_deref() {
        crate::gemini::session::validate_session_id(id)?;
    }
    Ok(())
}

/// The prompt's text as both backends send it: the prompt with its context (or the structured
/// instructions), then the `@` references of its images; a leading slash escaped under
/// [`SlashCommands::Escape`] (the second value says whether it was). Refused when empty or past
/// what the CLI reads (its stdin cap, its token estimate's window).
pub(crate) fn prompt_text(
    request: &PromptRequest,
    schema: Option<&PreparedSchema>,
    slash: SlashCommands,
) -> Result<(String, bool), Failure> {
    if request.prompt.trim().is_empty() {
        return Err(Failure::invalid_input("prompt must be a non-empty string"));
    }
    let text = match (schema, request.context.as_deref()) {
        (Some(schema), context) => {
            structured::structured_prompt(&request.prompt, context, schema.schema())
        }
        (None, Some(context)) => structured::wrap_context(context, &request.prompt),
        (None, None) => request.prompt.clone(),
    };
    let text = if request.image_refs.is_empty() {
        text
    } else {
        format!("{text}\n\n{}", request.image_refs.join(" "))
    };
    let (text, slash_escaped) = match slash {
        SlashCommands::Escape => escape_slash(text),
        SlashCommands::Passthrough => (text, false),
    };
    if text.len() >= STDIN_CAP_BYTES {
        return Err(Failure::invalid_input(format!(
            "prompt is {} bytes of UTF-8 (with its context and instructions); the Gemini CLI reads at most {} bytes from stdin and drops longer input",
            text.len(),
            STDIN_CAP_BYTES
        )));
    }
    let units: usize = text.chars().map(char::len_utf16).sum();
    if units > MAX_PROMPT_UTF16_UNITS {
        return Err(Failure::invalid_input(format!(
            "prompt is {units} UTF-16 code units (with its context and instructions); the limit is {MAX_PROMPT_UTF16_UNITS}: the Gemini CLI estimates a prompt at one token per 4 units and silently skips the API call when the estimate with its session context passes its 1,048,576-token window (a resumed session's history lowers that further)"
        )));
    }
    Ok((text, slash_escaped))
}

/// Gemini CLI 0.61 runs a headless input as a slash command when its very first character is
/// `/` and it does not start with `//` or `/*` (`isSlashCommand`, tested on the raw input before
/// any trim: a space, a newline, a BOM or any other character first defuses it, as observed).
/// `/memory show` then prints raw text into the JSON stream. Exactly those inputs get a backslash
/// before the slash, which keeps the text readable for the model; every other prompt reaches the
/// CLI unchanged.
pub(crate) fn escape_slash(text: String) -> (String, bool) {
    if is_slash_command(&text) {
        (format!("\\{text}"), true)
    } else {
        (text, false)
    }
}

/// The CLI's own test: whether it would run `input` as a slash command.
pub(crate) fn is_slash_command(input: &str) -> bool {
    input.starts_with('/') && !input.starts_with("//") && !input.starts_with("/*")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use rstest::rstest;
    use serde_json::json;

    fn req(prompt: &str) -> PromptRequest {
        PromptRequest {
            prompt: prompt.into(),
            ..Default::default()
        }
    }

    fn args(inv: &Invocation) -> Vec<String> {
        inv.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn prompt_goes_to_stdin_and_argv_carries_flags_only() {
        let inv = build(&req("--help"), None, SlashCommands::Escape).unwrap();
        assert_eq!(
            args(&inv),
            vec![
                "--output-format=stream-json",
                "--approval-mode=yolo",
                "--skip-trust"
            ]
        );
        assert_eq!(inv.stdin, b"--help");
    }

    #[test]
    fn model_is_one_argument() {
        let mut r = req("hi");
        r.model = Some("gemini-2.5-pro".into());
        let inv = build(&r, None, SlashCommands::Escape).unwrap();
        assert_eq!(args(&inv).last().unwrap(), "--model=gemini-2.5-pro");
        r.model = Some(String::new());
        let inv = build(&r, None, SlashCommands::Escape).unwrap();
        assert_eq!(inv.args.len(), 3, "an empty model means the CLI's default");
    }

    #[rstest]
    #[case("--yolo")]
    #[case("-m")]
    #[case("gemini 2.5")]
    #[case("a;rm -rf /")]
    #[case("model\n")]
    #[case("é")]
    fn bad_models_are_refused(#[case] model: &str) {
        let mut r = req("hi");
        r.model = Some(model.into());
        let f = build(&r, None, SlashCommands::Escape).unwrap_err();
        assert_eq!((f.kind, f.exit_code), (ErrorKind::InputValidation, 42));
    }

    #[rstest]
    #[case("gemini-2.5-pro")]
    #[case("models/gemini-2.5-flash")]
    #[case("auto")]
    #[case("tunedModels/x_y:1.0")]
    fn good_models_pass(#[case] model: &str) {
        assert!(validate_model(model).is_ok());
    }

    #[test]
    fn empty_prompt_is_refused() {
        for p in ["", "   ", "\n\t"] {
            let f = build(&req(p), None, SlashCommands::Escape).unwrap_err();
            assert_eq!(
                f.first_line(),
                "[error exit=42] input_validation: prompt must be a non-empty string"
            );
        }
    }

    #[test]
    fn oversized_prompt_is_refused_by_utf8_bytes() {
        // 3 bytes per character: under the cap in characters, over it in bytes.
        let prompt = "€".repeat(STDIN_CAP_BYTES / 3 + 1);
        let f = build(&req(&prompt), None, SlashCommands::Escape).unwrap_err();
        assert_eq!(f.kind, ErrorKind::InputValidation);
        let ok = "a".repeat(1024 * 1024);
        assert_eq!(
            build(&req(&ok), None, SlashCommands::Escape)
                .unwrap()
                .stdin
                .len(),
            1024 * 1024
        );
    }

    #[test]
    fn prompt_over_the_token_window_is_refused_by_utf16_units() {
        let at = "a".repeat(MAX_PROMPT_UTF16_UNITS);
        assert!(build(&req(&at), None, SlashCommands::Escape).is_ok());
        let over = "a".repeat(MAX_PROMPT_UTF16_UNITS + 1);
        let f = build(&req(&over), None, SlashCommands::Escape).unwrap_err();
        assert_eq!((f.kind, f.exit_code), (ErrorKind::InputValidation, 42));
        assert!(f.message.contains("4128768"), "{}", f.message);
        // Two UTF-16 units each, four UTF-8 bytes: under the stdin cap, over the window.
        let emoji = "😀".repeat(MAX_PROMPT_UTF16_UNITS / 2 + 1);
        assert!(emoji.len() < STDIN_CAP_BYTES);
        let f = build(&req(&emoji), None, SlashCommands::Escape).unwrap_err();
        assert!(f.message.contains("UTF-16"), "{}", f.message);
        // The context counts too.
        let mut r = req("q");
        r.context = Some("a".repeat(MAX_PROMPT_UTF16_UNITS));
        assert!(build(&r, None, SlashCommands::Escape).is_err());
    }

    #[test]
    fn at_references_escape_spaces_and_metacharacters() {
        assert_eq!(at_reference("img/a b.png"), "@img/a\\ b.png");
        assert_eq!(at_reference("x(1).png"), "@x\\(1\\).png");
        assert_eq!(at_reference("plain.png"), "@plain.png");
    }

    #[test]
    fn sandbox_flags_and_prompt_limit() {
        let mut r = req("hi");
        r.sandbox = true;
        r.allowed_mcp_server_names = vec!["github".into(), "my.server_1".into()];
        let inv = build(&r, None, SlashCommands::Escape).unwrap();
        let a = args(&inv);
        assert!(a.contains(&"--sandbox=true".to_string()));
        assert!(a.contains(&"--allowed-mcp-server-names=github".to_string()));
        r.prompt = "a".repeat(SANDBOX_MAX_PROMPT_BYTES);
        assert!(build(&r, None, SlashCommands::Escape).is_err());
        r.prompt = "a".repeat(SANDBOX_MAX_PROMPT_BYTES - 1);
        assert!(build(&r, None, SlashCommands::Escape).is_ok());
        for bad in ["a,b", "", "-x", "a b"] {
            r.allowed_mcp_server_names = vec![bad.into()];
            assert!(build(&r, None, SlashCommands::Escape).is_err(), "{bad}");
        }
    }

    #[test]
    fn context_is_wrapped() {
        let mut r = req("q");
        r.context = Some("c".into());
        let inv = build(&r, None, SlashCommands::Escape).unwrap();
        assert_eq!(inv.stdin, b"<context>\nc\n</context>\n\nq");
    }

    #[test]
    fn structured_prompt_carries_the_instruction() {
        let schema = structured::Schema::prepare(&json!({"type": "object"})).unwrap();
        let inv = build(&req("q"), Some(&schema), SlashCommands::Escape).unwrap();
        let text = String::from_utf8(inv.stdin).unwrap();
        assert!(text.starts_with("q\n\n"));
        assert!(text.ends_with("{\"type\":\"object\"}"));
    }

    #[rstest]
    #[case("/memory show", "\\/memory show", true)]
    #[case("/memory show\n\nmore", "\\/memory show\n\nmore", true)]
    #[case("  /help", "  /help", false)]
    #[case("\n/help", "\n/help", false)]
    #[case("\u{feff}/memory show", "\u{feff}/memory show", false)]
    #[case("\u{a0}/memory show", "\u{a0}/memory show", false)]
    #[case("//memory show", "//memory show", false)]
    #[case("/* a comment */", "/* a comment */", false)]
    #[case("a /path", "a /path", false)]
    #[case("@Override public void x()", "@Override public void x()", false)]
    fn slash_prompts_are_escaped(#[case] input: &str, #[case] sent: &str, #[case] escaped: bool) {
        let inv = build(&req(input), None, SlashCommands::Escape).unwrap();
        assert_eq!(String::from_utf8(inv.stdin).unwrap(), sent);
        assert_eq!(inv.slash_escaped, escaped);
        let inv = build(&req(input), None, SlashCommands::Passthrough).unwrap();
        assert_eq!(String::from_utf8(inv.stdin).unwrap(), input);
    }
}
