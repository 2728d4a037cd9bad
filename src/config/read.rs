//! The reading of [`Config`] from any variable lookup (the table of `super::settings` makes
//! `Config::read`, each field read through its item).

use std::ffi::OsString;

use super::parse::Vars;
use super::settings::{Config, SETTINGS};

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
