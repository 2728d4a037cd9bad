//! The one retry and fallback policy, for every backend (opt-in, `GEMINICLI_MCP_RATE_LIMIT_*` and
//! `GEMINICLI_MCP_FALLBACK_MODELS`): after `rate_limited` with a delay the API gave, wait and try
//! once more; after `quota_exhausted`, try the next fallback model, every other argument kept.
//! Never when the failed attempt ran a tool under an approval mode that can write.

use std::borrow::Cow;
use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::approval::{may_repeat, ApprovalMode};
use crate::error::{ErrorKind, Failure};
use crate::policy::QuotaPolicy;
use crate::progress::Progress;

/// How many times a run is restarted when the CLI asks for it.
pub(crate) const RESTARTS: u32 = 2;

/// Whether a one-shot run ended asking to be restarted, before any tool ran: exit 199, which the
/// CLI's own launcher answers by starting it again, and which the server, running the CLI as one
/// process (`GEMINI_CLI_NO_RELAUNCH`), must answer itself.
pub(crate) fn asks_for_restart(ran: &crate::oneshot::Ran) -> bool {
    !ran.tools_ran
        && matches!(&ran.result, Err(f) if f.exit_code == crate::gemini::inputs::RESTART_EXIT_CODE)
}

/// One attempt's outcome, whether a tool ran in it (the guard against repeating writes), and
/// what else it left for the call's report (`L`), which the policy hands on from each one.
pub(crate) struct Attempted<T, L = ()> {
    /// The answer or the failure.
    pub result: Result<T, Failure>,
    /// Whether a tool ran (or was asked for) during the attempt.
    pub tools_ran: bool,
    /// What the attempt left besides its outcome.
    pub left: L,
}

/// What an attempt is given: the model to use, and the total deadline left (a retry after a
/// wait has less of it).
#[derive(Debug, Clone)]
pub(crate) struct Try {
    /// The model (the caller's, or a fallback).
    pub model: Option<String>,
    /// The total deadline left, when one is set.
    pub total: Option<Duration>,
    /// Which attempt this is: 0 for the first, then one more for each retry or fallback.
    pub attempt: usize,
}

/// The attempts' end: the last outcome, and what the policy did.
pub(crate) struct Retried<T, L = ()> {
    /// The last attempt's outcome; a failure's message says what the policy did.
    pub result: Result<T, Failure>,
    /// What the last attempt left besides its outcome.
    pub left: L,
    /// What the attempts before the last left, in order.
    pub earlier: Vec<L>,
    /// Whether a tool ran in the last attempt.
    pub tools_ran: bool,
    /// What the policy did, when it did anything: `retriedAfterMs`, `requestedModel`,
    /// `fallbacks`, `modelUsed` (`retryPolicy` in `structuredContent`).
    pub report: Option<Value>,
    /// The fallback models tried, in order (the last one answered when the call succeeded).
    pub fallbacks: Vec<String>,
}

/// The run's context for the policy.
pub(crate) struct Context<'a> {
    /// The operator's policy.
    pub quota: &'a QuotaPolicy,
    /// The run's approval mode.
    pub mode: ApprovalMode,
    /// The total deadline of the call, when one is set.
    pub total: Option<Duration>,
    /// Where waits and fallbacks are announced.
    pub progress: &'a Progress,
    /// The call's cancellation (client or shutdown): no retry after it, and a wait ends with it.
    pub stop: &'a CancellationToken,
}

/// Runs `attempt` under the policy until it answers, fails for good, or the policy has nothing
/// more to try.
pub(crate) async fn with_policy<T, L, F, Fut>(
    ctx: Context<'_>,
    model: Option<String>,
    mut attempt: F,
) -> Retried<T, L>
where
    F: FnMut(Try) -> Fut,
    Fut: Future<Output = Attempted<T, L>>,
{
    let started = Instant::now();
    let asked = model.clone();
    let mut next = Try {
        model,
        total: ctx.total,
        attempt: 0,
    };
    let mut earlier = Vec::new();
    let mut retried_after: Option<u64> = None;
    let mut fallbacks: Vec<String> = Vec::new();
    let mut why_not: Option<Cow<'static, str>> = None;
    let Attempted {
        result,
        tools_ran,
        left,
    } = loop {
        let done = attempt(next.clone()).await;
        let Err(f) = &done.result else {
            break done;
        };
        if ctx.stop.is_cancelled() {
            break done;
        }
        let repeatable = may_repeat(done.tools_ran, ctx.mode);
        match f.kind {
            ErrorKind::RateLimited if ctx.quota.rate_limit_retry && retried_after.is_none() => {
                let Some(delay) = f.retry_delay_ms else {
                    break done;
                };
                let left = ctx.total.map(|t| t.saturating_sub(started.elapsed()));
                let wait = match may_wait(&ctx, repeatable, delay, left) {
                    Ok(wait) => wait,
                    Err(why) => {
                        why_not = Some(why);
                        break done;
                    }
                };
                ctx.progress
                    .say(format!(
                        "rate limited: waiting {delay} ms, then retrying once"
                    ))
                    .await;
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = ctx.stop.cancelled() => break done,
                }
                retried_after = Some(delay);
                next.total = left.map(|l| l.saturating_sub(wait).max(Duration::from_millis(1)));
            }
            ErrorKind::QuotaExhausted => {
                let Some(model) = ctx.quota.fallback_models.get(fallbacks.len()).cloned() else {
                    break done;
                };
                if !repeatable {
                    why_not = Some("not retried: tools ran".into());
                    break done;
                }
                ctx.progress
                    .say(format!("quota exhausted: falling back to model {model}"))
                    .await;
                tracing::debug!(model = %model, "quota exhausted: trying the next fallback model");
                next.model = Some(model.clone());
                fallbacks.push(model);
            }
            _ => break done,
        }
        earlier.push(done.left);
        next.attempt += 1;
    };
    let done = Done {
        why_not,
        retried_after,
        fallbacks,
        asked,
        used: next.model,
        earlier,
    };
    done.report(result, tools_ran, left)
}

/// What the policy did, to be said in the result.
struct Done<L> {
    why_not: Option<Cow<'static, str>>,
    retried_after: Option<u64>,
    fallbacks: Vec<String>,
    asked: Option<String>,
    used: Option<String>,
    /// What the attempts before the last left.
    earlier: Vec<L>,
}

impl<L> Done<L> {
    /// The last outcome with what the policy did: in a failure's message, and as the
    /// `retryPolicy` report when it retried or fell back.
    fn report<T>(self, result: Result<T, Failure>, tools_ran: bool, left: L) -> Retried<T, L> {
        let report = (self.retried_after.is_some() || !self.fallbacks.is_empty()).then(|| {
            json!({
                "retriedAfterMs": self.retried_after,
                "requestedModel": self.asked,
                "fallbacks": self.fallbacks,
                "modelUsed": self.used,
            })
        });
        let result = result.map_err(|mut f| {
            if let Some(why) = &self.why_not {
                f = f.note(why);
            }
            if let Some(ms) = self.retried_after {
                f = f.note(&format!("retried once after waiting {ms} ms"));
            }
            if !self.fallbacks.is_empty() {
                f = f.note(&format!(
                    "after falling back to {}",
                    self.fallbacks.join(", ")
                ));
            }
            f
        });
        Retried {
            result,
            left,
            earlier: self.earlier,
            tools_ran,
            report,
            fallbacks: self.fallbacks,
        }
    }
}

/// The wait before the rate-limit retry, or why there is none: a tool ran that may have written,
/// the API's delay is over the operator's cap, or the wait would pass the total deadline.
fn may_wait(
    ctx: &Context<'_>,
    repeatable: bool,
    delay: u64,
    left: Option<Duration>,
) -> Result<Duration, Cow<'static, str>> {
    let wait = Duration::from_millis(delay);
    if !repeatable {
        Err("not retried: tools ran".into())
    } else if wait > ctx.quota.max_wait {
        Err(format!(
            "not retried: the API's delay is longer than {}",
            crate::config::settings::RATE_LIMIT_MAX_WAIT_MS.name
        )
        .into())
    } else if left.is_some_and(|l| wait >= l) {
        Err("not retried: the wait would pass the total deadline".into())
    } else {
        Ok(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Style;
    use std::cell::RefCell;

    fn quota() -> QuotaPolicy {
        QuotaPolicy {
            rate_limit_retry: true,
            max_wait: Duration::from_millis(500),
            fallback_models: vec!["flash".into(), "lite".into()],
        }
    }

    async fn run(
        mode: ApprovalMode,
        outcomes: Vec<(Result<&'static str, Failure>, bool)>,
    ) -> (Retried<&'static str>, Vec<Option<String>>) {
        let quota = quota();
        let progress = Progress::new(None, Style::Summary, None);
        let stop = CancellationToken::new();
        let tries = RefCell::new(Vec::new());
        let outcomes = RefCell::new(outcomes.into_iter());
        let ctx = Context {
            quota: &quota,
            mode,
            total: None,
            progress: &progress,
            stop: &stop,
        };
        let retried = with_policy(ctx, Some("pro".into()), |t: Try| {
            tries.borrow_mut().push(t.model.clone());
            let (result, tools_ran) = outcomes.borrow_mut().next().expect("an outcome per try");
            async move {
                Attempted {
                    result,
                    tools_ran,
                    left: (),
                }
            }
        })
        .await;
        (retried, tries.into_inner())
    }

    fn quota_failure() -> Failure {
        Failure::new(ErrorKind::QuotaExhausted, "daily quota")
    }

    #[tokio::test]
    async fn fallbacks_are_tried_in_order_and_reported() {
        let (r, tries) = run(
            ApprovalMode::Yolo,
            vec![(Err(quota_failure()), false), (Ok("from flash"), false)],
        )
        .await;
        assert_eq!(r.result.unwrap(), "from flash");
        assert_eq!(tries, [Some("pro".into()), Some("flash".into())]);
        assert_eq!(r.fallbacks, ["flash"]);
        assert_eq!(r.report.unwrap()["modelUsed"], "flash");

        let (r, _) = run(
            ApprovalMode::Yolo,
            vec![
                (Err(quota_failure()), false),
                (Err(quota_failure()), false),
                (Err(quota_failure()), false),
            ],
        )
        .await;
        let f = r.result.unwrap_err();
        assert!(
            f.message.ends_with("(after falling back to flash, lite)"),
            "{}",
            f.message
        );
    }

    #[tokio::test]
    async fn nothing_is_repeated_after_a_writing_tool_ran() {
        let (r, tries) = run(ApprovalMode::Yolo, vec![(Err(quota_failure()), true)]).await;
        assert_eq!(tries.len(), 1);
        assert!(r
            .result
            .unwrap_err()
            .message
            .ends_with("(not retried: tools ran)"));
        // Under plan nothing can write: the fallback runs.
        let (r, tries) = run(
            ApprovalMode::Plan,
            vec![(Err(quota_failure()), true), (Ok("ok"), true)],
        )
        .await;
        assert_eq!(tries.len(), 2);
        assert!(r.result.is_ok());
    }

    #[tokio::test]
    async fn a_rate_limit_is_retried_once_after_its_delay() {
        let limited = || Failure::new(ErrorKind::RateLimited, "slow").with_retry_delay(Some(20));
        let (r, tries) = run(
            ApprovalMode::Yolo,
            vec![(Err(limited()), false), (Err(limited()), false)],
        )
        .await;
        assert_eq!(tries.len(), 2, "once, not twice");
        let f = r.result.unwrap_err();
        assert!(
            f.message.contains("retried once after waiting 20 ms"),
            "{}",
            f.message
        );
        let over = Failure::new(ErrorKind::RateLimited, "slow").with_retry_delay(Some(60_000));
        let (r, tries) = run(ApprovalMode::Yolo, vec![(Err(over), false)]).await;
        assert_eq!(tries.len(), 1);
        assert!(r
            .result
            .unwrap_err()
            .message
            .contains("not retried: the API's delay"));
    }
}
