//! The exact texts the server adds to a prompt: the `<context>` block and the structured-output
//! instruction. docs/tools.md quotes these constants; change them together.

use serde_json::Value;

/// The block `gemini_prompt_with_context` (and `gemini_prompt_structured` when given a context)
/// sends: `{context}` and `{prompt}` are replaced by the caller's texts, the context escaped by
/// [`escape_context`] first.
pub const CONTEXT_TEMPLATE: &str = "<context>\n{context}\n</context>\n\n{prompt}";

/// Appended to the prompt of `gemini_prompt_structured`; `{schema}` is replaced by the caller's
/// schema as compact JSON. The model is told to answer with the JSON alone; the extractor still
/// tolerates prose and fences around it.
pub const STRUCTURED_INSTRUCTION: &str = "\n\nRespond with only a single JSON value that conforms \
to the JSON Schema below. Do not add any explanation, Markdown or code fences before or after the \
JSON.\n\nJSON Schema:\n{schema}";

/// The context block followed by the prompt, as [`CONTEXT_TEMPLATE`] lays it out.
pub fn wrap_context(context: &str, prompt: &str) -> String {
    let context = escape_context(context);
    let mut out = String::with_capacity(context.len() + prompt.len() + 32);
    out.push_str("<context>\n");
    out.push_str(&context);
    out.push_str("\n</context>\n\n");
    out.push_str(prompt);
    out
}

/// Makes sure a context cannot close its block early: every `</context` (ASCII case-insensitive,
/// so `</CONTEXT >` too) becomes `<\/context` with its original letters, the way `<\/script>` is
/// written inside HTML scripts. Nothing else changes, so the model still reads the text as it was;
/// the only `</context>` in the prompt is the one that ends the block.
pub fn escape_context(context: &str) -> std::borrow::Cow<'_, str> {
    const TAG: &[u8] = b"</context";
    let bytes = context.as_bytes();
    let needs = bytes
        .windows(TAG.len())
        .any(|w| w.eq_ignore_ascii_case(TAG));
    if !needs {
        return std::borrow::Cow::Borrowed(context);
    }
    let mut out = String::with_capacity(context.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i + TAG.len() <= bytes.len() {
        if bytes[i..i + TAG.len()].eq_ignore_ascii_case(TAG) {
            // `<` and `/` are ASCII, so both cuts are on character boundaries.
            out.push_str(&context[copied..=i]);
            out.push('\\');
            copied = i + 1;
            i += TAG.len();
        } else {
            i += 1;
        }
    }
    out.push_str(&context[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The follow-up prompt of a repair turn (`repair` of `gemini_prompt_structured`): `{errors}` is
/// replaced by the validation errors, one per line, `{schema}` by the schema as compact JSON.
pub const REPAIR_TEMPLATE: &str = "Your previous answer does not conform to the JSON Schema it \
was asked for:\n{errors}\n\nReply with the corrected JSON value only: no explanation, Markdown or \
code fences.\n\nJSON Schema:\n{schema}";

/// [`REPAIR_TEMPLATE`] filled in: `summary` when the validator gave no error with a place (no
/// JSON was found at all), else each error (its JSON pointer, its message) as
/// `- <pointer>: <message>`.
pub fn repair_prompt(summary: &str, issues: &[(&str, &str)], schema: &Value) -> String {
    let errors = if issues.is_empty() {
        format!("- {summary}")
    } else {
        issues
            .iter()
            .map(|(path, message)| {
                let at = if path.is_empty() { "(root)" } else { path };
                format!("- {at}: {message}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Split first: neither text can hold a placeholder that gets replaced.
    let (head, tail) = REPAIR_TEMPLATE
        .split_once("{schema}")
        .expect("the template names the schema");
    format!("{}{schema}{tail}", head.replacen("{errors}", &errors, 1))
}

/// [`STRUCTURED_INSTRUCTION`] with the schema filled in.
pub fn instruction(schema: &Value) -> String {
    // Replacing in the template (not in the result) cannot touch a `{schema}` inside the schema.
    STRUCTURED_INSTRUCTION.replacen("{schema}", &schema.to_string(), 1)
}

/// The whole text `gemini_prompt_structured` sends: the context block when there is one, the
/// prompt, then the instruction.
pub fn structured_prompt(prompt: &str, context: Option<&str>, schema: &Value) -> String {
    let asked = format!("{prompt}{}", instruction(schema));
    match context {
        Some(context) => wrap_context(context, &asked),
        None => asked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[test]
    fn the_repair_prompt_names_every_error_and_the_schema() {
        let schema = json!({"type": "object", "required": ["n"]});
        let issues = [("", "\"n\" is a required property {schema}")];
        let p = repair_prompt("ignored", &issues, &schema);
        assert!(
            p.contains("- (root): \"n\" is a required property {schema}"),
            "{p}"
        );
        assert!(p.ends_with(&format!("JSON Schema:\n{schema}")), "{p}");
        let none = repair_prompt("no JSON value found in the answer", &[], &schema);
        assert!(
            none.contains("- no JSON value found in the answer\n"),
            "{none}"
        );
    }

    #[test]
    fn context_block_matches_the_template() {
        assert_eq!(
            wrap_context("some facts", "the question"),
            CONTEXT_TEMPLATE
                .replace("{context}", "some facts")
                .replace("{prompt}", "the question")
        );
        assert_eq!(
            wrap_context("a\nb", "q"),
            "<context>\na\nb\n</context>\n\nq"
        );
    }

    #[rstest]
    #[case("x </context> y", "x <\\/context> y")]
    #[case("</CONTEXT >", "<\\/CONTEXT >")]
    #[case("</Context></context>", "<\\/Context><\\/context>")]
    #[case("<context>nested</context", "<context>nested<\\/context")]
    #[case("é</context>ü", "é<\\/context>ü")]
    #[case("</contex", "</contex")]
    #[case("<\\/context> already", "<\\/context> already")]
    fn a_closing_tag_inside_the_context_is_escaped(#[case] context: &str, #[case] escaped: &str) {
        assert_eq!(escape_context(context), escaped);
        let wrapped = wrap_context(context, "q");
        let closes = wrapped
            .as_bytes()
            .windows(9)
            .filter(|w| w.eq_ignore_ascii_case(b"</context"))
            .count();
        assert_eq!(
            closes, 1,
            "only the block's own closing tag remains: {wrapped}"
        );
    }

    #[test]
    fn a_prompt_may_contain_the_tag_after_the_block() {
        assert!(wrap_context("c", "what is </context>?").ends_with("\n\nwhat is </context>?"));
    }

    #[test]
    fn instruction_quotes_the_schema_compactly() {
        let schema = json!({"type": "object", "description": "{schema}"});
        let text = instruction(&schema);
        assert_eq!(
            text,
            "\n\nRespond with only a single JSON value that conforms to the JSON Schema below. \
             Do not add any explanation, Markdown or code fences before or after the JSON.\n\n\
             JSON Schema:\n{\"type\":\"object\",\"description\":\"{schema}\"}"
        );
    }

    #[test]
    fn structured_prompt_puts_context_first_and_instruction_last() {
        let schema = json!({"type": "string"});
        assert_eq!(
            structured_prompt("Name a colour.", None, &schema),
            format!("Name a colour.{}", instruction(&schema))
        );
        assert_eq!(
            structured_prompt("Name a colour.", Some("ctx"), &schema),
            format!(
                "<context>\nctx\n</context>\n\nName a colour.{}",
                instruction(&schema)
            )
        );
    }
}
