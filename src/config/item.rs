//! A setting's declaration: its row (variable, flag, help, how the doctor lists it) and, for one
//! read into [`Config`], its typed item (default and reading), with the readings the items share.
//! The items themselves are in `super::settings`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::approval::ApprovalMode;

use super::parse::{parse_flag, split_list, Vars};
use super::values::Config;

/// One setting.
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// The command-line flag that stands for it, if any.
    pub flag: Option<Flag>,
    /// What `--help` says of the variable: one paragraph, wrapped when printed.
    pub help: &'static str,
    /// Where the server reads it: what the doctor lists.
    pub kind: Kind,
}

/// How a setting shows in the doctor's listing.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Read into [`Config`]: the value in effect, typed.
    Config(fn(&Config) -> Value),
    /// Read where it is used (HTTP, the log, the launcher): listed as given, or as unset.
    Elsewhere,
    /// A secret: listed only as `set`, or as unset.
    Secret,
    /// Set by the server itself on what it starts, never by the operator: not listed, not in
    /// `--help`, but not a misspelling either.
    Internal,
}

/// A flag, and the check a value given on the command line must pass (the variable's reading is
/// lenient; a flag is typed by hand, so it is checked).
pub struct Flag {
    /// The long name, without `--`.
    pub long: &'static str,
    /// What the flag's value is (`MS`, `N`, …); empty for a switch.
    pub value_name: &'static str,
    /// The check of its value.
    pub value: FlagValue,
    /// The flag's line in `--help` (the variable is added in brackets).
    pub help: &'static str,
}

/// The values a flag takes.
#[derive(Clone, Copy)]
pub enum FlagValue {
    /// No value: present means on (the variable's `1`).
    Switch,
    /// Any text.
    Text,
    /// Any text, repeatable: the values join with commas, as the variable lists them.
    Repeated,
    /// A whole number of at least this.
    AtLeast(u64),
    /// One of these words.
    OneOf(&'static [&'static str]),
}

/// A setting the server reads into [`Config`]: its row, its default and its reading. It derefs to
/// its [`Setting`], so `X.name` names it.
pub struct Item<T> {
    /// Its variable, flag, help and doctor row.
    pub setting: Setting,
    /// Its value when unset or not understood.
    pub default: fn() -> T,
    /// Its lenient reading of the variable it is given the name of: `None` when unset (or not
    /// understood, which the reading notes in [`Vars`]).
    pub parse: fn(&Vars, &'static str) -> Option<T>,
}

impl<T> Item<T> {
    /// Its default.
    pub fn default(&self) -> T {
        (self.default)()
    }

    /// Its value in `vars`, if set and understood.
    pub fn read(&self, vars: &Vars) -> Option<T> {
        (self.parse)(vars, self.setting.name)
    }

    /// Its value in `vars`, or its default.
    pub fn get(&self, vars: &Vars) -> T {
        self.read(vars).unwrap_or_else(self.default)
    }
}

/// A setting shows as its variable's name, so a message names it as `{MAX_OUTPUT_BYTES}`.
impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl<T> std::fmt::Display for Item<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.setting.name)
    }
}

impl<T> std::ops::Deref for Item<T> {
    type Target = Setting;

    fn deref(&self) -> &Setting {
        &self.setting
    }
}

pub(super) const fn flag(
    long: &'static str,
    value_name: &'static str,
    value: FlagValue,
    help: &'static str,
) -> Option<Flag> {
    Some(Flag {
        long,
        value_name,
        value,
        help,
    })
}

pub(super) fn millis_json(d: Duration) -> Value {
    json!(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn optional_millis(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, millis_json)
}

/// A positive base-10 integer that fits `T`.
pub(super) fn positive<T: TryFrom<u64>>(vars: &Vars, name: &str) -> Option<T> {
    vars.positive(name).and_then(|v| T::try_from(v).ok())
}

/// A positive number of milliseconds.
pub(super) fn millis(vars: &Vars, name: &str) -> Option<Duration> {
    vars.positive(name).map(Duration::from_millis)
}

/// A switch that is off by default: `1`, `true` or `yes` turn it on.
pub(super) fn on(vars: &Vars, name: &str) -> Option<bool> {
    vars.text(name).map(|v| parse_flag(&v))
}

/// A comma-separated list.
pub(super) fn list(vars: &Vars, name: &str) -> Option<Vec<String>> {
    vars.text(name).map(|v| split_list(&v))
}

/// A path list, as the system writes one (`:` or `;`).
pub(super) fn paths(vars: &Vars, name: &str) -> Option<Vec<PathBuf>> {
    vars.raw(name).filter(|v| !v.is_empty()).map(|v| {
        std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    })
}

/// An approval mode; an invalid one means the most restrictive (`plan`): a typo must not widen
/// what callers may do.
pub(super) fn approval_ceiling(vars: &Vars, name: &str) -> Option<ApprovalMode> {
    let v = vars.text(name).filter(|v| !v.trim().is_empty())?;
    Some(
        ApprovalMode::parse(&v.trim().to_ascii_lowercase()).unwrap_or_else(|| {
            vars.note(
                name,
                "is not plan, default, auto_edit or yolo; plan, the narrowest, applies",
            );
            ApprovalMode::Plan
        }),
    )
}

/// Model names, those that would be refused as `model` left out.
pub(super) fn models(vars: &Vars, name: &str) -> Option<Vec<String>> {
    vars.text(name).map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|m| crate::names::validate_model(m).is_ok())
            .map(String::from)
            .collect()
    })
}
