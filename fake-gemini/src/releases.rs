//! What the CLI releases after 0.61 changed, played when the emulated version
//! (`FAKE_GEMINI_VERSION`, a scenario's `cli-version`) is at least the release that brought it.
//! None of these was observed here (the npm registry reachable here stops at 0.61.0): each comes
//! from the release's public notes or pull request, named beside it. 0.61.0 stays the observed
//! baseline, and the default.

use crate::cli::{parse_version, Version};

/// ACP: the pending `tool_call` is sent before its `session/request_permission`, and a
/// rejected one ends with a `failed` `tool_call_update` (google-gemini/gemini-cli PR#29439,
/// merged for 0.62.0; the fields are the permission request's, its description names no others).
pub const PENDING_TOOL_CALL_FIRST: Version = (0, 62, 0);

/// ACP: an API error reaches the client as `-32000` with its text only, the HTTP status no
/// longer its code (0.62.0 release notes: "errors reach the client as -32000 with text only").
pub const ACP_ERRORS_AS_TEXT: Version = (0, 62, 0);

/// ACP: a prompt's answer carries ACP's `usage` (token counts) and a `usage_update` session
/// update precedes it (0.64.0-preview.0 release notes: "ACP emits usage_update notifications
/// (token counts from PromptResponse.usage)"; the shapes are the ACP schema's, `used` and `size`
/// for the update).
pub const USAGE_UPDATE: Version = (0, 64, 0);

/// Whether `version` (a CLI version string; unparsable reads as 0.61.0) has the change that came
/// with `since`.
pub fn has(version: &str, since: Version) -> bool {
    parse_version(version).unwrap_or((0, 61, 0)) >= since
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_played_from_its_release_on_previews_included() {
        assert!(!has("0.61.0", ACP_ERRORS_AS_TEXT));
        assert!(has("0.62.0", ACP_ERRORS_AS_TEXT));
        assert!(has("0.64.0-preview.0", PENDING_TOOL_CALL_FIRST));
        assert!(!has("not a version", PENDING_TOOL_CALL_FIRST));
    }
}
