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
/// its limits were checked); `escape` is [`escape_for`]'s answer for the headless reader.
pub(crate) fn build(
    request: &PromptRequest,
    schema: Option<&PreparedSchema>,
    escape: Option<Reader>,
) -> Result<Invocation, Failure> {
    let (text, slash_escaped) = prompt_text(request, schema, escape)?;
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
/// instructions), then the `@` references of its images; its command forms escaped for the
/// reader `escape` names ([`escape_for`]; the second value says whether they were). Refused when
/// empty or past what the CLI reads (its stdin cap, its token estimate's window).
pub(crate) fn prompt_text(
    request: &PromptRequest,
    schema: Option<&PreparedSchema>,
    escape: Option<Reader>,
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
    let (text, slash_escaped) = escape_command(text, escape);
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

/// Which of the CLI's two prompt readers gets a text: each has its own test for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// A headless run's input (stdin, the one-shot backend): [`is_slash_command`].
    Headless,
    /// An ACP agent's `session/prompt` (the warm backend): [`is_acp_command`].
    Acp,
}

/// The one decision, for both backends, whether a prompt's command forms are escaped for
/// `reader` (`Some`) or sent as is (`None`). `escape` (the default) escapes them. `passthrough`
/// sends them as is only to a call that may change anything unasked — mode `yolo`, no `ask` —
/// because a command the CLI runs from a prompt asks no approval (`/init` writes `GEMINI.md`,
/// `/extensions install` installs): under any lower mode, the operator's ceiling or the caller's
/// own, they are escaped as under `escape`.
pub(crate) fn escape_for(
    slash: SlashCommands,
    reader: Reader,
    mode: crate::approval::ApprovalMode,
    asking: bool,
) -> Option<Reader> {
    let passes = slash == SlashCommands::Passthrough
        && mode == crate::approval::ApprovalMode::Yolo
        && !asking;
    (!passes).then_some(reader)
}

/// `text` with its command form defused for `escape`'s reader: a backslash before the `/`
/// (headless) or before the `/` or `$` that begins it after JavaScript's `trim()` (ACP); the
/// second value says whether one was added. Everything else (and all under `None`) reaches the
/// CLI unchanged.
pub(crate) fn escape_command(text: String, escape: Option<Reader>) -> (String, bool) {
    match escape {
        None => (text, false),
        Some(Reader::Headless) => escape_slash(text),
        Some(Reader::Acp) => match text.find(|c: char| !is_js_whitespace(c)) {
            Some(at) if is_acp_command(&text) => {
                let mut out = String::with_capacity(text.len() + 1);
                out.push_str(&text[..at]);
                out.push('\\');
                out.push_str(&text[at..]);
                (out, true)
            }
            _ => (text, false),
        },
    }
}

/// Gemini CLI 0.61's ACP agent's test (`GeminiAgent.prompt`, `packages/cli/src/acp/acpSession.ts`
/// in the bundle's `gemini-*.js`): the text of the prompt's leading text blocks, joined and
/// JavaScript-`trim()`med, starting with `/` or `$` goes to `CommandHandler.handleCommand`, which
/// runs it when the word after that character (spaces allowed between) names a command of its
/// registry (`memory`, `extensions`, `init`, `restore`, `about`, `help`; docs/acp.md). Any text
/// so starting is treated as one, whatever the word: a later CLI's new command is covered too.
pub(crate) fn is_acp_command(text: &str) -> bool {
    text.trim_start_matches(is_js_whitespace)
        .starts_with(['/', '$'])
}

/// What JavaScript's `String.prototype.trim()` removes: ECMAScript's WhiteSpace (tab, vertical
/// tab, form feed, space, no-break space, the byte order mark U+FEFF and every other `Zs`
/// character) and LineTerminator (LF, CR, U+2028, U+2029). Not Rust's `char::is_whitespace`,
/// which leaves U+FEFF and takes U+0085.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
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
    use crate::approval::ApprovalMode;
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
        let inv = build(&req("--help"), None, Some(Reader::Headless)).unwrap();
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
        let inv = build(&r, None, Some(Reader::Headless)).unwrap();
        assert_eq!(args(&inv).last().unwrap(), "--model=gemini-2.5-pro");
        r.model = Some(String::new());
        let inv = build(&r, None, Some(Reader::Headless)).unwrap();
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
        let f = build(&r, None, Some(Reader::Headless)).unwrap_err();
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
            let f = build(&req(p), None, Some(Reader::Headless)).unwrap_err();
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
        let f = build(&req(&prompt), None, Some(Reader::Headless)).unwrap_err();
        assert_eq!(f.kind, ErrorKind::InputValidation);
        let ok = "a".repeat(1024 * 1024);
        assert_eq!(
            build(&req(&ok), None, Some(Reader::Headless))
                .unwrap()
                .stdin
                .len(),
            1024 * 1024
        );
    }

    #[test]
    fn prompt_over_the_token_window_is_refused_by_utf16_units() {
        let at = "a".repeat(MAX_PROMPT_UTF16_UNITS);
        assert!(build(&req(&at), None, Some(Reader::Headless)).is_ok());
        let over = "a".repeat(MAX_PROMPT_UTF16_UNITS + 1);
        let f = build(&req(&over), None, Some(Reader::Headless)).unwrap_err();
        assert_eq!((f.kind, f.exit_code), (ErrorKind::InputValidation, 42));
        assert!(f.message.contains("4128768"), "{}", f.message);
        // Two UTF-16 units each, four UTF-8 bytes: under the stdin cap, over the window.
        let emoji = "😀".repeat(MAX_PROMPT_UTF16_UNITS / 2 + 1);
        assert!(emoji.len() < STDIN_CAP_BYTES);
        let f = build(&req(&emoji), None, Some(Reader::Headless)).unwrap_err();
        assert!(f.message.contains("UTF-16"), "{}", f.message);
        // The context counts too.
        let mut r = req("q");
        r.context = Some("a".repeat(MAX_PROMPT_UTF16_UNITS));
        assert!(build(&r, None, Some(Reader::Headless)).is_err());
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
        let inv = build(&r, None, Some(Reader::Headless)).unwrap();
        let a = args(&inv);
        assert!(a.contains(&"--sandbox=true".to_string()));
        assert!(a.contains(&"--allowed-mcp-server-names=github".to_string()));
        r.prompt = "a".repeat(SANDBOX_MAX_PROMPT_BYTES);
        assert!(build(&r, None, Some(Reader::Headless)).is_err());
        r.prompt = "a".repeat(SANDBOX_MAX_PROMPT_BYTES - 1);
        assert!(build(&r, None, Some(Reader::Headless)).is_ok());
        for bad in ["a,b", "", "-x", "a b"] {
            r.allowed_mcp_server_names = vec![bad.into()];
            assert!(build(&r, None, Some(Reader::Headless)).is_err(), "{bad}");
        }
    }

    #[test]
    fn context_is_wrapped() {
        let mut r = req("q");
        r.context = Some("c".into());
        let inv = build(&r, None, Some(Reader::Headless)).unwrap();
        assert_eq!(inv.stdin, b"<context>\nc\n</context>\n\nq");
    }

    #[test]
    fn structured_prompt_carries_the_instruction() {
        let schema = structured::Schema::prepare(&json!({"type": "object"})).unwrap();
        let inv = build(&req("q"), Some(&schema), Some(Reader::Headless)).unwrap();
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
        let inv = build(&req(input), None, Some(Reader::Headless)).unwrap();
        assert_eq!(String::from_utf8(inv.stdin).unwrap(), sent);
        assert_eq!(inv.slash_escaped, escaped);
        let inv = build(&req(input), None, None).unwrap();
        assert_eq!(String::from_utf8(inv.stdin).unwrap(), input);
    }

    /// The ACP agent's forms (docs/acp.md): `/` or `$` first after JavaScript's trim, which takes
    /// every Unicode space, line breaks and the BOM; the backslash goes before that character.
    #[rstest]
    #[case(" /init", " \\/init", true)]
    #[case("/init", "\\/init", true)]
    #[case("\u{3000}/init", "\u{3000}\\/init", true)]
    #[case("$ init", "\\$ init", true)]
    #[case("$help", "\\$help", true)]
    #[case("\n/memory show", "\n\\/memory show", true)]
    #[case("\u{feff}/memory list", "\u{feff}\\/memory list", true)]
    #[case("\t/about", "\t\\/about", true)]
    #[case("\u{a0}/help", "\u{a0}\\/help", true)]
    #[case(
        "\u{2028}\u{205f}\u{b}\u{c}\r/extensions install /x",
        "\u{2028}\u{205f}\u{b}\u{c}\r\\/extensions install /x",
        true
    )]
    #[case("//memory show", "\\//memory show", true)]
    #[case("\u{85}/init", "\u{85}/init", false)]
    #[case("\u{200b}/init", "\u{200b}/init", false)]
    #[case("\\/init", "\\/init", false)]
    #[case("a /init", "a /init", false)]
    #[case("@GEMINI.md", "@GEMINI.md", false)]
    fn acp_command_forms_are_escaped(
        #[case] input: &str,
        #[case] sent: &str,
        #[case] escaped: bool,
    ) {
        let (text, did) = prompt_text(&req(input), None, Some(Reader::Acp)).unwrap();
        assert_eq!((text.as_str(), did), (sent, escaped));
        assert!(!is_acp_command(&text), "{text:?} is still a command");
        assert_eq!(is_acp_command(input), escaped);
    }

    /// JavaScript's `trim()` set, character by character (ECMAScript's WhiteSpace and
    /// LineTerminator, with Unicode 15's `Zs`).
    #[test]
    fn js_whitespace_is_ecmascripts() {
        let js: Vec<u32> = (0..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .filter(|c| is_js_whitespace(*c))
            .map(u32::from)
            .collect();
        let expected = [
            0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
            0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
            0xfeff,
        ];
        assert_eq!(js, expected);
    }

    /// `passthrough` holds only under `yolo` without `ask`: below it a command would act unasked.
    #[rstest]
    #[case(SlashCommands::Escape, ApprovalMode::Yolo, false, true)]
    #[case(SlashCommands::Passthrough, ApprovalMode::Yolo, false, false)]
    #[case(SlashCommands::Passthrough, ApprovalMode::Yolo, true, true)]
    #[case(SlashCommands::Passthrough, ApprovalMode::AutoEdit, false, true)]
    #[case(SlashCommands::Passthrough, ApprovalMode::Default, false, true)]
    #[case(SlashCommands::Passthrough, ApprovalMode::Plan, false, true)]
    fn passthrough_never_passes_a_ceiling(
        #[case] slash: SlashCommands,
        #[case] mode: ApprovalMode,
        #[case] asking: bool,
        #[case] escapes: bool,
    ) {
        for reader in [Reader::Headless, Reader::Acp] {
            let got = escape_for(slash, reader, mode, asking);
            assert_eq!(got, escapes.then_some(reader));
        }
    }
}
