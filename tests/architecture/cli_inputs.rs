//! The launch code names every flag and variable it hands the Gemini CLI through the inventory
//! (`src/gemini/inputs.rs`), never as a literal of its own: a new input written as a literal
//! fails here until it is listed there (with its differential case). What `gemini::launch`'s
//! test builds catches a new input of the builders it calls; this catches one anywhere else.
//!
//! Read with `syn`, code behind `#[cfg(test)]` left out, string literals inside macro calls
//! (`format!("--x={v}")`) included:
//! - in the code that starts the CLI or talks to it (`src/gemini`, `src/acp`, `src/tools`,
//!   `src/run`, `src/doctor.rs`), a literal that starts with `--` and a letter is a flag;
//! - in the code that builds a child's environment (`src/gemini/launch.rs`, `command.rs`,
//!   `environment.rs`, `retention.rs`, `process*`, `src/acp`), a pair whose first element is a
//!   literal `NAME` (`("NAME", v)`, `("NAME".into(), v)`) or a `.env("NAME", v)` call is a variable.

use std::path::Path;

use super::rust_files;
use geminicli_mcp::gemini::inputs;
use syn::visit::Visit;

/// Literals that start with `--` in that code without being a flag handed to the CLI.
const NOT_HANDED: [(&str, &str); 2] = [
    (
        "--session-id",
        "doctor: looked for in `gemini --help` (a capability it reports), never passed",
    ),
    (
        "--internal-watchdog",
        "the server's own flag: it starts itself as its watchdog",
    ),
];

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// What one file names: flags (literals starting with `--`) and variables (see the module).
#[derive(Default)]
struct Found {
    flags: Vec<(String, usize)>,
    vars: Vec<(String, usize)>,
}

struct Scan<'a> {
    found: &'a mut Found,
}

fn is_var_name(s: &str) -> bool {
    s.len() >= 2
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn flag_of(s: &str) -> Option<String> {
    let rest = s.strip_prefix("--")?;
    rest.starts_with(|c: char| c.is_ascii_alphabetic())
        .then(|| inputs::flag_name(s).to_owned())
}

/// The literal string of an expression, through `.into()`, `::from(…)` and `.to_string()`.
fn literal(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        syn::Expr::MethodCall(m) if m.args.is_empty() => literal(&m.receiver),
        syn::Expr::Call(c) if c.args.len() == 1 => literal(&c.args[0]),
        syn::Expr::Reference(r) => literal(&r.expr),
        _ => None,
    }
}

impl Scan<'_> {
    fn string(&mut self, s: &str, line: usize) {
        if let Some(flag) = flag_of(s) {
            self.found.flags.push((flag, line));
        }
    }

    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Literal(l) => {
                    if let Ok(s) = syn::parse_str::<syn::LitStr>(&l.to_string()) {
                        self.string(&s.value(), l.span().start().line);
                    }
                }
                proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        self.string(&s.value(), s.span().start().line);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Most macros (`format!`, `vec!`, `json!`'s values aside) take expressions: read them as
        // such, so that a pair inside `vec![…]` is seen; any other body for its literals.
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        match m.parse_body_with(parser) {
            Ok(exprs) => exprs.iter().for_each(|e| self.visit_expr(e)),
            Err(_) => self.tokens(m.tokens.clone()),
        }
    }
    fn visit_expr_tuple(&mut self, t: &'ast syn::ExprTuple) {
        if t.elems.len() == 2 {
            if let Some(name) = t.elems.first().and_then(literal) {
                if is_var_name(&name) {
                    let line = syn::spanned::Spanned::span(t).start().line;
                    self.found.vars.push((name, line));
                }
            }
        }
        syn::visit::visit_expr_tuple(self, t);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "env" && m.args.len() == 2 {
            if let Some(name) = m.args.first().and_then(literal) {
                let line = m.method.span().start().line;
                self.found.vars.push((name, line));
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
}

fn scan_text(text: &str) -> Found {
    let file = syn::parse_file(text).expect("parses");
    let mut found = Found::default();
    Scan { found: &mut found }.visit_file(&file);
    found
}

/// What `files` under `src` name outside the inventory: `(file:line, name)` per finding.
fn unlisted(src: &Path) -> Vec<String> {
    let inventory = src.join("gemini/inputs.rs");
    let mut flag_files = Vec::new();
    for p in ["gemini", "acp", "tools", "run", "doctor.rs"] {
        rust_files(&src.join(p), &mut flag_files);
    }
    let mut env_files = Vec::new();
    for p in [
        "gemini/launch.rs",
        "gemini/command.rs",
        "gemini/environment.rs",
        "gemini/retention.rs",
        "gemini/process.rs",
        "gemini/process",
        "acp",
    ] {
        rust_files(&src.join(p), &mut env_files);
    }
    assert!(
        flag_files.len() > 20 && env_files.len() > 5,
        "the launch code was not found under {}",
        src.display()
    );
    let mut out = Vec::new();
    for file in flag_files.iter().filter(|f| **f != inventory) {
        let found = scan_text(&std::fs::read_to_string(file).unwrap());
        let at = |line| format!("{}:{line}", file.strip_prefix(src).unwrap().display());
        for (flag, line) in found.flags {
            if !NOT_HANDED.iter().any(|(n, _)| *n == flag) {
                out.push(format!(
                    "{}: the flag {flag} is a literal; name it in src/gemini/inputs.rs (`flag::…`, with its differential case) and use that",
                    at(line)
                ));
            }
        }
        if env_files.contains(file) {
            for (var, line) in found.vars {
                out.push(format!(
                    "{}: the variable {var} is a literal; name it in src/gemini/inputs.rs (`env::…`, with its differential case) and use that",
                    at(line)
                ));
            }
        }
    }
    out
}

#[test]
fn the_launch_code_names_no_flag_or_variable_the_inventory_lacks() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = unlisted(&src);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_sees_flags_and_variables_in_calls_macros_and_pairs_but_not_in_tests() {
    let found = scan_text(
        r#"
        fn launch(c: &mut Command, id: &str) {
            c.arg("--yolo").env("GEMINI_SECRET_MODE", "1");
            let a = format!("--resume={id}");
            let env = vec![("NEW_VAR".into(), "x".into()), (name, "y")];
            let message = "run gemini --list-sessions";
        }
        #[cfg(test)]
        mod tests {
            fn t() { let _ = ("TEST_ONLY", "--debug"); }
        }
        "#,
    );
    let names = |v: &[(String, usize)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&found.flags), ["--yolo", "--resume"]);
    assert_eq!(names(&found.vars), ["GEMINI_SECRET_MODE", "NEW_VAR"]);
}
