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

/// The prefix of the server's own variables.
pub const PREFIX: &str = "GEMINICLI_MCP_";

/// A note for each variable in `set` under [`PREFIX`] that is not in `known`, with the known name
/// it most likely meant: a misspelt name is otherwise a setting the user thinks they have (a
/// `GEMINICLI_MCP_TIMEOUT_TOTAL_MS` leaves the run it was meant to bound without a deadline).
/// Only the name is told, never the value.
pub fn unknown_names(
    set: impl IntoIterator<Item = std::ffi::OsString>,
    known: &[&str],
) -> Vec<String> {
    let mut names: Vec<String> = set
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| name.starts_with(PREFIX) && !known.contains(&name.as_str()))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| match nearest(&name, known) {
            Some(meant) => {
                format!(
                    "{name} is not a setting of this server (did you mean {meant}?); it is ignored"
                )
            }
            None => format!("{name} is not a setting of this server; it is ignored"),
        })
        .collect()
}

/// The known name `name` most likely misspells: the same words in another order, else the
/// closest by edits when they are few for its length.
fn nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    let words = |n: &str| {
        let mut w: Vec<String> = n[PREFIX.len()..]
            .split('_')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        w.sort();
        w
    };
    let mine = words(name);
    if let Some(same) = known.iter().find(|k| words(k) == mine) {
        return Some(same);
    }
    let rest = &name[PREFIX.len()..];
    known
        .iter()
        .map(|k| (edits(rest, k.get(PREFIX.len()..).unwrap_or(k)), *k))
        .filter(|(d, _)| *d <= (rest.len() / 4).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
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

    #[test]
    fn a_misspelt_name_is_noted_with_the_name_it_likely_meant_and_never_its_value() {
        // Built from the prefix: a whole name in quotes here would count as one the server reads.
        let name = |rest: &str| format!("{PREFIX}{rest}");
        let known = ["TOTAL_TIMEOUT_MS", "MAX_CONCURRENCY", "HTTP_TOKEN_FILE"].map(name);
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let mut set = [
            "TIMEOUT_TOTAL_MS",
            "MAX_CONCURENCY",
            "HTTP_TOKENFILE",
            "SOMETHING_ELSE_ENTIRELY",
            "TOTAL_TIMEOUT_MS",
        ]
        .map(|n| std::ffi::OsString::from(name(n)))
        .to_vec();
        set.push("GEMINI_API_KEY".into());
        set.push("OTHER_GEMINICLI_MCP_X".into());
        assert_eq!(
            unknown_names(set, &known),
            [
                "GEMINICLI_MCP_HTTP_TOKENFILE is not a setting of this server (did you mean GEMINICLI_MCP_HTTP_TOKEN_FILE?); it is ignored",
                "GEMINICLI_MCP_MAX_CONCURENCY is not a setting of this server (did you mean GEMINICLI_MCP_MAX_CONCURRENCY?); it is ignored",
                "GEMINICLI_MCP_SOMETHING_ELSE_ENTIRELY is not a setting of this server; it is ignored",
                "GEMINICLI_MCP_TIMEOUT_TOTAL_MS is not a setting of this server (did you mean GEMINICLI_MCP_TOTAL_TIMEOUT_MS?); it is ignored",
            ]
        );
    }

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
