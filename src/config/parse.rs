//! The lenient readings of environment values every setting shares: a typo in a client's `env`
//! block means the default, never a server that does not start.

/// A comma-separated list, trimmed, empty items dropped.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A positive base-10 integer: ASCII digits only (no sign, no spaces, no `0x`), above zero.
pub fn parse_positive(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u64>().ok().filter(|v| *v > 0)
}

/// `0`, `false`, `no` or `off`, in any case: a switch that is on by default, turned off.
pub fn parse_off(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    )
}

/// The reference's truthy spellings: `1`, `true`, `yes` (case-insensitive).
pub fn parse_flag(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes"
    )
}

/// The environment as the settings read it: lenient readings that also note every variable that
/// is set to something they do not understand, so the server can say so once its log is up (a
/// typo that silently means the default is a setting the user thinks they have).
pub struct Vars<'l> {
    lookup: &'l dyn Fn(&str) -> Option<std::ffi::OsString>,
    unread: std::cell::RefCell<Vec<String>>,
}

impl<'l> Vars<'l> {
    /// Reads through `lookup` (the process environment, or a test's map).
    pub fn new(lookup: &'l dyn Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        Vars {
            lookup,
            unread: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The value as it is, text or not.
    pub fn raw(&self, name: &str) -> Option<std::ffi::OsString> {
        (self.lookup)(name)
    }

    /// The value as text; one that is not UTF-8 is noted and read as unset.
    pub fn text(&self, name: &str) -> Option<String> {
        match self.raw(name)?.into_string() {
            Ok(text) => Some(text),
            Err(_) => {
                self.note(name, "is not UTF-8; the default applies");
                None
            }
        }
    }

    /// A [`parse_positive`] value; a set, non-blank value that is not one is noted.
    pub fn positive(&self, name: &str) -> Option<u64> {
        self.choice(name, "a positive whole number", parse_positive)
    }

    /// `parse` of the value; a set, non-blank value it refuses is noted with what was `expected`.
    pub fn choice<T>(
        &self,
        name: &str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.text(name)?;
        if text.trim().is_empty() {
            return None;
        }
        let parsed = parse(&text);
        if parsed.is_none() {
            self.note(name, &format!("is not {expected}; the default applies"));
        }
        parsed
    }

    /// Notes that `name`'s value `is …`: what was wrong with it, never the value (it may be a
    /// secret set under the wrong name). Once a variable: two settings read `GEMINICLI_MCP_TOOLSETS`.
    pub fn note(&self, name: &str, what: &str) {
        let mut unread = self.unread.borrow_mut();
        let prefix = format!("{name} ");
        if !unread.iter().any(|n| n.starts_with(&prefix)) {
            unread.push(format!("{prefix}{what}"));
        }
    }

    /// What was noted, in reading order.
    pub fn unread(self) -> Vec<String> {
        self.unread.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_variable_read_by_two_settings_is_noted_once() {
        use std::os::unix::ffi::OsStringExt;
        let lookup = |name: &str| {
            (name == "GEMINICLI_MCP_TOOLSETS").then(|| std::ffi::OsString::from_vec(vec![0xff]))
        };
        let vars = Vars::new(&lookup);
        assert_eq!(vars.text("GEMINICLI_MCP_TOOLSETS"), None);
        assert_eq!(vars.text("GEMINICLI_MCP_TOOLSETS"), None);
        assert_eq!(
            vars.unread(),
            ["GEMINICLI_MCP_TOOLSETS is not UTF-8; the default applies"]
        );
    }
}
