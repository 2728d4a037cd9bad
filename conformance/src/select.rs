//! Choosing cases (`--run` / `--skip` globs over case ids) and splitting a `--target` command line
//! into words without a shell.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Case selection by glob: a case runs when it matches some `run` glob (or there are none) and no
/// `skip` glob.
#[derive(Debug, Clone)]
pub struct Selection {
    run: Option<GlobSet>,
    skip: Option<GlobSet>,
}

fn build(globs: &[String]) -> Result<Option<GlobSet>, String> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|e| format!("bad glob {g:?}: {e}"))?);
    }
    b.build().map(Some).map_err(|e| e.to_string())
}

impl Selection {
    /// Builds a selection; a bad glob is an error.
    pub fn new(run: &[String], skip: &[String]) -> Result<Selection, String> {
        Ok(Selection {
            run: build(run)?,
            skip: build(skip)?,
        })
    }

    /// Whether case `id` is selected.
    ///
    /// ```
    /// use gemini_mcp_conformance::select::Selection;
    /// let s = Selection::new(&["termination/*".into()], &["*/setsid-*".into()]).unwrap();
    /// assert!(s.selects("termination/hang"));
    /// assert!(!s.selects("termination/setsid-grandchild"));
    /// assert!(!s.selects("lifecycle/ping"));
    /// ```
    pub fn selects(&self, id: &str) -> bool {
        self.run.as_ref().is_none_or(|g| g.is_match(id))
            && !self.skip.as_ref().is_some_and(|g| g.is_match(id))
    }
}

/// Splits a command line into words: whitespace separates, `"…"` and `'…'` group, a backslash
/// escapes the next character outside single quotes. No expansion of any kind (no shell).
///
/// ```
/// use gemini_mcp_conformance::select::split_command;
/// assert_eq!(split_command(r#"node "my dir/server.js" --flag='a b'"#).unwrap(), ["node", "my dir/server.js", "--flag=a b"]);
/// ```
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        None => return Err(format!("unterminated {c} quote in {line:?}")),
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => cur.push(chars.next().unwrap_or('\\')),
                        Some(x) => cur.push(x),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next().unwrap_or('\\'));
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}
