//! The answers to the agent's permission requests: from a session's approval mode, or from the
//! user's reply to the question a request becomes.

use agent_client_protocol_schema::v1::{RequestPermissionOutcome, SelectedPermissionOutcome};
use serde_json::Value;

use crate::acp::wire::{PermissionOption, PermissionRequest};
use crate::approval::ApprovalMode;
use crate::ask::{Question, Reply};

/// The option ids that last for the session and no longer: never the ones that save an approval
/// in the CLI's settings (`proceed_always_and_save`) or widen it to a whole MCP server.
const SESSION_OPTIONS: [&str; 2] = ["proceed_always_tool", "proceed_always"];

/// A permission request as a question.
pub(super) fn question(request: &PermissionRequest) -> Question {
    let call = &request.tool_call;
    Question {
        title: call.title.clone().unwrap_or_else(|| "a tool".into()),
        kind: call.kind.clone().unwrap_or_else(|| "other".into()),
        locations: call
            .locations
            .iter()
            .flatten()
            .map(|l| l.path.clone())
            .collect(),
        session_option: request
            .options
            .iter()
            .any(|o| o.kind == "allow_always" && SESSION_OPTIONS.contains(&o.option_id.as_str())),
    }
}

/// The agent's answer for `reply`: the option of its kind (allow once; allow for the session by
/// the ids of [`SESSION_OPTIONS`], else once; reject), chosen as [`permission`] chooses.
pub(super) fn chosen(
    reply: Reply,
    request: &PermissionRequest,
) -> (RequestPermissionOutcome, bool) {
    match reply {
        Reply::AllowOnce => answer(ApprovalMode::Yolo, request),
        Reply::AllowSession => {
            let options = &request.options;
            let session = SESSION_OPTIONS.iter().find(|id| {
                options
                    .iter()
                    .filter(|o| o.option_id == **id)
                    .all(|o| o.kind == "allow_always")
                    && options.iter().any(|o| o.option_id == **id)
            });
            match session {
                Some(id) => (selected(id), true),
                None => answer(ApprovalMode::Yolo, request),
            }
        }
        Reply::Reject(_) => answer(ApprovalMode::Plan, request),
    }
}

/// The answer to a permission request under `mode`: an `allow_once` option for what the mode
/// approves, else a `reject_once` option (or `cancelled` when none is offered). Never "the first
/// option": the choice is by the option's kind, and only an option whose id names no option of
/// another kind counts (the agent acts on the id alone: a "reject" id it also offers as "allow
/// always" would approve).
pub fn permission(mode: ApprovalMode, params: &Value) -> (RequestPermissionOutcome, bool) {
    answer(mode, &PermissionRequest::read(params))
}

/// [`permission`] of a request already read.
pub(super) fn answer(
    mode: ApprovalMode,
    request: &PermissionRequest,
) -> (RequestPermissionOutcome, bool) {
    let kind = request.tool_call.kind.as_deref().unwrap_or("other");
    let allow = match mode {
        ApprovalMode::Yolo => true,
        // Edits only: the CLI's auto_edit approves edit tools and asks for everything else.
        ApprovalMode::AutoEdit => kind == "edit",
        // Plan and default never approve a change; headless nobody could be asked.
        ApprovalMode::Default | ApprovalMode::Plan => false,
    };
    let options = &request.options;
    let unambiguous = |o: &PermissionOption| {
        options
            .iter()
            .filter(|other| other.option_id == o.option_id)
            .all(|other| other.kind == o.kind)
    };
    let pick = |kind: &str| {
        options
            .iter()
            .find(|o| o.kind == kind && unambiguous(o))
            .map(|o| o.option_id.clone())
    };
    let chosen = match allow {
        true => pick("allow_once"),
        false => pick("reject_once").or_else(|| pick("reject_always")),
    };
    match chosen {
        Some(id) => (selected(&id), allow),
        None => (RequestPermissionOutcome::Cancelled, false),
    }
}

/// The outcome that selects option `id`.
fn selected(id: &str) -> RequestPermissionOutcome {
    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string()))
}
