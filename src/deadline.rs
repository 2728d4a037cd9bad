//! A run's opt-in deadlines (first content, inactivity, total), which one passed, and the watch
//! that finds it. None set means no timeout, as the reference.

use std::time::{Duration, Instant};

/// A run's opt-in deadlines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// From the start to the first content: an assistant message or a tool event.
    pub first_content: Option<Duration>,
    /// Longest time without a byte on either stream.
    pub inactivity: Option<Duration>,
    /// From the start to the end of the run.
    pub total: Option<Duration>,
}

impl Deadlines {
    /// The operator's limits with a call's on top: for each, the shorter of the two.
    pub fn with(self, call: Deadlines) -> Deadlines {
        let min = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Deadlines {
            first_content: min(self.first_content, call.first_content),
            inactivity: min(self.inactivity, call.inactivity),
            total: min(self.total, call.total),
        }
    }

    /// These limits after `spent` of them went by (a wait before the run): the first-content and
    /// total ones shortened, never below a millisecond; inactivity, which restarts with the run,
    /// as it is.
    pub fn less(self, spent: Duration) -> Deadlines {
        let left =
            |d: Option<Duration>| d.map(|d| d.saturating_sub(spent).max(Duration::from_millis(1)));
        Deadlines {
            first_content: left(self.first_content),
            inactivity: self.inactivity,
            total: left(self.total),
        }
    }

    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.first_content.is_some() || self.inactivity.is_some() || self.total.is_some()
    }

    /// The length of `limit`, when it is set.
    pub fn of(&self, limit: Limit) -> Option<Duration> {
        match limit {
            Limit::FirstContent => self.first_content,
            Limit::Inactivity => self.inactivity,
            Limit::Total => self.total,
        }
    }
}

/// Which deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No content came in time.
    FirstContent,
    /// Nothing was printed for too long.
    Inactivity,
    /// The whole run took too long.
    Total,
}

impl Limit {
    /// The deadline's name in messages (`first_content`, `inactivity`, `total`).
    pub fn name(self) -> &'static str {
        match self {
            Limit::FirstContent => "first_content",
            Limit::Inactivity => "inactivity",
            Limit::Total => "total",
        }
    }

    /// What went on for too long, as the middle of "the X deadline passed: … for N ms".
    fn what(self) -> &'static str {
        match self {
            Limit::FirstContent => "no content (assistant text or a tool event) came",
            Limit::Inactivity => "the CLI printed nothing",
            Limit::Total => "the run went on",
        }
    }

    /// The sentence a failure opens with once this deadline of `ms` passed; the backend adds what
    /// it did about the run.
    pub fn passed(self, ms: u128) -> String {
        format!(
            "the {} deadline passed: {} for {ms} ms",
            self.name(),
            self.what()
        )
    }
}

/// How often the watch looks at the clocks.
const TICK: Duration = Duration::from_millis(50);

/// Resolves with the first of `limits` to pass for a run that started at `started`:
/// `first_content` and `last_activity` report when content first came and when the run last
/// printed a byte. Never resolves when no limit is set.
pub(crate) async fn first_to_pass(
    limits: Deadlines,
    started: Instant,
    first_content: impl Fn() -> Option<Instant>,
    last_activity: impl Fn() -> Option<Instant>,
) -> Limit {
    if !limits.any() {
        return std::future::pending().await;
    }
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        let now = Instant::now();
        if limits.total.is_some_and(|t| now - started >= t) {
            return Limit::Total;
        }
        if limits
            .first_content
            .is_some_and(|t| first_content().is_none() && now - started >= t)
        {
            return Limit::FirstContent;
        }
        if limits
            .inactivity
            .is_some_and(|t| now - last_activity().unwrap_or(started) >= t)
        {
            return Limit::Inactivity;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_deadline_is_told_as_a_sentence() {
        assert_eq!(
            Limit::Total.passed(8000),
            "the total deadline passed: the run went on for 8000 ms"
        );
        assert_eq!(
            Limit::Inactivity.passed(500),
            "the inactivity deadline passed: the CLI printed nothing for 500 ms"
        );
        assert_eq!(
            Limit::FirstContent.passed(20),
            "the first_content deadline passed: no content (assistant text or a tool event) came for 20 ms"
        );
    }

    #[test]
    fn deadlines_take_the_shorter_limit() {
        let ms = |v| Some(Duration::from_millis(v));
        let env = Deadlines {
            total: ms(1000),
            inactivity: ms(300),
            ..Deadlines::default()
        };
        let call = Deadlines {
            total: ms(5000),
            first_content: ms(200),
            ..Deadlines::default()
        };
        let d = env.with(call);
        assert_eq!(
            (d.total, d.inactivity, d.first_content),
            (ms(1000), ms(300), ms(200))
        );
        assert!(!Deadlines::default().any());
        let lookup = |n: &str| {
            (n == "GEMINICLI_MCP_TOTAL_TIMEOUT_MS").then(|| std::ffi::OsString::from("250"))
        };
        let from = crate::config::Config::from_lookup(lookup).policy.deadlines;
        assert_eq!(from.total, ms(250));
        assert_eq!(from.inactivity, None);
        assert_eq!(d.of(Limit::Inactivity), ms(300));
    }

    #[tokio::test]
    async fn the_first_limit_to_pass_is_named() {
        let ms = |v| Some(Duration::from_millis(v));
        let started = Instant::now();
        let limits = Deadlines {
            first_content: ms(100),
            total: ms(5000),
            ..Deadlines::default()
        };
        assert_eq!(
            first_to_pass(limits, started, || None, || None).await,
            Limit::FirstContent
        );
        // Content came and output keeps coming: only the total limit is left.
        let limits = Deadlines {
            first_content: ms(100),
            inactivity: ms(100),
            total: ms(300),
        };
        let now = || Some(Instant::now());
        assert_eq!(
            first_to_pass(limits, started, || Some(started), now).await,
            Limit::Total
        );
    }
}
