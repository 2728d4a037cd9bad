//! The Gemini CLI's approval modes, their order from the most restrictive to the least, the names
//! callers use for them, and the one guard on running an attempt again.

/// The CLI's approval modes, from the most restrictive to the least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApprovalMode {
    /// Read-only: the CLI plans and may not change anything.
    Plan,
    /// Tools that change things need an approval nobody can give headless: they are refused.
    Default,
    /// Edits are auto-approved, shell commands are not.
    AutoEdit,
    /// Everything is auto-approved (the reference's only mode).
    Yolo,
}

impl ApprovalMode {
    /// The CLI's spelling (`--approval-mode=<this>`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "auto_edit",
            ApprovalMode::Yolo => "yolo",
        }
    }

    /// A mode by the CLI's name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "plan" => Some(ApprovalMode::Plan),
            "default" => Some(ApprovalMode::Default),
            "auto_edit" => Some(ApprovalMode::AutoEdit),
            "yolo" => Some(ApprovalMode::Yolo),
            _ => None,
        }
    }

    /// ACP's mode id (`session/set_mode`, `modes.currentModeId`).
    pub fn acp_id(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "autoEdit",
            ApprovalMode::Yolo => "yolo",
        }
    }

    /// A mode by its ACP id; anything unknown is `default`, which approves no change.
    pub fn from_acp_id(id: Option<&str>) -> Self {
        match id {
            Some("yolo") => ApprovalMode::Yolo,
            Some("autoEdit") => ApprovalMode::AutoEdit,
            Some("plan") => ApprovalMode::Plan,
            _ => ApprovalMode::Default,
        }
    }
}

/// Whether a failed attempt may be run again (the retry and fallback policy's guard): a retry
/// repeats whatever the attempt's tools did, so only when none ran, or the approval mode cannot
/// write (`plan`, `default`: headless, nothing that needs an approval runs).
pub fn may_repeat(tools_ran: bool, mode: ApprovalMode) -> bool {
    !tools_ran || mode <= ApprovalMode::Default
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_never_repeats_writing_tools() {
        assert!(may_repeat(false, ApprovalMode::Yolo));
        assert!(may_repeat(true, ApprovalMode::Plan));
        assert!(may_repeat(true, ApprovalMode::Default));
        assert!(!may_repeat(true, ApprovalMode::AutoEdit));
        assert!(!may_repeat(true, ApprovalMode::Yolo));
    }

    #[test]
    fn modes_map_to_acp_ids_and_back() {
        for mode in [
            ApprovalMode::Plan,
            ApprovalMode::Default,
            ApprovalMode::AutoEdit,
            ApprovalMode::Yolo,
        ] {
            assert_eq!(ApprovalMode::from_acp_id(Some(mode.acp_id())), mode);
        }
        assert_eq!(ApprovalMode::AutoEdit.acp_id(), "autoEdit");
        assert_eq!(ApprovalMode::from_acp_id(None), ApprovalMode::Default);
    }
}
