//! The reading of [`Config`] from any variable lookup, and of the part made by hand of its items,
//! [`Policy`] (the table of `super::settings` makes the rest: each field read through its item).

use std::ffi::OsString;

use crate::deadline::Deadlines;

use super::parse::Vars;
use super::policy::{Policy, QuotaPolicy};
use super::settings::{self as s, Config, SETTINGS};

impl Config {
    /// Builds the configuration from any variable lookup (tests pass a map). Invalid values fall
    /// back to the default rather than failing: a typo in a client's `env` block must not stop the
    /// server from starting, which is what the reference does for the output cap. What was not
    /// understood is noted in `--help`'s order, whatever the order of the fields.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let vars = Vars::new(&lookup);
        let mut config = Self::read(&vars);
        config.unread = vars.unread();
        config.unread.sort_by_key(|note| {
            SETTINGS.iter().position(|s| {
                note.strip_prefix(s.name)
                    .is_some_and(|r| r.starts_with(' '))
            })
        });
        config
    }
}

impl Default for QuotaPolicy {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl QuotaPolicy {
    /// Reads the variables.
    pub(crate) fn read(vars: &Vars) -> QuotaPolicy {
        QuotaPolicy {
            rate_limit_retry: s::RATE_LIMIT_RETRY.get(vars),
            max_wait: s::RATE_LIMIT_MAX_WAIT_MS.get(vars),
            fallback_models: s::FALLBACK_MODELS.get(vars),
        }
    }
}

impl Default for Policy {
    /// Every item's default: the reading of an empty environment.
    fn default() -> Self {
        Self::read(&Vars::new(&|_| None))
    }
}

impl Policy {
    /// Reads the variables, noting what it does not understand in `vars`.
    pub(crate) fn read(vars: &Vars) -> Self {
        Policy {
            allowed_roots: s::ALLOWED_ROOTS.get(vars),
            approval_ceiling: s::APPROVAL_MODE.get(vars),
            toolsets: s::TOOLSETS.get(vars),
            deadlines: Deadlines {
                first_content: s::FIRST_CONTENT_TIMEOUT_MS.get(vars),
                inactivity: s::INACTIVITY_TIMEOUT_MS.get(vars),
                total: s::TOTAL_TIMEOUT_MS.get(vars),
            },
            quota: QuotaPolicy::read(vars),
            structured_repair: s::STRUCTURED_REPAIR.get(vars),
        }
    }
}
