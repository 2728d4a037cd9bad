//! A setting's declaration: its row (variable, flag, help, how the doctor lists it) and, for one
//! read into `Config`, its typed item (default and reading), with the readings the items share
//! and the `settings!` table that makes the items, `Config` and its parts from the rows. The rows,
//! and so `Config`, are in `super::settings`, which this file does not name: the arrows run one
//! way.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::approval::ApprovalMode;

use super::acp::Backend;
use super::parse::{parse_flag, split_list, Vars};
use super::policy::Toolsets;
use super::values::{EnvPolicy, SlashCommands};

/// One setting; `C` is the configuration a setting may be read into (`Config`, whose file
/// declares the settings: this one names none of them).
pub struct Setting<C: 'static> {
    /// The environment variable.
    pub name: &'static str,
    /// The command-line flag that stands for it, if any.
    pub flag: Option<Flag>,
    /// What `--help` says of the variable: one paragraph, wrapped when printed.
    pub help: &'static str,
    /// Where the server reads it: what the doctor lists.
    pub kind: Kind<C>,
}

/// How a setting shows in the doctor's listing.
pub enum Kind<C: 'static> {
    /// Read into the configuration `C`: the value in effect there, typed.
    Config(fn(&C) -> Value),
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

/// A setting the server reads into its configuration `C`: its row, its default and its reading. It
/// derefs to its [`Setting`], so `X.name` names it.
pub struct Item<T, C: 'static> {
    /// Its variable, flag, help and doctor row.
    pub setting: Setting<C>,
    /// Its value when unset or not understood.
    pub default: fn() -> T,
    /// Its lenient reading of the variable it is given the name of: `None` when unset (or not
    /// understood, which the reading notes in [`Vars`]).
    pub parse: fn(&Vars, &'static str) -> Option<T>,
}

impl<T, C> Item<T, C> {
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
impl<C> std::fmt::Display for Setting<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl<T, C> std::fmt::Display for Item<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.setting.name)
    }
}

impl<T, C> std::ops::Deref for Item<T, C> {
    type Target = Setting<C>;

    fn deref(&self) -> &Setting<C> {
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

fn millis_json(d: Duration) -> Value {
    json!(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

/// How the doctor lists a value read into `Config`: as the variable would spell it (a duration
/// in milliseconds, a list joined with commas, a mode by its word), `null` for none.
pub trait Shown {
    /// The value, as the doctor lists it.
    fn shown(&self) -> Value;
}

macro_rules! shown_as_json {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> Value {
                json!(self)
            }
        }
    )*};
}

shown_as_json!(bool, u32, u64, usize);

impl Shown for Duration {
    fn shown(&self) -> Value {
        millis_json(*self)
    }
}

impl Shown for Option<Duration> {
    fn shown(&self) -> Value {
        self.map_or(Value::Null, millis_json)
    }
}

impl Shown for Option<OsString> {
    fn shown(&self) -> Value {
        json!(self.as_ref().map(|b| b.to_string_lossy().into_owned()))
    }
}

impl Shown for Vec<String> {
    fn shown(&self) -> Value {
        json!(self.join(","))
    }
}

impl Shown for Vec<PathBuf> {
    /// As the variable lists them; none: `null` (the server's working directory).
    fn shown(&self) -> Value {
        std::env::join_paths(self)
            .ok()
            .filter(|p| !p.is_empty())
            .map_or(Value::Null, |p| json!(p.to_string_lossy()))
    }
}

impl Shown for SlashCommands {
    fn shown(&self) -> Value {
        json!(self.as_str())
    }
}

impl Shown for EnvPolicy {
    fn shown(&self) -> Value {
        json!(self.as_str())
    }
}

impl Shown for Backend {
    fn shown(&self) -> Value {
        json!(self.as_str())
    }
}

impl Shown for ApprovalMode {
    fn shown(&self) -> Value {
        json!(self.as_str())
    }
}

impl Shown for Toolsets {
    /// The sets turned on, as the variable names them.
    fn shown(&self) -> Value {
        let on = [
            (self.sessions, "sessions"),
            (self.models, "models"),
            (self.jobs, "jobs"),
            (self.acp, "acp"),
        ];
        let names: Vec<&str> = on.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        json!(names.join(","))
    }
}

/// Calls the reading a header gives a field (`AcpConfig::read`, `|vars| …`) in a struct the
/// table makes.
pub(super) fn read_with<T>(vars: &Vars, read: impl FnOnce(&Vars) -> T) -> T {
    read(vars)
}

/// The table of settings (`super::settings`): the headers of the structs it makes, then one row
/// per setting, in `--help`'s order. It makes every row's item,
/// [`SETTINGS`](super::settings::SETTINGS) in the rows' order, and the structs `Config`,
/// `Policy`, `QuotaPolicy`, `AcpConfig` and `TaskLimits`, each with its reading and its default
/// (the reading of an empty environment).
///
/// A row read into a struct is `path: Type = ITEM { name, flag, help, default, parse }`: `path`
/// is where the value lives in `Config` (`max_output_bytes`, `acp.idle`,
/// `policy.quota.max_wait`), and the row's doc comment is the field's. The field is read through
/// the item, and the doctor lists it through [`Shown`] (or through the row's own `show: |c| …`,
/// given before `default`). A path into a struct the table does not make
/// (`policy.deadlines.total`) declares the item and the doctor's listing only: the header of the
/// struct that holds it reads it. A row `ITEM { name, flag, help, kind }` is a setting read where
/// it is used. A header lists its struct's fields that are not one row's, each with its reading
/// (`= AcpConfig::read`, or `= |vars| …`).
///
/// The rows are sorted into their structs one at a time (each part's rule matches its path's
/// prefix, in the order of the rules); the structs come last, when every row is sorted.
macro_rules! settings {
    // A field of a part: `acp.x`, `tasks.x`, `policy.quota.x`, `policy.x`.
    (@rows [$($list:tt)*] $c:tt $p:tt $q:tt [$($a:tt)*] $t:tt [$($read:tt)*] $head:tt
        $(#[$m:meta])* acp . $f:ident : $ty:ty = $ITEM:ident { $($body:tt)* }, $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [acp . $f], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] $c $p $q [$($a)* $(#[$m])* $f: $ty = $ITEM,]
            $t [$($read)* $ITEM.setting.name,] $head $($rest)*);
    };
    (@rows [$($list:tt)*] $c:tt $p:tt $q:tt $a:tt [$($t:tt)*] [$($read:tt)*] $head:tt
        $(#[$m:meta])* tasks . $f:ident : $ty:ty = $ITEM:ident { $($body:tt)* }, $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [tasks . $f], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] $c $p $q $a [$($t)* $(#[$m])* $f: $ty = $ITEM,]
            [$($read)* $ITEM.setting.name,] $head $($rest)*);
    };
    (@rows [$($list:tt)*] $c:tt $p:tt [$($q:tt)*] $a:tt $t:tt [$($read:tt)*] $head:tt
        $(#[$m:meta])* policy . quota . $f:ident : $ty:ty = $ITEM:ident { $($body:tt)* },
        $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [policy . quota . $f], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] $c $p [$($q)* $(#[$m])* $f: $ty = $ITEM,] $a $t
            [$($read)* $ITEM.setting.name,] $head $($rest)*);
    };
    (@rows [$($list:tt)*] $c:tt [$($p:tt)*] $q:tt $a:tt $t:tt [$($read:tt)*] $head:tt
        $(#[$m:meta])* policy . $f:ident : $ty:ty = $ITEM:ident { $($body:tt)* }, $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [policy . $f], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] $c [$($p)* $(#[$m])* $f: $ty = $ITEM,] $q $a $t
            [$($read)* $ITEM.setting.name,] $head $($rest)*);
    };
    // A field of `Config`.
    (@rows [$($list:tt)*] [$($c:tt)*] $p:tt $q:tt $a:tt $t:tt [$($read:tt)*] $head:tt
        $(#[$m:meta])* $f:ident : $ty:ty = $ITEM:ident { $($body:tt)* }, $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [$f], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] [$($c)* $(#[$m])* $f: $ty = $ITEM,] $p $q $a $t
            [$($read)* $ITEM.setting.name,] $head $($rest)*);
    };
    // A value in a struct the table does not make: its item and its listing.
    (@rows [$($list:tt)*] $c:tt $p:tt $q:tt $a:tt $t:tt $read:tt $head:tt
        $(#[$m:meta])* $f:ident $(. $g:ident)+ : $ty:ty = $ITEM:ident { $($body:tt)* },
        $($rest:tt)*
    ) => {
        settings!(@item [$(#[$m])*] $ITEM: $ty, [$f $(. $g)+], { $($body)* });
        settings!(@rows [$($list)* &$ITEM.setting,] $c $p $q $a $t $read $head $($rest)*);
    };
    // A setting read where it is used.
    (@rows [$($list:tt)*] $c:tt $p:tt $q:tt $a:tt $t:tt $read:tt $head:tt
        $(#[$m:meta])* $ITEM:ident { $($body:tt)* }, $($rest:tt)*
    ) => {
        $(#[$m])*
        pub const $ITEM: $crate::config::item::Setting<Config> =
            $crate::config::item::Setting { $($body)* };
        settings!(@rows [$($list)* &$ITEM,] $c $p $q $a $t $read $head $($rest)*);
    };
    // Every row sorted: the list and the structs.
    (@rows [$($list:tt)*] $c:tt $p:tt $q:tt $a:tt $t:tt [$($read:tt)*] {
        $(#[$cm:meta])* pub struct Config $cx:tt
        $(#[$pm:meta])* pub struct Policy $px:tt
        $(#[$qm:meta])* pub struct QuotaPolicy $qx:tt
        $(#[$am:meta])* pub struct AcpConfig $ax:tt
        $(#[$tm:meta])* pub struct TaskLimits $tx:tt
    }) => {
        /// Every setting, in `--help`'s order (the rows').
        pub const SETTINGS: &[&$crate::config::item::Setting<Config>] = &[$($list)*];

        /// The settings the table reads itself, each into its field.
        #[cfg(test)]
        pub(super) const READ_INTO_FIELDS: &[&str] = &[$($read)*];

        settings!(@struct [$(#[$cm])*] Config $c $cx);
        settings!(@struct [$(#[$pm])*] Policy $p $px);
        settings!(@struct [$(#[$qm])*] QuotaPolicy $q $qx);
        settings!(@struct [$(#[$am])*] AcpConfig $a $ax);
        settings!(@struct [$(#[$tm])*] TaskLimits $t $tx);
    };
    (@struct [$(#[$sm:meta])*] $S:ident
        [$($(#[$fm:meta])* $f:ident : $ft:ty = $fi:ident,)*]
        {$($(#[$xm:meta])* pub $x:ident : $xt:ty = $xr:expr,)*}
    ) => {
        $(#[$sm])*
        pub struct $S {
            $(
                $(#[$fm])*
                #[doc = ""]
                #[doc = concat!("Read through its item, [`", stringify!($fi), "`].")]
                pub $f: $ft,
            )*
            $($(#[$xm])* pub $x: $xt,)*
        }

        impl $S {
            /// Reads each field through its item, or as its header says; a value not
            /// understood leaves the item's default, and is noted in `vars`.
            pub(crate) fn read(vars: &$crate::config::parse::Vars) -> Self {
                $S {
                    $($f: $fi.get(vars),)*
                    $($x: $crate::config::item::read_with(vars, $xr),)*
                }
            }
        }

        impl Default for $S {
            /// Every item's default: the reading of an empty environment.
            fn default() -> Self {
                Self::read(&$crate::config::parse::Vars::new(&|_| None))
            }
        }
    };
    (@item [$(#[$m:meta])*] $ITEM:ident : $ty:ty, [$($path:tt)*], {
        name: $name:literal,
        flag: $flag:expr,
        help: $help:expr,
        $(show: $show:expr,)?
        default: $default:expr,
        parse: $parse:expr $(,)?
    }) => {
        $(#[$m])*
        pub const $ITEM: $crate::config::item::Item<$ty, Config> = $crate::config::item::Item {
            setting: $crate::config::item::Setting {
                name: $name,
                flag: $flag,
                help: $help,
                kind: $crate::config::item::Kind::Config(settings!(@show [$($path)*] $($show)?)),
            },
            default: $default,
            parse: $parse,
        };
    };
    (@show [$($path:tt)*]) => {
        |c| $crate::config::item::Shown::shown(&c.$($path)*)
    };
    (@show [$($path:tt)*] $show:expr) => {
        $show
    };
    // The headers, then the rows.
    (structs { $($head:tt)* } $($rows:tt)*) => {
        settings!(@rows [] [] [] [] [] [] [] { $($head)* } $($rows)*);
    };
}

pub(super) use settings;
