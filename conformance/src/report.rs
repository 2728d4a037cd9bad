//! Outcomes, the expected-failures baseline and the run report. The baseline is strict both ways
//! (as in the MCP conformance suite): an unlisted failure fails the run, and so does a listed case
//! that now passes (a stale entry).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::Level;

/// The result of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every check held.
    Pass,
    /// A `must` check failed.
    Fail,
    /// Only `should` checks failed.
    Warn,
    /// Not applicable to this target or system (the reason says why).
    Skip,
    /// A fixture or harness problem (including fake-gemini's own failure, exit 99): says nothing
    /// about the target, and is never counted as a pass or a plain failure.
    Bug,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Skip => "skip",
            Outcome::Bug => "bug",
        })
    }
}

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case id.
    pub id: String,
    /// The case level.
    pub level: Level,
    /// The requirement sentence.
    pub requirement: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Why (empty on a pass): the failed checks, the skip reason or the bug.
    pub message: String,
    /// The target's stderr, attached to every outcome but pass and skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// How long the case took, in ms.
    pub duration_ms: u64,
}

/// How a result stands against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Fine (pass, warn, skip, or an unlisted case that did what it should).
    Ok,
    /// Listed in the baseline and failed (or bugged) as expected.
    ExpectedFailure,
    /// Not listed, and failed or bugged: fails the run.
    UnexpectedFailure,
    /// Listed, and passed: the entry is stale and fails the run.
    Stale,
}

impl Verdict {
    /// Whether this verdict makes the run fail.
    pub fn fails_run(self) -> bool {
        matches!(self, Verdict::UnexpectedFailure | Verdict::Stale)
    }
}

/// An expected-failures baseline file (TOML), with optional entries for one OS only (`linux`,
/// `macos`, `windows`: Rust's `std::env::consts::OS`):
///
/// ```toml
/// [expected-failures]
/// "termination/cancel-hang" = "why it fails everywhere"
///
/// [os.macos.expected-failures]
/// "termination/cancel-setsid-grandchild-swept" = "macOS has no subreaper; the limit is documented"
/// ```
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Baseline {
    /// Case id → the reason it is expected to fail (on every OS).
    #[serde(default)]
    pub expected_failures: BTreeMap<String, String>,
    /// OS name → entries that apply on that OS only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub os: BTreeMap<String, OsBaseline>,
}

/// The entries of a baseline that apply on one OS.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OsBaseline {
    /// Case id → the reason it is expected to fail on this OS.
    #[serde(default)]
    pub expected_failures: BTreeMap<String, String>,
}

impl Baseline {
    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("baseline {}: {e}", path.display()))
    }

    /// The reason a case is listed for this OS, if it is.
    pub fn reason(&self, id: &str) -> Option<&str> {
        self.expected_failures
            .get(id)
            .or_else(|| {
                self.os
                    .get(std::env::consts::OS)
                    .and_then(|o| o.expected_failures.get(id))
            })
            .map(String::as_str)
    }

    /// Judges one outcome of case `id` (on this OS).
    pub fn verdict(&self, id: &str, outcome: Outcome) -> Verdict {
        let listed = self.reason(id).is_some();
        match (outcome, listed) {
            (Outcome::Fail | Outcome::Bug, false) => Verdict::UnexpectedFailure,
            (Outcome::Fail | Outcome::Bug | Outcome::Warn, true) => Verdict::ExpectedFailure,
            (Outcome::Pass, true) => Verdict::Stale,
            _ => Verdict::Ok,
        }
    }

    /// Entries naming no known case (typos or removed cases): stale too.
    pub fn unknown_entries<'a>(&'a self, known: &[String]) -> Vec<&'a str> {
        self.expected_failures
            .keys()
            .chain(self.os.values().flat_map(|o| o.expected_failures.keys()))
            .filter(|k| !known.contains(k))
            .map(String::as_str)
            .collect()
    }

    /// A baseline listing the failures of `results` (for `--print-baseline`).
    pub fn from_results(results: &[CaseResult]) -> Baseline {
        let expected_failures = results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Fail | Outcome::Bug))
            .map(|r| {
                let first = r.message.lines().next().unwrap_or_default();
                let reason: String = first.chars().take(160).collect();
                (r.id.clone(), format!("{}: {reason}", r.outcome))
            })
            .collect();
        Baseline {
            expected_failures,
            os: BTreeMap::new(),
        }
    }

    /// The baseline as TOML text, with a header comment.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# Expected failures of this target: case id = reason. Strict both ways: an unlisted\n\
             # failure and a listed case that passes both fail the run.\n{body}"
        )
    }
}

/// The machine report (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The target command line.
    pub target: Vec<String>,
    /// The profile name.
    pub profile: String,
    /// Counts per outcome.
    pub summary: BTreeMap<String, usize>,
    /// Whether the run failed against the baseline.
    pub failed: bool,
    /// Stale baseline entries that name no case.
    pub unknown_baseline_entries: Vec<String>,
    /// Every case, with its verdict.
    pub cases: Vec<ReportedCase>,
}

/// A case in the report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportedCase {
    /// The result.
    #[serde(flatten)]
    pub result: CaseResult,
    /// How it stands against the baseline.
    pub verdict: Verdict,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_is_strict_both_ways() {
        let b: Baseline = toml::from_str("[expected-failures]\n\"a/x\" = \"why\"\n").unwrap();
        assert_eq!(b.verdict("a/x", Outcome::Fail), Verdict::ExpectedFailure);
        assert_eq!(b.verdict("a/x", Outcome::Pass), Verdict::Stale);
        assert_eq!(b.verdict("a/y", Outcome::Fail), Verdict::UnexpectedFailure);
        assert_eq!(b.verdict("a/y", Outcome::Bug), Verdict::UnexpectedFailure);
        assert_eq!(b.verdict("a/y", Outcome::Warn), Verdict::Ok);
        assert_eq!(b.verdict("a/x", Outcome::Skip), Verdict::Ok);
        assert_eq!(b.unknown_entries(&["a/y".into()]), vec!["a/x"]);
        assert!(Verdict::Stale.fails_run());
        let per_os: Baseline = toml::from_str(&format!(
            "[os.{}.expected-failures]\n\"a/z\" = \"here only\"\n[os.elsewhere.expected-failures]\n\"a/w\" = \"not here\"\n",
            std::env::consts::OS
        ))
        .unwrap();
        assert_eq!(
            per_os.verdict("a/z", Outcome::Fail),
            Verdict::ExpectedFailure
        );
        assert_eq!(
            per_os.verdict("a/w", Outcome::Fail),
            Verdict::UnexpectedFailure
        );
        assert_eq!(per_os.verdict("a/w", Outcome::Pass), Verdict::Ok);
    }
}
