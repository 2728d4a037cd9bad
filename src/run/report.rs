//! What a call's optional arguments and the retry policy add to its result: the [`Report`].

use std::path::PathBuf;

use serde_json::Value;

use super::{retry, Answer, Job, Last, Surface};

/// What a call's optional arguments and the retry policy add to its result, on success and on
/// failure alike.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Every event of the last attempt (`full_output`).
    pub events: Option<Vec<Value>>,
    /// argv, exit, timings and stderr tail of the last attempt (`debug`).
    pub debug: Option<Value>,
    /// What the retry policy did.
    pub policy: Option<Value>,
    /// The fallback models tried, in order (the last one answered when the call succeeded).
    pub fallbacks: Vec<String>,
    /// Where the answer was written, or why it could not be (`save_file`).
    pub saved: Option<Result<PathBuf, String>>,
    /// Whether a repair turn ran, and made the answer validate (`repaired`).
    pub repaired: Option<bool>,
    /// `approval_mode: "ask"`: each permission the agent asked for, and who decided it.
    pub approvals: Vec<Value>,
    /// The call ran one-shot on the warm backend: why its agent could not.
    pub ran_one_shot: Option<String>,
    /// Why another CLI start may have deleted the run's new session (its gate's lease ran out).
    pub session_at_risk: Option<String>,
}

impl Report {
    /// What the attempts left for the report: the last one's debug report and approvals; its
    /// events, or for the `acp` set (`full_output`) every attempt's, in order.
    pub(super) fn of(job: &Job, retried: &mut retry::Retried<Answer, Last>) -> Report {
        let Last {
            events,
            debug,
            approvals,
            no_agent: _,
            ran_one_shot,
        } = std::mem::take(&mut retried.left);
        let events = match job.surface {
            // Every attempt's messages, in order: the transcript of the whole call.
            Surface::Agent => job.full_output.then(|| {
                let mut all: Vec<Value> = std::mem::take(&mut retried.earlier)
                    .into_iter()
                    .flat_map(|l| l.events.unwrap_or_default())
                    .collect();
                all.extend(events.unwrap_or_default());
                all
            }),
            // The last run's stream-json events, as the CLI printed them.
            Surface::Reference => events,
        };
        Report {
            events,
            debug,
            policy: retried.report.take(),
            fallbacks: std::mem::take(&mut retried.fallbacks),
            saved: None,
            repaired: None,
            approvals,
            ran_one_shot,
            session_at_risk: None,
        }
    }
}
