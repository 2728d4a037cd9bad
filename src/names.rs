//! The names the server hands the Gemini CLI on its command line, checked: a model and the MCP
//! servers an agent may use. Each is one argv element that must never read as a flag. Uses
//! nothing of the crate, so the operator's settings check their names here too; a refusal is its
//! reason, which a call's check turns into an `input_validation` failure.

/// Longest accepted model name.
pub(crate) const MAX_MODEL_CHARS: usize = 256;

/// Checks an MCP server name: `[A-Za-z0-9._-]+` (the CLI splits the flag's values on commas).
pub(crate) fn validate_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "allowed_mcp_server_names: {:?} is not a server name ([A-Za-z0-9._-]+, not starting with '-'; no commas)",
            preview(name)
        ))
    }
}

/// Checks a model name: `[A-Za-z0-9._:/-]+`, not starting with `-` (it would read as a flag).
pub(crate) fn validate_model(model: &str) -> Result<(), String> {
    if model.chars().count() > MAX_MODEL_CHARS {
        return Err(format!(
            "model name is longer than {MAX_MODEL_CHARS} characters"
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-');
    if model.is_empty() || !model.chars().all(allowed) || model.starts_with('-') {
        return Err(format!(
            "model must match [A-Za-z0-9._:/-]+ and must not start with '-' (got {:?})",
            preview(model)
        ));
    }
    Ok(())
}

fn preview(text: &str) -> String {
    text.chars().take(64).collect()
}
