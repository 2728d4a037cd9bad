//! Embeds the case directory in the runner: writes `$OUT_DIR/embedded_cases.rs`, a table of every
//! `*.toml` under `cases/` (its path there, and its text through `include_str!`), so a runner
//! binary copied out of the workspace runs its own cases without `--cases`.

use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    // A directory here makes cargo rerun this script when any file under it changes, is added or
    // is removed, so a new case is embedded without touching this file.
    println!("cargo::rerun-if-changed=cases");
    let mut files = Vec::new();
    collect(&root, &mut files);
    // The order `case::load_dir` sorts in, so both list the cases alike.
    files.sort();
    let mut table = String::from("&[\n");
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .expect("collected under the root")
            .components()
            .map(|c| c.as_os_str().to_str().expect("case paths are UTF-8"))
            .collect::<Vec<_>>()
            .join("/");
        let abs = f.to_str().expect("case paths are UTF-8");
        table.push_str(&format!("    ({rel:?}, include_str!({abs:?})),\n"));
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("embedded_cases.rs"), table).expect("OUT_DIR is writable");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in rd {
        let p = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if p.is_dir() {
            collect(&p, files);
        } else if p.extension().is_some_and(|e| e == "toml") {
            files.push(p);
        }
    }
}
