//! The test that a setting is one item: its name is written in its row of `settings` and nowhere
//! else in the server's code (messages name it through the item), and every item is read (a row
//! with a field of `Config` by the table itself; any other where it is used).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use super::item::Kind;
use super::{known_names, settings};

/// Files that may spell a name, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("config/settings.rs", "the items themselves"),
    ("config/spelling.rs", "this test's own examples"),
    (
        "gemini/inputs.rs",
        "the inventory of what the server hands the CLI, compiled into fake-gemini's tests too; \
         `the_run_mark_is_the_one_the_launch_sets` holds its run mark equal to the item's",
    ),
];

/// Every `.rs` file under `dir` but test files (`tests.rs`, a `tests` folder).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The string literals of `stream` with their lines, leaving out doc comments and whatever
/// follows a `#[cfg(test)]` up to the end of its item (tests may spell a name).
fn literals(stream: TokenStream, out: &mut Vec<(usize, String)>) {
    let mut tokens = stream.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                if matches!(tokens.peek(), Some(TokenTree::Punct(b)) if b.as_char() == '!') {
                    tokens.next();
                }
                let Some(TokenTree::Group(attr)) = tokens.peek() else {
                    continue;
                };
                if attr.delimiter() != Delimiter::Bracket {
                    continue;
                }
                let attr = attr.stream().to_string().replace(' ', "");
                tokens.next();
                if attr == "cfg(test)" {
                    for t in tokens.by_ref() {
                        match t {
                            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
                            TokenTree::Punct(p) if p.as_char() == ';' => break,
                            _ => {}
                        }
                    }
                }
            }
            TokenTree::Group(g) => literals(g.stream(), out),
            TokenTree::Literal(l) => out.push((l.span().start().line, l.to_string())),
            _ => {}
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn relative(path: &Path) -> String {
    path.strip_prefix(src())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

#[test]
fn no_setting_name_is_spelled_outside_its_item() {
    let name = regex::Regex::new(r"GEMINI(?:CLI_MCP_[A-Z0-9_]*[A-Z0-9]|_CLI_BIN)").unwrap();
    let mut files = Vec::new();
    sources(&src(), &mut files);
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    let mut spelled = Vec::new();
    for file in &files {
        let rel = relative(file);
        if ALLOWED.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let stream: TokenStream = text.parse().unwrap();
        let mut found = Vec::new();
        literals(stream, &mut found);
        for (line, literal) in found {
            for m in name.find_iter(&literal) {
                spelled.push(format!("src/{rel}:{line}: {}", m.as_str()));
            }
        }
    }
    assert!(
        spelled.is_empty(),
        "a setting's name is written in its item of src/config/settings.rs only; name it \
         through the item (`settings::X.name`) and read it through it (`settings::X.get(vars)`):\n{}",
        spelled.join("\n")
    );
}

#[test]
fn the_scan_sees_a_name_in_code_and_not_in_comments_or_tests() {
    let text = r#"
        /// GEMINICLI_MCP_IN_A_DOC
        fn f() -> String { format!("raise GEMINICLI_MCP_IN_CODE") }
        // GEMINICLI_MCP_IN_A_COMMENT
        #[cfg(test)]
        mod tests { const X: &str = "GEMINICLI_MCP_IN_A_TEST"; }
        const Y: &str = "GEMINICLI_MCP_AFTER";
    "#;
    let mut found = Vec::new();
    literals(text.parse().unwrap(), &mut found);
    let all: Vec<&str> = found.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        all,
        [
            r#""raise GEMINICLI_MCP_IN_CODE""#,
            r#""GEMINICLI_MCP_AFTER""#
        ]
    );
}

#[test]
fn every_item_is_read_somewhere() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let code: String = files
        .iter()
        .filter(|f| !relative(f).starts_with("config/settings.rs"))
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    // A struct's header in the table may read an item too (`Policy`'s deadlines).
    let table = std::fs::read_to_string(src().join("config/settings.rs")).unwrap();
    let unread: Vec<&str> = settings::SETTINGS
        .iter()
        .filter(|s| !matches!(s.kind, Kind::Internal))
        .map(|s| s.name)
        // The table reads these itself, each into its field.
        .filter(|name| !settings::READ_INTO_FIELDS.contains(name))
        .filter(|name| {
            let ident = name.strip_prefix(super::parse::PREFIX).unwrap_or(name);
            let used = regex::Regex::new(&format!(r"\b(?:settings|s)::{ident}\b")).unwrap();
            let read_in_a_header = regex::Regex::new(&format!(r"\b{ident}\.get\(")).unwrap();
            !used.is_match(&code) && !read_in_a_header.is_match(&table)
        })
        .collect();
    assert!(
        unread.is_empty(),
        "declared but read nowhere (an item is named `settings::X` where it is read, or read by \
         the table: a row with a field, `X.get(vars)` in a header): {unread:?}"
    );
    let names: BTreeSet<&str> = known_names().into_iter().collect();
    assert_eq!(names.len(), settings::SETTINGS.len(), "each name once");
}
